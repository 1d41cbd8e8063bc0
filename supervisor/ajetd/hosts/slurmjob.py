"""Slurm, interactive or batch: the trial script becomes the job's (`trial-N.job.sh`); the
pane runs `srun --pty` on it (interactive) or the batch follower (`slurmfollow`, batch).
Signals go through `scancel`; one `squeue` a period for every Slurm run says which jobs wait
and why, and `scontrol`/`sacct` how ended jobs ended. The command lines are `slurm`'s."""

from __future__ import annotations

import json
import logging
import shlex
import sys
from dataclasses import replace
from pathlib import Path

from ajetd.adapters.regular import NotRegularError, read_small
from ajetd.adapters.store import OWNER_FILE, Home, write_atomic
from ajetd.core import model
from ajetd.core.errors import AjetdError
from ajetd.core.hostspecs import SlurmSpec
from ajetd.core.model import Run
from ajetd.core.runparts import SlurmJob
from ajetd.core.trialscript import TrialSpec, render_trial_script
from ajetd.hosts import slurm
from ajetd.hosts.local import LocalHost

log = logging.getLogger(__name__)
SLURM_POLL_MAX_S = 80.0  # the longest wait between two squeue calls
ROOT_KINDS = ("node_failure", "preempted", "slurm_timeout")
JOB_SCRIPT = "job.sh"  # trial-N.job.sh: the program's script, the job's


class SlurmHost(LocalHost):
    """One run through Slurm (`slurm:` in its blueprint)."""

    pane_tells = False  # a job's end shows in squeue before its pane knows
    root_kinds: tuple[str, ...] = ROOT_KINDS

    def __init__(self, home: Home, spec: SlurmSpec, poller: SlurmPoller) -> None:
        super().__init__(home)
        self.spec = spec
        self.poller = self.jobs = poller
        self.batch = spec.mode == "batch"

    def prepare(self, run: Run, spec: TrialSpec, log: Path) -> tuple[Run, TrialSpec]:
        """The job's script (its go file already there); the pane's runs `srun --pty` on it,
        or the batch follower."""
        home, n = self.home, spec.trial
        job = replace(
            spec,
            wake_fifo="",
            log_spare="",  # the pane's script asks the log's writer; the job's runs elsewhere
            go_file=str(home.trial_file(run.run_id, n, "job.go")),
            exit_file=str(home.trial_file(run.run_id, n, "job.exit")),
            forward_signals=self.batch,
        )
        script = home.trial_file(run.run_id, n, JOB_SCRIPT)
        write_atomic(script, render_trial_script(job), 0o700)
        write_atomic(Path(job.go_file), "go\n", OWNER_FILE)
        wanted = self.spec
        if run.slurm.exclude:
            exclude = ",".join(x for x in (wanted.exclude, run.slurm.exclude) if x)
            wanted = replace(wanted, exclude=exclude)
        name = slurm.job_name(run.run_id, n)
        # the trial's job waits in Slurm's queue until squeue says it runs: no time charged
        # meanwhile (`SlurmJob.waiting`); the last trial's job id, state and nodes are not its
        run = replace(
            run,
            slurm=replace(
                run.slurm,
                job_id="",
                state="PENDING",
                nodes="",
                reason="",
                began_at=None,
                never_ran=False,
            ),
        )
        if not self.batch:
            command = slurm.interactive_command(wanted, run.max_time_s, name, str(script))
            return run, replace(spec, command=command, env=(), prefix=(), venv_exe="")
        log_file = log.with_suffix(".job.log")  # trial-N.job.log, shown in the pane
        argv = slurm.sbatch_argv(wanted, run.max_time_s, name, str(script), str(log_file), 30)
        q = shlex.quote
        job_file = home.trial_file(run.run_id, n, "job.id")
        follow = (
            f"{q(sys.executable)} -m ajetd.hosts.slurmfollow --argv {q(json.dumps(argv))} "
            f"--log {q(str(log_file))} --job-file {q(str(job_file))} "
            f"--exit-file {q(job.exit_file)} "
            f"--done-file {q(str(home.trial_file(run.run_id, n, 'job.done')))}"
        )
        return run, replace(spec, command=follow, env=(), prefix=(), venv_exe="")

    def signal(self, run: Run, pid: int | None, name: str) -> int | None:
        """Through `scancel` once the job has an id (a job still pending has nothing to save:
        it is cancelled outright); to the pane's processes before, or if scancel fails."""
        job_id = run.slurm.job_id
        if job_id:
            pending = run.slurm.state == "PENDING"
            sig = None if name == "KILL" or pending else name
            try:
                slurm.cancel(job_id, sig, self.batch)
                return 1
            except AjetdError as exc:
                log.warning("run %s: scancel %s failed: %s", run.run_id, job_id, exc)
        return super().signal(run, pid, name)

    def settle(self, run: Run, now: float) -> Run:
        """Slurm may know more than the output: how it ended the job, recorded once."""
        assert run.trial is not None
        job_id = self.jobs.job_id(run)
        if job_id and run.slurm.final != run.trial.number:
            ended = slurm.finished({job_id})
            if job_id in ended:
                return self.jobs.ended(run, ended[job_id], now)
        return run

    def signalled(self, run: Run) -> bool:
        """The job's script noted a SIGINT passed to the program (`job.exit.sigint`)."""
        assert run.trial is not None
        return self.home.trial_file(run.run_id, run.trial.number, "job.exit.sigint").exists()


def _began(info: SlurmJob, run: Run, job: slurm.Job, now: float) -> SlurmJob:
    """The job past PENDING for the first time: when it began running (Slurm's start time,
    where it lies within the trial; else `now`, the poll that saw it), and its wait in the
    queue since the trial let it go added to the run's (`Run.deadline` leaves it out)."""
    trial = run.trial
    if info.began_at is not None or trial is None or trial.started_at is None:
        return info
    said = job.started_at
    began = said if said is not None and trial.started_at <= said <= now else now
    return replace(info, began_at=began, waited_s=info.waited_s + began - trial.started_at)


def _seen(run: Run, job: slurm.Job, now: float) -> Run:
    """What squeue says of a live job: its id, state, nodes, and a pending job's reason."""
    info = replace(
        run.slurm, job_id=job.job_id, state=job.state, nodes=job.nodes, reason=job.reason
    )
    if job.state != "PENDING":
        info = _began(info, run, job, now)
    reason = f"pending in Slurm ({job.reason})" if job.state == "PENDING" else ""
    if info == run.slurm and reason == run.reason:
        return run
    return replace(run, slurm=info, reason=reason)


class SlurmPoller:
    """One `squeue` for every Slurm run, less often while nothing changes (the seed's backoff:
    at once again on a change)."""

    def __init__(self, home: Home, every_s: float) -> None:
        self.home = home
        self.base_s = every_s
        self.every_s = every_s  # grows while nothing changes (SLURM_POLL_MAX_S)
        self.polled_at = float("-inf")
        self.seen: set[tuple[str, str]] = set()  # (job name, state) at the last poll

    def poll(self, runs: list[Run], now: float) -> list[Run]:
        """Pending reasons, nodes, and how ended jobs ended (a batch job Slurm ended without
        its script's exit file gets a done file)."""
        live = {slurm.job_name(r.run_id, r.trial.number): r for r in runs if r.trial is not None}
        if not live or now - self.polled_at < self.every_s:
            return []  # one squeue for all runs, however many trial ends came meanwhile
        self.polled_at = now
        try:
            seen = slurm.jobs(set(live))
        except AjetdError as exc:
            log.warning("slurm: squeue failed: %s", exc)
            return []
        states = {(name, seen[name].state if name in seen else "gone") for name in live}
        same = states == self.seen
        self.every_s = min(self.every_s * 2, SLURM_POLL_MAX_S) if same else self.base_s
        self.seen = states
        changed, gone = [], {}
        for name, run in live.items():
            job = seen.get(name)
            if job is not None:
                changed.append(_seen(run, job, now))
                continue
            number = run.trial.number if run.trial else 0
            if (job_id := self.job_id(run)) and run.slurm.final != number:
                gone[job_id] = run
        ended = slurm.finished(set(gone))  # one scontrol for all of them
        changed += [self.ended(run, ended[i], now) for i, run in gone.items() if i in ended]
        return changed

    def job_id(self, run: Run) -> str:
        """The trial's job id: seen in squeue, or written by the batch follower."""
        assert run.trial is not None
        job_file = self.home.trial_file(run.run_id, run.trial.number, "job.id")
        known = run.slurm.job_id
        if known or not job_file.exists():
            return known
        try:
            return read_small(job_file).strip()
        except (ValueError, NotRegularError):  # no job id (larger than one is: never read)
            return ""

    def ended(self, run: Run, done: slurm.Job, now: float) -> Run:
        """How Slurm says the trial's job ended, recorded once (a finding where it says more
        than the output; a done file where its script could not write the exit code)."""
        info = run.slurm
        assert run.trial is not None
        n, began = run.trial.number, run.trial.started_at or 0.0
        info = replace(info, job_id=done.job_id, state=done.state, reason=done.reason, final=n)
        ran = self.home.trial_file(run.run_id, n, "job.exit").exists()  # its script did
        if done.started_at is not None or ran or done.nodes:
            info = _began(info, run, done, now)
        elif run.slurm.waiting:  # pending when last seen, never on a node: it never ran
            at = done.ended_at if done.ended_at and began <= done.ended_at <= now else now
            waited = info.waited_s + at - began
            info = replace(info, began_at=at, waited_s=waited, never_ran=True)
        found = slurm.finding(done)
        if found is not None:
            self.home.append_event(run.run_id, now, f"{found.kind}: {found.evidence}")
            run = model.found_live(run, (found,))
            if found.kind == "node_failure" and done.nodes:
                info = replace(info, exclude=done.nodes)
        if not self.home.trial_file(run.run_id, n, "job.exit").exists():
            code = done.exit_code if done.exit_code else 1
            # Slurm's end time, where it is a sane one (not the moment this poll noticed)
            at = done.ended_at if done.ended_at and began <= done.ended_at <= now else now
            write_atomic(self.home.trial_file(run.run_id, n, "job.done"), f"{code} {at}\n")
        return replace(run, slurm=info)
