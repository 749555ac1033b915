"""Every figure of a sweep with the two-reading axis (``pdors.on_rounding_failure``) has data in every panel:
the report's figures and the paired figure, drawn from a real in-process sweep, counted by plotted points
(not file sizes); panel titles in words, one display name per policy, legends outside the panels. And every
committed figure (docs/figures) has data in every panel, read from its PNG and its CSV."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from PIL import Image
from sweep_fixtures import write_config

import pipeline
from pipeline.publish import plots, report
from pipeline.publish.report import figures_of, runs_of
from pipeline.record.locate import locate
from pipeline.record.storage import manifest_of
from pipeline.results import summary
from pipeline.spec.schema import FigureConfig
from pipeline.sweep import SweepOptions

TWO_READINGS = {
    "name": "readings",
    "instance": {"jobs": 5, "slots": 5},
    "policies": {"pdors": {}, "fifo": {}, "drf": {}},
    "grid": {"pdors.on_rounding_failure": ["found_solutions", "reject"], "machines": [3, 4]},
    "seeds": {"start": 1, "count": 2},
    "mlflow": {"enabled": False},
    "report": [
        {"name": "by_machines", "title": "utility against H", "x": "machines"},
        {"name": "by_policy", "title": "utility per policy", "x": "policy"},
    ],
}


def points(ax: Axes) -> int:
    """Data points drawn in a panel: line vertices, scatter offsets, bars."""
    lines = sum(len(line.get_xdata()) for line in ax.get_lines() if line.get_linestyle() != ":")
    scattered = sum(len(c.get_offsets()) for c in ax.collections if hasattr(c, "get_offsets"))
    return lines + scattered + len(ax.patches)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("figures")
    root = tmp / "out"
    config = write_config(tmp / "readings.yaml", TWO_READINGS)
    assert pipeline.run_sweep(config, SweepOptions(out=str(root), in_process=True)).status == 0
    store = locate(None, str(root))[0]
    manifest = manifest_of(store)
    return runs_of(store, manifest)[1], manifest


def visible(figure: plt.Figure) -> list[Axes]:
    return [ax for ax in figure.axes if ax.get_visible()]


def test_every_report_figure_has_points_in_every_panel(recorded):
    runs, manifest = recorded
    axes, reference = manifest.axes, summary.reference_policy(manifest)
    for fig in figures_of(manifest):
        drawn = plots.figure(summary.figure_table(runs, fig, axes, reference), fig)
        panels = visible(drawn)
        assert len(panels) == (2 if fig.x == "machines" else 4)  # per reading (and H), no empty cell
        assert len(drawn.axes) == len(panels)
        for ax in panels:
            assert points(ax) > 0, f"{fig.name}: empty panel {ax.get_title()!r}"
            assert "on_rounding_failure" not in ax.get_title() and "PD-ORS" in ax.get_title()  # in words
            assert ax.get_legend() is None  # the legend is the figure's, outside the panels
        labels = [t.get_text() for legend in drawn.legends for t in legend.get_texts()]
        assert "pdors" not in labels and (fig.x == "policy" or labels == ["PD-ORS", "FIFO", "DRF"])
        plt.close(drawn)


def test_paired_figure_pairs_each_reading_and_shares_its_axis(recorded):
    runs, manifest = recorded
    axes = manifest.axes
    pairs = summary.pairs(runs, axes, "pdors")
    assert set(pairs["versus"]) == {"pdors.on_rounding_failure=found_solutions", "pdors.on_rounding_failure=reject"}
    drawn = plots.paired_plot(pairs, axes, "pdors", "readings: total utility against PD-ORS")
    panels = visible(drawn)
    assert len(panels) == 2
    for ax in panels:
        assert points(ax) > 0, f"empty paired panel {ax.get_title()!r}"
    assert panels[0].get_ylim() == panels[1].get_ylim()  # one log range for both readings
    assert "readings-" not in drawn.texts[0].get_text() if drawn.texts else True
    plt.close(drawn)


def test_a_sweep_of_one_policy_draws_no_paired_figure(tmp_path: Path) -> None:
    """Nothing to pair (thesis Figs. 3.13-3.14 run PD-ORS alone): no paired figure at all, not an empty one."""
    alone = {**TWO_READINGS, "name": "alone", "policies": {"pdors": {}}, "grid": {"machines": [3]}, "report": []}
    config = write_config(tmp_path / "alone.yaml", alone)
    assert pipeline.run_sweep(config, SweepOptions(out=str(tmp_path / "out"), in_process=True)).status == 0
    report = next((tmp_path / "out").rglob("report"))
    assert not list(report.glob("*.paired.*")) and list(report.glob("*.png"))
    assert "Only PD-ORS ran: nothing to pair." in (report / "alone.report.md").read_text()


# The committed figures (docs/figures, or $PDORS_FIGURES to check another copy): every PNG's panels, found as
# the black frames matplotlib draws around an axes, each hold coloured ink (every policy is drawn in a colour;
# frames, text, ticks, grid lines and the "no paired instances" placeholder are black or grey), and the CSV
# beside it holds rows with finite numbers, one panel per frame where it names its panels.
FIGURES = Path(os.environ.get("PDORS_FIGURES") or Path(__file__).resolve().parents[1] / "docs" / "figures")
DARK, INK = 80, 50  # a frame's pixels: every channel below DARK; ink: channels spread more than INK
TINT = 15  # a confidence band (a colour at alpha 0.15): channels spread more than this
MIN_FRAME, SLACK, INSET = 150, 30, 5  # pixels: a frame's least width, its ticks' reach, the frame's thickness


def _runs(row: np.ndarray) -> list[tuple[int, int]]:
    change = np.diff(np.concatenate(([0], row.astype(np.int8), [0])))
    starts, ends = np.flatnonzero(change == 1), np.flatnonzero(change == -1)
    return [(int(a), int(b)) for a, b in zip(starts, ends, strict=True) if b - a >= MIN_FRAME]


def panels_of(png: Path) -> list[tuple[int, int, int, int, int, float, float]]:
    """Each panel frame of ``png`` (left, top, right, bottom) with its count of coloured pixels inside and where
    its coloured or tinted pixels start and end (shares of its height from the top): the frame's top and bottom
    edges are the long dark rows sharing (up to the ticks' reach) one horizontal span."""
    rgb = np.asarray(Image.open(png).convert("RGB")).astype(np.int16)
    dark = rgb.max(axis=2) < DARK
    edges: dict[tuple[int, int], list[list[int]]] = {}
    for y in np.flatnonzero(dark.sum(axis=1) >= MIN_FRAME):
        for x0, x1 in _runs(dark[y]):
            span = next((k for k in edges if abs(k[0] - x0) <= SLACK and abs(k[1] - x1) <= SLACK), (x0, x1))
            rows = edges.setdefault(span, [])
            if rows and y - rows[-1][-1] <= 1:
                rows[-1].append(int(y))
            else:
                rows.append([int(y)])
    found = []
    for (x0, x1), rows in edges.items():
        lines = [r[len(r) // 2] for r in rows]
        for top, bottom in zip(lines[::2], lines[1::2], strict=False):
            inside = rgb[top + INSET : bottom - INSET, x0 + SLACK : x1 - INSET]
            # data: coloured or tinted (a band) pixels, and black ones (error bars, rings, counts; no grid line is)
            data = (np.ptp(inside, axis=2) > TINT) | (inside.max(axis=2) < DARK)
            ink = np.flatnonzero(data.any(axis=1))
            first, last = (ink[0] / max(len(inside), 1), ink[-1] / max(len(inside), 1)) if len(ink) else (0.0, 0.0)
            found.append((x0, top, x1, bottom, int((np.ptp(inside, axis=2) > INK).sum()), float(first), float(last)))
    return found


def row_spans(found: list[tuple[int, int, int, int, int, float, float]]) -> dict[int, float]:
    """Per row of panels (frames with one top, which share a y-axis): the share of the height their data span
    together. A row compares its panels on one scale, so one panel may hold less; the row as a whole may not."""
    rows: dict[int, list[tuple[float, float]]] = {}
    for f in found:
        top = next((t for t in rows if abs(t - f[1]) <= SLACK), f[1])
        rows.setdefault(top, []).append((f[5], f[6]) if f[4] else (1.0, 0.0))
    return {top: max(0.0, max(b for _, b in r) - min(a for a, _ in r)) for top, r in rows.items()}


def test_an_empty_panel_is_found_empty(tmp_path: Path) -> None:
    """What the committed figures are checked with tells a drawn panel from an empty one and from a
    placeholder."""
    drawn, (full, empty) = plt.subplots(1, 2, figsize=(8, 3))
    full.plot([1, 2, 3], [1, 3, 2], color="C3", marker="D")
    empty.text(0.5, 0.5, "no paired instances", ha="center")
    empty.axhline(0.5, color="grey", linestyle=":")
    drawn.savefig(tmp_path / "two.png", dpi=plots.DPI)
    plt.close(drawn)
    found = sorted(panels_of(tmp_path / "two.png"))
    assert len(found) == 2 and found[0][4] > 0 and found[1][4] == 0, found


# A row of panels' data (coloured ink: points, bands, bars, their counts) spans at least this share of its
# height: matplotlib's own margins leave it about 90%; less means an axis shared beyond the row or clipped
# squeezed it (a calibrated row on an axis down to 1e-3 shared with the literal row) or the data are flat (a
# share of 0 at every point on -0.04..0.04).
MIN_SPAN = 0.5


def test_a_squeezed_or_flat_panel_is_found(tmp_path: Path) -> None:
    drawn, (full, squeezed, flat) = plt.subplots(1, 3, figsize=(12, 3))  # three rows of one panel each
    full.plot([1, 2, 3], [1, 3, 2], color="C3", marker="D")
    squeezed.plot([1, 2, 3], [1, 3, 2], color="C3", marker="D")
    squeezed.set_ylim(-8, 3.2)  # the data in the top quarter
    flat.plot([1, 2, 3], [0, 0, 0], color="C3", marker="D")
    flat.set_ylim(-0.04, 0.04)
    drawn.savefig(tmp_path / "three.png", dpi=plots.DPI)
    plt.close(drawn)
    spans = [f[6] - f[5] for f in sorted(panels_of(tmp_path / "three.png"))]
    assert spans[0] >= MIN_SPAN > spans[1] and spans[2] < MIN_SPAN, spans


def _table(panel: str, means: list[float], censored: float | None = None) -> pd.DataFrame:
    rows = pd.DataFrame(
        {"panel": panel, "policy": ["pdors", "fifo"][: len(means)], "x": ["pdors", "fifo"][: len(means)]}
    ).assign(n=5, mean=means, std=1.0, ci_low=means, ci_high=means, min=0.0, max=max(means), offered_load=0.5)
    return rows if censored is None else rows.assign(censored=censored)


def test_a_panel_saying_nothing_is_named_not_drawn() -> None:
    """Every run's median censored at T (the literal regime of Fig. 9): the panel goes, the title says why;
    partly censored bars are ringed."""
    table = pd.concat(
        [
            _table("workload.workload_scale=0.1", [9.0, 50.0], 0.4),
            _table("workload.workload_scale=1", [80.0, 80.0], 1.0),
        ]
    )
    fig = FigureConfig(name="f", title="Fig. 9: t", x="policy", metric="median_training_time")
    drawn = plots.figure(table, fig)
    panels = visible(drawn)
    assert len(panels) == 1 and "calibrated" in panels[0].get_title()
    head = drawn.get_suptitle()
    assert "not drawn: literal regime (K x 1): every run's median is censored at T" in head and "ringed" in head
    assert len(panels[0].collections) >= 1 and len(panels[0].collections[-1].get_offsets()) == 2  # both ringed
    plt.close(drawn)


def test_a_ratio_of_an_alg_near_zero_is_drawn_at_the_cap() -> None:
    table = _table("", [1.2, 4e11]).assign(x=["0.8", "1.0"], policy="pdors")
    fig = FigureConfig(name="f", title="t", x="pdors.rounding.gain", metric="ratio_bound", yscale="log")
    drawn = plots.figure(table, fig)
    (ax,) = visible(drawn)
    assert ax.get_ylim()[1] < 10 * plots.RATIO_CAP and "1 mean above 1000 drawn at it" in ax.get_title()
    plt.close(drawn)


COMMITTED = sorted(FIGURES.glob("*.png"))


def test_no_two_committed_figures_show_the_same_points() -> None:
    """A figure whose points equal another's (thesis Fig. 3.13 per roundable solve where every solve rounds) is
    a duplicate, whatever its title."""
    seen: dict[tuple, str] = {}
    for png in COMMITTED:
        table = pd.read_csv(png.with_suffix(".csv"))
        if "mean" not in table:  # a paired or study table
            continue
        key = tuple(map(tuple, table[["panel", "policy", "x", "n", "mean"]].astype(str).to_numpy()))
        assert key not in seen, f"{png.name} shows the same points as {seen[key]}"
        seen[key] = png.name


def test_every_committed_figure_is_at_one_resolution() -> None:
    dpis = {png.name: round(Image.open(png).info.get("dpi", (0, 0))[0]) for png in COMMITTED}
    assert set(dpis.values()) == {plots.DPI}, dpis


@pytest.mark.parametrize(
    "png",
    COMMITTED,
    ids=[p.name for p in COMMITTED],
)
def test_every_committed_figure_has_data_in_every_panel(png: Path) -> None:
    found = panels_of(png)
    assert found, f"{png.name}: no panel frame found"
    empty = [f[:4] for f in found if f[4] == 0]
    assert not empty, f"{png.name}: {len(empty)} of {len(found)} panels hold no data (frames at {empty})"
    squeezed = {top: round(span, 2) for top, span in row_spans(found).items() if span < MIN_SPAN}
    assert not squeezed, f"{png.name}: data span under {MIN_SPAN:.0%} of the rows at {squeezed} (pixels: share)"
    table = pd.read_csv(png.with_suffix(".csv"))
    numbers = table.select_dtypes("number").to_numpy(dtype=float)
    assert len(table) and np.isfinite(numbers).any(axis=1).all(), f"{png.with_suffix('.csv').name}: no rows"
    if "panel" in table and not png.stem.endswith(".paired"):
        said = [p for p in dict.fromkeys(table["panel"]) if not plots.no_information(table[table["panel"] == p])]
        assert len(said) == len(found), (png.name, said, found)  # a panel saying nothing is named, not drawn


def test_the_html_report_renders_markdown_and_display_names(tmp_path: Path) -> None:
    page = report.html_report(
        "## Paired: every policy against pdors\n\nConfig `configs/fig06.yaml`, **bold**\n\n"
        "| panel | policy | W/T/L of pdors |\n|---|---|---|\n"
        "| workload.workload_scale=1, pdors.on_rounding_failure=reject | fifo | 3/0/2 |\n",
        tmp_path,
    )
    assert "<code>configs/fig06.yaml</code>" in page and "<strong>bold</strong>" in page and "`" not in page
    assert "against PD-ORS" in page and "<td>FIFO</td>" in page and "W/T/L of PD-ORS" in page
    assert "literal regime (K x 1), PD-ORS rejects on a failed rounding" in page and "pdors" not in page
