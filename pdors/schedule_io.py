"""A schedule as a table (Parquet): one row per (job, machine, slot) with workers or PSs there, so a researcher can
see what a policy allocated, and the validator can judge the schedule again from the file alone.

Columns: ``job`` i, ``machine`` h, ``slot`` t, ``workers`` w_ih[t], ``servers`` s_ih[t] (PSs), ``internal`` (the
simulator's claim that job i ran at the internal rate in slot t, Fact 1; the validator recomputes it) and
``restart`` (its claim that slot t was a restart for job i). The file's key-value metadata ``pdors.schedule``
holds what rows cannot: the shape (T, I, H), x_i (``admitted``), the claimed completion slots and the restart
loss.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .schedule import Schedule

COLUMNS = (
    ("job", pa.int64()),
    ("machine", pa.int64()),
    ("slot", pa.int64()),
    ("workers", pa.int64()),
    ("servers", pa.int64()),
    ("internal", pa.bool_()),
    ("restart", pa.bool_()),
)
SCHEMA = pa.schema(list(COLUMNS))
METADATA_KEY = b"pdors.schedule"


def rows(schedule: Schedule) -> dict[str, np.ndarray]:
    """The allocated cells as columns, ordered by job, machine, slot."""
    t, i, h = np.nonzero((schedule.workers > 0) | (schedule.servers > 0))
    order = np.lexsort((t, h, i))
    t, i, h = t[order], i[order], h[order]
    return {
        "job": i,
        "machine": h,
        "slot": t,
        "workers": schedule.workers[t, i, h],
        "servers": schedule.servers[t, i, h],
        "internal": schedule.claimed_internal[t, i],
        "restart": schedule.claimed_restart[t, i],
    }


def to_table(schedule: Schedule) -> pa.Table:
    meta = {
        "slots": int(schedule.workers.shape[0]),
        "jobs": int(schedule.workers.shape[1]),
        "machines": int(schedule.workers.shape[2]),
        "admitted": schedule.admitted.astype(bool).tolist(),
        "claimed_completion": schedule.claimed_completion.astype(int).tolist(),
        "restart_loss": float(schedule.restart_loss),
    }
    table = pa.table(
        {name: pa.array(values, type) for (name, type), values in zip(COLUMNS, rows(schedule).values(), strict=False)},
        schema=SCHEMA,
    )
    return table.replace_schema_metadata({METADATA_KEY: json.dumps(meta).encode()})


def from_table(table: pa.Table) -> Schedule:
    """The schedule a table of :func:`to_table` holds."""
    meta = json.loads((table.schema.metadata or {})[METADATA_KEY])
    shape = (meta["slots"], meta["jobs"], meta["machines"])
    out = Schedule(
        workers=np.zeros(shape, dtype=np.int32),
        servers=np.zeros(shape, dtype=np.int32),
        admitted=np.array(meta["admitted"], dtype=bool),
        claimed_internal=np.zeros(shape[:2], dtype=bool),
        claimed_completion=np.array(meta["claimed_completion"], dtype=np.int64),
        claimed_restart=np.zeros(shape[:2], dtype=bool),
        restart_loss=meta["restart_loss"],
    )
    c = {name: table[name].to_numpy() for name, _ in COLUMNS}
    out.workers[c["slot"], c["job"], c["machine"]] = c["workers"]
    out.servers[c["slot"], c["job"], c["machine"]] = c["servers"]
    out.claimed_internal[c["slot"], c["job"]] = c["internal"]
    out.claimed_restart[c["slot"], c["job"]] = c["restart"]
    return out


def write(path: str | Path, schedule: Schedule) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(to_table(schedule), path)
    return path


def read(path: str | Path) -> Schedule:
    return from_table(pq.read_table(path))
