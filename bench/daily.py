"""Daily-use figures: `ajetd status` with 500 ended and 5 live runs; a run's final pictures.

    python bench/daily.py

Prints the wall time of `ajetd status` (80 columns, plain), `status --json`, and the time
drawing.draw_final takes (the child process that draws curves.png and gpus.png: the tick in
which a run ends waits for it) for 300 validation records and 2 GPUs x 2000 samples.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from ajetd.adapters.store import Home
from ajetd.core import model
from ajetd.core.model import Run, State, Status, Trial
from ajetd.pictures import drawing

PYTHON = sys.executable


def _run(i: int, now: float, live: bool, result: Path) -> Run:
    run = Run(
        run_id=f"r{i:05d}",
        source="bp.md",
        submitted_at=now - 90_000 + i,
        purpose=f"bench {i}",
        max_time_s=7200,
        result_dir=str(result / str(i)),
    )
    run = model.add_trial(run, Trial(number=1, command="c", session=f"ajet_bench_{i}"))
    run = model.trial_started(run, now - 80_000 + i)
    history = tuple({"global_steps": s, "mean_reward": 0.01 * s} for s in range(1, 301))
    run = replace(run, history=history, metrics=dict(history[-1]))
    if live:
        return replace(run, state=State.RUNNING)
    run = model.trial_ended(run, 0, now - 70_000 + i)
    return model.finish(run, Status.SUCCEEDED, "exit 0", 0, now - 70_000 + i)


def _time(argv: list[str], env: dict[str, str], n: int = 5) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="ajetd-bench-daily-"))
    home = Home(tmp / "home")
    home.ensure()
    now = time.time()
    for i in range(505):
        run = _run(i, now, i >= 500, tmp / "results")
        home.run_dir(run.run_id).mkdir()
        home.save_run(run)
    env = {**os.environ, "AJETD_HOME": str(home.root), "COLUMNS": "80"}
    status = _time([PYTHON, "-m", "ajetd", "status"], env)
    as_json = _time([PYTHON, "-m", "ajetd", "status", "--json"], env)
    print(f"ajetd status, 500 ended + 5 live, 80 columns: median {status * 1000:.0f} ms")
    print(f"ajetd status --json, 505 runs: median {as_json * 1000:.0f} ms")

    run = replace(home.load_run("r00500"), gpu_ids=(0, 1))
    Path(run.result_dir).mkdir(parents=True)
    with open(drawing.gpu_file(home, run.run_id), "w") as out:
        for k in range(2000):
            gpus = [{"index": g, "util": (k * 7 + g) % 100, "mem": 30000 + k} for g in (0, 1)]
            out.write(json.dumps({"at": run.started_at + 10 * k, "gpus": gpus}) + "\n")
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        drawn, problem = drawing.draw_final(home, run)
        times.append(time.perf_counter() - t0)
        assert drawn == ["curves.png", "gpus.png"], problem
    print(
        f"final pictures (300 records, 2 GPUs x 2000 samples): median {statistics.median(times):.2f} s"
    )


if __name__ == "__main__":
    main()
