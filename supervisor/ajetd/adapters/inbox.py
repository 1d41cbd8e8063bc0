"""The inbox: which dropped blueprints are complete, safe to take, and claimed exactly once.

A file is complete when no process holds it open for writing: the kernel says so
(`writers.open_for_writing`), whoever wrote it, however it came (renamed in, closed after
writing, left while the daemon was down). One still open (a writer that paused, a shell
whose first command closed its copy of the descriptor while the next still writes: walk92
F3) is held, named in `status` once unchanged for a second, and taken when its writer
closes it (the watcher's close wakes the daemon); one still open and unchanged after
OPEN_HOLD_S is put aside in rejected/, unread, saying it may be incomplete. Where the
kernel cannot say (a file system without leases: NFS), a file is complete when it was
renamed in or closed after writing (the watcher reports both), or when it has not changed
for a second (the daemon wakes itself when that second is over).
Claiming is one `rename` into `runs/<id>/`, so a blueprint is taken once even across a
`kill -9`: a run folder without a record is finished on restart.

Only regular files this user owns are taken. Symbolic links, directories (other than campaign
folders), FIFOs, sockets and devices named `*.md` are refused with a line in the log and in
`status`, never followed nor read; the claimed file is opened with O_NOFOLLOW and checked on
its descriptor. File names may hold any bytes: they are shown escaped (`safe_name`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ajetd.adapters import diskfull, runrecords, writers
from ajetd.adapters.regular import NotRegularError, kind_of, open_regular, read_small
from ajetd.adapters.store import (
    OWNER_DIR,
    OWNER_FILE,
    SUBMITTED_COPY,
    Home,
    temp_of,
    write_atomic,
)
from ajetd.core.blueprint import parse_blueprint
from ajetd.core.durations import format_duration
from ajetd.core.errors import AjetdError
from ajetd.core.model import Run
from ajetd.core.naming import SUBMITTED, fit_stem, safe_name
from ajetd.core.options import Options
from ajetd.core.timefmt import iso
from ajetd.core.writerasks import Asked, Stamp, kept_answer

SETTLE_S = 1.0
# A file still open for writing and unchanged this long is put aside, unread: its writer is
# stuck or forgot it (`exec 3> inbox/x.md` never closed), and what it holds may be a part.
# Generous: a writer that pauses a few minutes between parts (an agent composing a file) is
# still waited for; a name in `status` says it is held from its first second on.
OPEN_HOLD_S = 600.0
# An entry that is never taken (a hidden name, another extension, a folder without
# campaign.yaml) is named in the log and `status` once unchanged this long: a writer's temp
# file is hidden only until it is renamed in, so a fresh one is no one's concern yet.
STALE_S = 60.0
BLUEPRINT_EXTENSIONS = (".md", ".markdown")
CLAIMED_NAME = "blueprint.md"
SOURCE_NAME = "source-name"  # the name the blueprint came by, written before its claim


@dataclass(frozen=True)
class Candidate:
    path: Path
    run_id: str | None  # kept from `ajetd submit`'s file name when it has one
    stem: str  # the name the user gave the blueprint (safe to show: see safe_name)


@dataclass(frozen=True)
class Scan:
    found: list[Candidate]
    refused: list[str]  # one line per file not taken, and why (held ones too)
    settle_at: float | None  # when the next file still being written counts as complete
    overdue: tuple[Path, ...] = ()  # open for writing, unchanged for OPEN_HOLD_S: put aside


def overdue_why(path: Path) -> str:
    """The note of a file put aside still open for writing after OPEN_HOLD_S (`scan`)."""
    return (
        f"not taken: {safe_name(path.name)} was still open for writing by a process, and "
        f"unchanged for {format_duration(OPEN_HOLD_S)}: it may be incomplete, so ajetd did "
        "not read it. It was moved here as it is, still open: what its writer writes after "
        "goes on into this copy. Once it is whole (its writer closed it), move it back into "
        "the inbox"
    )


def _held(shown: str, changed: float, now: float) -> tuple[str | None, float]:
    """A file still open for writing that last changed at `changed`: its line for `status`
    (None in its first second: a `cp` under way is nobody's concern) and when to look again
    without an event (to name it, or to put it aside at the bound)."""
    bound = changed + OPEN_HOLD_S
    if now < changed + SETTLE_S:
        return None, changed + SETTLE_S
    return (
        f"{shown} is still open for writing by a process (unchanged since {iso(changed)}): "
        f"held, and taken once its writer closes it; put aside in rejected/, unread, if it is "
        f"still open and unchanged at {iso(bound)}"
    ), bound


def _refusal(entry: os.DirEntry[str], info: os.stat_result) -> str | None:
    """Why this inbox entry is not a blueprint file to take ("" when it is skipped quietly:
    a campaign folder, claimed elsewhere); None when it is a regular file."""
    if stat.S_ISREG(info.st_mode):
        return None
    if stat.S_ISDIR(info.st_mode) and os.path.isfile(os.path.join(entry.path, "campaign.yaml")):
        return ""
    kind = kind_of(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        with contextlib.suppress(OSError):
            kind += f" (to {safe_name(os.readlink(entry.path))})"
    return f"is {kind}, not a regular file: not taken (drop the file itself)"


def _never_taken(entry: os.DirEntry[str], info: os.stat_result) -> str | None:
    """Why an inbox entry is never taken by its name or kind (a blueprint is a file named
    `*.md` or `*.markdown`, not hidden; a campaign a folder holding campaign.yaml); "" for
    one taken elsewhere (a campaign folder); None for a blueprint's name (`scan` goes on)."""
    folder = stat.S_ISDIR(info.st_mode)
    ext = os.path.splitext(entry.name)[1].lower()
    if entry.name.startswith("."):  # a temp file of an atomic writer, renamed in when whole
        return (
            "has a hidden name (it begins with '.'), which is never taken; if the writer that "
            "left it is done, rename it without the dot (a blueprint ends in .md)"
        )
    if folder and os.path.isfile(os.path.join(entry.path, "campaign.yaml")):
        return ""
    if folder and ext not in BLUEPRINT_EXTENSIONS:
        return (
            "is a folder without campaign.yaml: never taken (a campaign folder holds "
            "campaign.yaml; a blueprint is a file ending in .md)"
        )
    if ext not in BLUEPRINT_EXTENSIONS:
        return "is not named *.md or *.markdown: never taken; a blueprint's name ends in .md"
    return None


def security_problems(home: Home) -> list[str]:
    """Why nothing may be taken from the inbox now (empty when it is safe): a home folder
    that is not one (`Home.folder_problems`), or one others may write in."""
    problems = home.folder_problems()
    if problems:
        return problems
    for folder in (home.root, home.inbox):
        try:
            info = folder.stat()
        except OSError as exc:
            problems.append(f"{folder}: {exc.strerror}")
            continue
        if info.st_uid != os.getuid():
            problems.append(f"{folder} is owned by uid {info.st_uid}, not by this user")
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            problems.append(
                f"{folder} is writable by others (mode {stat.S_IMODE(info.st_mode):o}); "
                f"nothing is taken until it is fixed: chmod {OWNER_DIR:o} {folder}"
            )
    return problems or across_devices(home)


def across_devices(home: Home) -> list[str]:
    """The inbox on another file system than runs/ (its own mount, or a link to a folder on
    one): a claim is one rename into runs/<id>/, which cannot cross file systems, so nothing
    could ever be taken; said as the daemon's problem (walk87 F5: each blueprint read as
    plainly queued, for ever, the EXDEV traceback only in the daemon log)."""
    try:
        inbox, runs = home.inbox.stat().st_dev, home.runs.stat().st_dev
    except OSError:  # said by the checks above, or made by the daemon's next pass
        return []
    if inbox == runs:
        return []
    return [
        f"{home.inbox} is on another file system than {home.runs} (a mount point, or a link "
        "to a folder on one): a blueprint is claimed by a rename, which cannot cross file "
        "systems; nothing is taken until the inbox is a plain folder on the home's file system"
    ]


def scan(home: Home, ready: set[str], now: float, asked: dict[str, Asked] | None = None) -> Scan:
    """Complete, safe blueprints in the inbox, oldest first (the GPU queue is first come, first
    served), a line for each entry refused, and when to look again for one still settling.
    `asked`: the kernel's answers of the scan before, by name, kept between scans (updated
    here): a file whose answer was "not known here" is not opened again while unchanged
    (`core.writerasks`: on NFS each open is a round trip, at every scan, for each file)."""
    refused: list[str] = []
    entries = []
    settle_at: float | None = None
    try:
        with os.scandir(home.inbox) as found_entries:
            for entry in found_entries:
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    if (why := _never_taken(entry, info)) is None:
                        entries.append((info, entry))
                        continue
                    if why and now >= (stale := info.st_ctime + STALE_S):
                        refused.append(f"{home.inbox}/{safe_name(entry.name)} {why}")
                    elif why:  # said once it has sat there a while: the daemon wakes for it
                        settle_at = stale if settle_at is None else min(settle_at, stale)
    except OSError:
        return Scan([], [], None)
    entries.sort(key=lambda pair: (pair[0].st_mtime_ns, pair[1].name))
    answers: dict[str, Asked] = {}
    found: list[Candidate] = []
    overdue: list[Path] = []
    for info, entry in entries:
        shown = f"{home.inbox}/{safe_name(entry.name)}"
        why = _refusal(entry, info)
        if why is not None:
            if why:
                refused.append(f"{shown} {why}")
            continue
        if info.st_uid != os.getuid():
            refused.append(f"{shown} is owned by uid {info.st_uid}, not by this user: not taken")
            continue
        # the kernel's answer first: a file a process still writes is held, however it came
        writing = _writing(entry, info, now, asked, answers)
        # ctime: set by this kernel on every write and rename, whatever the file's mtime says
        if writing:
            line, again = _held(shown, info.st_ctime, now)
            if now >= info.st_ctime + OPEN_HOLD_S:
                overdue.append(Path(entry.path))
                continue
            if line:
                refused.append(line)
            settle_at = again if settle_at is None else min(settle_at, again)
            continue
        settled = info.st_ctime + SETTLE_S
        if writing is None and entry.name not in ready and now < settled:
            settle_at = settled if settle_at is None else min(settle_at, settled)
            continue
        stem = safe_name(os.path.splitext(entry.name)[0])
        submitted = SUBMITTED.match(entry.name)
        if submitted:
            found.append(
                Candidate(Path(entry.path), submitted["run_id"], safe_name(submitted["stem"]))
            )
        else:
            found.append(Candidate(Path(entry.path), None, stem))
    _remember(asked, answers)
    return Scan(found, refused, settle_at, tuple(overdue))


def _remember(asked: dict[str, Asked] | None, answers: dict[str, Asked]) -> None:
    """Keep this scan's answers for the next, of the files there now: bounded by the inbox."""
    if asked is not None:
        asked.clear()
        asked.update(answers)


def _writing(
    entry: os.DirEntry[str],
    info: os.stat_result,
    now: float,
    asked: dict[str, Asked] | None,
    answers: dict[str, Asked],
) -> bool | None:
    """`writers.open_for_writing` of an inbox file, or its last answer where that holds still
    (`writerasks.kept_answer`); the answer used is noted in `answers`."""
    stamp = Stamp(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    kept = kept_answer(asked.get(entry.name) if asked else None, stamp, now)
    if kept is None:
        kept = Asked(stamp, writers.open_for_writing(Path(entry.path)), now)
    answers[entry.name] = kept
    return kept.answer


def claim(home: Home, candidate: Candidate, run_id: str) -> Path | None:
    """Move the blueprint into `runs/<run_id>/`; None if another claimer won the race. The
    rename is the commit: the name it came by is written before it."""
    folder = home.run_dir(run_id)
    folder.mkdir(mode=OWNER_DIR, parents=True, exist_ok=True)
    target = folder / CLAIMED_NAME
    try:
        _drop_cut_claim(folder)  # a claim cut inside its first write (`claimable`)
        write_atomic(folder / SOURCE_NAME, f"{candidate.stem}.md\n", OWNER_FILE)
        candidate.path.rename(target)
    except FileNotFoundError:
        _drop_cut_claim(folder, whole=True)
        return None
    except OSError:  # a full home, a refusal: the folder it made goes (walk87 F2: left for ever)
        _drop_cut_claim(folder, whole=True)
        raise
    _owner_only(target)
    return target


def _drop_cut_claim(folder: Path, whole: bool = False) -> None:
    """The start of a claim that did not commit (its `source-name`'s temporary file; `whole`:
    `source-name` too, and the folder where nothing else is in it): a claim that failed, or
    was cut by a daemon killed inside it, leaves no folder that nothing names."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if temp_of(entry.name, SOURCE_NAME) or (whole and entry.name == SOURCE_NAME):
                Path(entry.path).unlink(missing_ok=True)
    if whole:
        with contextlib.suppress(OSError):
            folder.rmdir()  # only where empty


def _owner_only(path: Path) -> None:
    """The claimed blueprint keeps no mode of the file the user copied in: owner-only, as the
    rest of the home (through the file itself, never a link put in its place)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            os.fchmod(fd, OWNER_FILE)
        finally:
            os.close(fd)


@dataclass(frozen=True)
class Read:
    """What was read of a claimed blueprint, and the file as it was then: whether what the
    user finds kept in rejected/ is what ajetd judged (`kept_note`)."""

    raw: bytes
    size: int  # the file's size once read (fstat)
    mtime_ns: int
    at: float  # when (the file's own clock: its mtime's)
    writing: bool | None  # a process held it open for writing once read (None: not known)
    changed: bool  # its size or mtime moved while it was read

    def unsure(self) -> str | None:
        """Why what was read may not be the whole file (None where nothing says so)."""
        if self.writing:
            return (
                f"it was still open for writing by a process when ajetd read it ({len(self.raw)} "
                "bytes read): it may be incomplete"
            )
        if self.changed:
            return (
                f"it changed while ajetd read it ({len(self.raw)} bytes read, {self.size} bytes "
                "once read): it was still being written, so it may be incomplete"
            )
        return None


def read_regular(path: Path, limit: int) -> Read:
    """Up to `limit` bytes of a regular file this user owns, never through a link (and never
    blocked by a FIFO): `regular.open_regular`, then its owner checked on the descriptor;
    with the file's size and mtime once read, and whether a process holds it open for writing
    then (`writers`: a writer that opened it between the inbox's look and its claim)."""
    with open_regular(path, follow=False) as handle:
        fd = handle.fileno()
        before = os.fstat(fd)
        if before.st_uid != os.getuid():
            raise NotRegularError(f"{path.name} is owned by uid {before.st_uid}, not by this user")
        raw = handle.read(limit)
        after = os.fstat(fd)
        writing = writers.fd_open_for_writing(fd)
    moved = (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns)
    return Read(raw, after.st_size, after.st_mtime_ns, after.st_mtime, writing, moved)


def changed_since(path: Path, read: Read) -> bool:
    """The file at `path` is not as it was once `read` (written to since, or while, it was
    read; or a process holds it open for writing now)."""
    try:
        now = path.lstat()
    except OSError:
        return False
    moved = (now.st_size, now.st_mtime_ns) != (read.size, read.mtime_ns) or read.changed
    return moved or bool(writers.open_for_writing(path))


def kept_note(kept: str, path: Path, read: Read | None) -> str:
    """What the note beside a kept rejected file says of it: "byte for byte" only where the
    file is what ajetd read; else what it read and that the file changed after (it was still
    being written: walk92 F3's note said "as it came, byte for byte" of the whole file, read
    as its first 200 bytes)."""
    whole = f"{kept} is the file as it came, byte for byte"
    if read is None:
        return whole
    try:
        now = path.lstat()
    except OSError:
        return whole
    if not changed_since(path, read):
        if len(read.raw) >= read.size:
            return f"{whole}: what ajetd read"
        return f"{whole} ({read.size} bytes; ajetd read its first {len(read.raw)})"
    open_now = (
        "; a process still held it open for writing when it was set aside, so it may change still"
        if writers.open_for_writing(path)
        else ""
    )
    return (
        f"{kept} is the file as it is now ({now.st_size} bytes), not what ajetd judged: it read "
        f"{len(read.raw)} bytes of it (as written at {iso(read.at)}), and the file changed "
        f"after: it was still being written{open_now}. The run's folder keeps what was read "
        "(its blueprint.md)"
    )


def put_aside(home: Home, path: Path, why: str, now: float) -> Path:
    """Move an inbox file that could not be taken to rejected/, beside a note saying why."""
    stem = fit_stem(safe_name(os.path.splitext(path.name)[0]))
    name = _free_name(home.rejected, f"{int(now)}__{stem}")
    target = home.rejected / f"{name}.md"
    path.rename(target)
    write_atomic(home.rejected / f"{name}.why.txt", why + "\n", OWNER_FILE)
    return target


def _free_name(folder: Path, base: str) -> str:
    """`base`, or `base-N` where that is taken: two files of one name put aside in one second
    (or one file and a stray) each keep their text and note. The daemon is the only writer
    in rejected/, so the name stays free until it renames into it."""
    name, n = base, 1
    while any((folder / f"{name}{end}").exists() for end in (".md", ".why.txt")):
        n += 1
        name = f"{base}-{n}"
    return name


def claimable(home: Home, run_id: str) -> bool:
    """The id `ajetd submit` printed is still this file's: no folder has it, or only the
    start of its own claim (`source-name`, written before the rename that commits it, or the
    temporary file of that write) that a daemon killed in between left behind. Else the file
    gets a fresh id."""
    folder = home.run_dir(run_id)
    try:
        names = {entry.name for entry in os.scandir(folder)}
    except FileNotFoundError:
        return True
    except OSError:  # a stray file of that name, a folder it may not read
        return False
    return all(n == SOURCE_NAME or temp_of(n, SOURCE_NAME) for n in names)


def unfinished_claims(home: Home) -> list[tuple[str, Path, str]]:
    """Run folders holding a claimed blueprint but no record: a claim cut short by a crash.
    A folder that holds trials had a record (it is saved before a trial's first file), and
    one whose journal says it ended had one too: its record was lost, and it is never
    admitted again (`runrecords.lost_record` names it)."""
    out = []
    waiting = None  # the ids of the inbox's submissions, read once where needed
    for run_id in home.run_ids():
        folder = home.run_dir(run_id)
        state = home.state_file(run_id)
        if claimable(home, run_id):  # no more than the start of a claim cut short
            if waiting is None:
                waiting = _submitted_ids(home)
            if run_id not in waiting:  # its blueprint was claimed again under another id
                _drop_cut_claim(folder, whole=True)  # (walk87 F2: a folder nothing named)
            continue
        if (folder / CLAIMED_NAME).exists() and not state.exists():
            if runrecords.lost_record(folder, state, run_id) is not None:
                continue
            try:
                source = read_small(folder / SOURCE_NAME).strip()
            except (OSError, ValueError, NotRegularError):
                source = CLAIMED_NAME
            out.append((run_id, folder / CLAIMED_NAME, source))
    return out


def _submitted_ids(home: Home) -> set[str]:
    """The run ids `ajetd submit` gave the files now in the inbox (their names say them)."""
    try:
        names = os.listdir(home.inbox)
    except OSError:
        return set()
    return {m["run_id"] for m in map(SUBMITTED.match, names) if m is not None}


def set_aside(
    home: Home,
    run_id: str,
    source: str,
    claimed: Path,
    text: str,
    why: str,
    read: Read | None = None,
) -> Path:
    """Keep a rejected blueprint for the user to fix, beside a note saying why: the file itself
    as it came, never rewritten from what the daemon read of it (a bounded read: a file too
    large, not UTF-8 or in UTF-16 is kept byte for byte), linked into rejected/ (moved by
    rename where it cannot be linked: another user's file, a file system without hard links);
    what was swapped in for it (a link, a FIFO, a device) is kept as it is, never read nor
    followed, and the note says so. The run's folder then holds what the daemon read (`text`,
    which its reports show), no longer the user's file: an edit of the kept one in place
    changes no record. A second call for one run (admitted again once a full disk took
    writes) keeps the file the first one kept. The note says the kept file is what was read
    only where it is (`read`, `kept_note`)."""
    stem = fit_stem(source[: -len(".md")] if source.endswith(".md") else source)
    target = home.rejected / f"{run_id}__{stem}.md"
    note = home.rejected / f"{run_id}__{stem}.why.txt"
    if os.path.lexists(target):  # kept by an earlier call: never replaced
        write_atomic(note, why + "\n", OWNER_FILE)
        write_atomic(claimed, text, OWNER_FILE)
        return target
    kept = kept_note(target.name, claimed, read)
    with contextlib.suppress(OSError):
        mode = claimed.lstat().st_mode
        if not stat.S_ISREG(mode):
            kept = f"{target.name} is {kind_of(mode)} as it came: never read nor followed"
    write_atomic(note, f"{why}\n{kept}\n", OWNER_FILE)
    try:
        os.link(claimed, target, follow_symlinks=False)
    except OSError as exc:
        if diskfull.is_full(exc):
            raise
        claimed.rename(target)
    write_atomic(claimed, text, OWNER_FILE)
    return target


def stored_options(home: Home, run_id: str) -> Options:
    """A run's `[ajetd]` options, read again from its stored blueprint (defaults if unreadable)."""
    return read_stored_options(home, run_id)[0]


def read_stored_options(home: Home, run_id: str) -> tuple[Options, str | None]:
    """A run's `[ajetd]` options from its stored blueprint, and why the defaults stand in for
    them when that copy cannot be read or parsed any more (removed, or edited by hand since
    the run was admitted): a daemon taking a live run up again says so, not silently."""
    try:
        return parse_blueprint(home.blueprint_text(run_id), admitted=True).options, None
    except OSError as exc:
        why = exc.strerror or str(exc)
    except AjetdError as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    where = home.run_dir(run_id) / "blueprint.md"
    return Options(), f"{where} cannot be read as a blueprint ({why}): default [ajetd] options used"


@dataclass(frozen=True)
class BlueprintTexts:
    """A run's blueprint for its reports: the text as admitted, and where the stored copy
    (`runs/<id>/blueprint.md`, which a restart reads the options from) was edited since, that
    text and its sha256."""

    submitted: str
    edited: str | None = None
    edited_sha256: str = ""
    kept: bool = True  # False: an older home kept no copy as admitted (`submitted` is stored)
    admitted_sha256: str = ""


def blueprint_texts(home: Home, run: Run) -> BlueprintTexts:
    """The run's blueprint as admitted (its immutable copy, `SUBMITTED_COPY`) and, where the
    stored copy's sha256 is not the one admitted (`provenance.blueprint_sha256`), the edit."""
    from ajetd.adapters.git import blueprint_hash

    try:
        stored: str | None = home.blueprint_text(run.run_id)
    except (OSError, AjetdError):
        stored = None
    try:
        submitted, kept = home.blueprint_text(run.run_id, SUBMITTED_COPY), True
    except (OSError, AjetdError):
        submitted, kept = stored or "", False
    admitted = run.provenance.blueprint_sha256 if run.provenance else ""
    if stored is None or not admitted or blueprint_hash(stored) == admitted:
        return BlueprintTexts(submitted, kept=kept)
    return BlueprintTexts(submitted, stored, blueprint_hash(stored), kept, admitted)


def edited_note(run: Run, texts: BlueprintTexts) -> str:
    """What the timeline and the run's warnings say of a stored blueprint edited after
    admission ('' where it was not)."""
    if texts.edited is None:
        return ""
    return (
        f"the stored blueprint (runs/{run.run_id}/blueprint.md) was edited after admission: "
        f"sha256 {texts.edited_sha256[:12]}, admitted {texts.admitted_sha256[:12]}; "
        "its [ajetd] options are read from the edited text"
    )
