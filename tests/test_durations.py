"""Durations as blueprints write them."""

from __future__ import annotations

import pytest

from ajetd.durations import format_duration, parse_duration
from ajetd.errors import DurationError


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
    ],
)
def test_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "${MaxTime}", "0", "0h", "2 months"])
def test_reject(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)


def test_format() -> None:
    assert [format_duration(s) for s in (0, 42.4, 60, 90, 3600, 5400)] == [
        "0s",
        "42s",
        "1m",
        "1m30s",
        "1h",
        "1h30m",
    ]
