"""Output a running trial is losing, said while it runs: its log's disk is full (its writer
drops what it cannot write), or its `pipe-pane` writer ended while the program still prints
(killed: the log stops growing, the program goes on). `ending.lost_output` said the first
only at the trial's end, and nothing said the second: a live run's `warnings` showed neither,
and a log that had stopped growing read as a quiet program (session 34's gaps).

Each is said once per trial, in the run's warnings, its journal and the daemon log.

And at a run's end on a full result dir, who gets the room a user frees: the reports first
(`hold_writer`, `release_writer`). The ended trial's log writer still held megabytes of the
program's output in tmux; each second it started a new write, which took any room freed at
once (and dropped a piece each time the disk was still full), so results.md and finish.flag
waited for the 10-minute fallback and the disk filled again (walk97 F3). Held, the writer
starts no new write (nothing more of its backlog is dropped) until the reports are written;
then it goes on, and what it wrote after them is said when it is done (`note_drained`).
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from ajetd.adapters import diskfull
from ajetd.adapters.store import Home
from ajetd.adapters.tmux import MISSING_OUTPUT, Pane, hold_note
from ajetd.adapters.trialfiles import spare_log
from ajetd.adapters.trialpaths import paths
from ajetd.core import model
from ajetd.core.model import Run
from ajetd.core.timefmt import iso
from ajetd.core.trialscript import exit_line
from ajetd.daemon.trials import wake_log_writer
from ajetd.diagnosis.scan import tail_bytes

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


DRAINED = "its log writer went on after the reports"  # in the note `note_drained` makes
# a released writer whose log has not grown for this long with room on its disk holds nothing
# more (it starts a new write within a second of room): its log is as complete as it gets
DRAIN_QUIET_S = 10.0
GAPS_READ_BYTES = 64 << 20  # of a drained log, read for its gaps' marks (more: "at least")


def _hold(home: Home, run: Run) -> Path | None:
    """The hold file of the run's last trial's log writer (`tmux.hold_note`); None: no trial."""
    trial = run.trial
    if trial is None or trial.started_at is None:
        return None
    return Path(hold_note(str(spare_log(home, run.run_id, trial.number))))


def _drain(hold: Path) -> Path:
    """Where a released hold goes: it says from which byte the writer went on."""
    return hold.with_suffix(".drain")


def hold_writer(home: Home, run: Run) -> None:
    """The ended run's reports are refused by its result dir: its last trial's log writer
    starts no new write until they are written (`release_writer`), so the room a user frees
    goes to the reports (a few KB), not to the megabytes its writer still holds. Best effort:
    a home that cannot take the empty file leaves the writer as it was."""
    hold = _hold(home, run)
    if hold is not None and not hold.exists():
        with contextlib.suppress(OSError):
            hold.touch()


def release_writer(home: Home, run: Run, now: float) -> Run:
    """The reports are written: a held writer (`hold_writer`) goes on, asked at once, and the
    run's warnings and journal say where its log stood (the reports quote it as it was then);
    `note_drained` says later what it wrote after. The same record where none was held."""
    hold = _hold(home, run)
    if hold is None or run.trial is None or not hold.exists():
        return run
    log_file = paths(home, run, run.trial.number).log
    try:
        size = log_file.stat().st_size
    except OSError:
        size = 0
    with contextlib.suppress(OSError):
        _drain(hold).write_text(f"{size}\n")
    with contextlib.suppress(OSError):
        hold.unlink()
    wake_log_writer(home, run.run_id, run.trial.number)
    said = (
        f"the reports were written first: trial {run.trial.number}'s log writer waited at "
        f"byte {size} of {log_file} while its disk was full, and now writes what it still "
        "holds of the program's output there as room allows"
    )
    log.info("run %s: %s", run.run_id, said)
    home.append_event(run.run_id, now, said)
    return model.warn(run, said)


def _gaps(log_file: Path) -> str:
    """How many `[ajetd] output is missing here` marks the log holds (read up to
    GAPS_READ_BYTES: `at least N` past it)."""
    mark, count, read, tail = MISSING_OUTPUT.encode(), 0, 0, b""
    try:
        with open(log_file, "rb") as handle:
            while read < GAPS_READ_BYTES:
                piece = handle.read(1 << 20)
                if not piece:
                    return str(count)
                read += len(piece)
                text = tail + piece
                count += text.count(mark)
                tail = text[-(len(mark) - 1) :]  # a mark across two pieces: counted once
    except OSError:
        return "an unknown number of"
    return f"at least {count}"


def note_drained(home: Home, run: Run, now: float, closing: bool = False) -> Run:
    """A writer released after the reports (`release_writer`): once the trial's exit line is in its
    log (all the program printed came through), its log has not grown for DRAIN_QUIET_S with room on
    its disk (the rest was dropped while the disk was full), or its session is `closing` (its writer
    ends with it), the run's warnings and journal say what it wrote after the reports and what is
    lost: the log's size then and now, and the gaps a full disk left, each marked `[ajetd] output is
    missing here`. The same record while it still writes."""
    hold = _hold(home, run)
    if hold is None or run.trial is None:
        return run
    drain = _drain(hold)
    try:
        since = int(drain.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return run
    number = run.trial.number
    log_file = paths(home, run, number).log
    whole = exit_line(number) in tail_bytes(log_file, 4096)
    try:
        info = os.stat(log_file)
        size, quiet = info.st_size, now - max(info.st_mtime, drain.stat().st_mtime)
    except OSError:
        size, quiet = since, 0.0
    free = diskfull.free_bytes(log_file.parent)
    settled = quiet >= DRAIN_QUIET_S and free is not None and free >= diskfull.FULL_BELOW_BYTES
    if not (whole or closing or settled):
        return run
    gaps = _gaps(log_file)
    if whole:
        end = "its exit line last: all the program printed came through"
    elif closing:
        end = "without the program's last output: what the writer still held ended with the "
        end += "run's session"
    else:  # room, and nothing more came: the writer held nothing more
        end = f"without the program's last output, and nothing more came for {DRAIN_QUIET_S:g} s "
        end += "with room on its disk: the full disk took it"
    said = (
        f"trial {number}'s output: {DRAINED} ({since} bytes then, {size} now in {log_file}, "
        f"{end}); what the full disk took from it is {gaps} gap(s), each marked by a line "
        f"`{MISSING_OUTPUT}`"
    )
    with contextlib.suppress(OSError):
        drain.unlink()
    log.info("run %s: %s", run.run_id, said)
    home.append_event(run.run_id, now, said)
    return model.warn(run, said)


def draining(home: Home, run: Run) -> bool:
    """A writer released after the reports has yet to be said done (`note_drained`)."""
    hold = _hold(home, run)
    return hold is not None and _drain(hold).exists()
