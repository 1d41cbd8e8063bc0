"""Lines that only mention a failure are not the run's failure (a blind user walk's defects).

A frame's source line inside a traceback is code; a write and a failure named on one line is
not a full disk; the real exception that ended the program stays the root cause.
"""

from __future__ import annotations

import pytest

from ajetd.diagnosis.stream import diagnose_text

_RAISED = (
    "(TaskRunner pid=1) Traceback (most recent call last):\n"
    '(TaskRunner pid=1)   File "/ajet/ajet/task_runner.py", line 88, in run\n'
    "(TaskRunner pid=1)     score = judge.score(traj)\n"
    "(TaskRunner pid=1) RuntimeError: reward judge returned malformed JSON\n"
)


def _kinds(text: str) -> list[str]:
    return [f.kind for f in diagnose_text(text)]


@pytest.mark.parametrize(
    "line",
    [
        "(TaskRunner pid=1) step 3: write val results ok, 0 failed tasks",
        "(TaskRunner pid=1) Writing checkpoint to /ckpt/global_step_3 ... 0 failures",
        "Writing checkpoint shard 2/4 to /ckpt ... done, 0 failed",
        "(TaskRunner pid=1) wrote 128 rollouts, failed: 0",
    ],
)
def test_a_write_and_a_failure_on_one_line_are_no_full_disk(line: str) -> None:
    assert _kinds(line + "\n") == []
    assert _kinds(line + "\n" + _RAISED) == ["unknown_traceback"]


def test_source_lines_of_a_frame_are_code_not_findings() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/ajet/ajet/io.py", line 12, in save\n'
        "    writer.write(result)  # may fail\n"
        '  File "/ajet/ajet/io.py", line 40, in write\n'
        '    log.write("fail")\n'
        '  File "/ajet/ajet/io.py", line 41, in check\n'
        '    if "No space left on device" in err or "CUDA out of memory" in err:\n'
        "ConnectionResetError: [Errno 104] Connection reset by peer\n"
    )
    assert _kinds(text) == ["network"]
    decoded = text.replace(
        "ConnectionResetError: [Errno 104] Connection reset by peer",
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0",
    )
    assert _kinds(decoded) == ["unknown_traceback"]


def test_a_raise_statement_still_names_a_traceback_cut_before_its_exception() -> None:
    # (the corpus's vllm-27508: the paste stops at the statement raising)
    text = (
        "Traceback (most recent call last):\n"
        '  File "/x/vllm/v1/core/kv_cache_utils.py", line 699, in check_enough_kv_cache_memory\n'
        '    raise ValueError("No available memory for the cache blocks. "\n'
        '                     "Try increasing `gpu_memory_utilization` when "\n'
        '                     "initializing the engine.")\n'
    )
    assert _kinds(text) == ["vllm_memory"]
    # the same statement in a frame above the exception that ended the program is code
    assert _kinds(text + "KeyError: 'layers.0'\n") == ["unknown_traceback"]


def test_the_os_words_for_a_full_disk_are_still_read() -> None:
    for line in (
        "OSError: [Errno 28] No space left on device",
        "RuntimeError: write(): fd 29 failed with Input/output error",
        "RuntimeError: [enforce fail at inline_container.cc:778] . PytorchStreamWriter failed "
        "writing file data.pkl: file write failed",
        "OSError: [Errno 122] Disk quota exceeded",
        "ray.exceptions.OutOfDiskError: Local disk is full",
    ):
        assert _kinds(line + "\n")[:1] == ["disk_full"], line
