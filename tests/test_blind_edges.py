"""More of what a user meets at the edges, found by driving the contract blind (DESIGN §3) as
a user does: the CLI, a real daemon, real tmux, real files. Each test stands for a defect that
a user saw; see the README for the behaviour it pins.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import Env, marked_processes, shared_paths, wait_for


def _in(env: Env, cwd: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """`ajetd ARGS` run from `cwd` with this test's variables (plus `extra`)."""
    return subprocess.run(
        [sys.executable, "-m", "ajetd", *args],
        cwd=cwd,
        env={**env.vars, **extra},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_relative_ajetd_home_is_taken_from_the_current_folder(env: Env) -> None:
    """`AJETD_HOME=rel ajetd daemon --detach` used to hand each trial's pane (which starts in
    the codebase) a relative script path: every run failed with exit 127, `No such file or
    directory`. The home is the folder the name means where the command was typed."""
    cwd = env.tmp / "work"
    cwd.mkdir()
    started = _in(env, cwd, "daemon", "--detach", "--backoff-scale", "0.001", AJETD_HOME="rel")
    assert started.returncode == 0, started.stderr
    assert str(cwd / "rel" / "daemon.log") in started.stdout  # the log's path is absolute
    try:
        bp = env.blueprint("relhome", command="echo hello-from-rel", ajetd="gpus: 0")
        run_id = _in(env, cwd, "submit", str(bp), AJETD_HOME="rel").stdout.strip()
        done = _in(env, cwd, "wait", run_id, "--timeout", "30", AJETD_HOME="rel")
        assert done.returncode == 0, (done.stdout, done.stderr)
        log = (env.tmp / "results" / "relhome" / "logs" / "trial-1.log").read_text()
        assert "hello-from-rel" in log
        seen = _in(env, cwd, "status", run_id, "--json", AJETD_HOME=str(cwd / "rel"))
        assert json.loads(seen.stdout)["status"] == "succeeded"  # the same home, spelt whole
    finally:
        _in(env, cwd, "shutdown", AJETD_HOME="rel")


def test_a_rejected_blueprint_never_writes_into_a_live_runs_result_dir(daemon_env: Env) -> None:
    """A second blueprint naming a live run's result dir (as written, with a trailing `/.`,
    or through a symlink) is rejected, and its rejection report goes nowhere near that dir:
    it used to write a `rejected` finish.flag, results.md and trials.md there while the first
    run went on, so whoever watched that dir's finish.flag saw the wrong run end. The same
    for a blueprint rejected for another reason that names the live run's dir."""
    env = daemon_env
    shared = env.tmp / "results" / "shared"
    first = env.submit(
        env.blueprint("first", result=str(shared), ajetd="gpus: 0", command="sleep 60")
    )
    wait_for(lambda: env.record(first).get("state") == "running", what="the first run to start")
    link = env.tmp / "results" / "link"
    link.symlink_to(shared)
    linted = env.cli("lint", str(env.blueprint("lintme", result=str(link), command="true")))
    assert linted.returncode == 2  # lint says it before a submission is refused
    assert f"exp_result_dir: {link} is in use by live run {first}" in linted.stderr
    others = [
        env.blueprint("same", result=str(shared), ajetd="gpus: 0", command="true"),
        env.blueprint("dotted", result=f"{shared}//./", ajetd="gpus: 0", command="true"),
        env.blueprint("linked", result=str(link), ajetd="gpus: 0", command="true"),
        env.blueprint("bad", result=str(shared), ajetd="gpus: 0", max_time="forever"),
    ]
    for bp in others:
        run_id = env.submit(bp)
        done = env.cli("wait", run_id, "--timeout", "20")
        assert done.returncode == 1, (bp.name, done.stdout, done.stderr)
        assert env.status(run_id)["status"] == "rejected", bp.name
        # (the live run's own claim of its dir beside its logs: `claimfiles`)
        own = [p.name for p in shared.iterdir() if not p.name.startswith(".ajetd-claim.")]
        assert sorted(own) == ["logs"], bp.name
    assert env.record(first).get("state") == "running"
    assert env.cli("stop", first).returncode == 0
    flag = json.loads((shared / "finish.flag").read_text())
    assert (flag["run_id"], flag["status"]) == (first, "stopped")


def _started(env: Env, *argv: str) -> subprocess.Popen[str]:
    """A command started in the background with this test's variables, its output piped."""
    return subprocess.Popen(
        argv, env=env.vars, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _lint(env: Env, text: str) -> dict[str, Any]:
    path = env.tmp / "lint.md"
    path.write_text(text)
    out = env.cli("lint", "--json", str(path))
    assert out.returncode in (0, 2), out.stderr
    return dict(json.loads(out.stdout))


def test_a_fenced_block_nested_in_a_bullet_is_read_as_rendered(env: Env) -> None:
    """Markdown nests a fenced block under a bullet by indenting it; its lines are read
    without that indentation, as a viewer renders them. `- [ajetd]` followed by an
    indented ```yaml block used to be refused as "mapping values are not allowed here"
    (only the first line lost its indentation)."""
    config = env.config("nested")
    text = env.blueprint("nested", config=config).read_text()
    text = text.replace(
        f"- [exp_launch_command] 执行训练的命令: `python -m fakejet.launcher --conf {config} --autokill`\n",
        "- [exp_launch_command] 执行训练的命令:\n"
        "  ```bash\n"
        f"  python -m fakejet.launcher \\\n      --conf {config}\n"
        "  ```\n",
    )
    nested = text + "- [ajetd]\n  ```yaml\n  gpus: 0\n  max_trials: 2\n  env:\n    A: b\n  ```\n"
    found = _lint(env, nested)
    assert found["ok"], found["problems"]
    assert found["blueprint"]["launch_command"] == (
        f"python -m fakejet.launcher \\\n    --conf {config}"
    )
    options = found["blueprint"]["options"]
    assert (options["gpus"], options["max_trials"], options["env"]) == (0, 2, {"A": "b"})
    indented = text + "\n## [ajetd]\n```yaml\n  gpus: 0\n  max_trials: 2\n```\n"
    assert _lint(env, indented)["blueprint"]["options"]["max_trials"] == 2


def test_a_tab_that_indents_yaml_is_named(env: Env) -> None:
    """YAML indents with spaces only; a tab there used to be refused as "found character
    that cannot start any token", which does not say what to change."""
    text = env.blueprint("tabbed").read_text() + "\n## [ajetd]\ngpus: 0\nenv:\n\tA: b\n"
    problems = _lint(env, text)["problems"]
    assert len(problems) == 1 and "(line 3 of the [ajetd] part, column 1)" in problems[0], problems
    assert "a tab indents line 3 of the [ajetd] part: YAML indents" in problems[0], problems


def test_a_rejected_blueprint_keeps_the_settings_it_gave(daemon_env: Env) -> None:
    """A blueprint refused for its result dir, or for one bad part, still said its time limit,
    codebase and command: `status --json` gave `max_time_s: null` and results.md "max time:
    (none)", "launch command: (none)", so a reader could not tell what had been asked."""
    env = daemon_env
    taken = env.tmp / "results" / "taken"
    taken.mkdir()
    (taken / "results.md").write_text("an earlier run's results\n")
    cases = {
        "dir": env.blueprint("dir", result=str(taken / "sub" / ".."), command="echo a 'b c'"),
        "part": env.blueprint("part", command="echo a 'b c'", ajetd="gpus: 0\ncolour: red"),
    }
    for name, bp in cases.items():
        run_id = env.submit(bp)
        assert env.cli("wait", run_id, "--timeout", "20").returncode == 1
        seen = env.status(run_id)
        assert (seen["status"], seen["max_time_s"]) == ("rejected", 120.0), name
        if name == "part":
            results = (env.tmp / "results" / "part" / "results.md").read_text()
            assert "- max time: 2m" in results
            assert f"- codebase dir: `{env.codebase}`" in results
            assert "- launch command (blueprint): `echo a 'b c'`" in results


def test_a_submission_waiting_in_the_inbox_shows_what_it_asks_for(env: Env) -> None:
    """Before the daemon takes a blueprint, `status --json` used to give it `purpose: ""`,
    `result_dir: null`, `max_time_s: null`: a program polling right after `ajetd submit`
    (or while no daemon runs) could not tell its runs apart."""
    run_id = env.submit(env.blueprint("waiting", purpose="Math top-k ablation", max_time="90 分钟"))
    seen = env.status(run_id)
    assert (seen["state"], seen["purpose"], seen["max_time_s"]) == (
        "queued",
        "Math top-k ablation",
        5400.0,
    )
    assert seen["result_dir"] == str(env.tmp / "results" / "waiting")
    listed = json.loads(env.cli("status", "--json").stdout)
    assert [r["purpose"] for r in listed] == ["Math top-k ablation"]


def test_attach_to_a_session_that_is_gone_says_so(env: Env) -> None:
    """A lost run (or one whose session was closed after it ended) used to exec tmux, which
    printed only "can't find session: ajet_x"; it says which run, why, and where its output is.
    A queued run (`RUN=$(ajetd submit f); ajetd attach $RUN`, as the README's walkthrough
    goes) was refused as having no session: it is attached once it starts, or told how it
    ended without one."""
    from ajetd.adapters.store import Home
    from ajetd.core.model import Run, State, Status

    reason = "tmux session ajet_gone vanished outside ajetd's control (no exit recorded)"
    home = Home(env.home)
    home.ensure()
    home.run_dir("gon001").mkdir(parents=True)
    home.save_run(
        Run(
            run_id="gon001",
            source="bp.md",
            submitted_at=time.time(),
            session="ajet_gone",
            state=State.DONE,
            status=Status.LOST,
            reason=reason,
        )
    )
    out = subprocess.run(
        ["script", "-qec", f"{sys.executable} -m ajetd attach gon001", "/dev/null"],
        env=env.vars,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert out.returncode == 1, out.stdout
    assert "run gon001's tmux session ajet_gone is gone (done, lost:" in out.stdout, out.stdout
    assert "ajetd logs gon001" in out.stdout
    queued = env.submit(env.blueprint("notyet", max_time="forever"))  # waits in the inbox
    attach = _started(
        env, "script", "-qec", f"{sys.executable} -m ajetd attach {queued}", "/dev/null"
    )
    assert attach.stdout is not None
    said = attach.stdout.readline()  # it waits for the run to start, saying so
    assert f"run {queued} is queued: waiting in the inbox" in said, said
    assert "attaching once it starts" in said
    env.start_daemon()  # the blueprint is rejected: it never gets a session
    out, _ = attach.communicate(timeout=30)
    assert attach.returncode == 1, out
    assert f"run {queued} has no tmux session (done, rejected: exp_max_time" in out, out


def _renamed_run(env: Env, liveness: str, name: str, new: str, end: Path) -> tuple[str, str]:
    """A daemon on this liveness period, a run that lives until `end` exists, its session
    renamed `new` by hand once it started: (run id, the session's first name)."""
    env.start_daemon("--liveness", liveness)
    command = f"while [ ! -e {end} ]; do sleep 0.05; done"
    run_id = env.submit(env.blueprint(name, command=command, ajetd="gpus: 0"))
    session = wait_for(
        lambda: env.record(run_id).get("started_at") and env.record(run_id)["session"]
    )
    assert env.tmux("rename-session", "-t", session, new).returncode == 0
    return run_id, session


def test_a_session_renamed_by_hand_is_shown_and_attached_by_its_new_name(env: Env) -> None:
    """Before: after `tmux rename-session`, `status RUN` showed the old name in its session
    and attach lines, `ajetd attach` said the session `is gone`, and results.md named the old
    one. The pane is found by its script (`@ajetd_script`), as the daemon finds it: the CLI
    asks tmux for the name it has now, and the daemon's record takes it (journal says so)."""
    end = env.tmp / "end-now"
    run_id, session = _renamed_run(env, "0.2", "renamed", "mine", end)
    shown = env.cli("status", run_id)
    assert f"attach     tmux -L {env.socket} attach -t mine" in shown.stdout, shown.stdout
    assert env.status(run_id)["session"] == "mine"
    attach = _started(
        env, "script", "-qec", f"{sys.executable} -m ajetd attach {run_id}", "/dev/null"
    )
    try:

        def attached() -> str:
            return env.tmux("list-clients", "-t", "mine").stdout.strip()

        wait_for(attached, what="a client")
        assert env.tmux("detach-client", "-s", "mine").returncode == 0
        out, _ = attach.communicate(timeout=30)
    finally:
        attach.kill()
    assert attach.returncode == 0 and "is gone" not in out, out
    end.touch()
    env.wait_done(run_id)
    assert env.record(run_id)["session"] == "mine"
    results = (env.tmp / "results" / "renamed" / "results.md").read_text()
    assert "tmux session: `mine`" in results, results  # its timeline says both names
    journal = (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert f"tmux session {session} was renamed mine" in journal


def test_a_session_renamed_just_before_the_end_is_named_in_the_reports(env: Env) -> None:
    """The rename comes after the daemon last listed the panes (its liveness period is long)
    and the program ends right after: the end's record comes first, then the daemon asks
    tmux the session's name, before the reports and the session's close use it."""
    end = env.tmp / "end-now"
    run_id, session = _renamed_run(env, "600", "late", "later", end)
    end.touch()
    env.wait_done(run_id)
    assert env.record(run_id)["session"] == "later"
    results = (env.tmp / "results" / "late" / "results.md").read_text()
    assert "tmux session: `later`" in results, results
    journal = (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert f"tmux session {session} was renamed later" in journal


def test_a_hook_gets_the_run_id_status_and_result_dir_in_its_environment(
    daemon_env: Env,
) -> None:
    """`on_finish: notify-send ...` is what people write: a one-liner that cannot parse the
    JSON on its stdin used to get only AJETD_RUN_ID; it also gets the status and result dir."""
    env = daemon_env
    sink = env.tmp / "hook.env"
    line = f"echo $AJETD_HOOK $AJETD_RUN_ID $AJETD_STATUS $AJETD_RESULT_DIR > {sink}"
    bp = env.blueprint("hookenv", command="exit 3", ajetd=f"gpus: 0\non_finish: '{line}'")
    run_id = env.submit(bp)
    said = wait_for(lambda: sink.exists() and sink.read_text(), what="on_finish")
    assert said.split() == ["on_finish", run_id, "failed", str(env.tmp / "results" / "hookenv")]


def test_a_bare_python_is_the_blueprints_python_also_outside_a_venv(env: Env) -> None:
    """`exp_venv_exe: /usr/bin/python3` (a system or conda python, no `bin/python` beside it):
    a bare `python` in the command used to be whatever came first on the daemon's PATH (here
    a decoy; for a daemon started from its own venv, that venv's python), silently; and
    VIRTUAL_ENV named the interpreter's prefix (`/usr`) as if it were a venv."""
    decoy = env.tmp / "decoy"
    decoy.mkdir()
    (decoy / "python").write_text("#!/bin/sh\necho EXE DECOY\n")
    (decoy / "python").chmod(0o755)
    env.vars["PATH"] = f"{decoy}:{env.vars['PATH']}"
    interp = env.tmp / "interp" / "bin"
    interp.mkdir(parents=True)
    real = os.path.realpath(sys.executable)
    (interp / "python3.99").symlink_to(real)
    env.start_daemon()
    shown = (
        "import os, sys; print('EXE', os.path.realpath(sys.executable), os.getenv('VIRTUAL_ENV'))"
    )
    cases = {
        "outside": str(interp / "python3.99"),  # no python beside it: `python` is it
        "venv": sys.executable,  # a venv's own python: as before
    }
    for name, python in cases.items():
        command = f'python -c "{shown}" && python3 -c "{shown}"'
        bp = env.blueprint(name, python=python, command=command, ajetd="gpus: 0")
        run_id = env.submit(bp)
        assert env.cli("wait", run_id, "--timeout", "30").returncode == 0, name
        log = (env.tmp / "results" / name / "logs" / "trial-1.log").read_text()
        assert "DECOY" not in log, (name, log)
        assert log.count(f"EXE {real} None") == 2 or name == "venv", (name, log)
        # VIRTUAL_ENV only names a venv (its pyvenv.cfg): outside one, uv and the rest would
        # take the interpreter's prefix for the active venv (a walk's `/usr`)
        prefix = os.path.dirname(os.path.dirname(sys.executable))  # CI's python is no venv
        venv = prefix if os.path.isfile(os.path.join(prefix, "pyvenv.cfg")) else None
        assert log.count(f" {venv}\n") == 2 or name == "outside", (name, log)
    assert not shared_paths(env.home)  # the links' folder is owner-only, as the home is


def test_an_empty_or_relative_home_means_the_users_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """`HOME= ajetd status` (cron, some containers) used to look for `.ajetd` in whatever
    folder the command was typed in, so `submit` and `status` typed in two folders saw two
    homes; the password database's home is used instead, as with HOME unset."""
    import pwd

    from ajetd.adapters.store import default_home

    monkeypatch.delenv("AJETD_HOME", raising=False)
    mine = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".ajetd"
    for odd in ("", "relative/home"):
        monkeypatch.setenv("HOME", odd)
        assert default_home() == mine
    monkeypatch.setenv("AJETD_HOME", "rel")
    assert default_home() == Path.cwd() / "rel"


NCCL = (
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
    "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5"
)


def test_logs_follow_waits_for_the_first_trial_and_follows_every_relaunch(env: Env) -> None:
    """`RUN=$(ajetd submit f.md); ajetd logs -f "$RUN"` used to print nothing and exit 0 while
    the run was queued, and a follow begun in trial 1 stayed on trial 1's log: a relaunch's
    output never showed. It now waits for the first trial, follows each one in turn, ends
    with the run (exit 0), and Ctrl-C ends it with 130 saying the run goes on."""
    fail = {"text": NCCL, "unless_env": {"NCCL_NVLS_ENABLE": 0}}
    config = env.config("follow", fail=fail, steps=3, step_time=0.2)
    run_id = env.submit(env.blueprint("follow", config=config, ajetd="gpus: 0"))
    follow = _started(env, sys.executable, "-m", "ajetd", "logs", run_id, "-f")
    env.start_daemon()
    out, err = follow.communicate(timeout=60)
    assert follow.returncode == 0, err
    assert f"[ajetd] run {run_id} trial 1:" in out and "NCCL error" in out, out
    assert f"[ajetd] run {run_id} trial 2:" in out, out
    assert out.rstrip().endswith("[ajetd] trial 2 exited with code 0"), out[-500:]
    assert env.status(run_id)["trial"] == 2

    bad = env.blueprint("follow-bad", max_time="forever")
    hang = env.config("follow-hang", steps=1, hang=True)
    run_id = env.submit(env.blueprint("follow-hang", config=hang, ajetd="gpus: 0"))
    follow = _started(env, sys.executable, "-m", "ajetd", "logs", run_id, "-f")
    wait_for(lambda: env.record(run_id).get("state") == "running", what="the hang to start")
    assert follow.stdout is not None  # its first line: it runs (not still starting up, where
    ready, _, _ = select.select([follow.stdout], [], [], 30)  # Ctrl-C ends Python's start)
    assert ready and f"[ajetd] run {run_id} trial 1:" in follow.stdout.readline()
    follow.send_signal(2)
    _, err = follow.communicate(timeout=20)
    assert follow.returncode == 130 and "the run goes on" in err, (follow.returncode, err)
    assert "Aborted" not in err
    env.cli("stop", run_id)

    follow = _started(env, sys.executable, "-m", "ajetd", "logs", "-f", env.submit(bad))
    _, err = follow.communicate(timeout=20)  # followed while queued, then refused
    assert follow.returncode == 1 and "was rejected: exp_max_time" in err, err


def test_an_env_value_is_the_text_as_written(env: Env) -> None:
    """`[ajetd] env: {VLLM_VERSION: 0.10, MASK: 010, OFFLINE: yes}` used to export 0.1, 8 and
    true: YAML's numbers and booleans, not what was typed. Quoted text stays as it was."""
    text = env.blueprint("envtext").read_text() + (
        "\n## [ajetd]\ngpus: 0\nenv: {VLLM_VERSION: 0.10, MASK: 010, OFFLINE: yes, N: 4,\n"
        "      Q: '0.10', E: 1e3, HEX: 0x1F}\n"
    )
    found = _lint(env, text)
    assert found["blueprint"]["options"]["env"] == {
        "VLLM_VERSION": "0.10",
        "MASK": "010",
        "OFFLINE": "yes",
        "N": "4",
        "Q": "0.10",
        "E": "1e3",
        "HEX": "0x1F",
    }


def test_an_exp_max_time_in_chinese_numerals_is_read(env: Env) -> None:
    """`运行时间不超过两小时` is how the time limit is written in Chinese; it used to be refused
    ("no duration found"), as were `半小时` and `一个半小时`. `十分` alone ("very") is no time."""
    said = {
        "运行时间不超过两小时，每个实验强制在两小时后终止": 7200.0,
        "半小时": 1800.0,
        "一个半小时": 5400.0,
        "三十分钟": 1800.0,
        "一小时二十五分钟": 5100.0,
        "十分重要：2 小時": 7200.0,
    }
    for text, seconds in said.items():
        bp = env.blueprint("zh", max_time=text)
        found = _lint(env, bp.read_text())
        assert found["blueprint"]["max_time_s"] == seconds, (text, found["problems"])


def test_odd_but_plain_ajetd_values_are_read_as_meant(env: Env) -> None:
    """`gpus: 0,1` (CUDA_VISIBLE_DEVICES' way), `gpus: "2"`, `gpus: ALL`, and `env:` or
    `hang:` with nothing under them were refused, while `max_trials: "3"` was taken."""
    base = env.blueprint("odd").read_text() + "\n## [ajetd]\n"
    said: dict[str, object] = {  # shown as the YAML value used: a count, `all`, indices
        "gpus: 0,1": [0, 1],
        'gpus: "2"': 2,
        "gpus: ALL": "all",
        "gpus: 1, 3,": [1, 3],
    }
    for line, gpus in said.items():
        found = _lint(env, base + line + "\n")
        assert found["blueprint"]["options"]["gpus"] == gpus, (line, found["problems"])
    found = _lint(env, base + "gpus: 0\nenv:\nhang:\n")
    assert found["ok"], found["problems"]
    refused = _lint(env, base + "gpus: 0,,1\n")["problems"]
    assert refused == ["[ajetd]: gpus: expected a count, `all` or a list of indices, got '0,,1'"]


def test_on_finish_fires_for_every_end_also_without_a_trial(env: Env) -> None:
    """A rejected blueprint and a run stopped while it queued ended without a trial; neither
    fired `on_finish` (the daemon's `--on-finish` nor the blueprint's), so a hook that
    reports every end never heard of them."""
    sink = env.tmp / "ends.jsonl"
    env.fake_gpus(1)
    env.start_daemon("--on-finish", f"cat >> {sink}; echo >> {sink}")

    def ends() -> dict[str, str]:
        lines = sink.read_text().splitlines() if sink.exists() else []
        return {d["run_id"]: d["status"] for d in map(json.loads, filter(None, lines))}

    mine = env.tmp / "mine.txt"
    hook = f"on_finish: 'echo $AJETD_RUN_ID >> {mine}'"
    taken = env.tmp / "results" / "taken"
    taken.mkdir()
    (taken / "finish.flag").write_text("{}\n")
    rejected = env.submit(env.blueprint("rej", result=str(taken), ajetd=f"gpus: 0\n{hook}"))
    bad = env.submit(env.blueprint("bad", max_time="forever"))
    holder = env.submit(env.blueprint("holder", command="sleep 60", ajetd="gpus: 1"))
    waiting = env.submit(env.blueprint("waiting", command="true", ajetd=f"gpus: 1\n{hook}"))
    wait_for(lambda: env.record(waiting).get("state") == "queued", what="the queued run")
    assert env.cli("stop", waiting).returncode == 0
    want = {rejected: "rejected", bad: "rejected", waiting: "stopped"}
    wait_for(lambda: want.items() <= ends().items(), what="on_finish of each end")
    wait_for(lambda: mine.exists() and len(mine.read_text().split()) == 2, what="own hooks")
    assert sorted(mine.read_text().split()) == sorted([rejected, waiting])
    env.cli("stop", holder)


def test_a_command_copied_with_its_shell_prompt_runs_without_it(env: Env) -> None:
    """```bash\\n$ python -m ajet.launcher ...``` is how commands are shown in docs; the `$ `
    was kept, so every trial failed with exit 127 (`$: command not found`)."""
    bp = env.blueprint("prompt", command="$ python -m fakejet.launcher --conf x.yaml")
    found = _lint(env, bp.read_text())
    assert found["blueprint"]["launch_command"] == "python -m fakejet.launcher --conf x.yaml"
    bp = env.blueprint("dollar", command="$HOME/bin/train --lr 1")  # a variable, not a prompt
    assert _lint(env, bp.read_text())["blueprint"]["launch_command"] == "$HOME/bin/train --lr 1"


def test_cuda_visible_devices_in_env_is_refused_pointing_to_gpus(env: Env) -> None:
    """`[ajetd] env: {CUDA_VISIBLE_DEVICES: "1"}` was taken and then silently replaced by
    the GPUs ajetd placed the run on: the run went to another GPU than the one written. A
    command that sets it itself (`CUDA_VISIBLE_DEVICES=0 python ...`) is run as written, with a
    warning that it overrides the placement (lint, status, results.md)."""
    text = env.blueprint("cvd").read_text() + '\n## [ajetd]\nenv: {CUDA_VISIBLE_DEVICES: "1,2"}\n'
    assert _lint(env, text)["problems"] == [
        "[ajetd]: env: CUDA_VISIBLE_DEVICES is set by ajetd from `gpus:`; to run on those "
        "GPUs write `gpus: [1,2]`"
    ]
    for command in ("CUDA_VISIBLE_DEVICES=0 python train.py", "export CUDA_VISIBLE_DEVICES=0; x"):
        found = _lint(env, env.blueprint("cvd", command=command).read_text())
        assert (
            found["ok"] and "sets CUDA_VISIBLE_DEVICES itself" in found["blueprint"]["warnings"][0]
        )
    found = _lint(env, env.blueprint("cvd", command="echo $CUDA_VISIBLE_DEVICES").read_text())
    assert found["blueprint"]["warnings"] == []


@pytest.mark.parametrize(
    ("name", "why"),
    [
        (name, "is a name the trial's script keeps for itself")
        for name in ("exit_file", "hup_file", "stop_code", "TMUX_PANE", "TMUX")
    ]
    + [
        (name, "is bash's own")
        for name in ("SHELLOPTS", "POSIXLY_CORRECT", "UID", "IFS", "EXECIGNORE")
    ]
    + [("PATH", "to add a folder, do it in the launch command"), ("AJETD_TRIAL", "set by ajetd")],
)
def test_an_env_name_the_trial_script_reads_itself_is_refused(
    env: Env, name: str, why: str
) -> None:
    """The run's `env:` is exported inside the trial's script, after the script set its own
    variables: `env: {exit_file: done.txt}` made it write the trial's exit record there, and
    the daemon never saw the exit file; `TMUX` lost the exit note of a full disk, `PATH` the
    script's `bash`, `POSIXLY_CORRECT` with `SHELLOPTS` killed the script before it recorded
    anything. Such a name is refused by name, saying why."""
    text = env.blueprint("own").read_text() + f"\n## [ajetd]\nenv: {{{name}: x}}\n"
    problems = _lint(env, text)["problems"]
    assert len(problems) == 1 and problems[0].startswith(f"[ajetd]: env: {name} "), problems
    assert why in problems[0]


def test_a_live_run_admitted_with_a_name_refused_since_keeps_all_its_options(env: Env) -> None:
    """A run admitted by an ajetd that let its `env:` set PATH (refused since) is taken up by
    the new one after an upgrade: its stored blueprint is read again, and the whole `[ajetd]`
    part fell back to its defaults (max_trials 5 -> 3, the hang rule's relaunch -> attention,
    every env value gone). What may be admitted is decided once, at admission."""
    from ajetd.adapters import inbox
    from ajetd.adapters.store import Home

    part = (
        "env: {PATH: /opt/tool/bin, HF_HOME: /data/hf}\nmax_trials: 5\n"
        "hang: {window: 10m, action: relaunch}\nkinds:\n  - {name: shard, patterns: [x],"
        " severity: retryable, explanation: e, fix: f, remedy: {env: {TMUX: y}}}\n"
    )
    text = env.blueprint("old").read_text() + f"\n## [ajetd]\n{part}"
    problems = _lint(env, text)["problems"]
    assert any("PATH is set by ajetd" in p for p in problems), problems  # not admitted now
    home = Home(env.home)
    home.ensure()
    (home.run_dir("abc123")).mkdir(parents=True)
    (home.run_dir("abc123") / "blueprint.md").write_text(text)
    options, problem = inbox.read_stored_options(home, "abc123")
    assert problem is None
    assert options.max_trials == 5 and options.hang_action == "relaunch"
    assert options.env == {"PATH": "/opt/tool/bin", "HF_HOME": "/data/hf"}
    assert options.kinds[0].remedy == "env:TMUX=y"


def test_an_env_name_ending_in_a_newline_is_refused(env: Env) -> None:
    """`$` of a `match` lets a name end in a newline: `env: {"A\\n": x}` passed the check and
    the newline split the script's `export` line, running `=x` as a command."""
    text = env.blueprint("nl").read_text() + '\n## [ajetd]\nenv: {"A\\n": x}\n'
    assert _lint(env, text)["problems"] == [
        "[ajetd]: env: 'A\\n' is not a valid environment variable name"
    ]


def test_a_blueprint_with_a_long_file_name_is_taken_and_its_end_reported(
    daemon_env: Env,
) -> None:
    """Linux takes 255-byte file names; ajetd prefixes the run id (`ID__name.md`, and a temp
    name around that), so `ajetd submit` refused such a file ("File name too long"), and one
    dropped by hand and rejected never got its report: `reports_pending` stayed on record
    and `ajetd wait` never returned."""
    env = daemon_env
    source = env.blueprint("long", max_time="forever")
    named = env.tmp / ("实" * 80 + ".md")  # 242 bytes
    named.write_bytes(source.read_bytes())
    run_id = env.submit(named)
    assert env.cli("wait", run_id, "--timeout", "20").returncode == 1
    dropped = env.home / "inbox" / ("d" * 250 + ".md")
    dropped.write_bytes(source.read_bytes().replace(b"/long", b"/dropped"))

    def taken() -> list[str]:
        runs = json.loads(env.cli("status", "--json").stdout)
        return [r["run_id"] for r in runs if r["blueprint"].startswith("ddd")]

    run_id = wait_for(taken, what="the dropped file to be taken")[0]
    done = env.cli("wait", run_id, "--timeout", "20")
    assert done.returncode == 1, (done.stdout, done.stderr)
    flag = json.loads((env.tmp / "results" / "dropped" / "finish.flag").read_text())
    assert flag["status"] == "rejected"
    assert len(list((env.home / "rejected").glob("*.why.txt"))) == 2
    assert "Traceback" not in env.daemon_log()


def test_exit_127_says_a_command_was_not_found(daemon_env: Env) -> None:
    """`uv run python ...` where uv is not installed ended "the program exited with code 127;
    no known failure in the output": the reason now says what 127 means from bash."""
    env = daemon_env
    run_id = env.submit(env.blueprint("nocmd", command="uv-not-here run python x.py"))
    env.cli("wait", run_id, "--timeout", "20")
    reason = env.status(run_id)["reason"]
    assert reason.startswith("the program exited with code 127 (command not found: "), reason


def test_nemo_overrides_never_land_in_a_comment_or_on_another_line(daemon_env: Env) -> None:
    """ajetd appends `++logger.log_dir=...` (and the checkpoint dir, wandb off) to a NeMo-RL
    command. After `# 1B model`, or with another command on the next line, they went into
    the comment or to that command, while results.md listed them as applied. Such a command
    is now run as written, with the warning that no overrides were added. `ajetd lint` gave
    no such warning (admission added it): every warning admission gives, lint shows, and
    each change it makes (NeMo-RL's overrides: lint listed none of them either)."""
    env = daemon_env
    conf = "examples/configs/grpo_fake.yaml"
    run = f"python examples/run_grpo.py --config {conf} grpo.max_num_steps=2"
    commands = {
        "comment": f"{run}  # 1B model",
        "lines": f"{run}\necho done",
        "tee": f"{run} 2>&1 | tee out.log",
        "plain": run,
    }
    for name, command in commands.items():
        blueprint = env.blueprint(name, config=conf, command=command, ajetd="gpus: 0")
        linted = env.cli("lint", str(blueprint), "--json")
        assert linted.returncode == 0, (linted.stdout, linted.stderr)
        said = json.loads(linted.stdout)["blueprint"]
        changed = [f"config changed at admission: {c}" for c in said["config_changes"]]
        shown = [*said["warnings"], *changed]  # status's warnings: both
        run_id = env.submit(blueprint)
        env.wait_done(run_id)
        seen = env.status(run_id)
        assert set(seen["warnings"]) <= set(shown), (name, seen["warnings"], shown)
        dropped = any("added no overrides" in w for w in seen["warnings"])
        assert dropped is (name != "plain"), (name, seen["warnings"])
        if name != "plain":
            assert seen["command"] == command, seen["command"]


def test_a_daemon_on_another_tmux_server_refuses_rather_than_lose_the_runs(env: Env) -> None:
    """Runs live on the tmux server they were launched on (`AJETD_TMUX_SOCKET`). A daemon
    restarted without that variable (or with another) saw no session, declared every live
    run `lost` and killed its program. It now refuses to start, naming the server, and the
    runs go on; `status RUN` and `attach` use the run's own server, whatever the shell has."""
    from ajetd.adapters.store import Home

    env.start_daemon()
    run_id = env.submit(env.blueprint("socket", command="sleep 60", ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("state") == "running", what="the run to start")
    assert env.cli("shutdown").returncode == 0
    mine = env.vars["AJETD_TMUX_SOCKET"]
    for other in ("elsewhere", ""):
        started = _in(env, env.tmp, "daemon", AJETD_TMUX_SOCKET=other)
        assert started.returncode == 1, started.stderr
        assert f"run {run_id} lives on tmux server -L {mine}" in started.stderr, started.stderr
        assert f"AJETD_TMUX_SOCKET={mine}" in started.stderr
    assert env.record(run_id)["state"] == "running"
    assert marked_processes(run_id)  # its program was never touched
    shown = _in(env, env.tmp, "status", run_id, AJETD_TMUX_SOCKET="")
    assert f"tmux -L {mine} attach -t ajet_test_run" in shown.stdout, shown.stdout
    env.start_daemon()  # the right server: it takes the run up again
    wait_for(Home(env.home).daemon_running, what="the daemon to hold its home")
    assert env.cli("stop", run_id).returncode == 0
    assert env.status(run_id)["status"] == "stopped"


def test_a_path_written_with_a_variable_is_refused_saying_so(env: Env) -> None:
    """`exp_result_dir: $HOME/results/x` was refused as "not an absolute path", which does
    not say that the variable is the reason."""
    bp = env.blueprint("var", result="$HOME/results/x")
    assert _lint(env, bp.read_text())["problems"] == [
        "exp_result_dir: $HOME/results/x is not an absolute path (variables such as $HOME are "
        "not expanded: write the path in full, or ~/...)"
    ]


def _config_ajetd_fixes(env: Env, name: str) -> str:
    """A fake AgentJet config ajetd would fix (val_before_train off): its path in the codebase."""
    import yaml

    conf = env.config(name)
    data = yaml.safe_load((env.codebase / conf).read_text())
    data["ajet"]["trainer_common"]["val_before_train"] = False  # ajetd would set it true
    (env.codebase / conf).write_text(yaml.safe_dump(data))
    return conf


def _runs_on_the_original(loop: Any, env: Env, bp: Path, conf: str) -> None:
    """The run succeeds with no copy of `conf` written, its val file (the original's) read."""
    run_id = loop.submit(bp)
    flag = loop.until_done(run_id)
    assert flag["status"] == "succeeded", flag
    copies = [p.name for p in (env.codebase / conf).parent.iterdir() if ".ajetd-" in p.name]
    assert copies == [], copies
    assert loop.run(run_id).history, "the original config's val file is read"
    assert loop.run(run_id).config_changes == (), "none shown as made (results.md, status)"


def test_a_command_without_conf_gets_no_config_copy_and_the_fixes_are_said_unapplied(
    loop: Any, env: Env
) -> None:
    """A run launched by a script (no --conf): ajetd's config fixes cannot reach what runs.
    A copy was written into the codebase for every such run and never used, and the warning
    spoke of 'the config fixes above' where nothing was above. No copy now; the warning lists
    the fixes not applied; the val file read is the original config's."""
    conf = _config_ajetd_fixes(env, "script")
    (env.codebase / "run.sh").write_text(f"exec python -m fakejet.launcher --conf {conf}\n")
    bp = env.blueprint("script", config=conf, command="bash run.sh", ajetd="gpus: 0")
    found = _lint(env, bp.read_text())
    said = [w for w in found["blueprint"]["warnings"] if "passes no --conf" in w]
    assert len(said) == 1 and "are not applied (it runs as it is): " in said[0], found
    assert "val_before_train" in said[0]
    # and not also shown as made (walk L3: lint said both 'not applied' and 'config change
    # (in a copy beside the original)' three times)
    assert found["blueprint"]["config_changes"] == [], found
    path = env.tmp / "lint.md"
    human = env.cli("lint", str(path))
    assert human.returncode == 0 and "passes no --conf" in human.stdout, human.stdout
    assert "config change" not in human.stdout, human.stdout
    _runs_on_the_original(loop, env, bp, conf)


def test_a_conf_ajetd_cannot_resolve_gets_no_copy_and_its_fixes_are_said_unapplied(
    loop: Any, env: Env
) -> None:
    """`--conf ./$CONF` (or a cd before a relative one): ajetd cannot tell which file it is,
    so a copy cannot be pointed at; a copy was written and its val file (in the result dir)
    read, while the program wrote and read the original's (a run sharing it was not queued)."""
    conf = _config_ajetd_fixes(env, "varconf")
    command = f"CONF={conf}; python -m fakejet.launcher --conf ./$CONF"
    bp = env.blueprint("varconf", config=conf, command=command, ajetd="gpus: 0")
    found = _lint(env, bp.read_text())
    said = [w for w in found["blueprint"]["warnings"] if "cannot tell which file" in w]
    assert len(said) == 1 and "val_before_train" in said[0], found
    assert found["blueprint"]["config_changes"] == [], found
    _runs_on_the_original(loop, env, bp, conf)


def test_a_very_long_purpose_is_kept_bounded_and_said_with_the_whole_text_stored(
    env: Env,
) -> None:
    """Walk97 F12: a 240 KB purpose was taken whole, and that one run added 240 KB to every
    `ajetd status --json` (about 1.3 KB a run otherwise), 480 KB to results.md. Now lint and
    admission say it is kept cut; the record, status, run.json and results.md keep its first
    2000 characters and say how much is left off; the stored blueprint holds it whole. A
    purpose within the bound is kept as written."""
    from ajetd.core.limits import PURPOSE_KEPT_CHARS

    words = " ".join(f"word{i}" for i in range(40_000))  # about 270 KB
    blueprint = env.blueprint("longpurpose", command="echo done", purpose=words, ajetd="gpus: 0")
    lint = env.cli("lint", str(blueprint))
    assert lint.returncode == 0, lint.stderr
    assert "exp_purpose: " in lint.stdout + lint.stderr
    assert f"keep its first {PURPOSE_KEPT_CHARS}" in lint.stdout + lint.stderr
    env.start_daemon("--liveness", "0.5")
    run_id = env.submit(blueprint)
    done = env.wait_done(run_id)
    assert done["status"] == "succeeded", done
    purpose = done["purpose"]
    assert len(purpose) < PURPOSE_KEPT_CHARS + 120, len(purpose)
    assert purpose.startswith("word0 word1 ") and "more characters" in purpose, purpose[-200:]
    left_off = int(purpose.rsplit("(", 1)[1].split()[0])
    kept = purpose.split(" … (", 1)[0]
    assert len(kept) + left_off == len(words) and words.startswith(kept)
    assert any(w.startswith("exp_purpose: ") for w in done["warnings"]), done["warnings"]
    listing = env.cli("status", "--json")
    assert listing.returncode == 0 and len(listing.stdout) < 20_000, len(listing.stdout)
    result = Path(done["result_dir"])
    assert json.loads((result / "run.json").read_text())["purpose"] == purpose
    assert len((result / "results.md").read_text()) < len(words) + 100_000
    assert words in (env.home / "runs" / run_id / "blueprint.md").read_text()
    short = env.submit(env.blueprint("shortpurpose", command="echo done", purpose="x " * 900))
    assert env.wait_done(short)["purpose"] == ("x " * 900).strip()
