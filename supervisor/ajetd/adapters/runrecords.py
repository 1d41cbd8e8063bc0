"""Every run record of a home, read at once: the runs, the folders left out and why, and a
brief reading for `ajetd status`'s default view.

A record that cannot be read (empty, cut short, not JSON, larger than any record is, a file
where a run folder should be, a folder that held trials but lost its record) is never dropped
without a word: it is named, with what to do. The default view shows live runs and the newest
ended ones only, so the brief reading builds those in full and the older ended ones as bare
stand-ins (id, state, status, times: what ordering and counting them needs); turning a record
into a `Run` is most of the cost of reading thousands.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ajetd.adapters.regular import load_record
from ajetd.adapters.store import read_events
from ajetd.core import unsaved
from ajetd.core.errors import StoreError
from ajetd.core.journal import ended_in_journal
from ajetd.core.model import Run, State, Status
from ajetd.core.shown import show

LEFT_OUT = (
    "run {run_id} is left out (not listed, not supervised, never launched again): restore "
    "the file, or move the folder out of runs/"
)


def damage(line: str, run_id: str) -> str:
    """What was wrong with a record, from its line in `damaged` (without what is done)."""
    return line.removesuffix(f"; {LEFT_OUT.format(run_id=run_id)}")


def keep_damaged(state_file: Path) -> Path | None:
    """Keep a damaged record beside it (`state.json.damaged`, `.damaged-2`, ...: a second
    name, so the record saved over it next leaves it whole), never over another; None where
    there is none."""
    if not state_file.exists():
        return None
    for n in range(1, 1000):
        aside = state_file.with_name(f"{state_file.name}.damaged" + (f"-{n}" if n > 1 else ""))
        try:
            os.link(state_file, aside)  # fails on a name already taken: nothing overwritten
        except FileExistsError:
            continue
        return aside
    raise StoreError(f"cannot keep {state_file} aside: too many damaged copies beside it")


def read_data(path: Path) -> dict[str, Any]:
    """A record's JSON object; StoreError naming the file where it is not one."""
    try:
        data = load_record(path)
    except ValueError as exc:  # a record too large among them: never read
        raise StoreError(f"corrupt run record {path}: {exc}") from exc
    except (NotADirectoryError, IsADirectoryError, PermissionError) as exc:
        raise StoreError(f"unreadable run record {path}: {exc.strerror}") from exc
    if not isinstance(data, dict):
        raise StoreError(f"corrupt run record {path}: not a JSON object")
    return data


def as_run(path: Path, data: Mapping[str, Any], newer: Mapping[str, Any] | None = None) -> Run:
    """The record as a Run; `newer`: the fields of its newest record that a full home holds
    in the daemon's memory (`core.unsaved`), laid over it, and left off where they do not
    make a record (another version's daemon.json: the record on disk is still shown)."""
    if data.get("run_id") != path.parent.name:  # its id names its files: never another's
        said = show(data.get("run_id"))
        raise StoreError(f"corrupt run record {path}: its run_id {said} is not its folder's")
    if newer:
        with contextlib.suppress(StoreError):
            run = as_run(path, unsaved.laid_over(data, newer))
            held = unsaved.records_held(data, newer)
            more = (unsaved.RECORDS_HELD.format(n=held),) if held else ()
            return replace(run, warnings=(*run.warnings, unsaved.NOTE, *more))
    try:
        return Run.from_json(data)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise StoreError(f"corrupt run record {path}: {exc}") from exc


def lost_record(folder: Path, state_file: Path, run_id: str) -> str | None:
    """Why a run folder without a record is left out, or None where it is a claim cut short
    (a blueprint and no trial: admitted again by the daemon) or is being made. One whose
    journal says it ended is never admitted again (`core.journal`)."""
    if not folder.is_dir():
        if not os.path.lexists(folder):  # no such run (yet: a submission in the inbox)
            return None
        return f"{folder} is not a run folder (a stray file): ignored; move it aside"
    if any(folder.glob("trial-*")):
        held = "the folder holds trials"
    else:
        held = journal_bars(folder / "events.jsonl") or ""
    if not held:
        return None
    return f"run record {state_file} is missing, and {held}; {LEFT_OUT.format(run_id=run_id)}"


def journal_bars(path: Path) -> str | None:
    """Why the run whose journal is at `path` is never admitted again, as its journal has it:
    it says the run ended, or it cannot be read (larger than any journal is, not a regular
    file: whether it ended is unknown, so it is not taken for a run that never started)."""
    try:
        events = read_events(path)
    except ValueError as exc:
        return f"its journal {path} cannot be read ({exc})"
    if ended_in_journal(text for _, text in events):
        return "its journal (events.jsonl) says the run ended"
    return None


def read_all(
    runs_dir: Path,
    run_ids: list[str],
    brief: int | None = None,
    newer: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[list[Run], dict[str, str]]:
    """Every readable record as a Run, and the run ids left out with why. `brief`: build in
    full only the live runs and the `brief` newest ended ones (`_stand_in` for the rest).
    `newer`: run id -> the held fields of its newest record (`as_run`)."""
    damaged: dict[str, str] = {}
    if brief is None:
        return list(each(runs_dir, run_ids, damaged, newer)), damaged
    found = list(_records(runs_dir, run_ids, damaged))
    return _brief(found, brief, damaged, newer or {}), damaged


def each(
    runs_dir: Path,
    run_ids: list[str],
    damaged: dict[str, str],
    newer: Mapping[str, Mapping[str, Any]] | None = None,
) -> Iterator[Run]:
    """Every readable record as a Run, one at a time (no run's JSON is held longer than its
    reading); the ones left out go into `damaged`."""
    for path, data in _records(runs_dir, run_ids, damaged):
        try:
            yield as_run(path, data, (newer or {}).get(path.parent.name))
        except StoreError as exc:
            damaged[path.parent.name] = f"{exc}; {LEFT_OUT.format(run_id=path.parent.name)}"


def _records(
    runs_dir: Path, run_ids: list[str], damaged: dict[str, str]
) -> Iterator[tuple[Path, dict[str, Any]]]:
    for run_id in run_ids:
        path = runs_dir / run_id / "state.json"
        try:
            yield path, read_data(path)
        except StoreError as exc:
            damaged[run_id] = f"{exc}; {LEFT_OUT.format(run_id=run_id)}"
        except FileNotFoundError:
            if why := lost_record(runs_dir / run_id, path, run_id):
                damaged[run_id] = why


def _brief(
    found: list[tuple[Path, dict[str, Any]]],
    keep: int,
    damaged: dict[str, str],
    newer: Mapping[str, Mapping[str, Any]],
) -> list[Run]:
    """The live runs and the `keep` newest ended ones in full, stand-ins for the others."""
    ended: list[tuple[tuple[float, str], int]] = []
    found = [(p, unsaved.laid_over(d, newer.get(p.parent.name) or {})) for p, d in found]
    for i, (_, data) in enumerate(found):
        key = _ended_key(data) if data.get("state") == "done" else None
        if key is not None:
            ended.append((key, i))
    ended.sort(reverse=True)
    older = {i for _, i in ended[keep:]}
    runs = []
    for i, (path, data) in enumerate(found):
        run = _stand_in(data) if i in older else None
        try:
            runs.append(run or as_run(path, data, newer.get(path.parent.name)))
        except StoreError as exc:
            damaged[path.parent.name] = f"{exc}; {LEFT_OUT.format(run_id=path.parent.name)}"
    return runs


def _ended_key(data: Mapping[str, Any]) -> tuple[float, str] | None:
    """How `status` orders ended runs (newest first), or None where the record is odd."""
    at, submitted, run_id = data.get("ended_at"), data.get("submitted_at"), data.get("run_id")
    if not isinstance(run_id, str) or not isinstance(submitted, int | float):
        return None
    if at is not None and not isinstance(at, int | float):
        return None
    try:
        return (float(at or submitted), run_id)
    except OverflowError:  # an integer past float: read in full, and named as damaged
        return None


def _stand_in(data: Mapping[str, Any]) -> Run | None:
    """An older ended run as the default view counts it, not shows it; None where the record
    is odd (it is then read in full, and named if it is damaged)."""
    try:
        status = Status(data["status"]) if data.get("status") else None
        return Run(
            run_id=str(data["run_id"]),
            source=str(data.get("source", "")),
            submitted_at=float(data["submitted_at"]),
            state=State.DONE,
            status=status,
            ended_at=None if data.get("ended_at") is None else float(data["ended_at"]),
        )
    except (ValueError, TypeError, KeyError, OverflowError):
        return None
