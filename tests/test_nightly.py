"""``pdors nightly``: the hard-violation rules on hand-made comparisons, bad input, and real runs (HiGHS, the
validator, an MLflow SQLite store): a pinned set recorded with ``--record`` passes with PD-ORS as it is, and
fails when PD-ORS is weakened in-process or when its record is altered."""

from __future__ import annotations

import copy
import importlib
import json
import math
from datetime import date

import mlflow
import numpy as np
import pytest
from mlflow.tracking import MlflowClient

import pdors.policies.pdors as pdors_policy
from offline_opt import Comparison, OptResult, PolicyRatio
from offline_opt.compare import judge
from pdors.instance_io import to_dict
from pdors_cli.main import main
from pipeline.nightly import record as nightly_record
from pipeline.nightly.run import EXPERIMENT, date_seed, interval, offences, stats

compare_module = importlib.import_module("offline_opt.compare")  # the package exports compare() under that name


def opt(objective=100.0, status="optimal", proven=True, violations=(), bound=None):
    return OptResult(
        objective=objective,
        mip_objective=objective,
        bound=bound or (objective if proven else 120.0),
        gap=0.0 if proven else 0.17,
        status=status,
        proven_optimal=proven,
        solver="highs",
        wall_s=1.0,
        time_limit=300.0,
        mip_gap=1e-6,
        violations=list(violations),
    )


def policy(name, utility, o=None, violations=0, bound=50.0):
    o = o or opt()
    ratio, kind, note = judge(utility, o.objective, o.bound, o.proven_optimal, o.mip_gap, o.status)
    return PolicyRatio(
        policy=name,
        utility=utility,
        admitted=5,
        completed=5,
        violations=violations,
        ratio=ratio,
        ratio_kind=kind,
        ratio_note=note,
        competitive_bound=bound if name == "pdors" else None,
    )


def comparison(o, *policies):
    return Comparison(
        instance_meta={"seed": 1}, size={"machines": 4, "jobs": 10, "slots": 10}, opt=o, policies=list(policies)
    )


def test_only_hard_violations_fail_a_fresh_instance():
    unproven = opt(status="time_limit", proven=False)
    failed = OptResult(
        objective=None,
        mip_objective=None,
        bound=None,
        gap=None,
        status="error",
        proven_optimal=False,
        solver="highs",
        wall_s=1.0,
        time_limit=300.0,
        mip_gap=1e-6,
    )
    passing = {
        "proven, ratios far above the band": comparison(opt(), policy("pdors", 20.0), policy("fifo", 1.0)),
        "OPT unproven": comparison(unproven, policy("pdors", 60.0, unproven)),
        "both 0": comparison(opt(0.0), policy("pdors", 0.0, opt(0.0))),
        "a policy within the gap": comparison(opt(), policy("pdors", 100.00005)),
    }
    for why, c in passing.items():
        assert offences(c) == [], why
    failing = {
        "OPT schedule has 1 validator violation(s)": comparison(
            opt(violations=[{"kind": "capacity"}]), policy("pdors", 99.0)
        ),
        "OPT solve failed (highs status error": comparison(failed, policy("pdors", 99.0, failed)),
        "fifo schedule has 2 validator violation(s)": comparison(
            opt(), policy("pdors", 99.0), policy("fifo", 50.0, violations=2)
        ),
        "drf: ALG 101 exceeds OPT 100": comparison(opt(), policy("pdors", 99.0), policy("drf", 101.0)),
        "pdors: ALG 125 exceeds the bound 120": comparison(unproven, policy("pdors", 125.0, unproven)),
        "pdors OPT / ALG >= 1.2500 > theoretical bound 1.2": comparison(opt(), policy("pdors", 80.0, bound=1.2)),
        # unproven: the lower end of the interval (best found / ALG) is what the bound must not be below
        "pdors OPT / ALG >= 2.0000 > theoretical bound 1.5": comparison(
            unproven, policy("pdors", 50.0, unproven, bound=1.5)
        ),
        "pdors reported no theoretical bound": comparison(opt(), policy("pdors", 99.0, bound=None)),
    }
    for expected, c in failing.items():
        found = offences(c)
        assert len(found) == 1 and found[0].startswith(expected), (expected, found)


def test_pdors_interval():
    unproven = opt(status="time_limit", proven=False)  # best found 100, bound 120
    assert interval(comparison(opt(), policy("pdors", 80.0))) == (1.25, 1.25)
    assert interval(comparison(unproven, policy("pdors", 80.0, unproven))) == (1.25, 1.5)
    assert interval(comparison(unproven, policy("pdors", 110.0, unproven))) == (1.0, 120.0 / 110.0)
    assert interval(comparison(opt(), policy("pdors", 0.0))) == (math.inf, math.inf)
    assert interval(comparison(opt(0.0), policy("pdors", 0.0, opt(0.0)))) is None


def test_stats_and_date_seeds():
    assert stats([]) == {"max": None, "median": None, "p90": None}
    s = stats([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0])
    assert s["max"] == 11.0 and s["median"] == 6.0 and s["p90"] == pytest.approx(10.0)
    assert date_seed(date(2026, 11, 24)) == 2026112400 and date_seed(date(2026, 11, 25)) == 2026112500


@pytest.mark.parametrize(
    "args, field",
    [
        (["--fresh", "-1"], "fresh: must be >= 0"),
        (["--tolerance", "1"], "tolerance: must lie in [0, 1)"),
        (["--profile", "huge"], "profile: must be one of small"),
        (["--seed", "-1"], "seed: must be >= 0"),
        (["--record-file", "no/such.json"], "--record-file: no such file: no/such.json"),
    ],
)
def test_bad_input_is_refused_before_any_work(args, field, tmp_path, capsys):
    assert main(["nightly", "--out", str(tmp_path / "out"), *args]) == 2
    err = capsys.readouterr().err
    assert field in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_a_record_for_another_profile_is_refused(tmp_path, capsys):
    path = tmp_path / "rec.json"
    path.write_text(json.dumps({"format": "pdors-nightly-record/1", "profile": "paper", "instances": []}))
    assert main(["nightly", "--record-file", str(path), "--out", str(tmp_path / "out")]) == 2
    assert "--profile: the record" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_a_record_without_the_paper_scale_part_is_refused(tmp_path, capsys):
    path = tmp_path / "rec.json"
    path.write_text(json.dumps({"format": "pdors-nightly-record/1", "profile": "small", "instances": []}))
    assert main(["nightly", "--record-file", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "has no paper_record or power section" in err and "--record paper" in err
    assert not (tmp_path / "out").exists()


def frozen_high_prices(bounds, used, capacity):
    """A deliberately weakened PD-ORS price function: utilisation ignored, every price pinned at
    L (U^r / L)^0.8 (80% of eq. (12)'s log range), so PD-ORS turns away jobs it could run."""
    return np.broadcast_to(bounds.lower * np.exp(0.8 * bounds.log_ratio()), used.shape).copy()


def solved_once(monkeypatch):
    """OPT memoised per instance and solver settings: the test solves seed 6 in ``--record`` and again as a fresh
    instance, seed 3 as a fresh instance and again in its replay. A different instance or setting is a miss and
    is solved; the returned results are copies."""
    solve = compare_module.solve
    seen = {}

    def once(instance, solver, time_limit, mip_gap, strengthening, incumbent=None):
        key = (
            json.dumps(to_dict(instance), sort_keys=True),
            solver,
            time_limit,
            mip_gap,
            repr(strengthening),
            None if incumbent is None else (incumbent[0].digest(), incumbent[1].tobytes()),
        )
        if key not in seen:
            seen[key] = solve(instance, solver, time_limit, mip_gap, strengthening, incumbent)
        return copy.deepcopy(seen[key])

    monkeypatch.setattr(compare_module, "solve", once)


@pytest.mark.slow
def test_nightly_is_green_as_is_and_red_when_pdors_is_weakened_or_its_record_altered(
    tmp_path, monkeypatch, capsys, mlflow_store
):
    """Seed 6 of the small profile (OPT proven by HiGHS in a few seconds) pinned by ``--record``; fresh: seed 6,
    and seed 3 with PD-ORS weakened. The green night runs one instance of each paper-scale setting (its wiring
    into the verdict); the red nights none (their verdict is the pinned one; ``nightly_paper`` is tested in
    test_dual_bound.py and test_premise.py)."""
    solved_once(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_store)
    mlflow.set_tracking_uri(None)  # re-read the environment (the client caches the URI per process)
    record = tmp_path / "record.json"
    assert main(["nightly", "--record", "small", "--seed", "6", "--pinned", "1", "--record-file", str(record)]) == 0
    rec = json.loads(record.read_text())
    # the committed paper-scale sections, the record's rows cut to one Fig. 6 instance (a second each)
    committed = nightly_record.load(nightly_record.DEFAULT_RECORD, "small")
    paper_rows = [r for r in committed["paper_record"]["rows"] if r["setting"] == "fig06" and r["seed"] == 1]
    rec |= {"paper_record": {**committed["paper_record"], "rows": paper_rows}, "power": committed["power"]}
    nightly_record.save(rec, record)
    assert [r["seed"] for r in rec["instances"]] == [6] and rec["profile"] == "small"
    assert rec["rule"].startswith("the first 1 seeds, in seed order from 6") and "No ratio" in rec["rule"]
    recorded = rec["instances"][0]["utilities"]["pdors"]
    out_dir = str(tmp_path / "out")
    args = ["nightly", "--record-file", str(record), "--fresh", "1", "--paper", "1", "--fig09", "1", "--seed", "6"]
    args += ["--out", out_dir]
    no_paper = ["--paper", "0", "--fig09", "0"]

    assert main(args) == 0
    out = capsys.readouterr().out
    assert "**PASS**" in out and f"| 6 | {rec['instances'][0]['opt']['objective']:.4f} |" in out
    good = json.loads(next((tmp_path / "out").glob("*/report.json")).read_text())
    assert good["passed"] and good["pinned"][0]["changes"] == [] and good["fresh"][0]["opt"]["proven_optimal"]

    # the record altered: PD-ORS "used to" earn 1% more
    altered = tmp_path / "altered.json"
    rec["instances"][0]["utilities"]["pdors"] = recorded * 1.01
    rec["instances"][0]["utilities"]["fifo"] += 1.0  # a baseline's change is reported, not failed
    altered.write_text(json.dumps(rec))
    assert main(["nightly", "--record-file", str(altered), "--fresh", "0", *no_paper, "--out", out_dir]) == 1
    out = capsys.readouterr().out
    assert f"pdors utility {recorded:.6f} below its record {recorded * 1.01:.6f}" in out and "fifo: " in out

    monkeypatch.setattr(pdors_policy, "prices", frozen_high_prices)
    fresh3 = ["nightly", "--record-file", str(record), "--fresh", "1", *no_paper, "--seed", "3", "--out", out_dir]
    assert main(fresh3) == 1  # fresh seed 3 (OPT in about 20 s)
    out = capsys.readouterr().out
    assert "**FAIL**" in out and "pinned seed 6: pdors utility" in out and "paper record fig06 seed 1" in out
    bad = json.loads(max((tmp_path / "out").glob("*/report.json")).read_text())
    weak = bad["pinned"][0]["utilities"]["pdors"]
    # seed 6: -8.3 % (235.4 against 256.8 under the default discard rule, which already turns jobs away)
    assert not bad["passed"] and weak < 0.95 * recorded and bad["fresh"][0]["offences"] == []
    # the fresh instance is far outside the band: saved to replay, but not a failure
    assert bad["fresh"][0]["interval"][0] > 1.4 and bad["fresh"][0]["outside_band"]
    saved = next(p for p in (tmp_path / "out").glob("*/outside_band/seed-3.json"))
    assert main(["opt", "--instance", str(saved), "--seed", "3", "--time-limit", "60"]) == 0
    weak_fresh = next(p["utility"] for p in bad["fresh"][0]["policies"] if p["policy"] == "pdors")
    assert f"pdors: utility {weak_fresh:.4f}" in capsys.readouterr().out

    client = MlflowClient(tracking_uri=mlflow_store)
    runs = client.search_runs(
        [client.get_experiment_by_name(EXPERIMENT).experiment_id], order_by=["attributes.start_time ASC"]
    )
    assert [r.data.tags["result"] for r in runs] == ["pass", "fail", "fail"]
    assert [r.info.status for r in runs] == ["FINISHED", "FAILED", "FAILED"]
    passed, failed = runs[0], runs[-1]
    ratio = good["fresh"][0]["policies"][0]["ratio"]
    assert {k: passed.data.metrics[f"ratio.pdors.{k}"] for k in ("median", "p90", "max")} == pytest.approx(
        {"median": ratio, "p90": ratio, "max": ratio}
    )
    assert failed.data.metrics["ratio.pdors.max"] > 1.4 and failed.data.metrics["outside_band"] == 1
    assert failed.data.tags["offenders"] == "pinned 6" and failed.data.params["profile"] == "small"
    history = client.get_metric_history(failed.info.run_id, "pinned.pdors")
    assert [(m.step, m.value) for m in history] == [(6, pytest.approx(weak))]
    artifacts = {a.path for a in client.list_artifacts(failed.info.run_id)}
    assert {"report.json", "summary.md", "ratios.png", "outside_band"} <= artifacts


# ---- the paper-scale record, the fresh power check, the mutation test (issue 45) ----

ROW = {
    "setting": "fig06",
    "seed": 1,
    "reading": "found_solutions",
    "instance_digest": "abc",
    "utility": 100.0,
    "digest": "d1",
    "admitted": 9,
}


def test_the_paper_record_names_a_regression_its_size_and_a_change_to_rerecord():
    from pipeline.nightly.paper_record import Outcome, judge

    def verdict(utility, digest, instance="abc"):
        return judge(ROW, Outcome(utility=utility, digest=digest, admitted=8), instance, 5, 1e-9)

    assert verdict(100.0, "d1").kind == "pass" and not verdict(100.0, "d1").red
    low = verdict(97.5, "d2")
    assert low.kind == "regression" and "2.50% below its record 100.0000" in low.reason
    for better in (100.0, 101.0):  # a changed schedule with equal or better utility: never passed silently
        v = verdict(better, "d2")
        assert v.red and v.kind == "changed" and "re-record" in v.reason and "MODEL_VERSION" in v.reason
    assert verdict(100.0, "d1", instance="other").kind == "instance"


def test_the_fresh_check_is_red_below_the_stated_quantile_of_resampled_healthy_nights():
    from pipeline.nightly.power import judge, night_means

    section = {
        "quantile": 0.001,
        "resamples": 20_000,
        "values": {"paper/reject": [1.0, 1.0, 1.0, 1.0], "fig09/reject": [1.0] * 9 + [0.7]},
    }
    paper, fig09 = judge(section, {"paper/reject": [0.999, 1.0, 1.0], "fig09/reject": [0.7, 0.7]})
    # every recorded x is 1: any drop of the night's mean is red
    assert paper.threshold == 1.0 and paper.red and "0.03% below a healthy night's median 1.0000" in paper.reason
    # two draws of a 10 % tail at 0.7 both land in it 1 % > 0.1 % of nights: 0.7 is healthy, 0.695 is not
    assert fig09.threshold == pytest.approx(0.7) and fig09.median == 1.0 and not fig09.red
    assert fig09.detectable == pytest.approx(0.3)
    (low,) = judge(section, {"fig09/reject": [0.69, 0.7]})
    assert low.red and low.recorded == 10 and low.instances == 2
    # the threshold is a pure function of the record and K: the same every night, on any machine
    assert (
        judge(section, {"fig09/reject": [0.9, 0.9, 0.9]})[0].threshold
        == judge(section, {"fig09/reject": [1.0] * 3})[0].threshold
    )
    means = night_means(np.asarray(section["values"]["fig09/reject"]), 3, 20_000)
    assert abs(np.mean(means) - 0.97) < 0.002  # draws with replacement: the mean of means is the recorded mean


def test_a_mutant_acts_from_outside_and_leaves_pdors_as_it_was():
    """Reject every 10th job (a planted regression of issue 45's table) on the pinned Fig. 6 instance: PD-ORS's
    schedule changes while it is applied and is exactly its record after."""
    from pdors.policies.pdors import PDORS
    from pipeline.nightly import record as nightly_record
    from pipeline.nightly.paper_record import run_pdors
    from studies.nightly_mutants import MUTANTS

    rec = nightly_record.load(nightly_record.DEFAULT_RECORD, "small")
    row = next(r for r in rec["paper_record"]["rows"] if r["setting"] == "fig06" and r["seed"] == 1)
    plan = PDORS.plan
    with next(m for m in MUTANTS if m.name == "10th").apply():
        assert PDORS.plan is not plan
        # its schedule differs (its utility is higher here: rejecting job 9 leaves room for later ones; the record
        # reports that as a change to re-record)
        assert run_pdors("fig06", 1, row["reading"]).digest != row["digest"]
    assert PDORS.plan is plan
    healthy = run_pdors("fig06", 1, row["reading"])
    assert (healthy.utility, healthy.digest) == (row["utility"], row["digest"])


def test_help_says_what_the_nightly_checks_and_what_turns_it_red(capsys):
    with pytest.raises(SystemExit):
        main(["nightly", "--help"])
    out = capsys.readouterr().out
    assert "Red (exit 1)" in out and "example:\n  pdors nightly" in out and "H = 100" in out


@pytest.mark.parametrize(
    "args, field",
    [
        (["--paper-pinned", "0"], "paper_pinned: must be >= 1"),
        (["--mutants", "--only", "nosuch"], "--only: unknown mutant(s) nosuch"),
        (["--mutants", "--nights", "-1"], "--nights: must be >= 0"),
        (["--mutants", "--workers", "0"], "--workers: must be >= 1"),
    ],
)
def test_bad_paper_scale_input_is_refused(args, field, tmp_path, capsys):
    assert main(["nightly", "--out", str(tmp_path / "out"), *args]) == 2
    err = capsys.readouterr().err
    assert field in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_the_mutants_workers_keep_the_order_of_rows():
    from studies.nightly_mutants import _map

    assert list(_map(abs, [-3, 1, -2], 2)) == list(_map(abs, [-3, 1, -2], 1)) == [3, 1, 2]


ISSUE_ROWS = ["3rd@H>=30", "10th"]  # the issue's rows that passed the old nightly (exit 0, theorem check green)


@pytest.mark.slow
def test_issue_planted_regressions_that_passed_turn_the_nightly_red_and_the_unmutated_one_stays_green(tmp_path):
    """Two rows of issue 45's table, planted the same way (studies/nightly_mutants.py), against the committed
    record cut to H = 100 seed 1 and two small instances (the command runs all rows on the whole record): each
    turns the nightly's regression checks red with a reason naming the regression's size."""
    from pipeline.nightly import record as nightly_record
    from pipeline.nightly.run import Settings
    from studies.nightly_mutants import FIRST_NIGHT, mutation_table

    rec = nightly_record.load(nightly_record.DEFAULT_RECORD, "small")
    rec["paper_record"]["rows"] = [r for r in rec["paper_record"]["rows"] if (r["setting"], r["seed"]) == ("paper", 1)]
    rec["instances"] = rec["instances"][:2]
    path = tmp_path / "record.json"
    nightly_record.save(rec, path)
    t = mutation_table(FIRST_NIGHT, {}, ["none", *ISSUE_ROWS], Settings(paper=1, record_file=str(path)))
    healthy, *mutants = t["mutants"]
    assert healthy["mutant"] == "none" and not healthy["red"] and healthy["size"] == pytest.approx(0.0, abs=1e-12)
    assert [r["mutant"] for r in mutants] == ISSUE_ROWS
    for r in mutants:
        assert r["red"] and "paper record" in r["parts"], r
        assert "% below" in r["reason"], r
    assert all(r["size"] > 0 for r in mutants)  # each lowers the mean utility of the paper-scale record


@pytest.mark.slow
def test_a_changed_digest_is_red_until_rerecorded(tmp_path, capsys):
    """A record whose digest differs from tonight's schedule (as after a change that keeps the utility) is red
    with 're-record'; `pdors nightly --record paper` writes tonight's digests and the night is green again."""
    from pipeline.nightly import record as nightly_record

    rec = nightly_record.load(nightly_record.DEFAULT_RECORD, "small")
    rec["paper_record"]["rows"] = [r for r in rec["paper_record"]["rows"] if r["setting"] == "fig06"][:1]
    rec["instances"] = rec["instances"][:1]
    digest = rec["paper_record"]["rows"][0]["digest"]
    rec["paper_record"]["rows"][0]["digest"] = "0" * 32
    path = tmp_path / "record.json"
    nightly_record.save(rec, path)
    night = ["nightly", "--record-file", str(path), "--fresh", "0", "--paper", "0", "--fig09", "0", "--no-mlflow"]
    night += ["--out", str(tmp_path / "out")]
    assert main(night) == 1
    out = capsys.readouterr().out
    assert "schedule digest changed with utility +0.00%" in out and "--record paper" in out

    assert (
        main(["nightly", "--record", "paper", "--record-file", str(path), "--paper-pinned", "1", "--calibration", "1"])
        == 0
    )
    rows = json.loads(path.read_text())["paper_record"]["rows"]
    assert [r["digest"] for r in rows if r["setting"] == "fig06" and r["reading"] == "found_solutions"] == [digest]
    assert len(json.loads(path.read_text())["instances"]) == 1  # the small set is kept
    capsys.readouterr()
    assert main(night) == 0
