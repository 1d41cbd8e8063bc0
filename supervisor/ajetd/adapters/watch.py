"""Watchers that only wake the daemon loop; they decide nothing.

The inbox watch also records which files were completed by a rename or a close, so intake can
take them at once instead of waiting for them to settle. A file moved in from another folder
(`mv`, inotify's unpaired IN_MOVED_TO) counts as renamed in: the observer reports full events.
The live runs' folders, where trials write their exit files, are watched from the loop's own
thread (`endwatch`); watchdog's threads watch the inbox, control and swarm folders.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers.inotify import InotifyObserver

from ajetd.adapters.endwatch import IN_MODIFY, OVERFLOW, EndWatch, Wake

END_SUFFIXES = (".exit", ".hup", ".sshlost")  # a trial's exit file, hang-up and SSH-lost markers
LOG_SUFFIXES = (".log",)  # the trials' logs (`pipe-pane`'s `cat` appends each line)

# watchdog holds each IN_MOVED_FROM for up to this long to pair it with its IN_MOVED_TO, and
# every later event of that watch waits behind it. When its reader thread wakes between the
# two halves of one rename (two cores make that common), a blueprint renamed into the inbox
# or an exit file renamed into place was seen 0.5 s late (watchdog's default). Both halves
# of a rename are queued by the same system call, so a few milliseconds pair them still.
MOVE_PAIRING_S = 0.005
# What the inbox's watch asks of the kernel: a file or folder made, written, closed after
# writing, moved, removed. Not its opens and read-only closes: intake itself opens each file
# it looks at (`writers.open_for_writing`), and a wake for each would be a loop that spins
# while a file waits for its writer.
INBOX_EVENTS = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileClosedEvent,
    FileMovedEvent,
    FileDeletedEvent,
    DirCreatedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    DirDeletedEvent,
]
with contextlib.suppress(ImportError):  # watchdog >= 6; older ones pair in InotifyBuffer
    from watchdog.observers.inotify_move_event_grouper import InotifyMoveEventGrouper

    InotifyMoveEventGrouper.delay = MOVE_PAIRING_S
with contextlib.suppress(ImportError):
    from watchdog.observers.inotify_buffer import InotifyBuffer  # type: ignore[import-not-found]

    InotifyBuffer.delay = MOVE_PAIRING_S


class _Waker(FileSystemEventHandler):
    def __init__(
        self,
        wake: Wake,
        ready: set[str] | None,
        lock: threading.Lock,
        suffixes: tuple[str, ...] = (),
        flag: threading.Event | None = None,
        ended: set[str] | None = None,
    ) -> None:
        self._wake = wake
        self._ready = ready
        self._lock = lock
        self._suffixes = suffixes
        self._flag = flag
        self._ended = ended

    def on_any_event(self, event: FileSystemEvent) -> None:
        if self._suffixes:
            if isinstance(event, FileCreatedEvent):  # still empty: its close or rename follows
                return
            paths = [os.fsdecode(event.src_path), os.fsdecode(getattr(event, "dest_path", b""))]
            if not any(p.endswith(self._suffixes) for p in paths):
                return
            if self._ended is not None:
                with self._lock:
                    self._ended.update(p for p in paths if p.endswith(self._suffixes))
        if self._flag is not None:
            self._flag.set()
        if self._ready is not None:
            name: str | None = None
            if isinstance(event, FileMovedEvent):
                name = os.path.basename(os.fsdecode(event.dest_path))
            elif isinstance(event, FileClosedEvent):
                name = os.path.basename(os.fsdecode(event.src_path))
            if name:
                with self._lock:
                    self._ready.add(name)
        self._wake.set()


class Watcher:
    """Wakes `wake` on any change in the inbox or control folder, and on trial end files: under
    the swarm folder (watchdog), in the live runs' folders (`watch_run`, read in `wake.wait`)."""

    def __init__(self, wake: Wake) -> None:
        self.wake = wake
        self.ready: set[str] = set()
        self.trial_end = threading.Event()  # set when a trial ended: look at tmux at once
        self.ended: set[str] = set()  # the exit files (and markers) seen since the last take
        self.lock = threading.Lock()
        self._observer = InotifyObserver(generate_full_events=True)
        self._runs: EndWatch | None = None  # the live runs' folders, once started
        # the live trials' log folders: read at the light tick, never woken by (see `logs_written`)
        self._logs: EndWatch | None = None

    def start(self, inbox: Path, control: Path, ends: tuple[Path, ...]) -> None:
        """Watch `inbox`, `control`, and the folders under which swarm servers write their
        exit files (`ends`, recursively); run folders are added one by one (`watch_run`)."""
        self.wake.open()
        self._runs = EndWatch(END_SUFFIXES)
        self.wake.add(self._runs.fd, self._take_run_ends)
        self._logs = EndWatch(LOG_SUFFIXES, IN_MODIFY)  # not in the wait: it wakes nothing
        self._observer.schedule(
            _Waker(self.wake, self.ready, self.lock), str(inbox), event_filter=INBOX_EVENTS
        )
        self._observer.schedule(_Waker(self.wake, None, self.lock), str(control))
        # Only trial ends (exit files, hang-up markers): the daemon's own writes must not wake it.
        waker = _Waker(
            self.wake,
            None,
            self.lock,
            suffixes=END_SUFFIXES,
            flag=self.trial_end,
            ended=self.ended,
        )
        # Exit files arrive by a close after writing (by rename from older scripts), markers by
        # writing: only those events are asked of the kernel, not the opens, reads and writes of
        # every file the daemon itself touches.
        wanted = [FileMovedEvent, FileClosedEvent]
        for folder in ends:
            self._observer.schedule(waker, str(folder), recursive=True, event_filter=wanted)
        self._observer.daemon = True
        self._observer.start()

    def watch_runs_folder(self, folder: Path) -> None:
        """Watch the folder the runs' folders are in, for one of them removed or moved by
        hand (`EndWatch.watch_parent`); where the kernel refuses, the daemon finds it out at
        the run's next supervision, as before."""
        if self._runs is not None:
            self._runs.watch_parent(folder)

    def watch_run(self, folder: Path) -> None:
        """Watch a live run's folder for its trials' end files (before its trial may go)."""
        if self._runs is not None:
            self._runs.watch(folder)

    def watch_run_again(self, folder: Path) -> None:
        """Watch a run's folder made again at its path: the watch that was there stays on the
        old folder (moved elsewhere, or removed while a file in it is open)."""
        if self._runs is not None:
            self._runs.unwatch(str(folder))
            self._runs.watch(folder)

    def keep_runs(self, folders: set[str]) -> dict[str, str]:
        """Watch exactly these run folders (the live runs'); returns those the kernel refused
        (gone, or its watches used up), with why: their ends are seen by polling."""
        return _keep(self._runs, folders)

    def keep_logs(self, folders: set[str]) -> dict[str, str]:
        """Watch exactly these folders (the live trials' log folders) for logs written; returns
        those the kernel refused, with why: their logs are looked at every light tick."""
        return _keep(self._logs, folders)

    def watched_logs(self) -> set[str]:
        """The log folders watched now (one the kernel let go, removed, is not)."""
        return set() if self._logs is None else self._logs.watched()

    def forget_logs(self, folder: str) -> None:
        """Stop watching a log folder that vanished (removed, moved: the watch went with it),
        so that `keep_logs` watches what is at its path now."""
        if self._logs is not None:
            self._logs.unwatch(folder)

    def logs_written(self) -> set[str] | None:
        """The trial logs in watched folders written since the last call, each once; None where
        that is not known (not started, or the kernel's queue overflowed): any may have been.

        Each line a run prints is a write by `pipe-pane`'s `cat`, and an event in the kernel's
        queue (one for a run of writes the reader has not taken yet); nothing waits on this
        queue, so no write wakes the daemon: the light tick reads it, one `read` for all the
        runs, instead of a `stat` of every live trial's log."""
        if self._logs is None:
            return None
        found = self._logs.read()
        return None if OVERFLOW in found else set(found)

    def watched_runs(self) -> set[str]:
        """The run folders watched now."""
        return set() if self._runs is None else self._runs.watched()

    def _take_run_ends(self) -> bool:
        """In the loop's thread, from `wake.wait`: the end files that just appeared."""
        assert self._runs is not None
        found = self._runs.read()
        if found:
            with self.lock:
                self.ended.update(found)
        return bool(found)

    def take_ready(self) -> set[str]:
        with self.lock:
            names = set(self.ready)
            self.ready.clear()
        return names

    def ends_waiting(self) -> bool:
        """Some trial end file was seen since the last `take_ended` (a quick look: no copy;
        the run folders' events are read first, without waiting)."""
        if self._runs is not None:
            self._take_run_ends()
        return bool(self.ended)

    def take_ended(self) -> set[str]:
        """The trial end files seen since the last call, so that their runs are looked at
        first: their ends are recorded before anything else is done."""
        if self._runs is not None:
            self._take_run_ends()
        with self.lock:
            paths = set(self.ended)
            self.ended.clear()
        return paths

    def stop(self) -> None:
        self._observer.stop()
        self._observer.join(timeout=5)
        for watch in (self._runs, self._logs):
            if watch is not None:
                watch.close()
        self._runs = self._logs = None
        self.wake.close()


def _keep(watch: EndWatch | None, folders: set[str]) -> dict[str, str]:
    """Watch exactly `folders` with `watch`; those the kernel refused, with why."""
    refused: dict[str, str] = {}
    if watch is None:
        return refused
    watch.keep(folders)
    for folder in folders - watch.watched():
        try:
            watch.watch(Path(folder))
        except OSError as exc:
            refused[folder] = exc.strerror or str(exc)
    return refused
