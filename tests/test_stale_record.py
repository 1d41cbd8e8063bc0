"""An older record put back for an ended run (walk 30, stale30 1): a state.json saved while the
run was live, copied back after its end, is never taken for the truth where the run's journal
says it ended or its result dir's finish.flag names it as ended. The daemon restores the record
as ended from that evidence, says so, and rewrites no report (README: finish.flag is written
once, nothing is ever overwritten, an ended run is never brought back).

Real daemons, a real tmux server on a private socket, real files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import Env, wait_for

REPORTS = ("finish.flag", "results.md", "trials.md", "run.json")


def _waiting_command(env: Env) -> str:
    trigger = env.tmp / "end-now"
    return f"while [ ! -e {trigger} ]; do sleep 0.05; done; echo ending; exit 0"


def _snapshot(result: Path) -> dict[str, tuple[bytes, int]]:
    return {n: ((result / n).read_bytes(), (result / n).stat().st_mtime_ns) for n in REPORTS}


def _ended_lines(env: Env, run_id: str) -> list[str]:
    path = env.home / "runs" / run_id / "events.jsonl"
    texts = [json.loads(line)["event"] for line in path.read_text().splitlines()]
    return [t for t in texts if t.startswith("run ended: ")]


@pytest.mark.parametrize("evidence", ["both", "journal", "flag", "unreported"])
def test_a_live_record_put_back_after_the_end_is_restored_as_ended(env: Env, evidence: str) -> None:
    result = env.tmp / "results" / "stale"
    env.start_daemon("--liveness", "0.5")
    run_id = env.submit(env.blueprint("stale", command=_waiting_command(env), ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("started_at"), what="the run to start")
    state = env.home / "runs" / run_id / "state.json"
    kept = env.tmp / "state.json.bak"
    shutil.copy2(state, kept)
    (env.tmp / "end-now").touch()
    before = env.wait_done(run_id)
    assert env.cli("shutdown").returncode == 0
    wait_for(lambda: all(p.poll() is not None for p in env.daemons), what="the daemon to stop")
    reports = _snapshot(result)
    journal = env.home / "runs" / run_id / "events.jsonl"
    if evidence == "flag":  # only the flag says it ended: a journal cut by hand
        lines = journal.read_text().splitlines(keepends=True)
        journal.write_text("".join(x for x in lines if '"run ended: ' not in x))
    elif evidence == "journal":  # only the journal says so: the flag moved aside by hand
        (result / "finish.flag").rename(result / "finish.flag.aside")
    elif evidence == "unreported":  # as a daemon killed after the journal's end, before the
        for name in (*REPORTS, "config-used.yaml"):  # record's save and so any report
            (result / name).unlink(missing_ok=True)
    shutil.copy2(kept, state)
    env.start_daemon("--liveness", "0.5")
    if evidence == "unreported":  # the end was cut short: ended from its exit, reported once
        again = env.wait_done(run_id)
        assert again["status"] == before["status"]
        assert json.loads((result / "finish.flag").read_text())["status"] == before["status"]
        assert "restored as ended" not in journal.read_text()
        return
    wait_for(lambda: env.record(run_id).get("state") == "done", what="the record to be restored")
    wait_for(lambda: "restored as ended" in env.daemon_log(), what="the warning")
    after = env.status(run_id)
    assert after["state"] == "done" and after["status"] == before["status"]
    assert after["reason"] == before["reason"]
    assert after["attention"] is None
    if evidence == "journal":
        (result / "finish.flag.aside").rename(result / "finish.flag")
    assert _snapshot(result) == reports  # not one report rewritten
    ended = _ended_lines(env, run_id)
    assert len(ended) == (0 if evidence == "flag" else 1)
    assert "restored as ended" in journal.read_text()
    assert env.cli("wait", run_id).returncode == 0
