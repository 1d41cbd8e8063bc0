"""A launch command the shell cannot run at all: bash's own exit codes (127 command not found,
126 not executable) and the trial script's 126 when it cannot enter the codebase are named as
kinds, from what really reaches the pane log (real tmux, the loop driven in-process), and from
the exit code alone where the log says nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ajetd.diagnosis.exitcodes import with_exit_code
from ajetd.diagnosis.stream import diagnose_text
from conftest import Env
from loopkit import Loop


def _ended(loop: Loop, env: Env, name: str, command: str, ajetd: str = "gpus: 0") -> dict:
    run_id = loop.submit(env.blueprint(name, command=command, ajetd=ajetd))
    flag = loop.until_done(run_id)
    status = json.loads(env.cli("status", run_id, "--json").stdout)
    trials = (env.tmp / "results" / name / "trials.md").read_text()
    return {"flag": flag, "status": status, "trials": trials, "record": env.record(run_id)}


def test_a_program_that_does_not_exist_is_command_not_found(env: Env, loop: Loop) -> None:
    got = _ended(loop, env, "nocmd", "no_such_program_ajetd --steps 3")
    assert got["flag"]["status"] == "failed" and got["flag"]["exit_code"] == 127
    root = got["status"]["diagnosis"][0]
    assert root["kind"] == "command_not_found" and root["severity"] == "fatal"
    assert "no_such_program_ajetd" in root["evidence"]  # bash's own line, from the pane log
    assert "command_not_found" in got["trials"] and "fatal: not retried" in got["trials"]
    assert got["status"]["trials"] == 1  # fatal: never relaunched blindly


def test_a_script_without_its_execute_bit_is_not_executable(env: Env, loop: Loop) -> None:
    (env.codebase / "train.sh").write_text("#!/usr/bin/env bash\necho training\n")  # mode 644
    got = _ended(loop, env, "noexec", "./train.sh --steps 3")
    assert got["flag"]["exit_code"] == 126
    root = got["status"]["diagnosis"][0]
    assert root["kind"] == "not_executable" and "train.sh: Permission denied" in root["evidence"]


def test_a_codebase_that_vanished_before_a_relaunch_is_no_workdir(env: Env, loop: Loop) -> None:
    """Trial 1 moves the codebase away and fails with a kind that relaunches; trial 2's script
    cannot `cd` into it (its own rc 126)."""
    ajetd = (
        "gpus: 0\nkinds:\n  - {name: gone_away, patterns: ['GONE AWAY'], severity: retryable,"
        " explanation: x, fix: y, remedy: relaunch}"
    )
    moved = f"{env.codebase}.moved"
    got = _ended(loop, env, "nowd", f"echo 'GONE AWAY'; mv {env.codebase} {moved}; exit 3", ajetd)
    assert [t["exit_code"] for t in got["record"]["trials"]] == [3, 126]
    root = got["status"]["diagnosis"][0]
    assert root["kind"] == "no_workdir" and str(env.codebase) in root["evidence"]
    Path(moved).rename(env.codebase)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("bash: line 1: foo: command not found", "command_not_found"),
        ("bash: foo: command not found", "command_not_found"),
        ("zsh: command not found: foo", "command_not_found"),
        ("sh: 1: foo: not found", "command_not_found"),
        ("bash: line 1: ./scripts/run.sh: No such file or directory", "command_not_found"),
        ("bash: ./x.sh: cannot execute: required file not found", "command_not_found"),
        ("bash: line 1: ./train.sh: Permission denied", "not_executable"),
        ("bash: line 1: ./data: Is a directory", "not_executable"),
        ("bash: ./x.sh: /bin/bash^M: bad interpreter: No such file or directory", "not_executable"),
        ("bash: ./tool: cannot execute binary file: Exec format error", "not_executable"),
        (
            "/h/.ajetd/runs/ab12cd/trial-2.sh: line 21: cd: /src/x: No such file or directory",
            "no_workdir",
        ),
        ("bash: line 1: cd: /data/run: Not a directory", "no_workdir"),
    ],
)
def test_the_shells_own_words_are_read_as_their_kind(line: str, kind: str) -> None:
    assert [f.kind for f in diagnose_text(line + "\n")][:1] == [kind]


def test_a_python_missing_file_is_still_missing_file() -> None:
    text = "python3: can't open file '/x/train.py': [Errno 2] No such file or directory\n"
    assert diagnose_text(text)[0].kind == "missing_file"


@pytest.mark.parametrize(("code", "kind"), [(127, "command_not_found"), (126, "not_executable")])
def test_the_exit_code_alone_names_the_kind_when_the_log_does_not(code: int, kind: str) -> None:
    (found,) = with_exit_code((), code)
    assert found.kind == kind and f"exit code {code}" in found.evidence
    said = diagnose_text("bash: line 1: foo: command not found\n")
    assert with_exit_code(tuple(said), 127) == tuple(said)  # the log's own line is enough
    assert with_exit_code((), 1) == ()


NCCL_TIMEOUT = (
    "[rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
    "600012 milliseconds before timing out.\n"
)
CUDA_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.10 GiB of which 1.02 GiB is free.\n"
)


@pytest.mark.parametrize(
    ("failure", "kind"), [(NCCL_TIMEOUT, "nccl_timeout"), (CUDA_OOM, "cuda_oom")]
)
def test_a_probes_not_found_line_is_an_echo_unless_the_exit_code_says_so(
    failure: str, kind: str
) -> None:
    """DeepSpeed's and vLLM's probes print `sh: 1: nvcc: not found` and carry on: a run that
    then fails otherwise is read by that failure (its retry or science fix is kept), the
    shell's line after it; only the trial's exit code 127 makes it the root."""
    text = "/bin/sh: 1: nvcc: not found\nbash: git: command not found\n" + failure
    found = tuple(diagnose_text(text))
    assert [f.kind for f in found] == [kind, "command_not_found"]
    assert with_exit_code(found, 1) == found
    assert [f.kind for f in with_exit_code(found, 127)] == ["command_not_found", kind]
    alone = tuple(diagnose_text("bash: line 1: no_such_program: command not found\n"))
    assert [f.kind for f in with_exit_code(alone, 1)] == ["command_not_found"]  # the only one
