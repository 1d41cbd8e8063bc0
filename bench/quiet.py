"""What a quiet run costs: N live runs printing a line every 5 s, the daemon's CPU by part.

The daemon runs as usual (`python -m ajetd daemon`), with the CPU time (`time.thread_time`)
of a few of its steps summed as they run: the light tick (new output read and diagnosed), the
liveness check (`_panes_alive`: one `/proc/<pid>/stat` per pane), the tmux poll
(`list-panes`), the full look at a run (`supervise`) and the whole full tick. Beside them: the
daemon's whole CPU (its watcher threads included), its tmux server's, and `pipe-pane`'s helper
processes'. Each is printed per run per minute.
Usage: python bench/quiet.py [N] [SECONDS]
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from common import PYTHON, Bench

# Run inside the daemon: wrap the steps with CPU counters, dump them on SIGUSR2.
WRAPPER = r"""
import json, os, signal, sys, time
from ajetd.daemon import loop
from ajetd.adapters import tmux
totals = {}
def wrap(owner, name, label):
    fn = getattr(owner, name, None)
    if fn is None:  # an older tree without this step
        return
    def timed(*args, **kwargs):
        t0 = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            calls, cpu = totals.get(label, (0, 0.0))
            totals[label] = (calls + 1, cpu + time.thread_time() - t0)
    setattr(owner, name, timed)
wrap(loop.Daemon, "scan_output", "light tick (new output)")
wrap(loop.Daemon, "_panes_alive", "liveness check (/proc)")
wrap(tmux.Tmux, "panes", "tmux poll (list-panes)")
wrap(loop.Daemon, "supervise", "full look at a run")
wrap(loop.Daemon, "tick", "full tick (all steps)")
def dump(*_):
    with open(os.environ["AJETD_BENCH_OUT"], "w") as out:
        json.dump(totals, out)
def reset(*_):
    totals.clear()
signal.signal(signal.SIGUSR1, reset)
signal.signal(signal.SIGUSR2, dump)
try:
    from ajetd.cli.entry import entry
except ImportError:  # an older tree
    from ajetd.cli.main import entry
sys.argv = ["ajetd", *sys.argv[1:]]
entry()
"""


def helpers(socket: str, env: dict[str, str]) -> tuple[psutil.Process | None, list[psutil.Process]]:
    """The tmux server and its children that are not panes (`pipe-pane`'s `cat`)."""
    out = subprocess.run(
        ["tmux", "-L", socket, "display", "-p", "#{pid}"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        return None, []
    server = psutil.Process(int(out.stdout))
    panes = subprocess.run(
        ["tmux", "-L", socket, "list-panes", "-a", "-F", "#{pane_pid}"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    return server, [c for c in server.children() if str(c.pid) not in panes]


def cpu(procs: list[psutil.Process]) -> float:
    return sum(sum(p.cpu_times()[:2]) for p in procs if p.is_running())


def main(n: int, seconds: float) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="ajetd-quiet-"))
    wrapper = scratch / "quiet_daemon.py"
    wrapper.write_text(WRAPPER)
    out = scratch / "parts.json"
    import common

    real = common.subprocess.Popen

    def popen(argv, *a, **k):  # type: ignore[no-untyped-def]
        if argv[:3] == [PYTHON, "-m", "ajetd"]:
            argv = [PYTHON, str(wrapper), *argv[3:]]
        return real(argv, *a, **k)

    common.subprocess.Popen = popen  # type: ignore[misc]
    os.environ["AJETD_BENCH_OUT"] = str(out)
    bench = Bench()
    try:
        for _ in range(n):
            bench.drop(bench.blueprint("while true; do echo step; sleep 5; done", "2h"))
        bench.wait(lambda: sum(1 for r in bench.runs() if r.get("started_at")) == n, 120, 0.05)
        time.sleep(5)
        daemon = psutil.Process(bench.daemon.pid)
        server, pipes = helpers(bench.socket, bench.env)
        assert server is not None
        bench.daemon.send_signal(signal.SIGUSR1)
        d0, s0, p0, t0 = cpu([daemon]), cpu([server]), cpu(pipes), time.monotonic()
        time.sleep(seconds)
        d1, s1, p1 = cpu([daemon]), cpu([server]), cpu(pipes)
        elapsed = time.monotonic() - t0
        bench.daemon.send_signal(signal.SIGUSR2)
        Bench.wait(out.exists, 10)
        time.sleep(0.2)
        parts = json.loads(out.read_text())
    finally:
        bench.close()
        shutil.rmtree(scratch, ignore_errors=True)
    per = 60.0 / elapsed / n * 1000  # ms per run per minute
    print(f"{n} live runs printing a line every 5 s, {elapsed:.0f} s:")
    print(f"  daemon, all threads: {d1 - d0:.3f} s CPU = {(d1 - d0) * per:.2f} ms per run-minute")
    print(f"  tmux server: {s1 - s0:.3f} s = {(s1 - s0) * per:.2f} ms per run-minute")
    print(
        f"  pipe-pane helpers ({len(pipes)}): {p1 - p0:.3f} s = {(p1 - p0) * per:.2f} ms "
        "per run-minute"
    )
    for label, (calls, used) in parts.items():
        print(
            f"  {label}: {calls} calls, {used:.3f} s = {used * per:.2f} ms per run-minute "
            f"({used / max(calls, 1) * 1000:.2f} ms a call)"
        )


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 50,
        float(sys.argv[2]) if len(sys.argv) > 2 else 60.0,
    )
