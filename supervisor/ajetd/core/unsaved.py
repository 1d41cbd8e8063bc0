"""A run's newest record while a full home holds it in memory, as `status` is told of it.

When `$AJETD_HOME` is full the daemon keeps each run's newest record in memory and writes it
once there is room (`adapters.diskfull.Held`). `status` reads the records on disk, so a run
that ended meanwhile would read `running` for as long as the disk stays full, although the
daemon knows it ended. daemon.json is the one file the daemon can still write on a full home
(it is rewritten in place, in blocks it already has), so the daemon publishes there the few
fields of each held record that say where the run stands, and a reader lays them over the
record it read from disk. Only these fields: they are what `status`, `wait` and the lists
show of a run's state; the rest of a record (trials, metrics, history) is large, and waits for
the disk.

Pure: the daemon's side (`brief`) and the reader's (`published`, `laid_over`) share the list
of fields and the bounds here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ajetd.core.naming import RUN_ID

FIELDS = (
    "state",
    "status",
    "reason",
    "attention",
    "started_at",
    "ended_at",
    "exit_code",
    "reports_pending",
    "stop_reason",
    "session_closed",
)
REFUSED = "WRITE REFUSED: "  # a folder's line in daemon.json's `disk` that is no full disk
TEXT_MAX = 400  # characters of a reason or an attention kept (the full text waits for disk)
NOTE = (
    "this run's newest record is held in memory: $AJETD_HOME is full (shown as the daemon "
    "published it; written once there is room)"
)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def brief(record: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a run's record (`Run.to_json`) that the daemon publishes while the record
    itself is held; long texts cut to TEXT_MAX characters."""
    out: dict[str, Any] = {}
    for key in FIELDS:
        if key not in record or not _scalar(record[key]):
            continue
        value = record[key]
        if isinstance(value, str) and len(value) > TEXT_MAX:
            value = value[: TEXT_MAX - 1] + "…"
        out[key] = value
    return out


def published(value: Any) -> dict[str, dict[str, Any]]:
    """daemon.json's `unsaved` as a reader may use it: run id -> the fields above. Whatever
    is not that shape (another version's file, a torn read) is left out, never raised."""
    if not isinstance(value, dict):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for run_id, fields in value.items():
        if not isinstance(run_id, str) or not RUN_ID.match(run_id) or not isinstance(fields, dict):
            continue
        kept = {k: v for k, v in fields.items() if k in FIELDS and _scalar(v)}
        if kept:
            out[run_id] = kept
    return out


def laid_over(record: Mapping[str, Any], newer: Mapping[str, Any]) -> dict[str, Any]:
    """The record read from disk with the daemon's newer fields over it."""
    return {**record, **newer}
