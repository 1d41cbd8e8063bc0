"""One parser per kind of option value: durations, Slurm times, sizes, counts, numbers, words,
paths and lists. Pure.

Every option of a blueprint (and of a campaign) goes through exactly one of these, once, while
the blueprint is parsed: what reaches a cluster check, a command line or a report is already a
number of seconds, minutes, MiB or items, never the text as written. Each raises `OptionError`
with a message that starts with the option's key and shows the value given, elided (`show`),
so a huge value never makes a huge message, and no value is ever printed in a way that can
raise (a 5,000-digit integer has no `repr` in Python 3.11).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar

from ajetd.core.durations import EXAMPLES, parse_duration
from ajetd.core.errors import AjetdError, DurationError
from ajetd.core.shown import show, written

T = TypeVar("T")
P = ParamSpec("P")
PATH_MAX = 4095  # bytes, as Linux's PATH_MAX less the NUL
NAME_MAX = 255  # bytes of one path component
TEXT_MAX = 64 * 1024  # a hook command, an env value: longer is not a command line
MIB_MAX = 1024**3  # 1 PiB: more memory than any node has


class OptionError(AjetdError):
    """An option value that cannot be used; the message names the key."""


def take(
    problems: list[str], default: T, parse: Callable[P, T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """`parse(*args, **kwargs)`; on an OptionError, its message goes to `problems` and the
    answer is `default`."""
    try:
        return parse(*args, **kwargs)
    except OptionError as exc:
        problems.append(str(exc))
        return default


def duration(key: str, value: Any, *, zero_ok: bool = False) -> float:
    """Seconds. A YAML number or a bare number is hours; text is a duration (`30m`, `1h30m`,
    `2 小时`, `01:30:00`) and nothing else."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise OptionError(f"{key}: expected a duration such as 30m, got {show(value)}")
    text = _numeral(key, value) if not isinstance(value, str) else value
    try:
        return parse_duration(text, zero_ok=zero_ok, whole=True)
    except DurationError as exc:
        raise OptionError(f"{key}: {exc}") from None


_SLURM_FORMS = (
    "minutes (60), MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, UNLIMITED, "
    f"or a duration ({EXAMPLES})"
)
_SLURM_TIME = re.compile(
    r"(?:(?P<days>\d{1,3})-(?P<dh>\d{1,2})(?::(?P<dm>\d{1,2})(?::(?P<ds>\d{1,2}))?)?"
    r"|(?P<a>\d{1,7})(?::(?P<b>\d{1,2})(?::(?P<c>\d{1,2}))?)?)"
)
UNLIMITED = ("UNLIMITED", "INFINITE")


def slurm_minutes(key: str, value: Any) -> int | None:
    """Whole minutes for `--time` (None: UNLIMITED). Slurm's own forms (a bare number is
    minutes, as Slurm reads it) or an ajetd duration; seconds round up to the next minute,
    as Slurm itself rounds."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise OptionError(f"{key}: expected {_SLURM_FORMS}; got {show(value)}")
    text = (_numeral(key, value) if not isinstance(value, str) else value).strip()
    if text.upper() in UNLIMITED:
        return None
    form = _SLURM_TIME.fullmatch(text)
    seconds: float
    if form:
        exact = _slurm_seconds(form)
        if exact is None:
            raise OptionError(f"{key}: {show(text)}: hours go up to 23, minutes and seconds to 59")
        seconds = exact
    else:
        try:
            seconds = parse_duration(text, bare_unit_s=60.0, whole=True)
        except DurationError as exc:
            raise OptionError(f"{key}: {exc}; it takes {_SLURM_FORMS}") from None
    minutes = math.ceil(seconds / 60.0)
    if minutes < 1:
        raise OptionError(f"{key}: must be at least a minute, got {show(text)}")
    if minutes * 60 > 366 * 86400:
        raise OptionError(f"{key}: {show(text)} is more than a year; UNLIMITED says no limit")
    return minutes


def _slurm_seconds(form: re.Match[str]) -> int | None:
    g = form.groupdict()
    if g["days"] is not None:
        days, hours = int(g["days"]), int(g["dh"])
        minutes, seconds = int(g["dm"] or 0), int(g["ds"] or 0)
        if hours > 23 or minutes > 59 or seconds > 59:
            return None
        return ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    first, second, third = int(g["a"]), g["b"], g["c"]
    if second is None:
        return first * 60  # minutes
    if third is None:
        return None if int(second) > 59 else first * 60 + int(second)  # MM:SS
    if int(second) > 59 or int(third) > 59:
        return None
    return first * 3600 + int(second) * 60 + int(third)  # HH:MM:SS


def format_slurm_minutes(minutes: int | None) -> str:
    """What `--time=` takes."""
    return "UNLIMITED" if minutes is None else str(minutes)


_SIZE = re.compile(r"(\d{1,12}(?:\.\d{1,6})?)\s?([KMGTP]?)(?:i?B)?", re.IGNORECASE)
_SIZE_UNITS = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}


def size_mib(key: str, value: Any) -> int:
    """MiB, rounded up. `64G`, `500M`, `1.5T`, `64 GB`, `64GiB`; a bare number is megabytes
    (Slurm's default unit; Slurm's M and G are 1024-based); 0 is Slurm's "all of the node's
    memory"."""
    expected = f"{key}: expected a size such as 64G or 500M (K, M, G, T), got {show(value)}"
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise OptionError(expected)
    text = str(value).strip() if isinstance(value, str) else _numeral(key, value)
    found = _SIZE.fullmatch(text)
    if not found:
        raise OptionError(expected)
    mib = math.ceil(float(found.group(1)) * _SIZE_UNITS[found.group(2).upper()])
    if mib > MIB_MAX:
        raise OptionError(f"{key}: {show(text)} is more memory than any node has")
    return mib


def format_mib(mib: int) -> str:
    """`65536` -> `64G`, `500` -> `500M`: the largest Slurm unit that holds it exactly."""
    for unit, size in (("T", 1024**2), ("G", 1024)):
        if mib and mib % size == 0:
            return f"{mib // size}{unit}"
    return f"{mib}M"


_DECIMAL_INT = re.compile(r"[-+]?(?:0|[1-9]\d*)")


def count(key: str, value: Any, low: int, high: int) -> int:
    """A whole number in [low, high] (a YAML integer in decimal digits, or its digits as
    text). YAML's other integers are refused, quoted as written: `010` is 8 to YAML, `1:30`
    90, `0x10` 16, and `max_trials: 010` meant ten."""
    expected = f"{key}: expected a whole number from {low} to {high}, got {show(value)}"
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip()) if len(value.strip()) <= 18 else value
    text = written(value)
    if isinstance(value, int) and text is not None and not _DECIMAL_INT.fullmatch(text):
        raise OptionError(f"{expected} ({_read_as(value)})")
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise OptionError(expected)
    return int(value)


def _read_as(value: int | float) -> str:
    """`YAML reads it as 8: write ...`, for a number written otherwise than in decimal."""
    number = int(value) if isinstance(value, int) else float(value)
    return f"YAML reads it as {number!r}: write the number in decimal digits"


_DECIMAL = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d{1,3})?")
_NOT_ZERO = re.compile(r"[^eE]*[1-9]")  # a digit other than 0 before any exponent


def number(
    key: str,
    value: Any,
    low: float | None = None,
    high: float | None = None,
    *,
    what: str = "a number",
) -> float:
    """A finite number in [low, high] (YAML reads `1e-7` as text: that form is taken too),
    written in decimal: YAML's other numbers (`0x10`, `1_000`, `1:30`, `.inf`) are refused,
    quoted as written, as is one too small to be told from 0 (`1e-400`)."""
    span = f" from {low:g} to {high:g}" if low is not None and high is not None else ""
    span = span or (f" >= {low:g}" if low is not None else "")
    expected = f"{key}: expected {what}{span}, got {show(value)}"
    text = written(value)
    if isinstance(value, str) and len(value) <= 40 and _DECIMAL.fullmatch(value.strip()):
        text = value.strip()
        value = float(text)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OptionError(expected)
    if isinstance(value, int) and value.bit_length() > 60:
        raise OptionError(expected)
    decimal = _DECIMAL_INT if isinstance(value, int) else _DECIMAL  # `010` is octal to YAML
    if text is not None and not decimal.fullmatch(text):
        raise OptionError(f"{expected} ({_read_as(value)})")
    result = float(value)
    if not math.isfinite(result):
        raise OptionError(expected)
    if result == 0.0 and text is not None and _NOT_ZERO.match(text):
        raise OptionError(f"{expected} (too small to tell from 0: YAML reads it as 0.0)")
    if (low is not None and result < low) or (high is not None and result > high):
        raise OptionError(expected)
    return result


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ufffd]")  # Cc, Zl, Zp, U+FFFD


@functools.lru_cache(maxsize=8)
def _control_but(allowed: str) -> re.Pattern[str]:
    return re.compile(
        f"(?![{re.escape(allowed)}]){_CONTROL.pattern}" if allowed else _CONTROL.pattern
    )


def control_character(text: str, *, allowed: str = "") -> str | None:
    """The first control character in `text` but those `allowed` (as `U+0000 at position 3`),
    or None. U+FFFD counts: it stands for bytes that were not UTF-8, which no path or command
    can hold. One regex search (a megabyte in about a millisecond)."""
    found = _control_but(allowed).search(text)
    if found is None:
        return None
    char = found.group()
    what = "a byte that is not UTF-8" if char == "\ufffd" else "a control character"
    return f"{what} (U+{ord(char):04X}) at position {found.start() + 1}"


def path_problem(key: str, path: str) -> str | None:
    """Why `path` cannot be a path on Linux (control characters, too long), or None."""
    bad = control_character(path)
    if bad:
        return f"{key}: the path holds {bad}"
    size = len(path.encode("utf-8", "surrogatepass"))
    if size > PATH_MAX:
        return f"{key}: the path is {size} bytes long (at most {PATH_MAX})"
    for name in path.split("/"):
        length = len(name.encode("utf-8", "surrogatepass"))
        if length > NAME_MAX:
            return (
                f"{key}: the path has a name of {length} bytes, {show(name)} (at most {NAME_MAX})"
            )
    return None


def path(key: str, value: Any) -> str:
    """A path as text, stripped; refused with the reason if Linux could not take it."""
    if not isinstance(value, str) or not value.strip():
        raise OptionError(f"{key}: expected a path, got {show(value)}")
    problem = path_problem(key, value.strip())
    if problem:
        raise OptionError(problem)
    return value.strip()


def text(key: str, value: Any, *, what: str = "a string", allowed: str = "\t") -> str:
    """A string (a shell command, an env value): no control characters but `allowed`, at most
    64 KiB. YAML numbers are taken as their text."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = _numeral(key, value)
    if not isinstance(value, str):
        raise OptionError(f"{key}: expected {what}, got {show(value)}")
    if len(value) > TEXT_MAX:
        raise OptionError(f"{key}: {len(value)} characters long (at most {TEXT_MAX})")
    bad = control_character(value, allowed=allowed)
    if bad:
        raise OptionError(f"{key}: holds {bad}")
    return value


def word(key: str, value: Any, pattern: re.Pattern[str], what: str) -> str:
    """A short token for a command line (a partition, a host): empty, or matching `pattern`
    and at most 256 characters."""
    if value is None or value == "":
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = _numeral(key, value)
    if not isinstance(value, str) or len(value) > 256 or not pattern.fullmatch(value):
        raise OptionError(f"{key}: {show(value)} is not {what}")
    return value


def string_list(key: str, value: Any, item: Callable[[str, Any], str]) -> tuple[str, ...]:
    """A list (or one item alone), each item through `item` (named `key[i]`), at most 1,000."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or len(items) > 1000:
        raise OptionError(f"{key}: expected a list, got {show(value)}")
    return tuple(item(f"{key}[{i}]", v) for i, v in enumerate(items, 1))


def _numeral(key: str, value: int | float) -> str:
    """A YAML number's text as written (`1:30:00`, not 5400; `1.0e+400`, not inf); an
    integer of more than 18 digits is refused, never printed."""
    text = written(value)
    if text is not None:  # (`+5`: YAML's sign, which a duration's text does not take)
        return text.removeprefix("+")
    if isinstance(value, int) and value.bit_length() > 60:
        raise OptionError(f"{key}: {show(value)} is too large")
    return repr(value)


def closest(
    given: str, known: tuple[str, ...] | list[str], n: int = 1, cutoff: float = 0.6
) -> list[str]:
    """The `n` names of `known` closest to `given` (difflib, at least `cutoff` alike; a long
    `given` is cut to 256 characters first, so the comparison stays bounded), best first; []
    if none is near. Compared without case, each named as `known` spells it: `GPUs`,
    `MAX_TRIALS` and `Plateau` were given no hint while `Env` and `Hang` were (walk 90, F9)."""
    import difflib  # only when a name is wrong: not every start-up of the CLI pays for it

    spelt: dict[str, str] = {}
    for name in known:
        spelt.setdefault(name.lower(), name)
    near = difflib.get_close_matches(given[:256].lower(), list(spelt), n=n, cutoff=cutoff)
    return [spelt[name] for name in near]


def did_you_mean(given: str, known: tuple[str, ...] | list[str], n: int = 1) -> str:
    """`; did you mean 'a' or 'b'?` with the `n` names of `known` closest to `given`
    (`closest`), or "" where none is near: the one hint every message of a misspelt name
    ends with."""
    near = closest(given, known, n)
    return f"; did you mean {' or '.join(repr(k) for k in near)}?" if near else ""


def unknown_key(where: str, key: Any, known: tuple[str, ...]) -> str:
    """The problem for one key not in `known`: its name, the closest known key ("did you
    mean"), then the known keys; `where` ("" at the top) says which mapping it is in."""
    hint = did_you_mean(str(key), known)
    prefix = f"{where}: " if where else ""
    return f"{prefix}unknown key {show(key)}{hint} (known: {', '.join(known)})"


def same_names(what: str, names: Sequence[str | None]) -> list[str]:
    """One problem per name given twice or more in a list, naming it and where it stands
    (`what[i]`, numbered from 1; None: an entry with no name, skipped): `stages: two stages
    have the same name 'train' (stages[1], stages[3])` says which to rename, where "two
    have the same name" alone left the reader to look for them."""
    where: dict[str, list[int]] = {}
    for i, name in enumerate(names, 1):
        if name is not None:
            where.setdefault(name, []).append(i)
    return [
        f"{what}: {'two' if len(places) == 2 else len(places)} {what} have the same name "
        f"{show(name)} ({', '.join(f'{what}[{i}]' for i in places)}); each name must differ"
        for name, places in where.items()
        if len(places) > 1
    ]


def unknown_keys(
    where: str, given: dict[Any, Any], known: tuple[str, ...], problems: list[str]
) -> None:
    """One problem naming the first key of `given` that is not `known` (`unknown_key`)."""
    unknown = sorted(set(map(str, given)) - set(known))
    if unknown:
        problems.append(unknown_key(where, unknown[0], known))


def port(key: str, value: Any) -> int:
    try:
        return count(key, value, 1, 65535)
    except OptionError:
        raise OptionError(f"{key}: expected a TCP port number 1-65535, got {show(value)}") from None
