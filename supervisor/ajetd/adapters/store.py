"""The daemon's home on disk: layout, atomic writes, run records, event journals, the lock.

Every file another process reads is written whole (temp file, fsync, rename), so a reader or a
`kill -9` at any moment sees the old or the new content, never a torn one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import pwd
import stat
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from ajetd.adapters.regular import (
    NotRegularError,
    load_record,
    open_regular,
    read_small,
    too_large,
)
from ajetd.core import jsontext
from ajetd.core.errors import FolderGoneError, StoreError, UnknownRunError
from ajetd.core.limits import JOURNAL_MAX_BYTES
from ajetd.core.naming import RUN_ID, SUBMITTED, random_word
from ajetd.core.shown import show

if TYPE_CHECKING:
    from ajetd.adapters.diskfull import Held
    from ajetd.core.exitfile import UnrecordedExit
    from ajetd.core.model import Run

# The run records (`runrecords`, `ajetd.core.model`: ~30 dataclasses, a third of the client's
# imports) are imported where a record is read or made, not here: `ajetd submit` only writes
# into the inbox (tests/test_cli_imports.py).

# What to do about an id the home does not hold: a mistyped id, or a shell whose AJETD_HOME
# is not the daemon's (an agent's usual cause)
HELD_FOLDER_WAIT_S = 5.0  # how long a reader waits for the daemon to make a run's folder again
HELD_FOLDER_POLL_S = 0.05
EXIT_FILE_MAX_BYTES = 256  # `"<rc> <epoch>\n"`: larger is no exit file the script wrote
_LIST_RUNS = "`ajetd status --all` lists this home's runs (AJETD_HOME chooses the home)"

OWNER_DIR = 0o700
OWNER_FILE = 0o600


def default_home() -> Path:
    """`$AJETD_HOME` (else `~/.ajetd`), made absolute against the current folder: a trial's
    pane starts in its codebase, so a relative home would name its script nowhere."""
    home = Path(os.environ.get("AJETD_HOME") or _user_home() / ".ajetd").expanduser()
    return Path(os.path.abspath(home))


def _user_home() -> Path:
    """`$HOME`, or the user's home from the password database where HOME is unset, empty or
    relative (`HOME= ajetd ...`, some cron and container setups): every command then finds
    the same `~/.ajetd`, wherever it is typed."""
    home = os.environ.get("HOME", "")
    if os.path.isabs(home):
        return Path(home)
    import pwd

    try:
        return Path(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:  # a uid with no entry: the current folder, as Python would
        return Path(os.path.abspath(home or "."))


def _as_written(path: Path, run: Run) -> Run:
    """A submission waiting in the inbox with what its blueprint says (purpose, result dir,
    time limit, codebase, command), read as intake will read it, so that `status` shows
    them before the daemon takes it; as it is where the file cannot be read or parsed."""
    from dataclasses import replace

    from ajetd.core.blueprint import MAX_BYTES, asked, decode_blueprint, extract_parts

    try:
        with open_regular(path, follow=False) as handle:
            said = asked(extract_parts(decode_blueprint(handle.read(MAX_BYTES))))
    except (OSError, NotRegularError):
        return run
    return replace(
        run,
        purpose=said.purpose,
        result_dir=expanded(said.result_dir),
        max_time_s=said.max_time_s,
        codebase_dir=said.codebase_dir,
        launch_command=said.command,
    )


def expanded(path: str) -> str:
    """A result dir as intake spells it: `~` expanded, normalised ("" stays "")."""
    return os.path.normpath(os.path.expanduser(path)) if path else ""


def encode(text: str) -> bytes:
    """UTF-8 that never raises: a lone surrogate (from a file name that is not UTF-8) is
    written as its escape, so no odd name can make a write fail."""
    return text.encode("utf-8", errors="backslashreplace")


def write_atomic(path: Path, data: str | bytes, mode: int = 0o644, *, synced: bool = True) -> None:
    """Replace `path` with `data` in one rename, synced first (unless not `synced`: only
    where the file system orders the rename after the data, `fsorder`); it gets `mode`."""
    write_all_atomic([(path, data, mode)], synced=synced)


@contextlib.contextmanager
def named(path: Path) -> Iterator[None]:
    """An OSError inside names `path` where it names no file: `write()`, `fsync()`,
    `pwrite()` and `ftruncate()` take a descriptor, so their ENOSPC says only "No space left
    on device", and the full folder `status` shows, the line the CLI prints and the journal's
    note must say which. Every write helper here runs its descriptor calls under it."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror, str(path)) from exc


def write_all_atomic(
    files: Sequence[tuple[Path, str | bytes, int]], *, synced: bool = True
) -> None:
    """Replace several files (path, data, mode), each whole as `write_atomic` does, waiting
    for the disk once instead of once per file: all are written to their temporary files,
    then synced together (a thread each besides the first: `fsync` lets go of the GIL, and
    the file system's journal commits them in one go), then renamed into place in order, the
    last one only once the others' renames are on disk too (their folders synced): a reader
    that finds the last (a result dir's finish.flag) finds the others whole, also after a
    power loss. On an
    error no temporary file is left; the files renamed before it stay, each whole; the error
    names the file or folder whose write or sync failed. `synced` False renames without
    waiting for the disk: for a caller that knows the file system keeps the order itself
    (`fsorder.renames_ordered`) and whose next write syncs."""
    held: list[tuple[int, str, Path]] = []
    renamed = 0
    try:
        for path, data, mode in files:
            fd, tmp = temporary(path)
            held.append((fd, tmp, path))
            with named(path):
                _write_fd(fd, data, mode)
        if synced:
            _sync_all([(fd, path) for fd, _, path in held])
        for _, tmp, path in held[:-1]:
            Path(tmp).replace(path)
            renamed += 1
        if synced:
            _sync_folders({path.parent for _, _, path in held[:-1]})
        for _, tmp, path in held[-1:]:
            Path(tmp).replace(path)
            renamed += 1
    finally:
        for fd, _, _ in held:
            os.close(fd)
        for _, tmp, _ in held[renamed:]:
            with contextlib.suppress(OSError):
                Path(tmp).unlink()


def _sync_folders(folders: set[Path]) -> None:
    """`fsync` each folder, so that the renames into it are on disk. A folder this user cannot
    open, or a file system that syncs no folder (EINVAL: some FUSE and network mounts), is left
    to the file system's own order of renames; another error is raised, naming the folder."""
    for folder in sorted(folders):
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        except PermissionError:
            continue
        try:
            with named(folder):
                os.fsync(fd)
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.EOPNOTSUPP):
                raise
        finally:
            os.close(fd)


def temp_of(name: str, path_name: str) -> bool:
    """Whether `name` is one of the temporary files `write_atomic` and `write_new` make for a
    file named `path_name` (`.<name>.XXXXXXXX.tmp`): left behind only by a daemon killed
    between creating it and its rename, and never a file of anyone's."""
    return name.startswith(f".{path_name}.") and name.endswith(".tmp")


def write_new(path: Path, data: str | bytes, mode: int = 0o644) -> Path:
    """Write `data` whole under `path`, or `<stem>-2<suffix>`, `-3`, ... where that name is
    taken: never over a file (a second snapshot within one second keeps the first). The file
    appears whole (written and synced under a temporary name, then linked in; where the file
    system has no hard links, renamed over an empty file that claimed the name); its path."""
    fd, tmp = temporary(path)
    try:
        with named(path):
            _write_fd(fd, data, mode)
            os.fsync(fd)
        for n in range(1, 1000):
            target = path.with_name(f"{path.stem}-{n}{path.suffix}") if n > 1 else path
            try:
                os.link(tmp, target)  # fails on a name already taken: nothing overwritten
            except FileExistsError:
                continue
            except OSError:  # no hard links here (vfat, some FUSE and SMB mounts)
                try:
                    os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode))
                except FileExistsError:
                    continue
                os.replace(tmp, target)  # over its own claim only
            return target
        raise FileExistsError(errno.EEXIST, "every name is taken", str(path))
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            Path(tmp).unlink()


def temporary(path: Path) -> tuple[int, str]:
    """A new owner-only file beside `path`, `.<name>.<random>.tmp` (what `temp_of`
    knows), opened for writing: what `tempfile.mkstemp` does (`O_EXCL`, never a link followed,
    another name where one is taken), without its import: `tempfile` costs `ajetd submit`,
    which writes one file, 5-7 ms of its start-up (random, shutil)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{random_word(os.urandom, 8)}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
        except OSError as exc:  # named as the file it was to be: a random name says nothing,
            # and makes each try's error a new one (a folder gone, each tick)
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
    raise FileExistsError(errno.EEXIST, "no temporary name is free", str(path.parent))


def _write_fd(fd: int, data: str | bytes, mode: int) -> None:
    """All of `data` into the new file `fd`, which gets `mode` (not synced yet)."""
    os.fchmod(fd, mode)
    view = memoryview(encode(data) if isinstance(data, str) else data)
    while view:
        view = view[os.write(fd, view) :]


def _sync_all(files: list[tuple[int, Path]]) -> None:
    """`fsync` every one of `files` (descriptor, the file it will be) at the same time; the
    first error is raised, naming its file."""
    errors: list[OSError] = []

    def sync(fd: int, path: Path) -> None:
        try:
            with named(path):
                os.fsync(fd)
        except OSError as exc:
            errors.append(exc)

    threads = []
    if len(files) > 1:  # one file (`ajetd submit`'s) needs no thread, nor the import
        import threading

        threads = [threading.Thread(target=sync, args=pair, daemon=True) for pair in files[1:]]
    for thread in threads:
        thread.start()
    if files:
        sync(*files[0])
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def json_text(data: Any) -> str:
    """How every JSON file ajetd writes is laid out."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_json(path: Path, data: Any, mode: int = 0o644) -> None:
    write_atomic(path, json_text(data), mode)


def open_owner(path: Path, *, truncate: bool = False) -> BinaryIO:
    """A log of ajetd's own in the home (hooks.log, plot.log), opened for appending (or
    emptied) and created owner-only whatever the umask; for a child process's output."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if truncate else os.O_APPEND)
    return os.fdopen(os.open(path, flags, OWNER_FILE), "wb")


def append_bytes(path: Path, data: bytes) -> None:
    """Append whole lines to a journal; a line cut short by an earlier full disk is ended
    first, so the next line stays readable. An error names `path`."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, OWNER_FILE)
    try:
        with named(path):
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def append_row(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Append one whole row (`data`, ending in a newline) to a table people and programs read
    (a campaign's ledger.tsv): all of it or none, never twice. A write the disk cuts short is
    taken back (the file cut to its size before: a row torn in its middle still had all its
    tab fields, and nothing flagged it); a last line a crash left cut is removed first (its
    row was not on record, so it comes again whole); a row the file already ends with (a
    daemon killed after writing it, before saving that it had) is not written again. Journals
    keep what they got instead (`append_bytes`). An error names `path`."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, mode)
    try:
        with named(path):
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                size = _last_line_end(fd, size)
                os.ftruncate(fd, size)
            if size >= len(data) and os.pread(fd, len(data), size - len(data)) == data:
                return
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(fd, view) :]
            except OSError:
                os.ftruncate(fd, size)  # a smaller file needs no room
                raise
    finally:
        os.close(fd)


def _last_line_end(fd: int, size: int, chunk: int = 65536) -> int:
    """Where the file's last whole line ends (0 where it has none), read backwards a chunk at
    a time: memory stays bounded however long the cut line is."""
    end = size
    while end > 0:
        start = max(0, end - chunk)
        at = os.pread(fd, end - start, start).rfind(b"\n")
        if at >= 0:
            return start + at + 1
        end = start
    return 0


def mark(path: Path, mode: int = OWNER_FILE) -> None:
    """Make a marker file whose being there (and its mtime) is all it says: one `open`, no
    content, no sync, no link followed. A trial's go file is one: it lets a script waiting in
    its pane go, and a machine that loses power before the disk has it loses that pane too
    (the `fsync` of `write_atomic` was 1-3 ms between a submit and its program's start)."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode))


def write_in_place(path: Path, data: bytes) -> None:
    """Overwrite an existing file's first bytes without allocating (its blocks are already
    there): how daemon.json still tells `status` about a full home. A reader may see a torn
    copy for an instant; it then reads nothing and tries again."""
    fd = os.open(path, os.O_WRONLY)
    try:
        with named(path):
            size = os.fstat(fd).st_size
            view, at = memoryview(data.ljust(size)), 0
            while at < len(view):  # past its blocks a full disk takes part: the rest raises
                at += os.pwrite(fd, view[at:], at)
            os.ftruncate(fd, max(len(data), size))
            os.fsync(fd)
    finally:
        os.close(fd)


def read_events(path: Path) -> list[tuple[float, str]]:
    """A run's journal (events.jsonl): each line's time and text; a line that is not one (cut
    short by a full disk or a crash, also inside a character: each line is decoded on its
    own, never the whole file at once) is skipped, a missing journal is empty. One larger
    than any journal is (JOURNAL_MAX_BYTES), or no regular file, is a ValueError saying so
    (its readers name it), never read."""
    out: list[tuple[float, str]] = []
    try:
        handle = open_regular(path)
    except FileNotFoundError:
        return out
    except NotRegularError as exc:  # a FIFO would hold its reader for ever
        raise ValueError(str(exc)) from exc
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size > JOURNAL_MAX_BYTES:
            raise too_large(size, JOURNAL_MAX_BYTES)
        for line in handle:
            with contextlib.suppress(ValueError, KeyError, TypeError, OverflowError):
                item = jsontext.loads(line.decode(errors="replace"))
                out.append((float(item["at"]), str(item["event"])))
    return out


NOT_A_FOLDER = " is not a folder: move it aside"  # a home folder a file took the place of


def _not_a_folder(folder: Path) -> str | None:
    """Why `folder` is not a folder to use now (`Home.folder_problems`); None when it is."""
    try:
        info = folder.stat()
    except FileNotFoundError:
        if os.path.islink(folder):
            return f"{folder}{NOT_A_FOLDER}"  # a link to nothing
        return (
            f"{folder} is missing: restart the daemon, which makes it again, or "
            f"`mkdir -m 700 {folder}`"
        )
    except OSError as exc:
        return f"{folder}: {exc.strerror}"
    return None if stat.S_ISDIR(info.st_mode) else f"{folder}{NOT_A_FOLDER}"


def _user(uid: int) -> str:
    """`bob (uid 1001)`, or `uid 1001` where the system has no name for it."""
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def owner_problem(root: Path) -> str | None:
    """Why this user may not use the home at `root`, or None (also where it is not made yet):
    it belongs to another user, or cannot be looked at. Another user's home was read as
    damaged or empty (walk88 F7): `shutdown` said no daemon runs while one did, `wait RUN`
    called the record damaged and advised moving the folder out of runs/, and root's
    `submit` into a user's home printed an id that user's daemon never takes (it takes only
    its own user's files). A home is one user's: its runs, inbox and daemon."""
    try:
        owner = os.stat(root).st_uid
    except (FileNotFoundError, NotADirectoryError):  # not made yet, or a file above it: the
        return None  # home's own checks say so (`is not a folder`), naming the file
    except OSError as exc:
        return (
            f"AJETD_HOME {root} cannot be looked at: {exc.strerror} (a folder above it is "
            "another user's?); point AJETD_HOME at your own home"
        )
    me = os.geteuid()
    if owner == me:
        return None
    return (
        f"AJETD_HOME {root} belongs to {_user(owner)} and you are {_user(me)}: a home is "
        "one user's (its daemon takes only its own user's files): point AJETD_HOME at your "
        "own home, or run ajetd as its owner"
    )


def locked(path: Path) -> bool:
    """Some process holds an exclusive `flock` on the file at `path` (a daemon on its home, a
    copy back on its job); tried without being taken for long. No such file (or a link
    there, never followed) holds none; one this user may not open is a StoreError: whether
    a daemon runs cannot be told (`shutdown` said none ran while another user's did)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except PermissionError as exc:
        raise StoreError(
            f"cannot tell whether a daemon holds {path}: {exc.strerror} (another user's?)"
        ) from exc
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


SUBMITTED_COPY = "blueprint.submitted.md"  # runs/<id>/: the blueprint's text as admitted


PRUNED = ".pruned-"  # a run's folder being removed by `ajetd prune` (`Home.remove_run`)


class Home:
    """`$AJETD_HOME`: inbox/, runs/<id>/, rejected/, control/, swarm/<port>/, daemon.json,
    daemon.lock."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.inbox = root / "inbox"
        self.runs = root / "runs"
        self.rejected = root / "rejected"
        self.control = root / "control"
        self.swarm = root / "swarm"
        self.campaigns = root / "campaigns"
        self.daemon_file = root / "daemon.json"
        self.lock_file = root / "daemon.lock"
        self.log_file = root / "daemon.log"
        # Set by the daemon: writes refused by a full disk are held there, not raised.
        self.held: Held | None = None
        self._renames_ordered: bool | None = None  # `renames_ordered`, once asked
        self.damaged: dict[str, str] = {}  # run folders `load_runs` left out, and why

    def check(self) -> None:
        """A StoreError when the home, or a folder above it, is a file, or when the home is
        another user's (`owner_problem`): every command says so in these words
        (`ajetd.cli.common.open_home`, `ensure`) instead of an OSError from whichever file it
        happened to open first."""
        problem = owner_problem(self.root)  # first: a folder above it may not be looked in
        if problem:
            raise StoreError(problem)
        for place in (self.root, *self.root.parents):
            if place.is_dir():
                return
            if place.exists() or place.is_symlink():
                what = "" if place == self.root else f": {place} is not a folder"
                raise StoreError(f"AJETD_HOME {self.root} is not a folder{what}")

    def ensure(self) -> None:
        """Create missing folders owner-only; existing ones keep their mode (checked elsewhere)."""
        self.check()
        for folder in (self.root, *self.intake_folders, self.swarm):
            try:
                folder.mkdir(mode=OWNER_DIR, parents=True, exist_ok=True)
            except FileExistsError as exc:  # a file (or a dangling link) where it should be
                raise StoreError(f"{folder}{NOT_A_FOLDER}") from exc
            except OSError as exc:
                raise StoreError(f"cannot create {folder}: {exc.strerror}") from exc

    @property
    def intake_folders(self) -> tuple[Path, ...]:
        """The folders the daemon scans or writes to take work in: blueprints and campaign
        folders (inbox/), their runs (runs/, campaigns/), rejections (rejected/), and stop
        requests (control/)."""
        return (self.inbox, self.runs, self.rejected, self.control, self.campaigns)

    def folder_problems(self) -> list[str]:
        """Why the home cannot take work in now, in `ensure`'s words: the home, or one of its
        intake folders, is not a folder (a file or a link to one put in its place while the
        daemon runs) or is gone. Empty when each is a folder (a link to one counts)."""
        root = _not_a_folder(self.root)
        if root is not None:
            return [root]
        return [why for f in self.intake_folders if (why := _not_a_folder(f)) is not None]

    def run_dir(self, run_id: str) -> Path:
        return self.runs / run_id

    def state_file(self, run_id: str) -> Path:
        return self.run_dir(run_id) / "state.json"

    def trial_file(self, run_id: str, trial: int, suffix: str) -> Path:
        return self.run_dir(run_id) / f"trial-{trial}.{suffix}"

    def save_run(self, run: Run, *, ordered: bool = False) -> bool:
        """Save the run's record; False when a full disk holds it in memory for now.
        `ordered`: renamed in without waiting for the disk where the home's file system
        keeps a replacing rename behind the data (`fsorder`; a trial's `done`, whose next
        save, after finish.flag, is synced): a power loss leaves the old record or this one."""
        path = self.state_file(run.run_id)
        synced = not (ordered and self.renames_ordered())
        if self.held is None:
            write_atomic(path, json_text(run.to_json()), OWNER_FILE, synced=synced)
            return True
        data = json.dumps(run.to_json(), indent=2, ensure_ascii=False) + "\n"
        return self.held.write(path, encode(data), OWNER_FILE, synced=synced)

    def renames_ordered(self) -> bool:
        """Whether the runs' folder's file system orders a rename after the data it names
        (`fsorder.renames_ordered`), asked once: a home does not change file system under a
        running daemon without it noticing far worse."""
        if self._renames_ordered is None:
            from ajetd.adapters.fsorder import renames_ordered

            self._renames_ordered = renames_ordered(self.runs if self.runs.is_dir() else self.root)
        return self._renames_ordered

    def saved(self, run_id: str) -> bool:
        """The run's newest record is on disk (not held back by a full disk)."""
        return self.held is None or not self.held.holding(self.state_file(run_id))

    def load_run(self, run_id: str) -> Run:
        """The run's record; a submitted blueprint not yet admitted reads as a queued run."""
        if not RUN_ID.match(run_id):
            raise UnknownRunError(
                f"no run {show(run_id)} (run ids are six lower-case letters and digits); "
                + _LIST_RUNS
            )
        from ajetd.adapters import runrecords

        looks = 0
        held_until: float | None = None
        while True:
            try:
                return self.with_stop_asked(self._read_state(run_id))
            except StoreError as exc:  # damaged: what to do, as `status` says of it
                raise StoreError(f"{exc}; {runrecords.LEFT_OUT.format(run_id=run_id)}") from None
            except FileNotFoundError:
                lost = runrecords.lost_record(self.run_dir(run_id), self.state_file(run_id), run_id)
                if lost is not None:  # it had trials: never admitted again, never "queued"
                    looks += 1
                    if looks < 3:  # or its first record is being written: a run ended before
                        # it was admitted (a stop) has its journal's end a moment before it
                        time.sleep(HELD_FOLDER_POLL_S)
                        continue
                    raise StoreError(lost) from None
                pending = self.pending(run_id)
                if pending is not None:
                    return self.with_stop_asked(pending)
            looks += 1
            if looks < 2:  # the daemon may be admitting it right now: look twice
                continue
            if held_until is None:
                if not self._daemon_holds(run_id):
                    break
                held_until = time.monotonic() + HELD_FOLDER_WAIT_S
            if time.monotonic() >= held_until:
                raise FolderGoneError(
                    f"run {run_id}'s folder {self.run_dir(run_id)} is gone (moved or removed "
                    "by hand), and the running daemon, which still supervises the run, has not "
                    f"made it again within {HELD_FOLDER_WAIT_S:g}s (its log says why)"
                )
            time.sleep(HELD_FOLDER_POLL_S)
        raise UnknownRunError(f"no run {run_id!r} in {self.root}; {_LIST_RUNS}")

    def _daemon_holds(self, run_id: str) -> bool:
        """The running daemon supervises this started run (daemon.json names its next deep
        check): a record missing on disk is a folder removed by hand, which the daemon makes
        again within a pass (`Base.run_folder_gone`), never "no run" (walk 30: a `wait` in
        flight exited 2 while the run went on)."""
        checks = self.daemon_info().get("deep_checks")
        return isinstance(checks, dict) and run_id in checks and self.daemon_running()

    def stop_request(self, run_id: str) -> Path:
        """Where `ajetd stop` files the run's stop request (`control/<id>.stop`)."""
        return self.control / f"{run_id}.stop"

    def ask_stop(self, run_id: str, text: str) -> bool:
        """File a stop request for the run (control/<id>.stop); True where this call filed
        it. One already filed is kept (False): its time is when the stop was first asked,
        which tells a program's exit after it (the stop's) from one before it
        (`policy._stop_not_on_record`), and of two `ajetd stop` at once exactly one files it
        (created exclusively; the daemon reads the file's time, not its text). The file made
        is the request: its text (when it was asked, by whom) is for a person, and a home
        too full for it keeps the empty file (it takes an inode, no block), so a stop is
        filed on a full home; the daemon may have taken it already, and unlinking it then
        said `No space left` for a stop that happened (walk88 F3). Raises OSError only where
        no file could be made."""
        request = self.stop_request(run_id)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(request, flags, OWNER_FILE)
        except FileExistsError:
            return False
        try:
            with contextlib.suppress(OSError):  # its text only: the request stands, empty
                _write_fd(fd, text, OWNER_FILE)
        finally:
            os.close(fd)
        return True

    def with_stop_asked(self, run: Run) -> Run:
        """A live run whose `ajetd stop` request waits in control/ for the daemon (none runs,
        or it has not read it yet) says so first in its reason: `stop` tells the user the
        request stands and `status RUN` shows it, where the run read as if nothing had been
        asked ('waiting in the inbox', or no reason at all while running)."""
        from dataclasses import replace

        from ajetd.core.model import State

        if not run.active or run.state is State.STOPPING:
            return run
        if not self.stop_request(run.run_id).exists():
            return run
        asked = "a stop is requested (`ajetd stop`) and waits for the daemon"
        return replace(run, reason=f"{asked}; {run.reason}" if run.reason else asked)

    def unrecorded_exits(
        self, runs: Iterable[Run], daemon_running: bool
    ) -> dict[str, UnrecordedExit]:
        """For the live runs among `runs` whose program exited while no daemon runs to record
        it: that exit, as their trial script left it (`trial-N.exit`), by run id. Nothing
        read while a daemon runs (it records the exit), nor for a run whose record has it."""
        from ajetd.core.exitfile import may_have_exited, unrecorded_exit

        found: dict[str, UnrecordedExit] = {}
        if daemon_running:
            return found
        for run in runs:
            if run.trial is None or not may_have_exited(run):
                continue
            path = self.trial_file(run.run_id, run.trial.number, "exit")
            try:  # a bounded read of a regular file, no link followed
                text = read_small(path, EXIT_FILE_MAX_BYTES)
            except (OSError, ValueError, NotRegularError):  # none (it runs), or unreadable
                continue
            seen = unrecorded_exit(run, text, daemon_running)
            if seen is not None:
                found[run.run_id] = seen
        return found

    def _read_state(self, run_id: str) -> Run:
        path = self.state_file(run_id)
        from ajetd.adapters import runrecords

        return runrecords.as_run(path, runrecords.read_data(path), self.unsaved().get(run_id))

    def unsaved(self) -> dict[str, dict[str, Any]]:
        """For a reader (not the daemon, whose own Home holds its writes): where the runs
        whose newest records a full home holds in memory stand, as the running daemon
        published them in daemon.json (`core.unsaved`); empty when none are held or no
        daemon runs (a dead daemon's are gone with it: its successor reads the exit files)."""
        if self.held is not None or not self.daemon_running():
            return {}
        try:
            data = load_record(self.daemon_file)
        except (OSError, ValueError):
            return {}
        from ajetd.core import unsaved

        return unsaved.published(data.get("unsaved") if isinstance(data, dict) else None)

    def blueprint_text(self, run_id: str, name: str = "blueprint.md") -> str:
        """The run's claimed blueprint as text, decoded as intake decoded it (a UTF-16 or
        non-UTF-8 file must read the same after a restart as when it was admitted); `name`:
        SUBMITTED_COPY for the text as it was admitted. Imported here, not at the top:
        `ajetd submit` reads the home and must not load the parser."""
        from ajetd.core.blueprint import MAX_BYTES, decode_blueprint

        with open(self.run_dir(run_id) / name, "rb") as handle:
            return decode_blueprint(handle.read(MAX_BYTES + 1)[:MAX_BYTES])

    def keep_submitted(self, run_id: str, text: str) -> None:
        """The admitted blueprint's text, kept once (never replaced: a run admitted again
        keeps its first), owner-only and read-only: `blueprint.md` is the copy a restart reads
        the run's options from, and a user may edit it while the daemon is down."""
        path = self.run_dir(run_id) / SUBMITTED_COPY
        if not os.path.lexists(path):
            write_atomic(path, text, 0o400)

    def pending(self, run_id: str) -> Run | None:
        """A blueprint `ajetd submit` left for the daemon, not admitted yet (state `queued`);
        why it waits names what the status header says stops the daemon taking it, if known."""
        from ajetd.core.model import Run
        from ajetd.views.listing import claimed_reason, inbox_reason  # not on submit's path

        for path in self.inbox.glob(f"{run_id}__*"):
            match = SUBMITTED.match(path.name)
            if match and match["run_id"] == run_id:
                with contextlib.suppress(OSError):
                    return _as_written(
                        path,
                        Run(
                            run_id=run_id,
                            source=f"{match['stem']}.md",
                            submitted_at=path.stat().st_mtime,
                            reason=inbox_reason(self.daemon_running(), self.daemon_info()),
                        ),
                    )
        claimed = self.run_dir(run_id) / "blueprint.md"
        if claimed.exists() and not self.state_file(run_id).exists():
            try:  # the name it came by (`inbox.SOURCE_NAME`, written before its claim)
                source = read_small(self.run_dir(run_id) / "source-name").strip()
            except (OSError, ValueError, NotRegularError):
                source = ""
            up = self.daemon_running()
            return _as_written(
                claimed,
                Run(
                    run_id=run_id,
                    source=source or "blueprint.md",
                    submitted_at=claimed.stat().st_mtime,
                    reason=claimed_reason(run_id, up, self.daemon_info() if up else {}),
                ),
            )
        return None

    def pending_runs(self) -> list[Run]:
        out = []
        with contextlib.suppress(OSError):
            for path in self.inbox.iterdir():
                match = SUBMITTED.match(path.name)
                if match:
                    with contextlib.suppress(UnknownRunError, StoreError):
                        out.append(self.load_run(match["run_id"]))
        return out

    def remove_run(self, run_id: str) -> None:
        """Remove an ended run's folder (`ajetd prune` decides which): renamed out of the
        runs' names first (`.pruned-<id>`, one rename: no reader ever finds half a folder
        under the run's id), then removed; `shutil.rmtree` follows no link inside it. A
        folder left by a removal cut short is removed the next time (`remove_pruned`).
        OSError where it cannot be (a full home still removes; a permission does not)."""
        import shutil

        folder = self.runs / run_id
        if not RUN_ID.match(run_id) or folder.is_symlink() or not folder.is_dir():
            raise OSError(errno.ENOENT, "not a run's folder", str(folder))
        aside = self.runs / f"{PRUNED}{run_id}"
        os.rename(folder, aside)
        shutil.rmtree(aside)

    def remove_pruned(self) -> int:
        """The folders an earlier `remove_run` renamed aside and did not finish: removed."""
        import shutil

        count = 0
        with contextlib.suppress(OSError):
            for path in self.runs.iterdir():
                if path.name.startswith(PRUNED) and path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                    count += 1
        return count

    def run_ids(self) -> list[str]:
        if not self.runs.is_dir():
            return []
        return sorted(p.name for p in self.runs.iterdir() if RUN_ID.match(p.name))

    def load_runs(self, brief: int | None = None) -> Iterator[Run]:
        """Every run with a saved, readable record, oldest submission first (what the daemon
        owns; submissions still in the inbox are not records); the ones left out and why are
        kept in `damaged`. `brief`: only live runs and the `brief` newest ended ones in full
        (`runrecords.read_all`), for a view that shows no more."""
        from ajetd.adapters import runrecords

        newer = self.unsaved()
        runs, self.damaged = runrecords.read_all(self.runs, self.run_ids(), brief, newer)
        yield from sorted(runs, key=lambda r: (r.submitted_at, r.run_id))

    def each_run(self) -> Iterator[Run]:
        """Every readable record, one at a time and in no order (the daemon's start keeps
        only what it needs of each); `damaged` is set once all were read."""
        from ajetd.adapters import runrecords

        damaged: dict[str, str] = {}
        yield from runrecords.each(self.runs, self.run_ids(), damaged)
        self.damaged = damaged

    def damaged_lines(self) -> list[str]:
        """The run folders the last `load_runs` left out, and why (for `status` and the log)."""
        return [self.damaged[run_id] for run_id in sorted(self.damaged)]

    def listing(self, brief: int | None = None) -> list[Run]:
        """What `ajetd status` shows: every saved run, plus submissions not admitted yet
        (`brief`: as `load_runs`)."""
        runs = {run.run_id: run for run in self.load_runs(brief)}
        for run in self.pending_runs():
            runs.setdefault(run.run_id, run)
        for run_id in self.run_ids():  # claimed, no record yet (held for a full folder)
            if run_id not in runs and run_id not in self.damaged:
                with contextlib.suppress(OSError):
                    if (claimed := self.pending(run_id)) is not None:
                        runs[run_id] = claimed
        shown = (self.with_stop_asked(run) for run in runs.values())
        return sorted(shown, key=lambda r: (r.submitted_at, r.run_id))

    def append_event(self, run_id: str, at: float, text: str) -> None:
        line = json.dumps({"at": at, "event": text}, ensure_ascii=False) + "\n"
        path = self.run_dir(run_id) / "events.jsonl"
        if self.held is None:
            append_bytes(path, encode(line))
        else:
            self.held.append(path, encode(line))

    def events(self, run_id: str) -> list[tuple[float, str]]:
        """The run's journal (`read_events`: ValueError where it cannot be read)."""
        return read_events(self.run_dir(run_id) / "events.jsonl")

    def acquire_lock(self) -> int:
        """Hold the one-daemon-per-home lock for the life of the process; return its fd (the
        daemon then writes its pid into it: `record_pid`)."""
        fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, OWNER_FILE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StoreError(
                f"another ajetd daemon (pid {holder}) is running on {self.root}"
            ) from exc
        return fd

    def record_pid(self, lock_fd: int) -> bool:
        """Write this process's pid into the lock it holds (`lock_fd`); whether it is there
        whole. The pid only informs (`ajetd shutdown`, `--detach`): a full disk must not stop
        the daemon, which writes it again at each pass until it is there (walk98 F12: a
        daemon started on a full home kept an empty lock file for good, and `shutdown` could
        never stop it)."""
        pid = str(os.getpid()).encode()
        try:
            os.ftruncate(lock_fd, 0)
            return os.pwrite(lock_fd, pid, 0) == len(pid)
        except OSError:
            return False

    def daemon_running(self) -> bool:
        """True while some process holds the lock (checked without taking it for long)."""
        return locked(self.lock_file)

    def daemon_info(self) -> dict[str, Any]:
        """What the daemon last published (daemon.json), plus what a reader sees for itself:
        a home on a read-only file system, where the daemon cannot even publish that it holds
        its writes in memory (`disk`, as the daemon's own full-disk lines)."""
        try:
            data = load_record(self.daemon_file)
        except (OSError, ValueError):
            # none yet, garbled, too large (never read), or not a file: the daemon rewrites it
            data = {}
        info = data if isinstance(data, dict) else {}
        if self.damaged:  # what this reader's own `load_runs` left out
            info = {**info, "damaged": self.damaged_lines()}
        with contextlib.suppress(OSError):
            if os.statvfs(self.root).f_flag & os.ST_RDONLY:
                line = (
                    f"cannot write to $AJETD_HOME {self.root}: Read-only file system; the "
                    "daemon keeps what it records in memory until it can (status may be behind)"
                )
                info = {**info, "disk": [*(info.get("disk") or []), line]}
        return info
