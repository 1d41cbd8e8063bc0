"""A live run whose record (runs/<id>/state.json) was damaged while the daemon was down is not
left running with nobody watching it: the daemon rebuilds a minimal record from what is on
disk (its trial scripts and exit files, its stored blueprint, its tmux pane), keeps the damaged
file beside it, flags the run for attention and supervises it to its end, never launching
anything again; finish.flag says why. Real tmux on a private socket, a real daemon process and
the loop driven in-process."""

from __future__ import annotations

import json
import signal
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from ajetd.core.endevidence import flag_bars
from ajetd.core.model import State
from ajetd.core.rebuilt import TrialFiles, rebuilt_run, remote_dir
from ajetd.core.trialscript import (
    MetricSource,
    TrialSpec,
    read_trial_script,
    render_trial_script,
    trial_log,
)
from ajetd.daemon.trials import read_metrics
from conftest import Env, rebuilt_after_a_cut, wait_for
from loopkit import KillAfter, Killed, Loop


def _waiting_command(env: Env, code: int) -> str:
    path = env.tmp / "end-now"
    return f"while [ ! -e {path} ]; do sleep 0.05; done; echo ending; exit {code}"


def _damage(env: Env, run_id: str) -> bytes:
    state = env.home / "runs" / run_id / "state.json"
    cut = state.read_bytes()[:120]  # cut short, as by a crash mid-write
    state.write_bytes(cut)
    return cut


def _live_then_damaged(env: Env, name: str) -> tuple[str, str]:
    """A run started by one daemon, whose record is cut once it stopped; its id and session."""
    first = Loop(env)
    try:
        run_id = first.submit(env.blueprint(name, command="sleep 1000", ajetd="gpus: 0"))
        first.started(run_id)
        session = first.run(run_id).session
    finally:
        first.close()
    _damage(env, run_id)
    return run_id, session


def test_a_live_run_with_a_damaged_record_is_rebuilt_and_supervised(env: Env) -> None:
    daemon = env.start_daemon("--liveness", "0.5")
    run_id = env.submit(
        env.blueprint("dmg", command=_waiting_command(env, 3), max_time="1h", ajetd="gpus: 0")
    )
    wait_for(lambda: env.record(run_id).get("started_at"), what="the run to start")
    before = env.record(run_id)
    daemon.send_signal(signal.SIGTERM)
    daemon.wait(timeout=20)
    cut = _damage(env, run_id)
    daemon = env.start_daemon("--liveness", "0.5")
    wait_for(lambda: env.record(run_id).get("attention"), what="the record to be rebuilt")
    assert (env.home / "runs" / run_id / "state.json.damaged").read_bytes() == cut  # kept
    status = env.status(run_id)
    assert status["state"] == "running" and status["session"] == before["session"]
    assert "state.json" in status["attention"] and "rebuilt" in status["attention"]
    assert status["max_time_s"] == 3600  # exp_max_time still counts from the first launch:
    assert abs(env.record(run_id)["started_at"] - before["started_at"]) < 1  # its go file's
    assert status["result_dir"] == before["result_dir"]
    shown = env.cli("status")
    assert "DAMAGED" not in shown.stdout and run_id in shown.stdout
    waited = env.cli("wait", run_id, "--timeout", "5")
    assert waited.returncode == 2 and "rebuilt" in waited.stdout  # a person should look
    assert f"run {run_id}" in env.daemon_log() and "rebuilt" in env.daemon_log()
    (env.tmp / "end-now").touch()  # its end is seen and recorded
    ended = env.wait_done(run_id)
    assert (ended["status"], ended["exit_code"], ended["trials"]) == ("failed", 3, 1)
    flag = json.loads((env.tmp / "results" / "dmg" / "finish.flag").read_text())
    assert (flag["status"], flag["exit_code"]) == ("failed", 3) and "rebuilt" in flag["reason"]
    assert "rebuilt" in (env.tmp / "results" / "dmg" / "results.md").read_text()
    assert daemon.poll() is None


def test_a_damaged_record_whose_session_vanished_meanwhile_is_lost_not_forgotten(
    env: Env,
) -> None:
    run_id, session = _live_then_damaged(env, "gone")
    assert env.tmux("kill-session", "-t", f"={session}").returncode == 0
    # its `sleep` lingers without a terminal (the hang-up never reached it): gone all the same
    second = Loop(env)
    try:
        flag = second.until_done(run_id)
        assert flag["status"] == "lost" and "rebuilt" in flag["reason"]
    finally:
        second.close()


def test_a_damaged_run_alive_on_another_tmux_server_is_never_called_lost(env: Env) -> None:
    """The record alone named the tmux server; a daemon started on another one finds no pane,
    yet the program runs on a terminal: it is left named (as before), never ended."""
    run_id, session = _live_then_damaged(env, "elsewhere")
    second = Loop(replace(env, socket=f"{env.socket}-other"))
    try:
        second.turn()
        assert run_id in second.daemon.home.damaged and run_id not in second.daemon.slots
        assert env.tmux("has-session", "-t", f"={session}").returncode == 0  # untouched
        assert not (env.home / "runs" / run_id / "state.json.damaged").exists()
    finally:
        second.close()


NCCL = (
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
    "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5"
)


def test_a_relaunch_damaged_before_it_was_let_go_is_started_once(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trial 1 failed (NCCL) and the daemon died right after it wrote the relaunch's script,
    before its go file; the record was then cut. Trial 2 is rebuilt unstarted (its script
    holds the fix's environment), so the daemon lets it go, once, as for any record."""
    launches = env.tmp / "launches"
    command = (
        f"echo x >> {launches}; "
        f"if [ -z \"$NCCL_NVLS_ENABLE\" ]; then echo '{NCCL}'; exit 1; fi; echo ok"
    )
    kill = KillAfter(monkeypatch, "trial-2.sh")
    first = Loop(env)
    with pytest.raises(Killed):
        try:
            first.until_done(first.submit(env.blueprint("late", command=command)))
        finally:
            first.close()
    kill.disarm()
    run_id = kill.run_id("late")
    assert not (env.home / "runs" / run_id / "trial-2.go").exists()
    _damage(env, run_id)
    second = Loop(env)
    try:
        assert second.run(run_id).state is not State.DONE
        flag = second.until_done(run_id)
        assert (flag["status"], flag["trials"]) == ("succeeded", 2) and "rebuilt" in flag["reason"]
        assert launches.read_text() == "x\nx\n"  # each trial once
    finally:
        second.close()


def _spec(run_id: str, trial: int, command: str, codebase: str, **more: Any) -> TrialSpec:
    """A trial's spec, ajetd's files for it in /h/runs/<run_id>."""
    files = f"/h/runs/{run_id}/trial-{trial}"
    return TrialSpec(
        run_id=run_id,
        trial=trial,
        command=command,
        codebase_dir=codebase,
        go_file=f"{files}.go",
        exit_file=f"{files}.exit",
        hup_file=f"{files}.hup",
        **more,
    )


def test_a_trial_script_reads_back_as_it_was_rendered() -> None:
    spec = _spec(
        "ab12cd",
        2,
        "cd sub && python -m x --conf 'a b.yaml'\necho \"$HOME\" it's",
        "/src/my code",
        venv_dir="/v/.venv",
        result_dir="/out/r's",
        env=(("CUDA_VISIBLE_DEVICES", "0,3"), ("NCCL_DEBUG", "WARN")),
        wake_fifo="/h/runs/ab12cd/trial-2.wake",
        venv_exe="/usr/bin/python3",
        metrics=MetricSource("agentjet", "task_pass_rate@1", "/src/my code/val's $x.md", 1234),
    )
    facts = read_trial_script(render_trial_script(spec))
    assert facts is not None
    assert (facts.run_id, facts.trial, facts.command) == ("ab12cd", 2, spec.command)
    assert facts.metrics == spec.metrics
    # none given (a script of an older ajetd): none read back, even where the command itself
    # looks like ajetd's lines
    plain = replace(
        spec, command="ajetd_val_file=/x ajetd_kind=nemo_rl true", metrics=MetricSource()
    )
    again = read_trial_script(render_trial_script(plain))
    assert again is not None and again.metrics == MetricSource()
    assert (facts.codebase_dir, facts.venv_dir, facts.result_dir) == (
        "/src/my code",
        "/v/.venv",
        "/out/r's",
    )
    assert facts.env["CUDA_VISIBLE_DEVICES"] == "0,3" and facts.env["NCCL_DEBUG"] == "WARN"
    assert facts.go_file == "/h/runs/ab12cd/trial-2.go" and remote_dir(facts) is None  # here
    sent = replace(spec, go_file="/home/u x/.ajetd-remote/ab12cd/trial-2.go", wake_fifo="")
    there = read_trial_script(render_trial_script(sent))
    assert there is not None and remote_dir(there) == "/home/u x/.ajetd-remote/ab12cd"
    for other in ("/h/elsewhere/trial-2.go", "r/.ajetd-remote/ab12cd/trial-2.go", "/r/x.go"):
        named = read_trial_script(render_trial_script(replace(sent, go_file=other)))
        assert named is not None and remote_dir(named) is None, other  # never guessed
    assert read_trial_script("#!/usr/bin/env bash\necho 'unclosed\n") is None
    assert read_trial_script(Path(__file__).read_text()) is None  # not a trial script


def test_an_ended_runs_damaged_record_never_writes_into_another_runs_result_dir(
    env: Env,
) -> None:
    """Run A ended; its result dir was archived and run B wrote there since. A's record cut
    at a start must leave it named, not rebuilt as live and ended again over B's results (the
    rebuild writes only into a result dir that is there, holds no finish.flag and is no live
    run's)."""
    result = env.tmp / "results" / "shared"
    first = Loop(env)
    try:
        a = first.submit(env.blueprint("a", command="echo A; exit 0", result=str(result)))
        assert first.until_done(a)["run_id"] == a
    finally:
        first.close()
    result.rename(env.tmp / "results" / "shared.archived")
    second = Loop(env)
    try:
        b = second.submit(env.blueprint("b", command="echo B; exit 0", result=str(result)))
        assert second.until_done(b)["status"] == "succeeded"
    finally:
        second.close()
    written = {name: (result / name).read_bytes() for name in ("results.md", "finish.flag")}
    _damage(env, a)
    third = Loop(env)
    try:
        for _ in range(20):
            third.turn()
        assert a not in third.daemon.slots and a in third.daemon.home.damaged
    finally:
        third.close()
    assert {name: (result / name).read_bytes() for name in written} == written
    assert json.loads(written["finish.flag"])["run_id"] == b


def test_a_rebuilt_run_reads_its_validation_results_as_any_run(env: Env) -> None:
    """A rebuilt record had no val file (`val_path` None): the run's metrics, results.md and
    finish.flag said nothing of its validations. Its trial script now names the val file and
    the byte its lines count from, so the rebuilt run reads them as the run did: the whole
    run's validations (before the damage too), never the lines an earlier run left there."""
    config = env.config("valdmg", steps=6, step_time=0.5)
    val = env.codebase / "saved_val_result" / "valdmg.md"
    val.parent.mkdir(parents=True, exist_ok=True)
    val.write_text("{'global_steps': 99, 'mean_reward': 0.99}\n")  # an earlier run's line
    daemon = env.start_daemon("--liveness", "0.5")
    run_id = env.submit(env.blueprint("valdmg", config=config, max_time="1h", ajetd="gpus: 0"))
    wait_for(lambda: val.read_text().count("\n") >= 2, what="the run's first validation")
    assert env.record(run_id)["val_offset"] == len(val.read_text().splitlines()[0]) + 1
    daemon.send_signal(signal.SIGTERM)
    daemon.wait(timeout=20)
    _damage(env, run_id)
    env.start_daemon("--liveness", "0.5")
    wait_for(lambda: env.record(run_id).get("attention"), what="the record to be rebuilt")
    ended = env.wait_done(run_id)
    assert ended["status"] == "succeeded" and "rebuilt" in ended["reason"], ended
    assert ended["metrics"]["global_steps"] == 6, ended
    record = env.record(run_id)
    assert [h["global_steps"] for h in record["history"]] == [2, 4, 6]  # not the 99
    assert record["val_path"] == str(val)
    flag = json.loads((env.tmp / "results" / "valdmg" / "finish.flag").read_text())
    assert flag["metrics"] == ended["metrics"]
    assert "| 6 |" in (env.tmp / "results" / "valdmg" / "results.md").read_text()


def test_a_rebuilt_nemo_rl_run_reads_its_metrics_from_its_output(tmp_path: Path) -> None:
    """A NeMo-RL run's metrics come from its output, not a val file (`kind`), judged by its
    recipe's metric (`metric`): both were only in the record, so a rebuilt one read nothing
    (and counted as AgentJet's). The script keeps them; the rebuilt run reads its current
    trial's validations from its log (here NeMo-RL's real output)."""
    result = tmp_path / "out"
    (result / "logs").mkdir(parents=True)
    sample = Path(__file__).parent / "data" / "nemo_rl" / "sample_grpo_stdout.log"
    (result / "logs" / "trial-1.log").write_bytes(sample.read_bytes())
    spec = _spec(
        "nm12ab",
        1,
        "uv run examples/run_grpo.py --config examples/configs/grpo_math_1B.yaml",
        "/src/RL",
        venv_dir="/src/RL/.venv",
        result_dir=str(result),
        metrics=MetricSource("nemo_rl", "accuracy"),
    )
    facts = read_trial_script(render_trial_script(spec))
    assert facts is not None
    files = [TrialFiles(1, facts, started_at=100.0, exit=None)]
    run = rebuilt_run("nm12ab", "cut", "bp.md", 90.0, None, files, "ajet_nm", "ajetd")
    assert (run.kind, run.metric, run.val_path) == ("nemo_rl", "accuracy", None)
    read = read_metrics(run, log_of=partial(trial_log, run))
    assert read.metrics["accuracy"] == 0.4219 and read.history


def test_a_run_placed_elsewhere_whose_blueprint_is_gone_stays_named(env: Env) -> None:
    """Which place a run's trials went to (an SSH host, Slurm) only its stored blueprint says:
    with that copy gone, a folder holding the program's own script for another place is never
    rebuilt as a local run (its pane's program is a follower, not the program): left named,
    its pane untouched, the log saying what to restore."""
    run_id, session = _live_then_damaged(env, "placed")
    runs = env.home / "runs" / run_id
    (runs / "trial-1.remote.sh").write_bytes((runs / "trial-1.sh").read_bytes())
    (runs / "blueprint.md").unlink()
    second = Loop(env)
    try:
        second.turn()
        assert run_id in second.daemon.home.damaged and run_id not in second.daemon.slots
        assert env.tmux("has-session", "-t", f"={session}").returncode == 0  # untouched
        assert not (runs / "state.json.damaged").exists()
    finally:
        second.close()


def test_a_run_that_ended_with_its_reports_pending_is_never_rebuilt(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon died after the run's end was journalled and its record saved, before its
    finish.flag (its reports pending; its dead pane still kept), and the record was then cut.
    The journal says it ended: it stays named, never brought back to life as a running run,
    ended a second time (another status) or its on_finish run twice."""
    hook = env.tmp / "hook-ran"
    kill = KillAfter(monkeypatch, "run.json")  # the reports land, finish.flag not yet
    first = Loop(env)
    bp = env.blueprint(
        "ended", command="exit 3", ajetd=f"gpus: 0\non_finish: 'echo hook >> {hook}'"
    )
    with pytest.raises(Killed):
        try:
            first.until_done(first.submit(bp))
        finally:
            first.close()
    kill.disarm()
    run_id = kill.run_id("ended")
    folder = env.home / "runs" / run_id
    assert not (env.tmp / "results" / "ended" / "finish.flag").exists()
    _damage(env, run_id)
    second = Loop(env)
    try:
        second.turn()
        assert second.daemon.runs.get(run_id) is None  # not rebuilt
        assert run_id in second.daemon.home.damaged  # named
    finally:
        second.close()
    lines = (folder / "events.jsonl").read_text().splitlines()
    events = [json.loads(line)["event"] for line in lines]
    assert sum(e.startswith("run ended: ") for e in events) == 1, events  # ended once
    assert not any(e.startswith("record rebuilt") for e in events), events
    assert not hook.exists()  # never a second end's hook


def _flag(run_id: object, ended_at: str | None = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {"run_id": run_id, "status": "succeeded", "reason": "x", "ended_at": ended_at}


def test_only_its_own_flag_or_a_newer_runs_bars_a_damaged_run() -> None:
    """A finish.flag in a damaged live run's result dir bars its rebuild only where it is
    ajetd's for this run (its end), or for a run that ended since this one was admitted (the
    folder is that run's now); the program's own file at that name and an older run's flag
    copied there are no marks."""
    admitted = 1_800_000_000.0  # 2027-01-15
    later = "2027-02-01T00:00:00Z"
    assert "records its end" in (flag_bars("abc123", _flag("abc123"), admitted) or "")
    assert "records its end" in (flag_bars("abc123", {"run_id": "abc123"}, admitted) or "")
    assert "that run's now" in (flag_bars("abc123", _flag("zzz999", later), admitted) or "")
    assert "that run's now" in (flag_bars("abc123", _flag("zzz999", None), admitted) or "")
    for not_a_mark in (
        None,  # not JSON: `done`, an empty file
        ["abc123"],
        {"status": "succeeded"},  # the program's JSON, with no run of ajetd's named
        {"run_id": 7, "status": "succeeded"},
        _flag("zzz999", "2026-12-01T00:00:00Z"),  # an older run's, copied there since
        {"run_id": "zzz999", "status": "finished", "ended_at": later},  # no status of ajetd's
    ):
        assert flag_bars("abc123", not_a_mark, admitted) is None, not_a_mark


def test_a_run_whose_program_copied_an_older_flag_in_is_rebuilt_and_keeps_it(
    env: Env,
) -> None:
    """Before: a rebuild took any finish.flag in the result dir as the run's end (or a newer
    run's results) and left the live run named as damaged with nobody watching it. Here its
    program copies an older run's results in (finish.flag among them) and runs on: the run is
    rebuilt and supervised, and at its end that flag is moved aside as the program's, ajetd's
    own written in its place."""
    result = env.tmp / "results" / "copied"
    older = env.tmp / "older-flag"
    older.write_text(json.dumps(_flag("old111", "2020-01-01T00:00:00Z")))
    end = env.tmp / "end-now"
    command = (
        f'cp {older} "$AJETD_RESULT_DIR/finish.flag"; echo copied; '
        f"while [ ! -e {end} ]; do sleep 0.05; done; exit 0"
    )
    env.start_daemon("--liveness", "0.5")
    bp = env.blueprint("copied", command=command, result=str(result), ajetd="gpus: 0")
    run_id = env.submit(bp)
    wait_for((result / "finish.flag").exists, what="the program's copy")
    rebuilt_after_a_cut(env, run_id, ("session", "result_dir"))
    end.touch()
    ended = env.wait_done(run_id)
    assert (ended["status"], ended["exit_code"]) == ("succeeded", 0), ended
    assert json.loads((result / "finish.flag").read_text())["run_id"] == run_id
    assert (result / "finish.program.flag").read_bytes() == older.read_bytes()
