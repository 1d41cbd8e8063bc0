"""A trial's exit as its script leaves it (`trial-N.exit`: `"<rc> <epoch>\\n"`), and what a
reader without the daemon makes of it. Pure; light enough for `ajetd status` and `wait`
(the trial script's writer, `core.trialscript`, is not loaded for them).

The daemon records a trial's exit once it reads that file. With no daemon running, nothing
records it: `status` showed a run whose program had long exited as `running`, as if it still
ran (and `wait` waited without a word on why). The file is the program's exit as sure as the
record would be; it is shown beside the record, never in its place: the run's `state` stays
what its record says until a daemon records the end (its relaunch rule, reports, hooks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ajetd.core.model import Run
from ajetd.core.timefmt import iso

NO_DAEMON = "the daemon is not running"


def parse_exit_file(text: str) -> tuple[int, float | None] | None:
    """`"<rc> <epoch>\\n"` as the script writes it (one `write`, straight into the file);
    None while it is incomplete (no newline yet: caught between the script's open and its
    write, or cut short by a full disk) or garbled."""
    if not text.endswith("\n"):
        return None
    return parse_exit_note(text)


def parse_exit_note(text: str) -> tuple[int, float | None] | None:
    """`"<rc> <epoch>"`, the exit line the script keeps on its pane (tmux's option `EXIT_OPTION`)
    when the exit file cannot be written: a whole value, set in one tmux call."""
    fields = text.split()
    if not fields:
        return None
    try:
        code = int(fields[0])
    except ValueError:
        return None
    if not 0 <= code <= 255:  # no exit status is another number: the file is garbled (a
        return None  # person's or a program's write), and 10**30 kept made the record unreadable
    try:
        ended = float(fields[1]) if len(fields) > 1 else None
    except ValueError:
        ended = None
    return code, ended


@dataclass(frozen=True)
class UnrecordedExit:
    """A live run's current trial whose program exited, its exit not on record: why not."""

    trial: int
    exit_code: int
    exited_at: float | None
    why: str

    def words(self) -> str:
        """`exited (code 1, 2026-12-03T07:40:00Z), not yet recorded: the daemon is not
        running`."""
        at = f", {iso(self.exited_at)}" if self.exited_at is not None else ""
        return f"exited (code {self.exit_code}{at}), not yet recorded: {self.why}"

    def to_json(self) -> dict[str, Any]:
        """`status --json`'s `unrecorded_exit`."""
        return {
            "trial": self.trial,
            "exit_code": self.exit_code,
            "exited_at": iso(self.exited_at),
            "why": self.why,
        }


def may_have_exited(run: Run) -> bool:
    """Whether the run's current trial may have an exit its record lacks: a live run whose
    trial was launched and has no exit on record. Only for these is the file read."""
    trial = run.trial
    return run.active and trial is not None and trial.exit_code is None and trial.ended_at is None


def unrecorded_exit(run: Run, exit_text: str | None, daemon_running: bool) -> UnrecordedExit | None:
    """What its current trial's exit file (`exit_text`, None: none) says that the record does
    not, where no daemon runs to record it; None where the record says all there is (a daemon
    runs: it records the exit within a moment)."""
    trial = run.trial
    if daemon_running or exit_text is None or trial is None or not may_have_exited(run):
        return None
    parsed = parse_exit_file(exit_text)
    if parsed is None:
        return None
    return UnrecordedExit(trial.number, parsed[0], parsed[1], NO_DAEMON)
