"""A tiny sweep config shared by the sweep tests."""

from pathlib import Path

import yaml

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
