"""The options ajetd sets on its tmux sessions are in effect on a real server, and only there:
the user's own sessions on the same server keep theirs."""

from __future__ import annotations

import psutil
import pytest

from ajetd.adapters.tmux import PRECISE_TIMER, Tmux
from conftest import Env, gated_script, wait_for


def _show(env: Env, *args: str) -> str:
    return env.tmux("show-options", "-v", *args).stdout.strip()


def test_a_run_window_is_named_kept_and_piped_and_the_users_are_untouched(env: Env) -> None:
    env.tmux("new-session", "-d", "-s", "mine", "sleep 60")  # the user's own session
    log = env.tmp / "trial-1.log"
    script = env.tmp / "trial-1.sh"
    go = gated_script(script, "echo hello\nsleep 60\n")
    pane = Tmux(env.socket).new_session("ajet_x", str(env.tmp), str(script), str(log), "trial-1")
    go.touch()  # piped in the call that made it: `hello` reaches the log
    fmt = "#{window_name} #{automatic-rename} #{remain-on-exit} #{pane_pipe}"
    shown = env.tmux("display-message", "-p", "-t", pane.pane_id, fmt).stdout.split()
    assert shown == ["trial-1", "0", "on", "1"]  # not renamed by tmux, kept dead, piped
    assert _show(env, "-w", "-t", "=mine:", "automatic-rename") in ("", "on")  # inherited
    assert _show(env, "-gw", "automatic-rename") == "on"  # the server's default as it was
    assert _show(env, "-gw", "remain-on-exit") == "off"
    server = psutil.Process(int(env.tmux("display-message", "-p", "#{pid}").stdout))
    panes = {int(p) for p in env.tmux("list-panes", "-a", "-F", "#{pane_pid}").stdout.split()}

    def helpers() -> list[str]:  # the pipe's processes: tmux's `sh` (it execs bash), `cat`
        found = [c for c in server.children() if c.pid not in panes]  # again after a full disk
        return [p.name() for c in found for p in (c, *c.children())]

    wait_for(lambda: helpers() == ["bash", "cat"], what="the pipe's two processes, bash, cat")
    wait_for(lambda: log.exists() and "hello" in log.read_text(), what="the output in the log")


def _server_environ(env: Env) -> dict[str, str]:
    return psutil.Process(int(env.tmux("display-message", "-p", "#{pid}").stdout)).environ()


def test_a_server_a_run_starts_keeps_precise_time_and_the_panes_do_not_see_it(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's own environment (what libevent read when its loop was made) has the
    precise clock; its global environment, which every pane gets, has not, so neither the
    run's program nor a user's later session sees the variable."""
    monkeypatch.delenv(PRECISE_TIMER, raising=False)
    seen = env.tmp / "seen.txt"
    script = env.tmp / "trial-1.sh"
    script.write_text(f'echo "[${{{PRECISE_TIMER}-unset}}]" > {seen}\nsleep 60\n')
    Tmux(env.socket).new_session("ajet_x", str(env.tmp), str(script), None, "trial-1")
    assert _server_environ(env).get(PRECISE_TIMER) == "1"
    assert PRECISE_TIMER not in env.tmux("show-environment", "-g").stdout
    wait_for(lambda: seen.exists() and seen.read_text() == "[unset]\n", what="the pane's own env")


def test_a_running_servers_environment_is_left_as_it_was(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a server that was running before (the user's), ajetd's session changes nothing of
    the global environment, and the server keeps the clock it was started with."""
    monkeypatch.delenv(PRECISE_TIMER, raising=False)
    env.tmux("new-session", "-d", "-s", "mine", "sleep 60")  # the user's server, started first
    env.tmux("set-environment", "-g", PRECISE_TIMER, "users-own")
    before = env.tmux("show-environment", "-g").stdout
    script = env.tmp / "trial-1.sh"
    script.write_text("sleep 60\n")
    Tmux(env.socket).new_session("ajet_x", str(env.tmp), str(script), None, "trial-1")
    assert env.tmux("show-environment", "-g").stdout == before
    assert PRECISE_TIMER not in _server_environ(env)


def test_panes_asked_ahead_give_what_panes_gives_and_none_without_a_server(env: Env) -> None:
    """`panes_soon` (a trial's end asks it once its record is saved and reads it later)
    answers as `panes_or_empty` does: the live panes, or none where no server runs."""
    assert Tmux(f"{env.socket}-none").panes_soon().panes() == []
    env.tmux("new-session", "-d", "-s", "mine", "sleep 60")
    tmux = Tmux(env.socket)
    asked = tmux.panes_soon()
    assert asked.panes() == tmux.panes_or_empty()
    assert [p.session for p in tmux.panes()] == ["mine"]
