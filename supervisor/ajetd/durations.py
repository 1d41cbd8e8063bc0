"""Durations as people write them in blueprints: `90s`, `1h30m`, `1.5 hours`, `2 小时`, `3`.

A bare number means hours (seed 001 speaks of `${MaxTime}` hours). In a sentence, the first
duration counts, so "运行时间不超过 2 小时，每个实验强制在 2 小时后终止" is two hours.
"""

from __future__ import annotations

import re

from ajetd.errors import DurationError

_UNITS: dict[str, float] = {}
for _names, _secs in (
    (("s", "sec", "secs", "second", "seconds", "秒", "秒钟"), 1.0),
    (("m", "min", "mins", "minute", "minutes", "分", "分钟"), 60.0),
    (("h", "hr", "hrs", "hour", "hours", "小时", "个小时", "时", "鐘頭", "钟头", "個小時"), 3600.0),
    (("d", "day", "days", "天", "日"), 86400.0),
):
    for _name in _names:
        _UNITS[_name] = _secs

_UNIT_ALT = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
_NUMBER = r"\d+(?:\.\d+)?|\.\d+"
# A unit word must not run on into more letters ("2 months" is not "2 m").
_PART = re.compile(rf"({_NUMBER})\s*({_UNIT_ALT})(?![A-Za-z])", re.IGNORECASE)
_CLOCK = re.compile(r"(?<![\d.])(\d{1,3}):([0-5]\d)(?::([0-5]\d))?(?![\d:])")
_BARE = re.compile(rf"^\s*({_NUMBER})\s*$")


def parse_duration(text: str) -> float:
    """Return the first duration in `text`, in seconds; raise DurationError if there is none.

    Consecutive parts add up (`1h30m`, `1 hour 30 minutes`); `HH:MM[:SS]` is read as a clock
    duration; a text that is only a number is that many hours.
    """
    bare = _BARE.match(text)
    if bare:
        return _positive(float(bare.group(1)) * 3600.0, text)
    first = _PART.search(text)
    clock = _CLOCK.search(text)
    if clock and (first is None or clock.start() < first.start()):
        h, m, s = int(clock.group(1)), int(clock.group(2)), int(clock.group(3) or 0)
        return _positive(float(h * 3600 + m * 60 + s), text)
    if first is None:
        raise DurationError(
            f"no duration found in {text.strip()!r} (write e.g. 90s, 30m, 2h, 1h30m)"
        )
    total = 0.0
    pos = first.start()
    while True:
        part = _PART.match(text, pos)
        if part is None:
            break
        total += float(part.group(1)) * _UNITS[part.group(2).lower()]
        pos = part.end()
        while pos < len(text) and text[pos] in " \t,和又":
            pos += 1
        if text[pos : pos + 3].lower() == "and":
            pos += 3
            while pos < len(text) and text[pos] == " ":
                pos += 1
    return _positive(total, text)


def _positive(seconds: float, text: str) -> float:
    if seconds <= 0:
        raise DurationError(f"duration must be positive, got {text.strip()!r}")
    return seconds


def format_duration(seconds: float) -> str:
    """`5400` -> `1h30m`; `42.5` -> `42s`: short, for tables and reports."""
    total = round(max(seconds, 0.0))
    h, rem = divmod(total, 3600)
    m, s = divmod(rem, 60)
    if h:
        return f"{h}h{m:02d}m" if m else f"{h}h"
    if m:
        return f"{m}m{s:02d}s" if s else f"{m}m"
    return f"{s}s"
