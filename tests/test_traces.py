"""The trace loader (pdors/traces.py) and trace-driven workloads: hand-written Google 2011 job_events and Philly
cluster_job_log files, the snippet scaling, the errors for invalid traces, and the shared Google sample."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from pdors.config import ConfigError, build
from pdors.model import CRITICAL, INSENSITIVE, SENSITIVE
from pdors.traces import NO_CLASS, TraceError, load, load_google, load_philly, snippet
from pdors.workload import WorkloadConfig, generate
from pipeline.spec import grid, schema

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces" / "google-2011" / "job_events"


def google_row(ts: int, job: int, event: int, cls: int) -> str:
    return f"{ts},,{job},{event},user,{cls},name,logical"


def write_google(path: Path, rows: list[str], compress: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(rows) + "\n"
    if compress:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


def write_philly(path: Path, jobs) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(jobs))
    return path


def philly_job(jobid: str, submitted: str) -> dict:
    return {
        "status": "Pass",
        "vc": "vc1",
        "jobid": jobid,
        "user": "u",
        "submitted_time": submitted,
        "attempts": [{"start_time": submitted, "end_time": None, "detail": [{"ip": "m1", "gpus": ["gpu0"]}]}],
    }


@pytest.fixture
def google_dir(tmp_path) -> Path:
    """Two parts read in name order: 6 jobs with SUBMIT events (classes 0-3), other events, a pre-window SUBMIT
    (timestamp 0) and a job submitted twice (the first SUBMIT counts)."""
    d = tmp_path / "job_events"
    write_google(
        d / "part-00001-of-00002.csv.gz",
        [
            google_row(0, 99, 0, 1),  # before the trace window: no time, dropped
            google_row(10_000_000, 1, 0, 0),
            google_row(10_000_100, 1, 1, 0),
            google_row(12_000_000, 2, 0, 3),
            google_row(16_000_000, 3, 0, 1),
        ],
    )
    write_google(
        d / "part-00002-of-00002.csv.gz",
        [
            google_row(20_000_000, 4, 0, 2),
            google_row(21_000_000, 2, 0, 3),  # job 2 again: ignored
            google_row(30_000_000, 5, 0, 0),
            google_row(30_000_000, 6, 0, 1),
            google_row(31_000_000, 6, 4, 1),
        ],
        compress=False,
    )
    return d


def test_google_submit_events_classes_and_order(google_dir):
    trace = load_google(google_dir)
    assert trace.format == "google" and len(trace) == 6
    np.testing.assert_allclose(trace.submit_s, [10, 12, 16, 20, 30, 30])
    assert trace.sensitivity.tolist() == [INSENSITIVE, CRITICAL, SENSITIVE, SENSITIVE, INSENSITIVE, SENSITIVE]
    assert trace.has_classes
    one = load_google(google_dir / "part-00001-of-00002.csv.gz")  # one file works too
    assert len(one) == 3


def test_snippet_scales_the_span_onto_the_horizon(google_dir):
    trace = load_google(google_dir)
    cut = snippet(trace, jobs=6, slots=10, start=0)
    # span 10 s .. 30 s onto 10 slots: (t - 10) / 20 * 10, floored; the last submission lands in slot T-1
    assert cut.arrival.tolist() == [0, 1, 3, 5, 9, 9]
    part = snippet(trace, jobs=3, slots=4, start=1)  # 12, 16, 20 s
    assert part.start == 1 and part.arrival.tolist() == [0, 2, 3]
    assert part.sensitivity.tolist() == [CRITICAL, SENSITIVE, SENSITIVE]
    assert snippet(trace, jobs=3, slots=4, start=5).start == 1  # 4 usable starts: 5 wraps to 1
    assert snippet(trace, jobs=2, slots=7, start=4).arrival.tolist() == [0, 0]  # zero span: all in slot 0
    with pytest.raises(TraceError, match="6 submissions, fewer than the 7 jobs"):
        snippet(trace, jobs=7, slots=10, start=0)


def test_philly_format(tmp_path):
    log = write_philly(
        tmp_path / "philly" / "cluster_job_log",
        [
            philly_job("a", "2017-10-03 10:00:00"),
            philly_job("b", "2017-10-03 09:00:00"),
            philly_job("c", "2017-10-03 11:30:00"),
        ],
    )
    trace = load_philly(log.parent)  # the directory holding cluster_job_log
    assert trace.format == "philly" and len(trace) == 3 and not trace.has_classes
    np.testing.assert_allclose(np.diff(trace.submit_s), [3600, 5400])
    assert (trace.sensitivity == NO_CLASS).all()
    assert snippet(trace, 3, 5, 0).arrival.tolist() == [0, 2, 4]


@pytest.mark.parametrize(
    "rows, message",
    [
        (["1,,2,0,u,0,n"], r"line 1: expected 8 columns .*got 7"),
        ([google_row(5, 1, 0, 0), "x,,2,0,u,0,n,l"], "line 2: timestamp_us must be an integer, got 'x'"),
        ([google_row(5, 1, 0, 7)], "line 1: scheduling_class must be 0-3, got 7"),
        ([google_row(5, 1, 1, 0), google_row(6, 1, 4, 0)], r"no SUBMIT event \(event_type 0\)"),
        ([google_row(0, 1, 0, 0)], r"no SUBMIT event .*\(1 outside the trace window\)"),
    ],
)
def test_invalid_google_traces_are_rejected_naming_file_and_line(tmp_path, rows, message):
    path = write_google(tmp_path / "part-00000.csv.gz", rows)
    with pytest.raises(TraceError, match=message) as err:
        load_google(path)
    assert str(path) in str(err.value)


def test_unreadable_google_inputs(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(TraceError, match=r"no job_events files \(\*.csv or \*.csv.gz\)"):
        load_google(tmp_path / "empty")
    bad = tmp_path / "bad.csv.gz"
    bad.write_bytes(b"\x1f\x8b" + b"not gzip at all")
    with pytest.raises(TraceError, match="unreadable"):
        load_google(bad)
    with pytest.raises(TraceError, match="no such file or directory"):
        load(tmp_path / "missing", "google")
    with pytest.raises(TraceError, match="format: must be one of google, philly"):
        load(bad, "borg")


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "invalid JSON"),
        ('{"jobid": "a"}', "non-empty JSON list of jobs, got dict"),
        ("[]", r"got list \(empty\)"),
        ('[{"jobid": "a"}]', "entry 0: each job needs a 'submitted_time'"),
        ('[{"jobid": "a", "submitted_time": "03/10/2017"}]', r"entry 0 \(jobid a\): submitted_time must look like"),
    ],
)
def test_invalid_philly_traces_are_rejected(tmp_path, content, message):
    path = tmp_path / "cluster_job_log"
    path.write_text(content)
    with pytest.raises(TraceError, match=message):
        load_philly(path)


def test_trace_workload_replaces_arrivals_and_optionally_classes(google_dir):
    base = {"arrivals": "trace", "trace": {"path": str(google_dir), "per_seed": False, "offset": 1}}
    mix_classes = build(WorkloadConfig, base)
    trace_classes = build(WorkloadConfig, {**base, "trace": {**base["trace"], "classes": True}})
    synthetic = generate(WorkloadConfig(), 4, 3, 4, seed=5)
    a = generate(mix_classes, 4, 3, 4, seed=5)
    b = generate(trace_classes, 4, 3, 4, seed=5)
    assert a.jobs.arrival.tolist() == b.jobs.arrival.tolist() == [0, 2, 3]  # submissions 1-3 (12, 16, 20 s)
    assert a.meta == {"seed": 5, "generator": "trace", "trace": str(google_dir), "trace_start": 1}
    assert sorted(b.jobs.sensitivity.tolist()) == sorted([CRITICAL, SENSITIVE, SENSITIVE])
    # the same draws as the synthetic instance of the seed: only arrivals (and so the job order) differ
    for name in ("epochs", "samples", "batch", "theta1"):
        assert sorted(getattr(a.jobs, name).tolist()) == sorted(getattr(synthetic.jobs, name).tolist())
    assert sorted(a.jobs.sensitivity.tolist()) == sorted(synthetic.jobs.sensitivity.tolist())
    per_seed = build(WorkloadConfig, {**base, "trace": {"path": str(google_dir)}})  # start = seed * I
    assert generate(per_seed, 4, 3, 4, seed=1).meta["trace_start"] == 3
    assert generate(per_seed, 4, 3, 4, seed=2).meta["trace_start"] == 2  # 6 wraps over 4 usable starts
    again = generate(per_seed, 4, 3, 4, seed=2)
    assert again.jobs.arrival.tolist() == generate(per_seed, 4, 3, 4, seed=2).jobs.arrival.tolist()


def test_sensitivity_override_is_checked():
    with pytest.raises(ValueError, match="sensitivity: need 3 classes"):
        generate(WorkloadConfig(), 2, 3, 4, seed=1, sensitivity=np.array([0, 1, 5]))


@pytest.mark.parametrize(
    "workload, message",
    [
        ({"arrivals": "trace"}, "workload.trace.path: required with arrivals: trace"),
        ({"arrivals": "trace", "trace": {"path": "/no/such/trace"}}, "workload.trace.path: /no/such/trace: no such"),
        ({"trace": {"format": "philly", "classes": True}}, "workload.trace.classes: the Philly format has no"),
        ({"trace": {"offset": -1}}, "workload.trace.offset: must be >= 0"),
    ],
)
def test_trace_config_errors_name_the_field(workload, message):
    with pytest.raises(ConfigError) as err:
        build(WorkloadConfig, workload, "workload")
    assert str(err.value).startswith(message)


def test_sweep_rejects_more_jobs_than_the_trace_has(tmp_path):
    bad_rows = write_google(tmp_path / "bad" / "part-0.csv.gz", ["1,,2,0,u,0,n"])
    config = {
        "policies": {"fifo": {}},
        "grid": {"jobs": [4, 7]},
        "instance": {"workload": {"arrivals": "trace", "trace": {"path": str(tmp_path / "ev")}}},
    }
    write_google(tmp_path / "ev" / "part-0.csv.gz", [google_row(k + 1, k, 0, 0) for k in range(6)])
    with pytest.raises(ConfigError, match=r"^grid\.jobs\[1\]: the trace .* has 6 submissions, fewer than 7 jobs"):
        grid.expand(schema.parse(config))
    config["instance"]["workload"]["trace"]["path"] = str(bad_rows.parent)
    with pytest.raises(ConfigError, match=r"^instance\.workload\.trace\.path: .*line 1: expected 8 columns"):
        grid.expand(schema.parse(config))


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared Google 2011 sample (../shared/traces) is absent")
def test_shared_google_sample():
    trace = load(SHARED, "google")
    assert len(trace) == 4908  # traces/README.md: 4,908 SUBMIT events over about 5.5 hours
    assert 5.5 * 3600 < trace.submit_s[-1] - trace.submit_s[0] < 5.7 * 3600
    counts = np.bincount(trace.sensitivity, minlength=3)
    assert counts.tolist() == [1855, 1609 + 1406, 38]  # classes 0 / 1-2 / 3
    cut = snippet(trace, jobs=100, slots=80, start=100)
    assert cut.arrival[0] == 0 and cut.arrival[-1] == 79 and (np.diff(cut.arrival) >= 0).all()


EXCERPT = Path(__file__).resolve().parents[1] / "traces" / "google-2011" / "job_events"


def test_the_shipped_excerpt_feeds_figs_12_and_13():
    """traces/README.md's rule: part-00001's SUBMIT rows only; enough submissions for every seed of Figs. 12-13
    (offset + seed * I + I <= 5 * 100 + 100), small, and the figure configs read it by a repository path."""
    files = list(EXCERPT.iterdir())
    assert sum(f.stat().st_size for f in files) < 300 * 1024
    with gzip.open(files[0], "rt") as f:
        assert {line.split(",")[3] for line in f} == {"0"}
    trace = load_google(EXCERPT)
    assert len(trace.submit_s) == 1053 >= 5 * 100 + 100
    for name in ("fig12", "fig13"):
        config = yaml.safe_load((EXCERPT.parents[2] / "configs" / f"{name}.yaml").read_text())
        assert config["instance"]["workload"]["trace"]["path"] == "traces/google-2011/job_events"


def test_a_missing_trace_says_where_to_get_the_public_one(tmp_path, capsys):
    from pdors_cli.main import main

    config = EXCERPT.parents[2] / "configs" / "fig12.yaml"
    args = ["sweep", "run", str(config), f"instance.workload.trace.path={tmp_path / 'none'}", "--dry-run"]
    assert main([*args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "https://github.com/google/cluster-data" in err[0], err
    assert not (tmp_path / "out").exists()
