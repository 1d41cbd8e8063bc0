"""Whether two paths on this machine name one file, however each is spelt.

Why: two live runs never share a val file, nor a result dir (README), and a path string says
little of which file it is. A codebase reached through a symlink (`/home/me/agentjet` ->
`/mnt/...`, common on clusters), a `..`, a bind mount or another case on a case-blind disk
named one file twice: two runs appended to one val file and each reported the other's
validations as its own (walk93 F1). So paths are compared as the kernel resolves them: their
real paths, and where the file (or the deepest folder of it that is there) exists, by its
(st_dev, st_ino), with the part of the path not there yet below it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cached_property

# (st_dev, st_ino) of the deepest existing part of the path, and the names below it (casefolded
# on a disk that ignores case); or, where nothing of it can be looked at, its real path
FileKey = tuple[object, ...]


def file_key(path: str) -> FileKey:
    """What names the file at `path` (which need not exist yet): equal for two spellings of
    one file (`file_key` of `x/../y` and of a link to `y` are `y`'s). Never raises: a path
    the system cannot take (a NUL, a lone surrogate: ValueError) names no file, and is keyed
    as written."""
    real = _real(path)
    if real is None:
        return ("path", path)
    below: list[str] = []
    here = real
    while True:
        try:
            found = os.stat(here)
        except ValueError:  # realpath took it, stat does not: named as written
            return ("path", path)
        except OSError:  # not there yet (a val file before its first validation), or hidden
            parent = os.path.dirname(here)
            if parent == here:
                return ("path", real)
            below.append(os.path.basename(here))
            here = parent
            continue
        names = tuple(reversed(below))
        if names and _case_blind(here, found):
            names = tuple(n.casefold() for n in names)
        return ("file", found.st_dev, found.st_ino, names)


def _case_blind(folder: str, found: os.stat_result) -> bool:
    """Whether the disk of `folder` ignores case: its own name spelt in the other case is it
    (checked where the name has letters; a folder whose name has none is taken as keeping
    case, as Linux's disks do)."""
    name = os.path.basename(folder)
    other = name.swapcase()
    if other == name:
        return False
    try:
        seen = os.stat(os.path.join(os.path.dirname(folder), other))
    except OSError:
        return False
    return (seen.st_dev, seen.st_ino) == (found.st_dev, found.st_ino)


def one_file(a: str, b: str) -> str | None:
    """The real path of the file both `a` and `b` name, or None where they name two."""
    return one_file_as(a)(b)


class _Resolved:
    """A path, its key and real path each looked up once, when first asked for."""

    def __init__(self, path: str) -> None:
        self.path = path

    @cached_property
    def key(self) -> FileKey:
        return file_key(self.path)

    @cached_property
    def real(self) -> str:
        return _real(self.path) or self.path


def one_file_as(a: str) -> Callable[[str], str | None]:
    """`one_file(a, b)` for each `b` it is called with, `a` resolved at most once for them all
    (a run's val file compared with every other live run's was resolved again at each
    comparison). Not kept past the caller's use: a file may be swapped for a link at any
    time (that is what the comparison looks for)."""
    mine = _Resolved(a)

    def compare(b: str) -> str | None:
        if not a or not b:
            return None
        if a != b and mine.key != file_key(b):
            return None
        return mine.real

    return compare


def _real(path: str) -> str | None:
    """`path` with its links and `..` resolved; None where the system cannot take it (a NUL
    in it, a lone surrogate: ValueError, which os.path.realpath raises)."""
    try:
        return os.path.realpath(path)
    except ValueError:
        return None
