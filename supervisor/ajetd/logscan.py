"""Incremental reading of a trial's output: only new bytes, bounded memory, clean lines.

Terminal output is not text: it has ANSI colours, `\\r` progress redraws, invalid UTF-8, and
under Ray every worker line carries a prefix such as `(VllmGenerationWorker pid=331005,
ip=10.0.0.1)` and may end in `[repeated 7x across cluster]`. `LineScanner.feed` takes any
chunk of bytes and returns the complete lines in it, numbered from 1 and cleaned, keeping at
most one partial line (itself capped) between calls.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ajetd.logtext import clean_line

MAX_LINE_BYTES = 64 * 1024
_RAY_PREFIX = re.compile(
    r"^(?:\x1b\[[0-9;]*m)*\([A-Za-z_][\w.:-]* pid=\d+(?:, ip=[\d.:a-fA-F]+)?\)\s?"
)
_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")


def strip_ray(line: str) -> str:
    """A worker's own text, without Ray's `(Actor pid=N, ip=...)` prefix and repeat suffix."""
    return _REPEATED.sub("", _RAY_PREFIX.sub("", line, count=1))


@dataclass
class LineScanner:
    """Splits a byte stream into numbered, cleaned lines across calls."""

    line_no: int = 0
    offset: int = 0  # bytes consumed so far (complete lines and the held partial)
    _partial: bytes = b""

    def feed(self, chunk: bytes) -> list[tuple[int, str]]:
        self.offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()[-MAX_LINE_BYTES:]
        return [self._number(raw) for raw in lines]

    def flush(self) -> list[tuple[int, str]]:
        """The last line when the stream ended without a newline."""
        if not self._partial:
            return []
        raw, self._partial = self._partial, b""
        return [self._number(raw)]

    def _number(self, raw: bytes) -> tuple[int, str]:
        self.line_no += 1
        text = raw[:MAX_LINE_BYTES].decode("utf-8", errors="replace")
        return self.line_no, strip_ray(clean_line(text))


def read_lines(path: str, chunk_size: int = 1 << 20) -> Iterator[tuple[int, str]]:
    """Every cleaned line of a file, read in chunks (memory stays flat whatever its size)."""
    scanner = LineScanner()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            yield from scanner.feed(chunk)
    yield from scanner.flush()
