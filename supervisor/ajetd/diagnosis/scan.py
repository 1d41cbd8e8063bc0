"""Reading a trial's output files: in bounded chunks, from an offset, the last bytes and lines
(the pure line handling is in `text`; diagnosing what is read, in `live`).

One of the two modules of `ajetd.diagnosis` that read files (with `live`); light, so that
`ajetd status` can import it without the catalogue. A log is read in
chunks or by its tail, so that a huge log never stalls the daemon.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from ajetd.diagnosis.text import tail_lines

CHUNK_BYTES = 1 << 20
TAIL_BYTES = 256 * 1024  # what `log_tail` reads to find a log's last lines


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
            return handle.read(count)  # not on to the end: a log written fast grows meanwhile
    except OSError:
        return b""


def read_chunks(path: str, offset: int = 0, chunk_size: int = CHUNK_BYTES) -> Iterator[bytes]:
    """A file's bytes from `offset` on, a chunk at a time (memory stays flat whatever its size)."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        while chunk := handle.read(chunk_size):
            yield chunk


def log_tail(log_file: Path, count: int) -> list[str]:
    """The last `count` lines of a log, cleaned as a person saw them."""
    return tail_lines(tail_bytes(log_file, TAIL_BYTES), count)
