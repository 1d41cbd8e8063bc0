"""Hostile input and full disks (issue 10): the daemon never dies, never stalls, never reports
success it did not record.

In-process daemons (`Daemon(cfg)` ticked by the test, a real tmux server on a private socket)
take injected failures step by step; real daemon processes meet real full disks (small tmpfs
mounts: the tests run as root, as CI does).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from ajetd.adapters import inbox
from ajetd.core.exitfile import parse_exit_note
from ajetd.core.model import State
from ajetd.core.trialscript import EXIT_OPTION, TrialSpec, render_trial_script
from ajetd.daemon import observe, trials
from ajetd.daemon.loop import Daemon
from conftest import Env, fill, in_process, wait_for

INJECTED = "injected by the test"


def boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError(INJECTED)


def tick_until(daemon: Daemon, cond: Callable[[], Any], what: str, timeout: float = 20) -> Any:
    def step() -> Any:
        daemon.tick(time.time())
        return cond()

    return wait_for(step, timeout, what)


def drop(daemon: Daemon, env: Env, name: str | bytes, **kw: Any) -> Path:
    """A blueprint written into the inbox and reported complete (as the watcher would)."""
    text = env.blueprint(f"bp{abs(hash(name)) % 10**6}", ajetd="gpus: 0", **kw).read_bytes()
    raw = name if isinstance(name, bytes) else name.encode()
    path = Path(os.fsdecode(os.fsencode(daemon.home.inbox) + b"/" + raw))
    path.write_bytes(text)
    daemon.watcher.ready.add(path.name)
    return path


def run_from(daemon: Daemon, source: str) -> Any:
    return next((r for r in daemon.runs.values() if r.source == source), None)


def tracebacks(caplog: pytest.LogCaptureFixture, needle: str) -> int:
    return sum(1 for r in caplog.records if r.exc_info and needle in r.getMessage())


# -- one rule for the loop ------------------------------------------------------------------
def test_a_file_name_that_is_not_utf8_is_taken_and_shown_escaped(env: Env) -> None:
    daemon = in_process(env)
    drop(daemon, env, b"caf\xe9 \x1b[31m.md")
    run = tick_until(daemon, lambda: run_from(daemon, "caf\\xe9 \\x1b[31m.md"), "the run")
    state = json.loads((env.home / "runs" / run.run_id / "state.json").read_text())
    assert state["source"] == "caf\\xe9 \\x1b[31m.md"
    assert os.listdir(os.fsencode(daemon.home.inbox)) == []


def test_a_file_that_breaks_intake_is_put_aside_and_others_are_taken(
    env: Env, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    daemon = in_process(env)
    claim = inbox.claim

    def failing(home: Any, candidate: inbox.Candidate, run_id: str) -> Path | None:
        return boom() if candidate.stem == "bad" else claim(home, candidate, run_id)

    monkeypatch.setattr(inbox, "claim", failing)
    drop(daemon, env, "bad.md")
    drop(daemon, env, "good.md")
    tick_until(daemon, lambda: run_from(daemon, "good.md"), "the good blueprint")
    for _ in range(3):
        daemon.tick(time.time())
    why = [p for p in (env.home / "rejected").iterdir() if p.name.endswith("__bad.why.txt")]
    assert len(why) == 1 and INJECTED in why[0].read_text()
    assert not (env.home / "inbox" / "bad.md").exists()
    assert tracebacks(caplog, "inbox file bad.md") == 1


def test_two_files_of_one_name_put_aside_in_one_second_are_both_kept(env: Env) -> None:
    """The second was renamed over the first's copy (and its note over the first's note)."""
    daemon = in_process(env)
    texts = []
    for n in (1, 2):
        path = env.home / "inbox" / "same.md"
        path.write_text(f"blueprint {n}\n")
        texts.append(inbox.put_aside(daemon.home, path, f"why {n}", 1000.0))
    assert [p.read_text() for p in texts] == ["blueprint 1\n", "blueprint 2\n"]
    notes = sorted((env.home / "rejected").glob("*.why.txt"))
    assert sorted(p.read_text() for p in notes) == ["why 1\n", "why 2\n"]


def _running(daemon: Daemon, env: Env) -> str:
    drop(daemon, env, "long.md", command="sleep 60")
    run = tick_until(
        daemon,
        lambda: (r := run_from(daemon, "long.md")) and r.state is State.RUNNING and r,
        "the run to start",
    )
    return str(run.run_id)


def test_a_live_runs_stored_blueprint_that_no_longer_parses_is_named_when_taken_up(
    env: Env,
) -> None:
    """Its `[ajetd]` options are read again from runs/<id>/blueprint.md at a start: a copy
    edited into something else gave the defaults without a word."""
    daemon = in_process(env)
    run_id = _running(daemon, env)
    stored = env.home / "runs" / run_id / "blueprint.md"
    stored.write_text("not a blueprint any more\n")
    again = in_process(env)  # a daemon started again on the home, the run still live
    assert again.runs[run_id].state is State.RUNNING
    events = (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert f"{stored} cannot be read as a blueprint" in events
    assert "default [ajetd] options used" in events
    stored.unlink()
    in_process(env)
    events = (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert "No such file or directory" in events


RUN_STEPS: dict[str, Callable[[pytest.MonkeyPatch, Daemon, Env], str]] = {}


def _step(name: str) -> Callable[[Any], Any]:
    def register(fn: Any) -> Any:
        RUN_STEPS[name] = fn
        return fn

    return register


@_step("launching it")
def _launch(mp: pytest.MonkeyPatch, daemon: Daemon, env: Env) -> str:
    mp.setattr(trials, "prepare_trial", boom)
    drop(daemon, env, "long.md", command="sleep 60")
    return str(tick_until(daemon, lambda: run_from(daemon, "long.md"), "the run").run_id)


@_step("supervising it")
def _supervise(mp: pytest.MonkeyPatch, daemon: Daemon, env: Env) -> str:
    run_id = _running(daemon, env)
    mp.setattr(observe, "read_exit", boom)  # the exit file, read at each look at the run
    return run_id


@_step("taking its stop request")
def _control(mp: pytest.MonkeyPatch, daemon: Daemon, env: Env) -> str:
    mp.setattr(Daemon, "_launch_one", lambda *args: None)  # it stays queued
    drop(daemon, env, "long.md", command="sleep 60")
    run_id = str(tick_until(daemon, lambda: run_from(daemon, "long.md"), "the run").run_id)
    mp.setattr(Daemon, "_stop_request", boom)
    (env.home / "control" / f"{run_id}.stop").write_text("now\n")
    return run_id


@_step("reading its output")
def _scan(mp: pytest.MonkeyPatch, daemon: Daemon, env: Env) -> str:
    run_id = _running(daemon, env)
    mp.setattr(Daemon, "_live_scan", boom)
    daemon.scan_output(time.time())  # the light tick between full ticks
    return run_id


@pytest.mark.parametrize("step", sorted(RUN_STEPS))
def test_a_run_whose_step_fails_gets_attention_and_the_loop_goes_on(
    env: Env, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, step: str
) -> None:
    daemon = in_process(env)
    run_id = RUN_STEPS[step](monkeypatch, daemon, env)
    for _ in range(3):
        daemon.tick(time.time())
    why = f"internal error while {step}: RuntimeError: {INJECTED}"
    assert INJECTED in (daemon.runs[run_id].attention or "")
    assert json.loads((env.home / "runs" / run_id / "state.json").read_text())["attention"]
    assert f"attention: {why}" in (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert tracebacks(caplog, f"run {run_id}: {step} failed") == 1  # once, not every tick
    drop(daemon, env, "after.md")  # the loop goes on: the next blueprint is taken
    tick_until(daemon, lambda: run_from(daemon, "after.md"), "the next blueprint")


@pytest.mark.parametrize(
    "target",
    ["campaigns.tick", "campaigns.claim", "sample_gpus", "housekeep", "refresh_panes", "publish"],
)
def test_a_failing_daemon_step_is_logged_once_and_the_loop_goes_on(
    env: Env, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, target: str
) -> None:
    daemon = in_process(env)
    owner: Any = daemon
    *path, name = target.split(".")
    for part in path:
        owner = getattr(owner, part)
    monkeypatch.setattr(owner, name, boom)
    drop(daemon, env, "fine.md")
    tick_until(daemon, lambda: run_from(daemon, "fine.md"), "the blueprint")
    for _ in range(3):
        daemon.tick(time.time())
    assert sum(1 for r in caplog.records if r.exc_info and INJECTED in str(r.exc_info[1])) == 1


# -- the inbox takes only regular files it owns ---------------------------------------------
def test_links_and_special_files_are_refused_never_followed(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    daemon = in_process(env)
    secret = env.tmp / "secret"
    secret.write_text("SECRET CONTENT\n")
    secret.chmod(0o600)
    inbox = env.home / "inbox"
    (inbox / "link.md").symlink_to(secret)
    os.mkfifo(inbox / "pipe.md")
    (inbox / "folder.md").mkdir()
    drop(daemon, env, "good.md")
    tick_until(daemon, lambda: run_from(daemon, "good.md"), "the good blueprint")
    for _ in range(3):
        daemon.tick(time.time())
    for name, kind in (("link", "symbolic link"), ("pipe", "FIFO"), ("folder", "directory")):
        lines = [p for p in daemon.refused if f"{name}.md is a {kind}" in p]
        assert len(lines) == 1, daemon.refused
        logged = [r for r in caplog.records if f"{name}.md is a {kind}" in r.getMessage()]
        assert len(logged) == 1
    assert f"(to {secret})" in " ".join(daemon.refused)
    for path in (env.home / "rejected").iterdir():
        assert "SECRET" not in path.read_text()
    assert len(daemon.runs) == 1
    shown = env.cli("status")
    assert "inbox: " in shown.stdout and "link.md is a symbolic link" in shown.stdout
    assert "NOT TAKING BLUEPRINTS" not in shown.stdout  # the other files are taken


def test_a_link_swapped_in_after_the_scan_is_not_read(env: Env) -> None:
    daemon = in_process(env)
    secret = env.tmp / "secret"
    secret.write_text("SECRET CONTENT\n")
    claimed = env.home / "runs" / "abc123" / "blueprint.md"
    claimed.parent.mkdir(parents=True)
    claimed.symlink_to(secret)
    fifo = env.home / "runs" / "def456" / "blueprint.md"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo, 0o600)
    daemon.accept("abc123", claimed, "swapped.md", time.time())
    daemon.accept("def456", fifo, "piped.md", time.time())
    run = daemon.runs["abc123"]
    assert run.status is not None and run.status.value == "rejected"
    assert "symbolic link" in run.reason
    assert "FIFO" in daemon.runs["def456"].reason
    # what was swapped in is kept as it came (the link itself, the FIFO), never followed nor
    # read; the note says so; nothing the daemon wrote holds the link's target
    rejected = env.home / "rejected"
    assert os.readlink(rejected / "abc123__swapped.md") == str(secret)
    assert stat.S_ISFIFO((rejected / "def456__piped.md").lstat().st_mode)
    said = (rejected / "abc123__swapped.why.txt").read_text()
    assert "abc123__swapped.md is a symbolic link as it came: never read nor followed" in said
    assert "is a FIFO as it came" in (rejected / "def456__piped.why.txt").read_text()
    for path in rejected.glob("*.why.txt"):
        assert "SECRET" not in path.read_text()
        assert path.stat().st_mode & 0o077 == 0
    for claimed_now in (claimed, fifo):  # the runs' folders hold what was read: nothing
        assert claimed_now.is_file() and not claimed_now.is_symlink()
        assert "SECRET" not in claimed_now.read_text()


def test_a_blueprint_moved_in_from_another_folder_is_taken_at_once(env: Env) -> None:
    """`mv` of a file just written elsewhere: no liveness tick needed (here a 60 s one)."""
    env.start_daemon("--liveness", "60")
    bp = env.blueprint("moved", ajetd="gpus: 0")
    started = time.monotonic()
    bp.rename(env.home / "inbox" / "moved.md")
    wait_for(lambda: any((env.home / "runs").glob("*/state.json")), 15, what="the moved blueprint")
    assert time.monotonic() - started < 15


def test_a_file_still_being_written_wakes_the_loop_itself(env: Env) -> None:
    """A file its writer still holds open is held, and the loop wakes itself a second after
    its last change to name it in `status` (the loop's own sleep here is 60 s); closed, it
    is taken (`test_intake_whole` for the rest)."""
    daemon = in_process(env, liveness=60)
    bp = env.blueprint("slow", ajetd="gpus: 0")
    with open(env.home / "inbox" / "slow.md", "wb") as writer:
        writer.write(bp.read_bytes())
        writer.flush()
        daemon.tick(time.time())
        assert not daemon.runs
        assert daemon._sleep_for(time.time(), True) <= 1.05
    daemon.tick(time.time())
    assert len(daemon.runs) == 1


# -- disk full is a state, not a crash ------------------------------------------------------
def test_a_script_that_cannot_write_its_exit_file_leaves_no_cut_one(
    tmp_path: Path, tmpfs: Callable[[Path, str], Path]
) -> None:
    """On a full disk the exit file is created but its line cannot be written: the script
    removes the empty file (no reader waits on it; `parse_exit_file` would never call it an
    end) and puts the line on its tmux pane instead (a stand-in `tmux` notes the call)."""
    full = tmpfs(tmp_path / "full", "64k")
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    calls = tmp_path / "calls"
    (bin_dir / "tmux").write_text(f'#!/bin/bash\necho "$*" >> {calls}\n')
    (bin_dir / "tmux").chmod(0o755)
    (tmp_path / "go").write_text("go\n")
    spec = TrialSpec(
        run_id="full01",
        trial=1,
        command="exit 5",
        codebase_dir=str(tmp_path),
        venv_dir=str(tmp_path / "venv"),
        result_dir=str(tmp_path / "r"),
        go_file=str(tmp_path / "go"),
        exit_file=str(full / "trial-1.exit"),
        hup_file=str(full / "trial-1.hup"),
    )
    script = tmp_path / "t.sh"
    script.write_text(render_trial_script(spec))
    fill(full)
    done = subprocess.run(
        ["bash", str(script)],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
        env={**os.environ, "TMUX_PANE": "%7"},
    )
    assert done.returncode == 5
    assert not (full / "trial-1.exit").exists()
    note = calls.read_text().split()
    assert note[:5] == ["set-option", "-p", "-t", "%7", EXIT_OPTION], note
    assert parse_exit_note(" ".join(note[5:])) == (5, float(note[6]))


def _waiting_command(env: Env, code: int) -> str:
    trigger = env.tmp / "end-now"
    return f"while [ ! -e {trigger} ]; do sleep 0.05; done; echo ending; exit {code}"


def test_a_full_home_mid_run_keeps_the_daemon_and_the_exit_code(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    tmpfs(env.home, "2m")
    sink = env.tmp / "on-finish.json"
    daemon = env.start_daemon("--liveness", "0.5", "--on-finish", f"cat > {sink}")
    bp = env.blueprint("full", command=_waiting_command(env, 3), ajetd="gpus: 0")
    run_id = env.submit(bp)
    wait_for(lambda: env.record(run_id).get("started_at"), what="the run to start")
    filler = fill(env.home)
    (env.tmp / "end-now").touch()

    def disk_line() -> str:
        shown = env.cli("status").stdout
        return shown if "DISK FULL" in shown else ""

    shown = wait_for(disk_line, 20, what="status to say the home is full")
    assert str(env.home) in shown and "0 B free" in shown
    wait_for(lambda: f"run {run_id}: ended failed" in env.daemon_log(), what="the end seen")
    held = f"the newest records of runs {run_id} are not on disk yet"
    wait_for(lambda: held in env.cli("status").stdout, what="status to name the held record")
    assert daemon.poll() is None
    # the record is in the daemon's memory only, yet status says where the run stands
    shown = wait_for(lambda: env.status(run_id)["state"] == "done" and env.status(run_id))
    assert (shown["status"], shown["exit_code"]) == ("failed", 3), shown
    assert any("held in memory" in w for w in shown["warnings"]), shown["warnings"]
    assert not (env.home / "runs" / run_id / "finish.flag").exists()
    listed = {r["run_id"]: r for r in json.loads(env.cli("status", "--json").stdout)}
    assert (listed[run_id]["state"], listed[run_id]["status"]) == ("done", "failed")
    assert "running" not in env.cli("status").stdout.split(run_id, 1)[1].splitlines()[0]
    waiting = env.cli("wait", run_id, "--timeout", "0.5")  # its reports are not written yet
    assert waiting.returncode == 124, waiting.stdout
    assert not sink.exists()  # the end is not on disk yet: no hook reports it
    submitted = env.cli("submit", str(bp))
    assert submitted.returncode == 1 and "Traceback" not in submitted.stderr
    assert f"cannot write the blueprint into {env.home / 'inbox'}" in submitted.stderr
    as_json = env.cli("status", "--json")
    assert isinstance(json.loads(as_json.stdout), list) and "DISK FULL" in as_json.stderr
    filler.unlink()
    assert env.cli("wait", run_id, "--timeout", "30").returncode == 1  # after the flag
    status = env.status(run_id)
    assert (status["status"], status["exit_code"]) == ("failed", 3), status["reason"]
    flag = json.loads((env.tmp / "results" / "full" / "finish.flag").read_text())
    assert (flag["status"], flag["exit_code"]) == ("failed", 3)
    hooked = wait_for(lambda: sink.exists() and sink.read_text(), what="the on_finish hook")
    assert json.loads(hooked)["exit_code"] == 3
    wait_for(lambda: "DISK FULL" not in env.cli("status").stdout, what="the line to go")
    assert daemon.poll() is None


@pytest.mark.parametrize("restart", [False, True])
def test_a_full_result_dir_leaves_the_run_done_with_attention_until_written(
    env: Env, tmpfs: Callable[[Path, str], Path], restart: bool
) -> None:
    disk = tmpfs(env.tmp / "small", "1m")
    result = disk / "out"
    daemon = env.start_daemon("--liveness", "0.5")
    bp = env.blueprint("rd", command=_waiting_command(env, 0), result=str(result), ajetd="gpus: 0")
    run_id = env.submit(bp)
    wait_for(lambda: env.record(run_id).get("started_at"), what="the run to start")
    filler = fill(disk)
    (env.tmp / "end-now").touch()
    wait_for(lambda: env.record(run_id).get("attention"), what="attention")
    record = env.status(run_id)
    assert record["status"] == "succeeded"
    assert str(result) in record["attention"]
    assert not (result / "finish.flag").exists()
    waited = env.cli("wait", run_id)
    assert waited.returncode == 2 and str(result) in waited.stdout
    if restart:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=20)
    filler.unlink()
    if restart:
        env.start_daemon("--liveness", "0.5")
    wait_for((result / "finish.flag").exists, 30, what="finish.flag")
    flag = json.loads((result / "finish.flag").read_text())
    assert flag["status"] == "succeeded"
    assert (result / "results.md").exists() and (result / "trials.md").exists()
    wait_for(lambda: env.record(run_id).get("attention") is None, what="attention to clear")
    assert env.cli("wait", run_id).returncode == 0
    events = (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert "reports written to" in events


def test_a_daemon_started_on_a_full_home_lives_and_takes_blueprints_once_there_is_room(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    tmpfs(env.home, "1m")
    first = env.start_daemon("--liveness", "0.5")
    first.send_signal(signal.SIGTERM)
    first.wait(timeout=20)
    bp = env.blueprint("waits", ajetd="gpus: 0", command="true")
    (env.home / "inbox" / "waits.md").write_bytes(bp.read_bytes())
    filler = fill(env.home)
    daemon = env.start_daemon("--liveness", "0.5")

    def disk_line() -> str:
        shown = env.cli("status").stdout
        return shown if "DISK FULL" in shown else ""

    wait_for(disk_line, 20, what="status to say the home is full")
    assert daemon.poll() is None
    assert (env.home / "inbox" / "waits.md").exists()  # not taken, not lost
    filler.unlink()

    def ended() -> dict[str, Any] | None:
        for state in (env.home / "runs").glob("*/state.json"):
            record = env.record(state.parent.name)
            if record.get("source") == "waits.md" and record.get("state") == "done":
                return record
        return None

    record = wait_for(ended, 30, what="the blueprint to run once there is room")
    assert record["status"] == "succeeded"
    assert daemon.poll() is None
    assert env.daemon_log().count("cannot write to $AJETD_HOME") == 1  # said once, not per try


def test_one_failing_campaign_never_stops_the_others(
    env: Env, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The per-item rule for campaigns: a campaign whose step raises something unexpected, or a
    folder whose claim does, is logged once and marked; the other campaigns go on each tick."""
    from ajetd.adapters.control import answer_file, file_request
    from ajetd.adapters.store import Home
    from ajetd.core import campaignspec as cs
    from ajetd.daemon.campaigns import Campaigns
    from ajetd.hosts.campaignfolder import submit_folder

    home = Home(env.home)
    home.ensure()
    made = []
    for name in ("broken", "fine"):
        folder = env.tmp / f"{name}-campaign"
        folder.mkdir()
        base = env.blueprint(f"{name}-base", command="true", ajetd="max_trials: 1")
        (folder / "base.md").write_text(base.read_text())
        (folder / "campaign.yaml").write_text(
            f"name: {name}\nmetric: accuracy\ndirection: max\nbase: base.md\n"
            f"result_dir: {env.tmp / 'campaigns' / name}\n"
            "baseline: false\nstop: {max_experiments: 5}\n"
        )
        made.append(submit_folder(home, folder))
    broken, fine = made
    runner = Campaigns(home)
    runner.load(time.time())
    original = Campaigns._claim_one

    def claim_one(self: Campaigns, entry: Path, now: float) -> None:
        if entry.name.startswith(broken):
            raise KeyError(INJECTED)
        original(self, entry, now)

    monkeypatch.setattr(Campaigns, "_claim_one", claim_one)
    now = time.time()
    for _ in range(3):
        runner.claim(now)
    assert fine in runner.states and broken not in runner.states
    monkeypatch.setattr(Campaigns, "_claim_one", original)
    runner.claim(now)
    assert broken in runner.states
    step = Campaigns._step

    def failing_step(self: Campaigns, state: Any, *args: Any) -> None:
        if state.campaign_id == broken:
            raise KeyError(INJECTED)
        step(self, state, *args)

    monkeypatch.setattr(Campaigns, "_step", failing_step)
    req = file_request(home, fine, {"op": "add", "entry": cs.entry("a", "an idea")})
    for i in range(3):
        runner.tick(now + i, {})
    assert json.loads(answer_file(home, fine, req).read_text())["ok"]
    assert INJECTED in runner.states[broken].progress
    failures = [r for r in caplog.records if r.exc_info and INJECTED in str(r.exc_info[1])]
    assert len(failures) == 2  # one claim failure, one step failure: each logged once


def test_a_config_folder_that_takes_no_copy_rejects_the_run_saying_what_to_do(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The config needs a fix (execute_test) and its folder is read-only (a shared codebase):
    the run is rejected with a reason naming the folder and the fixes, never left claimed
    without a record (an error while admitting once left the run in that limbo)."""
    folder = tmpfs(env.codebase / "ro", "1m")
    config = env.config("ro")
    data = yaml.safe_load((env.codebase / config).read_text())
    data["ajet"]["execute_test"] = True
    (folder / "ro.yaml").write_text(yaml.safe_dump(data))
    done = subprocess.run(
        ["mount", "-o", "remount,ro", str(folder)], capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr
    env.start_daemon()
    run_id = env.submit(env.blueprint("ro", config="ro/ro.yaml"))
    status = env.wait_done(run_id)
    assert status["status"] == "rejected", status
    reason = status["reason"]
    assert f"{folder} does not take it: Read-only file system" in reason, reason
    assert "ajet.execute_test: True → False" in reason, reason
    flag = json.loads((env.tmp / "results" / "ro" / "finish.flag").read_text())
    assert flag["status"] == "rejected"
    assert env.launches() == []


def test_a_config_swapped_for_a_fifo_never_holds_the_reports(env: Env) -> None:
    """The run's config is copied into its result dir at the end (config-used.yaml); a
    program that leaves a FIFO in its place (or a device, or a huge file) gets its reports all
    the same, without the copy: an open() of a FIFO with no writer waits for ever."""
    env.start_daemon()
    config = env.config("fifo")
    swap = f"rm {config} && mkfifo {config} && echo swapped"
    run_id = env.submit(env.blueprint("fifo", config=config, command=swap))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    result = env.tmp / "results" / "fifo"
    assert (result / "finish.flag").exists() and not (result / "config-used.yaml").exists()


def test_fifos_where_ajetd_reads_a_users_folder_never_hold_it(env: Env) -> None:
    """A FIFO at the val file's path (read at every tick and at the end) and a FIFO named
    finish.flag in a result dir (read at admission, by lint, and before a report is written
    twice): each is passed over as unreadable, never opened as a file to wait on."""
    env.start_daemon()
    config = env.config("valfifo")
    (env.codebase / "saved_val_result").mkdir(exist_ok=True)
    os.mkfifo(env.codebase / "saved_val_result" / "valfifo.md")
    run_id = env.submit(env.blueprint("valfifo", config=config, command="echo done"))
    assert env.wait_done(run_id)["status"] == "succeeded"
    result = env.tmp / "results" / "flagfifo"
    result.mkdir()
    os.mkfifo(result / "finish.flag")
    bp = env.blueprint("flagfifo", command="echo done")
    lint = env.cli("lint", str(bp))
    assert "Traceback" not in lint.stderr, lint.stderr
    run_id = env.submit(bp)
    status = env.wait_done(run_id)
    assert status["status"] in ("succeeded", "rejected"), status


def test_a_restart_fix_whose_copy_cannot_be_written_ends_the_run_saying_why(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The config needs no fix at admission but one at its first failure (out of memory, a
    smaller batch allowed) and its folder is read-only (a shared checkout): the run ends
    failed naming the folder and why, as admission does; it was marked for attention with
    an internal error at every tick, its trial dead and never relaunched nor ended."""
    folder = tmpfs(env.codebase / "ro", "1m")
    data = yaml.safe_load((env.codebase / env.config("rofix", oom_above_micro_batch=2)).read_text())
    data["actor_rollout_ref"] = {"actor": {"ppo_micro_batch_size_per_gpu": 8}}
    (folder / "rofix.yaml").write_text(yaml.safe_dump(data))
    done = subprocess.run(
        ["mount", "-o", "remount,ro", str(folder)], capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr
    env.start_daemon()
    allow = "allow_fixes: {ppo_micro_batch_size_per_gpu: {min: 1}}"
    run_id = env.submit(env.blueprint("rofix", config="ro/rofix.yaml", ajetd=allow))
    status = env.wait_done(run_id)
    assert status["status"] == "failed" and status["trials"] == 1, status["reason"]
    reason = status["reason"]
    assert "ppo_micro_batch_size_per_gpu 8 → 4" in reason, reason
    assert f"{folder} does not take it: Read-only file system" in reason, reason
    assert "internal error" not in reason and status["attention"] is None, status


def test_a_restart_fix_waits_for_its_full_config_folder_then_goes_on(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """Out of memory, and the smaller batch's copy meets a full config folder: that folder is
    shown full in status (no internal error, no attention), and once it takes the write the
    fix goes on as it would have (8 -> 4 -> 2), the line gone."""
    run_id, line, filler = _oom_into_full_folder(env, tmpfs, "2m")
    record = env.record(run_id)
    assert not record.get("attention") and record.get("state") != "done", record
    filler.unlink()
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded" and status["trials"] == 3, status
    assert line not in env.cli("status").stdout
    assert "internal error" not in (env.home / "runs" / run_id / "events.jsonl").read_text()


def _oom_into_full_folder(
    env: Env, tmpfs: Callable[[Path, str], Path], max_time: str, liveness: str = "0.5", **fake: Any
) -> tuple[str, str, Path]:
    """A run whose trial ran out of memory (batch 8) and whose smaller batch's copy waits for
    its full config folder: its run id, status's line naming the folder, the filler."""
    folder = tmpfs(env.codebase / "full", "256k")
    config = env.config("oomwait", **{"oom_above_micro_batch": 2, **fake})
    data = yaml.safe_load((env.codebase / config).read_text())
    data["actor_rollout_ref"] = {"actor": {"ppo_micro_batch_size_per_gpu": 8}}
    (folder / "oomwait.yaml").write_text(yaml.safe_dump(data))
    filler = fill(folder)
    env.start_daemon("--liveness", liveness)
    allow = "allow_fixes: {ppo_micro_batch_size_per_gpu: {min: 1}}"
    bp = env.blueprint("oomwait", config="full/oomwait.yaml", ajetd=allow, max_time=max_time)
    run_id = env.submit(bp)
    line = f"cannot write to a folder run {run_id} needs {folder}: No space left on device"
    wait_for(lambda: line in env.cli("status").stdout, what="status to name the full folder")
    return run_id, line, filler


def test_a_stop_ends_a_run_whose_fix_waits_for_a_full_folder(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """`ajetd stop` on a run whose failed trial's fix waits for a full config folder ends it
    stopped, not relaunched: the exit was decided again at every tick, a stop request unread
    (before: running until the disk had room, then relaunched and the request deleted)."""
    run_id, line, _ = _oom_into_full_folder(env, tmpfs, "2m")
    assert env.cli("stop", "--no-wait", run_id).returncode == 0
    status = env.wait_done(run_id)
    assert status["status"] == "stopped" and status["trials"] == 1, status
    assert line not in env.cli("status").stdout  # an ended run waits for no folder


def test_a_time_limit_ends_a_run_whose_fix_waits_for_a_full_folder(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The time limit coming while a failed trial's fix waits for a full config folder ends
    the run (before: running for ever, exp_max_time never looked at after the exit). Once
    less time is left than the failed trial ran, the waiting relaunch is given up as one
    that could only start and be stopped (`policy._too_late`): `failed`, saying so; where
    no look falls in those last seconds, the limit itself ends it (`time_limit`)."""
    run_id, line, _ = _oom_into_full_folder(env, tmpfs, "8s")
    status = env.wait_done(run_id, timeout=40)
    assert status["trials"] == 1, status
    if status["status"] == "failed":
        assert "not relaunched" in status["reason"], status
        assert "of exp_max_time (8s) left" in status["reason"], status
    else:
        assert status["status"] == "time_limit", status
    assert line not in env.cli("status").stdout


def test_a_full_folder_line_goes_once_the_fix_went_through(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The full config folder's line goes once the fix's copy is written, while the fixed
    trial runs (before: kept until that trial's end: the exit first met the full folder when
    its end was recorded, and the fix went through as the run was supervised, a step of
    another name, so the first one still waited)."""
    run_id, line, filler = _oom_into_full_folder(
        env, tmpfs, "2m", oom_above_micro_batch=4, steps=3000, step_time=0.02
    )
    filler.unlink()
    wait_for(lambda: env.status(run_id)["trials"] == 2, what="the fixed trial to start")
    wait_for(lambda: line not in env.cli("status").stdout, timeout=10, what="the line to go")
    assert env.status(run_id)["state"] == "running"


def test_a_full_folder_a_fix_waits_for_stays_in_status(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The full config folder a run's fix waits for is in status at every read while it is
    full, also between the run's own moments (a liveness period of a minute). Before: a tick
    that only read the run's new output (nothing written) passed for the step going through
    and took the line out, the next retry put it back: status showed it about one read in
    five."""
    run_id, line, _ = _oom_into_full_folder(env, tmpfs, "5m", liveness="60")
    reads, until = 0, time.monotonic() + 5  # over several of the folder's 1 s retries
    while time.monotonic() < until:
        assert line in env.cli("status").stdout, f"the line went after {reads} read(s)"
        reads += 1
    assert env.status(run_id)["trials"] == 1


def test_reports_held_by_a_full_result_dir_are_written_before_any_picture(env: Env) -> None:
    """Once a full result dir has room again, the held reports came after the pictures,
    drawn again first: 46 KB of curves took the room the reports had, and they waited for
    more. They come first now; the pictures of that run are said not drawn."""
    from dataclasses import replace

    from ajetd.adapters.store import Home
    from ajetd.core import model
    from ajetd.daemon import ending

    home = Home(env.home)
    home.ensure()
    home.run_dir("abc123").mkdir(parents=True)
    result = env.tmp / "held"
    history = tuple({"global_steps": s, "mean_reward": 0.1 * s} for s in (1, 2, 3))
    run = model.Run(run_id="abc123", source="x.md", submitted_at=1.0, result_dir=str(result))
    run = model.finish(run, model.Status.SUCCEEDED, "the program exited with code 0", 0, 5.0)
    why = f"{ending.REPORTS_HELD} {result}: No space left on device; written as soon as it can be"
    run = replace(run, history=history, metrics=dict(history[-1]), attention=why)
    run = replace(run, reports_pending=True)
    home.save_run(run)
    done = ending.publish_reports(home, run, 6.0)
    assert done.attention is None and not done.reports_pending
    text = (result / "results.md").read_text()
    assert f"Pictures not drawn: {ending.REPORTS_FIRST}" in text
    assert (result / "finish.flag").exists() and not (result / "curves.png").exists()
