"""Validation records in the shapes programs really write them (walk86 F1, F2, F12, F17, F18, F29), read whole (walk86 F1):
JSON lines (true/false/null/NaN), `str(dict)` lines holding a torch scalar or a numpy 2
string, `## Step 4/10` headings and bold bullets; a line that looks like a record and cannot
be read is counted and named in the run's warnings, reason and results.md, never dropped in
silence (before: the run said "it wrote no validation record")."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ajetd.core.campaignrules import verdict
from ajetd.core.stoprules import PlateauRule, falling_note, plateau_reason, restart_index
from ajetd.frameworks.agentjet import resolve_interpolations
from ajetd.frameworks.valresults import (
    Unread,
    best_point,
    last_value,
    nonfinite_note,
    parse_dict_line,
    parse_val_lines,
    parse_val_text,
)
from conftest import Env, wait_for
from loopkit import Loop


def test_a_json_line_is_read_with_its_words() -> None:
    line = json.dumps({"global_steps": 0, "mean_reward": 0.1, "is_best": False, "note": None})
    assert parse_dict_line(line) == {
        "global_steps": 0,
        "mean_reward": 0.1,
        "is_best": False,
        "note": None,
    }
    assert parse_dict_line('{"a": NaN, "b": -Infinity, "c": true}') == {
        "a": "nan",
        "b": "-inf",
        "c": True,
    }


def test_a_value_no_literal_spells_costs_only_itself() -> None:
    line = (
        "{'global_steps': 2, 'mean_reward': 0.2, 'len': tensor(231.4000), "
        "'loss': tensor(0.5, device='cuda:0', dtype=torch.float32), 'src': np.str_('gsm8k'), "
        "'ok': np.True_, 'no': np.False_, 'arr': array([1, 2]), 'when': datetime.date(2026, 1, 2)}"
    )
    assert parse_dict_line(line) == {
        "global_steps": 2,
        "mean_reward": 0.2,
        "len": 231.4,
        "loss": 0.5,
        "src": "gsm8k",
        "ok": True,
        "no": False,
        "arr": "array([1, 2])",
        "when": "datetime.date(2026, 1, 2)",
    }
    # text that spells a JSON word or a call is never rewritten
    assert parse_dict_line("{'k': 'true tensor(1) null'}") == {"k": "true tensor(1) null"}


def test_a_bom_headings_and_bold_bullets_are_read() -> None:
    text = (
        "\ufeff{'global_steps': 0, 'mean_reward': 0.1}\n"
        "## Step 4/10\n- **mean_reward**: 0.5\n- task_pass_rate@1: 0.4 (+0.1)\n"
        "### Step: 6\n- **mean_reward:** 0.6\n- `std_reward`: 12%\n"
    )
    assert parse_val_text(text) == [
        {"global_steps": 0, "mean_reward": 0.1},
        {"global_steps": 4, "mean_reward": 0.5, "task_pass_rate@1": 0.4},
        {"global_steps": 6, "mean_reward": 0.6, "std_reward": 0.12},
    ]


def test_lines_that_look_like_records_and_are_none_are_counted() -> None:
    unread = Unread()
    records: list[dict[str, Any]] = []
    lines = ["{'a': <object at 0x1>}", "hello", "{'b': 1}", "{'c': {'d'", "x" * 10 + "{"]
    parse_val_lines(lines, records, None, unread)
    assert records == [{"b": 1}] and unread.count == 2
    assert unread.first == "{'a': <object at 0x1>}"


_CALLS = st.from_regex(r"[A-Za-z_][\w.]{0,10}\([^()'\"\n]{0,20}\)", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False), _CALLS)
@example(0.0, "A(01)")  # a leading zero, as C prints it: no Python literal (hypothesis found it)
def test_any_call_among_the_values_keeps_the_record(reward: float, call: str) -> None:
    """A call of any name with any flat argument among a record's values never costs the
    record, nor its other values."""
    record = parse_dict_line(f"{{'global_steps': 3, 'mean_reward': {reward!r}, 'x': {call}}}")
    assert record is not None
    assert record["global_steps"] == 3 and record["mean_reward"] == reward
    json.dumps(record, allow_nan=False)


def _results(loop: Loop, run_id: str) -> str:
    return (Path(loop.run(run_id).result_dir) / "results.md").read_text()


def test_json_and_torch_lines_give_the_runs_metrics(env: Env, loop: Loop) -> None:
    """A program writing `json.dumps` lines, or `str(dict)` lines holding `tensor(...)` and
    `np.str_(...)`: the run's metrics and best are read (before: none, 'it wrote no
    validation record')."""
    for shape in ("json", "torch"):
        config = env.config(shape, val_format=shape, rewards=[0.1, 0.3, 0.2], steps=6)
        run_id = loop.submit(env.blueprint(shape, config=config, ajetd="gpus: 0"))
        flag = loop.until_done(run_id)
        assert flag["status"] == "succeeded", (shape, flag)
        assert "no validation record" not in flag["reason"]
        assert flag["best"]["value"] == 0.3 and flag["best"]["step"] == 4, (shape, flag)
        assert flag["metrics"]["mean_reward"] == 0.2
    assert flag["metrics"]["data_source"] == "gsm8k"


def test_unreadable_record_lines_are_named_not_silently_dropped(env: Env, loop: Loop) -> None:
    config = env.config("objects", val_format="object")
    run_id = loop.submit(env.blueprint("objects", config=config, ajetd="gpus: 0"))
    flag = loop.until_done(run_id)
    assert flag["status"] == "succeeded" and flag["metrics"] == {}
    assert flag["reason"].endswith(
        "; its val file holds 2 line(s) that look like validation records and could not be read"
    ), flag["reason"]
    results = _results(loop, run_id)
    assert "No validation results were written" not in results
    assert "No validation record could be read: 2 line(s) of `" in results
    assert "<verl.Sampler object at 0x7f3a2c>" in results
    warned = [w for w in loop.run(run_id).warnings if "could not be read" in w]
    assert len(warned) == 1 and "2 line(s) written during this run" in warned[0]


# -- walk86 F2: a metric that turns nan is shown, warned and judged as such --------------------


def _records(*rewards: float) -> list[dict[str, Any]]:
    return [
        {"global_steps": 2 * i, "mean_reward": parse_dict_line(f"{{'v': {r}}}")["v"]}  # type: ignore[index]
        for i, r in enumerate(rewards)
    ]


def test_a_nan_tail_is_said_with_its_length_and_start() -> None:
    nan = float("nan")
    history = _records(0.1, 0.3, nan, nan, nan)
    assert history[-1]["mean_reward"] == "nan"
    assert last_value(history, "mean_reward") != last_value(history, "mean_reward")  # nan
    assert nonfinite_note(history, "mean_reward") == (
        "mean_reward is nan in the last 3 validations (since step 4)"
    )
    assert nonfinite_note(_records(0.1, nan, 0.2), "mean_reward") is None
    assert best_point(history, "mean_reward") == (0.3, history[1])  # the best stays finite


def test_the_plateau_rule_counts_nan_as_no_improvement() -> None:
    nan = float("nan")
    rule = PlateauRule(patience=3, min_delta=0.005, after=0.0)
    reason = plateau_reason(rule, _records(0.1, 0.3, nan, nan, nan), 10.0, 100.0)
    assert (
        reason is not None and "best 0.3000, last nan; mean_reward is nan in the last 3" in reason
    )
    assert plateau_reason(rule, _records(0.1, 0.3, nan, nan, 0.5), 10.0, 100.0) is None
    loss = PlateauRule(metric="val_loss", patience=2, min_delta=0.0, after=0.0)
    history = [{"global_steps": i, "val_loss": v} for i, v in enumerate([1.0, 0.5, "inf", "nan"])]
    assert plateau_reason(loss, history, 1.0, 1.0) is not None  # inf is no improvement either


@given(st.lists(st.floats(allow_nan=True), min_size=1, max_size=12), st.integers(1, 4))
def test_a_run_whose_last_validations_are_all_nan_is_always_a_plateau(
    head: list[float], patience: int
) -> None:
    rule = PlateauRule(patience=patience, min_delta=0.0, after=0.0)
    history = _records(*head, *[float("nan")] * patience)
    assert plateau_reason(rule, history, 1.0, 1.0) is not None


def test_a_diverged_experiment_is_a_crash_never_the_campaigns_best() -> None:
    assert verdict("succeeded", 0.5, 0.4, True, diverged=True) == "crash"
    assert verdict("plateau", 0.5, None, True, diverged=True) == "crash"
    assert verdict("succeeded", 0.5, 0.4, True) == "keep"


def test_a_run_whose_metric_turns_nan_is_warned_shown_and_stopped(env: Env, loop: Loop) -> None:
    """walk86 F2: `mean_reward` 0.1, 0.3, then nan at every validation (numpy's mean of an
    empty array). Before: "last 0.3000", no warning, the plateau rule never fired."""
    rewards = [0.1, 0.3, float("nan")]
    hold = str(env.tmp / "never")  # then alive and silent until stopped
    config = env.config("nan", rewards=rewards, steps=12, step_time=0.02, hold_until=hold)
    rule = "gpus: 0\nplateau: {patience: 3, min_delta: 0.005, after: 0.0}"
    run_id = loop.submit(env.blueprint("nan", config=config, ajetd=rule, max_time="1h"))
    loop.started(run_id)
    val = env.codebase / "saved_val_result" / "nan.md"
    wait_for(lambda: val.exists() and val.read_text().count("\n") == 6, what="six records")
    loop.run_for(125)  # the val file is read within a minute, a live run looked at each minute
    flag = loop.until_done(run_id)
    assert flag["status"] == "plateau", flag
    assert "last nan; mean_reward is nan in the last " in flag["reason"], flag["reason"]
    assert flag["metrics"]["mean_reward"] == "nan" and flag["best"]["value"] == 0.3
    results = _results(loop, run_id)
    assert "best 0.3000 (step 4), last nan" in results, results
    assert "- **mean_reward is nan in the last " in results
    assert "| nan |" in results  # the table's cells say nan, never blank
    warned = [
        w for w in loop.run(run_id).warnings if w.startswith("validation: mean_reward is nan")
    ]
    assert len(warned) == 1, loop.run(run_id).warnings


# -- walk86 F17, F18: a relaunch that trains again from step 0 ----------------------------------

WATCHDOG = (  # retryable: relaunched as it was
    "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE)"
    " ran for 1800000 milliseconds before timing out."
)


def test_a_restart_from_step_0_begins_what_the_plateau_rule_judges() -> None:
    steps = [0, 2, 4, 6, 0, 2, 2, 4]
    history = [{"global_steps": s} for s in steps]
    assert restart_index(history, [1, 1, 1, 1, 2, 2, 3, 3]) == 4  # trial 3 resumed at step 2?
    assert restart_index(history[:6], [1, 1, 1, 1, 2, 2]) == 4
    resumed = [{"global_steps": s} for s in (0, 2, 4, 6, 6, 8)]
    assert restart_index(resumed, [1, 1, 1, 1, 2, 2]) == 0  # steps go on: judged with trial 1
    assert restart_index(history, [None] * 8) == 0  # trials not on record: not guessed
    assert restart_index([{"global_steps": 4}, {}], [1, 2]) == 0  # a step not named


def test_a_relaunch_from_step_0_is_judged_on_its_own_and_its_best_names_its_trial(
    env: Env, loop: Loop
) -> None:
    """walk86 F18: trial 1 reached 0.6 and died of an NCCL watchdog timeout; trial 2 trains
    again from step 0 and climbs by 0.02 a validation. Before: stopped as a plateau ("best
    0.6000, last 0.06"). F17: the best (0.6 at step 8) names trial 1, whose model is gone."""
    hold = env.tmp / "end"
    rewards = {"1": [0.0, 0.2, 0.4, 0.6], "else": [0.0, 0.02, 0.04, 0.06]}
    fail = {"text": WATCHDOG, "at_step": 8, "unless_env": {"AJETD_TRIAL": 2}}
    config = env.config("again", rewards=rewards, steps=8, fail=fail, hold_until=str(hold))
    rule = "gpus: 0\nplateau: {patience: 3, min_delta: 0.005, after: 0.0}"
    run_id = loop.submit(env.blueprint("again", config=config, ajetd=rule, max_time="1h"))
    val = env.codebase / "saved_val_result" / "again.md"
    loop.until(lambda: val.exists() and val.read_text().count("\n") == 8, "8 records")
    loop.run_for(125)  # read, and looked at: no plateau in trial 2's own rising records
    assert loop.event_at(run_id, "stopping: plateau") is None, loop.events(run_id)
    assert len(loop.run(run_id).trials) == 2
    hold.touch()
    flag = loop.until_done(run_id)
    assert flag["status"] == "succeeded", flag
    assert flag["best"] == {"metric": "mean_reward", "value": 0.6, "step": 8, "trial": 1}
    results = _results(loop, run_id)
    assert "best 0.6000 (trial 1, step 8), last 0.0600" in results, results
    assert "the best is trial 1's; the run was relaunched since" in results


def test_an_unread_nemo_block_is_quoted_where_the_reason_says_so(env: Env, loop: Loop) -> None:
    """walk86 F29: NeMo-RL's `📊 Validation Results:` printed as a Markdown table. The reason
    said "its output shows validation results, yet no record was read from them" and
    results.md "No validation results were written during this run" (false)."""
    command = (
        "python examples/run_grpo.py --config examples/configs/grpo_fake.yaml "
        "grpo.max_num_steps=2 grpo.val_period=2 fake.table=1"
    )
    bp = env.blueprint("table", config="examples/configs/grpo_fake.yaml", command=command)
    flag = loop.until_done(loop.submit(bp))
    assert flag["reason"].endswith("yet no record was read from them"), flag
    results = (env.tmp / "results" / "table" / "results.md").read_text()
    assert "No validation results were written" not in results
    assert "in a shape ajetd does not read" in results
    assert "📊 Validation Results:\n| Metric | Value |" in results, results


# -- walk86 F12: a val file path with `${...}` or `~` -------------------------------------------


def test_interpolations_resolve_as_hydra_resolves_them() -> None:
    root = {"ajet": {"experiment_name": "exp_${ajet.tag}", "tag": 7, "flag": True}}
    env = {"HOME": "/home/u"}
    assert resolve_interpolations("s/${ajet.experiment_name}/v.md", root, env) == "s/exp_7/v.md"
    assert resolve_interpolations("${oc.env:HOME}/v.md", root, env) == "/home/u/v.md"
    assert resolve_interpolations("${oc.env:NOPE,'/tmp/d'}/v.md", root, env) == "/tmp/d/v.md"
    for unresolved in ("${oc.env:NOPE}/v.md", "${..tag}/v", "${ajet.nope}/v", "${ajet.flag}/v"):
        assert resolve_interpolations(unresolved, root, env) is None, unresolved
    loop_ = {"a": "${a}"}  # resolves to itself for ever: bounded, then no path
    assert resolve_interpolations("${a}", loop_, env) is None


def _lint(env: Env, name: str, val: str) -> dict[str, Any]:
    config = env.codebase / env.config(name)
    conf = yaml.safe_load(config.read_text())
    conf["ajet"]["experiment_name"] = "exp_w86"
    conf["ajet"]["trainer_common"]["val_print_to_markdown_file_path"] = val
    config.write_text(yaml.safe_dump(conf))
    out = env.cli("lint", str(env.blueprint(name, config=f"configs/{name}.yaml")), "--json")
    return dict(json.loads(out.stdout)["blueprint"])


def test_lint_reads_the_val_file_the_program_writes(env: Env) -> None:
    """walk86 F12: `saved/${ajet.experiment_name}/val.md` was watched as written; `~/v.md`
    was read as $HOME/v.md where AgentJet writes ./~/v.md."""
    got = _lint(env, "interp", "saved/${ajet.experiment_name}/val.md")
    assert got["val_path"] == str(env.codebase / "saved" / "exp_w86" / "val.md"), got
    got = _lint(env, "unset", "${oc.env:AJETD_TEST_NEVER_SET}/val.md")
    assert got["val_path"] == str(env.tmp / "results" / "unset" / "val_results.md"), got
    assert any("cannot resolve" in c for c in got["config_changes"]), got["config_changes"]
    got = _lint(env, "tilde", "~/val.md")
    assert got["val_path"] == str(env.codebase / "~" / "val.md"), got
    assert any("begins with ~" in w for w in got["warnings"]), got["warnings"]


def test_an_interpolated_val_file_gives_the_runs_metrics(env: Env, loop: Loop) -> None:
    config = env.config("hydra", steps=4)
    path = env.codebase / config
    conf = yaml.safe_load(path.read_text())
    conf["ajet"]["experiment_name"] = "exp_w86"
    common = conf["ajet"]["trainer_common"]
    common["val_print_to_markdown_file_path"] = "saved/${ajet.experiment_name}/val.md"
    path.write_text(yaml.safe_dump(conf))
    flag = loop.until_done(loop.submit(env.blueprint("hydra", config=config, ajetd="gpus: 0")))
    assert flag["status"] == "succeeded" and flag["metrics"]["global_steps"] == 4, flag
    assert (env.codebase / "saved" / "exp_w86" / "val.md").exists()


def test_a_campaigns_running_line_says_a_diverged_metric() -> None:
    from ajetd.views.campaign import _running_line

    run = {"index": 2, "name": "lr", "run_id": "abc123", "run_state": "running"}
    line = _running_line({**run, "metric": "nan", "best_metric": 0.5}, "accuracy")
    assert "last accuracy nan (best 0.5)" in line, line
    assert "last accuracy 0.4 " in _running_line(
        {**run, "metric": 0.4, "best_metric": 0.5}, "accuracy"
    )
    # a running experiment with no metric yet (every campaign's first minutes): no crash of
    # `campaign status`, which formatted None as a number
    none = _running_line({**run, "metric": None, "best_metric": None}, "accuracy")
    assert none.endswith(": no metric yet"), none


# -- session 34's gap: a metric that keeps falling got no warning ------------------------------


def _series(values: list[float], key: str = "mean_reward") -> list[dict[str, Any]]:
    return [{"global_steps": 2 * i, key: v} for i, v in enumerate(values)]


def test_a_falling_metric_is_said_with_how_far_below_its_best() -> None:
    history = _series([0.5, 0.6, 0.55, 0.5, 0.45])
    assert falling_note(history, [1] * 5, "mean_reward") == (
        "mean_reward fell to 0.4500 at step 8, below each of the 3 validations before it and "
        "0.1500 below its best, 0.6000 at step 2"
    )
    # a noisy decline too: the last below each of the three before it
    assert falling_note(_series([0.6, 0.5, 0.52, 0.45]), [1] * 4, "mean_reward") is not None
    # a loss is worse as it rises
    losses = _series([1.0, 1.2, 1.3, 1.5], key="val_loss")
    note = falling_note(losses, [1] * 4, "val_loss")
    assert note is not None and note.startswith("val_loss rose to 1.5000 at step 6, above each")


@pytest.mark.parametrize(
    "values",
    [
        [0.6, 0.55, 0.5],  # too few validations to say
        [0.6, 0.5, 0.4, 0.41],  # it rose again at the last
        [0.6, 0.5, 0.4, 0.4],  # it stays put: the plateau rule's, not a fall
        [0.6038, 0.6035, 0.6030, 0.6025],  # noise around a level, 0.2 % of the scale
        [0.1, 0.2, 0.3, 0.4],  # climbing
        [0.6, 0.5, float("nan"), 0.4, 0.3],  # a nan in the window: nonfinite_note's
        [0.0, 0.0, 0.0, 0.0],  # no scale
    ],
)
def test_what_is_no_fall(values: list[float]) -> None:
    assert falling_note(_series(values), [1] * len(values), "mean_reward") is None


def test_a_relaunch_from_step_0_is_judged_on_its_own_records_for_a_fall() -> None:
    """Trial 2 trains again from step 0: its 0.1 after trial 1's 0.6 is no fall, and trial
    2's own falling records are."""
    steps = [0, 2, 4, 6, 0, 2, 4, 6]
    values = [0.3, 0.4, 0.5, 0.6, 0.1, 0.2, 0.3, 0.35]
    history = [{"global_steps": s, "mean_reward": v} for s, v in zip(steps, values, strict=True)]
    owners: list[int | None] = [1, 1, 1, 1, 2, 2, 2, 2]
    assert falling_note(history, owners, "mean_reward") is None
    falls = [*history[:4], *_series([0.5, 0.45, 0.4, 0.3])]
    assert falling_note(falls, owners, "mean_reward") is not None
    assert falling_note(falls, [1] * 8, "mean_reward") is not None


@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=12),
    st.booleans(),
)
def test_a_series_that_never_gets_worse_is_never_falling(values: list[float], loss: bool) -> None:
    """Whatever the values: a series sorted the way its metric improves is never said to
    fall, and one said to fall ends below (a loss: above) each of its 3 before."""
    key = "val_loss" if loss else "mean_reward"
    better = sorted(values, reverse=loss)
    assert falling_note(_series(better, key), [1] * len(values), key) is None
    if falling_note(_series(values, key), [1] * len(values), key) is not None:
        sign = -1 if loss else 1
        assert all(sign * values[-1] < sign * v for v in values[-4:-1])


def test_the_warning_of_a_fall_comes_and_goes_with_the_records() -> None:
    """`diverged_warning` keeps it up to date, as it keeps the nan one: once, and gone when
    the metric rises again."""
    from ajetd.core.model import Run, Trial
    from ajetd.daemon.trials import diverged_warning

    run = Run("fall01", "b.md", 0.0, trials=(Trial(1, "x", "s", first_record=0),))
    falling = diverged_warning(replace(run, history=tuple(_series([0.6, 0.5, 0.4, 0.3]))))
    said = [w for w in falling.warnings if w.startswith("validation: mean_reward fell to")]
    assert said == [
        "validation: mean_reward fell to 0.3000 at step 6, below each of the 3 validations "
        "before it and 0.3000 below its best, 0.6000 at step 0: the training is getting worse?"
    ], falling.warnings
    again = diverged_warning(replace(falling, history=(*falling.history, {"mean_reward": 0.2})))
    assert len([w for w in again.warnings if " fell to " in w]) == 1, again.warnings
    rose = diverged_warning(replace(again, history=(*again.history, {"mean_reward": 0.5})))
    assert not [w for w in rose.warnings if " fell to " in w], rose.warnings


def test_a_run_whose_metric_keeps_falling_is_warned_live_and_in_results(
    env: Env, loop: Loop
) -> None:
    """Session 34's gap: mean_reward 0.6 → 0.3 over four validations got no word anywhere;
    the plateau rule rightly leaves a falling metric alone. The run's warnings (status
    --json) say it while it runs, results.md once it ended."""
    hold = env.tmp / "end"
    rewards = [0.6, 0.5, 0.45, 0.3]  # at steps 2, 4, 6, 8
    config = env.config("fall", rewards=rewards, steps=8, hold_until=str(hold))
    run_id = loop.submit(env.blueprint("fall", config=config, ajetd="gpus: 0", max_time="1h"))
    loop.started(run_id)
    val = env.codebase / "saved_val_result" / "fall.md"
    loop.until(lambda: val.exists() and val.read_text().count("\n") == 4, "four records")
    loop.run_for(125)  # the val file is read within a minute, a live run looked at each minute
    warned = "validation: mean_reward fell to 0.3000 at step 8, below each of the 3 validations"
    live = env.status(run_id)
    assert live["state"] == "running", live
    assert [w for w in live["warnings"] if w.startswith(warned)], live["warnings"]
    hold.touch()
    flag = loop.until_done(run_id)
    assert flag["status"] == "succeeded", flag
    results = _results(loop, run_id)
    assert f"- warning: {warned}" in results, results
    assert "0.3000 below its best, 0.6000 at step 2: the training is getting worse?" in results
