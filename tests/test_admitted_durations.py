"""A duration rule added since a run was admitted never refuses its admitted copy (review of
session 35): `exp_max_time: 2h; 3h if the GPU is slow` and `1 小时（60 分钟）` were read as their
first duration by the version that admitted them; refused on re-reading, the daemon taking the
live run up again fell back to the default `[ajetd]` options (its gpus, hang rule, max_trials
lost), and a running campaign's base blueprint could no longer be read. A new blueprint is
still refused, saying why."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ajetd.adapters.inbox import read_stored_options
from ajetd.adapters.store import Home
from ajetd.core.blueprint import parse_blueprint
from ajetd.core.durations import DurationError, admitted_duration, parse_duration
from ajetd.core.errors import BlueprintError
from conftest import Env

# texts an earlier version read as their first duration, refused by this one
NEWLY_REFUSED = {
    "运行时间不超过 1 小时（60 分钟）": 3600.0,
    "2h; 3h if the GPU is slow": 7200.0,
    "2h, 3h": 7200.0,
    "1h 2h": 3600.0,
    "2h;3h": 7200.0,
    "1m.5s": 60.5,
}


def _blueprint(max_time: str) -> str:
    return (
        "## [exp_purpose]\nadmitted\n\n## [exp_codebase_dir]\n/tmp\n\n## [exp_venv_exe]\n"
        "/usr/bin/python3\n\n## [exp_yaml_path]\ncfg.yaml\n\n## [exp_launch_command]\n"
        "```bash\npython train.py\n```\n\n## [exp_result_dir]\n/tmp/r\n\n"
        f"## [exp_max_time]\n{max_time}\n\n## [ajetd]\n```yaml\ngpus: 0\nmax_trials: 1\n```\n"
    )


@pytest.mark.parametrize(("text", "seconds"), NEWLY_REFUSED.items())
def test_an_admitted_copy_keeps_the_duration_it_was_admitted_with(
    text: str, seconds: float
) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)
    with pytest.raises(BlueprintError, match="exp_max_time"):
        parse_blueprint(_blueprint(text))  # a new blueprint: refused, saying why
    bp = parse_blueprint(_blueprint(text), admitted=True)
    assert bp.max_time_s == seconds
    assert (bp.options.gpus, bp.options.max_trials) == ("0", 1)


def test_the_daemon_takes_a_live_runs_options_from_its_admitted_copy(env: Env) -> None:
    """What a restarted daemon reads for a live run (`read_stored_options`), on a real home."""
    home = Home(env.home)
    home.ensure()
    folder = home.run_dir("adm001")
    folder.mkdir(parents=True)
    (folder / "blueprint.md").write_text(_blueprint("2h; 3h if the GPU is slow"))
    options, why = read_stored_options(home, "adm001")
    assert why is None, why
    assert (options.gpus, options.max_trials) == ("0", 1)


@given(st.text(max_size=60))
def test_an_admitted_reading_never_raises_and_agrees_where_both_read(text: str) -> None:
    """Any text: the lenient reading gives a duration or None, never an exception, and where
    the strict reading takes the text, both give the same seconds."""
    kept = admitted_duration(text)
    try:
        strict = parse_duration(text)
    except DurationError:
        return
    assert kept == strict


# read by no version as the writer meant it: a new blueprint is refused saying why; an
# admitted copy is read as meant, the longer reading where one cannot tell (docs/design.md)
MEANT = {
    "1,5h": ("comma", 5400.0),
    "1，5 小时": ("comma", 5400.0),
    "1,500 s": ("comma", 1500.0),  # three digits: a thousands separator
    "1/2 h": ("fraction", 1800.0),
    "1 1/2 hours": ("fraction", 5400.0),
    "½h": ("fraction", 1800.0),
    "1½ h": ("fraction", 5400.0),
    "2-3h": ("range", 10800.0),
    "2 - 3h": ("range", 10800.0),
    "2h-3h": ("range", 10800.0),
    "2h-3": ("range", 10800.0),
    "2~3 小时": ("range", 10800.0),
    "两到三小时": ("range", 10800.0),
    "2 to 3 hours": ("range", 10800.0),
    "3h or 2h": ("range", 10800.0),
    "30-90 min": ("range", 5400.0),
}


@pytest.mark.parametrize(("text", "said", "seconds"), [(t, *v) for t, v in MEANT.items()])
def test_an_admitted_copy_reads_a_comma_a_fraction_or_a_range_as_meant(
    text: str, said: str, seconds: float
) -> None:
    with pytest.raises(DurationError, match=said):
        parse_duration(text)
    with pytest.raises(BlueprintError, match=f"exp_max_time: .*{said}"):
        parse_blueprint(_blueprint(text))  # a new blueprint (lint, admission): refused, why
    assert admitted_duration(text) == seconds
    assert parse_blueprint(_blueprint(text), admitted=True).max_time_s == seconds


_UNIT_WORDS = st.sampled_from([("h", 3600.0), (" hours", 3600.0), ("m", 60.0), (" 分钟", 60.0)])
_JOINS = st.sampled_from(["-", " - ", "~", " to ", " 到 ", "–", " or "])


@given(st.integers(1, 99), st.integers(1, 99), _JOINS, _UNIT_WORDS, st.booleans())
def test_an_admitted_range_is_read_as_its_longer_end(
    low: int, high: int, join: str, unit: tuple[str, float], both: bool
) -> None:
    """`2-3h` and `2h-3h`, any joiner: the longest the run may take."""
    word, per = unit
    text = f"{low}{word if both else ''}{join}{high}{word}"
    with pytest.raises(DurationError, match="range"):
        parse_duration(text)
    assert admitted_duration(text) == max(low, high) * per


@given(st.integers(0, 9), st.integers(1, 9), st.integers(1, 9), _UNIT_WORDS)
def test_an_admitted_fraction_or_decimal_comma_is_read_as_its_value(
    whole: int, over: int, under: int, unit: tuple[str, float]
) -> None:
    word, per = unit
    fraction = f"{whole} {over}/{under}" if whole else f"{over}/{under}"
    value = (whole + over / under) * per
    if value >= 1:
        assert admitted_duration(fraction + word) == pytest.approx(value, rel=1e-9)
    comma = (whole + over / 10) * per
    if comma >= 1:
        assert admitted_duration(f"{whole},{over}{word}") == pytest.approx(comma)


_HOSTILE = st.lists(st.sampled_from([*"0123456789 ,，/½-~.:hm", "小时", "到", "to", "and"])).map(
    "".join
)


@settings(max_examples=300)
@given(_HOSTILE | st.text(max_size=40))
@example("½h1h")  # the strict reading took the `1h` after the fraction; now refused
@example("½ h and 1h")
@example("1h½m")  # the strict reading took the `1h` before it and passed over the `½m`
@example("1h and ½m")
def test_where_the_strict_reading_reads_the_lenient_one_agrees(text: str) -> None:
    """The admitted reading only adds: wherever a new blueprint's reading takes the text
    (commas, fractions and joiners about), the admitted one gives the same seconds. A
    fraction that is part of the duration (`½h1h`, `1h½m`) is refused, never passed over."""
    try:
        strict = parse_duration(text)
    except DurationError:
        admitted_duration(text)  # never raises
        return
    assert admitted_duration(text) == strict
