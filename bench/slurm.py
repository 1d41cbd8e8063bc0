"""Slurm: controller calls per minute with N runs supervised, and job end -> finish.flag.

Usage (as root, with slurm-wlm and munge installed): python bench/slurm.py [N]
A one-node Slurm (tests/slurmcluster.py) runs N batch blueprints, two at a time on its two
CPUs, the rest pending. `squeue`, `scontrol`, `sbatch` and `scancel` are wrapped by shims on
PATH that log each call with its caller, so the daemon's own controller calls are counted
apart from the batch followers' one `sbatch` each.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import Bench

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import slurmcluster

SHIM = """#!/bin/sh
echo "$(date +%s.%N) {name} $PPID" >> {log}
exec {real} "$@"
"""


def main(n: int) -> None:
    why = slurmcluster.missing()
    if why:
        print(f"skipped: {why}")
        return
    tmp = Path(tempfile.mkdtemp(prefix="ajetd-slurm-bench-"))
    cluster = slurmcluster.start(tmp / "cluster", cpus=2)
    shims, calls = tmp / "shims", tmp / "calls.log"
    shims.mkdir()
    for name in ("squeue", "scontrol", "sbatch", "scancel"):
        real = shutil.which(name)
        (shims / name).write_text(SHIM.format(name=name, log=calls, real=real))
        (shims / name).chmod(0o755)
    env = {"SLURM_CONF": str(cluster.conf), "PATH": f"{shims}:{os.environ['PATH']}"}
    bench = Bench(extra_env=env)
    try:
        command = "for i in 1 2 3; do echo step $i; sleep 1; done"
        for _ in range(n):
            text = bench.blueprint(command, "10m").replace(
                "keep_session: 0s", "keep_session: 0s\nslurm: {mode: batch}\ngpus: 0"
            )
            bench.drop(text)
        started = time.time()
        bench.wait(lambda: sum(r["state"] == "done" for r in bench.runs()) == n, 1800, 0.5)
        elapsed = time.time() - started
        daemon = bench.daemon.pid
        lines = [line.split() for line in calls.read_text().splitlines()]
        own = [c for c in lines if c[2] == str(daemon) and c[1] in ("squeue", "scontrol")]
        lags = []
        for run in bench.runs():
            result = Path(run["result_dir"])
            exit_file = bench.home / "runs" / run["run_id"] / "trial-1.job.exit"
            if exit_file.exists() and (result / "finish.flag").exists():
                lags.append((result / "finish.flag").stat().st_mtime - exit_file.stat().st_mtime)
        statuses = sorted({r["status"] for r in bench.runs()})
    finally:
        bench.close()
        slurmcluster.stop(cluster)
    per_min = len(own) / (elapsed / 60)
    print(f"slurm: {n} batch runs on a 2-CPU node in {elapsed:.0f} s, statuses {statuses}")
    print(
        f"  daemon's controller calls: {len(own)} ({per_min:.1f}/min: "
        f"{sum(c[1] == 'squeue' for c in own)} squeue, {sum(c[1] == 'scontrol' for c in own)} "
        "scontrol); sbatch by the followers: "
        f"{sum(c[1] == 'sbatch' for c in lines)}"
    )
    if lags:
        lags.sort()
        print(
            f"  job end (its exit file) -> finish.flag: p50 {statistics.median(lags):.2f} s, "
            f"max {lags[-1]:.2f} s (n={len(lags)})"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
