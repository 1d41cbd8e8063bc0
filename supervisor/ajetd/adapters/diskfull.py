"""Writes that find their disk full: held in memory, tried again on a backoff, shown in status.

A full `$AJETD_HOME` or result dir is a state the daemon lives through, not a crash. A write
that fails with ENOSPC, EDQUOT or EROFS is kept (the newest content of each file, journal
lines in order), its folder is marked full, and the held writes are tried again 1 s, 2 s, 4 s
... (at most a minute) later until they succeed. Until then nothing depending on them is
reported: a run's reports and `finish.flag` wait for its record. `ajetd status` shows one line
per full folder with its free space (daemon.json, written in place when the home is full).
"""

from __future__ import annotations

import errno
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ajetd.adapters.store import append_bytes, write_atomic
from ajetd.core import unsaved
from ajetd.core.limits import size_text
from ajetd.core.timefmt import iso

log = logging.getLogger(__name__)
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
# a folder of the home that refuses writes for a permission (its mode, owner, `chattr +i`):
# held as a full disk's writes are, shown as what it is
REFUSED_ERRNOS = frozenset({errno.EPERM, errno.EACCES})
RETRY_FIRST_S = 1.0
RETRY_MAX_S = 60.0
RETRY_FLOOR_S = 0.2  # however short a test makes the schedule
# a folder refused for a permission is asked again at least this often: a failed write costs
# nothing (no space to free, refused at once), and a folder taken back (`chattr -i`) is seen
# within seconds, as it was when each tick tried it
REFUSED_RETRY_MAX_S = 2.0
FULL_BELOW_BYTES = 64 * 1024  # a disk with less free than this is full (a log's, a result dir's)
# how often the free space of a disk that was full is read while its writes wait (a statvfs,
# microseconds): room made there is used within this, not at the backoff's next try, which
# grows to a minute (walk92 F8: the writes waited 73 s, 50 s of them with room)
ROOM_CHECK_S = 2.0


def is_full(exc: BaseException) -> bool:
    """A write failed because its disk is full, over quota or read-only: wait, do not fail."""
    return isinstance(exc, OSError) and exc.errno in FULL_ERRNOS


def is_refused(exc: BaseException) -> bool:
    """A write failed for a permission (EPERM, EACCES): a folder of the home made read-only or
    immutable by hand; its writes are held as a full disk's are (`Held`), named as such."""
    return isinstance(exc, OSError) and exc.errno in REFUSED_ERRNOS


class RemoteFullError(OSError):
    """A full disk (over quota, read-only) on another machine, as a command run there said
    it: waited for as a full folder here is. Its file is named `host:path`, so its folder
    (`host:folder`) is one of its own in status and in the backoff, never taken for a folder
    of this machine at the same path; its free space is not read from here."""

    def __init__(self, code: int, path: str, host: str) -> None:
        super().__init__(code, os.strerror(code), f"{host}:{path}")
        self.host = host


def remote_full(said: str, path: str, host: str) -> RemoteFullError | None:
    """The full-disk error that a command run on `host` in the C locale said in `said` (its
    stderr: `cat: write error: No space left on device`) while writing `path`; None if it
    said none. The C library's words are those of this machine's `os.strerror`."""
    for code in sorted(FULL_ERRNOS):
        if os.strerror(code) in said:
            return RemoteFullError(code, path, host)
    return None


def says_full(text: str) -> bool:
    """A child's words (its stderr) say a write of its met a full disk (or a quota, or a
    read-only one): what a drawing that failed for it needs to be tried again once there is
    room, where one that failed otherwise would only fail again."""
    return any(os.strerror(code) in text for code in FULL_ERRNOS)


def free_bytes(folder: Path) -> int | None:
    """What an unprivileged writer may still put there, in bytes (None: cannot tell)."""
    try:
        info = os.statvfs(folder)
    except OSError:
        return None
    return info.f_bavail * info.f_frsize


def room(folder: Path) -> int | None:
    """The bytes a new write may use there: what is free, or 0 where no inode is free (no file
    can be made, however much space: ENOSPC all the same); None: cannot tell. A file system
    that counts no inodes (btrfs: `f_files` 0) is judged by its space alone. A daemon run as
    root writes into the blocks ext4 reserves for root (`f_bfree`, not `f_bavail`): it met
    ENOSPC only when those were gone too, and judged by `f_bavail` it saw its room come back
    only past the reserve (review92 #8)."""
    try:
        info = os.statvfs(folder)
    except OSError:
        return None
    root = os.geteuid() == 0
    if info.f_files and not (info.f_ffree if root else info.f_favail):
        return 0
    return (info.f_bfree if root else info.f_bavail) * info.f_frsize


def free_space(folder: Path) -> str:
    """What an unprivileged writer may still put there, for people ("0 B", "3.1 MiB")."""
    try:
        info = os.statvfs(folder)
    except OSError as exc:
        return f"unknown ({exc.strerror})"
    return size_text(info.f_bavail * info.f_frsize)


@dataclass
class Full:
    """One folder that refused a write: why, since when, and when to try again."""

    what: str  # "$AJETD_HOME" or "result dir of run X"
    error: str
    since: float
    retry_at: float
    delay: float
    host: str | None = None  # the other machine it is on (its free space not read here)
    refused: bool = False  # a permission error, not a full disk (`is_refused`)
    code: int = 0  # the errno of its last refusal
    tried: float = 0.0  # when it last refused a write
    # `room` there when it last refused a write (ENOSPC on this machine; None: not read):
    # more room than this since means its writes can be tried again at once (`room_back`)
    room_seen: int | None = None


class Troubles:
    """The folders that refused writes, each with its own backoff; pure bookkeeping."""

    def __init__(self, clock: Callable[[], float], scale: float = 1.0) -> None:
        self.clock = clock
        self.first_s = max(RETRY_FIRST_S * scale, RETRY_FLOOR_S)
        self.max_s = max(RETRY_MAX_S * scale, RETRY_FLOOR_S)
        self.full: dict[Path, Full] = {}
        self.was_full: dict[Path, float] = {}  # folder -> when it last took writes again

    def full_seen(self, folder: Path) -> float | None:
        """The last time `folder` was known full (now, while it is; None: never seen so, or
        only refused by permissions): a file cut short then was likely cut by it."""
        known = self.full.get(folder)
        if known is not None:
            return None if known.refused else self.clock()
        return self.was_full.get(folder)

    def hit(self, folder: Path, exc: OSError, what: str) -> None:
        now = self.clock()
        error = exc.strerror or str(exc)
        known = self.full.get(folder)
        if known is None:
            free = "not read" if isinstance(exc, RemoteFullError) else free_space(folder)
            free = "a permission error" if is_refused(exc) else f"{free} free"
            log.error("cannot write to %s %s: %s (%s)", what, folder, error, free)
            host = exc.host if isinstance(exc, RemoteFullError) else None
            known = Full(what, error, now, now + self.first_s, self.first_s, host)
            known.refused = is_refused(exc)
            self.full[folder] = known
        else:
            most = min(self.max_s, REFUSED_RETRY_MAX_S) if known.refused else self.max_s
            known.delay = min(known.delay * 2, most)
            known.retry_at, known.error = now + known.delay, error
        known.code, known.tried = exc.errno or 0, now
        watched = known.code == errno.ENOSPC and known.host is None
        known.room_seen = room(folder) if watched else None

    def room_back(self, folder: Path) -> bool:
        """A folder whose disk was full (ENOSPC, this machine's) has room again: at least
        FULL_BELOW_BYTES more than when it last refused a write (an inode too, where none was
        free). Its held writes are then tried at once, not at the backoff's next try."""
        known = self.full.get(folder)
        if known is None or known.room_seen is None:
            return False
        now = room(folder)
        return now is not None and now >= known.room_seen + FULL_BELOW_BYTES

    def blocked(self, folder: Path) -> bool:
        """Known full and not yet due for another try: its backoff's time has not come, and
        its disk has no more room than when it refused the last write (`room_back`)."""
        known = self.full.get(folder)
        return known is not None and self.clock() < known.retry_at and not self.room_back(folder)

    def clear(self, folder: Path) -> None:
        known = self.full.pop(folder, None)
        if known is not None:
            if not known.refused:
                self.was_full[folder] = self.clock()
            waited = self.clock() - known.since
            log.info("%s %s can be written again (after %.0f s)", known.what, folder, waited)

    def next_at(self) -> float | None:
        """When the loop wakes for a full folder: its next try, and while it is a disk of this
        machine full (ENOSPC), within ROOM_CHECK_S to read its free space (`room_back`)."""
        soon = self.clock() + ROOM_CHECK_S
        due = [
            min(f.retry_at, soon) if f.room_seen is not None else f.retry_at
            for f in self.full.values()
        ]
        return min(due, default=None)

    def lines(self, held: dict[Path, str]) -> list[str]:
        """One line per full folder, for `ajetd status`: what, where, why, how much is free."""
        out = []
        for folder in sorted(self.full):
            line = self.line(folder)
            if held.get(folder):
                line += f"; {held[folder]}"
            out.append(line + "; retrying")
        return out

    def line(self, folder: Path) -> str:
        """`cannot write to <what> <folder>: <error> (<free> free)` for a full folder, "" for
        one not known full."""
        known = self.full.get(folder)
        if known is None:
            return ""
        if known.refused:  # free space says nothing of it
            return (
                f"{unsaved.REFUSED}cannot write to {known.what} {folder}: {known.error} (a "
                "permission error: the folder's mode, owner or attributes, e.g. chattr +i)"
            )
        if known.host is not None:
            return f"cannot write to {known.what} {folder}: {known.error} (on another machine)"
        free = free_space(folder)
        if self.room_back(folder):  # never "No space left" beside the room there is now
            return (
                f"{unsaved.ROOM_BACK}{known.what} {folder} refused a write at "
                f"{iso(known.tried)} ({known.error}); {free} free now: its held writes are "
                f"tried again within {ROOM_CHECK_S:g} s"
            )
        said = _room_said(folder, known, free)
        return f"cannot write to {known.what} {folder}: {known.error} ({said})"

    def refused(self) -> list[Path]:
        """The folders that refused a write for a permission."""
        return [folder for folder, known in self.full.items() if known.refused]


def _room_said(folder: Path, known: Full, free: str) -> str:
    """The free space beside a full disk's line, with why a write still failed where the
    space is there: no inode free, or the writes held need more than is free."""
    if known.room_seen is None:  # not a full disk of this machine: its space is all there is
        return f"{free} free"
    try:
        info = os.statvfs(folder)
    except OSError:
        return f"{free} free"
    if info.f_files and not info.f_favail and info.f_bavail * info.f_frsize >= FULL_BELOW_BYTES:
        return f"{free} free, but no inode"
    if known.room_seen >= FULL_BELOW_BYTES:
        return f"{free} free, too little for the writes it held"
    return f"{free} free"


class Held:
    """The home's writes that are waiting: for space (a full home), or for a folder of it that
    refused them for a permission (a run's folder made immutable by hand: that folder's writes
    only, each such folder on its own backoff): the newest content per file and the journal
    lines per file, in order. `Home` sends its writes here when the daemon runs."""

    def __init__(self, clock: Callable[[], float], home: Path, scale: float = 1.0) -> None:
        self.home = home
        self.troubles = Troubles(clock, scale)
        self.files: dict[Path, tuple[bytes, int]] = {}
        self.lines: dict[Path, list[bytes]] = {}

    def holding(self, path: Path) -> bool:
        return path in self.files or path in self.lines

    def count(self) -> dict[Path, str]:
        """What is held, for status, per folder that holds it back (the home, or a folder that
        refused writes): how many writes, and whose records are not on disk."""
        refused = set(self.troubles.refused())
        out = {}
        for folder in (self.home, *sorted(refused)):
            mine = [p for p in (*self.files, *self.lines) if self._held_by(p, refused) == folder]
            n = sum(1 for p in mine if p in self.files) + sum(
                len(self.lines.get(p, ())) for p in mine
            )
            if not n:
                continue
            runs = sorted(p.parent.name for p in mine if p in self.files and p.name == "state.json")
            shown = ", ".join(runs[:10]) + (f" and {len(runs) - 10} more" if len(runs) > 10 else "")
            whose = f" (the newest records of runs {shown} are not on disk yet)" if runs else ""
            out[folder] = f"{n} write(s) held in memory{whose}"
        return out

    def unsaved(self) -> dict[str, dict[str, Any]]:
        """Run id -> the state fields of its newest record (`core.unsaved.brief`), for each run
        whose record is held: what daemon.json tells `status` until the disk takes them. A
        record its own folder refuses needs attention, which names the folder and the error
        (`ajetd wait` ends on it); the record itself, written once the folder takes it, does
        not carry it."""
        refused = set(self.troubles.refused())
        out = {}
        for path, (data, _) in self.files.items():
            if path.name != "state.json":
                continue
            try:
                record = json.loads(data)
            except ValueError:  # the daemon's own JSON: cannot happen, and then says nothing
                continue
            if not isinstance(record, dict):
                continue
            if path.parent in refused and not record.get("attention"):
                line = self.troubles.line(path.parent).removeprefix(unsaved.REFUSED)
                record = {**record, "attention": f"{line}; its record is held in memory"}
            out[path.parent.name] = unsaved.brief(record)
        return out

    def _held_by(self, path: Path, refused: set[Path]) -> Path:
        """The folder whose refusal holds `path`'s writes: its own, where it refused them for
        a permission; else the home (a full disk)."""
        return path.parent if path.parent in refused else self.home

    def _waits(self, path: Path) -> bool:
        """A write to `path` waits: the home is full, or its folder refused writes, and its
        next try is not due."""
        return self.troubles.blocked(self.home) or self.troubles.blocked(path.parent)

    def _hit(self, path: Path, exc: OSError) -> None:
        """A write to `path` refused: held, its folder marked (the home for a full disk, its
        own folder for a permission error); any other error is raised."""
        if is_full(exc):
            self.troubles.hit(self.home, exc, "$AJETD_HOME")
        elif is_refused(exc) and path.parent != self.home and path.is_relative_to(self.home):
            runs = path.parent.parent == self.home / "runs"
            what = f"the folder of run {path.parent.name}" if runs else "a folder of $AJETD_HOME"
            self.troubles.hit(path.parent, exc, what)
        else:
            raise exc

    def write(self, path: Path, data: bytes, mode: int, *, synced: bool = True) -> bool:
        """Replace `path` now if the home takes it; else hold it. True when written.
        `synced` False: see `store.write_all_atomic` (what is held is synced when written)."""
        if not self._waits(path) and not self.lines.get(path):
            try:
                write_atomic(path, data, mode, synced=synced)
            except OSError as exc:
                self._hit(path, exc)
            else:
                self.files.pop(path, None)
                return True
        self.files[path] = (data, mode)
        return False

    def append(self, path: Path, line: bytes) -> bool:
        """Append a journal line now if the home takes it (and nothing is held before it)."""
        if not self._waits(path) and path not in self.lines:
            try:
                append_bytes(path, line)
            except OSError as exc:
                self._hit(path, exc)
            else:
                return True
        self.lines.setdefault(path, []).append(line)
        return False

    def retry(self) -> None:
        """Write what is held, if its time has come: each folder that refused writes for a
        permission on its own, then the home's (a full disk); each stops at its first refusal
        (a write that fails otherwise, e.g. its folder was removed, is dropped with an
        error)."""
        for folder in self.troubles.refused():
            if not self.troubles.blocked(folder):
                self._flush(folder, partial(_in_folder, folder))
        if self.home not in self.troubles.full or self.troubles.blocked(self.home):
            return
        refused = set(self.troubles.refused())
        if not self.files and not self.lines:  # nothing held: ask the disk itself
            try:
                probe = self.home / ".ajetd-space-probe"
                write_atomic(probe, b"ok\n", 0o600)
                probe.unlink()
            except OSError as exc:
                self.troubles.hit(self.home, exc, "$AJETD_HOME")
                return
        self._flush(self.home, lambda path: path.parent not in refused)

    def _flush(self, folder: Path, mine: Callable[[Path], bool]) -> None:
        """The held writes `mine` picks, written in order (journal lines first); the folder
        cleared once all went, or marked again at the first refusal (the rest kept)."""
        path = folder
        try:
            for path in [p for p in self.lines if mine(p)]:
                self._settle(path, append_bytes, path, b"".join(self.lines[path]))
                del self.lines[path]
            for path in [p for p in self.files if mine(p)]:
                self._settle(path, write_atomic, path, *self.files[path])
                del self.files[path]
        except OSError as exc:  # refused again: keep the rest, try again later
            self._hit(path, exc)
            return
        self.troubles.clear(folder)

    @staticmethod
    def _settle(path: Path, job: Callable[..., None], *args: Any) -> None:
        """Do one held write; a failure other than a full disk or a refusal (its folder was
        removed) drops it with an error instead of holding it forever."""
        try:
            job(*args)
        except OSError as exc:
            if is_full(exc) or is_refused(exc):
                raise
            log.error("held write to %s dropped: %s", path, exc)


def _in_folder(folder: Path, path: Path) -> bool:
    return path.parent == folder
