"""`pdors compare --bound`: each policy's certified interval on OPT / ALG in the headline table, from the real
dual bound and primal schedule of each seed's instance (offline_opt/certified.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import pdors_cli.main as cli
from pipeline.results import headline

SMALL = ["--machines", "6", "--jobs", "8", "--slots", "6", "--seeds", "1-3"]


def _row(text: str, policy: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(policy + " "))


def test_compare_bound_adds_each_policys_certified_interval(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "cmp.json"
    assert cli.main(["compare", "--policies", "pdors,fifo,oasis", *SMALL, "--bound", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "OPT/ALG certified" in text.splitlines()[1], text
    runs = json.loads(out.read_text())["runs"]
    for name, policy in (("PD-ORS", "pdors"), ("FIFO", "fifo"), ("OASiS", "oasis")):
        mine = [r for r in runs if r["policy"] == policy]
        for r in mine:
            c = r["certified"]
            assert r["total_utility"] <= c["opt_lower"] <= c["bound"] + 1e-9 and not c["error"]
            if r["total_utility"] > 0:
                assert 1.0 <= c["low"] <= c["high"]
                assert math.isclose(c["high"], c["bound"] / r["total_utility"])
            else:
                assert c["low"] is None and c["high"] is None
        both = [(r["certified"]["low"], r["certified"]["high"]) for r in mine if r["certified"]["low"] is not None]
        low, high = (sum(p[k] for p in both) / len(both) for k in (0, 1))
        shown = f"[{headline.number(low, 2)}, {headline.number(high, 2)}]"
        shown += "" if len(both) == len(mine) else f" ({len(both)} of {len(mine)})"
        assert _row(text, name).endswith(shown), (_row(text, name), shown)


def test_compare_without_bound_has_no_certified_column(capsys: pytest.CaptureFixture[str]):
    assert cli.main(["compare", "--policies", "pdors,fifo", *SMALL]) == 0
    assert "certified" not in capsys.readouterr().out
