"""Swarm mode end to end: a real daemon starts the (fake) swarm server in its own tmux session,
waits for /health, shares it between runs, and restarts it before relaunching a client."""

from __future__ import annotations

import socket
from pathlib import Path

from conftest import Env, wait_for


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _swarm_blueprint(env: Env, name: str, port: int, extra: str = "", **fake: object) -> Path:
    config = env.config(name, swarm_port=port, **fake)
    server = f"python -m fakejet.swarm start --swarm-port={port}"
    ajetd = f'swarm: {{port: {port}, server_command: "{server}", health_timeout: 20s}}\n{extra}'
    return env.blueprint(name, config=config, ajetd=ajetd, purpose=f"swarm {name}")


def _starts(env: Env) -> list[str]:
    path = env.codebase / "swarm_starts.log"
    return path.read_text().splitlines() if path.exists() else []


def _sessions(env: Env) -> list[str]:
    return env.tmux("ls", "-F", "#{session_name}").stdout.split()


def test_server_started_waited_for_and_shared(daemon_env: Env) -> None:
    env = daemon_env
    port = _free_port()
    # the server answers /health only after this: `ajetd status` is asked meanwhile (a CLI
    # start under a loaded machine's 20-30 load took over 1.5 s, the delay before)
    slow = "env: {FAKESWARM_DELAY: 5}"
    first = env.submit(_swarm_blueprint(env, "one", port, slow, steps=30, step_time=0.05))
    waiting = wait_for(
        lambda: "waiting for the swarm server" in env.record(first).get("reason", ""),
        what="the run to wait for /health",
    )
    assert waiting
    assert env.status(first)["state"] == "queued"
    assert f"ajet_swarm_{port}" in _sessions(env)
    wait_for(lambda: env.record(first).get("state") == "running", what="the client to start")
    second = env.submit(_swarm_blueprint(env, "two", port, steps=4))
    assert env.wait_done(second)["status"] == "succeeded"
    assert env.wait_done(first)["status"] == "succeeded"
    assert len(_starts(env)) == 1  # one server for both runs
    server_log = env.home / "swarm" / str(port) / "server-1.log"
    assert "Uvicorn running" in server_log.read_text()
    assert f"ajet_swarm_{port}" in _sessions(env)  # kept for the next run (keep: 10m)


def test_dead_server_is_restarted_before_the_client_is_relaunched(daemon_env: Env) -> None:
    env = daemon_env
    port = _free_port()
    run_id = env.submit(_swarm_blueprint(env, "die", port, steps=60, step_time=0.05))
    wait_for(lambda: len(env.launches()) == 1, what="the first client")
    (env.codebase / "swarm_die").touch()  # the server dies with a CUDA OOM
    status = env.wait_done(run_id, timeout=60)
    assert status["status"] == "succeeded" and status["trials"] == 2, status
    assert len(_starts(env)) == 2
    trials = (env.tmp / "results" / "die" / "trials.md").read_text()
    assert "swarm_server_died" in trials and "cuda_oom" in trials
    assert env.launches() == [f"{run_id} 1", f"{run_id} 2"]


def test_server_that_never_answers_fails_the_run_with_its_output(daemon_env: Env) -> None:
    env = daemon_env
    port = _free_port()
    config = env.config("mute", swarm_port=port)
    server = f"python -m fakejet.swarm start --swarm-port={port}"
    ajetd = (
        f'swarm: {{port: {port}, server_command: "{server}", health_timeout: 2s}}\n'
        "env: {FAKESWARM_MUTE: 1}"
    )
    run_id = env.submit(env.blueprint("mute", config=config, ajetd=ajetd))
    status = env.wait_done(run_id)
    assert status["status"] == "failed"
    assert "did not answer /health within 2 s" in status["reason"], status["reason"]
    assert "waiting for the trainer" in status["reason"]  # the server's last output
    assert env.launches() == []  # no client against a server that is not up
    assert f"ajet_swarm_{port}" not in _sessions(env)


def test_server_that_crashes_at_start_fails_the_run(daemon_env: Env) -> None:
    env = daemon_env
    port = _free_port()
    config = env.config("crash", swarm_port=port)
    ajetd = f"swarm: {{port: {port}, server_command: \"python -c 'import no_such_swarm'\"}}"
    run_id = env.submit(env.blueprint("crash", config=config, ajetd=ajetd))
    status = env.wait_done(run_id)
    assert status["status"] == "failed"
    assert "exited with code 1" in status["reason"] and "No module named" in status["reason"]
    assert env.launches() == []


def test_a_server_already_answering_is_used_not_managed(daemon_env: Env) -> None:
    env = daemon_env
    port = _free_port()
    import subprocess
    import sys

    outside = subprocess.Popen(
        [sys.executable, "-m", "fakejet.swarm", "start", f"--swarm-port={port}"],
        cwd=env.codebase,
    )
    try:
        wait_for(lambda: len(_starts(env)) == 1, what="the outside server")
        run_id = env.submit(_swarm_blueprint(env, "ext", port, steps=4))
        assert env.wait_done(run_id)["status"] == "succeeded"
        assert len(_starts(env)) == 1 and f"ajet_swarm_{port}" not in _sessions(env)
        assert outside.poll() is None
    finally:
        outside.kill()
        outside.wait()
