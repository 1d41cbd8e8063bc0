"""The stop a run's tmux pane keeps while the run's record cannot be saved (a full home).

A stop is put on record before its first signal, so that a daemon killed meanwhile does not
read the program's exit to that signal (130) as a failure. Where the home is full, that record
is held in memory only; the exit itself is then kept on the pane (the trial script's
`EXIT_OPTION`), and so is the stop: its cause, when it began, the signals sent and why, as one
pane option the daemon sets (tmux keeps it in memory, past a daemon's end). The next daemon
puts a stop it finds there back on a record that has none, and the run ends as the stop
decided (a plateau's stop is `plateau`, not a failure; the hang rule's may relaunch the run).
A `ajetd stop` request and the time limit were told without it (`policy._stop_not_on_record`);
a plateau or the hang rule leaves nothing else behind. Pure text in, text out.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ajetd.core.model import Run, Signal, StopCause, begin_stop

STOP_OPTION = "@ajetd_stop"  # a pane option, set by the daemon, read back from `list-panes`
_SIGNALS = frozenset(s.value for s in Signal)
MAX_WHY_CHARS = 500  # the note is one tmux argument; the reason is for people


def stop_note(run: Run) -> str:
    """`<cause> <began_at> <signals,...|-> <why>` for a run being stopped ('' for one not)."""
    if run.stop_cause is None or run.stop_began_at is None:
        return ""
    signals = ",".join(run.signals_sent) or "-"
    # one line; never ending in `;`, which tmux would read as the end of its command
    why = " ".join(run.stop_reason.split())[:MAX_WHY_CHARS].rstrip("; \\")
    return f"{run.stop_cause.value} {run.stop_began_at!r} {signals} {why}".rstrip()


def noted_stop(run: Run, note: str) -> Run | None:
    """`run` with the stop its pane noted (`stop_note`), where its record has none; None when
    the record has a stop already or the note is empty or garbled (tmux's is the user's too)."""
    if run.stop_cause is not None or not note:
        return None
    fields = note.split(" ", 3)
    if len(fields) < 3:
        return None
    cause_text, began_text, signals_text = fields[:3]
    try:
        cause = StopCause(cause_text)
        began = float(began_text)
    except ValueError:
        return None
    signals = tuple(s for s in signals_text.split(",") if s != "-")
    if not all(s in _SIGNALS for s in signals) or not math.isfinite(began) or abs(began) > 1e12:
        return None
    why = fields[3] if len(fields) == 4 else ""
    return replace(begin_stop(run, cause, began, why), signals_sent=signals)
