"""`python -m fakejet.printer LOG SEED [--hang] [--colour] [--no-final-newline]`: prints a
real log excerpt as a failing program does, into its terminal: in pieces cut anywhere (a line,
a traceback split between writes), with pauses between them, then exits 1, or with `--hang`
stays alive and silent (once `$AJETD_RESULT_DIR/printed` is there, all is printed). `--colour`: each line in colour codes; `--no-final-newline`: the last
line ends without its newline.

LOG is a corpus excerpt (`tests/data/corpus/<kind>/<name>.log`): its first line names its
source and is not printed. SEED chooses the cuts and the pauses.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time

PAUSES = (0.05, 0.3, 1.6)  # the last one outlasts a read of the daemon's (1.5 s)


def _write_all(data: bytes) -> None:
    while data:
        data = data[os.write(1, data) :]


def main() -> None:
    path, seed = sys.argv[1], int(sys.argv[2])
    with open(path, "rb") as handle:
        data = handle.read()
    data = data[data.find(b"\n") + 1 :]
    if "--colour" in sys.argv[3:]:
        lines = data.split(b"\n")
        data = b"\n".join(b"\x1b[1;31m" + x + b"\x1b[0m" if x else x for x in lines)
    if "--no-final-newline" in sys.argv[3:]:
        data = data.rstrip(b"\n")
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(data)), min(3, len(data) - 1)))
    for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
        _write_all(data[start:end])
        time.sleep(rng.choice(PAUSES))
    if "--hang" in sys.argv[3:]:
        with open(os.path.join(os.environ["AJETD_RESULT_DIR"], "printed"), "w"):
            pass  # all of it is in the terminal now
        while True:
            signal.pause()
    sys.exit(1)


if __name__ == "__main__":
    main()
