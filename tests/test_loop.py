"""The loop driven in this process on a fake clock (tests/loopkit.py): time limits, grace
periods, deep-check backoff, hang windows, plateaus and relaunches, each at its exact moment of
fake time, against a real tmux server and real trial processes. The end-to-end tests with a
daemon process (test_daemon_e2e.py) stay for the contract."""

from __future__ import annotations

import json
from pathlib import Path

from ajetd.core.model import State, StopCause
from conftest import Env
from loopkit import Loop

STUBBORN = "trap '' INT TERM; sleep 1000"  # ignores INT and TERM (as does its sleep)


def test_time_limit_stops_at_its_moment_and_escalates_after_each_grace(
    env: Env, loop: Loop
) -> None:
    bp = env.blueprint("limit", command=STUBBORN, max_time="2m", ajetd="gpus: 0")
    run_id = loop.submit(bp)
    t0 = loop.t0(run_id) if loop.started(run_id) else 0.0
    loop.run_for(119.9)
    run = loop.run(run_id)
    assert run.state is State.RUNNING and run.stop_cause is None and not run.signals_sent
    loop.sleep()  # the daemon's own wake-up: exp_max_time
    assert loop.clock() == t0 + 120
    run = loop.run(run_id)
    assert run.stop_cause is StopCause.TIME_LIMIT and run.signals_sent == ("INT",)
    loop.run_for(29.9)  # grace_int 30 s
    assert loop.run(run_id).signals_sent == ("INT",)
    loop.sleep()
    assert loop.clock() == t0 + 150 and loop.run(run_id).signals_sent == ("INT", "TERM")
    loop.run_for(14.9)  # grace_term 15 s
    assert loop.run(run_id).signals_sent == ("INT", "TERM")
    loop.sleep()
    assert loop.clock() == t0 + 165
    flag = loop.until_done(run_id)  # SIGKILL ends it in real time
    assert flag["status"] == "time_limit" and flag["exit_code"] == 137
    assert flag["reason"] == "stopped at exp_max_time (2m); data kept"
    assert (Path(loop.run(run_id).result_dir) / "results.md").exists()
    assert loop.event_at(run_id, "stopping: time_limit") == t0 + 120
    assert loop.event_at(run_id, "sent SIGTERM") == t0 + 150
    assert loop.event_at(run_id, "sent SIGKILL") == t0 + 165


def _val_file(env: Env, name: str) -> Path:
    """The val-results file env.config(name) names, relative to the codebase."""
    path = env.codebase / "saved_val_result" / f"{name}.md"
    path.parent.mkdir(exist_ok=True)
    return path


def _val_record(step: int, reward: float) -> str:
    return f"{{'global_steps': {step}, 'mean_reward': {reward}, 'task_pass_rate@1': {reward}}}\n"


def test_deep_checks_follow_the_seed_backoff_and_start_again_on_news(env: Env, loop: Loop) -> None:
    bp = env.blueprint("deep", command="sleep 1000", max_time="2h", ajetd="gpus: 0")
    run_id = loop.submit(bp)
    t0 = loop.t0(run_id) if loop.started(run_id) else 0.0
    dues: list[float] = []  # each next deep check published in daemon.json (seconds from t0)
    checks: list[float] = []  # when each was replaced: when a deep check happened

    def seen() -> None:
        due = loop.deep_check_due(run_id)
        if due is not None and (not dues or round(due - t0, 1) != dues[-1]):
            if dues:
                checks.append(round(loop.clock() - t0, 1))
            dues.append(round(due - t0, 1))

    loop.run_for(300, seen)  # 30 s, then 1, 2 min
    assert dues == [30, 90, 210, 450] and checks == [30, 90, 210]
    _val_file(env, "deep").write_text(_val_record(20, 0.5))  # news, at 300
    loop.run_for(2400 - 300, seen)  # the check due at 450 finds it: 30 s again, then 1, 2 ...
    assert checks == [30, 90, 210, 450, 480, 540, 660, 900, 1380, 2340]
    assert dues == [*checks, 2340 + 960]  # 16 min is the longest interval
    assert loop.run(run_id).metrics["mean_reward"] == 0.5
    assert loop.event_at(run_id, "validation: 1 record(s)") == t0 + 450


def test_a_silent_run_is_flagged_after_its_hang_window_and_stopped_after_a_second(
    env: Env, loop: Loop
) -> None:
    rule = "gpus: 0\nhang: {window: 10m, action: stop}"
    run_id = loop.submit(env.blueprint("silent", command="sleep 1000", ajetd=rule, max_time="2h"))
    t0 = loop.t0(run_id) if loop.started(run_id) else 0.0  # its banner is its last output
    loop.run_for(599.9)
    assert loop.run(run_id).attention is None
    loop.sleep()
    assert loop.clock() == t0 + 600
    assert str(loop.run(run_id).attention).startswith("no output for 10m or more (since ")
    loop.run_for(599.9)
    assert loop.run(run_id).stop_cause is None
    loop.sleep()
    assert loop.clock() == t0 + 1200 and loop.run(run_id).stop_cause is StopCause.HANG
    flag = loop.until_done(run_id)  # SIGINT ends `sleep` in real time
    assert flag["status"] == "failed"
    assert flag["reason"].startswith("stopped by the hang rule: no output for 20m")


GATED = "while [ ! -e {gate} ]; do sleep 0.05; done; echo {text}"  # prints once let go


def _let_print(loop: Loop, run_id: str, gate: Path, text: str) -> None:
    """Let the trial print `text` now (real time) and wait until a pass has read it."""
    gate.touch()
    log = Path(loop.run(run_id).result_dir) / "logs" / "trial-1.log"
    printed = lambda: text in (line.strip() for line in log.read_text().splitlines())  # noqa: E731
    loop.until(printed, f"{text!r} in the log")  # a line of its own: not the banner's command
    loop.turn()  # a pass that surely saw it (the line may land just after a pass's look)


def test_new_output_restarts_the_hang_window_on_the_daemons_clock(env: Env, loop: Loop) -> None:
    one, two = env.tmp / "one", env.tmp / "two"
    command = f"{GATED.format(gate=one, text='loading')}; {GATED.format(gate=two, text='ready')}"
    command += "; sleep 1000"
    rule = "gpus: 0\nhang: {window: 10m}"  # action: attention
    run_id = loop.submit(env.blueprint("quiet", command=command, ajetd=rule, max_time="2h"))
    t0 = loop.t0(run_id) if loop.started(run_id) else 0.0
    loop.run_for(400)
    _let_print(loop, run_id, one, "loading")  # output at 400: silent from there
    loop.run_for(599.9)
    assert loop.run(run_id).attention is None  # 600 s after its start, 200 after its output
    loop.sleep()
    assert loop.clock() == t0 + 1000 and loop.run(run_id).attention
    loop.run_for(100)
    _let_print(loop, run_id, two, "ready")  # new output clears the flag at once
    assert loop.run(run_id).attention is None
    assert loop.event_at(run_id, "attention: cleared") == t0 + 1100


def test_busy_gpus_keep_a_silent_run_from_being_flagged(env: Env, loop: Loop) -> None:
    from ajetd.adapters.nvml import FakeProbe

    gpus = env.tmp / "gpus.json"
    busy, idle = {"index": 0, "utilization": 90}, {"index": 0, "utilization": 0}
    gpus.write_text(json.dumps({"gpus": [busy], "samples": [{"after_s": 300, "gpus": [idle]}]}))
    loop.daemon.gpus.probe = FakeProbe(gpus, clock=loop.clock)  # busy for 300 s of fake time
    rule = "gpus: 1\nhang: {window: 10m}"
    run_id = loop.submit(env.blueprint("gpu", command="sleep 1000", ajetd=rule, max_time="2h"))
    t0 = loop.t0(run_id) if loop.started(run_id) else 0.0
    assert loop.run(run_id).gpu_ids == (0,)
    loop.run_for(600 + 289)  # the last busy sample is at 290 (one every 10 s while young)
    assert loop.run(run_id).attention is None
    loop.sleep()
    assert loop.clock() == t0 + 890
    assert ", GPUs idle (since " in str(loop.run(run_id).attention)
