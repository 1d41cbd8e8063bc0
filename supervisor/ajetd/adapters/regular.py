"""Opening a file someone named (a blueprint, a log, a kinds file, a patch) without being
stalled or flooded by what it turns out to be: opened with O_NONBLOCK, so a FIFO nobody writes
cannot block the open, and checked on its descriptor to be a regular file, so neither a FIFO
nor a device (`/dev/zero` never ends) is read (a log given to `ajetd diagnose` may be a FIFO:
`open_log`). The inbox's reader (`inbox.read_regular`) and
every command that reads a user's file open it here: one check, one message.

A file read whole (a record in $AJETD_HOME, a result dir's finish.flag, an exit file) is read
with a bound (`read_bounded`, `load_record`, `read_small`): a larger one, a disk filled by a
runaway program or a hostile file, is named as damaged with its size, never read into memory.
"""

from __future__ import annotations

import errno
import fcntl
import os
import select
import stat
from pathlib import Path
from typing import Any, BinaryIO

from ajetd.core import jsontext
from ajetd.core.errors import AjetdError
from ajetd.core.limits import RECORD_MAX_BYTES, SMALL_FILE_MAX_BYTES, size_text

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
            return _blocking(fd)
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    raise NotRegularError(f"{path}: not a regular file ({kind_of(mode)})")


def _blocking(fd: int) -> BinaryIO:
    """A descriptor opened without blocking (so that a FIFO's open never waits) as a file
    read blocking, as any file is."""
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return os.fdopen(fd, "rb")


FIFO_WRITER_WAIT_S = 10.0  # how long a FIFO named as a log may go without a writer


class NoWriterError(NotRegularError):
    """A FIFO named as a log that no program opened to write in FIFO_WRITER_WAIT_S."""


def open_log(path: Path, writer_wait_s: float = FIFO_WRITER_WAIT_S) -> BinaryIO:
    """A log to read as it streams: `-` is standard input (a pipe or a file); a FIFO the user
    named (`<(zcat LOG)`, `/dev/stdin` given a pipe, a `mkfifo` one) is read as `-` is, a chunk
    at a time, once a program writes to it (NoWriterError where none opened it to write in
    `writer_wait_s`: the command never waits for ever); anything else as `open_regular` opens
    it (a device that never ends, a socket, a directory: refused)."""
    if str(path) == "-":
        return os.fdopen(os.dup(0), "rb")
    try:
        mine, named = os.fstat(0), os.stat(path)
    except OSError:
        return open_regular(path)
    if not stat.S_ISFIFO(named.st_mode):
        return open_regular(path)
    if (mine.st_dev, mine.st_ino) == (named.st_dev, named.st_ino):
        return os.fdopen(os.dup(0), "rb")
    return _open_fifo(path, writer_wait_s)


def _open_fifo(path: Path, writer_wait_s: float) -> BinaryIO:
    """A FIFO opened to read once it has a writer: opened without blocking (an open of a FIFO
    nobody writes waits for ever), then polled (Linux reports no hang-up before a first writer,
    so the poll waits for one, its bytes or its close), then read blocking, as a pipe is."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        why = _no_fifo_writer(path, fd, writer_wait_s)
        if why is None:
            return _blocking(fd)
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    raise why


def _no_fifo_writer(path: Path, fd: int, writer_wait_s: float) -> NotRegularError | None:
    """Why the descriptor of `path` is no FIFO to read: no FIFO now (swapped since it was looked
    at), or one no program opened to write in `writer_wait_s`; None when it is one to read."""
    mode = os.fstat(fd).st_mode
    if not stat.S_ISFIFO(mode):
        return NotRegularError(f"{path}: not a regular file ({kind_of(mode)})")
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    if poller.poll(int(writer_wait_s * 1000)):
        return None
    return NoWriterError(
        f"{path}: a FIFO no program wrote to in {writer_wait_s:g} s: start its writer first, "
        "or pipe the log in (`... | ajetd diagnose -`)"
    )


class TooLargeError(ValueError):
    """A file read whole (`read_bounded`) is larger than such a file may be: it was not read.
    A ValueError, as the text of a damaged record is: its readers name it as damaged."""


def read_bounded(path: Path, limit: int, *, follow: bool = True) -> bytes:
    """All of `path`, a regular file of at most `limit` bytes. A larger one is never read into
    memory (its descriptor's size says so before any read; one that grows while read stops at
    `limit` + 1 bytes): TooLargeError, saying its size and the limit (its reader names the
    file). NotRegularError and OSError pass on."""
    with open_regular(path, follow=follow) as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(limit + 1) if size <= limit else b""
    if size > limit or len(data) > limit:
        raise too_large(max(size, len(data)), limit)
    return data


def too_large(size: int, limit: int) -> TooLargeError:
    """The error for a file of `size` bytes where such a file holds at most `limit`."""
    return TooLargeError(
        f"{size} bytes ({size_text(size)}), more than the {size_text(limit)} such a file may "
        "hold: not read"
    )


def load_record(path: Path, limit: int = RECORD_MAX_BYTES) -> Any:
    """The JSON a record in the home or a result dir holds (a run's or a campaign's record,
    daemon.json, an answer, a request): ValueError where it is no record ajetd wrote (not
    JSON, nested too deep, larger than `limit`: never read, or not a regular file: a FIFO
    would hold the reader for ever), which its reader names as damaged. OSError passes on."""
    try:
        return jsontext.loads(read_bounded(path, limit))
    except NotRegularError as exc:
        raise ValueError(str(exc)) from exc


def read_small(path: Path, limit: int = SMALL_FILE_MAX_BYTES) -> str:
    """A small text file in a folder others write too (a result dir's finish.flag, an exit
    file), as text: `read_bounded`."""
    return read_bounded(path, limit).decode("utf-8", errors="replace")
