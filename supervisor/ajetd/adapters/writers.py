"""Whether a file is open for writing now, by any process: the kernel's own answer.

A file dropped into the inbox is complete when its writer is done with it, and a writer that
pauses (`(head -c 200 f; sleep 4; tail -c +201 f) > inbox/x.md`), or a shell whose first
command closed its copy of the descriptor while the next one still writes, gives no sign of
that in inotify's events or in the file's times (walk92 F3: judged on its first 200 bytes).
The kernel knows: it refuses a read lease (`fcntl(F_SETLEASE, F_RDLCK)`) on a file that any
process, of any user, holds open for writing, with EAGAIN. So the test is: open the file
read-only (never following a link, never blocking on a FIFO), ask for the lease, close
(which lets the lease go). It costs three system calls and reads nothing.

A lease is only granted on a file its caller owns (the inbox takes only those), and only
local file systems answer it truly: NFSv4 and CIFS refuse it with the same EAGAIN wherever
the client holds no delegation or oplock, whoever writes, and NFSv3 and others say EINVAL. So
the lease is asked only on the local file systems named in LEASES_TELL (the file's mount, by
the id /proc/self/fdinfo gives, looked up in /proc/self/mountinfo); elsewhere, and where the
kernel refuses it otherwise (`fs.leases-enable=0`), the answer is None, "not known", and
intake falls back on inotify's closes and the file's settling (`inbox.scan`). While the lease
is held (microseconds), a process opening the file
for writing waits for its release, and the kernel signals this process with SIGIO, whose
default action ends it: the test installs a handler that does nothing (a handler, unlike an
ignored signal, is reset in the programs this process starts), and where it cannot (not in
the main thread, another handler there already) it does not take the lease.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import signal
import threading
from pathlib import Path

F_SETLEASE = getattr(fcntl, "F_SETLEASE", 1024)  # Linux's value, where Python does not name it
_HELD = errno.EAGAIN  # "a process holds it open for writing" (or holds a lease on it)
# Local file systems whose leases are the kernel's generic ones (`generic_setlease`: refused
# exactly while the file is open for writing); overlay: a container's root (checked: a writer
# of the merged file, copied up or not, is seen).
LEASES_TELL = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "zfs", "overlay", "bcachefs"}
)
_FS_TYPES: dict[int, str] = {}  # st_dev -> its file system's type ("" where not found)


def _nothing(signum: int, frame: object) -> None:
    """SIGIO from a lease broken while it was held: the lease is let go at once anyway."""


def _safe() -> bool:
    """SIGIO will not end this process: a handler of ours, or one someone set, is there."""
    current = signal.getsignal(signal.SIGIO)
    if current is _nothing or current is signal.SIG_IGN or callable(current):
        return True
    if current is signal.SIG_DFL and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGIO, _nothing)
        return True
    return False


def _mount_type(field: int, wanted: str) -> str | None:
    """The file system type of the first line of /proc/self/mountinfo whose `field` (0: the
    mount's id, 2: its device's `major:minor`) is `wanted` ("" where none is; None where
    mountinfo cannot be read)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) > field and fields[field] == wanted and " - " in line:
                    return line.split(" - ", 1)[1].split()[0]
    except OSError:
        return None
    return ""


def fs_type(dev: int) -> str:
    """The type of the file system whose files have `st_dev` `dev` ("ext4", "nfs4"; "" where
    /proc/self/mountinfo does not name it), read once per device."""
    known = _FS_TYPES.get(dev)
    if known is not None:
        return known
    found = _mount_type(2, f"{os.major(dev)}:{os.minor(dev)}")
    if found is None:
        return ""  # not kept: looked up again next time
    _FS_TYPES[dev] = found
    return found


_BY_MOUNT: dict[tuple[int, int], str] = {}  # (mount id, st_dev) -> its file system's type
_MNT_ID = re.compile(r"^mnt_id:\s*(\d{1,12})$", re.MULTILINE)


def fd_fs_type(fd: int) -> str:
    """The type of the file system holding the file open on `fd`, found by its mount's id
    (`mnt_id` in /proc/self/fdinfo, the first field of mountinfo's lines) rather than by
    `st_dev`, which on btrfs is a subvolume's own device that mountinfo never names, so the
    kernel's answer was never asked there (review92 #2); by `st_dev` where the kernel gives
    no mount id. Kept per (mount id, device): a mount id alone is reused after an unmount."""
    dev = os.fstat(fd).st_dev
    try:
        found = _MNT_ID.search(Path(f"/proc/self/fdinfo/{fd}").read_text(errors="replace"))
    except OSError:
        found = None
    if found is None:
        return fs_type(dev)
    key = (int(found.group(1)), dev)
    known = _BY_MOUNT.get(key)
    if known is None:
        kind = _mount_type(0, found.group(1))
        if not kind:  # not listed, or mountinfo unread: by the device
            return fs_type(dev)
        known = _BY_MOUNT[key] = kind
    return known


def fd_open_for_writing(fd: int) -> bool | None:
    """Whether the file open read-only on `fd` is open for writing by any process now (None:
    not known here: a file system whose leases say nothing of it, not this user's file)."""
    if fd_fs_type(fd) not in LEASES_TELL or not _safe():
        return None
    try:
        fcntl.fcntl(fd, F_SETLEASE, fcntl.F_RDLCK)
    except OSError as exc:
        return True if exc.errno == _HELD else None
    fcntl.fcntl(fd, F_SETLEASE, fcntl.F_UNLCK)
    return False


def open_for_writing(path: Path) -> bool | None:
    """`fd_open_for_writing` of the regular file at `path` (a link is never followed: None;
    so is a file gone or not readable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return fd_open_for_writing(fd)
    finally:
        os.close(fd)
