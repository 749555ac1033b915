"""The offline optimum of DMLRS (paper Section III) and competitive ratios (paper Section V, Fig. 10).

``solve(instance)`` -> :class:`OptResult` (Pyomo MILP, validated); ``compare(instance)`` -> OPT and every
registered policy with OPT / ALG; ``enumerate_opt(instance)`` an independent brute force for tiny instances.
The names are imported on first use: Pyomo costs a second, and ``import offline_opt.bounds`` should not pay it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdors.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .compare import Comparison, PolicyRatio, compare
    from .milp import Strengthening
    from .solve import OptResult, solve

__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("Comparison", "PolicyRatio", "compare"), "compare"),
        "Strengthening": "milp",
        **dict.fromkeys(("OptResult", "solve"), "solve"),
    },
)
__all__ = ["Comparison", "OptResult", "PolicyRatio", "Strengthening", "compare", "solve"]
