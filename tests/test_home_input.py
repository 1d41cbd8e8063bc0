"""Files in $AJETD_HOME that a person may edit or a crash may damage are user input too: the
commands that read them, and the daemon, say which file is unusable (or pass over it), never
die with a traceback (real CLI processes, a real daemon).

The regression: a JSON file nested deeper than Python's recursion limit (a 200 KB file of `[`)
makes `json.loads` raise RecursionError, which no reader's `except ValueError` took: `ajetd
status` died with a traceback over a damaged daemon.json, a run's state.json or a campaign's
record, the daemon died at its start over the campaign's, and lint said 'the checks stopped'
over a result dir's finish.flag (core/jsontext.py).
"""

from __future__ import annotations

import json
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ajetd.cli.main import main
from ajetd.core.campaignrecord import CampaignState, ExpState, check_stored
from ajetd.core.errors import AjetdError
from ajetd.core.model import Run, State, Status, Trial
from conftest import Env, wait_for

DEEP = "[" * 100_000 + "]" * 100_000
NOT_JSON = {"nested too deep": DEEP, "deep object": '{"a": ' * 50_000 + "1" + "}" * 50_000}


def _said(env: Env, *args: str) -> str:
    out = env.cli(*args)
    said = out.stdout + out.stderr
    assert out.returncode in (0, 1, 2), (args, out.returncode, said[-2000:])
    assert "Traceback" not in said and "RecursionError" not in said, (args, said[-2000:])
    return said


@pytest.mark.parametrize("text", list(NOT_JSON.values()), ids=list(NOT_JSON))
def test_a_damaged_json_file_in_the_home_is_named_never_a_traceback(env: Env, text: str) -> None:
    env.start_daemon()
    run_id = env.submit(env.blueprint("ok"))
    env.wait_done(run_id)
    for proc in env.daemons:
        proc.terminate()
        proc.wait(timeout=30)
    run_dir = env.home / "runs" / run_id
    record = run_dir / "state.json"
    kept = record.read_text()
    campaign = env.home / "campaigns" / "c-abc123" / "state.json"
    campaign.parent.mkdir(parents=True)
    damaged = {
        "daemon.json": env.home / "daemon.json",
        "the run's journal": run_dir / "events.jsonl",
        "a campaign's record": campaign,
        "the run's record": record,  # last: the run is left out from here on
    }
    for what, path in damaged.items():
        path.write_text(text + "\n")
        for args in (["status"], ["status", "--json"], ["status", run_id], ["campaign", "list"]):
            said = _said(env, *args)
            if what == "the run's record" and run_id in args:
                assert f"corrupt run record {record}: nested too deep" in said, said
    record.write_text(kept)
    daemon = env.start_daemon()  # over the damaged campaign record and journal: it lives
    said = f"campaign record {campaign} unreadable, campaign left alone: nested too deep"
    wait_for(lambda: said in env.daemon_log() or daemon.poll() is not None, what="the record")
    assert daemon.poll() is None, env.daemon_log()[-2000:]
    assert _said(env, "status", run_id)


def test_a_result_dir_whose_finish_flag_is_too_deep_is_named_by_lint(env: Env) -> None:
    result = env.tmp / "results" / "deep"
    result.mkdir()
    (result / "finish.flag").write_text(DEEP)
    said = _said(env, "lint", str(env.blueprint("deep", result=str(result))))
    assert f"{result} already holds finish.flag" in said, said


def test_a_campaign_record_too_deep_is_named_by_campaign_status(env: Env) -> None:
    record = env.home / "campaigns" / "c-abc123" / "state.json"
    record.parent.mkdir(parents=True)
    record.write_text(DEEP)
    said = _said(env, "campaign", "status", "c-abc123")
    assert f"campaign record {record} unreadable: nested too deep" in said, said


# A run's record edited by hand (or damaged) so that a field holds what its type cannot. Before:
# 'ajetd status' died with OverflowError (an integer past float as a time or a metric),
# TypeError or AttributeError (a list where text goes, text where a record goes), ValueError
# (NaN drawn as a sparkline), 'ajetd logs' with 'embedded null byte' (a NUL in result_dir).
# Now such a record is named as corrupt (the field, what it holds), or its metric read as none.
def _record(result_dir: Path) -> dict[str, Any]:
    trial = Trial(1, "python train.py", "ajet_s", started_at=1e9, ended_at=1e9 + 60, exit_code=0)
    run = Run(
        run_id="abc123",
        source="bp.md",
        submitted_at=1e9,
        purpose="p",
        state=State.DONE,
        status=Status.SUCCEEDED,
        result_dir=str(result_dir),
        started_at=1e9,
        ended_at=1e9 + 60,
        trials=(trial,),
        history=({"global_steps": 1, "mean_reward": 0.5}, {"global_steps": 2, "mean_reward": 0.6}),
        metrics={"global_steps": 2, "mean_reward": 0.6},
        gpu_ids=(0,),
    )
    return dict(json.loads(json.dumps(run.to_json())))  # as read back: lists, not tuples


_FIELDS = [
    *((name,) for name in _record(Path("/r"))),
    *(("trials", 0, name) for name in _record(Path("/r"))["trials"][0]),
    ("history", 0),
    ("history", 0, "mean_reward"),
    ("metrics", "mean_reward"),
]
_VALUES = {
    "integer past float": "1" + "0" * 400,
    "negative one": "-1",
    "infinity": "Infinity",
    "past the year 9999": "1e300",
    "nan": "NaN",
    "text": '"x\\u001b[2J"',
    "NUL": '"a\\u0000b"',
    "long text": json.dumps("y" * 5000),
    "list": "[1, [2]]",
    "object": '{"a": {"b": 1}}',
    "null": "null",
    "true": "true",
    "nested": "[" * 500 + "]" * 500,
}


def _write_with(folder: Path, record: dict[str, Any], where: tuple[Any, ...], value: str) -> None:
    """`folder`/state.json: `record` with the field at `where` holding `_VALUES[value]`."""
    parent = record
    for key in where[:-1]:
        parent = parent[key]
    parent[where[-1]] = "@hostile@"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "state.json").write_text(json.dumps(record).replace('"@hostile@"', _VALUES[value]))


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.sampled_from(_FIELDS), st.sampled_from(list(_VALUES)))
def test_a_record_field_holding_anything_is_named_or_read(
    tmp_path: Path, where: tuple[Any, ...], value: str
) -> None:
    _write_with(tmp_path / "runs" / "abc123", _record(tmp_path / "result"), where, value)
    for args in (["status"], ["status", "--json"], ["status", "abc123"], ["logs", "abc123"]):
        out = CliRunner().invoke(main, args, env={"AJETD_HOME": str(tmp_path)})
        if isinstance(out.exception, AjetdError | OSError):  # `entry` says these in one line
            assert "corrupt run record" in str(out.exception) or isinstance(out.exception, OSError)
            continue
        assert out.exception is None or isinstance(out.exception, SystemExit), (
            args,
            "".join(traceback.format_exception(out.exception)),
        )


# A campaign's record is read the same way (campaignrecord.check_stored). Before: `ajetd status`
# died over experiments that are `true`, `campaign list` over a time of text or of 1e300 (year
# out of range), a name that is a list, a phase of 400 digits, a run id that is a list.
def _campaign_record() -> dict[str, Any]:
    exp = ExpState(0, "e0", "d", run_id="abc123", status="succeeded", value=0.5)
    state = CampaignState("c-abc123", 1e9, name="cc", experiments=[exp], best=0.5, best_index=0)
    return dict(json.loads(json.dumps(asdict(state))))


_CAMPAIGN_FIELDS = [
    *((name,) for name in _campaign_record()),
    *(("experiments", 0, name) for name in _campaign_record()["experiments"][0]),
]


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.sampled_from(_CAMPAIGN_FIELDS), st.sampled_from(list(_VALUES)))
def test_a_campaign_record_field_holding_anything_is_named_or_read(
    tmp_path: Path, where: tuple[Any, ...], value: str
) -> None:
    _write_with(tmp_path / "campaigns" / "c-abc123", _campaign_record(), where, value)
    for args in (["status"], ["campaign", "list"], ["campaign", "status", "c-abc123"]):
        out = CliRunner().invoke(main, args, env={"AJETD_HOME": str(tmp_path)})
        assert not isinstance(out.exception, Exception) or isinstance(
            out.exception, AjetdError | OSError
        ), (args, "".join(traceback.format_exception(out.exception)))


def test_a_stored_metric_may_be_any_finite_number_a_time_only_a_calendars() -> None:
    """A campaign's best and an experiment's value are metrics (a diverged loss: 3e12), kept
    as they are; only a time (`*_at`) is bounded to what status can show."""
    record = _campaign_record()
    record["best"] = record["experiments"][0]["value"] = 3e300
    check_stored(record)
    record["ended_at"] = 3e300
    with pytest.raises(ValueError, match="'ended_at' holds"):
        check_stored(record)


@pytest.mark.parametrize(
    "number",
    ["1e999", "-1E+400", "1" + "0" * 400, "1" + "0" * 400 + ".0", "-" + "9" * 310 + ".5"],
)
def test_a_number_past_any_float_is_read_as_null_however_written(number: str) -> None:
    """Written without an exponent (309 digits and a fraction) it was read as inf, and a
    history metric of it made `ajetd status` die drawing its sparkline."""
    from ajetd.core import jsontext

    assert jsontext.loads(f'[{number}, 1.5, {{"a": {number}}}]') == [None, 1.5, {"a": None}]
