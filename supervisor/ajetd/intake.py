"""The inbox: which dropped blueprints are complete, safe to take, and claimed exactly once.

A file is complete when it was renamed in or closed after writing (the watcher reports both),
or when it has not changed for a second (the rescan's rule, which also covers files that
arrived while the daemon was down). Claiming is one `rename` into `runs/<id>/`, so a blueprint
is taken once even across a `kill -9`: a run folder without a record is finished on restart.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ajetd.naming import SUBMITTED
from ajetd.store import OWNER_DIR, Home

SETTLE_S = 1.0
BLUEPRINT_EXTENSIONS = (".md", ".markdown")
CLAIMED_NAME = "blueprint.md"


@dataclass(frozen=True)
class Candidate:
    path: Path
    run_id: str | None  # kept from `ajetd submit`'s file name when it has one
    stem: str  # the name the user gave the blueprint


def security_problems(home: Home) -> list[str]:
    """Why nothing may be taken from the inbox now (empty when it is safe)."""
    problems = []
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
    return problems


def scan(home: Home, ready: set[str], now: float) -> tuple[list[Candidate], list[str]]:
    """Complete, safe blueprints in the inbox, oldest first (the GPU queue is first come, first
    served), and a line for each file refused."""
    found: list[Candidate] = []
    refused: list[str] = []
    entries = []
    try:
        for entry in os.scandir(home.inbox):
            stem, ext = os.path.splitext(entry.name)
            if entry.name.startswith(".") or ext.lower() not in BLUEPRINT_EXTENSIONS:
                continue
            with contextlib.suppress(OSError):
                entries.append((entry.stat(), entry))
    except OSError:
        return [], []
    entries.sort(key=lambda pair: (pair[0].st_mtime_ns, pair[1].name))
    for info, entry in entries:
        stem, _ = os.path.splitext(entry.name)
        if not stat.S_ISREG(info.st_mode):
            continue
        if info.st_uid != os.getuid():
            refused.append(
                f"{entry.path} is owned by uid {info.st_uid}, not by this user: not taken"
            )
            continue
        if entry.name not in ready and now - info.st_mtime < SETTLE_S:
            continue
        submitted = SUBMITTED.match(entry.name)
        if submitted:
            found.append(Candidate(Path(entry.path), submitted["run_id"], submitted["stem"]))
        else:
            found.append(Candidate(Path(entry.path), None, stem))
    return found, refused


def claim(home: Home, candidate: Candidate, run_id: str) -> Path | None:
    """Move the blueprint into `runs/<run_id>/`; None if another claimer won the race."""
    folder = home.run_dir(run_id)
    folder.mkdir(mode=OWNER_DIR, parents=True, exist_ok=True)
    target = folder / CLAIMED_NAME
    try:
        candidate.path.rename(target)
    except FileNotFoundError:
        return None
    (folder / "source-name").write_text(f"{candidate.stem}.md\n")
    return target


def unfinished_claims(home: Home) -> list[tuple[str, Path, str]]:
    """Run folders holding a claimed blueprint but no record: a claim cut short by a crash."""
    out = []
    for run_id in home.run_ids():
        folder = home.run_dir(run_id)
        if (folder / CLAIMED_NAME).exists() and not home.state_file(run_id).exists():
            try:
                source = (folder / "source-name").read_text().strip()
            except OSError:
                source = CLAIMED_NAME
            out.append((run_id, folder / CLAIMED_NAME, source))
    return out


def set_aside(home: Home, run_id: str, source: str, text: str, why: str) -> Path:
    """Keep a rejected blueprint's text beside a note saying why, for the user to fix."""
    stem = source[: -len(".md")] if source.endswith(".md") else source
    target = home.rejected / f"{run_id}__{stem}.md"
    target.write_text(text)
    (home.rejected / f"{run_id}__{stem}.why.txt").write_text(why + "\n")
    return target
