"""`pdors opt --policies`: only the named policies are run and rated (the bound at 1000 x 1000 without the
half minute PD-ORS takes there); an unknown name is refused before anything runs. Without it every policy is
rated, except beside the bound above the MILP's 1,000,000 cells, where FIFO alone gives the interval its lower
end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdors.policies import POLICIES
from pdors_cli.main import main
from pdors_cli.opt import MAX_CELLS

SMALL = ["opt", "--machines", "4", "--jobs", "10", "--slots", "10", "--seed", "2"]


def test_only_the_named_policies_are_rated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c.json"
    assert main([*SMALL, "--method", "bound", "--policies", "fifo, pdors", "--json", str(out)]) == 0
    assert sorted(r["policy"] for r in json.loads(out.read_text())["certified"]["ratios"]) == ["fifo", "pdors"]
    assert "drf" not in capsys.readouterr().out


def test_an_unknown_policy_is_refused_before_anything_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c.json"
    assert main([*SMALL, "--method", "bound", "--policies", "fifo,nope", "--json", str(out)]) == 2
    assert "--policies: unknown policy 'nope'" in capsys.readouterr().err and not out.exists()


def test_without_policies_every_one_is_rated_up_to_the_milps_size_and_fifo_alone_above(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small, large = tmp_path / "small.json", tmp_path / "large.json"
    assert main([*SMALL, "--method", "bound", "--json", str(small)]) == 0
    assert sorted(r["policy"] for r in json.loads(small.read_text())["certified"]["ratios"]) == sorted(POLICIES)
    assert "policies rated" not in capsys.readouterr().out
    size = ["--machines", "100", "--jobs", "100", "--slots", str(MAX_CELLS // 10_000 + 1)]  # just over MAX_CELLS
    assert main(["opt", *size, "--method", "bound", "--profile", "paper", "--json", str(large)]) == 0
    certified = json.loads(large.read_text())["certified"]
    assert [r["policy"] for r in certified["ratios"]] == ["fifo"] and certified["opt_lower"] > 0
    assert "policies rated: fifo (the default above 1,000,000 cells" in capsys.readouterr().out
