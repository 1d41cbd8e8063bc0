"""The log writer tmux runs for `pipe-pane` (`tmux.pipe_writer`), as its own bash process: its
stdin a pipe standing in for tmux's, its FIFOs made as a trial's are (`writer_fifos`).

Unasked it checks its folder only every CHECK_EVERY_S (60 s), so what it must do at once is
driven from outside here: the end of its input ends it (no check period later), an ask is
answered, a daemon's asks nobody takes leave one answer at most in its FIFO, and a trial's
end that asks after them reads its own answer.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import subprocess
import termios
from collections.abc import Iterator
from pathlib import Path

import pytest

from ajetd.adapters.tmux import (
    CHECK_EVERY_S,
    CHECK_UNASKED_S,
    WRITER_ARGS,
    moved_note,
    pipe_writer,
)
from ajetd.core.trialscript import WRITER_ASK, writer_ask_lines, writer_fifos
from conftest import wait_for


class Writer:
    """A running writer: `feed` is tmux's side of its input."""

    def __init__(self, tmp: Path, fifos: bool = True) -> None:
        self.log = tmp / "result" / "logs" / "trial-1.log"
        self.log.parent.mkdir(parents=True)
        self.spare = tmp / "home" / "trial-1.log"
        self.spare.parent.mkdir()
        self.ask, self.answer = (Path(f) for f in writer_fifos(str(self.spare)))
        if fifos:
            self.ask.parent.mkdir(mode=0o700)
            os.mkfifo(self.ask, 0o600)
            os.mkfifo(self.answer, 0o600)
        command = pipe_writer(str(self.log), str(self.spare))
        self.proc = subprocess.Popen(["bash", "-c", command], stdin=subprocess.PIPE)
        assert self.proc.stdin is not None
        self.feed = self.proc.stdin
        wait_for(self.log.exists, what="the writer to open its log")

    def write(self, text: str) -> None:
        self.feed.write(text.encode())
        self.feed.flush()

    def pending(self, fifo: Path) -> int:
        """Bytes waiting in a FIFO (opened read-write: never blocks, takes nothing)."""
        fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
        try:
            buf = bytearray(4)
            fcntl.ioctl(fd, termios.FIONREAD, buf)
            return int.from_bytes(buf, "little")
        finally:
            os.close(fd)

    def ask_check(self) -> None:
        fd = os.open(self.ask, os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(fd, f"{WRITER_ASK}\n".encode())
        finally:
            os.close(fd)

    def end(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[Writer]:
    w = Writer(tmp_path)
    yield w
    w.end()


def test_the_writer_ends_the_moment_its_input_does(writer: Writer) -> None:
    """The pane's end (tmux closes the pipe) ends the writer at once, not at its next check,
    CHECK_EVERY_S (60 s) away: `cat`'s exit is an end of file in the wait's FIFO. Before, a
    writer outlived its pane by up to its 5 s check, holding the log's file system."""
    assert CHECK_EVERY_S >= 30  # the wait this test proves is not what ends it
    writer.write("a line\n")
    wait_for(lambda: writer.log.read_text() == "a line\n", what="the line in the log")
    writer.feed.close()
    assert writer.proc.wait(timeout=10) == 0
    assert writer.log.read_text() == "a line\n"


def test_the_writer_without_fifos_still_ends_with_its_input(tmp_path: Path) -> None:
    """A home whose file system has no FIFOs: the writer waits on a pipe nobody writes and
    checks every 5 s; its input's end still ends it."""
    w = Writer(tmp_path, fifos=False)
    try:
        w.write("x\n")
        w.feed.close()
        assert w.proc.wait(timeout=CHECK_UNASKED_S + 10) == 0
        assert w.log.read_text() == "x\n"
    finally:
        w.end()


def test_asks_nobody_takes_leave_one_answer_and_a_trials_end_reads_its_own(
    writer: Writer,
) -> None:
    """The daemon asks where it misses the log (`Observe.ask_writer_if_moved`) and nobody
    reads those answers: 50 asks leave at most one answer in the FIFO (a FIFO that filled
    would block the writer in its answer for good). A trial's end then takes that one back
    before it asks, and its own answer comes."""
    for _ in range(50):
        writer.ask_check()
        wait_for(lambda: writer.pending(writer.ask) == 0, what="the ask taken")
    wait_for(lambda: writer.pending(writer.answer) == 1, what="an answer")
    assert writer.pending(writer.answer) == 1
    lines = writer_ask_lines(str(writer.spare))  # as a trial's script has them
    waits = [
        line.replace("read -r -t 1 -u 8 _;", "read -r -t 5 -u 8 _ && echo answered;")
        for line in lines
    ]
    assert waits != lines
    end = subprocess.run(
        ["bash", "-c", "\n".join(waits)], capture_output=True, text=True, timeout=20, check=False
    )
    assert end.stdout == "answered\n", end
    assert writer.pending(writer.answer) == 0
    writer.write("still writing\n")
    wait_for(lambda: "still writing" in writer.log.read_text(), what="the writer going on")


def test_an_asked_writer_moves_its_output_at_once_where_its_folder_vanished(
    writer: Writer,
) -> None:
    """Asked, the writer looks now: its log's folder gone, the log is made again (what was
    written before copied in first) within the ask's answer, not at the next check."""
    writer.write("before\n")
    wait_for(lambda: writer.log.read_text() == "before\n", what="the first line")
    gone = writer.log.parent.parent.rename(writer.log.parent.parent.with_name("moved"))
    writer.ask_check()
    wait_for(writer.log.exists, timeout=10, what="the log made again")
    writer.write("after\n")
    wait_for(lambda: "after" in writer.log.read_text(), what="the next line there")
    text = writer.log.read_text()
    assert text.startswith("before\n") and text.endswith("after\n"), text
    assert (gone / "logs" / "trial-1.log").read_text() == "before\n"


@pytest.mark.parametrize(
    ("log", "spare", "real"),
    [
        ("/r/x y/logs/trial-1.log", "/h/runs/ab12cd/trial-1.log", "/r/x y"),
        ("/r/x y/logs/trial-1.log", "/h/runs/ab12cd/trial-1.log", "/elsewhere/x y"),
        ("/top/logs/trial-2.log", None, None),
        ("/a/b/c #%'\"/logs/trial-1.log", "/h o/runs/ab12cd/trial-1.log", ""),
    ],
)
def test_the_writers_paths_are_found_in_bash_as_python_finds_them(
    log: str, spare: str | None, real: str | None
) -> None:
    """The writer gets each path once, as a positional parameter (walk88 F4: written into
    its script wherever used, a 1.3 KB result dir passed tmux's 16 KiB a call), and finds
    the rest in bash: the same as `Path.parents`, `moved_note` and `writer_fifos` say."""
    command = pipe_writer(log, spare, real)
    words = shlex.split(command.removeprefix("exec "))
    assert words[:2] == ["bash", "-c"] and words[3] == "ajetd-log-writer"
    given = words[4:7]
    shown = (
        '; printf "%s\\n" "$LOGS" "$DIR" "$ABOVE" "$NAME" "$OTHER" "$NOTE" "$ASK" "$ANSWER" "$REAL"'
    )
    out = subprocess.run(
        ["bash", "-c", WRITER_ARGS + shown, "x", *given], capture_output=True, text=True, check=True
    ).stdout.split("\n")[:-1]
    path = Path(log)
    ask, answer = writer_fifos(spare) if spare else ("/dev/null/none", "/dev/null/none")
    assert out == [
        str(path.parents[0]),
        str(path.parents[1]),
        str(path.parents[2]),
        "/" + path.parents[1].name,
        spare or "/dev/null",
        moved_note(spare) if spare else "/dev/null",
        ask,
        answer,
        real or "",
    ]
    assert sum(w.count(log) for w in words) == 1  # the log's path once, whatever its length
