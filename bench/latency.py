"""(a) exit noticed: trial exit -> state recorded; (b) intake: blueprint dropped -> command runs.

Each trial's exit time is the one its script writes into the exit file (`date +%s.%N` right
after the program ends); "recorded" is the mtime of the run's state file once it says `done`
(leftover processes reaped, final metrics read, record saved).
Intake ends when the launch command's first action (`date +%s.%N > started`) runs.
Usage: python bench/latency.py [N]
"""

from __future__ import annotations

import sys
from pathlib import Path

from common import Bench, summary


def main(n: int) -> None:
    bench = Bench()
    exit_lat: list[float] = []
    intake_lat: list[float] = []
    try:
        for _ in range(n):
            marker = bench.tmp / f"started-{bench.n + 1}"
            text = bench.blueprint(f"date +%s.%N > {marker}; sleep 0.2")
            _, t0 = bench.drop(text)
            bench.wait(lambda m=marker: m.exists() and m.read_text().strip(), 30)  # type: ignore[misc]
            intake_lat.append(float(marker.read_text()) - t0)
            run = bench.done_run(30)
            home = Path(bench.home) / "runs" / run["run_id"]
            exited = float((home / "trial-1.exit").read_text().split()[1])
            recorded = (home / "state.json").stat().st_mtime_ns / 1e9
            exit_lat.append(recorded - exited)
    finally:
        bench.close()
    print(summary("(a) exit noticed -> state recorded", exit_lat))
    print(summary("(b) blueprint dropped -> command running", intake_lat))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
