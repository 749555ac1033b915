"""The ``pdors`` command: the application shell over the library (:mod:`pdors`), the offline optimum
(:mod:`offline_opt`) and the sweep pipeline (:mod:`pipeline`). Nothing below imports it."""
