"""A run whose val file a live run already writes, and that ajetd cannot give a file of its own
(its command passes no --conf for a config copy), waits in the queue with the reason until
that run ends (it was rejected: it is not an invalid blueprint, only not yet), then runs and
reads only its own validation lines. Runs sharing a file go first come, first served. Real
tmux, real fakejet trials, the loop driven in-process."""

from __future__ import annotations

import json

import yaml

from ajetd.core.model import State
from conftest import Env
from loopkit import Loop


def _sharing(env: Env, name: str, shared: str) -> str:
    """A config writing the val file `shared`, run by a script (no --conf in the command)."""
    conf = env.config(name, steps=4)
    data = yaml.safe_load((env.codebase / conf).read_text())
    data["ajet"]["trainer_common"]["val_print_to_markdown_file_path"] = shared
    (env.codebase / conf).write_text(yaml.safe_dump(data))
    (env.codebase / f"{name}.sh").write_text(f"exec python -m fakejet.launcher --conf {conf}\n")
    return conf


def _submit_sharing(env: Env, loop: Loop, name: str, shared: str) -> str:
    conf = _sharing(env, name, shared)
    return loop.submit(env.blueprint(name, config=conf, command=f"bash {name}.sh", ajetd="gpus: 0"))


def test_runs_sharing_a_val_file_without_conf_wait_their_turn(env: Env, loop: Loop) -> None:
    first_conf = env.config("shared", forever=True, step_time=0.05)  # lives until stopped
    first = loop.submit(env.blueprint("shared", config=first_conf, ajetd="gpus: 0"))
    shared = "./saved_val_result/shared.md"
    val_file = env.codebase / shared
    loop.until(lambda: val_file.exists() and val_file.stat().st_size, "a first validation")
    second, third = (_submit_sharing(env, loop, name, shared) for name in ("second", "third"))
    loop.run_for(10)
    for run_id, ahead in ((second, first), (third, first)):
        run = loop.run(run_id)
        assert run.state is State.QUEUED and not run.trials, run
        assert f"waiting for run {ahead} to end: it writes the same val file" in run.reason
    status = json.loads(env.cli("status", second, "--json").stdout)
    assert status["state"] == "queued" and f"run {first}" in status["reason"]
    # an admitted run before its first trial: the command its blueprint names (README)
    assert status["trial"] == 0 and status["command"] == "bash second.sh", status
    assert any(f"live run {first}" in w for w in status["warnings"])
    env.cli("stop", first, "--no-wait")  # files the request (exit 1: no daemon process)
    loop.until_done(first)
    flag = loop.until_done(second)  # its turn came; the third waits for it now
    assert flag["status"] == "succeeded"
    # its own validations only (every 2 of its 4 steps), none of the first run's before them
    assert [h["global_steps"] for h in loop.run(second).history] == [2, 4]
    flag = loop.until_done(third)
    assert flag["status"] == "succeeded"
    assert [h["global_steps"] for h in loop.run(third).history] == [2, 4]
    assert any(f"run {second} to end" in text for _, text in loop.events(third))
    # on the daemon's clock both (a trial's ended_at is its exit file's time, the real one:
    # the test's clock runs ahead of it, so the two did not compare)
    started, ended = loop.event_at(third, "trial 1 started"), loop.event_at(second, "run ended")
    assert started is not None and ended is not None and started >= ended
    # each run's own records copied beside its reports (walk 89: the val file stays in the
    # codebase, shared with the runs after it): none of the runs' before or after it
    whole = val_file.read_bytes()
    for run_id, name in ((second, "second"), (third, "third")):
        run = loop.run(run_id)
        assert run.val_read.pos is not None
        mine = whole[run.val_offset : run.val_read.pos]
        result = env.tmp / "results" / name
        assert mine and (result / "val_records.md").read_bytes() == mine, name
        assert "records copied to `val_records.md` here" in (result / "results.md").read_text()
    assert (env.tmp / "results" / "second" / "val_records.md").read_bytes() != whole
