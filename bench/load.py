"""(c) CPU time and RSS of the daemon supervising N live runs, beside seed 001's own loop.

Seed 001 watches each session with `wait_tmux.py`: `tmux list-panes` every 2 s per session.
Here that loop runs for the same N sessions in one process, measured in the same window, with
its tmux children's CPU included, as is the daemon's.
Usage: python bench/load.py [N] [SECONDS]
"""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
from common import PYTHON, Bench

SEED_LOOP = r"""
import subprocess, sys, time
sock, names, seconds = sys.argv[1], sys.argv[2].split(","), float(sys.argv[3])
end = time.time() + seconds
while time.time() < end:
    for name in names:  # one wait_tmux.py per session, each polling every 2 s
        subprocess.run(["tmux", "-L", sock, "list-panes", "-F", "#{pane_current_command}",
                        "-t", name], capture_output=True, text=True, timeout=5)
    time.sleep(2)
"""


def cpu(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system + t.children_user + t.children_system


def main(n: int, seconds: float) -> None:
    bench = Bench()
    try:
        for _ in range(n):
            bench.drop(bench.blueprint("while true; do echo step; sleep 5; done", "2h"))
        bench.wait(lambda: sum(1 for r in bench.runs() if r.get("started_at")) == n, 120, 0.05)
        sessions = ",".join(sorted(r["session"] for r in bench.runs()))
        daemon = psutil.Process(bench.daemon.pid)
        seed = subprocess.Popen([PYTHON, "-c", SEED_LOOP, bench.socket, sessions, str(seconds)])
        seed_ps = psutil.Process(seed.pid)
        d0, rss = cpu(daemon), []
        start = time.monotonic()
        seed_cpu = 0.0
        while seed.poll() is None:
            rss.append(daemon.memory_info().rss)
            seed_cpu = cpu(seed_ps)
            time.sleep(1)
        elapsed = time.monotonic() - start
        d1 = cpu(daemon)
    finally:
        bench.close()
    print(f"(c) {n} live runs for {elapsed:.0f} s")
    print(
        f"    ajetd daemon: CPU {d1 - d0:.2f} s ({(d1 - d0) / elapsed * 100:.2f} % of a core), "
        f"RSS max {max(rss) / 2**20:.1f} MiB"
    )
    print(f"    seed 001 loop: CPU {seed_cpu:.2f} s ({seed_cpu / elapsed * 100:.2f} % of a core)")
    print(f"    ratio daemon/seed: {(d1 - d0) / seed_cpu:.3f}")


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 50,
        float(sys.argv[2]) if len(sys.argv) > 2 else 300.0,
    )
