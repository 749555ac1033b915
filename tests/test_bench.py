"""``pdors bench``: its measurements on small sizes (memory probes, Ray throughput on loopback) and its input
checks."""

import numpy as np
import pytest
from realstack import in_netns_python

from pdors_cli import main as cli
from studies.speed import FULL, QUICK, _peak_rss_mib, _sweep_tasks, bench_scale, report


def test_peak_memory_is_the_child_s_own_not_the_parent_s():
    """A child that allocates 200 MB reports at least that; a bare child of a 400 MB parent reports far less
    (``ru_maxrss`` from wait4 would report the parent's size here)."""
    ballast = np.ones(50_000_000)  # 400 MB in this process
    ballast[::4096] = 2.0  # resident, not just reserved
    bare = _peak_rss_mib("pass")
    big = _peak_rss_mib("import numpy as np; a = np.ones(25_000_000); a[::512] = 2")
    assert bare < 100 < 200 <= big < 400, (bare, big)
    del ballast


def test_sweep_grids_have_at_least_50_runs():
    for sizes in (QUICK, FULL):
        assert len(_sweep_tasks(sizes)) >= 50


def test_scale_section_runs_every_policy_and_reports_its_schedule():
    """One row per policy with the run's own digest; no ratio away from the size the before figures are for."""
    from dataclasses import replace

    from pdors.policies import POLICIES
    from pdors.run import run

    rows = bench_scale(replace(QUICK, scale=(6, 8, 6)), seed=2)
    assert [r["policy"] for r in rows] == list(POLICIES)
    assert all(r["violations"] == 0 and r["speedup"] is None for r in rows)
    direct = run(dict(policy="drf", machines=6, jobs=8, slots=6, seed=2)).summary
    assert next(r for r in rows if r["policy"] == "drf")["digest"] == direct.schedule_digest
    assert "H = 6, I = 8, T = 6" in report({"machine": {}, "scale": rows, "load_average_end": (0, 0, 0)})


def test_unknown_section_is_refused_before_any_work(capsys):
    assert cli.main(["bench", "--only", "latency,nope"]) == 2
    assert "--only: unknown section 'nope'" in capsys.readouterr().err


@pytest.mark.slow
def test_ray_throughput_section_on_loopback(netns, env):
    """10 quickstart runs on a local Ray with 1 and then 2 CPUs through pipeline.execute.executor.fan_out."""
    rows = in_netns_python(
        netns,
        env,
        (
            "import json\n"
            "from dataclasses import replace\n"
            "from studies.speed import QUICK, bench_ray\n"
            "print(json.dumps(bench_ray(replace(QUICK, ray_machines=(10,), ray_seeds=1))))\n"
        ),
        timeout=400,
    )
    assert [r["workers"] for r in rows] == [1, 2]
    for r in rows:
        assert r["runs"] == 10 and r["failed"] == 0 and r["runs_per_s"] > 0
        assert r["idle_per_task_ms"] >= 0, r  # never more run time than in-flight capacity
    assert rows[0]["makespan_s"] >= rows[0]["mean_run_s"] * 10  # one at a time
    assert rows[1]["makespan_s"] < rows[1]["mean_run_s"] * 10  # two at a time


@pytest.mark.slow
def test_pipeline_section_on_a_tiny_sweep(netns, env):
    """The scale-pipeline section end to end on 12 runs (and 8 per worker count): every stage timed, the record
    compacted to one runs and one jobs file, status measured in its own process."""
    r = in_netns_python(
        netns,
        env,
        (
            "import json\n"
            "from dataclasses import replace\n"
            "from studies.speed import QUICK, bench_pipeline\n"
            "print(json.dumps(bench_pipeline(replace(QUICK, pipeline_seeds=3, pipeline_ratio_seeds=2, "
            "pipeline_repeats=1))))\n"
        ),
        timeout=600,
    )
    from pipeline.sweep import STAGES

    assert r["runs"] == 12 and r["ratio_runs"] == 8 and r["before"] is None
    assert list(r["stages"]) == list(STAGES) and r["stages"]["ray_start"] > 0 and r["stages"]["mlflow"] > 0
    assert r["parquet_files"] == 2 and r["status_s"] > 0 and 50 < r["status_peak_mib"] < 1024
    assert r["runs_per_s_1"] > 0 and r["runs_per_s_2"] > 0
    assert "a 12-run sweep" in report({"machine": {}, "scale-pipeline": r, "load_average_end": (0, 0, 0)})
