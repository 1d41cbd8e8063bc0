"""A run's folder can be read whole the obvious way (`cat runs/<id>/*`, `head *`, a script
reading every file of it) during and after the run: its trials' FIFOs live in `.pipes/`
(walk87 F14: three FIFOs per trial among its files blocked such a reader for ever)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from conftest import Env, wait_for
from loopkit import Loop


def test_no_fifo_among_a_run_folders_files(env: Env, loop: Loop) -> None:
    run_id = loop.submit(env.blueprint("plain", command="echo hi", ajetd="gpus: 0"))
    loop.until_done(run_id)
    folder = env.home / "runs" / run_id
    fifos = [p.name for p in folder.iterdir() if stat.S_ISFIFO(p.lstat().st_mode)]
    assert fifos == [], fifos
    assert sorted(p.name for p in (folder / ".pipes").iterdir()) == [
        "trial-1.log.check",
        "trial-1.log.checked",
        "trial-1.wake",
    ]
    read = subprocess.run(
        f"cat {folder}/* > /dev/null", shell=True, timeout=10, check=False, capture_output=True
    )
    assert read.returncode == 0, read.stderr


def test_an_ended_trials_fifos_go_once_its_writer_is_gone(env: Env) -> None:
    """walk87 F14: the FIFOs stayed in `.pipes/` for ever. A relaunch's earlier trial loses
    its log's writer when the pane is respawned, and the last trial's when the session is
    closed: then, and only then, they are removed, and the folder with them."""
    go = env.tmp / "trial-2-may-end"
    config = env.config("again", prompt=True, hold_until=str(go))  # wandb's prompt: relaunched
    bp = env.blueprint("again", config=config, ajetd="gpus: 0\nkeep_session: 1s")
    env.start_daemon()
    run_id = env.submit(bp)
    pipes = env.home / "runs" / run_id / ".pipes"

    def names() -> list[str]:
        return sorted(p.name for p in pipes.iterdir()) if pipes.exists() else []

    wait_for(
        lambda: names() == ["trial-2.log.check", "trial-2.log.checked", "trial-2.wake"],
        timeout=30,
        what="trial 1's FIFOs removed while trial 2 runs",
    )
    assert env.record(run_id)["state"] == "running"
    assert all(stat.S_ISFIFO((pipes / n).lstat().st_mode) for n in names())  # never a file
    go.touch()
    assert env.wait_done(run_id)["status"] == "succeeded"
    wait_for(lambda: not pipes.exists(), timeout=30, what="the FIFOs gone with the session")


def test_fifos_still_open_are_kept(tmp_path: Path) -> None:
    """`pipes.remove_idle` removes a trial's FIFOs only when no process holds any of them
    open (its writer may open one again by name while it lives), never the live trial's,
    never a file that is no FIFO."""
    from ajetd.adapters import pipes

    folder = tmp_path / ".pipes"
    folder.mkdir()
    for name in ("trial-1.log.check", "trial-1.log.checked", "trial-1.wake", "trial-2.wake"):
        os.mkfifo(folder / name)
    (folder / "trial-3.note").write_text("not a pipe")
    held = os.open(folder / "trial-1.log.checked", os.O_RDONLY | os.O_NONBLOCK)  # a writer
    try:
        assert not pipes.remove_idle(tmp_path, live_trial=2)
        assert len(list(folder.iterdir())) == 5
    finally:
        os.close(held)
    assert pipes.remove_idle(tmp_path, live_trial=2)
    assert sorted(p.name for p in folder.iterdir()) == ["trial-2.wake", "trial-3.note"]
    (folder / "trial-3.note").unlink()
    assert pipes.remove_idle(tmp_path, live_trial=None) and not folder.exists()
