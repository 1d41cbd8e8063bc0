"""Diagnosis throughput on a log whose every line names a trigger word with changing digits.

Usage: python bench/triggerlines.py [LINES]

A training program's step lines (`step:12 - actor/loss:0.41 - ... - gpu_util:97 - ...`) hold
`gpu`, a trigger word of `insufficient_gpus`, and digits that change from line to line, so no
line is remembered as quiet: each is read against the kinds its words select. bench/scan.py's
log is mostly quiet lines; this is the other end.
"""

from __future__ import annotations

import random
import sys
import time

from ajetd.diagnosis.stream import diagnose_chunks


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 40000
    rng = random.Random(1)
    data = "".join(
        f"(TaskRunner pid=1234) step:{i} - actor/loss:{rng.random():.4f} - "
        f"perf/max_memory_allocated_gb:{rng.uniform(30, 60):.2f} - gpu_util:{rng.randint(0, 100)}"
        f" - timing_s/step:{rng.uniform(5, 9):.3f}\n"
        for i in range(count)
    ).encode()
    chunks = [data[i : i + 65536] for i in range(0, len(data), 65536)]
    t0 = time.process_time()
    found = diagnose_chunks(chunks)
    cpu = time.process_time() - t0
    mib = len(data) / 2**20
    print(
        f"triggerlines: {count} step lines, {mib:.1f} MiB in {cpu:.2f} s of CPU: "
        f"{mib / cpu:.1f} MiB/s per CPU second; findings {[f.kind for f in found]}"
    )


if __name__ == "__main__":
    main()
