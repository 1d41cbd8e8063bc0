"""Whether a path the user named can be had, walked one part at a time without trusting a
link: a symbolic link loop, a link to nothing, a part that is a file, a folder that may not be
looked into are each said in words, never an internal error (ELOOP, EEXIST) later."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

# ajetd follows a link the user named to a folder that is there, and makes folders below it;
# it never makes what a link points to (it would write where the link, not the user, says)
NEVER_THROUGH = (
    ": ajetd never creates what a link points to; create that folder yourself, or name one "
    "that exists"
)


@dataclass(frozen=True)
class Unreachable:
    """Why a path cannot be had (`path_problem`), in words; `dangling`: a link to nothing."""

    text: str
    dangling: bool = False


def path_problem(path: Path) -> Unreachable | Path | None:
    """How the absolute `path` stands, walked one part at a time without trusting a link:
    None where it is there (a link followed to what it names); the first part of it that is
    missing (ajetd would make it and what is below it); or why it cannot be had: a symbolic
    link loop, a link to nothing, a part that is a file, a folder that may not be looked
    into. Every user path's check says which, where "does not exist" would mislead."""
    parts = path.parts
    for n in range(1, len(parts) + 1):
        part = Path(*parts[:n])
        try:
            found = os.lstat(part)
        except FileNotFoundError:
            return part
        except OSError as exc:  # EACCES: the folder above it may not be looked into
            return Unreachable(f"{path}: cannot look into {part.parent} ({exc.strerror})")
        at = f"{path}: " if part != path else ""  # a part above the result dir itself
        if stat.S_ISLNK(found.st_mode):
            target = _link_target(part)
            try:
                found = os.stat(part)
            except FileNotFoundError:
                return Unreachable(
                    f"{at}{part} is a symbolic link to {target}, which does not exist", True
                )
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    return Unreachable(
                        f"{at}{part} is a symbolic link loop ({part} -> {target} -> ... leads "
                        "back to itself)"
                    )
                why = exc.strerror
                return Unreachable(
                    f"{at}{part} is a link to {target} that cannot be followed ({why})"
                )
        if n < len(parts) and not stat.S_ISDIR(found.st_mode):
            return Unreachable(f"{at}{part} is a file, not a folder (nothing can be under it)")
    return None


def _link_target(link: Path) -> str:
    try:
        return os.readlink(link)
    except OSError as exc:  # gone since its lstat
        return f"(unreadable: {exc.strerror})"
