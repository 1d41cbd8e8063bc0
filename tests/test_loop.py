"""The loop driven in this process on a fake clock (tests/loopkit.py): time limits, grace
periods, deep-check backoff, hang windows, plateaus and relaunches, each at its exact moment of
fake time, against a real tmux server and real trial processes. The end-to-end tests with a
daemon process (test_daemon_e2e.py) stay for the contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ajetd.core.model import State, StopCause
from ajetd.daemon.housekeep import PUBLISH_EVERY_S
from ajetd.daemon.loop import SUPERVISE_ALL_S
from conftest import Env, wait_for
from loopkit import SHORTEST_SLEEP_S, FakeClock, Loop

STUBBORN = "trap '' INT TERM; sleep 1000"  # ignores INT and TERM (as does its sleep)


def test_time_limit_stops_at_its_moment_and_escalates_after_each_grace(
    env: Env, loop: Loop
) -> None:
    bp = env.blueprint("limit", command=STUBBORN, max_time="2m", ajetd="gpus: 0")
    run_id = loop.submit(bp)
    loop.started(run_id)
    t0 = loop.t0(run_id)  # exp_max_time counts from here
    loop.run_until(t0 + 119.9)
    run = loop.run(run_id)
    assert run.state is State.RUNNING and run.stop_cause is None and not run.signals_sent
    loop.reach(t0 + 120)  # the daemon wakes for exp_max_time itself
    run = loop.run(run_id)
    assert run.stop_cause is StopCause.TIME_LIMIT and run.signals_sent == ("INT",)
    assert loop.on_time(run_id, "stopping: time_limit", t0 + 120)
    began = loop.run(run_id).stop_began_at or 0.0
    loop.run_until(began + 29.9)  # grace_int 30 s
    assert loop.run(run_id).signals_sent == ("INT",)
    loop.reach(began + 30)
    assert loop.run(run_id).signals_sent == ("INT", "TERM")
    loop.run_until(began + 44.9)  # grace_term 15 s
    assert loop.run(run_id).signals_sent == ("INT", "TERM")
    loop.reach(began + 45)
    flag = loop.until_done(run_id)  # SIGKILL ends it in real time
    assert flag["status"] == "time_limit" and flag["exit_code"] == 137
    assert flag["reason"] == (  # `sleep 1000` printed nothing and wrote no val record
        "stopped at exp_max_time (2m) with no output at all from its program; "
        "no validation record either: no data to keep"
    )
    assert (Path(loop.run(run_id).result_dir) / "results.md").exists()
    assert loop.on_time(run_id, "sent SIGTERM", began + 30)
    assert loop.on_time(run_id, "sent SIGKILL", began + 45)


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
    loop.started(run_id)
    t0 = loop.t0(run_id)  # the deep checks count from here
    dues: list[float] = []  # each next deep check published in daemon.json (seconds from t0)
    checks: list[float] = []  # when each was replaced: when a deep check happened

    def seen() -> None:
        due = loop.deep_check_due(run_id)
        if due is not None and (not dues or round(due - t0, 1) != dues[-1]):
            if dues:
                checks.append(round(loop.clock() - t0, 1))
            dues.append(round(due - t0, 1))

    loop.run_until(t0 + 300, seen)  # 30 s, then 1, 2 min
    assert dues == [30, 90, 210, 450] and checks == [30, 90, 210]
    _val_file(env, "deep").write_text(_val_record(20, 0.5))  # news, at 300
    loop.run_until(t0 + 2400, seen)
    # not left for the check due at 450 (at 16 min, status would show metrics that old): the
    # file's new size is seen at the run's next full look (at most SUPERVISE_ALL_S later) and
    # read then; that is news: 30 s again, then 1, 2 ...
    read = loop.event_at(run_id, "validation: 1 record(s)")
    assert read is not None and 300 < read - t0 <= 300 + SUPERVISE_ALL_S
    r = round(read - t0, 1)
    expected = [30, 90, 210, r, r + 30, r + 90, r + 210, r + 450, r + 930, r + 1890]
    assert checks == pytest.approx(expected[: len(checks)], abs=0.15)  # (each rounded to 0.1)
    assert len(checks) >= 8  # 16 min is the longest interval:
    assert checks[-1] + 960 == pytest.approx(dues[-1], abs=0.15)
    assert loop.run(run_id).metrics["mean_reward"] == 0.5
    assert loop.deep_check_due(run_id) is not None
    _val_file(env, "deep").write_text(_val_record(20, 0.5) + "{'global_steps'")  # half a line
    late = loop.clock()
    loop.run_for(3 * SUPERVISE_ALL_S, seen)  # its size moved once: one read, no record, no news
    assert [t for t in checks if t > late - t0] == []


def test_deep_checks_due_close_together_share_one_pass(env: Env, loop: Loop) -> None:
    """A run whose check is due within a tenth of its interval joins another run's due check
    (one pass for both); a run alone keeps its exact moment (the test above)."""
    first = loop.submit(
        env.blueprint("first", command="sleep 1000", max_time="2h", ajetd="gpus: 0")
    )
    loop.started(first)
    t0 = loop.t0(first)
    loop.run_until(t0 + 2)
    second = loop.submit(
        env.blueprint("second", command="sleep 1000", max_time="2h", ajetd="gpus: 0")
    )
    loop.started(second)
    t1 = loop.t0(second)
    assert 2 <= t1 - t0 < 3  # its own check would be due at t1 + 30, within 3 s of the first's
    loop.reach(t0 + 30)
    assert loop.deep_check_due(first) == pytest.approx(t0 + 90, abs=0.1)
    assert loop.deep_check_due(second) == pytest.approx(t0 + 90, abs=0.1)  # checked with it


def test_a_silent_run_is_flagged_after_its_hang_window_and_stopped_after_a_second(
    env: Env, loop: Loop
) -> None:
    fired = env.tmp / "fired"
    rule = f"gpus: 0\nhang: {{window: 10m, action: stop}}\non_attention: 'echo x >> {fired}'"
    run_id = loop.submit(env.blueprint("silent", command="sleep 1000", ajetd=rule, max_time="2h"))
    seen = loop.started(run_id)  # its banner is its last output, seen by then
    t0 = loop.t0(run_id)  # silence counts from its start or the pass that saw the banner
    loop.run_until(t0 + 599.9)
    assert loop.run(run_id).attention is None
    loop.reach(seen + 600)
    assert str(loop.run(run_id).attention).startswith("no output for 10m or more (since ")
    flagged = loop.event_at(run_id, "attention: no output for 10m")
    assert flagged is not None and t0 + 600 <= flagged <= seen + 600 + SHORTEST_SLEEP_S
    loop.run_until(flagged + 599.9)
    assert loop.run(run_id).stop_cause is None
    loop.reach(flagged + 600)
    assert loop.run(run_id).stop_cause is StopCause.HANG
    assert loop.on_time(run_id, "stopping: hang", flagged + 600)
    flags = [at for at, text in loop.events(run_id) if text.startswith("attention: no output")]
    assert flags == [flagged]  # raised once, though every pass since saw the silence
    flag = loop.until_done(run_id)  # SIGINT ends `sleep` in real time
    assert flag["status"] == "failed"
    assert flag["reason"].startswith("stopped by the hang rule: no output for 20m")
    loop.until(fired.exists, "the on_attention hook")
    assert fired.read_text() == "x\n"  # its hook ran once


GATED = "while [ ! -e {gate} ]; do sleep 0.05; done; echo {text}"  # prints once let go


def _let_print(loop: Loop, run_id: str, gate: Path, text: str) -> float:
    """Let the trial print `text` now (real time) and wait until a pass has read it; when."""
    gate.touch()
    log = Path(loop.run(run_id).result_dir) / "logs" / "trial-1.log"
    printed = lambda: text in (line.strip() for line in log.read_text().splitlines())  # noqa: E731
    loop.until(printed, f"{text!r} in the log")  # a line of its own: not the banner's command
    loop.turn()  # a pass that surely saw it (the line may land just after a pass's look)
    return loop.clock()


def test_new_output_restarts_the_hang_window_on_the_daemons_clock(env: Env, loop: Loop) -> None:
    one, two = env.tmp / "one", env.tmp / "two"
    command = f"{GATED.format(gate=one, text='loading')}; {GATED.format(gate=two, text='ready')}"
    command += "; sleep 1000"
    rule = "gpus: 0\nhang: {window: 10m}"  # action: attention
    run_id = loop.submit(env.blueprint("quiet", command=command, ajetd=rule, max_time="2h"))
    t0 = loop.started(run_id)
    loop.run_until(t0 + 400)
    said = _let_print(loop, run_id, one, "loading")  # output at 400: silent from there
    loop.run_until(said + 599.9)
    assert loop.run(run_id).attention is None  # 1000 s after its start, 600 after its output
    loop.reach(said + 600)
    assert loop.on_time(run_id, "attention: no output for 10m", said + 600)
    loop.run_for(100)
    again = _let_print(loop, run_id, two, "ready")  # new output clears the flag at once
    assert loop.run(run_id).attention is None
    assert loop.event_at(run_id, "attention: cleared") == again


def test_busy_gpus_keep_a_silent_run_from_being_flagged(env: Env, loop: Loop) -> None:
    from ajetd.adapters.nvml import FakeProbe

    gpus = env.tmp / "gpus.json"
    busy, idle = {"index": 0, "utilization": 90}, {"index": 0, "utilization": 0}
    gpus.write_text(json.dumps({"gpus": [busy], "samples": [{"after_s": 300, "gpus": [idle]}]}))
    loop.daemon.gpus.probe = FakeProbe(gpus, clock=loop.clock)  # busy for 300 s of fake time
    rule = "gpus: 1\nhang: {window: 10m}"
    run_id = loop.submit(env.blueprint("gpu", command="sleep 1000", ajetd=rule, max_time="2h"))
    loop.started(run_id)
    t0 = loop.t0(run_id)  # placed and sampled then, and every 10 s while young
    assert loop.run(run_id).gpu_ids == (0,)
    loop.run_until(t0 + 600 + 289.9)  # the last busy sample is at 290
    assert loop.run(run_id).attention is None
    loop.run_until(t0 + 890 + 2 * SHORTEST_SLEEP_S)  # (each sample, too, may be that late)
    assert ", GPUs idle (since " in str(loop.run(run_id).attention)
    flagged = loop.event_at(run_id, "attention: no output for 10m")
    assert flagged is not None and t0 + 890 <= flagged <= t0 + 890 + 2 * SHORTEST_SLEEP_S


def test_a_plateau_late_in_the_run_stops_it(env: Env, loop: Loop) -> None:
    rule = "gpus: 0\nplateau: {metric: mean_reward, patience: 3, after: 0.5}"
    bp = env.blueprint("flat", command="sleep 1000", max_time="1h", ajetd=rule)
    records = [_val_record(20 * i, r) for i, r in enumerate([0.5, 0.6, 0.6, 0.602, 0.6])]
    run_id = loop.submit(bp)
    loop.started(run_id)
    t0 = loop.t0(run_id)
    _val_file(env, "flat").write_text("".join(records))  # no gain over the last 3
    loop.run_until(t0 + 1799.9)  # before half of exp_max_time: no early stop, however flat
    run = loop.run(run_id)
    assert len(run.history) == 5 and run.stop_cause is None
    loop.reach(t0 + 1800)  # the daemon wakes for the rule's `after:` (walk90 F3: it waited
    # for the run's next full look, up to a minute later)
    assert loop.on_time(run_id, "stopping: plateau", t0 + 1800)
    flag = loop.until_done(run_id)
    assert flag["status"] == "plateau" and flag["metrics"]["mean_reward"] == 0.6
    assert flag["reason"].startswith(
        "stopped early on a plateau: mean_reward has not improved by more than 0.005 over the "
        "last 3 validations and has stopped changing (best 0.6000, last 0.6000), seen at "
    )
    # when it was seen, and from when the rule applies (`after:`): "after 52%" read as the rule
    assert flag["reason"].endswith("of exp_max_time (the rule applies from 50%)"), flag["reason"]


FAILURES = (  # a line of a retryable kind each (diagnosis/catalogue.py): one plain relaunch each
    "ConnectionRefusedError: [Errno 111] Connection refused",
    "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE)"
    " ran for 1800000 milliseconds before timing out.",
    "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.",
    "vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.",
    "ConnectionError: Could not find any running Ray instance.",
)


def _failing_program(env: Env, gates: Path) -> str:
    """Trial N waits for the file gates/N, then fails with FAILURES[N-1] once that line is in
    its log (tmux copies output with a delay; the daemon waits for it only so long); the trial
    after the last of them succeeds. A script in the codebase: the banner shows no failure."""
    script = env.codebase / "fail.sh"
    cases = "".join(f"  {n}) line={line!r};;\n" for n, line in enumerate(FAILURES, 1))
    script.write_text(
        f'while [ ! -e {gates}/"$AJETD_TRIAL" ]; do sleep 0.05; done\n'
        f'case "$AJETD_TRIAL" in\n{cases}  *) echo done; exit 0;;\nesac\n'
        'echo "$line"\n'
        'log="$AJETD_RESULT_DIR/logs/trial-$AJETD_TRIAL.log"\n'
        # silent (-s) while its log is not there yet: the pipe's writer makes it as it starts,
        # after the program may print; grep's `No such file or directory` was read as the
        # trial's own failure (missing_file, fatal: not relaunched, the thrashing guard unmet)
        'until grep -qsF -- "$line" "$log"; do sleep 0.05; done\n'
        "exit 1\n"
    )
    gates.mkdir()
    return "bash fail.sh"


def _windows(env: Env, session: str) -> list[str]:
    """A session's windows as tmux has them: name and whether tmux renames it (1) or not."""
    fmt = "#{window_name} #{automatic-rename}"
    return env.tmux("list-windows", "-t", f"={session}", "-F", fmt).stdout.split("\n")[:-1]


def test_a_retryable_failure_is_relaunched_at_once_and_counted(env: Env, loop: Loop) -> None:
    gates = env.tmp / "gates"
    program = _failing_program(env, gates)
    bp = env.blueprint("retry", command=program, ajetd="gpus: 0", max_time="2h")
    run_id = loop.submit(bp)
    loop.started(run_id)
    session = loop.run(run_id).trials[0].session
    assert _windows(env, session) == ["trial-1 0"]  # named: tmux does not rename it
    loop.run_for(300)
    (gates / "1").touch()  # trial 1 fails with connection_refused at 300
    loop.until(lambda: len(loop.run(run_id).trials) == 2, "the relaunch")
    run = loop.run(run_id)
    assert run.state is State.RUNNING and run.fixes == ("retry_connection_refused",)
    assert _windows(env, session) == ["trial-2 0"]  # the same pane, renamed with its trial
    assert run.trials[0].exit_code == 1 and run.trials[1].started_at == loop.clock()
    assert loop.event_at(run_id, "trial 1 failed; connection_refused is often transient") == (
        loop.clock()
    )
    (gates / "2").write_text("")
    (env.codebase / "fail.sh").write_text("echo done\n")  # trial 2 succeeds
    loop.started(run_id)
    flag = loop.until_done(run_id)
    assert flag["status"] == "succeeded" and flag["trials"] == 2


@pytest.mark.parametrize("apart", [0.0, 660.0])
def test_the_thrashing_guard_counts_failures_in_ten_minutes_of_fake_time(
    env: Env, loop: Loop, apart: float
) -> None:
    """Five retryable failures of different kinds: the fifth is relaunched only when the four
    before it did not all fall within ten minutes (THRASH_FAILURES in THRASH_WINDOW_S)."""
    gates = env.tmp / "gates"
    program = _failing_program(env, gates)
    rule = "gpus: 0\nmax_trials: 6"
    run_id = loop.submit(env.blueprint("thrash", command=program, ajetd=rule, max_time="3h"))
    loop.started(run_id)
    for n in range(1, len(FAILURES) + 1):
        loop.run_for(apart)
        (gates / str(n)).touch()
        loop.until(lambda n=n: loop.run(run_id).trial.number > n or loop.run(run_id).status, "it")
    if apart == 0:
        flag = loop.until_done(run_id)
        assert (flag["status"], flag["trials"]) == ("failed", 5), flag["reason"]
        assert "thrashing guard: 4 failures within 10 minutes" in flag["reason"]
    else:
        (gates / "6").touch()
        flag = loop.until_done(run_id)
        assert (flag["status"], flag["trials"]) == ("succeeded", 6), flag["reason"]


def test_a_hang_relaunch_counts_the_new_trials_silence_from_its_own_start(
    env: Env, loop: Loop
) -> None:
    rule = "gpus: 0\nmax_trials: 2\nhang: {window: 10m, action: relaunch}"
    run_id = loop.submit(env.blueprint("stuck", command="sleep 1000", ajetd=rule, max_time="2h"))
    seen = loop.started(run_id)
    loop.run_until(
        seen + 1200 + 2 * SHORTEST_SLEEP_S
    )  # stopped at 2 windows of silence; its end relaunches it
    loop.until(lambda: len(loop.run(run_id).trials) == 2, "the relaunch")
    t1, seen1 = loop.t0(run_id), loop.started(run_id)
    assert loop.run(run_id).attention is None
    loop.run_until(t1 + 599.9)  # the first trial's silence is not the second's
    assert loop.run(run_id).attention is None
    loop.run_until(seen1 + 1200 + 2 * SHORTEST_SLEEP_S)
    flags = [at for at, text in loop.events(run_id) if text.startswith("attention: no output")]
    stops = [at for at, text in loop.events(run_id) if text.startswith("stopping: hang")]
    assert len(flags) == 2 and t1 + 600 <= flags[1] <= seen1 + 600 + SHORTEST_SLEEP_S
    assert len(stops) == 2
    for flagged, stopped in zip(flags, stops, strict=True):
        assert flagged + 600 <= stopped <= flagged + 600 + SHORTEST_SLEEP_S
    flag = loop.until_done(run_id)  # max_trials 2: the second hang ends the run
    assert flag["status"] == "failed" and flag["trials"] == 2


def test_a_restarted_daemon_keeps_the_time_limit_and_the_hang_window(env: Env) -> None:
    first = Loop(env)
    rule = "gpus: 0\nhang: {window: 1m}"
    run_id = first.submit(env.blueprint("again", command="sleep 1000", ajetd=rule, max_time="2m"))
    first.started(run_id)
    t0 = first.t0(run_id)
    first.run_until(t0 + 30)
    first.close()  # the daemon goes; its run goes on in tmux
    second = Loop(env, clock=FakeClock(t0 + 50))  # 20 s later, a new daemon on the same home
    try:
        assert second.run(run_id).state is State.RUNNING
        # its last output came before the restart: the log's time says when (real time,
        # which the fake clock followed while the trial started)
        said = max(t0, (Path(second.run(run_id).result_dir) / "logs/trial-1.log").stat().st_mtime)
        second.run_until(said + 59.9)
        assert second.run(run_id).attention is None
        second.reach(said + 60)
        assert second.on_time(run_id, "attention: no output for 1m", said + 60)
        second.run_until(t0 + 119.9)
        assert second.run(run_id).stop_cause is None
        second.reach(t0 + 120)  # exp_max_time counts from the run's start, not the daemon's
        assert second.on_time(run_id, "stopping: time_limit", t0 + 120)
        assert second.until_done(run_id)["status"] == "time_limit"
    finally:
        second.close()


def test_a_restarted_daemon_drops_what_its_reading_of_the_output_no_longer_says(
    env: Env,
) -> None:
    """An open traceback read at a pause shows as unknown_traceback (provisional); the daemon
    restarts; the exception line comes: the new daemon's reading replaces the old one's (it
    was kept, first, as if ajetd had seen it outside the output)."""
    go = env.tmp / "go"
    script = env.tmp / "oom_later.py"
    script.write_text(
        "import os, sys, time\n"
        "print('Traceback (most recent call last):')\n"
        "print('  File \"train.py\", line 1, in <module>', flush=True)\n"
        "while not os.path.exists(sys.argv[1]):\n"
        "    time.sleep(0.05)\n"
        "print('torch.OutOfMemoryError: CUDA out of memory.', flush=True)\n"
        "time.sleep(1000)\n"
    )
    first = Loop(env)
    bp = env.blueprint("later", command=f"python {script} {go}", ajetd="gpus: 0")
    run_id = first.submit(bp)
    first.started(run_id)

    def kinds(loop: Loop) -> list[str]:
        trial = loop.run(run_id).trial
        return [f.kind for f in trial.live_findings] if trial else []

    first.until(lambda: kinds(first) == ["unknown_traceback"], "the open traceback at a pause")
    first.close()
    go.touch()
    log = Path(first.run(run_id).result_dir) / "logs/trial-1.log"
    wait_for(lambda: b"CUDA out of memory" in log.read_bytes(), 20, "the exception line")
    second = Loop(env)
    try:
        second.until(lambda: "cuda_oom" in kinds(second), "the exception line read")
        assert kinds(second) == ["cuda_oom"]
    finally:
        second.close()


def test_a_liveness_period_over_a_minute_keeps_the_heartbeat_fresh(env: Env) -> None:
    """daemon.json's heartbeat is at most a minute old while the loop turns (`status` calls a
    daemon whose heartbeat is three minutes old not responding), but the loop woke only for
    its timers and `--liveness`: an idle `ajetd daemon --liveness 600` slept ten minutes
    between passes, and `ajetd status` said it was not responding. It wakes to publish."""
    loop = Loop(env, liveness_s=600.0)
    try:
        loop.turn()

        def fresh() -> None:
            beat = json.loads((env.home / "daemon.json").read_text())["heartbeat"]
            assert loop.wake_at <= beat + PUBLISH_EVERY_S + SHORTEST_SLEEP_S, loop.wake_at - beat

        fresh()
        loop.run_for(1800.0, fresh)
    finally:
        loop.close()


def test_a_light_tick_reads_the_logs_written_since_the_last_and_looks_at_no_other(
    env: Env, loop: Loop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log watch: between full ticks, a light tick looks only at the logs written since
    the last one (no `stat` of every live trial's log); what a run printed meanwhile is read,
    and its unfinished last line too once its output pauses."""
    gate, later = env.tmp / "gate", env.tmp / "later"
    printer = GATED.format(gate=gate, text="'torch.OutOfMemoryError: CUDA out of memory.'")
    printer += f"; while [ ! -e {later} ]; do sleep 0.05; done; printf 'RuntimeError: half'"
    noisy = loop.submit(env.blueprint("noisy", command=f"{printer}; sleep 1000", ajetd="gpus: 0"))
    quiet = loop.submit(env.blueprint("quiet", command="sleep 1000", ajetd="gpus: 0"))
    for run_id in (noisy, quiet):
        loop.started(run_id)
    d = loop.daemon
    d.tick(loop.clock())  # a full tick: every log looked at, both folders watched
    logs = {str(Path(loop.run(r).result_dir) / "logs") for r in (noisy, quiet)}
    assert logs <= d.watcher.watched_logs()
    looked: list[str] = []
    real = type(d)._live_scan

    def counted(self: object, slot: Any, now: float, log_file: Path) -> None:
        looked.append(slot.run_id)
        real(d, slot, now, log_file)

    monkeypatch.setattr(type(d), "_live_scan", counted)
    d.scan_output(loop.clock())  # what was written before the full tick: taken
    looked.clear()
    d.scan_output(loop.clock())
    assert looked == []  # nothing written since: no log looked at
    log = Path(loop.run(noisy).result_dir) / "logs" / "trial-1.log"
    gate.touch()
    line = b"CUDA out of memory.\r\n"  # the line itself (the banner has the command)
    wait_for(lambda: line in log.read_bytes(), 20, "the line in the log")
    d.scan_output(loop.clock())
    assert looked == [noisy]  # the quiet run's log not even looked at

    def kinds() -> list[str]:
        trial = loop.run(noisy).trial
        return [f.kind for f in trial.live_findings] if trial else []

    d.scan_output(loop.clock())  # (a line that may go on is read as it stands at a pause)
    assert "cuda_oom" in kinds()
    later.touch()
    wait_for(lambda: log.read_bytes().endswith(b"RuntimeError: half"), 20, "the unfinished line")
    d.scan_output(loop.clock())
    d.scan_output(loop.clock())  # its pause: the unfinished last line read as it stands
    assert set(looked) == {noisy}
    trial = loop.run(noisy).trial
    assert trial is not None
    assert "RuntimeError: half" in (f.evidence for f in trial.live_findings)
