"""Words that say what ajetd will do: labels and ending notes follow the remedy table."""

from __future__ import annotations

from ajetd import model
from ajetd.catalogue import BY_NAME
from ajetd.model import Run, Status, Trial
from ajetd.remedy import GiveUp, choose
from ajetd.words import action_label, ending_note

T0 = 1_800_000_000.0


def _failed(n: int = 1, gap: float = 300.0) -> Run:
    run = Run(run_id="abc123", source="bp.md", submitted_at=T0, max_time_s=36000)
    for i in range(n):
        run = model.add_trial(run, Trial(number=i + 1, command="c", session="ajet_x"))
        run = model.trial_started(run, T0 + i * gap)
        run = model.trial_ended(run, 1, T0 + i * gap + 10)
    return run


def _finding(kind: str) -> dict[str, object]:
    return {"kind": kind, "severity": BY_NAME[kind].severity.value, "fix": "do X", "line": 1}


def test_a_science_kind_is_not_retryable_unless_allowed() -> None:
    oom = _finding("cuda_oom")
    assert oom["severity"] == "science"
    assert action_label(oom) == "science, no fix allowed"
    assert action_label(oom, ["ppo_micro_batch_size_per_gpu"]) == "science fix allowed"
    assert action_label(oom, ["lr"]) == "science, no fix allowed"
    assert action_label(_finding("import_error")) == "fatal"
    assert action_label(_finding("nccl_error")) == "retryable"
    assert action_label(_finding("host_oom")) == "no automatic fix"


def test_every_way_a_failed_run_ends_has_its_own_words() -> None:
    cases = {
        "fatal: not retried": choose(_failed(), [_finding("import_error")], 3, None, T0 + 20),
        "fix budget spent": choose(_failed(3), [_finding("nccl_error")], 3, None, T0 + 9999),
        "thrashing guard": choose(_failed(4, 60), [_finding("nccl_error")], 9, None, T0 + 250),
        "no fix allowed": choose(_failed(), [_finding("cuda_oom")], 3, None, T0 + 20),
        "nothing to fix": choose(_failed(), [], 3, None, T0 + 20),
        "no automatic fix": choose(_failed(), [_finding("host_oom")], 3, None, T0 + 20),
    }
    notes = set()
    for expected, choice in cases.items():
        assert isinstance(choice, GiveUp)
        note = ending_note(Status.FAILED, choice.reason)
        assert expected in note, (expected, choice.reason, note)
        notes.add(note)
    assert len(notes) == len(cases)
    assert "data kept" in ending_note(Status.TIME_LIMIT, "stopped at exp_max_time")
