"""A package's public names imported on first use (PEP 562): importing one light module of the package (its
config, its model) must not pay for the heavy ones (HiGHS, Pyomo, pyarrow) that its top-level API re-exports."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_exports(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving ``name`` from ``package``'s submodule ``where[name]``."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f"{package}.{where[name]}"), name)

    return __getattr__
