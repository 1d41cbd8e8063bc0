"""A live run's folder (`$AJETD_HOME/runs/<id>`) moved, removed or replaced by hand while its
program runs: the daemon keeps supervising it from memory, makes the folder again (never
writing through a file or link put in its place) and never spins on the failed writes
(walk 82, H2: ~1,250 log lines a second, the run gone from `status`)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ajetd.daemon.loop import FAILED_PASS_PAUSE_S
from conftest import Env, replace_by_file, wait_for


def _printing_until(env: Env, trigger: Path) -> str:
    return f"while [ ! -e {trigger} ]; do echo step; sleep 0.1; done; exit 4"


def _steps(env: Env, name: str) -> int:
    log = env.tmp / "results" / name / "logs" / "trial-1.log"
    return log.read_text().count("step") if log.exists() else 0


def _live_and_waited_for(env: Env, trigger: Path) -> tuple[str, subprocess.Popen[str]]:
    """A run printing until `trigger` exists, its program printing (not only its start on
    record: its folder is taken away under a live run, not under its launch's writes), and an
    `ajetd wait` on it in flight."""
    run_id = env.submit(env.blueprint("gone", command=_printing_until(env, trigger)))
    wait_for(lambda: env.record(run_id).get("started_at"), what="the run to start")
    wait_for(lambda: _steps(env, "gone") >= 2, what="the run's program to print")
    waiting = env.cli_started("wait", run_id, "--timeout", "60")
    return run_id, waiting


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
    # its start on record and its program printing (the banner quotes `echo step`: a second
    # `step` is the program's): the folder is replaced under a live run, not under its launch
    wait_for(lambda: env.record(run_id).get("started_at"), what="the run to start")
    wait_for(lambda: _steps(env, "gone") >= 2, what="the run's program to print")
    folder = env.home / "runs" / run_id
    if how == "removed":
        shutil.rmtree(folder)
    elif how == "moved":
        folder.rename(env.tmp / "aside")
    else:
        replace_by_file(folder, env.tmp / "aside", "not a folder\n")
    if how == "replaced by a file":
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


def test_a_folder_removed_between_the_pass_and_a_steps_write_is_no_internal_error(
    env: Env, loop: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder removed after the pass looked and before one of the run's steps wrote in it
    (a loaded machine): the write's ENOENT marked the run `internal error` for attention, and a
    `wait` in flight exited 2 while the run went on. The folder is made again at once, the
    run unmarked; the step is tried at the next tick."""
    run_id = loop.submit(env.blueprint("went", command="sleep 1000", ajetd="gpus: 0"))
    loop.started(run_id)
    folder = env.home / "runs" / run_id
    real = loop.daemon._deep_check

    def removed_then_written(slot: Any, now: float) -> None:
        if folder.is_dir():
            shutil.rmtree(folder)
            loop.daemon.home.append_event(run_id, now, "a write into the removed folder")
        real(slot, now)

    monkeypatch.setattr(loop.daemon, "_deep_check", removed_then_written)
    loop.clock.advance(3600)  # the deep check is due
    loop.daemon.turn(True)
    assert loop.run(run_id).attention is None
    assert "was gone (moved or removed" in _journal(folder)
    assert (folder / "state.json").is_file()


@pytest.mark.parametrize(
    "held", [False, True], ids=["removed", "removed while a file in it is open"]
)
def test_a_removed_run_folder_is_made_again_within_a_pass_and_a_wait_in_flight_goes_on(
    env: Env, held: bool
) -> None:
    """Walk 30, 1: with deep checks on their real schedule the folder came back only at the
    daemon's next write of the record (27 s; a deep check later in a run), meanwhile `status`
    said "no run" and a `wait` in flight exited 2 while the run went on. The daemon learns at
    once from the runs folder's own watch (a folder whose file is still open says nothing of
    itself until that file is closed), and a reader does not call a run the daemon holds
    "no run"."""
    trigger = env.tmp / "end-now"
    env.start_daemon("--backoff-scale", "1")  # deep checks 30 s apart: no write comes soon
    run_id, waiting = _live_and_waited_for(env, trigger)
    folder = env.home / "runs" / run_id
    handle = open(folder / "state.json", "rb") if held else None  # noqa: SIM115
    try:
        shutil.rmtree(folder)
        wait_for(
            lambda: "was gone (moved or removed" in _journal(folder),
            timeout=10.0,  # a pass; not the 27 s to the next write (a loaded 2-core machine)
            what="the folder made again within a pass",
        )
    finally:
        if handle is not None:
            handle.close()
    assert env.status(run_id)["state"] == "running"
    if waiting.poll() is not None:  # what the wait said, and the run's record, for the reader
        out, err = waiting.communicate()
        said = f"exit {waiting.returncode}; stdout {out!r}; stderr {err!r}"
        raise AssertionError(
            f"a wait in flight ended while the run went on: {said}; record {env.record(run_id)}"
        )
    trigger.touch()
    out, err = waiting.communicate(timeout=20)
    assert waiting.returncode == 1, (waiting.returncode, out, err)


def test_a_run_the_daemon_holds_is_never_no_run_while_its_folder_is_gone(env: Env) -> None:
    """Walk 30, 1, the readers' side: while the daemon has not made the folder again (here it
    is frozen), `status RUN` says the folder is gone and the daemon holds the run (exit 1,
    never exit 2 "no run"), and a `wait` in flight says so once and waits on."""
    trigger = env.tmp / "end-now"
    daemon = env.start_daemon("--backoff-scale", "1")
    run_id, waiting = _live_and_waited_for(env, trigger)
    folder = env.home / "runs" / run_id
    wait_for(lambda: run_id in _deep_checks(env), what="its next deep check published")
    daemon.send_signal(signal.SIGSTOP)
    try:
        shutil.rmtree(folder)
        shown = env.cli("status", run_id)
        assert shown.returncode == 1, (shown.returncode, shown.stdout, shown.stderr)
        assert "is gone (moved or removed by hand)" in shown.stderr, shown.stderr
        assert "no run" not in shown.stderr, shown.stderr
    finally:
        daemon.send_signal(signal.SIGCONT)
    wait_for(lambda: "was gone (moved or removed" in _journal(folder), what="the folder again")
    assert env.status(run_id)["state"] == "running"
    if waiting.poll() is not None:  # what the wait said, and the run's record, for the reader
        out, err = waiting.communicate()
        said = f"exit {waiting.returncode}; stdout {out!r}; stderr {err!r}"
        raise AssertionError(
            f"a wait in flight ended while the run went on: {said}; record {env.record(run_id)}"
        )
    trigger.touch()
    out, err = waiting.communicate(timeout=20)
    assert waiting.returncode == 1, (waiting.returncode, out, err)


def _deep_checks(env: Env) -> dict[str, float]:
    checks: dict[str, float] = json.loads((env.home / "daemon.json").read_text())["deep_checks"]
    return checks


def test_a_kept_session_whose_run_folder_was_removed_is_closed_by_the_next_daemon(
    env: Env,
) -> None:
    """Walk88 F10: `rm -rf runs/<id>` of an ended run whose `keep_session` had not run out,
    then a daemon restart: the session stayed for good, no record left to close it. The
    next daemon closes a dead pane whose script lies in a run folder that is gone; another
    run's kept session (its folder there) stays, as does a session not ajetd's."""
    env.start_daemon()
    gone = env.submit(env.blueprint("gone", command="echo bye", ajetd="keep_session: 1h"))
    kept = env.submit(env.blueprint("kept", command="echo stay", ajetd="keep_session: 1h"))
    sessions = {r: env.wait_done(r)["session"] for r in (gone, kept)}
    env.cli("shutdown")
    env.tmux("new-session", "-d", "-s", "ajet_users_own", "sleep 600")
    shutil.rmtree(env.home / "runs" / gone)
    env.start_daemon()

    def listed() -> set[str]:
        return set(env.tmux("list-sessions", "-F", "#{session_name}").stdout.split())

    wait_for(lambda: sessions[gone] not in listed(), what="the orphaned session closed")
    assert {sessions[kept], "ajet_users_own"} <= listed()
    assert "closing tmux session " + sessions[gone] in env.daemon_log()
