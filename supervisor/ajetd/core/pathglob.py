"""A pipeline stage's `requires`/`outputs` written as a glob (`saved/ckpt_*`): its grammar, its
matching, and its form for a remote shell; pure.

A checkpoint whose step is not known in advance is what a glob is written for (walk86 F32:
`saved/ckpt_*` was looked for as written, and a finished training failed). A path with `*`,
`?` or a bracket set `[...]` in it is present when at least one path matches it; `**` is no
recursion (it is `*`), a bracket set holds letters, digits and `_ . -` only (a range such as
`[0-9]`, negated with `!` or `^`). Matching walks the folders one name at a time, bounded
(MAX_SCANNED names looked at in all), and never goes into a folder through a link a wildcard
matched: the glob's own folders, a link the user named in it literally, are followed.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Callable, Iterable

GLOB_CHARS = "*?["
MAX_SCANNED = 100_000  # names looked at for one glob (a folder of checkpoints has hundreds)
_BRACKET = re.compile(r"\[[!^]?[A-Za-z0-9_.\-]{1,64}\]")
_TOKEN = re.compile(r"\*+|\?|\[[^\]/]*\]?|[^*?\[]+")


def is_glob(path: str) -> bool:
    return any(c in path for c in GLOB_CHARS)


def glob_problem(key: str, path: str) -> str | None:
    """Why `path` cannot be a stage's glob, or None: a `[` that opens no bracket set of
    letters, digits and `_ . -` (a range), closed on the same name."""
    for name in path.split("/"):
        rest = _BRACKET.sub("", name)
        if "[" in rest or "]" in rest:
            return (
                f"{key}: {path!r}: a bracket set in a glob holds letters, digits and _ . - "
                "(a range such as [0-9], negated with !), closed on the same name"
            )
    return None


def _parts(name: str) -> list[str]:
    return _TOKEN.findall(name)


def shell_form(path: str) -> str:
    """`path` for bash to expand as a glob: its literal parts quoted, its wildcards not
    (a bracket set holds only `glob_problem`'s safe characters)."""
    out = []
    for part in _parts(path):
        glob = part.startswith(("*", "?")) or (part.startswith("[") and _BRACKET.fullmatch(part))
        out.append(part if glob else shlex.quote(part))
    return "".join(out)


def _fn(name: str) -> str:
    """A name's pattern for `fnmatch` (`^` negation as `!`, a `*` run as one)."""
    return re.sub(r"\*+", "*", name.replace("[^", "[!"))


def first_match(
    pattern: str,
    listdir: Callable[[str], Iterable[tuple[str, bool, bool]]],
    exists: Callable[[str], bool],
) -> str | None:
    """A path that matches `pattern` (absolute), or None. `listdir(folder)` gives each entry's
    (name, is a folder, is a link), nothing for a folder that is not there; `exists(path)`
    whether a path is there. A hidden name matches a wildcard only where the pattern's name
    starts with a dot, as in a shell."""
    names = [n for n in pattern.split("/") if n]
    budget = [MAX_SCANNED]

    def walk(folder: str, index: int) -> str | None:
        if index == len(names):
            return folder if exists(folder) else None
        name, last = names[index], index == len(names) - 1
        if not is_glob(name):
            return walk(f"{folder.rstrip('/')}/{name}", index + 1)
        want = _fn(name)
        for entry, is_dir, is_link in listdir(folder):
            budget[0] -= 1
            if budget[0] < 0:
                return None
            if entry.startswith(".") and not name.startswith("."):
                continue
            if not fnmatch.fnmatchcase(entry, want):
                continue
            if not last and (not is_dir or is_link):  # never into a folder through a link
                continue
            found = walk(f"{folder.rstrip('/')}/{entry}", index + 1)
            if found is not None:
                return found
        return None

    return walk("/", 0)
