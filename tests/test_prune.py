"""`ajetd prune` removes the folders of runs that nothing will read or write again, beside a
running daemon, and keeps every other run saying why (walk 88, F10: `rm -rf runs/<id>` left a
kept session open for good, or brought the folder back as a record alone)."""

from __future__ import annotations

import json
import os
import time

from ajetd.core.model import Run, State, Status
from ajetd.core.prune import kept_because
from conftest import Env, wait_for

DAY = 86400.0


def _ended(**changes: object) -> Run:
    now = time.time()
    fields: dict[str, object] = {
        "run_id": "abc123",
        "source": "x.md",
        "submitted_at": now - 3 * DAY,
        "state": State.DONE,
        "status": Status.SUCCEEDED,
        "ended_at": now - 2 * DAY,
        "session": "ajet_x",
        "session_closed": True,
    }
    fields.update(changes)
    return Run(**fields)  # type: ignore[arg-type]


def test_what_keeps_a_run_from_being_pruned() -> None:
    now = time.time()
    assert kept_because(_ended(), now, DAY, {}) is None
    assert "within the age kept" in str(kept_because(_ended(), now, 3 * DAY, {}))
    assert "campaign c-aaaaaa" in str(kept_because(_ended(), now, DAY, {"abc123": "c-aaaaaa"}))
    assert "reports" in str(kept_because(_ended(reports_pending=True), now, DAY, {}))
    assert "on_finish" in str(kept_because(_ended(finish_hook_due=True), now, DAY, {}))
    kept = str(kept_because(_ended(session_closed=False), now, DAY, {}))
    assert "tmux session ajet_x is still kept" in kept
    live = _ended(state=State.RUNNING, status=None, ended_at=None)
    assert "not ended" in str(kept_because(live, now, DAY, {}))


def test_prune_beside_a_running_daemon_removes_only_settled_runs(daemon_env: Env) -> None:
    env = daemon_env
    gone = env.submit(env.blueprint("gone", ajetd="gpus: 0\nkeep_session: 0"))
    kept = env.submit(env.blueprint("kept", ajetd="gpus: 0\nkeep_session: 1h"))
    end = env.tmp / "end-live"
    live = env.submit(
        env.blueprint("live", command=f"while [ ! -e {end} ]; do sleep 0.05; done", ajetd="gpus: 0")
    )
    for run_id in (gone, kept):
        env.wait_done(run_id)
    wait_for(lambda: env.record(gone).get("session_closed"), what="the session closed")
    bad = env.submit(env.blueprint("bad", max_time="whenever"))
    env.wait_done(bad)
    rejected = sorted(p.name for p in (env.home / "rejected").iterdir())
    assert rejected, "a rejected blueprint is kept in rejected/"
    old = time.time() - 2 * DAY
    for path in (env.home / "rejected").iterdir():
        os.utime(path, (old, old))

    dry = env.cli("prune", "--older-than", "0", "--dry-run", "--json")
    said = json.loads(dry.stdout)
    assert dry.returncode == 0 and sorted(said["removed"]) == sorted([gone, bad]), said
    assert (env.home / "runs" / gone).is_dir() and said["rejected_removed"] == rejected
    assert "still kept" in said["kept"][kept] and "not ended" in said["kept"][live]

    out = env.cli("prune", "--older-than", "0")
    assert out.returncode == 0, out.stderr
    assert "removed 2 run folder(s)" in out.stdout and f"kept {kept}: its tmux" in out.stdout
    assert not (env.home / "runs" / gone).exists() and not (env.home / "runs" / bad).exists()
    assert not list((env.home / "rejected").iterdir())
    assert (env.tmp / "results" / "gone" / "finish.flag").exists()  # the user's: untouched
    listed = {r["run_id"] for r in json.loads(env.cli("status", "--json").stdout)}
    assert listed == {kept, live}
    assert env.cli("status", gone).returncode != 0

    end.touch()  # the daemon goes on: the live run ends and a new run runs
    env.wait_done(live)
    again = env.submit(env.blueprint("again", ajetd="gpus: 0\nkeep_session: 0"))
    assert env.wait_done(again)["status"] == "succeeded"
    assert not (env.home / "runs" / gone).exists()  # nothing brought it back
    young = json.loads(env.cli("prune", "--json").stdout)  # the default age: 30 days
    assert young["removed"] == [] and "within the age kept" in young["kept"][again]


def test_prune_refuses_a_bad_age_and_says_a_campaign_it_cannot_read(env: Env) -> None:
    out = env.cli("prune", "--older-than", "soon")
    assert out.returncode == 2 and "--older-than" in out.stderr
    broken = env.home / "campaigns" / "c-aaaaaa"
    broken.mkdir(parents=True)
    (broken / "state.json").write_text("{not json")
    out = env.cli("prune", "--older-than", "0")
    assert out.returncode == 1 and "nothing was pruned" in out.stderr, out.stderr
