"""Ends told as they were: `ajetd wait` through attention, a trial's exit time kept by its pane
on a full home, a time limit reached while hung or enforced late. A real daemon (or the loop on
a fake clock, tests/loopkit.py), real tmux, real files, real full disks."""

from __future__ import annotations

import subprocess
import time

from conftest import PYTHON, Env, wait_for


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
