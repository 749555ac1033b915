"""The error model (pdors.errors): the project's errors are one line with their exit status; anything else
keeps its traceback; the output root's lock conflict is a ``LockedError``."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from pdors.errors import ConfigError, ExitStatus, InputError, LockedError, PdorsError, RecordDamaged, SweepError
from pdors_cli import main as cli
from pipeline.record.storage import Store


def _run(monkeypatch: pytest.MonkeyPatch, error: Exception) -> int:
    def handler(args: argparse.Namespace) -> int:
        raise error

    monkeypatch.setattr(cli, "parse", lambda argv: argparse.Namespace(command="x", func=handler))
    return cli.main(["x"])  # any argument: no arguments at all print the help


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (ConfigError("a.b", "must be >= 1"), ExitStatus.BAD_INPUT),
        (SweepError("no sweeps"), ExitStatus.BAD_INPUT),
        (InputError("too large"), ExitStatus.BAD_INPUT),
        (LockedError("locked"), ExitStatus.BAD_INPUT),
        (RecordDamaged("damaged"), ExitStatus.FAILED),
    ],
)
def test_project_errors_are_one_line_with_their_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], error: PdorsError, status: ExitStatus
) -> None:
    assert _run(monkeypatch, error) == status
    assert capsys.readouterr().err == f"pdors x: error: {error}\n"


@pytest.mark.parametrize("error", [ValueError("a bug"), RuntimeError("a bug"), KeyError("a bug")])
def test_other_errors_keep_their_traceback(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    with pytest.raises(type(error)):
        _run(monkeypatch, error)


def test_lock_conflict_is_a_locked_error(tmp_path: Path) -> None:
    store = Store(tmp_path, "s")
    with store.lock(), pytest.raises(LockedError, match="being written by another sweep"), Store(tmp_path, "t").lock():
        pass


def test_exit_statuses_are_distinct() -> None:
    assert len({int(s) for s in ExitStatus}) == len(ExitStatus)
    assert (ExitStatus.OK, ExitStatus.BAD_INPUT, ExitStatus.MLFLOW_FAILED) == (0, 2, 3)
