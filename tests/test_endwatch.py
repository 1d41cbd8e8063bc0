"""The loop's own wait (`adapters/endwatch`): run folders watched by inotify in the loop's
thread, and the wake-up pipe the other threads write into. Real files, real threads."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from ajetd.adapters.endwatch import Wake
from ajetd.adapters.watch import Watcher


def _started(tmp_path: Path) -> Watcher:
    for name in ("inbox", "control", "swarm"):
        (tmp_path / name).mkdir()
    watcher = Watcher(Wake())
    watcher.start(tmp_path / "inbox", tmp_path / "control", (tmp_path / "swarm",))
    return watcher


def test_a_watched_folders_end_files_wake_the_wait_and_nothing_else_does(tmp_path: Path) -> None:
    watcher = _started(tmp_path)
    try:
        run = tmp_path / "runs" / "abc123"
        run.mkdir(parents=True)
        assert watcher.keep_runs({str(run)}) == {}
        (run / "state.json").write_text("{}\n")  # the daemon's own writes: read and dropped
        os.rename(run / "state.json", run / "state2.json")
        assert not watcher.wake.wait(0.05)
        (run / "trial-1.exit").write_text("0 1.5\n")  # closed after writing
        assert watcher.wake.wait(5)
        watcher.wake.clear()
        (run / ".hup.tmp").write_text("1\n")
        os.rename(run / ".hup.tmp", run / "trial-1.hup")  # renamed in (an older script)
        assert watcher.wake.wait(5)
        assert watcher.take_ended() == {str(run / "trial-1.exit"), str(run / "trial-1.hup")}
        gone = str(tmp_path / "runs" / "gone01")
        refused = watcher.keep_runs({str(run), gone})  # a folder that is not there
        assert set(refused) == {gone} and watcher.watched_runs() == {str(run)}
        assert watcher.keep_runs(set()) == {} and watcher.watched_runs() == set()
        watcher.wake.clear()
        (run / "trial-2.exit").write_text("0 2.5\n")  # no longer watched
        assert not watcher.wake.wait(0.05) and not watcher.ends_waiting()
    finally:
        watcher.stop()


def test_wake_is_an_event_for_other_threads_and_signal_handlers() -> None:
    wake = Wake()
    assert not wake.wait(0.01)  # not opened yet: a plain event
    wake.open()
    try:
        assert not wake.wait(0.02) and not wake.is_set()
        began = time.monotonic()
        threading.Timer(0.05, wake.set).start()
        assert wake.wait(5) and wake.is_set()
        assert time.monotonic() - began < 2
        wake.clear()
        assert not wake.is_set() and not wake.wait(0.01)
        read, write = os.pipe()
        wake.add(read, lambda: os.read(read, 1) == b"y")  # a reader that says whether it counts
        os.write(write, b"n")
        assert not wake.wait(0.05)
        os.write(write, b"y")
        assert wake.wait(5)
        os.close(read)
        os.close(write)
    finally:
        wake.close()


def test_logs_written_are_read_without_waking_the_wait_and_an_overflow_says_any(
    tmp_path: Path,
) -> None:
    """The log watch: writes to a `.log` in a watched folder are listed once each at the next
    read and wake nothing; other files are not listed; a folder that is not there is refused;
    a queue the kernel let overflow reads as "any log may have been written" (None)."""
    watcher = _started(tmp_path)
    try:
        logs = tmp_path / "results" / "logs"
        logs.mkdir(parents=True)
        gone = str(tmp_path / "results" / "gone")
        assert set(watcher.keep_logs({str(logs), gone})) == {gone}
        for _ in range(3):
            with open(logs / "trial-1.log", "ab") as handle:
                handle.write(b"a line\n")
        (logs / "notes.txt").write_text("not a log\n")
        assert not watcher.wake.wait(0.05)  # no write woke the loop
        assert watcher.logs_written() == {str(logs / "trial-1.log")}
        assert watcher.logs_written() == set()  # each write is listed once
        limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
        with open(logs / "trial-1.log", "ab") as one, open(logs / "trial-2.log", "ab") as two:
            for _ in range(min(limit, 10**6) // 2 + 1):  # events that alternate are not
                # merged: the kernel's queue overflows
                one.write(b"x")
                one.flush()
                two.write(b"y")
                two.flush()
        assert watcher.logs_written() is None
        assert watcher.keep_logs(set()) == {}
        with open(logs / "trial-1.log", "ab") as handle:
            handle.write(b"no longer watched\n")
        assert watcher.logs_written() == set()
    finally:
        watcher.stop()
