"""Every end fires on_finish exactly once, also across a daemon killed in between (walk87 F1):
the end's record says the hook is due until it fired, and the journal's `hook on_finish
started` line says it fired. Real tmux on a private socket, the loop driven in-process, the
daemon's death injected right after a file landed."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ajetd.adapters.store import Home
from ajetd.core.model import Run
from conftest import Env
from loopkit import KillAfter, Killed, Loop


def _hook_lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def _journal(env: Env, run_id: str) -> list[str]:
    lines = (env.home / "runs" / run_id / "events.jsonl").read_text().splitlines()
    return [json.loads(line)["event"] for line in lines]


@pytest.mark.parametrize("stopped_queued", [False, True])
def test_a_daemon_killed_between_the_end_and_its_hook_fires_it_after_a_restart(
    env: Env, monkeypatch: pytest.MonkeyPatch, stopped_queued: bool
) -> None:
    """The daemon dies while it writes the ended run's reports (its end on record, the hook
    not fired yet): the next daemon writes the reports and fires on_finish, once. The same
    for a run stopped while queued (`ajetd stop` before its launch)."""
    hook = env.tmp / "hook.log"
    line = f"echo $AJETD_RUN_ID >> {hook}"
    # a `Loop` probes no GPU (NoGpu): gpus: [0] waits in the queue, on any machine
    cpus = "gpus: [0]" if stopped_queued else "gpus: 0"
    bp = env.blueprint("ends", command="exit 3", ajetd=f"{cpus}\non_finish: '{line}'")
    kill = KillAfter(monkeypatch, "run.json")  # the reports land, finish.flag not yet
    first = Loop(env)
    with pytest.raises(Killed):
        try:
            run_id = first.submit(bp)
            if stopped_queued:
                (env.home / "control" / f"{run_id}.stop").write_text("")
                first.until(lambda: False, "the stop to be taken")
            else:
                first.until_done(run_id)
        finally:
            first.close()
    kill.disarm()
    run_id = kill.run_id("ends")
    assert not (env.tmp / "results" / "ends" / "finish.flag").exists()
    assert _hook_lines(hook) == []  # the end is on record; its hook was not fired yet
    second = Loop(env)
    try:
        second.until_done(run_id)
        # the loop turns meanwhile: an end recorded between a tick's steps fires its hook at
        # the next tick (`_finish_hooks`), which a bare wait would never come to
        second.until(lambda: _hook_lines(hook) == [run_id], "the on_finish hook to run")
        second.turn()
        assert not second.run(run_id).finish_hook_due
    finally:
        second.close()
    third = Loop(env)  # a third daemon fires it no more
    try:
        third.turn()
        third.turn()
    finally:
        third.close()
    assert _hook_lines(hook) == [run_id]
    started = [e for e in _journal(env, run_id) if e.startswith("hook on_finish started")]
    assert len(started) == 1, started


def test_a_hook_the_journal_says_started_is_not_fired_again(env: Env) -> None:
    """A daemon killed after the hook started (its journal line), before the record said so:
    the next daemon clears the record's mark and fires nothing."""
    hook = env.tmp / "hook.log"
    line = f"echo $AJETD_RUN_ID >> {hook}"
    bp = env.blueprint("ends", command="true", ajetd=f"gpus: 0\non_finish: '{line}'")
    first = Loop(env)
    try:
        run_id = first.submit(bp)
        first.until_done(run_id)
        first.until(lambda: _hook_lines(hook) == [run_id], "the on_finish hook to run")
        first.turn()
    finally:
        first.close()
    home = Home(env.home)
    run = home.load_run(run_id)
    assert isinstance(run, Run) and not run.finish_hook_due
    home.save_run(replace(run, finish_hook_due=True))  # as the record was before the kill
    second = Loop(env)
    try:
        second.turn()
        second.turn()
        assert not second.run(run_id).finish_hook_due
    finally:
        second.close()
    assert _hook_lines(hook) == [run_id]
