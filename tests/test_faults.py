"""Faults met as a user meets them (a real daemon, real tmux, real files): records damaged
while the daemon was down, the daemon killed at odd moments, a home of many ended runs.

Each damaged thing is named (daemon log, `ajetd status`, stderr of `status --json`), nothing
else is lost or hidden, live runs stay supervised, and nothing is launched twice.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pytest
from inotifykit import IN_CLOSE_WRITE, Events

from ajetd.adapters.store import Home
from ajetd.adapters.tmux import Tmux
from ajetd.core import model, stopnote
from ajetd.core.model import Run, State, Status, Trial
from ajetd.core.policy import CLOCK_SLACK_S
from ajetd.daemon import slots
from ajetd.pictures.drawing import LivePlots
from ajetd.views.listing import Filters, daemon_lines, overview, plain
from conftest import Env, fill, printed, wait_for
from loopkit import FakeClock, KillAfter, Killed, Loop


def _waiting_command(env: Env, code: int, trigger: str = "end-now") -> str:
    path = env.tmp / trigger
    return f"while [ ! -e {path} ]; do sleep 0.05; done; echo ending; exit {code}"


def test_damaged_records_are_named_and_the_rest_is_supervised(env: Env) -> None:
    daemon = env.start_daemon("--liveness", "0.5")
    ended = env.submit(env.blueprint("ended", command="true", ajetd="gpus: 0"))
    live = env.submit(env.blueprint("live", command=_waiting_command(env, 3), ajetd="gpus: 0"))
    env.wait_done(ended)
    wait_for(lambda: env.record(live).get("started_at"), what="the live run to start")
    daemon.send_signal(signal.SIGTERM)
    daemon.wait(timeout=20)
    runs = env.home / "runs"
    (runs / ended / "state.json").write_text("")  # emptied
    (env.home / "daemon.json").write_text("garbage{")
    (runs / "zzzzzz").write_text("a stray file where a run folder should be\n")
    gone = runs / "q1w2e3"  # a run that had trials but lost its record
    gone.mkdir(mode=0o700)
    (gone / "blueprint.md").write_bytes((runs / ended / "blueprint.md").read_bytes())
    (gone / "trial-1.log").write_text("it ran once\n")
    daemon = env.start_daemon("--liveness", "0.5")
    shown = env.cli("status")
    assert shown.returncode == 0, shown.stderr
    for needle in (f"runs/{ended}/state.json", "runs/zzzzzz", "runs/q1w2e3", live):
        assert needle in shown.stdout, (needle, shown.stdout)
    as_json = env.cli("status", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert live in [r["run_id"] for r in json.loads(as_json.stdout)]
    assert f"runs/{ended}/state.json" in as_json.stderr and "runs/zzzzzz" in as_json.stderr
    one = env.cli("status", ended, "--json")
    assert one.returncode == 1 and f"runs/{ended}/state.json" in one.stderr, one.stderr
    for args in (("status", "q1w2e3"), ("wait", "q1w2e3", "--timeout", "5")):
        lost = env.cli(*args)  # not "queued, being admitted": it never will be
        assert lost.returncode == 1 and "runs/q1w2e3/state.json is missing" in lost.stderr
    assert "Traceback" not in one.stderr + as_json.stderr + shown.stderr
    (env.tmp / "end-now").touch()  # the live run is still supervised: its end is recorded
    status = env.wait_done(live)
    assert (status["status"], status["exit_code"]) == ("failed", 3)
    assert json.loads((env.tmp / "results" / "live" / "finish.flag").read_text())["exit_code"] == 3
    assert not (gone / "state.json").exists()  # not admitted again: no second launch
    assert env.launches() == []  # (fakejet never ran: the commands are shell lines)
    log = env.daemon_log()
    assert f"runs/{ended}/state.json" in log and "runs/q1w2e3" in log
    assert daemon.poll() is None


def test_a_file_where_a_folder_of_the_home_should_be_is_named(env: Env) -> None:
    env.home.mkdir(mode=0o700)
    (env.home / "inbox").write_text("not a folder\n")
    started = env.cli("daemon", timeout=20)
    assert started.returncode == 1 and f"{env.home / 'inbox'} is not a folder" in started.stderr
    (env.home / "inbox").unlink()
    (env.home / "daemon.json").mkdir()  # not even a file: status still lists the runs
    shown = env.cli("status")
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr


def test_a_damaged_record_is_named_without_a_daemon(env: Env) -> None:
    """Without a daemon: `status` reads the home itself and still names what it skipped."""
    (env.home / "runs").mkdir(parents=True, mode=0o700)
    (env.home / "runs" / "abc123").mkdir(mode=0o700)
    (env.home / "runs" / "abc123" / "state.json").write_text('{"run_id": "abc1')
    shown = env.cli("status")
    assert shown.returncode == 0, shown.stderr
    assert "runs/abc123/state.json" in shown.stdout


# -- the daemon killed at any write ----------------------------------------------------------
NCCL = (
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
    "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5"
)


@pytest.mark.parametrize(
    "after",
    [
        "source-name",  # a claim cut before its rename: the id submit printed is kept
        "trial-1.go",  # the first trial let go, its start not on record
        "trial-2.sh",  # the relaunch prepared after the failure
        "trial-2.go",  # the relaunch let go
        "finish.flag",  # the reports written, the record not yet saying so
    ],
)
def test_a_daemon_killed_after_any_write_ends_the_run_once(
    env: Env, after: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trial fails (NCCL), is relaunched with the fix and succeeds; the daemon dies right
    after `after` is written and a new one takes over: each trial launched once, the run ended
    once, finish.flag written once and saying what the record says."""
    launches = env.tmp / "launches"
    command = (
        f"echo x >> {launches}; sleep 0.2; "
        f"if [ -z \"$NCCL_NVLS_ENABLE\" ]; then echo '{NCCL}'; exit 1; fi; echo ok"
    )
    kill = KillAfter(monkeypatch, after)
    first = Loop(env)
    with pytest.raises(Killed):
        try:
            run_id = first.submit(env.blueprint("killed", command=command, ajetd="gpus: 0"))
            first.until_done(run_id)
        finally:
            first.close()
    kill.disarm()
    run_id, written = kill.run_id("killed"), kill.written
    second = Loop(env)
    try:
        second.until(lambda: run_id in second.daemon.runs, f"run {run_id} to be taken up")
        flag = second.until_done(run_id)
        second.turn()
    finally:
        second.close()
    assert launches.read_text().count("x") == 2
    ended = [text for _, text in second.events(run_id) if text.startswith("run ended")]
    assert len(ended) == 1, ended
    assert (flag["run_id"], flag["status"], flag["trials"]) == (run_id, "succeeded", 2)
    assert sum(p.endswith("/finish.flag") for p in written) == 1
    assert sorted(p.name for p in (env.home / "runs").iterdir()) == [run_id]


def test_a_claim_cut_inside_its_first_write_keeps_the_submitted_id(env: Env) -> None:
    """A daemon killed while writing `source-name` (the claim's first write, before its
    rename) leaves that write's temporary file in the run's folder: the next daemon still
    gives the blueprint the id `ajetd submit` printed (it gave a fresh one, and the printed id
    was unknown to `status` and `wait`: bench/chaos.py found it)."""
    run_id = env.submit(env.blueprint("cut", command="true", ajetd="gpus: 0"))  # no daemon yet
    folder = env.home / "runs" / run_id
    folder.mkdir(parents=True)
    (folder / ".source-name.k2x9_a7q.tmp").write_text("cu")  # what the kill left
    # walk87 F2: claims cut whose blueprints were claimed again under other ids (a kill, a
    # full home): nothing names them, and they went for ever; now gone at the next start
    stray = env.home / "runs" / "my8hvr"
    stray.mkdir()
    (stray / ".source-name.x5x6t8b8.tmp").write_text("x")
    (env.home / "runs" / "e4mpty").mkdir()
    env.start_daemon()
    assert env.wait_done(run_id)["status"] == "succeeded"
    assert sorted(p.name for p in (env.home / "runs").iterdir()) == [run_id]
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == [".pipes"]


def test_a_claim_that_fails_leaves_no_folder(tmp_path: Path) -> None:
    """walk87 F2: a claim refused by the home (ENOSPC, EPERM) left the folder it made; 57
    empty folders stayed after a full home's intake. Now the failed claim removes it."""
    from ajetd.adapters import inbox

    home = Home(tmp_path / "home")
    home.ensure()
    gone = home.inbox / "abc123__gone.md"  # a file another claimer took meanwhile
    assert inbox.claim(home, inbox.Candidate(gone, "abc123", "gone"), "abc123") is None
    blocked = home.inbox / "def456__x.md"
    blocked.write_text("# x\n")
    home.run_dir("def456").mkdir(mode=0o700)
    (home.run_dir("def456") / "blueprint.md").mkdir()  # the rename cannot replace it
    (home.run_dir("def456") / "blueprint.md" / "keep").write_text("")
    with pytest.raises(OSError):
        inbox.claim(home, inbox.Candidate(blocked, "def456", "x"), "def456")
    assert not (home.run_dir("def456") / "source-name").exists()
    assert not home.run_dir("abc123").exists()


@pytest.mark.parametrize("cause", ["stopped", "time_limit"])
def test_a_stop_is_on_record_before_the_program_is_signalled(
    env: Env, loop: Loop, cause: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon killed right after it sent the stop's SIGINT must find the stop on record:
    the program's exit 130 then ends the run `stopped` (or `time_limit`), not `failed` (the
    record was saved after the signal, and the stop request removed before it was saved:
    bench/chaos.py found a stopped run recorded failed)."""
    from ajetd.hosts.local import LocalHost

    on_disk: list[tuple[str, Any, bool]] = []
    real = LocalHost.signal

    def signal_(self: LocalHost, run: Run, pid: int | None, name: str) -> int:
        record = json.loads((env.home / "runs" / run.run_id / "state.json").read_text())
        request = (env.home / "control" / f"{run.run_id}.stop").exists()
        on_disk.append((name, record["stop_cause"], request))
        return real(self, run, pid, name)

    monkeypatch.setattr(LocalHost, "signal", signal_)
    bp = env.blueprint("stopme", command="sleep 1000", max_time="2m", ajetd="gpus: 0")
    run_id = loop.submit(bp)
    loop.started(run_id)
    if cause == "stopped":
        request = env.home / "control" / f"{run_id}.stop"
        request.write_text("stop\n")
        loop.until(lambda: on_disk, "the stop's first signal")
    else:
        loop.reach(loop.t0(run_id) + 120)
    assert on_disk[0] == ("INT", cause, cause == "stopped"), on_disk
    flag = loop.until_done(run_id)
    assert flag["status"] == cause
    assert not (env.home / "control" / f"{run_id}.stop").exists()  # taken once on record


# -- a result dir that the program itself fills ----------------------------------------------
def test_a_failure_the_full_log_lost_is_read_from_the_pane(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The program prints its NCCL error (after 14 KB of lines, so that the log needs new
    pages) while its result dir's disk is full, so the log's writer drops that line; room
    comes back before it exits. The pane kept the line: the
    failure is named from it and the known fix is tried (before: 'no known failure in the
    output', failed; bench/chaos.py --full-disk found it)."""
    disk = tmpfs(env.tmp / "small", "1m")
    result = disk / "out"
    hog = env.tmp / "small" / "hog.bin"
    command = (
        'if [ -z "$NCCL_NVLS_ENABLE" ]; then '
        f"head -c 2000000 /dev/zero > {hog} 2>/dev/null; seq 1 3000; echo '{NCCL}'; sleep 3; "
        f"rm {hog}; sleep 1.5; exit 1; fi; echo ok"
    )
    env.start_daemon()
    run_id = env.submit(env.blueprint("lost", command=command, result=str(result), ajetd="gpus: 0"))
    status = env.wait_done(run_id)
    assert (status["status"], status["trials"]) == ("succeeded", 2), status["reason"]
    first = (result / "logs" / "trial-1.log").read_text()
    assert NCCL not in first.splitlines()  # the log's copy lost it (the banner quotes it)
    trials_md = (result / "trials.md").read_text()
    assert "`nccl_error`" in trials_md
    # read from the pane, it names no line of any file: never `line 0`
    assert "no log line" in trials_md and "line 0," not in trials_md, trials_md


def test_the_pane_tells_only_its_own_trials_failure(daemon_env: Env) -> None:
    """A relaunch reuses the pane, whose scrollback keeps the trial before (what scrolled off
    its screen: the 100 lines after the error push it there): a second trial that fails
    naming nothing is not read as the first one's NCCL error again."""
    env = daemon_env
    command = f"if [ -z \"$NCCL_NVLS_ENABLE\" ]; then echo '{NCCL}'; seq 1 100; exit 1; fi; exit 3"
    run_id = env.submit(env.blueprint("twice", command=command, ajetd="gpus: 0"))
    status = env.wait_done(run_id)
    assert (status["status"], status["trials"], status["exit_code"]) == ("failed", 2, 3)
    assert "no known failure" in status["reason"], status["reason"]
    assert [f["kind"] for f in status["diagnosis"]] == []


def test_a_result_dir_the_program_fills_keeps_its_log_and_gets_its_reports(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The program writes into its result dir until the disk is full (its own trial log is
    there too); space returns while it still runs: what it prints afterwards reaches the log,
    the run ends with its exit code and why, and finish.flag is written.

    The log's writer meeting the full disk is waited for as the kernel's event of it: its
    `cat` fails, the writer closes the log (IN_CLOSE_WRITE), sleeps a second and starts a new
    `cat` that holds the log open again. The test sampled "no process holds the log open",
    true only in that second: under load (a poll of every process's files taking longer than
    it) it was missed, for good once the output was all consumed (20 s timeouts at load 13,
    2 in 5). The program prints only once the watch is there, so no close comes before it."""
    disk = tmpfs(env.tmp / "small", "1m")
    result = disk / "out"
    hog, go, full = result / "hog.bin", env.tmp / "go-on", env.tmp / "printed-while-full"
    filled, speak = env.tmp / "disk-filled", env.tmp / "print-now"
    command = (
        f"head -c 2000000 /dev/zero > {hog}; touch {filled}; "
        f"while [ ! -e {speak} ]; do sleep 0.05; done; seq 1 4000; touch {full}; "
        f"while [ ! -e {go} ]; do sleep 0.05; done; echo printed-after-space-returned; exit 7"
    )
    env.start_daemon("--liveness", "0.5")
    run_id = env.submit(env.blueprint("hog", command=command, result=str(result), ajetd="gpus: 0"))
    log = result / "logs" / "trial-1.log"
    wait_for(filled.exists, what="the program to fill its disk")
    wait_for(log.exists, what="the log's writer to open the log")
    with Events(log.parent, IN_CLOSE_WRITE) as closed:
        speak.touch()  # output the full disk cannot take
        wait_for(full.exists, what="the program to print while its disk is full")
        wait_for(lambda: log.name in closed.names(), what="the log's writer to meet the full disk")
    hog.unlink()
    go.touch()
    status = env.wait_done(run_id)
    assert (status["status"], status["exit_code"]) == ("failed", 7)
    flag = json.loads((result / "finish.flag").read_text())
    assert (flag["status"], flag["exit_code"]) == ("failed", 7)
    text = log.read_text()
    assert "printed-after-space-returned" in text and "exited with code 7" in text
    assert "[ajetd] output is missing here" in text  # what the full disk took is said


# -- a full home between two experiments of a campaign ---------------------------------------
def test_a_full_home_between_experiments_delays_the_next_never_loses_it(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The home fills while a campaign's baseline runs: its end and the next experiment's
    blueprint wait in memory (the row too: nothing reported that is not recorded); once
    there is room the next experiment runs, and each gets one ledger row."""
    from test_campaign_live import CONFIG, _folder, _ledger, committed_baseline

    tmpfs(env.home, "3m")
    committed_baseline(env)
    go = env.tmp / "go"
    spec = (
        "stop: {max_experiments: 2}\n"
        "experiments: [{name: two, description: more, overrides: ['grpo.max_num_steps=6']}]\n"
    )
    command = (
        f"while [ ! -e {go} ]; do sleep 0.05; done; python examples/run_grpo.py --config {CONFIG}"
    )
    env.start_daemon("--liveness", "0.5")
    made = env.cli("campaign", str(_folder(env, "full", spec, command)))
    assert made.returncode == 0, made.stderr
    cid = made.stdout.strip()

    def campaign() -> dict[str, Any]:
        shown = env.cli("campaign", "status", cid, "--json")
        return dict(json.loads(shown.stdout)) if shown.returncode == 0 else {}

    wait_for(lambda: campaign().get("running"), 30, "the baseline to run")
    filler = fill(env.home)
    go.touch()
    wait_for(lambda: "ended succeeded" in env.daemon_log(), 30, "the baseline to end")
    assert not (env.tmp / "campaigns" / "full" / "ledger.tsv").exists() or not _ledger(env, "full")
    assert "DISK FULL" in env.cli("status").stdout
    filler.unlink()
    wait_for(lambda: campaign().get("state") == "done", 60, "the campaign to end")
    assert [(r["index"], r["status"]) for r in _ledger(env, "full")] == [
        ("0", "keep"),
        ("1", "keep"),
    ]


# -- a home of many ended runs ---------------------------------------------------------------
def _ended(n: int, at: float) -> Run:
    trial = Trial(1, "true", f"ajet_old_{n}", at, at + 60, n % 2)
    run = Run(
        run_id=f"o{n:05d}",
        source=f"old{n}.md",
        submitted_at=at,
        purpose=f"old run {n}",
        session=f"ajet_old_{n}",
        state=State.RUNNING,
        started_at=at,
        trials=(trial,),
        history=({"global_steps": 1, "mean_reward": n / 300},),
        session_closed=True,
    )
    ended = model.finish(
        run, Status.FAILED if n % 2 else Status.SUCCEEDED, "exited", n % 2, at + 60
    )
    return replace(ended, finish_hook_due=False)  # long settled: its on_finish fired then


def test_a_home_of_hundreds_of_ended_runs(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """Written with the store's own functions: `status` reads the newest in full and counts
    the rest (the same view as reading all), `--json` lists all, and the daemon's tick
    looks at none of them (nothing is left to do for any)."""
    home = Home(env.home)
    home.ensure()
    for n in range(300):
        run = _ended(n, 1_700_000_000 + n * 100)
        home.run_dir(run.run_id).mkdir(mode=0o700)
        home.save_run(run)
    home.state_file("o00150").write_text("{")  # one damaged among them
    f, now = Filters(), 1_700_100_000.0
    full = overview(home.listing(), f, now, 200, False, {})
    assert overview(home.listing(f.recent), f, now, 200, False, {}) == full
    assert "o00150/state.json" in plain(daemon_lines(False, home.daemon_info(), 200))
    shown = env.cli("status")
    assert shown.returncode == 0 and "o00299" in shown.stdout and "o00289" not in shown.stdout
    assert "289 older ended run(s) not shown" in shown.stdout, shown.stdout
    listed = json.loads(env.cli("status", "--json").stdout)
    assert len(listed) == 299 and listed[0]["run_id"] == "o00000"
    monkeypatch.setattr(slots, "ENDED_IN_MEMORY", 50)  # the daemon keeps the recent ones
    loop = Loop(env)
    try:
        runs = loop.daemon.runs
        assert len(runs) == 299 and not runs.unsettled and len(runs.ended) == 50
        assert (runs["o00001"].status, runs["o00002"].exit_code) == (Status.FAILED, 0)  # disk
        assert len(runs.ended) == 50
        loop.turn()
    finally:
        loop.close()


def test_a_program_that_fills_its_result_dir_and_fails_is_said_to_have_a_full_disk(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """Its own words about the full disk never reached its log (the log is on that disk):
    the diagnosis says so anyway; the reports wait for room, named in `attention`."""
    disk = tmpfs(env.tmp / "small", "1m")
    result = disk / "out"
    command = f"head -c 2000000 /dev/zero > {result / 'hog.bin'} 2>/dev/null || exit 28"
    env.start_daemon("--liveness", "0.5")
    run_id = env.submit(env.blueprint("hog", command=command, result=str(result), ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("attention"), 30, what="the run to end, held")
    status = env.status(run_id)
    assert (status["state"], status["status"], status["exit_code"]) == ("done", "failed", 28)
    assert status["diagnosis"][0]["kind"] == "disk_full", status["diagnosis"]
    assert str(result) in status["diagnosis"][0]["evidence"]
    assert str(result) in status["attention"] and not (result / "finish.flag").exists()
    (result / "hog.bin").unlink()
    wait_for((result / "finish.flag").exists, 30, what="finish.flag once there is room")
    assert json.loads((result / "finish.flag").read_text())["exit_code"] == 28


def test_a_live_plot_that_cannot_start_is_tried_again_at_its_pace(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A home that refuses the plot's spec (full, or its folder gone) is not asked again at
    every tick: once per drawing period (it logged a warning several times a second)."""
    home = Home(tmp_path / "home")  # never created: every write into a run folder fails
    (tmp_path / "out").mkdir()
    run = Run("abc123", "x.md", 0.0, result_dir=str(tmp_path / "out"), history=({"a": 1},))
    plots = LivePlots(every_s=60)
    with caplog.at_level(logging.WARNING):
        for now in (100.0, 100.5, 101.0, 159.0):
            plots.request(home, run, now)
        assert sum("cannot start the plotter" in r.getMessage() for r in caplog.records) == 1
        plots.request(home, run, 160.5)
        assert sum("cannot start the plotter" in r.getMessage() for r in caplog.records) == 2


# -- a log whose folder goes away ------------------------------------------------------------
def _pipe_helpers(log: Path) -> list[psutil.Process]:
    """The `pipe-pane` processes that copy a pane's output to `log` (by their command line)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if str(log) in " ".join(proc.cmdline()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


@pytest.mark.parametrize("end", ["pane", "server"])
def test_a_logs_writer_ends_with_its_pane_when_the_logs_folder_is_gone(env: Env, end: str) -> None:
    """The trial's log cannot be opened (its result dir was removed or unmounted, or `cat`
    met a full disk and its folder went away before it opened the log again): the pipe's
    copier keeps trying while the pane lives, and ends once the pane (or the whole tmux server)
    is gone (where the log's folders cannot be made again, owner-only, one level each: their
    parent gone too; and no spare is given). It used to retry `cat >> log` every second for ever, never reading the pipe, so
    never seeing its end: an orphan per such run, a `sleep` started each second."""
    # no such folder, nor its parent: it cannot be made again (one level each, never -p)
    log = env.tmp / "unmounted" / "removed" / "logs" / "trial-1.log"
    script = env.tmp / "prog.sh"
    script.write_text("echo first; read -r _\n")  # prints, then waits for Enter
    tmux = Tmux(env.socket)
    pane = tmux.new_session("ajet_gone", str(env.tmp), str(script), str(log), "trial-1")
    wait_for(lambda: _pipe_helpers(log), what="the copier trying to open the log")
    if end == "pane":
        env.tmux("kill-pane", "-t", pane.pane_id)
    else:
        env.tmux("kill-server")
    wait_for(lambda: not _pipe_helpers(log), timeout=10, what="the copier to end with its pane")
    assert not log.parent.parent.parent.exists()  # nothing made where the folder was


def test_a_stop_asked_while_the_hang_rule_stops_the_run_is_not_lost(env: Env) -> None:
    """`ajetd stop` asked while the hang rule is stopping a run (its program still ending) was
    taken off at once though nothing acted on it: the hang rule then relaunched the run the
    user had asked to stop. The request now stays until a stop of the user's is on record or
    the run ends: the run ends stopped, with its one trial."""
    release = env.tmp / "release"
    command = (
        f"trap '' INT TERM; echo working; while [ ! -e {release} ]; do sleep 0.05; done; exit 130"
    )
    env.start_daemon("--grace-int", "120")
    rule = "hang: {window: 1s, action: relaunch}\nmax_trials: 2"
    run_id = env.submit(env.blueprint("hangstop", command=command, ajetd=rule))
    events = env.home / "runs" / run_id / "events.jsonl"
    wait_for(
        lambda: events.exists() and "stopping: hang" in events.read_text(),
        30,
        what="the hang rule's stop",
    )
    asked = env.cli("stop", "--no-wait", run_id)
    assert asked.returncode == 0, asked.stderr
    wait_for(
        lambda: not (env.home / "control" / f"{run_id}.stop").exists(),
        20,
        what="the daemon to take the stop request",
    )
    release.touch()
    status = env.wait_done(run_id, timeout=30)
    assert (status["status"], status["trials"]) == ("stopped", 1), status["reason"]


def test_a_stop_asked_after_the_program_failed_leaves_the_run_failed(env: Env) -> None:
    """The daemon down, the program fails (an import error: no fix); `ajetd stop` is asked
    after that, before a daemon starts again: the run is recorded failed with its diagnosis,
    not 'stopped' as though the request had been the stop whose record a killed daemon lost
    (only a request filed before the exit is read so)."""
    release = env.tmp / "release"
    command = (
        f"while [ ! -e {release} ]; do sleep 0.05; done; "
        "echo \"ModuleNotFoundError: No module named 'flash_attn_missing'\"; exit 1"
    )
    env.start_daemon()
    run_id = env.submit(env.blueprint("failsalone", command=command))
    wait_for(
        lambda: any(t.get("started_at") for t in env.record(run_id).get("trials", [])),
        30,
        what="the trial to start",
    )
    env.daemons[-1].kill()
    env.daemons[-1].wait(timeout=20)
    release.touch()
    exit_file = env.home / "runs" / run_id / "trial-1.exit"
    wait_for(lambda: exit_file.exists() and exit_file.read_text().endswith("\n"), 20)
    ended = float(exit_file.read_text().split()[1])
    # the user asks a while after (past the lag allowed to a trial host's clock)
    wait_for(lambda: time.time() > ended + CLOCK_SLACK_S + 0.1, 10, what="the clock")
    asked = env.cli("stop", run_id)
    assert asked.returncode == 1 and "no daemon" in asked.stderr, asked.stderr
    env.start_daemon()
    status = env.wait_done(run_id)
    assert (status["status"], status["exit_code"]) == ("failed", 1), status["reason"]
    assert [f["kind"] for f in status["diagnosis"]][:1] == ["import_error"]


def test_a_stop_request_stays_until_the_stopped_runs_end_is_on_disk(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """With a full home the stop's record and the run's end are held in memory; the request
    was taken off as soon as the run had ended in memory, so a daemon killed before the disk
    had room left a record with no stop on it and no request: the program's exit 130 read as
    a failure by the next daemon. The request stays until the end is on disk."""
    from loopkit import Loop

    tmpfs(env.home, "2m")
    loop = Loop(env)
    try:
        run_id = loop.submit(env.blueprint("heldstop", command="sleep 1000", ajetd="gpus: 0"))
        loop.started(run_id)
        request = env.home / "control" / f"{run_id}.stop"
        request.write_text("stop\n")
        filler = fill(env.home)
        loop.until(lambda: loop.run(run_id).state is State.DONE, "the run to end, held")
        assert not loop.daemon.home.saved(run_id)
        loop.turn(True)  # passes after the end, the home still full
        loop.turn(True)
        assert request.exists()
    finally:
        loop.close()  # the daemon is killed: what it held in memory is lost
    filler.unlink()
    again = Loop(env)
    try:
        flag = again.until_done(run_id)
    finally:
        again.close()
    assert (flag["status"], flag["exit_code"]) == ("stopped", 130), flag


def test_the_hang_rules_stop_held_by_a_full_home_is_kept_on_its_pane(
    env: Env, tmpfs: Callable[[Path, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop is on record before its first signal; with a full home that record is held in
    memory, and a daemon killed then left a record with no stop while the program's exit to
    the signal (130) waited on its pane: the next daemon called the run failed by SIGINT (a
    plateau's stop lost its `plateau`, the hang rule's its reason). The pane keeps the stop
    too (`core.stopnote`), before the first signal goes out, and the next daemon ends the run
    as the stop decided."""
    from ajetd.hosts.local import LocalHost

    noted_at_signal: list[str] = []
    signal_run = LocalHost.signal

    def signal_noting(host: LocalHost, run: Run, pid: int | None, name: str) -> int:
        panes = Tmux(env.socket).panes()
        noted_at_signal.extend(p.stop_note for p in panes if p.session == run.session)
        return signal_run(host, run, pid, name)

    monkeypatch.setattr(LocalHost, "signal", signal_noting)
    tmpfs(env.home, "2m")
    rule = "gpus: 0\nhang: {window: 1m, action: stop}"
    loop = Loop(env)
    try:
        bp = env.blueprint("heldhang", command="sleep 1000", ajetd=rule, max_time="2h")
        run_id = loop.submit(bp)
        seen = loop.started(run_id)
        filler = fill(env.home)
        loop.reach(seen + 120)  # flagged at one window, stopped after a second
        assert loop.run(run_id).stop_cause is model.StopCause.HANG
        loop.until(lambda: loop.run(run_id).state is State.DONE, "the run to end, held")
        assert not loop.daemon.home.saved(run_id)
        held = loop.run(run_id)
        assert held.status is Status.FAILED and held.reason.startswith("stopped by the hang rule")
        pane = next(p for p in Tmux(env.socket).panes() if p.session == held.session)
        assert pane.stop_note.startswith(f"{run_id} 1 hang ")
        assert noted_at_signal and noted_at_signal[0] == pane.stop_note  # before the SIGINT
    finally:
        loop.close()  # the daemon is killed: what it held in memory is lost
    filler.unlink()
    again = Loop(env, FakeClock(loop.clock()))  # time goes on from where the first left it
    try:
        flag = again.until_done(run_id)
        events = [text for _, text in again.events(run_id)]
    finally:
        again.close()
    assert (flag["status"], flag["exit_code"]) == ("failed", 130), flag
    assert flag["reason"].startswith("stopped by the hang rule: no output for 2m"), flag
    assert any("as its tmux pane kept it" in text for text in events), events


def _running(started_at: float = 1700000000.0, number: int = 2) -> Run:
    run = Run(run_id="abc123", source="x.md", submitted_at=1.0)
    run = model.add_trial(run, Trial(number=number, command="sleep 1", session="ajet_x"))
    return model.trial_started(run, started_at, 4242)


T0 = 1700000000.0


@pytest.mark.parametrize(
    "note",
    [
        "",
        "abc123 2 plateau",
        "abc123 2 plateau x why",
        "abc123 2 soon 1700000001.0 why",
        "abc123 2 plateau nan why",
        "abc123 2 plateau inf why",
        "abc123 2 plateau 1700009999.0 from the future",
        "abc123 2 plateau 1699999000.0 before its trial began",
        # another run's, the trial before (a relaunch reuses the pane), one set for the whole
        # server or the window (tmux shows a pane those too): never this trial's stop
        "zzz999 2 plateau 1700000001.0 another run",
        "abc123 1 plateau 1700000001.0 the trial before",
        "plateau 1700000001.0 - set once in tmux.conf",
    ],
)
def test_a_stop_note_not_this_trials_own_is_not_taken(note: str) -> None:
    """The pane's option is the tmux user's too, and tmux shows a pane the value set for its
    window, session or server: anything but a note ajetd wrote for this run's current trial,
    in the past, is no stop (a `set -g` of one stopped every run)."""
    assert stopnote.noted_stop(_running(), note, T0 + 10) is None


def test_a_stop_note_reads_back_as_it_was_written_with_its_signals_to_send_again() -> None:
    run = _running()
    why = "val/acc flat;\n5 checks;"
    began = model.signal_sent(model.begin_stop(run, model.StopCause.PLATEAU, T0 + 5, why), "INT")
    note = stopnote.stop_note(began)
    assert note == "abc123 2 plateau 1700000005.0 val/acc flat; 5 checks"  # one line, no `;`
    back = stopnote.noted_stop(run, note, T0 + 10)
    assert back is not None
    assert (back.stop_cause, back.stop_began_at, back.stop_reason) == (
        model.StopCause.PLATEAU,
        T0 + 5,
        "val/acc flat; 5 checks",
    )
    # the signals go out again by the stop's clock: a note set just before a signal that a
    # killed daemon never sent left the run waiting on it
    assert back.signals_sent == ()
    assert stopnote.noted_stop(began, note, T0 + 10) is None  # a record with its stop keeps it


def test_a_stop_asked_again_keeps_the_first_requests_time(env: Env) -> None:
    """The request's time tells an exit after it (the stop's) from one before it: asked again
    (no daemon to take it), the request filed first is kept, not written anew."""
    run_id = env.submit(env.blueprint("twice", command="sleep 1000"))
    request = env.home / "control" / f"{run_id}.stop"
    assert env.cli("stop", run_id).returncode == 1  # no daemon: filed, it waits
    first = (request.read_text(), request.stat().st_mtime_ns)
    wait_for(lambda: time.time_ns() > first[1] + 10_000_000, 5, what="the clock to move")
    assert env.cli("stop", run_id).returncode == 1
    assert (request.read_text(), request.stat().st_mtime_ns) == first


def test_a_second_stop_of_a_stopping_run_says_it_is_already_stopping(env: Env) -> None:
    """Before: two `ajetd stop` of one run each printed `run X stopped: ...` as if each had
    stopped it. The second files no request (the stop is on record) and says at once that
    the run is already stopping, then waits for the same end (exit 0); one stop is
    journalled."""
    env.start_daemon()
    stubborn = "trap '' INT TERM; echo up; while :; do sleep 0.05; done"  # ends by SIGKILL
    run_id = env.submit(env.blueprint("stubborn", command=stubborn, ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("started_at"), what="the run to start")
    first = env.cli_started("stop", run_id)
    try:
        wait_for(lambda: env.record(run_id).get("state") == "stopping", what="the first stop")
        second = env.cli("stop", run_id)
        said_first, _ = first.communicate(timeout=60)
    finally:
        first.kill()
    assert first.returncode == 0 and said_first.startswith(f"run {run_id} stopped: "), said_first
    assert second.returncode == 0, second
    assert second.stderr.startswith(
        f"ajetd: run {run_id} is already stopping (a stop was asked at "
    ), second.stderr
    assert "by another `ajetd stop`); waiting for it to end" in second.stderr
    assert second.stdout.startswith(f"run {run_id} stopped: "), second.stdout
    journal = (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert journal.count("stopping: stopped") == 1, journal
    again = env.cli("stop", run_id, "--no-wait")
    assert again.stdout.strip() == f"run {run_id} already ended: stopped", again


@pytest.mark.parametrize("replaced", ["removed", "link"])
def test_a_result_dir_removed_mid_run_loses_no_output(env: Env, replaced: str) -> None:
    """Walk 82, M2: `rm -rf` of a live run's result dir lost all of its output from then on
    (`cat` wrote into the unlinked file, and a new open dropped it), `ajetd logs` failed, and
    the reports named a log that was not there. The writer sees the name no longer reaches its
    file within a second: it makes the folders again, owner-only, copies the old text back
    and goes on; where a link stands in the dir's place it never writes through it, the output
    goes on in ajetd's own folder, and trials.md names that file. The daemon notes it in the
    timeline and the run's warnings. Real tmux, a real daemon."""
    env.start_daemon()
    go, result = env.tmp / "go", env.tmp / "results" / "gone"
    command = f"echo before; while [ ! -e {go} ]; do sleep 0.05; done; echo after"
    run_id = env.submit(env.blueprint("gone", command=command))
    log = result / "logs" / "trial-1.log"
    wait_for(lambda: printed(log, "before"), what="the first output")
    shutil.rmtree(result)
    elsewhere = env.tmp / "elsewhere"
    if replaced == "link":  # another's link where the dir was: never written through
        elsewhere.mkdir()
        result.symlink_to(elsewhere)
    warned = wait_for(
        lambda: [w for w in env.status(run_id)["warnings"] if "log folder vanished" in w],
        what="the vanished folder in status",
    )
    go.touch()
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    events = (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert "trial 1's log folder vanished at" in events, events
    if replaced == "removed":
        assert "made again (owner-only)" in warned[0], warned
        assert (result / "logs").stat().st_mode & 0o777 == 0o700
        kept = log
        assert "- log: `logs/trial-1.log`" in (result / "trials.md").read_text()
    else:
        kept = env.home / "runs" / run_id / "trial-1.log"
        assert warned[0].endswith(f"the output goes on in {kept}, the reports beside it")
        assert list(elsewhere.iterdir()) == [], "written through the link"
        trials = (kept.parent / "trials.md").read_text()
        assert f"- log: `{kept}` (this dir's logs/ folder vanished" in trials, trials
    text = kept.read_text()
    assert text.index("\nbefore\n") < text.index("vanished") < text.index("\nafter\n"), text
    reports = result if replaced == "removed" else kept.parent  # never through the link
    tail = (reports / "results.md").read_text().split("## Last 50 lines of output")[1]
    assert "\nafter\n" in tail and "\nbefore\n" in tail, tail
    assert (reports / "finish.flag").exists()
    logs = env.cli("logs", run_id)
    assert logs.returncode == 0 and "after" in logs.stdout, logs.stderr


def test_a_log_file_deleted_mid_run_is_said_as_its_file_not_its_folder(env: Env) -> None:
    """Walk97 F12: a user deleted only `logs/trial-1.log` (to free room) mid-run; ajetd made
    it again with its earlier text, but said "trial 1's log folder vanished ... (the result
    dir removed, moved or replaced)", which is not what happened. Now the warning, the journal
    and the log's own line say its file vanished and its folder stood; the folder stays as
    the user had it. Real tmux, a real daemon."""
    env.start_daemon()
    go, result = env.tmp / "go", env.tmp / "results" / "fileonly"
    command = f"echo before; while [ ! -e {go} ]; do sleep 0.05; done; echo after"
    run_id = env.submit(env.blueprint("fileonly", command=command, ajetd="gpus: 0"))
    log = result / "logs" / "trial-1.log"
    wait_for(lambda: printed(log, "before"), what="the first output")
    mode = (result / "logs").stat().st_mode
    log.unlink()
    warned = wait_for(
        lambda: [w for w in env.status(run_id)["warnings"] if "vanished" in w],
        what="the vanished file in status",
    )
    assert warned[0].startswith("trial 1's log file vanished at "), warned
    assert "its folder stood" in warned[0] and "folder vanished" not in warned[0], warned
    assert warned[0].endswith("made again; the log goes on there, its earlier text copied")
    go.touch()
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    events = (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert "trial 1's log file vanished at" in events and "folder vanished" not in events
    assert (result / "logs").stat().st_mode == mode
    text = log.read_text()
    assert "[ajetd] this log's file vanished (removed or moved; its folder stood)" in text, text
    assert text.index("\nbefore\n") < text.index("vanished") < text.index("\nafter\n"), text


def test_a_killed_trial_script_is_said_as_such_not_as_a_vanished_session(
    daemon_env: Env,
) -> None:
    """Walk 30, 6: a kill -9 of the pane's trial script ended the run `lost` with "tmux
    session ... vanished", though the session was there with a dead pane: the reason says
    the pane died with its script killed, and that the session is still there."""
    env = daemon_env
    run_id = env.submit(env.blueprint("killed", command="sleep 300", ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("started_at"), what="the run to start")
    record = env.record(run_id)
    pane_pid = record["trials"][-1]["pane_pid"]
    os.kill(pane_pid, signal.SIGKILL)
    status = env.wait_done(run_id, timeout=120)
    assert status["status"] == "lost", status
    assert "vanished" not in status["reason"], status["reason"]
    assert "its trial script was killed" in status["reason"], status["reason"]


def test_a_run_that_ends_on_a_full_home_shows_its_end_and_no_false_none(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """Before: the run's record held in memory, `status RUN` laid only its state over the
    record on disk: its trial read `running  exit -` under `state succeeded`, and its
    validation records, read after the disk filled, `no validation results were written`.
    The daemon publishes the last trial's end and how many records it holds (daemon.json);
    once there is room the record says the same."""
    tmpfs(env.home, "2m")
    env.start_daemon()
    go = env.tmp / "go"
    config = env.config("held")
    command = (
        f"while [ ! -e {go} ]; do sleep 0.05; done; python -m fakejet.launcher --conf {config}"
    )
    run_id = env.submit(env.blueprint("held", command=command, ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("started_at"), what="the run to start")
    filler = fill(env.home)
    go.write_text("")

    def published() -> dict[str, Any]:
        try:
            return dict(json.loads((env.home / "daemon.json").read_text())["unsaved"][run_id])
        except (OSError, ValueError, KeyError):
            return {}

    wait_for(lambda: published().get("state") == "done", 30, "the run's end, held")
    assert not env.record(run_id).get("history")  # none of its records is on disk
    shown = env.cli("status", run_id)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    trial = next(line for line in lines if line.startswith("  #1 "))
    assert "running" not in trial and "exit 0" in trial, shown.stdout
    assert "no validation results were written" not in shown.stdout, shown.stdout
    assert "none on disk yet" in shown.stdout, shown.stdout
    held = published()["records"]
    assert held >= 1, published()
    assert f"warning    {held} validation record(s) read since are held" in shown.stdout
    filler.unlink()
    env.wait_done(run_id)
    shown = env.cli("status", run_id)
    assert "held in memory" not in shown.stdout and "none on disk" not in shown.stdout
    assert f"METRICS (last {min(5, held)} of {held})" in shown.stdout, shown.stdout
