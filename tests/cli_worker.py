"""A process that runs ``pdors`` commands one after another as ``pdors ARGS`` runs them, for probes that run
hundreds of commands: the interpreter's and the package's start-up (about 0.4 s of CPU a command) is paid once.

Each command's file descriptors 1 and 2 go to files of their own, so everything it writes (print, logging,
warnings, C libraries) is captured apart; an exception that would end ``pdors`` with a traceback is printed as
Python prints it. A command still running after its time limit is a hang: the process is killed and the next
command gets a fresh one. Run as a script, it is the worker: a JSON line of arguments in on standard input, a
JSON line ``{"code", "out", "err"}`` out on the standard output it started with.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Done:
    code: int | None  # None: a hang
    out: str
    err: str


class CliWorker:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.proc: subprocess.Popen[str] | None = None

    def run(self, args: list[str], timeout: float) -> Done:
        if self.proc is None:
            self.proc = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=self.env,
                text=True,
            )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(args) + "\n")
        self.proc.stdin.flush()
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            answered = bool(sel.select(timeout))
        line = self.proc.stdout.readline() if answered else ""
        if not line:  # a hang, or the process died under the command (its own exit, a signal)
            code = self.close()
            return Done(code if answered else None, "", f"the worker ended with {code}")
        said = json.loads(line)
        return Done(said["code"], said["out"], said["err"])

    def close(self) -> int | None:
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        proc.kill()
        return proc.wait()


def _one(args: list[str]) -> dict[str, object]:
    from pdors_cli.main import main

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            code = main(args)
        except SystemExit as e:  # argparse's refusals, --help
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
            code = e.code if isinstance(e.code, int) else int(e.code is not None)
        except Exception:  # what would end `pdors` with a traceback
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
        out.seek(0)
        err.seek(0)
        return {"code": code, "out": out.read().decode(errors="replace"), "err": err.read().decode(errors="replace")}


if __name__ == "__main__":
    answers = os.fdopen(os.dup(1), "w")
    for request in sys.stdin:
        answers.write(json.dumps(_one(json.loads(request))) + "\n")
        answers.flush()
