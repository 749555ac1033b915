"""The library's version and the version of its results.

``MODEL_VERSION`` is part of every run id (:mod:`pipeline.spec.grid`): bump it with any change in ``pdors/`` that may
change a recorded result (a policy's decisions, the simulator, the validator, the run summary), or sweeps reuse
runs recorded by older code. ``tests/test_result_digests.py`` enforces it: it pins the schedule digests of a
fixed set of runs (``tests/data/result_digests.json``, written by ``.venv/bin/python tests/result_digests.py``)
and fails when one changes under an unchanged ``MODEL_VERSION``.
"""

__version__ = "0.1.0"  # the package's (pyproject.toml)
MODEL_VERSION = 5  # 5: PD-ORS LP statistics (fewer LPs solved, rounded), same decisions; 4: digest of non-zero cells
CODE_VERSION = f"{__version__}+model.{MODEL_VERSION}"  # recorded with every run and the nightly report
