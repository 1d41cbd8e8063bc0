"""The locales a daemon and its users start in. Cron jobs, CI scripts, many systemd units and
`ssh host 'LC_ALL=C ...'` run with `LC_ALL=C` or `POSIX`, where tmux's client, not UTF-8,
prints each tab of a `-F` format as `_`: no pane line parsed, every run looked gone, and the
daemon ended healthy programs and recorded their runs lost (walk98 F1). ajetd's tmux calls
say `-u`; these runs go on under each locale, and the pane is read (`ajetd diag`)."""

from __future__ import annotations

import contextlib
import json
import os
import signal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ajetd.adapters.tmux import parse_panes
from ajetd.core.errors import TmuxError
from ajetd.core.policy import UNLISTED_PREFIX
from conftest import Env, wait_for

LOCALES = [
    {"LC_ALL": "POSIX"},
    {"LC_ALL": "C", "LANG": "C"},
    {"LC_ALL": "C.UTF-8"},
]


@pytest.mark.parametrize("locale", LOCALES, ids=["POSIX", "C", "C.UTF-8"])
def test_a_daemon_started_in_a_c_locale_keeps_its_runs(env: Env, locale: dict[str, str]) -> None:
    for name in ("LANG", "LANGUAGE", "LC_CTYPE", "LC_MESSAGES"):
        env.vars.pop(name, None)
    env.vars.update(locale)
    env.start_daemon("--liveness", "0.3")
    config = env.config("slow", steps=12, step_time=0.25)  # 3 s: several liveness polls
    run_id = env.submit(env.blueprint("slow", config=config, purpose="学习率 sweep, 中文"))
    wait_for(lambda: env.record(run_id).get("state") == "running", what="the run to start")
    pane = env.cli("diag", run_id).stdout.split("## Pane", 1)[-1]
    assert "(the pane is gone)" not in pane, pane
    done = env.wait_done(run_id, timeout=60)
    assert done["status"] == "succeeded", done
    assert "lost" not in done.get("reason", ""), done


def test_an_answer_not_in_the_asked_format_is_no_proof_that_panes_are_gone() -> None:
    """What a non-UTF-8 client printed: the format's tabs as `_`. Read as no panes, every
    run looked gone; it is a failed call now, which proves nothing about the runs."""
    sanitized = "ajet_x_%0_4242_0__ended_stopped_/h/runs/x/trial-1.sh_1_bash\n"
    with pytest.raises(TmuxError) as raised:
        parse_panes(sanitized)
    assert not raised.value.gone and "is in the asked format" in str(raised.value)
    assert parse_panes("") == []  # a server with no pane


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300))
def test_a_tmux_answer_reads_as_panes_or_raises(text: str) -> None:
    """No answer holding a line reads as "no panes" unless tmux listed none."""
    try:
        panes = parse_panes(text)
    except TmuxError as exc:
        assert not exc.gone
        return
    lines = [line for line in text.splitlines() if line]
    assert panes or not lines


def test_a_run_whose_server_lost_its_socket_is_not_called_lost(env: Env) -> None:
    """walk98 F14: a /tmp cleaner (systemd-tmpfiles ages /tmp/tmux-UID out) removed the tmux
    server's socket; the daemon's next look found no server, called every run lost and ended
    their healthy programs (here at a restart, which asks tmux at once). A run whose trial
    script still runs is flagged, never ended for it, and its end is recorded from its exit
    file."""
    env.start_daemon("--liveness", "0.3")
    config = env.config("orphaned", steps=30, step_time=0.3)  # 9 s
    run_id = env.submit(env.blueprint("orphaned", config=config))
    log = env.tmp / "results" / "orphaned" / "logs" / "trial-1.log"
    wait_for(lambda: log.exists() and "step:1 " in log.read_text(), what="the run's first step")
    got = env.tmux("list-sessions", "-F", "#{pid} #{socket_path}")
    listed = got.stdout.split()
    assert len(listed) >= 2, (got.stdout, got.stderr)
    server, socket = int(listed[0]), listed[1]
    try:
        os.unlink(socket)
        assert env.cli("shutdown").returncode == 0  # a daemon restarted now asks tmux at once
        env.start_daemon("--liveness", "0.3")
        wait_for(
            lambda: str(env.record(run_id).get("attention") or "").startswith(UNLISTED_PREFIX),
            what="the run flagged as on another server",
        )
        assert env.record(run_id).get("state") == "running"
        done = env.wait_done(run_id, timeout=60)
        assert done["status"] == "succeeded", done
        assert done["metrics"]["global_steps"] == 30, done["metrics"]
        # raised once and kept between tmux's answers (deep checks come between them: a
        # flag cleared there was raised again at the next answer, each time a hook's call)
        events = _events(env, run_id)
        raised = [e for e in events if e.startswith(f"attention: {UNLISTED_PREFIX}")]
        assert len(raised) == 1, events
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server, signal.SIGTERM)


def _events(env: Env, run_id: str) -> list[str]:
    """The run's journal (`events.jsonl`), its texts in order."""
    path = env.home / "runs" / run_id / "events.jsonl"
    return [json.loads(line)["event"] for line in path.read_text().splitlines() if line]
