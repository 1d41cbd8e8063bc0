"""A run whose program exited while no daemon runs: `status`, `status --json` and `wait` say
what is known without the daemon, its exit, rather than `running` alone (the record still
says `running`: no daemon recorded the end, so `state` keeps its meaning, and the new field
`unrecorded_exit` says the exit). A daemon started then records it and the field is null."""

from __future__ import annotations

import json
import re
import signal

from hypothesis import given
from hypothesis import strategies as st

from ajetd.core.exitfile import NO_DAEMON, UnrecordedExit, unrecorded_exit
from ajetd.core.model import Run, State, Status, Trial
from ajetd.views import listing
from conftest import Env, wait_for

AT = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


def _live(**trial: object) -> Run:
    fields: dict[str, object] = {"number": 1, "command": "x", "session": "s", "started_at": 1.0}
    fields.update(trial)
    return Run("abc123", "x.md", 0.0, state=State.RUNNING, trials=(Trial(**fields),))  # type: ignore[arg-type]


def test_an_exit_is_shown_only_where_no_daemon_runs_and_the_record_lacks_it() -> None:
    seen = unrecorded_exit(_live(), "3 1800000000.5\n", daemon_running=False)
    assert seen == UnrecordedExit(1, 3, 1800000000.5, NO_DAEMON)
    assert seen.words() == (
        "exited (code 3, 2027-01-15T08:00:00Z), not yet recorded: the daemon is not running"
    )
    assert seen.to_json() == {
        "trial": 1,
        "exit_code": 3,
        "exited_at": "2027-01-15T08:00:00Z",
        "why": "the daemon is not running",
    }
    assert unrecorded_exit(_live(), "3 1800000000.5\n", daemon_running=True) is None
    assert unrecorded_exit(_live(exit_code=3), "3 1800000000.5\n", False) is None
    assert unrecorded_exit(_live(ended_at=5.0), "3 1800000000.5\n", False) is None
    ended = Run("abc123", "x.md", 0.0, state=State.DONE, status=Status.FAILED)
    assert unrecorded_exit(ended, "3 1800000000.5\n", False) is None
    assert unrecorded_exit(_live(), None, False) is None
    for partial in ("", "3", "3 1800000000.5", "x 1\n", "300 1\n"):  # written half, garbled
        assert unrecorded_exit(_live(), partial, False) is None


@given(st.text(max_size=40))
def test_any_exit_file_text_is_read_or_ignored_never_raised(text: str) -> None:
    seen = unrecorded_exit(_live(), text, daemon_running=False)
    assert seen is None or (0 <= seen.exit_code <= 255 and text.endswith("\n"))


def test_the_overview_names_the_exit_under_the_table() -> None:
    run = _live()
    sel = listing.select([run], listing.Filters(), 10.0)
    exited = {run.run_id: UnrecordedExit(1, 3, None, NO_DAEMON)}
    text = listing.plain(listing.notes(sel, 200, exited))
    assert text == "abc123 exited (code 3), not yet recorded: the daemon is not running"
    assert listing.plain(listing.notes(sel, 200)) == ""


def test_status_and_wait_say_an_exit_no_daemon_recorded(env: Env) -> None:
    started, end = env.tmp / "started", env.tmp / "end"
    command = f"touch {started}; while [ ! -e {end} ]; do sleep 0.05; done; exit 3"
    daemon = env.start_daemon()
    run_id = env.submit(env.blueprint("gone", command=command, ajetd="gpus: 0"))
    wait_for(started.exists, what="the program to start")
    daemon.send_signal(signal.SIGTERM)
    daemon.wait(timeout=30)
    end.touch()  # the program exits while no daemon runs: its script writes the exit file
    exit_file = env.home / "runs" / run_id / "trial-1.exit"
    wait_for(
        lambda: exit_file.exists() and exit_file.read_text().endswith("\n"),
        what="the trial script's exit file",
    )
    words = rf"exited \(code 3, {AT}\), not yet recorded: the daemon is not running"

    shown = env.status(run_id)
    assert shown["state"] == "running" and shown["exit_code"] is None  # the record's
    exited = shown["unrecorded_exit"]
    assert (exited["trial"], exited["exit_code"], exited["why"]) == (1, 3, NO_DAEMON)
    assert re.fullmatch(AT, exited["exited_at"])
    listed = json.loads(env.cli("status", "--json").stdout)
    assert [r["unrecorded_exit"] for r in listed] == [exited]
    one = env.cli("status", run_id)
    assert re.search(rf"state\s+running: {words}", one.stdout), one.stdout
    overview = env.cli("status")
    assert re.search(rf"{run_id} {words}", overview.stdout), overview.stdout

    waited = env.cli("wait", run_id, "--timeout", "0.5", "--json")
    assert waited.returncode == 124, waited.stderr
    assert re.search(rf"run {run_id} {words}", waited.stderr), waited.stderr
    assert waited.stderr.count("exited (code 3") == 1  # said once, not at every look
    assert json.loads(waited.stdout)["unrecorded_exit"] == exited

    env.start_daemon()  # the next daemon records it: the field is null again
    ended = env.wait_done(run_id)
    assert (ended["status"], ended["exit_code"], ended["unrecorded_exit"]) == ("failed", 3, None)
