"""A live run's record rebuilt from its folder when its state.json was damaged; pure.

A run whose record cannot be read would otherwise be left running in tmux with nobody watching
its end (its time limit, its exit, its finish.flag). What ajetd wrote itself is still there:
each trial's generated script (run id, command, codebase, venv, result dir, GPUs, how the run
reads its metrics), its go file (the trial was let go: when), its exit file (how it ended),
the stored blueprint (purpose, time limit), and the pane that runs the script (its session).
The rebuilt record holds those and nothing guessed: a trial without its go file is not
started (the daemon lets it go, exactly once, as for any record), one with its go file is
never launched again; its validation results are read as any run's (an AgentJet run's from
its val file, all of them again: the offset is the one its first trial started from; a
NeMo-RL run's from its current trial's output). What only the record
held (fixes, findings, GPU samples so far, a pipeline's stage) is lost, so the run is
flagged for attention, watched to its end and never relaunched (`policy.decide` ends it with its
trial, the reason saying why); `warnings` keeps the note across restarts (`is_rebuilt`).
A run on an SSH host or through Slurm is rebuilt the same way: its pane runs a follower (or
`srun`) and the program's own script is kept beside it (`trial-N.remote.sh`, `trial-N.job.sh`),
so the facts are read from that one; an SSH run's folder on its host is where that script's
go file is (`remote_dir`); a Slurm job is found as after any restart, by its name
(`ajet_<run>_t<N>`) and the id a batch follower wrote (`trial-N.job.id`).

A run that never let a trial go (queued: waiting for GPUs or its turn; or its first trial
prepared, script written, by a daemon that died before its go file) lost nothing but its
admission's record, and its stored blueprint is still there: it is admitted again from that
copy (`not_readmitted`), with its run id and result dir, its submission time and a warning
(`READMITTED`), and then waits, is placed and launched as any run (nothing is flagged: no
person needs to look). Never one that ended: its journal says so (`core.journal`: every end, a
rejection included, is journalled), or its result dir holds
a finish.flag (its end, or another run's results: that folder is not this run's any more).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

from ajetd.core.hostspecs import REMOTE_BASE, REMOTE_SCRIPT
from ajetd.core.journal import ended_in_journal
from ajetd.core.model import Run, State, Trial
from ajetd.core.trialscript import ScriptFacts

if TYPE_CHECKING:  # the store reads records through this module on every client command:
    from ajetd.core.blueprint import Asked  # the blueprint parser is not loaded for a type

REBUILT = "record rebuilt: "  # how the note in `warnings` (and the attention) begins
READMITTED = "record damaged before its first trial: "  # a re-admitted run's warning begins so
ENDED_NOTE = "its record was damaged and rebuilt (earlier history lost), so nothing is relaunched"


@dataclass(frozen=True)
class TrialFiles:
    """One trial as its files in the run's folder tell it."""

    number: int
    facts: ScriptFacts
    started_at: float | None  # its go file's time; None: never let go
    exit: tuple[int, float | None] | None  # its exit file, whole


_TRIAL_FILE = re.compile(r"trial-(\d{1,9})\.(.+)")
# a trial file that says it was let go: its go file, and what only a trial let go writes (its
# exit and hang-up files; an SSH trial's program script, sent to the host before the go file)
_LET_GO = frozenset({"go", "exit", "hup", REMOTE_SCRIPT})


def never_let_go(names: Iterable[str]) -> bool:
    """A run folder's file names say no trial of it was ever let go: none but trial 1's files
    (a second trial follows a first that ran), and none of those says it went (`_LET_GO`):
    queued, or its first trial prepared (record, script) by a daemon that died before its go
    file. Such a run is admitted again whole (`not_readmitted`), not rebuilt."""
    for name in names:
        found = _TRIAL_FILE.fullmatch(name)
        if found is not None and (found[1] != "1" or found[2] in _LET_GO):
            return False
    return True


@dataclass(frozen=True)
class Unstarted:
    """A damaged run's folder whose trials were never let go (`never_let_go`): what admitting
    it again depends on."""

    run_id: str
    has_blueprint: bool  # its stored copy (runs/<id>/blueprint.md) can be read
    journal: tuple[str, ...]  # its events.jsonl, as texts
    result_dir: str  # as its stored blueprint names it (expanded); "" where it names none
    # why that dir's finish.flag bars it (`endevidence.flag_bars`: its own end, or a newer
    # run's); None: none there, or the program's own or an older run's
    flag_bar: str | None
    taken: bool  # that dir is a live run's


def not_readmitted(facts: Unstarted) -> str | None:
    """Why this never-started run is not admitted again (it stays named as damaged), or None
    where it is: it had not ended and its result dir is still its own."""
    if not facts.has_blueprint:
        return "its stored blueprint (blueprint.md) cannot be read: nothing to admit again"
    if ended_in_journal(facts.journal):
        return "its journal (events.jsonl) says it ended: never admitted again"
    if facts.flag_bar is not None:
        return f"{facts.flag_bar} ({facts.result_dir}): never admitted again"
    if facts.taken:
        return f"its result dir {facts.result_dir} is a live run's: never admitted again"
    return None


def readmitted_note(damage: str) -> str:
    """The warning a re-admitted run carries (and its journal and the daemon's log say)."""
    return (
        f"{READMITTED}{damage}; no trial had been let go, so it was admitted again from "
        "its stored blueprint (same run id and result dir)"
    )


def is_rebuilt(run: Run) -> bool:
    return any(w.startswith(REBUILT) for w in run.warnings)


def rebuilt_run(
    run_id: str,
    damage: str,
    source: str,
    submitted_at: float,
    said: Asked | None,
    trials: list[TrialFiles],
    session: str,
    tmux_socket: str,
    remote: str = "",
    tmux_path: str = "",
) -> Run:
    """The live run these files describe (`trials` in order, at least one; on an SSH host or
    through Slurm, each with the facts of the program's own script); `damage`: what was wrong
    with its record, and where the damaged file was kept; `remote`: an SSH run's folder on its
    host (`remote_dir`)."""
    last = trials[-1]
    reading = last.facts.metrics
    ended = [
        Trial(
            number=t.number,
            command=t.facts.command,
            session=session,
            started_at=t.started_at,
            ended_at=t.exit[1] if t.exit else nxt.started_at,
            exit_code=t.exit[0] if t.exit else None,
        )
        for t, nxt in pairwise(trials)
    ]
    # the last trial is left open even if its exit file is there: the loop records its end
    # as for any run (diagnosis, reports, finish.flag)
    current = Trial(last.number, last.facts.command, session, started_at=last.started_at)
    note = (
        f"{REBUILT}{damage}; rebuilt from the run's folder (trial scripts, go and exit files, "
        "stored blueprint, tmux session): what only the record held (fixes, findings, GPU "
        "samples so far) is lost; the run is watched to its end and not relaunched"
    )
    return Run(
        run_id=run_id,
        source=source,
        submitted_at=submitted_at,
        purpose=said.purpose if said is not None else "",
        session=session,
        state=State.RUNNING,
        attention=note,
        result_dir=last.facts.result_dir,
        max_time_s=said.max_time_s if said is not None else None,
        codebase_dir=last.facts.codebase_dir,
        venv_dir=last.facts.venv_dir,
        tmux_socket=tmux_socket,
        tmux_path=tmux_path,
        remote_dir=remote,
        launch_command=last.facts.command,
        started_at=trials[0].started_at,
        trials=(*ended, current),
        # its metrics read as the run read them: from its val file, from the byte its first
        # trial started at, or from its output (NeMo-RL: the current trial's)
        kind=reading.kind or Run.kind,
        metric=reading.metric or Run.metric,
        val_path=reading.val_file or None,
        val_offset=reading.val_offset,
        gpu_ids=_gpus(last.facts.env.get("CUDA_VISIBLE_DEVICES")),
        warnings=(note,),
    )


def remote_dir(facts: ScriptFacts) -> str | None:
    """An SSH trial's folder on its host, as the program's script (`trial-N.remote.sh`, kept
    here as it was sent) names its go file there: `$HOME/.ajetd-remote/<run id>`; None where
    it names another (nothing is guessed: the run stays named)."""
    folder, _, name = facts.go_file.rpartition("/")
    home, _, own = folder.rpartition(f"/{REMOTE_BASE}/")
    if name != f"trial-{facts.trial}.go" or own != facts.run_id or not home.startswith("/"):
        return None
    return folder


def _gpus(visible: str | None) -> tuple[int, ...] | None:
    """The GPUs the trial was placed on (so that no other run is placed there meanwhile)."""
    if visible is None:
        return None
    words = [w.strip() for w in visible.split(",") if w.strip()]
    return tuple(int(w) for w in words) if all(w.isdigit() for w in words) else None
