"""At start, a live run whose record is damaged (state.json empty, cut, not JSON, or gone from a
folder that holds trials) is rebuilt from its folder (`core.rebuilt`) and supervised again,
instead of being left running in tmux with nobody watching its end.

Only a run that may still live is rebuilt: one whose journal does not say it ended (its end
is journalled before its record is saved: one that ended with its reports pending and its
dead pane kept is not brought back), whose trial scripts are all there, whose last
trial has not ended without a pane left, and whose result dir is there, holds no finish.flag
of its own (it ended) or of a run that ended since it was admitted (the folder is that run's
now; the program's own file at that name, or an older run's flag it copied there, is no mark:
`core.endevidence.flag_bars`) and is no live run's. The
others stay named as damaged: a rebuilt run writes its reports, never over another's. A run on
an SSH host or through Slurm is rebuilt from the program's own script kept beside the pane's
(`trial-N.remote.sh`, `trial-N.job.sh`; its SSH folder there: `core.rebuilt.remote_dir`), the
place from its stored blueprint's `[ajetd]` part: where that cannot be read, a folder holding
such scripts stays named (which place only that part said). Nor is one rebuilt whose started
trial has no pane on this tmux server while
its program runs on a terminal: another tmux server's pane, which only the record named (a
program that lingers without its terminal after its session was killed makes the run `lost`, as
for any run). The damaged file is kept beside the new one (`state.json.damaged`); the journal
and the daemon's log say what was done.

A run that never let a trial go (`core.rebuilt.never_let_go`: queued, or its first trial only
prepared) is not rebuilt but admitted again from its stored blueprint (`readmission`,
`core.rebuilt.not_readmitted`), unless its journal says it ended or its result dir holds a
finish.flag (none of its program's: it never ran) or is a live run's; or where a process
still runs its first trial's script (a pane waiting for the go file: rebuilt, adopting that
pane, never a second one let go). An SSH run whose folder holds trial 1's program script
(written as the trial is prepared) counts as never let go where its host says nothing of
trial 1 reached it (`_never_went`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from ajetd.adapters import inbox, procs, runrecords, trialfiles
from ajetd.adapters.regular import NotRegularError, read_small
from ajetd.adapters.resultdir import in_use
from ajetd.adapters.store import Home, expanded
from ajetd.adapters.tmux import Pane, find_pane
from ajetd.core import jsontext, resultfiles
from ajetd.core.blueprint import asked, extract_parts
from ajetd.core.copyname import original_of
from ajetd.core.endevidence import flag_bars
from ajetd.core.errors import AjetdError
from ajetd.core.hostspecs import REMOTE_SCRIPT
from ajetd.core.model import Run
from ajetd.core.naming import run_names, session_base, unique_session
from ajetd.core.rebuilt import (
    Unstarted,
    never_let_go,
    not_readmitted,
    readmitted_note,
    rebuilt_run,
    remote_dir,
)
from ajetd.frameworks.agentjet import conf_argument
from ajetd.hosts import slurm, sshcmd
from ajetd.hosts.configcopy import config_flag
from ajetd.hosts.slurmjob import JOB_SCRIPT

log = logging.getLogger(__name__)
ELSEWHERE = (REMOTE_SCRIPT, JOB_SCRIPT)  # the program's own scripts of the other places


def rebuild(
    home: Home,
    run_id: str,
    line: str,
    panes: list[Pane],
    socket: str,
    now: float,
    taken: Collection[str] = (),
    tmux_path: str = "",
) -> Run | None:
    """The damaged run `run_id` (`line`: why it was left out) rebuilt and saved, or None
    where it is not a live run that its folder can describe. `taken`: the live runs' result
    dirs; `socket`, `tmux_path`: this daemon's tmux server (its -L name, its socket's path)."""
    folder = home.run_dir(run_id)
    if not folder.is_dir():
        return None
    barred = runrecords.journal_bars(folder / "events.jsonl")
    if barred is not None:
        # its end was recorded (its reports may still be pending, its dead pane kept), or
        # its journal cannot tell: never brought back to life, ended a second time, its
        # on_finish run again
        log.error("run %s: not rebuilt: %s", run_id, barred)
        return None
    options, problem = inbox.read_stored_options(home, run_id)
    if problem is not None and any(any(folder.glob(f"trial-*.{p}")) for p in ELSEWHERE):
        log.error(
            "run %s: not rebuilt: its trials ran on an SSH host or through Slurm (trial-N.%s), "
            "which only its stored blueprint says, and %s; restore %s and start the daemon "
            "again",
            run_id,
            " / trial-N.".join(ELSEWHERE),
            problem,
            folder / inbox.CLAIMED_NAME,
        )
        return None
    program = REMOTE_SCRIPT if options.ssh else JOB_SCRIPT if options.slurm else "sh"
    trials = trialfiles.trial_files(folder, run_id, program)
    if not trials:
        return None
    busy = _result_dir_busy(home, run_id, trials[-1].facts.result_dir, taken)
    if busy is not None:
        log.error("run %s: not rebuilt: %s", run_id, busy)
        return None
    remote = remote_dir(trials[-1].facts) if options.ssh is not None else ""
    if remote is None:
        log.error(
            "run %s: not rebuilt: trial-%d.remote.sh waits for no go file in its own folder on "
            "the host ($HOME/.ajetd-remote/%s): look there on %s",
            run_id,
            trials[-1].number,
            run_id,
            options.ssh.target if options.ssh else "the host",
        )
        return None
    text = ""
    with contextlib.suppress(OSError):
        text = home.blueprint_text(run_id)
    said = asked(extract_parts(text)) if text else None
    source = _source(folder)
    last = trials[-1]
    pane = find_pane(panes, home.trial_file(run_id, last.number, "sh"))
    if (
        pane is None
        and last.started_at is not None
        and last.exit is None
        and _on_a_terminal(home, run_id, last.number, last.started_at)
    ):
        # no pane here, yet its program has a terminal: it runs on another tmux server, which
        # only the lost record named; calling it lost would end its processes
        log.error(
            "run %s: not rebuilt: trial %d runs, on a terminal that is no pane of this tmux "
            "server (%s): start the daemon with the AJETD_TMUX_SOCKET and TMUX_TMPDIR it "
            "was started with",
            run_id,
            last.number,
            tmux_path or socket,
        )
        return None
    if pane is None and last.exit is not None:
        return None  # it ended while no daemon watched, and its pane is gone: not live
    script = home.trial_file(run_id, last.number, "sh")
    if pane is None and last.started_at is None and procs.running_script(str(script)):
        # no pane here, yet its script waits for its go file: on another tmux server, which
        # only the lost record named; a new session here would let both go
        log.error(
            "run %s: not rebuilt: trial %d waits to be let go on a terminal that is no pane "
            "of this tmux server (%s): start the daemon with the AJETD_TMUX_SOCKET and "
            "TMUX_TMPDIR it was started with",
            run_id,
            last.number,
            tmux_path or socket,
        )
        return None
    session = pane.session if pane is not None else ""
    if not session and last.started_at is None:  # never let go: a session to create
        command = last.facts.command
        config = conf_argument(command, config_flag(command)) or ""
        names = run_names(source, last.facts.result_dir, original_of(config))
        base = session_base(said.purpose if said else "", names, run_id)
        session = unique_session(base, {p.session for p in panes})
    aside = runrecords.keep_damaged(home.state_file(run_id))
    kept = f" (kept as {aside.name})" if aside is not None else ""
    damage = runrecords.damage(line, run_id) + kept
    submitted = _submitted_at(folder, trials[0].facts.result_dir)
    run = rebuilt_run(
        run_id, damage, source, submitted, said, trials, session, socket, remote, tmux_path
    )
    home.save_run(run)
    home.append_event(run_id, now, run.warnings[0])
    log.error("run %s: %s", run_id, run.warnings[0])
    return run


@dataclass(frozen=True)
class Readmission:
    """A damaged run that never launched a trial, to be admitted again (`Admit.accept`)."""

    claimed: Path  # its stored blueprint
    source: str  # the name it came by
    submitted_at: float  # when it was claimed first: it keeps its place in the queue
    result_dir: str  # as its stored blueprint names it ("" where it names none)
    note: str  # the warning it carries (`core.rebuilt.readmitted_note`)


def readmission(
    home: Home, run_id: str, line: str, now: float, taken: Collection[str] = ()
) -> Readmission | str | None:
    """The damaged run `run_id` (`line`: why it was left out) to admit again, its damaged
    record kept aside and the journal told; None where it is not one that never started
    (a folder with trial files is `rebuild`'s), or where it must stay named (logged why);
    why not yet where its place (its SSH host, its Slurm cluster) does not answer: admission
    checks the run there, and rejects what it cannot check, which is an end, for good, where
    a queued run only waits for its host (asked again, `Admit.readmit_waiting`). `taken`:
    the live runs' result dirs."""
    folder = home.run_dir(run_id)
    try:
        names = os.listdir(folder)
    except OSError:  # a stray file where the folder should be
        return None
    if not _never_went(home, run_id, names):
        return None  # `rebuild`'s
    script = str(home.trial_file(run_id, 1, "sh"))
    if "trial-1.sh" in names and procs.running_script(script):
        return None  # its pane waits for the go file: `rebuild` adopts it (never a second)
    text: str | None = None
    with contextlib.suppress(OSError):
        text = home.blueprint_text(run_id)
    result_dir = expanded(asked(extract_parts(text)).result_dir) if text else ""
    try:
        journal = home.events(run_id)
    except ValueError as exc:  # whether it ended is unknown: never taken as one that did not
        log.error("run %s: not admitted again: its journal cannot be read: %s", run_id, exc)
        return None
    facts = Unstarted(
        run_id=run_id,
        has_blueprint=text is not None,
        journal=tuple(event for _, event in journal),
        result_dir=result_dir,
        # no trial of it ran: a finish.flag there is no program's, and bars it whoever's it
        # is (admission would refuse the folder; the record stays named instead)
        flag_bar=(
            "its result dir holds a finish.flag (its end, or another run's results)"
            if result_dir and os.path.lexists(Path(result_dir, resultfiles.FINISH_FLAG))
            else None
        ),
        taken=bool(result_dir) and in_use(result_dir, taken),
    )
    why = not_readmitted(facts)
    if why is not None:
        log.error("run %s: not admitted again: %s", run_id, why)
        return None
    silent = _silent_place(home, run_id)
    if silent is not None:  # admission checks the run there: an outage would reject it
        return silent
    aside = runrecords.keep_damaged(home.state_file(run_id))
    kept = f" (kept as {aside.name})" if aside is not None else ""
    note = readmitted_note(runrecords.damage(line, run_id) + kept)
    home.append_event(run_id, now, note)
    log.error("run %s: %s", run_id, note)
    claimed = folder / inbox.CLAIMED_NAME
    # its first admission's time, as its journal's first line has it (its claim)
    submitted = journal[0][0] if journal else _submitted_at(folder, result_dir)
    return Readmission(claimed, _source(folder), submitted, result_dir, note)


def let_go(home: Home, run_id: str) -> bool:
    """The damaged run's folder says a trial of it was let go (`never_let_go` says not): its
    program may run and write in its result dir, so it is rebuilt before any run is admitted
    again (a readmitted run never takes that dir from it)."""
    try:
        names = os.listdir(home.run_dir(run_id))
    except OSError:  # no folder (a stray file): nothing let go
        return False
    return not _never_went(home, run_id, names)


def _never_went(home: Home, run_id: str, names: list[str]) -> bool:
    """No trial of the run went (`never_let_go`), also where its folder holds trial 1's SSH
    program script (`trial-1.remote.sh`, written as the trial is prepared, before it is sent)
    and the host says nothing of trial 1 reached it: such a run is admitted again whole, as
    one here that never went is. Where the host does not answer, the script counts as sent
    (the run is rebuilt, its launch there idempotent): never a second program."""
    if never_let_go(names):
        return True
    sent = f"trial-1.{REMOTE_SCRIPT}"
    if sent not in names or not never_let_go([n for n in names if n != sent]):
        return False
    options, _ = inbox.read_stored_options(home, run_id)
    if options.ssh is None:
        return False
    try:
        there = sshcmd.remote_dir(options.ssh, run_id)
        q = shlex.quote
        asked = f"test -e {q(there + '/trial-1.sh')} || test -e {q(there + '/trial-1.pid')}"
        return sshcmd.run(options.ssh, asked).returncode == 1
    except AjetdError as exc:
        log.warning("run %s: its host not asked whether trial 1 reached it: %s", run_id, exc)
        return False


def _silent_place(home: Home, run_id: str) -> str | None:
    """Why the place its stored blueprint names (an SSH host, a Slurm cluster) cannot be asked
    now, or None (this machine, or it answers)."""
    options, _ = inbox.read_stored_options(home, run_id)
    try:
        if options.ssh is not None:
            sshcmd.run(options.ssh, "true")
        elif options.slurm is not None:
            slurm.partitions()
    except AjetdError as exc:
        return f"its place does not answer: {exc}"
    return None


def _on_a_terminal(home: Home, run_id: str, number: int, since: float) -> bool:
    """A started trial without a pane on this server: whether its program still runs on a
    terminal (another server's pane). A session killed by hand leaves its trial script's
    hang-up marker, or a program that lingers without its terminal; both make it `lost`."""
    if home.trial_file(run_id, number, "hup").exists():
        return False
    return any(not procs.lost_terminal(pid) for pid in procs.run_pids(run_id, None, since))


def _source(folder: Path) -> str:
    """The name the blueprint came by (written at its claim), else the stored copy's."""
    with contextlib.suppress(OSError, ValueError, NotRegularError):
        return read_small(folder / "source-name").strip() or "blueprint.md"
    return "blueprint.md"


def _submitted_at(folder: Path, result_dir: str) -> float:
    """When it was claimed: the stored blueprint's time (its first script's, without one)."""
    for path in (folder / "blueprint.md", folder / "trial-1.sh", Path(result_dir)):
        with contextlib.suppress(OSError):
            return path.stat().st_mtime
    return 0.0


def _result_dir_busy(
    home: Home, run_id: str, result_dir: str, taken: Collection[str]
) -> str | None:
    """Why a rebuilt run may not write its reports into `result_dir`, or None where it may: the
    folder is there (a live run's holds its logs), its finish.flag bars none
    (`endevidence.flag_bars`: its own end written, or a newer run's: the folder is that run's
    now) and it is no live run's (`taken`). Anything else leaves the damaged record named,
    never a result overwritten."""
    if not Path(result_dir).is_dir():
        return f"its result dir {result_dir} is not there"
    bar = _flag_bar(home, run_id, result_dir)
    if bar is not None:
        return f"{bar} ({result_dir})"
    if in_use(result_dir, taken):
        return f"its result dir {result_dir} is a live run's"
    return None


def _flag_bar(home: Home, run_id: str, result_dir: str) -> str | None:
    """`endevidence.flag_bars` for the finish.flag in `result_dir` (None: none there), against
    when the run was admitted: its journal's first line (its claim), else its folder's time."""
    flag = Path(result_dir, resultfiles.FINISH_FLAG)
    if not os.path.lexists(flag):
        return None
    data = None
    with contextlib.suppress(OSError, ValueError, NotRegularError):
        data = jsontext.loads(read_small(flag))
    journal: list[tuple[float, str]] = []
    with contextlib.suppress(ValueError, OSError):
        journal = home.events(run_id)
    admitted = journal[0][0] if journal else _submitted_at(home.run_dir(run_id), result_dir)
    return flag_bars(run_id, data, admitted)
