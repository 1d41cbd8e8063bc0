"""A trial's environment is the daemon's (DESIGN §3), not the tmux server's. A pane inherits
the global environment of whoever started the server: with the README's default (your own
server) that is the shell that first ran tmux, maybe days ago, so a run got that shell's stale
PYTHONPATH and lacked the daemon's WANDB_API_KEY, which admission had judged present (walk98
F11). The daemon's environment goes to the pane in an owner-only file (never on a command
line), which the script loads with what it inherited cleared first."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from ajetd.adapters.environ import ENVIRON, keep_environ
from ajetd.core.trialscript import TrialSpec, environ_file_bytes, render_trial_script
from conftest import Env

SECRET = "wandb-secret-4f1c"  # noqa: S105 (a made-up key)
ODD = "two\nlines, 'quotes' \"and\" $HOME `x` \\ ä"


def test_a_run_sees_the_daemons_environment_not_the_tmux_servers(env: Env) -> None:
    """The walk's reproduction: a tmux server started beforehand by a shell with its own
    variables, the daemon started on it with others."""
    stale = env.tmp / "oldproj"
    started = subprocess.run(
        ["tmux", "-L", env.socket, "new-session", "-d", "-s", "mine"],
        env={**env.vars, "FOO_T": "1", "PYTHONPATH": str(stale)},
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    assert started.returncode == 0, started.stderr
    env.vars.update(FOO_D=ODD, WANDB_API_KEY=SECRET)
    env.vars.pop("PYTHONPATH", None)
    env.start_daemon()
    seen = env.tmp / "seen.json"
    command = f"python -c 'import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], \"w\"))' {seen}"
    run_id = env.submit(env.blueprint("envrun", command=command, ajetd="gpus: 0"))
    assert env.wait_done(run_id, timeout=60)["status"] == "succeeded"
    got = json.loads(seen.read_text())
    assert got["FOO_D"] == ODD and got["WANDB_API_KEY"] == SECRET, got
    assert "FOO_T" not in got and "PYTHONPATH" not in got, got  # the server's, gone
    assert got["TMUX_PANE"].startswith("%") and got["TMUX"], got  # the pane's own, kept
    assert got["AJETD_RUN_ID"] == run_id, got
    if sys.prefix != sys.base_prefix:  # the tests' python is a venv's (the CI's is not)
        assert got["VIRTUAL_ENV"], got
    # the key is in an owner-only file, nowhere on a command line nor in the script
    environ = env.home / "runs" / run_id / ENVIRON
    mode = environ.lstat().st_mode
    assert stat.S_ISREG(mode) and stat.S_IMODE(mode) == 0o600, oct(mode)
    assert f"WANDB_API_KEY={SECRET}\0".encode() in environ.read_bytes()
    script = (env.home / "runs" / run_id / "trial-1.sh").read_text()
    assert SECRET not in script
    starts = env.tmux("list-panes", "-a", "-F", "#{pane_start_command}").stdout
    assert SECRET not in starts and "trial-1.sh" in starts


def _script(tmp: Path, env_file: str, command: str) -> Path:
    (tmp / "go").touch()
    spec = TrialSpec(
        "abc123", 1, command, str(tmp), "/nonexistent-venv", str(tmp), str(tmp / "go"),
        str(tmp / "exit"), str(tmp / "hup"), env_file=env_file,
    )  # fmt: skip
    script = tmp / "trial-1.sh"
    script.write_text(render_trial_script(spec))
    return script


def test_the_script_loads_any_value_and_clears_what_it_inherited(tmp_path: Path) -> None:
    daemon = {
        b"PATH": os.environb[b"PATH"],
        b"FOO_D": ODD.encode(),
        b"RAW": b"\xff\xfe not utf-8",
        b"BASH_FUNC_greet%%": b"() {  echo hi-$1\n}",  # an exported function (Lmod's module)
        b"TMUX_PANE": b"%999",  # the daemon's own (it ran in a pane): never the trial's
        b"SHLVL": b"9",
    }
    environ = tmp_path / "environ"
    environ.write_bytes(environ_file_bytes(daemon))
    seen = tmp_path / "seen"
    script = _script(tmp_path, str(environ), f"greet x > {seen}.f; env -0 > {seen}")
    inherited = {"STALE": "1", "PATH": "/usr/bin:/bin", "TMUX_PANE": "%3", "TERM": "screen"}
    done = subprocess.run(
        ["bash", str(script)], env=inherited, capture_output=True, timeout=30, check=False
    )
    assert done.returncode == 0, done
    got = dict(v.split(b"=", 1) for v in seen.read_bytes().split(b"\0") if v)
    assert got[b"FOO_D"] == ODD.encode() and got[b"RAW"] == b"\xff\xfe not utf-8"
    assert b"STALE" not in got and got[b"TMUX_PANE"] == b"%3" and got[b"TERM"] == b"screen"
    assert got[b"SHLVL"] != b"9"  # as bash sets it
    assert Path(f"{seen}.f").read_text() == "hi-x\n"


def test_an_unreadable_file_is_said_and_the_trial_runs(tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    script = _script(tmp_path, str(tmp_path / "gone"), f"echo $KEPT > {seen}")
    kept = {"KEPT": "yes", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(["bash", str(script)], env=kept, capture_output=True, check=False)
    assert done.returncode == 0 and seen.read_text() == "yes\n"
    assert b"[ajetd] cannot read the environment file" in done.stdout


def test_the_file_is_owner_only_written_once_and_never_through_a_link(tmp_path: Path) -> None:
    os.environ["AJETD_TEST_ENVIRON"] = "first"
    try:
        victim = tmp_path / "victim"
        victim.write_text("theirs\n")
        path = tmp_path / ENVIRON
        path.symlink_to(victim)  # a link put in its place is replaced, not written through
        assert keep_environ(path) == str(path)
        assert victim.read_text() == "theirs\n" and not path.is_symlink()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert b"AJETD_TEST_ENVIRON=first\0" in path.read_bytes()
        os.environ["AJETD_TEST_ENVIRON"] = "second"  # a daemon restarted with another one
        keep_environ(path)
        assert b"AJETD_TEST_ENVIRON=first\0" in path.read_bytes()  # the run keeps its own
        keep_environ(path, again=True)
        assert b"AJETD_TEST_ENVIRON=second\0" in path.read_bytes()
    finally:
        del os.environ["AJETD_TEST_ENVIRON"]
