"""A campaign's experiments run in worktrees (branch_prefix): every path of the base blueprint
that names a file of the codebase names the worktree's file, or the campaign is refused at
once, naming it (walk: an absolute exp_yaml_path crashed every experiment, each counted
against max_experiments). Overrides appended to a compound command line reach nothing (tee
took them as a file name) and are refused at once; rows never list overrides that did not
reach the program. The fake NeMo-RL launcher's accuracy is 0.30 + 0.02 x step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_campaign_live import CONFIG, _patch, committed_baseline

from conftest import ACCURACY_MAX, Env, campaign_folder, campaign_folder_of, wait_for


def _folder(env: Env, name: str, campaign: str, *, config: str, command: str, ajetd: str) -> Path:
    return campaign_folder_of(
        env, name, ACCURACY_MAX, campaign, config=config, command=command, ajetd=ajetd
    )


def _rows(env: Env, cid: str) -> list[dict[str, Any]]:
    out = env.cli("campaign", "wait", cid, "--json", "--timeout", "90")
    assert out.returncode == 0, (out.stdout, out.stderr)
    status = env.cli("campaign", "status", cid, "--json")
    assert status.returncode == 0, status.stderr
    return list(json.loads(status.stdout)["rows"])


def test_absolute_paths_inside_the_codebase_are_the_worktrees(daemon_env: Env) -> None:
    """exp_yaml_path and a stage's `requires` given absolute (inside the codebase, as
    TEMPLATE.md allows) are moved into each experiment's worktree: the patched config is the
    one that runs (6 steps: 0.42), and no experiment crashes."""
    env = daemon_env
    committed_baseline(env)
    absolute = str(env.codebase / CONFIG)
    patch = _patch(env, "HEAD", "max_num_steps: 4", "max_num_steps: 6")
    folder = _folder(
        env,
        "absyaml",
        "branch_prefix: autoresearch/absyaml\nstop: {max_experiments: 2}\n"
        "experiments:\n  - {name: longer, description: six steps, patch: longer.patch}\n",
        config=absolute,
        command=f"python examples/run_grpo.py --config {CONFIG}",
        ajetd=f"max_trials: 1\nstages:\n  - {{name: train, requires: [{absolute}]}}",
    )
    (folder / "longer.patch").write_text(patch.read_text())
    out = env.cli("campaign", str(folder))
    assert out.returncode == 0, out.stderr
    cid = out.stdout.strip()
    rows = _rows(env, cid)
    assert [(r["name"], r["status"], r["metric_value"]) for r in rows] == [
        ("baseline", "keep", 0.38),
        ("longer", "keep", 0.42),
    ], rows
    worktrees = env.tmp / "campaigns" / "absyaml" / "worktrees"
    for name in ("baseline", "longer"):
        run_id = next(r["run_id"] for r in rows if r["name"] == name)
        record = json.loads((env.home / "runs" / run_id / "state.json").read_text())
        assert record["config_path"] == str(worktrees / name / CONFIG), record
        kept = (env.home / "runs" / run_id / "blueprint.md").read_text()
        assert f"requires:\n  - {worktrees / name / CONFIG}\n" in kept, kept


def test_paths_a_worktree_cannot_hold_are_refused_at_once(env: Env) -> None:
    """An exp_yaml_path outside the codebase is refused for every run: the campaign is refused
    by `ajetd campaign FOLDER`, naming it, before any experiment counts. With branch_prefix, a
    command naming a file of the codebase by its absolute path would run the baseline's file
    in every worktree: refused, naming the path and what to write instead."""
    committed_baseline(env)
    outside = env.tmp / "elsewhere.yaml"
    outside.write_text((env.codebase / CONFIG).read_text())
    folder = _folder(
        env,
        "outyaml",
        "",
        config=str(outside),
        command=f"python examples/run_grpo.py --config {outside}",
        ajetd="max_trials: 1",
    )
    out = env.cli("campaign", str(folder))
    assert out.returncode == 2 and not out.stdout, (out.stdout, out.stderr)
    assert f"exp_yaml_path: {outside} lies outside exp_codebase_dir" in out.stderr, out.stderr

    absolute = env.codebase / CONFIG
    folder = _folder(
        env,
        "abscmd",
        "branch_prefix: autoresearch/abscmd\n",
        config=CONFIG,
        command=f"cd {env.codebase} && python examples/run_grpo.py --config={absolute}",
        ajetd="max_trials: 1",
    )
    out = env.cli("campaign", str(folder))
    assert out.returncode == 2 and not out.stdout, (out.stdout, out.stderr)
    assert f"exp_launch_command names {env.codebase} " in out.stderr, out.stderr
    assert f"exp_launch_command names {absolute} " in out.stderr, out.stderr
    assert "relative to exp_codebase_dir" in out.stderr


@pytest.mark.parametrize(
    "command",
    [
        f"python examples/run_grpo.py --config {CONFIG} grpo.max_num_steps=3 2>&1 | tee out.log",
        f"python examples/run_grpo.py --config {CONFIG}  # the smoke config",
        f"python examples/run_grpo.py --config {CONFIG}; echo done",
        f"python examples/run_grpo.py --config {CONFIG} & wait",
        f"python examples/run_grpo.py --config {CONFIG}\necho done",
    ],
)
def test_overrides_that_cannot_reach_the_program_are_refused(env: Env, command: str) -> None:
    """Overrides appended to a compound line go to its last command (tee took them as a file
    name; a comment swallowed them), yet the ledger listed them and judged the row as if the
    program had them: refused at `ajetd campaign FOLDER` and at `campaign add`, naming the
    command and why; a campaign with no overrides on such a line still starts."""
    committed_baseline(env)
    folder = _folder(
        env,
        "compound",
        "experiments:\n  - {name: two, description: two steps, overrides: [grpo.max_num_steps=2]}\n",
        config=CONFIG,
        command=command,
        ajetd="max_trials: 1",
    )
    out = env.cli("campaign", str(folder))
    assert out.returncode == 2 and not out.stdout, (out.stdout, out.stderr)
    assert "experiments[1] (two): override 'grpo.max_num_steps=2'" in out.stderr, out.stderr
    assert "would not reach the program" in out.stderr, out.stderr


def test_add_refuses_overrides_a_compound_line_drops(daemon_env: Env) -> None:
    env = daemon_env
    committed_baseline(env)
    command = f"python examples/run_grpo.py --config {CONFIG} 2>&1 | tee out.log"
    folder = _folder(env, "addpipe", "", config=CONFIG, command=command, ajetd="max_trials: 1")
    out = env.cli("campaign", str(folder))
    assert out.returncode == 0, out.stderr
    cid = out.stdout.strip()
    added = env.cli(
        "campaign", "add", cid, "--name", "two", "--description", "x", "--overrides", "a.b=2"
    )
    assert added.returncode == 2, (added.stdout, added.stderr)
    assert "override 'a.b=2'" in added.stderr and "| tee out.log" in added.stderr, added.stderr


def test_a_name_two_campaigns_have_is_refused_by_status_too(daemon_env: Env) -> None:
    """`ajetd status --campaign NAME` showed one of two campaigns of that name (whichever
    came first) while `campaign status NAME` refused: both refuse, naming the ids."""
    env = daemon_env
    ids = []
    for n in (1, 2):
        folder = _folder(
            env,
            f"twin{n}",
            "baseline: false\n",
            config=CONFIG,
            command="python -c 'print(1)'",
            ajetd="max_trials: 1",
        )
        text = (folder / "campaign.yaml").read_text().replace(f"name: twin{n}", "name: twin")
        (folder / "campaign.yaml").write_text(text)
        out = env.cli("campaign", str(folder))
        assert out.returncode == 0, out.stderr
        ids.append(out.stdout.strip())
    for cid in ids:
        wait_for(
            lambda cid=cid: env.cli("campaign", "status", cid, "--json").returncode == 0,
            timeout=30,
            what=f"campaign {cid} claimed",
        )
    for args in (("status", "--campaign", "twin"), ("campaign", "status", "twin")):
        out = env.cli(*args)
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert f"2 campaigns are named 'twin': {', '.join(sorted(ids))}" in out.stderr, out.stderr
    for cid in ids:  # by its id, each is shown
        assert env.cli("status", "--campaign", cid).returncode == 0


def test_an_own_blueprint_whose_line_drops_overrides_is_refused_at_launch(
    daemon_env: Env,
) -> None:
    """Overrides for an experiment with its own blueprint go to that blueprint's command: on
    a compound line they would reach its last command, so the experiment is refused when it
    is due (a crash row with the reason), and its row lists no overrides it never had."""
    env = daemon_env
    committed_baseline(env)
    folder = _folder(
        env,
        "ownpipe",
        "baseline: false\n",
        config=CONFIG,
        command="python -c 'print(1)'",
        ajetd="max_trials: 1",
    )
    out = env.cli("campaign", str(folder))
    assert out.returncode == 0, out.stderr
    cid = out.stdout.strip()
    own = env.blueprint(
        "ownpipe-own", config=CONFIG, command="python -c 'import sys; print(sys.argv)' | cat"
    )
    added = env.cli(
        "campaign", "add", cid, "--name", "piped", "--description", "x",
        "--blueprint", str(own), "--overrides", "a.b=2",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    row = env.cli("campaign", "wait", cid, "--after", "-1", "--json", "--timeout", "60")
    assert row.returncode == 1, (row.stdout, row.stderr)  # a crash row
    status = env.cli("campaign", "status", cid, "--json")
    rows = json.loads(status.stdout)["rows"]
    assert [(r["name"], r["status"], r["overrides"]) for r in rows] == [("piped", "crash", [])]
    assert "overrides a.b=2 would not reach the program: '| cat' follows" in rows[0]["reason"]


def test_a_campaign_asking_more_gpus_than_the_machine_has_is_refused_at_once(env: Env) -> None:
    """walk87 F11: `gpus: 2` on a machine of one GPU was accepted, then every experiment
    crashed at its launch and the budget was spent in seconds. Refused as lint refuses a
    blueprint's, exit 2, nothing in the inbox; `gpus: 1` is taken."""
    env.fake_gpus(1)
    folder = campaign_folder(env, "big", env.tmp / "campaign-results")
    spec = folder / "campaign.yaml"
    spec.write_text(spec.read_text() + "gpus: 2\n")
    out = env.cli("campaign", str(folder))
    assert out.returncode == 2, out
    assert "campaign.yaml's gpus: gpus: 2 asks for more GPUs than this machine has (1 visible)" in (
        out.stderr
    ), out.stderr
    assert not (env.home / "inbox").exists() or list((env.home / "inbox").iterdir()) == []
    spec.write_text(spec.read_text().replace("gpus: 2\n", "gpus: 1\n"))
    assert env.cli("campaign", str(folder)).returncode == 0


def test_a_patch_runs_on_the_default_branch_prefix(daemon_env: Env) -> None:
    """Walk97b F5: without branch_prefix the default prefix holds, so a patch (in campaign.yaml
    and by `campaign add --patch`) is taken and committed on a branch under it; it was
    refused "a patch needs branch_prefix" while the campaign's own `git:` line named the
    default. Where the default cannot be used (changes not committed), a patch is refused
    saying why; `branch_prefix: false` refuses it too."""
    env = daemon_env
    committed_baseline(env)
    patch = _patch(env, "HEAD", "max_num_steps: 4", "max_num_steps: 6")
    command = f"python examples/run_grpo.py --config {CONFIG}"
    folder = _folder(
        env,
        "dflt",
        "stop: {max_experiments: 3}\n"
        "experiments:\n  - {name: longer, description: six steps, patch: longer.patch}\n",
        config=CONFIG,
        command=command,
        ajetd="max_trials: 1",
    )
    (folder / "longer.patch").write_text(patch.read_text())
    linted = env.cli("lint", str(folder))
    assert linted.returncode == 0, linted.stderr
    out = env.cli("campaign", str(folder))
    assert out.returncode == 0, out.stderr
    cid = out.stdout.strip()
    wait_for(lambda: _status(env, cid)["state"] == "waiting", timeout=90, what="two rows")
    added = env.cli(
        "campaign", "add", cid, "--name", "again", "--description", "d", "--patch", str(patch)
    )
    assert added.returncode == 0, added.stderr
    rows = _rows(env, cid)
    assert [(r["name"], r["status"]) for r in rows] == [
        ("baseline", "keep"),
        ("longer", "keep"),
        ("again", "discard"),
    ], rows
    assert rows[1]["branch"].startswith("autoresearch/") and rows[1]["branch"].endswith(
        "-dflt/longer"
    ), rows[1]
    # changes not committed: the default cannot be used, and the patch would not be applied
    (env.codebase / CONFIG).write_text((env.codebase / CONFIG).read_text() + "# edited\n")
    (folder / "campaign.yaml").write_text(
        (folder / "campaign.yaml")
        .read_text()
        .replace("name: dflt", "name: dirty")
        .replace("/dflt", "/dirty")
    )
    refused = env.cli("campaign", str(folder))
    assert refused.returncode == 2, refused.stdout
    assert "experiments: a patch needs a branch: campaign.yaml gives no branch_prefix" in (
        refused.stderr
    ), refused.stderr


def _status(env: Env, cid: str) -> dict[str, Any]:
    return dict(json.loads(env.cli("campaign", "status", cid, "--json").stdout))


def test_a_patch_that_holds_no_change_is_refused_at_once(daemon_env: Env) -> None:
    """Walk97b F3: `campaign add --patch` of an empty patch (CAMPAIGN.md's `sed` changed
    nothing on a real config, and `diff` wrote 0 bytes) was filed and became a crash row
    `No valid patches in input`, an attempt spent. Refused at once (exit 2, nothing filed),
    as is text that holds no diff; a campaign.yaml naming such a patch is refused at submit."""
    env = daemon_env
    folder = campaign_folder(env, "nochange", env.tmp / "campaigns" / "nochange", 3)
    out = env.cli("campaign", str(folder))
    assert out.returncode == 0, out.stderr
    cid = out.stdout.strip()
    empty = env.tmp / "idea.patch"
    empty.write_text("")
    prose = env.tmp / "prose.patch"
    prose.write_text("I meant to train longer\n")
    for path, said in ((empty, "is empty"), (prose, "holds no diff")):
        added = env.cli(
            "campaign", "add", cid, "--name", "x", "--description", "d", "--patch", str(path)
        )
        assert added.returncode == 2, (added.stdout, added.stderr)
        assert f"patch {path} {said}" in added.stderr, added.stderr
        assert "git would apply nothing" in added.stderr, added.stderr
    status = json.loads(env.cli("campaign", "status", cid, "--json").stdout)
    assert status["planned"] == [] and status["refused_requests"] == [], status
    # in campaign.yaml: refused where it comes in, naming the experiment
    other = campaign_folder(env, "nochange2", env.tmp / "campaigns" / "nochange2")
    (other / "empty.patch").write_text("\n")
    (other / "campaign.yaml").write_text(
        (other / "campaign.yaml").read_text()
        + "experiments:\n  - {name: longer, description: d, patch: empty.patch}\n"
    )
    refused = env.cli("campaign", str(other))
    assert refused.returncode == 2, refused.stdout
    assert "experiments[1] (longer): patch empty.patch is empty" in refused.stderr, refused.stderr
