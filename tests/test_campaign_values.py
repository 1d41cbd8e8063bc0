"""A campaign's rows against seed 002, end to end with the fake AgentJet launcher: the value an
experiment is judged by (step 12: keep, discard or crash), the value of the model it ended
with, never one of a model its relaunch threw away; and which planned experiments run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from conftest import Env, campaign_ledger, git, wait_for

NCCL = (
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
    "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5"
)


def _campaign(env: Env, name: str, spec: dict[str, object], **fake: object) -> str:
    """An AgentJet campaign (the fake launcher under AgentJet's name) submitted; its id."""
    folder = env.tmp / f"{name}-folder"
    folder.mkdir()
    config = env.config(f"{name}-base", steps=6, **fake)
    command = f"python -m ajet.launcher --conf {config} --autokill"
    base = env.blueprint(f"{name}-base", config=config, command=command)
    (folder / "base.md").write_text(base.read_text())
    whole = {
        "name": name,
        "metric": "mean_reward",
        "base": "base.md",
        "result_dir": str(env.tmp / "campaigns" / name),
        **spec,
    }
    (folder / "campaign.yaml").write_text(yaml.safe_dump(whole, sort_keys=False))
    out = env.cli("campaign", str(folder))
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def _flow(value: object) -> str:
    """A value as one line of YAML (an override's right-hand side)."""
    return yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()


def test_a_relaunch_that_restarts_from_step_0_is_judged_by_the_model_it_ends_with(
    daemon_env: Env,
) -> None:
    """walk89 F1: `trap`'s trial 1 climbs to 0.6 and dies of an NCCL error at step 4; ajetd
    relaunches it with NVLS off, and trial 2 trains again from step 0 (AgentJet's relaunch
    never resumes) to 0.44, under the baseline's 0.45. The experiment leaves trial 2's
    model: it was `keep 0.6`, the campaign's best, and `plain`, a real gain to 0.5, was
    discarded against a model nobody has. Judged on the records since the last fresh start
    (as the plateau rule is), with the earlier peak said, not counted."""
    env = daemon_env
    rewards = {"1": [0.5, 0.6], "else": [0.3, 0.4, 0.44]}
    fail = {"text": NCCL, "unless_env": {"NCCL_NVLS_ENABLE": 0}, "at_step": 4}
    cid = _campaign(
        env,
        "trap",
        {
            "stop": {"max_experiments": 3},
            "experiments": [
                {
                    "name": "trap",
                    "description": "climbs, dies, restarts from step 0",
                    "overrides": [
                        f"fakejet.rewards={_flow(rewards)}",
                        f"fakejet.fail={_flow(fail)}",
                    ],
                },
                {
                    "name": "plain",
                    "description": "a real gain",
                    "overrides": ["fakejet.rewards=[0.3, 0.4, 0.5]"],
                },
            ],
        },
        rewards=[0.3, 0.4, 0.45],
    )
    wait_for(lambda: len(campaign_ledger(env, "trap")) >= 3, timeout=90, what="three ledger rows")
    rows = campaign_ledger(env, "trap")
    assert [(r["index"], r["status"], r["metric_value"]) for r in rows] == [
        ("0", "keep", "0.45"),
        ("1", "discard", "0.44"),
        ("2", "keep", "0.5"),
    ], rows
    trap_run = env.status(rows[1]["job_id"])
    assert trap_run["trials"] == 2, trap_run
    # which trial's value counted, and the peak it does not count, said where a row is read
    said = (
        "counted: trial 2's records only (it trained again from the start: its first record, "
        "step 2, is below step 4 before it); trial 1's best 0.6 was of a model the relaunch "
        "threw away"
    )
    assert said in rows[1]["description"], rows[1]
    assert "trial" not in rows[2]["description"]
    status = json.loads(env.cli("campaign", "status", cid, "--json").stdout)
    assert status["best"]["name"] == "plain" and status["best"]["value"] == 0.5
    row = status["rows"][1]
    assert row["value_trial"] == 2 and said in row["value_note"], row
    assert status["rows"][2]["value_trial"] is None and status["rows"][2]["value_note"] is None
    text = env.cli("campaign", "status", cid).stdout
    assert said in text, text
    report = (env.tmp / "campaigns" / "trap" / "campaign.md").read_text()
    assert said in report and "since its last fresh start" in report, report
    assert "best: mean_reward 0.5: plain" in report
    # the run's own results.md still shows trial 1's peak, labelled
    results = Path(trap_run["result_dir"], "results.md").read_text()
    assert "the best is trial 1's" in results


def test_a_planned_smoke_run_runs_past_a_count_rule(daemon_env: Env) -> None:
    """walk89 F17: a smoke run counts against no stop rule, yet one planned after the
    experiments that met `max_experiments` was left `planned, not run: stop condition met:
    2/2 attempted`. It runs, then the campaign completes; a deadline would still hold it."""
    env = daemon_env
    cid = _campaign(
        env,
        "smokes",
        {
            "stop": {"max_experiments": 2},
            "experiments": [
                {"name": "e1", "description": "an idea"},
                {"name": "pipe", "description": "does it run", "smoke": True},
            ],
        },
    )
    wait_for(lambda: len(campaign_ledger(env, "smokes")) >= 3, timeout=90, what="three rows")
    rows = campaign_ledger(env, "smokes")
    assert [(r["index"], r["status"]) for r in rows][2] == ("2", "smoke"), rows

    def done() -> dict[str, object] | None:
        got = json.loads(env.cli("campaign", "status", cid, "--json").stdout)
        return got if got["state"] == "done" else None

    status = wait_for(done, what="the campaign's end")
    assert status["status"] == "completed" and status["planned"] == [], status
    assert status["reason"] == "stop condition met: 2/2 attempted", status
    # a codebase in no repository: no git trail, and the campaign says why (walk89 F9)
    assert all(r["branch"] == "" for r in rows)
    assert status["branch_prefix"] is None
    assert str(status["git_note"]).startswith(
        "no branches or commits: campaign.yaml gives no branch_prefix, and the default "
        "(autoresearch/"
    ), status["git_note"]
    assert "needs a git repository" in str(status["git_note"])


def test_a_campaign_without_branch_prefix_makes_the_seeds_default_branches(
    daemon_env: Env,
) -> None:
    """walk89 F9: seed 002 asks for one branch per experiment under a unified prefix, the
    user's or a descriptive default, and a commit recording each hypothesis. A campaign
    without `branch_prefix` made none and left the ledger's git columns empty; an
    override-only experiment's commit did not say what it ran with."""
    env = daemon_env
    env.config("trail-base", steps=6)  # committed: the worktrees hold what git holds
    git(env.codebase, "init", "-q", "-b", "main")
    git(env.codebase, "add", "-A")
    git(env.codebase, "commit", "-q", "-m", "base")
    head = git(env.codebase, "rev-parse", "HEAD")
    cid = _campaign(
        env,
        "trail",
        {
            "stop": {"max_experiments": 2},
            "experiments": [
                {"name": "four", "description": "fewer steps", "overrides": ["fakejet.steps=4"]}
            ],
        },
    )
    wait_for(lambda: len(campaign_ledger(env, "trail")) >= 2, timeout=90, what="two rows")
    rows = campaign_ledger(env, "trail")
    status = json.loads(env.cli("campaign", "status", cid, "--json").stdout)
    prefix = status["branch_prefix"]
    assert re.fullmatch(r"autoresearch/\d{4}-\d\d-\d\d-trail", prefix), status
    assert "the default (campaign.yaml gives no branch_prefix" in status["git_note"]
    assert [r["branch"] for r in rows] == [f"{prefix}/baseline", f"{prefix}/four"], rows
    assert all(r["parent_commit"] == head and r["commit"] not in ("", head) for r in rows)
    message = git(env.codebase, "log", "-1", "--format=%B", f"{prefix}/four")
    assert "hypothesis: fewer steps (ajetd campaign trail)" in message
    assert "runs with the overrides:\nfakejet.steps=4" in message, message
    four = env.status(rows[1]["job_id"])
    assert four["metrics"].get("global_steps") == 4, (four["status"], four["reason"])
    # the user's checkout is untouched
    assert git(env.codebase, "rev-parse", "HEAD") == head
    assert git(env.codebase, "rev-parse", "--abbrev-ref", "HEAD") == "main"
