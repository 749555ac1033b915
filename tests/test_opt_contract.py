"""OPT's contract: exact only to its gap target (a policy within the gap equals OPT, above it is an error every
command fails on), limits checked before anything runs, and a wall-clock guard of our own around each solve."""

from __future__ import annotations

import math
import time

import pandas as pd
import pytest

from offline_opt.compare import judge
from offline_opt.deadline import TIMED_OUT, call_with_deadline
from offline_opt.profile import small_profile
from offline_opt.solve import ceiling, default_wall_limit, solve
from pdors.workload import generate
from pdors_cli.main import main
from pipeline.results.summary import above_opt, with_ratio
from studies import ratio_vs_load as ratio_study


def test_a_policy_within_the_gap_equals_opt_and_above_it_is_an_error():
    # proven OPT 100 at gap target 1e-4: the true optimum may be up to 100 / (1 - 1e-4) = 100.010001
    assert ceiling(100.0, 100.005, True, 1e-4) == pytest.approx(100.0 / (1 - 1e-4) + 1e-6 * 100.010001)
    assert judge(80.0, 100.0, 100.0, True, 1e-4, "optimal")[:2] == (1.25, "opt")
    ratio, kind, note = judge(100.009, 100.0, 100.005, True, 1e-4, "optimal")
    assert (ratio, kind) == (1.0, "opt") and note.startswith("equal to OPT within the gap")
    ratio, kind, note = judge(100.02, 100.0, 100.005, True, 1e-4, "optimal")
    assert ratio is None and kind == "error" and "a bug in the model or the validator" in note
    # gap target 0: only float noise is allowed
    assert judge(100.0 + 5e-5, 100.0, 100.0, True, 0.0, "optimal")[1] == "opt"
    assert judge(100.001, 100.0, 100.0, True, 0.0, "optimal")[1] == "error"
    # unproven: anything up to the bound is possible, above it is not
    assert judge(110.0, 100.0, 120.0, False, 1e-6, "time_limit")[:2] == (120.0 / 110.0, "upper")
    assert judge(121.0, 100.0, 120.0, False, 1e-6, "time_limit")[1] == "error"
    assert judge(1e9, None, None, False, 1e-6, "error")[1] == "none"  # nothing proven: nothing to check


def test_a_sweep_flags_a_run_above_opt_and_clips_within_the_gap():
    result = '{"objective": 100.0, "bound": 100.0, "proven_optimal": true, "mip_gap": 0.001}'
    runs = pd.DataFrame(
        {
            "kind": ["opt", "sim", "sim", "sim"],
            "status": "ok",
            "instance_id": "a",
            "run_id": ["o", "ok", "gap", "bug"],
            "policy": ["opt", "pdors", "fifo", "drf"],
            "total_utility": [100.0, 50.0, 100.05, 101.0],
            "opt.result": [result, None, None, None],
        }
    )
    rated = with_ratio(runs)
    assert list(rated["ratio"].iloc[1:3]) == [2.0, 1.0] and math.isnan(rated["ratio"].iloc[3])
    assert list(above_opt(runs)["run_id"]) == ["bug"]


@pytest.mark.parametrize(
    "flag, value, message",
    [
        ("--mip-gap", "2", "pdors opt: error: --mip-gap: must lie in [0, 1), got 2.0"),
        ("--mip-gap", "-0.1", "pdors opt: error: --mip-gap: must lie in [0, 1), got -0.1"),
        (
            "--time-limit",
            "-5",
            "pdors opt: error: --time-limit: must lie in (0, 1,000,000] seconds (the guard's wait limit), got -5.0",
        ),
        (
            "--time-limit",
            "0",
            "pdors opt: error: --time-limit: must lie in (0, 1,000,000] seconds (the guard's wait limit), got 0.0",
        ),
    ],
)
def test_opt_refuses_impossible_limits_before_anything_runs(flag, value, message, tmp_path, capsys):
    out = tmp_path / "opt.json"
    assert main(["opt", flag, value, "--json", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == message and captured.out == "" and not out.exists()


@pytest.mark.parametrize(
    "args, field",
    [
        (["--mip-gap", "1"], "mip_gap: must lie in [0, 1)"),
        (["--time-limit", "-5"], "time_limit: must lie in (0, 1,000,000]"),
    ],
)
def test_nightly_refuses_impossible_limits(args, field, tmp_path, capsys):
    assert main(["nightly", "--no-mlflow", "--out", str(tmp_path / "out"), *args]) == 2
    assert field in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_solve_itself_refuses_impossible_limits():
    with pytest.raises(ValueError, match="mip_gap: must lie in"):
        solve(generate(small_profile(), 2, 3, 3, 1), mip_gap=1.0)


def test_the_guard_returns_answers_reraises_errors_and_kills_at_its_deadline():
    assert call_with_deadline(math.sqrt, (9.0,), 30) == 3.0
    with pytest.raises(ValueError, match="math domain error"):
        call_with_deadline(math.sqrt, (-1.0,), 30)
    assert call_with_deadline(time.sleep, (60,), 0.5) is TIMED_OUT  # killed: a sleep run out returns None


def test_the_guard_leaves_the_child_time_to_build_the_model_again():
    assert default_wall_limit(60) == pytest.approx(30 + 66)
    assert default_wall_limit(60, build_s=40) == pytest.approx(30 + 66 + 80)


@pytest.mark.slow
def test_a_solve_past_its_wall_limit_is_killed_and_reported_as_no_result():
    """Seed 7 of the small profile takes HiGHS many minutes: a 60 s solver limit, a 2 s wall limit."""
    r = solve(generate(small_profile(), 4, 10, 10, 7), "highs", time_limit=60, wall_limit=2)
    assert r.status == "time_limit" and not r.proven_optimal and r.objective is None and r.bound is None
    assert "wall-clock guard" in r.message and r.ceiling() is None


def test_the_ratio_study_gives_a_ratio_where_opt_is_proven_and_an_interval_where_not(tmp_path):
    """Two instances of one profile: OPT proven at 100 (PD-ORS 80: ratio 1.25), and OPT unproven with best found
    90 and bound 120 (PD-ORS 60: interval [1.5, 2]); the load is each run's own ``offered_load.internal``."""
    proven = (
        '{"status": "optimal", "objective": 100.0, "bound": 100.0, "proven_optimal": true, "mip_gap": 1e-6, '
        '"wall_s": 2.0}'
    )
    open_ = (
        '{"status": "time_limit", "objective": 90.0, "bound": 120.0, "proven_optimal": false, "mip_gap": 1e-6, '
        '"wall_s": 300.0}'
    )
    runs = pd.DataFrame(
        {
            "kind": ["opt", "sim", "opt", "sim"],
            "status": "ok",
            "instance_id": ["a", "a", "b", "b"],
            "seed": [1, 1, 2, 2],
            "run_id": ["oa", "pa", "ob", "pb"],
            "policy": ["opt", "pdors", "opt", "pdors"],
            "machines": 4,
            "workload.workload_scale": 0.02,
            "pdors.workload_levels": 100,
            "offered_load.internal": [None, 0.5, None, 0.7],
            "total_utility": [100.0, 80.0, None, 60.0],
            "opt.result": [proven, None, open_, None],
        }
    )
    table = ratio_study.instance_table(runs)
    assert table[["load", "proven", "ratio_low", "ratio_high"]].values.tolist() == [
        [0.5, True, 1.25, 1.25],
        [0.7, False, 1.5, 2.0],
    ]
    row = ratio_study.profile_table(table).iloc[0]
    assert (row["proven"], row["median OPT s"], row["PD-ORS in band (proven)"]) == ("1/2", 151.0, "1/1")
    assert row["PD-ORS worst"] == "[1.500, 2.000]"
    bins = ratio_study.load_table(table).set_index("offered load")
    assert bins.loc["[0.5, 0.75)", ["instances", "proven", "in band (proven)", "unproven"]].tolist() == [
        2,
        1,
        "1/1",
        "[1.500, 2.000]",
    ]
    png = ratio_study.plot(table, tmp_path / "ratio.png")
    assert png.exists() and png.with_suffix(".pdf").exists()
