"""AgentJet val-result files in both layouts (samples from ../shared/fixtures/agentjet)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.core.model import Run, State, Status
from ajetd.frameworks.valresults import (
    metric_series,
    parse_dict_line,
    parse_val_lines,
    parse_val_text,
    table_keys,
)
from ajetd.views.report import ReportContext, render_results
from conftest import Env

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
        "std_reward": "nan",
        "n": 3,
        "x": 1.5,
    }


def test_partial_last_line_is_not_counted() -> None:
    text = "{'global_steps': 1, 'mean_reward': 0.1}\n{'global_steps': 2, 'mean_"
    assert [r["global_steps"] for r in parse_val_text(text)] == [1]


def test_garbage_is_ignored() -> None:
    assert parse_val_text("hello\n{not a dict}\n[1, 2]\n\x00\n") == []
    # a call among the values is never run: read as its one literal argument, as numpy 2's
    # `np.str_('gsm8k')` (walk86 F1), or its text
    assert parse_val_text("{'a': __import__('os'), 'b': f(x)}\n") == [{"a": "os", "b": "f(x)"}]


def test_results_table_holds_the_seeds_validation_attributes() -> None:
    """Seed 001 names num_pass_n_tasks and task_pass_rate@N among the val attributes, and asks
    for results as complete as possible: results.md's table by step left out
    `num_pass_n_tasks(pass@8)` (and would leave out task_pass_rate@16 at pass_n 16)."""
    history = parse_val_text((DATA / "val_result_sample_pass8.md").read_text())
    sixteen = [{**r, "task_pass_rate@16": 0.5} for r in history]
    run = Run("r1", "bp.md", 0.0, history=tuple(sixteen), metrics=dict(sixteen[-1]))
    text = render_results(run, ReportContext(host="h"))
    header = next(line for line in text.splitlines() if line.startswith("| trial | step |"))
    assert header.split(" | ")[2:] == [
        "mean_reward",
        "task_pass_rate@1",
        "task_pass_rate@2",
        "task_pass_rate@4",
        "task_pass_rate@8",
        "task_pass_rate@16",
        "std_reward",
        "num_all_success_tasks",
        "num_pass_n_tasks(pass@8)",
        "task_pass_rate@8-all-pass |",  # a metric too: every one is shown (walk 82, L2)
    ]
    first = next(line for line in text.splitlines() if line.startswith("|  | 0 |"))
    assert first.endswith(" | 85 | 0.0000 |"), first  # num_pass_n_tasks(pass@8) at step 0


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


# The writers below are AgentJet's, quoted from the fork charlesHsuGG/AgentJet at upstream
# c68c154 (2026-05-26) / its merge af6b611; values invented, printed by the real numpy.


def test_classic_line_as_numpy2_prints_it_with_the_forks_verl_keys() -> None:
    """trainer_verl.py (af6b611) `_validate` returns `{**self._val_metrics_update(...),
    **val_metrics}`: verl's `val-core/<data_source>/reward/mean@N` (np.float64) and
    `val-aux/num_turns/min` (`sample_turns.min()`, np.int64) first; `update_metrics` adds
    `eval_tool_stats/...`, `eval_rewards/...` as `float(np.mean(...))`, `nan` for an empty list;
    `target_dataset_name` last. The line is `str()` of it, as numpy 2.x prints its scalars."""
    import numpy as np  # (matplotlib, a dependency, brings it)

    metrics: dict[str, object] = {
        "val-core/openai/gsm8k/reward/mean@4": np.float64(0.6186504927975739),
        "val-aux/openai/gsm8k/reward/std@4": np.float64(0.0),
        "val-aux/num_turns/min": np.int64(3),
        "val-aux/num_turns/mean": np.float64(3.5),
        "global_steps": 20,
        "pass_n": 4,
        "num_pass_n_tasks(pass@4)": 1265,
        "task_pass_rate@1": 0.6186504927975739,
        "mean_reward": 0.6186504927975739,
        "std_reward": np.std([1.0, 0.0]),
        "eval_tool_stats/tool_success_rate": float("nan"),  # float(np.mean([])), no stats
        "eval_rewards/penalty_mean": float("-inf"),
        "target_dataset_name": "main_val_dataset",
    }
    line = str(metrics)
    assert "np.int64(3)" in line and "np.float64(0.5)" in line and ": nan," in line
    record = parse_dict_line(line)
    assert record is not None
    assert record["val-core/openai/gsm8k/reward/mean@4"] == 0.6186504927975739
    assert record["val-aux/num_turns/min"] == 3 and record["std_reward"] == 0.5
    assert record["eval_tool_stats/tool_success_rate"] == "nan"
    assert record["eval_rewards/penalty_mean"] == "-inf"
    assert record["target_dataset_name"] == "main_val_dataset"


def test_a_key_or_text_that_spells_nan_or_a_numpy_call_is_kept_as_written() -> None:
    """verl's keys carry the data source's own name (`val-core/{data_source}/...`): text in a
    key or a value is never rewritten (before: `'val-core/inf/...'` became `'val-core/None/...'`)."""
    line = str(
        {
            "val-core/inf/reward/mean@4": 0.25,
            "note": "np.float64(1) nan -inf",
            "it's": 'a "quoted" nan',
        }
    )
    assert parse_dict_line(line) == {
        "val-core/inf/reward/mean@4": 0.25,
        "note": "np.float64(1) nan -inf",
        "it's": 'a "quoted" nan',
    }


def _swarm_block(step: int, heading: str, label: str | None, pass1: float, avg: float) -> str:
    """The write calls of tutorial/example_cocktail_rl_v2/cocktail_v2_runner.py:262-273
    (`heading`: `f"\\n## Step {n_global_step} ({label})\\n"`) and tutorial/opencode_build_aime/
    auto_research/auto_train.py:182-193 (`label`: `- dataset: {label}`), k = 4."""
    out = f"\n## Step {step}{heading}\n"
    if label is not None:
        out += f"- dataset: {label}\n"
    out += "- pass_n: 4\n- total_tasks: 30\n- num_all_success_tasks: 3\n"
    out += "- num_pass_n_tasks: 12\n"
    out += f"- task_pass_rate@1: {pass1 * 100:.2f}%\n- task_pass_rate@4: {40.0:.2f}%\n"
    return out + f"- mean_reward: {avg:.4f}\n- std_reward: {0.3:.4f}\n- n_rollouts: 120\n"


def test_swarm_benchmarks_each_a_record_and_a_series_of_the_first() -> None:
    """Both tutorials evaluate each benchmark in turn and append a block per benchmark. Before,
    `## Step 10 (aime24)` was no heading: nothing of that file was read; and the AIME file's
    blocks made `mean_reward`'s series (the plateau rule, the report) alternate between
    benchmarks. Now each block is a record naming its benchmark (`dataset`), the series is the
    first benchmark's, and the table shows which row is which."""
    for heading, bullet in ((True, False), (False, True)):
        text = ""
        for step, scale in ((0, 1.0), (10, 2.0)):
            for label, avg in (("aime24", 0.1), ("aime25", 0.05)):
                named = f" ({label})" if heading else ""
                text += _swarm_block(step, named, label if bullet else None, avg, avg * scale)
        records = parse_val_text(text)
        assert [(r["global_steps"], r["dataset"]) for r in records] == [
            (0, "aime24"),
            (0, "aime25"),
            (10, "aime24"),
            (10, "aime25"),
        ]
        assert metric_series(records, "mean_reward") == [0.1, 0.2]  # aime24's
        assert records[3]["task_pass_rate@1"] == 0.05 and records[3]["task_pass_rate@4"] == 0.4
        assert table_keys(records)[0] == "dataset"
        # read in pieces, cut anywhere between lines (as the daemon reads it): the same
        lines = text.split("\n")[:-1]
        for cut in range(len(lines)):
            pieces: list[dict[str, object]] = []
            block = parse_val_lines(lines[:cut], pieces, None)[0]
            parse_val_lines(lines[cut:], pieces, block)
            assert pieces == records, cut
    # one benchmark (example_appworld_swarm/agent_roll.py): as before, a record per step
    single = _swarm_block(0, "", None, 0.5, 0.5) + _swarm_block(5, "", None, 0.6, 0.6)
    records = parse_val_text(single)
    assert [(r["global_steps"], r["mean_reward"]) for r in records] == [(0, 0.5), (5, 0.6)]
    assert "dataset" not in table_keys(records)


# What a program may print into a classic line that Python's literal syntax reads but JSON has
# no form for, and numbers no float holds. Before: the record held a set (or bytes, a complex,
# `...`), so the run's record could not be saved ('supervising it failed: TypeError: Object of
# type set is not JSON serializable', at every tick, the run never ended), and an integer past
# 1e308 raised OverflowError wherever its series was read; a swarm bullet of 400 digits raised
# OverflowError in the reader itself.
ODD_LITERALS = {
    "set": "{1, 2}",
    "empty set": "set()",
    "bytes": "b'\\xff'",
    "complex": "1j",
    "ellipsis": "...",
    "tuple": "(1, (2, {3}))",
    "dict of int keys": "{3: {4: b''}}",
    "integer past float": "1" + "0" * 400,
    "negative integer past float": "-" + "9" * 309,
    "float overflow": "1e999",
    "nested lists": "[" * 150 + "1" + "]" * 150,
}


def _writable(records: list[dict[str, Any]], key: str) -> None:
    """What the daemon does with records: save them as JSON (no NaN) and read the series."""
    json.dumps(records, allow_nan=False)
    metric_series(records, key)
    table_keys(records)


@pytest.mark.parametrize("literal", list(ODD_LITERALS.values()), ids=list(ODD_LITERALS))
def test_a_classic_line_holding_any_literal_gives_a_json_record(literal: str) -> None:
    records = parse_val_text(f"{{'global_steps': 1, 'mean_reward': {literal}}}\n")
    _writable(records, "mean_reward")
    assert [r["global_steps"] for r in records] in ([1], [])


SWARM_PAST_FLOAT = {
    "400 digits": "1" + "0" * 400,
    "-400 digits": "-" + "9" * 400,
    "1e999": "1e999",
    "nan%": "nan%",
    "inf": "inf",
    "60000 digits%": "9" * 60000 + "%",
}


@pytest.mark.parametrize("value", list(SWARM_PAST_FLOAT.values()), ids=list(SWARM_PAST_FLOAT))
def test_a_swarm_bullet_past_any_float_is_no_value(value: str) -> None:
    """No finite number: kept as its text (`nan`, `inf`, `-inf`), never as a number."""
    records = parse_val_text(f"## Step 3\n- mean_reward: {value}\n- avg: 0.5\n")
    _writable(records, "mean_reward")
    word = "nan" if "nan" in value else ("-inf" if value.startswith("-") else "inf")
    assert records == [{"global_steps": 3, "mean_reward": word, "avg": 0.5}]


_LITERALS = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**400), max_value=10**400)
    | st.floats()
    | st.complex_numbers()
    | st.binary(max_size=8)
    | st.text(max_size=8)
    | st.just(...),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.sets(st.integers(), max_size=3)
        | st.dictionaries(st.integers() | st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=6), _LITERALS, max_size=4))
def test_any_literal_dict_line_gives_a_json_record(values: dict[str, Any]) -> None:
    line = repr({"global_steps": 1, **values})
    records = parse_val_text(line + "\n")
    for key in values:
        _writable(records, key)


def test_a_val_file_of_other_keys_is_shown_by_them() -> None:
    """A program whose validation records hold none of seed 001's keys (`val_score`, a
    campaign's `accuracy`) had a table of no columns in results.md (`| step |  |`), no
    first/best/last line, a blank METRICS column headed mean_reward in `ajetd status RUN` and
    `-` in the list, although finish.flag had the values. Its own numeric keys are shown."""
    from ajetd.adapters.store import Home
    from ajetd.pictures.drawing import spec
    from ajetd.views.listing import _metric_cell
    from ajetd.views.rundetail import detail

    history = tuple({"global_steps": s, "val_score": 0.1 * s, "note": "x"} for s in (1, 2, 3))
    run = Run(run_id="abc123", source="x.md", submitted_at=1.0, result_dir="/tmp/r")
    run = replace(run, history=history, metrics=dict(history[-1]), kind="agentjet")
    assert table_keys(history) == []  # none of seed 001's
    text = render_results(run, ReportContext(host="h"))
    assert "| trial | step | val_score |" in text and "|  | 3 | 0.3000 |" in text
    assert "- **val_score**: first 0.1000, best 0.3000 (step 3), last 0.3000" in text
    shown = "\n".join("".join(part for part, _ in line) for line in detail(run, 10.0, 100))
    assert "val_score" in shown and "0.3000" in shown, shown
    assert _metric_cell(run).startswith("val_score=0.3000")
    assert "val_score" in spec(Home(Path("/nonexistent")), run)["keys"]


def test_every_metric_is_shown_the_judging_one_first() -> None:
    """AgentJet's own records hold more than its metrics (`pass_n`, `total_tasks`, its
    settings), NeMo-RL's their `step`: those are no columns. Every metric is (walk 82, L2: a
    program's `acc_top1` and `rouge_l` vanished from results.md, curves.png and status as
    soon as mean_reward was there too), the run's metric first."""
    from ajetd.frameworks.valresults import more_note, shown_keys

    record: dict[str, Any] = {"global_steps": 1, "mean_reward": 0.5, "std_reward": 0.1}
    record.update({"pass_n": 4, "total_tasks": 100})
    assert shown_keys([record], "mean_reward") == ["mean_reward", "std_reward"]
    own = {"global_steps": 2, "acc_top1": 0.7, "rouge_l": 0.3, "mean_reward": 0.2}
    assert shown_keys([own], "mean_reward") == ["mean_reward", "acc_top1", "rouge_l"]
    assert shown_keys([own], "rouge_l") == ["rouge_l", "mean_reward", "acc_top1"]
    nemo = {"step": 4, "accuracy": 0.3, "average_response_length": 231.4}
    assert shown_keys([nemo], "accuracy") == ["accuracy", "average_response_length"]
    other = {"global_steps": 1, **{f"extra_{n}": float(n) for n in range(40)}}
    assert shown_keys([other], "mean_reward") == [f"extra_{n}" for n in range(40)]
    note = more_note([f"extra_{n}" for n in range(12, 40)])
    assert note.startswith("and 28 more: extra_12, extra_13,") and note.endswith("extra_21, …")
    assert more_note([]) == ""


def test_many_metrics_are_bounded_and_the_rest_named() -> None:
    """Hundreds of keys make no table of hundreds of columns, nor a picture of hundreds of
    panels: the first MAX_SHOWN_KEYS columns (MAX_PANELS panels), the rest counted and
    named."""
    from ajetd.adapters.store import Home
    from ajetd.frameworks.valresults import MAX_SHOWN_KEYS
    from ajetd.pictures.drawing import spec
    from ajetd.pictures.runcurves import MAX_PANELS
    from ajetd.views.rundetail import detail

    history = tuple(
        {"global_steps": s, "mean_reward": 0.1 * s, **{f"m{n}": float(n) for n in range(100)}}
        for s in (1, 2)
    )
    run = Run(run_id="abc123", source="x.md", submitted_at=1.0, result_dir="/tmp/r")
    run = replace(run, history=history, metrics=dict(history[-1]), kind="agentjet")
    text = render_results(run, ReportContext(host="h"))
    header = next(line for line in text.splitlines() if line.startswith("| trial | step |"))
    assert header.count("|") == MAX_SHOWN_KEYS + 3 and "| mean_reward | m0 |" in header, header
    left = 101 - MAX_SHOWN_KEYS
    assert f"Not in this table, and {left} more: m{MAX_SHOWN_KEYS - 1}, " in text, text
    drawn = spec(Home(Path("/nonexistent")), run)
    assert drawn["keys"] == ["mean_reward", *(f"m{n}" for n in range(MAX_PANELS - 1))]
    assert drawn["more"].startswith(f"and {101 - MAX_PANELS} more: m{MAX_PANELS - 1}, ")
    shown = "\n".join("".join(part for part, _ in line) for line in detail(run, 10.0, 200))
    assert "and 97 more: m3, m4," in shown, shown  # four columns


def test_an_agentjet_run_with_a_plateau_rule_is_judged_by_its_metric(env: Env) -> None:
    """`plateau: {metric: val_score}`: the rule stopped the run on val_score while its views
    led with mean_reward (blank); the run's metric is the rule's."""
    from ajetd.core.blueprint import parse_blueprint
    from ajetd.frameworks.framework import run_metric

    def judged_by(text: str) -> str:
        bp = parse_blueprint(text)
        return run_metric(bp.options.plateau, None, bp.launch_command)

    text = env.blueprint("pl").read_text()
    assert judged_by(text) == "mean_reward"
    ruled = text + "\n## [ajetd]\nplateau: {metric: val_score, patience: 3}\n"
    assert judged_by(ruled) == "val_score"


def test_the_list_shows_a_multi_benchmark_runs_metric_from_its_series() -> None:
    """A run validated on two benchmarks whose latest record is the second's, which lacks the
    run's metric, showed `-` in `ajetd status`'s list; it shows the series' last value (the
    first benchmark's, as its sparkline and its curves)."""
    from ajetd.views.listing import _metric_cell

    history = (
        {"dataset": "gsm8k", "global_steps": 1, "mean_reward": 0.2},
        {"dataset": "math", "global_steps": 1, "pass_n": 1},
        {"dataset": "gsm8k", "global_steps": 2, "mean_reward": 0.4},
        {"dataset": "math", "global_steps": 2, "pass_n": 1},
    )
    run = Run(run_id="abc123", source="x.md", submitted_at=1.0, result_dir="/tmp/r")
    run = replace(run, history=history, metrics=dict(history[-1]), kind="agentjet")
    assert _metric_cell(run).startswith("0.4000 "), _metric_cell(run)


def test_an_old_layout_val_file_never_shows_a_raw_none_step(tmp_path: Path) -> None:
    """AgentJet before 260e37a (2026-03-30) wrote no `global_steps`, each line starting with
    `'target dataset name'`: results.md said `best 0.6043 (step None)` with an empty step
    column, status's step column was blank, and curves.png drew no point. The step is said
    to be unknown (not guessed: a resumed trial validates off the test_freq grid), and the
    curves count validations in file order."""
    from ajetd.pictures.drawing import segment_labels
    from ajetd.pictures.runcurves import draw_curves, segments, stepped
    from ajetd.views.rundetail import detail

    lines = (DATA / "val_result_sample.md").read_text().splitlines()
    old = []
    for line in lines:
        record = parse_dict_line(line)
        assert record is not None
        record.pop("global_steps")
        old.append(str({"target dataset name": "main_val_dataset", **record}))
    history = tuple(parse_val_text("\n".join(old) + "\n"))
    assert len(history) == 4 and all("global_steps" not in r for r in history)
    run = Run(run_id="abc123", source="x.md", submitted_at=1.0, result_dir=str(tmp_path))
    run = replace(run, history=history, metrics=dict(history[-1]), kind="agentjet")
    text = render_results(run, ReportContext(host="h"))
    assert "None" not in text, text
    assert "(step unknown)" in text and "Steps unknown:" in text
    rows = [line for line in text.splitlines() if line.startswith("|  | ")]
    assert len(rows) == 4 and all(r.startswith("|  | unknown | ") for r in rows)
    shown = "\n".join("".join(part for part, _ in line) for line in detail(run, 10.0, 120))
    metric_rows = [line for line in shown.splitlines() if line.strip().startswith("unknown")]
    assert len(metric_rows) == 4, shown
    numbered, own = stepped(list(history))
    assert not own and [r["global_steps"] for r in numbered] == [1, 2, 3, 4]
    assert len(segments(numbered)) == 1 and segment_labels(run) == ["part 1"]
    out = tmp_path / "curves.png"
    assert draw_curves({"history": list(history), "keys": ["mean_reward"]}, out)
    assert out.stat().st_size > 0
    # a file that names its steps keeps them
    steps = parse_val_text((DATA / "val_result_sample.md").read_text())
    assert stepped(steps) == (steps, True)


@pytest.mark.pictures
def test_a_programs_own_metrics_beside_mean_reward_are_shown_everywhere(daemon_env: Env) -> None:
    """E2E (walk 82, L2): a program's val file with `acc_top1` and `rouge_l` beside
    mean_reward showed mean_reward alone in results.md's table, curves.png and `status RUN`'s
    METRICS. Every metric is there, the judging one first."""
    env = daemon_env
    conf = env.config("own")
    val = "./saved_val_result/own.md"
    lines = "".join(
        f"{{'global_steps': {s}, 'acc_top1': {0.1 * s}, 'rouge_l': {0.2 * s}, "
        f"'mean_reward': {0.3 * s}}}\\n"
        for s in (2, 4)
    )
    (env.codebase / "own.sh").write_text(f'mkdir -p saved_val_result\nprintf "{lines}" >> {val}\n')
    run_id = env.submit(env.blueprint("own", config=conf, command="bash own.sh", ajetd="gpus: 0"))
    assert env.wait_done(run_id)["status"] == "succeeded"
    results = (env.tmp / "results" / "own" / "results.md").read_text()
    assert "| trial | step | mean_reward | acc_top1 | rouge_l |" in results, results
    shown = env.cli("status", run_id).stdout
    header = next(line for line in shown.splitlines() if line.strip().startswith("step"))
    assert header.split() == ["step", "mean_reward", "acc_top1", "rouge_l"], shown
    plotted = json.loads((env.home / "runs" / run_id / "plot-spec.json").read_text())
    assert plotted["keys"] == ["mean_reward", "acc_top1", "rouge_l"] and not plotted["more"]
    assert (env.tmp / "results" / "own" / "curves.png").stat().st_size > 0


def test_a_count_prints_as_an_integer_and_a_rate_keeps_its_decimals() -> None:
    """results.md printed NeMo-RL's `samples_processed` as `256.0000` (walk 90 F12): records
    hold floats whatever the program printed, so a column whose every value is a whole
    number, one above 1, is a count and prints as one; a rate of 0s and 1s, or any column
    with a fraction in it, keeps four decimals; nan is named in either."""
    from ajetd.frameworks.valresults import cell, is_count
    from ajetd.views.rundetail import detail

    history = tuple(
        {"global_steps": s, "accuracy": a, "samples_processed": 128.0 * s, "length": n, "hit": h}
        for s, a, n, h in ((2, 0.6, 231.4, 1.0), (4, 0.8, 240.0, 0.0), (6, 1.0, 250.0, 1.0))
    )
    run = Run(run_id="abc123", source="x.md", submitted_at=1.0, result_dir="/tmp/r")
    run = replace(run, history=history, metrics=dict(history[-1]), kind="nemo_rl")
    text = render_results(run, ReportContext(host="h"))
    rows = [line for line in text.splitlines() if line.startswith("|  | ")]
    assert rows[0] == "|  | 2 | 0.6000 | 256 | 231.4000 | 1.0000 |", rows
    assert rows[2] == "|  | 6 | 1.0000 | 768 | 250.0000 | 1.0000 |", rows
    shown = "\n".join("".join(part for part, _ in line) for line in detail(run, 10.0, 200))
    assert " 768 " in shown and "768.0000" not in shown and "0.6000" in shown, shown
    assert is_count([256.0, float("nan"), 512.0]) and cell(float("nan"), True) == "nan"
    assert not is_count([0.0, 1.0]) and not is_count([2.0, 2.5]) and not is_count([])
    assert cell(3, False) == "3" and cell(None, True) == "" and not is_count([1e20])
