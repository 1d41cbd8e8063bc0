"""A user's tmux.conf against ajetd's detached sessions (walk98 F7). `set -g
destroy-unattached on` (a session goes with its terminal) destroyed each run's session as it
was made: every run lost at once, its program never run, with no hint why; `exit-unattached
on` ends the whole server once no client is attached. ajetd sets `destroy-unattached off` on
each session it makes and `exit-unattached off` on a server it starts; a user's server that is
running with exit-unattached on keeps it, the run launched there is warned, and where that
server ends the run's lost reason says which option did it.

The config is the test's `~/.tmux.conf` (HOME is the test's folder), which a server reads as it
starts, as the walk's user's was; the daemon takes no `tmux -f`, so the user's server of the
second test is started with `-f` on that same file."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ajetd.core.tmuxoptions import EXITS_UNATTACHED
from conftest import Env, wait_for

HOSTILE = "set -g destroy-unattached on\nset -g exit-unattached on\nset -g base-index 1\n"


def _conf(env: Env) -> Path:
    conf = Path(env.vars["HOME"]) / ".tmux.conf"
    conf.write_text(HOSTILE)
    return conf


def _option(env: Env, *args: str) -> str:
    shown = env.tmux("show-options", "-v", *args)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout.strip()


def test_a_tmux_conf_that_ends_detached_sessions_loses_no_run(env: Env) -> None:
    _conf(env)
    env.start_daemon()
    config = env.config("conf", forever=True)
    run_id = env.submit(env.blueprint("conf", config=config, ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("state") == "running", what="the run to start")
    session = env.status(run_id)["session"]
    target = f"={session}:"
    wait_for(lambda: "step:" in env.tmux("capture-pane", "-p", "-t", target).stdout)
    assert _option(env, "-g", "destroy-unattached") == "on"  # the user's config was read
    assert _option(env, "-t", session, "destroy-unattached") == "off"  # ajetd's session
    assert _option(env, "-s", "exit-unattached") == "off"  # a server ajetd started
    assert EXITS_UNATTACHED not in env.status(run_id)["warnings"]
    assert env.cli("stop", run_id).returncode == 0
    done = env.wait_done(run_id)
    assert done["status"] == "stopped", done


def test_a_run_on_a_users_server_that_exits_unattached_is_warned_and_its_loss_explained(
    env: Env,
) -> None:
    conf = _conf(env)
    # the user's own server, running with their config, kept up by their attached terminal
    terminal = subprocess.Popen(
        ["script", "-qfc", f"tmux -L {env.socket} -f {conf} new-session -s mine", "/dev/null"],
        env={**env.vars, "TERM": "xterm"},
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        attached = ("list-clients", "-F", "#{client_session}")
        wait_for(lambda: "mine" in env.tmux(*attached).stdout, what="the user's client")
        env.start_daemon("--liveness", "0.3")
        config = env.config("users", forever=True)
        run_id = env.submit(env.blueprint("users", config=config, ajetd="gpus: 0"))
        wait_for(lambda: env.record(run_id).get("state") == "running", what="the run to start")
        assert EXITS_UNATTACHED in env.status(run_id)["warnings"]
        assert _option(env, "-s", "exit-unattached") == "on"  # the user's server: theirs
        assert _option(env, "-t", "mine", "destroy-unattached") == ""  # theirs: the conf's
        env.tmux("detach-client", "-s", "=mine")  # the user's last client goes: so does the server
        done = env.wait_done(run_id)
    finally:
        terminal.kill()
        terminal.wait(timeout=10)
    assert done["status"] == "lost", done
    assert "is gone too: it ended" in done["reason"], done["reason"]
    assert "exit-unattached was on" in done["reason"], done["reason"]


def test_what_a_server_says_of_a_vanished_session(env: Env) -> None:
    """`Tmux.gone_why`, which a lost run's reason carries: a server whose global
    destroy-unattached is on (`tmux -f` the config) says so; a server that is not there says
    it ended; one with neither says nothing."""
    from ajetd.adapters.tmux import Tmux

    tmux = Tmux(env.socket)
    assert "is gone too: it ended" in tmux.gone_why()  # no server yet
    conf = env.tmp / "destroys.conf"  # exit-unattached on would end this detached server
    conf.write_text("set -g destroy-unattached on\n")
    env.tmux("-f", str(conf), "new-session", "-d", "-s", "kept", "sleep 60", ";",
             "set-option", "destroy-unattached", "off")  # fmt: skip
    assert "destroy-unattached is on" in tmux.gone_why()
    env.tmux("set-option", "-g", "destroy-unattached", "off")
    assert tmux.gone_why() == ""
