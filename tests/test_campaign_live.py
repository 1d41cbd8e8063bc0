"""Live campaigns end to end, through the CLI only, as an agent runs seed 002's loop: start a
campaign with no experiments, read where it stands, add one hypothesis at a time, wait for
its row, decide the next from it; default stop rules, smoke runs, stop, deadline, restart.
The fake NeMo-RL launcher's accuracy is 0.30 + 0.02 x step at each validation."""

from __future__ import annotations

import difflib
import json
import re
import signal
import struct
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from ajetd.core.blueprint import parse_blueprint
from ajetd.core.errors import BlueprintError
from conftest import ACCURACY_MAX, Env, campaign_folder_of, git, wait_for
from conftest import FAKE_GRPO_CONFIG as CONFIG

ROOT = Path(__file__).parent.parent


def _json(env: Env, *args: str) -> Any:
    out = env.cli(*args)
    assert out.returncode == 0, (args, out.stdout, out.stderr)
    return json.loads(out.stdout)


def _folder(env: Env, name: str, campaign: str, command: str) -> Path:
    """A campaign on accuracy (max) whose base runs `command` on the fake NeMo-RL's config."""
    return campaign_folder_of(env, name, ACCURACY_MAX, campaign, command=command)


def _patch(env: Env, ref: str, old: str, new: str) -> Path:
    """A patch against the config as it is at `ref` (what an agent writes with git diff)."""
    before = git(env.codebase, "show", f"{ref}:{CONFIG}") + "\n"
    after = before.replace(old, new)
    assert after != before
    diff = difflib.unified_diff(
        before.splitlines(True), after.splitlines(True), f"a/{CONFIG}", f"b/{CONFIG}"
    )
    path = env.tmp / f"patch-{len(list(env.tmp.glob('patch-*')))}.diff"
    path.write_text("".join(diff))
    return path


def _ledger(env: Env, name: str) -> list[dict[str, str]]:
    lines = (env.tmp / "campaigns" / name / "ledger.tsv").read_text().splitlines()
    return [dict(zip(lines[0].split("\t"), line.split("\t"), strict=True)) for line in lines[1:]]


def _png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk; fails on anything else."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _add(env: Env, cid: str, *args: str) -> subprocess.CompletedProcess[str]:
    return env.cli("campaign", "add", cid, *args)


def committed_baseline(env: Env) -> str:
    """The fake NeMo-RL codebase as a git repository whose config trains 4 steps and validates
    every 2 (accuracy 0.38); its HEAD commit."""
    config = env.codebase / CONFIG
    config.write_text(
        config.read_text()
        .replace("max_num_steps: 1000000", "max_num_steps: 4")
        .replace("val_period: 10", "val_period: 2")
    )
    git(env.codebase, "init", "-q", "-b", "main")
    git(env.codebase, "add", "-A")
    git(env.codebase, "commit", "-q", "-m", "base")
    return git(env.codebase, "rev-parse", "HEAD")


@pytest.mark.pictures
def test_the_seed_loop_through_the_cli(daemon_env: Env) -> None:
    env = daemon_env
    head = committed_baseline(env)
    (env.codebase / "notes.txt").write_text("the user's own work")
    folder = _folder(
        env,
        "loop",
        "branch_prefix: autoresearch/loop\nstop: {max_experiments: 4, deadline: 1h}\n",
        f"python examples/run_grpo.py --config {CONFIG}",
    )
    out = env.cli("campaign", str(folder))
    assert out.returncode == 0, out.stderr
    cid = out.stdout.strip()
    assert re.fullmatch(r"c-[a-z0-9]{6}", cid)

    # the baseline runs first; the agent reads its row
    row = _json(env, "campaign", "wait", cid, "--after", "-1", "--json", "--timeout", "60")
    assert (row["index"], row["name"], row["status"], row["metric_value"]) == (
        0,
        "baseline",
        "keep",
        0.38,
    )
    # ... and where the campaign stands: it waits for the next hypothesis
    status = _json(env, "campaign", "status", cid, "--json")
    assert status["state"] == "waiting" and "campaign add" in status["reason"]
    assert status["goal"] == {"metric": "accuracy", "direction": "max"}
    assert (status["attempted"], status["remaining"]) == (1, 3)
    assert re.match(
        r"stop condition not yet met: 1/4 attempted, 5\dm\d*s? remaining$", status["progress"]
    )
    assert {r["rule"]: r["met"] for r in status["stop_rules"]} == {
        "max_experiments": False,
        "deadline": False,
    }
    assert 3000 < status["deadline_left_s"] <= 3600
    assert status["best"]["name"] == "baseline" and status["best"]["commit"]
    assert status["best"]["branch"] == "autoresearch/loop/baseline"
    assert status["running"] == [] and len(status["rows"]) == 1
    # nothing runs and nothing is planned: `wait --next` returns no old row, it exits 2 at
    # once (what the campaign waits for on stderr); `--after -1` gives the first row again
    again = env.cli("campaign", "wait", cid, "--next", "--json", "--timeout", "5")
    assert again.returncode == 2 and "ajetd campaign add" in again.stderr, again.stderr
    assert json.loads(again.stdout)["state"] == "waiting"
    assert _json(env, "campaign", "wait", cid, "--after", "-1", "--json")["index"] == 0
    md = (env.tmp / "campaigns" / "loop" / "campaign.md").read_text()
    assert "stop condition not yet met: 1/4 attempted" in md and "waiting" in md

    # a bad experiment is refused with the reason, and changes nothing
    bad = _add(env, cid, "--name", "baseline", "--description", "again")
    assert (
        bad.returncode == 2
        and "name 'baseline' is reserved for the campaign's own first row" in bad.stderr
    )
    bad = _add(env, cid, "--name", "x", "--description", "d", "--from", "no-such-branch")
    assert bad.returncode == 2 and "no such branch or commit" in bad.stderr
    assert _json(env, "campaign", "status", cid, "--json")["planned"] == []

    # hypothesis 1 improves the metric: more steps
    improve = _patch(env, head, "max_num_steps: 4", "max_num_steps: 6")
    out = _add(
        env, cid, "--name", "more-steps", "--description", "train longer", "--patch", str(improve)
    )
    assert (out.returncode, out.stdout.strip()) == (0, "1"), out.stderr
    row = _json(env, "campaign", "wait", cid, "--after", "0", "--json", "--timeout", "60")
    assert (row["name"], row["status"], row["metric_value"]) == ("more-steps", "keep", 0.42)

    # the daemon restarts while the campaign waits: nothing is lost, the loop goes on
    wait_for(lambda: _json(env, "campaign", "status", cid, "--json")["state"] == "waiting")
    env.daemons[-1].send_signal(signal.SIGTERM)
    env.daemons[-1].wait(timeout=30)
    status = _json(env, "campaign", "status", cid, "--json")
    assert (status["state"], status["attempted"]) == ("waiting", 2)
    best = status["best"]
    assert (best["name"], best["value"], best["branch"]) == (
        "more-steps",
        0.42,
        "autoresearch/loop/more-steps",
    )

    # hypothesis 2 starts from the best branch and worsens the metric: fewer steps; it is
    # added while no daemon runs: the request waits, and the next daemon applies it once
    worse = _patch(env, best["branch"], "max_num_steps: 6", "max_num_steps: 2")
    out = _add(
        env,
        cid,
        "--name",
        "fewer-steps",
        "--description",
        "train less",
        "--patch",
        str(worse),
        "--from",
        best["branch"],
    )
    assert out.returncode == 1 and "no daemon is running" in out.stderr, out.stderr
    env.start_daemon()
    row = _json(env, "campaign", "wait", cid, "--after", "1", "--json", "--timeout", "60")
    assert (row["status"], row["metric_value"]) == ("discard", 0.34)
    assert row["parent_commit"] == best["commit"]
    status = _json(env, "campaign", "status", cid, "--json")  # the row and the wait: one write
    assert (status["state"], status["attempted"], status["remaining"]) == ("waiting", 3, 1)
    assert status["best"]["name"] == "more-steps"  # a discard never becomes the best

    # hypothesis 3 crashes (validation every 0 steps)
    crash = _patch(env, head, "val_period: 2", "val_period: 0")
    out = _add(
        env,
        cid,
        "--name",
        "no-validation",
        "--description",
        "validate never",
        "--patch",
        str(crash),
    )
    assert out.returncode == 0, out.stderr
    wait = env.cli("campaign", "wait", cid, "--after", "2", "--json", "--timeout", "60")
    assert wait.returncode == 1 and json.loads(wait.stdout)["status"] == "crash"

    # the fourth attempt ended: the stop rule is met, the campaign ends, a fifth is refused
    assert env.cli("campaign", "wait", cid, "--timeout", "30").returncode == 0
    status = _json(env, "status", cid, "--json")  # a campaign id works where a run id would
    assert (status["state"], status["status"]) == ("done", "completed")
    assert status["progress"] == "stop condition met: 4/4 attempted"
    fifth = _add(env, cid, "--name", "fifth", "--description", "one more")
    assert fifth.returncode == 2 and "stop condition met: 4/4 attempted" in fifth.stderr

    rows = _ledger(env, "loop")
    assert [(r["index"], r["branch"], r["status"]) for r in rows] == [
        ("0", "autoresearch/loop/baseline", "keep"),
        ("1", "autoresearch/loop/more-steps", "keep"),
        ("2", "autoresearch/loop/fewer-steps", "discard"),
        ("3", "autoresearch/loop/no-validation", "crash"),
    ]
    assert [r["description"] for r in rows[1:]] == ["train longer", "train less", "validate never"]
    for r in rows[1:]:  # each hypothesis is one commit on its branch, on its parent
        assert git(env.codebase, "rev-parse", r["branch"]) == r["commit"]
        assert git(env.codebase, "rev-parse", f"{r['commit']}^") == r["parent_commit"]
        message = git(env.codebase, "log", "-1", "--format=%s", r["commit"])
        assert message.startswith(f"hypothesis: {r['description']}")
    assert "max_num_steps: 2" in git(env.codebase, "show", f"{rows[2]['commit']}:{CONFIG}")
    # the user's checkout is untouched
    assert git(env.codebase, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert git(env.codebase, "rev-parse", "HEAD") == head
    assert git(env.codebase, "status", "--porcelain", "--untracked-files=no") == ""
    assert (env.codebase / "notes.txt").read_text() == "the user's own work"

    listed = _json(env, "campaign", "list", "--json")
    assert [(c["campaign_id"], c["status"]) for c in listed] == [(cid, "completed")]
    assert cid in env.cli("campaign", "list").stdout
    text = env.cli("campaign", "status", "loop").stdout  # by its name too
    assert "stop condition met: 4/4 attempted" in text and "more-steps" in text
    png = env.tmp / "campaigns" / "loop" / "progress.png"
    wait_for(lambda: png.exists() and b"IEND" in png.read_bytes()[-16:], timeout=60, what="plot")
    width, height = _png_size(png)
    assert width > 100 and height > 100
    assert "Traceback" not in env.daemon_log()


@pytest.mark.pictures
def test_default_stop_rule_smoke_runs_and_stop(daemon_env: Env) -> None:
    env = daemon_env
    folder = _folder(
        env,
        "nostop",
        (
            "parallel: 2\nexperiments:\n"
            "  - {name: pipeline, description: does it run, smoke: true,"
            " overrides: [grpo.max_num_steps=2]}\n"
            "  - {name: short, overrides: [grpo.max_num_steps=2]}\n"
            "  - {name: long, overrides: [grpo.max_num_steps=6]}\n"
            "  - {name: short2, overrides: [grpo.max_num_steps=2]}\n"
            "  - {name: later, overrides: [grpo.max_num_steps=2]}\n"
        ),
        f"python examples/run_grpo.py --config {CONFIG} grpo.max_num_steps=4 grpo.val_period=2",
    )
    cid = env.cli("campaign", str(folder)).stdout.strip()
    assert cid, "the campaign was not taken"
    # a plot that cannot be written is logged; the campaign goes on (made once the daemon
    # took it, its campaign.md written: a campaign whose result dir already holds a
    # progress.png is refused, 18cce6f; the first plot comes once the baseline has ended)
    result = env.tmp / "campaigns" / "nostop"
    wait_for((result / "campaign.md").exists, what="the campaign taken")
    (result / "progress.png").mkdir()
    # no stop rule: the baseline and three experiments (the smoke run counts for nothing)
    done = env.cli("campaign", "wait", cid, "--timeout", "90", "--json", timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    status = json.loads(done.stdout)
    assert (status["state"], status["status"]) == ("done", "needs_decision")
    assert status["default_stop_rule"] and status["attempted"] == 4
    assert "best accuracy 0.42 (long)" in status["reason"]
    assert [p["name"] for p in status["planned"]] == ["later"]
    assert [(r["name"], r["status"]) for r in status["rows"]] == [
        ("baseline", "keep"),
        ("pipeline", "smoke"),
        ("short", "discard"),
        ("long", "keep"),
        ("short2", "discard"),
    ] or sorted(r["status"] for r in status["rows"]) == sorted(
        ["keep", "smoke", "discard", "keep", "discard"]
    )
    assert next(r for r in status["rows"] if r["name"] == "pipeline")["status"] == "smoke"
    refused = _add(env, cid, "--name", "more", "--description", "one more")
    assert refused.returncode == 2 and "needs a decision" in refused.stderr

    wait_for(lambda: "progress.png not drawn" in env.daemon_log(), timeout=60, what="the log")

    # --continue: three more; a long one (its own blueprint) shows its live metric, then the
    # campaign is stopped
    slow_blueprint = env.blueprint(
        "slow",
        config=CONFIG,
        command=f"python examples/run_grpo.py --config {CONFIG} grpo.max_num_steps=2",
    )
    out = _add(
        env,
        cid,
        "--continue",
        "--name",
        "slow",
        "--description",
        "very long",
        "--blueprint",
        str(slow_blueprint),
        "--overrides",  # several after one flag, as the contract writes it
        "grpo.max_num_steps=2000",
        "grpo.val_period=2",
    )
    assert (out.returncode, out.stdout.strip()) == (0, "6"), out.stderr

    def live() -> Any:
        running = _json(env, "campaign", "status", cid, "--json")["running"]
        return [r for r in running if r["name"] == "slow" and r["metric"] is not None]

    slow = wait_for(live, timeout=60, what="the slow experiment's live metric")[0]
    assert slow["metric"] >= 0.34 and slow["run_state"] == "running"
    stopped = env.cli("campaign", "stop", cid, "--timeout", "60")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stderr
    status = _json(env, "campaign", "status", cid, "--json")
    assert (status["state"], status["status"]) == ("done", "stopped")
    slow_row = next(r for r in status["rows"] if r["name"] == "slow")
    assert slow_row["status"] == "stopped"
    assert "grpo.max_num_steps=2 grpo.max_num_steps=2000 grpo.val_period=2" in slow_row["command"]
    assert len(_ledger(env, "nostop")) == 7
    assert env.cli("campaign", "wait", cid).returncode == 1
    again = _add(env, cid, "--name", "after", "--description", "too late")
    assert again.returncode == 2 and "stopped" in again.stderr


def test_a_deadline_ends_a_waiting_campaign(daemon_env: Env) -> None:
    env = daemon_env
    folder = _folder(
        env, "brief", "baseline: false\nstop: {deadline: 2s}\n", "python -c 'print(1)'"
    )
    cid = env.cli("campaign", str(folder)).stdout.strip()
    # it waits for an `add` (`wait` exits 2 then), until the deadline ends it
    wait_for(
        lambda: "deadline reached" in env.cli("campaign", "status", cid, "--json").stdout,
        what="the deadline to end the empty campaign",
    )
    out = env.cli("wait", cid, "--timeout", "30")  # `ajetd wait` takes a campaign id too
    assert out.returncode == 3, out.stdout + out.stderr  # completed, nothing run: no best
    assert "deadline reached" in out.stdout
    late = _add(env, cid, "--name", "late", "--description", "past the deadline")
    assert late.returncode == 2 and "deadline reached" in late.stderr
    # a new deadline (from now) and the campaign goes on: it waits again; then it is stopped
    out = env.cli("campaign", "set", cid, "--deadline", "1h")
    assert out.returncode == 0, out.stderr
    assert re.match(
        r"stop condition not yet met: 0 attempted, (1h|5\dm\d*s?) remaining", out.stdout
    )
    status = _json(env, "campaign", "status", cid, "--json")
    assert (status["state"], status["status"]) == ("waiting", None)
    stop = env.cli("campaign", "stop", cid)
    assert stop.returncode == 0, stop.stderr
    status = _json(env, "campaign", "status", cid, "--json")
    assert status["status"] == "stopped"
    # who stopped it and when, everywhere; never a stop rule's words (it said `stop condition
    # not yet met: 0 attempted, 59m remaining` once stopped)
    by = r"stopped by `ajetd campaign stop` at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
    assert re.match(by, status["reason"]) and re.match(by, status["progress"]), status
    said = [
        stop.stdout,
        status["progress"],
        env.cli("campaign", "status", cid).stdout,
        wait_for(lambda: _stopped_report(Path(status["report"])), what="campaign.md rewritten"),
        env.cli("status").stdout,
    ]
    for text in said:
        assert "not yet met" not in text and re.search(by, text), text
    assert env.cli("campaign", "status", "c-zzzzzz").returncode == 2  # unknown: usage error


def _stopped_report(path: Path) -> str | None:
    text = path.read_text() if path.exists() else ""
    return text if "(stopped)" in text else None


def test_campaign_commands_import_none_of_the_daemon(env: Env) -> None:
    """`campaign status / wait / list` read the record: no daemon module, no matplotlib."""
    from test_cli_imports import imported

    folder = env.home / "campaigns" / "c-abc123" / "folder"
    folder.mkdir(parents=True)
    (folder / "campaign.yaml").write_text("name: rec\nbase: base.md\nresult_dir: /tmp/rec\n")
    (folder / "base.md").write_text(env.blueprint("rec").read_text())
    record = {"campaign_id": "c-abc123", "started_at": 1.0, "name": "rec", "phase": "done"}
    record.update(status="completed", done=True, reason="stop condition met")
    (folder.parent / "state.json").write_text(json.dumps(record))
    heavy = (
        "ajetd.daemon.loop",
        "ajetd.daemon.campaigns",
        "ajetd.daemon.trials",
        "ajetd.daemon.admission",
        "ajetd.adapters.tmux",
        "matplotlib",
        "libtmux",
        "watchdog",
        "psutil",
    )
    for args in (
        ("campaign", "status", "c-abc123", "--json"),
        ("campaign", "wait", "c-abc123"),
        ("campaign", "list"),
    ):
        modules = imported(env, *args)
        assert "ajetd.cli.campaign" in modules, args
        assert not [m for m in modules if m.startswith(heavy)], args


def test_campaign_status_of_a_live_campaign_says_when_no_daemon_runs(env: Env) -> None:
    """`ajetd status` says the daemon is not running; `campaign status` of a campaign that
    had not ended said nothing of it (exit 0), and nothing moved it. Said on stderr (the JSON
    stays the contract); an ended campaign needs no daemon."""
    folder = env.home / "campaigns" / "c-abc123" / "folder"
    folder.mkdir(parents=True)
    (folder / "campaign.yaml").write_text("name: rec\nbase: base.md\nresult_dir: /tmp/rec\n")
    (folder / "base.md").write_text(env.blueprint("rec").read_text())
    record = {"campaign_id": "c-abc123", "started_at": 1.0, "name": "rec", "phase": "running"}
    (folder.parent / "state.json").write_text(json.dumps(record))
    for args in (("campaign", "status", "c-abc123"), ("campaign", "status", "c-abc123", "--json")):
        out = env.cli(*args)
        assert out.returncode == 0 and "daemon: not running" in out.stderr, (args, out.stderr)
    record.update(phase="done", status="completed", done=True, reason="stop condition met")
    (folder.parent / "state.json").write_text(json.dumps(record))
    assert "daemon:" not in env.cli("campaign", "status", "c-abc123").stderr


def _claimed(env: Env, name: str, most: int) -> tuple[Any, str, Any]:
    """A campaign (no baseline, at most `most` experiments) submitted and claimed by the
    daemon's campaign runner, in this process: the home, its id, the runner."""
    import time

    from ajetd.adapters.store import Home
    from ajetd.daemon.campaigns import Campaigns
    from ajetd.hosts.campaignfolder import submit_folder

    home = Home(env.home)
    home.ensure()
    stop = f"baseline: false\nstop: {{max_experiments: {most}}}\n"
    cid = submit_folder(home, _folder(env, name, stop, "true"))
    runner = Campaigns(home)
    runner.load(time.time())
    runner.claim(time.time())
    return home, cid, runner


def test_a_request_seen_again_is_answered_not_applied_twice(env: Env) -> None:
    """The daemon saves a request's change and answer in one write, then removes it; one found
    again (a crash in between) is answered from the record, never applied twice."""
    import time

    from ajetd.adapters.control import answer_file, file_request
    from ajetd.core import campaignspec as cs
    from ajetd.daemon.campaigns import Campaigns

    home, cid, runner = _claimed(env, "once", 5)
    now = time.time()
    req = file_request(home, cid, {"op": "add", "entry": cs.entry("a", "the idea")})
    request = home.control / f"{cid}.campaign-{req}.json"
    filed = request.read_text()
    runner.tick(now, {})
    first = json.loads(answer_file(home, cid, req).read_text())
    assert first["ok"] and first["index"] == 0 and not request.exists()
    request.write_text(filed)  # as if the daemon died before removing it
    answer_file(home, cid, req).unlink()
    again = Campaigns(home)  # a restarted daemon
    again.load(time.time())
    again.tick(now + 1, {})
    assert json.loads(answer_file(home, cid, req).read_text()) == first
    state = again.states[cid]
    assert [e["name"] for e in state.added] == ["a"] and len(state.experiments) == 1
    assert not request.exists()


# A name given to `ajetd campaign add` goes into a file name (`added-NN-<name>.patch`, beside
# the campaign's copy of its folder) and a branch name. Before: checked only by the daemon,
# after the file name was made of it, and a name ending in a line break passed (`$` matched
# before it): `ok\n` named a patch file `added-00-ok\n.patch`.
BAD_NAMES = ["a/b", "..", "../../../x", "a\nb", "ok\n", "x" * 300, "a b", "-x"]


def test_a_name_that_cannot_be_a_file_name_is_refused_by_add(env: Env) -> None:
    for name in BAD_NAMES:  # refused before any request is filed (NUL cannot be in argv)
        out = _add(env, "c-abc123", "--name", name, "--description", "d")
        assert out.returncode == 2 and "--name" in out.stderr and "name " in out.stderr, (
            name,
            out.stderr,
        )
        assert "Traceback" not in out.stderr
    assert not list(env.home.glob("control/*"))


def test_a_request_whose_name_cannot_be_a_file_name_is_refused_by_the_daemon(env: Env) -> None:
    """A request filed by other means than the CLI (by hand, a program): its name is checked
    before it goes into a path, NUL included; nothing is written, the campaign goes on."""
    import time

    from ajetd.adapters.control import answer_file, file_request
    from ajetd.core import campaignspec as cs

    home, cid, runner = _claimed(env, "names", 20)
    now = time.time()
    before = sorted(p for p in env.tmp.rglob("*") if "added" in p.name)
    for name in [*BAD_NAMES, "a\0b", "baseline"]:
        entry = cs.entry(name, "the idea")
        req = file_request(home, cid, {"op": "add", "entry": entry, "patch_text": "x\n"})
        runner.tick(now, {})
        answer = json.loads(answer_file(home, cid, req).read_text())
        assert not answer["ok"] and answer["error"].startswith("name "), (name, answer)
    assert sorted(p for p in env.tmp.rglob("*") if "added" in p.name) == before
    assert runner.states[cid].added == []
    req = file_request(home, cid, {"op": "add", "entry": cs.entry("fine", "an idea")})
    runner.tick(now, {})
    assert json.loads(answer_file(home, cid, req).read_text())["ok"]


def test_requests_and_folders_are_taken_only_when_safe(env: Env) -> None:
    """Another user's request file, a control or inbox folder writable by others: nothing is
    taken until it is fixed (the rule for blueprints, for campaigns too)."""
    import os
    import time

    import pytest

    from ajetd.adapters.control import answer_file, file_request
    from ajetd.adapters.store import Home
    from ajetd.core import campaignspec as cs
    from ajetd.daemon.campaigns import Campaigns
    from ajetd.hosts.campaignfolder import submit_folder

    if os.getuid() != 0:
        pytest.skip("needs root to give a file to another user")
    home = Home(env.home)
    home.ensure()
    folder = _folder(env, "safe", "baseline: false\nstop: {max_experiments: 5}\n", "true")
    runner = Campaigns(home)
    runner.load(time.time())
    now = time.time()
    os.chmod(home.inbox, 0o777)
    cid = submit_folder(home, folder)
    runner.claim(now)
    assert cid not in runner.states
    os.chmod(home.inbox, 0o700)
    runner.claim(now)
    assert cid in runner.states
    req = file_request(home, cid, {"op": "add", "entry": cs.entry("a", "idea")})
    request = home.control / f"{cid}.campaign-{req}.json"
    os.chown(request, 65534, 65534)
    runner.tick(now, {})
    assert request.exists() and not answer_file(home, cid, req).exists()
    os.chown(request, 0, 0)
    os.chmod(home.control, 0o777)
    runner.tick(now, {})
    assert request.exists() and not answer_file(home, cid, req).exists()
    os.chmod(home.control, 0o700)
    runner.tick(now, {})
    assert json.loads(answer_file(home, cid, req).read_text())["ok"]


def test_default_rule_then_set_continue_then_a_count_rule(env: Env) -> None:
    """The campaign runner alone, its runs played by records: baseline + three experiments end
    in needs_decision; `set --continue` grants three more; `set --max-experiments` met ends it."""
    import time

    from ajetd.adapters.control import answer_file, file_request
    from ajetd.adapters.store import Home
    from ajetd.core import campaignspec as cs
    from ajetd.core.model import Run, State, Status
    from ajetd.daemon.campaigns import Campaigns
    from ajetd.hosts.campaignfolder import submit_folder

    home = Home(env.home)
    home.ensure()
    cid = submit_folder(home, _folder(env, "decide", "", "true"))
    runner = Campaigns(home)
    runner.load(time.time())
    now = time.time()
    runner.claim(now)
    state = runner.states[cid]
    runs: dict[str, Run] = {}

    def end_running(value: float) -> None:
        for exp in state.experiments:
            if exp.run_id and exp.run_id not in runs:
                history = ({"accuracy": value},)
                runs[exp.run_id] = Run(
                    exp.run_id,
                    "x.md",
                    now,
                    state=State.DONE,
                    status=Status.SUCCEEDED,
                    history=history,
                )
        runner.tick(now, runs)

    def ask(payload: dict[str, Any]) -> dict[str, Any]:
        req = file_request(home, cid, payload)
        runner.tick(now, runs)
        return dict(json.loads(answer_file(home, cid, req).read_text()))

    runner.tick(now, runs)
    end_running(0.3)
    assert (state.phase, state.experiments[0].status) == ("waiting", "keep")
    for i, value in enumerate((0.2, 0.5, 0.1), 1):
        assert ask({"op": "add", "entry": cs.entry(f"e{i}", "idea")})["index"] == i
        end_running(value)
    assert (state.phase, state.status) == ("done", "needs_decision")
    assert "best accuracy 0.5 (e2)" in state.reason
    refused = ask({"op": "add", "entry": cs.entry("e4", "idea")})
    assert not refused["ok"] and "needs a decision" in refused["error"]
    going_on = ask({"op": "set", "stop": {}, "continue": True})
    assert going_on["ok"] and "4/7 attempted" in going_on["message"]
    assert (state.phase, state.status, state.rounds) == ("waiting", "", 2)
    counted = ask({"op": "set", "stop": {"max_experiments": 4}})
    assert counted["ok"] and counted["message"] == "stop condition met: 4/4 attempted"
    assert (state.phase, state.status) == ("done", "completed")
    late = ask({"op": "add", "entry": cs.entry("e5", "idea")})
    assert "stop condition met: 4/4 attempted" in late["error"]
    assert ask({"op": "set", "stop": {"max_experiments": "many"}})["error"].startswith(
        "stop.max_experiments: expected a whole number"
    )


def test_an_unreadable_record_hides_nothing_else(env: Env) -> None:
    from ajetd.adapters.store import Home
    from ajetd.daemon.campaigns import Campaigns
    from ajetd.hosts.campaignfolder import submit_folder

    home = Home(env.home)
    home.ensure()
    cid = submit_folder(home, _folder(env, "fine", "stop: {max_experiments: 2}\n", "true"))
    Campaigns(home).claim(0.0)
    broken = env.home / "campaigns" / "c-broken" / "state.json"
    broken.parent.mkdir()
    broken.write_text("{not json")
    runner = Campaigns(home)
    runner.load(time.time())  # what a daemon does at start: the bad one is left alone, logged
    assert list(runner.states) == [cid] and broken.read_text() == "{not json"
    out = env.cli("campaign", "list")
    assert out.returncode == 0 and cid in out.stdout and "c-broken" in out.stderr
    assert env.cli("campaign", "status", "c-broken").returncode == 1


def test_a_refused_campaign_answers_requests(env: Env) -> None:
    """A folder that cannot be read is refused at once; requests to it are answered (refused,
    or `stop`: already ended), never left waiting."""
    from ajetd.adapters.control import answer_file, file_request
    from ajetd.adapters.store import Home
    from ajetd.core import campaignspec as cs
    from ajetd.daemon.campaigns import Campaigns

    home = Home(env.home)
    home.ensure()
    folder = home.inbox / "c-bad123__bad.campaign"
    folder.mkdir()
    (folder / "campaign.yaml").write_text("name: bad\nbase: missing.md\n")
    runner = Campaigns(home)
    runner.claim(0.0)
    assert runner.states["c-bad123"].status == "refused"
    add = file_request(home, "c-bad123", {"op": "add", "entry": cs.entry("a", "idea")})
    stop = file_request(home, "c-bad123", {"op": "stop"})
    runner.tick(1.0, {})
    answer = json.loads(answer_file(home, "c-bad123", add).read_text())
    assert not answer["ok"] and "refused" in answer["error"] and "missing.md" in answer["error"]
    assert "already ended" in json.loads(answer_file(home, "c-bad123", stop).read_text())["message"]


def test_a_line_break_after_a_name_or_id_is_no_part_of_one() -> None:
    """`$` matches before a final line break: each check of a name or id that ends in a path,
    a branch, a shell script or an environment ends at the text's end (`\\Z`)."""
    from ajetd.adapters.control import CAMPAIGN_ID, LEGACY_ID
    from ajetd.core import campaignspec as cs
    from ajetd.core.envnames import env_name_problem
    from ajetd.core.naming import RUN_ID

    assert cs.name_problem("ok") is None and cs.name_problem("ok\n")
    assert RUN_ID.match("abc123") and not RUN_ID.match("abc123\n")
    assert CAMPAIGN_ID.match("c-abc123") and not CAMPAIGN_ID.match("c-abc123\n")
    assert not LEGACY_ID.match("abc123\n")
    assert env_name_problem("FOO") == "" and "not a valid" in env_name_problem("FOO\n")


def _agentjet_campaign(env: Env, name: str, rest: str, purpose: str = "test run") -> str:
    """A campaign whose base runs AgentJet's launcher (the fake one), submitted; its id."""
    folder = env.tmp / f"{name}-folder"
    folder.mkdir()
    base = env.blueprint(
        f"{name}-base",
        command=f"python -m ajet.launcher --conf configs/{name}-base.yaml --autokill",
        ajetd="max_trials: 1",
        purpose=purpose,
    )
    (folder / "base.md").write_text(base.read_text())
    (folder / "campaign.yaml").write_text(
        f"name: {name}\nmetric: mean_reward\nbase: base.md\n"
        f"result_dir: {env.tmp / 'campaigns' / name}\n" + rest
    )
    out = env.cli("campaign", str(folder))
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_wait_after_returns_every_row_once_and_a_waiting_campaign_exits_2(
    daemon_env: Env,
) -> None:
    """An agent working one row at a time passes the last index it got (`wait --after`):
    every row comes exactly once, in ledger order, fast crashes too; once nothing runs or is
    planned, every form of wait exits 2 at once, saying it waits for an `add`, and no row is
    ever returned again as if new."""
    env = daemon_env
    cid = _agentjet_campaign(
        env,
        "rows",
        "parallel: 2\nstop: {max_experiments: 6}\nexperiments:\n"
        "  - {name: a, description: crashes, overrides: [fakejet.crash_at=1]}\n"
        "  - {name: b, description: crashes too, overrides: [fakejet.crash_at=1]}\n"
        "  - {name: c, description: runs}\n",
        purpose="campaign base: math GRPO on Qwen, the recipe every experiment starts from",
    )
    got: list[tuple[int, str, str, int]] = []
    last = -1
    for _ in range(5):
        out = env.cli("campaign", "wait", cid, "--after", str(last), "--json", "--timeout", "90")
        if out.returncode == 2:
            break
        row = json.loads(out.stdout)
        got.append((row["index"], row["name"], row["status"], out.returncode))
        last = row["index"]
    assert [g[:3] for g in got] == [
        (0, "baseline", "keep"),
        (1, "a", "crash"),
        (2, "b", "crash"),
        (3, "c", got[3][2]),
    ], got
    assert [g[3] for g in got] == [0, 1, 1, 0] and got[3][2] in ("keep", "discard")
    # each experiment's tmux session ends with its name: the base's long purpose is cut first
    rows = _json(env, "campaign", "status", cid, "--json")["rows"]
    # the baseline ran alone, whatever `parallel` says: each row is judged against it
    # (walk87 F6: `a` ran beside it and was judged against no best)
    base, first = (env.record(rows[i]["run_id"]) for i in (0, 1))
    assert first["submitted_at"] >= base["ended_at"], (base, first)
    sessions = [env.status(r["run_id"])["session"] for r in rows]
    for session, name in zip(sessions, ["baseline", "a", "b", "c"], strict=True):
        assert session.endswith(f"_{name}") and session.startswith("ajet_campaign_base_math")
        assert len(session) <= 45 and re.fullmatch(r"[a-z0-9_]+", session)
    assert out.returncode == 2 and "ajetd campaign add" in out.stderr, out.stderr
    assert "no row after 3 will come" in out.stderr
    assert json.loads(out.stdout)["state"] == "waiting"  # --json: the campaign's object
    # a row already written comes back at once when asked for by its predecessor's index
    again = env.cli("campaign", "wait", cid, "--after", "1", "--json", "--timeout", "5")
    assert again.returncode == 1 and json.loads(again.stdout)["name"] == "b"
    # nothing in flight: `--next` returns no old row as new, plain waits do not block
    for args in (
        ("campaign", "wait", cid, "--next", "--json"),
        ("campaign", "wait", cid),
        ("wait", cid, "--timeout", "30"),
    ):
        out = env.cli(*args)
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert f"campaign {cid} waits for the agent" in out.stderr
        assert f"ajetd campaign add {cid}" in out.stderr
    assert "the last row is 3" in env.cli("campaign", "wait", cid, "--next").stderr
    both = env.cli("campaign", "wait", cid, "--next", "--after", "0")
    assert both.returncode == 2 and "exclude each other" in both.stderr
    # an `add` answered: the campaign is no longer waiting for the agent, its row comes
    out = _add(env, cid, "--name", "d", "--description", "one more")
    assert (out.returncode, out.stdout.strip()) == (0, "4"), out.stderr
    row = _json(env, "campaign", "wait", cid, "--after", "3", "--json", "--timeout", "60")
    assert (row["index"], row["name"]) == (4, "d")


def test_add_refuses_at_once_what_it_can_and_the_daemon_s_refusals_are_on_record(
    daemon_env: Env,
) -> None:
    """With the daemon killed, `campaign add` / `set` refuse at once (exit 2, the reason,
    nothing filed) what campaign.yaml would not take (a `~K` for AgentJet's launcher, a
    deadline that is no duration); a request only the daemon can judge waits, and its refusal
    by the next daemon is in `campaign status` (text and --json) and in campaign.md."""
    env = daemon_env
    cid = _agentjet_campaign(env, "late", "stop: {max_experiments: 1}\n")
    done = env.cli("campaign", "wait", cid, "--timeout", "60")
    assert done.returncode == 0, done.stdout + done.stderr  # the baseline: 1/1 attempted
    env.daemons[-1].send_signal(signal.SIGKILL)
    env.daemons[-1].wait(timeout=20)

    bad = _add(env, cid, "--name", "bad", "--description", "x", "--overrides", "~fakejet.steps")
    assert bad.returncode == 2, bad.stdout + bad.stderr
    assert "override: '~fakejet.steps' removes a key" in bad.stderr and not bad.stdout
    late = env.cli("campaign", "set", cid, "--deadline", "soon")
    assert late.returncode == 2 and "deadline:" in late.stderr, late.stderr
    assert not list((env.home / "control").glob("*"))  # nothing filed for either

    # the stop rule is met: only the daemon judges that (a `set` may come first)
    waits = _add(env, cid, "--name", "more", "--description", "one more")
    assert waits.returncode == 1 and "no daemon is running" in waits.stderr, waits.stderr
    env.start_daemon()

    def refused() -> Any:
        return _json(env, "campaign", "status", cid, "--json")["refused_requests"]

    (entry,) = wait_for(refused, timeout=30, what="the refusal on record")
    assert (entry["op"], entry["name"]) == ("add", "more")
    assert "stop condition met: 1/1 attempted" in entry["reason"]
    assert entry["filed_at"] <= entry["refused_at"] and entry["request_id"]
    text = env.cli("campaign", "status", cid).stdout
    assert re.search(r"refused: add more \(filed .*Z, refused .*Z\): .*stop condition met", text)
    md = (env.tmp / "campaigns" / "late" / "campaign.md").read_text()
    assert "refused: add more" in md and "stop condition met: 1/1 attempted" in md


def test_an_experiment_from_an_override_only_ones_branch_carries_its_overrides(
    daemon_env: Env,
) -> None:
    """Walk 81, M7: an override is no commit, so `--from` the branch of an experiment whose
    change was an override alone started from the baseline's code and config: the change was
    lost. It is carried now (the nearest earlier experiment whose commit the start is or
    descends from), the experiment's own value for a key standing, and said in `campaign
    status` (its row and text) and campaign.md."""
    env = daemon_env
    committed_baseline(env)  # 4 steps, accuracy 0.38
    folder = _folder(
        env,
        "carry",
        "branch_prefix: ar/carry\nbaseline: false\nstop: {max_experiments: 5}\nexperiments:\n"
        "  - {name: longer, description: train 6 steps, overrides: [grpo.max_num_steps=6]}\n",
        f"python examples/run_grpo.py --config {CONFIG}",
    )
    out = env.cli("campaign", str(folder))
    assert out.returncode == 0, out.stderr
    cid = out.stdout.strip()
    row = _json(env, "campaign", "wait", cid, "--after", "-1", "--json", "--timeout", "60")
    assert (row["name"], row["metric_value"], row["carried_from"]) == ("longer", 0.42, None)
    branch = row["branch"]
    # from its branch, with an own override of another key: 6 steps still (0.42), not 4
    out = _add(
        env,
        cid,
        "--name",
        "on-longer",
        "--description",
        "and validate every 3",
        "--from",
        branch,
        "--overrides",
        "grpo.val_period=3",
    )
    assert out.returncode == 0, out.stderr
    row = _json(env, "campaign", "wait", cid, "--after", "0", "--json", "--timeout", "60")
    assert (row["metric_value"], row["carried_from"]) == (0.42, 0), row
    assert row["carried"] == ["grpo.max_num_steps=6"], row
    assert row["overrides"] == ["grpo.max_num_steps=6", "grpo.val_period=3"], row
    assert "grpo.max_num_steps=6" in row["command"], row["command"]
    # from the carrying experiment's branch (carried on), its own value for the key standing
    out = _add(
        env,
        cid,
        "--name",
        "shorter",
        "--description",
        "3 steps",
        "--from",
        row["branch"],
        "--overrides",
        "grpo.max_num_steps=3",
    )
    assert out.returncode == 0, out.stderr
    row = _json(env, "campaign", "wait", cid, "--after", "1", "--json", "--timeout", "60")
    assert (row["carried_from"], row["carried"]) == (1, ["grpo.val_period=3"]), row
    assert row["overrides"] == ["grpo.val_period=3", "grpo.max_num_steps=3"], row
    assert row["metric_value"] == 0.36, row  # validated at step 3 of 3
    assert "grpo.max_num_steps=6" not in row["command"], row["command"]
    text = env.cli("campaign", "status", cid).stdout
    said = "carries experiment 0 (longer)'s overrides: grpo.max_num_steps=6"
    assert said in text, text
    md = (env.tmp / "campaigns" / "carry" / "campaign.md").read_text()
    assert f"- experiment 1 (on-longer) {said}" in md, md
    assert (
        "experiment 2 (shorter) carries experiment 1 (on-longer)'s overrides: grpo.val_period=3"
        in md
    )


def test_wait_never_says_the_agent_is_needed_for_a_campaign_whose_deadline_fell(
    daemon_env: Env,
) -> None:
    """Walk 81, L9: `campaign wait` exited 2 (waits for the agent) about a second before the
    campaign ended. The record said `waiting` while the clock had met its deadline: the
    daemon writes the end at its next pass. The daemon is frozen here between the two, so
    the moment lasts: a wait then waits on (124 at its timeout, not 2), and returns 0 once
    the daemon ends the campaign."""
    env = daemon_env
    folder = _folder(env, "frozen", "baseline: false\nstop: {deadline: 12s}\n", "true")
    cid = env.cli("campaign", str(folder)).stdout.strip()
    status = wait_for(
        lambda: (s := _json(env, "campaign", "status", cid, "--json"))["state"] == "waiting" and s,
        timeout=60,
        what="the campaign to wait for an add",
    )
    daemon = env.daemons[-1]
    daemon.send_signal(signal.SIGSTOP)
    try:
        assert status["deadline_left_s"] > 0.5, status  # frozen before its deadline
        out = env.cli("campaign", "wait", cid, "--timeout", "1")
        assert out.returncode == 2 and "ajetd campaign add" in out.stderr  # as documented
        ends = time.time() + status["deadline_left_s"]
        wait_for(lambda: time.time() > ends, 30, what="the deadline to fall, the daemon frozen")
        record = _json(env, "campaign", "status", cid, "--json")
        assert record["state"] == "waiting", record  # the record is behind the clock
        for args in ((), ("--after", "-1"), ("--next",)):
            out = env.cli("campaign", "wait", cid, *args, "--timeout", "1")
            assert out.returncode == 124, (args, out.returncode, out.stderr)
    finally:
        daemon.send_signal(signal.SIGCONT)
    out = env.cli("campaign", "wait", cid, "--timeout", "30")
    assert out.returncode == 3 and "completed" in out.stdout, out.stdout + out.stderr  # no best
    out = env.cli("campaign", "wait", cid, "--after", "-1", "--timeout", "30")
    assert out.returncode == 2 and "completed" in out.stderr, out.stderr


def test_a_campaign_taken_from_the_inbox_before_its_record_is_never_gone(env: Env) -> None:
    """The daemon moves a campaign folder out of the inbox, then checks it and git, then
    writes its record: in between, and for good where the daemon was killed there, the
    commands said `campaign ... is gone` (exit 2) and no daemon ever started it. It reads as
    `submitted` now, and the next daemon starts it."""
    folder = _folder(env, "midway", "baseline: true\nstop: {max_experiments: 1}\n", "true")
    cid = env.cli("campaign", str(folder)).stdout.strip()
    (entry,) = env.home.glob(f"inbox/{cid}__*.campaign")
    (env.home / "campaigns" / cid).mkdir(parents=True, mode=0o700)
    entry.rename(env.home / "campaigns" / cid / "folder")  # where a killed daemon left it
    status = _json(env, "campaign", "status", cid, "--json")
    assert status["state"] == "submitted", status
    assert "no daemon is running" in status["reason"], status
    out = env.cli("campaign", "wait", cid, "--timeout", "1")
    assert out.returncode == 124, out.stderr
    env.start_daemon()
    out = env.cli("campaign", "wait", cid, "--timeout", "60")
    # 3: completed with no best (its base, `true`, writes no validation record)
    assert out.returncode == 3 and "completed" in out.stdout, out.stdout + out.stderr
    assert "started now" in env.daemon_log()


def test_a_name_given_twice_is_refused_naming_it_and_where_it_is(daemon_env: Env) -> None:
    """A name given twice is refused with the name and where the other one is (walk 82, L7:
    `two experiments have the same name` left the reader to find which): in campaign.yaml
    by its entries; at `campaign add` by the campaign's index of the one that has it and
    where it stands (ended, running, planned), at once by the CLI and by the daemon for a
    request filed by other means."""
    from ajetd.adapters.control import file_request
    from ajetd.core import campaignspec as cs

    env = daemon_env
    twice = _folder(
        env,
        "twice",
        "experiments:\n  - {name: a}\n  - {name: b}\n  - {name: a}\n",
        "true",
    )
    out = env.cli("campaign", str(twice))
    assert out.returncode == 2 and not out.stdout, out.stdout + out.stderr
    assert "two experiments have the same name 'a' (experiments[1], experiments[3])" in (out.stderr)
    folder = _folder(
        env,
        "named",
        "baseline: false\nstop: {max_experiments: 9}\nexperiments: [{name: a}]\n",
        "true",
    )
    cid = env.cli("campaign", str(folder)).stdout.strip()
    waited = env.cli("campaign", "wait", cid, "--after", "-1", "--json", "--timeout", "60")
    row = json.loads(waited.stdout)
    assert (row["index"], row["name"], row["status"]) == (0, "a", "crash")  # no metric
    again = _add(env, cid, "--name", "a", "--description", "the same name")
    assert again.returncode == 2 and not again.stdout, again.stdout + again.stderr
    said = f"name 'a': experiment 0 of campaign {cid} has it (ended: crash)"
    assert said in again.stderr, again.stderr
    assert not list((env.home / "control").glob("*"))  # refused at once: nothing filed

    from ajetd.adapters.store import Home

    req = file_request(Home(env.home), cid, {"op": "add", "entry": cs.entry("a", "by hand")})

    def refused() -> Any:
        found = _json(env, "campaign", "status", cid, "--json")["refused_requests"]
        return [r for r in found if req == r["request_id"]]

    (entry,) = wait_for(refused, timeout=30, what="the daemon's refusal")
    assert said in entry["reason"], entry


def test_an_add_past_a_stop_rule_counts_the_planned_and_none_is_dropped(
    daemon_env: Env,
) -> None:
    """Walk 82, M1: with no stop rule (the baseline and three experiments), four adds while the
    baseline ran were all accepted; the fourth never ran (planned in `status` of a campaign
    that ended), `wait --after 3` exited 2, and `add --continue` of it was refused as a name
    given twice. An add is judged on what will have been attempted once the planned ones ran;
    `--continue` makes the room; an experiment a rule or `set` then holds back is named in
    the campaign's reason, `status` (text, --json `not_run`) and campaign.md, and runs once
    the campaign goes on. The baseline runs until it is stopped, so nothing races the CLI."""
    env = daemon_env
    endless = f"python examples/run_grpo.py --config {CONFIG} grpo.val_period=2"
    cid = env.cli("campaign", str(_folder(env, "room", "", endless))).stdout.strip()
    assert cid
    quick = ("--overrides", "grpo.max_num_steps=4")
    for i in (1, 2, 3):
        out = _add(env, cid, "--name", f"e{i}", "--description", f"try e{i}", *quick)
        assert (out.returncode, out.stdout.strip()) == (0, str(i)), out.stderr
    past = _add(env, cid, "--name", "e4", "--description", "try e4", *quick)
    assert past.returncode == 2 and not past.stdout, past.stdout + past.stderr
    assert "stop condition met: 1/4 attempted and 3 planned (no stop rule given" in past.stderr
    assert "needs a decision: `ajetd campaign add --continue`" in past.stderr
    status = _json(env, "campaign", "status", cid, "--json")
    assert [p["name"] for p in status["planned"]] == ["e1", "e2", "e3"]
    assert [p["not_run"] for p in status["planned"]] == [None] * 3  # each runs in its turn
    assert [r["name"] for r in status["refused_requests"]] == ["e4"]
    going_on = _add(env, cid, "--continue", "--name", "e4", "--description", "try e4", *quick)
    assert (going_on.returncode, going_on.stdout.strip()) == (0, "4"), going_on.stderr

    # a count rule set lower while they are planned: those past it are said, never dropped
    lowered = env.cli("campaign", "set", cid, "--max-experiments", "3")
    assert lowered.returncode == 0, lowered.stderr
    (baseline,) = _json(env, "campaign", "status", cid, "--json")["running"]
    assert env.cli("stop", baseline["run_id"]).returncode == 0
    done = env.cli("campaign", "wait", cid, "--timeout", "120", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    status = json.loads(done.stdout)
    assert (status["state"], status["status"]) == ("done", "completed")
    assert [r["name"] for r in status["rows"]] == ["baseline", "e1", "e2"]
    assert status["reason"].endswith("planned, not run: 3 e3, 4 e4"), status["reason"]
    assert [(p["name"], p["not_run"]) for p in status["planned"]] == [
        ("e3", "stop condition met: 3/3 attempted"),
        ("e4", "stop condition met: 3/3 attempted"),
    ]
    text = env.cli("campaign", "status", cid).stdout
    assert "planned: 4 e4 (not run: stop condition met: 3/3 attempted)" in text, text
    md = (env.tmp / "campaigns" / "room" / "campaign.md").read_text()
    assert "| 4 | e4 | try e4 | - | - | planned |" in md and "planned, not run: 3 e3, 4 e4" in md
    after = env.cli("campaign", "wait", cid, "--after", "2")
    assert after.returncode == 2 and "planned, not run: 3 e3, 4 e4" in after.stderr

    # adding a held-back experiment again says how to let it run (at once: nothing filed)
    again = _add(env, cid, "--continue", "--name", "e3", "--description", "try e3")
    assert again.returncode == 2, again.stdout + again.stderr
    assert (
        f"experiment 3 of campaign {cid} has it (planned, not run: stop condition met: 3/3 "
        f"attempted); to run it, let the campaign go on (`ajetd campaign set {cid}` with the "
        "rule raised)"
    ) in again.stderr, again.stderr
    assert not list((env.home / "control").glob("*.campaign-*"))
    raised = env.cli("campaign", "set", cid, "--max-experiments", "5")
    assert raised.returncode == 0, raised.stderr
    done = env.cli("campaign", "wait", cid, "--timeout", "120", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    status = json.loads(done.stdout)
    assert [r["name"] for r in status["rows"]] == ["baseline", "e1", "e2", "e3", "e4"]
    assert status["planned"] == [] and "not run" not in status["reason"]


def test_add_continue_makes_room_past_every_planned_experiment(env: Env) -> None:
    """The campaign runner alone: campaign.yaml gives six experiments and no stop rule (the
    baseline and three run, three wait for a decision). An add is refused while they fill
    the rule (a smoke run counts for nothing, but is refused too: it would never launch);
    `--continue` grants the rounds that the planned ones and the new one need."""
    import time

    from ajetd.adapters.control import answer_file, file_request
    from ajetd.adapters.store import Home
    from ajetd.core import campaignspec as cs
    from ajetd.daemon.campaigns import Campaigns
    from ajetd.hosts.campaignfolder import submit_folder

    home = Home(env.home)
    home.ensure()
    listed = "".join(f"  - {{name: y{i}}}\n" for i in range(1, 7))
    cid = submit_folder(home, _folder(env, "many", "experiments:\n" + listed, "true"))
    runner = Campaigns(home)
    runner.load(time.time())
    now = time.time()
    runner.claim(now)
    runner.tick(now, {})
    state = runner.states[cid]

    def ask(payload: dict[str, Any]) -> dict[str, Any]:
        req = file_request(home, cid, payload)
        runner.tick(now, {})
        return dict(json.loads(answer_file(home, cid, req).read_text()))

    for entry in (cs.entry("x", "idea"), cs.entry("quick", "pipeline", smoke=True)):
        refused = ask({"op": "add", "entry": entry})
        assert "stop condition met: 1/4 attempted and 6 planned" in refused["error"], refused
    assert state.rounds == 1 and state.added == []
    going_on = ask({"op": "add", "entry": cs.entry("x", "idea"), "continue": True})
    assert (going_on["ok"], going_on["index"], state.rounds) == (True, 7, 3), going_on


def test_a_campaign_whose_runs_recorded_values_but_timed_out_says_why_no_best(
    daemon_env: Env,
) -> None:
    """Its experiments recorded accuracy, then hit the per-experiment timeout: crash rows
    with values. `campaign status` said "no experiment's run recorded a value of accuracy"
    (walk 90 F10); it says they did, and why none is kept."""
    env = daemon_env
    folder = _folder(
        env,
        "slow",
        "stop: {max_experiments: 1, per_experiment_timeout: 3s}\n",
        f"python examples/run_grpo.py --config {CONFIG} grpo.max_num_steps=400 "
        "grpo.val_period=1 fake.step_time=0.05",
    )
    cid = env.cli("campaign", str(folder)).stdout.strip()
    assert cid, "the campaign was not taken"
    wait_for(
        lambda: _json(env, "campaign", "status", cid, "--json")["state"] == "done",
        60,
        "the campaign to end",
    )
    [row] = _ledger(env, "slow")
    assert row["status"] == "crash" and row["metric_value"], row
    text = env.cli("campaign", "status", cid).stdout
    said = (
        "best: none: the one experiment that recorded accuracy is not kept: it timed out (a run "
        "that failed, timed out or diverged is a crash, whatever it recorded)"
    )
    assert said in text, text
    assert said[len("best: ") :] in (env.tmp / "campaigns" / "slow" / "campaign.md").read_text()


def test_a_campaign_an_older_ajetd_took_goes_on_past_the_loose_option_rule(
    daemon_env: Env,
) -> None:
    """A campaign whose base an ajetd before "option-like lines outside the [ajetd] fence are
    refused" took up: each time the daemon read its folder again (to launch, to apply an
    `add`), the base was refused, and the campaign stood still. Its blueprints are read as
    an admitted run's copy is; the rule holds where blueprints come in: a folder submitted,
    an `add`'s own blueprint."""
    env = daemon_env
    folder = _folder(env, "older", "baseline: false\n", "python -c 'print(1)'")
    cid = env.cli("campaign", str(folder)).stdout.strip()
    wait_for(
        lambda: _json(env, "campaign", "status", cid, "--json")["state"] == "waiting",
        what="the campaign to wait for an experiment",
    )
    base = env.home / "campaigns" / cid / "folder" / "base.md"
    base.write_text(base.read_text() + "max_trials: 2\n")  # after the fence, as once taken
    with pytest.raises(BlueprintError, match="outside the part's fenced YAML block"):
        parse_blueprint(base.read_text())

    out = _add(env, cid, "--name", "next", "--description", "after the upgrade")
    assert out.returncode == 0, out.stderr
    rows = wait_for(
        lambda: _json(env, "campaign", "status", cid, "--json")["rows"],
        timeout=60,
        what="the experiment's row",
    )
    run = env.status(rows[0]["run_id"])
    assert run["status"] == "succeeded", run  # admitted, not rejected for the base's line
    status = _json(env, "campaign", "status", cid, "--json")
    assert not status["progress"].startswith("error"), status["progress"]

    # where blueprints come in, the rule holds: an `add`'s own blueprint, a folder submitted
    own = env.tmp / "own.md"
    own.write_text(base.read_text())
    refused = _add(env, cid, "--name", "own", "--description", "x", "--blueprint", str(own))
    assert refused.returncode == 2 and "outside the part's fenced YAML block" in refused.stderr
    (folder / "base.md").write_text(base.read_text())
    again = env.cli("campaign", str(folder))
    assert again.returncode == 2, again.stdout
    assert "base blueprint base.md" in again.stderr and "max_trials: 2" in again.stderr
