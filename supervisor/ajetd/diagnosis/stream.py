"""Raw output read in chunks cut anywhere, as a running trial's log grows or a whole file is
read: the findings (`findings.Diagnoser`) are the same however the output is cut; pure.

Speed: `StreamDiagnoser` takes raw chunks, finds every trigger word of the catalogue (and the
shape words of exception lines) in one Aho-Corasick pass over the whole chunk
(`ahocorasick_rs`, in Rust), and decodes and classifies only the lines that hold one, plus the
lines of any traceback; everything else is never touched in Python. A line equal to one
already found to say nothing (NCCL INFO chatter, vLLM's throughput lines, repeated worker
lines; equal but for its digits where no candidate kind looks at digits) is skipped without
decoding. User kinds are found in the chunk by one RE2 pass (linear time) over it.

Before any of that, a log file's wrapping is taken off (`core.undress`): a container runtime's
records (Docker's json-file log, the CRI format) read as the lines they hold, and lines a
terminal hard-wrapped at its width joined again; a finding still names the raw line it begins
on.

Live reading equals offline reading: a line, a wrapped exception message or a traceback split
across reads, a line longer than MAX_LINE_BYTES, a progress bar redrawn with `\\r` for hours,
`\\r\\n` line ends from a pty: `tests/test_live_reading.py` holds it over the whole corpus.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from ajetd.core.finding import Finding
from ajetd.core.termtext import ANSI_BYTES, DRESS_BYTES
from ajetd.core.undress import Undress
from ajetd.diagnosis.catalogue import DIGIT_BLIND, WORDS, word_search
from ajetd.diagnosis.findings import Diagnoser
from ajetd.diagnosis.kindset import KindSet
from ajetd.diagnosis.shape import continued, joined_with_next, may_go_on
from ajetd.diagnosis.text import decode_line, seen_bytes

_WORD_OF_INDEX = WORDS  # what `word_search`'s match indexes name
# Trigger words that are a number ("401", "403" of HTTP's refusals): they count only as a
# whole number, not inside a step counter, a pid or a timestamp (step:14013), which would
# send every such line of a long log to be read; their kinds' patterns all take the number
# whole (`\b401 client error\b`, `status code:? 40[13]\b`)
_NUMBERS = frozenset(i for i, word in enumerate(_WORD_OF_INDEX) if word.isdigit())
_DIGITS = frozenset(b"0123456789")
# The indexes of the words in DIGIT_BLIND (a line holding only these is remembered by its
# digit-blind form), so that the loop over matches tests an index, not a set of words
_BLIND_INDEXES = frozenset(i for i, word in enumerate(_WORD_OF_INDEX) if word in DIGIT_BLIND)
# Lines remembered as saying nothing: bounded in count and length so memory stays flat.
_QUIET_LINES = 4096
_QUIET_LINE_BYTES = 512
_ZERO_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_ANSI_BYTES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]")
_REPEATED_BYTES = re.compile(rb"(?m)(?<![ \t])[ \t]*\[repeated \d+x across cluster\][ \t]*$")


def _clean_block(block: bytes, undress: bool = True) -> str:
    """A block of raw output as the lines a person saw, with as many newlines as the raw
    block; `undress`: also without each line's dress (only for patterns with an anchor inside
    them: anchors at a pattern's ends are widened over the dress by `kindset`)."""
    if b"\x1b" in block:
        block = _ANSI_BYTES.sub(b"", block)
    if b"\r" in block:
        block = _after_redraws(block)
    if undress:
        block = DRESS_BYTES.sub(b"", block)
        if b"across cluster]" in block:
            block = _REPEATED_BYTES.sub(b"", block)
    return block.decode("utf-8", errors="replace")


def _after_redraws(block: bytes) -> bytes:
    """What `\\r` redraws left on screen: each line as the text after its last `\\r` (trailing
    ones dropped). Only the lines that hold a `\\r` are visited, one after another, so a log
    whose progress bar is one line in six costs a sixth of a pass over every line."""
    parts: list[bytes] = []
    done, find, rfind = 0, block.find, block.rfind
    at = find(b"\r")
    while at >= 0:
        start = rfind(b"\n", 0, at) + 1
        end = find(b"\n", at)
        end = len(block) if end < 0 else end
        parts.append(block[done:start])
        parts.append(block[start:end].rstrip(b"\r").rsplit(b"\r", 1)[-1])
        done = end
        at = find(b"\r", end)
    parts.append(block[done:])
    return b"".join(parts)


@dataclass
class StreamDiagnoser:
    """Feed raw output bytes in chunks cut anywhere: the findings are the same however the
    output is cut (a line or a traceback split across reads, a wrapped message whose second
    line comes later, a line longer than MAX_LINE_BYTES, a progress bar redrawn with `\\r`).
    Memory holds one line still arriving (`seen_bytes` of it) and at most one complete line
    waiting for its next (`may_go_on`). `user`: user-defined kinds, tried before the
    catalogue's."""

    diagnoser: Diagnoser = field(default_factory=Diagnoser)
    lines_done: int = 0  # complete raw lines read, before `_held`, `undress`'s and `_partial`
    user: KindSet = field(default_factory=KindSet)
    undress: Undress = field(default_factory=Undress)
    _partial: bytes = b""
    _quiet: set[bytes] = field(default_factory=set)
    _held: bytes = b""  # a complete line (newline included) waiting for the next one
    _out_done: int = 0  # lines of `undress`'s read (`lines_done` counts raw ones)
    _offset: int = 0  # raw lines read less those of `undress`'s (its joins, the first line)
    # the lines of `undress`'s not read yet that stand for more or fewer than one raw line:
    # where (from the first), and the raw lines more than one that they and those before stand for
    _span_at: list[int] = field(default_factory=list)
    _span_extra: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        # (a reader begun inside a file: its lines before; a copy, `peek`'s: the same)
        self._offset = self.lines_done - self._out_done
        if self.user:
            self.diagnoser.user = self.user

    def feed(self, chunk: bytes) -> None:
        data = self._partial + chunk
        cut = data.rfind(b"\n") + 1
        self._partial = seen_bytes(data[cut:])
        if cut:
            self._take(*self.undress.feed(data[:cut]))

    def _take(self, lines: bytes, spans: list[tuple[int, int]], hold: bool = True) -> None:
        """Read complete lines as printed (`undress`'s), but a last one that may go on in its
        next (`may_go_on`), held; `spans`: those of them that stand for more or fewer than one
        raw line (index, raw lines)."""
        base = self._out_done + self._held.count(b"\n")
        for at, count in spans:
            self._span_at.append(base + at)
            self._span_extra.append((self._span_extra[-1] if self._span_extra else 0) + count - 1)
        data = self._held + lines
        cut = len(data)
        start = data.rfind(b"\n", 0, max(cut - 1, 0)) + 1
        held = data[start:cut] if hold and cut and self._may_go_on(data[start : cut - 1]) else b""
        self._held = held
        self._scan(data[: cut - len(held)])

    def _may_go_on(self, raw: bytes) -> bool:
        """Whether a last complete line may go on in its next (`shape.may_go_on`): where
        `undress` holds the next, whether the next's start may go on with it."""
        if not may_go_on(raw):
            return False
        following = self.undress.next_start() if self.undress.held() else None
        return following is None or continued(decode_line(raw), decode_line(following)) is not None

    def findings(self) -> list[Finding]:
        """Findings so far (the unread end counts once the stream ends: `close`, `peek`)."""
        return self.diagnoser.findings()

    def kinds(self) -> frozenset[str]:
        return self.diagnoser.kinds()

    @property
    def changes(self) -> int:
        return self.diagnoser.changes

    def unread(self) -> bool:
        """Whether the end of the output so far is not read yet: a line without its newline,
        a line waiting for its next, or a traceback not ended (`Diagnoser.awaits_end`)."""
        return bool(self._held or self._partial or self.undress.held() or self.diagnoser.awaits_end)

    def close(self) -> list[Finding]:
        if self._partial:
            self._take(*self.undress.feed(self._partial + b"\n"))
            self._partial = b""
        self._take(*self.undress.flush(), hold=False)
        self.diagnoser.end()
        return self.findings()

    def last_unfinished(self) -> tuple[bytes, int]:
        """The line still arriving (no newline yet; as a person sees it: `seen_bytes`) and
        its line number, for what only an unfinished line can say (`prompt`)."""
        held = self._raw_line(self._out_done + self._held.count(b"\n"))
        return self._partial, held + self.undress.held() + 1

    def holds_line(self) -> bool:
        """Whether a complete line waits for its next (see `may_go_on`, `undress`)."""
        return bool(self._held or self.undress.held())

    def peek(self, ending: bool = True) -> list[Finding]:
        """The findings were the output to end now (as `diagnose` of the output so far reads
        it), without ending it: this reader goes on unchanged. `ending` False: only a complete
        line waiting for its next is read (as it stands), not a line still arriving nor the
        end of a traceback."""
        if not (self.holds_line() or (ending and self.unread())):
            return self.findings()
        fork = replace(
            self,
            diagnoser=self.diagnoser.fork(),
            undress=self.undress.fork(),
            _quiet=set(),
            _span_at=list(self._span_at),
            _span_extra=list(self._span_extra),
        )
        if ending:
            return fork.close()
        fork._take(*fork.undress.flush(), hold=False)
        return fork.findings()

    def _scan(self, block: bytes) -> None:
        if not block:
            return
        if b"\x1b" in block:  # colour codes: gone before words are looked for (`ANSI_BYTES`)
            block = ANSI_BYTES.sub(b"", block)
        diagnoser, quiet = self.diagnoser, self._quiet
        counted_at, number, done = 0, self._out_done, 0  # `number`: lines before `counted_at`
        for start, end, words in self._trigger_lines(block):
            if start < done:
                continue  # already read while following a traceback
            raw = block[start:end]
            tracing = diagnoser.in_traceback
            key = raw.translate(_ZERO_DIGITS) if words and words <= DIGIT_BLIND else raw
            if not tracing and key in quiet:
                continue
            number += block.count(b"\n", counted_at, start)
            said, last = self._read(block, start, end, number, words)
            if not (said or tracing) and len(raw) <= _QUIET_LINE_BYTES and words is not None:
                if len(quiet) >= _QUIET_LINES:
                    quiet.clear()
                quiet.add(key)
            number += last != end
            while diagnoser.in_traceback and last + 1 < len(block):  # follow it to its end
                nxt = last + 1
                number += 1
                _, last = self._read(block, nxt, block.find(b"\n", nxt), number, None)
                number += block.count(b"\n", nxt, last)
            counted_at = done = last + 1
            number += 1
        self._out_done += block.count(b"\n")
        read = bisect_left(self._span_at, self._out_done)
        if read:  # (read: counted in `_offset`)
            extra = self._span_extra[read - 1]
            self._offset += extra
            del self._span_at[:read], self._span_extra[:read]
            self._span_extra = [total - extra for total in self._span_extra]
        self.lines_done = self._out_done + self._offset

    def _read(
        self, block: bytes, start: int, end: int, number: int, words: frozenset[bytes] | None
    ) -> tuple[bool, int]:
        """Give the diagnoser the line at `start`..`end` (line `number` + 1), read together
        with the next one when the two are one wrapped exception message (then every kind is
        tried on it); whether it said something, and where what was read ends."""
        text = decode_line(block[start:end])
        wrapped = joined_with_next(block, end, text)
        if wrapped is not None:
            text, end = wrapped
            words = None
        return self.diagnoser.line(self._raw_line(number) + 1, text, words), end

    def _raw_line(self, number: int) -> int:
        """The raw lines before the line `number` lines into what `undress` returned."""
        joined = bisect_left(self._span_at, number)
        return number + self._offset + (self._span_extra[joined - 1] if joined else 0)

    def _trigger_lines(self, block: bytes) -> list[tuple[int, int, frozenset[bytes] | None]]:
        """Each line holding a trigger word, in order: start, end, and its words (a block
        that begins inside a traceback also yields its first line; a line where a user kind
        may match comes with None: every kind is tried on it)."""
        lines: list[tuple[int, int, frozenset[bytes] | None]] = []
        if self.diagnoser.in_traceback:
            lines.append((0, block.find(b"\n"), None))
        # the loop runs once per trigger word found (a long log's NCCL INFO and wandb lines):
        # names are local, a line's words are kept as indexes until the line is closed, and a
        # line already found to say nothing is dropped here, before a frozenset or a tuple is
        # made for it (`_scan` checks again, as lines found quiet in this block join the set)
        quiet, rfind, find, size, append = (
            self._quiet,
            block.rfind,
            block.find,
            len(block),
            lines.append,
        )
        numbers, digits, word_of, blind, zero = (
            _NUMBERS,
            _DIGITS,
            _WORD_OF_INDEX,
            _BLIND_INDEXES,
            _ZERO_DIGITS,
        )
        start, end, held, all_blind = -1, -1, list[int](), True
        found = word_search(size).find_matches_as_indexes(block.lower(), overlapping=True)
        found.append((-1, size + 1, 0))  # past the end: closes the last line
        for index, pos, stop in found:
            if index in numbers and (
                (pos and block[pos - 1] in digits) or (stop < size and block[stop] in digits)
            ):
                continue  # part of a longer number
            if pos < end:
                held.append(index)
                all_blind = all_blind and index in blind
                continue
            if held:  # a new line: close the previous one
                raw = block[start:end]
                if (raw.translate(zero) if all_blind else raw) not in quiet:
                    append((start, end, frozenset([word_of[i] for i in held])))
            if index < 0:
                break
            start = rfind(b"\n", 0, pos) + 1
            end = find(b"\n", pos)
            held, all_blind = [index], index in blind
        if self.user:
            mine = self._user_lines(block)
            if mine:
                seen = {line[0] for line in lines if line[2] is not None}
                lines = sorted([*lines, *(m for m in mine if m[0] not in seen)])
                lines = [
                    line for i, line in enumerate(lines) if i == 0 or line[0] != lines[i - 1][0]
                ]
        if len(lines) > 1 and lines[0][0] == 0 and lines[1][0] == 0:
            lines.pop(0)  # the traceback's first line also holds a trigger word
        return lines

    def _user_lines(self, block: bytes) -> list[tuple[int, int, frozenset[bytes] | None]]:
        """The raw lines of `block` in which a user kind's pattern may match (one RE2 pass
        over the block as seen, mapped back to raw offsets by line number)."""
        text = _clean_block(block, self.user.anchored)
        out: list[tuple[int, int, frozenset[bytes] | None]] = []
        line_no, text_at, raw_at = 0, 0, 0
        for begin in self.user.line_starts(text):
            ahead = text.count("\n", text_at, begin)
            for _ in range(ahead):
                raw_at = block.find(b"\n", raw_at) + 1
            line_no, text_at = line_no + ahead, begin
            end = block.find(b"\n", raw_at)
            out.append((raw_at, end if end >= 0 else len(block), None))
        return out


def diagnose_chunks(chunks: Iterable[bytes], user: KindSet | None = None) -> list[Finding]:
    """Findings in a whole stream of output bytes (`user`: user-defined kinds)."""
    stream = StreamDiagnoser(user=user or KindSet())
    for chunk in chunks:
        stream.feed(chunk)
    return stream.close()


def diagnose_text(text: str, user: KindSet | None = None) -> list[Finding]:
    return diagnose_chunks([text.encode("utf-8", errors="replace")], user)
