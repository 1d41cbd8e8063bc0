"""NeMo-RL runs: the formats of the fixture log, and the whole loop with a fake launcher
that prints them (metrics read, normal end, save-by timeout, its own checkpoint dir)."""

from __future__ import annotations

import json
import random
import time
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from ajetd.core.model import Run
from ajetd.core.runparts import NemoRead
from ajetd.diagnosis.stream import diagnose_text
from ajetd.frameworks import nemorl
from ajetd.frameworks.framework import WORKER_VENV_EXPLANATION, WORKER_VENV_FIX, framed
from ajetd.frameworks.valresults import parse_val_text
from conftest import Env

FIXTURES = Path(__file__).parent / "data" / "nemo_rl"


def test_the_fixture_log_gives_its_validation_and_normal_end() -> None:
    text = (FIXTURES / "sample_grpo_stdout.log").read_text()
    state, records = nemorl.feed(NemoRead(), text)
    assert records == [
        {
            "step": 3,
            "global_steps": 3,
            "accuracy": 0.4219,
            "average_response_length": 231.4,
            "samples_processed": 256.0,
        }
    ]
    assert state.log_dir == "logs/ajet/exp0007/exp_001" and state.max_steps == 3
    assert nemorl.ending(text) == "max_steps"
    lines = text.splitlines(keepends=True)
    rng = random.Random(3)
    state, found, i = NemoRead(), [], 0
    while i < len(lines):  # cut anywhere between lines: the same records
        n = rng.randint(1, 30)
        state, got = nemorl.feed(state, "".join(lines[i : i + n]))
        found += got
        i += n
    assert found == records


# The shapes below are NeMo-RL's own print calls, quoted from github.com/NVIDIA-NeMo/RL (main
# 7ea279abfbeb698b092856d0dab61e7cf39bc909, 2026-08-22, unless a tag is named), printed with
# invented values.
SEP = "=" * 25


def _feed_all(text: str, state: NemoRead | None = None) -> tuple[NemoRead, list[dict]]:
    """Every record of `text`, read in one go; and the same read line by line, the state
    saved and read back between reads (as the daemon does), must give the same."""
    got = nemorl.feed(state or NemoRead(), text)
    lines = [f"{line}\n" for line in text.split("\n")[:-1]]  # (a `\r` is no line's end)
    piecewise, found = state or NemoRead(), []
    for line in lines:
        piecewise, records = nemorl.feed(NemoRead.from_json(piecewise.to_json()), line)
        found += records
    assert found == got[1]
    return got


def test_dpo_and_rm_print_a_block_per_dataset_named_as_their_metric_name() -> None:
    """nemo_rl/algorithms/dpo.py:509 (v0.4.0 on): `📊 Validation Results for `{dataset_name}`
    set:` and `    • Validation {metric_name}: {value:.4f}` for each DPOValMetrics field;
    NeMo-RL names them `validation-{dataset}_{field}` (dpo.py:378-384), as the recipes'
    `metric_name: "val:validation-default_loss"` (examples/configs/dpo.yaml:26). Before, the
    block's keys began with the dataset's name in backticks, which no metric_name names.
    A run's public log shows the block so (github.com/NVIDIA-NeMo/nemo-platform/pull/943: the
    nine bullets, `Validation num_valid_samples: 16.0000`, then `Saving checkpoint for step
    2...`, a `(DTensorPolicyWorker[rank=0] pid=N)` line and `📊 Training Results:` bullets)."""
    fields = ["loss", "sft_loss", "preference_loss", "accuracy", "rewards_chosen_mean"]
    fields += ["rewards_rejected_mean", "num_valid_samples", "global_valid_seqs"]
    fields += ["global_valid_toks"]

    def block(name: str, loss: float) -> str:
        lines = [f"\n📊 Validation Results for `{name}` set:"]
        lines += [f"    • Validation {f}: {loss if f == 'loss' else 0.5:.4f}" for f in fields]
        lines += [f"\n  ⏱️  Validation Timing for `{name}` set:"]
        return "\n".join([*lines, "    • Total validation time: 12.34s"]) + "\n"

    text = (
        f"\n{SEP} Epoch 1/1 {SEP}\n\n{SEP} Step 7/100 {SEP}\n▶ Taking a training step...\n"
        + block("default", 0.6931)
        + block("ultra", 0.7001)
        + "Saving checkpoint for step 7...\n(DTensorPolicyWorker[rank=0] pid=1) Saving x\n"
        + "\n📊 Training Results:\n  • loss: 0.6931\n  • accuracy: 0.0000\n"
        + "Timeout has been reached, stopping training early\n"
    )
    _, records = _feed_all(text)
    assert [r["step"] for r in records] == [7, 7]
    assert records[0]["validation_default_loss"] == 0.6931
    assert records[0]["validation_default_num_valid_samples"] == 0.5
    assert records[1]["validation_ultra_loss"] == 0.7001 and len(records[1]) == 2 + len(fields)
    assert nemorl.ending(text) == "timeout"
    # one validation, one record, as NeMo-RL's own `val:` metrics
    (merged,) = nemorl.add_records([], records)
    assert merged["validation_default_loss"] == 0.6931 and merged["validation_ultra_loss"] == 0.7001
    config = yaml.safe_load((FIXTURES / "examples" / "configs" / "dpo.yaml").read_text())
    assert nemorl.primary_metric(config) == ("validation_default_loss", False)
    # rm.py:447-456: the same, and `num_valid_samples` as `Validation num valid samples: {:.0f}`
    rm = (
        f"{SEP} Step 3/40 {SEP}\n\n📊 Validation Results for `default` set:\n"
        "    • Validation loss: 0.6523\n    • Validation accuracy: 0.6100\n"
        "    • Validation rewards_chosen_mean: 0.1200\n"
        "    • Validation rewards_rejected_mean: -0.0800\n"
        "    • Validation num valid samples: 512\n\n"
        "  ⏱️  Validation Timing for `default` set:\n    • Total validation time: 3.10s\n"
    )
    (record,) = _feed_all(rm)[1]
    assert record["validation_default_num_valid_samples"] == 512.0
    assert record["validation_default_accuracy"] == 0.61


def test_older_releases_dpo_and_grpo_names() -> None:
    """v0.3.0 nemo_rl/algorithms/dpo.py:340-342 printed one unnamed block, `• Validation loss:`
    and `• Validation accuracy:`, judged by `metric_name: "val_loss"`; GRPO's v0.3.0 recipes
    judged by `metric_name: "val_reward"`, its accuracy (grpo.py:707 `grpo_save_state
    ["val_reward"] = val_metrics["accuracy"]`): before, `val_reward`, which no block holds."""
    text = (
        f"\n{SEP} Step 5/150 {SEP}\n\n📊 Validation Results:\n"
        "    • Validation loss: 0.6412\n    • Validation accuracy: 0.6250\n\n"
        "  ⏱️  Validation Timing:\n    • Total validation time: 8.02s\n"
    )
    (record,) = _feed_all(text)[1]
    at_step = {"step": 5, "global_steps": 5}
    assert record == {**at_step, "val_loss": 0.6412, "validation_accuracy": 0.625}
    old = {"checkpointing": {"metric_name": "val_reward", "higher_is_better": True}}
    assert nemorl.primary_metric(old) == ("accuracy", True)
    # `metric_name: null` (recipes/llm/dpo-llama3.1-8b-tulu3-1n8g-fsdp2tp1.yaml:40): the
    # algorithm's base config's metric, not accuracy, which a DPO or SFT run never prints
    null = {"metric_name": None, "higher_is_better": False}
    assert nemorl.primary_metric({"dpo": {}, "checkpointing": null}) == (
        "validation_default_loss",
        False,
    )
    assert nemorl.primary_metric({"sft": {}, "checkpointing": {"metric_name": None}}) == (
        "val_loss",
        False,
    )
    assert nemorl.primary_metric({"grpo": {}, "checkpointing": null}) == ("accuracy", False)
    # that recipe inherits `dpo:` through `defaults: ../../dpo.yaml`: its script says DPO
    recipe = {"defaults": "../../dpo.yaml", "checkpointing": {"metric_name": None}}
    assert nemorl.primary_metric(recipe, "uv run examples/run_dpo.py --config r.yaml")[0] == (
        "validation_default_loss"
    )
    assert nemorl.primary_metric({"checkpointing": {"metric_name": "val_loss"}}) == (
        "val_loss",
        False,
    )


def test_steps_count_over_the_run_where_the_header_counts_within_an_epoch() -> None:
    """sft.py:435-440 (and dpo, rm, distillation, ppo, grpo since v0.4): `Epoch E/K`, then
    `Step {current_step + 1}/{min(len(train_dataloader), max_num_steps)}` with current_step
    reset to 0 at each epoch (sft.py:676); validation at `total_steps + 1` (sft.py:487). Before,
    epoch 2's first validation was read at step 2, below epoch 1's."""

    def epoch(e: int, steps: range) -> str:
        out = f"\n{SEP} Epoch {e}/3 {SEP}\n"
        for n in steps:
            out += f"\n{SEP} Step {n}/4 {SEP}\n▶ Preparing batch...\n▶ Taking a training step...\n"
            if n % 2 == 0:
                out += f"\n📊 Validation Results:\n    • Validation loss: {1 / (e * 10 + n):.4f}\n"
                out += "\n  ⏱️  Validation Timing:\n    • Total validation time: 1.50s\n"
            out += "\n📊 Training Results:\n  • Loss: 0.5000\n\n⏱️  Timing:\n"
            out += "  • Total step time: 2.00s\n"
        return out

    initial = "\n🔍 Running initial validation...\n\n📊 Validation Results:\n"
    initial += "    • Validation loss: 1.2000\n\n"
    text = initial + epoch(1, range(1, 5)) + epoch(2, range(1, 5)) + epoch(3, range(1, 3))
    state, records = _feed_all(text)
    assert [r["step"] for r in records] == [0, 2, 4, 6, 8, 10]  # val_at_start: step 0
    assert state.step == 10 and state.max_steps == 4 and state.epoch == 3
    # a relaunch resuming in epoch 3 (its checkpoint at step 9): `Epoch 3/3`, `Step 2/4`
    resumed = replace(state, trial=2, offset=0)
    state, again = _feed_all(epoch(3, range(2, 3)), resumed)
    assert [r["step"] for r in again] == [10]
    # read from epoch 2 on with nothing before (a record older than the epoch count): M a epoch
    _, late = _feed_all(epoch(2, range(1, 3)))
    assert [r["step"] for r in late] == [6]
    # dynamic sampling: an epoch of 4 batches ran 3 steps; the next epoch follows what was seen
    short = epoch(1, range(1, 4)) + epoch(2, range(1, 3))
    assert [r["step"] for r in _feed_all(short)[1]] == [2, 5]


def test_values_as_printed_nan_inf_and_the_one_call_block() -> None:
    """`{:.4f}` of a diverged loss prints `nan` (sft.py:366 `• Validation loss: {:.4f}`), of an
    overflow `inf`: no number, kept as its text `nan`/`inf` (as AgentJet's val file reads
    them: a diverged metric is shown and judged so, walk86 F2). Before, the
    bullet was not read and ended the block. grpo_sync.py:328-335 prints the block in one call,
    its timing line `  ⏱️  Total validation time: ...` right after the bullets."""
    text = f"{SEP} Step 4/8 {SEP}\n\n📊 Validation Results:\n    • Validation loss: nan\n\n"
    (record,) = _feed_all(text)[1]
    assert record == {"step": 4, "global_steps": 4, "val_loss": "nan"}
    text = (
        f"{SEP} Step 6/8 {SEP}\n\n📊 Validation Results:\n    • Accuracy: -inf\n"
        "    • Average response length: 1e+03 tokens\n    • Samples processed: 256\n"
        "  ⏱️  Total validation time: 14.87s\n"
    )
    (record,) = _feed_all(text)[1]
    assert record["accuracy"] == "-inf" and record["average_response_length"] == 1000.0
    assert record["samples_processed"] == 256.0


def test_a_pane_with_colours_redraws_and_worker_lines_between_the_bullets() -> None:
    """Ray's log monitor prints the workers' lines into the driver's terminal as they come, so
    one can land between a block's lines (the prefix is Ray's `(Name pid=N)`; NeMo-RL's policy
    workers name themselves `{cls}[rank={rank}]`, dtensor_policy_worker_v2.py:218), coloured
    when the pane is a terminal; Ray's own processes print `(raylet) ...` and `(autoscaler
    +18s) ...` (as pasted in public logs); a tqdm bar redraws with `\\r`. Before, such a line
    ended the block and the bullets after it were lost."""
    text = (
        f"\x1b[1m{SEP} Step 2/2 {SEP}\x1b[0m\n"
        "Processed prompts:  50%|#####     | 32/64\rProcessed prompts: 100%|##########| 64/64\n"
        "\n📊 Validation Results:\n"
        "\x1b[36m(DTensorPolicyWorkerV2[rank=0] pid=52114)\x1b[0m GPU Memory after optimizer "
        "offload: 2.31GB allocated, 2.46GB reserved\n"
        "    • \x1b[32mAccuracy: 0.4219\x1b[0m\n"
        "(VllmGenerationWorker pid=51233, ip=10.0.0.12) INFO 08-23 09:14:41 [x.py:1] hi "
        "[repeated 7x across cluster]\n"
        "    • Average response length: 231.4 tokens\n"
        "(raylet) [2025-04-19 20:06:00,489 E 120465 120495] (raylet) file_system_monitor.cc:116:"
        " /tmp/ray/session_x is over 95% full\n"
        "(autoscaler +18s) Tip: use `ray status` to view detailed cluster status.\n"
        "\r    • Samples processed: 256\n\n"
        "  ⏱️  Validation Timing:\n    • Total validation time: 14.87s\n"
        "\x1b[32mMax number of steps has been reached, stopping training early\x1b[0m\n"
    )
    (record,) = _feed_all(text)[1]
    assert record == {
        "step": 2,
        "global_steps": 2,
        "accuracy": 0.4219,
        "average_response_length": 231.4,
        "samples_processed": 256.0,
    }
    assert nemorl.ending(text) == "max_steps"


def test_every_way_it_says_it_stopped() -> None:
    """The lines each algorithm prints as it stops, exit code 0 for all: the save-by timeout is
    a time limit, the others a normal end. xtoken_off_policy_distillation.py:865 and :871,
    ppo.py:3016 (async PPO), grpo.py:2676-2679 (`grpo.stop_at_validation_threshold`)."""
    assert nemorl.ending("Timeout reached, stopping training early.\n") == "timeout"
    assert nemorl.ending("Max steps reached, stopping training.\n") == "max_steps"
    said = "Configured step/epoch limit has been reached, stopping training\n"
    assert nemorl.ending(said + "Async PPO training complete!\n") == "max_steps"
    said = "Validation accuracy reached the early-stop threshold (0.9100 >= 0.9); stopping training"
    assert nemorl.ending(said) == "early_stop"
    said = "Initial validation accuracy reached the early-stop threshold (0.9500 >= 0.9); "
    assert nemorl.ending(said + "stopping training\n") == "early_stop"
    assert nemorl.ending("🛑 Shutting down environment math...\n") is None  # max_num_epochs
    both = f"{nemorl.TIMEOUT_END}\n(relaunched)\n{nemorl.NORMAL_END}\n"
    assert nemorl.ending(both) == "max_steps"  # the last said


def test_an_evaluation_gives_its_score() -> None:
    """examples/run_eval.py prints its result in nemo_rl/evals/eval.py `_print_results`
    (:542-547): `score={average_score:.4f} ({score}/{dataset_size})`, `{:.2f}` in v0.2.0
    (nemo_reinforcer/evals/eval.py:184). Its config (examples/configs/evals/eval.yaml) has
    `eval:` and no checkpointing: the score judges it. Before, it gave no record at all."""
    text = (
        "\n" + "=" * 60 + "\nmodel_name='Qwen2.5-Math-1.5B-Instruct' dataset_name='aime2024'\n"
        "max_new_tokens=2048 temperature=0.0 top_p=1.0 top_k=-1 seed=42\n\n"
        "metric=pass@1 num_tests_per_prompt=1\n\nscore=0.1000 (3.0/30)\n" + "=" * 60 + "\n"
    )
    assert _feed_all(text)[1] == [{"step": 0, "global_steps": 0, "score": 0.1}]
    assert _feed_all("score=0.10 (3.0/30)\n")[1][0]["score"] == 0.1
    config = {"eval": {"metric": "pass@k", "k_value": 1}, "generation": {}}
    assert nemorl.primary_metric(config) == ("score", True)


def test_long_and_hostile_lines_are_read_in_linear_time() -> None:
    """Patterns run over whatever a program prints: a megabyte of `=`, of spaces after a bullet
    label, of backticks after a block header, costs no more than reading it."""
    hostile = [
        "=" * 1_000_000,
        "    • a" + " " * 1_000_000 + "x",
        "📊 Validation Results for `" + "a" * 1_000_000,
        f"{SEP} Step " + "1" * 1_000_000,
        "(" + "A" * 1_000_000 + " pid=1",
    ]
    for line in hostile:
        started = time.process_time()  # its CPU time, whatever runs beside it
        nemorl.feed(NemoRead(), f"📊 Validation Results:\n{line}\n")
        assert time.process_time() - started < 1.0, line[:20]


def test_recipes_name_their_metric_and_launch_lines_are_recognised() -> None:
    configs = FIXTURES / "examples" / "configs"
    assert nemorl.primary_metric(yaml.safe_load((configs / "grpo_math_1B.yaml").read_text())) == (
        "accuracy",
        True,
    )
    assert nemorl.primary_metric(yaml.safe_load((configs / "sft.yaml").read_text())) == (
        "val_loss",
        False,
    )
    assert nemorl.is_nemo_launch("uv run examples/run_grpo.py --config examples/configs/x.yaml")
    assert nemorl.is_nemo_launch("python examples/run_sft.py --config c.yaml")
    assert not nemorl.is_nemo_launch("python -m ajet.launcher --conf ./x.yaml")
    command, notes = nemorl.launch_overrides(
        "uv run examples/run_grpo.py --config c.yaml logger.log_dir=mine",
        "/r",
        {"WANDB_API_KEY": "k"},
    )
    assert command.endswith(
        "logger.log_dir=mine ++checkpointing.checkpoint_dir=/r/nemo_rl/checkpoints"
    )
    assert len(notes) == 1


def test_overrides_only_where_they_reach_the_program() -> None:
    assert nemorl.overridable("uv run examples/run_grpo.py --config c.yaml a=b")
    assert nemorl.overridable("cd RL && uv run examples/run_sft.py --config c.yaml")
    assert not nemorl.overridable('COMMAND="uv run ./examples/run_grpo.py --config c" bash ray.sub')
    assert not nemorl.overridable("python examples/run_grpo.py --config c.yaml; echo done")
    assert not nemorl.overridable("python examples/run_grpo.py 'unbalanced")


def _nemo_blueprint(env: Env, name: str, extra: str) -> Path:
    command = (
        "python examples/run_grpo.py --config examples/configs/grpo_fake.yaml "
        f"grpo.max_num_steps=6 grpo.val_period=2 {extra}"
    )
    return env.blueprint(name, config="examples/configs/grpo_fake.yaml", command=command)


def test_a_nemo_run_through_the_loop(daemon_env: Env) -> None:
    env = daemon_env
    run_id = env.submit(_nemo_blueprint(env, "nemo", ""))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    assert status["metrics"]["accuracy"] == 0.42 and status["metrics"]["global_steps"] == 6
    result = env.tmp / "results" / "nemo"
    assert "++logger.log_dir=" + str(result / "nemo_rl" / "logs") in status["command"]
    assert (result / "nemo_rl" / "checkpoints" / "step_6").is_dir()  # its own checkpoint dir
    log = (result / "logs" / "trial-1.log").read_text()
    assert "wandb_enabled=False" in log
    record = json.loads((result / "run.json").read_text())
    assert [h["accuracy"] for h in record["history"]] == [0.34, 0.38, 0.42]
    assert "accuracy=0.4200" in env.cli("status").stdout
    results = (result / "results.md").read_text()
    assert "NeMo-RL override ++checkpointing.checkpoint_dir=" in results
    assert "| trial | step | accuracy |" in results and "| 1 | 6 | 0.4200 |" in results
    assert "- **accuracy**: first 0.3400, best 0.4200 (step 6), last 0.4200" in results
    # where its records come from, not "(none named in the YAML)" (walk92 F9)
    assert "- validation records: read from the program's output (NeMo-RL prints" in results
    assert "none named in the YAML" not in results


def test_a_percent_is_a_fraction_in_every_reader(daemon_env: Env) -> None:
    """walk89 F14: NeMo-RL's `• Accuracy: 36.00%` was read as 36.0 while a swarm client's
    `task_pass_rate@1: 45.00%` was read as 0.45: one metric, two scales. A value written with
    `%` is its fraction in every reader, the scale the plain printing has."""
    env = daemon_env
    run_id = env.submit(_nemo_blueprint(env, "pct", "fake.percent=1"))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    assert status["metrics"]["accuracy"] == 0.42, status["metrics"]
    record = json.loads((env.tmp / "results" / "pct" / "run.json").read_text())
    assert [h["accuracy"] for h in record["history"]] == [0.34, 0.38, 0.42]
    swarm = parse_val_text("## Step 2\n- task_pass_rate@1: 45.00%\n- mean_reward: 0.45\n")
    assert swarm == [{"global_steps": 2, "task_pass_rate@1": 0.45, "mean_reward": 0.45}]


@pytest.mark.parametrize(
    ("name", "dress"),
    [("sky", "(head,_rank=0,_pid=2011)_"), ("stamp", "[2026-12-02_10:00:01]_INFO:_")],
)
def test_metrics_behind_a_launchers_or_a_loggers_dress_are_read(
    daemon_env: Env, name: str, dress: str
) -> None:
    """Walk 89, F7: under SkyPilot (`(head, rank=0, pid=N) ` before each line) or a logger's
    timestamp the reader found no record (`metrics {}`, "its output shows validation results,
    yet no record was read"), though diagnosis strips the same dress: both read lines through
    one stripper (`termtext.strip_dress`)."""
    env = daemon_env
    run_id = env.submit(_nemo_blueprint(env, name, f"'fake.prefix={dress}'"))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    assert status["metrics"]["accuracy"] == 0.42, status["metrics"]
    log = (env.tmp / "results" / name / "logs" / "trial-1.log").read_text()
    assert f"{dress.replace('_', ' ')}    • Accuracy: 0.4200" in log  # dressed as it was said
    record = json.loads((env.tmp / "results" / name / "run.json").read_text())
    assert [h["accuracy"] for h in record["history"]] == [0.34, 0.38, 0.42]


def test_a_dpo_run_over_three_epochs_through_the_loop(daemon_env: Env) -> None:
    """A NeMo-RL DPO run as v0.4+ prints it (tests/fakejet/examples/run_dpo.py: per-epoch step
    headers, a block per validation dataset, a Ray worker's coloured line between bullets,
    bold headers, no end line at its last epoch) through the real daemon to results.md. Before:
    no record held the run's metric (keys began with the dataset's name in backticks), and the
    steps of epochs 2 and 3 read as 1-3 again."""
    env = daemon_env
    command = "python examples/run_dpo.py --config examples/configs/dpo_fake.yaml"
    blueprint = env.blueprint("dpo", config="examples/configs/dpo_fake.yaml", command=command)
    run_id = env.submit(blueprint)
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status  # the last epoch: nothing said, exit 0
    metrics = status["metrics"]
    assert metrics["global_steps"] == 8 and metrics["validation_default_loss"] == 0.58
    assert metrics["validation_ultra_loss"] == 0.63  # both datasets in the one record
    result = env.tmp / "results" / "dpo"
    record = json.loads((result / "run.json").read_text())
    history = record["history"]
    assert [h["step"] for h in history] == [0, 2, 4, 6, 8]
    assert [h["validation_default_loss"] for h in history] == [0.7, 0.66, 0.62, 0.58, 0.58]
    results = (result / "results.md").read_text()
    assert "| trial | step | validation_default_loss |" in results
    assert "| 1 | 8 | 0.5800 |" in results
    assert "- **validation_default_loss**: first 0.7000, best 0.5800 (step 6), last 0.5800" in (
        results
    )


def test_a_plateau_metric_named_is_judged_as_named_never_swapped(daemon_env: Env) -> None:
    """Walk 28, M4: `plateau: {metric: mean_reward}` (the default's name, TEMPLATE.md's
    example) in a NeMo-RL run was taken for the default and judged `accuracy`: the run stopped
    on `plateau: accuracy has not improved ...` with no warning. Named, it is judged as named:
    admission warns (NeMo-RL does not write it; without `metric:` the run's own is judged), the
    run warns once its records hold none of it, and a flat accuracy does not stop it. Not
    named, the rule judges the run's own metric and stops it."""
    env = daemon_env
    extra = "grpo.val_period=1 fake.flat=1"
    rule = "plateau: {metric: mean_reward, patience: 2, after: 0}"
    bp = _nemo_blueprint(env, "named", extra)
    bp.write_text(bp.read_text() + f"\n## [ajetd]\n```yaml\n{rule}\n```\n")
    status = env.wait_done(env.submit(bp))
    assert status["status"] == "succeeded", status
    warnings = status["warnings"]
    assert any(
        w.startswith("plateau.metric: 'mean_reward' is not a validation key NeMo-RL")
        and "the rule judges the run's own, 'accuracy'" in w
        for w in warnings
    ), warnings
    [late] = [w for w in warnings if w.startswith("plateau.metric 'mean_reward': none of")]
    assert "(the records hold: accuracy, " in late, late
    assert late in (env.tmp / "results" / "named" / "results.md").read_text()
    bp = _nemo_blueprint(env, "own", extra)
    bp.write_text(bp.read_text() + "\n## [ajetd]\n```yaml\nplateau: {patience: 2, after: 0}\n```\n")
    status = env.wait_done(env.submit(bp))
    assert status["status"] == "plateau", status
    assert "accuracy has not improved" in status["reason"], status
    assert not [w for w in status["warnings"] if w.startswith("plateau.metric")], status


def test_a_nemo_save_by_timeout_is_a_time_limit(daemon_env: Env) -> None:
    env = daemon_env
    run_id = env.submit(_nemo_blueprint(env, "nemo_t", "checkpointing.checkpoint_must_save_by=3"))
    status = env.wait_done(run_id)
    assert status["status"] == "time_limit" and status["exit_code"] == 0
    assert "save-by timeout" in status["reason"]
    assert env.cli("wait", run_id).returncode == 0


def test_each_validation_keeps_the_step_it_followed_however_much_is_read_at_once() -> None:
    """A deep check reads all the output since the last one (up to 16 min of it): every
    validation block in that read was given the step of the read's last `Step N/M` header."""
    text = "".join(
        f"========================= Step {s}/6 =========================\n"
        + (f"📊 Validation Results:\n    • Accuracy: {s / 10:.4f}\n\n" if s % 2 == 0 else "")
        for s in range(1, 7)
    )
    _, records = nemorl.feed(NemoRead(), text)
    assert [(r["step"], r["global_steps"], r["accuracy"]) for r in records] == [
        (2, 2, 0.2),
        (4, 4, 0.4),
        (6, 6, 0.6),
    ]
    lines = text.splitlines(keepends=True)
    for seed in range(20):  # cut anywhere between lines, the state saved and read back
        rng = random.Random(seed)
        state, found, i = NemoRead(), [], 0
        while i < len(lines):
            n = rng.randint(1, 12)
            state, got = nemorl.feed(NemoRead.from_json(state.to_json()), "".join(lines[i : i + n]))
            found += got
            i += n
        assert found == records


def test_a_nemo_runs_cuda_oom_is_fixed_in_a_copy_its_config_flag_points_at(
    daemon_env: Env,
) -> None:
    """A NeMo-RL run out of GPU memory, `allow_fixes` permitting NeMo-RL's own micro batch
    key: the key was not one ajetd could fix, and a fix could not reach the run (`--conf: no
    flag, not its config`: NeMo-RL's flag is `--config`). The micro batch is halved in a copy
    beside the config (its `defaults:` resolve as before), `--config` points at it, and the
    next trial runs with it."""
    env = daemon_env
    config = "examples/configs/grpo_oom.yaml"
    command = (
        f"python examples/run_grpo.py --config {config} grpo.max_num_steps=4 grpo.val_period=2"
    )
    blueprint = env.blueprint(
        "nemo_oom",
        config=config,
        command=command,
        ajetd="allow_fixes: {train_micro_batch_size: {min: 1}}",
    )
    run_id = env.submit(blueprint)
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded" and status["trials"] == 2, status
    assert env.record(run_id)["trials"][0]["exit_code"] == 1
    copy = f"examples/configs/grpo_oom.ajetd-{run_id}-t2.yaml"
    assert f"--config {copy}" in status["command"], status["command"]
    assert (
        yaml.safe_load((env.codebase / copy).read_text())["policy"]["train_micro_batch_size"] == 2
    )
    log = (env.tmp / "results" / "nemo_oom" / "logs" / "trial-2.log").read_text()
    assert "policy.train_micro_batch_size=2" in log
    trials = (env.tmp / "results" / "nemo_oom" / "trials.md").read_text()
    assert "train_micro_batch_size 4 → 2" in trials, trials


def test_a_nemo_runs_token_budget_is_an_allowed_fix_where_its_batches_are_packed(
    daemon_env: Env,
) -> None:
    """Session 34's gap: an AgentJet run's token budgets (verl's `ppo_max_token_len_per_gpu`)
    could be allowed for a CUDA OOM, NeMo-RL's could not: with `policy.sequence_packing` on
    and its `train_mb_tokens` written as a number, the micro batch size sizes nothing, and no
    key sized the memory. Allowed, the packing's budget is halved in the config's copy (the
    one of `dynamic_batching`, off, untouched) and the next trial runs with it; allowing the
    micro batch size alone is refused saying which key to allow."""
    env = daemon_env
    config = "examples/configs/grpo_oom_packed.yaml"
    command = f"python examples/run_grpo.py --config {config} grpo.max_num_steps=4"
    blueprint = env.blueprint(
        "nemo_packed",
        config=config,
        command=command,
        ajetd="allow_fixes: {train_mb_tokens: {min: 1024}}",
    )
    run_id = env.submit(blueprint)
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded" and status["trials"] == 2, status
    copy = f"examples/configs/grpo_oom_packed.ajetd-{run_id}-t2.yaml"
    policy = yaml.safe_load((env.codebase / copy).read_text())["policy"]
    assert policy["sequence_packing"]["train_mb_tokens"] == 2048
    assert policy["dynamic_batching"]["train_mb_tokens"] == 4096  # off: sizes nothing
    assert policy["train_micro_batch_size"] == 4
    log = (env.tmp / "results" / "nemo_packed" / "logs" / "trial-2.log").read_text()
    assert "policy.sequence_packing.train_mb_tokens=2048" in log
    fix = status["fixes_applied"][0]
    assert fix["fix"] == "science_train_mb_tokens" and fix["science"] is True, fix
    assert fix["config"] == [
        {"key": "policy.sequence_packing.train_mb_tokens", "old": 4096, "new": 2048}
    ], fix
    refused = env.blueprint(
        "nemo_packed_micro",
        config=config,
        command=command,
        ajetd="allow_fixes: {train_micro_batch_size: {min: 1}}",
    )
    status = env.wait_done(env.submit(refused))
    assert status["status"] == "failed" and status["trials"] == 1, status
    assert (
        "sequence_packing is on, so NeMo-RL ignores train_micro_batch_size (its micro batches "
        "are packed up to the token budgets): allow train_mb_tokens or logprob_mb_tokens"
    ) in status["reason"], status["reason"]


def test_a_nemo_science_fix_the_commands_own_override_would_beat_ends_the_run_saying_so(
    daemon_env: Env,
) -> None:
    """The command sets the key itself (`policy.train_micro_batch_size=4`): NeMo-RL applies
    it over any config, so a fixed copy would change nothing; the run ends saying why."""
    env = daemon_env
    config = "examples/configs/grpo_oom.yaml"
    command = (
        f"python examples/run_grpo.py --config {config} grpo.max_num_steps=4 "
        "policy.train_micro_batch_size=4"
    )
    blueprint = env.blueprint(
        "nemo_own",
        config=config,
        command=command,
        ajetd="allow_fixes: {train_micro_batch_size: {min: 1}}",
    )
    status = env.wait_done(env.submit(blueprint))
    assert status["status"] == "failed" and status["trials"] == 1, status
    assert "the command sets policy.train_micro_batch_size itself" in status["reason"], status


def test_a_recipe_is_read_with_what_its_defaults_name_and_its_fix_lands_in_its_copy(
    tmp_path: Path,
) -> None:
    """NeMo-RL's recipes set only what differs from their parent (`defaults: ../../x.yaml`):
    read alone, the keys a CUDA OOM's fix lowers were not there ("unset or at their bounds").
    The config is read as NeMo-RL reads it, and the fix is written into the recipe's copy
    beside it (whose `defaults:` still resolve), the parent untouched. A command-line
    override of the key, quoted or not, is the command's own."""
    import shutil as sh

    from ajetd.core.remedy import Relaunch, _science
    from ajetd.daemon.trials import config_fix, load_config
    from ajetd.frameworks.framework import NEMO_RL
    from ajetd.hosts.fs import LOCAL, read_inherited

    configs = tmp_path / "examples" / "configs"
    sh.copytree(Path(__file__).parent / "data" / "nemo_rl" / "examples" / "configs", configs)
    recipe = configs / "recipes" / "llm" / "grpo-llama3.2-1b-instruct-1n8g-fsdp2tp1.v3.yaml"
    alone = load_config(str(recipe), LOCAL)
    assert alone is not None and "train_micro_batch_size" not in alone.get("policy", {})
    merged = read_inherited(str(recipe), LOCAL)
    assert isinstance(merged, dict) and "defaults" not in merged
    assert merged["policy"]["train_micro_batch_size"] == 4  # the parent's
    assert merged["grpo"]["max_num_steps"] == alone["grpo"]["max_num_steps"]  # the recipe's
    fix = _science("cuda_oom", merged, {"train_micro_batch_size": (1, None)}, framework=NEMO_RL)
    assert isinstance(fix, Relaunch), fix
    command = f"uv run examples/run_grpo.py --config {recipe.relative_to(tmp_path)}"
    run = Run(
        run_id="abc123",
        source="x.md",
        submitted_at=1.0,
        launch_command=command,
        codebase_dir=str(tmp_path),
        config_path=str(recipe),
        kind="nemo_rl",
        trials=(),
    )
    moved = config_fix(run, dict(fix.config_patches), LOCAL, {})
    assert not isinstance(moved, str), moved
    copy = Path(moved[1])
    assert copy.parent == recipe.parent and f"--config {copy.relative_to(tmp_path)}" in moved[0]
    written = yaml.safe_load(copy.read_text())
    assert written["defaults"] == "../../grpo_math_1B.yaml"
    assert written["policy"]["train_micro_batch_size"] == 2
    again = read_inherited(str(copy), LOCAL)
    assert isinstance(again, dict) and again["policy"]["train_micro_batch_size"] == 2
    for given in ("policy.train_micro_batch_size=4", "'policy.train_micro_batch_size=4'"):
        assert nemorl.given(f"{command} {given}", "policy.train_micro_batch_size"), given
        said = config_fix(
            replace(run, launch_command=f"{command} {given}"), dict(fix.config_patches), LOCAL, {}
        )
        assert isinstance(said, str) and "sets policy.train_micro_batch_size itself" in said


def test_a_relaunched_nemo_run_keeps_the_records_of_the_trial_before(env: Env) -> None:
    """A NeMo-RL run whose trial 1 validated twice and died of an NCCL timeout before any
    deep check read its output, relaunched (resumed from its checkpoint) into a trial that
    validates worse: trial 1's records were lost (only the current trial's log was read), so
    results.md, status and finish.flag gave trial 2's 0.22 as the best. Each trial's output is
    read to its end before the next's: the best is trial 1's 0.38 at step 4. (The daemon's
    deep checks on their real schedule, the first 30 s in, as a walk's daemon had them.)"""
    env.start_daemon("--backoff-scale", "1")
    config = "examples/configs/grpo_relaunch.yaml"
    command = f"python examples/run_grpo.py --config {config}"
    run_id = env.submit(env.blueprint("nemo_again", config=config, command=command))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded" and status["trials"] == 2, status
    result = env.tmp / "results" / "nemo_again"
    record = json.loads((result / "run.json").read_text())
    assert [(h["step"], h["accuracy"]) for h in record["history"]] == [
        (2, 0.34),
        (4, 0.38),
        (6, 0.22),
    ]
    results = (result / "results.md").read_text()
    assert "| 1 | 2 | 0.3400 |" in results and "| 2 | 6 | 0.2200 |" in results, results
    assert "- **accuracy**: first 0.3400, best 0.3800 (trial 1, step 4), last 0.2200" in results


ACTOR_IMPORT = Path(__file__).parent / "data" / "logs" / "nemo_rl_actor_import.log"


def test_a_workers_import_error_is_told_as_nemo_rl_rebuilds_its_worker_venvs() -> None:
    """Walk 28, M5: a NeMo-RL worker's `ModuleNotFoundError` in a Ray actor's creation task
    (the walk's excerpt, NeMo-RL's printed shape) was `import_error` with 'install the missing
    package in the run's venv', plus an `unknown_traceback` for Ray's `Exception raised in
    creation task` line, which defers to the cause printed after it. Now: no noise, and for a
    NeMo-RL run the fix is NeMo-RL's README's (submodules, NRL_FORCE_REBUILD_VENVS=true)."""
    found = diagnose_text(ACTOR_IMPORT.read_text())
    assert [f.kind for f in found] == ["import_error", "ray_worker_died"], found
    assert "install the missing package" in found[0].fix.lower()  # no framework known
    told = framed(found, "nemo_rl")
    assert told[0].fix == WORKER_VENV_FIX and told[0].explanation == WORKER_VENV_EXPLANATION
    assert "git submodule update --init --recursive" in told[0].fix
    assert "NRL_FORCE_REBUILD_VENVS=true" in told[0].fix
    assert told[1] == found[1]
    assert framed(found, "agentjet") == tuple(found)
    # the driver's own import error (no worker, no submodule package): the catalogue's words
    driver = [replace(found[0], evidence="ModuleNotFoundError: No module named 'datasets'")]
    assert framed(driver, "nemo_rl") == tuple(driver)
    megatron = [replace(found[0], evidence="ModuleNotFoundError: No module named 'megatron'")]
    assert framed(megatron, "nemo_rl")[0].fix == WORKER_VENV_FIX
    nccl = diagnose_text("torch.distributed.DistBackendError: NCCL error in x\n")
    assert "AgentJet's documented fix" in nccl[0].fix
    assert "NeMo-RL applies itself" in framed(nccl, "nemo_rl")[0].fix


def test_a_nemo_runs_failure_is_told_in_nemo_rls_words(daemon_env: Env) -> None:
    """Through the daemon, a NeMo-RL run whose worker cannot import `nemo_automodel` (the
    walk's excerpt) fails with NeMo-RL's fix in its reason and diagnosis, no noise finding; one
    out of GPU memory with no `allow_fixes` is told NeMo-RL's keys, not AgentJet's."""
    env = daemon_env
    bp = _nemo_blueprint(env, "nemo_imp", f"fake.fail_with={ACTOR_IMPORT}")
    status = env.wait_done(env.submit(bp))
    assert status["status"] == "failed" and status["trials"] == 1, status
    kinds = [f["kind"] for f in status["diagnosis"]]
    assert kinds == ["import_error", "ray_worker_died"], status["diagnosis"]
    assert status["diagnosis"][0]["fix"] == WORKER_VENV_FIX
    assert "import_error is fatal, not retried: As NeMo-RL's README" in status["reason"]
    assert "NRL_FORCE_REBUILD_VENVS=true" in status["reason"]
    config = "examples/configs/grpo_oom.yaml"
    command = f"python examples/run_grpo.py --config {config} grpo.max_num_steps=4"
    bp = env.blueprint("nemo_oom_no", config=config, command=command)
    status = env.wait_done(env.submit(bp))
    assert status["status"] == "failed", status
    assert status["reason"].endswith(
        "cuda_oom: no science fix allowed; to let ajetd try one, add [ajetd] allow_fixes for "
        "one of NeMo-RL's: train_mb_tokens, logprob_mb_tokens, train_micro_batch_size, "
        "logprob_batch_size, gpu_memory_utilization"
    ), status["reason"]


def test_srun_labels_are_read_through() -> None:
    """Walk 83: under `srun --label` every line is `0: ...`, and the reader found no record
    (`metrics {}`, the reason saying no validation record was written) though the log held
    `• Accuracy:` blocks; it reads under the label as diagnosis does."""
    text = (FIXTURES / "sample_grpo_stdout.log").read_text()
    plain = nemorl.feed(NemoRead(), text)
    labelled = "".join(f"0: {line}" for line in text.splitlines(keepends=True))
    assert plain[1] and nemorl.feed(NemoRead(), labelled) == plain
    wide = "".join(f" 3: {line}" for line in text.splitlines(keepends=True))
    assert nemorl.feed(NemoRead(), wide)[1] == plain[1]


def test_lint_checks_a_nemo_runs_gpus_and_validation_period_as_agentjets(env: Env) -> None:
    """Walk 86, F10: `cluster.gpus_per_node=8 cluster.num_nodes=2` under `gpus: 2` passed lint
    (AgentJet's `n_gpus_per_node × nnodes` is a problem), and `grpo.val_period=0`, a run that
    never validates, got no warning. The command's overrides count, as NeMo-RL reads them."""
    command = (
        "python examples/run_grpo.py --config examples/configs/grpo_fake.yaml "
        "cluster.gpus_per_node=8 cluster.num_nodes=2 grpo.val_period=0"
    )
    bp = env.blueprint(
        "n16", config="examples/configs/grpo_fake.yaml", command=command, ajetd="gpus: 2"
    )
    said = env.cli("lint", str(bp))
    assert said.returncode == 2, said.stdout
    assert (
        "cluster.gpus_per_node × cluster.num_nodes = 8 × 2 = 16 GPUs (the command's overrides "
        "counted), but [ajetd] gpus gives the run 2"
    ) in said.stdout + said.stderr
    fits = env.blueprint(
        "n1",
        config="examples/configs/grpo_fake.yaml",
        command=command.replace("=8 cluster.num_nodes=2", "=0"),
        ajetd="gpus: 0",
    )
    warned = env.cli("lint", str(fits))
    assert "gpus_per_node × " not in warned.stdout + warned.stderr
    assert "grpo.val_period = 0 (≤ 0): NeMo-RL would never validate" in warned.stdout, warned
    # walk 89: its overrides are on the command line, not "in a copy beside the original"
    assert "config change (on the command line): NeMo-RL override ++" in warned.stdout, warned
    assert "in a copy beside the original" not in warned.stdout


def _with_cluster(env: Env, name: str, cluster: str, defaults: str = "") -> str:
    """configs/<name>.yaml under examples/: grpo_fake.yaml with `cluster:` as given (or, with
    `defaults`, a recipe that names its parent and holds no `cluster:` of its own)."""
    folder = env.codebase / "examples" / "configs"
    text = (folder / "grpo_fake.yaml").read_text()
    text = text.split("cluster:")[0] + (f"cluster: {cluster}\n" if cluster else "")
    if defaults:
        text = f"defaults: {defaults}\ngrpo:\n  val_period: 5\n"
    (folder / f"{name}.yaml").write_text(text)
    return f"examples/configs/{name}.yaml"


@pytest.mark.parametrize(
    ("cluster", "extra", "gpus", "said"),
    [  # walk97 F1: each shape of a NeMo-RL GPU ask, against each form of `[ajetd] gpus`
        ("{gpus_per_node: 1, num_nodes: 1}", "", "0", "1 × 1 = 1 GPUs"),
        ("{gpus_per_node: 1}", "", "0", "1 × 1 = 1 GPUs"),
        ("{gpus_per_node: 0}", "cluster.gpus_per_node=8", "0", "8 × 1 = 8 GPUs"),
        ("{gpus_per_node: 0}", "++cluster.gpus_per_node=2 'cluster.num_nodes=2'", "[0,1]", "2 × 2"),
        ("{gpus_per_node: 4, num_nodes: 2}", "", "2", "4 × 2 = 8 GPUs"),
        ("{gpus_per_node: 1}", "cluster.gpus_per_node=0", "1", "0 × 1 = 0 GPUs"),
        ("parent", "", "0", "1 × 1 = 1 GPUs"),  # the ask only its `defaults:` parent makes
    ],
)
def test_a_nemo_gpu_ask_is_judged_as_agentjets_gpus_0_included(
    env: Env, cluster: str, extra: str, gpus: str, said: str
) -> None:
    """Walk97 F1: a NeMo-RL config asking for 1 GPU under `[ajetd] gpus: 0` passed lint and
    admission and ran with no GPU visible (a real run's placement groups wait for ever),
    while AgentJet's same mismatch was refused: one check now judges both, `gpus: 0`
    included, the command's overrides and the config's `defaults:` parent counted."""
    if cluster == "parent":
        _with_cluster(env, "parent", "{gpus_per_node: 1, num_nodes: 1}")
        config = _with_cluster(env, "recipe", "", defaults="parent.yaml")
    else:
        config = _with_cluster(env, "asks", cluster)
    command = f"python examples/run_grpo.py --config {config} grpo.max_num_steps=4 {extra}"
    bp = env.blueprint("asks", config=config, command=command, ajetd=f"gpus: {gpus}")
    out = env.cli("lint", str(bp))
    text = out.stdout + out.stderr
    assert out.returncode == 2, text
    assert f"cluster.gpus_per_node × cluster.num_nodes = {said}" in text, text
    given = len(gpus.strip("[]").split(",")) if gpus.startswith("[") else int(gpus)
    assert f"but [ajetd] gpus gives the run {given}" in text, text


def test_a_gpu_mismatch_reads_alike_for_both_frameworks(env: Env) -> None:
    """The same mistake, said the same way, AgentJet's and NeMo-RL's; and a config that
    agrees passes for both."""
    nemo = _with_cluster(env, "one", "{gpus_per_node: 1, num_nodes: 1}")
    ajet = env.config("one")
    path = env.codebase / ajet
    path.write_text(
        path.read_text().replace("test_freq: 2", "test_freq: 2\n    n_gpus_per_node: 1")
    )
    launch = f"python examples/run_grpo.py --config {nemo} grpo.max_num_steps=4"
    said = {}
    for name, config, command in (("nemo", nemo, launch), ("ajet", ajet, None)):
        for gpus, code in (("0", 2), ("1", 0), ("[3]", 0)):
            kw = {"command": command} if command else {}
            bp = env.blueprint(f"{name}{code}", config=config, ajetd=f"gpus: {gpus}", **kw)
            env.fake_gpus(4)
            out = env.cli("lint", str(bp))
            assert out.returncode == code, (name, gpus, out.stdout + out.stderr)
            if code:
                said[name] = out.stdout + out.stderr
    for text in said.values():
        assert "= 1 GPUs" in text and "but [ajetd] gpus gives the run 0 (CPU only" in text, text
        assert "make them agree (set `[ajetd] gpus: 1`" in text, text
    # `gpus: all` is judged on the GPUs this machine has, in the framework's own keys
    env.fake_gpus(2)
    four = _with_cluster(env, "four", "{gpus_per_node: 4}")
    launch = f"python examples/run_grpo.py --config {four} grpo.max_num_steps=4"
    out = env.cli("lint", str(env.blueprint("all", config=four, command=launch, ajetd="gpus: all")))
    assert out.returncode == 2, out.stdout + out.stderr
    said = out.stdout + out.stderr
    assert "cluster.gpus_per_node x cluster.num_nodes = 4, but the run gets 2" in said, said


def test_a_nemo_run_with_gpus_0_is_refused_by_the_daemon(daemon_env: Env) -> None:
    """Walk97 F1 end to end: admission refuses it (it was admitted and ran CPU-only)."""
    env = daemon_env
    config = _with_cluster(env, "gpu1", "{gpus_per_node: 1, num_nodes: 1}")
    command = f"python examples/run_grpo.py --config {config} grpo.max_num_steps=4"
    run_id = env.submit(env.blueprint("gpu1", config=config, command=command, ajetd="gpus: 0"))
    status = env.wait_done(run_id)
    assert status["status"] == "rejected", status
    assert "1 × 1 = 1 GPUs" in status["reason"] and "gives the run 0" in status["reason"]
    assert not env.launches()


def test_a_nemo_override_is_read_as_hydra_takes_it() -> None:
    from ajetd.frameworks.gpuask import gpu_ask, gpu_problem
    from ajetd.frameworks.nemorl import override, validation_review

    command = "python run_grpo.py --config c.yaml ++grpo.val_period=5 'cluster.num_nodes=2'"
    assert override(command, "grpo.val_period") == "5"
    assert override(command, "cluster.num_nodes") == "2"
    assert override(command, "cluster.gpus_per_node") is None
    config = {"cluster": {"gpus_per_node": 4}, "grpo": {"val_period": 10, "max_num_steps": 6}}
    alone = "python run_grpo.py"
    assert gpu_problem(gpu_ask(config, alone), "4") is None
    assert "past grpo.max_num_steps (6)" in validation_review(config, alone)[0]
    problem = gpu_problem(gpu_ask(config, command), "[0,1,2,3]")
    assert problem and "4 × 2 = 8 GPUs" in problem and validation_review(config, command) == []
    assert gpu_problem(gpu_ask(config, command), "all") is None
