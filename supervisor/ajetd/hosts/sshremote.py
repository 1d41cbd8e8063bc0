"""The daemon's side of runs on SSH hosts: reading the val file there, signalling the remote
trial, cleaning up and copying back when a trial ends, and the follower's connection notes."""

from __future__ import annotations

import logging
from pathlib import Path

from ajetd.adapters.store import Home
from ajetd.core import model
from ajetd.core.errors import AjetdError
from ajetd.core.finding import Finding
from ajetd.core.hostspecs import SshSpec
from ajetd.core.model import Run
from ajetd.core.timefmt import iso
from ajetd.daemon.trials import Fetch
from ajetd.hosts import sshcmd

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


def fetch(ssh: SshSpec, run_id: str) -> Fetch:
    """Reads the run's val file on its host (None, logged, when the host does not answer)."""

    def remote(path: str, offset: int) -> tuple[int, bytes] | None:
        try:
            return sshcmd.read_from(ssh, path, offset)
        except AjetdError as exc:
            log.warning("run %s: val file not read on %s: %s", run_id, ssh.target, exc)
            return None

    return remote


def signal(ssh: SshSpec, run: Run, name: str) -> int:
    """INT, TERM or KILL to the remote trial; 0 (logged) when the host does not answer."""
    if run.trial is None:
        return 0
    try:
        return sshcmd.signal(ssh, run.remote_dir, run.trial.number, run.run_id, name)
    except AjetdError as exc:
        log.warning("run %s: SIG%s to %s failed: %s", run.run_id, name, ssh.target, exc)
        return 0


def end(home: Home, ssh: SshSpec, pull: tuple[str, ...], run: Run, now: float, final: bool) -> None:
    """A remote trial ended: end what is left of it there; at the run's end, copy back `pull:`
    artifacts and the remote result dir, unless it is the same folder here."""
    if not run.remote_dir:
        return
    try:
        left = sshcmd.reap(ssh, run.run_id)
        if left:
            home.append_event(run.run_id, now, f"ended {left} leftover process(es) on {ssh.target}")
        if not final or sshcmd.same_dir(ssh, Path(run.result_dir), run.run_id):
            return
        notes = sshcmd.pull(ssh, run.codebase_dir, list(pull), Path(run.result_dir)) if pull else ""
        notes += sshcmd.pull(ssh, run.result_dir, ["."], Path(run.result_dir))
        what = ", ".join([*pull, "the remote result dir"])
        text = f"copied back from {ssh.target}: {what}" + (f" ({notes})" if notes else "")
        home.append_event(run.run_id, now, text)
    except AjetdError as exc:
        log.warning("run %s: cleanup on %s failed: %s", run.run_id, ssh.target, exc)
        home.append_event(run.run_id, now, f"cleanup on {ssh.target} failed: {exc}")


def connection_notes(home: Home, run: Run, seen: int, now: float) -> tuple[Run, int]:
    """The follower's record of dropped and restored connections after the first `seen`
    lines: each is an event; a trial's first drop is the finding `ssh_lost`."""
    if run.trial is None:
        return run, seen
    try:
        notes = home.trial_file(run.run_id, run.trial.number, "sshlost").read_text().splitlines()
    except OSError:
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
