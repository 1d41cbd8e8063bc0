"""A duration's grammar as a class (walk 90): the parts of one duration go from the largest
unit down, each unit once; a second duration beside the first is never added to it; a number
whose digits a comma or a slash splits is refused, not read as its last part; Chinese numerals
read as digits do before every unit, with or without `零` between the parts.

The tests are the careful reader: they write each duration from known parts and know its
value; ajetd must read that value or refuse, never another."""

from __future__ import annotations

import ast
import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ajetd.core.blueprint import parse_blueprint
from ajetd.core.durations import parse_duration
from ajetd.core.errors import BlueprintError, DurationError

# unit seconds -> spellings (a leading space is part of the spelling)
_SPELLINGS: dict[int, list[str]] = {
    86400: ["d", " days", " day", "天", " 天", "日"],
    3600: ["h", " hours", " hr", "小时", " 小时", "个小时", "小時", "钟头"],
    60: ["m", " min", " minutes", "分钟", " 分钟", "分", " 分", "分鐘"],
    1: ["s", " sec", " seconds", "秒", " 秒钟"],
}
_DIGITS = "零一二三四五六七八九"


def _chinese(value: int, two: str) -> str:
    """`value` (0-99) in Chinese numerals, as people write them (`十五`, `二十`, `两`)."""
    if value < 10:
        return two if value == 2 else _DIGITS[value]
    tens, ones = divmod(value, 10)
    return ("" if tens == 1 else _DIGITS[tens]) + "十" + (_DIGITS[ones] if ones else "")


def _is_chinese(spelling: str) -> bool:
    return not spelling.strip().isascii()


@st.composite
def _part(draw: st.DrawFn, unit: int) -> tuple[str, int, bool]:
    """One part written for `unit`: (text, seconds, whether its unit word is Chinese)."""
    spelling = draw(st.sampled_from(_SPELLINGS[unit]))
    value = draw(st.integers(0, 9 if unit == 86400 else 99))
    chinese = _is_chinese(spelling)
    if chinese and draw(st.booleans()):
        numeral = _chinese(value, draw(st.sampled_from("二两")))
        # `十分` alone is "very": never a duration, tested below
        assume(not (numeral == "十" and spelling.strip() == "分"))
        return numeral + spelling.lstrip(), value * unit, True
    return f"{value}{spelling}", value * unit, chinese


@st.composite
def _duration(draw: st.DrawFn) -> tuple[str, int, int, int]:
    """One duration of parts in descending units: (text, seconds, largest and smallest unit)."""
    units = sorted(draw(st.sets(st.sampled_from(sorted(_SPELLINGS)), min_size=1)), reverse=True)
    text, total = "", 0
    for index, unit in enumerate(units):
        written, seconds, chinese = draw(_part(unit))
        if index:
            joiners = ["", " ", ", ", " and ", "，"] + (["零", " 零 ", "又"] if chinese else [])
            text += draw(st.sampled_from(joiners))
        text += written
        total += seconds
    return text, total, units[0], units[-1]


@settings(max_examples=400, deadline=None)
@given(_duration(), st.sampled_from(["", " at most", "，每个实验强制终止", " (hard limit)"]))
def test_a_duration_of_descending_units_reads_as_its_sum(
    duration: tuple[str, int, int, int], after: str
) -> None:
    text, seconds, _, _ = duration
    assume(seconds >= 1)
    assert parse_duration(text) == seconds
    assert parse_duration(f"run for {text}{after}") == seconds
    assert parse_duration(text, whole=True) == seconds


@settings(max_examples=400, deadline=None)
@given(_duration(), _duration(), st.sampled_from(["", " ", ", ", " and ", "，", "、", "零"]))
def test_a_second_duration_beside_the_first_is_never_added(
    first: tuple[str, int, int, int], second: tuple[str, int, int, int], joiner: str
) -> None:
    """`2h, 3h`, `1h 2h`, `30m 1h`: two durations side by side (the second's largest unit no
    smaller than the first's smallest) were read as their sum; which one was meant no reader
    can tell, so they are refused, whatever joins them."""
    assume(second[2] >= first[3])
    text = first[0] + joiner + second[0]
    assume(first[1] >= 1)
    with pytest.raises(DurationError, match="two durations side by side"):
        parse_duration(text)
    with pytest.raises(DurationError):
        parse_duration(text, whole=True)


# Every class of character that is neither a letter nor a digit: spaces and line breaks,
# controls and format characters, each kind of punctuation, each kind of symbol
_SEPARATOR_CLASSES = ("Zs", "Zl", "Zp", "Cc", "Cf", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po")
_SEPARATOR_CLASSES += ("Sm", "Sc", "Sk", "So")


def _named(text: str) -> str:
    """How a refusal names `text` (in full, or its first 40 characters when long)."""
    text = text.strip()
    return repr(text) if len(text) <= 60 else repr(text[:40] + "…")


@settings(max_examples=600, deadline=None)
@given(
    _duration(),
    _duration(),
    st.text(st.characters(categories=_SEPARATOR_CLASSES), min_size=1, max_size=4),
    st.sampled_from(["", "run for ", "运行 "]),
)
def test_durations_that_only_separators_part_are_refused_naming_the_text(
    first: tuple[str, int, int, int],
    second: tuple[str, int, int, int],
    separator: str,
    before: str,
) -> None:
    """`2h;3h`, `2h | 3h`, `2h\n3h`, `2h (3h)` were read as 2 h while `2h, 3h` was refused:
    whatever separates them, two durations with no word between them are refused, with an
    error naming the text (as side by side, or as a range, a decimal comma or a fraction
    where the separator is one of those)."""
    assume(first[1] >= 1)
    text = before + first[0] + separator + second[0]
    assume(text == text.strip())  # the refusal names the text stripped
    for whole in (False, True):
        with pytest.raises(DurationError) as refused:
            parse_duration(text, whole=whole)
        assert _named(text) in str(refused.value)  # as written (Chinese numerals too)


@pytest.mark.parametrize(
    "text",
    [
        "2h;3h",
        "2h ; 3h",
        "2h | 3h",
        "2h\n3h",
        "2h\r\n3h",
        "2h (3h)",
        "2h+30m",
        "1m.0s",  # hypothesis: a point after a unit began a decimal part (60 s)
        "1m.5s",
        "1m .5s",
        "1h;30m",
        "2h\t3h",
        "2h\u200b3h",
        "2h…3h",
        "2 小时；3 小时",
        "两小时；三小时",
        "2h30; 3h",
        "01:30; 2h",
        "2h;3h at most",
    ],
)
def test_each_separator_class_is_refused_as_side_by_side(text: str) -> None:
    for whole in (False, True):
        with pytest.raises(DurationError, match="two durations side by side") as refused:
            parse_duration(text, whole=whole)
        assert _named(text) in str(refused.value)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2h; then 3h", 7200),
        ("2h. 3 GPUs", 7200),
        ("2h (the last run took 3h)", 7200),
        ("2h;30 epochs", 7200),
        ("2h/epoch", 7200),
        ("2 小时。之后 3 小时", 7200),
    ],
)
def test_a_word_between_two_durations_keeps_the_first(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@settings(max_examples=300, deadline=None)
@given(
    _duration(),
    _duration(),
    st.sampled_from(
        ["; then ", "，每个实验强制在 ", " (the last run took ", ". Next time ", "。之后 "]
    ),
)
def test_in_a_sentence_the_first_duration_counts(
    first: tuple[str, int, int, int], second: tuple[str, int, int, int], between: str
) -> None:
    assume(first[1] >= 1)
    assert parse_duration(first[0] + between + second[0]) == first[1]


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 999),
    st.integers(0, 999),
    st.sampled_from(["h", " hours", " 小时", "m", " min", "分钟", "s", " seconds", "d"]),
    st.sampled_from([",", "，"]),
    st.sampled_from(["", "run for ", "运行 "]),
)
def test_a_comma_between_digits_is_refused_not_read_as_its_last_digits(
    whole: int, part: int, unit: str, comma: str, before: str
) -> None:
    """`1,5 h` was read as 5 h (walk 90). A decimal comma (1,5 = 1.5) in one language is a
    thousands separator (1,500 = 1500) in another: refused, with the way to write it."""
    text = f"{before}{whole}{comma}{part}{unit}"
    with pytest.raises(DurationError, match="comma between digits"):
        parse_duration(text)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 99),
    st.integers(1, 99),
    st.integers(1, 99),
    st.sampled_from(["/", " / ", "⁄"]),
    st.sampled_from([" hours", "h", " 小时", " min"]),
)
def test_a_fraction_is_refused_not_read_as_its_denominator(
    whole: int, top: int, bottom: int, slash: str, unit: str
) -> None:
    """`1 1/2 hours` was read as 2 hours (walk 90)."""
    for text in (f"{whole} {top}{slash}{bottom}{unit}", f"{top}{slash}{bottom}{unit}"):
        with pytest.raises(DurationError, match="fraction"):
            parse_duration(text)


@pytest.mark.parametrize(
    "text",
    ["1,5 h", "1,5 小时", "2,5h", "1,5", "2h, 3h", "3 h, 4 h at most", "1h 2h", "1 1/2 hours"],
)
def test_walk_90s_misreads_are_refused(text: str) -> None:
    """Each was read as another duration (5 h, 5 h, 5 h, -, 5 h, 7 h, 3 h, 2 h)."""
    with pytest.raises(DurationError):
        parse_duration(text)


@pytest.mark.parametrize("hours", ["1小时", "一小时", "1 小时", "一个小时", "1 小時"])
@pytest.mark.parametrize("minutes", ["5分钟", "五分钟", "5分", "五分", "5 分鐘", "五分鐘"])
@pytest.mark.parametrize("zero", ["零", " 零 ", "〇", ""])
def test_chinese_hours_and_minutes_with_or_without_zero(
    hours: str, minutes: str, zero: str
) -> None:
    """`1小时零5分钟` lost its minutes (3600 s) while `1小时零五分钟` kept them (walk 90)."""
    assert parse_duration(hours + zero + minutes) == 3900
    assert parse_duration(hours + zero + minutes, whole=True) == 3900


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("十五分", 900),
        ("15分", 900),
        ("二十分", 1200),
        ("一百零五分钟", 6300),
        ("三十秒", 30),
        ("三日", 3 * 86400),
        ("两小时零十分", 7800),
        ("2小时零10分钟", 7800),
        ("1 天零 3 小时", 97200),
        ("十分重要，运行 2 小时", 7200),  # `十分` alone is "very"
        ("一时半会儿跑不完，给 2 小时", 7200),  # `一时` is "for a moment"
        ("2026年12月3日起，运行 2 小时", 7200),  # a date, not three days
        ("1d 01:30:00", 91800),
        ("2h/epoch", 7200),
    ],
)
def test_chinese_numerals_read_before_every_unit_digits_are(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["十分", "半分", "2小时零", "1h and", "2h/3h", "01:30 2h"])
def test_no_duration_or_an_unclear_one_alone_is_refused(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text, whole=True)


# what a refusal quotes: Python literals opening after a space, a bracket or the start
_QUOTED = re.compile(r"""(?:^|(?<=[\s,(]))('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")""")
_WRITTEN = list("零〇一二两三四五六七八九十百半个小时時分钟秒天日 ，；;,.-~/到或0123456789hms`")


@settings(max_examples=800, deadline=None)
@given(st.text(st.sampled_from(_WRITTEN), min_size=1, max_size=24), st.booleans())
def test_a_refusal_quotes_only_what_the_user_wrote(text: str, markdown: bool) -> None:
    """Chinese numerals are read as digits and a blueprint's backticks as spaces before the
    parse; a refusal quoted the rewritten text (`'2小时' and '3小时'` for `两小时；三小时`,
    `'2h  3h'` for `` `2h` `3h` ``). Every text, and every part of it, that a refusal quotes is
    there in the text as written."""
    assume("'" not in text and '"' not in text)
    try:
        parse_duration(text, markdown=markdown)
    except DurationError as exc:
        message = str(exc)
    else:
        return
    for quoted in _QUOTED.findall(message):
        shown = ast.literal_eval(quoted).removesuffix("…")
        assert shown in text, (shown, message)


@pytest.mark.parametrize(
    ("written", "parts"),
    [
        ("两小时；三小时", ("两小时", "三小时")),
        ("一个半小时 两小时", ("一个半小时", "两小时")),
        ("十五分.5秒", ("十五分", ".5秒")),
        ("`2h` `3h`", ("2h", "3h")),
        ("两小时 3h", ("两小时", "3h")),
    ],
)
def test_a_blueprints_refusal_quotes_its_exp_max_time_as_written(
    written: str, parts: tuple[str, str]
) -> None:
    """End to end through the blueprint reader (which reads a code span's backticks as
    spaces): the problem names the text and both durations as the user wrote them."""
    blueprint = (
        "## [exp_purpose]\nq\n\n## [exp_codebase_dir]\n/tmp\n\n## [exp_launch_command]\n"
        "```bash\npython train.py\n```\n\n## [exp_result_dir]\n/tmp/r\n\n"
        f"## [exp_max_time]\n{written}\n"
    )
    with pytest.raises(BlueprintError) as refused:
        parse_blueprint(blueprint)
    problem = next(p for p in refused.value.problems if p.startswith("exp_max_time"))
    assert repr(written) in problem, problem
    assert f"{parts[0]!r} and {parts[1]!r}" in problem, problem
