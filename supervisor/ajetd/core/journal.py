"""What a run's journal (`runs/<id>/events.jsonl`) says of its end; pure.

Every end of a run is journalled (`daemon.ending.finish_run`, before its record is saved; a
rejection, `daemon.admission` and `daemon.admit`): where the record is damaged or gone, the
journal still tells a run that ended from one that never started, so an ended run is never
admitted again.
Loaded by every client command (`adapters.runrecords`): nothing heavy here.
"""

from __future__ import annotations

from collections.abc import Iterable

RUN_ENDED = "run ended: "  # `run ended: <status>: <reason>`
REJECTED = "rejected: "  # `rejected: <reason>`


def ended_in_journal(events: Iterable[str]) -> bool:
    """The journal's texts say the run ended (or was rejected)."""
    return any(text.startswith((RUN_ENDED, REJECTED)) for text in events)
