"""`ajetd daemon --detach` and `ajetd shutdown`: a daemon without systemd; runs outlive it."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from ajetd.adapters.store import Home
from ajetd.core import model
from ajetd.core.model import Run, Status
from conftest import PYTHON, Env, wait_for

FAST = ("--backoff-scale", "0.001", "--grace-int", "1", "--grace-term", "1")


@pytest.fixture
def detached(env: Env) -> Iterator[Env]:
    """The env, with whatever daemon a test detached shut down at the end."""
    yield env
    if Home(env.home).daemon_running():
        env.cli("shutdown")


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _detach(env: Env) -> int:
    out = env.cli("daemon", "--detach", *FAST)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"log {env.home / 'daemon.log'}" in out.stdout
    return int(out.stdout.split("pid ")[1].split(",")[0])


def test_detach_shutdown_detach_readopts_a_live_run(detached: Env) -> None:
    env = detached
    pid = _detach(env)
    assert Home(env.home).daemon_running()
    log_mode = stat.S_IMODE((env.home / "daemon.log").stat().st_mode)
    assert log_mode == 0o600
    again = env.cli("daemon", "--detach")
    assert again.returncode == 1 and f"already running on {env.home} (pid {pid})" in again.stderr

    run_id = env.submit(env.blueprint("live", config=env.config("live", forever=True)))
    wait_for(lambda: env.record(run_id).get("state") == "running", what="the run to start")
    session = env.record(run_id)["session"]

    out = env.cli("shutdown")
    assert out.returncode == 0 and f"pid {pid}) stopped" in out.stdout, out.stderr
    assert not Home(env.home).daemon_running()
    wait_for(lambda: _gone(pid), what="the daemon process to exit")
    assert env.tmux("has-session", "-t", f"={session}").returncode == 0  # the run goes on
    assert env.record(run_id)["state"] == "running"
    assert "no daemon is running" in env.cli("shutdown").stdout

    second = _detach(env)
    assert second != pid
    wait_for(
        lambda: f"run {run_id}: watching again" in (env.home / "daemon.log").read_text(),
        what="the new daemon to take the run up again",
    )
    stopped = env.cli("stop", run_id)
    assert stopped.returncode == 0, stopped.stderr
    assert env.status(run_id)["status"] == "stopped" and len(env.launches()) == 1
    log = (env.home / "daemon.log").read_text()
    assert f"run {run_id}: ended stopped: stopped by `ajetd stop`" in log
    assert env.cli("shutdown").returncode == 0


def test_shutdown_of_a_stopped_daemon_says_it_is_stopped_and_how_to_end_it(
    detached: Env,
) -> None:
    """A daemon stopped by SIGSTOP (or a debugger) takes no SIGTERM until it is continued:
    `shutdown` said only that it was still running, and the status line's advice was
    `ajetd shutdown` again. It says the process is stopped, `kill -CONT`, and `kill -9`."""
    env = detached
    pid = _detach(env)
    os.kill(pid, signal.SIGSTOP)
    try:
        out = env.cli("shutdown", "--timeout", "1")
        assert out.returncode == 1, out.stdout + out.stderr
        assert "it is stopped (SIGSTOP" in out.stderr and f"kill -CONT {pid}" in out.stderr
        assert f"kill -9 {pid}" in out.stderr, out.stderr
    finally:
        os.kill(pid, signal.SIGCONT)  # the SIGTERM it holds then ends it
    wait_for(lambda: _gone(pid), what="the daemon to end once continued")


def test_a_daemon_that_cannot_start_says_why(detached: Env) -> None:
    env = detached
    env.home.mkdir()
    (env.home / "daemon.log").symlink_to(env.tmp / "elsewhere.log")
    out = env.cli("daemon", "--detach")
    assert out.returncode == 1 and "cannot open the daemon log" in out.stderr
    (env.home / "daemon.log").unlink()
    out = env.cli("daemon", "--detach", "--gpu-period", "-1x")
    assert out.returncode == 2  # a usage error is caught before anything starts


def test_a_daemon_without_tmux_is_not_said_to_have_started(detached: Env) -> None:
    """tmux not on the daemon's PATH (a new machine, a cron or systemd PATH without the folder
    tmux was built into): the daemon took the home's lock, then died of it, and `--detach`,
    which returned once the lock was held, printed `ajetd daemon started: pid N`, exit 0
    (walk98 F8). It exits 1 with the daemon's own words; nothing holds the home."""
    env = detached
    bare = env.tmp / "bare-bin"  # a PATH without tmux (python is run by its full path)
    bare.mkdir()
    path, env.vars["PATH"] = env.vars["PATH"], str(bare)
    try:
        out = env.cli("daemon", "--detach", *FAST)
    finally:
        env.vars["PATH"] = path  # the fixture's teardown runs tmux
    assert out.returncode == 1, out.stdout + out.stderr
    assert "started" not in out.stdout, out.stdout
    assert "the daemon exited at start (code 1)" in out.stderr, out.stderr
    assert "cannot run tmux" in out.stderr, out.stderr
    assert not Home(env.home).daemon_running()


def test_daemons_started_at_once_on_one_home_leave_one_and_the_others_say_why(
    detached: Env,
) -> None:
    """Starts racing past the "already running" check: one daemon holds the home, each other
    start exits 1 naming the one that runs, with what it wrote, not the log's history."""
    env = detached
    env.home.mkdir(mode=0o700)
    (env.home / "daemon.log").write_text("an old line from last week\n")
    (env.home / "daemon.log").chmod(0o600)
    starts = [
        subprocess.Popen(
            [PYTHON, "-m", "ajetd", "daemon", "--detach", *FAST],
            env=env.vars,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    results = [(p.wait(timeout=60), *p.communicate()) for p in starts]
    assert sorted(code for code, _, _ in results) == [0, 1, 1], results
    pid = Home(env.home).daemon_info()["pid"]
    for code, _, err in results:
        if code == 1:
            assert "an old line" not in err
            assert "already running" in err or "another daemon" in err, err
            assert str(pid) in err, err
            assert f"ajetd daemon {pid} on" not in err, err  # (walk 82: the winner's log)


def test_wait_returns_once_finish_flag_is_there(env: Env, tmp_path: Path) -> None:
    """A run reads `done` a moment before its finish.flag is written (`reports_pending` on
    record): `wait` waits until the daemon has written the flag and then the record."""
    home = Home(env.home)
    home.ensure()
    result = tmp_path / "result"
    result.mkdir()
    now = time.time()
    run = model.finish(
        Run(run_id="abc123", source="b.md", submitted_at=now, result_dir=str(result)),
        Status.SUCCEEDED,
        "exit 0",
        0,
        now,
    )
    home.run_dir(run.run_id).mkdir()
    home.save_run(replace(run, reports_pending=True))
    lock = home.acquire_lock()  # a daemon holds the home (this test), reports still to come
    try:
        waiting = subprocess.Popen(
            [PYTHON, "-m", "ajetd", "wait", run.run_id], env=env.vars, stdout=subprocess.PIPE
        )
        with pytest.raises(subprocess.TimeoutExpired):
            waiting.wait(timeout=1.5)  # still waiting: no finish.flag yet
        (result / "finish.flag").write_text(json.dumps({"run_id": run.run_id}))
        home.save_run(run)  # as `ending.publish_reports`: the flag first, then the record
        assert waiting.wait(timeout=20) == 0
    finally:
        os.close(lock)


def test_ctrl_c_on_wait_exits_130_and_says_the_run_goes_on(env: Env) -> None:
    """click's `Aborted!` exited 1, the code of a failed run: a script could not tell them."""
    run_id = env.submit(env.blueprint("interrupted"))  # no daemon: the wait blocks
    proc = env.cli_started("wait", run_id)
    assert proc.stderr is not None
    said = proc.stderr.readline()  # the no-daemon line: it is in its loop now
    assert "no daemon is running" in said, said
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (proc.returncode, err)
    assert "interrupted; it goes on" in err and "Aborted" not in err, err


def _reading_stdin(pid: int) -> bool:
    """The process is in read(2) on its standard input (Linux: /proc/PID/syscall)."""
    try:
        return Path(f"/proc/{pid}/syscall").read_text().startswith("0 0x0 ")
    except OSError:
        return False


def test_ctrl_c_while_submit_reads_stdin_is_one_line_and_130(env: Env) -> None:
    """Walk88 F11: Ctrl-C while `ajetd submit -` read a blueprint being typed or pasted
    printed a KeyboardInterrupt traceback. One line, exit 130, and nothing submitted."""
    proc = subprocess.Popen(
        [PYTHON, "-m", "ajetd", "submit", "-"],
        env=env.vars,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    proc.stdin.write("## [exp_purpose]\nhalf typed\n")
    proc.stdin.flush()
    wait_for(lambda: _reading_stdin(proc.pid), what="submit reading its standard input")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and not out, (proc.returncode, out, err)
    assert err == "ajetd: interrupted; the blueprint was not read whole; nothing was submitted\n"
    inbox = env.home / "inbox"
    assert not inbox.exists() or not any(inbox.iterdir())


# Ctrl-C delivered at the moment a module is imported (a finder that signals its own process):
# while the command line loads (its first ~0.1 s) and while a command runs
_SIGNAL_AT_IMPORT = """
import os, signal, sys
AT = sys.argv[1]
class Ctrl_C:
    def find_spec(self, name, path=None, target=None):
        if name == AT:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, Ctrl_C())
sys.argv = ["ajetd", *sys.argv[2:]]
from ajetd.cli.entry import entry
entry()
"""


@pytest.mark.parametrize(
    ("module", "args"),
    [
        ("ajetd.cli.main", ("lint", "x.md")),  # the command line loading
        ("ajetd.cli.statusterm", ("status",)),  # in the command (click's `Aborted!`, exit 1)
    ],
)
def test_ctrl_c_anywhere_in_a_command_is_one_line_and_130(
    env: Env, module: str, args: tuple[str, ...]
) -> None:
    """Walk88 F11: Ctrl-C in a command's first ~0.1 s printed the import's traceback; in a
    command without a handler of its own, click's `Aborted!` and exit 1, a failure's code."""
    done = subprocess.run(
        [PYTHON, "-c", _SIGNAL_AT_IMPORT, module, *args],
        env=env.vars,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert done.stderr.strip() == "ajetd: interrupted", done.stderr


def test_a_stop_whose_daemon_dies_while_it_waits_says_so_and_exits_1(env: Env) -> None:
    """walk87 F15: `ajetd stop` waits for the end; the daemon is killed meanwhile (kill -9):
    it said `the stop goes on` at its timeout, where nothing went on. Now it says the daemon
    ended, the request stands, and exits 1 at once, as a stop with no daemon does."""
    daemon = env.start_daemon("--grace-int", "60")
    command = "trap '' INT; while :; do sleep 0.1; done"
    run_id = env.submit(env.blueprint("deaf", command=command, ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("state") == "running", what="the run to start")
    stop = env.cli_started("stop", run_id, "--timeout", "60")
    events = env.home / "runs" / run_id / "events.jsonl"
    wait_for(lambda: "sent SIGINT" in events.read_text(), what="the stop's SIGINT")
    daemon.kill()
    daemon.wait(timeout=10)
    _, err = stop.communicate(timeout=20)
    assert stop.returncode == 1, err
    assert "the daemon ended while the stop waited (its request stands)" in err, err
    assert "the stop goes on" not in err
    env.start_daemon("--grace-int", "0.5")  # the next one takes the stop on
    assert env.wait_done(run_id, timeout=30)["status"] == "stopped"


def test_the_detached_daemons_log_is_rotated_at_its_bound_and_keeps_a_few(detached: Env) -> None:
    """Gap (session 34): daemon.log was appended to for ever. With a bound of 2000 bytes
    and 2 kept, the DEBUG lines a daemon writes by the hundred rotate it: daemon.log.1 and
    .2, never .3, each near the bound and owner-only; the daemon's stderr follows the new
    file (a traceback goes where its log lines go), and its last line is in daemon.log."""
    env = detached
    out = env.cli(
        "daemon", "--detach", *FAST, "--log-level", "DEBUG",
        "--log-max-bytes", "2000", "--log-keep", "2",
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    pid = int(out.stdout.split("pid ")[1].split(",")[0])
    log = env.home / "daemon.log"
    first = wait_for(lambda: log.with_name("daemon.log.2").exists() and log.stat().st_ino)
    run_id = env.submit(env.blueprint("short", config=env.config("short")))
    wait_for(lambda: env.record(run_id).get("state") == "done", what="the run to end")
    # rotated again since: the file the daemon writes now is new, and its stderr is that file
    wait_for(lambda: log.stat().st_ino != first, what="another rotation")
    wait_for(
        lambda: os.stat(f"/proc/{pid}/fd/2").st_ino == log.stat().st_ino,
        what="the daemon's stderr to follow the new daemon.log",
    )
    assert env.cli("shutdown").returncode == 0
    names = sorted(p.name for p in env.home.iterdir() if p.name.startswith("daemon.log"))
    assert names == ["daemon.log", "daemon.log.1", "daemon.log.2"], names
    for name in names:
        path = env.home / name
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, name
        lines = path.read_text().splitlines()
        longest = max(map(len, lines), default=0)
        assert path.stat().st_size <= 2000 + longest + 1, (name, path.stat().st_size)
    last = (env.home / "daemon.log").read_text()  # what it said last is in the newest file
    assert last.rstrip().endswith("ajetd daemon stopped; runs go on in tmux"), last[-500:]


def test_with_no_daemon_a_live_runs_time_goes_on_and_no_deep_check_is_promised(
    env: Env,
) -> None:
    """With the daemon gone (killed: its daemon.json stays as it last wrote it), `ajetd
    status` shows a live run's time used from the clock (walk 90 F12 read it frozen), and
    `status RUN` no longer says `deep check in 11s` from the dead daemon's daemon.json: no
    daemon makes it."""
    daemon = env.start_daemon(*FAST)
    run_id = env.submit(env.blueprint("clock", command="sleep 60", ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("state") == "running", what="the run to start")
    wait_for(lambda: "deep check" in env.cli("status", run_id).stdout, what="a deep check due")
    daemon.kill()
    daemon.wait(10)

    def used() -> str:
        out = env.cli("status")
        assert "daemon: not running" in out.stdout, out.stdout
        row = next(line for line in out.stdout.splitlines() if line.startswith(run_id))
        return row.split()[3]  # RUN STATE T TIME

    first = used()
    wait_for(lambda: used() != first, 10, "the run's TIME to go on with the clock")
    assert used().endswith("/2m"), used()
    shown = env.cli("status", run_id).stdout
    assert "deep check" not in shown and "state      running" in shown, shown
    env.start_daemon(*FAST)  # it takes the run up again, and stops it
    wait_for(Home(env.home).daemon_running, what="the daemon to hold its home")
    assert env.cli("stop", run_id).returncode == 0
