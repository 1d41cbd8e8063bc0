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

import pytest

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
