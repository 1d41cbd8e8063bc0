"""NeMo-RL's Hydra overrides checked against its config (walk97b F4): a key the config lacks
(`grpo.max_num_step=6`) or a word with no `=` fails in Hydra at once (struct mode), so lint
and admission refuse the blueprint, and `campaign FOLDER` / `campaign add` refuse the
experiment, before an attempt is spent; Hydra's own fix (`To append to your config use
+...`) is said. Hydra's rules: `+key=` appends (refused where the key is there), `++key=`
forces, `~key` deletes (refused where it is not)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ajetd.frameworks import nemorl
from conftest import FAKE_GRPO_COMMAND as COMMAND
from conftest import FAKE_GRPO_CONFIG as CONFIG
from conftest import Env, campaign_folder_of


def test_overrides_are_taken_in_order_as_hydra_takes_them() -> None:
    config = {"grpo": {"max_num_steps": 4, "val_period": 2}, "policy": {"lr": [1, 2]}}
    assert nemorl.override_problems(config, ["grpo.max_num_steps=6", "++grpo.new=1"]) == []
    assert nemorl.override_problems(config, ["+a.b=1", "a.b=2", "~grpo.val_period"]) == []
    assert nemorl.override_problems(config, ["policy.lr.0=3"]) == []  # through a list: Hydra's
    [typo] = nemorl.override_problems(config, ["grpo.max_num_step=6"])
    assert "did you mean 'max_num_steps'" in typo, typo
    assert typo.endswith("To append to your config use +grpo.max_num_step=6"), typo
    [bare] = nemorl.override_problems(config, ["grpo.max_num_steps"])
    assert "is not key=value" in bare and "OverrideParseException" in bare, bare
    [twice] = nemorl.override_problems(config, ["+grpo.max_num_steps=6"])
    assert "already has 'grpo.max_num_steps'" in twice and "++grpo.max_num_steps=6" in twice
    [gone] = nemorl.override_problems(config, ["~grpo.val_period", "grpo.val_period=3"])
    assert "no key 'grpo.val_period'" in gone, gone
    [top] = nemorl.override_problems(config, ["polcy.lr=1"])
    assert "no key 'polcy'" in top and "did you mean 'policy'" in top, top
    assert nemorl.hydra_arguments(f"{COMMAND} '+x=1' > out.log 2>&1") == [
        "grpo.max_num_steps=2",
        "grpo.val_period=2",
        "+x=1",
    ]


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ("grpo.max_num_step=6", "To append to your config use +grpo.max_num_step=6"),
        ("grpo.max_num_steps", "OverrideParseException"),
        ("+grpo.val_period=1", "Could not append to config"),
        ("~grpo.no_such_key", "no key 'grpo.no_such_key'"),
        ("+grpo.max_num_step=6", None),
        ("++grpo.max_num_steps=6", None),
        ("fake.flat=1", None),  # the fake's own switches are keys of its config
    ],
)
def test_lint_refuses_an_override_hydra_refuses(env: Env, extra: str, needle: str | None) -> None:
    path = env.blueprint("hydra", config=CONFIG, command=f"{COMMAND} {extra}")
    out = env.cli("lint", str(path), "--json")
    problems = json.loads(out.stdout)["problems"]
    if needle is None:
        assert out.returncode == 0, problems
        return
    assert out.returncode == 2
    [said] = [p for p in problems if p.startswith("exp_launch_command: override ")]
    assert needle in said, said


def _folder(env: Env, name: str, experiments: str) -> Path:
    """The fake NeMo-RL's campaign on accuracy, no branches, `experiments` its list."""
    tail = "branch_prefix: false\nstop: {max_experiments: 4}\n" + experiments
    return campaign_folder_of(env, name, "metric: accuracy\n", tail)


def test_a_campaign_refuses_an_override_hydra_refuses(daemon_env: Env) -> None:
    env = daemon_env
    bad = _folder(
        env,
        "typo",
        "experiments:\n  - {name: longer, description: d, overrides: [grpo.max_num_step=6]}\n",
    )
    refused = env.cli("campaign", str(bad))
    assert refused.returncode == 2, refused.stdout
    assert "experiments[1] (longer): override 'grpo.max_num_step=6'" in refused.stderr
    assert "To append to your config use +grpo.max_num_step=6" in refused.stderr
    good = _folder(env, "good", "")
    out = env.cli("campaign", str(good))
    assert out.returncode == 0, out.stderr
    cid = out.stdout.strip()
    args = ("--name", "lr", "--description", "d", "--overrides")
    added = env.cli("campaign", "add", cid, *args, "grpo.max_num_step=6")
    assert added.returncode == 2, (added.stdout, added.stderr)
    assert "To append to your config use +grpo.max_num_step=6" in added.stderr, added.stderr
    status = json.loads(env.cli("campaign", "status", cid, "--json").stdout)
    assert all(r["name"] != "lr" for r in status["rows"] + status["planned"]), status
    fine = env.cli("campaign", "add", cid, *args, "++grpo.max_num_step=6", "grpo.val_period=1")
    assert fine.returncode == 0, fine.stderr
