"""A run that prints tens of GB an hour holds no other run's end (walk 83): no step of the
daemon's loop reads a run's whole output. A NeMo-RL run's metrics are read from its log while
it runs, on at once where the log is a tick's read ahead (not at its deep checks alone), its
lines without a shape's word passed over in C; its end reads only the remainder, at most
`END_READ_BYTES`. Before: 155 MB of Ray-prefixed lines were read line by line in Python at its
end (34 s here, a minute on the walker's loaded machine), with every other run's exit, time
limit and hang rule waiting."""

from __future__ import annotations

import time
from pathlib import Path

from conftest import Env, wait_for

PROMPT_S = 5.0  # an end on record this soon after its exit file (0.05 s here; 34 s before)


def _exited_at(env: Env, run_id: str) -> float:
    exit_file = env.home / "runs" / run_id / "trial-1.exit"
    wait_for(exit_file.exists, timeout=120, what=f"run {run_id} to exit")
    return exit_file.stat().st_mtime


def _recorded_late(env: Env, run_id: str, exited: float) -> float:
    """How long after `exited` the run's end was on record (polled every 20 ms)."""
    wait_for(lambda: env.record(run_id).get("state") == "done", timeout=300, what="its end")
    return time.time() - exited


def test_a_flooding_run_holds_no_end(env: Env) -> None:
    env.start_daemon()
    command = (  # 10 x 5000 lines of 256 bytes a step, 6 steps: 77 MB in seconds
        "python examples/run_grpo.py --config examples/configs/grpo_fake.yaml "
        "grpo.max_num_steps=6 grpo.val_period=2 fake.flood=10"
    )
    config = "examples/configs/grpo_fake.yaml"
    flood = env.blueprint("flood", config=config, command=command, ajetd="gpus: 0")
    gate = env.tmp / "quiet-may-end"
    quiet = env.blueprint("quiet", max_time="10m", ajetd="gpus: 0")
    env.config("quiet", steps=2, step_time=0.01, hold_until=str(gate))
    quiet_id = env.submit(quiet)
    flood_id = env.submit(flood)
    log: Path = env.tmp / "results" / "flood" / "logs" / "trial-1.log"
    wait_for(lambda: env.record(quiet_id).get("state") == "running", what="quiet running")
    wait_for(lambda: log.exists() and log.stat().st_size > 20 << 20, timeout=120, what="the flood")
    gate.touch()  # the quiet run ends while the other floods
    quiet_late = _recorded_late(env, quiet_id, _exited_at(env, quiet_id))
    flood_late = _recorded_late(env, flood_id, _exited_at(env, flood_id))
    assert quiet_late < PROMPT_S and flood_late < PROMPT_S, (quiet_late, flood_late)
    status = env.wait_done(flood_id)
    assert status["status"] == "succeeded", status
    record = env.record(flood_id)  # every record read, none said unread
    assert [h["accuracy"] for h in record["history"]] == [0.34, 0.38, 0.42], record["history"]
    assert not [w for w in record["warnings"] if w.startswith("metrics:")], record["warnings"]
