"""A line cut to a bound (a reason, a problem, a table's cell, a finding's evidence), as a
reader can still read it. Pure.

Cut at a word boundary where one lies near the bound (not `capaci…`), with `…` where it was
cut, and what the kept part opened closed after it: a bracket, a code span (walk92 F9: a crash
row's why ended `...(cuda_oom: ... reserved by PyTorch bu…`, its `(` never closed; in
campaign.md an unclosed backtick runs the code span into the next cells). The work is bounded
by the limit, never by the text's length.
"""

from __future__ import annotations

ELLIPSIS = "…"
WORD_BACK = 40  # how far before the bound a word boundary is looked for
_OPENS = {"(": ")", "[": "]", "{": "}"}
_CLOSES = {")": "(", "]": "[", "}": "{"}
_SPACE = (" ", "\t")
_TRAILING = " \t,;:"  # left off before the ellipsis: `cuda_oom…`, not `cuda_oom:…`


def unclosed(text: str) -> str:
    """What closes what `text` opened and left open, innermost first: `)`, `]`, `}`, and a
    backtick for an open code span (within one, brackets are text). A closer that closes
    nothing open is text too."""
    stack: list[str] = []
    for char in text:
        if stack and stack[-1] == "`":
            if char == "`":
                stack.pop()
            continue
        if char == "`" or char in _OPENS:
            stack.append(char)
        elif char in _CLOSES and stack and stack[-1] == _CLOSES[char]:
            stack.pop()
    return "".join(_OPENS.get(opened, "`") for opened in reversed(stack))


_MIRROR = str.maketrans("()[]{}", ")(][}{")


def unopened(text: str) -> str:
    """What opens what `text` closes without having opened it, outermost first: the mirror of
    `unclosed`, for a line's end kept without its start (`]` and `)` in `a) b]` are opened by
    `[(`)."""
    return unclosed(text[::-1].translate(_MIRROR)).translate(_MIRROR)[::-1]


def _at_word(line: str, end: int) -> str:
    """`line`'s first `end` characters, back to the word boundary before a word the bound
    cuts (within WORD_BACK characters; else cut there), without trailing spaces or
    separators."""
    kept, at = line[:end], -1
    if end < len(line) and line[end] not in _SPACE:
        back = max(0, end - WORD_BACK)
        at = max(kept.rfind(" ", back), kept.rfind("\t", back))
        if at >= 0:
            kept = kept[:at]
    # where only spaces and separators stand before the word cut: nothing (`…` alone, not
    # ` …`, hypothesis); a run without a word boundary is kept as it is (`,,,…`)
    return kept.rstrip(_TRAILING) or ("" if at >= 0 or not kept.strip(" \t") else kept)


def cut(line: str, limit: int) -> str:
    """`line` (one line) in at most `limit` characters: as it is where it fits; else its start
    to a word boundary, `…`, and the closers of what that start left open (`unclosed`)."""
    if len(line) <= limit:
        return line
    end = limit - len(ELLIPSIS)
    while end > 0:
        kept = _at_word(line, end)
        closers = unclosed(kept)
        over = len(kept) + len(ELLIPSIS) + len(closers) - limit
        if over <= 0:
            return kept + ELLIPSIS + closers
        # each character left off takes one or two (its closer) off the length: half of what
        # is over is the least that can do, so no shorter start is skipped
        end = min(end - 1, len(kept) - (over + 1) // 2)
    return ELLIPSIS[: max(limit, 0)]


def cut_middle(line: str, limit: int, tail: int) -> str:
    """`line` (one line) in at most `limit` characters, its start and its end kept: as it is
    where it fits; else its start cut as `cut` cuts it (`…` and its closers), a space, and at
    most `tail` of its last characters from a word's start, led by what opens what they close
    (`unopened`). A program that printed a progress bar or a long message without a newline
    put the error it died of at the line's end (a finding's evidence). `tail` is less than
    `limit`; the work is bounded by `limit`."""
    if len(line) <= limit:
        return line
    start = _word_start(line, len(line) - tail)
    while True:  # each character left off takes one, or an opener too, off its length
        kept = line[start:]
        end = unopened(kept) + kept
        if len(end) <= tail or start >= len(line):
            break
        start = _word_start(line, start + max(1, (len(end) - tail) // 2))
    head = cut(line[:start].rstrip(" \t"), limit - len(end) - 1)
    return f"{head} {end}" if end else head


def cut_around(line: str, at: int, limit: int, head: int = 0) -> str:
    """`line` (one line) in at most `limit` characters, what stands at `at` kept near its
    start: where the kept part would begin within `head` characters of the line's start, as
    `cut` cuts it; else its first `head` characters or fewer as `cut` cuts them (`…` alone
    where `head` is 0), a space, what opens what the rest closes (`unopened`), and the line
    from a word's start at most WORD_BACK characters before `at` (a message's `RuntimeError: `
    before the words a pattern matched), cut at its end as `cut` cuts it. For a line whose
    start and end (`cut_middle`) put what matched far from where a reader begins, or leave it
    out: a message printed after a long bar without a newline, or amid a long line (walk97
    F8: a reason quoted `cuda_oom: yyyy… yyyy…`, never the error). The work is bounded by
    `limit`."""
    start = min(_word_start(line, max(0, at - WORD_BACK)), max(at, 0))
    if start <= head:
        return cut(line, limit)
    lead = (cut(line[:start].rstrip(" \t"), head) if head else "") or ELLIPSIS
    room = limit - len(lead) - 1
    while room > 0:
        kept = cut(line[start : start + room + 1], room)
        said = f"{lead} {unopened(kept)}{kept}"
        if len(said) <= limit:
            return said
        room -= len(said) - limit
    return cut(line, limit)


def _word_start(line: str, start: int) -> int:
    """Where a line's end kept from `start` begins: at `start` where a word begins there, else
    at the next word's start (within WORD_BACK characters; else at `start`), past spaces and
    separators."""
    if 0 < start < len(line) and line[start - 1] not in _SPACE:
        ahead = line[start : start + WORD_BACK]
        at = min((i for i in (ahead.find(" "), ahead.find("\t")) if i >= 0), default=-1)
        if at >= 0:
            start += at
    while start < len(line) and line[start] in _TRAILING:
        start += 1
    return start
