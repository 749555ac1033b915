"""Instance files (``pdors simulate|opt --instance``) are checked like configs: every bad field is one line naming
the file and the field, exit status 2, before anything is built or run."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from pdors import instance_io
from pdors.workload import WorkloadConfig, generate
from pdors_cli.main import main


@pytest.fixture(scope="module")
def valid() -> dict:
    return instance_io.to_dict(generate(WorkloadConfig(), 3, 4, 5, seed=1))


def mutated(valid: dict, path: tuple, value: Any) -> dict:
    data = copy.deepcopy(valid)
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


BAD = [
    (("jobs",), 5, "jobs: must be a mapping"),
    (("slots",), None, "slots: must be an integer, got None"),
    (("meta",), 5, "meta: must be a mapping"),
    (("slots",), 1e9, "slots: must be an integer, got 1000000000.0"),
    (("slots",), "abc", "slots: must be an integer, got 'abc'"),
    (("slots",), 0, "slots: must be >= 1"),
    (("slots",), 10**30, "slots: must be at most"),
    (("slots",), 10_000_000, "slots: T=10000000 x I=4 x H=3 = 120,000,000 schedule cells, over the limit"),
    (("capacity", 1, 2), -1, "capacity: must be finite and >= 0"),
    (("capacity", 1), [1, 2], "capacity[1]: must hold 4 entries, got 2"),
    (("capacity",), [], "capacity: must list at least one machine"),
    (("jobs", "arrival", 2), 99, "jobs.arrival: must lie in [0, 4] (job 2)"),
    (("jobs", "arrival", 2), 1.5, "jobs.arrival[2]: must be an integer, got 1.5"),
    (("jobs", "tau", 0), "x" * 10**6, "jobs.tau[0]: must be a number, got 'xxxx"),
    (("jobs", "epochs"), [1, 2], "jobs.epochs: must hold 4 entries, got 2"),
    (("jobs", "worker_demand", 0), [1, 2, 3], "jobs.worker_demand[0]: must hold 4 entries, got 3"),
    (("resources",), ["gpu", "gpu", "mem", "cpu"], "resources: must list distinct resource names"),
    (("ps_bandwidth",), [1.0], "ps_bandwidth: must hold 4 entries, got 1"),
    (("format",), "other", "format: not a pdors-instance/1 document"),
    (("extra",), 1, "'extra': unknown key"),
    (("jobs", "batch", 0), 2**53, "jobs.batch[0]: 9007199254740992 is outside [0, 100,000]: samples per worker"),
    (("jobs", "epochs", 1), 2**53, "jobs.epochs[1]: 9007199254740992 is outside [0, 1,000,000]: epochs per job"),
    (("jobs", "samples", 2), 2**53, "jobs.samples[2]: 9007199254740992 is outside [0, 1,000,000,000]: samples"),
]


@pytest.mark.parametrize("command", ["simulate", "opt"])
@pytest.mark.parametrize(
    "path, value, expected", BAD, ids=[e.split(":")[0] + str(k) for k, (_, _, e) in enumerate(BAD)]
)
def test_bad_instance_is_one_line_naming_the_field(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    valid: dict,
    command: str,
    path: tuple,
    value: Any,
    expected: str,
) -> None:
    file = tmp_path / "bad.json"
    file.write_text(json.dumps(mutated(valid, path, value)))
    assert main([command, "--instance", str(file)]) == 2
    said = capsys.readouterr()
    err = said.err.strip()
    assert err.startswith(f"pdors {command}: error: {file}: {expected}"), err
    assert "\n" not in err and len(err) < 400 and not said.out


@pytest.mark.parametrize("command", ["simulate", "opt"])
def test_unreadable_instance_files_name_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], valid: dict, command: str
) -> None:
    cases = {
        "latin1.json": json.dumps(valid).replace('"gpu"', '"g\u00e9u"').encode("latin-1"),
        "truncated.json": json.dumps(valid).encode()[:100],
        "deep.json": b"[" * 100_000 + b"]" * 100_000,
        "nan.json": json.dumps(mutated(valid, ("jobs", "tau", 1), float("nan"))).encode(),
    }
    for name, blob in cases.items():
        (tmp_path / name).write_bytes(blob)
        assert main([command, "--instance", str(tmp_path / name)]) == 2, name
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"pdors {command}: error: {tmp_path / name}: ") and "\n" not in err, err
    assert main([command, "--instance", str(tmp_path / "latin1.json")]) == 2
    assert "file: not UTF-8 text (byte " in capsys.readouterr().err


def test_the_memory_check_takes_the_files_sizes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], valid: dict
) -> None:
    file = tmp_path / "long.json"
    file.write_text(json.dumps(mutated(valid, ("slots",), 3_000_000)))
    # 36 M cells need about 0.5 GB, which the default limit (half the machine's free memory) may allow: a limit
    # below that shows the check is made on the file's sizes (the command line's defaults need far less)
    assert main(["simulate", "--instance", str(file), "--max-run-memory", "0.2"]) == 2
    assert capsys.readouterr().err.startswith("pdors simulate: error: too large: H=3 I=4 T=3000000 needs about")
    assert main(["opt", "--instance", str(file)]) == 2
    assert "36,000,000 cells, over the 1,000,000 the offline optimum is tried on" in capsys.readouterr().err


def test_a_valid_file_still_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str], valid: dict) -> None:
    file = tmp_path / "ok.json"
    file.write_text(json.dumps(valid))
    assert instance_io.to_dict(instance_io.load(file)) == valid
    assert main(["simulate", "--instance", str(file), "--policy", "fifo"]) == 0
    assert "H=3 I=4 T=5" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["simulate", "opt"])
def test_duplicate_keys_devices_and_pipes_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], valid: dict, command: str
) -> None:
    """A repeated JSON key (which value was meant?), a device and a FIFO: one line each, nothing read past the
    limit, nothing blocked."""
    text = json.dumps(valid)
    (tmp_path / "dup.json").write_text(text.replace('"slots": 5', '"slots": 5, "slots": 500'))
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    expected = {
        str(tmp_path / "dup.json"): "'slots': given twice in one JSON object",
        "/dev/zero": "file: not a regular file (devices, pipes and sockets are refused)",
        "/dev/urandom": "file: not a regular file",
        str(fifo): "file: not a regular file",
    }
    for path, why in expected.items():
        assert main([command, "--instance", path]) == 2, path
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"pdors {command}: error: {path}: {why}") and "\n" not in err, err
