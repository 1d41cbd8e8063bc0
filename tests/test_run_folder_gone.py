"""A live run's folder (`$AJETD_HOME/runs/<id>`) moved, removed or replaced by hand while its
program runs: the daemon keeps supervising it from memory, makes the folder again (never
writing through a file or link put in its place) and never spins on the failed writes
(walk 82, H2: ~1,250 log lines a second, the run gone from `status`)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from ajetd.daemon.loop import FAILED_PASS_PAUSE_S
from conftest import Env, wait_for


def _printing_until(env: Env, trigger: Path) -> str:
    return f"while [ ! -e {trigger} ]; do echo step; sleep 0.1; done; exit 4"


def _steps(env: Env, name: str) -> int:
    log = env.tmp / "results" / name / "logs" / "trial-1.log"
    return log.read_text().count("step") if log.exists() else 0


def _journal(folder: Path) -> str:
    path = folder / "events.jsonl"
    return path.read_text() if path.is_file() else ""


@pytest.mark.parametrize("how", ["moved", "removed", "replaced by a file"])
def test_a_live_runs_folder_gone_is_made_again_and_the_run_is_supervised_to_its_end(
    env: Env, how: str
) -> None:
    trigger = env.tmp / "end-now"
    env.start_daemon()  # deep checks every 30 ms (--backoff-scale 0.001): each one writes
    run_id = env.submit(env.blueprint("gone", command=_printing_until(env, trigger)))
    wait_for(lambda: env.record(run_id).get("started_at"), what="the run to start")
    folder = env.home / "runs" / run_id
    if how == "removed":
        shutil.rmtree(folder)
    else:
        folder.rename(env.tmp / "aside")
    if how == "replaced by a file":
        folder.write_text("not a folder\n")
        said = f"{folder} is not a folder (a file or link put in its place)"
        wait_for(lambda: said in env.daemon_log(), what="the daemon to say so")
        steps = _steps(env, "gone")
        wait_for(lambda: _steps(env, "gone") >= steps + 10, what="ten more steps printed")
        assert folder.read_text() == "not a folder\n"  # nothing written through it
        folder.unlink()
    wait_for(lambda: "was gone (moved or removed" in _journal(folder), what="the folder again")
    assert env.status(run_id)["state"] == "running"
    assert run_id in env.cli("status").stdout
    steps = _steps(env, "gone")
    wait_for(lambda: _steps(env, "gone") >= steps + 10, what="ten more steps printed")
    trigger.touch()
    status = env.wait_done(run_id)
    assert (status["status"], status["exit_code"]) == ("failed", 4), status
    assert status["attention"] is None
    assert (env.tmp / "results" / "gone" / "finish.flag").exists()
    log = env.daemon_log()
    assert log.count("Traceback") <= 2, log[-3000:]  # each failure once, not at every pass
    assert len(log) < 100_000, len(log)


def test_a_pass_in_which_a_step_failed_is_not_followed_at_once_by_the_next(
    env: Env, loop: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Any run's step that fails where its moment stays due (here the deep check, due and
    raising at every pass): before, the loop made its next pass at once (5 ms), trying and
    logging as fast as it could; now it waits FAILED_PASS_PAUSE_S (an exit file or a request
    still wakes it), and the failure is logged once."""
    run_id = loop.submit(env.blueprint("fails", command="sleep 1000", ajetd="gpus: 0"))
    loop.started(run_id)

    def broken(slot: Any, now: float) -> None:
        raise RuntimeError("a deep check that cannot be done")

    monkeypatch.setattr(loop.daemon, "_deep_check", broken)
    loop.clock.advance(3600)  # every moment of the run is due
    waits = []
    for _ in range(5):
        waits.append(loop.daemon.turn(True))
        loop.clock.advance(waits[-1])
    assert min(waits) >= FAILED_PASS_PAUSE_S, waits
    failed = [r for r in caplog.records if "a deep check that cannot be done" in r.getMessage()]
    assert len(failed) == 1, [r.getMessage() for r in failed]
    assert "internal error while supervising it" in str(loop.run(run_id).attention)
