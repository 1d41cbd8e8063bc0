"""Findings from output: which known failure kinds appear, where, root cause first; pure.

Each line is given the first catalogue kind that matches it. A Python traceback whose final
exception line no kind explains becomes `unknown_traceback`. Ordering: the first real error
comes first; echo errors (a dead Ray actor, a dead vLLM engine) go after everything else,
and an unrecognised traceback after the recognised kinds.

Speed: `StreamDiagnoser` takes raw chunks, finds every trigger word of the catalogue in one
Aho-Corasick pass over the whole chunk (`ahocorasick_rs`, in Rust), and decodes and classifies
only the lines that hold one, plus the lines of any traceback; everything else is never
touched in Python. A line equal to one already found to say nothing (NCCL INFO chatter,
vLLM's throughput lines, repeated worker lines; equal but for its digits where no candidate
kind looks at digits) is skipped without decoding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from ahocorasick_rs import BytesAhoCorasick, MatchKind

from ajetd.catalogue import BY_NAME, DIGIT_BLIND, TRIGGERS, UNKNOWN, Kind, candidates
from ajetd.logscan import MAX_LINE_BYTES, decode_line, strip_ray

EVIDENCE_CHARS = 300
# vLLM's logger prefix, e.g. `ERROR 09-03 11:03:37 [core.py:712] `: hides a traceback's indent.
_VLLM_PREFIX = re.compile(
    r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[[^\]]+\]\s?"
)
_TRACEBACK = "Traceback (most recent call last):"
_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
_BENIGN_EXIT = re.compile(r"^(KeyboardInterrupt|SystemExit|GeneratorExit)\b")
_TRIGGER_SEARCH = BytesAhoCorasick(list(TRIGGERS), matchkind=MatchKind.Standard)
# Lines remembered as saying nothing: bounded in count and length so memory stays flat.
_QUIET_LINES = 4096
_QUIET_LINE_BYTES = 512
_ZERO_DIGITS = bytes.maketrans(b"123456789", b"000000000")


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


def classify(line: str, words: frozenset[bytes] | None = None) -> Kind | None:
    """The first kind whose pattern matches `line`, or None (`words`: its trigger words)."""
    for kind in candidates(line.lower(), words):
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

    @property
    def in_traceback(self) -> bool:
        return self._in_traceback

    def feed(self, lines: Iterable[tuple[int, str]]) -> None:
        for number, text in lines:
            self.line(number, text)

    def _record(self, kind: Kind, number: int, text: str) -> None:
        self._counts[kind.name] = self._counts.get(kind.name, 0) + 1
        if kind.name not in self._first:
            evidence = text.strip()[:EVIDENCE_CHARS]
            self._first[kind.name] = Finding(
                kind.name, kind.severity.value, number, evidence, kind.explanation, kind.fix
            )

    def line(self, number: int, text: str, words: frozenset[bytes] | None = None) -> bool:
        """Take one cleaned line; lines must come in order, but need not all come. `words`:
        the trigger words the caller already found in it. False when the line said nothing:
        no kind, and no traceback begun, continued or ended by it."""
        body = _VLLM_PREFIX.sub("", strip_ray(text), count=1)
        kind = classify(body, words)
        if kind is not None:
            self._record(kind, number, body)
        stripped = body.strip()
        if stripped.endswith(_TRACEBACK) or stripped == _TRACEBACK:
            self._in_traceback, self._traceback_known = True, False
            return True
        if not self._in_traceback:
            return kind is not None
        if kind is not None:
            self._traceback_known = True
        if not stripped or body[:1].isspace() or stripped.startswith(_CHAINED):
            return True  # a frame, its source line, or a separator: the traceback goes on
        # the first unindented line after the frames is the exception itself
        self._in_traceback = False
        if not self._traceback_known and not _BENIGN_EXIT.match(stripped):
            self._record(UNKNOWN, number, body)
        return True

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


@dataclass
class StreamDiagnoser:
    """Feed raw output bytes in chunks cut anywhere; memory holds one partial line at most."""

    diagnoser: Diagnoser = field(default_factory=Diagnoser)
    lines_done: int = 0  # complete lines consumed before `_partial`
    _partial: bytes = b""
    _quiet: set[bytes] = field(default_factory=set)

    def feed(self, chunk: bytes) -> None:
        data = self._partial + chunk
        cut = data.rfind(b"\n") + 1
        self._partial = data[cut:][-MAX_LINE_BYTES:]
        self._scan(data[:cut])

    def findings(self) -> list[Finding]:
        """Findings so far (a held partial line counts once the stream ends: call `close`)."""
        return self.diagnoser.findings()

    def close(self) -> list[Finding]:
        if self._partial:
            self._scan(self._partial + b"\n")
            self._partial = b""
        return self.findings()

    def _scan(self, block: bytes) -> None:
        if not block:
            return
        diagnoser, quiet = self.diagnoser, self._quiet
        counted_at, number, done = 0, self.lines_done, 0  # `number`: lines before `counted_at`
        for start, end, words in self._trigger_lines(block):
            if start < done:
                continue  # already read while following a traceback
            raw = block[start:end]
            tracing = diagnoser.in_traceback
            key = raw.translate(_ZERO_DIGITS) if words and words <= DIGIT_BLIND else raw
            if not tracing and key in quiet:
                continue
            number += block.count(b"\n", counted_at, start)
            said = diagnoser.line(number + 1, decode_line(raw), words)
            if not (said or tracing) and len(raw) <= _QUIET_LINE_BYTES:
                if len(quiet) >= _QUIET_LINES:
                    quiet.clear()
                quiet.add(key)
            last = end
            while diagnoser.in_traceback and last + 1 < len(block):  # follow it to its end
                nxt = last + 1
                last = block.find(b"\n", nxt)
                number += 1
                diagnoser.line(number + 1, decode_line(block[nxt:last]))
            counted_at = done = last + 1
            number += 1
        self.lines_done += block.count(b"\n")

    def _trigger_lines(self, block: bytes) -> list[tuple[int, int, frozenset[bytes] | None]]:
        """Each line holding a trigger word, in order: start, end, and its words (a block
        that begins inside a traceback also yields its first line)."""
        lines: list[tuple[int, int, frozenset[bytes] | None]] = []
        if self.diagnoser.in_traceback:
            lines.append((0, block.find(b"\n"), None))
        start, end, words = -1, -1, set[bytes]()
        for index, pos, _ in _TRIGGER_SEARCH.find_matches_as_indexes(
            block.lower(), overlapping=True
        ):
            if pos >= end:  # a new line: close the previous one
                if words:
                    lines.append((start, end, frozenset(words)))
                start = block.rfind(b"\n", 0, pos) + 1
                end = block.find(b"\n", pos)
                words = set()
            words.add(TRIGGERS[index])
        if words:
            lines.append((start, end, frozenset(words)))
        if len(lines) > 1 and lines[0][0] == 0 and lines[1][0] == 0:
            lines.pop(0)  # the traceback's first line also holds a trigger word
        return lines


def diagnose_chunks(chunks: Iterable[bytes]) -> list[Finding]:
    """Findings in a whole stream of output bytes."""
    stream = StreamDiagnoser()
    for chunk in chunks:
        stream.feed(chunk)
    return stream.close()


def diagnose_text(text: str) -> list[Finding]:
    return diagnose_chunks([text.encode("utf-8", errors="replace")])
