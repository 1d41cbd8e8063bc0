"""The kernel's own record of what happened to the files of a folder (inotify), for tests
that wait on an event rather than sample a state that may last only a moment: every event
is queued from the watch on, so none is missed between two looks."""

from __future__ import annotations

import ctypes
import os
import struct

IN_MODIFY, IN_CLOSE_WRITE, IN_OPEN = 0x2, 0x8, 0x20
_NONBLOCK = 0o4000


class Events:
    """The names of a folder's files that had one of `mask`'s events since the last look."""

    def __init__(self, folder: str | os.PathLike[str], mask: int) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(_NONBLOCK)
        assert self.fd >= 0, os.strerror(ctypes.get_errno())
        watch = libc.inotify_add_watch(self.fd, os.fsencode(folder), mask)
        assert watch >= 0, os.strerror(ctypes.get_errno())

    def names(self) -> list[str]:
        """The files with an event since the last call, in order, once per event (not the
        folder's own: an open of it to list it)."""
        found: list[str] = []
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return found
            at = 0
            while at < len(data):
                size = struct.unpack_from("iIII", data, at)[3]
                name = data[at + 16 : at + 16 + size].rstrip(b"\0")
                found += [os.fsdecode(name)] if name else []
                at += 16 + size

    def __enter__(self) -> Events:
        return self

    def __exit__(self, *_: object) -> None:
        os.close(self.fd)
