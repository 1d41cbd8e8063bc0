"""A daemon that lives for weeks: does what it holds grow with the runs it has seen?

One daemon supervises ROUNDS × BATCH short runs (a batch of BATCH at once, each printing a few
lines and exiting 0, or 3 for every third so that diagnosis and the failure path run too),
one batch after another. After each round the daemon's RSS, open file descriptors, threads,
inotify watches and its children, and the tmux server's RSS, are printed. A daemon that keeps
something per run it has seen (a slot, a watch, a cache entry, a descriptor) shows it here as
a figure that climbs with the rounds instead of settling.

    python bench/longlived.py [ROUNDS] [BATCH]      (default 8 rounds of 25)
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
from common import Bench

# prints a few lines as a training program would, then exits: 0, or 3 with a traceback
PROGRAM = (
    "for i in 1 2 3; do echo step:$i loss:0.$i; done; "
    "if [ $((RANDOM % 3)) = 0 ]; then echo 'Traceback (most recent call last):'; "
    "echo 'RuntimeError: boom'; exit 3; fi"
)


def watches(pid: int) -> int:
    """inotify watches the process holds (each inotify descriptor's fdinfo lists them)."""
    count = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd) != "anon_inode:inotify":
                continue
            info = Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text()
        except OSError:
            continue
        count += sum(1 for line in info.splitlines() if line.startswith("inotify wd:"))
    return count


def _what(proc: psutil.Process) -> str:
    """A child by its command line, or its name and state where it has none (a zombie)."""
    try:
        return " ".join(proc.cmdline()[:4])[:80]
    except psutil.ZombieProcess:
        return f"{proc.name()} (zombie: ended, not yet reaped)"
    except psutil.Error:
        return "(gone)"


def tmux_rss(socket: str) -> float:
    """The runs' tmux server's RSS (0: none, it ends with the last session)."""
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if proc.info["name"] == "tmux: server" and socket in cmd:
            return float(proc.memory_info().rss) / 2**20
    return 0.0


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    bench = Bench()
    daemon = psutil.Process(bench.daemon.pid)
    print(f"longlived.py: {rounds} rounds of {batch} runs, {os.cpu_count()} CPUs")
    print("round  runs  RSS MiB  fds  threads  watches  children  tmux MiB  s/round  CPU s")
    try:
        for r in range(1, rounds + 1):
            t0 = time.monotonic()
            purposes = []
            for _ in range(batch):
                bench.drop(bench.blueprint(PROGRAM))
                purposes.append(f"bench {bench.n}")

            def ended(purposes: list[str] = purposes) -> bool:
                done = {x["purpose"] for x in bench.runs() if x["state"] == "done"}
                return all(p in done for p in purposes)

            bench.wait(ended, 600, 0.2)
            # settled: reports written, sessions closed (keep_session: 0s), a tick or two on
            bench.wait(lambda: not daemon.children(), 60, 0.2)
            time.sleep(2)  # a bench's pause: the figures after the daemon's next ticks
            took = time.monotonic() - t0
            cpu = daemon.cpu_times()
            print(
                f"{r:5d} {r * batch:5d} {daemon.memory_info().rss / 2**20:8.1f} "
                f"{daemon.num_fds():4d} {daemon.num_threads():8d} {watches(daemon.pid):8d} "
                f"{len(daemon.children()):9d} {tmux_rss(bench.socket):9.1f} {took:8.1f} "
                f"{cpu.user + cpu.system:6.1f}",
                flush=True,
            )
            kids = Counter(_what(c) for c in daemon.children(recursive=True))
            for what, count in kids.most_common(3):
                print(f"      children: {count} x {what}", flush=True)
    finally:
        bench.close()


if __name__ == "__main__":
    main()
