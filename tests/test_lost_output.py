"""Output a full result dir took from a trial's log is said (warnings, journal, results.md),
and results.md's last lines are the program's last lines (as its pane kept them), not the
log's cut end. Real daemon, real tmux, a real full disk (a small tmpfs: CI runs as root)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from conftest import Env, wait_for

LAST = "TRAINING-FINISHED-LAST-LINE"


def test_output_a_full_result_dir_lost_at_the_trials_end_is_said_and_its_tail_kept(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The program fills its own result dir, then prints its last lines and exits 0: the log
    ended mid-flood, results.md's `Last 50 lines` showed the flood as if it were the end, and
    nothing said output was lost (walk88 F8)."""
    disk = tmpfs(env.tmp / "small", "1m")
    result = disk / "out"
    hog = disk / "hog.bin"
    command = f"head -c 2000000 /dev/zero > {hog} 2>/dev/null; seq 1 3000; echo {LAST}; exit 0"
    env.start_daemon("--liveness", "0.5")
    run_id = env.submit(env.blueprint("lost", command=command, result=str(result), ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("attention"), 30, "the reports to wait for room")
    hog.unlink()
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    log = result / "logs" / "trial-1.log"
    assert LAST not in log.read_text().splitlines()  # the disk took it (the banner quotes it)
    said = [w for w in status["warnings"] if "trial 1's output after byte" in w]
    assert said and str(log) in said[0] and "missing" in said[0], status["warnings"]
    results = (result / "results.md").read_text()
    assert said[0] in results
    last = results[results.index("Last 50 lines") :]
    assert LAST in [line.strip() for line in last.splitlines()], last[:2000]
    events = (env.home / "runs" / run_id / "events.jsonl").read_text().splitlines()
    assert any(said[0] == json.loads(e)["event"] for e in events)
