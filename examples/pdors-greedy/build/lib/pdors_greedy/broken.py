"""Broken policies, each with one fault a sweep must survive: its runs end failed (or with validator violations),
the reason in the record, and the sweep's other runs complete. Named as ``pdors_greedy.broken:<Class>``."""

from __future__ import annotations

import numpy as np

from pdors.api import SlotAllocation, SlotView

from .policy import Greedy


class OverCapacity(Greedy):
    """Every pending job gets its full batch of workers on machine 0: more than the machine holds."""

    def allocate(self, view: SlotView) -> SlotAllocation:
        out = super().allocate(view)
        jobs, pending = view.instance.jobs, np.flatnonzero(view.pending)
        out.workers[pending] = 0
        out.servers[pending] = 0
        out.workers[pending, 0] = jobs.batch[pending]
        out.servers[pending, 0] = -(-jobs.batch[pending] // jobs.gamma[pending])
        return out


class WrongShape(Greedy):
    """One machine short: arrays of jobs x (machines - 1)."""

    def allocate(self, view: SlotView) -> SlotAllocation:
        out = super().allocate(view)
        return SlotAllocation(out.workers[:, :-1].copy(), out.servers[:, :-1].copy())


class Raises(Greedy):
    """Fails in its second slot."""

    def allocate(self, view: SlotView) -> SlotAllocation:
        if view.t == 1:
            raise RuntimeError("example failure in slot 1")
        return super().allocate(view)


class Hangs(Greedy):
    """Never returns from its first decision: only the sweep's run_time_limit stops it."""

    def allocate(self, view: SlotView) -> SlotAllocation:
        while True:
            pass
