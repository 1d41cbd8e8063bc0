"""An SSH host: the trial's script goes to the host and runs there, detached; the local pane
runs the follower (`sshfollow`), which streams its output back and outlives dropped
connections. Reading the val file there, signalling the remote trial, cleaning up and copying
back when a trial ends, and the follower's connection notes; the ssh command lines themselves
are `sshcmd`'s."""

from __future__ import annotations

import logging
import shlex
import sys
from dataclasses import replace
from pathlib import Path

from ajetd.adapters import git
from ajetd.adapters.regular import NotRegularError, read_small
from ajetd.adapters.store import Home, write_atomic
from ajetd.core import model
from ajetd.core.errors import AjetdError
from ajetd.core.finding import Finding
from ajetd.core.gpuuse import GpuSample
from ajetd.core.hostspecs import REMOTE_SCRIPT, SshSpec
from ajetd.core.model import Run
from ajetd.core.runparts import Provenance
from ajetd.core.timefmt import iso
from ajetd.core.trialscript import TrialSpec, render_trial_script
from ajetd.hosts import copyback, sshcmd
from ajetd.hosts.fs import Fs
from ajetd.hosts.local import LocalHost

log = logging.getLogger(__name__)
SSH_LOST = "ssh_lost"


def ssh_lost_finding(host: str, at: float) -> Finding:
    return Finding(
        SSH_LOST,
        "warning",
        0,
        f"the ssh connection to {host} dropped at {iso(at)}",
        "The connection to the remote host dropped; the remote trial runs on, detached, and "
        "ajetd reattaches to it.",
        "Nothing while it reconnects; if it does not, check the network and the host (`ssh` "
        "by hand with the same options).",
    )


class SshHost(LocalHost):
    """One run on one SSH host (`ssh:` in its blueprint)."""

    def __init__(self, home: Home, ssh: SshSpec, pull: tuple[str, ...], run_id: str) -> None:
        super().__init__(home)
        self.ssh = ssh
        self.pull = pull
        self.run_id = run_id
        self.seen: dict[int, int] = {}  # trial -> connection notes already taken
        self.machine = ssh
        self.name = ssh.target

    def gpus(self) -> list[GpuSample] | None:
        """From `nvidia-smi` over the shared connection (raises when the host does not answer)."""
        return sshcmd.gpus(self.ssh)

    def prepare(self, run: Run, spec: TrialSpec, log: Path) -> tuple[Run, TrialSpec]:
        """The trial script goes to the host (written here as `trial-N.remote.sh`, sent at
        start); the local pane runs the follower instead."""
        home = self.home
        rdir = run.remote_dir or sshcmd.remote_dir(self.ssh, run.run_id)
        if rdir != run.remote_dir:
            run = replace(run, remote_dir=rdir)
            home.save_run(run)
        n = spec.trial
        remote = replace(
            spec,
            wake_fifo="",
            log_spare="",  # the local pane's script asks the log's writer, never the host's
            env=(*spec.env, sshcmd.REMOTE_MARK),
            go_file=f"{rdir}/trial-{n}.go",
            exit_file=f"{rdir}/trial-{n}.exit",
            hup_file=f"{rdir}/trial-{n}.hup",
        )
        script = render_trial_script(remote)
        write_atomic(home.trial_file(run.run_id, n, REMOTE_SCRIPT), script, 0o600)
        q = shlex.quote
        follow = (
            f"{q(sys.executable)} -m ajetd.hosts.sshfollow --spec {q(sshcmd.spec_json(self.ssh))} "
            f"--rdir {q(rdir)} --trial {n} --run-id {q(run.run_id)} "
            f"--lost {q(str(home.trial_file(run.run_id, n, 'sshlost')))}"
        )
        local = replace(
            spec, command=follow, codebase_dir=run.result_dir, env=(), prefix=(), venv_exe=""
        )
        Path(run.result_dir).mkdir(parents=True, exist_ok=True)
        return run, local

    def launch(self, run: Run, now: float) -> None:
        """Idempotent: a trial already started there is not started again."""
        trial = run.trial
        assert trial is not None
        script = read_small(self.home.trial_file(run.run_id, trial.number, REMOTE_SCRIPT))
        pid = sshcmd.launch(self.ssh, run.remote_dir, trial.number, script, run.result_dir)
        text = f"trial {trial.number} started on {self.ssh.target} (pid {pid})"
        self.home.append_event(run.run_id, now, text)

    def fetch(self, path: str, offset: int, limit: int) -> tuple[int, bytes] | None:
        """None (logged) when the host does not answer."""
        try:
            return sshcmd.read_from(self.ssh, path, offset, limit)
        except AjetdError as exc:
            log.warning("run %s: val file not read on %s: %s", self.run_id, self.ssh.target, exc)
            return None

    def signal(self, run: Run, pid: int | None, name: str) -> int | None:
        """None (logged) when the host does not answer: nothing reached the program, and the
        stop sends it again (walk87 F8: it was counted as sent, and the program ran on)."""
        if run.trial is None:
            return 0
        try:
            return sshcmd.signal(self.ssh, run.remote_dir, run.trial.number, run.run_id, name)
        except AjetdError as exc:
            log.warning("run %s: SIG%s to %s failed: %s", run.run_id, name, self.ssh.target, exc)
            return None

    def fs(self) -> Fs:
        return sshcmd.RemoteFs(self.ssh)

    def provenance(self, codebase_dir: str) -> tuple[Provenance, bytes]:
        """Read over the shared connection; a note where the host does not answer."""

        def remote(script: str) -> tuple[int, bytes]:
            done = sshcmd.run(self.ssh, script, timeout=120)
            return done.returncode, done.stdout

        try:
            return git.collect(codebase_dir, remote)
        except AjetdError as exc:
            return Provenance(note=f"not read over SSH: {exc}"), b""

    def end(self, run: Run, now: float, final: bool) -> None:
        """End what is left of the trial there; at the run's end, file the copy back of its
        `pull:` artifacts and the remote result dir (`copyback`: done by a child, never in
        the loop), unless it is the same folder here."""
        if not run.remote_dir:
            return
        ssh, home = self.ssh, self.home
        try:
            left = sshcmd.reap(ssh, run.run_id)
            if left:
                home.append_event(
                    run.run_id, now, f"ended {left} leftover process(es) on {ssh.target}"
                )
            if not final or sshcmd.same_dir(ssh, Path(run.result_dir), run.run_id):
                return
            spec = sshcmd.spec_json(ssh)
            job = copyback.Job(
                spec, ssh.target, run.codebase_dir, self.pull, run.result_dir, run.result_real
            )
            what = ", ".join([*self.pull, "the remote result dir"])
            try:
                copyback.file_job(home.run_dir(run.run_id), job)  # a child's: the loop goes on
            except OSError as exc:  # a full home: copied here and now, as before the child
                log.warning("run %s: copy back done in the loop: %s", run.run_id, exc)
                home.append_event(run.run_id, now, copyback.copy(job))
                return
            home.append_event(
                run.run_id, now, f"copying back from {ssh.target}: {what} (the reports wait for it)"
            )
        except AjetdError as exc:
            log.warning("run %s: cleanup on %s failed: %s", run.run_id, ssh.target, exc)
            home.append_event(run.run_id, now, f"cleanup on {ssh.target} failed: {exc}")

    def notes(self, run: Run, now: float) -> Run:
        """The follower's record of dropped and restored connections not taken yet: each is
        an event; a trial's first drop is the finding `ssh_lost`."""
        if run.trial is None:
            return run
        number = run.trial.number
        run, self.seen[number] = connection_notes(self.home, run, self.seen.get(number, 0), now)
        return run


def connection_notes(home: Home, run: Run, seen: int, now: float) -> tuple[Run, int]:
    """The follower's notes after the first `seen` lines, and how many there are now."""
    if run.trial is None:
        return run, seen
    try:
        notes = read_small(home.trial_file(run.run_id, run.trial.number, "sshlost")).splitlines()
    except (OSError, ValueError, NotRegularError):  # none yet, or larger than any: never read
        return run, seen
    for line in notes[seen:]:
        at, _, rest = line.partition(" ")
        word, _, host = rest.partition(" ")
        text = f"ssh connection to {host} lost" if word == "lost" else f"reconnected to {host}"
        home.append_event(run.run_id, now, f"{text} (at {at})")
        known = run.trial.live_findings if run.trial else ()
        if word == "lost" and not any(f.kind == SSH_LOST for f in known):
            run = model.found_live(run, (ssh_lost_finding(host, float(at or now)),))
    return run, len(notes)
