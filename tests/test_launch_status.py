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
