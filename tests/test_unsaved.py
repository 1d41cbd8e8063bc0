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
        assert set(fields) <= set(unsaved.FIELDS) and fields


def test_brief_keeps_the_state_fields_and_cuts_long_texts() -> None:
    record = {
        "state": "done",
        "status": "failed",
        "exit_code": 3,
        "reason": "x" * 5000,
        "trials": [{"n": 1}],
        "metrics": {"m": 1.0},
    }
    shown = unsaved.brief(record)
    assert set(shown) == {"state", "status", "exit_code", "reason"}
    assert len(shown["reason"]) == unsaved.TEXT_MAX


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
