"""A trial's end: recorded first, with its true time, then its leftovers ended and its reports
written; leftovers found among the processes started since the run began."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from ajetd.adapters import procs
from ajetd.adapters.store import Home
from ajetd.core import exitfile, trialscript
from ajetd.core.model import Run, State, Trial
from ajetd.core.trialscript import TrialSpec, render_trial_script
from ajetd.daemon import ending, trials
from ajetd.diagnosis.stream import diagnose_text
from conftest import Env, marked_processes, wait_for
from loopkit import REAL_WAIT_S, Loop


def _exit_time(env: Env, run_id: str) -> float:
    exit_file = env.home / "runs" / run_id / "trial-1.exit"
    wait_for(lambda: exit_file.exists() and len(exit_file.read_text().split()) == 2, what="exit")
    return float(exit_file.read_text().split()[1])


def _check_true_times(env: Env, run_id: str, exited: float, noticed_after: float) -> None:
    env.wait_done(run_id)
    record = env.record(run_id)
    assert record["status"] == "succeeded"
    assert noticed_after - exited > 1.0  # the daemon looked long after the exit ...
    assert abs(record["ended_at"] - exited) < 1e-3  # ... and the record has the exit's time
    assert abs(record["trials"][-1]["ended_at"] - exited) < 1e-3
    status = env.status(run_id)
    assert abs(status["elapsed_s"] - (exited - record["started_at"])) < 0.01
    flag = json.loads((env.tmp / "results" / "paused" / "finish.flag").read_text())
    assert flag["ended_at"] == status["ended_at"]


def test_ended_at_is_the_exit_time_after_the_daemon_was_paused(env: Env) -> None:
    daemon = env.start_daemon()
    run_id = env.submit(env.blueprint("paused", config=env.config("paused", steps=6)))
    wait_for(lambda: env.record(run_id).get("started_at"), what="start")
    daemon.send_signal(signal.SIGSTOP)
    try:
        exited = _exit_time(env, run_id)
        wait_for(lambda: time.time() > exited + 1.5, what="time to pass")
        assert env.record(run_id)["state"] == "running"
    finally:
        daemon.send_signal(signal.SIGCONT)
    _check_true_times(env, run_id, exited, time.time())


def _ended_while_stopped(env: Env) -> tuple[str, float]:
    """A run whose trial ended while its daemon was stopped: its id and exit time."""
    daemon = env.start_daemon()
    run_id = env.submit(env.blueprint("paused", config=env.config("paused", steps=6)))
    wait_for(lambda: env.record(run_id).get("started_at"), what="start")
    daemon.send_signal(signal.SIGTERM)
    daemon.wait(timeout=30)
    return run_id, _exit_time(env, run_id)


def test_ended_at_is_the_exit_time_after_a_daemon_restart(env: Env) -> None:
    run_id, exited = _ended_while_stopped(env)
    wait_for(lambda: time.time() > exited + 1.5, what="time to pass")
    env.start_daemon()
    _check_true_times(env, run_id, exited, time.time())


def test_a_daemons_absence_is_in_the_live_runs_timeline(env: Env) -> None:
    """A daemon that starts long after the last one stopped (or last beat) says so in each
    live run's journal and so in its timeline: the end it then records is journalled at the
    restart's time, and the reader is told why. The last daemon's word is made an hour old
    in its daemon.json (as if it had been down that long)."""
    run_id, exited = _ended_while_stopped(env)
    last = json.loads((env.home / "daemon.json").read_text())
    assert last["pid"] is None
    (env.home / "daemon.json").write_text(json.dumps({**last, "stopped_at": exited - 3600}))
    env.start_daemon()
    env.wait_done(run_id)
    assert abs(env.record(run_id)["ended_at"] - exited) < 1e-3
    journal = (env.home / "runs" / run_id / "events.jsonl").read_text()
    said = [json.loads(line)["event"] for line in journal.splitlines()]
    absent = [t for t in said if t.startswith("ajetd was not running from ")]
    assert len(absent) == 1 and "(it was stopped)" in absent[0] and ", 1h" in absent[0]
    assert said.index(absent[0]) < next(i for i, t in enumerate(said) if t.startswith("run ended"))
    timeline = (env.tmp / "results" / "paused" / "results.md").read_text()
    assert absent[0] in timeline


def test_absence_is_said_only_for_a_real_gap() -> None:
    """`absence`, pure: a stop's time or, where the daemon ended without stopping, its last
    heartbeat (written at least every `publish_every`); a short restart, nothing known, or a
    damaged value says nothing."""
    from ajetd.daemon.admit import absence

    now = 1_800_000_000.0
    assert absence({}, now) is None
    assert absence({"pid": None, "stopped_at": now - 5}, now) is None  # shutdown, then daemon
    stopped = absence({"pid": None, "stopped_at": now - 600}, now)
    assert stopped is not None and "(it was stopped)" in stopped and "10m" in stopped
    beat = {"pid": 4, "heartbeat": now - 50, "publish_every": 60}
    assert absence(beat, now) is None  # within a beat's period: the daemon may have just died
    killed = absence({**beat, "heartbeat": now - 7200}, now)
    assert killed is not None and "ended without stopping" in killed and "2h" in killed
    for bad in ("x", True, None, -1, now + 10, float("nan"), [1]):
        assert absence({"stopped_at": bad}, now) is None
        assert absence({"heartbeat": bad}, now) is None


def test_an_exit_during_a_tick_keeps_its_own_time(tmp_path: Path) -> None:
    """A trial that exits after the tick's clock was read (a long tick, or a daemon paused in
    the middle of one) wrote a later time than the tick's `now`: the record keeps the exit's
    own time, not `now`; a time ahead of this machine's clock is still bounded by it."""
    home = Home(tmp_path / "home")
    home.run_dir("tick01").mkdir(parents=True)
    trial = Trial(1, "x", "s", started_at=time.time() - 10)
    run = Run("tick01", "b.md", 0.0, state=State.RUNNING, result_dir="", trials=(trial,))
    exit_file = home.trial_file("tick01", 1, "exit")
    exited = time.time()
    exit_file.write_text(f"0 {exited}\n")
    assert ending.ended_at(home, run, exited - 0.5) == exited
    exit_file.write_text(f"0 {time.time() + 3600}\n")  # another host's clock, far ahead
    assert ending.ended_at(home, run, exited - 0.5) <= time.time()


def test_end_recorded_first_then_leftovers_ended_then_flag(daemon_env: Env) -> None:
    """A program that leaves a detached helper (as Ray's raylet): the end is on record, the
    helper is ended, and finish.flag comes after both."""
    env = daemon_env
    config = env.config("left", steps=3, orphan=True)
    run_id = env.submit(env.blueprint("left", config=config))
    # the program of 3 steps may be over before a loaded machine's first look at it (the
    # wait then timed out in a CI run): the helper's end in the log below says it was there
    wait_for(
        lambda: len(marked_processes(run_id)) >= 2 or env.record(run_id).get("state") == "done",
        what="the program and its helper, or the run's end",
    )
    env.wait_done(run_id)
    record = env.record(run_id)
    assert record["status"] == "succeeded"
    flag = env.tmp / "results" / "left" / "finish.flag"
    wait_for(flag.exists, what="finish.flag")
    assert marked_processes(run_id) == []  # gone before finish.flag was written
    assert f"run {run_id}: ended 1 leftover process(es)" in env.daemon_log()


def _spawn(env: dict[str, str], *, new_session: bool = False) -> subprocess.Popen[bytes]:
    """A sleeping python with `env`, returned once it has exec'd: between fork and exec the
    child's /proc environ is still this test's, without the AJETD_RUN_ID it is given."""
    argv = [sys.executable, "-c", "import time; time.sleep(60)"]
    proc = subprocess.Popen(argv, env=env, start_new_session=new_session)
    wait_for(lambda: psutil.Process(proc.pid).cmdline() == argv, what="the child's exec")
    return proc


def _execd(pid: int) -> bool:
    with contextlib.suppress(psutil.Error):
        return psutil.Process(pid).cmdline()[:1] == [sys.executable]
    return False


def test_run_pids_finds_marked_and_descendant_processes_started_since(tmp_path: Path) -> None:
    began = time.time()
    marked = _spawn({**os.environ, "AJETD_RUN_ID": "scan01"}, new_session=True)
    other = _spawn({**os.environ, "AJETD_RUN_ID": "scan01x"})
    root = subprocess.Popen(
        ["bash", "-c", f"{sys.executable} -c 'import time; time.sleep(60)' & wait"],
        env={k: v for k, v in os.environ.items() if k != "AJETD_RUN_ID"},
    )
    child: list[int] = []
    try:
        wait_for(lambda: procs.run_pids("none", root.pid, began), what="the root's child")
        found = procs.run_pids("scan01", root.pid, began)
        child = procs.run_pids("none", root.pid, began)
        assert marked.pid in found and other.pid not in found and root.pid not in found
        assert len(child) == 1 and child[0] in found  # the descendant, whatever its env
        assert procs.run_pids("scan01", None, None) == [marked.pid]  # no start filter
        # a process started before the run began cannot be the run's: not even looked at
        assert procs.run_pids("scan01", None, time.time() + 60) == []
    finally:
        for pid in child:
            os.kill(pid, signal.SIGKILL)
        for proc in (marked, other, root):
            proc.kill()
            proc.wait()


def test_run_pids_does_not_look_into_other_trials_sessions(tmp_path: Path) -> None:
    """A process in another trial's pane session is that trial's: its environment is not
    read. A process that left for a session of its own (`setsid`), or one in a session whose
    leader is no longer the pane process named (a later process given its pid), is looked at."""
    began = time.time()
    env = {**os.environ, "AJETD_RUN_ID": "scan02"}
    pane = subprocess.Popen(  # another trial's pane process: its own session, a child in it
        ["bash", "-c", f"{sys.executable} -c 'import time; time.sleep(60)' & wait"],
        env=env,
        start_new_session=True,
    )
    apart = _spawn(env, new_session=True)  # a leftover of scan02 that left for its own session
    try:
        member = wait_for(lambda: procs.run_pids("none", pane.pid, began), what="the child")[0]
        # the child is bash's fork until it has exec'd python: its environment is read only
        # once the exec is over (mid-exec, /proc may refuse it for an instant)
        wait_for(lambda: _execd(member), what="the child's exec")
        start = procs.started(pane.pid)
        assert start is not None
        everything = procs.run_pids("scan02", None, began)
        assert member in everything and pane.pid in everything and apart.pid in everything
        theirs = procs.run_pids("scan02", None, began, others={pane.pid: start})
        assert member not in theirs and pane.pid not in theirs and apart.pid in theirs
        stale = procs.run_pids("scan02", None, began, others={pane.pid: start - 1})
        assert member in stale
    finally:
        for proc in (pane, apart):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


SLEEPER = f"{sys.executable} -c 'import time; time.sleep(60)'"


def _execd_children(parent: int, count: int) -> list[int]:
    """`parent`'s children once `count` of them have exec'd python (their environment is the
    one they were started with only from then on)."""
    kids = [c.pid for c in psutil.Process(parent).children()]
    return sorted(kids) if len(kids) == count and all(map(_execd, kids)) else []


def test_run_pids_does_not_look_into_the_tmux_servers_session(tmp_path: Path) -> None:
    """The parent of the other trials' pane processes is their tmux server, which leads a
    session of its own with its `pipe-pane` helpers in it: none of them is the run's (a
    session is only ever inherited), so their environments are not read, whatever they
    carry. The server's pane processes and its helpers all carry the id here."""
    began = time.time()
    env = {**os.environ, "AJETD_RUN_ID": "scan03"}
    pane_code = "import os, time; os.setsid(); time.sleep(60)"
    server = subprocess.Popen(  # a pane process (a session of its own) and a helper beside it
        ["bash", "-c", f"{sys.executable} -c '{pane_code}' & {SLEEPER} & wait"],
        env=env,
        start_new_session=True,
    )
    try:
        kids = wait_for(lambda: _execd_children(server.pid, 2), what="the pane and the helper")
        wait_for(lambda: any(os.getsid(k) == k for k in kids), what="the pane's own session")
        pane = next(k for k in kids if os.getsid(k) == k)
        helper = next(k for k in kids if k != pane)
        start = procs.started(pane)
        assert start is not None
        everything = procs.run_pids("scan03", None, began)
        assert {server.pid, pane, helper} <= set(everything)
        theirs = procs.run_pids("scan03", None, began, others={pane: start})
        assert pane not in theirs and helper not in theirs and server.pid not in theirs
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        for kid in psutil.Process(server.pid).children():
            with contextlib.suppress(OSError):
                os.kill(kid.pid, signal.SIGKILL)
        server.wait()


def test_run_pids_does_not_look_into_a_session_begun_before_the_run(tmp_path: Path) -> None:
    """A session whose leader started before the run began (a login shell, a service) holds
    none of the run's processes: one started in it since is not read, whatever it carries;
    one of the run's that left for a session of its own is still found."""
    env = {**os.environ, "AJETD_RUN_ID": "scan04"}
    leader = subprocess.Popen(
        ["bash", "-c", f"read go; {SLEEPER} & wait"],
        env=env,
        stdin=subprocess.PIPE,
        start_new_session=True,
    )
    assert leader.stdin is not None
    leader_started = time.time()
    apart: subprocess.Popen[bytes] | None = None
    try:
        # /proc's start times count from a boot time in whole seconds (procs.START_SLACK_S):
        # the leader more than a second older than the run, its child younger
        wait_for(lambda: time.time() > leader_started + 1.1, what="the leader to age")
        began = time.time() + 1.0
        leader.stdin.write(b"go\n")
        leader.stdin.flush()
        member = wait_for(lambda: _execd_children(leader.pid, 1), what="the member")[0]
        apart = _spawn(env, new_session=True)
        found = procs.run_pids("scan04", None, began)
        assert member not in found and leader.pid not in found and apart.pid in found
        assert member in procs.run_pids("scan04", None, None)  # no start: nothing is older
    finally:
        for proc in (leader, apart):
            if proc is not None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _script_spec(tmp: Path, command: str, venv: Path, wake_fifo: str = "") -> TrialSpec:
    """A trial script's spec with every file in `tmp`, run by bash outside tmux."""
    return TrialSpec(
        run_id="script01",
        trial=1,
        command=command,
        codebase_dir=str(tmp),
        venv_dir=str(venv),
        result_dir=str(tmp / "r"),
        go_file=str(tmp / "go"),
        exit_file=str(tmp / "exit"),
        hup_file=str(tmp / "hup"),
        wake_fifo=wake_fifo,
    )


def test_trial_script_goes_when_woken_through_its_fifo(tmp_path: Path) -> None:
    """The script blocks on its FIFO (no polling processes) and goes as soon as the daemon
    writes to it, long before its one-second fallback check."""
    fifo = tmp_path / "trial-1.wake"
    os.mkfifo(fifo, 0o600)
    spec = _script_spec(tmp_path, "echo started", tmp_path, wake_fifo=str(fifo))
    script = tmp_path / "t.sh"
    script.write_text(render_trial_script(spec))
    proc = subprocess.Popen(["bash", str(script)], stdout=subprocess.PIPE, text=True)
    try:

        def waiting() -> bool:  # the script holds the FIFO open and has no child process
            fds = Path(f"/proc/{proc.pid}/fd")
            held = any(os.path.realpath(f) == str(fifo) for f in fds.iterdir())
            return held and not procs.run_pids("none", proc.pid)

        wait_for(waiting, what="the script to wait on its FIFO")
        (tmp_path / "go").write_text("go\n")
        woken = time.monotonic()
        trials._wake(fifo)
        out, _ = proc.communicate(timeout=20)
        assert time.monotonic() - woken < 0.9
        assert proc.returncode == 0 and "started" in out
    finally:
        proc.kill()


def _recording_tools(venv: Path, names: tuple[str, ...]) -> Path:
    """Stand-ins for `names`, first on the script's PATH (the venv's bin), that note each call
    in the returned file."""
    calls = venv / "calls"
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    for name in names:
        tool = venv / "bin" / name
        tool.write_text(f'#!/bin/bash\necho "{name} $*" >> {calls}\n')
        tool.chmod(0o755)
    return calls


def test_the_script_records_its_exit_without_starting_a_process(tmp_path: Path) -> None:
    """The exit line goes straight into the exit file by bash itself: no `mv`, `date`, `cat`
    or other process between the program's end and its record (each is a fork and an exec,
    1-3 ms on a busy machine), and the file holds one whole line."""
    venv = tmp_path / "venv"
    calls = _recording_tools(venv, ("mv", "date", "cat", "rm", "tmux", "printf", "touch"))
    (tmp_path / "go").write_text("go\n")
    script = tmp_path / "t.sh"
    script.write_text(render_trial_script(_script_spec(tmp_path, "exit 3", venv)))
    done = subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, timeout=20, check=False
    )
    assert done.returncode == 3
    assert done.stdout.splitlines()[-1] == "[ajetd] trial 1 exited with code 3"
    assert not calls.exists(), calls.read_text()
    text = (tmp_path / "exit").read_text()
    assert text.endswith("\n") and text.count("\n") == 1
    parsed = exitfile.parse_exit_file(text)
    assert parsed is not None and parsed[0] == 3 and parsed[1] is not None


def test_liveness_asks_tmux_only_when_a_pane_process_changed(env: Env) -> None:
    """While every pane's own process lives on, the liveness period costs no tmux call; a
    trial script killed behind ajetd's back (no exit file, no marker) is still noticed."""
    calls = env.tmp / "tmux-calls.log"
    shim = env.tmp / "bin"
    shim.mkdir()
    real = shutil.which("tmux")
    assert real is not None
    (shim / "tmux").write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {real} "$@"\n')
    (shim / "tmux").chmod(0o755)
    env.vars["PATH"] = f"{shim}:{env.vars['PATH']}"
    env.start_daemon("--liveness", "0.2")
    config = env.config("long", forever=True, step_time=0.5)
    run_id = env.submit(env.blueprint("long", config=config))
    wait_for(lambda: env.record(run_id).get("started_at"), what="start")
    wait_for(lambda: calls.read_text().count("list-panes") >= 2, what="a first liveness poll")
    before = calls.read_text().count("list-panes")
    t0 = time.monotonic()
    wait_for(lambda: time.monotonic() - t0 > 2.0, what="ten liveness periods")
    assert calls.read_text().count("list-panes") - before <= 1  # not one per period
    os.kill(env.record(run_id)["trials"][-1]["pane_pid"], signal.SIGKILL)
    # noticed by the pane process's change, not by tmux's 60 s round: well within it, the
    # run's end (its pictures drawn first) took over 10 s on the 2-core VM at load 16
    status = env.wait_done(run_id, timeout=30)
    assert status["status"] == "lost"


def test_a_relaunch_waits_for_the_previous_script_to_exit() -> None:
    """The exit file appears a moment before its script exits, and the failed trial's
    leftovers (its script among them) are ended at once: the pane is given to the next trial
    only once the script is gone (bounded); a dead pane at once."""
    from ajetd.adapters.tmux import Pane

    script = subprocess.Popen(["sleep", "0.3"])
    try:
        pane = Pane("s", "%1", script.pid, False, None, "bash trial-1.sh")
        assert trials.await_exit(pane, timeout=30)
        assert procs.started(script.pid) is None  # ended (a zombie until it is waited for)
        assert not trials.await_exit(Pane("s", "%1", os.getpid(), False, None, ""), 0.05)
        assert trials.await_exit(Pane("s", "%1", os.getpid(), True, 0, ""), 0.0)  # dead pane
    finally:
        script.kill()
        script.wait()


def test_an_end_that_comes_during_a_tick_is_recorded_before_the_tick_ends(
    env: Env, loop: Loop
) -> None:
    """An exit file that wakes the watcher while a tick runs is recorded between the tick's
    steps (`ends_meanwhile`), not after the rest of the tick."""
    trigger = env.tmp / "end-now"
    command = f"while [ ! -e {trigger} ]; do sleep 0.05; done; exit 0"
    run_id = loop.submit(env.blueprint("mid", command=command, ajetd="gpus: 0"))
    loop.started(run_id)
    trigger.touch()
    exit_file = env.home / "runs" / run_id / "trial-1.exit"
    wait_for(
        lambda: exitfile.parse_exit_file(exit_file.read_text() if exit_file.exists() else ""),
        what="the exit file",
    )
    wait_for(loop.daemon.watcher.ends_waiting, what="the watcher to see it")
    assert loop.run(run_id).state is State.RUNNING  # no tick has run since
    loop.daemon.ends_meanwhile()  # as between two steps of a tick
    run = loop.run(run_id)
    assert run.state is State.DONE and run.exit_code == 0
    assert not loop.daemon.watcher.ends_waiting()


def test_after_a_restart_a_live_runs_exit_file_wakes_the_loop_itself(env: Env) -> None:
    """The run folders are watched from the loop's own thread: a restarted daemon watches its
    live runs' folders again before its first pass reads their exit files, so an exit wakes it
    at once (not the liveness period, a minute here); an ended run's folder is let go."""
    trigger = env.tmp / "end-now"
    command = f"while [ ! -e {trigger} ]; do sleep 0.05; done; exit 0"
    first = Loop(env, liveness_s=60.0)
    try:
        run_id = first.submit(env.blueprint("again", command=command, ajetd="gpus: 0"))
        first.started(run_id)
    finally:
        first.close()
    second = Loop(env, liveness_s=60.0)  # a restart on the same home
    try:
        second.turn()
        folder = str(env.home / "runs" / run_id)
        assert second.daemon.watcher.watched_runs() == {folder}
        trigger.touch()
        assert second.daemon.wake.wait(REAL_WAIT_S)  # the exit file woke it, no timer
        second.daemon.wake.clear()
        second.turn()
        run = second.run(run_id)
        assert run.state is State.DONE and run.exit_code == 0
        second.turn()  # the next pass lets its folder go
        assert second.daemon.watcher.watched_runs() == set()
        assert not second.daemon.watcher.ends_waiting()
    finally:
        second.close()


def test_an_exit_file_without_its_newline_is_not_an_end_yet(env: Env, loop: Loop) -> None:
    """The script writes its exit line straight into the file: a reader that catches it before
    the line is whole (here: a file closed without its newline) takes it as no end; the whole
    line, when it comes, is one."""
    run_id = loop.submit(env.blueprint("half", command="sleep 1000", ajetd="gpus: 0"))
    loop.started(run_id)
    exit_file = env.home / "runs" / run_id / "trial-1.exit"
    exit_file.write_text(f"0 {time.time()}")
    assert loop.daemon.wake.wait(REAL_WAIT_S)  # its close woke the loop ...
    loop.turn()
    assert loop.run(run_id).state is State.RUNNING  # ... but it is not an end
    exit_file.write_text(f"0 {time.time()}\n")
    flag = loop.until_done(run_id)
    assert flag["status"] == "succeeded" and flag["exit_code"] == 0


def test_a_restart_between_done_and_finish_flag_writes_the_reports(env: Env) -> None:
    """The daemon stops after `done` is on disk and before the reports (the record says
    `reports_pending`, no finish.flag): the restarted daemon writes them, finish.flag last, and
    the record keeps the exit code and the exit's own time."""
    first = Loop(env)
    try:
        run_id = first.submit(env.blueprint("between", command="exit 4", ajetd="gpus: 0"))
        first.until_done(run_id)
    finally:
        first.close()
    result_dir = env.tmp / "results" / "between"
    record = env.record(run_id)
    for name in ("finish.flag", "results.md", "trials.md", "run.json"):
        (result_dir / name).unlink()
    state = env.home / "runs" / run_id / "state.json"
    state.write_text(json.dumps({**record, "reports_pending": True}))  # as saved before them
    second = Loop(env)  # the restart
    try:
        second.turn()
        flag = json.loads((result_dir / "finish.flag").read_text())
        assert (flag["status"], flag["exit_code"]) == ("failed", 4)
        assert (result_dir / "results.md").exists() and (result_dir / "run.json").exists()
        after = env.record(run_id)
        assert not after["reports_pending"] and after["ended_at"] == record["ended_at"]
        assert after["trials"][-1]["exit_code"] == 4
    finally:
        second.close()


def test_a_pane_read_for_a_trial_that_printed_no_banner_is_not_the_trial_befores() -> None:
    """A relaunch reuses the pane (its scrollback keeps trial 1). Trial 2 of an SSH run whose
    host no longer answers never printed its banner (the script did not start there): its
    failure, read from the pane, must not be trial 1's NCCL error again (before: the whole
    scrollback was read where the banner was missing, and trial 1's fix chosen again)."""
    nccl = "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970"
    banner1 = f"{trialscript.OWN_LINE_PREFIX}run r1 trial 1: python train.py"
    pane = "\n".join(
        [
            banner1,
            "step 1",
            nccl,
            *(f"row {i}" for i in range(50)),
            trialscript.exit_line(1).decode() + "1",
            "ssh: connect to host gpu7 port 22: Connection refused",
            "",
        ]
    )
    assert "nccl_error" in [f.kind for f in diagnose_text(pane)]  # what was read before
    second = trialscript.trial_rows(pane, "r1", 2)
    assert second == "ssh: connect to host gpu7 port 22: Connection refused\n"
    assert "nccl_error" not in [f.kind for f in diagnose_text(second)]
    # its banner there: what follows it, its own exit line too; trial 1's own rows likewise
    banner2 = f"{trialscript.OWN_LINE_PREFIX}run r1 trial 2: python train.py"
    both = pane + banner2 + "\nboom\n" + trialscript.exit_line(2).decode() + "1\n"
    assert trialscript.trial_rows(both, "r1", 2).startswith(banner2)
    assert trialscript.trial_rows(both, "r1", 2).endswith("exited with code 1\n")
    assert trialscript.trial_rows(pane, "r1", 1) == pane
    # no mark at all (the banner scrolled off the rows read): every row is this trial's
    assert trialscript.trial_rows("a\nb\n", "r1", 3) == "a\nb\n"


def test_a_frozen_daemon_stopped_then_restarted_at_once_says_its_absence_and_a_late_stop(
    env: Env,
) -> None:
    """Walk 30, 5: a daemon frozen (SIGSTOP), then shut down (SIGTERM pending, then CONT) and
    a new one started within seconds: the timeline had no `ajetd was not running` line (the
    stop's time was taken for its last word), and a stop filed while it was frozen was
    applied without saying it was late. Both are said, counted from its last pass."""
    trigger = env.tmp / "never"
    command = f"while [ ! -e {trigger} ]; do echo step; sleep 0.2; done"
    daemon = env.start_daemon()
    run_id = env.submit(env.blueprint("frozen", command=command, ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("started_at"), what="start")
    daemon.send_signal(signal.SIGSTOP)
    frozen_at = time.time()
    assert env.cli("stop", run_id, "--no-wait").returncode == 0
    wait_for(lambda: time.time() > frozen_at + 12, timeout=30, what="the freeze to last 12 s")
    daemon.send_signal(signal.SIGTERM)
    daemon.send_signal(signal.SIGCONT)
    daemon.wait(timeout=30)
    env.start_daemon()
    status = env.wait_done(run_id)
    assert status["status"] == "stopped", status
    assert "late: " in status["reason"] and "asked at " in status["reason"], status["reason"]
    journal = (env.home / "runs" / run_id / "events.jsonl").read_text()
    said = [json.loads(line)["event"] for line in journal.splitlines()]
    absent = [t for t in said if t.startswith("ajetd was not running from ")]
    timeline = (env.tmp / "results" / "frozen" / "results.md").read_text()
    if not absent:  # a freeze inside the frozen daemon's own long wait is not told from an
        # idle daemon (its wait never runs over: no freeze detector yet, ops30's report), or
        # its SIGCONT let it make one more pass before its SIGTERM was handled: the late
        # stop's reason still says why it was late
        why = ("the daemon made no pass for ", "the daemon was not running")
        assert any(w in status["reason"] for w in why), (status["reason"], said)
        return
    assert len(absent) == 1 and "it made none from then until it was stopped" in absent[0], said
    assert absent[0] in timeline
