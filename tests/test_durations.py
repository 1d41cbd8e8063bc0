"""Durations as blueprints write them."""

from __future__ import annotations

import pytest

from ajetd.core.durations import format_duration, parse_duration
from ajetd.core.errors import DurationError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("30m", 1800),
        ("2h", 7200),
        ("1h30m", 5400),
        ("1.5 hours", 5400),
        ("2 小时", 7200),
        ("30 分钟", 1800),
        ("3", 10800),
        ("0.5", 1800),
        ("45 min", 2700),
        ("1 hour 30 minutes", 5400),
        ("1 hour and 30 minutes", 5400),
        ("2 days", 172800),
        ("01:30:00", 5400),
        ("运行时间不超过 2 小时，每个实验强制在 2 小时 后终止", 7200),
        ("run Qwen2.5-7B for at most 4 hours", 14400),
        ("`2h`", 7200),
        ("2H", 7200),
        ("1小时30分钟", 5400),
        ("10 seconds", 10),
        # a number right after a unit counts the next smaller one, as people write it (2h30
        # read as 2 h until then: a run stopped half an hour early); a count of something
        # else stays out of the duration
        ("2h30", 9000),
        ("1h 30", 5400),
        ("1 hour 30", 5400),
        ("1m30", 90),
        ("2h30m15", 9015),
        ("1d12", 129600),
        ("2 小时 30", 9000),
        ("2h30 (the last run took 3h)", 9000),
        ("2h30, 8 GPUs", 9000),
        ("2h 30 epochs", 7200),
        ("2 小时 30 个实验", 7200),
        ("2h, 30 experiments", 7200),
        ("01:30:00 15", 5400),
    ],
)
def test_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "${MaxTime}", "0", "0h", "2 months"])
def test_reject(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("-5 min", "cannot be negative"),  # once read as 5 minutes
        ("-1:00:00", "cannot be negative"),  # once an hour
        ("run for −2h", "cannot be negative"),
        ("-3", "cannot be negative"),
        ("1e3s", "exponent"),  # once 3 s
        ("1e400 hours", "exponent"),  # once 400 hours
        ("1.5E+2 min", "exponent"),
        ("9" * 400, "400 digits is not a duration"),  # once infinity
        ("9" * 400 + " hours", "400 digits is not a duration"),
        ("inf", "without exponent, inf or NaN"),
        ("NaN hours", "without exponent, inf or NaN"),
        ("400 days", "more than a year"),
        ("0 min", "must be positive"),
    ],
)
def test_misreads_are_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(DurationError, match=reason):
        parse_duration(text)


def test_zero_where_allowed_and_a_value_alone() -> None:
    assert parse_duration("0", zero_ok=True) == 0.0
    assert parse_duration("0s", zero_ok=True) == 0.0
    assert parse_duration("90", bare_unit_s=60.0) == 5400
    with pytest.raises(DurationError, match="not only a duration"):
        parse_duration("2h or so", whole=True)
    assert parse_duration("Qwen2.5-7B for at most 4 hours") == 14400  # not negative


def test_format_never_raises() -> None:
    assert format_duration(float("inf")) == "∞"
    assert format_duration(float("nan")) == "-"


def test_format() -> None:
    assert [format_duration(s) for s in (0, 42.4, 60, 90, 3600, 5400)] == [
        "0s",
        "42s",
        "1m",
        "1m30s",
        "1h",
        "1h30m",
    ]


@pytest.mark.parametrize(("text", "unit"), [("2h75", "minutes"), ("1m90", "seconds")])
def test_a_trailing_number_too_large_for_the_next_unit_is_refused(text: str, unit: str) -> None:
    with pytest.raises(DurationError, match=f"{text}.*{unit}"):
        parse_duration(text)
    assert parse_duration("2h30", whole=True) == 9000  # an option's duration alone


@pytest.mark.parametrize(
    "text",
    [
        "2-3 hours",
        "2–3h",
        "2~3 小时",
        "两到三小时",
        "2 to 3 hours",
        "2h or 3h",
        "2h-3h",
        "1:30-2:00",
    ],
)
def test_a_range_is_refused_not_read_as_one_of_its_ends(text: str) -> None:
    """walk 86: `2-3 hours` was read as 3 hours, silently."""
    with pytest.raises(DurationError, match="is a range: write one duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("2h (2024-05-01)", 7200), ("2 小时 30 个实验", 7200), ("2h - stop it then", 7200)],
)
def test_a_number_later_in_the_sentence_is_no_range(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_a_range_check_stays_linear() -> None:
    assert parse_duration("3h" + "-" * 100_000) == 10800
    with pytest.raises(DurationError):
        parse_duration("9" * 100_000 + "-3h")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1-00:00:00", 86400),
        ("0-02:00:00", 7200),
        ("2-12:30", 2 * 86400 + 12 * 3600 + 30 * 60),
        ("1-00:00:00 (as in the job script)", 86400),
    ],
)
def test_slurms_days_form_is_one_duration_not_a_range(text: str, seconds: float) -> None:
    """`--time=1-00:00:00` copied from a job script was refused as a range (`1-00`); the
    colon after the hours tells Slurm's `D-HH:MM[:SS]` from `2-3 hours`."""
    assert parse_duration(text) == seconds
