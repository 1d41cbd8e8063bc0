"""A clean stop (`ajetd shutdown`, SIGTERM) first writes the reports of the runs that ended
before it, within `STOP_REPORTS_S` in all, and `shutdown` names each ended run whose reports
it left to the next daemon (walk98 F19: a stop right after a run's end left its results.md,
trials.md and finish.flag unwritten and said nothing, while `status` said `succeeded`). Real
daemon, real tmux, real plotter children held by a gate file (`TEST_WAIT_ENV`), a real full
disk (a small tmpfs: CI runs as root, so a mode alone refuses root nothing)."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from ajetd.core.resultfiles import REPORTS_HELD
from ajetd.daemon.loop import STOP_REPORTS_S
from ajetd.pictures.runcurves import TEST_WAIT_ENV
from conftest import Env, fill, wait_for

REPORTS = ("results.md", "trials.md", "finish.flag")


def _ended_with_reports_pending(env: Env, name: str) -> str:
    """A run that ended and whose final picture waits for the gate: its reports with it."""
    run_id = env.submit(env.blueprint(name, ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("state") == "done", 60, f"run {run_id} to end")
    assert env.record(run_id).get("reports_pending"), env.record(run_id)  # F19's moment
    assert not (env.tmp / "results" / name / "finish.flag").exists()
    return run_id


def _last_work(env: Env) -> float:
    """The seconds the daemon's last stop took for its last work, as its log says."""
    took = re.findall(r"stopping: its last work took ([0-9.]+) s", env.daemon_log())
    assert took, env.daemon_log()[-3000:]
    return float(took[-1])


def _idle(pid: int) -> bool:
    """The daemon's loop waits for events (its main thread in epoll_wait), not in a pass;
    where the kernel does not say (no wchan), taken as so."""
    try:
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return True
    return wchan in ("", "0") or "epoll" in wchan


def _plotters(env: Env) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        line = " ".join(proc.info["cmdline"] or ())
        if "ajetd.pictures.runcurves" in line and str(env.home) in line:
            found.append(proc)
    return found


@pytest.mark.pictures
def test_a_run_that_ended_just_before_the_stop_has_its_reports_before_the_daemon_exits(
    env: Env,
) -> None:
    """The run's end is on record, its final picture is drawing (its reports follow it) when
    SIGTERM comes: the daemon waits for it, writes the reports, then exits; `shutdown` says
    nothing more than that it stopped. Before, it exited at once and left them."""
    gate = env.tmp / "draw"
    env.vars[TEST_WAIT_ENV] = str(gate)  # the plotter draws once the gate is there
    daemon = env.start_daemon("--liveness", "0.5")
    run_id = _ended_with_reports_pending(env, "just")
    stop = env.cli_started("shutdown")
    wait_for(
        lambda: f"stopping: the reports of 1 ended run(s) first ({run_id};" in env.daemon_log(),
        30,
        "the stop to wait for the run's reports",
    )
    assert daemon.poll() is None
    gate.touch()
    out, err = stop.communicate(timeout=60)
    assert stop.returncode == 0, (out, err)
    assert out.strip() == f"ajetd daemon (pid {daemon.pid}) stopped; runs go on in tmux", out
    result = env.tmp / "results" / "just"
    assert all((result / name).exists() for name in REPORTS), sorted(
        p.name for p in result.iterdir()
    )
    assert (result / "curves.png").exists()
    assert env.record(run_id).get("reports_pending") is False
    assert _last_work(env) < STOP_REPORTS_S
    assert "left for the next daemon" not in env.daemon_log()


@pytest.mark.pictures
def test_reports_not_done_within_the_bound_are_left_and_named_and_the_next_daemon_writes_them(
    env: Env,
) -> None:
    """A final picture that does not come (a plotter that hangs) holds the stop STOP_REPORTS_S
    and no longer: the daemon exits, its plotter ended, and `shutdown` names the run; `status`
    says no daemon runs to write them. The next daemon draws and writes them."""
    gate = env.tmp / "draw"
    env.vars[TEST_WAIT_ENV] = str(gate)
    env.start_daemon("--liveness", "0.5")
    run_id = _ended_with_reports_pending(env, "hangs")
    wait_for(lambda: _plotters(env), 30, "the final drawing to start")
    out = env.cli("shutdown", "--timeout", str(STOP_REPORTS_S + 30))
    assert out.returncode == 0, (out.stdout, out.stderr)
    said = (
        f"run {run_id} ended (succeeded); its results.md, trials.md and finish.flag will be "
        "written by the next daemon"
    )
    assert said in out.stdout.splitlines(), out.stdout
    assert STOP_REPORTS_S <= _last_work(env) < STOP_REPORTS_S + 3
    assert (
        f"run {run_id} ended succeeded; its reports are left for the next daemon (not done in"
        in (env.daemon_log())
    )
    assert not _plotters(env)  # nothing of the stopped daemon's goes on drawing
    shown = env.cli("status", run_id).stdout
    assert "not written yet" in shown and "no daemon runs" in shown, shown
    assert said in env.cli("status").stdout.splitlines()  # the list says it under its table
    gate.touch()
    env.start_daemon("--liveness", "0.5")
    env.wait_done(run_id)
    result = env.tmp / "results" / "hangs"
    assert all((result / name).exists() for name in REPORTS)


def test_a_run_whose_result_dir_refuses_its_reports_is_named_and_the_stop_does_not_wait(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The result dir is full when the run ends (its reports held, attention): the stop does
    not wait for a folder that just refused them, and `shutdown` names the run, the folder and
    why; once there is room the next daemon writes them."""
    disk = tmpfs(env.tmp / "small", "256k")
    go = env.tmp / "go"
    env.start_daemon("--liveness", "0.5")
    command = f"while [ ! -e {go} ]; do sleep 0.05; done"
    out_dir = disk / "out"
    run_id = env.submit(
        env.blueprint("held", command=command, result=str(out_dir), ajetd="gpus: 0")
    )
    wait_for(lambda: env.record(run_id).get("state") == "running", 30, "the run to start")
    filler = fill(disk)
    go.touch()
    wait_for(
        lambda: str(env.record(run_id).get("attention") or "").startswith(REPORTS_HELD),
        30,
        "the reports to be held",
    )
    began = time.monotonic()
    stopped = env.cli("shutdown")
    took = time.monotonic() - began
    assert stopped.returncode == 0, (stopped.stdout, stopped.stderr)
    said = (
        f"run {run_id} ended (succeeded); its results.md, trials.md and finish.flag will be "
        f"written by the next daemon once it can write to {out_dir} (No space left on device)"
    )
    assert said in stopped.stdout.splitlines(), stopped.stdout
    assert _last_work(env) < 1.0, took
    shown = env.cli("status", run_id).stdout
    assert "not written yet" in shown and "no daemon runs" in shown, shown
    filler.unlink()
    env.start_daemon("--liveness", "0.5")
    env.wait_done(run_id)
    assert all((out_dir / name).exists() for name in REPORTS)
    again = env.cli("shutdown")
    assert again.returncode == 0 and len(again.stdout.splitlines()) == 1, again.stdout


@pytest.mark.pictures
def test_a_second_signal_ends_the_wait_for_reports(env: Env) -> None:
    """Ctrl-C twice (or SIGTERM twice) to a daemon waiting for reports: it exits at once."""
    gate = env.tmp / "draw"
    env.vars[TEST_WAIT_ENV] = str(gate)
    daemon = env.start_daemon("--liveness", "0.5")
    run_id = _ended_with_reports_pending(env, "twice")
    daemon.terminate()
    wait_for(lambda: "stopping: the reports of 1 ended run(s)" in env.daemon_log(), 30, "the wait")
    daemon.terminate()
    try:
        daemon.wait(timeout=STOP_REPORTS_S - 1)
    except subprocess.TimeoutExpired:
        pytest.fail("a second SIGTERM did not end the wait for reports")
    assert f"run {run_id} ended succeeded; its reports are left for the next daemon (a second" in (
        env.daemon_log()
    )


def test_an_exit_that_came_with_the_stop_is_recorded_and_reported_before_the_daemon_exits(
    env: Env,
) -> None:
    """The trial's exit file and SIGTERM reach the daemon together (frozen by SIGSTOP while
    both came, then continued): its loop ended before any pass took the exit, and the run
    stayed `running` on record, its reports to a next daemon. The stop records the end and
    writes the reports first."""
    go = env.tmp / "go"
    # no timer wakes it while the trial runs (nor a deep check: the fixture's 0.001 scale)
    daemon = env.start_daemon("--liveness", "60", "--backoff-scale", "1")
    command = f"while [ ! -e {go} ]; do sleep 0.05; done"
    run_id = env.submit(env.blueprint("together", command=command, ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("started_at"), 30, "the run's trial to start")
    wait_for(lambda: _idle(daemon.pid), 30, "the daemon to wait for events")  # not mid-pass
    daemon.send_signal(signal.SIGSTOP)
    try:
        go.touch()
        exit_file = env.home / "runs" / run_id / "trial-1.exit"
        wait_for(exit_file.exists, 30, "the trial's exit file")
        daemon.send_signal(signal.SIGTERM)
    finally:
        daemon.send_signal(signal.SIGCONT)
    daemon.wait(timeout=30)
    record = env.record(run_id)
    assert record.get("state") == "done" and record.get("status") == "succeeded", record
    assert not record.get("reports_pending"), record
    result = env.tmp / "results" / "together"
    assert all((result / name).exists() for name in REPORTS)
