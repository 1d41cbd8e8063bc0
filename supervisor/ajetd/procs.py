"""The only module that touches processes (psutil, signals).

A run's processes are the trial script's descendants plus anything that carries the run's
`AJETD_RUN_ID` in its environment: Ray and vLLM daemonise and leave the tree, but keep the
environment they were started with. Only the current user's processes are ever signalled.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import Iterable

import psutil

log = logging.getLogger(__name__)

SIGNALS = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "KILL": signal.SIGKILL}


def _descendants(root_pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(root_pid).children(recursive=True)
    except psutil.Error:
        return []


def _marked(run_id: str) -> list[psutil.Process]:
    """This user's processes started with AJETD_RUN_ID=<run_id>."""
    me = os.getuid()
    found = []
    for proc in psutil.process_iter(["uids"]):
        try:
            uids = proc.info["uids"]
            if uids is None or uids.real != me or proc.pid == os.getpid():
                continue
            if proc.environ().get("AJETD_RUN_ID") == run_id:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def owners(pids: Iterable[int]) -> dict[int, str]:
    """For GPU processes: the `AJETD_RUN_ID` each was started with (run id, or `swarm_<port>`
    for a swarm server); processes of other users, or outside ajetd, are left out."""
    found = {}
    for pid in pids:
        try:
            run_id = psutil.Process(pid).environ().get("AJETD_RUN_ID")
        except psutil.Error:
            continue
        if run_id:
            found[pid] = run_id
    return found


def run_processes(run_id: str, root_pid: int | None) -> list[psutil.Process]:
    """The run's live processes, the trial script itself excluded."""
    procs = {p.pid: p for p in _marked(run_id)}
    if root_pid:
        procs.update({p.pid: p for p in _descendants(root_pid)})
        procs.pop(root_pid, None)
    return list(procs.values())


def snapshot(run_id: str, root_pid: int | None) -> list[dict[str, object]]:
    """The run's processes with CPU (over 0.2 s) and RSS, for `ajetd diag`; touches nothing."""
    found = run_processes(run_id, root_pid)
    if root_pid:
        with contextlib.suppress(psutil.Error):
            found.insert(0, psutil.Process(root_pid))
    for proc in found:
        with contextlib.suppress(psutil.Error):
            proc.cpu_percent(None)
    psutil.cpu_percent(0.2)
    rows: list[dict[str, object]] = []
    for proc in found:
        try:
            with proc.oneshot():
                rows.append(
                    {
                        "pid": proc.pid,
                        "ppid": proc.ppid(),
                        "cpu_percent": proc.cpu_percent(None),
                        "rss_mib": round(proc.memory_info().rss / 2**20, 1),
                        "status": proc.status(),
                        "command": " ".join(proc.cmdline())[:160] or proc.name(),
                    }
                )
        except psutil.Error:
            continue
    return rows


def signal_run(run_id: str, root_pid: int | None, name: str) -> int:
    """Send INT, TERM or KILL to the run's processes; return how many were signalled.

    INT goes to the pane's foreground process group first, exactly as Ctrl-C would, then to
    any run process outside it. The trial script traps INT and TERM and survives to record the
    exit status.
    """
    sig = SIGNALS[name]
    count = 0
    group = None
    if root_pid and sig == signal.SIGINT:
        with contextlib.suppress(OSError):
            group = os.getpgid(root_pid)
            os.killpg(group, sig)
            count += 1
    for proc in run_processes(run_id, root_pid):
        try:
            if group is not None and os.getpgid(proc.pid) == group:
                continue
            proc.send_signal(sig)
            count += 1
        except (psutil.Error, OSError):
            continue
    return count


def port_holder(port: int, run_id: str) -> str | None:
    """Who listens on `port`, when it is not a process of this run: `port 10086 is held by pid
    123 (python serve.py)`; None when free, held by this run, or not visible to this user."""
    try:
        connections = psutil.net_connections(kind="inet")
    except (psutil.Error, OSError):
        return None
    for conn in connections:
        if conn.status != psutil.CONN_LISTEN or not conn.laddr or conn.laddr.port != port:
            continue
        if conn.pid is None:
            return f"port {port} is held by a process of another user"
        try:
            proc = psutil.Process(conn.pid)
            if proc.environ().get("AJETD_RUN_ID") == run_id:
                return None
            command = " ".join(proc.cmdline())[:120]
        except psutil.Error:
            command = "?"
        return f"port {port} is held by pid {conn.pid} ({command})"
    return None


def reap_run(run_id: str, root_pid: int | None, grace_s: float = 2.0) -> list[int]:
    """After a trial ended: TERM what is left of the run, KILL it after `grace_s`."""
    left = run_processes(run_id, root_pid)
    for proc in left:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(left, timeout=grace_s)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    if left:
        log.info("run %s: ended %d leftover process(es)", run_id, len(left))
    return [p.pid for p in left]
