"""Durations as people write them in blueprints: `90s`, `1h30m`, `1.5 hours`, `2 小时`, `3`.

A bare number means hours (seed 001 speaks of `${MaxTime}` hours) unless the caller says
otherwise (Slurm's `--time` counts minutes). In a sentence, the first duration counts, so
"运行时间不超过 2 小时，每个实验强制在 2 小时后终止" is two hours; an option's value must be a
duration and nothing else (`whole=True`).

A duration's parts go from the largest unit down, each unit once; two durations side by side
(`2h, 3h`, `1h 2h`) are refused, not added up, and so are two that nothing but separators
parts (`2h;3h`, `2h | 3h`, `2h (3h)`): in a sentence, words stand between durations.
Refused, with the reason, rather than misread:
a decimal comma (`1,5 h`: a thousands separator elsewhere) and a fraction (`1 1/2 hours`), whose
last digits would be read alone; negative values (`-5 min`, `-1:00:00`), exponent
notation (`1e3s` is not 3 s), infinity and NaN, numbers of more than 15 digits, zero and less
than a second (which shows and acts as zero; unless the caller allows zero) and more than a
year. The text is scanned once, left to right, with
patterns that cannot backtrack over a run of digits: time is linear in its length.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import NamedTuple

from ajetd.core.errors import DurationError

MAX_DURATION_S = 365 * 86400.0  # more than a year is a typo, not a training run
MAX_DIGITS = 15  # a float holds 15 significant digits; longer is no duration anyone meant
_UNITS: dict[str, float] = {}
for _names, _secs in (
    (("s", "sec", "secs", "second", "seconds", "秒", "秒钟", "秒鐘"), 1.0),
    (("m", "min", "mins", "minute", "minutes", "分", "分钟", "分鐘"), 60.0),
    (("h", "hr", "hrs", "hour", "hours", "时", "小时", "个小时", "小時", "個小時"), 3600.0),
    (("钟头", "鐘頭"), 3600.0),
    (("d", "day", "days", "天", "日"), 86400.0),
):
    for _name in _names:
        _UNITS[_name] = _secs

_UNIT_ALT = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
# A number is a maximal run: `\d+` is never followed by something `\d` could also take, so a
# failed match costs one pass over the run, not one per digit.
_NUMBER = re.compile(r"\d+(?:\.\d+)?|\.\d+")
# A unit word must not run on into more letters ("2 months" is not "2 m").
_UNIT = re.compile(rf"[ \t]{{0,8}}({_UNIT_ALT})(?![A-Za-z])", re.IGNORECASE)
_CLOCK = re.compile(r"(\d{1,3}):([0-5]\d)(?::([0-5]\d))?(?![\d:])")
# Slurm's `--time` with days, `D-HH:MM` or `D-HH:MM:SS` (`1-00:00:00`), as people copy it from
# a job script: the colon after the hours tells it from a range (`2-3 hours`)
_SLURM_DAYS = re.compile(r"(\d{1,3})-(\d{1,2}):([0-5]\d)(?::([0-5]\d))?(?![\d:])")
_BARE = re.compile(r"([-+−]?)(\d+(?:\.\d+)?|\.\d+)")
_BARE_COMMA = re.compile(r"\d{1,15}[,，]\d{1,15}")
_EXPONENT = re.compile(r"(?<![\d.])[\d.]+[eE][-+]?\d")
_NOT_FINITE = re.compile(r"(?<![A-Za-z])(?:inf(?:inity)?|nan|∞)(?![A-Za-z])", re.IGNORECASE)
_MINUS = "-−"  # ASCII hyphen-minus and U+2212
_JOINERS = " \t,，、和又"
EXAMPLES = "90s, 30m, 2h, 1h30m, 1.5 hours, 2 小时, 01:30:00"


# Chinese numerals before a Chinese unit (`两小时`, `半小时`, `一个半小时`, `三十分钟`, `十五分`)
# are read as digits, before every unit that digits are read before (walk 90: `十五分` was
# refused while `15分` was read). Only before a unit word, and never in an idiom that is no
# duration: `十分` alone means "very", `一时` "for a moment"; `半` only before a whole word
# (`半分` is "the slightest").
_CN_DIGITS = dict(
    zip("零〇一二两兩三四五六七八九", (0, 0, 1, 2, 2, 2, 3, 4, 5, 6, 7, 8, 9), strict=True)
)
_CN_UNIT = "(?:个|個)?(?:小时|小時|钟头|鐘頭|分钟|分鐘|秒钟|秒鐘|秒|天|分|时|日)"
_CN_BARE = {"分", "时", "日"}
_CN_IDIOMS = {("十", "分"), ("一", "时")}
_CN_NUMBER = re.compile(
    rf"(?:([零〇一二两兩三四五六七八九十百]{{1,8}})(?:个|個)?(半)?|(半))(?=({_CN_UNIT}))"
)


def _cn_value(numeral: str) -> int:
    """`十五` -> 15, `二十` -> 20, `一百二十` -> 120, `一百零五` -> 105, `两` -> 2."""
    total = current = 0
    for char in numeral:
        if char in _CN_DIGITS:
            current = _CN_DIGITS[char]
        else:  # 十 or 百
            total += (current or 1) * (10 if char == "十" else 100)
            current = 0
    return total + current


class _Read(str):
    """A duration's text as the parser reads it (Chinese numerals as digits, a Markdown code
    span's backticks as spaces) that remembers the text as written: a refusal quotes what the
    user wrote, `两小时；三小时` and its parts `两小时`, never the digits it was read as."""

    source: str
    starts: tuple[int, ...]  # where each read character, and the end, is in `source`

    def __new__(cls, read: str, source: str, starts: tuple[int, ...]) -> _Read:
        made = super().__new__(cls, read)
        made.source, made.starts = source, starts
        return made


def _rewritten(text: str, markdown: bool = False) -> str:
    """`text` with Chinese numerals before a Chinese unit written in digits (and, `markdown`,
    backticks as spaces); a `_Read` that knows the text as written where anything changed."""
    spaced = text.replace("`", " ") if markdown else text

    def digits(match: re.Match[str]) -> str:
        numeral, half = match.group(1) or "", bool(match.group(2) or match.group(3))
        unit = match.group(4).lstrip("个個")
        if unit in _CN_BARE and (half or (numeral, unit) in _CN_IDIOMS):
            return match.group()
        return f"{(_cn_value(numeral) if numeral else 0) + (0.5 if half else 0):g}"

    pieces: list[str] = []
    starts: list[int] = []
    done = 0
    for match in _CN_NUMBER.finditer(spaced):
        pieces.append(spaced[done : match.start()])
        starts += range(done, match.start())
        put = digits(match)
        pieces.append(put)
        starts += [match.start()] * len(put) if put != match.group() else range(*match.span())
        done = match.end()
    pieces.append(spaced[done:])
    starts += range(done, len(spaced) + 1)
    read = "".join(pieces)
    return text if read == text else _Read(read, text, tuple(starts))


def _written(text: str, start: int, end: int) -> str:
    """text[start:end] as the user wrote it (`text` may be a `_Read`)."""
    if isinstance(text, _Read):
        return text.source[text.starts[start] : text.starts[end]]
    return text[start:end]


def _short(text: str) -> str:
    """`text` as written, quoted, cut to 40 characters where longer than 60."""
    text = (text.source if isinstance(text, _Read) else text).strip()
    return repr(text) if len(text) <= 60 else repr(text[:40] + "…") + f" ({len(text)} characters)"


def parse_duration(
    text: str,
    *,
    bare_unit_s: float = 3600.0,
    zero_ok: bool = False,
    whole: bool = False,
    markdown: bool = False,
) -> float:
    """Return the first duration in `text`, in seconds; raise DurationError saying why not.

    Consecutive parts add up (`1h30m`, `1 hour 30 minutes`); `HH:MM[:SS]` is a clock duration;
    a text that is only a number counts `bare_unit_s` seconds per unit (hours by default).
    `whole`: the text must be the duration and nothing else; `markdown`: a blueprint's text,
    whose code spans' backticks are spaces (`` `2h` ``). A refusal quotes the text, and each
    part of it, as written, also where Chinese numerals were read as digits (`两小时；三小时`).
    """
    return _parse(_rewritten(text, markdown), bare_unit_s, zero_ok, whole)


def admitted_duration(text: str, *, markdown: bool = False) -> float | None:
    """The duration of an `exp_max_time` that an earlier version admitted, read without the
    refusals added since: a live run's or a running campaign's copy is never refused after an
    upgrade (its options would fall back to the defaults, its campaign stop). Two durations
    side by side (`2h; 3h if slow`, `1 小时（60 分钟）`) and a point after a unit (`1m.5s`):
    the first, as versions before the refusal read it. A decimal comma, a fraction and a range
    are read as the writer meant them, the longer reading where one cannot tell (docs/design.md,
    "An admitted copy's exp_max_time"): `1,5h` is 1.5 h and `1,500 s` 1500 s (three digits
    after the comma: a thousands separator); `1/2 h`, `1 1/2 hours`, `½h`, `1½ h` their value;
    `2-3h`, `2h-3h`, `2~3 小时`, `2 to 3 hours` their upper end, the longest the run may take
    (what a new blueprint's refusal asks to write). None where not even that reads one."""
    try:
        return _parse(_plain_numbers(_rewritten(text, markdown)), 3600.0, False, False, True)
    except DurationError:
        return None


# What only an admitted copy's reading takes (a new blueprint's is refused, `_check_context`),
# before a unit word: a decimal comma, a fraction, a vulgar fraction (`½`)
_BEFORE_UNIT = rf"(?=[ \t]{{0,8}}(?:{_UNIT_ALT})(?![A-Za-z]))"
_COMMA_NUMBER = re.compile(rf"(?<![\d.,，])(\d{{1,15}})[,，](\d{{1,15}}){_BEFORE_UNIT}", re.I)
_FRACTION = re.compile(
    rf"(?<![\d.])(?:(\d{{1,6}})[ \t]{{1,8}})?(\d{{1,6}})[ \t]{{0,8}}[/⁄][ \t]{{0,8}}(\d{{1,6}})"
    rf"{_BEFORE_UNIT}",
    re.IGNORECASE,
)
_VULGAR = "½⅓⅔¼¾⅕⅖⅗⅘⅙⅚⅛⅜⅝⅞"
_VULGAR_NUMBER = re.compile(rf"(?<![\d.])(?:(\d{{1,6}})[ \t]?)?([{_VULGAR}]){_BEFORE_UNIT}", re.I)


def _fraction_counts(text: str, total: float, bare_unit_s: float) -> bool:
    """Whether a vulgar fraction before a unit (`½h`) is part of the duration, as a writer
    means it: the reading that takes fractions (an admitted copy's) gives other seconds than
    `total`, the one that passes over them (`½h1h`: the 1h after it; `1h½m`: the 1h before
    it). A new blueprint's is then refused, as `½h` alone is; a fraction in a remark apart
    (`2h (½h smoke)`) changes nothing and is let be."""
    if not any(c in _VULGAR for c in text):
        return False
    try:
        return _parse(_plain_numbers(text), bare_unit_s, True, False, True) != total
    except DurationError:
        return True


def _plain_numbers(text: str) -> str:
    """`text` with a decimal comma, a fraction and a vulgar fraction before a unit written as
    a decimal (`1,5h` -> `1.5h`, `1 1/2 hours` -> `1.5 hours`, `½h` -> `0.5h`; `1,500 s`, three
    digits after the comma, -> `1500 s`): for `admitted_duration` only."""

    def comma(match: re.Match[str]) -> str:
        whole, part = match.group(1), match.group(2)
        return whole + part if len(part) == 3 else f"{whole}.{part}"

    def fraction(match: re.Match[str]) -> str:
        whole, over, under = (int(match.group(n) or 0) for n in (1, 2, 3))
        return f"{whole + over / under:.10g}" if under else match.group()

    def vulgar(match: re.Match[str]) -> str:
        return f"{int(match.group(1) or 0) + unicodedata.numeric(match.group(2)):.10g}"

    text = _COMMA_NUMBER.sub(comma, text)
    return _VULGAR_NUMBER.sub(vulgar, _FRACTION.sub(fraction, text))


def _parse(
    text: str, bare_unit_s: float, zero_ok: bool, whole: bool, lenient: bool = False
) -> float:
    """`parse_duration` of `text` whose Chinese numerals are digits already (`lenient`: as
    `admitted_duration` reads it, its numbers made plain by `_plain_numbers`)."""
    stripped = text.strip()
    if len(stripped) > 40 and stripped.isdigit():
        raise DurationError(f"a number of {len(stripped)} digits is not a duration")
    bare = _BARE.fullmatch(stripped) if len(stripped) <= 40 else None
    if bare is None and len(stripped) <= 40 and _BARE_COMMA.fullmatch(stripped):
        raise DurationError(_COMMA.format(_short(text)))
    if bare:
        if bare.group(1):
            raise DurationError(f"a duration cannot be negative, got {_short(text)}")
        return _checked(_number(bare.group(2), text) * bare_unit_s, text, zero_ok)
    ends = _range(text)
    if ends is not None and lenient:
        return _checked(_upper(text, *ends), text, zero_ok)
    if ends is not None:
        raise DurationError(
            f"{_short(text)} is a range: write one duration, the longest the run may take "
            "(e.g. 3h for 2-3 hours)"
        )
    total, end = _scan(text, lenient)
    if total is None and not lenient and any(c in _VULGAR for c in text):
        raise DurationError(_FRACTION_SAID.format(_short(text)))
    if total is not None and not lenient and _fraction_counts(text, total, bare_unit_s):
        raise DurationError(_FRACTION_SAID.format(_short(text)))
    if total is None:
        if _EXPONENT.search(text) or _NOT_FINITE.search(text):
            raise DurationError(
                f"{_short(text)}: write a duration in plain digits, without exponent, inf or NaN "
                f"(e.g. {EXAMPLES})"
            )
        raise DurationError(f"no duration found in {_short(text)} (write e.g. {EXAMPLES})")
    if whole and text[end:].strip(_JOINERS + "\r\n"):
        raise DurationError(f"{_short(text)} is not only a duration (write e.g. {EXAMPLES})")
    if whole and text[: _first_start(text)].strip():
        raise DurationError(f"{_short(text)} is not only a duration (write e.g. {EXAMPLES})")
    return _checked(total, text, zero_ok)


# Between the two ends of a range: `2-3 hours`, `2–3h`, `2~3 小时`, `2 到 3 小时`, `2 to 3h`,
# `2h or 3h`, `2h/3h`; spaces around it (a few)
_JOIN = r"[ \t]{0,8}(?:-|–|—|~|～|〜|至|到|或|/|(?:to|or)(?![A-Za-z]))[ \t]{0,8}"
_RANGE_AFTER = re.compile(rf"{_JOIN}[\d一二两兩三四五六七八九十]")
_RANGE_BEFORE = re.compile(
    rf"[\d一二两兩三四五六七八九十](?:[ \t]{{0,8}}((?:{_UNIT_ALT})(?![A-Za-z])))?{_JOIN}$",
    re.IGNORECASE,
)


def _range(text: str) -> tuple[int, int, int, float] | None:
    """A range (`2-3 hours`, `2h-3h`), or None: where its first end starts and ends, where its
    second end starts, and the seconds of a unit of the end that names one (for the end that does
    not: `2-3h`, `2h-3`). Read as its first duration, the upper or the lower end was taken
    silently (walk 86), while a time limit is one duration, the longest the run may take: a
    new blueprint's is refused, an admitted copy's read as its upper end (`_upper`). Only
    around the duration that would be read (a date or an issue number later in a sentence is
    no range of it): a number and a range's joiner just before it, or a joiner and a number
    just after its first part; bounded windows: linear."""
    try:
        start = _first_start(text)
    except DurationError:  # a sign before it: said by the scan
        return None
    if start >= len(text):
        return None
    number = _NUMBER.match(text, start)
    assert number is not None  # _first_start stops at a number
    if _SLURM_DAYS.match(text, start):
        return None
    clock = _CLOCK.match(text, start)
    unit = _UNIT.match(text, number.end())
    per = _UNITS[unit.group(1).lower()] if unit and not clock else 3600.0
    after = clock.end() if clock else unit.end() if unit else number.end()
    window = max(0, start - 40)
    if before := _RANGE_BEFORE.search(text[window:start]):
        low = window + before.start()
        low_end = window + before.end(1) if before.group(1) else low + 1
        while low > window and (text[low - 1].isdigit() or text[low - 1] == "."):
            low -= 1
        return low, low_end, start, per
    if joined := _RANGE_AFTER.match(text, after):
        return start, after, joined.end() - 1, per
    return None


def _upper(text: str, low: int, low_end: int, high: int, per: float) -> float:
    """An admitted copy's range, `_range`'s: its longer end (each end read leniently, with the
    unit of the other where it names none; an end that does not read: the other)."""
    seconds = []
    for part in (text[low:low_end], text[high:]):
        try:
            seconds.append(_parse(part, per, False, False, True))
        except DurationError:
            continue
    if not seconds:
        raise DurationError(f"no duration found in {_short(text)}")
    return max(seconds)


def _first_start(text: str) -> int:
    for number in _NUMBER.finditer(text):
        if _part_at(text, number) is not None:
            return number.start()
    return len(text)


class _Part(NamedTuple):
    """One part of a duration: `2h`, `30 分钟`, `01:30:00`, `1-00:00`."""

    seconds: float
    end: int
    top: float  # its largest unit's seconds (a clock's hours)
    bottom: float  # its smallest unit's seconds
    unit: bool  # a number and a unit word (not a clock): a bare number may follow it


def _part_at(text: str, number: re.Match[str]) -> _Part | None:
    """The duration part starting at this number, or None if none does."""
    start = number.start()
    clock = None
    if "." not in number.group() and not (start and text[start - 1] == "."):
        days = _SLURM_DAYS.match(text, start)
        if days:
            _check_context(text, start)
            d, h, m, sec = (int(days.group(n) or 0) for n in (1, 2, 3, 4))
            low = 1.0 if days.group(4) else 60.0
            return _Part(float(d * 86400 + h * 3600 + m * 60 + sec), days.end(), 86400, low, False)
        clock = _CLOCK.match(text, start)
    if clock:
        _check_context(text, start)
        h, m, s = int(clock.group(1)), int(clock.group(2)), int(clock.group(3) or 0)
        low = 1.0 if clock.group(3) else 60.0
        return _Part(float(h * 3600 + m * 60 + s), clock.end(), 3600.0, low, False)
    unit = _UNIT.match(text, number.end())
    if unit is None or (
        unit.group(1) == "日" and _DATE_BEFORE.search(text, max(0, start - 9), start)
    ):
        return None
    _check_context(text, start)
    per = _UNITS[unit.group(1).lower()]
    return _Part(_number(number.group(), text) * per, unit.end(), per, per, True)


# `12月3日` is a date, not three days
_DATE_BEFORE = re.compile(r"月[ \t]{0,8}$")


# `2h30`, `1m30`, `1 hour 30`: a number without a unit right after a part counts the next
# smaller unit, where it ends the duration (nothing but punctuation or the end after it)
_TRAILING = re.compile(r"[ \t]?(\d{1,3})(?![\d.:])")
_SMALLER = {86400.0: 3600.0, 3600.0: 60.0, 60.0: 1.0}
_NAMES = {86400.0: "days", 3600.0: "hours", 60.0: "minutes", 1.0: "seconds"}


def _trailing(text: str, pos: int, per: float | None) -> tuple[float, int] | None:
    """The unit-less number ending a duration at `pos` (seconds, end), or None: not one, or a
    count of something else (`2h 30 epochs`, `2 小时 30 个实验`)."""
    if per is None or (smaller := _SMALLER.get(per)) is None:
        return None
    found = _TRAILING.match(text, pos)
    if found is None:
        return None
    after = found.end()
    while after < len(text) and text[after] in " \t":
        after += 1
    if after < len(text) and (text[after].isalnum() or text[after] in "_%"):
        return None
    value = int(found.group(1))
    if value * smaller >= per:
        whole, written = _NAMES[per][:-1], _written(text, *found.span(1))
        raise DurationError(
            f"{_short(text)}: the {written} after the {whole}s would be {_NAMES[smaller]}, but "
            f"{value} {_NAMES[smaller]} is a whole {whole} or more (write the units, e.g. 2h30m)"
        )
    return value * smaller, found.end()


def _scan(text: str, lenient: bool = False) -> tuple[float | None, int]:
    """Seconds of the first duration, and where it ends (None: no part).

    A duration's parts go from the largest unit down, each unit once (`1h30m`, `1 天 2 小时`,
    `1 小时零 5 分`); a part whose unit is not smaller than the one before starts another
    duration (`2h, 3h`, `1h 2h`, `30m 1h`), and two durations side by side are refused: summed
    they were read as 5 h (walk 90), and which one was meant no reader can tell."""
    for number in _NUMBER.finditer(text):
        first = _part_at(text, number)
        if first is None:
            continue
        total, last, start = first.seconds, first, number.start()
        while True:
            pos = _joined(text, last.end)
            following = _NUMBER.match(text, pos)
            # a part goes on a duration only from a digit: `1m.5s` is no 60.5 s (a point
            # after a unit begins no decimal there), it is refused beside the first below
            on = following is not None and (lenient or not following.group().startswith("."))
            part = _part_at(text, following) if on and following else None
            if part is None:
                rest = _trailing(text, last.end, last.bottom if last.unit else None)
                end = last.end if rest is None else rest[1]
                if not lenient:
                    _refuse_beside(text, start, end)
                return total + (0.0 if rest is None else rest[0]), end
            if part.top >= last.bottom:
                if lenient:  # the first alone, as versions before the refusal read it
                    return total, last.end
                _side_by_side(text, start, last.end, pos, part.end)
            total += part.seconds
            last = part
    return None, 0


def _refuse_beside(text: str, start: int, end: int) -> None:
    """Refuse a duration that only separators part from the one ending at `end`: spaces, line
    breaks, punctuation, symbols (`2h;3h`, `2h | 3h`, `2h\n3h`, `2h (3h)`, `1h;30m`) were read
    as the first alone while `2h, 3h` was refused; between two durations of a sentence there
    are words (`2h; then 3h`, `2 小时，每个实验强制在 3 小时后`). One pass past the separators
    and one part read there: linear."""
    pos = end
    while pos < len(text) and not text[pos].isalnum():
        pos += 1
    following = _NUMBER.match(text, pos)
    part = _part_at(text, following) if following else None
    if part is not None:  # named with its point where one leads it (`1m.5s`: `.5s`)
        shown = pos - 1 if pos > end and text[pos - 1] == "." else pos
        _side_by_side(text, start, end, shown, part.end)


def _side_by_side(text: str, start: int, end: int, second: int, second_end: int) -> None:
    """Raise: `text` holds the duration text[start:end] and another, text[second:second_end]."""
    raise DurationError(
        f"{_short(text)} holds two durations side by side, "
        f"{_written(text, start, end).strip()!r} and "
        f"{_written(text, second, second_end).strip()!r}: write one (a duration's units go "
        "from the largest down, each once: 1h30m, 1 小时 30 分)"
    )


def _joined(text: str, pos: int) -> int:
    """Where the next part would start after a part ending at `pos`: past spaces, commas,
    `and`, `和`, `又` and `零` (`1 小时零 5 分`: the zero says no tens of minutes)."""
    while pos < len(text) and text[pos] in _JOINERS:
        pos += 1
    for word in ("and", "零", "〇"):
        if text[pos : pos + len(word)].lower() == word:
            pos += len(word)
            while pos < len(text) and text[pos] in " \t":
                pos += 1
            break
    return pos


def _check_context(text: str, start: int) -> None:
    """Refuse what just before a duration's number changes it: a sign (`-5 min`), an
    exponent (`1e3s`), a decimal comma (`1,5 h`) or a fraction (`1 1/2 hours`), where the
    number read would be another (walk 90: `1,5 h` and `1 1/2 hours` were read as 5 h and 2 h)."""
    before = text[max(0, start - 4) : start]
    tight = before.rstrip(" \t")
    if tight and tight[-1] in _MINUS:
        lead = tight[:-1]
        # after a number, with spaces or not, a range's joiner (`2 - 3h`), said as a range
        if not lead or not (lead[-1].isalnum() or lead.rstrip(" \t")[-1:].isdigit()):
            raise DurationError(f"a duration cannot be negative, got {_short(text)}")
    if re.search(r"[\d.][eE][-+]?$", before):
        raise DurationError(
            f"exponent notation is not a duration ({_short(text)}); write the digits"
        )
    if re.search(r"\d[,，]$", before):
        raise DurationError(_COMMA.format(_short(text)))
    if re.search(r"\d[ \t]*[/⁄][ \t]*$", before):
        raise DurationError(_FRACTION_SAID.format(_short(text)))


_FRACTION_SAID = (
    "{}: a fraction is not read in a duration; write a decimal or smaller units (1.5h, 1h30m)"
)
_COMMA = (
    "{}: a comma between digits is a decimal comma in some languages and a thousands "
    "separator in others; write a decimal point or smaller units (1.5h, 1h30m, 1500s)"
)


def _number(digits: str, text: str) -> float:
    if len(digits.replace(".", "")) > MAX_DIGITS:
        raise DurationError(
            f"a number of {len(digits)} digits is not a duration, in {_short(text)}"
        )
    return float(digits)


def _checked(seconds: float, text: str, zero_ok: bool) -> float:
    if not math.isfinite(seconds):
        raise DurationError(f"{_short(text)} is not a finite duration")
    if seconds == 0 and zero_ok:
        return 0.0
    if seconds <= 0:
        raise DurationError(f"duration must be positive, got {_short(text)}")
    if seconds < 1 and not zero_ok:  # would be shown, and acted on, as `0s` (walk 30)
        raise DurationError(
            f"{_short(text)} is less than a second: ajetd counts whole seconds (write 1s or more)"
        )
    if seconds > MAX_DURATION_S:
        raise DurationError(f"{_short(text)} is more than a year; is that what you meant?")
    return seconds


def format_duration(seconds: float) -> str:
    """`5400` -> `1h30m`; `42.5` -> `42s`: short, for tables and reports (never raises)."""
    if not math.isfinite(seconds):
        return "∞" if seconds > 0 else "-"
    total = round(max(seconds, 0.0))
    h, rem = divmod(total, 3600)
    m, s = divmod(rem, 60)
    if h:
        return f"{h}h{m:02d}m" if m else f"{h}h"
    if m:
        return f"{m}m{s:02d}s" if s else f"{m}m"
    return f"{s}s"
