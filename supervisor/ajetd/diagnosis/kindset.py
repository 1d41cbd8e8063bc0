"""User-defined failure kinds compiled for matching: `KindSet`, tried before the catalogue.

The kinds themselves (and why their patterns are RE2) are in `ajetd.core.userkinds`. A
pattern anchored at its start or end may still match a line under Ray's or vLLM's dress.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import re2

from ajetd.core.termtext import BAR_RUN, DRESS_SOURCE
from ajetd.core.userkinds import RE2_OPTIONS, UserKind

_INNER_ANCHOR = re.compile(r"(?<![\[\\])[\^$]")  # not `[^...]`, not `\^` or `\$`


class KindSet:
    """Compiled user kinds, tried in order; `match` is linear-time in the line's length."""

    def __init__(self, kinds: tuple[UserKind, ...] = ()) -> None:
        self.kinds = kinds
        self._compiled = [(k, [re2.compile(p, RE2_OPTIONS) for p in k.patterns]) for k in kinds]
        either = "|".join(f"(?:{_in_dress(p)})" for k in kinds for p in k.patterns)
        self._any = re2.compile(f"(?m){either}", RE2_OPTIONS) if either else None
        # an anchor elsewhere than at a pattern's ends: undress the lines before searching
        self.anchored = any(_INNER_ANCHOR.search(p[1:-1]) for k in kinds for p in k.patterns)

    def __bool__(self) -> bool:
        return bool(self.kinds)

    def match(self, line: str) -> UserKind | None:
        """The first user kind one of whose patterns occurs in `line`."""
        for kind, patterns in self._compiled:
            if any(p.search(line) for p in patterns):
                return kind
        return None

    def line_starts(self, text: str) -> Iterator[int]:
        """Offsets of the lines of `text` in which some pattern may match (one pass)."""
        pattern = self._any
        if pattern is None:
            return
        last = -1
        for found in pattern.finditer(text):
            start = text.rfind("\n", 0, found.start()) + 1
            if start != last:
                last = start
                yield start

    def __add__(self, other: KindSet) -> KindSet:
        """Both sets, this one's kinds first (a name given twice keeps its first definition)."""
        names = {k.name for k in self.kinds}
        return KindSet((*self.kinds, *(k for k in other.kinds if k.name not in names)))


# the dress for RE2, which is linear-time without bounds and pays for a bounded count in
# states: a progress bar's 1000-byte bound cost a sixth of the user kinds' scan
_DRESS_RE2 = DRESS_SOURCE.replace(BAR_RUN, r"[^|\n]*")


def _in_dress(pattern: str) -> str:
    """A pattern for finding, in raw lines, where `pattern` may match the undressed line: an
    anchor at its start may follow the line's dress (a Ray or vLLM prefix, a timestamp), one at
    its end may precede Ray's `[repeated Nx across cluster]` or a `\\r`."""
    if pattern.startswith("^"):
        pattern = f"^(?:{_DRESS_RE2})*(?:{pattern[1:]})"
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = f"(?:{pattern[:-1]})(?:\\s*\\[repeated \\d+x across cluster\\])?\\s*$"
    return pattern
