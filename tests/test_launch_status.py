"""The exit status ajetd records is the training program's, however the launch command wraps
it: a pipeline into `tee` (walk 86: a traceback reported `succeeded`, exit 0, since a
pipeline's status was its last command's), and what lint says of a command whose status
cannot be the program's. Real tmux, the loop driven in-process; lint through the CLI."""

from __future__ import annotations

import json

from conftest import Env
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
