"""A campaign's metric (walk97b F1): a name the base's program never writes is refused where
the campaign comes in (`ajetd campaign FOLDER`, `ajetd lint FOLDER`), by the check lint gives
a plateau rule's metric; a direction not given follows the name (min for a loss); and a run
that ended well with no value of the metric is a crash row that says so, never `the program
exited with code 0`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ajetd.core import campaignspec as cs
from conftest import Env, campaign_folder, campaign_folder_of, campaign_ledger, wait_for


def _folder(env: Env, name: str, head: str) -> Path:
    """The fake NeMo-RL's campaign of one experiment, `head` its metric and direction."""
    return campaign_folder_of(env, name, head, "stop: {max_experiments: 1}\n")


@pytest.mark.parametrize(
    ("head", "needle"),
    [
        (  # NeMo-RL's own checkpointing.metric_name, which its records name `accuracy`
            "metric: val:accuracy\n",
            "its records name NeMo-RL's val:accuracy 'accuracy': write that",
        ),
        ("metric: mean_reward\n", "'mean_reward' is not a validation key NeMo-RL is known"),
        ("", "(campaign.yaml names no metric: this is the default)"),
        ("metric: val_loss\n", "(known: accuracy, average_response_length)"),  # SFT's, not GRPO's
        ("metric: accuracyy\n", "did you mean 'accuracy'"),
    ],
)
def test_a_metric_the_base_never_writes_is_refused_at_submit_and_in_lint(
    env: Env, head: str, needle: str
) -> None:
    folder = _folder(env, "refused", head)
    linted = env.cli("lint", str(folder), "--json")
    assert linted.returncode == 2, linted.stdout
    [problem] = json.loads(linted.stdout)["problems"]
    assert problem.startswith("metric: ") and needle in problem, problem
    assert "no experiment's run would record a value of it" in problem
    assert "'accuracy' (checkpointing.metric_name)" in problem  # what to write instead
    # lint of its campaign.yaml is lint of its folder; the submit says the same, files nothing
    again = env.cli("lint", str(folder / "campaign.yaml"))
    assert again.returncode == 2 and needle in again.stderr, again.stderr
    submitted = env.cli("campaign", str(folder))
    assert submitted.returncode == 2 and needle in submitted.stderr, submitted.stderr
    inbox = env.home / "inbox"
    assert not inbox.exists() or not list(inbox.iterdir())


def test_a_metric_the_base_writes_passes_and_lint_says_the_direction(env: Env) -> None:
    folder = _folder(env, "good", "metric: accuracy\n")
    linted = env.cli("lint", str(folder))
    assert linted.returncode == 0, linted.stderr
    assert "metric accuracy max (no direction given: min for a loss-like name" in linted.stdout
    data = json.loads(env.cli("lint", str(folder), "--json").stdout)
    assert data["ok"] and data["campaign"]["direction"] == "max", data


@pytest.mark.parametrize(
    ("head", "maximise"),
    [
        ("metric: val_loss\n", False),  # a loss, no direction: minimised (it was maximised)
        ("metric: validation_default_loss\n", False),
        ("metric: accuracy\n", True),
        ("", True),  # mean_reward
        ("metric: val_loss\ndirection: max\n", True),  # given: as given
        ("metric: accuracy\ndirection: min\n", False),
    ],
)
def test_a_direction_not_given_follows_the_metric_name(head: str, maximise: bool) -> None:
    spec = cs.parse_campaign(f"name: c\n{head}base: b.md\nresult_dir: /r\n", {"b.md"})
    assert spec.maximise is maximise
    assert spec.direction_named is ("direction" in head)


def test_a_run_that_ended_well_without_the_metric_says_so(daemon_env: Env) -> None:
    """A base whose program writes no validation record (its own, `true`): the row is a
    crash because no value of the metric was recorded, and says that, not `the program
    exited with code 0`."""
    env = daemon_env
    folder = campaign_folder(env, "novalue", env.tmp / "campaigns" / "novalue")
    out = env.cli("campaign", str(folder))
    assert out.returncode == 0, out.stderr
    cid = out.stdout.strip()
    wait_for(lambda: len(campaign_ledger(env, "novalue")) == 1, timeout=60, what="the row")
    # it completed and found nothing: `wait` says so, exit 3, not 0 (walk97b F6)
    waited = env.cli("campaign", "wait", cid, "--timeout", "60")
    assert waited.returncode == 3, (waited.stdout, waited.stderr)
    assert "no experiment was kept: it found no best (exit 3)" in waited.stdout, waited.stdout
    assert env.cli("wait", cid, "--timeout", "60").returncode == 3
    status = json.loads(env.cli("campaign", "status", cid, "--json").stdout)
    [row] = status["rows"]
    assert row["status"] == "crash", row
    assert row["reason"] == (
        "no value of mean_reward was recorded (the run succeeded, and wrote no validation record)"
    ), row


def test_an_experiment_timeout_past_the_deadline_is_refused() -> None:
    """Walk97b F6: `per_experiment_timeout: 1h` with `deadline: 10m` was taken, and the
    campaign ended `completed` at once having run nothing (an experiment starts only while a
    whole timeout remains); refused where it comes in (campaign.yaml, `campaign set`)."""
    text = (
        "name: c\nbase: b.md\nresult_dir: /r\nstop: {deadline: 10m, per_experiment_timeout: 1h}\n"
    )
    with pytest.raises(cs.CampaignError) as err:
        cs.parse_campaign(text, {"b.md"})
    [said] = err.value.problems
    assert said.startswith("stop: per_experiment_timeout (1h) is longer than the deadline (10m)")
    fits = text.replace("1h", "10m")
    assert cs.parse_campaign(fits, {"b.md"}).per_experiment_s == 600


@pytest.mark.parametrize("rule", ["deadline: 2", "per_experiment_timeout: '30'"])
def test_a_bare_number_duration_is_refused_where_a_campaign_comes_in(env: Env, rule: str) -> None:
    """Walk97b F10: `deadline: 2` was taken as 2 hours in silence; a blueprint's bare number
    is warned, a campaign's is refused at submit and in lint, naming the unit to write."""
    folder = _folder(env, "bare", "metric: accuracy\n")
    text = (folder / "campaign.yaml").read_text()
    (folder / "campaign.yaml").write_text(text.replace("max_experiments: 1", rule))
    key, number = rule.replace("'", "").split(": ")
    for args in (("lint", str(folder)), ("campaign", str(folder))):
        out = env.cli(*args)
        assert out.returncode == 2, (args, out.stdout)
        assert f"stop.{key}: {number} is a bare number, read as {number} hours" in out.stderr
        assert f"for hours `{number}h`" in out.stderr, out.stderr


def test_grpo_writes_no_loss_so_a_plateau_on_it_is_warned_too() -> None:
    """The one check lint's plateau warning and the campaign share: a GRPO config's run
    writes accuracy (and its response length), never SFT's val_loss."""
    from ajetd.frameworks.framework import unwritten_metric

    command = "uv run examples/run_grpo.py --config c.yaml"
    found = unwritten_metric("val_loss", {"grpo": {"max_num_steps": 4}}, command)
    assert found is not None and found.known == ("accuracy", "average_response_length")
    assert unwritten_metric("average_response_length", {"grpo": {}}, command) is None
    assert unwritten_metric("val_loss", {"sft": {}}, "uv run examples/run_sft.py") is None
