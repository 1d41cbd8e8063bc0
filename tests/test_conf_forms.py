"""The `--conf` forms people write, end to end (a real daemon): the copy of the config that
holds ajetd's fixes and a blueprint's yaml_overrides must be what the program opens, and a fix
that cannot reach it ends the run as any end does."""

from __future__ import annotations

import yaml

from conftest import Env, wait_for


def test_a_conf_under_the_home_named_with_a_tilde_runs_its_fixed_copy(daemon_env: Env) -> None:
    """`--conf ~/x.yaml` is expanded by the shell: the copy's path must be too (a quoted
    `'~/x.ajetd-ID.yaml'` is a file named `~` in the codebase, which the program cannot open)."""
    env = daemon_env
    config = env.codebase / env.config("mine")  # the daemon's and the trial's HOME: env.tmp
    data = yaml.safe_load(config.read_text())
    data["ajet"]["execute_test"] = True  # a fix the copy holds
    config.write_text(yaml.safe_dump(data))
    named = "~/codebase/configs/mine.yaml"
    command = f"python -m fakejet.launcher --conf {named} --autokill"
    run_id = env.submit(env.blueprint("mine", config=named, command=command))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status["reason"]
    assert status["metrics"]["global_steps"] == 4
    copy = yaml.safe_load((config.parent / f"mine.ajetd-{run_id}.yaml").read_text())
    assert copy["ajet"]["execute_test"] is False


def test_a_cd_before_an_absolute_conf_still_takes_the_overrides(daemon_env: Env) -> None:
    """A `cd` moves a relative `--conf`, not an absolute one: the copy is pointed at as
    without it (a `cd` anywhere in the command once refused every yaml_overrides)."""
    env = daemon_env
    config = env.codebase / env.config("cdabs")
    command = f"cd {env.codebase} && python -m fakejet.launcher --conf {config} --autokill"
    bp = env.blueprint(
        "cdabs", config=str(config), command=command, ajetd="yaml_overrides: [fakejet.steps=6]"
    )
    run_id = env.submit(bp)
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status["reason"]
    assert status["metrics"]["global_steps"] == 6
    assert status["command"].endswith(  # (--autokill taken out: autokill: protect)
        f"--conf {config.parent}/cdabs.ajetd-{run_id}.yaml"
    )


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
