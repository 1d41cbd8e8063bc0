"""What a quiet run costs: N live runs printing a line every 5 s, the daemon's CPU by part.

The daemon runs as usual (`python -m ajetd daemon`), with the CPU time (`time.thread_time`)
of a few of its steps summed as they run: the light tick (new output read and diagnosed), the
liveness check (`_panes_alive`: one `/proc/<pid>/stat` per pane), the tmux poll
(`list-panes`), the full look at a run (`supervise`) and the whole full tick. Beside them: the
CPU and wake-ups of each of the daemon's threads, of its tmux server and of `pipe-pane`'s
helper processes (`sh` and its `cat`), from `/proc/<pid>/task/*/schedstat` (nanoseconds, not
the 10 ms ticks of `cpu_times`) and the threads' voluntary context switches. Each is printed
per run per minute. `--profile FILE`: the loop's thread under cProfile over the window, the
top functions printed.
Usage: python bench/quiet.py [N] [SECONDS] [--profile FILE]"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pstats
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
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
# the full tick's steps, each apart (a step of an older tree that lacks it is left out)
for name in ("watch_live", "admit", "control", "launch", "supervise_live", "housekeeping",
             "publish", "retry_reports", "_next_full_tick", "_scan_new_output"):
    wrap(loop.Daemon, name, f"  {name}")
from ajetd.daemon import campaigns
wrap(campaigns.Campaigns, "tick", "  campaigns.tick")
wrap(campaigns.Campaigns, "claim", "  campaigns.claim")
profile = None
if os.environ.get("AJETD_BENCH_PROFILE"):  # the loop's thread under cProfile, over the window
    import cProfile
    profile = cProfile.Profile()
def dump(*_):
    if profile is not None:
        profile.disable()
        profile.dump_stats(os.environ["AJETD_BENCH_PROFILE"])
    with open(os.environ["AJETD_BENCH_OUT"], "w") as out:
        json.dump(totals, out)
def reset(*_):
    totals.clear()
    if profile is not None:
        profile.enable()
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
    found = [c for c in server.children() if str(c.pid) not in panes]  # `sh -c 'cat >> log'`
    return server, [*found, *(g for c in found for g in c.children())]


def threads(pid: int) -> dict[int, tuple[int, int]]:
    """Each thread's CPU in ns (`schedstat`, finer than `cpu_times`' 10 ms) and its sleeps
    (voluntary context switches: each is followed by a wake-up)."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            ns = int((task / "schedstat").read_text().split()[0])
            status = (task / "status").read_text()
        except (OSError, ValueError):
            continue
        sleeps = next(
            int(line.split()[1])
            for line in status.splitlines()
            if line.startswith("voluntary_ctxt_switches:")
        )
        found[int(task.name)] = (ns, sleeps)
    return found


def sample(pids: list[int]) -> dict[int, dict[int, tuple[int, int]]]:
    got = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            got[pid] = threads(pid)
    return got


def used(
    before: dict[int, dict[int, tuple[int, int]]], after: dict[int, dict[int, tuple[int, int]]]
) -> dict[tuple[int, int], tuple[float, int]]:
    """(pid, tid) -> (CPU seconds, wake-ups) over the window, for threads seen at its end."""
    out = {}
    for pid, tasks in after.items():
        for tid, (ns, sleeps) in tasks.items():
            ns0, sleeps0 = before.get(pid, {}).get(tid, (0, 0))
            out[(pid, tid)] = ((ns - ns0) / 1e9, sleeps - sleeps0)
    return out


Sampled = dict[int, dict[int, tuple[int, int]]]


@dataclass
class Window:
    """What the window measured: per thread CPU and wake-ups, the daemon's step counters."""

    n: int
    elapsed: float
    load: float
    daemon: int
    server: int
    helpers: int
    got: dict[tuple[int, int], tuple[float, int]]
    parts: dict[str, tuple[int, float]]

    def total(self, pids: set[int] | None) -> tuple[float, int]:
        mine = [v for (p, _), v in self.got.items() if pids is None or p in pids]
        return sum(c for c, _ in mine), sum(w for _, w in mine)


def wrapped_daemon(scratch: Path) -> None:
    """Bench's daemons start through the wrapper that counts the steps' CPU."""
    import common

    wrapper = scratch / "quiet_daemon.py"
    wrapper.write_text(WRAPPER)
    real = common.subprocess.Popen

    def popen(argv, *a, **k):  # type: ignore[no-untyped-def]
        if argv[:3] == [PYTHON, "-m", "ajetd"]:
            argv = [PYTHON, str(wrapper), *argv[3:]]
        return real(argv, *a, **k)

    common.subprocess.Popen = popen  # type: ignore[misc]


def measure(n: int, seconds: float, profile: Path | None, spread: bool = False) -> Window:
    load = os.getloadavg()[0]
    scratch = Path(tempfile.mkdtemp(prefix="ajetd-quiet-"))
    wrapped_daemon(scratch)
    out = scratch / "parts.json"
    os.environ["AJETD_BENCH_OUT"] = str(out)
    if profile:
        os.environ["AJETD_BENCH_PROFILE"] = str(profile.resolve())
    bench = Bench()
    t_first = time.monotonic()
    try:
        for i in range(n):
            bench.drop(bench.blueprint("while true; do echo step; sleep 5; done", "2h"))
            if spread:  # one start every 5/N s: the lines come spread over the period
                time.sleep(max(0.0, t_first + (i + 1) * 5.0 / n - time.monotonic()))
        bench.wait(lambda: sum(1 for r in bench.runs() if r.get("started_at")) == n, 120, 0.05)
        time.sleep(5)
        server, pipes = helpers(bench.socket, bench.env)
        assert server is not None
        bench.daemon.send_signal(signal.SIGUSR1)
        pids = [bench.daemon.pid, server.pid, *(p.pid for p in pipes)]
        before, t0 = sample(pids), time.monotonic()
        time.sleep(seconds)
        after = sample(pids)
        elapsed = time.monotonic() - t0
        bench.daemon.send_signal(signal.SIGUSR2)
        Bench.wait(out.exists, 10)
        time.sleep(0.2)
        parts = json.loads(out.read_text())
    finally:
        bench.close()
        shutil.rmtree(scratch, ignore_errors=True)
    got = used(before, after)
    return Window(n, elapsed, load, bench.daemon.pid, server.pid, len(pipes), got, parts)


def report(w: Window) -> None:
    per = 60.0 / w.elapsed / w.n * 1000  # ms per run per minute
    mins = w.elapsed / 60
    d, s = w.total({w.daemon}), w.total({w.server})
    rest = w.total(None)
    h = (rest[0] - d[0] - s[0], rest[1] - d[1] - s[1])
    print(f"{w.n} live runs printing a line every 5 s, {w.elapsed:.0f} s (load {w.load:.2f}):")
    for label, (cpu, wakes) in (("daemon, all threads", d), ("tmux server", s)):
        print(
            f"  {label}: {cpu:.3f} s CPU = {cpu * per:.2f} ms per run-minute; "
            f"{wakes / mins:.0f} wake-ups a minute"
        )
        if label.startswith("daemon"):
            for (pid, tid), (c, wk) in sorted(w.got.items()):
                if pid == w.daemon:
                    name = "the loop (main thread)" if tid == pid else f"thread {tid}"
                    print(f"    {name}: {c * per:.2f} ms per run-minute, {wk / mins:.0f} wake-ups")
    print(
        f"  pipe-pane helpers ({w.helpers}, with their `cat`s): {h[0]:.3f} s = "
        f"{h[0] * per:.2f} ms per run-minute; {h[1] / mins:.0f} wake-ups a minute"
    )
    for label, (calls, spent) in w.parts.items():
        print(
            f"  {label}: {calls} calls, {spent:.3f} s = {spent * per:.2f} ms per run-minute "
            f"({spent / max(calls, 1) * 1000:.2f} ms a call)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, nargs="?", default=50)
    parser.add_argument("seconds", type=float, nargs="?", default=60.0)
    parser.add_argument("--profile", type=Path, help="cProfile the loop over the window")
    parser.add_argument(
        "--spread",
        action="store_true",
        help="start the runs 5/N s apart, as bench/peers.py's `ajetd submit`s come: each "
        "line then comes alone, not with the others'",
    )
    args = parser.parse_args()
    report(measure(args.n, args.seconds, args.profile, args.spread))
    if args.profile:
        stats = pstats.Stats(str(args.profile))
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(40)
