"""A run folder the daemon may not write to (walk 30, stale30 2): `chattr +i` on a live run's
folder. Its record and journal lines are held in memory as a full disk's are, the run needs
attention in what status shows (naming the folder and the error, a permission error called
one, never a full disk), `ajetd wait` ends on it, and all is written within seconds of the
folder taking writes again.

A real daemon, a real tmux server on a private socket, a real immutable folder (ext4; the
tests run as root).
"""

from __future__ import annotations

import errno
import json
import subprocess
import time
from pathlib import Path

import pytest

from ajetd.adapters.diskfull import REFUSED_RETRY_MAX_S, Troubles
from conftest import Env, wait_for


def test_a_refused_folder_is_asked_again_within_seconds_however_long_it_refuses() -> None:
    """A full disk's backoff grows to a minute; a refused folder's stops at a few seconds (a
    refused write costs nothing), so a folder taken back is written within them."""
    now = [0.0]
    troubles = Troubles(lambda: now[0])
    folder = Path("/home/ajetd/runs/x")
    for _ in range(20):
        troubles.hit(folder, PermissionError(errno.EPERM, "Operation not permitted"), "f")
        now[0] = troubles.full[folder].retry_at
    assert troubles.full[folder].delay == REFUSED_RETRY_MAX_S
    assert "DISK FULL" not in troubles.line(folder) and "permission" in troubles.line(folder)


def _chattr(flag: str, folder: Path) -> bool:
    done = subprocess.run(["chattr", flag, str(folder)], capture_output=True, check=False)
    return done.returncode == 0


def test_a_run_folder_that_refuses_writes_gives_the_run_attention_until_it_takes_them(
    env: Env,
) -> None:
    trigger = env.tmp / "end-now"
    command = f"while [ ! -e {trigger} ]; do sleep 0.05; done; echo ending; exit 0"
    env.start_daemon("--liveness", "0.5")
    run_id = env.submit(env.blueprint("perm", command=command, ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("started_at"), what="the run to start")
    folder = env.home / "runs" / run_id
    if not _chattr("+i", folder):
        pytest.skip("chattr +i is not supported here")
    try:
        trigger.touch()

        def attention() -> dict[str, object]:
            shown = env.status(run_id)
            return shown if shown.get("attention") else {}

        shown = wait_for(attention, 40, what="attention in status")
        assert str(folder) in str(shown["attention"])
        assert "Operation not permitted" in str(shown["attention"])
        text = env.cli("status").stdout
        assert "DISK FULL" not in text and "WRITE REFUSED" in text and str(folder) in text
        waited = env.cli("wait", run_id, "--timeout", "30")
        assert waited.returncode == 2, (waited.stdout, waited.stderr)
        assert env.record(run_id).get("state") == "running"  # nothing written meanwhile
    finally:
        _chattr("-i", folder)
    env.wait_done(run_id, 10)
    flag = json.loads((env.tmp / "results" / "perm" / "finish.flag").read_text())
    assert flag["status"] == "succeeded"
    assert env.status(run_id)["attention"] is None
    assert env.cli("wait", run_id).returncode == 0
    assert "WRITE REFUSED" not in env.cli("status").stdout


def test_lint_refuses_a_config_whose_folder_will_not_take_the_fixed_copy_as_admission_does(
    env: Env,
) -> None:
    """The copy admission writes beside the config, asked in lint too, with the same words
    (walk97 F5: lint said ok, admission refused the run at once); asked without leaving a
    file in the folder. Once the folder takes writes, lint says ok."""
    import yaml

    from conftest import in_process

    folder = env.codebase / "roconf"
    folder.mkdir()
    config = yaml.safe_load((env.codebase / env.config("ro")).read_text())
    config["ajet"]["trainer_common"]["val_before_train"] = False  # a fix ajetd makes
    (folder / "ro.yaml").write_text(yaml.safe_dump(config))
    path = env.blueprint("ro", config="roconf/ro.yaml", ajetd="gpus: 0")
    if not _chattr("+i", folder):
        pytest.skip("chattr +i is not supported here")
    try:
        out = env.cli("lint", str(path))
        said = out.stdout + out.stderr
        assert out.returncode == 2, said
        expected = f"{folder} does not take it: Operation not permitted; make that folder writable"
        assert expected in said and "val_before_train" in said, said
        daemon = in_process(env, liveness=60)
        (env.home / "inbox" / "ro.md").write_bytes(path.read_bytes())
        daemon.tick(time.time())
        (run,) = daemon.runs.values()
        assert run.status is not None and run.status.value == "rejected", run
        assert expected in run.reason, run.reason
        assert sorted(p.name for p in folder.iterdir()) == ["ro.yaml"]
    finally:
        _chattr("-i", folder)
    assert env.cli("lint", str(path)).returncode == 0
