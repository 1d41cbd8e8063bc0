"""Terminal output as text a report can show: ANSI codes gone, `\\r` redraws collapsed, Ray's
per-worker decorations removed. Pure: bytes and strings in, strings out.

Terminal output is not text: it has ANSI colours, `\\r` progress redraws, invalid UTF-8, and
under Ray every worker line carries a prefix such as `(VllmGenerationWorker pid=331005,
ip=10.0.0.1)` and may end in `[repeated 7x across cluster]`. One line's cleaning is
`core.termtext`'s (NeMo-RL's output reader uses it too); here, bytes and whole tails.
"""

from __future__ import annotations

from ajetd.core.termtext import clean_line, strip_ray

__all__ = [
    "CUT_MARK",
    "MAX_LINE_BYTES",
    "clean_line",
    "decode_line",
    "seen_bytes",
    "strip_ray",
    "tail_lines",
]

MAX_LINE_BYTES = 64 * 1024  # a longer line is cut: memory stays bounded whatever is printed
# What is kept of a longer line: its first and its last half of MAX_LINE_BYTES, joined by
# CUT_MARK. Its end is where a program that printed a progress bar or a huge message without a
# newline puts the error it died of (`... 100%|####| torch.OutOfMemoryError: ...`), its start
# where an exception's class and a log's level are: both are read. The mark (no `\r`, no word
# character) keeps a word or a pattern from matching across the cut.
KEPT_HEAD = KEPT_TAIL = MAX_LINE_BYTES // 2
CUT_MARK = b" [...] "


def tail_lines(data: bytes, count: int) -> list[str]:
    """The last `count` cleaned lines of raw output bytes (invalid UTF-8 replaced)."""
    text = data.decode("utf-8", errors="replace")
    lines = [clean_line(line) for line in text.split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    return lines[-count:]


def seen_bytes(raw: bytes) -> bytes:
    """The part of a raw line (complete or still arriving) that shows what a person saw: from
    its last `\\r` redraw on; of a longer part than MAX_LINE_BYTES, its first KEPT_HEAD and
    last KEPT_TAIL bytes around CUT_MARK (a run of `\\r` at its end counts as one). The same whether
    the line came in one read or in many (`seen_bytes(seen_bytes(a) + b) == seen_bytes(a + b)`),
    so a live reader keeps only this of a line still arriving (a progress bar redrawn for
    hours is one line that never ends), in bounded memory and linear time, and still reads the
    end of a line of any length."""
    end = len(raw.rstrip(b"\r"))
    if end < len(raw) - 1:  # a run of `\r` at its end (`\r\r\n`) shows as one
        raw = raw[: end + 1]
    redraw = raw.rfind(b"\r", 0, end)
    if redraw > 0:
        raw = raw[redraw:]
    if len(raw) <= MAX_LINE_BYTES:
        return raw
    return raw[:KEPT_HEAD] + CUT_MARK + raw[-KEPT_TAIL:]


def decode_line(raw: bytes) -> str:
    """One raw output line as the text a person saw, Ray's decorations removed, and the blanks
    after its text (which no one sees: `AssertionError  ` is an exception line)."""
    if len(raw) > MAX_LINE_BYTES:  # (a shorter line: `clean_line` finds its last redraw)
        raw = seen_bytes(raw)
    return strip_ray(clean_line(raw.decode("utf-8", errors="replace"))).rstrip(" \t")
