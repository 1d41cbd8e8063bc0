"""A run's newest record while a full home holds it in memory, as `status` is told of it.

When `$AJETD_HOME` is full the daemon keeps each run's newest record in memory and writes it
once there is room (`adapters.diskfull.Held`). `status` reads the records on disk, so a run
that ended meanwhile would read `running` for as long as the disk stays full, although the
daemon knows it ended. daemon.json is the one file the daemon can still write on a full home
(it is rewritten in place, in blocks it already has), so the daemon publishes there the few
fields of each held record that say where the run stands, and a reader lays them over the
record it read from disk. Only these fields: they are what `status`, `wait` and the lists
show of a run's state; the rest of a record (trials, metrics, history) is large, and waits for
the disk. Of that rest, what keeps the record on disk from contradicting them is published
too (`DERIVED`): the last trial's end (else `status RUN` shows the trial of an ended run as
running) and how many validation records the held record has (else an ended run with
records not yet on disk reads as one that wrote none).

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
# the last trial's number and end, and the count of validation records (`history`)
DERIVED = ("trial", "trial_ended_at", "trial_exit_code", "records")
REFUSED = "WRITE REFUSED: "  # a folder's line in daemon.json's `disk` that is no full disk
# a folder's line in daemon.json's `disk` whose disk has room again, its writes about to go
ROOM_BACK = "DISK WAS FULL: "
TEXT_MAX = 400  # characters of a reason or an attention kept (the full text waits for disk)
NOTE = (
    "this run's newest record is held in memory: $AJETD_HOME is full (shown as the daemon "
    "published it; written once there is room)"
)
RECORDS_HELD = "{n} validation record(s) read since are held in memory with it, not on disk yet"


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
    trials, history = record.get("trials"), record.get("history")
    if isinstance(trials, list) and trials and isinstance(trials[-1], dict):
        last = trials[-1]
        ended = {"ended_at": "trial_ended_at", "exit_code": "trial_exit_code"}
        out["trial"] = last.get("number")
        out.update({ours: last.get(key) for key, ours in ended.items()})
    if isinstance(history, list):
        out["records"] = len(history)
    return {k: v for k, v in out.items() if _scalar(v)}


def published(value: Any) -> dict[str, dict[str, Any]]:
    """daemon.json's `unsaved` as a reader may use it: run id -> the fields above. Whatever
    is not that shape (another version's file, a torn read) is left out, never raised."""
    if not isinstance(value, dict):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for run_id, fields in value.items():
        if not isinstance(run_id, str) or not RUN_ID.match(run_id) or not isinstance(fields, dict):
            continue
        kept = {k: v for k, v in fields.items() if k in (*FIELDS, *DERIVED) and _scalar(v)}
        if kept:
            out[run_id] = kept
    return out


def laid_over(record: Mapping[str, Any], newer: Mapping[str, Any]) -> dict[str, Any]:
    """The record read from disk with the daemon's newer fields over it: its state fields,
    and the end of its last trial where the disk has that trial still open."""
    out = {**record, **{k: v for k, v in newer.items() if k in FIELDS}}
    trials = record.get("trials")
    if not (isinstance(trials, list) and trials and isinstance(trials[-1], dict)):
        return out
    last = trials[-1]
    if (
        last.get("number") == newer.get("trial")
        and last.get("ended_at") is None
        and newer.get("trial_ended_at") is not None
    ):
        ended = {"ended_at": newer["trial_ended_at"], "exit_code": newer.get("trial_exit_code")}
        out["trials"] = [*trials[:-1], {**last, **ended}]
    return out


def records_held(record: Mapping[str, Any], newer: Mapping[str, Any]) -> int:
    """How many validation records the held record has that the one on disk lacks."""
    history = record.get("history")
    on_disk = len(history) if isinstance(history, list) else 0
    held = newer.get("records")
    return max(0, held - on_disk) if isinstance(held, int) else 0
