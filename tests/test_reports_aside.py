"""Reports held by a result dir that stays full are written to the run's folder in the home
after a grace period (`--reports-grace`), said where, and `ajetd wait` ends. Real daemon, real
tmux, a real full disk (a small tmpfs: the tests run as root, as CI does)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from conftest import Env, fill, wait_for


def test_reports_a_full_result_dir_holds_past_the_grace_go_to_the_runs_folder(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The result dir stays full after the run ended: its reports waited for ever, `ajetd wait`
    exited 2 at every call and every `status` printed the folder's DISK FULL line (walk88
    F9). Past the grace they are written to `$AJETD_HOME/runs/<id>/`, the run says where
    (warnings, journal, `reports_dir`), its attention clears and `wait` ends."""
    disk = tmpfs(env.tmp / "small", "256k")
    go = env.tmp / "go"
    env.start_daemon("--liveness", "0.5", "--reports-grace", "2")
    command = f"while [ ! -e {go} ]; do sleep 0.05; done"
    run_id = env.submit(
        env.blueprint("aside", command=command, result=str(disk / "out"), ajetd="gpus: 0")
    )
    wait_for(lambda: env.record(run_id).get("state") == "running", 30, "the run to start")
    fill(disk)
    go.touch()
    wait_for(lambda: env.record(run_id).get("attention"), 30, "the reports to be held")
    status = env.wait_done(run_id, 30)
    folder = env.home / "runs" / run_id
    assert status["status"] == "succeeded" and status["attention"] is None, status
    assert status["reports_dir"] == str(folder), status
    assert any(str(folder) in w and "stayed full" in w for w in status["warnings"]), status
    flag = json.loads((folder / "finish.flag").read_text())
    assert flag["status"] == "succeeded"
    assert (folder / "results.md").exists() and not (disk / "out" / "finish.flag").exists()
    waited = env.cli("wait", run_id, "--timeout", "10")
    assert waited.returncode == 0, (waited.stdout, waited.stderr)
    assert "cannot write to the result dir" not in env.cli("status").stdout
