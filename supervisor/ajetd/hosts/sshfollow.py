"""`python -m ajetd.hosts.sshfollow`: the pane's program for a trial on a remote host.

It streams the remote trial's output to the pane (so `tmux attach` and the trial log show it
live), reconnects when the connection drops (each loss is appended to the `--lost` file,
which wakes the daemon: finding `ssh_lost`), forwards Ctrl-C and TERM to the remote trial, and
exits with the remote program's exact exit code, which the local trial script records.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from ajetd.adapters.store import append_bytes
from ajetd.core.trialscript import OWN_LINE_PREFIX
from ajetd.hosts import sshcmd, sshstream

MAX_BACKOFF_S = 30.0


class Follower:
    def __init__(self, args: argparse.Namespace) -> None:
        self.spec = sshcmd.spec_from_json(args.spec)
        self.rdir: str = args.rdir
        self.trial: int = args.trial
        self.run_id: str = args.run_id
        self.lost_file: str = args.lost
        self.offset = 0  # bytes of the remote log shown so far
        self.lost_at: float | None = None
        self.ssh: subprocess.Popen[bytes] | None = None  # the stream's ssh, while it runs

    def hang_up(self, signum: int, frame: FrameType | None) -> None:
        """The pane's session ended (SIGHUP): the stream's ssh, in a session of its own, gets
        no hang-up of its own; it is ended here, and so is the follower (the remote trial
        goes on: it was never this connection's)."""
        if self.ssh is not None and self.ssh.poll() is None:
            self.ssh.kill()
        raise SystemExit(128 + signal.SIGHUP)

    def forward(self, signum: int, frame: FrameType | None) -> None:
        """Ctrl-C (or a TERM) here means: to the remote trial."""
        name = signal.Signals(signum).name.removeprefix("SIG")
        try:
            sshcmd.signal(self.spec, self.rdir, self.trial, self.run_id, name)
        except sshcmd.SshError as exc:
            self.say(f"could not pass SIG{name} on: {exc}")

    def say(self, text: str) -> None:
        sys.stdout.buffer.write(f"\r\n{OWN_LINE_PREFIX}{text}\r\n".encode())
        sys.stdout.buffer.flush()

    def note(self, word: str) -> None:
        append_bytes(
            Path(self.lost_file), f"{time.time():.3f} {word} {self.spec.target}\n".encode()
        )

    def stream(self) -> int:
        """One connection's worth of output; its exit code."""
        script = sshcmd.stream_script(self.rdir, self.trial, self.offset)
        mark = sshcmd.new_mark()  # what the host's rc prints is not the log's: never counted
        # its own process group: a Ctrl-C in the pane reaches the follower (which passes it to
        # the remote trial), never this ssh, whose end would read as a lost connection
        with subprocess.Popen(
            [*sshcmd.argv(self.spec), sshcmd.remote_command(script, mark)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        ) as proc:
            self.ssh = proc
            try:
                got = sshstream.exchange(proc, mark, self.show)
            finally:  # the pane gone (EIO on a write), a hang-up: never an ssh left behind
                self.ssh = None
                if proc.poll() is None:
                    proc.kill()
        errors = got.stderr.strip()[-64 * 1024 :]
        if errors:  # not the rc's notes (before the mark): they are not the trial's
            self.say(errors.decode(errors="replace"))
        return got.code if got.begun else (got.code or 255)  # no mark: never a success

    def show(self, chunk: bytes) -> None:
        if self.lost_at is not None:
            self.note("back")
            self.lost_at = None
        self.offset += len(chunk)
        sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()

    def follow(self) -> int:
        backoff = 1.0
        while True:
            code = self.stream()
            if code == 0:
                return self.finish()
            if code == sshcmd.GONE:
                self.say(f"the trial's folder {self.rdir} is gone on {self.spec.target}")
                return 255
            if code == sshcmd.VANISHED:
                self.say(
                    "the remote trial ended without an exit status (killed, or the host rebooted)"
                )
                return 255
            if self.lost_at is None:
                self.lost_at = time.time()
                self.note("lost")
                self.say(
                    f"ssh connection to {self.spec.target} lost (ssh exit {code}); "
                    "the remote trial goes on; reconnecting"
                )
            time.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)

    def finish(self) -> int:
        """The bytes the stream may have missed, then the remote exit code."""
        while True:
            try:
                done = sshcmd.run(
                    self.spec, sshcmd.finish_script(self.rdir, self.trial, self.offset)
                )
                break
            except sshcmd.SshError as exc:
                self.say(f"{exc}; retrying")
                time.sleep(2)
        head, _, rest = done.stdout.partition(b"\n")
        if rest:
            self.show(rest)
        fields = head.decode(errors="replace").split()
        return int(fields[0]) if fields and fields[0].lstrip("-").isdigit() else 255


def main() -> int:
    parser = argparse.ArgumentParser(prog="ajetd.hosts.sshfollow")
    parser.add_argument("--spec", required=True)
    parser.add_argument("--rdir", required=True)
    parser.add_argument("--trial", type=int, required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--lost", required=True)
    follower = Follower(parser.parse_args())
    signal.signal(signal.SIGINT, follower.forward)
    signal.signal(signal.SIGTERM, follower.forward)
    signal.signal(signal.SIGHUP, follower.hang_up)
    return follower.follow()


if __name__ == "__main__":
    sys.exit(main())
