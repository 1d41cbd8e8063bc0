"""Reading a trial's output: in chunks, with Ray's per-worker decorations removed.

Terminal output is not text: it has ANSI colours, `\\r` progress redraws, invalid UTF-8, and
under Ray every worker line carries a prefix such as `(VllmGenerationWorker pid=331005,
ip=10.0.0.1)` and may end in `[repeated 7x across cluster]`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from ajetd.diagnosis.text import clean_line

MAX_LINE_BYTES = 64 * 1024  # a longer line is cut: memory stays bounded whatever is printed
CHUNK_BYTES = 1 << 20
_RAY_PREFIX = re.compile(
    r"^(?:\x1b\[[0-9;]*m)*\([A-Za-z_][\w.:-]* pid=\d+(?:, ip=[\d.:a-fA-F]+)?\)\s?"
)
_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")


def strip_ray(line: str) -> str:
    """A worker's own text, without Ray's `(Actor pid=N, ip=...)` prefix and repeat suffix."""
    return _REPEATED.sub("", _RAY_PREFIX.sub("", line, count=1))


def decode_line(raw: bytes) -> str:
    """One raw output line as the text a person saw, Ray's decorations removed."""
    return strip_ray(clean_line(raw[:MAX_LINE_BYTES].decode("utf-8", errors="replace")))


def count_lines(path: str, upto: int, chunk_size: int = CHUNK_BYTES) -> int:
    """How many newlines the first `upto` bytes of a file hold (C speed, flat memory)."""
    count = 0
    for chunk in read_chunks(path, 0, chunk_size):
        count += chunk.count(b"\n", 0, max(0, upto))
        upto -= len(chunk)
        if upto <= 0:
            break
    return count


def tail_bytes(path: Path, count: int) -> bytes:
    """The last `count` bytes of a file (b"" when it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - count))
            return handle.read()
    except OSError:
        return b""


def read_chunks(path: str, offset: int = 0, chunk_size: int = CHUNK_BYTES) -> Iterator[bytes]:
    """A file's bytes from `offset` on, a chunk at a time (memory stays flat whatever its size)."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        while chunk := handle.read(chunk_size):
            yield chunk
