"""The stop a run's tmux pane keeps while the run's record cannot be saved (a full home).

A stop is put on record before its first signal, so that a daemon killed meanwhile does not
read the program's exit to that signal (130) as a failure. Where the home is full, that record
is held in memory only; the exit itself is then kept on the pane (the trial script's
`EXIT_OPTION`), and so is the stop: its run and trial, cause, when it began and why, as one
pane option the daemon sets (tmux keeps it in memory, past a daemon's end). The next daemon
puts a stop it finds there back on a record that has none, and the run ends as the stop
decided (a plateau's stop is `plateau`, not a failure; the hang rule's may relaunch the run).
A `ajetd stop` request and the time limit were told without it (`policy._stop_not_on_record`);
a plateau or the hang rule leaves nothing else behind. Pure text in, text out.
"""

from __future__ import annotations

import math

from ajetd.core.model import Run, StopCause, begin_stop

STOP_OPTION = "@ajetd_stop"  # a pane option, set by the daemon, read back from `list-panes`
MAX_WHY_CHARS = 500  # the note is one tmux argument; the reason is for people
CLOCK_SLACK_S = 60.0  # a stop noted "later than now": the clock was set back meanwhile


def stop_note(run: Run) -> str:
    """`<run_id> <trial> <cause> <began_at> <why>` for a run being stopped ('' for one not).
    The run and trial it is for, because tmux shows a pane a value set for its window, its
    session or the server too (`set -g`), and a pane is given to the run's next trial."""
    trial = run.trial
    if run.stop_cause is None or run.stop_began_at is None or trial is None:
        return ""
    # one line; never ending in `;`, which tmux would read as the end of its command
    why = " ".join(run.stop_reason.split())[:MAX_WHY_CHARS].rstrip("; \\")
    head = f"{run.run_id} {trial.number} {run.stop_cause.value} {run.stop_began_at!r}"
    return f"{head} {why}".rstrip()


def noted_stop(run: Run, note: str, now: float) -> Run | None:
    """`run` with the stop its pane noted (`stop_note`) for its current trial, where its
    record has none; None when the record has a stop already, or the note is another run's or
    trial's, from the future, empty or garbled (tmux's options are the user's too). The signals
    the stop had sent are not taken from the note: they go out again, by the stop's clock (a
    second SIGINT, then SIGTERM once its grace is over), so a note set just before a signal
    that was never sent cannot leave the run waiting on it."""
    trial = run.trial
    if run.stop_cause is not None or not note or trial is None:
        return None
    fields = note.split(" ", 4)
    if len(fields) < 4 or fields[:2] != [run.run_id, str(trial.number)]:
        return None
    try:
        cause = StopCause(fields[2])
        began = float(fields[3])
    except ValueError:
        return None
    if (
        not math.isfinite(began)
        or began > now + CLOCK_SLACK_S
        or began < (trial.started_at or 0.0) - 1.0
    ):
        return None
    why = fields[4] if len(fields) == 5 else ""
    return begin_stop(run, cause, began, why)
