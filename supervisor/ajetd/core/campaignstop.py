"""What a campaign that `ajetd campaign stop` ended says of its end: who stopped it and when,
never a stop rule's words. Pure; no YAML, so `ajetd status` (its campaign lines) imports it.

Its progress went on saying `stop condition not yet met: 1/3 attempted` once it was stopped
(or `needs a decision` where it had waited for one): the rules no longer decide anything.
"""

from __future__ import annotations

from ajetd.core.timefmt import iso

STOPPED_BY = "stopped by `ajetd campaign stop`"


def stopped_by(asked_at: float | None, ended_at: float | None) -> str:
    """`stopped by `ajetd campaign stop` at 2026-12-03T07:40:00Z`, as a run's stop names
    `ajetd stop`: when the daemon took the stop; for a record kept from before that time was,
    when the campaign ended; else no time."""
    at = asked_at if asked_at is not None else ended_at
    return STOPPED_BY + (f" at {iso(at)}" if at is not None else "")


def shown_progress(status: str, progress: str, reason: str) -> str:
    """A campaign's stored `progress` as the views show it: one stopped before its progress
    said so (its record still says `stop condition not yet met`) shows its reason."""
    if status == "stopped" and not progress.startswith(STOPPED_BY):
        return reason if reason.startswith(STOPPED_BY) else STOPPED_BY
    return progress
