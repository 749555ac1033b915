"""The offline optimum of DMLRS (paper Section III) and competitive ratios (paper Section V, Fig. 10).

``solve(instance)`` -> :class:`OptResult` (Pyomo MILP, validated); ``compare(instance)`` -> OPT and every
registered policy with OPT / ALG; ``enumerate_opt(instance)`` an independent brute force for tiny instances.
"""

from .compare import Comparison, PolicyRatio, compare
from .solve import OptResult, solve
from .strengthening import Strengthening

__all__ = ["Comparison", "OptResult", "PolicyRatio", "Strengthening", "compare", "solve"]
