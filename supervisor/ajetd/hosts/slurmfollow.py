"""`python -m ajetd.hosts.slurmfollow`: the pane's program for a Slurm batch trial.

Submits the job once (the job id is kept in `--job-file`, so a restart never resubmits),
shows its output as it grows (so `tmux attach` shows the run live), passes Ctrl-C and TERM on
to the job (`scancel --signal --batch`), and exits with the job's exit code: the one its trial
script wrote, or the one the daemon wrote into `--done-file` when Slurm ended the job without
it (node failure, cancellation, Slurm's own time limit).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from ajetd.adapters.regular import read_small
from ajetd.adapters.store import write_atomic
from ajetd.adapters.trialfiles import read_exit
from ajetd.core.trialscript import OWN_LINE_PREFIX
from ajetd.hosts import slurm

PIECE_BYTES = 1 << 20  # the batch log is passed on in pieces of this, never whole


class Follower:
    def __init__(self, args: argparse.Namespace) -> None:
        self.argv: list[str] = json.loads(args.argv)
        self.log = Path(args.log)
        self.job_file = Path(args.job_file)
        self.exit_file = Path(args.exit_file)
        self.done_file = Path(args.done_file)
        self.offset = 0
        self.job = ""

    def say(self, text: str) -> None:
        sys.stdout.write(f"{OWN_LINE_PREFIX}{text}\n")
        sys.stdout.flush()

    def forward(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name.removeprefix("SIG")
        if self.job:
            try:
                slurm.cancel(self.job, name, batch=True)
            except slurm.SlurmError as exc:
                self.say(f"could not pass SIG{name} on to job {self.job}: {exc}")

    def show(self) -> None:
        try:
            with open(self.log, "rb") as handle:
                handle.seek(self.offset)
                while data := handle.read(PIECE_BYTES):  # a log of any size, in pieces
                    self.offset += len(data)
                    sys.stdout.buffer.write(data)
                    sys.stdout.buffer.flush()
        except OSError:
            return

    def code(self) -> int | None:
        for path in (self.exit_file, self.done_file):
            parsed = read_exit(path)
            if parsed is not None:
                return parsed[0]
        return None

    def run(self) -> int:
        if self.job_file.exists():
            self.job = read_small(self.job_file).strip()
            self.say(f"following batch job {self.job} again")
        else:
            self.job = slurm.submit(self.argv)
            write_atomic(self.job_file, self.job + "\n")  # an error names it
            self.say(f"submitted batch job {self.job}")
        while (code := self.code()) is None:
            self.show()
            time.sleep(0.2)
        time.sleep(0.3)  # the last lines Slurm writes after the script's end
        self.show()
        return code


def main() -> int:
    parser = argparse.ArgumentParser(prog="ajetd.hosts.slurmfollow")
    for name in ("--argv", "--log", "--job-file", "--exit-file", "--done-file"):
        parser.add_argument(name, required=True)
    follower = Follower(parser.parse_args())
    signal.signal(signal.SIGINT, follower.forward)
    signal.signal(signal.SIGTERM, follower.forward)
    try:
        return follower.run()
    except slurm.SlurmError as exc:
        follower.say(f"sbatch failed: {exc}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
