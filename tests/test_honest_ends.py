"""Ends told as they were: `ajetd wait` through attention, a trial's exit time kept by its pane
on a full home, a time limit reached while hung or enforced late. A real daemon (or the loop on
a fake clock, tests/loopkit.py), real tmux, real files, real full disks."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ajetd.core.timefmt import iso
from ajetd.core.trialscript import EXIT_OPTION
from conftest import PYTHON, Env, fill, wait_for


def _waiting_command(env: Env, first: str = "step 1") -> str:
    """Prints `first`, then nothing until the test touches `end-now`; exits 0."""
    trigger = env.tmp / "end-now"
    return f"echo '{first}'; while [ ! -e {trigger} ]; do sleep 0.05; done; echo ending"


def test_wait_through_attention_waits_until_the_run_ends(env: Env) -> None:
    """`wait` returns 2 at once, at every call, while a run needs attention: an agent told to
    wait again busy-looped. `--through-attention` waits on until the run ended (or the
    timeout: 124, never 2)."""
    env.start_daemon("--liveness", "0.5")
    rule = "gpus: 0\nhang: {window: 1s, action: attention}"
    bp = env.blueprint("hung", command=_waiting_command(env), ajetd=rule, max_time="10m")
    run_id = env.submit(bp)
    through = subprocess.Popen(
        [PYTHON, "-m", "ajetd", "wait", run_id, "--through-attention"],
        env=env.vars,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: env.record(run_id).get("attention"), what="the hang flag")
        began = time.monotonic()
        plain = env.cli("wait", run_id, "--timeout", "5")
        assert plain.returncode == 2 and "needs attention" in plain.stdout, plain
        assert time.monotonic() - began < 5  # at once: exit 2 keeps its meaning
        timed = env.cli("wait", run_id, "--through-attention", "--timeout", "1")
        assert timed.returncode == 124, timed
        assert through.poll() is None  # still waiting, through the attention
        (env.tmp / "end-now").touch()
        out, err = through.communicate(timeout=30)
    finally:
        if through.poll() is None:
            through.kill()
            through.wait()
    assert through.returncode == 0, (out, err)
    assert out.startswith(f"run {run_id} succeeded"), out
    assert env.record(run_id)["reports_pending"] is False


def _pane_exit(env: Env, session: str) -> str:
    """The exit line the trial script kept on its pane (`EXIT_OPTION`), '' while none."""
    shown = env.tmux("list-panes", "-s", "-t", session, "-F", f"#{{{EXIT_OPTION}}}")
    return shown.stdout.strip() if shown.returncode == 0 else ""


def test_an_exit_kept_on_the_pane_keeps_its_time_after_a_kill_9(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """A full home: the trial's exit goes to its pane (`@ajetd_exit`, "0 <epoch>"); the daemon
    is killed (-9), the disk freed, a daemon started: the run's end was the restart's time in
    the record, finish.flag and trials.md, the pane's time dropped. It is the exit's own."""
    tmpfs(env.home, "2m")
    daemon = env.start_daemon("--liveness", "0.5")
    bp = env.blueprint("paneexit", command=_waiting_command(env), ajetd="gpus: 0")
    run_id = env.submit(bp)
    wait_for(lambda: env.record(run_id).get("started_at"), what="the run to start")
    session = env.record(run_id)["session"]
    filler = fill(env.home)
    (env.tmp / "end-now").touch()
    note = wait_for(lambda: _pane_exit(env, session), what="the exit on the pane")
    daemon.send_signal(signal.SIGKILL)
    daemon.wait(timeout=20)
    code, exited = note.split()
    assert code == "0" and not (env.home / "runs" / run_id / "trial-1.exit").exists()
    wait_for(lambda: time.time() > float(exited) + 2.5, what="time to pass")
    filler.unlink()
    env.start_daemon("--liveness", "0.5")
    status = env.wait_done(run_id)
    record = env.record(run_id)
    assert (status["status"], status["exit_code"]) == ("succeeded", 0), status["reason"]
    assert abs(record["ended_at"] - float(exited)) < 1e-3, (record["ended_at"], exited)
    assert abs(record["trials"][-1]["ended_at"] - float(exited)) < 1e-3
    result = env.tmp / "results" / "paneexit"
    flag = json.loads((result / "finish.flag").read_text())
    assert flag["ended_at"] == iso(float(exited)), (flag["ended_at"], exited)
    assert f"- end: {iso(float(exited))}" in (result / "trials.md").read_text()


VAL = "{'global_steps': 2, 'mean_reward': 0.5, 'task_pass_rate@1': 0.5}"


def _stuck_command(name: str) -> str:
    """Two steps and one validation record, then 'waiting for rollout workers...' and nothing
    more, for ever (SIGINT ends it)."""
    val = f"saved_val_result/{name}.md"
    return (
        f'echo "step 1"; echo "step 2"; mkdir -p saved_val_result && echo "{VAL}" >> {val}; '
        'echo "waiting for rollout workers..."; exec sleep 100000'
    )


def _ended_in_words(env: Env, name: str) -> tuple[dict[str, object], str, str]:
    result = env.tmp / "results" / name
    flag = json.loads((result / "finish.flag").read_text())
    return flag, (result / "results.md").read_text(), (result / "trials.md").read_text()


def _events(env: Env, run_id: str) -> list[str]:
    lines = (env.home / "runs" / run_id / "events.jsonl").read_text().splitlines()
    return [json.loads(line)["event"] for line in lines]


def test_a_time_limit_reached_while_hung_says_so(env: Env) -> None:
    """A run hung after its second step (the hang rule only flags it) ended `time_limit ...;
    data kept`, the hang named nowhere in its end. Its reason (finish.flag, results.md's Why it
    ended, trials.md) says it was hung, since when and after which step; status time_limit."""
    env.start_daemon("--liveness", "0.5")
    rule = "gpus: 0\nhang: {window: 1s, action: attention}"
    bp = env.blueprint("hung", command=_stuck_command("hung"), ajetd=rule, max_time="4s")
    run_id = env.submit(bp)
    wait_for(lambda: env.record(run_id).get("attention"), what="the hang flag")
    status = env.wait_done(run_id)
    assert status["status"] == "time_limit" and status["metrics"], status
    reason = str(status["reason"])
    assert reason.startswith("stopped at exp_max_time (4s) while hung: no output for "), reason
    assert ", after step 2; needs attention since " in reason, reason
    assert reason.endswith("; data up to then kept"), reason
    flag, results, trials = _ended_in_words(env, "hung")
    assert (flag["status"], flag["reason"]) == ("time_limit", reason)
    assert f"time_limit: {reason}" in results  # Why it ended
    assert reason in trials  # what was done next, for the last trial
    assert any(
        e.startswith("stopping: time_limit (while hung: no output for")
        for e in _events(env, run_id)
    )
    assert env.cli("wait", run_id).returncode == 0  # the contract: time_limit waits 0


def test_a_time_limit_on_a_silent_program_says_it_kept_no_data(env: Env) -> None:
    """A program that printed nothing and wrote no validation record ended `...; data kept`."""
    env.start_daemon("--liveness", "0.5")
    command = f'{PYTHON} -c "import time; time.sleep(100000)"'
    run_id = env.submit(env.blueprint("silent", command=command, ajetd="gpus: 0", max_time="3s"))
    status = env.wait_done(run_id)
    assert status["status"] == "time_limit" and not status["metrics"], status
    assert status["reason"] == (
        "stopped at exp_max_time (3s) with no output at all from its program; "
        "no validation record either: no data to keep"
    ), status["reason"]
    flag, results, trials = _ended_in_words(env, "silent")
    assert flag["reason"] == status["reason"] and "data kept" not in results + trials


def _late_limit(env: Env, name: str, away: Callable[[subprocess.Popen[bytes], float], None]) -> str:
    """A 3 s run whose daemon is kept `away` until well past its limit; its final reason."""
    daemon = env.start_daemon("--liveness", "0.5")
    bp = env.blueprint(name, command=_stuck_command(name), ajetd="gpus: 0", max_time="3s")
    run_id = env.submit(bp)
    log = env.tmp / "results" / name / "logs" / "trial-1.log"
    wait_for(lambda: log.exists() and "waiting for rollout" in log.read_text(), what="output")
    started = wait_for(lambda: env.record(run_id).get("started_at"), what="the start on record")
    away(daemon, float(started))
    status = env.wait_done(run_id)
    assert status["status"] == "time_limit" and status["metrics"], status
    assert float(str(status["elapsed_s"])) > 9.0  # enforced far past its 3 s
    stopping = [e for e in _events(env, run_id) if e.startswith("stopping: time_limit")]
    assert len(stopping) == 1 and " late: the daemon " in stopping[0], stopping  # the timeline
    flag, results, _ = _ended_in_words(env, name)
    assert flag["reason"] == status["reason"] and str(status["reason"]) in results
    return str(status["reason"])


def test_a_time_limit_enforced_after_a_kill_9_says_how_late_and_why(env: Env) -> None:
    def killed(daemon: subprocess.Popen[bytes], started: float) -> None:
        daemon.send_signal(signal.SIGKILL)
        daemon.wait(timeout=20)
        wait_for(lambda: time.time() > started + 10, what="time to pass, no daemon")
        env.start_daemon("--liveness", "0.5")

    reason = _late_limit(env, "killed", killed)
    assert reason.startswith("stopped at exp_max_time (3s), enforced "), reason
    assert " late: the daemon was not running (this one started " in reason, reason
    assert reason.endswith("; data kept"), reason


def test_a_time_limit_enforced_after_a_frozen_daemon_says_how_late_and_why(env: Env) -> None:
    def frozen(daemon: subprocess.Popen[bytes], started: float) -> None:
        daemon.send_signal(signal.SIGSTOP)
        try:
            wait_for(lambda: time.time() > started + 10, what="time to pass, the daemon frozen")
        finally:
            daemon.send_signal(signal.SIGCONT)

    reason = _late_limit(env, "frozen", frozen)
    assert reason.startswith("stopped at exp_max_time (3s), enforced "), reason
    assert " late: the daemon made no pass for " in reason, reason
    assert reason.endswith("; data kept"), reason


@pytest.mark.parametrize(
    "line",
    [
        "Validation Results: acc 0.5",
        "📊 Validation Results:",
        "Final validation metrics: {mean_reward 0.5}",  # verl's and AgentJet's, unreadable
    ],
)
def test_a_run_whose_output_shows_validation_results_never_reads_wrote_none(
    daemon_env: Env, line: str
) -> None:
    """Walk 30, 6: an AgentJet run whose output showed `Validation Results` (also NeMo-RL's
    `📊` form) ended with the reason "it wrote no validation record": the README says that
    is never said where its output shows them (only NeMo-RL's was spared)."""
    env = daemon_env
    run_id = env.submit(env.blueprint("shown", command=f"echo '{line}'", ajetd="gpus: 0"))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    assert "wrote no validation record" not in status["reason"], status["reason"]
    assert "its output shows validation results" in status["reason"], status["reason"]
