"""A tiny sweep config shared by the sweep tests."""

from pathlib import Path

import yaml

from pipeline.spec import grid, schema
from pipeline.text import screen

TINY = {
    "name": "tiny",
    "instance": {"jobs": 4, "slots": 4},
    "policies": {"pdors": {"rounding": {"gain": 1.0}}, "fifo": {}},
    "grid": {"machines": [4, 5], "pdors.rounding.gain": [0.5, 1.0]},
    "seeds": [1, 2],
}


def write_config(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


# Two fast policies, 8 runs: the record-integrity and disk-full tests
CONFIG_TEXT = """\
name: tiny
policies: {fifo: {}, drf: {}}
instance: {jobs: 4, slots: 5}
grid: {machines: [2, 3]}
seeds: {start: 1, count: 2}
mlflow: {enabled: false}
"""


def sweep_id_of(config: Path) -> str:
    """The sweep id ``pdors sweep run`` gives ``config``."""
    return grid.expand(schema.load(config)).sweep_id


def unwrapped(text: str) -> str:
    """Printed text with the lines :func:`pipeline.text.screen.fit` continued joined back (its exact inverse)."""
    return text.replace("\n" + screen.INDENT, " ")
