"""A run's folder can be read whole the obvious way (`cat runs/<id>/*`, `head *`, a script
reading every file of it) during and after the run: its trials' FIFOs live in `.pipes/`
(walk87 F14: three FIFOs per trial among its files blocked such a reader for ever)."""

from __future__ import annotations

import stat
import subprocess

from conftest import Env
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
