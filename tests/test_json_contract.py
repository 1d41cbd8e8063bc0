"""The machine-facing contract as a program that drives ajetd blind relies on it: every
command that shows data takes `--json`, prints exactly one JSON document on stdout, and names
one concept with one field across commands."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import click

from conftest import Env, cli_commands, wait_for

ROOT = Path(__file__).parent.parent

# commands whose stdout is not data about runs: an id, a log, a terminal, the daemon itself
NOT_DATA = {
    "ajetd daemon",
    "ajetd shutdown",
    "ajetd submit",
    "ajetd logs",
    "ajetd attach",
    "ajetd campaign",
    "ajetd campaign submit",
}


def test_every_command_that_shows_data_takes_json() -> None:
    """DESIGN §3: `stop` printed its outcome, `campaign set` and `campaign stop` the
    daemon's answer, in words only."""
    lacking = [
        name
        for name, command in cli_commands()
        if name not in NOT_DATA
        and not any("--json" in p.opts for p in command.params if isinstance(p, click.Option))
    ]
    assert not lacking, lacking


def test_stop_json_is_the_runs_status_object(daemon_env: Env) -> None:
    env = daemon_env
    config = env.config("forever", forever=True)
    run_id = env.submit(env.blueprint("forever", config=config, ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("state") == "running", what="the run to start")
    out = env.cli("stop", run_id, "--json")
    assert out.returncode == 0, out.stderr
    stopped = json.loads(out.stdout)
    assert stopped == env.status(run_id)
    assert (stopped["state"], stopped["status"]) == ("done", "stopped")
    flag = json.loads((env.tmp / "results" / "forever" / "finish.flag").read_text())
    assert {k: stopped[k] for k in flag} == flag
    again = env.cli("stop", run_id, "--json")  # already ended: the same object, exit 0
    assert again.returncode == 0 and json.loads(again.stdout) == stopped


def _campaign(env: Env, rules: str) -> str:
    """A campaign of NeMo-RL fake runs on a committed codebase, submitted; its id."""
    from test_campaign_live import CONFIG, committed_baseline

    committed_baseline(env)
    base = env.blueprint(
        "cbase", config=CONFIG, command=f"python examples/run_grpo.py --config {CONFIG}"
    )
    folder = env.tmp / "camp"
    folder.mkdir()
    (folder / "base.md").write_text(base.read_text())
    (folder / "campaign.yaml").write_text(
        f"name: audit\nmetric: accuracy\nbase: base.md\nresult_dir: {env.tmp / 'campres'}\n" + rules
    )
    out = env.cli("campaign", str(folder))
    assert out.returncode == 0, out.stderr
    return out.stdout.split()[-1]


def test_campaign_set_and_stop_json(daemon_env: Env) -> None:
    env = daemon_env
    cid = _campaign(env, "stop: {max_experiments: 1}\n")
    done = env.cli("campaign", "wait", cid, "--json", "--timeout", "60")
    assert done.returncode == 0 and json.loads(done.stdout)["status"] == "completed"
    raised = env.cli("campaign", "set", cid, "--max-experiments", "3", "--json")
    assert raised.returncode == 0, raised.stderr
    assert json.loads(raised.stdout)["ok"] is True
    stopped = env.cli("stop", cid, "--json")  # `stop` takes a campaign id too
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout) == json.loads(
        env.cli("campaign", "status", cid, "--json").stdout
    )
    assert (json.loads(stopped.stdout)["state"], json.loads(stopped.stdout)["status"]) == (
        "done",
        "stopped",
    )
    again = env.cli("campaign", "stop", cid, "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["status"] == "stopped"


def test_status_of_a_live_run_says_on_stderr_that_no_daemon_watches_it(daemon_env: Env) -> None:
    """A program polling `status RUN --json` saw `running` for ever once the daemon was gone
    (`wait` said so, `status --json` said so, `status RUN` did not); stdout stays the object."""
    env = daemon_env
    config = env.config("forever", forever=True)
    run_id = env.submit(env.blueprint("forever", config=config, ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("state") == "running", what="the run to start")
    assert env.cli("status", run_id, "--json").stderr == ""
    assert env.cli("shutdown").returncode == 0
    for args in (("--json",), ()):
        out = env.cli("status", run_id, *args)
        assert out.returncode == 0 and "daemon: not running" in out.stderr, out.stderr
    assert json.loads(env.cli("status", run_id, "--json").stdout)["state"] == "running"
    env.start_daemon()
    env.cli("stop", run_id)


def test_readme_documents_every_field_of_the_status_object(daemon_env: Env) -> None:
    """README is the contract a program reads: each field `status RUN --json` (and `wait`,
    `stop`, `status --json`, run.json) prints is named in its "The status object" section, and
    finish.flag is a part of the same object, field for field."""
    env = daemon_env
    run_id = env.submit(env.blueprint("ok", ajetd="gpus: 0"))
    status = env.wait_done(run_id)
    readme = (ROOT / "README.md").read_text()
    assert "\n### The status object\n" in readme
    section = readme.split("\n### The status object\n")[1].split("\n#")[0]
    assert not [key for key in status if f"`{key}`" not in section]
    flag = json.loads((env.tmp / "results" / "ok" / "finish.flag").read_text())
    assert {key: status[key] for key in flag} == flag
    listed = json.loads(env.cli("status", "--json").stdout)
    waited = json.loads(env.cli("wait", run_id, "--json").stdout)
    assert listed == [status] and waited == status


def test_campaign_wait_json_prints_the_campaign_whatever_the_exit_code(daemon_env: Env) -> None:
    """`wait RUN --json` prints the run's object also at 124; `campaign wait --json` printed
    nothing on stdout at 124 and at 2 (nothing to wait for): a program read an empty
    document. Now the campaign's status object, as it stands."""
    env = daemon_env
    cid = _campaign(env, "baseline: false\nstop: {max_experiments: 2}\n")
    wait_for(
        lambda: (
            json.loads(env.cli("campaign", "status", cid, "--json").stdout)["state"] == "waiting"
        ),
        what="the campaign to wait for an experiment",
    )
    # waiting for an `add`: 2 at once, whichever wait
    for args in ((), ("--next",), ("--after", "-1")):
        out = env.cli("campaign", "wait", cid, "--json", "--timeout", "30", *args)
        assert out.returncode == 2, out.stderr
        assert json.loads(out.stdout)["campaign_id"] == cid, args
        assert "ajetd campaign add" in out.stderr  # the reason, in words
    out = env.cli("wait", cid, "--json", "--timeout", "30")  # a campaign id given to `wait`
    assert out.returncode == 2 and json.loads(out.stdout)["state"] == "waiting"
    # an experiment in flight: 124 at the timeout, the object as it stands
    added = env.cli(
        "campaign", "add", cid, "--name", "long", "--description", "d",
        "--overrides", "grpo.max_num_steps=100000",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    for args in (("campaign", "wait", cid), ("campaign", "wait", cid, "--next"), ("wait", cid)):
        out = env.cli(*args, "--json", "--timeout", "0")
        assert out.returncode == 124, (args, out.stderr)
        assert json.loads(out.stdout)["campaign_id"] == cid and out.stderr, args
    env.cli("campaign", "stop", cid)


def test_diag_json_says_what_status_says_in_the_same_fields(daemon_env: Env) -> None:
    """`diag --json` shares five fields with the status object; its `reason` was "" where
    status says null, and its `state` the record's (a Slurm job still pending is `queued`
    in status, `running` in diag)."""
    env = daemon_env
    config = env.config("forever", forever=True)
    run_id = env.submit(env.blueprint("forever", config=config, ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("state") == "running", what="the run to start")
    diag = json.loads(env.cli("diag", run_id, "--json").stdout)
    status = env.status(run_id)
    shared = ("run_id", "state", "status", "reason", "attention")
    assert {k: diag[k] for k in shared} == {k: status[k] for k in shared}
    env.cli("stop", run_id)


def test_json_commands_that_cannot_answer_leave_stdout_empty(env: Env) -> None:
    """README: with --json, stdout is one JSON document or, where the command cannot answer
    (an unknown id: exit 2), empty; never words a JSON reader chokes on."""
    unknown = {"ajetd diagnose": "/nonexistent.log", "ajetd lint": "/nonexistent.md"}
    for name, command in cli_commands():
        if not any("--json" in p.opts for p in command.params if isinstance(p, click.Option)):
            continue
        words = name.split()[1:]
        if name in ("ajetd status", "ajetd gpus", "ajetd campaign list"):
            out = env.cli(*words, "--json")  # an empty home: an empty answer, still JSON
            doc = json.loads(out.stdout)
            assert out.returncode == 0 and (doc == [] or "local" in doc), name
            continue
        target = unknown.get(name, "c-zzzzzz" if "campaign" in words else "zzzzzz")
        extra = ("--name", "n", "--description", "d") if name == "ajetd campaign add" else ()
        extra += ("--max-experiments", "2") if name == "ajetd campaign set" else ()
        out = env.cli(*words, target, *extra, "--json")
        assert (out.returncode, out.stdout) == (2, ""), (name, out.returncode, out.stdout)
        assert out.stderr, name


def test_a_field_without_a_value_is_null_never_empty_text(daemon_env: Env) -> None:
    """A blueprint that says nothing is rejected with every field it lacks null (README: the
    status object); `purpose` alone was "" beside a null result_dir, command, session."""
    env = daemon_env
    junk = env.tmp / "junk.md"
    junk.write_text("hello\n")
    run_id = env.submit(junk)
    status = env.wait_done(run_id)
    assert status["status"] == "rejected"
    assert "" not in status.values(), status
    assert status["purpose"] is None and status["result_dir"] is None


def test_diag_of_a_run_not_launched_writes_nothing_into_the_dir_it_names(env: Env) -> None:
    """A submission not taken yet may still be refused for its result dir (another run's
    results, a live run's): its snapshot is not saved there (nor anywhere, while it has no
    folder in the home); the JSON still says what is known."""
    taken = env.tmp / "results" / "someone-elses"
    taken.mkdir(parents=True)
    (taken / "finish.flag").write_text('{"run_id": "other1"}\n')
    run_id = env.submit(env.blueprint("early", result=str(taken)))  # no daemon: it waits
    out = env.cli("diag", run_id, "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["run_id"] == run_id and data["saved"] is None
    assert sorted(p.name for p in taken.iterdir()) == ["finish.flag"]


FINDING_FIELDS = [
    *("kind", "severity", "line", "evidence", "explanation", "fix", "count", "remedy"),
    "certainty",
]


def test_a_finding_is_the_same_object_in_every_json(daemon_env: Env) -> None:
    """One concept, one shape: `status --json`'s `diagnosis` lacked `count` and `remedy`,
    which `diag --json` and `diagnose --json` print for the same finding. Now every field in
    each (`remedy` null for a kind without one), and the three agree on a failed trial."""
    env = daemon_env
    kind = (
        "{name: flaky_store, patterns: ['STORE: timed out'], severity: retryable, "
        "explanation: the object store timed out, fix: retry later, remedy: relaunch}"
    )
    text = "STORE: timed out\nSTORE: timed out\ntorch.OutOfMemoryError: CUDA out of memory."
    config = env.config("failing", fail={"text": text, "unless_env": {"STORE_UP": "1"}})
    ajetd = f"gpus: 0\nmax_trials: 1\nkinds: [{kind}]"
    run_id = env.submit(env.blueprint("failing", config=config, ajetd=ajetd))
    status = env.wait_done(run_id)
    assert status["status"] == "failed", status
    found = status["diagnosis"]
    assert [list(f) for f in found] == [FINDING_FIELDS] * len(found)
    by_kind = {f["kind"]: f for f in found}
    assert by_kind["flaky_store"]["remedy"] == "relaunch" and by_kind["flaky_store"]["count"] == 2
    assert by_kind["cuda_oom"]["remedy"] is None and by_kind["cuda_oom"]["count"] == 1
    diag = json.loads(env.cli("diag", run_id, "--json").stdout)
    assert diag["findings"] == found
    kinds = env.tmp / "kinds.yaml"
    kinds.write_text(f"- {kind}\n")
    log = env.tmp / "results" / "failing" / "logs" / "trial-1.log"
    out = env.cli("diagnose", str(log), "--kinds", str(kinds), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == found
    run_json = json.loads((env.tmp / "results" / "failing" / "run.json").read_text())
    assert run_json["diagnosis"] == found


def test_every_json_document_is_written_one_way(env: Env) -> None:
    """One writer for every `--json`: indented, non-ASCII as it is. `wait --json` printed the
    status object on one line where `status RUN --json` and `stop --json` indent it (a
    script comparing them saw two texts), and `gpus --json` escaped a GPU's non-ASCII name
    (`\\u6607`) that every other command keeps."""
    env.fake_gpus(1, name="Ascend 910B 昇腾")
    env.start_daemon()
    run_id = env.submit(env.blueprint("form", purpose="训练 form", ajetd="gpus: 0"))
    env.wait_done(run_id)
    shown = env.cli("status", run_id, "--json").stdout
    assert "训练" in shown
    for args in (("wait", run_id, "--json"), ("stop", run_id, "--json")):
        assert env.cli(*args).stdout == shown, args
    for args in (("gpus", "--json"), ("status", "--json"), ("diag", run_id, "--json")):
        out = env.cli(*args).stdout
        assert out == json.dumps(json.loads(out), indent=2, ensure_ascii=False) + "\n", args
    assert "昇腾" in env.cli("gpus", "--json").stdout


def test_the_status_object_names_the_tmux_server_of_the_session(env: Env) -> None:
    """`status RUN` shows the line that attaches (`tmux -L SOCKET attach -t SESSION`), but its
    JSON named the session only: an agent whose shell has another AJETD_TMUX_SOCKET (or none)
    could not reach the pane (`tmux capture-pane`) without parsing the human view. It holds
    `tmux_socket`, the `tmux -L` name of the run's server (`default`: tmux's default one),
    null before the first launch."""
    blueprint = env.blueprint("where", config=env.config("where", forever=True), ajetd="gpus: 0")
    run_id = env.submit(blueprint)  # no daemon yet: queued in the inbox
    queued = env.status(run_id)
    assert queued["tmux_socket"] is None and queued["session"] is None
    env.start_daemon()
    wait_for(lambda: env.record(run_id).get("state") == "running", what="the run to start")
    running = env.status(run_id)
    assert running["tmux_socket"] == env.socket
    target = f"={running['session']}:"
    capture = ["tmux", "-L", running["tmux_socket"], "capture-pane", "-p", "-t", target]

    def own_lines() -> bool:  # `running` comes before the program's first step line
        pane = subprocess.run(capture, capture_output=True, text=True, check=False)
        assert pane.returncode == 0, pane  # the session is on the server status names
        return "step:" in pane.stdout

    wait_for(own_lines, what="the program's own lines in the session status names")
    stopped = json.loads(env.cli("stop", run_id, "--json").stdout)
    assert stopped["tmux_socket"] == env.socket


def test_a_stopping_run_says_why_and_how_far_the_stop_has_gone() -> None:
    """`reason` is why a run is in its state: a `stopping` run's was null for the whole grace
    of its stop (30 s, then SIGTERM), with nothing saying whether `ajetd stop`, the time limit
    or the hang rule stopped it."""
    from ajetd.core import model
    from ajetd.views.records import run_json

    run = model.Run(run_id="abc123", source="x.md", submitted_at=1.0, state=model.State.RUNNING)
    assert run_json(run, 5.0)["reason"] is None  # running: no reason to give
    asked = model.signal_sent(model.begin_stop(run, model.StopCause.USER, 2.0), "INT")
    assert run_json(asked, 5.0)["reason"] == (
        "being stopped, asked by `ajetd stop` (SIGINT sent so far)"
    )
    hung = model.begin_stop(run, model.StopCause.HANG, 2.0, "no output for 20m")
    assert run_json(hung, 5.0)["reason"] == (
        "being stopped, the hang rule: no output for 20m (no signal sent so far)"
    )
