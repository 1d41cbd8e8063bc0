"""The `--conf` forms people write, end to end (a real daemon): the copy of the config that
holds ajetd's fixes and a blueprint's yaml_overrides must be what the program opens, and a fix
that cannot reach it ends the run as any end does."""

from __future__ import annotations

import yaml

from conftest import Env, wait_for


def test_a_fix_that_cannot_reach_what_runs_ends_the_run_as_any_end(daemon_env: Env) -> None:
    """A restart fix whose copy `--conf` does not name ends the run failed: its on_finish
    hook runs, as at every end (that end once skipped the hooks and the place's cleanup)."""
    env = daemon_env
    config = env.codebase / env.config("unreach", oom_above_micro_batch=2)
    data = yaml.safe_load(config.read_text())
    data["actor_rollout_ref"] = {"actor": {"ppo_micro_batch_size_per_gpu": 8}}
    config.write_text(yaml.safe_dump(data))
    sink = env.tmp / "hook.out"
    command = "D=configs; python -m fakejet.launcher --conf $D/unreach.yaml --autokill"
    ajetd = (
        "allow_fixes: {ppo_micro_batch_size_per_gpu: {min: 1}}\n"
        f"on_finish: 'echo $AJETD_STATUS > {sink}'"
    )
    run_id = env.submit(env.blueprint("unreach", config=str(config), command=command, ajetd=ajetd))
    status = env.wait_done(run_id)
    assert status["status"] == "failed" and status["trials"] == 1, status["reason"]
    assert "cannot reach what runs" in status["reason"], status["reason"]
    said = wait_for(lambda: sink.exists() and sink.read_text(), what="on_finish")
    assert said.split() == ["failed"]
