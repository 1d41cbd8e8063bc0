"""A trial ajetd itself ended by a signal (a user's stop and its escalation, a time limit, a
hang rule): the exit by that signal (130, 143, 137) and the shell's job-status line for it
(`Killed`, `Terminated`) are ajetd's own doing, never a finding (not `host_oom`); the reason
already says the run was stopped. Real tmux, real processes, the loop driven in-process."""

from __future__ import annotations

import json

import pytest

from ajetd.core.finding import Finding
from ajetd.diagnosis.exitcodes import without_own_signals
from ajetd.diagnosis.stream import diagnose_text
from conftest import Env
from loopkit import Loop

DEAF = "trap '' INT TERM; sleep 1000; echo after"  # only SIGKILL ends it: bash says `Killed`


def _ended_by_kill(env: Env, loop: Loop, name: str, how: str) -> tuple[str, dict, str]:
    """A deaf program ended by ajetd's SIGKILL, stopped `how`: its run id, finish.flag, log."""
    rule = "gpus: 0\nhang: {window: 20s, action: stop}" if how == "hang" else "gpus: 0"
    max_time = "1m" if how == "time_limit" else "2h"
    run_id = loop.submit(env.blueprint(name, command=DEAF, ajetd=rule, max_time=max_time))
    seen = loop.started(run_id)
    if how == "user":
        env.cli("stop", "--no-wait", run_id)  # filed for the loop to take
    loop.reach(seen + 65)  # the hang rule's two windows, the time limit
    loop.run_for(60)  # past both graces: SIGKILL
    flag = loop.until_done(run_id)
    log = (env.tmp / "results" / name / "logs" / "trial-1.log").read_text()
    return run_id, flag, log


@pytest.mark.parametrize("how", ["hang", "time_limit", "user"])
def test_a_stop_escalated_to_kill_is_not_host_oom(env: Env, loop: Loop, how: str) -> None:
    run_id, flag, log = _ended_by_kill(env, loop, f"own{how}", how)
    assert "Killed" in log, log  # the shell's own line is there to be misread
    assert flag["exit_code"] == 137, flag
    assert loop.run(run_id).signals_sent[-1] == "KILL"
    status = json.loads(env.cli("status", run_id, "--json").stdout)
    assert status["diagnosis"] == [], status["diagnosis"]
    assert status["reports_pending"] is False  # finish.flag is there
    trials = (env.tmp / "results" / f"own{how}" / "trials.md").read_text()
    assert "host_oom" not in trials and "ran out of host" not in trials, trials
    text = env.cli("status", run_id).stdout
    assert "host_oom" not in text and "ran out of host" not in text, text


@pytest.mark.xdist_group("oomkill")  # with tests/test_killed.py's real OOM kill: one at a time
def test_a_kill_ajetd_did_not_send_is_still_host_oom(env: Env, loop: Loop) -> None:
    """The same `Killed` line from a kill no stop of ajetd's sent is still host_oom, but only
    possibly so: no OOM kill was recorded (the kernel's OOM killer is one cause among others:
    tests/test_killed.py)."""
    command = "sleep 1000 & kill -KILL $!; wait $!; exit 137"
    run_id = loop.submit(env.blueprint("notown", command=command, ajetd="gpus: 0"))
    flag = loop.until_done(run_id)
    assert flag["exit_code"] == 137
    found = env.status(run_id)["diagnosis"]
    assert [(f["kind"], f["certainty"]) for f in found][:1] == [("host_oom", "possible")], found
    assert "possibly host_oom" in flag["reason"], flag


@pytest.mark.parametrize(
    ("line", "sent", "kept"),
    [
        ("Killed", ("INT", "TERM", "KILL"), False),
        ("/x/trial-1.sh: line 12: 3456 Killed                  sleep 1000", ("KILL",), False),
        ("已杀死", ("KILL",), False),
        ("torch ChildFailedError: exitcode: -9", ("KILL",), False),
        ("subprocess exited with exit code 137", ("KILL",), False),
        ("Killed", ("INT", "TERM"), True),  # SIGKILL not ajetd's: not its doing
        ("Killed", (), True),
        ("Out of memory: Killed process 1234 (python)", ("KILL",), True),  # says more
        ("ray.exceptions.OutOfMemoryError: Task was killed", ("KILL",), True),
    ],
)
def test_only_the_echo_of_a_signal_ajetd_sent_is_dropped(
    line: str, sent: tuple[str, ...], kept: bool
) -> None:
    found = tuple(diagnose_text(line))
    assert found, line
    assert (without_own_signals(found, sent) == found) is kept


def test_terminated_and_interrupted_echoes_go_too() -> None:
    """The same for a user kind that reads the shell's word for SIGTERM or SIGINT."""
    lines = ("Terminated", "Interrupt", "[1]+  Terminated   python train.py", "exit status 130")
    said = [Finding("mine", "retryable", 3, text, "x", "y") for text in lines]
    assert without_own_signals(tuple(said), ("INT", "TERM")) == ()
    assert without_own_signals(tuple(said), ("KILL",)) == tuple(said)


# Python interrupted by SIGINT while it imports `site` (an `ajetd stop` right after submit):
# its own report of that, as CPython 3.11 prints it
INTERRUPTED_START = (
    "Fatal Python error: init_import_site: Failed to import the site module",
    "Python runtime state: initialized",
    "Traceback (most recent call last):",
    '  File "<frozen site>", line 626, in <module>',
    '  File "<frozen site>", line 609, in main',
    "KeyboardInterrupt",
)


def test_what_the_program_prints_after_ajetds_signal_is_no_finding(env: Env, loop: Loop) -> None:
    """Walk 86, F20: `ajetd stop` right after submit read Python's interrupted start-up as a
    `segfault` (its `Fatal Python error`). What the program prints once ajetd signalled it is
    its reaction; what it printed before stays (here a dead Ray task, read as host_oom)."""
    script = env.tmp / "intstart.sh"
    said = "\n".join(INTERRUPTED_START)
    script.write_text(
        f"on_int() {{ cat <<'EOF'\n{said}\nEOF\nexit 1; }}\ntrap on_int INT\n"
        "echo 'ray.exceptions.OutOfMemoryError: Task was killed'\nsleep 1000 & wait $!\n"
    )
    command = f"bash {script}"
    run_id = loop.submit(env.blueprint("intstart", command=command, ajetd="gpus: 0"))
    loop.started(run_id)
    log = env.tmp / "results" / "intstart" / "logs" / "trial-1.log"
    loop.until(lambda: log.exists() and b"Task was killed" in log.read_bytes(), "its first line")
    env.cli("stop", "--no-wait", run_id)
    flag = loop.until_done(run_id)
    assert flag["exit_code"] == 1 and "Fatal Python error" in log.read_text(), log.read_text()
    kinds = [f["kind"] for f in env.status(run_id)["diagnosis"]]
    assert kinds == ["host_oom"], kinds
    trials = (env.tmp / "results" / "intstart" / "trials.md").read_text()
    results = (env.tmp / "results" / "intstart" / "results.md").read_text()
    assert "segfault" not in trials + results, trials
    assert not any("segfault" in text for _, text in loop.events(run_id))
