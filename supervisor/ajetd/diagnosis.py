"""Findings from output lines: which known failure kinds appear, where, root cause first; pure.

Each line is given the first catalogue kind that matches it. A Python traceback whose final
exception line no kind explains becomes `unknown_traceback`. Ordering: the first real error
comes first; echo errors (a dead Ray actor, a dead vLLM engine) go after everything else,
and an unrecognised traceback after the recognised kinds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from ajetd.catalogue import BY_NAME, CATALOGUE, UNKNOWN, Kind
from ajetd.logscan import strip_ray

EVIDENCE_CHARS = 300
# vLLM's logger prefix, e.g. `ERROR 09-03 11:03:37 [core.py:712] `: hides a traceback's indent.
_VLLM_PREFIX = re.compile(
    r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[[^\]]+\]\s?"
)
_TRACEBACK = "Traceback (most recent call last):"
_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
_BENIGN_EXIT = re.compile(r"^(KeyboardInterrupt|SystemExit|GeneratorExit)\b")


@dataclass(frozen=True)
class Finding:
    """One failure kind seen in a log: its first line, how often, and what to do."""

    kind: str
    severity: str
    line: int
    evidence: str
    explanation: str
    fix: str
    count: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        return f"{self.kind} (line {self.line}): {self.explanation} Evidence: {self.evidence}"


def classify(line: str) -> Kind | None:
    """The first kind whose pattern matches `line`, or None."""
    for kind in CATALOGUE:
        for pattern in kind.patterns:
            if pattern.search(line):
                return kind
    return None


@dataclass
class Diagnoser:
    """Feed it numbered lines in order (in as many calls as you like); ask for findings."""

    _first: dict[str, Finding] = field(default_factory=dict)
    _counts: dict[str, int] = field(default_factory=dict)
    _in_traceback: bool = False
    _traceback_known: bool = False

    def feed(self, lines: Iterable[tuple[int, str]]) -> None:
        for number, text in lines:
            self._line(number, text)

    def _record(self, kind: Kind, number: int, text: str) -> None:
        self._counts[kind.name] = self._counts.get(kind.name, 0) + 1
        if kind.name not in self._first:
            evidence = text.strip()[:EVIDENCE_CHARS]
            self._first[kind.name] = Finding(
                kind.name, kind.severity.value, number, evidence, kind.explanation, kind.fix
            )

    def _line(self, number: int, text: str) -> None:
        body = _VLLM_PREFIX.sub("", strip_ray(text), count=1)
        kind = classify(body)
        if kind is not None:
            self._record(kind, number, body)
        stripped = body.strip()
        if stripped.endswith(_TRACEBACK) or stripped == _TRACEBACK:
            self._in_traceback, self._traceback_known = True, False
            return
        if not self._in_traceback:
            return
        if kind is not None:
            self._traceback_known = True
        if not stripped or body[:1].isspace() or stripped.startswith(_CHAINED):
            return  # a frame, its source line, or a separator: the traceback goes on
        # the first unindented line after the frames is the exception itself
        self._in_traceback = False
        if not self._traceback_known and not _BENIGN_EXIT.match(stripped):
            self._record(UNKNOWN, number, body)

    def findings(self) -> list[Finding]:
        """Every kind seen, root cause first, each with how many lines showed it."""
        found = [
            Finding(**{**f.to_dict(), "count": self._counts[f.kind]}) for f in self._first.values()
        ]

        def rank(f: Finding) -> tuple[int, int]:
            if BY_NAME[f.kind].consequence:
                return 2, f.line
            return (1 if f.kind == UNKNOWN.name else 0), f.line

        return sorted(found, key=rank)


def diagnose_lines(lines: Iterable[tuple[int, str]]) -> list[Finding]:
    diagnoser = Diagnoser()
    diagnoser.feed(lines)
    return diagnoser.findings()
