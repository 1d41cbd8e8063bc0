"""Diagnosis of trials' logs: of running trials as they print (only new bytes, bounded work
per call), and of an ended trial's log tail (`diagnose_file`).

A signature a still-running program prints (a traceback in a Ray worker while the driver
hangs, a NaN loss) is noticed at the next tick, not when the trial ends. Each trial keeps one
`StreamDiagnoser` and the offset it has read to; memory stays bounded whatever the log size.

What a running trial shows is what `ajetd diagnose` of its output so far says: the whole list,
root cause first (a later line may outrank an earlier one), not the kinds in the order they
appeared. While output arrives, an exception line waiting for a possible second line of its
message is read as it stands; once the output pauses (`paused`: a pass that finds nothing
new), its unfinished last line is read too (a program that prints an error without a newline
and hangs) and a traceback it stopped inside counts as ended; an unfinished last line that is a
question for a person (`prompt`: wandb's login menu, `[y/N]`, `Password:`) is a program waiting
for input nobody will type. Such a reading is provisional: the next one replaces it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ajetd.core.finding import Finding
from ajetd.core.trialscript import OWN_LINE_PREFIX
from ajetd.diagnosis.kindset import KindSet
from ajetd.diagnosis.prompt import waiting_prompt
from ajetd.diagnosis.scan import count_lines, read_chunks
from ajetd.diagnosis.stream import StreamDiagnoser
from ajetd.diagnosis.text import MAX_LINE_BYTES

MAX_BYTES_PER_SCAN = 8 * 1024 * 1024  # a burst of output is read over several ticks
DIAGNOSE_TAIL_BYTES = 64 * 1024 * 1024  # what a finished trial's diagnosis reads at most
LIVE_SCAN_S = 1.5  # how soon new output is read while a log grows (noticed within 2 s)


_STEP = re.compile(rb"\bstep[\s:=]+(\d+)|\bStep (\d+)/\d+", re.IGNORECASE)
KEEP_STEPS = 20
# ajetd's own lines in a trial's log (its banner names the command, `echo step:1` and all):
# no step of the program's
_OWN = OWN_LINE_PREFIX.encode()
_OWN_LINES = re.compile(rb"(?m)^" + re.escape(_OWN) + rb"[^\n]*")


@dataclass
class _Cursor:
    offset: int
    stream: StreamDiagnoser
    last_step: int = -1
    step_times: list[float] = field(default_factory=list)  # when each new step was first seen
    first_step_at: float | None = None  # when its first step was seen (its start-up's end)
    shown: tuple[Finding, ...] = ()  # the findings last given out
    changes: int = 0  # the stream's `changes` when they were read
    provisional: bool = False  # they read the output's unread end as it stood
    paused_at: int = -1  # the offset at which a pause was last read
    told: set[str] = field(default_factory=set)  # the kinds given out as new once
    fresh: bool = True  # nothing given out yet (what a reader before a restart gave is unknown)
    began: int = 0  # where this reader began (a restart: the log's tail), unread before
    marked_at: int = -1  # the end of the last read whose bytes held a mark (`LiveScans.marks`)
    tail: bytes = b""  # the last read's end, where a mark cut between two reads begins


@dataclass(frozen=True)
class Seen:
    """A running trial's output findings, root cause first, when they have changed;
    `replaced`: the kinds of those given out before (which these replace); `new`: those of
    kinds never given out before for this trial (a provisional kind that went and came back is
    not new); `unsure`: the kinds read only from the output's unfinished end, as it stood (at
    a pause: a line without its newline, a traceback not ended; a line that may go on in its
    next), which the next reading may not give; `first`: this reader's first (after a daemon
    restart, these replace every kind the reader before it gave out, which it does not know:
    given out even when empty)."""

    findings: tuple[Finding, ...]
    replaced: frozenset[str]
    new: tuple[Finding, ...] = ()
    unsure: frozenset[str] = frozenset()
    first: bool = False


def _shown(finding: Finding) -> tuple[str, int, str]:
    return finding.kind, finding.line, finding.evidence


def _show(cursor: _Cursor, findings: list[Finding], provisional: bool) -> Seen | None:
    """`findings`: the stream's, its unread end read as it stands when `provisional`."""
    stream = cursor.stream
    cursor.changes, cursor.provisional = stream.changes, provisional
    before, first = cursor.shown, cursor.fresh
    if not first and [_shown(f) for f in findings] == [_shown(f) for f in before]:
        return None  # (counts aside)
    cursor.shown, cursor.fresh = tuple(findings), False
    new = tuple(f for f in findings if f.kind not in cursor.told)
    cursor.told.update(f.kind for f in new)
    unsure = frozenset(f.kind for f in findings) - stream.kinds() if provisional else frozenset()
    return Seen(cursor.shown, frozenset(f.kind for f in before), new, unsure, first)


@dataclass
class LiveScans:
    """One cursor per (run, trial); `scan` and `paused` return the findings when they change.
    `marks`: bytes whose place in the output is kept as it is read (`holds_mark`): what any
    validation record printed must hold (`ajetout.MARKS`), so that a run's output is read for
    records only where it printed one, from the bytes this reading takes anyway (issue 15:
    reading every quiet run's output again for records cost five times the quiet loop)."""

    _cursors: dict[tuple[str, int], _Cursor] = field(default_factory=dict)
    marks: tuple[bytes, ...] = ()

    def pending(self, key: tuple[str, int], size: int) -> bool:
        """Whether the log of `key` holds bytes not read yet."""
        cursor = self._cursors.get(key)
        return cursor is None or size > cursor.offset

    def pause_due(self, key: tuple[str, int]) -> bool:
        """Whether the output of `key` ends in something unread that a pause would read as it
        stands (`paused`), and no pause has read it yet."""
        cursor = self._cursors.get(key)
        return cursor is not None and cursor.paused_at != cursor.offset and cursor.stream.unread()

    def holds_mark(self, key: tuple[str, int], since: int) -> bool | None:
        """Whether the output of `key` from byte `since` on, as far as it was read, holds one
        of the `marks` (or may: a read holding one that ended after `since`); None where this
        reading has not seen all of it (no cursor, or one begun after `since`)."""
        cursor = self._cursors.get(key)
        if cursor is None or since < cursor.began:
            return None
        return cursor.marked_at > since

    def read_to(self, key: tuple[str, int]) -> int | None:
        """How far the output of `key` was read (None: not begun)."""
        cursor = self._cursors.get(key)
        return cursor.offset if cursor is not None else None

    def started(self, key: tuple[str, int]) -> bool:
        """Whether `key` has its cursor (the user kinds given to `scan` are used only before)."""
        return key in self._cursors

    def step_times(self, key: tuple[str, int]) -> tuple[float, ...]:
        cursor = self._cursors.get(key)
        return tuple(cursor.step_times) if cursor else ()

    def first_step_at(self, key: tuple[str, int]) -> float | None:
        """When the output of `key` first named a training step (after a daemon restart: the
        first step read since)."""
        cursor = self._cursors.get(key)
        return cursor.first_step_at if cursor is not None else None

    def last_step(self, key: tuple[str, int]) -> int | None:
        """The last training step the output of `key` named, as far as it was read."""
        cursor = self._cursors.get(key)
        return cursor.last_step if cursor is not None and cursor.last_step >= 0 else None

    def scan(
        self, key: tuple[str, int], log_file: Path, now: float, user: KindSet | None = None
    ) -> Seen | None:
        """Read what the log gained; its findings when they changed. `user`: user-defined
        kinds, taken when the trial's cursor is made."""
        cursor = self._cursors.get(key)
        try:
            if cursor is None:  # first look (or after a daemon restart): the log's tail
                start, stream = tail_stream(log_file, DIAGNOSE_TAIL_BYTES, user)
                self._let_go(key)
                cursor = self._cursors[key] = _Cursor(start, stream, began=start)
            data = _read_from(log_file, cursor.offset)
        except OSError:
            return None
        cursor.offset += len(data)
        if self.marks and data:
            self._mark(cursor, data)
        stream = cursor.stream
        stream.feed(data)
        said = _OWN_LINES.sub(b"", data) if _OWN in data else data  # not its banner
        steps = [int(a or b) for a, b in _STEP.findall(said)]
        if steps and max(steps) > cursor.last_step:  # training moved on: learn its pace
            cursor.last_step = max(steps)
            cursor.step_times = [*cursor.step_times, now][-KEEP_STEPS:]
            if cursor.first_step_at is None:
                cursor.first_step_at = now
        held = stream.holds_line()
        if stream.changes == cursor.changes and not (held or cursor.provisional or cursor.fresh):
            return None  # most reads: nothing new, no findings built
        return _show(cursor, stream.peek(ending=False), held)

    def _mark(self, cursor: _Cursor, data: bytes) -> None:
        """Where `data` (read up to `cursor.offset`) holds a mark, or one begun in the read
        before it: a `bytes` find each, in C, over what was read anyway."""
        keep = max(len(m) for m in self.marks) - 1
        joint = cursor.tail + data[:keep]
        if any(m in data or m in joint for m in self.marks):
            cursor.marked_at = cursor.offset
        cursor.tail = (cursor.tail + data[-keep:])[-keep:] if keep else b""

    def paused(self, key: tuple[str, int], size: int) -> Seen | None:
        """The log has not grown since the last read (`size`: its size now): its unread end
        read as it stands, once per pause; the findings when that changed them."""
        cursor = self._cursors.get(key)
        if cursor is None or size != cursor.offset or cursor.paused_at == cursor.offset:
            return None
        cursor.paused_at = cursor.offset
        if not cursor.stream.unread():
            return None
        findings = cursor.stream.peek()
        prompt = waiting_prompt(*cursor.stream.last_unfinished())
        if prompt is not None:  # what blocks it now, so first; gone once output goes on
            findings = [prompt, *findings]
        return _show(cursor, findings, True)

    def finish(self, key: tuple[str, int], log_file: Path) -> list[Finding] | None:
        """The whole diagnosis of an ended trial from its live cursor (only unread bytes are
        read); None when there is no cursor or too much is left unread (then read the tail)."""
        cursor = self._cursors.pop(key, None)
        if cursor is None:
            return None
        try:
            if log_file.stat().st_size - cursor.offset > DIAGNOSE_TAIL_BYTES:
                return None
            with open(log_file, "rb") as handle:
                handle.seek(cursor.offset)
                while chunk := handle.read(MAX_BYTES_PER_SCAN):
                    cursor.stream.feed(chunk)
        except OSError:
            return None
        return cursor.stream.close()

    def _let_go(self, key: tuple[str, int]) -> None:
        """The run's earlier trials' cursors, read by now: one that ended without a failure
        (exit 0, a hang stopped, a stop) has no `finish`, and each holds up to a line still
        arriving, a held line and its quiet lines."""
        for old in [k for k in self._cursors if k[0] == key[0] and k != key]:
            del self._cursors[old]

    def forget(self, run_id: str) -> None:
        for key in [k for k in self._cursors if k[0] == run_id]:
            del self._cursors[key]


def _read_from(log_file: Path, offset: int) -> bytes:
    """What the file holds from `offset` on, at most MAX_BYTES_PER_SCAN. Sized by `fstat` and
    read with `pread`: a buffered `read(MAX_BYTES_PER_SCAN)` allocates (and maps) 8 MiB for
    each line a run prints, a third of the cost of reading it (this runs for every line)."""
    fd = os.open(log_file, os.O_RDONLY)
    try:
        want = min(MAX_BYTES_PER_SCAN, os.fstat(fd).st_size - offset)
        return os.pread(fd, want, offset) if want > 0 else b""
    finally:
        os.close(fd)


def tail_stream(
    log_file: Path, tail_bytes: int, user: KindSet | None = None
) -> tuple[int, StreamDiagnoser]:
    """Where to start reading the last `tail_bytes` of a log (on a line boundary), and a
    diagnoser that numbers lines from there as the whole file would (`user`: user kinds)."""
    size = log_file.stat().st_size
    start = max(0, size - tail_bytes)
    if start:
        with open(log_file, "rb") as handle:
            handle.seek(start)
            start += len(handle.readline(MAX_LINE_BYTES))
    lines = count_lines(str(log_file), start)
    return start, StreamDiagnoser(lines_done=lines, user=user or KindSet())


def diagnose_file(
    log_file: Path, tail_bytes: int = DIAGNOSE_TAIL_BYTES, user: KindSet | None = None
) -> list[Finding]:
    """The findings in the last `tail_bytes` of a trial's log (where a crash tells its story),
    with true line numbers; bounded so that a huge log never stalls the daemon."""
    try:
        start, stream = tail_stream(log_file, tail_bytes, user)
        for chunk in read_chunks(str(log_file), start):
            stream.feed(chunk)
        return stream.close()
    except OSError:
        return []
