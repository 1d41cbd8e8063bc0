"""The files of `core.claims`: made, read and removed under a lock on their folder.

Two places hold them: a run's result dir (its own claim, owner-only), and one folder for the
whole machine (`machine_folder`: val files and GPUs, readable by every user), by default
`/tmp/ajetd-claims`, sticky and world-writable like /tmp itself. Each daemon writes only
files of its own (one per run and kind), so a sticky folder's rule (only a file's owner may
remove it) never stops it; another user's stale claim is left there and counts for nothing.

Every claim is decided under `flock` of the folder itself (no lock file another user could
plant or hold open-for-write only): the look at the claims there and the write of one's own
are one step for every daemon. Files are opened relative to the folder, never through a
symlink (`O_NOFOLLOW`), read only when regular and at most `claims.MAX_BYTES`. The standard
library alone (and `core`), so it runs as any user.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import stat
import time
from collections.abc import Callable, Iterator

from ajetd.core import claims
from ajetd.core.claims import Claim, Claimant, Seen
from ajetd.core.errors import AjetdError

DIR_ENV = "AJETD_CLAIMS_DIR"
DEFAULT_DIR = "/tmp/ajetd-claims"  # noqa: S108  checked as /tmp itself is (`ensure_machine_folder`)
LOCK_WAIT_S = 2.0  # a folder's lock held longer than this by another: the claim is not made
OWNER_ONLY, EVERYONE_READS = 0o600, 0o644


class ClaimError(AjetdError):
    """A claim's folder cannot be used (not a folder, not safe, its lock held too long)."""


def machine_folder() -> str:
    return os.environ.get(DIR_ENV) or DEFAULT_DIR


def started(pid: int) -> int | None:
    """When a live process started (clock ticks since boot, as `procs.started`); None once it
    ended or is a zombie. The standard library alone, as this module (it runs as any user)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read(4096)
    except OSError:
        return None
    fields = text[text.rfind(b")") + 2 :].split()  # after the command, which may hold spaces
    try:
        return None if fields[:1] in ([b"Z"], [b"X"]) else int(fields[19])
    except (IndexError, ValueError):
        return None


def proc_of(pid: int) -> tuple[int, int] | None:
    """(uid, start) of a running process, None once it has ended (`claims.Proc`)."""
    start = started(pid)
    try:
        uid = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None
    return None if start is None or started(pid) != start else (uid, start)


def claimant(home: str, run_id: str) -> Claimant:
    """This daemon, claiming for its run `run_id`."""
    pid, uid = os.getpid(), os.getuid()
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    return Claimant(os.path.realpath(home), run_id, user, uid, pid, started(pid) or 0)


def ensure_machine_folder(path: str) -> None:
    """The machine's claims folder made (sticky, world-writable) where it is not there, and
    checked: a real folder (no symlink), sticky and owned by root or this user, or sticky and
    world-writable (made by another user as this function makes it). Raises ClaimError."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise ClaimError(f"{path}: cannot be made: {exc.strerror or exc}") from exc
    else:
        with contextlib.suppress(OSError):
            os.chmod(path, 0o1777)  # noqa: S103  sticky, as /tmp: each removes only its own
    check_machine_folder(path)


def check_machine_folder(path: str) -> None:
    """`ensure_machine_folder`'s check of a folder that is there (nothing made): the daemons
    use no other; the commands that only look read no other. Raises ClaimError."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise ClaimError(f"{path}: {exc.strerror or exc}") from exc
    if not stat.S_ISDIR(st.st_mode):
        raise ClaimError(f"{path} is not a folder (a link or a file put there)")
    sticky = bool(st.st_mode & stat.S_ISVTX)
    shared = sticky and st.st_mode & 0o777 == 0o777
    if not (shared or (sticky and st.st_uid in (0, os.getuid()))):
        raise ClaimError(
            f"{path} is not a sticky world-writable folder (owner uid {st.st_uid}, mode "
            f"{stat.S_IMODE(st.st_mode):o}): make it with `mkdir -m 1777 {path}` as root"
        )


@contextlib.contextmanager
def locked(folder: str, shared: bool = False) -> Iterator[int]:
    """The folder open (never through a link at its last part) and flock'd (`shared`: as a
    reader, which no daemon's claim is made under); its fd."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise ClaimError(f"{folder}: cannot be opened: {exc.strerror or exc}") from exc
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ClaimError(
                        f"{folder}: its lock is held by another process for over {LOCK_WAIT_S:g} s"
                    ) from None
                time.sleep(0.01)
        yield fd
    finally:
        os.close(fd)  # the lock goes with it


def found(fd: int, kind: str | None = None) -> list[Seen]:
    """The claim files in the folder `fd` (of `kind`, else all), read where they can be."""
    prefix = claims.PREFIX + (f"{kind}." if kind else "")
    out = []
    for name in os.listdir(fd):
        if not name.startswith(prefix) or claims.name_parts(name) is None:
            continue
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue  # a link, a FIFO planted with a claim's name: no claim
        claim, unread = _read(fd, name)
        out.append(Seen(name, st.st_uid, claim, st.st_mtime, unread))
    return out


def _read(fd: int, name: str) -> tuple[Claim | None, str]:
    """A claim file's content, or None and why not."""
    try:
        got = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    except OSError as exc:  # another user's owner-only claim, or gone
        return None, f"its content cannot be read: {exc.strerror or exc}"
    try:
        if not stat.S_ISREG(os.fstat(got).st_mode):
            return None, "not a regular file"
        claim = claims.parse(os.read(got, claims.MAX_BYTES).decode("utf-8", "replace"))
    except OSError as exc:
        return None, f"its content cannot be read: {exc.strerror or exc}"
    finally:
        os.close(got)
    return claim, "" if claim is not None else "not a claim (damaged content)"


def take(folder: str, claim: Claim, clashes: Callable[[Seen], bool], mode: int) -> Seen | None:
    """Make `claim` in `folder` unless a live claim of another clashes with it: that one
    then (nothing written). The claimant's older claims of the kind (a restarted daemon's)
    and its uid's dead daemons' claims are removed. Raises ClaimError, OSError."""
    with locked(folder) as fd:
        seen = found(fd)
        verdict = claims.judge(seen, claim.by, claim.kind, clashes, proc_of)
        if verdict.others:
            return verdict.others[0]
        for name in verdict.remove:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=fd)
        name = claim.name()
        with contextlib.suppress(FileNotFoundError):  # ours, of this daemon: made again
            os.unlink(name, dir_fd=fd)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        out = os.open(name, flags, mode, dir_fd=fd)
        try:
            os.fchmod(out, mode)  # the umask does not narrow what others must read
            os.write(out, claim.text().encode())
        finally:
            os.close(out)
        return None


def others(folder: str, kind: str) -> list[Seen]:
    """The claims of `kind` in `folder` (read under its lock); liveness is the caller's."""
    with locked(folder) as fd:
        return found(fd, kind)


def look(folder: str, kind: str | None = None, machine: bool = False) -> list[Seen]:
    """The claims (of `kind`, else all) in `folder` as they are, for a command that only
    looks: read under a shared lock, none taken, renewed or removed; none where the folder
    is not there. `machine`: the machine's folder, read only where a daemon would use it
    (`check_machine_folder`). Whether each is live is `claims.live`'s. Raises ClaimError."""
    if not os.path.lexists(folder):
        return []
    if machine:
        check_machine_folder(folder)
    elif os.path.islink(folder):  # `locked` never opens one: no daemon claims through it
        raise ClaimError(f"{folder} is a link: claims are made and read in the folder itself")
    elif not os.path.isdir(folder):  # a file where a result dir is asked: no claim in it
        return []
    try:
        with locked(folder, shared=True) as fd:
            return found(fd, kind)
    except OSError as exc:  # listed or stat'd: a folder made unreadable meanwhile
        raise ClaimError(f"{folder}: cannot be read: {exc.strerror or exc}") from exc


def release(folder: str, name: str) -> None:
    """Remove this daemon's claim `name` from `folder`, if it is there."""
    with locked(folder) as fd, contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=fd)
