"""Every printed or written metric shape in tests/data/metric_shapes/ (one file a shape, its
first line naming where it comes from: a NeMo-RL release's print call, a real pasted log, an
AgentJet layout) fed to the reader the daemon uses, with the values a person reads in it.

The expectations were written before the reader was run on the corpus (docs/benchmarks.md,
"Metric shapes": how many were read right then). A NeMo-RL record is `nemorl.feed` then
`nemorl.add_records`, as `daemon.trials._read_nemo_log` reads a trial's output, that output
ending in the line ajetd's trial script prints as the program exits (`trialscript.exit_line`);
an AgentJet val file is `valresults.parse_val_text`; an AgentJet run's output (`ajout_*`, verl's
lines in it) is `ajetout.feed` then `ajetout.add_records`, as `daemon.trials` reads it while the
run's val file holds no record."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.core.runparts import NemoRead, OutRead
from ajetd.core.trialscript import exit_line
from ajetd.frameworks import ajetout, nemorl
from ajetd.frameworks.valresults import parse_val_text
from conftest import Env

SHAPES = Path(__file__).parent / "data" / "metric_shapes"

# file -> (records: each the keys it must hold with their values, the run's step read from
# the headers (None: none), how the program said it ended)
NEMO: dict[str, tuple[list[dict[str, Any]], int | None, str | None]] = {
    "nemorl_v0.1_grpo_no_epoch.log": (
        [{"step": 2, "accuracy": 0.3125, "average_response_length": 412.3}],
        2,
        None,
    ),
    "nemorl_v0.1_sft_val_loss.log": ([{"step": 3, "val_loss": 1.2345}], 3, None),
    "nemorl_v0.2_dpo_loss_and_accuracy.log": (
        [
            {"step": 2, "val_loss": 0.6931, "validation_accuracy": 0.5},
            {"step": 4, "val_loss": 0.6012, "validation_accuracy": 0.625},
        ],
        4,
        "max_steps",
    ),
    "nemorl_v0.2_eval_score_2dp.log": ([{"step": 0, "score": 0.45}], None, None),
    "nemorl_v0.3_eval_score_4dp.log": ([{"step": 0, "score": 0.4492}], None, None),
    "nemorl_v0.4_grpo_epochs.log": (
        [{"step": 2, "accuracy": 0.3}, {"step": 4, "accuracy": 0.35}],
        4,
        None,
    ),
    "nemorl_v0.4_dpo_named_sets.log": (
        [
            {
                "step": 2,
                "validation_default_loss": 0.6645,
                "validation_default_accuracy": 0.75,
                "validation_helpsteer_loss": 0.68,
                "validation_helpsteer_accuracy": 0.625,
            }
        ],
        2,
        None,
    ),
    "nemorl_v0.4_rm_num_valid.log": (
        [
            {
                "step": 5,
                "validation_default_loss": 0.5012,
                "validation_default_accuracy": 0.75,
                "validation_default_num_valid_samples": 128,
            }
        ],
        5,
        None,
    ),
    "nemorl_val_at_start.log": ([{"step": 0, "accuracy": 0.125}], 1, None),
    "nemorl_v0.7_ppo_inner_steps.log": ([{"step": 2, "accuracy": 0.4}], 2, "max_steps"),
    "nemorl_main_efficiency_summary.log": ([], 5, None),
    "nemorl_v0.7_ppo_training_na.log": ([], 3, None),
    "nemorl_main_single_controller.log": ([], 3, None),
    "nemorl_main_early_stop.log": ([{"step": 20, "accuracy": 0.8125}], 20, "early_stop"),
    "real_issue762_sft.log": ([], 9, None),
    "real_nemo_platform901_dpo.log": (
        [
            {
                "step": 2,
                "validation_default_loss": 0.6645,
                "validation_default_sft_loss": 0.0,
                "validation_default_preference_loss": 0.6645,
                "validation_default_accuracy": 1.0,
                "validation_default_rewards_chosen_mean": 0.7755,
            }
        ],
        2,
        None,
    ),
    "real_nemo_platform943_dpo.log": (
        [
            {
                "step": 2,
                "validation_default_loss": 0.6645,
                "validation_default_rewards_rejected_mean": -0.3986,
                "validation_default_num_valid_samples": 16.0,
                "validation_default_global_valid_toks": 496.0,
            }
        ],
        2,
        None,
    ),
    "transport_skypilot_named_task.log": ([{"step": 8, "accuracy": 0.5625}], 8, "max_steps"),
    "transport_skypilot_unnamed_task.log": ([{"step": 8, "accuracy": 0.5625}], 8, "max_steps"),
    "transport_skypilot_node_head_rank.log": ([{"step": 8, "accuracy": 0.5625}], 8, "max_steps"),
    "transport_kubectl_timestamps.log": ([{"step": 10, "accuracy": 0.4219}], 10, None),
    "transport_crlf.log": ([{"step": 4, "accuracy": 0.375}], 4, None),
    "transport_srun_label.log": ([{"step": 6, "accuracy": 0.5}], 6, "max_steps"),
    "transport_ascii_replace.log": ([{"step": 3, "accuracy": 0.25}], 3, None),
}
# a run judged by a `train:` metric (`nemorl.feed(train=True)`): the same shapes give each
# step's training metrics too, under NeMo-RL's names with `train_` before them
TRAIN: dict[str, list[dict[str, Any]]] = {
    "nemorl_v0.1_grpo_no_epoch.log": [
        {"step": 1, "train_loss": 0.0123, "train_reward": 0.25},
        {"step": 2, "accuracy": 0.3125, "train_loss": 0.0119, "train_reward": 0.2812},
    ],
    "real_nemo_platform943_dpo.log": [
        {
            "step": 2,
            "validation_default_loss": 0.6645,
            "train_loss": 0.6931,
            "train_sft_loss": 0.0,
            "train_accuracy": 0.0,
            "train_global_valid_toks": 992.0,
        }
    ],
    "nemorl_main_single_controller.log": [
        {"step": 1, "train_loss": 0.0123, "train_reward": 0.25, "train_global_valid_toks": 51200},
        {"step": 2, "train_loss": 0.0119, "train_reward": 0.3125},
        {"step": 3, "train_loss": 0.0110, "train_reward": 0.375},
    ],
    "nemorl_v0.7_ppo_training_na.log": [
        {
            "step": 3,
            "train_loss": 0.1234,
            "train_critic_lr": 1e-06,
            "train_critic_clip_frac": 0.01,
            "train_reward": 0.5,
            "train_mean_gen_tokens_per_sample": 210.0,
        }
    ],
    "nemorl_v0.4_grpo_epochs.log": [{"step": 2, "accuracy": 0.3}, {"step": 4, "accuracy": 0.35}],
}

# keys no record may hold: a training or timing bullet read as a validation metric
NOT_VALIDATION = {
    "loss",
    "num_valid_samples",
    "global_valid_toks",
    "total_validation_time",
    "total_step_time",
}

AGENTJET: dict[str, list[dict[str, Any]]] = {
    "agentjet_classic_numpy1.md": [
        {"global_steps": 0, "task_pass_rate@1": 0.6186, "mean_reward": 0.6186},
        {"global_steps": 20, "task_pass_rate@1": 0.7325, "mean_reward": 0.7325},
    ],
    "agentjet_classic_numpy2_global_first.md": [
        {"global_steps": 10, "task_pass_rate@1": 0.5, "mean_reward": 0.55, "pass_n": 4}
    ],
    "agentjet_swarm_bullets_percent.md": [
        {"global_steps": 0, "task_pass_rate@1": 0.3333, "mean_reward": 0.4386},
        {"global_steps": 10, "task_pass_rate@1": 0.2632, "mean_reward": 0.3596},
    ],
    "agentjet_swarm_step_label.md": [
        {"global_steps": 5, "dataset": "aime", "task_pass_rate@1": 0.2, "mean_reward": 0.2},
        {"global_steps": 5, "dataset": "gsm8k", "task_pass_rate@1": 0.8, "mean_reward": 0.8},
    ],
}

# an AgentJet run's output (and verl's lines in it), read while its val file holds no record:
# each record's keys with their values (None: a key it must not hold)
AJOUT: dict[str, list[dict[str, Any]]] = {
    "ajout_table_tgc_initial.log": [
        {
            "target dataset name": "main_val_dataset",
            "TGC@1": 0.6187,
            "mean_reward": 0.6187,
            "num_all_success_tasks": 256,
            "num_pass_n_tasks(pass@4)": 1265,
            "global_steps": None,
        }
    ],
    "ajout_table_global_steps_final.log": [
        {
            "global_steps": 0,
            "mean_reward": 0.6187,
            "std_reward": 0.4857,
            "task_pass_rate@4-all-pass": 0.2475,
            "target_dataset_name": "main_val_dataset",
        },
        {"global_steps": 20, "mean_reward": 0.7326, "task_pass_rate@2": 0.9326},
    ],
    "ajout_console_logger_agentjet.log": [
        {"global_steps": 2, "mean_reward": 0.7, "TGC@1": 0.7, "actor/entropy": None}
    ],
    "ajout_verl_numpy2_pformat.log": [
        {
            "global_steps": 0,
            "val-core/openai/gsm8k/reward/mean@1": 0.25,
            "val-aux/num_turns/min": 2,
        },
        {"global_steps": 5, "val-core/openai/gsm8k/reward/mean@1": 0.375, "actor/entropy": None},
    ],
    "ajout_verl_3dp_old.log": [
        {"global_steps": 0, "val/test_score/openai/gsm8k": 0.1327},
        {"global_steps": 2, "val/test_score/openai/gsm8k": 0.412, "actor/pg_loss": None},
    ],
    "ajout_transport_kubectl_crlf.log": [{"TGC@1": 0.6187, "mean_reward": 0.6187}],
    "ajout_table_interleaved.log": [
        {"global_steps": 10, "mean_reward": 0.5, "num_all_success_tasks": 263}
    ],
    "ajout_runtime_env_table.log": [],
    "ajout_table_cut_ellipsis.log": [
        {
            "TGC@1": 0.6187,
            "mean_reward": 0.6187,
            "total_tasks": 1319,
            "num_all_success_tasks": 256,  # (fits its column here)
            "num_pass_n_tasks(pass@4)": None,  # cut: `num_pass_n_tasks(pas…`
            "eval_tool_stats/tool_success_rate": None,
        }
    ],
    "real_verl_initial_wrapped.log": [{"global_steps": 0, "val/test_score/openai/gsm8k": 0.1327}],
}


def shape_text(name: str) -> str:
    """The shape's text without its first line (the comment naming its source)."""
    raw = (SHAPES / name).read_bytes().decode("utf-8")
    return raw[raw.index("\n") + 1 :]


def read_nemo(text: str) -> tuple[NemoRead, list[dict[str, Any]]]:
    """What the daemon reads from a trial's whole output: its records, as it joins them."""
    state, found = nemorl.feed(NemoRead(), text + _EXIT)
    return state, [dict(r) for r in nemorl.add_records((), found)]


_EXIT = exit_line(1).decode() + "0\n"  # the trial's last line


def _matches(got: list[dict[str, Any]], wanted: list[dict[str, Any]]) -> bool:
    if len(got) != len(wanted):
        return False
    for rec, want in zip(got, wanted, strict=True):
        for key, value in want.items():
            have = rec.get(key)
            if isinstance(value, float) and isinstance(have, (int, float)):
                if abs(have - value) > 1e-4:
                    return False
            elif have != value:
                return False
    return True


def test_the_corpus_is_what_the_expectations_name() -> None:
    """Each file in the corpus has its expectation (and names its source), none is left out."""
    files = {p.name for p in SHAPES.iterdir()}
    assert files == set(NEMO) | set(AGENTJET) | set(AJOUT)
    for name in files:
        assert (SHAPES / name).read_text(encoding="utf-8").startswith("# source: ")


@pytest.mark.parametrize("name", sorted(NEMO))
def test_each_nemo_rl_shape_is_read_as_printed(name: str) -> None:
    records, step, end = NEMO[name]
    text = shape_text(name)
    state, got = read_nemo(text)
    assert _matches(got, records), got
    assert not any(NOT_VALIDATION & set(r) for r in got), got
    assert state.step == step
    assert nemorl.ending(text) == end


@pytest.mark.parametrize("name", sorted(NEMO))
def test_a_shape_read_line_by_line_gives_the_same_records(name: str) -> None:
    """The daemon reads whatever complete lines are new at each check: one line at a time
    gives what the whole output gives."""
    text = shape_text(name)
    state, found = NemoRead(), []
    for line in (text + _EXIT).splitlines(keepends=True):
        state, more = nemorl.feed(state, line)
        found += more
    _whole_state, whole = read_nemo(text)
    assert [dict(r) for r in nemorl.add_records((), found)] == whole


@pytest.mark.parametrize("name", sorted(TRAIN))
def test_a_run_judged_by_a_train_metric_reads_each_steps_training_metrics(name: str) -> None:
    """`checkpointing.metric_name: train:loss` (NeMo-RL since v0.4; the single controller
    takes nothing else): its records are each step's training metrics, a validation's joined
    to its step's; no timing bullet, no `N/A`, is read as one."""
    state, found = nemorl.feed(NemoRead(), shape_text(name) + _EXIT, train=True)
    got = [dict(r) for r in nemorl.add_records((), found)]
    assert _matches(got, TRAIN[name]), got
    timing = {"train_total_step_time", "train_critic_loss", "train_critic_grad_norm"}
    assert not any(timing & set(r) for r in got), got
    assert state == nemorl.feed(NemoRead(), shape_text(name) + _EXIT)[0]


@pytest.mark.parametrize("name", sorted(AGENTJET))
def test_each_agentjet_shape_is_read_as_written(name: str) -> None:
    got = parse_val_text(shape_text(name))
    assert _matches(got, AGENTJET[name]), got


def read_ajout(text: str) -> list[dict[str, Any]]:
    """What the daemon reads from an AgentJet run's whole output: its records, as joined."""
    _state, found = ajetout.feed(OutRead(), text)
    return [dict(r) for r in ajetout.add_records((), found)]


@pytest.mark.parametrize("name", sorted(AJOUT))
def test_each_agentjet_output_shape_is_read_as_printed(name: str) -> None:
    got = read_ajout(shape_text(name))
    assert _matches(got, AJOUT[name]), got


@pytest.mark.parametrize("name", sorted(AJOUT))
def test_an_output_shape_read_line_by_line_gives_the_same_records(name: str) -> None:
    """The daemon reads whatever complete lines are new at each check: a table, pprint's
    wrapped text, cut between reads, gives what the whole output gives."""
    text = shape_text(name)
    state, found = OutRead(), []
    for line in text.splitlines(keepends=True):
        state, more = ajetout.feed(state, line)
        found += more
    assert [dict(r) for r in ajetout.add_records((), found)] == read_ajout(text)


@pytest.mark.parametrize(
    ("metric_name", "expected"),
    [
        ("val_reward", ("accuracy", True)),  # GRPO before v0.4
        ("val_loss", ("val_loss", False)),  # SFT, DPO before v0.4
        ("val:accuracy", ("accuracy", True)),
        ("val:val_loss", ("val_loss", False)),
        ("val:validation-default_loss", ("validation_default_loss", False)),
        ("train:loss", ("train_loss", False)),  # never the validation loss
        ("train:reward", ("train_reward", True)),
        ("train:critic/loss", ("train_critic_loss", False)),
    ],
)
def test_each_metric_name_form_names_the_metric_its_run_is_judged_by(
    metric_name: str, expected: tuple[str, bool]
) -> None:
    config = {"checkpointing": {"metric_name": metric_name}}
    assert nemorl.primary_metric(config) == expected


@pytest.mark.parametrize(
    ("config", "command", "expected"),
    [
        ({"metric_name": "val:accuracy"}, "checkpointing.metric_name=val:val_loss", "val_loss"),
        ({"metric_name": "val:accuracy"}, "++checkpointing.metric_name='train:loss'", "train_loss"),
        ({}, "+checkpointing.metric_name=val_reward", "accuracy"),
        ({"metric_name": "val:val_loss"}, "checkpointing.metric_name=null", "val_loss"),
    ],
)
def test_the_commands_own_metric_name_wins_over_the_config(
    config: dict[str, Any], command: str, expected: str
) -> None:
    """Hydra takes the command's `checkpointing.metric_name=` (and `higher_is_better=`) over
    the config file's: the run is judged by the metric it checkpoints by."""
    launch = f"uv run examples/run_sft.py --config c.yaml {command}"
    assert nemorl.primary_metric({"sft": {}, "checkpointing": config}, launch)[0] == expected
    flipped = f"{launch} checkpointing.higher_is_better=True"
    assert nemorl.primary_metric({"sft": {}, "checkpointing": config}, flipped)[1] is True
    null = {"sft": {}, "checkpointing": {**config, "higher_is_better": None}}
    assert nemorl.primary_metric(null, launch)[1] is False  # NeMo-RL sorts by a falsy one
    for word, higher in (("0", False), ("1", True), ("0.0", False)):  # numbers, as Hydra
        said = f"{launch} checkpointing.higher_is_better={word}"  # reads them (review92 #4)
        assert nemorl.primary_metric({"sft": {}, "checkpointing": config}, said)[1] is higher


def test_the_shapes_through_the_daemon_give_the_runs_metrics(daemon_env: Env) -> None:
    """End to end: a fake NeMo-RL program prints a shape (`fake.replay=`) and exits 0;
    `ajetd status --json` shows the metrics of the last record read (a run whose command
    sets `checkpointing.metric_name=train:loss`: its last step's training metrics)."""
    env = daemon_env
    cases = {
        "plat": ("real_nemo_platform901_dpo.log", "", "validation_default_loss", 0.6645),
        "asci": ("transport_ascii_replace.log", "", "accuracy", 0.25),
        "kube": ("transport_kubectl_timestamps.log", "", "accuracy", 0.4219),
        "skyt": ("transport_skypilot_named_task.log", "", "accuracy", 0.5625),
        "trn": (
            "nemorl_v0.1_grpo_no_epoch.log",
            "checkpointing.metric_name=train:loss",
            "train_loss",
            0.0119,
        ),
    }
    runs = {}
    for run_name, (shape, extra, _key, _value) in cases.items():
        command = (
            "python examples/run_grpo.py --config examples/configs/grpo_fake.yaml "
            f"fake.replay={SHAPES / shape} {extra}"
        )
        bp = env.blueprint(run_name, config="examples/configs/grpo_fake.yaml", command=command)
        runs[run_name] = env.submit(bp)
    for run_name, (_shape, _extra, key, value) in cases.items():
        status = env.wait_done(runs[run_name])
        assert abs(status["metrics"].get(key, -1) - value) < 1e-6, (run_name, status)
    trained = env.status(runs["trn"])
    assert trained["metrics"]["accuracy"] == 0.3125  # its step's validation, joined


_LINES = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "📊 Validation Results:",
                "? Validation Results:",
                "    ? Accuracy: 0.5",
                "    • Validation accuracy: 0.25",
                "(SingleControllerActor pid=1) train step 3/10  trainer_v=3  lag=0  ",
                "train step 99999999999/1",
                "train step 4/5",
                "📊 Training Results:",
                "  • Loss: 0.25",
                "  • Critic Loss: N/A",
                "(SingleControllerActor pid=1) step_metrics={'loss': 0.5, 'reward': nan}",
                "step_metrics={'loss': " + "1" * 3000 + "}",
                "========================= Step 2/3 =========================",
                "",
            ]
        ),
        st.text(alphabet="?•·train step/0123456789 :.=-()", max_size=80),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_LINES, st.booleans())
def test_any_lines_are_read_without_error_and_the_same_at_any_split(
    lines: list[str], train: bool
) -> None:
    text = "".join(f"{line}\n" for line in lines)
    whole_state, found = nemorl.feed(NemoRead(), text + _EXIT, train)
    whole = [dict(r) for r in nemorl.add_records((), found)]
    half = len(lines) // 2
    first = "".join(f"{line}\n" for line in lines[:half])
    state, found = nemorl.feed(NemoRead(), first, train)
    state, more = nemorl.feed(state, "".join(f"{line}\n" for line in lines[half:]) + _EXIT, train)
    assert [dict(r) for r in nemorl.add_records((), [*found, *more])] == whole
    assert state.step == whole_state.step


def test_lines_of_the_new_shapes_made_hostile_are_read_in_linear_time() -> None:
    """The bullet marks and the single controller's step line run over whatever a program
    prints: a megabyte of marks, of `train step `, of digits, costs no more than reading it."""
    hostile = [
        "?" * 1_000_000,
        "    ? a" + " " * 1_000_000 + "x",
        "â€¢" * 300_000,
        "train step " * 100_000,
        "train step " + "1" * 1_000_000 + "/2 ",
        "(SingleControllerActor pid=1) train step 1/" + "9" * 1_000_000,
        "(" + "a, " * 300_000 + "pid=1) x",
        "(" + "a" * 64 + ", rank=" + "1" * 1_000_000,
        "(task, " + "rank=1, " * 100_000 + "pid=1) x",
    ]
    for line in hostile:
        started = time.process_time()  # its CPU time, whatever runs beside it
        nemorl.feed(NemoRead(), f"📊 Validation Results:\n{line}\n{line}\n")
        assert time.process_time() - started < 1.0, line[:20]


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(["•", "*", "-", "?", "\ufffd", "â€¢", "·", "◦", "▪", "‣", "●", "–"]),
    st.floats(min_value=0, max_value=1, allow_nan=False),
    st.sampled_from(
        [
            "",
            "0: ",
            "(SingleControllerActor pid=7) ",
            "2026-08-23T09:14:01Z ",
            "(train, pid=1504) ",
            "(task, pid=4734) ",
            "(worker1, rank=1, pid=2345, ip=10.0.0.2) ",
            "(node-2, head, rank=0, pid=23862) ",
        ]
    ),
)
def test_any_bullet_mark_a_stream_leaves_gives_the_value(
    mark: str, value: float, dress: str
) -> None:
    """The family of marks a bullet is printed, pasted or re-encoded with, behind any dress
    (srun's label, a Ray actor's prefix, a timestamp, SkyPilot's task prefix)."""
    text = f"{dress}📊 Validation Results:\n{dress}    {mark} Accuracy: {value:.4f}\n{dress}\n"
    _state, got = read_nemo(text)
    assert got == [{"step": 0, "global_steps": 0, "accuracy": round(value, 4)}]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=10**9 - 1), min_size=1, max_size=5))
def test_the_single_controllers_step_line_gives_the_runs_step(steps: list[int]) -> None:
    lines = [
        f"(SingleControllerActor pid=9) train step {n}/{10**9 - 1}  trainer_v={n}  lag=0  "
        for n in steps
    ]
    state, _got = read_nemo("".join(f"{line}\n" for line in lines))
    assert (state.step, state.max_steps) == (steps[-1], 10**9 - 1)
