"""Where one trial's files live in the home (its script, its go/exit/hup files, its log, the
spare log and the wake FIFO): one function, for the daemon's steps and for what measures a
launch before it is made (`launchsize`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ajetd.adapters.store import Home
from ajetd.adapters.trialfiles import output_log, spare_log
from ajetd.core.model import Run
from ajetd.core.trialscript import pipe_path


@dataclass(frozen=True)
class RunPaths:
    """Where one trial's files live."""

    script: Path
    go: Path
    exit: Path
    hup: Path
    log: Path
    spare: Path  # where output goes on if the log's folder vanishes unsafely (pipe_writer)
    wake: Path  # the FIFO through which the trial script is told to go
    log_dir: str = ""  # the log's folder, as the log watch names it (`Watcher.keep_logs`)


def paths(home: Home, run: Run, number: int) -> RunPaths:
    log = output_log(home, run, number)
    return RunPaths(
        script=home.trial_file(run.run_id, number, "sh"),
        go=home.trial_file(run.run_id, number, "go"),
        exit=home.trial_file(run.run_id, number, "exit"),
        hup=home.trial_file(run.run_id, number, "hup"),
        log=log,
        spare=spare_log(home, run.run_id, number),
        wake=Path(
            pipe_path(str(home.trial_file(run.run_id, number, "sh")), f"trial-{number}.wake")
        ),
        log_dir=str(log.parent),
    )
