"""An ssh call's three streams, fed and read in one loop: what lies between its marks.

The login shell runs the user's ~/.bashrc for every command ssh brings, and an rc that prints
(a welcome, a blank line, a module system's notes on stderr) puts its words before every
answer: a size, an exit code, a tar archive, the trial's log, whose bytes the follower counts
to resume after a reconnection; one that sets an EXIT trap prints after it, and one that leaves
a job in the background holds the session open after the command ended. Each command prints a
mark of its own first and an end mark with its status last, on stdout and on stderr
(`sshcmd.remote_command`); only what lies between is the command's (`Answer`), and once both
end marks have come the command is done, whatever the session still holds (`exchange`).

One loop over pipes (`selectors`: no limit on descriptor numbers), not files: a full local
temporary folder (Ray's spill files, compiler caches) must not cost the host's answers.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

# How long ssh may stay once the command's end marks have come: it ends at once, unless a job
# the host's rc started in the background holds the session's output open (`sleep 300 &`;
# `nohup x &` too, its output not being a terminal), and ssh would wait for that job to end:
# every call would time out. It is ended instead: the command is done, its status is known.
LINGER_S = 0.5
STDERR_MAX = 1 << 20  # what is kept of a call's stderr: its last bytes (the error comes last)
_STATUS_MAX = 8  # the end mark's status line: `0`..`255` and its newline
_CHUNK = 65536


class Answer:
    """A command's output read as it comes: what lies between its mark's line and its end
    mark (`sshcmd.remote_command`), and the status the end mark carries (`code`). Memory stays
    bounded and the work linear: before the mark only what could be its start is held;
    inside, only what could be the end mark's start; after it, only its status line."""

    def __init__(self, mark: str) -> None:
        self._begin = f"{mark}\n".encode()
        # no newline first: the last line's own would be held back until more came
        self._end = f"{mark}-end ".encode()
        self._held = b""
        self._state = 0  # 0: before the mark, 1: the command's own bytes, 2: after its end
        self.code: int | None = None  # the status its end mark carries, once its line is whole

    def feed(self, chunk: bytes) -> bytes:
        """The part of `chunk` that is the command's own."""
        if self._state == 2:
            self._status(chunk)
            return b""
        if not chunk:
            return b""
        data = self._held + chunk
        if self._state == 0:
            at = data.find(self._begin)
            if at < 0:
                self._held = data[-(len(self._begin) - 1) :]
                return b""
            self._state, data = 1, data[at + len(self._begin) :]
        at = data.find(self._end)
        if at >= 0:
            self._state, self._held = 2, b""
            self._status(data[at + len(self._end) :])
            return data[:at]
        keep = _tail_starting(data, self._end)
        self._held = data[len(data) - keep :] if keep else b""
        return data[: len(data) - keep]

    def _status(self, chunk: bytes) -> None:
        """The end mark's status, from the bytes after it (its line: a few digits)."""
        if self.code is not None or len(self._held) > _STATUS_MAX:
            return
        self._held += chunk[: _STATUS_MAX + 1]
        line, newline, _ = self._held.partition(b"\n")
        if newline and line.isdigit() and len(line) <= 3:
            self.code = int(line)

    def end(self) -> bytes:
        """The output has ended: what is still held is the command's where its end mark never
        came (the connection dropped, the command was killed), none of it where the mark never
        came (its bash did not start)."""
        held = self._held if self._state == 1 else b""
        if self._state != 2:
            self._held = b""
        return held

    @property
    def begun(self) -> bool:
        """Whether the command's mark came: the host's bash ran ajetd's command."""
        return self._state > 0

    @property
    def ended(self) -> bool:
        """Whether the command's end mark came: all of its output is here."""
        return self._state == 2


def _tail_starting(data: bytes, mark: bytes) -> int:
    """How many of `data`'s last bytes are the start of `mark` (0: none)."""
    for size in range(min(len(mark) - 1, len(data)), 0, -1):
        if mark.startswith(data[-size:]):
            return size
    return 0


def answer(data: bytes, mark: str) -> bytes:
    """A whole output's own part (`Answer`)."""
    reader = Answer(mark)
    return reader.feed(data) + reader.end()


class _Said:
    """A call's stderr: what follows the command's mark (its own words, and ssh's where the
    connection dropped), or all of it where the mark never came (ssh's `Connection refused`,
    the login shell's `base64: not found`); the last STDERR_MAX bytes either way."""

    def __init__(self, mark: str) -> None:
        self.reader = Answer(mark)
        self._before = bytearray()
        self._after = bytearray()

    def feed(self, chunk: bytes) -> None:
        if not self.reader.begun:
            self._before += chunk
            del self._before[:-STDERR_MAX]
        self._after += self.reader.feed(chunk)
        del self._after[:-STDERR_MAX]

    def text(self) -> bytes:
        if not self.reader.begun:
            return bytes(self._before)
        return bytes(self._after + self.reader.end())[-STDERR_MAX:]


@dataclass(frozen=True)
class Exchanged:
    """How a call went: `code` is the command's status as its end mark says (whatever ssh
    exited with after it: an rc's EXIT trap, a connection dropped once it was done), else
    ssh's exit code; `begun`: the host's bash ran the command at all; `stderr`: `_Said`."""

    code: int
    begun: bool
    stderr: bytes
    ended: bool = False  # its end mark came: `code` is the command's own status


def exchange(
    proc: subprocess.Popen[bytes],
    mark: str,
    sink: Callable[[bytes], object],
    stdin: bytes = b"",
    deadline: float = float("inf"),
) -> Exchanged:
    """Feed `stdin` to `proc` (an ssh started with pipes for the three), give the command's
    own stdout to `sink` as it comes, keep its stderr, until both end marks have come or both
    streams ended; then let ssh end (`LINGER_S` once the marks came: ended after it). A sink
    that raises (a reader that stopped) stops it all: the caller ends ssh. TimeoutError past
    `deadline` (`time.monotonic`), ssh killed."""
    assert proc.stdout is not None and proc.stderr is not None
    out, err = Answer(mark), _Said(mark)
    pending = memoryview(stdin)
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ, "out")
        selector.register(proc.stderr, selectors.EVENT_READ, "err")
        if proc.stdin is not None:
            if pending:
                os.set_blocking(proc.stdin.fileno(), False)
                selector.register(proc.stdin, selectors.EVENT_WRITE, "in")
            else:
                proc.stdin.close()
        reading = {"out", "err"}
        stderr_by = float("inf")  # once stdout's end mark came: stderr's end mark awaited so long
        while ("out" in reading and out.code is None) or (
            "err" in reading and err.reader.code is None and time.monotonic() < stderr_by
        ):
            if out.code is not None and stderr_by == float("inf"):
                stderr_by = time.monotonic() + LINGER_S  # a job may hold stderr alone
            left = min(deadline, stderr_by) - time.monotonic()
            if left <= 0 and time.monotonic() >= deadline:
                _end(proc)
                raise TimeoutError
            for key, _ in selector.select(None if left == float("inf") else max(left, 0.0)):
                if key.data == "in":
                    pending = _write(proc, pending)
                    if not pending:
                        selector.unregister(key.fileobj)
                        _close_stdin(proc)
                    continue
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    selector.unregister(key.fileobj)
                    reading.discard(key.data)
                elif key.data == "out":
                    if own := out.feed(chunk):
                        sink(own)
                else:
                    err.feed(chunk)
    _close_stdin(proc)
    if rest := out.end():
        sink(rest)
    # with no end mark (a dropped connection, a killed command) ssh is ending anyway
    left = deadline - time.monotonic()
    wait = LINGER_S if out.code is not None else min(max(left, 0.0), 30.0)
    try:
        exited = proc.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        _end(proc)
        exited = 255
    if out.code is not None:
        return Exchanged(out.code, out.begun, err.text(), ended=True)
    return Exchanged(exited, out.begun, err.text())


def _write(proc: subprocess.Popen[bytes], pending: memoryview) -> memoryview:
    """What is left of `pending` once ssh's stdin took what it could (nothing where the
    other side stopped reading: the command is done with its input)."""
    assert proc.stdin is not None
    try:
        return pending[os.write(proc.stdin.fileno(), pending[:_CHUNK]) :]
    except BlockingIOError:
        return pending
    except BrokenPipeError:
        return pending[:0]


def _close_stdin(proc: subprocess.Popen[bytes]) -> None:
    if proc.stdin is not None and not proc.stdin.closed:
        # what was buffered could not be flushed: nothing reads it
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()


def _end(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    proc.wait()
