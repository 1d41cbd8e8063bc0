"""Lines a terminal or a paste hard-wrapped, read as the lines they were; pure.

A log copied from a terminal's screen, put through `fold`, or pasted where lines are cut at a
width, has every line longer than that width W cut into pieces of exactly W characters and a
last one of at most W (a viewer may indent the pieces after the first: a continuation indent,
the piece still W wide). Nothing marks a piece: `torch.OutOfMemoryError: CUDA out of memory.
Tried to allocate 2.00 GiB. GPU 0 has a tot` and `al capacity of 79.14 GiB ...` are two lines.
What tells a wrapped log is its shape: no line is wider than W, and lines exactly W wide are
many and different.

The rule, line after line (so the same however the output is cut into reads): the widest line
so far (at least MIN_WIDTH characters as shown: no colour codes, what the last `\\r` redraw
left) goes on in the next line where the width is shown, the next line is no wider, and it
does not begin a line of its own. The width is shown by EVIDENCE lines that wide, each unlike
the one before but for its numbers (a logger's lines alike, a progress report's, are one
line's copies), and more of them than lines within an eighth below it (a log's own lines
spread their widths; a wrap cuts all long ones to one). A line drawn to the width is no piece
and shows none: padded with blanks (a table, a logger's column), a box's edge last (Rich's
panels), a tqdm bar (drawn as wide as the terminal), a rule. A line of its own: blank, a
traceback's (`Traceback (...)`, `File "..."`, its chained headers), an exception's
(`KeyError: ...`: another process's, printed between), one in a logger's dress (a piece has
none), a box's or a table's, a frame's source under a whole frame line. A line wider than
MAX_WIDTH, wider than any terminal, ends the reading of widths for good: that output was
never wrapped. The continuation indent is the least indentation of the pieces read as
continuations so far, taken off each. Pieces are joined as they are (a cut at a width cuts
words; the blanks a piece ends with, one); where the width is a renderer's (a line drawn to
it: Rich wraps at words and drops the blank there) and no cut was seen at a blank, with a
blank between. A line as wide as the widest whose next is a line of its own ended there: it
shows no width (two lines as wide by chance in a short log joined the shell's `Segmentation
fault` to the error before it).

Not read: the first wrapped line of an output before any other line shows the width (a short
paste whose only long line is the error), a line exactly as wide as the width (nothing tells
it from a piece), display widths of wide characters (a character counts one).

Bounded: a line is joined with at most MAX_PIECES - 1 lines after it, and to at most
MAX_JOINED_BYTES; one line at a time is held (the pieces of the one that may go on). Linear:
the lines at least as wide as the widest are found by one regex each width (a run of one
class, no nesting); only those and the lines after them are looked at in Python.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from ajetd.core.termtext import ANSI_BYTES, DRESS, PROGRESS_BAR

MIN_WIDTH = 60  # narrower is no terminal's width: a log's short lines are not pieces
MAX_WIDTH = 512
EVIDENCE = 2  # different lines exactly as wide as the widest, to read it as the width
NEAR_SHARE = 8  # lines within an eighth below the widest are near it
MAX_PIECES = 64
MAX_JOINED_BYTES = 16 * 1024
# the lines Python prints to begin a traceback's parts, never a piece of another line
_OWN_START = re.compile(
    r"\s*(?:Traceback \(most recent call last\)|File \"|During handling of the above exception"
    r"|The above exception was the direct cause)"
)


# a box's or a table's edge (box drawing, `|`, `+`)
_EDGES = frozenset("|+" + "".join(chr(c) for c in range(0x2500, 0x2580)))
# lines alike but for their numbers (hexadecimal ones too) and blanks are one line's copies (a
# logger's, a progress report's), not pieces
_NUMBERS = b"0123456789abcdefABCDEF \t"
# an exception's line (`torch.OutOfMemoryError: ...`, `KeyError: 'x'`): another process's
# between a traceback's lines, never the rest of one cut just before a class's name
_EXCEPTION = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?::\s|$)")
_BAR = re.compile(PROGRESS_BAR[1:])
_BLANKS = (b" ", b"\t")
# a frame's line whole: the source line after it is its own (indented deeper)
_FRAME = re.compile(r'\s*File "[^"]*", line \d+, in \S+$')


@lru_cache(maxsize=64)
def _at_least(width: int) -> re.Pattern[bytes]:
    """The lines of at least `width` bytes (a line shown `width` wide has at least as many)."""
    return re.compile(rb"(?m)^[^\n]{%d}" % width)


def shown_width(line: bytes) -> int:
    """How many characters of a raw line (no newline) a person sees: without colour codes,
    after its last `\\r` redraw (trailing ones dropped), invalid UTF-8 a character a byte."""
    if b"\x1b" in line:
        line = ANSI_BYTES.sub(b"", line)
    if b"\r" in line:
        line = line.rstrip(b"\r")
        line = line[line.rfind(b"\r") + 1 :]
    return len(line) if line.isascii() else len(line.decode("utf-8", errors="surrogateescape"))


def _seen(line: bytes) -> str:
    if b"\x1b" in line:
        line = ANSI_BYTES.sub(b"", line)
    return line.rstrip(b"\r").rsplit(b"\r", 1)[-1].decode("utf-8", errors="replace")


def _drawn(line: bytes) -> bool:
    """Whether a line is drawn to a width rather than cut at it: padded with blanks (a table,
    a logger's column), ending in a box's edge (Rich's panels), a progress bar (tqdm draws it
    as wide as the terminal), or a rule of one character."""
    seen = _seen(line)
    if seen.endswith("  ") or seen[-1:] in _EDGES or ("%|" in seen and _BAR.search(seen)):
        return True
    text = seen.strip()
    return len(set(text)) == 1


def _own_line(line: bytes, before: bytes) -> bool:
    """Whether a line begins a line of its own, never a piece of the line `before` it: blank,
    a traceback's own, an exception's, in a logger's dress, a box's or table's (its edge
    first), indented under a frame's whole line (its source)."""
    seen = _seen(line)
    if not seen.strip() or _OWN_START.match(seen) or seen.lstrip()[:1] in _EDGES:
        return True
    if _EXCEPTION.match(seen):
        return True
    if seen[:1] in " \t" and _FRAME.match(_seen(before)):
        return True
    dress = DRESS.match(seen)
    return dress is not None and dress.end() > 0


@dataclass
class HardWrap:
    """Feed blocks of complete lines (each ending in `\\n`); get back the lines decided so far,
    pieces joined, and where a returned line stands for several raw lines: (its index among
    the lines returned, how many)."""

    widest: int = 0
    at_widest: int = 0  # lines exactly `widest` wide, each unlike the one before (digits aside)
    last_widest: bytes = b""  # (the last of them, its digits zeros)
    ended: int = 0  # lines `widest` wide whose next began a line of its own: they ended there
    widths: list[int] = field(default_factory=lambda: [0] * (MAX_WIDTH + 1))  # lines of each
    # width, of those near the widest when read
    indent: int = -1  # the continuation indent (-1: no continuation read yet)
    off: bool = False  # a line wider than any terminal was read: no widths any more
    cut: bool = False  # a piece was cut at a blank: the width cuts words too
    drawn: bool = False  # a line drawn as wide as the widest (`_drawn`): a renderer's width
    pieces: list[bytes] = field(default_factory=list)  # the held line's, in order
    held_bytes: int = 0
    held_lines: int = 0  # the raw lines the pieces stand for
    held_width: int = 0  # the last piece's, as shown

    def fork(self) -> HardWrap:
        return replace(self, widths=list(self.widths), pieces=list(self.pieces))

    def held(self) -> int:
        """How many raw lines are held (the pieces of a line that may go on)."""
        return self.held_lines

    def first(self) -> bytes | None:
        """The held line's first piece (None: none held)."""
        return self.pieces[0] if self.pieces else None

    def feed(
        self, block: bytes, counts: Sequence[tuple[int, int]] = ()
    ) -> tuple[bytes, list[tuple[int, int]]]:
        """`counts`: the lines of `block` that stand for several raw lines, (index, how many),
        in order; the same of the lines returned."""
        out: list[bytes] = []
        spans: list[tuple[int, int]] = []
        lines_out, copied, pos, size = 0, 0, 0, len(block)
        line_no, copied_no = 0, 0  # the lines before `pos` and before `copied`
        while pos < size:
            if not self.pieces:  # the next line that may be a piece or near one, found in C
                if self.off:
                    break
                found = _at_least(self._near()).search(block, pos)
                if found is None:
                    break
                line_no += block.count(b"\n", pos, found.start())
                pos = found.start()
            end = block.find(b"\n", pos)
            line = block[pos:end]
            width = shown_width(line)
            self._note(line, width)
            if self.pieces:  # (held lines are those just before `pos`: copied == pos)
                if self._goes_on(line, width, _count(counts, line_no)):
                    copied, copied_no = end + 1, line_no + 1
                    pos, line_no = end + 1, line_no + 1
                    if width < self.widest:  # its last piece: the line is whole
                        lines_out = self._emit(out, spans, lines_out)
                    continue
                if len(self.pieces) == 1 and _own_line(line, b""):
                    self.ended += 1  # a line as wide as the widest ended there
                lines_out = self._emit(out, spans, lines_out)
            if width == self.widest and not self.off and not _drawn(line):
                out.append(block[copied:pos])
                _pass(counts, copied_no, line_no, lines_out, spans)
                lines_out += line_no - copied_no
                self.pieces, self.held_bytes, self.held_width = [line], len(line), width
                self.held_lines = _count(counts, line_no)
                copied, copied_no = end + 1, line_no + 1
            pos, line_no = end + 1, line_no + 1
        out.append(block[copied:])
        _pass(counts, copied_no, copied_no + block.count(b"\n", copied), lines_out, spans)
        return b"".join(out), spans

    def flush(self) -> tuple[bytes, list[tuple[int, int]]]:
        """The held line, as far as it was read (the output ended, or is read as it stands)."""
        out: list[bytes] = []
        spans: list[tuple[int, int]] = []
        if self.pieces:
            self._emit(out, spans, 0)
        return b"".join(out), spans

    def _near(self) -> int:
        """The least width that counts: near the widest (NEAR_SHARE of it below), at least
        MIN_WIDTH."""
        return max(MIN_WIDTH, self.widest - self.widest // NEAR_SHARE)

    def _note(self, line: bytes, width: int) -> None:
        """Count a line's width (each line once, in order)."""
        if self.off or width < self._near():
            return
        if width > MAX_WIDTH:
            self.off = True
            return
        if width > self.widest:
            self.widest, self.at_widest, self.last_widest, self.drawn = width, 0, b"", False
            self.ended = 0
        self.widths[width] += 1
        if width == self.widest and _drawn(line):
            self.drawn = True
        elif width == self.widest:
            key = line.translate(None, _NUMBERS)
            if key != self.last_widest:
                self.at_widest, self.last_widest = self.at_widest + 1, key

    def _shown(self) -> bool:
        """Whether the widest width is a wrap's: EVIDENCE lines that wide, each unlike the one
        before, besides those that ended there (their next line one of its own: a line that
        happens to be that wide, `Exception ignored in: <function ...>` then `Traceback`), and
        more of them than lines a little narrower (a wrapped log's long lines are all cut to
        it; a log's own lines spread their widths)."""
        wide = self.widest
        near = sum(self.widths[wide - wide // NEAR_SHARE : wide])
        return self.at_widest - self.ended >= EVIDENCE and self.at_widest > near

    def _goes_on(self, line: bytes, width: int, lines: int) -> bool:
        """Whether `line` (noted) is the next piece of the held line (joined to it if so)."""
        if (
            self.off
            or width > self.widest
            or self.held_width != self.widest  # (a wider line came after it)
            or not self._shown()
            or len(self.pieces) >= MAX_PIECES
            or self.held_bytes + len(line) > MAX_JOINED_BYTES
            or _own_line(line, self.pieces[-1])
        ):
            return False
        redraw = line.rstrip(b"\r").rfind(b"\r")
        line = line[redraw + 1 :]  # what it shows: a redraw before it would hide the line
        lead = len(line) - len(line.lstrip(b" \t"))
        self.indent = lead if self.indent < 0 else min(self.indent, lead)
        piece = line[min(lead, self.indent) :]
        if piece[:1] in _BLANKS or self.pieces[-1].rstrip(b"\r")[-1:] in _BLANKS:
            self.cut = True  # a blank at the cut: cut at a width, not wrapped at words
        elif self.drawn and not self.cut:  # a renderer's lines: wrapped at words, the blank
            piece = b" " + piece  # dropped there (Rich's, textwrap's)
        self.pieces.append(piece)
        self.held_bytes += len(piece)
        self.held_lines += lines
        self.held_width = width
        return True

    def _emit(self, out: list[bytes], spans: list[tuple[int, int]], lines_out: int) -> int:
        if self.held_lines != 1:
            spans.append((lines_out, self.held_lines))
        out.append(b"".join(_joinable(piece) for piece in self.pieces[:-1]))
        out.append(self.pieces[-1] + b"\n")
        self.pieces, self.held_bytes, self.held_lines = [], 0, 0
        return lines_out + 1


def _joinable(piece: bytes) -> bytes:
    """A piece as the line it is part of goes on after it: a cut at a blank keeps one blank
    (blanks a line is padded with, a tab, are no part of the text: `is not  \t` + `equal to`
    reads `is not equal to`, as the catalogue's phrases are written)."""
    piece = piece.rstrip(b"\r")
    bare = piece.rstrip(b" \t")
    return bare + b" " if len(bare) < len(piece) else piece


def _count(counts: Sequence[tuple[int, int]], line_no: int) -> int:
    """How many raw lines line `line_no` stands for."""
    at = bisect_left(counts, (line_no, 0))
    return counts[at][1] if at < len(counts) and counts[at][0] == line_no else 1


def _pass(
    counts: Sequence[tuple[int, int]],
    first: int,
    stop: int,
    to: int,
    spans: list[tuple[int, int]],
) -> None:
    """The counts of lines `first` to `stop` (not included), passed on unjoined as the lines
    from `to` on."""
    if not counts:
        return
    for at in range(bisect_left(counts, (first, 0)), bisect_left(counts, (stop, 0))):
        line_no, lines = counts[at]
        spans.append((to + line_no - first, lines))
