"""Live campaigns: (a) `ajetd campaign set` round trip (CLI start, request renamed into
control/, daemon applies it and saves the state, answer read), (b) `ajetd campaign add` of a
tiny experiment -> its ledger row (the daemon launches it as a run, it ends, the row is
written), (c) `ajetd campaign status --json` (a whole CLI process).
Usage: python bench/campaign.py [N]
"""

from __future__ import annotations

import subprocess
import sys
import time

from common import PYTHON, Bench, summary


def cli(bench: Bench, *args: str) -> str:
    out = subprocess.run(
        [PYTHON, "-m", "ajetd", *args], env=bench.env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def main(n: int) -> None:
    bench = Bench()
    set_lat: list[float] = []
    row_lat: list[float] = []
    status_lat: list[float] = []
    try:
        folder = bench.tmp / "campaign"
        folder.mkdir()
        (folder / "base.md").write_text(bench.blueprint("true"))
        (folder / "campaign.yaml").write_text(
            f"name: bench\nbase: base.md\nresult_dir: {bench.tmp / 'camp'}\nbaseline: false\n"
            f"stop: {{max_experiments: {n + 1}, deadline: 10h}}\n"
        )
        cid = cli(bench, "campaign", str(folder))
        ledger = bench.tmp / "camp" / "ledger.tsv"
        bench.wait(ledger.exists, 30)
        for i in range(n):
            t0 = time.monotonic()
            cli(bench, "campaign", "set", cid, "--target-metric", str(100 + i))
            set_lat.append(time.monotonic() - t0)
            t0 = time.monotonic()
            cli(bench, "campaign", "add", cid, "--name", f"e{i}", "--description", "bench")
            bench.wait(lambda i=i: len(ledger.read_text().splitlines()) >= i + 2, 60)
            row_lat.append(time.monotonic() - t0)
            t0 = time.monotonic()
            cli(bench, "campaign", "status", cid, "--json")
            status_lat.append(time.monotonic() - t0)
    finally:
        bench.close()
    print(summary("(a) campaign set -> answered", set_lat))
    print(summary("(b) campaign add -> ledger row (a `true` experiment)", row_lat))
    print(summary("(c) campaign status --json", status_lat))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
