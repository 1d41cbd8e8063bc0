"""The status object's `stages` (session 34's gap: a pipeline's stage results were in
results.md only): what it holds while a stage runs and once the run's end gathered them, and
a stored record's `stage_results` read back whatever a person or a crash left in it."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ajetd.core.model import Run, Trial
from ajetd.core.stageresult import StageOutput, StageResult
from ajetd.views.records import run_json, stages_json

NOW = 1_800_000_000.0


def _run(*trials: Trial) -> Run:
    return Run(run_id="st0001", source="b.md", submitted_at=NOW, trials=trials)


def test_a_run_without_stages_has_none() -> None:
    assert stages_json(_run(Trial(1, "python train.py", "s", started_at=NOW))) is None
    assert run_json(_run(), NOW)["stages"] is None


def test_a_stage_that_runs_is_listed_its_results_null_until_gathered() -> None:
    train = Trial(1, "train", "s", started_at=NOW, ended_at=NOW + 5, exit_code=0, stage="train")
    live = Trial(2, "eval", "s", started_at=NOW + 6, stage="eval")
    assert stages_json(_run(train, live)) == [
        {"stage": "train", "trial": 1, "exit_code": 0, "printed": None, "outputs": None},
        {"stage": "eval", "trial": 2, "exit_code": None, "printed": None, "outputs": None},
    ]


def test_a_relaunched_stage_shows_its_last_trial_in_its_first_place() -> None:
    trials = (
        Trial(1, "train", "s", exit_code=0, stage="train"),
        Trial(2, "eval", "s", exit_code=1, stage="eval"),
        Trial(3, "eval", "s", exit_code=0, stage="eval"),
    )
    out = StageOutput("eval", "r.json", copied_as="stages/eval/r.json", values=(("score", 0.5),))
    run = replace(_run(*trials), stage_results=(StageResult("eval", (out,), ("score=0.5",)),))
    shown = stages_json(run)
    assert shown is not None and [(s["stage"], s["trial"]) for s in shown] == [
        ("train", 1),
        ("eval", 3),
    ]
    assert shown[1]["exit_code"] == 0 and shown[1]["printed"] == ["score=0.5"]
    assert shown[1]["outputs"] == [
        {
            "path": "r.json",
            "copied_as": "stages/eval/r.json",
            "note": None,
            "values": {"score": 0.5},
        }
    ]
    assert shown[0]["printed"] is None  # a stage the end gathered nothing for: not known
    # the record keeps them: written and read back, the same status object
    again = Run.from_json(json.loads(json.dumps(run.to_json())))
    assert again.stage_results == run.stage_results and stages_json(again) == shown


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
STAGEISH = st.fixed_dictionaries(
    {},
    optional={
        "stage": JSONISH | st.text(max_size=8),
        "printed": JSONISH,
        "outputs": st.lists(
            st.fixed_dictionaries(
                {}, optional={"path": JSONISH | st.text(), "values": JSONISH, "note": JSONISH}
            )
            | JSONISH,
            max_size=3,
        ),
    },
)


@given(st.lists(STAGEISH | JSONISH, max_size=3) | JSONISH)
def test_a_damaged_stage_results_field_is_read_as_what_it_can_be(stored: Any) -> None:
    """Whatever the field holds, the record is read (what is no stage result skipped) and
    the status object it makes is JSON: no NaN, every value of a type the README names."""
    data = {**_run(Trial(1, "x", "s", stage="train")).to_json(), "stage_results": stored}
    run = Run.from_json(data)
    text = json.dumps(run_json(run, NOW)["stages"], allow_nan=False)
    for result in run.stage_results:
        assert isinstance(result.stage, str)
        assert all(isinstance(line, str) for line in result.printed)
        assert all(isinstance(o.path, str) for o in result.outputs)
    assert json.loads(text)[0]["stage"] == "train"
