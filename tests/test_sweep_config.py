"""The sweep config without Ray: validation (one-line errors naming the field), grid expansion and ids."""

from __future__ import annotations

import json

import pytest
from sweep_fixtures import TINY, write_config

from pdors_cli.main import main
from pipeline.execute.executor import execute
from pipeline.record import storage
from pipeline.spec import grid, schema, sizing


def no_ray(*args, **kwargs):
    raise AssertionError("a bad config reached the executor")


# --- validation: (config change, field path the one-line error must start with) ------------------------------
BAD = [
    ({"bogus": 1}, "bogus: unknown key"),
    ({"seeds": "1,2"}, "seeds: must be a list"),
    ({"seeds": [1, 1]}, "seeds[1]: duplicate seed 1"),
    ({"policies": {"nosuch": {}}}, "policies.nosuch: unknown policy"),
    ({"policies": {"pdors": {"rounding": {"delta": 2}}}}, "policies.pdors.rounding.delta: must lie in (0, 1]"),
    ({"instance": {"seed": 3}}, "instance.seed: unknown key"),
    ({"instance": {"jobs": 0}}, "instance.jobs: must be >= 1"),
    ({"grid": {"workload.nosuch": [1]}}, "grid.workload.nosuch: unknown parameter 'nosuch'"),
    ({"grid": {"machines": []}}, "grid.machines: list at least one value"),
    ({"grid": {"machines": [4, "x"]}}, "grid.machines[1]: must be an integer"),
    ({"grid": {"machines": [4, 0]}}, "grid.machines[1]: must be >= 1"),
    ({"grid": {"workload.mix": [[0.5, 0.5, 0.5]]}}, "grid.workload.mix[0]: three non-negative shares"),
    ({"grid": {"pdors.rounding.gain": [-1]}}, "grid.pdors.rounding.gain[0]: must be > 0"),
    ({"grid": {"seed": [1, 2]}}, "grid.seed: seeds are set by the top-level 'seeds'"),
    ({"grid": {"oasis.x": [1]}}, "grid.oasis.x: unknown axis"),
    ({"opt": {"time_limit": -5}}, "opt.time_limit: must lie in (0, 1,000,000]"),
    ({"opt": {"mip_gap": 2}}, "opt.mip_gap: must lie in [0, 1)"),
    ({"mlflow": {"experiment": " "}}, "mlflow.experiment: must not be empty"),
    ({"name": "a/b"}, "name: at most 100 letters, digits"),
    ({"grid": {"machines": "range(4, 4)"}}, "grid.machines: range(4, 4) is empty"),
    ({"grid": {"machines": "4..8"}}, "grid.machines: must be a list of values or range("),
    ({"grid": {"jobs,slots": [[4, 4], [5]]}}, "grid.jobs,slots[1]: must list 2 values"),
    ({"grid": {"jobs,slots": [[4, 4], [5, 0]]}}, "grid.jobs,slots[1][1]: must be >= 1"),
    ({"grid": {"jobs,pdors.rounding.gain": [[4, 1.0]]}}, "grid.jobs,pdors.rounding.gain: paired axes must"),
    (
        {
            "policies": {"pdors": {"rounding": {"feasible_solutions": 10, "max_attempts": 20}}},
            "grid": {"pdors.rounding.max_attempts": [5]},
        },
        "grid.pdors.rounding.max_attempts[0]: must be >= feasible",
    ),
]


@pytest.mark.parametrize("change, expected", BAD, ids=[e.split(":")[0] for _, e in BAD])
def test_bad_config_is_one_line_naming_the_field_and_writes_nothing(tmp_path, capsys, monkeypatch, change, expected):
    monkeypatch.setattr("pipeline.execute.executor.fan_out", no_ray)
    cfg = write_config(tmp_path / "bad.yaml", {**TINY, **change})
    out = tmp_path / "out"
    assert main(["sweep", "run", str(cfg), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"pdors sweep: error: {expected}") and "\n" not in err, err
    assert not out.exists()


# (overrides, the one-line error they must give)
BAD_OVERRIDES = [
    (["seeds.count=0"], "seeds.count: must be >= 1, got 0 (from the command-line override 'seeds.count=0')"),
    (["seeds.cout=2"], "seeds.cout: unknown key; did you mean seeds.count? (known: count, start) (from the command"),
    (["seedz.count=3"], "seedz: unknown key; did you mean seeds?"),
    (["instance.jobs=many"], "instance.jobs: must be an integer"),
    (["policies.pdors.rounding.gian=1"], "policies.pdors.rounding.gian: unknown key; did you mean policies.pdors"),
    (["policies.pdors.rounding.gain=-1"], "policies.pdors.rounding.gain: must be > 0"),
    (["grid.machine=[4]"], "grid.machine: unknown axis; did you mean grid.machines?"),
    (["grid.machines=[4,0]"], "grid.machines[1]: must be >= 1"),
    (["seeds.count"], "OVERRIDE: 'seeds.count': expected KEY=VALUE"),
]


@pytest.mark.parametrize("overrides, expected", BAD_OVERRIDES, ids=[e.split(":")[0] for _, e in BAD_OVERRIDES])
def test_bad_override_is_one_line_naming_the_field(tmp_path, capsys, monkeypatch, overrides, expected):
    monkeypatch.setattr("pipeline.execute.executor.fan_out", no_ray)
    cfg = write_config(tmp_path / "ok.yaml", TINY)
    assert main(["sweep", "run", str(cfg), *overrides, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"pdors sweep: error: {expected}") and "\n" not in err, err
    given = overrides[0] if "=" in overrides[0] else None
    assert given is None or err.endswith(f"(from the command-line override '{given}')"), err
    assert not (tmp_path / "out").exists()


def test_a_typo_in_the_file_suggests_the_near_key_and_blames_no_override(tmp_path, capsys):
    cfg = write_config(tmp_path / "typo.yaml", {**TINY, "seeds": {"cout": 2}})
    assert main(["sweep", "run", str(cfg), "instance.jobs=3", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "pdors sweep: error: seeds.cout: unknown key; did you mean seeds.count? (known: count, start)", err


def test_overrides_ranges_and_paired_axes(tmp_path):
    cfg = write_config(tmp_path / "ok.yaml", TINY)
    data = schema.raw(
        cfg,
        [
            "seeds.count=3",
            "grid.machines=range(4,10,2)",
            "instance.jobs=3",
            "policies.pdors.rounding.gain=0.8",
            "grid.pdors.rounding.gain=[0.8]",
        ],
    )
    config = schema.parse(data)
    assert config.seed_list() == [1, 2, 3] and config.grid["machines"] == [4, 6, 8]
    assert config.instance["jobs"] == 3 and config.policies["pdors"]["rounding"]["gain"] == 0.8
    assert schema.parse({**TINY, "grid": {"pdors.rounding.gain": "range(0.5, 1.01, 0.25)"}}).grid[
        "pdors.rounding.gain"
    ] == [0.5, 0.75, 1.0]
    paired = grid.expand(schema.parse({**TINY, "grid": {"jobs,slots": [[3, 4], [5, 6]]}, "seeds": [1]}))
    sizes = {(t.spec["jobs"], t.spec["slots"]) for t in paired.tasks}
    assert sizes == {(3, 4), (5, 6)} and paired.axes == ["jobs", "slots"] and len(paired.tasks) == 4
    assert paired.tasks[0].axes == {"jobs": 3, "slots": 4}


def test_dry_run_writes_nothing_and_errors_before_writing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("pipeline.execute.executor.fan_out", no_ray)
    cfg = write_config(tmp_path / "ok.yaml", {**TINY, "seeds": [1]})
    out = tmp_path / "out"
    assert main(["sweep", "run", str(cfg), "--out", str(out), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "0 already recorded, 6 to run" in text and "a probe run of" in text and not out.exists()
    (tmp_path / "file").write_text("x")
    for args in (
        ["--out", str(tmp_path / "file")],
        ["--out", str(tmp_path / "file" / "sub")],
        ["--out", str(out), "--ray-address", "127.0.0.1:9"],
        ["grid.machines=[30]", "instance.jobs=50", "instance.slots=10000000", "--out", str(out)],
        ["grid.machines=[30]", "instance.jobs=100000", "instance.slots=2000", "--out", str(out)],
    ):
        assert main(["sweep", "run", str(cfg), *args]) == 2, args
        said = capsys.readouterr()
        err = said.err.strip()
        assert err.startswith("pdors sweep") and "\n" not in err and not said.out, (err, said.out)
    assert not out.exists()
    assert (
        err.startswith(
            f"pdors sweep: error: too large: H=30 I=100000 T=2000 needs about "
            f"{sizing.run_bytes(30, 100000, 2000) / 2**30:.2f} GB per run, over the limit of "
        )
        and "GB available over" in err
    ), err


def test_unreadable_config_files(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("pipeline.execute.executor.fan_out", no_ray)
    (tmp_path / "broken.yaml").write_text("grid: [\n")
    for path in (tmp_path / "missing.yaml", tmp_path / "broken.yaml"):
        assert main(["sweep", "run", str(path), "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("pdors sweep: error: CONFIG: ") and "\n" not in err
    assert not (tmp_path / "out").exists()


def test_num_cpus_is_for_a_local_ray_only(tmp_path, capsys, monkeypatch):
    seen = []
    monkeypatch.setattr("pipeline.execute.executor.fan_out", lambda *a, **k: seen.append(a) or iter(()))
    cfg = write_config(tmp_path / "ok.yaml", TINY)
    assert (
        main(
            [
                "sweep",
                "run",
                str(cfg),
                "--out",
                str(tmp_path / "out"),
                "--ray-address",
                "127.0.0.1:1",
                "--num-cpus",
                "1",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.startswith("pdors sweep: error: --num-cpus: applies to a local Ray only") and not seen
    assert not (tmp_path / "out").exists()


# --- expansion and ids -------------------------------------------------------------------------------------------
def test_expansion_counts_and_policy_axes():
    plan = grid.expand(schema.parse(dict(TINY)))
    sims = [t for t in plan.tasks if t.kind == "sim"]
    # machines (2) x [pdors x gain (2) + fifo] x seeds (2)
    assert len(sims) == 2 * 3 * 2 and len({t.run_id for t in sims}) == 12
    assert len({t.point_id for t in sims}) == 6 and len({t.instance_id for t in sims}) == 4
    fifo = [t for t in sims if t.policy == "fifo"]
    assert all("pdors.rounding.gain" not in t.axes and "rounding" not in t.spec["params"] for t in fifo)
    gains = sorted({t.spec["params"]["rounding"]["gain"] for t in sims if t.policy == "pdors"})
    assert gains == [0.5, 1.0]
    # specs are fully resolved: defaults filled in, so ``run(spec)`` needs nothing else
    assert sims[0].spec["params"]["workload_levels"] == 100 and "mix" in sims[0].spec["workload"]
    assert plan.sweep_id.startswith("tiny-") and plan.axes == ["machines", "pdors.rounding.gain"]


def test_ids_are_stable_and_follow_the_resolved_spec():
    a = grid.expand(schema.parse(dict(TINY)))
    shuffled = {k: TINY[k] for k in reversed(list(TINY))}
    b = grid.expand(schema.parse(shuffled))
    assert a.sweep_id == b.sweep_id and {t.run_id for t in a.tasks} == {t.run_id for t in b.tasks}
    # an explicit default is the same run; a changed value is another
    explicit = grid.expand(
        schema.parse({**TINY, "instance": {"jobs": 4, "slots": 4, "workload": {"bandwidth_ratio": 40.0}}})
    )
    assert {t.run_id for t in explicit.tasks} == {t.run_id for t in a.tasks}
    other = grid.expand(schema.parse({**TINY, "seeds": {"start": 2, "count": 2}}))
    assert len({t.run_id for t in other.tasks} & {t.run_id for t in a.tasks}) == len(a.tasks) // 2
    assert other.sweep_id != a.sweep_id


def test_opt_block_adds_one_opt_task_per_instance():
    plan = grid.expand(schema.parse({**TINY, "opt": {"solver": "highs", "time_limit": 5}}))
    opts = [t for t in plan.tasks if t.kind == "opt"]
    assert len(opts) == 4 and {t.instance_id for t in opts} == {t.instance_id for t in plan.tasks}


def test_opt_task_through_the_adapter():
    plan = grid.expand(
        schema.parse(
            {
                **TINY,
                "instance": {"jobs": 3, "slots": 3},
                "grid": {},
                "seeds": [1],
                "policies": {"pdors": {}},
                "opt": {"time_limit": 30},
            }
        )
    )
    task = next(t for t in plan.tasks if t.kind == "opt")
    outcome = execute(task)
    assert outcome.status == "ok", outcome.error
    row = storage.run_row(task, outcome, "x")
    assert row["policy"] == "opt" and json.loads(json.dumps(row["opt.result"])) == outcome.result


def test_overrides_are_taken_after_options_too(tmp_path, capsys):
    """``sweep run CONFIG --dry-run seeds.count=3``: the overrides after an option count as those before it;
    an unknown option is still refused."""
    cfg = write_config(tmp_path / "ok.yaml", {**TINY, "grid": {"machines": [4]}, "seeds": [1]})
    out = str(tmp_path / "out")
    assert main(["sweep", "run", str(cfg), "grid.machines=[4,5]", "--dry-run", "--out", out, "seeds=[1,2,3]"]) == 0
    assert "12 tasks" in capsys.readouterr().out and not (tmp_path / "out").exists()
    with pytest.raises(SystemExit):
        main(["sweep", "run", str(cfg), "--dry-run", "--bogus", "seeds=[1]"])
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_chunks_hold_about_half_a_second_of_runs_and_share_the_tail():
    from pipeline.execute.executor import CHUNK_SECONDS, MAX_CHUNK, chunk_size

    assert chunk_size(None, 10_000, 4) == 1  # nothing timed yet
    assert chunk_size(0.01, 10_000, 4) == round(CHUNK_SECONDS / 0.01)
    assert chunk_size(1e-5, 10**6, 4) == MAX_CHUNK
    assert chunk_size(0.01, 40, 4) == 10 and chunk_size(0.01, 3, 4) == 1  # the runs left, shared
    assert chunk_size(2.0, 10_000, 4) == 1  # slow runs: one per task
