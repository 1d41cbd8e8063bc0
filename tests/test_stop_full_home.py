"""`ajetd stop` on a full `$AJETD_HOME`: the stop is filed (an empty request file is one: the
daemon reads only its time), and the CLI says truthfully what happened, also where nothing
could be filed. Real daemon, real tmux, a real full disk (a small tmpfs: CI runs as root)."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

from conftest import Env, fill, wait_for


def _running(env: Env, name: str) -> str:
    env.start_daemon("--liveness", "0.5")
    run_id = env.submit(env.blueprint(name, command="sleep 1000", ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("state") == "running", 30, "the run to start")
    return run_id


def test_a_stop_on_a_full_home_stops_the_run_and_says_so(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The request's text met the full home: the CLI unlinked the file it had made and said
    `No space left on device` (exit 1) while the daemon, woken by the file, had taken it (the
    run stopped) or had not (no stop could be filed at all) (walk88 F3)."""
    tmpfs(env.home, "3m")
    run_id = _running(env, "fullstop")
    filler = fill(env.home)
    asked = env.cli("stop", run_id, "--timeout", "30")
    assert asked.returncode == 0, (asked.stdout, asked.stderr)
    assert f"run {run_id} stopped" in asked.stdout, asked.stdout
    assert "No space left" not in asked.stderr, asked.stderr
    filler.unlink()
    status = env.wait_done(run_id)
    assert status["status"] == "stopped", status


def test_a_stop_that_cannot_be_filed_says_the_run_goes_on_and_how_to_stop_it(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """A home with no inode left takes no request file at all: the CLI says that nothing was
    stopped, and how to stop the program by hand; the run goes on."""
    tmpfs(env.home, "3m,nr_inodes=1000")  # few inodes, to take them all
    run_id = _running(env, "noinode")
    env.cli("status")  # the home as a reader leaves it
    filler = fill(env.home)
    made: list[Path] = []
    try:
        while True:  # every inode taken (tmpfs counts them apart from blocks)
            path = env.home / f".inode-{len(made)}"
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
            made.append(path)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    asked = env.cli("stop", run_id, "--timeout", "5")
    for path in made:
        path.unlink()
    filler.unlink()
    assert asked.returncode == 1, (asked.stdout, asked.stderr)
    assert "nothing was stopped" in asked.stderr and "send-keys" in asked.stderr, asked.stderr
    assert env.record(run_id).get("state") == "running"
