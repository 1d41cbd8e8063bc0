"""A run's folder read back as its trials (scripts, go and exit files): what rebuilding a run whose
record was damaged needs (`daemon.rebuild`). Apart from `runrecords`, which every client command
loads to read records: the script reader is not loaded for `ajetd status`."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path

from ajetd.adapters.regular import NotRegularError, read_small
from ajetd.adapters.store import Home
from ajetd.adapters.tmux import moved_note
from ajetd.core.exitfile import parse_exit_file
from ajetd.core.model import Run
from ajetd.core.rebuilt import TrialFiles
from ajetd.core.trialscript import ScriptFacts, read_trial_script, trial_log
from ajetd.diagnosis.scan import log_tail

MAX_SCRIPT_BYTES = 1024 * 1024  # a trial script: a command of at most 64 KiB, and ajetd's lines


def trial_files(folder: Path, run_id: str, program: str = "sh") -> list[TrialFiles]:
    """The run's trials as the files in its folder tell them, in order (trial 1 on, none
    missing); none where a script is missing, cut short or another run's. `program`: the
    suffix of the program's own script where it runs elsewhere (`remote.sh` for an SSH host,
    `job.sh` for a Slurm job): the facts are that script's, the pane's (`trial-N.sh`: a
    follower, `srun`) must be whole too."""
    numbers = sorted(int(p.name[6:-3]) for p in folder.glob("trial-*.sh") if p.name[6:-3].isdigit())
    if numbers != list(range(1, len(numbers) + 1)):
        return []
    found = []
    for number in numbers:
        facts = _script(folder / f"trial-{number}.sh", run_id, number)
        if facts is not None and program != "sh":
            facts = _script(folder / f"trial-{number}.{program}", run_id, number)
        if facts is None:
            return []
        found.append(
            TrialFiles(number, facts, _mtime(folder / f"trial-{number}.go"), _exit(folder, number))
        )
    return found


def _script(path: Path, run_id: str, number: int) -> ScriptFacts | None:
    """A trial script's facts; None where it is missing, cut short or another trial's."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(MAX_SCRIPT_BYTES).decode(errors="replace")
    except OSError:
        return None
    facts = read_trial_script(text)
    if facts is None or (facts.run_id, facts.trial) != (run_id, number):
        return None
    return facts


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _exit(folder: Path, number: int) -> tuple[int, float | None] | None:
    return read_exit(folder / f"trial-{number}.exit")


def read_exit(exit_file: Path) -> tuple[int, float | None] | None:
    """What a trial's exit file (or a server's, a Slurm job's done file) says: its code and
    time; None where there is none or it is no such file (damaged, larger than one is: never
    read, no regular file), as for one not written yet."""
    try:
        return parse_exit_file(read_small(exit_file))
    except (OSError, ValueError, NotRegularError):
        return None


def spare_log(home: Home, run_id: str, number: int) -> Path:
    """Where trial `number`'s output goes on when its log's folder vanishes and cannot be
    made again safely (`pipe_writer`): in the run's folder in ajetd's home, owner-only."""
    return home.trial_file(run_id, number, "log")


def pane_tail(home: Home, run_id: str, number: int) -> Path:
    """Trial `number`'s last lines as its pane kept them, saved at its end where its log's
    disk was full (the log lost them): what the reports show as its last lines."""
    return home.trial_file(run_id, number, "tail")


def last_lines(home: Home, run_id: str, number: int, log: Path, n: int) -> list[str]:
    """Trial `number`'s last `n` lines for the reports: those its pane kept where a full disk
    cut its log (`pane_tail`), else its log's."""
    kept = pane_tail(home, run_id, number)
    return log_tail(kept, n) if kept.exists() else log_tail(log, n)


def moves(home: Home, run_id: str, number: int) -> list[tuple[float, str, str]]:
    """Each time trial `number`'s log folder, or its file alone, vanished: when, where its
    output went on (`log`: the log made again; `spare`: `spare_log`) and what vanished
    (`folder`, or `file`: its folder stood), as the writer noted them (`moved_note`; a note
    without the third word is an older writer's: `folder`); bounded."""
    try:
        text = read_small(Path(moved_note(str(spare_log(home, run_id, number)))))
    except (OSError, NotRegularError):
        return []
    found = []
    for line in text.splitlines()[:MAX_MOVES]:
        at, _, rest = line.partition(" ")
        where, _, what = rest.partition(" ")
        with contextlib.suppress(ValueError):
            found.append((datetime.fromisoformat(at).timestamp(), where, what or "folder"))
    return found


MAX_MOVES = 100  # noted vanishings read back (a folder removed again and again)


def in_spare(home: Home, run_id: str, number: int) -> bool:
    """Trial `number`'s output goes on in the spare: the last move noted went there."""
    noted = moves(home, run_id, number)
    return bool(noted) and noted[-1][1] == "spare"


def output_log(home: Home, run: Run, number: int) -> Path:
    """The file trial `number`'s output is in: its log in the result dir, or where its
    folder vanished and could not be made again safely, the spare (the last move noted)."""
    if in_spare(home, run.run_id, number):
        return spare_log(home, run.run_id, number)
    return trial_log(run, number)


LogOf = Callable[[int], Path]  # trial number -> the file its output is in


def output_logs(home: Home, run: Run) -> LogOf:
    """`output_log` for each of the run's trials: what every reader of a trial's output is
    given (metrics, its end's words, the reports), so none reads the result dir's log while
    the output goes on in the spare. The spare is this machine's, in the home: an SSH or
    Slurm run's output reaches it all the same, since the pane that prints it (its follower)
    runs here; what the program writes into its result dir on the remote host is its own,
    copied back at the end (`copyback`), never the trial's log."""
    return partial(output_log, home, run)


def swapped(run: Run) -> str | None:
    """What is wrong where the run's result dir no longer leads where it led when the run was
    admitted (`Run.result_real`): a link put in its path since (in place of the dir or of a
    folder above it) takes every write elsewhere; None where it leads there still (a link the
    user gave in the path is theirs, followed), or the record predates the check."""
    return leads_elsewhere(run.result_dir, run.result_real)


def leads_elsewhere(result_dir: str, real: str) -> str | None:
    """`swapped` for a result dir and the path it led to at admission ("": not checked)."""
    if not real:
        return None
    now = os.path.realpath(result_dir)
    if now == real:
        return None
    return (
        f"the result dir {result_dir} now leads to {now}, not to {real} as when the run was "
        "admitted (a link put in its path since): nothing is written through it"
    )


def report_dir(home: Home, run: Run) -> Path:
    """Where the run's reports and pictures go: its result dir; but where it leads elsewhere
    than it did (`swapped`), or a trial's log folder vanished and something else stood in the
    dir's place (its output went on in the spare, `pipe_writer`), ajetd's own folder for the
    run: nothing is written through what was not there (the run's warnings say where); so
    do the reports of a run whose result dir stayed full (`ending.reports_aside`: its
    `reports_dir` names that folder before they are written)."""
    own = home.run_dir(run.run_id)
    spare = any(in_spare(home, run.run_id, t.number) for t in run.trials)
    return own if run.reports_dir == str(own) or swapped(run) or spare else Path(run.result_dir)
