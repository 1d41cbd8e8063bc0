"""A tmux server that stops answering (walk 30, stale30 3): a launch that fails because tmux did
not answer in time (a timeout, no refusal) leaves the run waiting with the reason in status and
is tried again with backoff; once tmux answers the run starts, its program launched once.

A real daemon, a real tmux server on a private socket stopped with SIGSTOP, real files.
"""

from __future__ import annotations

import os
import signal

from conftest import Env, wait_for


def test_a_launch_that_tmux_does_not_answer_waits_and_goes_once_it_answers(env: Env) -> None:
    assert env.tmux("new-session", "-d", "-s", "held").returncode == 0
    server = int(env.tmux("display-message", "-p", "#{pid}").stdout.strip())
    env.start_daemon("--liveness", "0.5")
    os.kill(server, signal.SIGSTOP)
    try:
        run_id = env.submit(env.blueprint("silent", ajetd="gpus: 0"))
        reason = wait_for(
            lambda: (
                "tmux did not answer" in env.record(run_id).get("reason", "") and env.record(run_id)
            ),
            60,
            what="the reason in the record",
        )
        assert reason["state"] in ("queued", "running") and reason.get("started_at") is None
        shown = env.status(run_id)
        assert shown["state"] != "done" and "tmux did not answer" in shown["reason"]
    finally:
        os.kill(server, signal.SIGCONT)
    done = env.wait_done(run_id, 90)
    assert done["status"] == "succeeded", done
    assert len(env.launches()) == 1
    journal = (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert "tmux answered again: launched" in journal
