"""The headline table: what a sweep (or ``pdors compare``) found, one row per policy, readable in a terminal.

Per policy (per reading where a policy has parameter axes of its own, e.g. PD-ORS's ``on_rounding_failure``;
per value of the ``by`` axes where asked): the mean total utility with its 95 % Student-t interval, the
geometric-mean ratio to the reference policy on the same instances with its interval and the reference's
wins/ties/losses (:mod:`pipeline.results.paired`), the mean share of jobs completed, and, where OPT rows hold a bound,
the certified interval on the mean OPT / ALG: [mean of best-known / ALG, mean of upper-bound / ALG] (each
run's pair brackets its ratio, so their means bracket the mean ratio). Where the reference has several
readings, the table has one block per reading and every other policy is paired with that reading
(:func:`pipeline.results.summary.pairs`).

:func:`table` returns a DataFrame (one typed column per number; a notebook reads it); :func:`text` and
:func:`markdown` render it, every number rounded to what its interval supports (:func:`rounded`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from pipeline.results import paired
from pipeline.text.names import own_axes, policy_name, variant_name
from pipeline.results.summary import axis_label, pairs, with_ratio

COLUMNS = (
    "reading",  # the reference's reading this row is paired with ("" when the reference has one)
    "policy",  # the display name, with the values of its own axes
    "n",
    "utility",
    "utility_low",
    "utility_high",
    "ratio",
    "ratio_low",
    "ratio_high",
    "wins",
    "ties",
    "losses",
    "completed_share",
    "opt_ratio_low",
    "opt_ratio_high",
    "opt_ratio_n",  # the runs the certified means are over (those with ALG > 0 and a bound)
)
MAX_DECIMALS = 3  # below this resolution a value prints as 0 (sums of floats leave noise such as 2e-20)


def _t(values: pd.Series) -> tuple[float, float, float]:
    v = values.dropna().to_numpy(dtype=float)
    return paired._t_interval(v)


def _mean(values: pd.Series) -> float:
    v = pd.to_numeric(values, errors="coerce").dropna()
    return float(v.mean()) if len(v) else math.nan


def _variant(runs: pd.DataFrame, axes: list[str]) -> pd.Series:
    """Each run's policy display name with the values of its own axes (read column by column: a row read as a
    Series costs 100 times more)."""
    own = {p: [a for a in own_axes(p, axes) if a in runs] for p in runs["policy"].unique()}
    labels = {a: [axis_label(v) for v in runs[a]] for a in {a for columns in own.values() for a in columns}}
    return pd.Series(
        [variant_name(p, [labels[a][k] for a in own[p]]) for k, p in enumerate(runs["policy"])],
        index=runs.index,
        dtype=object,
    )


def _reading_label(reference: str, versus: str) -> str:
    """``pdors.on_rounding_failure=reject`` -> ``PD-ORS (reject)``."""
    return variant_name(reference, [part.split("=", 1)[1] for part in versus.split(", ")] if versus else [])


def table(
    runs: pd.DataFrame,
    axes: Sequence[str],
    reference: str,
    by: Sequence[str] = (),
    found: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The headline table of a sweep's ``runs`` (the record, with :func:`pipeline.results.summary.with_job_metrics`
    applied for ``completed_share``): :data:`COLUMNS` plus the ``by`` axes (labels) after ``policy``.
    ``found``: the sweep's :func:`pipeline.results.summary.pairs` if already computed."""
    axes, by = list(axes), list(by)
    unknown = [a for a in by if a not in axes]
    if unknown:
        raise ValueError(f"--by {','.join(unknown)}: not a grid axis of this sweep (axes: {', '.join(axes)})")
    runs = with_ratio(runs)
    ok = runs[(runs["status"] == "ok") & (runs["kind"] == "sim")]
    ok = ok.assign(variant=_variant(ok, axes), **{a: ok[a].map(axis_label) for a in by})
    ok = ok.sort_values("policy", key=lambda p: p != reference, kind="stable")  # the reference's rows first
    found = pairs(runs, axes, reference) if found is None else found
    found = found.assign(variant=_variant(found, axes))
    readings = list(dict.fromkeys(found["versus"])) or [""]
    rows = []
    for versus in readings:
        reading = _reading_label(reference, versus)
        mine = found[found["versus"] == versus]
        for (variant, *where), g in ok.groupby(["variant", *by], sort=False):
            policy = g["policy"].iloc[0]
            if policy == reference and versus and variant != reading:
                continue  # the reference appears in the block of its own reading
            p = mine[mine["variant"] == variant]
            for a, v in zip(by, where, strict=True):
                p = p[p[a].map(axis_label) == v]
            stats = paired.compare(p["value"], p["reference"]) if len(p) else None
            mean, low, high = _t(g["total_utility"])
            low = max(low, 0.0)  # utility is >= 0 (as the figures' intervals are clipped)
            rows.append(
                {
                    "reading": reading if versus else "",
                    "policy": variant,
                    **dict(zip(by, where, strict=True)),
                    "n": len(g),
                    "utility": mean,
                    "utility_low": low,
                    "utility_high": high,
                    "ratio": 1.0 if policy == reference else (stats.ratio_gmean if stats else math.nan),
                    "ratio_low": stats.ratio_low if stats else math.nan,
                    "ratio_high": stats.ratio_high if stats else math.nan,
                    "wins": stats.wins if stats else pd.NA,
                    "ties": stats.ties if stats else pd.NA,
                    "losses": stats.losses if stats else pd.NA,
                    "completed_share": _mean(g["completed_share"]) if "completed_share" in g else math.nan,
                    **_certified(g),
                }
            )
    columns = [COLUMNS[0], COLUMNS[1], *by, *COLUMNS[2:]]
    frame = pd.DataFrame(rows, columns=columns)
    for c in ("wins", "ties", "losses"):
        frame[c] = frame[c].astype("Int64")
    return frame


def _certified(g: pd.DataFrame) -> dict[str, float]:
    """The mean of each run's lower and upper bound on OPT / ALG, over the runs that have both."""
    if "ratio_bound" not in g or "ratio_low" not in g:
        return certified_means([])
    both = g[["ratio_low", "ratio_bound"]].apply(pd.to_numeric, errors="coerce").dropna()
    return certified_means(list(zip(both["ratio_low"], both["ratio_bound"], strict=True)))


def certified_means(pairs: Sequence[tuple[float, float]]) -> dict[str, float]:
    """The certified columns of a row from its runs' (lower, upper) bounds on OPT / ALG."""
    if not pairs:
        return {"opt_ratio_low": math.nan, "opt_ratio_high": math.nan, "opt_ratio_n": 0}
    return {
        "opt_ratio_low": float(sum(p[0] for p in pairs) / len(pairs)),
        "opt_ratio_high": float(sum(p[1] for p in pairs) / len(pairs)),
        "opt_ratio_n": len(pairs),
    }


def decimals(half_width: float) -> int:
    """Decimals that a value known to +- ``half_width`` supports: one significant digit of the half-width (two
    when it starts with 1 or 2), at most :data:`MAX_DECIMALS`; may be negative (rounding to tens)."""
    if not math.isfinite(half_width) or half_width <= 0:
        return MAX_DECIMALS
    exponent = math.floor(math.log10(half_width))
    leading = half_width / 10**exponent
    return min(MAX_DECIMALS, -exponent + (1 if leading < 3 else 0))


def number(value: float, places: int) -> str:
    """``value`` rounded to ``places`` decimals (negative: tens, hundreds), without a negative zero."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    r = round(value, places)
    text = f"{r:.{max(places, 0)}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def rounded(mean: float, low: float, high: float, significant: int = 3) -> str:
    """``mean [low, high]`` rounded to what the interval supports; without an interval, ``significant``
    digits."""
    if math.isnan(mean):
        return "-"
    half = max(mean - low, high - mean) if math.isfinite(high) else mean - low
    if max(abs(mean), abs(low), abs(high)) < 0.5 * 10**-MAX_DECIMALS:  # zero up to float noise
        return "0"
    if math.isnan(half) or half == 0:  # no interval, or every value equal
        return number(mean, _significant_places(mean, significant))
    places = max(decimals(half), _significant_places(mean, 1))  # the mean keeps a digit: never shown as 0
    return f"{number(mean, places)} [{number(low, places)}, {number(high, places)}]"


def _significant_places(value: float, significant: int) -> int:
    """Decimals that show ``significant`` digits of ``value`` (at most :data:`MAX_DECIMALS`; noise prints 0)."""
    if abs(value) < 10**-MAX_DECIMALS or not math.isfinite(value):
        return 0
    return min(MAX_DECIMALS, significant - 1 - math.floor(math.log10(abs(value))))


def _cells(row: pd.Series, by: list[str]) -> list[str]:
    wtl = "-" if pd.isna(row["wins"]) else f"{row['wins']}/{row['ties']}/{row['losses']}"
    certified = (
        "-"
        if math.isnan(row["opt_ratio_low"])
        else f"[{number(row['opt_ratio_low'], 2)}, {number(row['opt_ratio_high'], 2)}]"
        + ("" if row["opt_ratio_n"] == row["n"] else f" ({row['opt_ratio_n']} of {row['n']})")
    )
    reference_row = row["ratio"] == 1.0 and pd.isna(row["wins"])
    return [
        row["policy"],
        *(str(row[a]) for a in by),
        str(row["n"]),
        rounded(row["utility"], row["utility_low"], row["utility_high"]),
        "1 (reference)" if reference_row else rounded(row["ratio"], row["ratio_low"], row["ratio_high"]),
        "-" if reference_row else wtl,
        "-" if math.isnan(row["completed_share"]) else f"{row['completed_share']:.0%}",
        certified,
    ]


def _head(reference: str, by: list[str], frame: pd.DataFrame) -> list[str]:
    head = ["policy", *by, "runs", "utility [95% CI]", f"/ {policy_name(reference)} [95% CI]", "W/T/L", "done"]
    return [*head, "OPT/ALG certified"] if frame["opt_ratio_low"].notna().any() else head


def _blocks(frame: pd.DataFrame, reference: str) -> list[tuple[str, pd.DataFrame]]:
    """One block per reading of the reference, titled."""
    readings = list(dict.fromkeys(frame["reading"]))
    if readings == [""]:
        return [(f"against {policy_name(reference)}", frame)]
    return [(f"against {reading}", frame[frame["reading"] == reading]) for reading in readings]


def _title(title: str, reference: str) -> str:
    return f"Total utility {title}, same instances (W/T/L: {policy_name(reference)}'s wins/ties/losses)"


def text(frame: pd.DataFrame, reference: str, by: Sequence[str] = ()) -> str:
    """The table as aligned plain text, one block per reference reading (fits 110 columns with one ``by``
    axis)."""
    by = list(by)
    out = []
    for title, block in _blocks(frame, reference):
        head = _head(reference, by, frame)
        rows = [_cells(r, by)[: len(head)] for _, r in block.iterrows()]
        widths = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(head)]

        def line(cells: list[str], widths: list[int] = widths) -> str:
            first = cells[0].ljust(widths[0])
            return "  ".join([first, *(c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))]).rstrip()

        out += [_title(title, reference)]
        out += [line(head), *(line(r) for r in rows), ""]
    return "\n".join(out).rstrip() + "\n"


def markdown(frame: pd.DataFrame, reference: str, by: Sequence[str] = ()) -> str:
    """The table as Markdown (the top of ``summary.md``)."""
    by = list(by)
    out = []
    for title, block in _blocks(frame, reference):
        head = _head(reference, by, frame)
        out += [_title(title, reference), ""]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(_cells(r, by)[: len(head)]) + " |" for _, r in block.iterrows()]
        out += [""]
    return "\n".join(out)
