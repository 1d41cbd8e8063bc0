"""Terminal output as text a report can show: ANSI codes gone, `\\r` redraws collapsed, Ray's
per-worker decorations removed. Pure: bytes and strings in, strings out.

Terminal output is not text: it has ANSI colours, `\\r` progress redraws, invalid UTF-8, and
under Ray every worker line carries a prefix such as `(VllmGenerationWorker pid=331005,
ip=10.0.0.1)` and may end in `[repeated 7x across cluster]`.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_CONTROL = {c: None for c in [*range(32), 127] if c != 9}
MAX_LINE_BYTES = 64 * 1024  # a longer line is cut: memory stays bounded whatever is printed
_RAY_PREFIX = re.compile(
    r"^(?:\x1b\[[0-9;]*m)*\([A-Za-z_][\w.:-]* pid=\d+(?:, ip=[\d.:a-fA-F]+)?\)\s?"
)
_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")


def clean_line(line: str) -> str:
    """What a person saw last on that line: after the final `\\r`, without colour codes."""
    line = line.rstrip("\r\n")
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "\r" in line:
        line = line.rstrip("\r").rsplit("\r", 1)[-1]
    return line.translate(_CONTROL)


def tail_lines(data: bytes, count: int) -> list[str]:
    """The last `count` cleaned lines of raw output bytes (invalid UTF-8 replaced)."""
    text = data.decode("utf-8", errors="replace")
    lines = [clean_line(line) for line in text.split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    return lines[-count:]


def strip_ray(line: str) -> str:
    """A worker's own text, without Ray's `(Actor pid=N, ip=...)` prefix and repeat suffix."""
    return _REPEATED.sub("", _RAY_PREFIX.sub("", line, count=1))


def seen_bytes(raw: bytes) -> bytes:
    """The part of a raw line (complete or still arriving) that shows what a person saw: from
    its last `\\r` redraw on, at most MAX_LINE_BYTES of it. The same whether the line came in
    one read or in many, so a live reader keeps only this of a line still arriving (a progress
    bar redrawn for hours is one line that never ends)."""
    redraw = raw.rfind(b"\r", 0, len(raw.rstrip(b"\r")))
    if redraw > 0:
        raw = raw[redraw:]
    return raw[:MAX_LINE_BYTES]


def decode_line(raw: bytes) -> str:
    """One raw output line as the text a person saw, Ray's decorations removed."""
    if len(raw) > MAX_LINE_BYTES:  # (a shorter line: `clean_line` finds its last redraw)
        raw = seen_bytes(raw)
    return strip_ray(clean_line(raw.decode("utf-8", errors="replace")))
