"""`pdors opt --policies`: only the named policies are run and rated (the bound at 1000 x 1000 without the
minute PD-ORS takes there); an unknown name is refused before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdors_cli.main import main

SMALL = ["opt", "--machines", "4", "--jobs", "10", "--slots", "10", "--seed", "2"]


def test_only_the_named_policies_are_rated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c.json"
    assert main([*SMALL, "--method", "bound", "--policies", "fifo, pdors", "--json", str(out)]) == 0
    assert sorted(r["policy"] for r in json.loads(out.read_text())["certified"]["ratios"]) == ["fifo", "pdors"]
    assert "drf" not in capsys.readouterr().out


def test_an_unknown_policy_is_refused_before_anything_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c.json"
    assert main([*SMALL, "--method", "bound", "--policies", "fifo,nope", "--json", str(out)]) == 2
    assert "--policies: unknown policy nope" in capsys.readouterr().err and not out.exists()
