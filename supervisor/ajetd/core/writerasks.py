"""When the inbox asks the kernel again whether a waiting file is open for writing. Pure.

The kernel's answer (`adapters.writers.open_for_writing`) costs an open and a close of the
file. On a local file system that is microseconds, and its answer can change without the
file changing (a writer closes it without writing again): asked at every scan. Where the
answer is "not known here" (NFS, CIFS, FUSE, a file system whose leases say nothing), every
scan opened each waiting file again only to learn the same "not known": on NFS an open and a
close are round trips to the server (close-to-open consistency), so N waiting files cost N
of them at every scan, and scans come at each inotify event while files arrive. That answer
depends on the file's file system (its device) and the file itself (which inode, whose, its
mode); so a file whose `lstat` is the same as at the last asking (device, inode, size, mtime,
ctime: a write, a rename, a chmod or a chown moves its ctime) has the same answer, and is
not opened again. Asked again anyway after REASK_S, in case the one thing no stat shows
changed (leases enabled again, `fs.leases-enable`); a file not in the inbox any more is
forgotten, so what is kept stays bounded by the inbox's size.
"""

from __future__ import annotations

from typing import NamedTuple

REASK_S = 30.0  # a kept "not known" is asked again this long after it was given


class Stamp(NamedTuple):
    """What `lstat` shows of a file that may change the kernel's answer."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int


class Asked(NamedTuple):
    """The kernel's last answer for a file (None: not known here) and when it was given."""

    stamp: Stamp
    answer: bool | None
    at: float


def kept_answer(last: Asked | None, stamp: Stamp, now: float) -> Asked | None:
    """`last` where it still holds, so the file need not be opened: a "not known here" for a
    file unchanged since (the same `stamp`), given less than REASK_S ago (a clock that went
    back counts as long ago). None: ask the kernel. A yes or no is never kept: a writer may
    close the file, or open it, without changing it."""
    if last is None or last.answer is not None or last.stamp != stamp:
        return None
    if not 0.0 <= now - last.at < REASK_S:
        return None
    return last
