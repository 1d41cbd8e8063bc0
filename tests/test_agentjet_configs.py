"""YAML preflight over every real AgentJet config in the fixtures: a definite verdict each."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from ajetd.core.copyname import original_of
from ajetd.frameworks.agentjet import (
    apply_patches,
    conf_argument,
    launcher_overrides,
    point_conf_at,
    review,
    runs_launcher,
    validation_interval_warnings,
)
from ajetd.frameworks.gpuask import gpu_ask, gpu_problem

CONFIGS = Path(__file__).parent / "data" / "agentjet" / "configs"
ALL = sorted(p.relative_to(CONFIGS).as_posix() for p in CONFIGS.rglob("*.yaml"))
EXPECTED = {
    "tests/data/config.yaml": ("rejected", "legacy `astuner:`"),
    "tests/bench/benchmark_math/benchmark_math.yaml": ("patched", "execute_test: True → False"),
    "ajet/default_config/verl/verl_default.yaml": ("passes", ""),  # not an `ajet:` config
    "ajet/default_config/ajet_default.yaml": ("patched", "val_before_train → true"),
    "tutorial/example_countdown/countdown.yaml": ("patched", "logger: swanlab → tensorboard"),
}


def _review(rel: str, **kw: object):  # type: ignore[no-untyped-def]
    config = yaml.safe_load((CONFIGS / rel).read_text())
    args = {
        "command": f"python -m ajet.launcher --conf {rel} --autokill",
        "result_dir": "/r",
        "env": {},
        "exists": lambda p: True,
        **kw,
    }
    return review(config, **args)  # type: ignore[arg-type]


@pytest.mark.parametrize("rel", ALL)
def test_every_fixture_config_gets_a_definite_verdict(rel: str) -> None:
    try:
        found = _review(rel)
    except yaml.YAMLError:
        assert "yaml_template" in rel  # the `{{MODEL_PATH}}` templates: not YAML until filled
        return
    assert found.verdict in ("passes", "patched", "rejected")
    assert (found.verdict == "rejected") == bool(found.problems)
    assert len(found.changes) >= len(found.patches)
    if rel in EXPECTED:
        verdict, text = EXPECTED[rel]
        assert found.verdict == verdict
        assert text in " ".join(found.problems + found.changes)
    if found.verdict == "patched":
        fixed = apply_patches(yaml.safe_load((CONFIGS / rel).read_text()), found.patches)
        assert (
            review(
                fixed,
                command="x --conf a/b.yaml",
                result_dir="/r",
                env={},
                exists=lambda p: True,
            ).verdict
            == "passes"
        )


def test_missing_model_path_and_gpu_count_are_rejected() -> None:
    found = _review("tests/bench/benchmark_math/benchmark_math.yaml", exists=lambda p: False)
    assert any("ajet.model.path" in p and "does not exist" in p for p in found.problems)
    rel = "tests/bench/benchmark_math/benchmark_math.yaml"
    config, command = (
        yaml.safe_load((CONFIGS / rel).read_text()),
        f"python -m ajet.launcher --conf {rel}",
    )
    ask = gpu_ask(config, command)
    problem = gpu_problem(ask, "[0,1]")
    assert problem and "4 GPUs" in problem and "gives the run 2" in problem
    assert gpu_problem(ask, "4") is None


def test_logger_with_key_or_login_is_kept() -> None:
    rel = "tutorial/example_countdown/countdown.yaml"
    assert ("ajet", "trainer_common", "logger") not in _review(
        rel, env={"SWANLAB_API_KEY": "k"}
    ).patches
    assert ("ajet", "trainer_common", "logger") not in _review(
        rel, logged_in=frozenset({"swanlab"})
    ).patches


def test_conf_without_directory_part_and_command_rewrite() -> None:
    found = _review(
        "tests/bench/benchmark_math/benchmark_math.yaml",
        command="python -m ajet.launcher --conf benchmark_math.yaml",
    )
    assert any("needs a directory part" in p for p in found.problems)
    cmd = "python -m ajet.launcher --conf=tests/x.yaml --autokill"
    assert conf_argument(cmd) == "tests/x.yaml"
    assert point_conf_at(cmd, "tests/x.ajetd-abc123.yaml") == (
        "python -m ajet.launcher --conf=tests/x.ajetd-abc123.yaml --autokill"
    )


@pytest.mark.parametrize(
    ("given", "copy", "pointed"),
    [  # the shell expands an unquoted `~/` or `~user/` at a word's start: it stays unquoted
        ("--conf ~/c/x.yaml", "~/c/x.ajetd-1.yaml", "--conf ~/c/x.ajetd-1.yaml"),
        ("--conf ~me/x.yaml", "~me/x.ajetd-1.yaml", "--conf ~me/x.ajetd-1.yaml"),
        # where the user's value was quoted the program got a literal `~`: so does the copy's
        ("--conf '~/c/x.yaml'", "~/c/x.ajetd-1.yaml", "--conf '~/c/x.ajetd-1.yaml'"),
        ("--conf=~/c/x.yaml", "~/c/x.ajetd-1.yaml", "--conf=~/c/x.ajetd-1.yaml"),
    ],
)
def test_a_tilde_in_conf_keeps_its_meaning_in_the_copy(given: str, copy: str, pointed: str) -> None:
    assert point_conf_at(f"python -m ajet.launcher {given} --x", copy) == (
        f"python -m ajet.launcher {pointed} --x"
    )


def test_the_launcher_is_recognised_and_a_folder_named_ajet_is_not() -> None:
    for command in (
        "python -m ajet.launcher --conf a/b.yaml --autokill",
        "source .venv/bin/activate && ajet --conf tutorial/x/y.yaml",
        "SWANLAB_API_KEY=k .venv/bin/ajet --conf a/b.yaml",
        "python ajet/launcher.py --conf a/b.yaml",
    ):
        assert runs_launcher(command), command
    for command in (
        "cd /work/ajet && uv run examples/run_grpo.py --config c.yaml",
        "python -m fakejet.launcher --conf a/b.yaml",
        "x" * 70000 + ";" * 70000,
    ):
        assert not runs_launcher(command), command[:60]


def test_a_logger_list_says_what_it_keeps() -> None:
    """`logger: [swanlab, console]` without a key keeps `console`: the change said
    'swanlab → tensorboard' while the copy said console."""
    config = {"ajet": {"trainer_common": {"logger": ["swanlab", "console"]}}}
    found = review(config, command="x --conf a/b.yaml", result_dir="/r", env={}, exists=bool)
    assert found.patches[("ajet", "trainer_common", "logger")] == "console"
    assert "ajet.trainer_common.logger: swanlab → console (" in " ".join(found.changes)


def test_a_config_copy_names_its_original() -> None:
    assert original_of("tests/bench/x.ajetd-abc123.yaml") == "tests/bench/x.yaml"
    assert original_of("tests/bench/x.ajetd-abc123-t3.yaml") == "tests/bench/x.yaml"
    assert original_of("/a/b/x.yaml") == "/a/b/x.yaml"


@pytest.mark.parametrize(
    ("given", "value"),
    [  # the value as bash passes it to the program, whatever the quoting
        ('--conf "configs/my cfg.yaml"', "configs/my cfg.yaml"),
        ("--conf 'configs/my cfg.yaml'", "configs/my cfg.yaml"),
        ("--conf configs/my\\ cfg.yaml", "configs/my cfg.yaml"),
        ('--conf="configs/a"b', "configs/ab"),
        ('--conf "a\\"b\\\\c\\d.yaml"', 'a"b\\c\\d.yaml'),
        ("--conf \\\n    configs/x.yaml", "configs/x.yaml"),  # a continued line
        ("--conf configs/x.yaml;echo hi", "configs/x.yaml"),
        ('--conf "$CONF"', "$CONF"),  # bash's to expand: named as written
    ],
)
def test_a_quoted_conf_is_read_as_bash_passes_it(given: str, value: str) -> None:
    """A walk's `--conf "configs/my cfg.yaml"` was not seen at all: lint said both "passes
    no --conf" and "config change (in a copy)", and the run ran the original unchanged."""
    command = f"python -m ajet.launcher {given} --x"
    assert conf_argument(command) == value
    moved = point_conf_at(command, "configs/my cfg.ajetd-1.yaml")
    assert conf_argument(moved) == "configs/my cfg.ajetd-1.yaml"
    assert moved.endswith(" --x")


@given(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), min_size=1))
def test_any_conf_value_quoted_by_shlex_is_read_back(value: str) -> None:
    """What `shlex.quote` makes of any value (as ajetd itself writes a copy's path) is read
    back to that value, and pointing a command at it round-trips."""
    assert conf_argument(f"ajet --conf {shlex.quote(value)} --y") == value
    assert conf_argument(point_conf_at("ajet --conf x.yaml --y", value)) == value


def test_reading_a_conf_stays_fast_on_a_hostile_command() -> None:
    """Linear: the longest command a blueprint may hold (64 KiB), shaped to make a
    backtracking reader slow (an unclosed quote, runs of quotes and backslashes)."""
    import time

    for tail in ('"' + "a" * 65000, "'a" * 32000, 'a"b' * 21000, "a\\" * 32000, "a" * 65000):
        started = time.process_time()
        conf_argument(f"x --conf {tail}")
        assert time.process_time() - started < 1.0


def test_a_test_freq_past_the_runs_steps_is_warned_of() -> None:
    """The shipped benchmark_math.yaml has test_freq 999999: its only validation is the
    untrained model's (step 0), and results said `best 0.3412 (step 0)` while lint said ok.
    A warning (not a problem) names test_freq and how to set it; a test_freq within the
    run's total_training_steps, or an ordinary one where they are unknown, says nothing."""
    found = _review("tests/bench/benchmark_math/benchmark_math.yaml")
    said = [w for w in found.warnings if "test_freq" in w]
    assert len(said) == 1 and "999999" in said[0], found.warnings
    assert "no validation of the trained model" in said[0]
    assert "set ajet.trainer_common.test_freq to" in said[0]
    assert not any("test_freq" in p for p in found.problems)
    assert not any("test_freq" in w for w in _review(COUNTDOWN).warnings)
    config = yaml.safe_load((CONFIGS / COUNTDOWN).read_text())
    common = config["ajet"].setdefault("trainer_common", {})
    common.update(test_freq=50, total_training_steps=30)
    said = validation_interval_warnings(config["ajet"])
    assert len(said) == 1 and "total_training_steps 30" in said[0], said
    common.update(test_freq=30)
    assert validation_interval_warnings(config["ajet"]) == []


COUNTDOWN = "tests/bench/benchmark_countdown/benchmark_countdown.yaml"


def test_launcher_overrides_are_the_words_argparse_would_refuse() -> None:
    """Hydra-style words after AgentJet's launcher, not an option's value (walk 86)."""
    assert launcher_overrides(
        "python -m ajet.launcher --conf c.yaml a.b=1 ++c.d=2 +e=3; python x.py f=4"
    ) == ["a.b=1", "++c.d=2", "+e=3"]
    for fine in (
        "python -m ajet.launcher --conf a=b.yaml",
        "CUDA_VISIBLE_DEVICES=0 python -m ajet.launcher --conf x.yaml",
        "python -m ajet.launcher --conf x.yaml --kill=a",
        "python train.py a.b=1",
    ):
        assert launcher_overrides(fine) == [], fine
