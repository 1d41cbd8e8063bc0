"""The exit status ajetd records is the training program's, however the launch command wraps
it: a pipeline into `tee` (walk 86: a traceback reported `succeeded`, exit 0, since a
pipeline's status was its last command's), and what lint says of a command whose status
cannot be the program's. Real tmux, the loop driven in-process; lint through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import PYTHON, Env
from loopkit import Loop

CRASH = "python -c 'import sys; print(\"Traceback (most recent call last):\"); sys.exit(3)'"


def test_a_crash_piped_into_tee_is_failed_with_the_programs_exit_code(env: Env, loop: Loop) -> None:
    run_id = loop.submit(env.blueprint("tee", command=f"{CRASH} 2>&1 | tee train.log"))
    flag = loop.until_done(run_id)
    assert flag["status"] == "failed" and flag["exit_code"] == 3
    assert "Traceback" in (env.codebase / "train.log").read_text()  # tee still kept its log


def test_a_pipeline_that_succeeds_still_succeeds(env: Env, loop: Loop) -> None:
    run_id = loop.submit(env.blueprint("teeok", command="echo hello | tee ok.log | cat"))
    flag = loop.until_done(run_id)
    assert flag["status"] == "succeeded" and flag["exit_code"] == 0, json.dumps(flag)


def _lint(env: Env, command: str, ajetd: str = "gpus: 0") -> tuple[int, dict]:
    out = env.cli("lint", "--json", str(env.blueprint("lint", command=command, ajetd=ajetd)))
    said = json.loads(out.stdout)
    return out.returncode, {**(said.get("blueprint") or {}), "problems": said["problems"]}


def test_lint_says_kill_is_removed_and_the_run_never_gets_it(env: Env, loop: Loop) -> None:
    """What `--autokill` expands to, spelt out, would end every python process (this daemon
    among them): lint says it is removed, and the trial runs without it."""
    command = "echo args: --kill 'ray|vllm|python' --steps 2"
    code, data = _lint(env, command)
    assert code == 0 and any("--kill 'ray|vllm|python' removed" in w for w in data["warnings"])
    run_id = loop.submit(env.blueprint("kill", command=command))
    assert loop.until_done(run_id)["status"] == "succeeded"
    log = (env.tmp / "results" / "kill" / "logs" / "trial-1.log").read_text()
    assert "args: --steps 2" in log and "vllm" not in log.split("args:")[-1]
    code, data = _lint(env, command, "gpus: 0\nautokill: allow")
    assert any("kept (autokill: allow)" in w for w in data["warnings"])


def test_a_command_or_script_that_detaches_its_program_is_refused_at_lint(env: Env) -> None:
    """walk 86: seed 001's habit of a tmux session of one's own, and a script that starts the
    training with `nohup ... &`, 'succeeded' in 0 s and the training was ended."""
    own_tmux = (
        "tmux -L other new-session -d -s inner -c .\n"
        "tmux -L other send-keys -t inner 'python -m fakejet.launcher' Enter"
    )
    code, data = _lint(env, own_tmux)
    assert code == 2 and any("starts its own tmux session" in p for p in data["problems"])
    script = env.codebase / "scripts" / "bg.sh"
    script.parent.mkdir(exist_ok=True)
    script.write_text(
        "#!/bin/bash\nnohup python -m fakejet.launcher > bg.log 2>&1 &\necho started, pid $!\n"
    )
    code, data = _lint(env, "bash scripts/bg.sh")
    said = " ".join(data["problems"])
    assert code == 2 and "runs scripts/bg.sh, whose line 2 (`nohup python" in said, said
    script.write_text("#!/bin/bash\nset -e\npython -m fakejet.launcher --steps 2\n")
    code, data = _lint(env, "bash scripts/bg.sh")
    assert not any("background" in p for p in data["problems"]), data["problems"]


def test_lint_warns_where_the_exit_status_is_not_the_programs(env: Env) -> None:
    """walk 86: `; echo finished` and `|| true` reported a crash as success, with no word."""
    for command, said in (
        (f"{CRASH}; echo finished", "its last command is `echo finished`"),
        (f"{CRASH} || true", "ends in `|| true`"),
        (f"{CRASH} | head -n 5", "pipes into head"),
        (f"{CRASH} 2>&1 | grep loss", "pipes the program's output through grep"),
    ):
        code, data = _lint(env, command)
        assert code == 0 and any(said in w for w in data["warnings"]), (command, data)
    for fine in (f"set -e; {CRASH}; echo done", f"{CRASH} && echo done", f"{CRASH} | tee x.log"):
        code, data = _lint(env, fine)
        assert not any("exit status is that command" in w for w in data["warnings"]), fine


def test_hydra_overrides_on_agentjets_launcher_are_refused_with_where_to_put_them(
    env: Env,
) -> None:
    """walk 86: AgentJet's launcher parses its arguments with argparse, and exits 2 on
    `ajet.rollout.temperature=0.7`; lint said ok."""
    command = (
        "python -m ajet.launcher --conf configs/lint.yaml ajet.rollout.temperature=0.7 "
        "++ajet.trainer_common.test_freq=5"
    )
    code, data = _lint(env, command)
    said = " ".join(data["problems"])
    assert code == 2 and "AgentJet's launcher takes no key=value arguments" in said, said
    assert "yaml_overrides: [ajet.rollout.temperature=0.7, ajet.trainer_common.test_freq=5]" in said


def _lint_warnings(env: Env, result: str, python: str = PYTHON) -> str:
    """What `ajetd lint --json` warns of a blueprint with this result dir and python."""
    data = json.loads(
        env.cli("lint", "--json", str(env.blueprint("where", result=result, python=python))).stdout
    )
    return " ".join(data["blueprint"]["warnings"]) if data.get("blueprint") else ""


def test_a_result_dir_shared_with_much_else_is_said(env: Env) -> None:
    """walk 86: `/`, `/tmp`, the home or the codebase itself were taken without a word."""
    scratch = env.tmp / "scratch"
    scratch.mkdir()
    scratch.chmod(0o1777)
    bp = env.blueprint("where", result="/")
    out = env.cli("lint", "--json", str(bp))
    assert out.returncode == 2 and "/ is the filesystem's root" in out.stdout
    for result, said in (
        ("/tmp", "a folder every program shares"),
        (str(env.codebase), "is the codebase itself"),
        (str(env.codebase / "configs"), "is inside the codebase"),
        # walk97 F12: the venv's bin/ (on the PATH of every run of it), the venv, a system
        # folder, a folder every user writes into as /tmp is
        (str(Path(PYTHON).parent), "the folder of the run's python (exp_venv_exe)"),
        ("/opt", "a folder of the system's own"),
        (str(scratch), "a folder every user writes into (world-writable, sticky"),
    ):
        assert said in _lint_warnings(env, result), result
    # the environment the run's python belongs to, whatever kind of Python it is (the CI's is
    # pyenv's, with no venv): each made here, its python a link to the one the tests run
    for kind, marker, said in (
        ("venv", "pyvenv.cfg", "inside the run's venv"),
        ("conda", "conda-meta/history", "inside the run's conda environment"),
        ("pyenv", "lib/python3.11/os.py", "inside the run's Python installation"),
    ):
        home = env.tmp / kind
        (home / marker).parent.mkdir(parents=True, exist_ok=True)
        (home / marker).touch()
        (home / "bin").mkdir()
        (home / "bin" / "python").symlink_to(PYTHON)
        python = str(home / "bin" / "python")
        warned = _lint_warnings(env, str(home / "results" / "x"), python)
        assert said in warned, (kind, warned)
    plain = env.tmp / "plain"  # a folder with a bin/python in it and nothing of an environment
    (plain / "bin").mkdir(parents=True)
    (plain / "bin" / "python").symlink_to(PYTHON)
    warned = _lint_warnings(env, str(plain / "results" / "x"), str(plain / "bin" / "python"))
    assert "inside the run's" not in warned, warned
    own = json.loads(env.cli("lint", "--json", str(env.blueprint("own"))).stdout)
    assert not [w for w in own["blueprint"]["warnings"] if w.startswith("exp_result_dir")], own


def test_admission_says_a_shared_result_dir_as_lint_does(daemon_env: Env) -> None:
    """The same warning in the run's record (status, results.md), the run admitted."""
    env = daemon_env
    scratch = env.tmp / "scratch"
    scratch.mkdir()
    scratch.chmod(0o1777)
    run_id = env.submit(env.blueprint("shared", result=str(scratch), ajetd="gpus: 0"))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    said = [w for w in status["warnings"] if w.startswith(f"exp_result_dir: {scratch} is a")]
    assert said and "world-writable, sticky" in said[0], status["warnings"]


def test_a_success_whose_output_ends_in_a_traceback_is_warned(env: Env, loop: Loop) -> None:
    """walk 86: `what went wrong: nothing (exit 0)` beside a traceback the command hid."""
    crash = "python -c \"d = {}; print('step 1'); d['answer']\""  # a real KeyError, exit 1
    run_id = loop.submit(env.blueprint("hidden", command=f"{crash} || true"))
    flag = loop.until_done(run_id)
    assert flag["status"] == "succeeded"
    warnings = env.status(run_id)["warnings"]
    assert any("ends in a Python traceback" in w for w in warnings), warnings


def test_a_success_whose_output_shows_a_fatal_finding_says_so(env: Env, loop: Loop) -> None:
    """Walk 89, F6: a program that printed a CUDA OOM at step 2 of 4 and exited 0 (a
    wrapper, a train+eval script without `set -e`) was `succeeded` with trials.md saying
    `what went wrong: nothing (exit 0)`. The status stays the command's; the warning, the
    trial's findings (status' diagnosis) and trials.md name what its output shows."""
    oom = (
        "Traceback (most recent call last):\n"
        '  File "/app/verl/workers/fsdp_workers.py", line 812, in compute_log_prob\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has "
        "a total capacity of 79.19 GiB of which 1.05 GiB is free.\n"
        "training loop ended"
    )
    fail = {"text": oom, "at_step": 2, "exit_code": 0, "unless_env": {"AJETD_TEST_NEVER": "1"}}
    config = env.config("quiet", fail=fail)
    run_id = loop.submit(env.blueprint("quiet", config=config))
    flag = loop.until_done(run_id)
    assert flag["status"] == "succeeded", flag
    status = env.status(run_id)
    said = [w for w in status["warnings"] if "exited with code 0, but its output shows" in w]
    assert said and "cuda_oom: torch.OutOfMemoryError" in said[0], status["warnings"]
    assert [f["kind"] for f in status["diagnosis"]] == ["cuda_oom"], status["diagnosis"]
    trials = (env.tmp / "results" / "quiet" / "trials.md").read_text()
    assert "- what went wrong: exited with code 0, yet its output shows cuda_oom" in trials
    assert "nothing (exit 0)" not in trials
    clean = loop.submit(env.blueprint("clean"))  # a clean success says nothing of the kind
    assert loop.until_done(clean)["status"] == "succeeded"
    assert not [w for w in env.status(clean)["warnings"] if "exited with code 0" in w]
