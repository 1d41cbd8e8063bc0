"""AgentJet val-result files in both layouts (samples from ../shared/fixtures/agentjet)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ajetd.core.model import Run, State, Status
from ajetd.frameworks.valresults import metric_series, parse_dict_line, parse_val_text
from ajetd.views.report import ReportContext, render_results

DATA = Path(__file__).parent / "data"


def test_classic_layout() -> None:
    records = parse_val_text((DATA / "val_result_sample.md").read_text())
    assert [r["global_steps"] for r in records] == [0, 20, 40, 60]
    assert records[-1]["task_pass_rate@4"] == 1.0
    assert metric_series(records, "mean_reward")[0] == 0.6186504927975739


def test_pass8_keys_kept_as_named() -> None:
    records = parse_val_text((DATA / "val_result_sample_pass8.md").read_text())
    assert "num_pass_n_tasks(pass@8)" in records[0]
    assert "task_pass_rate@8-all-pass" in records[0]


def test_swarm_client_layout() -> None:
    records = parse_val_text((DATA / "val_result_sample_swarm_client.md").read_text())
    assert records[0]["global_steps"] == 0
    assert records[0]["task_pass_rate@1"] == 0.3333
    assert records[0]["mean_reward"] == 0.4386
    assert records[0]["total_tasks"] == 57
    assert [r["global_steps"] for r in records][:3] == [0, 10, 20]


def test_numpy2_scalars_nan_and_legacy_keys() -> None:
    line = (
        "{'target dataset name': 'main_val_dataset', 'mean_reward': np.float64(0.5), "
        "'std_reward': np.float64(nan), 'n': np.int64(3), 'x': numpy.float32(1.5)}"
    )
    assert parse_dict_line(line) == {
        "target dataset name": "main_val_dataset",
        "mean_reward": 0.5,
        "std_reward": None,
        "n": 3,
        "x": 1.5,
    }


def test_partial_last_line_is_not_counted() -> None:
    text = "{'global_steps': 1, 'mean_reward': 0.1}\n{'global_steps': 2, 'mean_"
    assert [r["global_steps"] for r in parse_val_text(text)] == [1]


def test_garbage_is_ignored() -> None:
    assert parse_val_text("hello\n{not a dict}\n[1, 2]\n\x00\n{'a': __import__('os')}\n") == []


def test_results_table_holds_the_seeds_validation_attributes() -> None:
    """Seed 001 names num_pass_n_tasks and task_pass_rate@N among the val attributes, and asks
    for results as complete as possible: results.md's table by step left out
    `num_pass_n_tasks(pass@8)` (and would leave out task_pass_rate@16 at pass_n 16)."""
    history = parse_val_text((DATA / "val_result_sample_pass8.md").read_text())
    sixteen = [{**r, "task_pass_rate@16": 0.5} for r in history]
    run = Run("r1", "bp.md", 0.0, history=tuple(sixteen), metrics=dict(sixteen[-1]))
    text = render_results(run, ReportContext(host="h"))
    header = next(line for line in text.splitlines() if line.startswith("| step |"))
    assert header.split(" | ")[1:] == [
        "mean_reward",
        "task_pass_rate@1",
        "task_pass_rate@2",
        "task_pass_rate@4",
        "task_pass_rate@8",
        "task_pass_rate@16",
        "std_reward",
        "num_all_success_tasks",
        "num_pass_n_tasks(pass@8) |",
    ]
    first = next(line for line in text.splitlines() if line.startswith("| 0 |"))
    assert first.endswith(" | 85 |")  # num_pass_n_tasks(pass@8) at step 0


def test_a_success_without_any_validation_record_says_where_none_was_found() -> None:
    """An AgentJet run that exited 0 with nothing in its val file read as a plain success
    ('No validation results were written'); AgentJet writes one before training, so it says
    where it looked and what that means."""
    run = Run("r2", "bp.md", 0.0, status=Status.SUCCEEDED, state=State.DONE, val_path="/c/v/val.md")
    text = render_results(run, ReportContext(host="h"))
    assert "No validation results were written during this run" in text
    assert "`/c/v/val.md`" in text and "val_before_train" in text
    quiet = render_results(replace(run, kind="nemo_rl", val_path=None), ReportContext(host="h"))
    assert "val_before_train" not in quiet
