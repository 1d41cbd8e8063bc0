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


MAX_TAIL_BYTES = 8 << 20  # how far back `log_tail` reads, at most, to find its lines
SHOWN_LINE_CHARS = 2000  # of one line in a report's tail: a 5 MiB line is not a report


def log_tail(log_file: Path, count: int) -> list[str]:
    """The last `count` lines of a log, cleaned as a person saw them, each cut to
    SHOWN_LINE_CHARS with a marker saying so. Read from TAIL_BYTES back, further (to
    MAX_TAIL_BYTES) while that holds fewer lines: a huge line left only the few after it; a
    line whose start lies beyond what was read is said to be cut there."""
    size = TAIL_BYTES
    while True:
        data = tail_bytes(log_file, size)
        if len(data) < size or data.count(b"\n") > count or size >= MAX_TAIL_BYTES:
            break
        size = min(size * 4, MAX_TAIL_BYTES)
    lines = tail_lines(data, count)
    in_data = data.count(b"\n") + (not data.endswith(b"\n"))  # lines read, a part counted
    partial = len(data) >= size and len(lines) >= in_data  # the first one shown is the part
    if partial and lines:  # the first shown line began before what was read: its end
        lines[0] = (
            f"… (a line of more than {len(data):,} bytes: its end) {lines[0][-SHOWN_LINE_CHARS:]}"
        )
    return [lines[0], *map(_shown, lines[1:])] if partial and lines else list(map(_shown, lines))


def _shown(line: str) -> str:
    """A line as a report shows it: its first SHOWN_LINE_CHARS characters, and how many it
    had where it had more."""
    if len(line) <= SHOWN_LINE_CHARS:
        return line
    return f"{line[:SHOWN_LINE_CHARS]} … ({len(line):,} characters, cut)"
