"""The few pieces of Markdown the blueprint parser reads: fences, code spans, HTML comments. Pure.

Each is a single left-to-right pass (string searches, and patterns that never backtrack over
more than one line's indentation), so a megabyte of backticks, fences or `<!--` costs
milliseconds: the daemon parses blueprints in its one loop, and a quadratic pattern there
(200 KB of unclosed `<!--` once took 41 s) stalls every run it supervises.
"""

from __future__ import annotations

import functools
import re
import textwrap
from typing import NamedTuple

from ajetd.core.linecut import cut

FENCE = re.compile(r"\s*(`{3,}|~{3,})")
_TICKS = re.compile(r"`+")


def closes(candidate: str, opening: str) -> bool:
    """A fence closes with the same character, at least as long as the opening one."""
    return candidate[0] == opening[0] and len(candidate) >= len(opening)


@functools.lru_cache(maxsize=64)
def _closing(opening: str) -> re.Pattern[str]:
    return re.compile(rf"\n[^\S\n]*{re.escape(opening[0])}{{{len(opening)},}}")


def closing_fence(text: str, start: int, opening: str) -> int | None:
    """Where (the line break before it) the fence `opening` closes in `text`, searching from
    `start` (within the opening line), or None: it runs to the end."""
    found = _closing(opening).search(text, start)
    return None if found is None else found.start()


_FENCE_LINE = re.compile(r"(?:^|\n)[^\S\n]*(`{3,}|~{3,})")


def fenced_body(raw: str) -> str | None:
    """The body of the first fenced block (to its closing fence, or to the end), else None;
    without the indentation its lines share (a block nested under a bullet is indented),
    as a Markdown viewer shows it: YAML there reads as written."""
    opening = _FENCE_LINE.search(raw)
    if opening is None:
        return None
    first = raw.find("\n", opening.end())
    if first < 0:
        return ""
    close = closing_fence(raw, first, opening.group(1))
    return textwrap.dedent(raw[first + 1 : close if close is not None else len(raw)]).strip()


class Block(NamedTuple):
    """A fenced block's place in its text: its opening line's start, its body's start and
    end (the line break before the closing fence, or the text's end), and where the line
    after its closing fence starts (the text's end where there is none)."""

    start: int
    body: int
    body_end: int
    end: int


def fenced_blocks(raw: str, most: int = 10) -> list[Block]:
    """Each fenced block of `raw` (at most `most`), in order: one pass, each block skipped
    to its closing fence, read as `fenced_body` reads the first."""
    found: list[Block] = []
    pos = 0
    while len(found) < most and (opening := _FENCE_LINE.search(raw, pos)) is not None:
        start = opening.start() + (raw[opening.start()] == "\n")
        first = raw.find("\n", opening.end())
        if first < 0:
            found.append(Block(start, len(raw), len(raw), len(raw)))
            break
        close = closing_fence(raw, first, opening.group(1))
        if close is None:
            found.append(Block(start, first + 1, len(raw), len(raw)))
            break
        end = raw.find("\n", close + 1)  # past the closing fence's line
        pos = len(raw) if end < 0 else end
        found.append(Block(start, first + 1, close, pos + (end >= 0)))
    return found


def fenced_openings(raw: str, most: int = 10) -> list[str]:
    """The first line of each fenced block's body in `raw` (at most `most` blocks; "" for an
    empty one), in order."""
    return [
        raw[block.body : block.body_end].strip().split("\n", 1)[0].strip()
        for block in fenced_blocks(raw, most)
    ]


def code_span(raw: str) -> str | None:
    """The text of the first code span: a run of backticks closed by the next run of the same
    length (CommonMark), stripped; None if there is none or it is empty."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(raw)]
    last: dict[int, int] = {}
    for index, (start, end) in enumerate(runs):
        last[end - start] = index
    for index, (start, end) in enumerate(runs):
        size = end - start
        if last[size] <= index:
            continue
        closing = next(j for j in range(index + 1, len(runs)) if runs[j][1] - runs[j][0] == size)
        text = raw[end : runs[closing][0]].strip()
        return text or None
    return None


def blank_comments(text: str) -> str:
    """HTML comments (`<!-- ... -->`) replaced by their line breaks only: they do not show when
    the Markdown is rendered, so they are never part of a value, and line numbers stay true.
    An unclosed `<!--` is left as written."""
    pieces: list[str] = []
    pos = 0
    while True:
        start = text.find("<!--", pos)
        if start < 0:
            break
        end = text.find("-->", start + 4)
        if end < 0:
            break  # no later comment can close either
        pieces += [text[pos:start], "\n" * text.count("\n", start, end)]
        pos = end + 3
    pieces.append(text[pos:])
    return "".join(pieces)


def table_cell(text: str, limit: int) -> str:
    """`text` as one cell of a Markdown table: on one line (line breaks and control
    characters as spaces), at most `limit` characters (`linecut.cut`: at a word boundary,
    `…`, what it opened closed, so no code span runs on into the next cells), a `|` escaped so it
    splits no column, a `<` as `&lt;` so no viewer reads it as HTML, and a `&` as `&amp;`
    so that an entity in the text (`&lt;`) is shown as written, not as what it names."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    flat = cut(flat, limit)
    return flat.replace("&", "&amp;").replace("|", "\\|").replace("<", "&lt;")


_TILDES = re.compile(r"~+")


def fence(lines: list[str], info: str = "", char: str = "`", least: int = 3) -> list[str]:
    """`lines` quoted as one fenced block (`info` after the opening fence) that no line can
    close or open: its fence is longer than any run of `char` in them (CommonMark closes a
    fence with a line of at least as many), at least `least` long. A program's output holding a
    plain ``` line would otherwise end the block there and render the rest as Markdown. One
    pass over the text."""
    runs = _TICKS if char == "`" else _TILDES
    longest = max((len(m.group()) for line in lines for m in runs.finditer(line)), default=0)
    bar = char * max(least, longest + 1)
    return [bar + info, *lines, bar]


def as_code_span(text: str) -> str:
    """`text` (one line) as a Markdown code span that renders it exactly: delimited by a run
    of backticks longer than any inside it, padded with a space each side where it begins or
    ends with a backtick, or with a space at both ends (CommonMark takes one off each)."""
    longest = max((len(m.group()) for m in _TICKS.finditer(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = text[:1] == "`" or text[-1:] == "`" or (text[:1] == text[-1:] == " " and text.strip())
    return f"{ticks} {text} {ticks}" if pad else f"{ticks}{text}{ticks}"
