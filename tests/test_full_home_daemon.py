"""A daemon started on a full home (walk98 F12): it ran and served the home, but could not write
its pid into daemon.lock, so `--detach` reported a failure after 30 s, and `ajetd shutdown`
said "a process holds daemon.lock but its pid is not recorded" for good, also once the disk
had room. `--detach` says the disk is full, `shutdown` finds the lock's holder itself (an
ajetd daemon of this user with that lock open), and the daemon writes its pid once it can.
A real daemon on a real full disk (a small tmpfs: CI runs as root)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import psutil

from ajetd.adapters.store import Home
from ajetd.cli.daemonctl import lock_holder
from conftest import PYTHON, Env, fill, wait_for


def _full_home(env: Env, tmpfs: Callable[[Path, str], Path]) -> tuple[Path, Path]:
    mount = tmpfs(env.tmp / "disk", "2m")
    filler = fill(mount)
    home = mount / "h2"  # a new home, made on the full disk
    env.vars["AJETD_HOME"] = str(home)
    return home, filler


def test_detach_on_a_full_home_says_so_and_shutdown_stops_it(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    home, _ = _full_home(env, tmpfs)
    started = env.cli("daemon", "--detach", "--liveness", "0.3", timeout=90)
    assert started.returncode == 0, (started.stdout, started.stderr)
    said = re.search(r"started: pid (\d+)", started.stdout)
    assert said, started.stdout
    pid = int(said.group(1))
    assert f"the disk of {home} is full" in started.stderr, started.stderr
    assert (home / "daemon.lock").read_bytes() == b""  # no room for the pid
    assert lock_holder(Home(home)) == pid  # found as the lock's holder
    again = env.cli("daemon", "--detach")
    assert again.returncode == 1 and f"(pid {pid})" in again.stderr, again.stderr
    stopped = env.cli("shutdown", "--timeout", "30")
    assert stopped.returncode == 0, (stopped.stdout, stopped.stderr)
    # shutdown returns once the lock is let go; the process may take a moment more to exit
    wait_for(lambda: not _alive(pid), 30, "the stopped daemon's process to exit")


def test_a_daemon_records_its_pid_once_the_home_has_room(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    home, filler = _full_home(env, tmpfs)
    daemon = subprocess.Popen(
        [PYTHON, "-m", "ajetd", "daemon", "--liveness", "0.3"],
        env=env.vars,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    env.daemons.append(daemon)
    wait_for(lambda: Home(home).daemon_running() or daemon.poll() is not None, 30, "the lock")
    assert daemon.poll() is None
    assert (home / "daemon.lock").read_bytes() == b""
    filler.unlink()
    wait_for(lambda: (home / "daemon.lock").read_bytes() == str(daemon.pid).encode(), 30, "pid")
    stopped = env.cli("shutdown", "--timeout", "30")
    assert stopped.returncode == 0, (stopped.stdout, stopped.stderr)
    assert daemon.wait(timeout=10) == 0


def _alive(pid: int) -> bool:
    """Whether `pid` is a process that has not ended (a zombie has: only its reaping waits)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
