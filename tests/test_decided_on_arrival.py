"""Decisions taken when what decides them arrives (walk90 F2, F3, F4): a prompt in a run's
output is flagged, and records that show a plateau stop it, in the pass that read them,
the light tick's too; not at the run's next full look (its deep check's backoff, or
SUPERVISE_ALL_S: up to a minute later). A time rule's own moment (the plateau rule's
`after:`) is woken for as a time limit is. A trial that exits 0 keeps no diagnosis: a prompt
answered just before its exit is not the ended run's diagnosis."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ajetd.core.model import State, StopCause
from conftest import Env, wait_for
from loopkit import Loop

ASKS = "echo step:1; printf 'Password: '; read answer; echo got $answer"


def _events_at(loop: Loop, run_id: str, head: str) -> list[float]:
    return [at for at, text in loop.events(run_id) if text.startswith(head)]


def test_a_prompt_is_flagged_by_the_light_tick_that_reads_it(env: Env, loop: Loop) -> None:
    run_id = loop.submit(env.blueprint("asks", command=f"{ASKS}; sleep 1000", max_time="1h"))
    loop.started(run_id)
    loop.light_until(lambda: loop.run(run_id).attention, "the prompt to be flagged")
    said = str(loop.run(run_id).attention)
    assert said.startswith("waiting for input at a prompt: `Password:`"), said
    seen = _events_at(loop, run_id, "seen while running in its unfinished last output: waiting")
    flagged = _events_at(loop, run_id, "attention: waiting for input at a prompt")
    assert len(seen) == 1 and flagged == seen  # decided in the pass that read it
    session = loop.run(run_id).session
    env.tmux("send-keys", "-t", session, "y", "Enter")  # a person answers; output goes on
    loop.light_until(lambda: loop.run(run_id).attention is None, "the flag to go")
    assert loop.event_at(run_id, "attention: cleared") is not None
    trial = loop.run(run_id).trial
    assert trial is not None and "waiting_for_input" not in [f.kind for f in trial.live_findings]
    assert loop.run(run_id).state is State.RUNNING


def test_a_hang_flag_goes_in_the_light_tick_that_reads_new_output(env: Env, loop: Loop) -> None:
    gate = env.tmp / "gate"
    command = f"while [ ! -e {gate} ]; do sleep 0.05; done; echo back; sleep 1000"
    rule = "gpus: 0\nhang: {window: 10m}"  # action: attention
    run_id = loop.submit(env.blueprint("silent", command=command, ajetd=rule, max_time="2h"))
    t0 = loop.started(run_id)
    loop.reach(t0 + 600)
    assert str(loop.run(run_id).attention).startswith("no output for 10m")
    loop.light_until(lambda: loop.run(run_id).attention is None, "the flag to go", then=gate.touch)
    assert loop.event_at(run_id, "attention: cleared") is not None


def test_output_written_before_its_log_folder_was_watched_is_read(env: Env, loop: Loop) -> None:
    """A trial launched in a pass is read there (its log still empty) and its log folder
    watched only at the next full tick: what it printed in between brought no event, and
    no light tick looked at its log again (the prompt waited for the run's next full look:
    this file's light-tick test failed one time in ten on a loaded machine)."""
    gate = env.tmp / "gate"
    command = f"while [ ! -e {gate} ]; do sleep 0.05; done; {ASKS}; sleep 1000"
    run_id = loop.submit(env.blueprint("late", command=command, max_time="1h"))
    loop.started(run_id)
    loop.turn(True)  # its log read to its end, its folder watched
    d = loop.daemon
    folder = d.slots[run_id].paths(d.home).log_dir
    d.watcher.forget_logs(folder)  # as before the full tick that first watches it
    gate.touch()
    log = Path(loop.run(run_id).result_dir) / "logs" / "trial-1.log"
    wait_for(lambda: log.read_bytes().endswith(b"Password: "), 20, "the prompt in the log")
    loop.light_until(lambda: loop.run(run_id).attention, "the prompt to be flagged")
    assert folder in d.watcher.watched_logs()


def test_an_answered_prompt_is_no_diagnosis_of_a_clean_exit(env: Env, loop: Loop) -> None:
    """The answer and the exit come together: the exit is recorded before any reading of the
    output after the answer, and the prompt stayed the succeeded run's `diagnosis` (F4)."""
    run_id = loop.submit(env.blueprint("answered", command=ASKS, max_time="1h"))
    loop.started(run_id)
    loop.until(lambda: loop.run(run_id).attention, "the prompt to be flagged")
    env.tmux("send-keys", "-t", loop.run(run_id).session, "y", "Enter")
    flag = loop.until_done(run_id)
    assert flag["status"] == "succeeded", flag
    run = loop.run(run_id)
    assert run.attention is None and run.trial is not None
    assert run.trial.live_findings == () and run.trial.findings == ()
    result = Path(run.result_dir)
    assert json.loads((result / "run.json").read_text())["diagnosis"] == []
    shown = env.status(run_id)
    assert shown["diagnosis"] == [] and shown["status"] == "succeeded"
    assert "Diagnosis" not in (result / "results.md").read_text()


def _flat(env: Env, name: str) -> Path:
    """The val file env.config(name) names, empty: the trial echoes what is written to it
    (`tail -F`), so its records come with output, as a training program's do."""
    path = env.codebase / "saved_val_result" / f"{name}.md"
    path.parent.mkdir(exist_ok=True)
    path.write_text("")
    return path


def _records(*rewards: float, first: int = 0) -> str:
    return "".join(
        f"{{'global_steps': {first + 20 * i}, 'mean_reward': {r}}}\n" for i, r in enumerate(rewards)
    )


def test_records_that_show_a_plateau_stop_the_run_as_they_are_read(env: Env, loop: Loop) -> None:
    val = _flat(env, "flat")
    rule = "gpus: 0\nplateau: {patience: 3, min_delta: 0.01, after: 0.01}"  # from 36 s
    command = "tail -n +1 -F saved_val_result/flat.md"
    run_id = loop.submit(env.blueprint("flat", command=command, max_time="1h", ajetd=rule))
    loop.started(run_id)
    t0 = loop.t0(run_id)
    val.write_text(_records(0.3))
    loop.until(lambda: len(loop.run(run_id).history) == 1, "the first record")
    loop.run_until(t0 + 100)  # past `after`: one record is no plateau
    assert loop.run(run_id).stop_cause is None
    with val.open("a") as out:
        out.write(_records(0.5, 0.5, 0.5, 0.5, first=20))
    loop.light_until(lambda: loop.run(run_id).stop_cause, "the plateau stop")
    assert loop.run(run_id).stop_cause is StopCause.PLATEAU
    read = _events_at(loop, run_id, "validation: 5 record(s)")
    assert read and _events_at(loop, run_id, "stopping: plateau") == read[-1:]
    flag = loop.until_done(run_id)
    assert flag["status"] == "plateau", flag


def test_the_plateau_rule_acts_at_its_after_moment_on_records_before_it(
    env: Env, loop: Loop
) -> None:
    val = _flat(env, "early")
    rule = "gpus: 0\nplateau: {patience: 3, min_delta: 0.01, after: 0.051}"  # from 183.6 s
    command = "tail -n +1 -F saved_val_result/early.md"
    run_id = loop.submit(env.blueprint("early", command=command, max_time="1h", ajetd=rule))
    loop.started(run_id)
    t0 = loop.t0(run_id)
    val.write_text(_records(0.3, 0.5, 0.5, 0.5, 0.5))  # flat from the start
    loop.until(lambda: len(loop.run(run_id).history) == 5, "the records")
    applies = t0 + 0.051 * 3600
    loop.run_until(applies - 0.1)
    assert loop.run(run_id).stop_cause is None  # not before the rule applies
    loop.reach(applies)  # the daemon wakes for it: not at the run's next full look
    assert loop.on_time(run_id, "stopping: plateau", applies), loop.events(run_id)
    assert loop.until_done(run_id)["status"] == "plateau"


def test_wait_exits_2_on_a_prompt_within_seconds(env: Env) -> None:
    """With the deep checks' real schedule (30 s first: the other daemon tests shrink it,
    which hid F2), `ajetd wait` exits 2 within seconds of a prompt that comes once the run's
    start is past (its first looks); answered, the run succeeds and keeps no diagnosis in
    `status --json` (F4)."""
    env.start_daemon("--backoff-scale", "1")
    command = ASKS.replace("printf", "sleep 8; printf")
    run_id = env.submit(env.blueprint("waits", command=command, max_time="1h"))
    log = env.tmp / "results" / "waits" / "logs" / "trial-1.log"
    wait_for(lambda: log.exists() and log.read_text().endswith("Password: "), 30, "the prompt")
    began = time.monotonic()
    waited = env.cli("wait", run_id, "--timeout", "20")
    assert waited.returncode == 2, (waited.stdout, waited.stderr)
    assert time.monotonic() - began < 6  # the pause read (1.5 s), the flag at once
    status = env.status(run_id)
    assert str(status["attention"]).startswith("waiting for input at a prompt: `Password:`")
    env.tmux("send-keys", "-t", env.record(run_id)["session"], "y", "Enter")
    done = env.wait_done(run_id)
    assert done["status"] == "succeeded", done
    assert done["diagnosis"] == [] and done["attention"] is None, done


def test_a_moment_that_falls_within_a_long_pass_is_still_woken_for(
    env: Env, loop: Loop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass that takes a while (another run's end, its reports) ends after a run's moment
    (its time limit; the plateau rule's `after:` in the walk, F3) that had not come when it
    began: the pass did not decide it, and its wake-up was left out as past, so the run was
    decided at its next full look, up to a minute later. Woken for at once."""
    run_id = loop.submit(env.blueprint("long", command="sleep 1000", max_time="123s"))
    loop.started(run_id)
    t0 = loop.t0(run_id)  # (123 s: no other timer of the loop's falls there)
    loop.run_until(t0 + 122.5)
    publish = type(loop.daemon).publish

    def slow(self: object, now: float) -> None:  # the pass's last step takes a second
        publish(loop.daemon, now)
        loop.clock.advance(1.0)

    monkeypatch.setattr(type(loop.daemon), "publish", slow)
    loop.turn(True)  # from t0 + 122.5 to t0 + 123.5: the limit fell within it
    monkeypatch.setattr(type(loop.daemon), "publish", publish)
    assert loop.run(run_id).stop_cause is None
    loop.sleep()
    assert loop.on_time(run_id, "stopping: time_limit", t0 + 123.5), loop.events(run_id)
    assert loop.until_done(run_id)["status"] == "time_limit"
