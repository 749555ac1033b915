"""A persistent local Ray head (``pdors ray up|down|status``) that local sweeps find without flags.

The head is started by ``infra/ray-node.sh head`` (its safe defaults: token authentication, no dashboard, no
metrics export) on 127.0.0.1 only, every port it chooses itself (GCS, client server, agent) picked free, so two
users' heads do not collide. Its state lives in one directory, ``$PDORS_RAY_HOME`` (default ``~/.pdors/ray``),
mode 0700: the token (``token``, 0600), Ray's session files (``t/``) and ``head.json`` (the GCS address and the
session id of the head's processes), written last: a head is found once ``head.json`` names an address that
accepts a connection. ``down`` ends that session's processes (Ray's ``ray stop`` would end every Ray of the user
on the machine) and removes ``head.json``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from pdors import atomic

HOME_ENV = "PDORS_RAY_HOME"
SCRIPT = Path(__file__).resolve().parents[2] / "infra" / "ray-node.sh"
STATE = "head.json"
STOP_SECONDS = 10.0  # SIGTERM's grace before SIGKILL


@dataclass(frozen=True)
class Head:
    """A running head: its GCS address, the token file a client must present, the session id of its processes."""

    address: str
    token: Path
    session: int


def home() -> Path:
    return Path(os.environ.get(HOME_ENV) or Path.home() / ".pdors" / "ray")


def client_env(head: Head) -> dict[str, str]:
    """What a driver needs in its environment while it connects to ``head``."""
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(head.token), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def _answers(address: str, timeout: float = 0.5) -> bool:
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except (OSError, ValueError):
        return False
    return True


def find(where: Path | None = None) -> Head | None:
    """The head recorded under ``where`` (default :func:`home`) if its GCS accepts a connection, else None."""
    where = where or home()
    try:
        state = json.loads((where / STATE).read_text())
        head = Head(str(state["address"]), where / "token", int(state["session"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return head if _answers(head.address) else None


def _private_dir(where: Path) -> None:
    """``where`` as a directory only its owner can enter (it holds the token)."""
    where.mkdir(parents=True, exist_ok=True)
    os.chmod(where, 0o700)


def _token(where: Path) -> Path:
    """The head's token file, made (0600) if missing."""
    path = where / "token"
    if not path.exists() or not path.read_text().strip():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
    os.chmod(path, 0o600)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def up(num_cpus: int | None = None, where: Path | None = None) -> tuple[Head, bool]:
    """Start the head (``num_cpus``: default all) unless one is up; the head and whether it was started now."""
    where = where or home()
    running = find(where)
    if running is not None:
        return running, False
    _private_dir(where)
    token = _token(where)
    (where / STATE).unlink(missing_ok=True)
    temp = where / "t"
    env = {
        **os.environ,
        "RAY_NODE_IP": "127.0.0.1",
        "RAY_PORT": "0",  # GCS on a free port, read back from ray_current_cluster
        "RAY_TEMP_DIR": str(temp),
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN_PATH": str(token),
    }
    env.pop("RAY_AUTH_TOKEN", None)
    (temp / "ray_current_cluster").unlink(missing_ok=True)
    args = [f"--ray-client-server-port={_free_port()}", f"--dashboard-agent-listen-port={_free_port()}"]
    args += [f"--num-cpus={num_cpus}"] if num_cpus else []
    log = where / "up.log"
    with log.open("w") as out:  # a session of its own: its daemons keep its id, which `down` ends
        started = subprocess.Popen(
            ["bash", str(SCRIPT), "head", *args], env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        code = started.wait()
    if code:
        stop_session(started.pid, temp)
        raise RuntimeError(f"ray start failed (exit status {code}); its output: {log}")
    address = (temp / "ray_current_cluster").read_text().strip()
    atomic.write(where / STATE, json.dumps({"address": address, "session": started.pid}))
    return Head(address, token, started.pid), True


def session_pids(session: int) -> list[int]:
    """The live processes of session ``session``."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after "(comm)": state ppid pgrp session
            if int(fields[3]) == session and fields[0] != "Z":
                pids.append(int(stat.parent.name))
    return pids


def _ours(pids: list[int], temp: Path) -> bool:
    """Whether one of ``pids`` runs with ``temp`` on its command line (the session id was not reused)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            if str(temp).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
    return False


def stop_session(session: int, temp: Path) -> int:
    """End session ``session``'s processes if they are a head's in ``temp`` (SIGTERM, then SIGKILL after
    ``STOP_SECONDS``); how many there were."""
    pids = session_pids(session)
    if not pids or not _ours(pids, temp):
        return 0
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + STOP_SECONDS
        while session_pids(session) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not session_pids(session):
            break
    return len(pids)


def down(where: Path | None = None) -> int:
    """Stop the head recorded under ``where`` (default :func:`home`); how many processes were ended."""
    where = where or home()
    try:
        session = int(json.loads((where / STATE).read_text())["session"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    ended = stop_session(session, where / "t")
    (where / STATE).unlink(missing_ok=True)
    return ended
