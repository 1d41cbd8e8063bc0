"""Output a full result dir took from a trial's log is said (warnings, journal, results.md),
and results.md's last lines are the program's last lines (as its pane kept them), not the
log's cut end. Real daemon, real tmux, a real full disk (a small tmpfs: CI runs as root)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from ajetd.adapters.tmux import MISSING_OUTPUT
from ajetd.core.trialscript import exit_line
from ajetd.daemon.ending import REPORTS_HELD
from ajetd.daemon.lostoutput import DRAINED
from ajetd.daemon.panetails import PANE_OUTPUT_WAIT_S
from conftest import Env, printed, wait_for
from loopkit import Loop

LAST = "TRAINING-FINISHED-LAST-LINE"


def test_output_a_full_result_dir_lost_at_the_trials_end_is_said_and_its_tail_kept(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The program fills its own result dir, then prints its last lines and exits 0: the log
    ended mid-flood, results.md's `Last 50 lines` showed the flood as if it were the end, and
    nothing said output was lost (walk88 F8)."""
    disk = tmpfs(env.tmp / "small", "1m")
    result = disk / "out"
    hog = disk / "hog.bin"
    command = f"head -c 2000000 /dev/zero > {hog} 2>/dev/null; seq 1 3000; echo {LAST}; exit 0"
    env.start_daemon("--liveness", "0.5")
    run_id = env.submit(env.blueprint("lost", command=command, result=str(result), ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("attention"), 30, "the reports to wait for room")
    hog.unlink()
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    log = result / "logs" / "trial-1.log"
    said = [w for w in status["warnings"] if "trial 1's output after byte" in w]
    assert said and str(log) in said[0] and "missing" in said[0], status["warnings"]
    assert "written there once there is room, after the run's reports" in said[0], said
    # its writer held the program's last lines while the reports waited (walk97 F3), and
    # goes on once they are written: the log gets them after all, and that is said
    drained = wait_for(
        lambda: [w for w in env.status(run_id)["warnings"] if DRAINED in w], 40, "the rest"
    )
    # what the writer held came (its exit line last), or the full disk had taken it all
    whole = LAST in log.read_text().splitlines()
    assert ("its exit line last" in drained[0]) is whole, drained
    assert whole or "the full disk took it" in drained[0], drained
    results = (result / "results.md").read_text()
    assert said[0] in results
    last = results[results.index("Last 50 lines") :]
    assert LAST in [line.strip() for line in last.splitlines()], last[:2000]
    events = (env.home / "runs" / run_id / "events.jsonl").read_text().splitlines()
    assert any(said[0] == json.loads(e)["event"] for e in events)


def test_a_full_disks_trial_end_reads_its_pane_without_holding_the_loop(
    env: Env, loop: Loop, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The exit file comes before the script's exit line, which on a full disk waits for the
    log's writer: the pass that saw the end read the pane until that line showed, up to 3 s in
    the loop's thread (every other run's end, stop and inbox file waited with it). The pane is
    now read once a pass: the pass that records the end returns at once, and the pane's last
    lines are kept by the passes after its first look (here once the end has ended the
    program, whose script then prints the line). The exit file is written by hand while the
    program is silent after its last line: a pass that waited for the line took the 3 s."""
    disk = tmpfs(env.tmp / "small", "1m")
    result, hog, go = disk / "out", disk / "hog.bin", env.tmp / "go"
    command = (
        f"echo started; while [ ! -e {go} ]; do sleep 0.05; done; "
        f"head -c 2000000 /dev/zero > {hog} 2>/dev/null; echo {LAST}; sleep 600"
    )
    blueprint = env.blueprint(
        "quiet", command=command, result=str(result), ajetd="gpus: 0", max_time="1h"
    )
    run_id = loop.submit(blueprint)
    loop.started(run_id)
    loop.until(lambda: printed(result / "logs" / "trial-1.log", "started"), "the first output")
    go.touch()
    session = loop.run(run_id).session
    pane = env.tmux("list-panes", "-t", f"={session}", "-F", "#{pane_id}").stdout.split()[0]

    def shown() -> bool:  # the program's last line, in its pane (its log's disk is full)
        return LAST in env.tmux("capture-pane", "-p", "-t", pane).stdout.split()

    wait_for(shown, 30, "the last line in the pane")
    exit_file = env.home / "runs" / run_id / "trial-1.exit"
    exit_file.write_text(f"0 {time.time():.3f}\n")
    wait_for(loop.daemon.watcher.ends_waiting, 30, "the exit file seen")
    began = time.monotonic()
    loop.turn(True)
    took = time.monotonic() - began
    run = loop.run(run_id)
    assert run.trial is not None and run.trial.ended_at is not None, run
    assert took < PANE_OUTPUT_WAIT_S, f"the pass took {took:.2f} s"
    tail = env.home / "runs" / run_id / "trial-1.tail"
    loop.until(tail.exists, "the pane's last lines kept", timeout=PANE_OUTPUT_WAIT_S + 20)
    assert not loop.daemon.pane_tails.waiting(run_id)
    assert LAST in [line.strip() for line in tail.read_text().splitlines()]


def test_room_freed_on_a_full_result_dir_goes_to_the_reports_before_the_logs_backlog(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """Walk97 F3: a program floods megabytes into a nearly full result dir and exits; its
    trial's log writer still holds most of it (in tmux). The user frees 1.5 MB to get the
    reports: the writer took it at once (it started a new write each second), the disk was
    full again, and results.md, trials.md and finish.flag waited for the 10-minute fallback;
    the warning said everything after byte N was lost, though megabytes more came after.
    Now the writer is held while the reports wait (nothing more of its backlog dropped), the
    reports are written within seconds of the room, then the writer goes on, and what it
    wrote after them, and what is lost, is said. Real daemon, real tmux, a real tmpfs."""
    disk = tmpfs(env.tmp / "small", "2m")
    result, filler = disk / "out", disk / "filler"
    filler.write_bytes(b"\0" * 1_500_000)
    command = f"seq 1 1500000; echo {LAST}; exit 0"  # about 11 MB at once
    env.start_daemon("--liveness", "0.5")
    run_id = env.submit(
        env.blueprint("flood", command=command, result=str(result), ajetd="gpus: 0")
    )
    wait_for(
        lambda: str(env.record(run_id).get("attention") or "").startswith(REPORTS_HELD),
        60,
        "the reports to wait for room",
    )
    hold = env.home / "runs" / run_id / "trial-1.log.hold"
    wait_for(hold.exists, 30, "the log writer held")
    log = result / "logs" / "trial-1.log"
    held_at = log.stat().st_size
    time.sleep(2)  # (not a wait: the held writer must take nothing meanwhile)
    assert log.stat().st_size == held_at
    filler.unlink()
    freed = time.monotonic()
    status = env.wait_done(run_id, timeout=30)
    assert time.monotonic() - freed < 30
    assert status["status"] == "succeeded" and status["attention"] is None, status
    assert status["reports_dir"] == str(result), status
    assert (result / "finish.flag").exists() and (result / "results.md").exists()
    first = [w for w in status["warnings"] if w.startswith("the reports were written first")]
    assert first and f"waited at byte {held_at} " in first[0], status["warnings"]
    lost = [w for w in status["warnings"] if "trial 1's output after byte" in w]
    assert lost and "what its log writer still holds" in lost[0], status["warnings"]
    assert not hold.exists()
    # room for the rest: the writer writes what it held, its exit line last, and says so
    subprocess.run(["mount", "-o", "remount,size=40m", str(disk)], check=True)
    drained = wait_for(
        lambda: [w for w in env.status(run_id)["warnings"] if DRAINED in w], 60, "the rest"
    )
    text = log.read_text()
    assert LAST in text.splitlines() and log.stat().st_size > held_at + 1_000_000
    assert f"({held_at} bytes then, " in drained[0] and "its exit line last" in drained[0]
    gaps = text.count(MISSING_OUTPUT)
    assert f"is {gaps} gap(s), each marked" in drained[0], (gaps, drained)
    events = (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert drained[0] in [json.loads(e)["event"] for e in events.splitlines()]


def test_a_full_disk_at_the_end_is_no_lost_output_when_the_log_holds_the_exit_line(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The program fills its result dir, then prints two short lines and exits 0: the log
    grows within the page it already holds and keeps every line, ajetd's `exited with code`
    line among them, yet a warning said its output after byte N was lost (walk 90 F8)."""
    disk = tmpfs(env.tmp / "small", "1m")
    result, hog, go = disk / "out", disk / "hog.bin", env.tmp / "go"
    command = (
        f"echo started; while [ ! -e {go} ]; do sleep 0.05; done; "
        f"head -c 2000000 /dev/zero > {hog} 2>/dev/null; echo one; echo {LAST}"
    )
    env.start_daemon("--liveness", "0.5")
    run_id = env.submit(env.blueprint("full", command=command, result=str(result), ajetd="gpus: 0"))
    log = result / "logs" / "trial-1.log"
    # its first lines are in the log (the page the last ones go into is the log's) first
    wait_for(lambda: printed(log, "started"), 30, "the first output")
    go.touch()
    wait_for(lambda: env.record(run_id).get("attention"), 30, "the reports to wait for room")
    text = log.read_text()
    assert LAST in text.splitlines() and "[ajetd] trial 1 exited with code 0" in text, text
    hog.unlink()
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    assert not [w for w in status["warnings"] if "output after byte" in w], status["warnings"]
    assert "is missing from" not in (result / "results.md").read_text()


def test_every_line_a_program_printed_before_it_exited_reaches_its_log_when_tmux_lags(
    env: Env,
) -> None:
    """tmux 3.3a closes a pane at its process's exit where its pty reads empty (FIONREAD),
    and the kernel hands a pty's output to its read side later, in a worker: a program's
    last kilobytes, not there yet, were lost to the log and to the pane's history (4 trial
    ends in 50 at load 12 here; the CI's `Last 50 lines` without the program's last line).
    So a trial's script keeps its pane until its exit line is in the log (or a while). tmux
    stopped, as a loaded machine delays it, while programs print their last 11 KB and exit:
    no script ends while tmux has not read its pane (each did, before), and once tmux goes
    on, each log holds every line. (The kernel's side cannot be delayed from here: 1 run in
    5 lost its tail so in a loop of bare tmux, none with the script held.)"""
    go = env.tmp / "go"
    lines = 2500
    command = f"while [ ! -e {go} ]; do sleep 0.05; done; seq 1 {lines}; echo {LAST}"
    env.start_daemon()
    runs = [
        env.submit(env.blueprint(f"lag{i}", command=command, ajetd="gpus: 0")) for i in range(4)
    ]
    logs = {r: env.tmp / "results" / f"lag{i}" / "logs" / "trial-1.log" for i, r in enumerate(runs)}

    def started(run_id: str) -> bool:  # piped to its log, on record: the program waits
        log = logs[run_id]
        banner = log.exists() and log.read_text().startswith("[ajetd] run ")
        return banner and bool(env.record(run_id).get("started_at"))

    wait_for(lambda: all(map(started, runs)), 60, "every trial's banner and start")
    scripts = {r: env.record(r)["trials"][-1]["pane_pid"] for r in runs}
    wakes = {r: str(env.home / "runs" / r / ".pipes" / "trial-1.wake") for r in runs}

    def after_exit_line(run_id: str) -> str:  # its exit line printed: "held" on, or "ended"
        if not (env.home / "runs" / run_id / "trial-1.exit").exists():
            return ""
        proc = Path(f"/proc/{scripts[run_id]}")
        try:  # ended: a zombie (tmux, stopped, has not reaped it) or gone
            if proc.joinpath("stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return "ended"
            return "held" if os.readlink(proc / "fd" / "3") == wakes[run_id] else ""
        except OSError:
            return "" if proc.exists() else "ended"

    server = int(env.tmux("display-message", "-p", "#{pid}").stdout)
    os.kill(server, signal.SIGSTOP)
    try:
        go.touch()
        wait_for(lambda: all(map(after_exit_line, runs)), 60, "every program's end")
        states = {r: after_exit_line(r) for r in runs}
    finally:
        os.kill(server, signal.SIGCONT)
    assert set(states.values()) == {"held"}, states
    want = [*map(str, range(1, lines + 1)), LAST]
    for run_id, log in logs.items():
        wait_for(lambda log=log: exit_line(1) in log.read_bytes(), 30, f"{log}'s exit line")
        got = [line for line in log.read_text().splitlines() if not line.startswith("[ajetd]")]
        assert got == want, f"{log}: {len(got)} of {len(want)} lines, the last {got[-1:]}"
        assert env.wait_done(run_id)["status"] == "succeeded"


# -- session 34's gap: output lost in the middle of a trial, said while it runs ---------------


def test_a_log_writer_gone_while_the_program_prints_is_warned_live(env: Env, loop: Loop) -> None:
    """The trial's `pipe-pane` is closed (a user's `tmux pipe-pane` toggling it, its writer
    killed): the program goes on printing into its pane and nothing reaches the log, which
    read as a quiet program. The next look at the panes (within a minute) says so in the
    run's warnings and journal while it runs, and results.md keeps it."""
    stop = env.tmp / "stop"
    command = f"while [ ! -e {stop} ]; do echo tick; sleep 0.1; done; echo {LAST}"
    run_id = loop.submit(env.blueprint("piped", command=command, ajetd="gpus: 0", max_time="1h"))
    loop.started(run_id)
    log = Path(loop.run(run_id).result_dir) / "logs" / "trial-1.log"
    loop.until(lambda: printed(log, "tick"), "the program's output in its log")
    session = loop.run(run_id).session
    pane = env.tmux("list-panes", "-t", f"={session}", "-F", "#{pane_id}").stdout.split()[0]
    assert env.tmux("pipe-pane", "-t", pane).returncode == 0  # no command: the pipe closed
    loop.run_for(65)  # tmux is asked about every pane at least once a minute
    run = loop.run(run_id)
    assert run.state.value == "running", run
    warned = [w for w in run.warnings if w.startswith("trial 1's output stopped reaching ")]
    assert len(warned) == 1 and str(log) in warned[0], run.warnings
    assert "its tmux pipe-pane writer ended while the program runs" in warned[0]
    assert warned[0] in env.status(run_id)["warnings"]
    assert loop.event_at(run_id, warned[0]) is not None
    loop.run_for(65)
    assert len([w for w in loop.run(run_id).warnings if "stopped reaching" in w]) == 1
    stop.touch()
    flag = loop.until_done(run_id)
    assert flag["status"] == "succeeded", flag
    results = (Path(loop.run(run_id).result_dir) / "results.md").read_text()
    assert f"- warning: {warned[0]}" in results


def test_output_a_full_disk_takes_mid_trial_is_warned_while_it_runs(
    env: Env, loop: Loop, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The program fills its result dir's disk and goes on printing: before, only a trial
    that ended on a full disk was said to have lost output (`ending.lost_output`); one whose
    disk filled and emptied again mid-run said nothing live. The run's warnings say it at
    the next full look, and the log goes on after the writer's line once there is room."""
    disk = tmpfs(env.tmp / "small", "1m")
    result, hog, go, fill = disk / "out", disk / "hog.bin", env.tmp / "go", env.tmp / "fill"
    # the disk fills once the trial's banner is in its log (on the same disk): filled at once,
    # the banner could be what the writer dropped, and the run never read as started
    command = (
        f"while [ ! -e {fill} ]; do sleep 0.05; done; "
        f"head -c 2000000 /dev/zero > {hog} 2>/dev/null; seq 1 3000; "
        f"while [ ! -e {go} ]; do echo tick; sleep 0.1; done; echo {LAST}"
    )
    blueprint = env.blueprint("full", command=command, result=str(result), ajetd="gpus: 0")
    run_id = loop.submit(blueprint)
    loop.started(run_id)
    fill.touch()
    loop.until(lambda: hog.exists() and hog.stat().st_size > 0, "the disk to fill")
    loop.run_for(65)  # every live run is looked at in full within a minute
    log = result / "logs" / "trial-1.log"
    warned = [
        w for w in loop.run(run_id).warnings if w.startswith("trial 1's output is being lost ")
    ]
    assert len(warned) == 1 and str(log) in warned[0], loop.run(run_id).warnings
    assert "free at " in warned[0] and "once there is room" in warned[0]
    assert loop.run(run_id).state.value == "running"
    assert warned[0] in env.status(run_id)["warnings"]
    hog.unlink()
    loop.until(lambda: MISSING_OUTPUT in log.read_text(), "the log to go on after its gap")
    go.touch()
    flag = loop.until_done(run_id)
    assert flag["status"] == "succeeded", flag
    assert f"- warning: {warned[0]}" in (result / "results.md").read_text()
