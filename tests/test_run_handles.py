"""A run named as people name it on the command line: its id in capitals (read off a screen,
a chat), or its tmux session's name, which is what `tmux ls` and the status table show."""

from __future__ import annotations

import json

from conftest import Env, wait_for


def test_a_run_is_found_by_its_session_name_and_by_its_id_in_any_case(env: Env) -> None:
    env.start_daemon()
    go = env.tmp / "go"
    command = f"echo started; while [ ! -e {go} ]; do sleep 0.05; done; echo done"
    run_id = env.submit(env.blueprint("handles", command=command, purpose="lr sweep"))
    session = wait_for(lambda: env.record(run_id).get("session"), what="the run's session")
    assert session.startswith("ajet_"), session
    for handle in (session, run_id.upper()):
        out = env.cli("status", handle, "--json")
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["run_id"] == run_id
    go.touch()
    out = env.cli("wait", session, "--timeout", "30")
    assert out.returncode == 0, out.stdout + out.stderr
    assert run_id in out.stdout
    # ended, its session closed: the name still finds the newest run that had it
    out = env.cli("status", session, "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["run_id"] == run_id, out.stderr


def test_a_session_name_no_run_has_is_refused_in_words(env: Env) -> None:
    out = env.cli("status", "ajet_nothing_here")
    assert out.returncode == 2
    assert "no run has the tmux session 'ajet_nothing_here'" in out.stderr, out.stderr
    out = env.cli("wait", "nosuch", "--timeout", "1")
    assert out.returncode == 2 and "no run 'nosuch'" in out.stderr, out.stderr


def test_wait_takes_several_runs_and_exits_with_the_worst(env: Env) -> None:
    """An agent that submitted many runs waits for them in one call (walk87 F12): a line each,
    one timeout for all, the exit the worst of theirs; --json a list of status objects."""
    env.start_daemon()
    good = env.submit(env.blueprint("good", command="echo fine"))
    bad = env.submit(env.blueprint("bad", command="echo broken; exit 3", ajetd="max_trials: 1"))
    out = env.cli("wait", good, bad.upper(), good, "--timeout", "60")
    assert out.returncode == 1, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and good in lines[0] and bad in lines[1], lines
    out = env.cli("wait", good, bad, "--json", "--timeout", "5")
    assert [o["run_id"] for o in json.loads(out.stdout)] == [good, bad], out.stdout
    assert env.cli("wait", good, "--timeout", "5").returncode == 0
    out = env.cli("wait", good, "c-abcdef")
    assert out.returncode == 2 and "is a campaign" in out.stderr, out.stderr


def test_wait_refuses_an_unknown_id_before_waiting_for_a_live_one(env: Env) -> None:
    """Walk88 F5: `wait LIVE TYPO` blocked on the live run and said `no run 'zzzzzz'` only
    at its end (or at --timeout), with exit 2, after the live run's line: an agent learnt of
    its typo hours later and took the 2 for the live run's. Every id is looked up first: an
    unknown one is a usage error at once (exit 2, each named), nothing waited for."""
    env.start_daemon()
    go = env.tmp / "go"
    live = env.submit(env.blueprint("live", command=f"while [ ! -e {go} ]; do sleep 0.05; done"))
    wait_for(lambda: env.record(live).get("session"), what="the run launched")
    out = env.cli("wait", live, "zzzzzz", "--timeout", "120")
    assert out.returncode == 2 and not out.stdout, out.stdout + out.stderr
    assert "no run 'zzzzzz'" in out.stderr and "nothing was waited for" in out.stderr, out.stderr
    out = env.cli("wait", "Nope", live, "ajet_no_such_session_x", "yyyyyy", "--timeout", "120")
    assert out.returncode == 2 and not out.stdout, out.stdout + out.stderr
    assert "no run has the tmux session 'ajet_no_such_session_x'" in out.stderr, out.stderr
    out = env.cli("wait", "Nope", live, "yyyyyy", "--timeout", "120")
    assert out.returncode == 2 and not out.stdout, out.stdout + out.stderr
    assert "no runs 'Nope', 'yyyyyy'; nothing was waited for" in out.stderr, out.stderr
    assert env.status(live)["state"] == "running"  # refused at once: the run still goes on
    go.touch()
    assert env.cli("wait", live, "--timeout", "60").returncode == 0
