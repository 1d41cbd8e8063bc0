"""A program's exit -> ajetd's record of it, alone: the serial-ends part of `bench/peers.py`
(the same programs, blueprints and measures) without the rest, so that a change on the exit
path is measured in a minute instead of six.

LIVE programs are started with `ajetd submit` and left printing; then ENDS of them end one at
a time (SIGUSR1: the program writes the time and exits 0) and each is timed from its last
statement to `done` in state.json (its mtime) and to `finish.flag` (its mtime).
With `--gap S`, each end waits S seconds after the last one was recorded, so that the daemon
is idle when it comes (without it, as in peers.py, an end may come while the daemon still
finishes the tick of the one before: closing its tmux session, asking tmux for the panes).
Usage: python bench/exitpath.py [LIVE] [ENDS] [--gap S]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from peers import Ajetd, ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("live", type=int, nargs="?", default=20)
    parser.add_argument("ends", type=int, nargs="?", default=20)
    parser.add_argument("--gap", type=float, default=0.0, help="seconds between two ends")
    args = parser.parse_args()
    print(f"exitpath.py: load {os.getloadavg()[0]:.2f}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="exitpath-"))
    peer = Ajetd(work)
    try:
        lat: dict[str, list[float]] = {}
        names = [peer.new() for _ in range(max(args.live, args.ends))]
        for n in names:
            peer.start(n)
        for n in names:
            peer.first_statement(n)
        if args.gap:
            for n in names[: args.ends]:
                time.sleep(args.gap)
                peer.serial_ends([n])
                for what, samples in peer.figures["exit"].items():  # type: ignore[attr-defined]
                    lat.setdefault(what, []).extend(samples)
        else:
            peer.serial_ends(names[: args.ends])
            lat = peer.figures["exit"]  # type: ignore[assignment]
        for n in names[args.ends :]:
            peer.end(n)
        print(f"   (load now {os.getloadavg()[0]:.2f})", flush=True)
        for what, samples in lat.items():
            print(f"exit -> {what}: {ms(samples)}")
    finally:
        peer.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
