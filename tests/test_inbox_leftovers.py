"""What sits in the inbox and is never taken (a hidden name such as a partial write's `.x.md`,
another extension, a folder without campaign.yaml) is named in the daemon's log and `ajetd
status` once it has sat there unchanged a while, never while it may still be being written,
and never taken. Real files, the loop driven in-process on a clock the test moves."""

from __future__ import annotations

import logging
import time

import pytest

from ajetd.adapters.inbox import STALE_S
from conftest import Env
from loopkit import FakeClock, Loop


def _names(loop: Loop) -> str:
    return "\n".join(loop.daemon.refused)


def test_entries_never_taken_are_named_once_they_sat_a_while(
    env: Env, loop: Loop, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    inbox = env.home / "inbox"
    text = env.blueprint("hid", command="true", ajetd="gpus: 0").read_text()
    (inbox / ".hid.md").write_text(text)  # written under a hidden name, never renamed in
    (inbox / "notes.txt").write_text(text)  # not named *.md
    (inbox / "stuff").mkdir()  # a folder without campaign.yaml
    since = time.time()
    loop.turn()
    loop.run_until(since + STALE_S - 2)  # a writer may still be at it: no word yet
    assert ".hid.md" not in _names(loop) and not loop.daemon.runs
    loop.run_until(since + STALE_S + 1)  # the daemon wakes for it by itself
    named = _names(loop)
    assert f"{inbox}/.hid.md has a hidden name (it begins with '.')" in named, named
    assert f"{inbox}/notes.txt is not named *.md or *.markdown" in named
    assert f"{inbox}/stuff is a folder without campaign.yaml" in named
    loop.run_for(30)
    logged = [r.getMessage() for r in caplog.records if ".hid.md" in r.getMessage()]
    assert len(logged) == 1, logged  # once, while it lasts
    assert not loop.daemon.runs  # nothing taken
    shown = env.cli("status")
    assert "inbox: " in shown.stdout and ".hid.md has a hidden name" in shown.stdout
    as_json = env.cli("status", "--json")
    assert as_json.returncode == 0 and ".hid.md has a hidden name" in as_json.stderr
    (inbox / ".hid.md").rename(inbox / "hid.md")  # the writer's rename, late: taken at once
    loop.until(lambda: loop.daemon.runs, "the renamed blueprint to be taken")
    assert ".hid.md" not in _names(loop) and "notes.txt" in _names(loop)


def test_a_hidden_file_already_old_at_start_is_named_at_once(env: Env) -> None:
    inbox = env.home / "inbox"
    inbox.mkdir(parents=True, mode=0o700)
    (inbox / ".left.md").write_text("half a blueprint")
    loop = Loop(env, clock=FakeClock(time.time() + STALE_S + 1))  # a start a minute later
    try:
        loop.turn()
        assert ".left.md has a hidden name" in _names(loop)
    finally:
        loop.close()


def test_a_fresh_temp_file_is_not_named(env: Env, loop: Loop) -> None:
    inbox = env.home / "inbox"
    (inbox / ".x.md.a1b2.tmp").write_text("being written")  # an atomic writer's temp file
    loop.turn()
    assert loop.daemon.refused == []
