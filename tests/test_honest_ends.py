"""Ends told as they were: `ajetd wait` through attention, a trial's exit time kept by its pane
on a full home, a time limit reached while hung or enforced late. A real daemon (or the loop on
a fake clock, tests/loopkit.py), real tmux, real files, real full disks."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from ajetd.core.timefmt import iso
from ajetd.core.trialscript import EXIT_OPTION
from conftest import PYTHON, Env, fill, wait_for


def _waiting_command(env: Env, first: str = "step 1") -> str:
    """Prints `first`, then nothing until the test touches `end-now`; exits 0."""
    trigger = env.tmp / "end-now"
    return f"echo '{first}'; while [ ! -e {trigger} ]; do sleep 0.05; done; echo ending"


def test_wait_through_attention_waits_until_the_run_ends(env: Env) -> None:
    """`wait` returns 2 at once, at every call, while a run needs attention: an agent told to
    wait again busy-looped. `--through-attention` waits on until the run ended (or the
    timeout: 124, never 2)."""
    env.start_daemon("--liveness", "0.5")
    rule = "gpus: 0\nhang: {window: 1s, action: attention}"
    bp = env.blueprint("hung", command=_waiting_command(env), ajetd=rule, max_time="10m")
    run_id = env.submit(bp)
    through = subprocess.Popen(
        [PYTHON, "-m", "ajetd", "wait", run_id, "--through-attention"],
        env=env.vars,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: env.record(run_id).get("attention"), what="the hang flag")
        began = time.monotonic()
        plain = env.cli("wait", run_id, "--timeout", "5")
        assert plain.returncode == 2 and "needs attention" in plain.stdout, plain
        assert time.monotonic() - began < 5  # at once: exit 2 keeps its meaning
        timed = env.cli("wait", run_id, "--through-attention", "--timeout", "1")
        assert timed.returncode == 124, timed
        assert through.poll() is None  # still waiting, through the attention
        (env.tmp / "end-now").touch()
        out, err = through.communicate(timeout=30)
    finally:
        if through.poll() is None:
            through.kill()
            through.wait()
    assert through.returncode == 0, (out, err)
    assert out.startswith(f"run {run_id} succeeded"), out
    assert env.record(run_id)["reports_pending"] is False


def _pane_exit(env: Env, session: str) -> str:
    """The exit line the trial script kept on its pane (`EXIT_OPTION`), '' while none."""
    shown = env.tmux("list-panes", "-s", "-t", session, "-F", f"#{{{EXIT_OPTION}}}")
    return shown.stdout.strip() if shown.returncode == 0 else ""


def test_an_exit_kept_on_the_pane_keeps_its_time_after_a_kill_9(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """A full home: the trial's exit goes to its pane (`@ajetd_exit`, "0 <epoch>"); the daemon
    is killed (-9), the disk freed, a daemon started: the run's end was the restart's time in
    the record, finish.flag and trials.md, the pane's time dropped. It is the exit's own."""
    tmpfs(env.home, "2m")
    daemon = env.start_daemon("--liveness", "0.5")
    bp = env.blueprint("paneexit", command=_waiting_command(env), ajetd="gpus: 0")
    run_id = env.submit(bp)
    wait_for(lambda: env.record(run_id).get("started_at"), what="the run to start")
    session = env.record(run_id)["session"]
    filler = fill(env.home)
    (env.tmp / "end-now").touch()
    note = wait_for(lambda: _pane_exit(env, session), what="the exit on the pane")
    daemon.send_signal(signal.SIGKILL)
    daemon.wait(timeout=20)
    code, exited = note.split()
    assert code == "0" and not (env.home / "runs" / run_id / "trial-1.exit").exists()
    wait_for(lambda: time.time() > float(exited) + 2.5, what="time to pass")
    filler.unlink()
    env.start_daemon("--liveness", "0.5")
    status = env.wait_done(run_id)
    record = env.record(run_id)
    assert (status["status"], status["exit_code"]) == ("succeeded", 0), status["reason"]
    assert abs(record["ended_at"] - float(exited)) < 1e-3, (record["ended_at"], exited)
    assert abs(record["trials"][-1]["ended_at"] - float(exited)) < 1e-3
    result = env.tmp / "results" / "paneexit"
    flag = json.loads((result / "finish.flag").read_text())
    assert flag["ended_at"] == iso(float(exited)), (flag["ended_at"], exited)
    assert f"- end: {iso(float(exited))}" in (result / "trials.md").read_text()
