"""Carrying out one run's trials: launch a trial, observe it, finish the run.

The imperative shell around `policy`: each function gathers observations or performs actions
and returns the new record; it decides nothing itself. Every record change is saved before the
action that depends on it, so a `kill -9` between any two lines launches nothing twice.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from ajetd.adapters import oomwatch, procs, programfiles
from ajetd.adapters.environ import ENVIRON, keep_environ
from ajetd.adapters.launchsize import session_parts
from ajetd.adapters.store import Home, mark, write_atomic
from ajetd.adapters.tmux import Pane, Tmux, find_pane
from ajetd.adapters.trialfiles import LogOf, output_logs, spare_log, swapped
from ajetd.adapters.trialpaths import RunPaths, paths
from ajetd.core import model, stoprules
from ajetd.core.copyname import original_of
from ajetd.core.errors import AjetdError
from ajetd.core.limits import (
    END_READ_BYTES,
    LOG_LINE_MAX_BYTES,
    VAL_LINE_MAX_BYTES,
    VAL_RECORDS_MAX,
    VAL_TICK_BYTES,
)
from ajetd.core.lines import Cursor
from ajetd.core.model import Run, State, Trial
from ajetd.core.naming import (
    run_names,
    session_base,
    unique_session,
    window_name,
)
from ajetd.core.options import Options
from ajetd.core.runparts import NemoRead, OutRead, ValRead
from ajetd.core.shellwords import (
    SKIP_GPU_CHECK,
    killing_words,
    protect_autokill,
    runs_ajet_launcher,
)
from ajetd.core.tmuxoptions import EXITS_UNATTACHED
from ajetd.core.trialscript import (
    RELEASE,
    WRITER_ASK,
    MetricSource,
    TrialSpec,
    exit_line,
    render_trial_script,
    writer_fifos,
)
from ajetd.diagnosis.scan import TAIL_BYTES, tail_bytes
from ajetd.frameworks import ajetout, nemorl
from ajetd.frameworks.agentjet import apply_patches, get_path
from ajetd.frameworks.valresults import (
    Unread,
    latest_record,
    nonfinite_note,
    parse_val_lines,
    shown_metric,
)
from ajetd.hosts.base import Fetch, Host, LinesRead, read_lines, read_local
from ajetd.hosts.configcopy import config_flag, refused, repoint, write_copy
from ajetd.hosts.fs import Fs, Names, read_composed, read_config, read_inherited

log = logging.getLogger(__name__)
OUTPUT_WAIT_S = 0.5  # the longest wait for a trial's last output to reach its log


def await_output(log_file: Path, number: int, timeout: float = OUTPUT_WAIT_S) -> bool:
    """Wait, bounded, until trial `number`'s last line (the script's `[ajetd] trial N exited
    with code`) has come through tmux and `pipe-pane` into its log. The exit file is written
    just before that line, and an end is taken at once: without this wait a failed
    trial could be diagnosed, or its reports written, without its last output."""
    marker = exit_line(number)
    deadline = time.monotonic() + timeout
    while marker not in tail_bytes(log_file, 4096):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.0005)  # rare: one end in about fifteen finds the line not there yet
    return True


def release_script(p: RunPaths, number: int, timeout: float = OUTPUT_WAIT_S) -> bool:
    """Let trial `number`'s script end once its exit line is in the log (`await_output`):
    it keeps its pane open until then (`trialscript._held`), as tmux closes a pane whose
    process ended without reading what its pty still held. Not released where the line
    does not come (a full disk, a slow tmux): the script ends by itself a little later
    (RELEASE_WAIT_S), or with its session."""
    if not await_output(p.log, number, timeout):
        return False
    release(p)
    return True


def release(p: RunPaths) -> None:
    """Release a trial's script now (its last output seen: in its log or its pane)."""
    _wake(p.wake, RELEASE)


def await_exit(pane: Pane, timeout: float = OUTPUT_WAIT_S) -> bool:
    """Wait, bounded, until the previous trial's script has exited before its pane is given
    to the next: its exit file appears a moment before it exits, and the failed trial's
    leftovers are ended at once, the script among them; a pane respawned before it is gone
    could still get its last words (an exit note on the pane) as the next trial's."""
    began = procs.started(pane.pid) if pane.pid and not pane.dead else None
    deadline = time.monotonic() + timeout
    while began is not None and procs.started(pane.pid) == began:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.002)
    return True


LAUNCHER_MAX_BYTES = 256 * 1024  # AgentJet's ajet/launcher.py is ~9 KB


def _gpu_check_skip(host: Host, run: Run) -> str:
    """SKIP_GPU_CHECK where the command's AgentJet launcher (the codebase's
    ajet/launcher.py, as `python -m ajet.launcher` from AgentJet's folder runs it) has it and
    the command has a killing switch to drop, which would turn its check of every GPU of the
    machine on; "" else (an older launcher refuses the unknown word: its check failing is
    then `gpus_not_free`, with what to do)."""
    command = run.launch_command
    if SKIP_GPU_CHECK in command or not killing_words(command) or not runs_ajet_launcher(command):
        return ""
    launcher = f"{run.codebase_dir.rstrip('/')}/ajet/launcher.py"
    try:
        text = host.fs().read_text(launcher, LAUNCHER_MAX_BYTES)
    except (OSError, ValueError, AjetdError):  # none there, or not a file we can read
        return ""
    return SKIP_GPU_CHECK if SKIP_GPU_CHECK in text else ""


def prepare_trial(
    home: Home,
    tmux: Tmux,
    run: Run,
    options: Options,
    host: Host,
    taken: set[str],
    panes: list[Pane],
    now: float,
) -> Run:
    """Record trial N+1 with its session name and write its script (as `host` runs it);
    nothing runs yet (a file of the program's at its log's name is moved aside first).
    `panes`: the tmux server's panes as listed for this launch (a new session's name is
    unique among their sessions, and `start_trial` takes the same list: one tmux call less
    between a submit and its program's first statement)."""
    number = len(run.trials) + 1
    skip = _gpu_check_skip(host, run) if options.autokill != "allow" else ""
    command, dropped = protect_autokill(run.launch_command, skip)
    if options.autokill == "allow":
        command, dropped = run.launch_command, False
    if run.session and number > 1:
        session = run.session
    else:
        names = run_names(run.source, run.result_dir, original_of(run.config_path))
        base = session_base(run.purpose, names, run.run_id)
        session = unique_session(base, taken | {p.session for p in panes})
    shown = shown_command(run, command)
    stage = options.stages[run.stage].name if run.stage < len(options.stages) else ""
    run = model.add_trial(run, Trial(number=number, command=shown, session=session, stage=stage))
    run = replace(
        run, tmux_socket=tmux.socket_name or model.DEFAULT_TMUX, tmux_path=tmux.socket_path()
    )
    if dropped:
        words = killing_words(run.launch_command)
        shown = "--autokill" if words == ["--autokill"] else ", ".join(words)
        added = (
            f"; {skip} added, since without it AgentJet checks every GPU of the machine"
            if skip
            else ""
        )
        run = model.warn(run, f"{shown} removed (autokill: protect){added}")
    p = paths(home, run, number)
    run = _program_log_aside(home, run, p.log, now)
    home.save_run(run)
    spec = TrialSpec(
        run_id=run.run_id,
        trial=number,
        command=command,
        codebase_dir=run.codebase_dir,
        venv_dir=run.venv_dir,
        venv_exe=run.venv_exe,
        result_dir=run.result_dir,
        go_file=str(p.go),
        exit_file=str(p.exit),
        hup_file=str(p.hup),
        env=tuple(sorted(trial_env(run, options).items())),
        prefix=run.fix_prefix,
        wake_fifo=_make_fifo(p.wake),
        metrics=MetricSource(run.kind, run.metric, run.val_path or "", run.val_offset),
        log_spare=str(p.spare) if all(map(_make_fifo, writer_fifos(str(p.spare)))) else "",
    )
    run, spec = host.prepare(run, spec, p.log)
    spec = replace(spec, env_file=keep_environ(home.run_dir(run.run_id) / ENVIRON))
    write_atomic(p.script, render_trial_script(spec), 0o700)
    return run


def _program_log_aside(home: Home, run: Run, log_file: Path, now: float) -> Run:
    """The program's own file at the trial's log name moved aside before the trial's output
    goes there (`programfiles.log_aside`), said as the reports' names are (the run's
    warnings, its journal). A folder that refuses the rename is logged, and the output
    appended to that file as before: a launch never fails for it."""
    try:
        moved = programfiles.log_aside(log_file)
    except OSError as exc:
        log.warning("run %s: %s not moved aside: %s", run.run_id, log_file, exc)
        return run
    if moved is None:
        return run
    said = programfiles.log_moved_note(log_file.parent, len(run.trials), moved)
    log.warning("run %s: %s", run.run_id, said)
    home.append_event(run.run_id, now, said)
    return model.warn(run, said)


def _make_fifo(path: Path | str) -> str:
    """A FIFO of the trial's (owner-only: its wake-up, `writer_fifos`), made anew; empty
    where the file system has none (the script polls; its log's writer is not asked)."""
    path = Path(path)
    try:  # their folder (`PIPES`): owner-only, never a link put in its place
        path.parent.mkdir(mode=0o700, exist_ok=True)
        if path.parent.is_symlink() or not path.parent.is_dir():
            raise NotADirectoryError(f"{path.parent} is no folder")
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        os.mkfifo(path, 0o600)
    except OSError as exc:
        log.warning("no FIFO at %s (%s): the trial script does without", path, exc)
        return ""
    return str(path)


def ask_log_writer(home: Home, run: Run) -> None:
    """Ask the current trial's log writer to check now that its folder still leads where it
    did (`writer_fifos`): it moves the output to the spare where it does not."""
    if run.trial is not None and run.trial.ended_at is None:
        ask = writer_fifos(str(spare_log(home, run.run_id, run.trial.number)))[0]
        _wake(Path(ask), f"{WRITER_ASK}\n".encode())


def wake_log_writer(home: Home, run_id: str, number: int) -> None:
    """Ask trial `number`'s log writer to look now, whether or not its trial still runs (a
    held one, `lostoutput.release_writer`, goes on at once)."""
    ask = writer_fifos(str(spare_log(home, run_id, number)))[0]
    _wake(Path(ask), f"{WRITER_ASK}\n".encode())


def _wake(path: Path, line: bytes = b"go\n") -> None:
    """Tell a trial script waiting for its go file to look now (or a log's writer to check
    its folder: `line` its WRITER_ASK). Nobody reading yet (ENXIO) is fine: the script looks
    for the go file before it waits; a writer gone has nothing to check."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.write(fd, line)
    finally:
        os.close(fd)


def shown_command(run: Run, command: str) -> str:
    """The trial's command as it is recorded and shown (status, trials.md, results.md): with
    the fixes' environment and prefix before it, as a shell would read them
    (`NCCL_NVLS_ENABLE=0 proxychains4 -q python ...`): a relaunch's command read the same as
    the trial before it, its fix nowhere in it."""
    fixed = dict(run.fix_env)  # a key set by two fixes: its last value, as the trial gets it
    words = [f"{name}={shlex.quote(value)}" for name, value in fixed.items()]
    return " ".join([*words, *([shlex.join(run.fix_prefix)] if run.fix_prefix else []), command])


def trial_env(run: Run, options: Options) -> dict[str, str]:
    """The environment a trial gets on top of the venv's: the blueprint's, the fixes', and
    the GPUs it was placed on (indices in NVML's, i.e. PCI bus, order)."""
    env = dict(options.env)
    env.update(dict(run.fix_env))
    if run.gpu_ids is not None:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, run.gpu_ids))
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    return env


def start_trial(
    home: Home, tmux: Tmux, run: Run, now: float, host: Host, panes: list[Pane] | None = None
) -> Run:
    """Create (or find again) the trial's session, arm it, and let the program go (where
    `host` starts it elsewhere: there first; the pane then follows it). `panes`: the server's
    panes as listed just before (`prepare_trial`'s), else they are listed here."""
    trial = run.trial
    assert trial is not None
    p = paths(home, run, trial.number)
    panes = tmux.panes_or_empty() if panes is None else panes
    pane = find_pane(panes, p.script)
    if p.go.exists():  # let go before a crash: only the record was missing
        return _started(home, run, p.go.stat().st_mtime, pane.pid if pane else None)
    if trial.number > 1:  # every record of the earlier trials read: what comes is this one's
        run = read_metrics_at_end(run, host.fetch, log_of=output_logs(home, run))
        # (`Trial.first_record`)
    host.launch(run, now)
    previous = (
        find_pane(panes, paths(home, run, trial.number - 1).script) if trial.number > 1 else None
    )
    if swapped(run) is None:  # else its writer puts the output in the spare: never made
        p.log.parent.mkdir(parents=True, exist_ok=True)  # through a link put in its path
    real = run.result_real or None
    if pane is None and previous is None:  # a new session, armed in the same tmux call
        pane = tmux.new_session(*session_parts(run, p, trial.session, trial.number))
        if pane.exits_unattached and EXITS_UNATTACHED not in run.warnings:
            log.warning("run %s: %s", run.run_id, EXITS_UNATTACHED)
            run = model.warn(run, EXITS_UNATTACHED)
    else:
        if pane is None:  # a relaunch: the previous trial's pane, attached users stay
            assert previous is not None
            release_script(paths(home, run, trial.number - 1), trial.number - 1)
            await_exit(previous)
            pane = tmux.respawn(previous.pane_id, str(p.script), window_name(trial.number))
        tmux.keep_dead_pane(pane.pane_id)
        tmux.pipe_to_file(pane.pane_id, str(p.log), str(p.spare), real)
    # its memory cgroup's OOM kill counter before the program goes: a kill by SIGKILL is
    # weighed against how it rose (`diagnosis.killed`); only where the program runs here
    found = oomwatch.watch(pane.pid) if host.machine is None and pane.pid else None
    oom = (found.cgroup, found.folder, found.count) if found is not None else None
    mark(p.go)
    _wake(p.wake)
    return _started(home, run, now, pane.pid, oom)


def _started(
    home: Home, run: Run, at: float, pane_pid: int | None, oom: tuple[str, str, int] | None = None
) -> Run:
    run = model.trial_started(run, at, pane_pid, oom)
    home.save_run(run)
    trial = run.trial
    assert trial is not None
    text = f"trial {trial.number} started in tmux session {trial.session}"
    home.append_event(run.run_id, at, text)
    return run


DIVERGED = "validation: "  # the head of the warnings about the run's metric
FALLING = ": the training is getting worse?"  # the tail of the one that it keeps falling


def _metric_warning(warning: str) -> bool:
    """Whether `warning` is one `diverged_warning` keeps up to date."""
    return warning.startswith(DIVERGED) and (" in the last " in warning or FALLING in warning)


def diverged_warning(run: Run) -> Run:
    """The run with its metric's warnings kept up to date: where the metric its views lead
    with was nan or inf at its last validation (`mean_reward is nan in the last 3 validations
    (since step 4)`), and where it keeps falling (`stoprules.falling_note`); each logged as it
    first appears and gone once it no longer holds. The same record where nothing changed."""
    metric = shown_metric(list(run.history), run.metric)
    note = nonfinite_note(run.history, metric)
    fell = stoprules.falling_note(run.history, model.record_trials(run), metric)
    texts = [
        *([f"{DIVERGED}{note}: the training diverged?"] if note else []),
        *([f"{DIVERGED}{fell}{FALLING}"] if fell else []),
    ]
    kept = tuple(w for w in run.warnings if not _metric_warning(w))
    new = (*kept, *texts)
    if new == run.warnings:
        return run
    for text in texts:
        if not any(_same_kind(text, w) for w in run.warnings):  # it first appears
            log.warning("run %s: %s", run.run_id, text)
    return replace(run, warnings=new)


def _same_kind(text: str, warning: str) -> bool:
    return _metric_warning(warning) and (FALLING in text) == (FALLING in warning)


def read_metrics(
    run: Run, fetch: Fetch = read_local, budget: int | None = VAL_TICK_BYTES, *, log_of: LogOf
) -> Run:
    """`_read_metrics`, then the warning a diverged metric gets (`diverged_warning`)."""
    read = _read_metrics(run, fetch, budget, log_of=log_of)
    return read if read is run else diverged_warning(read)


def _read_metrics(
    run: Run, fetch: Fetch = read_local, budget: int | None = VAL_TICK_BYTES, *, log_of: LogOf
) -> Run:
    """Read on in this run's metrics from where the last read stopped, at most `budget` bytes
    (None: to the end, as a run's final read does); the same record if nothing is new. A
    NeMo-RL run's come from its output (`log_of`: where each trial's is, `trialfiles.
    output_logs`). An AgentJet run's come from its val file (`fetch`: here, or over SSH); while
    the file holds no record (AgentJet before 2026-03-30 writes none; a program that does not
    know the option), from its output as AgentJet and verl print them (`ajetout`). The file
    wins: its first record replaces those read from the output, which then is read no more
    (AgentJet that writes the file prints the same validations too: never counted twice)."""
    if run.kind == "nemo_rl":
        return _read_nemo(run, budget, log_of)
    if run.val_path:
        held = run.out_read.taken  # the history holds the output's records
        base = replace(run, history=(), metrics={}) if held else run
        got = _read_val_file(base, run.val_path, fetch, budget)
        if got.history:
            if held:
                log.info(
                    "run %s: val file %s holds records: they replace the %d read from its output",
                    run.run_id,
                    run.val_path,
                    len(run.history),
                )
                got = replace(got, out_read=replace(got.out_read, taken=False, block=None))
            return got
        if not held:
            run = got  # (a file cut to nothing: its history goes, as before)
        elif got is not base:  # its reading moved on, the output's records kept
            run = replace(got, history=run.history, metrics=run.metrics)
    return _read_agentjet_output(run, budget, log_of)


def _read_val_file(run: Run, path: str, fetch: Fetch, budget: int | None) -> Run:
    """Read on in this run's part of the val-results file, from where the last read stopped;
    the same record if nothing is new. A file shorter than what was read (truncated,
    replaced) is read again from its start, its records then the run's history."""
    fresh = run.val_read.pos is None  # never read in pieces: its history is read anew
    start = replace(run, history=(), metrics={}, val_read=ValRead(pos=run.val_offset))
    read = start if fresh else run
    feed = _ValFeed(list(read.history), read.val_read)
    state = read.val_read
    assert state.pos is not None
    at = Cursor(state.pos, state.skipping)
    got = read_lines(fetch, path, at, budget, VAL_LINE_MAX_BYTES, feed)
    if got.shrunk:
        log.info("run %s: val file %s is shorter than was read: read again", run.run_id, path)
        offset = 0 if fresh else run.val_offset  # shorter than its part's start: all of it
        again = replace(start, val_offset=offset, val_read=ValRead())
        return _read_val_file(again, path, fetch, budget)
    block = None if feed.block is None else dict(feed.block)
    done = ValRead(
        pos=got.cursor.pos,
        skipping=got.cursor.skipping,
        block=block,
        unread=feed.unread.count,
        first_unread=feed.unread.first,
    )
    warnings = _val_notes(run, got, feed.dropped, done)
    same = not fresh or (read.history, read.metrics) == (run.history, run.metrics)
    if same and not feed.changed and done == read.val_read and warnings == run.warnings:
        return run  # nothing new (a fresh read that found nothing: fresh again next time)
    history = tuple(feed.records) if feed.changed else read.history
    metrics = dict(feed.latest) if feed.latest is not None else read.metrics
    return replace(read, history=history, metrics=metrics, val_read=done, warnings=warnings)


def read_metrics_at_end(run: Run, fetch: Fetch = read_local, *, log_of: LogOf) -> Run:
    """The read when a trial ends (the run's last, or before a relaunch): on to the end of
    its metrics' file, at most `END_READ_BYTES` (it runs in the daemon's loop: every other
    run waits for it); where more is left, a warning says how much was not read."""
    run = read_metrics(run, fetch, END_READ_BYTES, log_of=log_of)
    left = unread(run, log_of, fetch)
    if left is None:
        return run
    path, at, size = left
    number = run.trial.number if run.trial else 0
    note = (
        f"metrics: {path} read to byte {at} of {size} as trial {number} ended (at most "
        f"{END_READ_BYTES >> 20} MiB is read then): records after it not read"
    )
    log.warning("run %s: %s", run.run_id, note)
    return model.warn(run, note)


def reads_output(run: Run) -> bool:
    """Whether the run's records come from its output now: a NeMo-RL run's always, an
    AgentJet run's while its val file has given none (`_read_metrics`)."""
    return run.kind == "nemo_rl" or run.out_read.taken or not run.history


def output_offset(run: Run) -> int:
    """How far the current trial's output was read for records."""
    state = run.nemo if run.kind == "nemo_rl" else run.out_read
    trial = run.trial
    return state.offset if trial is not None and state.trial == trial.number else 0


def unread(run: Run, log_of: LogOf, fetch: Fetch = read_local) -> tuple[str, int, int] | None:
    """Where the run's metrics are read from, how far they were read and its size, if it
    holds more than was read, beyond one unfinished line (None: read to its end, or nothing
    to read)."""
    if run.kind == "nemo_rl" or run.out_read.taken:  # its output, here (pipe-pane writes
        trial = run.trial  # it; `log_of`: where)
        if trial is None or trial.started_at is None:
            return None
        path, fetch, line_max = str(log_of(trial.number)), read_local, LOG_LINE_MAX_BYTES
        at = output_offset(run)
    elif run.val_path:
        path, line_max = run.val_path, VAL_LINE_MAX_BYTES
        at = run.val_read.pos if run.val_read.pos is not None else run.val_offset
    else:
        return None
    got = fetch(path, at, 0)
    if got is None or got[0] - at <= line_max:  # (a last line without its end is not read)
        return None
    return path, at, got[0]


class _ValFeed:
    """The records of a val file as its pieces are read (`parse_val_lines`), at most
    `VAL_RECORDS_MAX` of them kept; `latest`: the last one read, kept or not."""

    def __init__(self, records: list[dict[str, Any]], state: ValRead) -> None:
        self.records = records
        self.block: dict[str, Any] | None = None
        if state.block is not None:
            self.block = dict(state.block)
            if records and records[-1] == state.block:  # it has bullets: it is the last record
                records[-1] = self.block
        self.changed = False
        self.dropped = 0
        self.latest: dict[str, Any] | None = None
        self.unread = Unread(state.unread, state.first_unread)

    def __call__(self, lines: Sequence[str]) -> None:
        self.block, changed = parse_val_lines(lines, self.records, self.block, self.unread)
        if not changed:
            return
        self.changed = True
        latest = latest_record(self.records)  # the judged benchmark's (walk89 F19)
        self.latest = None if latest is None else dict(latest)
        if len(self.records) > VAL_RECORDS_MAX:
            self.dropped += len(self.records) - VAL_RECORDS_MAX
            del self.records[VAL_RECORDS_MAX:]


_LONG_LINE = "val file {path}: a line longer than {kib} KiB (at byte {at}) is skipped"
_MANY = "val file {path}: more than {n} validation records"
_UNREAD = "val file {path}:"
_UNREAD_MARK = " line(s) written during this run look like validation records"


def unread_note(path: str, state: ValRead) -> str:
    """The warning that `state.unread` lines of the val file at `path` could not be read."""
    return (
        f"{_UNREAD.format(path=path)} {state.unread}{_UNREAD_MARK} and could not be read as "
        f"any, the first: {state.first_unread}"
    )


def _val_notes(run: Run, got: LinesRead, dropped: int, state: ValRead) -> tuple[str, ...]:
    """The run's warnings, with a note the first time its val file had a line too long to be
    a record or more records than are kept (each logged whenever it happens), and one that
    says how many of its lines could not be read as records (kept up to date, logged as
    their count grows)."""
    notes = list(run.warnings)
    path = run.val_path
    if state.unread:
        head = _UNREAD.format(path=path)
        note = unread_note(path or "", state)
        if note not in notes:
            log.warning("run %s: %s", run.run_id, note)
            kept = [n for n in notes if not (n.startswith(head) and _UNREAD_MARK in n)]
            notes = [*kept, note]
    if got.first_skipped is not None:
        kib = VAL_LINE_MAX_BYTES >> 10
        log.warning(
            "run %s: %s", run.run_id, _LONG_LINE.format(path=path, kib=kib, at=got.first_skipped)
        )
        if not any(n.startswith(f"val file {path}: a line longer") for n in notes):
            note = _LONG_LINE.format(path=path, kib=kib, at=got.first_skipped)
            notes.append(f"{note}, and any later one: no validation record is that long")
    if dropped:
        many = _MANY.format(path=path, n=VAL_RECORDS_MAX)
        log.warning("run %s: %s: %d not kept", run.run_id, many, dropped)
        if not any(n.startswith(many) for n in notes):
            notes.append(f"{many}: later ones update its latest metrics but are not kept")
    return tuple(notes)


def _read_nemo(run: Run, budget: int | None, log_of: LogOf) -> Run:
    """New validation records in a NeMo-RL run's output (`_read_output`); with a `train:`
    metric, each step's training metrics too."""
    train = run.metric.startswith(nemorl.TRAIN_PREFIX)  # judged by a `train:` metric

    def feed(state: NemoRead, text: str) -> tuple[NemoRead, list[Any]]:
        return nemorl.feed(state, text, train)

    read, state = _read_output(run, run.nemo, budget, log_of, feed, nemorl.add_records)
    if state == run.nemo and read is run:
        return run
    return replace(read, nemo=state)


def _read_agentjet_output(run: Run, budget: int | None, log_of: LogOf) -> Run:
    """New validation records in an AgentJet run's output (`ajetout`, `_read_output`): the
    run's history is then its output's (`OutRead.taken`)."""
    read, state = _read_output(run, run.out_read, budget, log_of, ajetout.feed, ajetout.add_records)
    if read.history is not run.history and read.history:
        state = replace(state, taken=True)
    if state == run.out_read and read is run:
        return run
    return replace(read, out_read=state)


_Read = TypeVar("_Read", NemoRead, OutRead)


def _read_output(
    run: Run,
    state: _Read,
    budget: int | None,
    log_of: LogOf,
    feed: Callable[[_Read, str], tuple[_Read, list[Any]]],
    join: Callable[[Sequence[Mapping[str, Any]], Sequence[Any]], tuple[dict[str, Any], ...]],
) -> tuple[Run, _Read]:
    """New validation records in the trials' output (complete lines only; `feed` finds them,
    `join` adds them to the history). Each trial's log is read to its end before the next
    trial's: a trial that ended before a deep check read its output (a crash 20 s in,
    relaunched) keeps its records, ahead of its relaunch's, and a relaunch about to start has
    the earlier records counted (`Trial.first_record`). Before this, only the current trial's
    log was read: a relaunch dropped its predecessor's unread records, and with them the run's
    best validation. The run and where reading stands (the same if nothing is new)."""
    if run.trial is None:
        return run, state
    read = run
    since = state.trial if state.trial is not None else run.trials[0].number
    for trial in run.trials:
        if trial.number < since or trial.started_at is None:
            continue
        if state.trial != trial.number:
            state = replace(state, trial=trial.number, offset=0, block=None, skipping=False)
        read, state, whole = _read_log(read, state, log_of(trial.number), budget, feed, join)
        if not whole:  # the budget ran out in this log: the rest, and the next's, next time
            break
    return read, state


def _read_log(
    run: Run,
    state: _Read,
    log_file: Path,
    budget: int | None,
    feed: Callable[[_Read, str], tuple[_Read, list[Any]]],
    join: Callable[[Sequence[Mapping[str, Any]], Sequence[Any]], tuple[dict[str, Any], ...]],
) -> tuple[Run, _Read, bool]:
    """A trial's output (`log_file`) read on from `state`: the run with its new records, where
    reading stands, and whether it stands at the log's end (or there is no log to read)."""
    history: tuple[dict[str, Any], ...] = run.history
    latest: dict[str, Any] | None = None

    def take(lines: Sequence[str]) -> None:
        nonlocal state, history, latest
        state, found = feed(state, "".join(f"{line}\n" for line in lines))
        if found:  # at most VAL_RECORDS_MAX kept, as _ValFeed keeps them; the last one read
            joined = join(history, found)
            last = latest_record(joined)  # the judged benchmark's (walk89 F19)
            history, latest = joined[:VAL_RECORDS_MAX], dict(last) if last is not None else latest

    at = Cursor(state.offset, state.skipping)
    got = read_lines(read_local, str(log_file), at, budget, LOG_LINE_MAX_BYTES, take)
    try:
        size = log_file.stat().st_size
    except OSError:
        size = 0  # no log (the trial printed nothing, or its folder is gone): nothing to wait for
    if got.shrunk or got.cursor == at:
        return run, state, at.pos >= size
    state = replace(state, offset=got.cursor.pos, skipping=got.cursor.skipping)
    metrics = dict(latest) if latest is not None else run.metrics
    return replace(run, history=history, metrics=metrics), state, got.cursor.pos >= size


def says_how_it_ended(run: Run) -> bool:
    """The run's program says in its last output why it ended (NeMo-RL: `max_steps`,
    `timeout`), so even a clean exit's decision reads the log (`program_end`)."""
    return run.kind == "nemo_rl"


def shows_validation(run: Run, log_of: LogOf) -> bool:
    """A trial's last output (its log's tail, bounded) shows `Validation Results` (NeMo-RL's
    `📊 Validation Results:`, or any program's line saying so): where no record was read from
    it, the reader could not read them, and the run's reason must not say its program wrote
    none (walk 30: an AgentJet run's did, which only NeMo-RL's was spared); so does verl's
    and AgentJet's `Initial validation metrics:` / `Final ...` (`ajetout`)."""
    if run.trial is None:
        return False
    tail = tail_bytes(log_of(run.trial.number), TAIL_BYTES)
    return any(said in tail for said in _SHOWN)


_SHOWN = (b"Validation Results", b"validation metrics:")  # what says validations were shown


def program_end(run: Run, log_of: LogOf) -> str | None:
    """How a NeMo-RL trial said it ended (`max_steps`, `timeout`), from its last output."""
    if not says_how_it_ended(run) or run.trial is None:
        return None
    data = tail_bytes(log_of(run.trial.number), TAIL_BYTES)
    return nemorl.ending(data.decode("utf-8", errors="replace"))


def load_config(
    path: str, fs: Fs, inherited: bool = False, codebase: str = ""
) -> dict[str, Any] | None:
    """The YAML a run launches with, read where it runs (`inherited`: with the files its
    `defaults:` names merged under it, as NeMo-RL reads it; `codebase`: composed from its
    Hydra `defaults:` as AgentJet's launcher run there reads it, or the file alone where
    they cannot be read, logged); None if it cannot be read as a mapping (logged)."""
    if not path:
        return None
    if inherited:
        config = read_inherited(path, fs)
    elif codebase:
        config = read_composed(path, codebase, fs)
        if isinstance(config, str):
            log.warning("config %s: its own keys read alone", config)
            config = read_config(path, fs)
    else:
        config = read_config(path, fs)
    if isinstance(config, str):
        log.warning("config %s", config)
        return None
    return config


def config_fix(
    run: Run, patches: dict[tuple[str, ...], Any], fs: Fs, env: Mapping[str, str]
) -> tuple[str, str] | str:
    """Write the next trial's fixed config copy where the run runs and point the command at
    it: (command, path); or why the fix cannot reach what runs."""
    config = load_config(run.config_path, fs)
    if config is None:
        return f"its config {run.config_path} cannot be read"
    if run.kind == "nemo_rl":  # an override on its command line wins
        set_there = [".".join(p) for p in patches if nemorl.given(run.launch_command, ".".join(p))]
        if set_there:
            return f"the command sets {', '.join(set_there)} itself, over any config"
    tag = f"{run.run_id}-t{len(run.trials) + 1}"
    fixed = apply_patches(config, patches)
    shadowed = _shadowed(run, fixed, patches, fs)
    if shadowed:
        return shadowed
    try:
        copy = write_copy(run.config_path, fixed, tag, fs)
    except OSError as exc:  # a host that does not answer (AjetdError) is asked again
        said = refused(exc, run.config_path)
        if said is None:
            raise  # a full disk: tried again at the next tick
        return f"its fixed copy is not written: {said}"
    flag = config_flag(run.launch_command, run.kind)
    moved = repoint(run.launch_command, run.codebase_dir, run.config_path, copy, fs, env, flag)
    return f"{flag}: {moved.value}, not its config" if isinstance(moved, Names) else (moved, copy)


def _shadowed(
    run: Run, fixed: dict[str, Any], patches: dict[tuple[str, ...], Any], fs: Fs
) -> str | None:
    """Why the fixed copy of an AgentJet config would not carry its fix: a default its
    `defaults:` list names after `_self_` sets the key over the copy's own (Hydra merges the
    list in order); None where each patched key reads as patched once composed (or where the
    defaults cannot be read: the copy's own keys are all ajetd knows)."""
    if run.kind != "agentjet":
        return None
    composed = read_composed(run.config_path, run.codebase_dir, fs, fixed)  # the copy's folder
    if isinstance(composed, str):
        return None
    over = [".".join(p) for p, v in patches.items() if get_path(composed, p) != v]
    if not over:
        return None
    return (
        f"its defaults list sets {', '.join(over)} after `_self_`, over the fixed copy's "
        "value (Hydra merges the list in order): put `_self_` last in defaults"
    )


def active_sessions(runs: list[Run]) -> set[str]:
    return {r.session for r in runs if r.session and r.state is not State.DONE}


def plateau_unmet(run: Run, options: Options) -> Run:
    """The run with a warning, once, where its validation records hold none of its plateau
    rule's metric: the rule would never act, and nothing else would say so."""
    rule = options.plateau
    if rule is None or any(w.startswith(stoprules.MISSING_PREFIX) for w in run.warnings):
        return run
    note = stoprules.metric_missing(stoprules.followed(rule, run.metric), run.history)
    return run if note is None else model.warn(run, note)
