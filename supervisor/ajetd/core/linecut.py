"""A line cut to a bound (a reason, a problem, a table's cell), as a reader can still read it.
Pure.

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


def _at_word(line: str, end: int) -> str:
    """`line`'s first `end` characters, back to the word boundary before a word the bound
    cuts (within WORD_BACK characters; else cut there), without trailing spaces or
    separators."""
    kept = line[:end]
    if end < len(line) and line[end] not in _SPACE:
        back = max(0, end - WORD_BACK)
        at = max(kept.rfind(" ", back), kept.rfind("\t", back))
        if at > 0:
            kept = kept[:at]
    return kept.rstrip(_TRAILING) or kept


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
