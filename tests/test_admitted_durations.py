"""A duration rule added since a run was admitted never refuses its admitted copy (review of
session 35): `exp_max_time: 2h; 3h if the GPU is slow` and `1 小时（60 分钟）` were read as their
first duration by the version that admitted them; refused on re-reading, the daemon taking the
live run up again fell back to the default `[ajetd]` options (its gpus, hang rule, max_trials
lost), and a running campaign's base blueprint could no longer be read. A new blueprint is
still refused, saying why."""

from __future__ import annotations

import pytest
from hypothesis import given
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
