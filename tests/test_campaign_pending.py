"""Requests filed while no daemon runs (walk97b F7): `add`, `set` and `stop` exit 1 saying
"the request waits ... (check with `ajetd campaign status`)", and status showed nothing of
them: an agent resuming from it filed the same `add` again, and a pending stop read as a
campaign running on. Status lists them (`pending_requests`, `pending: ...` lines); an `add`
of a name already pending is refused at once; the next daemon applies each once."""

from __future__ import annotations

import json
import signal
from typing import Any

from conftest import Env, campaign_folder, wait_for


def _status(env: Env, cid: str) -> dict[str, Any]:
    return dict(json.loads(env.cli("campaign", "status", cid, "--json").stdout))


def test_requests_filed_while_no_daemon_runs_are_shown_pending(daemon_env: Env) -> None:
    env = daemon_env
    folder = campaign_folder(env, "pend", env.tmp / "campaigns" / "pend", 3)
    out = env.cli("campaign", str(folder))
    assert out.returncode == 0, out.stderr
    cid = out.stdout.strip()
    wait_for(lambda: _status(env, cid)["state"] == "waiting", timeout=60, what="its wait")
    # a bare number set live is refused as in campaign.yaml (walk97b F10: read as hours)
    bare = env.cli("campaign", "set", cid, "--deadline", "2")
    assert bare.returncode == 2 and "stop.deadline: 2 is a bare number" in bare.stderr
    env.daemons[-1].send_signal(signal.SIGTERM)
    env.daemons[-1].wait(timeout=30)
    args = ("--name", "again", "--description", "d", "--timeout", "1")
    added = env.cli("campaign", "add", cid, *args)
    assert added.returncode == 1 and "check with `ajetd campaign status`" in added.stderr
    status = _status(env, cid)
    [pending] = status["pending_requests"]
    assert (pending["op"], pending["name"]) == ("add", "again"), pending
    assert pending["filed_at"] and pending["request_id"], pending
    text = env.cli("campaign", "status", cid).stdout
    assert "pending: add again (filed " in text and "not taken yet" in text, text
    # the same add again: refused at once, nothing filed twice
    twice = env.cli("campaign", "add", cid, *args)
    assert twice.returncode == 2, (twice.stdout, twice.stderr)
    assert "an add of 'again' was filed at" in twice.stderr, twice.stderr
    assert len(_status(env, cid)["pending_requests"]) == 1
    stop = env.cli("campaign", "stop", cid)
    assert stop.returncode == 1, (stop.stdout, stop.stderr)
    assert [p["op"] for p in _status(env, cid)["pending_requests"]] == ["add", "stop"]
    assert "pending: stop (filed " in env.cli("campaign", "status", cid).stdout
    # the next daemon takes them, once: none pending, the campaign stopped
    env.start_daemon()
    wait_for(lambda: _status(env, cid)["state"] == "done", timeout=60, what="the stop")
    status = _status(env, cid)
    assert status["pending_requests"] == [] and status["status"] == "stopped", status
    assert status["refused_requests"] == [], status
