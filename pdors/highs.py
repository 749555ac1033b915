"""The one way the package makes a HiGHS instance: silent and single-threaded.

Single-threaded so that a solve does the same work, and returns the same answer, whatever the machine's cores
and load. HiGHS's thread scheduler is process-wide and fixed by the first solve: every instance in the process
must ask for the same thread count (offline_opt's solves ask for 1 too), or HiGHS refuses to run.
"""
from __future__ import annotations

import highspy


def new_highs() -> highspy.Highs:
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("threads", 1)
    return highs
