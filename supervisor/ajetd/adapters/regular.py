"""Opening a file someone named (a blueprint, a log, a kinds file, a patch) without being
stalled or flooded by what it turns out to be: opened with O_NONBLOCK, so a FIFO nobody writes
cannot block the open, and checked on its descriptor to be a regular file, so neither a FIFO
nor a device (`/dev/zero` never ends) is read. The inbox's reader (`inbox.read_regular`) and
every command that reads a user's file open it here: one check, one message.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import BinaryIO

from ajetd.core.errors import AjetdError

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class NotRegularError(AjetdError):
    """The path is not a regular file (a FIFO, a device, a socket; a link where none may be)."""


def kind_of(mode: int) -> str:
    """What a file that is not a regular one is, in words ("a FIFO")."""
    return next((word for test, word in _KINDS if test(mode)), "not a regular file")


def open_regular(path: Path, *, follow: bool = True) -> BinaryIO:
    """`path` opened for reading in binary, once its descriptor shows a regular file;
    anything else is a NotRegularError ("f.md: not a regular file (a FIFO)"). With
    `follow=False` a symbolic link is refused, never followed. Other OSErrors pass on."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise NotRegularError(f"{path}: not a regular file (a symbolic link)") from exc
        raise
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode):
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
            return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    raise NotRegularError(f"{path}: not a regular file ({kind_of(mode)})")


def read_small(path: Path, limit: int = 1 << 20) -> str:
    """A small text file in a folder others write too (a result dir's finish.flag): read
    only if it is a regular file, and at most `limit` bytes (then a ValueError: it is not the
    file ajetd wrote). OSError and NotRegularError pass on."""
    with open_regular(path) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path}: larger than {limit} bytes")
    return data.decode("utf-8", errors="replace")
