"""Real job-arrival traces: Google cluster-data 2011 ``job_events`` and Microsoft Philly ``cluster_job_log``.

The paper's Figs. 12-13 "follow job arrivals exactly based on timestamps recorded in the Google Cluster data
[35] by scaling down the original job trace (i.e., a 'snippet' of the trace)". :func:`snippet` does that: I
consecutive submissions, their time span mapped linearly onto the horizon's T slots [choice: the first
submission lands in slot 0, the last in slot T-1].

* Google 2011 ``job_events`` (gzip or plain CSV, no header; Reiss, Wilkes, Hellerstein, "Google cluster-usage
  traces: format + schema"): ``timestamp_us, missing_info, job_id, event_type, user, scheduling_class,
  job_name, logical_job_name``. Arrivals are the SUBMIT events (``event_type`` 0), one per job id (the first).
  Timestamps 0 (before the trace window) and 2^63 - 1 (after it) carry no time and are dropped. The scheduling
  class (latency sensitivity 0-3) maps to the paper's classes as its Section V does: 0 time-insensitive,
  1-2 time-sensitive, 3 time-critical.
* Philly (msr-fiddle/philly-traces ``cluster_job_log``): a JSON list of jobs, each with ``submitted_time``
  ``"YYYY-mm-dd HH:MM:SS"``. It has no latency class (``sensitivity`` is -1).

A trace that cannot be read as its format is rejected with :class:`TraceError` naming the file, the line or
entry, and the reason, before any instance is drawn.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

import numpy as np

from .errors import InputError
from .model import CRITICAL, INSENSITIVE, SENSITIVE

FORMATS = ("google", "philly")
GOOGLE_COLUMNS = (
    "timestamp_us",
    "missing_info",
    "job_id",
    "event_type",
    "user",
    "scheduling_class",
    "job_name",
    "logical_job_name",
)
GOOGLE_SUBMIT = 0
GOOGLE_NO_TIME = (0, 2**63 - 1)  # "before the trace window" / "after it" (the trace's schema)
GOOGLE_CLASS_TO_SENSITIVITY = np.array([INSENSITIVE, SENSITIVE, SENSITIVE, CRITICAL])  # paper Section V
PHILLY_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
PHILLY_FILE = "cluster_job_log"
NO_CLASS = -1


class TraceError(InputError):
    """A trace file is missing or is not valid in its format."""


# Where a missing trace can be had (the message of a trace path that does not exist).
HOW_TO_GET = {
    "google": "the public Google 2011 trace (clusterdata-2011-2, its job_events files) is at "
    "https://github.com/google/cluster-data; the repository ships an excerpt in traces/google-2011/job_events",
    "philly": "the Philly trace (cluster_job_log) is at https://github.com/msr-fiddle/philly-traces",
}


@dataclass(frozen=True, eq=False, kw_only=True)
class Trace:
    """Job submissions in time order: ``submit_s`` seconds (trace clock), ``sensitivity`` the paper's class
    per submission (``model.INSENSITIVE/SENSITIVE/CRITICAL``) or -1 where the trace has none."""

    source: str
    format: str
    submit_s: np.ndarray
    sensitivity: np.ndarray

    def __len__(self) -> int:
        return len(self.submit_s)

    @property
    def has_classes(self) -> bool:
        return bool(len(self.sensitivity)) and bool((self.sensitivity != NO_CLASS).all())


@dataclass(frozen=True, eq=False)
class Snippet:
    """``arrival[I]`` slots in [0, T-1] (sorted) and ``sensitivity[I]`` of submissions ``start .. start+I-1``."""

    start: int
    arrival: np.ndarray
    sensitivity: np.ndarray


def _open_text(path: Path) -> io.TextIOWrapper:
    raw = path.open("rb")
    head = raw.read(2)
    raw.seek(0)
    return io.TextIOWrapper(gzip.GzipFile(fileobj=raw) if head == b"\x1f\x8b" else raw, encoding="utf-8")


def _int(text: str, what: str, where: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise TraceError(f"{where}: {what} must be an integer, got {text!r}") from None


def _google_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith((".csv", ".csv.gz")))
    if not files:
        raise TraceError(f"{path}: no job_events files (*.csv or *.csv.gz) in this directory")
    return files


def load_google(path: str | Path) -> Trace:
    """SUBMIT events of Google 2011 ``job_events``: one file, or a directory of ``part-*.csv.gz`` files."""
    path = Path(path)
    seen: dict[int, tuple[int, int]] = {}  # job id -> (timestamp, scheduling class) of its first SUBMIT
    dropped = 0
    for file in _google_files(path):
        try:
            with _open_text(file) as f:
                for line_no, row in enumerate(csv.reader(f), 1):
                    where = f"{file} line {line_no}"
                    if len(row) != len(GOOGLE_COLUMNS):
                        raise TraceError(
                            f"{where}: expected {len(GOOGLE_COLUMNS)} columns "
                            f"({', '.join(GOOGLE_COLUMNS)}), got {len(row)}; is this a "
                            f"Google 2011 job_events file?"
                        )
                    if _int(row[3], "event_type", where) != GOOGLE_SUBMIT:
                        continue
                    ts = _int(row[0], "timestamp_us", where)
                    job = _int(row[2], "job_id", where)
                    cls = _int(row[5], "scheduling_class", where)
                    if not 0 <= cls < len(GOOGLE_CLASS_TO_SENSITIVITY):
                        raise TraceError(f"{where}: scheduling_class must be 0-3, got {cls}")
                    if ts in GOOGLE_NO_TIME:
                        dropped += 1
                    elif job not in seen:
                        seen[job] = (ts, cls)
        except (OSError, EOFError, UnicodeDecodeError, csv.Error) as e:
            if isinstance(e, FileNotFoundError):
                raise TraceError(f"{file}: no such file") from None
            raise TraceError(f"{file}: unreadable ({type(e).__name__}: {e})") from None
    if not seen:
        raise TraceError(
            f"{path}: no SUBMIT event (event_type 0) with a timestamp"
            + (f" ({dropped} outside the trace window)" if dropped else "")
        )
    ts, cls = np.array(list(seen.values()), dtype=np.int64).T
    order = np.argsort(ts, kind="stable")
    return Trace(
        source=str(path), format="google", submit_s=ts[order] / 1e6, sensitivity=GOOGLE_CLASS_TO_SENSITIVITY[cls[order]]
    )


def load_philly(path: str | Path) -> Trace:
    """Submissions of a Philly ``cluster_job_log`` (the file, or the directory holding it)."""
    path = Path(path)
    file = path / PHILLY_FILE if path.is_dir() else path
    try:
        data = json.loads(file.read_text())
    except FileNotFoundError:
        raise TraceError(f"{file}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TraceError(f"{file}: not a Philly cluster_job_log (invalid JSON: {e})") from None
    if not isinstance(data, list) or not data:
        raise TraceError(
            f"{file}: a Philly cluster_job_log is a non-empty JSON list of jobs, "
            f"got {type(data).__name__}{' (empty)' if data == [] else ''}"
        )
    times = []
    for k, job in enumerate(data):
        where = f"{file} entry {k}"
        if not isinstance(job, dict) or "submitted_time" not in job:
            raise TraceError(f"{where}: each job needs a 'submitted_time', got {str(job)[:80]}")
        where += f" (jobid {job.get('jobid', '?')})"
        try:
            stamp = datetime.strptime(str(job["submitted_time"]), PHILLY_TIME_FORMAT)
            times.append(stamp.replace(tzinfo=UTC).timestamp())  # naive times: no local-DST shifts
        except ValueError:
            raise TraceError(
                f"{where}: submitted_time must look like 2017-10-03 14:05:00, got {job['submitted_time']!r}"
            ) from None
    submit = np.sort(np.array(times, dtype=float), kind="stable")
    return Trace(
        source=str(path), format="philly", submit_s=submit, sensitivity=np.full(len(submit), NO_CLASS, dtype=np.int64)
    )


@lru_cache(maxsize=8)
def _load_cached(resolved: str, format: str, mtime_ns: int) -> Trace:
    return load_google(resolved) if format == "google" else load_philly(resolved)


def load(path: str | Path, format: str) -> Trace:
    """Read (once per process and file version) a trace of ``format`` (``google`` | ``philly``)."""
    if format not in FORMATS:
        raise TraceError(f"format: must be one of {', '.join(FORMATS)}, got {format!r}")
    p = Path(path).expanduser()
    if not p.exists():
        get = f"; {HOW_TO_GET[format]}" if format in HOW_TO_GET else ""
        raise TraceError(f"{path}: no such file or directory (relative paths are from {Path.cwd()}){get}")
    stamp = max(f.stat().st_mtime_ns for f in ([p] if p.is_file() else [p, *p.iterdir()]))
    return _load_cached(str(p.resolve()), format, stamp)


def snippet(trace: Trace, jobs: int, slots: int, start: int) -> Snippet:
    """Submissions ``start .. start + jobs - 1`` (``start`` wraps over the usable starts), their span scaled
    linearly onto slots 0 .. T-1."""
    if jobs > len(trace):
        raise TraceError(f"{trace.source}: {len(trace)} submissions, fewer than the {jobs} jobs asked for")
    start %= len(trace) - jobs + 1
    t = trace.submit_s[start : start + jobs]
    span = t[-1] - t[0]
    scaled = np.zeros(jobs) if span <= 0 else np.floor((t - t[0]) / span * slots)
    arrival = np.minimum(scaled, slots - 1).astype(np.int64)
    return Snippet(start, arrival, trace.sensitivity[start : start + jobs].copy())
