"""The daemon's life without systemd: `ajetd daemon --detach` and `ajetd shutdown`.

As pueue's `pueued -d` / `pueue shutdown`: the detached daemon is the same `ajetd daemon`
process, started in its own session with its output appended to `$AJETD_HOME/daemon.log`;
shutdown sends it SIGTERM, which ends its loop after the current tick. Runs live in tmux, not
in the daemon, so they go on, and the next daemon re-adopts them (Daemon.reconcile).

Only a process that holds the home's lock and whose command line is ajetd's is ever signalled,
so a stale pid never hits an unrelated process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ajetd.adapters.regular import NotRegularError, load_record, read_small
from ajetd.adapters.store import OWNER_FILE, Home
from ajetd.core.errors import AjetdError
from ajetd.core.model import Run

START_TIMEOUT_S = 30.0
POLL_S = 0.05


class DaemonCtlError(AjetdError):
    """The daemon could not be started or stopped; the message says why."""


@dataclass(frozen=True)
class Started:
    pid: int
    log_file: Path
    note: str = ""  # what the user must know of it (its home's disk is full: `_full_note`)


def lock_holder(home: Home) -> int | None:
    """The pid of the daemon holding the home's lock, or None when none runs or it cannot be
    told. The pid the daemon wrote into the lock, else the lock's holder found as the kernel
    lists it (`_found_holder`): a daemon started on a full home could not write it, and was
    never stopped by `ajetd shutdown` (walk98 F12; it writes it once there is room)."""
    if not home.daemon_running():
        return None
    try:
        text = read_small(home.lock_file, 64).strip()  # a pid: larger is no lock ajetd wrote
    except (OSError, ValueError, NotRegularError):
        return None
    return int(text) if text.isdigit() else _found_holder(home.lock_file)


PROC_LOCKS_MAX = 4 << 20  # /proc/locks read at most (a line per lock on the machine)


def _found_holder(lock_file: Path) -> int | None:
    """The ajetd daemon that holds `lock_file` open, found in /proc: among this user's
    processes whose command line is `ajetd daemon` (`_is_ajetd`) and which have that very
    file (device and inode) open, the one /proc/locks names as its flock's holder, else the
    only one; None where none is, or two are and /proc/locks names neither (never a guess:
    the pid is signalled)."""
    try:
        st = os.stat(lock_file, follow_symlinks=False)
    except OSError:
        return None
    key = (st.st_dev, st.st_ino)
    holders = [pid for pid in _daemons() if _has_open(pid, key)]
    if len(holders) <= 1:
        return holders[0] if holders else None
    named = _locks_pids(key)
    held = [pid for pid in holders if pid in named]
    return held[0] if len(held) == 1 else None


def _daemons() -> list[int]:
    """This user's processes that run `ajetd daemon`, but this one."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            mine = os.stat(f"/proc/{entry}").st_uid == os.getuid()
        except OSError:
            continue
        if mine and _is_ajetd(int(entry)):
            pids.append(int(entry))
    return pids


def _has_open(pid: int, key: tuple[int, int]) -> bool:
    """Whether process `pid` has the file of (device, inode) `key` open."""
    folder = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(folder)
    except OSError:
        return False
    for fd in fds:
        try:
            st = os.stat(f"{folder}/{fd}")
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == key:
            return True
    return False


def _locks_pids(key: tuple[int, int]) -> set[int]:
    """The pids /proc/locks names as holding a flock on the file `key` (its device as
    MAJOR:MINOR in hex, its inode); none where it cannot be read."""
    dev, ino = key
    wanted = f"{os.major(dev):02x}:{os.minor(dev):02x}:{ino}"
    try:
        with open("/proc/locks", "rb") as handle:
            text = handle.read(PROC_LOCKS_MAX).decode(errors="replace")
    except OSError:
        return set()
    pids = set()
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 6 and words[1] == "FLOCK" and words[5] == wanted and words[4].isdigit():
            pids.add(int(words[4]))
    return pids


def _full_note(home: Home) -> str:
    """Why the daemon's pid is not in its lock, where the disk of its home is full: said by
    `--detach`, whose daemon then runs but writes nothing (its log neither) until there is
    room; "" else."""
    from ajetd.adapters import diskfull  # as log_tail imports: only when it is asked

    free = diskfull.room(home.root)
    if free is None or free >= diskfull.FULL_BELOW_BYTES:
        return ""
    return (
        f"the disk of {home.root} is full ({diskfull.free_space(home.root)} free): the daemon "
        f"writes nothing there, {home.log_file} neither, until there is room; free some"
    )


def _is_ajetd(pid: int) -> bool:
    """Whether `pid` runs `ajetd daemon` (its command line, read from /proc)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"daemon" in argv and any(b"ajetd" in word for word in argv)


def _open_log(path: Path) -> int:
    """The daemon log, appended to, owner-only; a symlink there is refused."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, flags, OWNER_FILE)
    except OSError as exc:
        raise DaemonCtlError(f"cannot open the daemon log {path}: {exc.strerror}") from exc


def log_tail(path: Path, lines: int = 15, since: int = 0) -> str:
    """The daemon log's last lines from byte `since` on ("" when it cannot be read), to say
    why a start failed: what that start wrote, not the log's earlier history."""
    from ajetd.diagnosis.scan import tail_bytes

    try:
        size = path.stat().st_size
    except OSError:
        return ""
    text = tail_bytes(path, min(16384, max(size - since, 0))).decode(errors="replace")
    return "\n".join(text.splitlines()[-lines:])


def _published_by(home: Home) -> int | None:
    """The pid daemon.json names (None: none, or not readable yet)."""
    try:
        data = load_record(home.daemon_file)
    except (OSError, ValueError):
        return None
    pid = data.get("pid") if isinstance(data, dict) else None
    return pid if isinstance(pid, int) else None


def detach(home: Home, daemon_args: Sequence[str], timeout: float = START_TIMEOUT_S) -> Started:
    """Start `ajetd daemon ARGS` in the background; return once it holds the lock and has
    published its first daemon.json (its start-up done: the runs read again, its first pass
    made), or, where that takes past `timeout` or its home is full (nothing published until
    there is room), once it holds the lock and still runs. A
    daemon that exits meanwhile is an error saying what it wrote: one that took the lock and
    then died (tmux not on its PATH) was reported started, exit 0 (walk98 F8)."""
    holder = lock_holder(home)
    if holder is not None or home.daemon_running():
        raise DaemonCtlError(
            f"a daemon is already running on {home.root} (pid {holder or 'unknown'}); "
            "stop it with `ajetd shutdown`"
        )
    home.ensure()
    fd = _open_log(home.log_file)
    written_from = os.fstat(fd).st_size  # what this start writes comes after
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ajetd", "daemon", *daemon_args],
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            start_new_session=True,  # no terminal's hang-up or Ctrl-C reaches it
            close_fds=True,
        )
    finally:
        os.close(fd)
    deadline = time.monotonic() + timeout
    while True:
        held = lock_holder(home) == proc.pid
        if held and (_published_by(home) == proc.pid or _full_note(home)):
            break  # begun; or on a full home, where it cannot publish yet (`Started.note`)
        if proc.poll() is not None:
            winner = lock_holder(home)
            if winner is not None and winner != proc.pid:  # another start came first: the
                # log since holds that daemon's lines, not why this one went
                raise DaemonCtlError(
                    f"another daemon (pid {winner}) started on {home.root} at the same time "
                    f"and holds it; this one exited (code {proc.returncode})"
                )
            raise DaemonCtlError(
                f"the daemon exited at start (code {proc.returncode}); "
                f"what it wrote in {home.log_file}:\n{log_tail(home.log_file, since=written_from)}"
            )
        if time.monotonic() >= deadline:
            if held:  # a long start-up (many runs to read): it runs
                break
            raise DaemonCtlError(
                f"the daemon (pid {proc.pid}) did not take {home.lock_file} within "
                f"{timeout:.0f}s; see {home.log_file}"
            )
        time.sleep(POLL_S)
    return Started(proc.pid, home.log_file, _full_note(home))


def _held(pid: int) -> str:
    """`: it is stopped (...)` where the process is stopped (state T: SIGSTOP, a debugger),
    which no SIGTERM reaches until it is continued; else ""."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read(4096).rsplit(b")", 1)[-1].split()[:1]
    except OSError:
        return ""
    if state in ([b"T"], [b"t"]):
        return f": it is stopped (SIGSTOP or a debugger; `kill -CONT {pid}` lets it go on)"
    return ""


def shutdown(home: Home, timeout: float) -> int | None:
    """SIGTERM to the home's daemon and wait until it let go of the lock; its pid, or None
    when no daemon runs."""
    pid = lock_holder(home)
    if pid is None:
        if home.daemon_running():
            raise DaemonCtlError(
                f"a process holds {home.lock_file} but its pid is not recorded, and no ajetd "
                "daemon of this user has it open (another user's?)"
            )
        return None
    if not _is_ajetd(pid):
        raise DaemonCtlError(f"pid {pid} holds {home.lock_file} but is not an ajetd daemon")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return pid
    deadline = time.monotonic() + timeout
    while home.daemon_running():
        if time.monotonic() >= deadline:
            raise DaemonCtlError(
                f"the daemon (pid {pid}) is still running {timeout:.0f}s after SIGTERM"
                f"{_held(pid)}; see {home.log_file}, or end it with `kill -9 {pid}` (runs go "
                "on in tmux; the next daemon takes them up)"
            )
        time.sleep(POLL_S)
    return pid


def reports_left(home: Home) -> list[Run]:
    """The ended runs whose reports (results.md, trials.md, finish.flag) no daemon has written,
    as their records say: read after a stop, which writes those of the runs that ended before
    it where it can (`Daemon.finish_before_stop`), so `shutdown` names what it left."""
    left = [run for run in home.each_run() if run.reports_pending and not run.active]
    return sorted(left, key=lambda r: (r.ended_at or 0.0, r.run_id))
