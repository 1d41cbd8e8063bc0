"""The kernel's record of OOM kills on this machine, read for a trial: its memory cgroup's OOM
kill counter (at its start and at its end) and the kernel log's OOM kills.

Only reads, each bounded, none following a symbolic link where none is expected: a process's
`/proc/PID/cgroup` and `/proc/self/mountinfo` (where its memory cgroup's files are), the
cgroup's `memory.events` (v2: counted over it and every cgroup below it) or `memory.oom_control`
(v1: the cgroup's own, summed here over it and at most FOLDERS_SUMMED folders below it), and
`/dev/kmsg` (one record a read; EPERM where the kernel keeps its log from this user). What
they say is parsed in `core.oomrecord`, and weighed in `diagnosis.killed`. Nothing here
raises: what cannot be read is None (a counter) or said (the kernel log's `unread`).
"""

from __future__ import annotations

import collections
import errno
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from ajetd.adapters.regular import NotRegularError, TooLargeError, read_bounded
from ajetd.core.oomrecord import (
    KILLS_KEPT,
    OOM_WORDS,
    OomLook,
    cgroup_folder,
    cgroup_mounts,
    kernel_kills,
    memory_cgroup,
    oom_kill_count,
)

KMSG = "/dev/kmsg"
PROC_BYTES = 64 << 10  # a /proc/PID/cgroup, a counter's file
MOUNTINFO_BYTES = 4 << 20  # /proc/self/mountinfo (a host with thousands of mounts: a few MB)
FOLDERS_SUMMED = 256  # cgroup v1: the folders below a trial's cgroup whose counters count
KMSG_RECORDS = 400_000  # records of the kernel log read at most (a 64 MB log holds ~500 k)
KMSG_RECORD_BYTES = 8192  # one record's read (the kernel's records are at most ~1 KiB)
KMSG_KEPT = 4 * KILLS_KEPT  # OOM lines kept while the log is read (two a kill)


@dataclass(frozen=True)
class Watch:
    """A trial's memory cgroup as its start found it: its path as the kernel names it, its
    folder here, and its OOM kill counter then."""

    cgroup: str
    folder: str
    count: int


def watch(pid: int) -> Watch | None:
    """The memory cgroup process `pid` is in, and its OOM kill counter now; None where it
    cannot be read (no such process, no memory controller, a folder not found or not plain),
    or it is the root cgroup (every process of the machine is below it)."""
    member = memory_cgroup(_read(Path(f"/proc/{pid}/cgroup"), PROC_BYTES) or "")
    if member is None or member.path == "/":
        return None
    mounts = cgroup_mounts(_read(Path("/proc/self/mountinfo"), MOUNTINFO_BYTES) or "")
    folder = cgroup_folder(member, mounts)
    if folder is None:
        return None
    count = oom_kills(folder)
    return Watch(member.path, folder, count) if count is not None else None


def oom_kills(folder: str) -> int | None:
    """The OOM kills the memory cgroup in `folder` counts now (v2), or it and the cgroups below
    it count (v1: each its own); None where it is no plain cgroup folder, or no counter."""
    if not os.path.isabs(folder) or os.path.realpath(folder) != os.path.normpath(folder):
        return None  # a link in its path: not where the kernel keeps a cgroup's files
    v2 = _read(Path(folder, "memory.events"), PROC_BYTES)
    if v2 is not None:
        return oom_kill_count(v2)
    total = None
    for seen, (where, dirs, _) in enumerate(os.walk(folder, followlinks=False), 1):
        count = oom_kill_count(_read(Path(where, "memory.oom_control"), PROC_BYTES) or "")
        if count is not None:
            total = (total or 0) + count
        if seen >= FOLDERS_SUMMED:
            break
        dirs.sort()  # the same folders at the start and at the end, where there are more
        del dirs[FOLDERS_SUMMED:]
    return total


def kernel_log() -> tuple[tuple[str, ...], str]:
    """The kernel log's OOM lines (the last KMSG_KEPT records holding OOM_WORDS), and "" or
    why it was not read (`/dev/kmsg: Permission denied`)."""
    try:
        fd = os.open(KMSG, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as exc:
        return (), f"{KMSG}: {exc.strerror or exc}"
    try:
        if not stat.S_ISCHR(os.fstat(fd).st_mode):
            return (), f"{KMSG}: not the kernel's log device"
        kept: collections.deque[str] = collections.deque(maxlen=KMSG_KEPT)
        for _ in range(KMSG_RECORDS):
            try:
                data = os.read(fd, KMSG_RECORD_BYTES)
            except BlockingIOError:
                break  # its end
            except OSError as exc:
                if exc.errno in (errno.EPIPE, errno.EINTR):
                    continue  # a record overwritten while read: on to the next
                return (), f"{KMSG}: {exc.strerror or exc}"
            if not data:
                break
            if any(word.encode() in data for word in OOM_WORDS):
                kept.append(data.decode("utf-8", errors="replace"))
        return tuple(kept), ""
    except OSError as exc:
        return (), f"{KMSG}: {exc.strerror or exc}"
    finally:
        os.close(fd)


def look(cgroup: str, folder: str, count_at_start: int | None, elsewhere: str = "") -> OomLook:
    """What this machine's kernel recorded of OOM kills for a trial whose start found its
    memory cgroup `cgroup` in `folder` with `count_at_start` OOM kills ("", None: not found);
    `elsewhere`: the place it ran when not here (nothing is read)."""
    if elsewhere:
        return OomLook(elsewhere=elsewhere)
    rise = None
    if folder and count_at_start is not None:
        now = oom_kills(folder)
        rise = now - count_at_start if now is not None and now >= count_at_start else None
    lines, unread = kernel_log()
    boot_at = time.time() - time.monotonic()  # the kernel log's stamps: since boot
    return OomLook(
        cgroup=cgroup,
        rise=rise,
        kernel_log=not unread,
        unread=unread,
        kills=kernel_kills(lines),
        boot_at=boot_at,
    )


def _read(path: Path, limit: int) -> str | None:
    """A small file of /proc or a cgroup folder, as text; None where it cannot be read."""
    try:
        return read_bounded(path, limit, follow=False).decode("utf-8", errors="replace")
    except (OSError, NotRegularError, TooLargeError):
        return None
