"""The loop's own wait: a wake-up pipe and the live runs' folders (inotify), in one `select`.

Why not watchdog for the trials' end files: its events reach the loop through two threads (its
inotify reader, then its dispatcher, each waiting for the GIL), 1.5-2 ms between an exit file's
close and the loop's wake-up on two cores; here the kernel wakes the loop's thread itself, which
reads the event. inotify is reached through libc with `ctypes` (Python has no inotify of its
own; watchdog does the same): a folder is watched per live run, for files closed after writing
and files renamed in; the daemon's own writes there (its records) are read and dropped by name.
watchdog keeps the inbox, control and swarm folders, where a millisecond is nothing.

`Wake` has `threading.Event`'s set/clear/is_set/wait, so the watchdog threads and the signal
handlers wake the loop as before (a byte into the pipe).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

IN_MODIFY = 0x00000002
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_ISDIR = 0x40000000
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, length of the name that follows
OVERFLOW = "<inotify overflow>"  # taken as "some trial may have ended": tmux is asked


class EndWatch:
    """An inotify instance watching run folders for end files (`suffixes`)."""

    def __init__(
        self, suffixes: tuple[str, ...], events: int = IN_CLOSE_WRITE | IN_MOVED_TO
    ) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self._add = libc.inotify_add_watch
        self._add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self._add.restype = ctypes.c_int
        self._rm = libc.inotify_rm_watch
        self._rm.argtypes = [ctypes.c_int, ctypes.c_int]
        self._rm.restype = ctypes.c_int
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify: {os.strerror(err)}")
        self.fd: int = fd
        self._suffixes = tuple(s.encode() for s in suffixes)
        self._events = events  # the daemon's: closed after writing, renamed in
        self._folders: dict[int, str] = {}  # watch descriptor -> folder
        self._watches: dict[str, int] = {}  # folder -> watch descriptor
        self._parents: dict[int, str] = {}  # watch descriptor -> a folder the watched ones are in

    def watch_parent(self, folder: Path) -> None:
        """Watch the folder the watched folders are made in (`runs/`) for a folder in it
        removed or moved away. A removed folder says so itself (IN_DELETE_SELF) only once
        nothing holds it: while a file in it is open, its inode lives on and says nothing
        (walk 30: a live run's folder removed by hand came back only at the daemon's next
        write, 27 s later). Its parent is told at the `rmdir` or `rename` itself."""
        mask = IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR | IN_DONT_FOLLOW
        wd = self._add(self.fd, os.fsencode(str(folder)), mask)
        if wd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), str(folder))
        self._parents[wd] = str(folder)

    def watch(self, folder: Path) -> None:
        """Watch `folder` (idempotent); an OSError when the kernel refuses (watches used up)."""
        key = str(folder)
        if key in self._watches:
            return
        mask = self._events | IN_ONLYDIR | IN_DONT_FOLLOW | IN_MOVE_SELF | IN_DELETE_SELF
        wd = self._add(self.fd, os.fsencode(key), mask)
        if wd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), key)
        self._watches[key] = wd
        self._folders[wd] = key

    def keep(self, folders: set[str]) -> None:
        """Stop watching every folder not in `folders`."""
        for key in set(self._watches) - folders:
            self.unwatch(key)

    def unwatch(self, key: str) -> None:
        """Stop watching the folder at path `key` (the inode watched there, wherever it is)."""
        wd = self._watches.pop(key, None)
        if wd is not None:
            self._folders.pop(wd, None)
            self._rm(self.fd, wd)  # fails harmlessly when the folder is gone already

    def watched(self) -> set[str]:
        return set(self._watches)

    def read(self) -> list[str]:
        """The end files closed or renamed in since the last read; `OVERFLOW` among them when
        the kernel dropped events (its queue was full)."""
        found: list[str] = []
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return found
            offset = 0
            while offset + _HEADER.size <= len(data):
                wd, mask, _, length = _HEADER.unpack_from(data, offset)
                start = offset + _HEADER.size
                name = data[start : start + length].rstrip(b"\0")
                offset = start + length
                if mask & IN_Q_OVERFLOW:
                    found.append(OVERFLOW)
                elif wd in self._parents:  # a folder in `runs/` removed or moved away: when it
                    # is a watched one, its watch is let go, so that `keep` finds it gone (and
                    # the daemon makes it again: `Loop.watch_live`), whatever its inode says
                    gone = os.path.join(self._parents[wd], os.fsdecode(name))
                    if mask & IN_ISDIR and gone in self._watches:
                        self.unwatch(gone)
                        found.append(OVERFLOW)
                elif mask & (IN_MOVE_SELF | IN_DELETE_SELF):  # a live run's folder moved or
                    # removed by hand: no longer watched there (a move keeps the watch on the
                    # folder wherever it went); the daemon looks at every run (and makes it
                    # again: `Loop.watch_live`)
                    folder = self._folders.get(wd)
                    if folder is not None and self._watches.get(folder) == wd:
                        self.unwatch(folder)
                    found.append(OVERFLOW)
                elif mask & IN_IGNORED:  # removed, or its folder deleted
                    folder = self._folders.pop(wd, None)
                    if folder is not None and self._watches.get(folder) == wd:
                        del self._watches[folder]
                elif wd in self._folders and name.endswith(self._suffixes):
                    found.append(os.path.join(self._folders[wd], os.fsdecode(name)))

    def close(self) -> None:
        os.close(self.fd)


class Wake:
    """`threading.Event` for the loop, whose `wait` also reads other descriptors (`add`) in the
    loop's own thread once `open`: a reader returns True when what it read should wake it."""

    def __init__(self) -> None:
        self._flag = threading.Event()
        self._pipe: tuple[int, int] | None = None
        self._selector: selectors.BaseSelector | None = None

    def open(self) -> None:
        self._pipe = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._pipe[0], selectors.EVENT_READ, None)

    def add(self, fd: int, reader: Callable[[], bool]) -> None:
        assert self._selector is not None, "Wake.open first"
        self._selector.register(fd, selectors.EVENT_READ, reader)

    def close(self) -> None:
        if self._selector is not None:
            self._selector.close()
        if self._pipe is not None:
            for fd in self._pipe:
                os.close(fd)
        self._pipe = self._selector = None

    def set(self) -> None:
        """From any thread, or a signal handler."""
        self._flag.set()
        if self._pipe is not None:
            with contextlib.suppress(OSError):  # a full pipe wakes the loop already
                os.write(self._pipe[1], b"\0")

    def clear(self) -> None:
        self._flag.clear()
        if self._pipe is not None:
            with contextlib.suppress(BlockingIOError):
                while os.read(self._pipe[0], 4096):
                    pass

    def is_set(self) -> bool:
        return self._flag.is_set() or self._poll(0.0)

    def wait(self, timeout: float) -> bool:
        """True when woken before `timeout` seconds passed."""
        if self._selector is None:
            return self._flag.wait(timeout)
        deadline = time.monotonic() + timeout
        while not self._flag.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return self._poll(0.0)
            self._poll(left)
        return True

    def _poll(self, timeout: float) -> bool:
        if self._selector is None:
            return self._flag.is_set()
        for key, _ in self._selector.select(timeout):
            if key.data is None or key.data():  # the pipe: someone called `set`
                self._flag.set()
        return self._flag.is_set()
