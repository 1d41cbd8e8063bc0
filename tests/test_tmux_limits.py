"""tmux's own limits, known before they bite (walk98 F2, F18).

F18: AJETD_TMUX_SOCKET given a path (`/tmp/mysock`, as `tmux -S` takes it) was taken without
a word: `tmux -L /tmp/mysock new-session` says `error creating /tmp/tmux-UID//tmp/mysock` and
exits 0, and every run ended `lost ... outside ajetd's control` unstarted. A setting no server
can be made by (a path, `.`/`..`, a socket path over AF_UNIX's 107 bytes) is refused by the
daemon at start and said by `lint`, `status` and `submit`; a tmux call that prints `error
creating` is a failure whatever its exit code.

F2: `lint` said ok of a blueprint whose home, codebase and result dir (2.8 KB each) made the
launch's one tmux call pass tmux's message limit; the run `failed` at its launch after a
trial. Lint and admission measure the launch's call as the launch builds it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from ajetd.adapters.tmux import TMUX_CALL_MAX, Tmux
from ajetd.adapters.tmuxsocket import SUN_PATH_MAX, server_path, socket_problem
from ajetd.core.errors import TmuxError
from conftest import PYTHON, Env


def _ajetd(env: Env, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """`ajetd ARGS` with `extra` in its environment (a daemon refused returns at once)."""
    return subprocess.run(
        [PYTHON, "-m", "ajetd", *args],
        env={**env.vars, **extra},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# -- F18: the socket setting -------------------------------------------------------------------


def test_a_path_as_the_socket_is_refused_at_start_and_said_by_the_clients(env: Env) -> None:
    """The daemon (in the foreground and `--detach`) exits 1 naming the variable, its value
    and what it must be; nothing is started. `lint` names it as a problem, `status` and a
    `submit` with no daemon say it on stderr and go on."""
    path = f"/tmp/ajetd-test-{uuid.uuid4().hex[:8]}"  # what a user gives `tmux -S`
    for how in (("daemon",), ("daemon", "--detach")):
        refused = _ajetd(env, *how, AJETD_TMUX_SOCKET=path)
        assert refused.returncode == 1, (how, refused.stdout, refused.stderr)
        said = refused.stderr
        assert f"AJETD_TMUX_SOCKET={path!r} is a path" in said, said
        assert "a name, as `tmux -L` takes it (no `/`" in said, said
        assert "started" not in refused.stdout
        assert not (env.home / "daemon.json").exists()
    assert not os.path.exists(path)
    linted = _ajetd(env, "lint", str(env.blueprint("bp")), AJETD_TMUX_SOCKET=path)
    assert linted.returncode == 2, linted.stdout
    assert f"AJETD_TMUX_SOCKET={path!r} is a path" in linted.stderr
    assert "a daemon started so refuses to start" in linted.stderr
    shown = _ajetd(env, "status", AJETD_TMUX_SOCKET=path)
    assert shown.returncode == 0, shown.stderr
    assert f"AJETD_TMUX_SOCKET={path!r} is a path" in shown.stderr
    submitted = _ajetd(env, "submit", str(env.blueprint("bp")), AJETD_TMUX_SOCKET=path)
    assert submitted.returncode == 0, submitted.stderr
    assert "no daemon is running" in submitted.stderr
    assert f"AJETD_TMUX_SOCKET={path!r} is a path" in submitted.stderr


@pytest.mark.parametrize("size", [SUN_PATH_MAX, SUN_PATH_MAX + 1])
def test_a_socket_path_too_long_for_af_unix_is_refused_as_tmux_refuses_it(
    env: Env, size: int
) -> None:
    """A name whose socket path (in tmux's `tmux-UID` folder) is 108 bytes is refused, by
    tmux and by ajetd's check alike; 107 bytes is made by both."""
    folder = os.path.dirname(server_path("x", env.vars))
    name = "n" * (size - len(folder) - 1)
    made = subprocess.run(
        ["tmux", "-L", name, "new-session", "-d", "-s", "s", "sleep 30"],
        env=env.vars,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True, check=False)
    tmux_made = made.returncode == 0 and not made.stderr
    problem = socket_problem(name, env.vars)
    assert tmux_made == (size <= SUN_PATH_MAX) == (problem is None), (made.stderr, problem)
    if problem is not None:
        assert f"at most {len(name) - 1} bytes" in problem, problem
        refused = _ajetd(env, "daemon", AJETD_TMUX_SOCKET=name)
        assert refused.returncode == 1
        assert f"longer than the {SUN_PATH_MAX} a socket's path can have" in refused.stderr


def test_a_tmux_tmpdir_too_long_is_named(env: Env) -> None:
    """With the name short (or unset), a TMUX_TMPDIR long enough alone is what is named."""
    deep = env.tmp / ("t" * 100)
    deep.mkdir()
    refused = _ajetd(env, "daemon", TMUX_TMPDIR=str(deep), AJETD_TMUX_SOCKET="")
    assert refused.returncode == 1
    assert f"TMUX_TMPDIR={str(deep)!r} (with AJETD_TMUX_SOCKET unset)" in refused.stderr
    assert "choose a shorter TMUX_TMPDIR" in refused.stderr


def test_a_server_that_cannot_make_its_socket_is_no_session_made(env: Env) -> None:
    """tmux exits 0 where the server a call starts cannot make its socket (`error creating
    ... (No such file or directory)`): read as a failure, never as a session made (it was
    read as made, and the run then found `lost`). Not `gone`: no server was there to go."""
    script = env.tmp / "t.sh"
    script.write_text("echo hi\n")
    folder_gone = Tmux(path=str(env.tmp / "none" / "sock"))
    a_path_as_name = Tmux(f"/tmp/ajetd-test-{uuid.uuid4().hex[:8]}")
    for tmux in (folder_gone, a_path_as_name):
        with pytest.raises(TmuxError) as caught:
            tmux.new_session("ajet_x", str(env.tmp), str(script), str(env.tmp / "t.log"))
        assert "error creating" in str(caught.value)
        assert "could not make its socket, so no session was made" in str(caught.value)
        assert not caught.value.gone


# -- F2: the launch's one tmux call --------------------------------------------------------------


def test_tmuxs_limit_on_a_call_is_the_one_ajetd_measures(env: Env) -> None:
    """TMUX_CALL_MAX against tmux itself: a call of that many bytes goes through, one byte
    more does not, and is said to be too long (tmux's own words, `failed to send command`,
    name no cause)."""
    env.tmux("new-session", "-d", "-s", "s", "sleep 30")
    tmux = Tmux(env.socket)
    fixed = len("display-message") + 1 + len("-p") + 1 + 1  # each word's NUL
    said = tmux._run("display-message", "-p", "x" * (TMUX_CALL_MAX - fixed))
    assert len(said.strip()) == TMUX_CALL_MAX - fixed
    with pytest.raises(TmuxError, match=f"{TMUX_CALL_MAX + 1} bytes in one tmux call"):
        tmux._run("display-message", "-p", "x" * (TMUX_CALL_MAX - fixed + 1))


def _deep(root: Path, components: int) -> Path:
    """A folder under `root` whose path is `components` names of 200 bytes longer."""
    return root.joinpath(*["d" * 200] * components)


def _long_paths(env: Env, components: int) -> tuple[Path, Path]:
    """A home, a codebase (a copy of the test's) and a result dir each `components` names of
    200 bytes deep, set in `env`; the blueprint and the result dir."""
    home = _deep(env.tmp / "h", components)
    home.mkdir(parents=True, mode=0o700)
    env.home = home
    env.vars["AJETD_HOME"] = str(home)
    codebase = _deep(env.tmp / "c", components)
    shutil.copytree(env.codebase, codebase)
    env.codebase = codebase
    result = _deep(env.tmp / "r", components)
    return env.blueprint("deep", result=str(result), command="echo from-deep"), result


def test_paths_too_long_for_the_launch_are_refused_by_lint_and_admission(env: Env) -> None:
    """Home, codebase and result dir of ~2.8 KB each (14 names of 200 bytes): `lint` exits 2
    naming each path with its length; the daemon rejects the run (status `rejected`, no
    trial), saying the same, where it failed at its launch after a trial."""
    bp, result = _long_paths(env, 14)
    lengths = {str(p): len(str(p)) for p in (env.home, env.codebase, result)}
    assert min(lengths.values()) > 2800
    linted = env.cli("lint", str(bp))
    assert linted.returncode == 2, linted.stdout
    for what in ("$AJETD_HOME", "exp_codebase_dir", "exp_result_dir"):
        assert what in linted.stderr, linted.stderr
    for path, length in lengths.items():
        assert f"{path[:40]}...{path[-40:]} ({length} bytes)" in linted.stderr, linted.stderr
    assert f"over tmux's limit of {TMUX_CALL_MAX}" in linted.stderr
    as_json = json.loads(env.cli("lint", "--json", str(bp)).stdout)
    assert any("command too long" in p for p in as_json["problems"]), as_json
    env.start_daemon()
    run_id = env.submit(bp)
    status = env.wait_done(run_id)
    assert status["status"] == "rejected", status
    assert status["trials"] == 0, status
    assert "command too long" in status["reason"] and "exp_result_dir" in status["reason"]
    assert not env.tmux("list-sessions").stdout  # nothing was launched


def test_paths_of_a_kilobyte_still_launch(env: Env) -> None:
    """Home, codebase and result dir of ~1 KB each (5 names of 200 bytes) pass lint and run."""
    bp, result = _long_paths(env, 5)
    linted = env.cli("lint", str(bp))
    assert linted.returncode == 0, linted.stderr
    env.start_daemon()
    run_id = env.submit(bp)
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    assert "from-deep" in (result / "logs" / "trial-1.log").read_text()
    assert (result / "finish.flag").exists()
