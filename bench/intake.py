"""Intake by route: a blueprint dropped into the inbox -> its run recorded (state.json).

Routes, as people and programs drop files: `ajetd submit` (temp file + rename, in the
inbox); `cp` (create, write, close); `mv` of a file written a moment before in another folder
of the same file system (a rename from outside the watched folder); an editor's save (a temp
name in the inbox, then rename); rsync/scp style (a `.name.XXXXXX` dot-file, then rename).
Each drop waits for its run's record before the next one; the daemon keeps its default
5 s liveness period, so a drop nothing wakes the loop for shows up as seconds.
Usage: python bench/intake.py [N per route]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from common import PYTHON, Bench, summary


def _count(bench: Bench) -> int:
    return len(list((bench.home / "runs").glob("*/state.json")))


def _routes(bench: Bench, outside: Path) -> dict[str, Callable[[str, str], None]]:
    inbox = bench.home / "inbox"

    def submit(name: str, text: str) -> None:
        src = outside / name
        src.write_text(text)
        subprocess.run(
            [PYTHON, "-m", "ajetd", "submit", str(src)],
            env=bench.env,
            check=True,
            capture_output=True,
        )

    def cp(name: str, text: str) -> None:
        src = outside / name
        src.write_text(text)
        subprocess.run(["cp", str(src), str(inbox / name)], check=True)

    def mv(name: str, text: str) -> None:
        src = outside / name
        src.write_text(text)  # written a moment ago, then moved in
        subprocess.run(["mv", str(src), str(inbox / name)], check=True)

    def editor(name: str, text: str) -> None:
        tmp = inbox / f"{name}.tmp~"  # not *.md: never taken by itself
        tmp.write_text(text)
        os.rename(tmp, inbox / name)

    def rsync(name: str, text: str) -> None:
        tmp = inbox / f".{name}.Xq3zYw"
        tmp.write_text(text)
        os.rename(tmp, inbox / name)

    return {"submit": submit, "cp": cp, "mv": mv, "editor save": editor, "rsync/scp": rsync}


def main(n: int) -> None:
    bench = Bench()
    outside = bench.tmp / "elsewhere"  # same file system as the home
    outside.mkdir()
    results: dict[str, list[float]] = {}
    try:
        for route, drop in _routes(bench, outside).items():
            samples = results.setdefault(route, [])
            for i in range(n):
                before = _count(bench)
                text = bench.blueprint("true")
                t0 = time.monotonic()
                drop(f"{route.split()[0].replace('/', '-')}-{i}.md", text)
                bench.wait(lambda b=before: _count(bench) > b, 30, step=0.002)  # type: ignore[misc]
                samples.append(time.monotonic() - t0)
                time.sleep(0.3)  # let the run's trial start and end apart from the next drop
    finally:
        bench.close()
    for route, samples in results.items():
        print(summary(f"{route:12s} drop -> run recorded", samples))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
