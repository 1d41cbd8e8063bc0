"""GPU probe cost and placement under a storm.

Usage: python bench/gpu.py [BLUEPRINTS]   (issue 4: 40 blueprints asking for 1-8 GPUs on a
fake 8-GPU host: never an overlap; the longest wait of a large request against the policy's
bound)

1. Probe cost: `GpuWatch.take` (sample, Xid events, process owners) on an `AJETD_FAKE_GPUS`
   file of 8 GPUs with 4 processes each (this process's own pids, so owners are looked up).
   The real NVML backend is to be measured on a GPU machine (see docs/benchmarks.md).
2. Storm: the pure planner (`placement.plan`, the daemon's own code) driven by a discrete-event
   simulation: blueprints arrive over 30 minutes, each runs 5-60 minutes once placed.
   Checked at every step: no GPU is ever held by two runs. The bound of first come, first
   served with reservation: no run starts later than the last end among the runs submitted
   before it (a later run never delays an earlier one).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ajetd.adapters.nvml import FakeProbe
from ajetd.core import placement
from ajetd.core.gpuuse import GpuSample
from ajetd.daemon.gpuwatch import GpuWatch


def probe_cost(rounds: int = 2000) -> None:
    gpus = [
        {
            "index": i,
            "name": "H100",
            "memory_total_mib": 81920,
            "memory_used_mib": 4000,
            "utilization": 50,
            "processes": [{"pid": os.getpid(), "memory_mib": 1000} for _ in range(4)],
        }
        for i in range(8)
    ]
    path = Path(tempfile.mkdtemp()) / "gpus.json"
    path.write_text(json.dumps({"gpus": gpus}))
    watch = GpuWatch(FakeProbe(path))
    start = time.perf_counter()
    for i in range(rounds):
        watch.take(float(i))
    per = (time.perf_counter() - start) / rounds
    print(f"probe: GpuWatch.take on 8 fake GPUs x 4 processes: {per * 1e6:.0f} us per sample")


def storm(count: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    arrivals = sorted(rng.uniform(0, 1800) for _ in range(count))
    asks = {f"r{i:02d}": rng.choice([1, 1, 2, 2, 4, 8]) for i in range(count)}
    length = {r: rng.uniform(300, 3600) for r in asks}
    submitted = dict(zip(asks, arrivals, strict=True))
    gpus = [GpuSample(i, "H100", "", 0.0, 0.0, 81920.0) for i in range(8)]
    now, running, started, ended = 0.0, {}, {}, {}
    events = sorted(arrivals)
    while len(ended) < count:
        queue = [r for r in asks if submitted[r] <= now and r not in started]
        assigned = dict(running)
        plan = placement.plan(
            [placement.Ask(r, str(asks[r])) for r in queue], gpus, assigned, frozenset()
        )
        for run_id, decision in plan.items():
            if isinstance(decision, placement.Place) and decision.gpus:
                running[run_id] = decision.gpus
                started[run_id] = now
                events.append(now + length[run_id])
        held = [i for g in running.values() for i in g]
        assert len(held) == len(set(held)), "two runs on one GPU"
        events = sorted(t for t in events if t > now)
        now = events[0] if events else now
        for run_id in [r for r in running if started[r] + length[r] <= now]:
            ended[run_id] = started[run_id] + length[run_id]
            del running[run_id]
    waits = {r: started[r] - submitted[r] for r in asks}
    late = [
        r
        for r in asks
        if started[r]
        > max([submitted[r]] + [ended[e] for e in asks if submitted[e] < submitted[r]]) + 1e-6
    ]
    big = [waits[r] for r in asks if asks[r] == 8]
    print(
        f"storm: {count} blueprints (1-8 GPUs) on 8 GPUs: no overlap; "
        f"wait p50 {statistics.median(waits.values()) / 60:.0f} min, "
        f"max {max(waits.values()) / 60:.0f} min; 8-GPU requests: {len(big)}, longest wait "
        f"{max(big) / 60:.0f} min; runs started after every earlier run had ended "
        f"(the bound broken): {len(late)}"
    )


if __name__ == "__main__":
    probe_cost()
    storm(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
