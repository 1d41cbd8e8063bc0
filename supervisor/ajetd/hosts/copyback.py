"""A run's copy back from its SSH host, done by a child process, not in the daemon's loop.

At a remote run's end its `pull:` artifacts and its result dir are copied back here (tar over
the shared connection, `sshcmd.pull`). A result dir with checkpoints can take hours: its
deadline allows 2 MiB/s. Done in the loop, that held every other run unsupervised for as long
(no exit seen, no time limit, no stop). So the end writes a job file (`runs/<id>/copyback.json`)
and the daemon's housekeeping starts `python -m ajetd.hosts.copyback JOB`, which copies while
holding a lock on the job and writes its outcome beside it (`copyback.done`). The run's record
says it ended at once; its reports and finish.flag wait for the outcome (`reports_pending`:
`ajetd wait` waits too), so finish.flag still means the files are here.

A restart finds the job: a child still copying holds its lock (waited for); one that is gone
without an outcome is started again (tar never replaces a file already here, so what came
stays), at most once per daemon, after which the outcome says the copy ended without one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ajetd.adapters.regular import NotRegularError, read_small
from ajetd.adapters.store import OWNER_FILE, locked, write_atomic
from ajetd.adapters.trialfiles import leads_elsewhere
from ajetd.core.errors import AjetdError

JOB = "copyback.json"
DONE = "copyback.done"


@dataclass
class Children:
    """The daemon's copy backs under way: each run's child, the runs a second child took up
    (a third is not started), and whether any is under way (the loop then looks each
    second)."""

    running: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    again: set[str] = field(default_factory=set)
    under_way: bool = False


@dataclass(frozen=True)
class Job:
    """What to copy: from `target` (spec as `sshcmd.spec_json`), each of `pull` under
    `codebase`, then the remote result dir, into the local result dir of the same path;
    `result_real`: where that led at admission (`Run.result_real`; "": a job filed before it,
    not checked)."""

    spec: str
    target: str
    codebase: str
    pull: tuple[str, ...]
    result_dir: str
    result_real: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "target": self.target,
            "codebase": self.codebase,
            "pull": list(self.pull),
            "result_dir": self.result_dir,
            "result_real": self.result_real,
        }

    @classmethod
    def from_json(cls, data: Any) -> Job:
        """A job file as `to_json` wrote it; TypeError naming what is not."""
        if not isinstance(data, dict):
            raise TypeError("not a JSON object")
        texts = ("spec", "target", "codebase", "result_dir")
        if any(not isinstance(data.get(k), str) for k in texts):
            raise TypeError(f"{', '.join(texts)} must be strings")
        pull = data.get("pull")
        if not isinstance(pull, list) or not all(isinstance(p, str) for p in pull):
            raise TypeError("pull must be a list of strings")
        real = data.get("result_real", "")
        if not isinstance(real, str):
            raise TypeError("result_real must be a string")
        return cls(
            data["spec"], data["target"], data["codebase"], tuple(pull), data["result_dir"], real
        )


def job_file(run_dir: Path) -> Path:
    return run_dir / JOB


def done_file(run_dir: Path) -> Path:
    return run_dir / DONE


def file_job(run_dir: Path, job: Job) -> None:
    """Leave the job for the daemon's housekeeping (a stale outcome of an earlier one goes)."""
    done_file(run_dir).unlink(missing_ok=True)
    write_atomic(job_file(run_dir), json.dumps(job.to_json()) + "\n", OWNER_FILE)


def due(run_dir: Path) -> bool:
    """A copy back was filed for this run and has no outcome yet."""
    return job_file(run_dir).exists() and not done_file(run_dir).exists()


def copying(run_dir: Path) -> bool:
    """A child holds the job's lock: it is copying now (after a restart too)."""
    return locked(job_file(run_dir))


def start(run_dir: Path) -> subprocess.Popen[bytes]:
    """The child that does the job, in a session of its own (a daemon stopped or restarted
    meanwhile leaves it copying); the daemon reaps it."""
    return subprocess.Popen(
        [sys.executable, "-m", "ajetd.hosts.copyback", str(job_file(run_dir))],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def outcome(run_dir: Path) -> str:
    """What the copy back came to, as the journal says it; the job's files are removed."""
    try:
        data = json.loads(read_small(done_file(run_dir)))
        said = str(data["said"]) if isinstance(data, dict) else ""
    except (OSError, ValueError, KeyError, NotRegularError) as exc:
        said = f"copy back: its outcome cannot be read ({exc})"
    job_file(run_dir).unlink(missing_ok=True)
    done_file(run_dir).unlink(missing_ok=True)
    return said


def gave_up(run_dir: Path, target: str) -> None:
    """The child ended twice without an outcome: say so as its outcome (the reports go on)."""
    said = f"cleanup on {target} failed: the copy back ended without finishing, twice"
    write_atomic(done_file(run_dir), json.dumps({"said": said}) + "\n", OWNER_FILE)


def read_job(run_dir: Path) -> Job:
    """The job filed for the run (OSError, ValueError or TypeError where it cannot be read)."""
    return Job.from_json(json.loads(read_small(job_file(run_dir))))


def target_of(run_dir: Path) -> str:
    """The host a filed job copies from ("its host" where the job cannot be read)."""
    try:
        return read_job(run_dir).target
    except (OSError, ValueError, TypeError, NotRegularError):
        return "its host"


def copy(job: Job) -> str:
    """Do the job; the journal's line for it (never raises for a host that fails)."""
    from ajetd.hosts import sshcmd

    swapped = leads_elsewhere(job.result_dir, job.result_real)
    if swapped is not None:  # a link put in its path since: the files stay on the host
        return f"not copied back from {job.target}: {swapped}; the files stay there"
    spec = sshcmd.spec_from_json(job.spec)
    into = Path(job.result_dir)
    try:
        notes = sshcmd.pull(spec, job.codebase, list(job.pull), into) if job.pull else ""
        notes += sshcmd.pull(spec, job.result_dir, ["."], into)
    except AjetdError as exc:
        return f"cleanup on {job.target} failed: {exc}"
    what = ", ".join([*job.pull, "the remote result dir"])
    return f"copied back from {job.target}: {what}" + (f" ({notes})" if notes else "")


def main() -> int:
    import argparse  # the child's alone: not loaded into the daemon, which imports this module

    parser = argparse.ArgumentParser(prog="ajetd.hosts.copyback")
    parser.add_argument("job", type=Path)
    path: Path = parser.parse_args().job
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another child holds it: that one does the job
    with contextlib.closing(os.fdopen(fd, "rb")):  # the lock, held until the outcome is there
        try:
            said = copy(read_job(path.parent))
        except (OSError, ValueError, TypeError, NotRegularError) as exc:
            said = f"copy back: its job {path} cannot be read ({exc})"
        write_atomic(done_file(path.parent), json.dumps({"said": said}) + "\n", OWNER_FILE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
