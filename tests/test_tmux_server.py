"""The tmux server a run lives on is its socket's whole path, `$TMUX_TMPDIR/tmux-UID/NAME`,
not only its `-L` name (walk98 F4): a daemon restarted from a shell with another TMUX_TMPDIR
found no session of a live run, called it lost and ended its program; `status`, `diag` and
`attach` from such a shell called the live session gone. Each run records the path
(`tmux_socket_path`); the CLI reaches it by `-S PATH` whatever the shell has, and a daemon
whose TMUX_TMPDIR leads elsewhere refuses to start, naming the variables to set."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ajetd.adapters.tmuxsocket import server_path
from conftest import Env, marked_processes, wait_for


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A folder with a short path under /tmp: a socket's path must fit in 108 bytes, which a
    pytest tmp_path's folder with `tmux-UID/NAME` under it passes."""
    folder = Path(tempfile.mkdtemp(prefix="ajt", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _tmux_says(socket: str, environ: dict[str, str], cwd: Path) -> str:
    """`#{socket_path}` as a server started in `environ` from `cwd` says it; the server
    ended after."""

    def tmux(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-u", "-L", socket, *args],
            env=environ,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )

    started = tmux("new-session", "-d", "-s", "s", "sleep 30")
    assert started.returncode == 0, started.stderr
    try:
        said = tmux("display-message", "-p", "-t", "s", "#{socket_path}")
        assert said.returncode == 0, said.stderr
        return said.stdout.strip()
    finally:
        tmux("kill-server")


def test_the_socket_path_is_the_one_tmux_finds(
    short_dir: Path, env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`server_path` against tmux's own `#{socket_path}` for each kind of TMUX_TMPDIR: unset,
    empty, a folder, a link to one, a folder not there (tmux falls back to /tmp), a relative
    one, one with a trailing slash."""
    (short_dir / "d").mkdir()
    (short_dir / "l").symlink_to(short_dir / "d")
    monkeypatch.chdir(short_dir)
    cases = {
        "unset": None,
        "empty": "",
        "folder": str(short_dir / "d"),
        "link": str(short_dir / "l"),
        "not there": str(short_dir / "none"),
        "relative": "d",
        "slash": f"{short_dir / 'd'}/",
    }
    for n, (what, value) in enumerate(cases.items()):
        environ = {k: v for k, v in env.vars.items() if k != "TMUX_TMPDIR"}
        if value is not None:
            environ["TMUX_TMPDIR"] = value
        socket = f"{env.socket}-{n}"  # a server each: one just killed may still hold its path
        expected = _tmux_says(socket, environ, short_dir)
        assert server_path(socket, environ) == expected, what


def _daemon(env: Env, **extra: str) -> subprocess.CompletedProcess[str]:
    """`ajetd daemon` in the foreground with this test's variables changed by `extra` (a
    value of None: the variable unset), for a daemon expected to refuse at once."""
    variables = {**env.vars, **extra}
    return subprocess.run(
        [sys.executable, "-m", "ajetd", "daemon"],
        env={k: v for k, v in variables.items() if v},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _cli(env: Env, *args: str) -> subprocess.CompletedProcess[str]:
    """`ajetd ARGS` from a shell without TMUX_TMPDIR."""
    return subprocess.run(
        [sys.executable, "-m", "ajetd", *args],
        env={k: v for k, v in env.vars.items() if k != "TMUX_TMPDIR"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_run_under_another_tmux_tmpdir_is_reached_and_never_called_lost(
    env: Env, short_dir: Path
) -> None:
    """The walk's case: a daemon started with TMUX_TMPDIR set (a shell rc, a systemd unit
    putting sockets under $XDG_RUNTIME_DIR), the user's later shell without it."""
    env.vars["TMUX_TMPDIR"] = str(short_dir)  # the fixture's teardown ends this server
    env.start_daemon()
    config = env.config("far", forever=True)
    run_id = env.submit(env.blueprint("far", config=config, ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("state") == "running", what="the run to start")
    path = f"{short_dir}/tmux-{os.getuid()}/{env.socket}"
    shown = json.loads(_cli(env, "status", run_id, "--json").stdout)
    assert (shown["tmux_socket"], shown["tmux_socket_path"]) == (env.socket, path), shown
    detail = _cli(env, "status", run_id).stdout
    assert f"tmux -S {path} attach -t {shown['session']}" in detail, detail
    target = f"={shown['session']}:"
    wait_for(lambda: "step:" in env.tmux("capture-pane", "-p", "-t", target).stdout)
    pane = _cli(env, "diag", run_id).stdout.split("## Pane", 1)[-1]
    assert "(the pane is gone)" not in pane and "step:" in pane, pane
    attach = f"{shlex.quote(sys.executable)} -m ajetd attach {run_id}"  # a terminal of its own
    shell = {k: v for k, v in env.vars.items() if k != "TMUX_TMPDIR"}
    terminal = subprocess.Popen(
        ["script", "-qfc", attach, "/dev/null"],
        env={**shell, "TERM": "xterm"},
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        clients = ("list-clients", "-F", "#{client_session}")
        wait_for(lambda: shown["session"] in env.tmux(*clients).stdout, what="attach")
    finally:
        terminal.kill()
        terminal.wait(timeout=10)

    assert env.cli("shutdown").returncode == 0
    refused = _daemon(env, TMUX_TMPDIR="")  # the usual restart, from a shell without it
    assert refused.returncode == 1, refused.stderr
    assert f"run {run_id} lives on the tmux server of socket {path}" in refused.stderr
    assert f"AJETD_TMUX_SOCKET={env.socket} TMUX_TMPDIR={short_dir}" in refused.stderr
    other = _daemon(env, TMUX_TMPDIR="", AJETD_TMUX_SOCKET="elsewhere")  # both differ
    assert f"AJETD_TMUX_SOCKET={env.socket} TMUX_TMPDIR={short_dir}" in other.stderr
    assert env.record(run_id)["state"] == "running"
    assert marked_processes(run_id)  # its program was never touched

    env.start_daemon()  # the run's TMUX_TMPDIR: it takes the run up again
    wait_for(lambda: "watching again" in env.daemon_log(), what="the run taken up")
    assert _cli(env, "stop", run_id).returncode == 0
    assert env.wait_done(run_id)["status"] == "stopped"
