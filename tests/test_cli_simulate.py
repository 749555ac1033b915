"""`pdors simulate` as a user runs it: the issue's command, in fresh processes."""

import json
import subprocess
import sys

import pytest

TIMING = ("wall_s", "decision_latency_ms", "decision_cpu_ms")


def _simulate(tmp_path, name, *extra, jobs=50, slots=20):
    out = tmp_path / f"{name}.json"
    cmd = [
        sys.executable,
        "-m",
        "pdors_cli.main",
        "simulate",
        "--policy",
        "pdors",
        "--machines",
        "30",
        "--jobs",
        str(jobs),
        "--slots",
        str(slots),
        "--seed",
        "1",
        "--json",
        str(out),
        *extra,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr + done.stdout
    return json.loads(out.read_text()), done.stdout


def test_issue_command_validates_and_is_deterministic(tmp_path):
    first, stdout = _simulate(tmp_path, "a")
    assert first["violations"] == []
    assert first["admitted"] > 0 and first["completed"] > 0
    per_job = sum(j["utility"] for j in first["jobs"] if j["completion"] is not None)
    assert first["total_utility"] == pytest.approx(per_job, rel=1e-12)
    assert all(j["utility"] == 0 for j in first["jobs"] if j["completion"] is None)
    for key in (
        "policy",
        "seed",
        "machines",
        "num_jobs",
        "slots",
        "rejected",
        "median_training_time",
        "utilisation",
        "policy_stats",
    ):
        assert key in first
    assert set(first["utilisation"]) == {"gpu", "cpu", "mem", "storage"}
    assert "total utility" in stdout

    second, _ = _simulate(tmp_path, "b")
    for key in TIMING:
        first.pop(key), second.pop(key)
    assert first == second


def test_default_workload_is_in_the_paper_s_fig9_regime(tmp_path):
    """Issue 16's acceptance line: with the calibrated default workload (docs/MODEL.md, "Calibration") the Fig. 9
    setting has a median training time below T = 80, and the JSON carries the load measures."""
    s, _ = _simulate(tmp_path, "fig9", jobs=100, slots=80)
    assert s["violations"] == [] and s["median_training_time"] < 80
    assert set(s["offered_load"]) == {"compute", "internal", "external"}
    assert s["completed"] <= s["fluid_completable"] <= s["num_jobs"]


def test_bad_config_is_a_one_line_error(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("policies:\n  pdors:\n    rounding:\n      delta: 2.0\n")
    done = subprocess.run(
        [sys.executable, "-m", "pdors_cli.main", "simulate", "--config", str(cfg)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "params.rounding.delta" in done.stderr and "(0, 1]" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("policy", ["pdors", "pollux"])  # a planner, and a slot policy that pays restarts
def test_schedule_export_is_revalidated_from_the_parquet_file(tmp_path, policy):
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from pdors.config import build
    from pdors.run import RunSpec, make_instance
    from pdors.schedule_io import from_table, read
    from pdors.validator import validate

    path = tmp_path / "schedule.parquet"
    out = tmp_path / "run.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pdors_cli.main",
            "simulate",
            "--policy",
            policy,
            "--machines",
            "20",
            "--jobs",
            "20",
            "--slots",
            "12",
            "--seed",
            "2",
            "--json",
            str(out),
            "--schedule",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and "schedule written to" in done.stdout, done.stderr + done.stdout
    summary = json.loads(out.read_text())
    table = pq.read_table(path)
    assert table.column_names == ["job", "machine", "slot", "workers", "servers", "internal", "restart"]
    assert table.num_rows > 0 and pc.min(pc.add(table["workers"], table["servers"])).as_py() > 0
    instance = make_instance(build(RunSpec, summary["spec"]))
    check = validate(instance, read(path))
    assert check.violations == [] and check.total_utility == pytest.approx(summary["total_utility"], rel=1e-12)
    # the file is what is judged: a false locality claim in it is caught
    flipped = table.set_column(5, "internal", pc.invert(table["internal"]))
    assert {v.kind for v in validate(instance, from_table(flipped)).violations} == {"locality"}


def test_highs_solves_print_nothing():
    """Dorm's MILP and PD-ORS's slot LPs run HiGHS in the command's own process: its banner must not reach the
    terminal (a HiGHS wrapper constructed with output on prints it before any option can be set)."""
    for policy in ("dorm", "pdors"):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pdors_cli.main",
                "simulate",
                "--policy",
                policy,
                "--machines",
                "6",
                "--jobs",
                "8",
                "--slots",
                "6",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr + done.stdout
        assert "HiGHS" not in done.stdout + done.stderr and done.stdout.startswith(f"{policy}: H=6")
