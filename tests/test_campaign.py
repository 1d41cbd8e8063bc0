"""Campaigns (seed 002): stop rules, verdicts, the ledger, and git branches, end to end with
the fake NeMo-RL launcher (its accuracy grows with the number of steps)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ajetd.cli.campaign import campaign
from ajetd.core import campaignrules as cr
from ajetd.core import campaignspec as cs
from ajetd.core.campaignrecord import REASON_MAX
from ajetd.core.durations import format_duration
from ajetd.core.errors import one_line
from ajetd.core.linecut import cut
from ajetd.core.markdown import table_cell
from ajetd.hosts import campaignfolder as cf
from conftest import (
    ACCURACY_MAX,
    Env,
    campaign_folder_of,
    campaign_ledger,
    git,
    shared_paths,
    wait_for,
)


def _progress(
    spec: cs.CampaignSpec,
    attempted: int,
    start: float,
    now: float,
    best: float | None,
    rounds: int = 1,
) -> cr.Progress:
    """The stop rules' verdict for a campaign that stands there."""
    return cr.progress(spec, cr.rules(spec, attempted, start, now, best, rounds), attempted)


def test_spec_problems_are_named_together() -> None:
    text = "name: 'bad name'\ndirection: up\nstop: {max_experiments: 0, colour: red}\n"
    text += "branch_prefix: false\nexperiments: [{name: baseline}, {name: x, patch: p.diff}]\n"
    with pytest.raises(cs.CampaignError) as err:
        cs.parse_campaign(text, {"campaign.yaml"})
    joined = "\n".join(err.value.problems)
    for needle in (
        "name: 'bad name'",
        "direction",
        "base:",
        "result_dir",
        "max_experiments",
        "unknown rule 'colour'",
        "name 'baseline' is reserved for the campaign's own first row",
        "patch p.diff is not in the folder",
        "a patch is committed on a branch, and `branch_prefix: false` turns branches off",
    ):
        assert needle in joined, needle


def test_every_stop_rule_fires_in_turn() -> None:
    spec = cs.parse_campaign(
        "name: c\nmetric: accuracy\nbase: b.md\nresult_dir: /r\n"
        "stop: {max_experiments: 24, deadline: 10h, per_experiment_timeout: 1h, target_metric: 0.6}\n"
        "experiments: [{name: a}]\n",
        {"b.md"},
    )
    t0 = 1000.0
    p = _progress(spec, 17, t0, t0 + 3 * 3600 + 48 * 60, 0.42)
    assert not p.met
    assert p.text == (
        "stop condition not yet met: 17/24 attempted, 6h12m remaining, "
        "best accuracy 0.42 (target 0.6)"
    )
    assert _progress(spec, 24, t0, t0 + 60, 0.4).text == "stop condition met: 24/24 attempted"
    assert _progress(spec, 3, t0, t0 + 10 * 3600, None).text == (
        "stop condition met: deadline reached"
    )
    late = _progress(spec, 3, t0, t0 + 9.5 * 3600, None)
    assert late.met and "less than one experiment (1h)" in late.text
    assert _progress(spec, 3, t0, t0 + 60, 0.61).text == (
        "stop condition met: accuracy 0.61 reached the target 0.6"
    )
    # running out of experiments is no stop rule: the campaign waits for the next one
    assert not _progress(spec, 3, t0, t0 + 60, 0.1).met
    rules = {r.rule: r for r in cr.rules(spec, 17, t0, t0 + 3 * 3600 + 48 * 60, 0.42)}
    assert rules["max_experiments"].remaining == 7 and not rules["max_experiments"].met
    assert rules["deadline"].remaining == 6 * 3600 + 12 * 60
    assert rules["target_metric"].current == 0.42 and rules["target_metric"].limit == 0.6


def test_the_default_rule_is_the_baseline_and_three_experiments() -> None:
    spec = cs.parse_campaign("name: c\nbase: b.md\nresult_dir: /r\n", {"b.md"})
    assert spec.default_rule and spec.experiments == ()
    assert _progress(spec, 3, 0.0, 1.0, None).text == ("stop condition not yet met: 3/4 attempted")
    met = _progress(spec, 4, 0.0, 1.0, 0.4)
    assert met.met and met.needs_decision and "needs a decision" in met.text
    assert not _progress(spec, 4, 0.0, 1.0, 0.4, rounds=2).met  # --continue: three more
    assert _progress(spec, 7, 0.0, 1.0, 0.4, rounds=2).needs_decision
    timed = cs.parse_campaign(
        "name: c\nbase: b.md\nresult_dir: /r\nstop: {per_experiment_timeout: 1h}\n", {"b.md"}
    )
    assert timed.default_rule  # a per-experiment limit alone ends nothing


def test_live_entries_are_validated_as_campaign_yaml_entries() -> None:
    text = "name: c\nbase: b.md\nresult_dir: /r\nbranch_prefix: ar/c\nexperiments:\n"
    smoke = cs.entry("quick", "does it run", ["a=1"], smoke=True)
    spec = cs.parse_campaign(cs.merged(text, [smoke], {"max_experiments": 5}), {"b.md"})
    assert spec.experiments[0].smoke and spec.experiments[0].overrides == ("a=1",)
    assert spec.max_experiments == 5
    bad = [cs.entry("quick", "x"), cs.entry("quick", "y", patch="p.diff"), {"name": "z", "x": 1}]
    with pytest.raises(cs.CampaignError) as err:
        cs.parse_campaign(cs.merged(text, bad, {"deadline": "soon"}), {"b.md"})
    joined = "\n".join(err.value.problems)
    for needle in (
        "two experiments have the same name 'quick' (experiments[1], experiments[2])",
        "patch p.diff is not in the folder",
        "unknown key 'x'",
        "deadline",
    ):
        assert needle in joined, needle
    assert cr.verdict("failed", None, 0.5, True, smoke=True) == "smoke"
    assert cr.verdict("succeeded", 0.1, 0.5, True, smoke=True) == "smoke"  # never a discard
    assert cr.verdict("stopped", 0.9, 0.5, True) == "stopped"


def test_an_override_must_be_k_equals_v_in_yaml_and_in_add(tmp_path: Path) -> None:
    for good in ("a=1", "+a.b=x y", "++a=", "~a"):
        assert cs.override_problem(good) is None, good
    for bad in ("noequals", "=v", "a b=c", "~", "+=1"):
        assert f"override {bad!r} is not K=V" in (cs.override_problem(bad) or ""), bad
    text = "name: c\nbase: b.md\nresult_dir: /r\nexperiments:\n"
    entry = cs.entry("e", "d", ["a=1", "noequals"])
    with pytest.raises(cs.CampaignError) as err:
        cs.parse_campaign(cs.merged(text, [entry], {}), {"b.md"})
    assert "experiments[1] (e): override 'noequals' is not K=V" in "\n".join(err.value.problems)
    args = ["add", "c-abc123", "--name", "n", "--description", "d", "--overrides", "a=1", "bad"]
    out = CliRunner().invoke(campaign, args, env={"AJETD_HOME": str(tmp_path)})
    assert out.exit_code == 2, out.output
    assert "override 'bad' is not K=V" in out.output and "Traceback" not in out.output


def test_verdicts_and_the_ledger_row() -> None:
    assert cr.verdict("succeeded", 0.5, None, True) == "keep"
    assert cr.verdict("succeeded", 0.5, 0.6, True) == "discard"
    assert cr.verdict("succeeded", 0.5, 0.6, False) == "keep"
    assert cr.verdict("time_limit", 0.9, 0.1, True) == "crash"  # a timeout is a failure
    assert cr.verdict("succeeded", None, None, True) == "crash"  # no metric
    row = cr.ledger_row({"index": 1, "metric_value": 0.42, "command": "a\tb\nc", "status": "keep"})
    assert row.count("\t") == len(cr.LEDGER_COLUMNS) - 1 and "a b c" in row
    assert cr.ledger_header().split("\t")[0] == "index"


def _folder(env: Env, name: str, campaign: str, files: dict[str, str] | None = None) -> Path:
    """The fake NeMo-RL's campaign on accuracy (max), `campaign` the rest of its yaml."""
    return campaign_folder_of(env, name, ACCURACY_MAX, campaign, files=files)


def _ledger(env: Env, name: str) -> list[dict[str, str]]:
    return campaign_ledger(env, name)


def _done(env: Env, name: str, rows: int) -> list[dict[str, str]]:
    wait_for(lambda: len(_ledger(env, name)) >= rows, timeout=60, what=f"{rows} ledger rows")
    md = env.tmp / "campaigns" / name / "campaign.md"
    wait_for(lambda: md.exists() and "stop condition met" in md.read_text(), what="the stop")
    return _ledger(env, name)


def test_a_campaign_runs_baseline_then_experiments_until_max(daemon_env: Env) -> None:
    env = daemon_env
    folder = _folder(
        env,
        "count",
        (
            "stop: {max_experiments: 3}\nexperiments:\n"
            "  - {name: longer, description: more steps, overrides: [grpo.max_num_steps=4]}\n"
            "  - {name: same, description: no change}\n"
            "  - {name: never, description: past the limit}\n"
        ),
    )
    out = env.cli("campaign", str(folder))
    assert out.returncode == 0, out.stderr
    rows = _done(env, "count", 3)
    assert [(r["index"], r["status"], r["metric_value"]) for r in rows] == [
        ("0", "keep", "0.34"),
        ("1", "keep", "0.38"),
        ("2", "discard", "0.34"),
    ]
    assert list(rows[0]) == list(cr.LEDGER_COLUMNS)
    assert all(r["metric_name"] == "accuracy" and r["job_id"] for r in rows)
    assert {r["launcher"] for r in rows} == {"ajetd"}
    # the recipe as the codebase names it: one value for every experiment of one recipe (it
    # was each worktree's absolute path)
    assert {r["recipe"] for r in rows} == {"examples/configs/grpo_fake.yaml"}
    assert "grpo.max_num_steps=4" in rows[1]["command"]
    assert rows[1]["description"] == "more steps"
    text = (env.tmp / "campaigns" / "count" / "campaign.md").read_text()
    assert (
        "stop condition met: 3/3 attempted" in text and "best: accuracy 0.38: longer (run " in text
    )
    # each row's hypothesis, and its value labelled as what it is: the run's best (walk 81,
    # L10: the ledger's best and finish.flag's last value read as a contradiction)
    assert "| # | experiment | hypothesis | branch | run | status | best accuracy | why |" in text
    assert "| 1 | longer | more steps | - |" in text, text
    flag = json.loads((env.tmp / "campaigns" / "count" / "01-longer" / "finish.flag").read_text())
    assert flag["best"] == {"metric": "accuracy", "value": 0.38, "step": 4, "trial": 1}, flag
    assert flag["metrics"]["accuracy"] == 0.38  # its last record, here also its best
    cid = json.loads(env.cli("campaign", "list", "--json").stdout)[0]["campaign_id"]
    shown = env.cli("campaign", "status", cid).stdout
    assert "  #  status         best  experiment" in shown, shown
    waited = env.cli("campaign", "wait", cid, "--after", "0")
    assert waited.stdout.strip() == "experiment 1 (longer) keep: best accuracy 0.38", waited
    assert "campaign " in env.cli("status").stdout and "3/3 attempted" in env.cli("status").stdout


def test_target_metric_and_a_crash(daemon_env: Env) -> None:
    env = daemon_env
    folder = _folder(
        env,
        "target",
        (
            "stop: {target_metric: 0.38}\nexperiments:\n"
            "  - {name: broken, overrides: [grpo.val_period=0]}\n"
            "  - {name: longer, overrides: [grpo.max_num_steps=4]}\n"
            "  - {name: after, overrides: [grpo.max_num_steps=6]}\n"
        ),
    )
    assert env.cli("campaign", str(folder)).returncode == 0
    rows = _done(env, "target", 3)
    assert [(r["status"], r["metric_value"]) for r in rows] == [
        ("keep", "0.34"),
        ("crash", ""),
        ("keep", "0.38"),
    ]  # the target is reached: `after` never runs
    # the crash row says why, as its run does (one line, bounded): the row gave no reason
    # (the run's reason may be longer: its root cause's line, then why no fix is tried; the
    # row keeps it cut to one line of REASON_MAX characters)
    whole = env.status(rows[1]["job_id"])["reason"]
    reason = one_line(whole, REASON_MAX)
    assert whole and "\n" not in reason and len(reason) <= 200, reason
    kept = reason.rpartition("…")[0] or reason  # cut at a word, its brackets closed after
    assert kept == whole[: len(kept)], (reason, whole)
    assert rows[1]["description"] == "", rows[1]  # the TSV's is the hypothesis alone
    cid = env.cli("campaign", "list", "--json").stdout
    cid = json.loads(cid)[0]["campaign_id"]
    data = json.loads(env.cli("campaign", "status", cid, "--json").stdout)
    assert [r["reason"] for r in data["rows"]] == [None, reason, None]
    assert f"     why: {reason}" in env.cli("campaign", "status", cid).stdout.splitlines()
    report = (env.tmp / "campaigns" / "target" / "campaign.md").read_text()
    cell = reason.replace("|", chr(92) + "|").replace("<", "&lt;")
    assert f"| crash |  | {cell} |" in report, report
    waited = env.cli("campaign", "wait", cid, "--after", "0")
    assert waited.returncode == 1 and waited.stdout.strip().endswith(f"({reason})"), waited


PATCH = """--- a/examples/configs/grpo_fake.yaml
+++ b/examples/configs/grpo_fake.yaml
@@ -1,2 +1,3 @@
 # A GRPO config with the keys of NeMo-RL's grpo_math_1B.yaml that matter to ajetd.
+# hypothesis: a comment is all it takes
 grpo:
"""


def test_branches_and_worktrees_on_a_real_repository(daemon_env: Env) -> None:
    env = daemon_env
    git(env.codebase, "init", "-q", "-b", "main")
    git(env.codebase, "add", "-A")
    git(env.codebase, "commit", "-q", "-m", "base")
    head = git(env.codebase, "rev-parse", "HEAD")
    campaign = (
        "branch_prefix: ar/t\nstop: {max_experiments: 2}\nexperiments:\n"
        "  - {name: tweak, description: a comment, patch: tweak.patch}\n"
    )
    (env.codebase / "untracked.txt").write_text("the user's own work")
    dirty_file = env.codebase / "examples" / "configs" / "grpo_fake.yaml"
    original = dirty_file.read_text()
    dirty_file.write_text(original + "# uncommitted\n")
    refused = _folder(env, "dirty", campaign, {"tweak.patch": PATCH})
    # refused at once by the CLI, from the same facts the daemon's start reads (walk 82, L6:
    # it printed an id, exit 0, and the campaign was refused a moment later)
    out = env.cli("campaign", str(refused))
    assert out.returncode == 2 and not out.stdout, out.stdout + out.stderr
    assert "has uncommitted changes (1 file(s))" in out.stderr, out.stderr
    assert not [p for p in (env.home / "inbox").iterdir() if "dirty" in p.name]
    # dirtied after the CLI took it (the daemon frozen meanwhile): the daemon refuses it
    dirty_file.write_text(original)
    env.daemons[-1].send_signal(signal.SIGSTOP)
    try:
        assert env.cli("campaign", str(refused)).returncode == 0
        dirty_file.write_text(original + "# uncommitted\n")
    finally:
        env.daemons[-1].send_signal(signal.SIGCONT)
    wait_for(lambda: "refused" in env.cli("status").stdout, what="the refusal")
    assert "uncommitted changes" in env.cli("status").stdout
    dirty_file.write_text(original)
    folder = _folder(env, "clean", campaign, {"tweak.patch": PATCH})
    assert env.cli("campaign", str(folder)).returncode == 0
    rows = _done(env, "clean", 2)
    assert [(r["branch"], r["status"]) for r in rows] == [
        ("ar/t/baseline", "keep"),
        ("ar/t/tweak", "discard"),
    ]
    assert rows[1]["parent_commit"] == head and rows[1]["commit"] != head
    message = git(env.codebase, "log", "-1", "--format=%s", "ar/t/tweak")
    assert message.startswith("hypothesis: a comment")
    changed = git(env.codebase, "show", "ar/t/tweak", "--format=", "--name-only")
    assert changed == "examples/configs/grpo_fake.yaml"
    tree = env.tmp / "campaigns" / "clean" / "worktrees" / "tweak"
    assert "a comment is all it takes" in (tree / "examples/configs/grpo_fake.yaml").read_text()
    # the user's checkout is untouched: same branch, same commit, their file still there
    assert git(env.codebase, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert git(env.codebase, "rev-parse", "HEAD") == head
    assert (env.codebase / "untracked.txt").read_text() == "the user's own work"
    assert git(env.codebase, "status", "--porcelain", "--untracked-files=no") == ""

    # an experiment whose branch exists would be refused (a crash row): said at once, by
    # `ajetd campaign FOLDER` for campaign.yaml's, by `campaign add` for the one it adds
    again = _folder(env, "again", campaign, {"tweak.patch": PATCH})
    out = env.cli("campaign", str(again))
    assert out.returncode == 2 and not out.stdout, out.stdout + out.stderr
    for index, name in ((0, "baseline"), (1, "tweak")):
        assert f"experiment {index} ({name}): branch ar/t/{name} or worktree " in out.stderr
    git(env.codebase, "branch", "ar/t/other")
    listed = json.loads(env.cli("campaign", "list", "--json").stdout)
    cid = next(c["campaign_id"] for c in listed if c["name"] == "clean")
    added = env.cli("campaign", "add", cid, "--name", "other", "--description", "x")
    assert added.returncode == 2, added.stdout + added.stderr
    assert "experiment 2 (other): branch ar/t/other or worktree" in added.stderr, added.stderr
    assert not list((env.home / "control").glob("*.campaign-*"))


@pytest.mark.pictures
def test_a_folder_dropped_into_the_inbox_is_a_campaign(daemon_env: Env) -> None:
    env = daemon_env
    folder = _folder(env, "dropped", "stop: {max_experiments: 1}\nexperiments: []\n")
    shutil.copytree(folder, env.home / "inbox" / "my-campaign")
    rows = _done(env, "dropped", 1)
    assert [(r["index"], r["status"]) for r in rows] == [("0", "keep")]
    assert not (env.home / "inbox" / "my-campaign").exists()
    offenders = shared_paths(env.home)  # the copy was 755/644: taken, it is ajetd's own
    assert not offenders, "group/other bits in the home: " + ", ".join(offenders)


def test_the_plotted_best_follows_kept_experiments_only() -> None:
    from ajetd.pictures.progress import running_best

    points = [
        {"index": 0, "status": "keep", "value": 0.38},
        {"index": 1, "status": "smoke", "value": 0.9},  # a smoke run is never the best
        {"index": 2, "status": "discard", "value": 0.3},
        {"index": 3, "status": "keep", "value": 0.42},
        {"index": 4, "status": "crash", "value": None},
    ]
    assert running_best(points, True) == ([0, 3, 4], [0.38, 0.42, 0.42])
    assert running_best(points[2:3], True) == ([], [])


def _agentjet_folder(env: Env, name: str, command: str, experiments: str) -> Path:
    """A campaign whose base runs AgentJet's launcher (the fake one under its name)."""
    return campaign_folder_of(
        env,
        name,
        "metric: mean_reward\n",
        "stop: {max_experiments: 3}\n" + experiments,
        config=None,
        command=command,
    )


def test_overrides_for_agentjets_launcher_are_set_in_a_copy_of_its_yaml(daemon_env: Env) -> None:
    """AgentJet's launcher parses its arguments with argparse and takes no `key=value` (one
    exits it 2, unrecognized arguments), so a campaign's overrides for it are set in a copy of
    the experiment's YAML (`[ajetd] yaml_overrides`) that `--conf` is pointed at, and
    results.md says what each changed; the user's file is never edited. The seed-002 loop
    as an agent runs it: one experiment written, one added live (`campaign add --overrides`),
    a bad one refused at `add` naming it."""
    env = daemon_env
    command = "python -m ajet.launcher --conf configs/aj-base.yaml --autokill"
    folder = _agentjet_folder(
        env,
        "aj",
        command,
        "experiments:\n  - {name: often, description: validate every step, "
        "overrides: [ajet.trainer_common.test_freq=1, fakejet.steps=3]}\n",
    )
    user_config = (env.codebase / "configs" / "aj-base.yaml").read_text()
    out = env.cli("campaign", str(folder))
    assert out.returncode == 0, out.stderr
    cid = out.stdout.strip()
    wait_for(lambda: len(_ledger(env, "aj")) >= 2, timeout=60, what="two ledger rows")
    refused = env.cli(
        "campaign",
        "add",
        cid,
        "--name",
        "gone",
        "--description",
        "d",
        "--overrides",
        "~fakejet.steps",
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "override: '~fakejet.steps' removes a key" in refused.stderr
    added = env.cli(
        "campaign",
        "add",
        cid,
        "--name",
        "short",
        "--description",
        "two steps",
        "--overrides",
        "fakejet.steps=2",
    )
    assert added.returncode == 0, added.stdout + added.stderr
    rows = _done(env, "aj", 3)
    assert [(r["index"], r["status"]) for r in rows] == [
        ("0", "keep"),
        ("1", rows[1]["status"]),
        ("2", rows[2]["status"]),
    ]
    assert all(r["status"] in ("keep", "discard") for r in rows), rows  # none crashed
    steps = {}
    for row in rows:
        run_id = row["job_id"]
        status = env.status(run_id)
        assert status["status"] == "succeeded", status
        steps[row["index"]] = status["metrics"]["global_steps"]
        # the baseline runs the user's file as it is (nothing to change); each experiment
        # its own copy, and no key=value reaches the launcher's command line
        conf = (
            "configs/aj-base.yaml"
            if row["index"] == "0"
            else f"configs/aj-base.ajetd-{run_id}.yaml"
        )
        # `--autokill` taken out, the launcher's own GPU check off in its place (walk89 F3)
        launched = f"python -m ajet.launcher --conf {conf} --skip-check-avail-gpu"
        assert row["command"] == launched, row
    assert steps == {"0": 4, "1": 3, "2": 2}  # each ran with its own overrides
    often = env.tmp / "campaigns" / "aj" / "01-often"
    results = (often / "results.md").read_text()
    assert "- ajet.trainer_common.test_freq: 2 → 1 (yaml_overrides)" in results
    assert "- fakejet.steps: 4 → 3 (yaml_overrides)" in results
    history = json.loads((often / "run.json").read_text())["history"]
    assert [h["global_steps"] for h in history] == [1, 2, 3]  # validated at every step
    assert (
        "fakejet.steps: 4 → 2 (yaml_overrides)"
        in (env.tmp / "campaigns" / "aj" / "02-short" / "results.md").read_text()
    )
    assert (env.codebase / "configs" / "aj-base.yaml").read_text() == user_config


def test_overrides_go_in_the_yaml_copy_by_the_conf_flag_whatever_the_program_is_named(
    daemon_env: Env,
) -> None:
    """Whether overrides go in a copy of the YAML was told by the program's name: only a
    command running `ajet.launcher` got one; a wrapper script of the launcher (here one that
    execs the fake launcher) had `key=value` words appended, which AgentJet's argparse
    refuses (exit 2: the experiment crashed). Now the command's config flag tells it: `--conf`
    is an AgentJet run's, `--config` with a NeMo-RL `run_*.py` takes Hydra's words."""
    from ajetd.core.campaignblueprint import in_yaml_copy

    env = daemon_env
    wrapper = env.codebase / "train.sh"
    wrapper.write_text('#!/bin/sh\nexec python -m fakejet.launcher "$@"\n')
    wrapper.chmod(0o755)
    command = "./train.sh --conf configs/wr-base.yaml --autokill"
    assert in_yaml_copy(command) and in_yaml_copy("python -m fakejet.launcher --conf=a/b.yaml")
    assert not in_yaml_copy("uv run examples/run_grpo.py --config examples/configs/grpo.yaml")
    assert not in_yaml_copy("python train.py lr=1")  # no config flag: key=value appended
    folder = _agentjet_folder(
        env,
        "wr",
        command,
        "experiments:\n  - {name: short, description: three steps, overrides: [fakejet.steps=3]}\n",
    )
    spec = folder / "campaign.yaml"
    spec.write_text(spec.read_text().replace("max_experiments: 3", "max_experiments: 2"))
    out = env.cli("campaign", str(folder))
    assert out.returncode == 0, out.stderr
    rows = _done(env, "wr", 2)
    assert [r["status"] for r in rows] == ["keep", rows[1]["status"]], rows
    run_id = rows[1]["job_id"]
    status = env.status(run_id)
    assert status["status"] == "succeeded", status  # no `fakejet.steps=3` word refused
    assert rows[1]["command"] == f"./train.sh --conf configs/wr-base.ajetd-{run_id}.yaml", rows
    results = (env.tmp / "campaigns" / "wr" / "01-short" / "results.md").read_text()
    assert "- fakejet.steps: 4 → 3 (yaml_overrides)" in results


@pytest.mark.parametrize(
    ("command", "override", "needle"),
    [
        (
            "python -m ajet.launcher --conf configs/c.yaml",
            "~ajet.rollout.temperature",
            "experiments[1] (hot): override: '~ajet.rollout.temperature' removes a key",
        ),
        (
            "source .venv/bin/activate && ajet --conf configs/c.yaml --autokill",
            "ajet.rollout=[1",
            "experiments[1] (hot): override: 'ajet.rollout=[1': the value is not valid YAML",
        ),
        (
            "AJET_CONF=configs/c.yaml python -m ajet.launcher",
            "ajet.rollout.temperature=1.0",
            "the base's command passes no --conf to point at that copy",
        ),
    ],
)
def test_agentjet_overrides_that_cannot_be_carried_out_are_refused_at_intake(
    env: Env, command: str, override: str, needle: str
) -> None:
    """What a copy of the YAML cannot carry out is refused when the campaign is submitted,
    naming the experiment and the override (exit 2, nothing submitted)."""
    folder = _agentjet_folder(
        env, "bad", command, f"experiments:\n  - {{name: hot, overrides: ['{override}']}}\n"
    )
    out = env.cli("campaign", str(folder))
    assert out.returncode == 2, out.stdout + out.stderr
    assert needle in out.stderr
    assert "Traceback" not in out.stderr and not list(env.home.glob("inbox/*"))


def test_a_rows_empty_columns_are_null_as_everywhere_else_in_the_json() -> None:
    """`rows` are the ledger's columns typed: an empty column (no branch without
    branch_prefix, no command for a refused experiment) is null, as `best`, `baseline` and
    `running` say the same fields; it was "" in `rows` and null in `best` for one experiment."""
    from ajetd.core.campaignrecord import (
        REASON_MAX,
        CampaignState,
        ExpState,
        crash_reason,
        ledger_fields,
    )
    from ajetd.views.campaign import status_json

    spec = cs.parse_campaign("name: c\nmetric: accuracy\nbase: b.md\nresult_dir: /r\n", {"b.md"})
    kept = ExpState(0, "baseline", "unchanged", run_id="k3x9az", recorded=True, status="keep")
    kept.value = 0.5
    kept.row = ledger_fields(spec, kept, None, "", "ajetd")
    refused = ExpState(1, "x", "y", refused="no such ref", recorded=True, status="crash")
    refused.row = ledger_fields(spec, refused, None, "", "ajetd")
    state = CampaignState("c-k3x9az", 0.0, experiments=[kept, refused], best=0.5, best_index=0)
    data = status_json(spec, state, {}, 1.0)
    first, second = data["rows"]
    assert "" not in first.values() and "" not in second.values()
    for key in ("branch", "parent_commit", "commit", "run_id"):
        assert first[key] == data["best"][key], key
    assert second["command"] is None and second["log_path"] is None and second["run_id"] is None
    assert first["job_id"] == "k3x9az" and first["metric_value"] == 0.5
    long = ExpState(2, "z", "d", refused="no such ref\n" * 100, recorded=True, status="crash")
    why = crash_reason(long, None)  # bounded, one line: a table's cell, a TSV's
    assert "\n" not in why and REASON_MAX - 12 <= len(why) <= REASON_MAX, why
    assert why.endswith("…") and why[:-1].split()[-1] in ("no", "such", "ref"), why  # a word
    assert crash_reason(kept, None) == ""  # only a crash row says why


def test_a_refused_campaigns_status_has_every_field_of_any_other() -> None:
    """A campaign refused before its folder could be read lacked best, attempted, result_dir
    and 15 more fields of `campaign status --json`: a program reading `best` got a KeyError.
    Now null (or empty) where there is nothing to say."""
    from ajetd.core.campaignrecord import CampaignState
    from ajetd.views.campaign import status_json

    spec = cs.parse_campaign("name: c\nmetric: accuracy\nbase: b.md\nresult_dir: /r\n", {"b.md"})
    good = status_json(spec, CampaignState("c-k3x9az", 0.0), {}, 1.0)
    refused = CampaignState("c-k3x9az", 0.0, done=True, phase="done", status="refused")
    refused.reason = refused.refused = "campaign.yaml: base: missing"
    data = status_json(None, refused, {}, 1.0)
    assert list(data) == list(good)
    assert (data["best"], data["attempted"], data["result_dir"], data["planned"]) == (
        None,
        0,
        None,
        [],
    )


def test_a_running_campaigns_folder_read_again_is_not_refused_for_its_overrides(
    env: Env,
) -> None:
    """The override check is made where experiments come in (the folder submitted, the
    campaign's start, `campaign add`): a campaign taken up by an earlier version, whose folder
    the daemon reads again at each change, goes on (its every tick failed: no row recorded, no
    request answered); `add` checks the experiment it adds."""
    folder = env.tmp / "aj-running"
    folder.mkdir()
    command = "python -m ajet.launcher --conf configs/c.yaml"
    (folder / "base.md").write_text(env.blueprint("aj", command=command).read_text())
    (folder / "campaign.yaml").write_text(
        f"name: aj\nmetric: mean_reward\nbase: base.md\nresult_dir: {env.tmp / 'aj-out'}\n"
        "experiments:\n  - {name: plain, description: as is}\n"
        "  - {name: hot, description: hotter, overrides: ['~ajet.rollout.temperature']}\n"
    )
    spec, base, _ = cf.load_folder(folder, admitted=True)  # read again as a running one
    assert [e.name for e in spec.experiments] == ["plain", "hot"]
    with pytest.raises(cs.CampaignError) as refused:
        cf.check_overrides(spec, base)
    assert "experiments[2] (hot)" in "\n".join(refused.value.problems)
    cf.check_overrides(spec, base, ["plain"])  # the one `add` brought: nothing to refuse


def test_an_experiments_paths_are_read_whole_where_they_hold_spaces() -> None:
    """An experiment's blueprint names its codebase (the worktree), the base's venv and YAML
    and its result dir under the campaign's: written bare, a path holding a space was read
    as its first word (a codebase `/src/my repo` ran in `/src/my`) or refused (`/data/my
    runs/01-lr`), though the base said it whole in quotes and campaign.yaml's result_dir is
    taken as written."""
    from ajetd.core.blueprint import parse_blueprint
    from ajetd.core.campaignblueprint import experiment_blueprint

    base = (Path(__file__).parent.parent / "blueprints" / "TEMPLATE.md").read_text()
    venv = "/mnt/my data/.venv/bin/python"
    base = base.replace("/mnt/data/agentjet/.venv/bin/python", f'"{venv}"')
    assert parse_blueprint(base).venv_exe == venv
    exp = cs.Experiment("lr")
    spec = cs.CampaignSpec(
        name="c",
        metric="mean_reward",
        maximise=True,
        base="base.md",
        result_dir="/data/my runs",
        experiments=(exp,),
    )
    bp = parse_blueprint(experiment_blueprint(spec, exp, 1, base, "/src/my repo", 0.0))
    assert (bp.codebase_dir, bp.venv_exe) == ("/src/my repo", venv)
    assert bp.result_dir == "/data/my runs/01-lr" and bp.warnings == ()


def test_a_campaign_is_named_exactly_never_by_a_pattern_or_a_path(env: Env) -> None:
    """`campaign status|wait|stop|add|set X` look X up as a campaign's id or its name, but
    the name went into a glob of the inbox (`*__X.campaign`), so `ajetd campaign status '*'`
    (or `'sw*'`) named the one campaign waiting there, and X went into a path before it was
    known to be an id: a name longer than a file name's 255 bytes failed with `File name
    too long` (exit 1) instead of naming no campaign (exit 2)."""
    got = env.cli("campaign", str(_folder(env, "sweep", "")))
    assert got.returncode == 0, got.stderr
    cid = got.stdout.strip()
    assert env.cli("campaign", "status", "sweep", "--json").returncode == 0
    assert json.loads(env.cli("campaign", "status", cid, "--json").stdout)["campaign_id"] == cid
    for text in ("*", "sw*", "[s]weep", "?weep", "x" * 300, f"../campaigns/{cid}"):
        for command in ("status", "wait"):
            got = env.cli("campaign", command, text, "--json")
            assert got.returncode == 2, (command, text, got.stdout, got.stderr)
            assert got.stdout == "" and "no campaign" in got.stderr, got.stderr


def test_a_done_campaign_is_measured_at_its_end(daemon_env: Env) -> None:
    """A campaign that ended stands where it ended: its deadline rule's `current`, `remaining`
    and `deadline_left_s` kept counting against the clock after it completed ('59m44s left'
    an hour later became 'deadline met', for a campaign done long before), where its
    `progress` and a run's `elapsed_s` are its end's."""
    env = daemon_env
    folder = _folder(env, "ended", "stop: {max_experiments: 1, deadline: 1h}\n")
    cid = env.cli("campaign", str(folder)).stdout.strip()
    waited = env.cli("campaign", "wait", cid, "--timeout", "60")
    assert waited.returncode == 0, waited.stdout + waited.stderr

    def shown() -> dict[str, Any]:
        return dict(json.loads(env.cli("campaign", "status", cid, "--json").stdout))

    first = shown()
    deadline = next(r for r in first["stop_rules"] if r["rule"] == "deadline")
    ended = datetime.fromisoformat(first["ended_at"]) - datetime.fromisoformat(first["started_at"])
    assert abs(deadline["current"] - ended.total_seconds()) <= 1.0, (deadline, ended)
    wait_for(lambda: time.time() - datetime.fromisoformat(first["ended_at"]).timestamp() > 2.5)
    later = shown()
    assert later["stop_rules"] == first["stop_rules"]
    assert later["deadline_left_s"] == first["deadline_left_s"] == deadline["remaining"]
    # whole seconds (walk 91 F11: `7198.764630556107`), still numbers
    assert isinstance(first["deadline_left_s"], float) and first["deadline_left_s"].is_integer()
    assert float(deadline["current"]).is_integer()
    text = env.cli("campaign", "status", cid).stdout
    # said as where it ended, not as a clock still running (walk97 F12: a completed campaign
    # printed '(19m53s left)' and '19m53s remaining (not met)')
    left = format_duration(deadline["remaining"])
    assert f"(the campaign ended {left} before it)" in text, text
    assert f"{left} remaining at its end (not met)" in text, text
    assert " left)" not in text and "remaining (not met)" not in text, text


def test_a_campaign_that_ended_without_a_best_says_none_and_why() -> None:
    """A walk read `best: none yet` on a finished campaign (its runs recorded no value of its
    metric): a best that will never come. While it runs, `none yet`; once it ended, `none`
    and why."""
    from ajetd.core.campaignrecord import CampaignState, ExpState, best_line

    spec = cs.parse_campaign("name: c\nmetric: accuracy\nbase: b.md\nresult_dir: /r\n", {"b.md"})
    crashed = ExpState(0, "baseline", "unchanged", run_id="k3x9az", recorded=True, status="crash")
    running = CampaignState("c-k3x9az", 0.0, experiments=[crashed])
    assert best_line(spec, running) == "none yet"
    ended = CampaignState("c-k3x9az", 0.0, experiments=[crashed], done=True, phase="done")
    assert best_line(spec, ended) == "none: no experiment's run recorded a value of accuracy"
    kept = CampaignState("c-k3x9az", 0.0, experiments=[crashed], best=0.5, best_index=0)
    assert best_line(spec, kept).startswith("accuracy 0.5: baseline (run k3x9az")


def test_a_campaign_whose_valued_runs_are_none_kept_says_why_by_kind() -> None:
    """Experiments that recorded values but timed out (crash rows) read "no experiment's run
    recorded a value of accuracy" (walk 90 F10): each is counted by why it is not kept."""
    from ajetd.core.campaignrecord import CampaignState, ExpState, best_line

    spec = cs.parse_campaign("name: c\nmetric: accuracy\nbase: b.md\nresult_dir: /r\n", {"b.md"})

    def row(index: int, status: str, run_status: str, value: float | None = 0.5) -> ExpState:
        return ExpState(
            index,
            f"e{index}",
            "d",
            recorded=True,
            status=status,
            run_status=run_status,
            value=value,
        )

    def said(*rows: ExpState) -> str:
        return best_line(spec, CampaignState("c", 0.0, experiments=list(rows), done=True))

    crash = " (a run that failed, timed out or diverged is a crash, whatever it recorded)"
    timeouts = [row(i, "crash", "time_limit") for i in range(4)]
    assert said(*timeouts) == (
        "none: none of the 4 experiments that recorded accuracy is kept: all timed out" + crash
    )
    assert said(timeouts[0]) == (
        "none: the one experiment that recorded accuracy is not kept: it timed out" + crash
    )
    mixed = said(
        row(0, "crash", "time_limit"),
        row(1, "crash", "failed"),
        row(2, "crash", "succeeded"),  # its last validation was nan: diverged
        row(3, "stopped", "stopped"),
        row(4, "smoke", "succeeded"),
        row(5, "crash", ""),  # a record written before rows kept how their runs ended
        row(6, "crash", "failed", None),  # no value: not counted
    )
    assert mixed == (
        "none: none of the 6 experiments that recorded accuracy is kept: 1 timed out, 1 failed, "
        "1 diverged, 1 stopped, 1 smoke run (never judged), 1 crashed" + crash
    )
    assert said(row(0, "smoke", "succeeded")) == (
        "none: the one experiment that recorded accuracy is not kept: it was a smoke run "
        "(never judged)"
    )
    assert said(row(0, "crash", "failed", None)) == (
        "none: no experiment's run recorded a value of accuracy"
    )


@given(st.text(max_size=400), st.integers(min_value=1, max_value=200))
@example("&lt;", 4)  # an entity in the text: shown as written (found by CI's run)
@settings(max_examples=300, deadline=None)
def test_a_hypothesis_is_one_bounded_cell_of_campaign_md(text: str, limit: int) -> None:
    """An experiment's description in campaign.md's table (walk 81, L10: no hypothesis
    column): one line, at most `limit` characters before escaping, no `|` that splits a
    column, no `<` a viewer reads as HTML."""
    cell = table_cell(text, limit)
    assert "\n" not in cell and "\r" not in cell and all(c.isprintable() for c in cell)
    bare = cell.replace("\\|", "|").replace("&lt;", "<").replace("&amp;", "&")
    assert len(bare) <= limit and "<" not in cell
    assert "|" not in cell.replace("\\|", "")
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    kept = bare.rpartition("…")[0]  # cut at a word, what it opened closed after the `…`
    assert bare == flat or (bare == cut(flat, limit) and flat.startswith(kept))


def test_campaign_list_shows_campaigns_in_the_order_they_were_submitted(env: Env) -> None:
    """`campaign list` (walk87 F12): campaigns as they began or were submitted, not in the
    order of their random ids. Three wait in the inbox (no daemon), their times set so that
    submission order is the reverse of id order."""
    folders = [_folder(env, name, "experiments: []\n") for name in ("first", "second", "third")]
    ids = [env.cli("campaign", str(f)).stdout.strip() for f in folders]
    assert all(ids), ids
    inbox = {p.name.partition("__")[0]: p for p in (env.home / "inbox").iterdir()}
    for at, cid in enumerate(sorted(ids, reverse=True)):
        os.utime(inbox[cid], (1_700_000_000 + at, 1_700_000_000 + at), follow_symlinks=False)
    listed = [c["campaign_id"] for c in json.loads(env.cli("campaign", "list", "--json").stdout)]
    assert listed == sorted(ids, reverse=True), (listed, ids)


def test_a_stopped_campaign_says_who_stopped_it_and_when_never_a_rules_words() -> None:
    """A campaign `ajetd campaign stop` ended went on saying `stop condition not yet met: ...`
    (or `needs a decision`) in its progress, status and campaign.md. Every way it stands once
    stopped: stopping while experiments end, stopped, stopped after it waited for a decision,
    and a record stopped before the stop's time was kept."""
    from ajetd.core.campaignrecord import CampaignState, ExpState, standing
    from ajetd.views.campaign import render_report, render_status, status_json
    from ajetd.views.listing import Campaign

    t0, asked = 1_800_000_000.0, 1_800_000_600.0
    spec = cs.parse_campaign(
        "name: c\nmetric: accuracy\nbase: b.md\nresult_dir: /r\n"
        "stop: {max_experiments: 3, deadline: 2h}\nexperiments: [{name: a}, {name: b}]\n",
        {"b.md"},
    )

    def row(index: int, status: str) -> dict[str, Any]:
        return {"index": index, "status": status, "metric_value": None, "branch": ""}

    base = ExpState(0, "baseline", "unchanged", run_id="r0", recorded=True, status="keep")
    base.row = row(0, "keep")
    running = ExpState(1, "a", "try a", run_id="r1")
    state = CampaignState("c-k3x9az", t0, experiments=[base, running], stopping=True)
    state.stop_asked_at = asked
    phase, status, reason, progress = standing(state, spec, asked + 5)
    assert (phase, status) == ("running", "")
    assert reason.startswith(
        "stopping (stopped by `ajetd campaign stop` at 2027-01-15T08:10:00Z): 1 experiment(s)"
    )
    assert progress.startswith(reason.partition("; planned")[0])
    state.experiments[1] = ExpState(1, "a", "try a", run_id="r1", recorded=True, status="stopped")
    state.experiments[1].row = row(1, "stopped")
    phase, status, reason, progress = standing(state, spec, asked + 9)
    assert (phase, status) == ("done", "stopped")
    assert reason.startswith("stopped by `ajetd campaign stop` at 2027-01-15T08:10:00Z")
    assert reason.endswith("planned, not run: 2 b")
    assert progress == (
        "stopped by `ajetd campaign stop` at 2027-01-15T08:10:00Z; "
        "stop rules: 2/3 attempted, 1h49m remaining"
    )
    state.phase, state.status, state.reason, state.progress = phase, status, reason, progress
    state.done, state.ended_at = True, asked + 9
    data = status_json(spec, state, {}, asked + 3600)
    texts = [data["progress"], render_status(spec, state, data), render_report(spec, state)]
    line = Campaign.from_record({"campaign_id": state.campaign_id, **vars(state)}).line()
    for text in [*texts, line]:
        assert "not yet met" not in text and "needs a decision" not in text, text
        assert "stopped by `ajetd campaign stop` at 2027-01-15T08:10:00Z" in text, text

    # stopped where it waited for a decision (the default rule met): no `needs a decision`
    waited = CampaignState("c-k3x9az", t0, experiments=[base], stopping=True, rounds=1)
    default = cs.parse_campaign("name: c\nmetric: accuracy\nbase: b.md\nresult_dir: /r\n", {"b.md"})
    waited.experiments += [
        ExpState(i, f"e{i}", "x", run_id=f"r{i}", recorded=True, status="discard")
        for i in (1, 2, 3)
    ]
    _, status, reason, progress = standing(waited, default, asked)
    assert status == "stopped" and reason == "stopped by `ajetd campaign stop`"
    assert progress == "stopped by `ajetd campaign stop`; stop rules: 4/4 attempted"

    # a record stopped before the stop's time was kept: shown with its end, and its reason
    old = CampaignState("c-k3x9az", t0, experiments=[base], stopping=True, done=True)
    old.phase, old.status, old.ended_at = "done", "stopped", asked
    old.reason = "stopped by `ajetd campaign stop`"
    old.progress = "stop condition not yet met: 1/3 attempted, 1h50m remaining"
    data = status_json(spec, old, {}, asked + 60)
    assert data["progress"] == "stopped by `ajetd campaign stop`"
    listed = Campaign.from_record({"campaign_id": old.campaign_id, **vars(old)}).line()
    assert "not yet met" not in listed and "stopped by `ajetd campaign stop`" in listed
    assert standing(old, spec, asked)[2] == (
        "stopped by `ajetd campaign stop` at 2027-01-15T08:10:00Z; planned, not run: 1 a, 2 b"
    )


def test_a_running_experiment_whose_records_a_full_home_holds_says_so() -> None:
    """walk92 F9: on a full home `campaign status` said "no metric yet" of a run whose five
    records the daemon held in memory; `status RUN` said "none on disk yet". Its running entry
    says `held_in_memory`, and the line says where its records are, with or without one on
    disk; the status table's metric cell says `in memory`, not `-`."""
    from dataclasses import replace

    from ajetd.core import unsaved
    from ajetd.core.campaignrecord import CampaignState, ExpState
    from ajetd.core.model import Run, State
    from ajetd.views.campaign import render_status, status_json
    from ajetd.views.listing import _metric_cell

    spec = cs.parse_campaign("name: c\nmetric: accuracy\nbase: b.md\nresult_dir: /r\n", {"b.md"})
    exp = ExpState(0, "baseline", "unchanged", run_id="k3x9az")
    state = CampaignState("c-k3x9az", 0.0, experiments=[exp])
    run = Run("k3x9az", "b.md", 0.0, state=State.DONE, warnings=(unsaved.NOTE,))
    data = status_json(spec, state, {"k3x9az": run}, 1.0)
    [running] = data["running"]
    assert running["held_in_memory"] is True and running["metric"] is None
    text = render_status(spec, state, data)
    assert "no metric yet" not in text
    assert "accuracy: none on disk yet: the run's newest records are held in memory" in text
    assert _metric_cell(run) == "in memory"
    older = replace(run, metrics={"accuracy": 0.5}, history=({"accuracy": 0.5, "step": 2},))
    text = render_status(spec, state, status_json(spec, state, {"k3x9az": older}, 1.0))
    assert "last accuracy 0.5 (best 0.5) on disk; newer records are held in memory" in text
    plain = status_json(spec, state, {"k3x9az": replace(run, warnings=())}, 1.0)
    assert plain["running"][0]["held_in_memory"] is False
    assert "no metric yet" in render_status(spec, state, plain)
    assert _metric_cell(replace(run, warnings=())) == "-"
