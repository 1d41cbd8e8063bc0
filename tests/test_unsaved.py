"""Where runs stand while a full home holds their records: what the daemon publishes in
daemon.json (`core.unsaved`, `housekeep.fitted`) and how a reader lays it over the disk's."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ajetd.adapters.store import encode
from ajetd.core import unsaved
from ajetd.daemon.housekeep import fitted

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(_json)
def test_whatever_daemon_json_holds_a_reader_keeps_only_run_ids_and_state_fields(
    value: Any,
) -> None:
    for run_id, fields in unsaved.published(value).items():
        assert len(run_id) == 6 and run_id.isalnum()
        assert set(fields) <= {*unsaved.FIELDS, *unsaved.DERIVED} and fields


def test_brief_keeps_the_state_fields_and_cuts_long_texts() -> None:
    record = {
        "state": "done",
        "status": "failed",
        "exit_code": 3,
        "reason": "x" * 5000,
        "trials": [{"number": 1, "ended_at": 5.0, "exit_code": 3, "findings": [{"k": 1}]}],
        "metrics": {"m": 1.0},
        "history": [{"step": 2}, {"step": 4}],
    }
    shown = unsaved.brief(record)
    assert set(shown) == {"state", "status", "exit_code", "reason", *unsaved.DERIVED}
    assert len(shown["reason"]) == unsaved.TEXT_MAX
    assert (shown["trial"], shown["trial_ended_at"], shown["trial_exit_code"]) == (1, 5.0, 3)
    assert shown["records"] == 2


def test_the_held_trials_end_closes_only_the_same_trial_left_open_on_disk() -> None:
    """The last trial's end is laid over the trial of its number, where the disk has it
    open; a disk whose last trial is another (the held record launched one since) or already
    ended keeps its own."""
    newer = unsaved.brief({"state": "done", "trials": [{"number": 2, "ended_at": 9.0}]})
    newer = {**newer, "trial_exit_code": 7}
    open_two = {"state": "running", "trials": [{"number": 1}, {"number": 2, "ended_at": None}]}
    laid = unsaved.laid_over(open_two, newer)
    assert laid["state"] == "done" and "trial" not in laid
    assert laid["trials"][-1] == {"number": 2, "ended_at": 9.0, "exit_code": 7}
    for disk in (
        {"trials": [{"number": 1, "ended_at": None}]},
        {"trials": [{"number": 2, "ended_at": 3.0, "exit_code": 0}]},
        {"trials": "garbage"},
    ):
        assert unsaved.laid_over(disk, newer)["trials"] == disk["trials"]
    assert unsaved.records_held({"history": [{}]}, {"records": 3}) == 2
    assert unsaved.records_held({}, {"records": "x"}) == 0


def _records(n: int) -> dict[str, dict[str, Any]]:
    return {
        f"r{i:05d}": {
            "state": "done",
            "status": "failed",
            "ended_at": float(i),
            "reason": "ended " * 60,
        }
        for i in range(n)
    }


@given(st.integers(min_value=0, max_value=120), st.sampled_from([4096, 16384]))
def test_daemon_json_is_padded_to_its_room_and_keeps_the_newest_ends(n: int, room: int) -> None:
    info = {"pid": 1, "problems": [], "disk": ["cannot write"], "unsaved": _records(n)}
    text = fitted(info, room)
    assert len(encode(text)) == room
    data = json.loads(text)
    kept = data["unsaved"]
    assert len(kept) + data.get("unsaved_more", 0) == n
    if kept and n > len(kept):  # the ones left out ended before every one kept
        assert min(v["ended_at"] for v in kept.values()) >= n - len(kept)
