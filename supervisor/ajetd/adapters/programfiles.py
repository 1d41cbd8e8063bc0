"""The program's own files at the names ajetd writes into its result dir (results.md,
trials.md, run.json, config-used.yaml, finish.flag, curves.png, gpus.png).

Admission refuses a result dir that holds any of them, yet the program may write them while it
runs (`$AJETD_RESULT_DIR/results.md`). None is ever overwritten or taken for ajetd's: at the
run's end, before ajetd writes the first of its own, each is moved aside as
`<stem>.program<suffix>` (`results.program.md`, `finish.program.flag`; never over a file:
`-2`, `-3`, ...). The pass is made once: its marker in the run's folder in the home says it
was, so a daemon restarted halfway through writing the reports never takes its own results.md
for the program's, and a finish.flag found after the pass is ajetd's. A picture is ajetd's
where its PNG says so (`drawn_by`): a mid-run drawing never replaces the program's, and the
pass leaves ajetd's own.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ajetd.adapters.store import OWNER_FILE, Home, write_json
from ajetd.core import resultfiles
from ajetd.core.trialscript import OWN_LINE_PREFIX

MARKER = "program-files.json"  # in the run's folder: the pass was made, and what it moved
PNG_KEY = "Software"  # the PNG text chunk ajetd's pictures carry: `ajetd run <id>`
_PNG_HEAD_BYTES = 4096  # matplotlib writes its text chunks before the image data
_NAMES = (*resultfiles.REPORTS, *resultfiles.PICTURES)


def png_tag(run_id: str) -> str:
    """The value of ajetd's PNG text chunk for a picture of run `run_id`."""
    return f"ajetd run {run_id}"


def drawn_by(path: Path, run_id: str) -> bool:
    """Whether the picture at `path` is one ajetd drew for run `run_id` (its PNG's text chunk,
    within its first 4 KiB); False for anything else there: a link, a folder, the program's."""
    chunk = b"tEXt" + PNG_KEY.encode() + b"\0" + png_tag(run_id).encode()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO put there never holds it up
            return False
        return chunk in os.read(fd, _PNG_HEAD_BYTES)
    except OSError:
        return False
    finally:
        os.close(fd)


def aside_name(name: str, taken: set[str]) -> str:
    """The name the program's `name` is kept under: `<stem>.program<suffix>`, or `-2`, `-3`,
    ... before the suffix where `taken` holds it. Pure."""
    stem, dot, suffix = name.partition(".")
    for n in range(1, 1000):
        extra = f"-{n}" if n > 1 else ""
        candidate = f"{stem}.program{extra}{dot}{suffix}"
        if candidate not in taken:
            return candidate
    raise FileExistsError(f"every name for the program's {name} is taken")


def set_aside(home: Home, run_id: str, folder: Path) -> list[tuple[str, str]] | None:
    """Move the program's files at ajetd's names in `folder` aside (module doc), once per run:
    what was moved (name, new name), None where the pass was made before. Raises OSError where
    the folder refuses (a full disk, no permission): the pass is made again with the reports."""
    marker = home.run_dir(run_id) / MARKER
    if marker.exists():
        return None
    moved: list[tuple[str, str]] = []
    try:
        present = set(os.listdir(folder))
    except FileNotFoundError:
        present = set()
    for name in _NAMES:
        if name not in present:
            continue
        if name in resultfiles.PICTURES and drawn_by(folder / name, run_id):
            continue  # ajetd's own mid-run drawing: the final one replaces it
        new = aside_name(name, present)
        os.rename(folder / name, folder / new)  # the program has ended: nothing races it
        present |= {new}
        present.discard(name)
        moved.append((name, new))
    write_json(marker, {"moved": moved}, OWNER_FILE)
    return moved


def log_aside(log: Path) -> tuple[str, str] | None:
    """Before trial N starts, a file with text at its log's name (`logs/trial-N.log`) is not
    ajetd's: it writes there only while trial N runs (a readmitted trial's may have left it
    empty). The program wrote it (one trial writing the next one's name, or results copied
    in from an older run), so it is moved aside as `trial-N.program.log` (`aside_name`)
    before the trial's output would be appended to it: what was moved (name, new name), None
    where nothing was there. A link or any other non-file there is left to the log's writer
    (never written through: the output goes to the spare). Raises OSError where the folder
    refuses the rename."""
    try:
        info = log.lstat()
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
        return None
    new = aside_name(log.name, set(os.listdir(log.parent)))
    os.rename(log, log.parent / new)
    return log.name, new


def log_overwritten(log: Path) -> bool:
    """Whether a trial's log, once the trial ended, no longer begins with a line of ajetd's
    (its banner, `[ajetd] run <id> trial N: ...`, or a note its writer put first): something
    else, the program at ajetd's name, wrote over it while the trial ran. Its writer appends
    (a program that truncates the file or replaces it under the name cannot be kept from it);
    what ajetd wrote before is then not in it, and `log_overwritten_note` says so. False
    where the log cannot be read, or is empty."""
    try:
        fd = os.open(log, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = os.read(fd, 256).lstrip(b"\n")
    except OSError:
        return False
    finally:
        os.close(fd)
    return bool(head) and not head.startswith(OWN_LINE_PREFIX.encode())


def log_overwritten_note(log: Path, number: int) -> str:
    """The warning and journal line for a log `log_overwritten` found."""
    return (
        f"{log} does not begin with ajetd's first line: something else (the program, writing "
        f"at the name ajetd writes trial {number}'s output under?) wrote over it while the "
        "trial ran, so it holds only part of the output; keep a program's own log under "
        "another name"
    )


def log_moved_note(folder: Path, number: int, moved: tuple[str, str]) -> str:
    """The warning and journal line for what `log_aside` moved before trial `number`."""
    return (
        f"the program wrote {moved[0]} in {folder} before trial {number} began, the name ajetd "
        f"writes that trial's output under: its own is kept as {moved[1]}"
    )


def moved_note(folder: Path, moved: list[tuple[str, str]]) -> str:
    """The warning and journal line for what `set_aside` moved."""
    wrote = ", ".join(old for old, _ in moved)
    if len(moved) == 1:  # walk92 F9: "its own are kept as finish.flag as finish.program.flag"
        return (
            f"the program wrote {wrote} in its result dir {folder}, a name ajetd writes its "
            f"reports under: the program's own is kept as {moved[0][1]}"
        )
    pairs = ", ".join(f"{old} as {new}" for old, new in moved[:-1])
    pairs += f" and {moved[-1][0]} as {moved[-1][1]}"
    return (
        f"the program wrote {wrote} in its result dir {folder}, names ajetd writes its "
        f"reports under: the program's own are kept, {pairs}"
    )
