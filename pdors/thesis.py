"""The thesis's variant of the model (``workload: {profile: thesis}``; docs/MODEL.md, "The thesis profile").

The thesis (M. Yu, "Toward efficient online scheduling for large-scale distributed machine learning system",
MS thesis, Iowa State University, 2019) models Async-SGD: each worker trains mini-batches one after another, a
mini-batch taking
tau_i + 2 g_i / b seconds with b = b_i^(i) iff all of the job's workers and PSs share one machine (Fact 1),
else b_i^(e) (eq. 3.1); its PSs must carry the workers' traffic, sum_h w_ih b <= B_i sum_p s_ip (eq. 3.4),
and there are no more PSs than workers (eq. 3.5). Section 4.1 gives the distributions drawn here.

A thesis job is expressed in the paper's arrays of :class:`pdors.model.Jobs` without changing their
meaning: a "sample" is one mini-batch (K_i chunks of M_i mini-batches per epoch), the global batch F_i and
the ratio gamma_i are both K_i, so that the paper's per-sample time tau + 2 g gamma / (b F) is the thesis's
tau + 2 g / b, F_i caps the workers at K_i (eq. 3.2), and ceil(w / gamma) = 1 PS is implied by (3.4). The
PS bandwidth B_i is :attr:`pdors.model.Instance.ps_bandwidth`; where it is set, (3.4) and (3.5) hold.
"""

from __future__ import annotations

from typing import cast

import numpy as np
from numpy.typing import ArrayLike

from .model import RESOURCES, Instance

SLOT_SECONDS = 60.0  # [choice] one slot is one minute (docs/MODEL.md)
MBPS_TO_MB_PER_SLOT = SLOT_SECONDS / 8.0

# Section 4.1, drawn uniformly: E_i, M_i, K_i (integers), g_i (MB), tau_i (s per mini-batch),
# b_i (Mbps, read as b_i^(e)), B_i (Gbps).
EPOCHS = (50, 150)
MINIBATCHES_PER_CHUNK = (20, 40)
CHUNKS = (5, 20)
GRAD_MB = (50.0, 100.0)
TAU_SECONDS = (0.01, 0.05)
BW_EXTERNAL_MBPS = (100.0, 4000.0)
PS_BANDWIDTH_GBPS = (4.0, 20.0)
# Per resource of RESOURCES (gpu, cpu, mem, storage), workers and PSs alike: 0-4 GPU, 2-30 GB memory, 4-8 GB
# storage; the thesis has no CPU resource (demand 0).
DEMAND = np.array([(0, 4), (0, 0), (2, 30), (4, 8)], dtype=np.int64)


def minibatch_seconds(tau_s: ArrayLike, grad_mb: ArrayLike, bw_mbps: ArrayLike) -> np.ndarray:
    """Seconds one worker spends on one mini-batch: tau_i + 2 g_i / b (eq. 3.1), b in Mbps."""
    out: np.ndarray = np.asarray(tau_s) + 2.0 * np.asarray(grad_mb) / (np.asarray(bw_mbps) / 8.0)
    return out


def minibatches_per_slot(workers: ArrayLike, tau_s: ArrayLike, grad_mb: ArrayLike, bw_mbps: ArrayLike) -> np.ndarray:
    """Mini-batches ``workers`` Async-SGD workers train in one slot: w / (tau + 2 g / b) (eq. 3.1)."""
    out: np.ndarray = np.asarray(workers) * SLOT_SECONDS / minibatch_seconds(tau_s, grad_mb, bw_mbps)
    return out


def job_arrays(
    epochs: ArrayLike,
    minibatches: ArrayLike,
    chunks: ArrayLike,
    grad_mb: ArrayLike,
    tau_s: ArrayLike,
    bw_external_mbps: ArrayLike,
    bandwidth_ratio: float,
) -> dict[str, ArrayLike]:
    """Thesis jobs (E_i, M_i, K_i, g_i MB, tau_i s, b_i^(e) Mbps) as :class:`~pdors.model.Jobs` arrays other
    than arrival, demands, utility and class: a sample is a mini-batch, F_i = gamma_i = K_i (module doc),
    rates in MB per slot, b^(i) = ``bandwidth_ratio`` x b^(e)."""
    bw_ext = np.asarray(bw_external_mbps, dtype=np.float64) * MBPS_TO_MB_PER_SLOT
    return dict(
        epochs=epochs,
        samples=np.asarray(chunks) * np.asarray(minibatches),
        grad_mb=grad_mb,
        tau=np.asarray(tau_s) / SLOT_SECONDS,
        gamma=chunks,
        batch=chunks,
        bw_internal=bw_ext * bandwidth_ratio,
        bw_external=bw_ext,
    )


def draw_jobs(rng: np.random.Generator, jobs: int, bandwidth_ratio: float) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Section 4.1's job parameters as :class:`~pdors.model.Jobs` arrays (all but arrival, utility and
    class), and B_i in MB per slot."""

    def ints(bounds: tuple[int, int]) -> np.ndarray:
        return rng.integers(bounds[0], bounds[1] + 1, size=jobs)

    def reals(bounds: tuple[float, float]) -> np.ndarray:
        return rng.uniform(bounds[0], bounds[1], size=jobs)

    epochs, minibatches, chunks = ints(EPOCHS), ints(MINIBATCHES_PER_CHUNK), ints(CHUNKS)
    grad, tau_s, bw_ext = reals(GRAD_MB), reals(TAU_SECONDS), reals(BW_EXTERNAL_MBPS)
    ps_bandwidth = gbps_to_mb_per_slot(reals(PS_BANDWIDTH_GBPS))
    worker = rng.integers(DEMAND[:, 0], DEMAND[:, 1] + 1, size=(jobs, len(RESOURCES)))
    ps = rng.integers(DEMAND[:, 0], DEMAND[:, 1] + 1, size=(jobs, len(RESOURCES)))
    # every input is an array here, so every value is one (job_arrays passes some through as given)
    arrays = cast(dict[str, np.ndarray], job_arrays(epochs, minibatches, chunks, grad, tau_s, bw_ext, bandwidth_ratio))
    return {**arrays, "worker_demand": worker, "ps_demand": ps}, ps_bandwidth


def gbps_to_mb_per_slot(gbps: ArrayLike) -> np.ndarray:
    out: np.ndarray = np.asarray(gbps, dtype=np.float64) * 1000.0 * MBPS_TO_MB_PER_SLOT
    return out


def capacity(capacity_factor: float) -> np.ndarray:
    """C^r = ``capacity_factor`` x the midpoint of the thesis's worker demand (it gives no capacities)."""
    out: np.ndarray = capacity_factor * DEMAND.mean(axis=1)
    return out


def ps_ratio(instance: Instance, internal: bool) -> np.ndarray:
    """Workers one PS may serve, per job: gamma_i (eq. 2); with the thesis's (3.4) also B_i / b, the
    workers whose traffic at rate b (b^(i) if ``internal``, else b^(e)) one PS carries."""
    jobs = instance.jobs
    if instance.ps_bandwidth is None:
        return jobs.gamma.astype(np.float64)
    bw = jobs.bw_internal if internal else jobs.bw_external
    out: np.ndarray = np.minimum(jobs.gamma, instance.ps_bandwidth / bw)
    return out
