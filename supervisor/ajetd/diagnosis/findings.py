"""Findings from output: which failure kinds appear, where, root cause first; pure.

Each line is read under its dress (`logshape.strip_dress`: Ray, vLLM, torch.distributed,
timestamps, shell traces) and given the first kind that matches it: the user's kinds first,
then the catalogue's. An exception line (`SomethingError: ...`, recognised by its shape, with
or without a `Traceback` header above it) that no kind explains becomes `unknown_traceback`.
A wrapping exception (`RayTaskError(Inner)`, `ActorDiedError` raised by a creation task,
torchrun's `ChildFailedError`) is classified by what it wraps, and ranked after it.

A traceback the output ends inside (the log, or the paste of it, cut before its exception
line) says that an exception ended the program without saying which: at the end of the stream
it is `unknown_traceback`, unless a kind was already read in its frames.

Ordering (the root cause first): the first specific failure; then echoes (a dead Ray actor, a
dead vLLM engine); then an exception no kind explains; then what wrappers said about
themselves. Within a rank, the earlier line first.

Speed: `StreamDiagnoser` takes raw chunks, finds every trigger word of the catalogue (and the
shape words of exception lines) in one Aho-Corasick pass over the whole chunk
(`ahocorasick_rs`, in Rust), and decodes and classifies only the lines that hold one, plus the
lines of any traceback; everything else is never touched in Python. A line equal to one
already found to say nothing (NCCL INFO chatter, vLLM's throughput lines, repeated worker
lines; equal but for its digits where no candidate kind looks at digits) is skipped without
decoding. User kinds are found in the chunk by one RE2 pass (linear time) over it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from ahocorasick_rs import BytesAhoCorasick, MatchKind

from ajetd.core.finding import Finding
from ajetd.core.trialscript import OWN_LINE_PREFIX
from ajetd.core.userkinds import UserKind
from ajetd.diagnosis.catalogue import BY_NAME, DIGIT_BLIND, SHAPE_WORDS, TRIGGERS, UNKNOWN, Kind
from ajetd.diagnosis.kindset import KindSet
from ajetd.diagnosis.shape import (
    BENIGN,
    DRESS_BYTES,
    EXCEPTION_LINE,
    TRACEBACK_END,
    joined_with_next,
    may_go_on,
    strip_dress,
)
from ajetd.diagnosis.text import decode_line, seen_bytes
from ajetd.diagnosis.wrapped import (
    ECHO,
    SPECIFIC,
    UNEXPLAINED,
    WRAPPER,
    classify,
    exception_kind,
    line_kind,
)

EVIDENCE_CHARS = 300
_TRACEBACK = "Traceback (most recent call last):"
_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
_TRIGGER_SEARCH = BytesAhoCorasick([*TRIGGERS, *SHAPE_WORDS], matchkind=MatchKind.Standard)
_WORD_OF_INDEX = (*TRIGGERS, *SHAPE_WORDS)
MAX_TRACEBACK_LINES = 2000  # a traceback never ended (cut off, or not one) stops being followed
# A frame inside an experiment logger's own package: an exception raised there that no more
# specific kind explains (a file it cannot write, an unexplained error) is the logger's failure.
_LOGGER_FRAME = re.compile(
    r'^\s*File "[^"]*[/\\](?:site|dist)-packages[/\\]'
    r"(?:wandb|swanlab|mlflow|tensorboard|tensorboardX|torch[/\\]utils[/\\]tensorboard)[/\\]"
)
_LOGGER_CAN_EXPLAIN = frozenset({UNKNOWN.name, "missing_file"})
# Lines remembered as saying nothing: bounded in count and length so memory stays flat.
_QUIET_LINES = 4096
_QUIET_LINE_BYTES = 512
_ZERO_DIGITS = bytes.maketrans(b"123456789", b"000000000")
# A line logged at warning level: `WARNING:...`, `[WARNING]`, vLLM's `WARNING 07-27 ...`.
_WARNING = re.compile(r"^\W{0,3}(?:\([^)]*\)\s*)?\[?WARN(?:ING)?\b")
_ANSI_BYTES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]")
_REPEATED_BYTES = re.compile(rb"(?m)[ \t]*\[repeated \d+x across cluster\][ \t]*$")
# The script's exit line, glued to the program's last line when that had no newline.
_OWN_EXIT_LINE = re.compile(re.escape(OWN_LINE_PREFIX) + r"trial \d+ exited with code -?\d+\s*$")


@dataclass
class Diagnoser:
    """Feed it numbered lines in order (in as many calls as you like); ask for findings."""

    user: KindSet = field(default_factory=KindSet)
    _first: dict[str, Finding] = field(default_factory=dict)
    _rank: dict[str, int] = field(default_factory=dict)
    _counts: dict[str, int] = field(default_factory=dict)
    _in_traceback: bool = False
    _traceback_known: bool = False
    _traceback_lines: int = 0
    _traceback_indent: int = 0  # a traceback printed indented (pip's subprocess output) ends
    # with an exception line indented as much as its header
    _in_logger: bool = False  # the traceback's last frame is in an experiment logger's package
    _traceback_at: int = 0  # the line of the open traceback's header, and its text
    _traceback_header: str = ""
    _changes: int = 0  # kinds found or ranked higher: what a live reader shows has changed

    @property
    def in_traceback(self) -> bool:
        return self._in_traceback

    @property
    def changes(self) -> int:
        """How many times the findings' kinds or order have changed (not their counts)."""
        return self._changes

    def fork(self) -> Diagnoser:
        """A copy that reads on without changing this one (a look at where it stands)."""
        return replace(
            self, _first=dict(self._first), _rank=dict(self._rank), _counts=dict(self._counts)
        )

    def feed(self, lines: Iterable[tuple[int, str]]) -> None:
        for number, text in lines:
            self.line(number, text)

    def _record(self, kind: Kind | UserKind, number: int, text: str, rank: int) -> None:
        self._counts[kind.name] = self._counts.get(kind.name, 0) + 1
        if kind.name not in self._first:
            evidence = text.strip()[:EVIDENCE_CHARS]
            if isinstance(kind, UserKind):
                severity, remedy = kind.severity, kind.remedy
            else:
                severity, remedy = kind.severity.value, ""
            self._first[kind.name] = Finding(
                kind.name, severity, number, evidence, kind.explanation, kind.fix, 1, remedy
            )
            self._rank[kind.name] = rank
            self._changes += 1
        elif rank < self._rank[kind.name]:
            if self._rank[kind.name] == WRAPPER:  # announced first, the failure itself now
                evidence = text.strip()[:EVIDENCE_CHARS]
                self._first[kind.name] = replace(
                    self._first[kind.name], line=number, evidence=evidence
                )
            self._rank[kind.name] = rank  # seen first as an echo, later as a cause
            self._changes += 1

    def _kind(
        self, body: str, words: frozenset[bytes] | None
    ) -> tuple[Kind | UserKind | None, int]:
        """The kind of one undressed line and its rank; None when it says nothing."""
        if self.user:
            mine = self.user.match(body)
            if mine is not None:
                return mine, SPECIFIC
        shape = EXCEPTION_LINE.match(body.lstrip())
        if shape is None:
            return line_kind(body, words)
        own = body.lstrip()
        kind, fallback = exception_kind(own, shape, words)
        if kind is None:
            if BENIGN.match(own) or (self._in_traceback and self._traceback_known):
                return None, fallback
            return UNKNOWN, max(fallback, UNEXPLAINED)
        return kind, fallback

    def _raised_by_logger(self, kind: Kind | UserKind | None, stripped: str) -> bool:
        """Whether this line ends a traceback whose last frame is an experiment logger's own
        code, with an exception no more specific kind explains."""
        if not (self._in_traceback and self._in_logger):
            return False
        if kind is not None and kind.name not in _LOGGER_CAN_EXPLAIN:
            return False
        return bool(EXCEPTION_LINE.match(stripped) or TRACEBACK_END.match(stripped))

    def line(self, number: int, text: str, words: frozenset[bytes] | None = None) -> bool:
        """Take one cleaned line; lines must come in order, but need not all come. `words`:
        the trigger words the caller already found in it. False when the line said nothing:
        no kind, and no traceback begun, continued or ended by it. A line ajetd itself printed
        (its banner with the launch command, its exit line, a follower's note) says nothing."""
        if text.startswith(OWN_LINE_PREFIX):
            return False
        if OWN_LINE_PREFIX in text:  # a last line without its newline, then the exit line
            text = _OWN_EXIT_LINE.sub("", text)
        body = strip_dress(text)
        stripped = body.strip()
        indent = len(body) - len(body.lstrip())
        if stripped.endswith(_TRACEBACK):
            known = False
            if stripped != _TRACEBACK:  # `EngineCore hit an exception: Traceback (...):`
                kind, rank = self._kind(body, words)
                if kind is not None:
                    known = kind is not UNKNOWN
                    self._record(kind, number, body, rank)
            self._in_traceback, self._traceback_known, self._traceback_lines = True, known, 0
            self._traceback_at, self._traceback_header = number, body
            self._in_logger = False
            self._traceback_indent = indent if stripped == _TRACEBACK else 0
            return True
        if self._in_traceback and (indent > self._traceback_indent or not stripped):
            if stripped.startswith("File "):
                self._in_logger = bool(_LOGGER_FRAME.match(body))
            kind = classify(body, words)  # a frame or its source line: the traceback goes on
            if kind is not None:
                self._traceback_known = True
                self._record(kind, number, body, ECHO if kind.consequence else SPECIFIC)
            self._traceback_lines += 1
            if self._traceback_lines > MAX_TRACEBACK_LINES:
                self._in_traceback = False
            return True
        kind, rank = self._kind(body, words)
        if self._raised_by_logger(kind, stripped):
            kind, rank = BY_NAME["logger_error"], SPECIFIC
        if kind is not None:
            if rank == SPECIFIC and _WARNING.match(text):
                rank = ECHO  # logged as a warning (a retry, a fallback): not what ended the run
            self._record(kind, number, body, rank)
        if not self._in_traceback:
            return kind is not None
        self._traceback_lines += 1
        if kind is not None:
            self._traceback_known = True
        if stripped.startswith(_CHAINED) or not TRACEBACK_END.match(stripped):
            # a separator, or another process's line printed in the middle: it goes on
            if self._traceback_lines > MAX_TRACEBACK_LINES:
                self._in_traceback = False
            return True
        # the first unindented line shaped like `module.Class: message` is the exception
        self._in_traceback = False
        if kind is None and not self._traceback_known and not BENIGN.match(stripped):
            self._record(UNKNOWN, number, body, UNEXPLAINED)
        return True

    def end(self) -> None:
        """The output has ended: a traceback still open (cut before its exception line) and
        unexplained by its frames is an exception no kind explains."""
        if self._in_traceback and not self._traceback_known:
            self._record(UNKNOWN, self._traceback_at, self._traceback_header, UNEXPLAINED)
        self._in_traceback = False

    def kinds(self) -> frozenset[str]:
        """The kinds seen so far (without building their findings)."""
        return frozenset(self._first)

    def findings(self) -> list[Finding]:
        """Every kind seen, root cause first, each with how many lines showed it."""
        found = [replace_count(f, self._counts[f.kind]) for f in self._first.values()]
        return sorted(found, key=lambda f: (self._rank[f.kind], f.line))


def replace_count(finding: Finding, count: int) -> Finding:
    return replace(finding, count=count)


def _clean_block(block: bytes, undress: bool = True) -> str:
    """A block of raw output as the lines a person saw, with as many newlines as the raw
    block; `undress`: also without each line's dress (only for patterns with an anchor inside
    them: anchors at a pattern's ends are widened over the dress by `kindset`)."""
    if b"\x1b" in block:
        block = _ANSI_BYTES.sub(b"", block)
    if b"\r" in block:  # what a `\r` redraw left on screen: the text after the last one
        block = b"\n".join(
            line.rstrip(b"\r").rsplit(b"\r", 1)[-1] if b"\r" in line else line
            for line in block.split(b"\n")
        )
    if undress:
        block = DRESS_BYTES.sub(b"", block)
        if b"across cluster]" in block:
            block = _REPEATED_BYTES.sub(b"", block)
    return block.decode("utf-8", errors="replace")


@dataclass
class StreamDiagnoser:
    """Feed raw output bytes in chunks cut anywhere: the findings are the same however the
    output is cut (a line or a traceback split across reads, a wrapped message whose second
    line comes later, a line longer than MAX_LINE_BYTES, a progress bar redrawn with `\\r`).
    Memory holds one line still arriving (`seen_bytes` of it) and at most one complete line
    waiting for its next (`may_go_on`). `user`: user-defined kinds, tried before the
    catalogue's."""

    diagnoser: Diagnoser = field(default_factory=Diagnoser)
    lines_done: int = 0  # complete lines consumed before `_held` and `_partial`
    user: KindSet = field(default_factory=KindSet)
    _partial: bytes = b""
    _quiet: set[bytes] = field(default_factory=set)
    _held: bytes = b""  # a complete line (newline included) waiting for the next one

    def __post_init__(self) -> None:
        if self.user:
            self.diagnoser.user = self.user

    def feed(self, chunk: bytes) -> None:
        data = self._held + self._partial + chunk
        cut = data.rfind(b"\n") + 1
        start = data.rfind(b"\n", 0, max(cut - 1, 0)) + 1
        held = data[start:cut] if cut and may_go_on(data[start : cut - 1]) else b""
        self._held = held
        self._partial = seen_bytes(data[cut:])
        self._scan(data[: cut - len(held)])

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
        a line waiting for its next, or a traceback not ended."""
        return bool(self._held or self._partial or self.diagnoser.in_traceback)

    def close(self) -> list[Finding]:
        tail = self._held + self._partial + (b"\n" if self._partial else b"")
        self._held = self._partial = b""
        self._scan(tail)
        self.diagnoser.end()
        return self.findings()

    def holds_line(self) -> bool:
        """Whether a complete line waits for its next (see `may_go_on`)."""
        return bool(self._held)

    def peek(self, ending: bool = True) -> list[Finding]:
        """The findings were the output to end now (as `diagnose` of the output so far reads
        it), without ending it: this reader goes on unchanged. `ending` False: only a complete
        line waiting for its next is read (as it stands), not a line still arriving nor the
        end of a traceback."""
        if not (self._held or (ending and self.unread())):
            return self.findings()
        fork = replace(self, diagnoser=self.diagnoser.fork(), _quiet=set())
        if ending:
            return fork.close()
        fork._scan(fork._held)
        return fork.findings()

    def _scan(self, block: bytes) -> None:
        if not block:
            return
        diagnoser, quiet = self.diagnoser, self._quiet
        counted_at, number, done = 0, self.lines_done, 0  # `number`: lines before `counted_at`
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
        self.lines_done += block.count(b"\n")

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
        return self.diagnoser.line(number + 1, text, words), end

    def _trigger_lines(self, block: bytes) -> list[tuple[int, int, frozenset[bytes] | None]]:
        """Each line holding a trigger word, in order: start, end, and its words (a block
        that begins inside a traceback also yields its first line; a line where a user kind
        may match comes with None: every kind is tried on it)."""
        lines: list[tuple[int, int, frozenset[bytes] | None]] = []
        if self.diagnoser.in_traceback:
            lines.append((0, block.find(b"\n"), None))
        start, end, words = -1, -1, set[bytes]()
        for index, pos, _ in _TRIGGER_SEARCH.find_matches_as_indexes(
            block.lower(), overlapping=True
        ):
            if pos >= end:  # a new line: close the previous one
                if words:
                    lines.append((start, end, frozenset(words)))
                start = block.rfind(b"\n", 0, pos) + 1
                end = block.find(b"\n", pos)
                words = set()
            words.add(_WORD_OF_INDEX[index])
        if words:
            lines.append((start, end, frozenset(words)))
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
