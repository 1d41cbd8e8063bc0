"""A run's folder read back as its trials (scripts, go and exit files): what rebuilding a run whose
record was damaged needs (`daemon.rebuild`). Apart from `runrecords`, which every client command
loads to read records: the script reader is not loaded for `ajetd status`."""

from __future__ import annotations

from pathlib import Path

from ajetd.adapters.regular import NotRegularError, read_small
from ajetd.core.rebuilt import TrialFiles
from ajetd.core.trialscript import ScriptFacts, parse_exit_file, read_trial_script

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
