"""The one display name of each policy (tables, figures, MLflow): ``PD-ORS``, never ``pdors``."""

from __future__ import annotations

import math
import re

POLICY_NAMES = {
    "pdors": "PD-ORS",
    "fifo": "FIFO",
    "drf": "DRF",
    "dorm": "Dorm",
    "oasis": "OASiS",
    "pollux": "Pollux",
    "preemptive": "Preemptive",
}


def policy_name(policy: str) -> str:
    return POLICY_NAMES.get(policy, policy)


def own_axes(policy: str, axes: list[str]) -> list[str]:
    """The grid axes that are ``policy``'s own parameters (``<policy>.<param>``): its variants."""
    return [a for a in axes if a.startswith(f"{policy}.")]


def variant_name(policy: str, values: list[str]) -> str:
    """A policy with the values of its own axes: ``PD-ORS (reject)``."""
    shown = [v for v in values if v != "-"]
    return policy_name(policy) + (f" ({', '.join(shown)})" if shown else "")


# A panel's setting in words (figure titles): axis -> (prefix, {value: words}); other values read "prefix value".
AXIS_WORDS = {
    "pdors.on_rounding_failure": (
        "PD-ORS",
        {"found_solutions": "PD-ORS plans around failed roundings", "reject": "PD-ORS rejects on a failed rounding"},
    ),
    "machines": ("H =", {}),
    "jobs": ("I =", {}),
    "slots": ("T =", {}),
    "workload.profile": ("profile", {}),
    "workload.bandwidth_ratio": ("bandwidth ratio", {}),
    "pdors.rounding.gain": ("G_delta =", {}),
    "workload.thesis_ps_rule": (
        "thesis PS rule",
        {"eq3_5": "thesis eq. (3.5): s <= w", "as_printed": "thesis Algorithm 4 as printed (no s <= w)"},
    ),
}
SETTING_RE = re.compile(r", (?=[A-Za-z_][\w.]*=)")  # splits "a=1, b=[1, 2]" between settings, not inside values


def mix_words(value: str) -> str:
    """A mix of job classes as the paper writes it: ``[0.1, 0.55, 0.35]`` -> ``mix (10, 55, 35)%``."""
    shares = re.findall(r"[-+\d.eE]+", value) if value.startswith("[") else []
    try:
        return "mix (" + ", ".join(f"{float(s) * 100:g}" for s in shares) + ")%" if shares else f"mix {value}"
    except ValueError:  # not a list of numbers: as given
        return f"mix {value}"


def sweep_title(name: str) -> str:
    """A reproduction sweep's figures as the paper names them: ``fig14_15`` -> ``Figs. 14-15``, ``thesis3_11`` ->
    ``Thesis Fig. 3.11``; any other name unchanged."""
    paper = re.fullmatch(r"fig(\d+)(?:_(\d+))?", name)
    if paper:
        first, last = paper.groups()
        return f"Figs. {int(first)}-{int(last)}" if last else f"Fig. {int(first)}"
    thesis = re.fullmatch(r"thesis(\d+)_(\d+)(?:_(\d+))?", name)
    if thesis:
        chapter, first, last = thesis.groups()
        return f"Thesis Figs. {chapter}.{first}-{chapter}.{last}" if last else f"Thesis Fig. {chapter}.{first}"
    return name


def setting_words(axis: str, value: str) -> str:
    """One grid setting in words: ``workload.workload_scale=1.0`` -> ``literal regime (K scale 1)``."""
    if axis == "workload.mix":
        return mix_words(value)
    if axis == "workload.workload_scale":
        scale = float(value) if value.replace(".", "", 1).isdigit() else math.nan
        return f"literal regime (K x {value})" if scale == 1 else f"calibrated regime (K x {value})"
    prefix, words = AXIS_WORDS.get(axis, (axis.rsplit(".", 1)[-1].replace("_", " "), {}))
    return words.get(value, f"{prefix} {value}")


def panel_words(panel: str) -> str:
    """A figure panel's label (``axis=value, ...``, :func:`pipeline.results.summary.figure_table`) in words."""
    if not panel:
        return ""
    words = []
    for part in SETTING_RE.split(panel):
        axis, _, value = part.partition("=")
        words.append(setting_words(axis, value))
    return ", ".join(words)


def layout(panels: list[str]) -> tuple[int, int]:
    """Rows and columns for ``panels`` with no empty cell where possible: a column per value of the last
    setting (the fastest-varying: a row then compares them), else the largest divisor up to 4."""
    n = len(panels)
    last = {SETTING_RE.split(p)[-1] for p in panels}
    if n % len(last) == 0 and 1 < len(last) <= 4:
        return n // len(last), len(last)
    if n <= 4:
        return 1, max(n, 1)
    cols = next((c for c in (4, 3, 2) if n % c == 0), 4)
    return math.ceil(n / cols), cols
