"""Raw output as the lines the program printed, out of what a log file wraps them in; pure.

Two wrappings hide a log's lines from a reader of lines, whatever each line's own dress
(`termtext`): a container runtime's records (`containerlog`: Docker's json-file log, the CRI
format of containerd and CRI-O), one a line, a long line's parts in several; and a hard wrap
at a terminal's width (`hardwrap`), a long line in pieces. `Undress` takes the first off,
then joins the second's pieces, a block of complete lines at a time, the same however the
output is cut into blocks; each line it returns that stands for several raw lines is said
(index, how many), so that a finding names the raw line a person finds in the file.
`undress` is the whole of it on a whole output.

Bounded: what is held between blocks is one printed line in parts (its runtime records so
far, at most MAX_LINE_BYTES as `text.seen_bytes` keeps a line) and one wrapped line's pieces
(`hardwrap`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ajetd.core.containerlog import record
from ajetd.core.hardwrap import HardWrap

MAX_PART_BYTES = 64 * 1024  # a printed line in records is kept to its first and last half
_CUT_MARK = b" [...] "
# where a block holds a CRI record at all (else it is passed on as it is, never split in Python)
_STREAM_TAG = re.compile(rb" std(?:out|err) [PF]\b")
_ANY_RECORD = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S{0,16} std(?:out|err) [PF]\b")


@dataclass
class Undress:
    """Feed blocks of complete raw lines (each ending in `\\n`); get back the lines the
    program printed, decided so far, and (index, raw lines) for each that stands for more or
    fewer than one raw line."""

    wrap: HardWrap = field(default_factory=HardWrap)
    part: bytes = b""  # a printed line's text from runtime records that go on
    part_lines: int = 0  # how many records

    def fork(self) -> Undress:
        return Undress(self.wrap.fork(), self.part, self.part_lines)

    def held(self) -> int:
        """How many raw lines are held (not returned yet)."""
        return self.part_lines + self.wrap.held()

    def next_start(self) -> bytes | None:
        """The start of the next line to be returned, where lines are held: its first piece
        (what a line before it may go on with is decided by its start); None where a line in
        runtime records is held (its start may be a record's text still to come, or not)."""
        return None if self.part_lines else self.wrap.first()

    def feed(self, block: bytes) -> tuple[bytes, list[tuple[int, int]]]:
        if not (self.part_lines or _may_hold_records(block)):
            return self.wrap.feed(block)
        return self.wrap.feed(*self._records(block))

    def flush(self) -> tuple[bytes, list[tuple[int, int]]]:
        """Everything held, as it stands (the output ended, or is read as it stands)."""
        if self.part_lines:
            counts = [(0, self.part_lines)] if self.part_lines != 1 else []
            first, spans = self.wrap.feed(self.part + b"\n", counts)
            self.part, self.part_lines = b"", 0
        else:
            first, spans = b"", []
        rest, more = self.wrap.flush()
        shift = first.count(b"\n")
        return first + rest, spans + [(at + shift, lines) for at, lines in more]

    def _records(self, block: bytes) -> tuple[bytes, list[tuple[int, int]]]:
        """The block's runtime records as the lines they hold, records in parts joined."""
        out: list[bytes] = []
        counts: list[tuple[int, int]] = []
        for line in block[:-1].split(b"\n") if block else ():
            found = record(line)
            if found is None and self.part_lines:  # parts the output left unended
                self._end_part(out, counts)
            if found is None:
                out.append(line)
                continue
            text, ended = found
            self.part = _kept(self.part + text)
            self.part_lines += 1
            if ended:
                self._end_part(out, counts)
        return b"".join(line + b"\n" for line in out), counts

    def _end_part(self, out: list[bytes], counts: list[tuple[int, int]]) -> None:
        if self.part_lines != 1:
            counts.append((len(out), self.part_lines))
        out.append(self.part)
        self.part, self.part_lines = b"", 0


def _may_hold_records(block: bytes) -> bool:
    """Whether a block may hold a runtime's record: a line that begins with `{"`, or a CRI
    record's stream and tag found by their literal (C, at memchr's speed), its line's start
    then matched (a pattern tried at every line's start is ten times slower)."""
    if block[:2] == b'{"' or b'\n{"' in block:  # (Hugging Face's `{'loss': ...}` is not)
        return True
    for found in _STREAM_TAG.finditer(block):
        if _ANY_RECORD.match(block, block.rfind(b"\n", 0, found.start()) + 1):
            return True
    return False


def _kept(text: bytes) -> bytes:
    """A printed line's text in parts, as far as it is kept: its first and last halves of
    MAX_PART_BYTES once it is longer (its end is where a program's error follows a bar)."""
    if len(text) <= MAX_PART_BYTES + len(_CUT_MARK):
        return text
    half = MAX_PART_BYTES // 2
    return text[:half] + _CUT_MARK + text[-half:]


def undress(data: bytes) -> bytes:
    """A whole output as the lines the program printed (a last line without its newline is
    read as one)."""
    if data and not data.endswith(b"\n"):
        data += b"\n"
    undresser = Undress()
    lines, _ = undresser.feed(data)
    rest, _ = undresser.flush()
    return lines + rest
