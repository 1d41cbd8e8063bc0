"""How the catalogue's patterns are compiled: each linear in a line's length, whatever the
line (lines are read up to 64 KiB, and a program may print anything); pure.

Python's `re` backtracks: `gcs .*(cannot|failed to) connect` is tried from every `gcs ` of a
line to its end, so a 64 KiB line holding the word thousands of times took seconds per
pattern (17 patterns of the catalogue took 0.1 to 1.6 s on a 16 KiB line; 16 times that on
64 KiB). So a pattern with an unbounded repetition is compiled in RE2 (linear time); one whose
matches are bounded in length stays in `re`, quicker on the short lines most are. RE2 has no
lookaround: `unless` gives, in linear time, the one shape of the catalogue that needed it
(`head(?!.*unless).*tail`: a head with no `unless` after it). `tests/test_logshape.py`
times every pattern on the lines worst for it.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

import re2

from ajetd.core.userkinds import RE2_OPTIONS

# An unbounded repetition (`*`, `+`, `{n,}`), not escaped: a match may be as long as the line.
_UNBOUNDED = re.compile(r"(?<!\\)(?:[*+]|\{\d*,\})")
_LOOKAROUND = re.compile(r"\(\?<?[=!]")


class Pattern(Protocol):
    """A compiled pattern of the catalogue (case-insensitive), as `re` and RE2 give them."""

    @property
    def pattern(self) -> str: ...

    def search(self, text: str) -> Any: ...


def compiled(pattern: str) -> Pattern:
    """`pattern` in RE2 if it holds an unbounded repetition, else in `re`."""
    if _UNBOUNDED.search(pattern) and not _LOOKAROUND.search(pattern):
        linear: Pattern = re2.compile(pattern, RE2_OPTIONS)
        return linear
    if _UNBOUNDED.search(pattern) and not pattern.startswith("^"):
        raise ValueError(f"an unbounded lookaround tried from anywhere (see Unless): {pattern}")
    return re.compile(pattern, re.IGNORECASE)  # (anchored: tried once, at the line's start)


class Unless:
    """`head[0].*head[1]...(?!.*unless).*tail` in linear time: the head's parts in order on
    the line, none of `unless` after its last part, then the tail. `pattern`: that source."""

    def __init__(self, head: tuple[str, ...], unless: str, tail: str = "") -> None:
        self.pattern = ".*".join(head) + f"(?!.*{unless})" + (f".*{tail}" if tail else "")
        self.gate = ".*".join((*head, tail) if tail else head)  # what any match holds (RE2)
        self._head = [re2.compile(part, RE2_OPTIONS) for part in head]
        self._last_unless = re2.compile(f"^.*({unless})", RE2_OPTIONS)  # its rightmost start
        self._tail = re2.compile(tail, RE2_OPTIONS) if tail else None

    def search(self, text: str) -> bool:
        *before, last = self._head
        at = 0
        for part in before:  # the earliest of each leaves the most room after it
            found = part.search(text, at)
            if found is None:
                return False
            at = found.end()
        unless = self._last_unless.search(text)
        after = unless.start(1) if unless is not None else -1
        for found in last.finditer(text, at):
            if found.end() > after:  # no `unless` begins after it: the earliest such
                return self._tail is None or self._tail.search(text, found.end()) is not None
        return False


class Shortfall:
    """A launcher's line giving, resource by resource, what it asks for and what there is
    (AReaL's launchers check Ray's resources before they start their workers: `Ray does not
    have enough resources to launch workers. Required: 16 CPU, 4 GPU, 351.56 GB memory.
    Available: 80.0 CPU, 8.0 GPU, 255.89 GB memory.`; Ray Tune before it starts a trial:
    `Insufficient cluster resources to launch trial: trial requested 11 CPUs, 1 GPUs but the
    cluster has only 4 CPUs, 1 GPUs, ...`): which resource falls short says what is wrong. The
    side asked for opens with `required:`, `requested` or `requires`; the side there is with
    `available:`, `has only` or `only has`. `gpus`: it matches where more GPUs are asked for
    than there are; else where another resource (CPUs, memory) falls short and the GPUs do
    not. Amounts are compared only for a resource given on both sides in the same unit.
    `pattern`: what any match holds (RE2), for the kind's gate; each amount is read from at
    most `SPAN` characters, so it stays linear."""

    SPAN = 400
    _ASKED = r"\b(required: |requested |requires )"
    _THERE = r"\b(available: |has only |only has )"
    _AMOUNT = re.compile(
        r"(\d{1,12}(?:\.\d{1,6})?) ?(?:(cpu|gpu)s?|([kmgt]i?b) memory)\b", re.IGNORECASE
    )

    def __init__(self, gpus: bool) -> None:
        self.gpus = gpus
        self.pattern = (
            f"{self._ASKED}.*[0-9] ?gpus?\\b.*{self._THERE}"
            if gpus
            else f"{self._ASKED}.*[0-9].*{self._THERE}"
        )
        self._required = re2.compile(self._ASKED, RE2_OPTIONS)
        self._available = re2.compile(self._THERE, RE2_OPTIONS)

    @classmethod
    def _amounts(cls, text: str) -> dict[str, tuple[float, str]]:
        """Each resource's first amount in `text`, with its unit (`gb`; '' for a count)."""
        out: dict[str, tuple[float, str]] = {}
        for found in cls._AMOUNT.finditer(text):
            count, device, unit = found.groups()
            name = device.lower() if device else "memory"
            out.setdefault(name, (float(count), (unit or "").lower()))
        return out

    def search(self, text: str) -> bool:
        required = self._required.search(text)
        if required is None:
            return False
        available = self._available.search(text, required.end())
        if available is None:
            return False
        asked = self._amounts(
            text[required.end() : min(available.start(), required.end() + self.SPAN)]
        )
        there = self._amounts(text[available.end() : available.end() + self.SPAN])
        short = {
            name
            for name, (count, unit) in asked.items()
            if name in there and there[name][1] == unit and count > there[name][0]
        }
        return "gpu" in short if self.gpus else bool(short) and "gpu" not in short


def gate(patterns: tuple[Pattern, ...]) -> tuple[Pattern | None, tuple[Pattern, ...]]:
    """One RE2 search that fails on an ASCII line wherever each of `patterns` fails, so that a
    line none of them can match costs one search instead of one per pattern (a log whose every
    line names a trigger word, `gpu_util:97` at each step, was read against the 19 patterns of
    `insufficient_gpus` one by one: 1.7 MiB/s). On ASCII text `re` and RE2 agree (`\\w`, `\\b`,
    `\\d`, `\\s` are Unicode in `re` and ASCII in RE2: a line that is not ASCII is tried
    pattern by pattern). Returns the search and the patterns it cannot stand for (RE2 has no
    lookaround), tried whatever it says; None where fewer than two would share it."""
    shared: list[str] = []
    rest: list[Pattern] = []
    for p in patterns:
        source = p.gate if isinstance(p, Unless) else p.pattern
        try:
            re2.compile(source, RE2_OPTIONS)
        except re2.error:  # a lookahead of an anchored `re` pattern
            rest.append(p)
        else:
            shared.append(source)
    if len(shared) < 2:
        return None, patterns
    try:
        either: Pattern = re2.compile("|".join(f"(?:{s})" for s in shared), RE2_OPTIONS)
    except re2.error:  # larger than RE2's memory cap together: each is tried
        return None, patterns
    return either, tuple(rest)
