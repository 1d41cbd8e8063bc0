"""Output a running trial is losing, said while it runs: its log's disk is full (its writer
drops what it cannot write), or its `pipe-pane` writer ended while the program still prints
(killed: the log stops growing, the program goes on). `ending.lost_output` said the first
only at the trial's end, and nothing said the second: a live run's `warnings` showed neither,
and a log that had stopped growing read as a quiet program (session 34's gaps).

Each is said once per trial, in the run's warnings, its journal and the daemon log.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ajetd.adapters import diskfull
from ajetd.adapters.store import Home
from ajetd.adapters.tmux import Pane
from ajetd.core import model
from ajetd.core.model import Run
from ajetd.core.timefmt import iso

log = logging.getLogger(__name__)

PIPE_LOST = "stopped reaching"  # in the note that the trial's log writer ended
DISK_FULL = "is being lost"  # in the note that the trial's log's disk is full


def _where(log_file: Path) -> str:
    """`after byte 1234 (its last write at ...)`: where the log stopped."""
    try:
        info = log_file.stat()
    except OSError:
        return "(none of it was written)"
    return f"after byte {info.st_size} (its last write at {iso(info.st_mtime)})"


def pipe_lost_note(log_file: Path, number: int, pane: Pane | None, at: float) -> str | None:
    """Where the trial's pane lives and its output is piped to no writer: what it prints
    reaches no log. None where it is piped, dead, or not listed."""
    if pane is None or pane.dead or not pane.pid or pane.piped:
        return None
    return (
        f"trial {number}'s output {PIPE_LOST} {log_file} at {iso(at)} {_where(log_file)}: "
        "its tmux pipe-pane writer ended while the program runs, so what it prints since is "
        "in its pane alone (`ajetd attach`, or `tmux capture-pane`), never in the log"
    )


def disk_full_note(log_file: Path, number: int, at: float) -> str | None:
    """Where the disk of the trial's log is full as it runs: what it prints meanwhile is
    dropped there. None where there is room (or the disk cannot be asked)."""
    free = diskfull.free_bytes(log_file.parent)
    if free is None or free >= diskfull.FULL_BELOW_BYTES:
        return None
    return (
        f"trial {number}'s output {DISK_FULL} from {log_file} {_where(log_file)}: its disk "
        f"had {diskfull.free_space(log_file.parent)} free at {iso(at)}, so what the program "
        "prints meanwhile cannot be kept there; the log goes on, after a line `[ajetd] output "
        "is missing here`, once there is room"
    )


def _said(run: Run, number: int, mark: str) -> bool:
    head = f"trial {number}'s output {mark} "
    return any(w.startswith(head) for w in run.warnings)


def notice(home: Home, run: Run, log_file: Path, pane: Pane | None, at: float) -> Run:
    """The run with what its running trial is losing in its warnings (once each per trial),
    journaled and logged; the same record where nothing is lost or it was said. A trial
    ajetd began to stop is left alone (its pane and writer are ending)."""
    trial = run.trial
    if trial is None or trial.started_at is None or trial.ended_at is not None:
        return run
    if run.signals_sent or run.stop_cause is not None:
        return run
    notes = (
        None
        if _said(run, trial.number, PIPE_LOST)
        else pipe_lost_note(log_file, trial.number, pane, at),
        None if _said(run, trial.number, DISK_FULL) else disk_full_note(log_file, trial.number, at),
    )
    for said in notes:
        if said is None:
            continue
        log.warning("run %s: %s", run.run_id, said)
        home.append_event(run.run_id, at, said)
        run = model.warn(run, said)
    return run
