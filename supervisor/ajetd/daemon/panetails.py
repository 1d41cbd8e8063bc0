"""A full disk's trial end: its last lines kept from its pane, without the loop waiting.

An ended trial whose log's disk is full lost its last lines there (its writer could write
nothing more): the last 50 its pane kept are saved in the run's folder
(`trialfiles.pane_tail`), which the reports show as its last lines, where they showed the
log's cut end as if it were the program's (walk88 F8). The exit file comes before the
script's exit line: what the program printed last may not have come through tmux yet (the
script asks its log's writer first, WRITER_ANSWER_S at most, and the writer of a full disk
may be in its one-second pause). So the pane is read until that line shows, for
PANE_OUTPUT_WAIT_S at most, then the script is released (it keeps its pane open till then).

The pane is read once when the end is seen and once a pass after that (the loop wakes every
PANE_POLL_S while one waits): the loop never sleeps in it, where it waited up to 3 s for the
line in the pass that saw the end (every other run's exit, stop and inbox file waited with
it). The run's reports, and its next trial's launch in that pane, wait for its tail
(`waiting`), as they waited for that pass before.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ajetd.adapters.store import Home
from ajetd.adapters.tmux import Tmux
from ajetd.adapters.trialpaths import RunPaths
from ajetd.core.errors import TmuxError
from ajetd.core.trialscript import exit_line, trial_rows
from ajetd.daemon import trials

log = logging.getLogger(__name__)

PANE_OUTPUT_WAIT_S = 3.0  # the longest a pane is read for the script's exit line
PANE_POLL_S = 0.05  # how soon the loop looks again while a pane's exit line is awaited
TAIL_LINES = 50


@dataclass(frozen=True)
class _Awaited:
    """A trial whose pane is read for its exit line; `until`: monotonic time to give up."""

    run_id: str
    number: int
    pane_id: str
    paths: RunPaths
    tail: Path
    until: float


class PaneTails:
    """The ended trials whose pane is read for their last lines, one look a pass each."""

    def __init__(
        self, home: Home, tmux: Tmux, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self.home = home
        self.tmux = tmux
        self.monotonic = monotonic
        self.awaited: dict[tuple[str, int], _Awaited] = {}

    def keep(self, run_id: str, number: int, pane_id: str, paths: RunPaths, tail: Path) -> None:
        """Keep trial `number`'s last lines from pane `pane_id` into `tail`: read at once,
        and at the next passes (`look`) while its exit line has not shown. Once a trial: an
        end seen again reads nothing more (its pane's time is counted from the first)."""
        kept = tail.exists() or (self.home.held is not None and self.home.held.holding(tail))
        if (run_id, number) in self.awaited or kept:
            return
        until = self.monotonic() + PANE_OUTPUT_WAIT_S
        self.awaited[(run_id, number)] = _Awaited(run_id, number, pane_id, paths, tail, until)
        self._look((run_id, number))

    def look(self) -> None:
        """One look at each awaited pane: kept where its exit line shows or its time is up."""
        for key in list(self.awaited):
            self._look(key)

    def waiting(self, run_id: str) -> bool:
        """Whether a trial of `run_id` still has its pane read for its last lines."""
        return any(key[0] == run_id for key in self.awaited)

    def pending(self) -> bool:
        return bool(self.awaited)

    def _look(self, key: tuple[str, int]) -> None:
        one = self.awaited[key]
        try:
            text = trial_rows(self.tmux.history(one.pane_id), one.run_id, one.number)
        except TmuxError:
            del self.awaited[key]  # the pane is gone: the log is all there is
            return
        shown = exit_line(one.number).decode() in text
        if not shown and self.monotonic() < one.until:
            return  # looked at again next pass
        del self.awaited[key]
        if shown:
            trials.release(one.paths)
        else:
            log.info(
                "run %s: trial %d's exit line did not show in its pane within %.0f s: its "
                "last lines are kept as the pane shows them",
                one.run_id,
                one.number,
                PANE_OUTPUT_WAIT_S,
            )
        lines = text.rstrip("\n").split("\n")[-TAIL_LINES:]
        if self.home.held is not None:
            self.home.held.write(one.tail, ("\n".join(lines) + "\n").encode(), 0o600)
