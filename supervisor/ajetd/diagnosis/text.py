"""Terminal output as text a report can show: ANSI codes gone, `\\r` redraws collapsed."""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_CONTROL = {c: None for c in [*range(32), 127] if c != 9}


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
