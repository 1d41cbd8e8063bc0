"""Crash -> relaunched trial: from a trial's recorded exit to the next trial's start.

Each run fails once with a real NCCL error text unless NCCL_NVLS_ENABLE=0, which is the fix
ajetd applies; the second trial succeeds. Usage: python bench/relaunch.py [N]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from common import Bench, summary

NCCL = "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error"


def main(n: int) -> None:
    bench = Bench()
    samples: list[float] = []
    try:
        command = f'if [ "$NCCL_NVLS_ENABLE" != 0 ]; then echo "{NCCL}"; exit 1; fi; sleep 0.2'
        for _ in range(n):
            bench.drop(bench.blueprint(command))
            run = bench.done_run(60)
            assert run["status"] == "succeeded" and len(run["trials"]) == 2, run
            home = Path(bench.home) / "runs" / run["run_id"]
            exited = float((home / "trial-1.exit").read_text().split()[1])
            relaunched = json.loads((home / "state.json").read_text())["trials"][1]["started_at"]
            samples.append(relaunched - exited)
    finally:
        bench.close()
    print(summary("crash -> relaunched trial (fix: NCCL_NVLS_ENABLE=0)", samples))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
