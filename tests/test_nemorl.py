"""NeMo-RL runs: the formats of the fixture log, and the whole loop with a fake launcher
that prints them (metrics read, normal end, save-by timeout, its own checkpoint dir)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import yaml

from ajetd.core.runparts import NemoRead
from ajetd.frameworks import nemorl
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


def test_loss_datasets_and_timeout() -> None:
    text = (
        "========================= Step 7/100 =========================\n"
        "📊 Validation Results for math:\n    • Validation loss: 0.8123\n\n"
        "📊 Validation Results for code:\n    • Validation loss: 1.25\n"
        "Timeout has been reached, stopping training early\n"
    )
    _, records = nemorl.feed(NemoRead(), text)
    assert records == [
        {"step": 7, "global_steps": 7, "math/val_loss": 0.8123},
        {"step": 7, "global_steps": 7, "code/val_loss": 1.25},
    ]
    assert nemorl.ending(text) == "timeout"


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
    assert "| step | accuracy |" in results and "| 6 | 0.4200 |" in results
    assert "- **accuracy**: first 0.3400, best 0.4200 (step 6), last 0.4200" in results


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
