"""Every figure of a sweep with the two-reading axis (``pdors.on_rounding_failure``) has data in every panel:
the report's figures and the paired figure, drawn from a real in-process sweep, counted by plotted points
(not file sizes); panel titles in words, one display name per policy, legends outside the panels."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
from matplotlib.axes import Axes
from sweep_fixtures import write_config

import pipeline
from pipeline import plots, summary
from pipeline.locate import locate
from pipeline.report import figures_of, runs_of
from pipeline.storage import manifest_of
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
