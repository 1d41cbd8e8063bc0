"""Ending a trial and a run: the trial's end on record (when it really ended, its diagnosis),
what is left of its processes ended, the run's final metrics, then its reports (results.md,
trials.md, run.json, finish.flag last). Every record change is saved before the action that
depends on it; a result dir that refuses the reports leaves them pending, retried later."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from ajetd.adapters import diskfull, inbox, oomwatch, procs, programfiles, stagefiles, trialfiles
from ajetd.adapters.regular import NotRegularError, open_regular, read_small
from ajetd.adapters.resultdir import earlier_rejection
from ajetd.adapters.store import Home, json_text, write_all_atomic
from ajetd.adapters.tmux import MISSING_OUTPUT, Tmux
from ajetd.adapters.trialfiles import read_exit
from ajetd.adapters.trialpaths import paths
from ajetd.core import jsontext, launchshape, model, resultfiles
from ajetd.core.blueprint import parse_blueprint
from ajetd.core.errors import AjetdError, TmuxError
from ajetd.core.finding import Finding
from ajetd.core.journal import RUN_ENDED
from ajetd.core.limits import CONFIG_MAX_BYTES
from ajetd.core.model import Run
from ajetd.core.options import Options
from ajetd.core.policy import kept_truly, root_cause
from ajetd.core.resultfiles import HELD_TAIL, REPORTS_HELD
from ajetd.core.timefmt import iso
from ajetd.core.trialscript import OWN_LINE_PREFIX, exit_line
from ajetd.daemon import lostoutput
from ajetd.daemon.trials import (
    ask_log_writer,
    await_output,
    plateau_unmet,
    read_metrics_at_end,
    release,
    shows_validation,
)
from ajetd.diagnosis import killed
from ajetd.diagnosis.catalogue import BY_NAME
from ajetd.diagnosis.exitcodes import before_own_signal, with_exit_code, without_own_signals
from ajetd.diagnosis.live import diagnose_file
from ajetd.diagnosis.scan import count_lines, tail_bytes
from ajetd.diagnosis.stream import diagnose_text
from ajetd.frameworks.framework import framed
from ajetd.hosts import copyback
from ajetd.hosts.base import Fetch, read_local
from ajetd.pictures import drawing
from ajetd.views import report, words

log = logging.getLogger(__name__)


def ended_at(home: Home, run: Run, now: float, exited_at: float | None = None) -> float:
    """When the current trial really ended: the time of the exit the daemon saw (`exited_at`:
    its exit file's, or the exit line its pane kept when the disk was full, `EXIT_OPTION`),
    else the time its script wrote into its exit file (or its hang-up marker), not when the
    daemon looked, which may be much later after a pause or a restart; kept between its start
    and this machine's clock read after the file (a remote host's clock may differ). Not `now`
    alone: that is when the tick began, and a trial may exit while the tick runs, or while the
    daemon is paused in the middle of one."""
    trial = run.trial
    if trial is None or trial.started_at is None:
        return now
    p = paths(home, run, trial.number)
    at = exited_at
    if at is None:
        recorded = read_exit(p.exit)
        at = recorded[1] if recorded else None
    if at is None:
        with contextlib.suppress(OSError, ValueError, IndexError, NotRegularError):
            at = float(read_small(p.hup).split()[0])
    if at is None or math.isnan(at):
        return now
    return min(max(at, trial.started_at), max(now, time.time()))


@dataclass(frozen=True)
class TrialEnd:
    """How the loop saw a trial end: why, its exit code (None: it never exited on its own),
    its pane's process (what is left around it is ended), its diagnosis (None: read from
    its log when it failed), the other trials' pane processes (pid: start time), whose
    sessions the search for leftovers need not look into (`procs.run_pids`), and whether
    this end fails the run although the program exited 0 (a stage that left no outputs);
    `exited_at`: when the program exited, as the exit the loop saw says (its exit file, or its
    pane's exit line on a full disk; None: read from the exit file, or not known);
    `elsewhere`: the place it ran when not this machine (`Host.name`), whose kernel's OOM
    kills ajetd cannot see (`weigh_kills`)."""

    reason: str
    exit_code: int | None
    pane_pid: int | None = None
    findings: tuple[Finding, ...] | None = None
    others: Mapping[int, int] = field(default_factory=dict)
    failed: bool = False
    exited_at: float | None = None
    elsewhere: str = ""


def end_trial(home: Home, run: Run, end: TrialEnd, now: float, reap: bool = True) -> Run:
    """Record the last trial's end (with its diagnosis: none read from the echo of a signal
    ajetd sent it) and, unless `reap` is False (the caller does it once the end is on record),
    end what is left of its processes."""
    reason, exit_code, findings = end.reason, end.exit_code, end.findings
    trial = run.trial
    if trial is not None and trial.started_at is not None and trial.ended_at is None:
        ended = ended_at(home, run, now, end.exited_at)
        problem = ""
        if exit_code != 0:
            if findings is None:
                log_file = paths(home, run, trial.number).log
                found = tuple(diagnose_file(log_file))
                findings = failure_findings(found, exit_code, log_file, trial.number, run.kind)
                findings = without_own_signals(findings, run.signals_sent)  # then weighed
                findings = weigh_kills(run, findings, exit_code, ended, end.elsewhere)
            findings = without_own_signals(findings, run.signals_sent)  # ajetd's own stop
            if run.signals_sent and run.signal_log_bytes is not None:
                log_file = paths(home, run, trial.number).log
                upto = _lines_before(log_file, run.signal_log_bytes)
                findings = before_own_signal(findings, upto)
            root = findings[0] if findings else None
            problem = reason
            if root is not None and root_cause(root) not in reason:  # said once (walk 86, F3)
                problem = f"{reason}; {root.named()}: {root.evidence}"
        elif end.failed:  # its program exited 0, yet the run fails here: the reason says why
            problem = reason
        elif findings:  # exited 0, its output showing a fatal finding (`_hidden_crash`)
            problem = f"exited with code 0, yet its output shows {root_cause(findings[0])}"
        clean = exit_code == 0 and not end.failed and run.stop_cause is None
        run = model.trial_ended(run, exit_code, ended, problem, findings or (), clean)
        log_file = paths(home, run, trial.number).log
        if programfiles.log_overwritten(log_file):
            said = programfiles.log_overwritten_note(log_file, trial.number)
            log.warning("run %s: %s", run.run_id, said)
            home.append_event(run.run_id, now, said)
            run = model.warn(run, said)
        lost = lost_output(log_file, trial.number)
        if lost is not None:
            log.warning("run %s: %s", run.run_id, lost)
            home.append_event(run.run_id, now, lost)
            run = model.warn(run, lost)
    if trial is not None and reap:
        reap_leftovers(home, run, end, now)
    return run


def lost_output(log_file: Path, number: int) -> str | None:
    """What a full disk took from trial `number`'s log, said where its disk is full as the
    trial ends and the log lacks ajetd's `exited with code` line, the trial's last: its
    writer could write nothing more, so the program's last lines are not in it yet. What
    its writer still holds comes once there is room (after the run's reports: a held
    writer, `lostoutput.hold_writer`), and `lostoutput.note_drained` says how much did;
    what it dropped meanwhile is lost (walk97 F3: this said all of it was). The
    log's size and last write say from where on (the log just ended, mid-flood, and nothing
    said so: walk88 F8). A full disk alone is no loss: a log that grows within the space it
    already holds (a few lines after the disk filled) keeps every line, the exit line with
    them, and was said to have lost its end (walk 90 F8)."""
    free = diskfull.free_bytes(log_file.parent)
    if free is None or free >= diskfull.FULL_BELOW_BYTES:
        return None
    if exit_line(number) in tail_bytes(log_file, 4096):  # once it is there, so is the rest
        return None
    try:
        info = log_file.stat()
        since = f"after byte {info.st_size} (its last write at {iso(info.st_mtime)})"
    except OSError:
        since = "(none of it was written)"
    return (
        f"trial {number}'s output {since} is missing from {log_file} as the trial ended: its "
        f"disk had {diskfull.free_space(log_file.parent)} free; what its log writer still holds "
        "of the program's last output is written there once there is room, after the run's "
        "reports (where the run ends here), and what it dropped while the disk was full is "
        f"lost, each gap marked by a line `{MISSING_OUTPUT}`"
    )


def _lines_before(log_file: Path, size: int) -> int | None:
    """The lines the first `size` bytes of a log hold, one still arriving counted (it began
    before); None where the log cannot be read."""
    try:
        lines = count_lines(str(log_file), size)
        with open(log_file, "rb") as handle:
            handle.seek(max(0, size - 1))
            last = handle.read(1) if size else b"\n"
    except OSError:
        return None
    return lines + (last != b"\n")


def failure_findings(
    found: tuple[Finding, ...], exit_code: int | None, log_file: Path, number: int, kind: str
) -> tuple[Finding, ...]:
    """A failed trial's findings from its output (`found`), as every end reads them: weighed
    by its exit code (`exitcodes.with_exit_code`), its log's disk said full where it is, and
    said as advice for a run of its `kind` (`framework.framed`)."""
    return framed(with_full_disk(with_exit_code(found, exit_code), log_file, number), kind)


def weigh_kills(
    run: Run, found: tuple[Finding, ...], exit_code: int | None, ended: float, elsewhere: str
) -> tuple[Finding, ...]:
    """A failed trial's findings with a SIGKILL weighed against what the kernel recorded of
    OOM kills while it ran (`diagnosis.killed`): never an OOM stated on a `Killed` alone.
    The kernel's record is read only where a finding or the exit needs it (an exit by
    SIGKILL, a finding that only echoes one), and never for a SIGKILL ajetd sent itself (its
    stop's: the echo is no finding at all, `without_own_signals`). `ended`: when it ended;
    `elsewhere`: the place it ran when not here (nothing of its kernel is read)."""
    trial = run.trial
    if trial is None or trial.started_at is None or "KILL" in run.signals_sent:
        return found
    if not killed.needs_look(found, exit_code):
        return found
    look = oomwatch.look(
        trial.memory_cgroup, trial.memory_cgroup_dir, trial.oom_kills_at_start, elsewhere
    )
    window = killed.Trial(trial.started_at, ended)
    return killed.weigh(found, exit_code, look, window)


def with_full_disk(found: tuple[Finding, ...], log_file: Path, number: int) -> tuple[Finding, ...]:
    """A failed trial's findings, with its log's disk said to be full where it is and they
    do not say so (the program may have filled its own result dir: its own words about it may
    never have reached the log)."""
    free = diskfull.free_bytes(log_file.parent)
    if (
        free is None
        or free >= diskfull.FULL_BELOW_BYTES
        or any(f.kind == "disk_full" for f in found)
    ):
        return found
    kind = BY_NAME["disk_full"]
    evidence = (
        f"{log_file.parent} has {diskfull.free_space(log_file.parent)} free as trial {number} "
        "ends: what it printed last may be missing from its log"
    )
    full = Finding(kind.name, kind.severity.value, 0, evidence, kind.explanation, kind.fix)
    return (full, *found)


LEFTOVERS_SHOWN = 3  # leftover processes named in the journal (then a count of the rest)


def reap_leftovers(home: Home, run: Run, end: TrialEnd, now: float) -> None:
    """End what is left of the run's processes; only those started since it began are
    looked at (`procs.run_pids`). Said in the run's journal when there were any: a program
    its command put in the background was ended with them, and a run that 'succeeded' at
    once must say so (walk 30)."""
    ended = procs.reap_run(run.run_id, end.pane_pid, run.started_at, others=end.others)
    if ended:
        home.append_event(run.run_id, now, leftovers_said(ended))


def leftovers_said(ended: list[tuple[int, str]]) -> str:
    """The journal's line for the leftover processes ended after a trial: how many, and
    the command lines of the first few."""
    shown = "; ".join(f"{line} (pid {pid})" for pid, line in ended[:LEFTOVERS_SHOWN])
    more = f"; and {len(ended) - LEFTOVERS_SHOWN} more" if len(ended) > LEFTOVERS_SHOWN else ""
    return f"ended {len(ended)} leftover process(es) its trial left running: {shown}{more}"


TAIL_CHECKED = 8192  # bytes of a successful trial's log read for a traceback at its end


def _hidden_crash(
    home: Home, run: Run, outcome: model.Status, exit_code: int | None
) -> tuple[Run, tuple[Finding, ...]]:
    """A success whose output ends in a Python traceback (`launchshape.ended_in_traceback`)
    keeps its status, which is the command's, with a warning that says so: its exit status
    was likely not its program's. Its last output first (bounded), then 8 KiB of its log.
    So does one whose output shows a fatal or science finding anywhere (read live, or in that
    tail: a CUDA OOM before a wrapper exits 0, a train+eval script without `set -e`, a swarm
    client): the status is still the command's, ajetd cannot tell a failure the program
    recovered from, but the warning and the trial's findings say what its output shows
    (walk 89, F6: `what went wrong: nothing (exit 0)` beside a CUDA OOM at step 5 of 10)."""
    trial = run.trial
    if outcome is not model.Status.SUCCEEDED or exit_code != 0 or trial is None:
        return run, ()
    log_file = paths(home, run, trial.number).log
    await_output(log_file, trial.number)
    tail = tail_bytes(log_file, TAIL_CHECKED).decode("utf-8", errors="replace")
    line = launchshape.ended_in_traceback(tail, OWN_LINE_PREFIX)
    if line is not None:
        run = model.warn(
            run,
            f"trial {trial.number} exited with code 0, but its output ends in a Python "
            f"traceback ({line}): the exit status is likely not the program's (a pipe in a "
            "script without `set -o pipefail`, `|| true`, a wrapper that swallows it)",
        )
    found = _fatal_shown((*trial.live_findings, *diagnose_text(tail)))
    if found:
        run = model.warn(
            run,
            f"trial {trial.number} exited with code 0, but its output shows "
            f"{root_cause(found[0])}: it may not have finished its work; check its last "
            "records and its log before using its results",
        )
    return run, found


FATAL_SHOWN = ("fatal", "science")  # what no program goes on after as if nothing happened


def _fatal_shown(findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
    """The fatal and science findings among `findings`, each kind once (the first seen)."""
    seen: dict[str, Finding] = {}
    for found in findings:
        if found.severity in FATAL_SHOWN and found.kind not in seen:
            seen[found.kind] = found
    return tuple(seen.values())


def finish_run(
    home: Home,
    run: Run,
    outcome: model.Status,
    end: TrialEnd,
    now: float,
    fetch: Fetch = read_local,
    options: Options | None = None,
    finals: drawing.FinalDrawings | None = None,
    named: Callable[[], Callable[[Run], Run]] | None = None,
) -> Run:
    """End the run: its last trial and final metrics (`fetch`: how the val file is read) are
    recorded first, as soon as the exit is seen; then leftover processes are ended and the
    reports written (`finish.flag` last). `ended_at` is the trial's own exit time where its
    exit file holds one; `options`: the run's `[ajetd]` options as the daemon holds them
    (None: read from its stored blueprint for the reports); with them, a plateau metric no
    final record holds is warned (`trials.plateau_unmet`). `named`: asks what the run's session
    is called now and gives how to apply the answer; asked once the end is on record (a tmux
    call the record does not wait for), applied after the leftover search it overlaps."""
    open_trial = run.trial is not None and run.trial.ended_at is None
    exit_code = end.exit_code
    log_of = trialfiles.output_logs(home, run)
    run = read_metrics_at_end(run, fetch, log_of=log_of)  # on to the file's end, bounded
    run = run if options is None else plateau_unmet(run, options)
    expected = bool(run.val_path) or run.kind == "nemo_rl"  # its program writes records
    shown = False
    if not run.history and run.trial is not None:  # none read: was one printed? Its output
        if exit_code is not None:  # whole first (an instant exit's may not be in its log yet)
            await_output(paths(home, run, run.trial.number).log, run.trial.number)
        shown = shows_validation(run, log_of)
    run, shown_fatal = _hidden_crash(home, run, outcome, exit_code)
    unread = run.val_read.unread if run.kind != "nemo_rl" else 0
    # (a reason without `data kept` is left as it is)
    reason = kept_truly(end.reason, len(run.history), expected, shown, unread)
    end = replace(end, reason=reason, findings=shown_fatal or end.findings)
    run = end_trial(home, run, end, now, reap=False)
    ended = now
    if open_trial:
        run = _note_next(run, outcome, reason)
        ended = run.trial.ended_at if run.trial and run.trial.ended_at else now
    run = replace(model.finish(run, outcome, reason, exit_code, ended), reports_pending=True)
    run = note_swapped(home, run, now)  # after `finish`, which clears a live run's attention
    # The end on record first; the pictures (a child, 1-2 s) after: `reports_pending`
    # says the reports are still to come (`ajetd wait` waits for them; a restart writes them).
    home.append_event(run.run_id, now, f"{RUN_ENDED}{outcome.value}: {reason}")
    log.info("run %s: ended %s: %s", run.run_id, outcome.value, reason)
    # renamed in without its own wait for the disk where the file system orders the rename
    # after the data (`fsorder`): the reports' save after finish.flag syncs it
    saved = home.save_run(run, ordered=True)
    apply_name = None if named is None else named()
    seen = False  # its exit line in its log: its script may end (`trials.release_script`)
    if run.trial is not None:
        reap_leftovers(home, run, end, now)
        if exit_code is not None:  # its last output in the log before the reports quote it
            seen = await_output(paths(home, run, run.trial.number).log, run.trial.number)
    moved = run if apply_name is None else apply_name(run)
    moved = note_moves(home, moved, now)  # the writer noted its folder gone at the trial's end
    if moved is not run:
        run = moved
        saved = home.save_run(run)
    if saved and not copyback.due(home.run_dir(run.run_id)):  # reports only once the record
        # says the same (a full home waits) and what a remote run left there has come back (a
        # child copies it: `Housekeep.copy_back`); the pictures are drawn before them:
        # finish.flag comes last, the pictures beside it. With `finals` (the daemon's), a
        # run with pictures to draw gets them from a child the loop does not wait for, and
        # its reports come once it ended (`Housekeep.retry_reports`); the program's own files
        # at those names are moved aside first (a folder that refuses: again with the reports)
        with contextlib.suppress(OSError):
            run = program_files_aside(home, run, now)
        if finals is not None and drawing.final_due(home, run):
            finals.start(run.run_id, options)
        else:
            drawn = ([], "") if finals is not None else drawing.draw_final(home, run)
            run = publish_reports(home, run, now, drawn, options)
    if seen and run.trial is not None:  # after finish.flag: its pane's end costs tmux work
        release(paths(home, run, run.trial.number))
    # Its session is closed by the daemon's housekeeping, later in the same tick when
    # keep_session is 0: once, with the record saying so, and after finish.flag.
    return run


def moved_warning(number: int, at: float, where: str, spare: Path, what: str = "folder") -> str:
    """What a vanished log folder, or log file (`what`: `file`, its folder stood), did to
    trial `number`'s output, for the timeline and the run's warnings."""
    if what == "file":
        head = (
            f"trial {number}'s log file vanished at {iso(at)} "
            "(removed or moved; its folder stood): "
        )
    else:
        head = (
            f"trial {number}'s log folder vanished at {iso(at)} "
            "(the result dir removed, moved or replaced): "
        )
    if where == "log":
        made = "made again" if what == "file" else "made again (owner-only)"
        return head + f"{made}; the log goes on there, its earlier text copied"
    return head + (
        "not made again (something else is in its place, or its parent is gone); "
        f"the output goes on in {spare}, the reports beside it"
    )


def note_moves(home: Home, run: Run, now: float, number: int | None = None) -> Run:
    """Each time a trial's log folder (its result dir removed, moved or replaced), or its log file
    alone, vanished and where its writer went on (`trialfiles.moves`): said in the journal and the
    run's warnings, once each; `number`: that trial's only (a live one's), else every trial's (at
    the run's end, before its reports: a failure right after the folder vanished ends the run before
    any tick noticed, and the reports went elsewhere with nothing saying so)."""
    said = []
    for trial in run.trials:
        if number is not None and trial.number != number:
            continue
        spare = trialfiles.spare_log(home, run.run_id, trial.number)
        for at, where, what in trialfiles.moves(home, run.run_id, trial.number):
            text = moved_warning(trial.number, at, where, spare, what)
            if text not in run.warnings and text not in said:
                said.append(text)
                home.append_event(run.run_id, now, text)
                log.warning("run %s: %s", run.run_id, text)
    return model.warn(run, *said) if said else run


REPORTS_FIRST = "the result dir was full when the reports were due; they were written first"


def note_swapped(home: Home, run: Run, now: float) -> Run:
    """Where the run's result dir leads elsewhere than it did at admission (a link put in its
    path since: `trialfiles.swapped`), its writers write nothing through it (the reports and
    pictures go to the run's own folder, `report_dir`; the log's writer to the spare): said
    once in the journal and the warnings, and the run needs attention (an ended one too:
    its result dir holds no finish.flag, so `ajetd wait` says so with exit 2)."""
    said = trialfiles.swapped(run)
    if said is None:
        return run
    said = f"{said}; what ajetd writes for the run is in {home.run_dir(run.run_id)}"
    if said not in run.warnings:
        log.warning("run %s: %s", run.run_id, said)
        home.append_event(run.run_id, now, f"attention: {said}")
        run = model.warn(run, said)
        ask_log_writer(home, run)  # its log may still reach the old folder through the link
    return run if run.attention else model.set_attention(run, said)


def publish_reports(
    home: Home,
    run: Run,
    now: float,
    drawn: tuple[list[str], str] | None = None,
    options: Options | None = None,
) -> Run:
    """Write an ended run's reports and finish.flag (its record is on disk already). Where the
    result dir refuses them, the run keeps its true status, gets `attention` naming the folder
    and keeps `reports_pending`, so the daemon writes them once it can (also after a restart);
    then the attention clears and the journal says so. `options`: as `write_reports` takes
    them."""
    folder = trialfiles.report_dir(home, run)
    troubles = home.held.troubles if home.held is not None else None
    held = run.attention is not None and run.attention.startswith(REPORTS_HELD)
    done = replace(run, reports_pending=False, attention=None if held else run.attention)
    done = replace(done, reports_dir=str(folder))
    if held and drawn is None:  # the reports first: a picture drawn again took the room a
        # freed folder had for them (46 KB of curves), and they waited for more
        drawn = ([], REPORTS_FIRST)
    try:
        run = program_files_aside(home, run, now)  # none was: a finish.flag there is ajetd's
        done = replace(done, warnings=run.warnings)
        if _flag_written(folder, done):  # a daemon killed after finish.flag, before this
            home.append_event(run.run_id, now, "finish.flag was written before a restart")
        else:
            done = write_reports(home, done, drawn, options)
    except OSError as exc:
        lostoutput.hold_writer(home, run)  # the room a user frees: the reports' first
        if troubles is not None:
            troubles.hit(folder, exc, f"the result dir of run {run.run_id}")
        why = f"{REPORTS_HELD} {folder}: {exc.strerror or exc}{HELD_TAIL}"
        if run.attention != why:
            log.error("run %s: %s", run.run_id, why)
            home.append_event(run.run_id, now, f"attention: {why}")
            run = model.set_attention(run, why)
            home.save_run(run)
        return run
    if troubles is not None:
        troubles.clear(folder)
    if held:
        home.append_event(
            run.run_id, now, f"reports written to {folder} after all; attention cleared"
        )
    done = lostoutput.release_writer(home, done, now)  # a held log writer goes on
    home.save_run(done)
    return done


def reports_overdue(home: Home, run: Run, now: float, grace_s: float) -> bool:
    """An ended run's reports have waited `grace_s` since its end for a result dir that
    refuses them (full): a bounded wait, where they waited for ever, `ajetd wait` exiting 2
    at each call and every `status` showing the folder's DISK FULL line (walk88 F9)."""
    held = run.attention is not None and run.attention.startswith(REPORTS_HELD)
    aside = run.reports_dir == str(home.run_dir(run.run_id))
    return held and not aside and run.ended_at is not None and now - run.ended_at >= grace_s


def reports_aside(home: Home, run: Run, now: float, grace_s: float) -> Run:
    """The run with its reports bound for its folder in the home (`trialfiles.report_dir`
    reads `reports_dir`), said in its journal and warnings: results.md, trials.md, run.json
    and finish.flag are written there by the next `publish_reports`, which clears the
    attention; `reports_dir` (status, run.json) names where they are."""
    folder = home.run_dir(run.run_id)
    said = (
        f"its result dir {run.result_dir} stayed full for {grace_s:g} s after the run ended: "
        f"results.md, trials.md and finish.flag are written to {folder} instead"
    )
    log.warning("run %s: %s", run.run_id, said)
    home.append_event(run.run_id, now, said)
    return replace(model.warn(run, said), reports_dir=str(folder))


def program_files_aside(home: Home, run: Run, now: float) -> Run:
    """The program's own files at the names of ajetd's reports and pictures in the folder the
    reports go to, moved aside before ajetd writes there (`programfiles`, once per run): said
    in the journal and the run's warnings (status, results.md), its record saved. Raises
    OSError where the folder refuses."""
    folder = trialfiles.report_dir(home, run)
    if folder == home.run_dir(run.run_id):
        return run  # ajetd's own folder: the program never wrote there
    moved = programfiles.set_aside(home, run.run_id, folder)
    if not moved:
        return run
    said = programfiles.moved_note(folder, moved)
    log.warning("run %s: %s", run.run_id, said)
    home.append_event(run.run_id, now, said)
    run = model.warn(run, said)
    home.save_run(run)
    return run


def _flag_written(folder: Path, run: Run) -> bool:
    """The result dir's finish.flag already says what this record says: the reports were
    written in full (the flag comes last) by a daemon that died before saving that they were.
    Not written twice: a reader that saw the flag sees no second one."""
    try:
        written = jsontext.loads(read_small(folder / "finish.flag"))
    except (OSError, ValueError, NotRegularError):
        return False
    expected = json.loads(json_text(report.finish_flag(run)))
    if isinstance(written, dict) and "best" not in written:  # an ajetd before `best` wrote it
        expected.pop("best", None)
    return bool(written == expected)


def _journal(home: Home, run: Run) -> list[tuple[float, str]]:
    """The run's journal for its report; where it cannot be read, one line that says why."""
    try:
        return home.events(run.run_id)
    except ValueError as exc:
        at = run.ended_at or time.time()
        return [(at, f"its journal {home.run_dir(run.run_id) / 'events.jsonl'} not read: {exc}")]


def _note_next(run: Run, outcome: model.Status, reason: str) -> Run:
    trial = run.trial
    assert trial is not None
    updated = replace(trial, next_step=words.ending_note(outcome, reason))
    return replace(run, trials=(*run.trials[:-1], updated))


def close_session(tmux: Tmux, run: Run) -> subprocess.Popen[bytes] | None:
    """Close an ended run's session without waiting for tmux (the caller reaps the client)."""
    if run.session:
        with contextlib.suppress(TmuxError):
            return tmux.kill_session_soon(run.session)
    return None


def write_reports(
    home: Home,
    run: Run,
    drawn: tuple[list[str], str] | None = None,
    options: Options | None = None,
) -> Run:
    """results.md, trials.md, then finish.flag last and atomically (DESIGN §3); `drawn`: the
    pictures already drawn (drawing.draw_final), else they are drawn here. `options`: the
    run's `[ajetd]` options (its allowed fixes are named), None: read from its stored
    blueprint (the daemon's end path has them: the parse is not on its way to finish.flag).
    Returns the run as written: with what its pipeline's stages left (`stage_results`), which
    run.json holds and the record is to hold (status's `stages`)."""
    result_dir = trialfiles.report_dir(home, run)
    texts = inbox.blueprint_texts(home, run)
    blueprint_text = texts.edited or texts.submitted  # what the options were read from
    trial_tails, trial_logs = {}, {}
    for trial in run.trials:
        p = paths(home, run, trial.number)
        trial_tails[trial.number] = trialfiles.last_lines(home, run.run_id, trial.number, p.log, 20)
        if p.log == p.spare:  # its log folder vanished: the output went on in ajetd's folder
            trial_logs[trial.number] = str(p.spare)
    last = run.trial
    if options is None:
        try:
            options = parse_blueprint(blueprint_text, admitted=True).options
        except AjetdError:
            options = Options()
    allowed = tuple(options.allow_fixes)
    pictures, plot_problem = drawn if drawn is not None else drawing.draw_final(home, run)
    val_copy, val_not_copied = _val_records(run, result_dir)
    stage_files, stage_results = stagefiles.gather(run, options, result_dir, trial_tails)
    if stage_results:
        run = replace(run, stage_results=stage_results)
    ctx = report.ReportContext(
        host=socket.gethostname(),
        blueprint_text=texts.submitted,
        blueprint_edited=texts.edited or "",
        blueprint_edited_sha256=texts.edited_sha256,
        blueprint_kept=texts.kept,
        events=_journal(home, run),
        journal=str(home.run_dir(run.run_id) / "events.jsonl"),
        log_tail=(
            trialfiles.last_lines(
                home, run.run_id, last.number, paths(home, run, last.number).log, 50
            )
            if last
            else []
        ),
        trial_tails=trial_tails,
        trial_logs=trial_logs,
        allowed_fixes=allowed,
        pictures=tuple(pictures),
        plot_problem=plot_problem,
        val_copied=val_copy is not None,
        val_not_copied=val_not_copied,
        stage_results=stage_results,
    )
    result_dir.mkdir(parents=True, exist_ok=True)
    for path, _ in stage_files:  # the stage outputs' folders (`stages/<stage>/...`)
        path.parent.mkdir(parents=True, exist_ok=True)
    files: list[tuple[Path, str | bytes, int]] = [
        (result_dir / resultfiles.RESULTS, report.render_results(run, ctx), 0o644),
        (result_dir / resultfiles.TRIALS, report.render_trials(run, ctx), 0o644),
        (result_dir / resultfiles.RUN_RECORD, json_text(report.run_record(run)), 0o644),
    ]
    config = _config_used(run.config_path) if run.config_path and not run.remote_dir else None
    if config is not None:
        files.append((result_dir / resultfiles.CONFIG_USED, config, 0o644))
    # finish.flag last, in the same wait for the disk: every file is synced before the first
    # is renamed into place, and the flag is renamed once the others' renames are on disk (a
    # failure on the way leaves it unwritten, the reports pending); one wait for the files'
    # data instead of two on the exit path
    if val_copy is not None:
        files.append((result_dir / resultfiles.VAL_COPY, val_copy, 0o644))
    files += [(path, data, 0o644) for path, data in stage_files]
    files.append((result_dir / resultfiles.FINISH_FLAG, json_text(report.finish_flag(run)), 0o644))
    write_all_atomic(files)
    return run


VAL_COPY_MAX_BYTES = 16 << 20  # a run's part of its val file copied beside the reports


def _val_records(run: Run, result_dir: Path) -> tuple[bytes | None, str]:
    """This run's part of its val file (from where its records began, `val_offset`), to be
    copied beside the reports as `val_records.md`: the seed asks for a result dir as
    complete as possible, and AgentJet's val file stays in the codebase, shared with later
    runs (walk 89). None, with why where it says something, where the file is there
    already (ajetd chose it, or anything else wrote that name: never overwritten), remote,
    gone, not a regular file, larger than VAL_COPY_MAX_BYTES, or shorter than the offset."""
    if not run.val_path or run.remote_dir:
        return None, ""
    target = result_dir / resultfiles.VAL_COPY
    if os.path.lexists(target):
        return None, ""
    try:
        with open_regular(Path(run.val_path)) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < run.val_offset:
                return None, "not copied: the file is shorter than where this run's records began"
            # to where ajetd read this run's records at its end (a later run's, appended to
            # a shared file before these reports were written, are not this run's)
            read_to = run.val_read.pos
            end = size if read_to is None or not run.val_offset <= read_to <= size else read_to
            if end - run.val_offset > VAL_COPY_MAX_BYTES:
                return None, f"not copied: over {VAL_COPY_MAX_BYTES >> 20} MiB"
            handle.seek(run.val_offset)
            data = handle.read(end - run.val_offset)
    except FileNotFoundError:  # never written: the reports say so where it matters
        return None, ""
    except (OSError, NotRegularError):
        return None, "not copied: it could not be read at the end"
    return (data, "") if data else (None, "")


def _config_used(path: str) -> bytes | None:
    """The config the last trial ran, for `config-used.yaml`; None where it is gone, too
    large, or no longer a regular file (a FIFO swapped in would hold the reports, and the
    loop, for ever)."""
    try:
        with open_regular(Path(path)) as handle:
            data = handle.read(CONFIG_MAX_BYTES + 1)
    except (OSError, NotRegularError):
        return None
    return data if len(data) <= CONFIG_MAX_BYTES else None


def rejection_aside(result_dir: Path) -> tuple[str, Path] | None:
    """An earlier run's rejection report in `result_dir` (what `write_reports` wrote for it,
    finish.flag last): that run's id and the folder it is to be moved into,
    `rejected-<run_id>/` of the same dir; None where there is none."""
    run_id = earlier_rejection(result_dir)
    return None if run_id is None else (run_id, result_dir / f"rejected-{run_id}")


def move_rejection_aside(result_dir: Path, target: Path) -> None:
    """Move the rejection report in `result_dir` into `target` (`rejection_aside`)."""
    target.mkdir(exist_ok=True)
    for name in resultfiles.REPORTS:
        with contextlib.suppress(FileNotFoundError):
            (result_dir / name).rename(target / name)
