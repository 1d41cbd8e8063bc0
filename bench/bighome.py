"""A home with thousands of ended runs: how long `status`, `status --json`, `status RUN`,
`wait RUN`, a daemon's start and one tick take, and the daemon's memory.

The runs are written with the store's own functions (`Home.save_run`, `append_event`), not
run: each is an ended run of two trials with a metric history, as a real one leaves it.

    python bench/bighome.py [--sizes 100,1000,5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil

from ajetd.adapters.store import Home
from ajetd.core import model
from ajetd.core.model import Run, State, Status, Trial
from ajetd.core.policy import Timing
from ajetd.daemon.loop import Daemon, DaemonConfig

PYTHON = sys.executable
BLUEPRINT = """## [exp_purpose]\nbench run {n}\n## [exp_codebase_dir]\n/tmp\n## [exp_venv_exe]
{python}\n## [exp_yaml_path]\nc.yaml\n## [exp_launch_command]\n`true`\n## [exp_result_dir]
/tmp/bighome-results/{n}\n## [exp_max_time]\n1h\n"""


def ended_run(n: int, at: float) -> Run:
    """An ended run as a real one leaves it: two trials, a metric history, a status."""
    run_id = f"b{n:05d}"
    trials = tuple(
        Trial(
            number=i,
            command="python -m ajet.launcher --conf c.yaml",
            session=f"ajet_bench_{n}",
            started_at=at + i,
            ended_at=at + i + 60,
            exit_code=1 if i == 1 else 0,
            problem="exit 1; cuda_oom: torch.OutOfMemoryError" if i == 1 else "",
        )
        for i in (1, 2)
    )
    history = tuple({"global_steps": s, "mean_reward": s / 50} for s in range(0, 50, 5))
    run = Run(
        run_id=run_id,
        source=f"bench{n}.md",
        submitted_at=at,
        purpose=f"bench run {n}",
        session=f"ajet_bench_{n}",
        state=State.RUNNING,
        result_dir=f"/tmp/bighome-results/{n}",
        max_time_s=3600,
        codebase_dir="/tmp",
        launch_command="python -m ajet.launcher --conf c.yaml",
        started_at=at + 1,
        trials=trials,
        metrics=dict(history[-1]),
        history=history,
        session_closed=True,
    )
    status = Status.SUCCEEDED if n % 3 else Status.FAILED
    return model.finish(run, status, "the command exited", 0 if n % 3 else 1, at + 200)


def make_home(root: Path, count: int) -> Home:
    home = Home(root)
    home.ensure()
    start = time.time() - count * 300
    for n in range(count):
        run = ended_run(n, start + n * 300)
        home.run_dir(run.run_id).mkdir(mode=0o700)
        (home.run_dir(run.run_id) / "blueprint.md").write_text(BLUEPRINT.format(n=n, python=PYTHON))
        home.save_run(run)
        for text in ("accepted", "trial 1 started", "trial 2 started", "run ended"):
            home.append_event(run.run_id, start + n * 300, text)
    return home


def timed(args: list[str], env: dict[str, str], repeat: int) -> float:
    """Median wall seconds of a CLI command (a fresh process each time, as a user runs it)."""
    spent = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        done = subprocess.run(args, env=env, capture_output=True, check=False)
        spent.append(time.perf_counter() - t0)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{args}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
    return statistics.median(spent)


def daemon_start(env: dict[str, str], home: Path) -> tuple[float, float]:
    """Seconds from starting `ajetd daemon` to its first daemon.json; its RSS (MiB) then."""
    (home / "daemon.json").unlink(missing_ok=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [PYTHON, "-m", "ajetd", "daemon", "--log-level", "WARNING"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while not (home / "daemon.json").exists():
            if proc.poll() is not None:
                raise SystemExit("the daemon exited")
            time.sleep(0.005)
        spent = time.perf_counter() - t0
        rss = psutil.Process(proc.pid).memory_info().rss / 2**20
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return spent, rss


def tick_time(root: Path, repeat: int) -> tuple[float, float]:
    """In this process: seconds to reconcile (a start's reading of the home) and the median
    of `repeat` full ticks with nothing live."""
    daemon = Daemon(
        DaemonConfig(home=root, tmux_socket=f"bighome-{uuid.uuid4().hex[:8]}", timing=Timing())
    )
    daemon.home.ensure()
    t0 = time.perf_counter()
    daemon.reconcile(time.time())
    reconcile = time.perf_counter() - t0
    spent = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        daemon.tick(time.time())
        spent.append(time.perf_counter() - t0)
    return reconcile, statistics.median(spent)


def listing_ms(root: Path, repeat: int) -> tuple[float, float]:
    """In this process: the best of `repeat` readings of every record in full (`--json`,
    `--all`) and of the default view's brief reading (live runs and the 10 newest ended)."""
    home = Home(root)
    best = []
    for brief in (None, 10):
        spent = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            home.listing(brief)
            spent.append(time.perf_counter() - t0)
        best.append(min(spent) * 1000)
    return best[0], best[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="100,1000,5000")
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    head = (
        "runs  make_s  status  json   one    wait   start  rss_MiB  reconcile  tick_ms"
        "  full_ms  brief_ms"
    )
    print(head)
    for count in (int(s) for s in opts.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="ajetd-bighome-") as tmp:
            root = Path(tmp) / "home"
            t0 = time.perf_counter()
            make_home(root, count)
            made = time.perf_counter() - t0
            env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
            env.update(AJETD_HOME=str(root), AJETD_TMUX_SOCKET=f"bh-{uuid.uuid4().hex[:8]}")
            cli = [PYTHON, "-m", "ajetd"]
            last = f"b{count - 1:05d}"
            status = timed([*cli, "status"], env, opts.repeat)
            as_json = timed([*cli, "status", "--json"], env, opts.repeat)
            one = timed([*cli, "status", last, "--json"], env, opts.repeat)
            waited = timed([*cli, "wait", last, "--timeout", "5"], env, opts.repeat)
            start, rss = daemon_start(env, root)
            reconcile, tick = tick_time(root, max(opts.repeat, 5))
            full, brief = listing_ms(root, opts.repeat)
            listed = json.loads(
                subprocess.run(
                    [*cli, "status", "--json", "--all"], env=env, capture_output=True, check=True
                ).stdout
            )
            assert len(listed) == count, len(listed)
            print(
                f"{count:<5} {made:6.1f}  {status:6.2f}  {as_json:5.2f}  {one:5.2f}  "
                f"{waited:5.2f}  {start:5.2f}  {rss:7.0f}  {reconcile:9.2f}  {tick * 1000:7.1f}  {full:7.0f}  {brief:8.0f}"
            )


if __name__ == "__main__":
    main()
