"""``pdors ray up|down|status``: the persistent local Ray head that local sweeps use without flags
(:mod:`pipeline.execute.local_head`)."""

from __future__ import annotations

import argparse

from pdors.errors import ExitStatus


def cmd_ray(args: argparse.Namespace) -> int:
    from pipeline.execute import local_head, pool

    where = local_head.home()
    if args.ray_command == "up":
        head, started = local_head.up(args.num_cpus)
        print(
            f"Ray head {'started' if started else 'already up'} at {head.address} (loopback, token {head.token}); "
            "local sweeps use it until `pdors ray down`"
        )
        return ExitStatus.OK
    if args.ray_command == "down":
        ended = local_head.down()
        print(f"Ray head stopped ({ended} processes ended)" if ended else f"no Ray head running under {where}")
        return ExitStatus.OK
    found = local_head.find()
    if found is None:
        print(f"no Ray head running under {where}: local sweeps start a Ray of their own (`pdors ray up` starts one)")
        return ExitStatus.FAILED
    pids = local_head.session_pids(found.session)
    actors, running = pool.busy(pids)
    print(
        f"Ray head up at {found.address}: {len(pids)} processes, of which {actors} reused sweep workers "
        f"({running} running a chunk); state in {where}"
    )
    return ExitStatus.OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("ray")
    sub = p.add_subparsers(dest="ray_command", required=True)
    up = sub.add_parser("up", help="start the local head (loopback, token; state in $PDORS_RAY_HOME or ~/.pdors/ray)")
    up.add_argument("--num-cpus", type=int, help="CPUs of the head (default: all)")
    sub.add_parser("down", help="stop the local head: nothing of it is left running")
    sub.add_parser("status", help="whether the local head is up, with its reused sweep workers (exit status 1 if not)")
    p.set_defaults(func=cmd_ray)
