"""What a run's journal and its result dir's finish.flag say of its end, against what its record
says; pure.

A record is the daemon's working copy: saved at each change, it can be older than the run's
end (a copy put back by hand, a backup restored, a record edited). The end itself leaves two
marks that are never taken back: the journal's `run ended:` line (written before the ended
record is saved) and finish.flag (written once, last, naming the run). Where a record says the
run is live, or that its reports are still to come, while either mark says it ended, the marks
win: the run is restored as ended from them, never ended a second time (its reports, written
at its end, rewritten with the stale record's numbers, its on_finish run again) and never
brought back to life (README, "finish.flag is written once").
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from ajetd.core import model
from ajetd.core.journal import REJECTED, RUN_ENDED
from ajetd.core.model import Run, Status

RESTORED = "record restored as ended"


@dataclass(frozen=True)
class EndMark:
    """One mark of a run's end: how it ended, why, when (None: not said) and, from the flag,
    its exit code and final metrics (None: not said)."""

    status: Status
    reason: str
    at: float | None
    where: str  # which mark: "its journal", "finish.flag in DIR"
    exit_code: int | None = None
    metrics: dict[str, Any] | None = None


def journalled_end(events: Iterable[tuple[float, str]]) -> EndMark | None:
    """The first end the journal's lines `(time, text)` record (`run ended: STATUS: REASON`, or
    `rejected: REASON`), or None."""
    for at, text in events:
        if text.startswith(REJECTED):
            return EndMark(Status.REJECTED, text[len(REJECTED) :], at, "its journal")
        if text.startswith(RUN_ENDED):
            status, _, reason = text[len(RUN_ENDED) :].partition(": ")
            if status in Status._value2member_map_:
                return EndMark(Status(status), reason, at, "its journal")
    return None


def flagged_end(run_id: str, data: Any, where: str) -> EndMark | None:
    """The end a finish.flag's JSON object (`data`) records for run `run_id`, or None where it
    is not a flag (not an object, no known status) or names another run (whose result dir it
    is now: that is no mark of this run's end)."""
    if not isinstance(data, dict) or data.get("run_id") != run_id:
        return None
    status = data.get("status")
    if not isinstance(status, str) or status not in Status._value2member_map_:
        return None
    reason = data.get("reason")
    code = data.get("exit_code")
    metrics = data.get("metrics")
    return EndMark(
        Status(status),
        reason if isinstance(reason, str) else "",
        _epoch(data.get("ended_at")),
        where,
        code if isinstance(code, int) and not isinstance(code, bool) else None,
        metrics if isinstance(metrics, dict) else None,
    )


def flag_bars(run_id: str, data: Any, admitted_at: float) -> str | None:
    """Why a finish.flag in the result dir of run `run_id`, a live run whose record is lost
    (`data`: the flag's JSON, None where it is none), keeps the run from being rebuilt or
    admitted again: it names this run (its end), or is another run's that ended since this
    run was admitted, or says not when (the folder is that run's now). None for any other
    file at that name: the program's own (its completion marker, not ajetd's JSON), or an
    older run's flag copied there since (admission refuses a folder that holds one); the
    run is taken up, and that file moved aside with the program's at its end
    (`adapters.programfiles`), never read as its end."""
    if not isinstance(data, dict):
        return None
    other = data.get("run_id")
    if other == run_id:
        return "its result dir's finish.flag records its end"
    mark = flagged_end(other, data, "") if isinstance(other, str) else None
    if mark is None:
        return None
    if mark.at is not None and mark.at < admitted_at:
        return None
    return (
        f"its result dir holds run {other}'s finish.flag, which ended since this run was "
        "admitted: the folder is that run's now"
    )


def contradicted(run: Run, journal: EndMark | None, flag: EndMark | None) -> str | None:
    """Why the record `run` is not to be taken as it is: it says live, or its reports still to
    come while finish.flag records another end; None where the record agrees with them (or
    nothing says it ended). Reports still to come with only the journal's end are the end's
    own state (written once the result dir takes them), not a contradiction."""
    if run.active and (journal or flag):
        marks = " and ".join(m.where for m in (journal, flag) if m is not None)
        return f"it says {run.state.value}, yet {marks} says it ended"
    if (
        run.reports_pending
        and flag is not None
        and (flag.status, flag.reason)
        != (
            run.status,
            run.reason,
        )
    ):  # the same end there: its reports written before a restart (`publish_reports` sees it)
        return f"it says its reports are still to come, yet {flag.where} records another end"
    return None


def restored(run: Run, journal: EndMark | None, flag: EndMark | None, why: str) -> Run:
    """The record `run` restored as ended from the marks (the flag first: it holds the exit
    code and final metrics; the journal's time is the finer): no report to write, no trial
    open, no attention; the warning says what was done and why."""
    mark = flag or journal
    assert mark is not None
    at = next((m.at for m in (journal, flag) if m is not None and m.at is not None), None)
    ended = at if at is not None else run.ended_at if run.ended_at is not None else 0.0
    trials = run.trials
    last = run.trial
    if last is not None and last.started_at is not None and last.ended_at is None:
        trials = (*trials[:-1], replace(last, ended_at=max(ended, last.started_at)))
    code = flag.exit_code if flag is not None else run.exit_code
    done = model.finish(replace(run, trials=trials), mark.status, mark.reason, code, ended)
    if flag is not None and flag.metrics is not None:
        done = replace(done, metrics=flag.metrics)
    note = (
        f"{RESTORED} from {mark.where} ({mark.status.value}): its record was older than its "
        f"end ({why}); its reports stay as its end wrote them"
    )
    return replace(
        model.warn(done, note),
        reports_pending=False,
        finish_hook_due=False,  # its end fired it, or could have: never a second time
        stop_cause=None,
        stop_began_at=None,
    )


def _epoch(text: Any) -> float | None:
    """An ISO time as finish.flag writes it (`2026-11-29T14:29:17Z`), or None."""
    if not isinstance(text, str) or len(text) > 40:
        return None
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
    return at if math.isfinite(at) else None
