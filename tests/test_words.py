"""Words that say what ajetd will do: labels and ending notes follow the remedy table."""

from __future__ import annotations

from test_remedy import T0, _failed_run

from ajetd.core.finding import Finding
from ajetd.core.model import Status
from ajetd.core.remedy import GiveUp, choose
from ajetd.diagnosis.catalogue import BY_NAME
from ajetd.views.words import action_label, ending_note


def _finding(kind: str) -> Finding:
    return Finding(kind, BY_NAME[kind].severity.value, 1, "", "", "do X")


def test_a_science_kind_is_not_retryable_unless_allowed() -> None:
    oom = _finding("cuda_oom")
    assert oom.severity == "science"
    assert action_label(oom) == "science, no fix allowed"
    assert action_label(oom, ["ppo_micro_batch_size_per_gpu"]) == "science fix allowed"
    assert action_label(oom, ["lr"]) == "science, no fix allowed"
    assert action_label(_finding("import_error")) == "fatal"
    assert action_label(_finding("nccl_error")) == "retryable"
    assert action_label(_finding("host_oom")) == "no automatic fix"


def test_every_way_a_failed_run_ends_has_its_own_words() -> None:
    cases = {
        "fatal: not retried": choose(_failed_run(), [_finding("import_error")], 3, None, T0 + 20),
        "fix budget spent": choose(_failed_run(3), [_finding("nccl_error")], 3, None, T0 + 9999),
        "thrashing guard": choose(_failed_run(4, 60), [_finding("nccl_error")], 9, None, T0 + 250),
        "no fix allowed": choose(_failed_run(), [_finding("cuda_oom")], 3, None, T0 + 20),
        "nothing to fix": choose(_failed_run(), [], 3, None, T0 + 20),
        "no automatic fix": choose(_failed_run(), [_finding("host_oom")], 3, None, T0 + 20),
    }
    notes = set()
    for expected, choice in cases.items():
        assert isinstance(choice, GiveUp)
        note = ending_note(Status.FAILED, choice.reason)
        assert expected in note, (expected, choice.reason, note)
        notes.add(note)
    assert len(notes) == len(cases)
    assert "data kept" in ending_note(Status.TIME_LIMIT, "stopped at exp_max_time (2m); data kept")
    hung = (
        "stopped at exp_max_time (2m) while hung: no output for 1m50s (...); data up to then kept"
    )
    assert hung in ending_note(Status.TIME_LIMIT, hung)  # the note says what the reason says
