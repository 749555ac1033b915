"""The errors a command reports as one line, and the exit status of every command.

``pdors_cli.main`` catches :class:`PdorsError` only: it prints the message and returns the error's ``status``.
Any other exception is a bug and keeps its traceback. A leaf module: it imports nothing of the project.
"""

from __future__ import annotations

import enum
from typing import ClassVar


class ExitStatus(enum.IntEnum):
    """The exit status of every ``pdors`` command (docs/PIPELINE.md, "Errors and exit status")."""

    OK = 0
    FAILED = 1  # some runs failed, were invalid, lost or not run; a check failed; a record file is damaged
    BAD_INPUT = 2  # a value, path or file the user gave is wrong, or the output root is locked; nothing written
    MLFLOW_FAILED = 3  # the results are written, attaching them to MLflow failed
    DISK_FULL = 4  # the disk filled up; the runs recorded so far are kept
    INTERRUPTED = 130  # SIGINT (128 + 2)
    TERMINATED = 143  # SIGTERM (128 + 15)


def shorten(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was: every error message stays bounded."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


class PdorsError(Exception):
    """An error the command reports as one line (no traceback), exiting with ``status``."""

    status: ClassVar[ExitStatus] = ExitStatus.FAILED


class InputError(PdorsError, ValueError):
    """Bad input: a value, file or path the user gave. A ``ValueError``, so library callers may catch it as one."""

    status = ExitStatus.BAD_INPUT


class ConfigError(InputError):
    """A configuration value is missing, unknown, of the wrong type or impossible."""

    def __init__(self, path: str, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(f"{shorten(path or '<root>', 200)}: {shorten(reason, 1000)}")  # one bounded line


class SweepError(InputError):
    """A sweep cannot be started or read as asked."""


class LockedError(PdorsError):
    """The output root is being written by another process (one writer per root)."""

    status = ExitStatus.BAD_INPUT


class RecordDamaged(PdorsError):
    """A record file failed its checks while being read; the message names the file and the repair."""

    status = ExitStatus.FAILED
