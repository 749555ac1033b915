"""The MILP's strengthening switches (:mod:`.milp`'s docstring says what each adds), in a module of their own so
that a caller naming them (``compare``, the CLI) does not import Pyomo."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Strengthening:
    tight_bounds: bool = True
    perspective: bool = True
    disaggregate: bool = True
    symmetry: bool = True

    @classmethod
    def naive(cls) -> Strengthening:
        return cls(tight_bounds=False, perspective=False, disaggregate=False, symmetry=False)
