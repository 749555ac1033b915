"""``pdors nightly``: the pass/fail rules on hand-made comparisons, and real runs (HiGHS, the validator, an
MLflow SQLite store) where it passes with PD-ORS as it is and fails, saving a replayable instance, with PD-ORS
weakened in-process."""
from __future__ import annotations

import json

import mlflow
import numpy as np
import pytest
from mlflow.tracking import MlflowClient

import pdors.policies.pdors as pdors_policy
from offline_opt import Comparison, OptResult, PolicyRatio
from pdors_cli.main import main
from pipeline.nightly import EXPERIMENT, offences, stats


def opt(objective=100.0, status="optimal", proven=True, violations=()):
    return OptResult(objective, objective, objective if proven else 120.0, 0.0 if proven else 0.17, status, proven,
                     "highs", 1.0, 300.0, 1e-6, violations=list(violations))


def policy(name, utility, opt_value=100.0, kind="opt", violations=0, bound=None):
    ratio = opt_value / utility if utility > 0 and kind != "none" else None
    return PolicyRatio(name, utility, 5, 5, violations, ratio, kind, "", bound)


def comparison(o, *policies):
    return Comparison({"seed": 1}, {"machines": 4, "jobs": 10, "slots": 10}, o, list(policies))


def test_a_proven_opt_and_ratios_within_limits_pass():
    assert offences(comparison(opt(), policy("pdors", 80.0, bound=50.0), policy("fifo", 10.0)), 1.5) == []
    # both 0: nothing to compare, nothing wrong
    assert offences(comparison(opt(0.0), policy("pdors", 0.0, 0.0, kind="none", bound=50.0)), 1.5) == []


def test_each_rule_fails_an_instance():
    cases = {
        "OPT not proven optimal (highs status time_limit, gap 1.70e-01": comparison(
            opt(status="time_limit", proven=False), policy("pdors", 99.0, 120.0, kind="upper", bound=50.0)),
        "OPT schedule has 1 validator violation(s)": comparison(
            opt(proven=True, violations=[{"kind": "capacity"}]), policy("pdors", 99.0, bound=50.0)),
        "fifo schedule has 2 validator violation(s)": comparison(
            opt(), policy("pdors", 99.0, bound=50.0), policy("fifo", 50.0, kind="none", violations=2)),
        "pdors OPT / ALG = 1.6000 > threshold 1.5": comparison(opt(), policy("pdors", 62.5, bound=50.0)),
        "pdors OPT / ALG = 1.2500 > theoretical bound 1.2": comparison(opt(), policy("pdors", 80.0, bound=1.2)),
        "pdors completed no job while OPT = 100.0000": comparison(opt(), policy("pdors", 0.0, kind="none",
                                                                              bound=50.0)),
        "drf beats OPT (OPT / ALG = 0.990099)": comparison(opt(), policy("pdors", 99.0, bound=50.0),
                                                           policy("drf", 101.0)),
        "pdors reported no theoretical bound": comparison(opt(), policy("pdors", 99.0)),
    }
    for expected, c in cases.items():
        found = offences(c, 1.5)
        assert len(found) == 1 and found[0].startswith(expected), (expected, found)
    # what solve() reports for a schedule the validator rejects: status invalid, so both reasons
    invalid = offences(comparison(opt(status="invalid", proven=False, violations=[{"kind": "capacity"}]),
                                  policy("pdors", 99.0, bound=50.0)), 1.5)
    assert [f.split(" (")[0] for f in invalid] == ["OPT not proven optimal", "OPT schedule has 1 validator violation(s)"]


def test_unproven_opt_fails_even_when_every_ratio_looks_fine():
    c = comparison(opt(status="time_limit", proven=False), policy("pdors", 119.0, 120.0, kind="upper", bound=50.0))
    assert len(offences(c, 10.0)) == 1


def test_stats():
    assert stats([]) == {"max": None, "median": None, "p90": None}
    s = stats([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0])
    assert s["max"] == 11.0 and s["median"] == 6.0 and s["p90"] == pytest.approx(10.0)


@pytest.mark.parametrize("args, field", [
    (["--threshold", "0.9"], "threshold: an OPT / ALG threshold must be >= 1"),
    (["--instances", "0"], "instances: must be >= 1"),
    (["--time-limit", "0"], "time_limit: must be > 0"),
    (["--seed", "-1"], "seed: must be >= 0"),
])
def test_bad_input_is_refused_before_any_work(args, field, tmp_path, capsys):
    assert main(["nightly", "--out", str(tmp_path / "out"), *args]) == 2
    assert field in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def frozen_high_prices(bounds, used, capacity):
    """A deliberately weakened PD-ORS price function: utilisation ignored, every price pinned at
    L (U^r / L)^0.8 (80% of eq. (12)'s log range), so PD-ORS turns away jobs it could run."""
    return np.broadcast_to(bounds.lower * np.exp(0.8 * bounds.log_ratio()), used.shape).copy()


@pytest.mark.slow
def test_nightly_passes_as_is_and_fails_with_pdors_weakened(tmp_path, monkeypatch, capsys):
    """Seed 3 of the small profile (OPT proven by HiGHS in about 15 s): PD-ORS as it is passes; with prices
    frozen high it fails the threshold, and the saved instance replays the failure through ``pdors opt``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    mlflow.set_tracking_uri(None)   # re-read the environment (the client caches the URI per process)
    args = ["nightly", "--instances", "1", "--seed", "3", "--out", str(tmp_path / "out")]

    assert main(args) == 0
    out = capsys.readouterr().out
    assert "**PASS**" in out and "| 3 | optimal |" in out
    good = json.loads(next((tmp_path / "out").glob("*/report.json")).read_text())
    ratio = next(p["ratio"] for p in good["instances"][0]["policies"] if p["policy"] == "pdors")
    assert good["passed"] and good["instances"][0]["opt"]["proven_optimal"] and 1.0 <= ratio <= 1.5
    assert not list((tmp_path / "out").glob("*/offenders"))

    monkeypatch.setattr(pdors_policy, "prices", frozen_high_prices)
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "**FAIL**: 1 of 1 instance(s)" in out and "> threshold 1.5" in out
    run_dir = next(p for p in (tmp_path / "out").glob("*") if (p / "offenders").exists())
    bad = json.loads((run_dir / "report.json").read_text())
    weak = next(p for p in bad["instances"][0]["policies"] if p["policy"] == "pdors")
    assert not bad["passed"] and weak["ratio"] > 1.5 and weak["utility"] < 0.9 * good["instances"][0]["opt"]["objective"]
    saved = run_dir / "offenders" / "seed-3.json"
    assert f"pdors opt --instance {saved} --seed 3 --solver highs" in out

    # the saved instance replays the failure with the command the table gives
    assert main(["opt", "--instance", str(saved), "--seed", "3", "--json", str(tmp_path / "replay.json")]) == 0
    replay = json.loads((tmp_path / "replay.json").read_text())
    assert replay["opt"]["objective"] == pytest.approx(bad["instances"][0]["opt"]["objective"], rel=1e-6)
    assert next(p["utility"] for p in replay["policies"] if p["policy"] == "pdors") == pytest.approx(weak["utility"])

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name(EXPERIMENT).experiment_id],
                              order_by=["attributes.start_time ASC"])
    assert [r.data.tags["result"] for r in runs] == ["pass", "fail"]
    assert [r.info.status for r in runs] == ["FINISHED", "FAILED"]
    passed, failed = runs
    assert passed.data.metrics["ratio.pdors.max"] == pytest.approx(ratio)
    assert failed.data.metrics["ratio.pdors.max"] == pytest.approx(weak["ratio"])
    assert failed.data.tags["offenders"] == "3" and failed.data.tags["solver_statuses"] == "3:optimal"
    assert failed.data.params["threshold"] == "1.5" and failed.data.tags["git_commit"]
    history = client.get_metric_history(failed.info.run_id, "ratio.pdors")
    assert [(m.step, m.value) for m in history] == [(3, pytest.approx(weak["ratio"]))]
    artifacts = {a.path for a in client.list_artifacts(failed.info.run_id)}
    assert {"report.json", "summary.md", "ratios.png", "offenders"} <= artifacts
