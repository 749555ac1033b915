"""Same config and seed, same schedule on any machine (docs/MODEL.md, "Bit-identical decisions").

Every policy runs in subprocesses under BLAS kernels and numpy SIMD dispatches other than this machine's
defaults, which is how another CPU would run it: the schedules (their digest) and every count must be
identical, every real number equal to 1e-12 relative. Dorm runs once more with every core busy: its MILP is
bounded by work, not time, so load changes nothing.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pdors.policies import POLICIES
from pdors.run import run

pytestmark = pytest.mark.slow

PDORS = str(Path(sys.executable).parent / "pdors")
TIMING_KEYS = ("wall_s", "decision_latency_ms", "decision_cpu_ms")  # wall-clock measurements, not decisions
PAPER = dict(machines=100, jobs=100, slots=80, seed=1)
SMALL = (dict(machines=8, jobs=16, slots=10, seed=2), dict(machines=20, jobs=30, slots=12, seed=3))


def _baseline_only() -> str:
    """Every SIMD target numpy dispatches to on this CPU, disabled: numpy falls back to its baseline kernels."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return " ".join(f for f in __cpu_dispatch__ if __cpu_features__.get(f))


ENVIRONMENTS = {
    "default": {},
    "blas-prescott": {"OPENBLAS_CORETYPE": "Prescott"},
    "numpy-baseline": {"NPY_DISABLE_CPU_FEATURES": _baseline_only()},
}


def _simulate(env: dict, out: Path, policy: str, size: dict) -> dict:
    args = [PDORS, "simulate", "--policy", policy, "--json", str(out)]
    for name, value in size.items():
        args += [f"--{name}", str(value)]
    subprocess.run(args, env={**os.environ, **env}, check=True, capture_output=True, timeout=600)
    return json.loads(out.read_text())


def _differences(a, b, path=""):
    """Where two run summaries differ, timings aside: counts and strings exactly, reals to 1e-12 relative."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{path}: keys {sorted(a.keys() ^ b.keys())}"]
        return [
            d
            for k in a
            if k not in TIMING_KEYS and not k.startswith("solve_seconds")
            for d in _differences(a[k], b[k], f"{path}.{k}")
        ]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} vs {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=False)) for d in _differences(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        return [] if a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0) else [f"{path}: {a!r} vs {b!r}"]
    return [] if a == b and type(a) is type(b) else [f"{path}: {a!r} vs {b!r}"]


def _simulate_small(env: dict) -> list[dict]:
    """Every policy on the small instances, in one process (the console script's start-up would dominate)."""
    code = (
        "import json, sys; from pdors.run import run; "
        "print(json.dumps([run({'policy': p, **s}).summary.to_dict() for p, s in json.loads(sys.argv[1])]))"
    )
    cases = json.dumps([(policy, size) for policy in POLICIES for size in SMALL])
    done = subprocess.run(
        [sys.executable, "-c", code, cases],
        env={**os.environ, **env},
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return json.loads(done.stdout.splitlines()[-1])  # HiGHS prints a banner first


def test_every_policy_makes_the_same_decisions_under_other_blas_and_simd_kernels(tmp_path):
    """Before the fix, PD-ORS at paper scale earned 571.0 here, 509.4 with OPENBLAS_CORETYPE=Prescott and 569.0
    with numpy's AVX-512 kernels disabled; OASiS 355.3 and 351.7."""
    runs = {
        name: [_simulate(env, tmp_path / f"{name}-{policy}.json", policy, PAPER) for policy in POLICIES]
        + _simulate_small(env)
        for name, env in ENVIRONMENTS.items()
    }
    reference = runs.pop("default")
    assert len(reference) == 3 * len(POLICIES)
    assert all(r["violations"] == [] for r in reference)
    for name, results in runs.items():
        for expected, got in zip(reference, results, strict=False):
            case = (name, expected["policy"], expected["machines"], expected["seed"])
            assert got["schedule_digest"] == expected["schedule_digest"], case
            assert _differences(expected, got) == [], case


def test_dorm_decides_the_same_with_every_core_busy():
    spec = dict(policy="dorm", machines=100, jobs=100, slots=20, seed=4)
    idle = run(spec).summary.to_dict()
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * (os.cpu_count() or 1))]
    try:
        busy = run(spec).summary.to_dict()
    finally:
        for p in burners:
            p.kill()
            p.wait()
    assert idle["policy_stats"]["solves"] > 0
    assert busy["schedule_digest"] == idle["schedule_digest"]
    assert _differences(idle, busy) == []
