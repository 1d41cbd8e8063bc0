"""results.md's timeline from a run's journal: each event once, repeated kinds folded; pure.

Why: the journal says everything as it happens, and some of it comes again and again (a
validation read, a wait's reason, a finding seen once more): a run that hit its 5-minute limit
had 125 timeline lines of `validation: N record(s)`, the events that mattered (claimed, started,
stopping, ended) lost among them, and a days-long run's timeline became a counter log (walk93
F3). So a kind of line (its text with the numbers in it aside) seen more than `FOLD_AFTER` times
shows its first line and its last, the last saying how many like it came between. Only the lines
that come again and again are folded (validation reads, waits, findings seen once more): a line
that says what happened to the run (a trial's start, end or failure, a fix, a relaunch, a stop,
a signal, attention, its end) is shown each time, though two differ only in their numbers
(`trial 2 ended: exit code 137`, `trial 3 ... exit code 1` are two events, not one kind said
twice: walk93 review). And the whole is bounded (`MAX_LINES`: the first and the last halves, and
how many are left out between). Every line stays in the journal, which the timeline says.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from ajetd.core.timefmt import iso

FOLD_AFTER = 3  # a kind of line seen this often shows each time; more: its first and last
MAX_LINES = 200  # the timeline's event lines at most: the first and last halves of them
_NUMBERS = re.compile(r"\d+(?:\.\d+)?")
_KIND_CHARS = 200  # a line's kind is read from its first characters (a long line's tail varies)


# what happened to the run: never folded (each is an event of its own, whatever its numbers)
_EVENTS = re.compile(
    r"^(?:trial \d+\b|run ended: |rejected: |stopping\b|stopped\b|sent SIG|SIG\w{1,8} not sent"
    r"|attention\b|blueprint .{0,200}? claimed|placed on GPU|stage \S{1,80} next"
    r"|hook \S{1,80} started|finish\.flag)|\b(?:relaunch\w{0,4}|fix(?:es|ed)?|applied)\b",
    re.IGNORECASE,
)


def foldable(text: str) -> bool:
    """Whether a line may be folded with others of its kind: not one that says what happened
    to the run (`_EVENTS`), which the timeline shows each time."""
    return _EVENTS.search(text[:_KIND_CHARS]) is None


def kind_of(text: str) -> str:
    """What makes two lines the same kind: the text with its numbers (counts, steps, times,
    values) aside."""
    return _NUMBERS.sub("#", text[:_KIND_CHARS])


def folded(events: Sequence[tuple[float, str]], journal: str) -> list[str]:
    """The timeline's event lines (`- TIME: text`), in order; `journal`: where every line
    is (the timeline names it where it leaves any out)."""
    counts = Counter(kind_of(text) for _, text in events if foldable(text))
    firsts: dict[str, float] = {}
    seen: Counter[str] = Counter()
    lines: list[str] = []
    for at, text in events:
        if not foldable(text):
            lines.append(f"- {iso(at)}: {text}")
            continue
        kind = kind_of(text)
        seen[kind] += 1
        firsts.setdefault(kind, at)
        total = counts[kind]
        if total <= FOLD_AFTER or seen[kind] == 1:
            lines.append(f"- {iso(at)}: {text}")
        elif seen[kind] == total:
            between = total - 2
            lines.append(
                f"- {iso(at)}: {text} (the last of {total} such lines since "
                f"{iso(firsts[kind])}; the {between} between are in {journal})"
            )
    if len(lines) <= MAX_LINES:
        return lines
    half = MAX_LINES // 2
    left = len(lines) - 2 * half
    return [
        *lines[:half],
        f"- … {left} more line(s), each in {journal}",
        *lines[-half:],
    ]
