"""A failure no kind's pattern reads is read by its exception's class and its words' family
(`ajetd.diagnosis.families`); the lines are real, from the corpus's excerpts (their threads in
each file's first line), and so are the negatives, which the families must leave alone."""

from __future__ import annotations

import pytest

from ajetd.diagnosis.catalogue import BY_NAME
from ajetd.diagnosis.families import exception_family, reported_family
from ajetd.diagnosis.stream import diagnose_chunks
from ajetd.diagnosis.wrapped import classify


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        # Ray's object store spilling to a full disk, its class as Ray prints it (ray#49173
        # prints it after the store's own message on one line, which no family reads yet)
        ("ray.exceptions.OutOfDiskError: Local disk is full", "disk_full"),
        # torch built without NCCL (hubert#1): NCCL named in the message of a RuntimeError
        ("RuntimeError: Distributed package doesn't have NCCL built in", "nccl_error"),
        # Ray's native module not loadable on an older macOS (ray#6735)
        (
            "OSError: dlopen(/Users/gg4u/Sites/awesome3-gamma/niftyscience/lib/python3.7/"
            "site-packages/ray/_raylet.so, 10): Symbol not found: _getentropy",
            "import_error",
        ),
        # THC's words for a CUDA error (maskrcnn-benchmark#238's class, in the corpus's words)
        (
            "RuntimeError: cuda runtime error (10) : invalid device ordinal at "
            "/pytorch/torch/csrc/cuda/Module.cpp:33",
            "cuda_error",
        ),
        # a dataset script's host not reached (datasets#759), with its typographic apostrophe
        (
            "ConnectionError: Couldn’t reach https://raw.githubusercontent.com/huggingface/"
            "datasets/1.1.2/datasets/cnn_dailymail/cnn_dailymail.py",
            "network",
        ),
        # Ray's object owner gone (ray#31265's class), by the class inside the wrapper
        ("OwnerDiedError: ray::main_task() (pid=50411, ip=0.0.0.0)", "ray_worker_died"),
        ("AcceleratorError: ray::PPOTrainer.fit() (pid=6704, ip=100.96.111.166)", "cuda_error"),
        # settings refused in validation's words (AReaL#752, slime#1730, verl#1120)
        ("ValueError: Invalid backend: None, expected sglang or vllm", "config_error"),
        (
            "AssertionError: hf_validate_args failed: tie_word_embeddings in hf config True is "
            "not equal to untie_embeddings_and_output_weights True, please check the config.",
            "config_error",
        ),
        (
            "OSError: AF_UNIX path length cannot exceed 107 bytes: '/net/tdfcarhc/people/"
            "poebhkiwa/slurm_jobdir/1355700/tmp.t0016/ray/session_2025-04-16_17-26-47'",
            "config_error",
        ),
    ],
)
def test_an_exception_no_pattern_reads_is_read_by_its_family(line: str, kind: str) -> None:
    found = exception_family(line)
    assert found is not None and found.name == kind


@pytest.mark.parametrize(
    "line",
    [
        # a missing case in SGLang (sglang#32933, unknown_traceback): `unsupported` is no family
        "ValueError: Unsupported compute capability: 12.0",
        # code bugs (the corpus's unknown_traceback excerpts)
        "TypeError: 'NoneType' object is not iterable",
        "AttributeError: 'ScheduleBatch' object has no attribute 'sample'",
        # EINVAL's words are not a setting refused (tensorboard#6398, logger_error)
        "tensorflow.python.framework.errors_impl.InvalidArgumentError:events.out.tfevent;  "
        "Invalid argument",
        # a full object store is labelled by what filled it, not by the class (ray#... excerpts)
        "ray.exceptions.ObjectStoreFullError: Failed to put object in object store because it "
        "is full.",
        # NCCL's environment variable in advice is no mention of NCCL
        "RuntimeError: boom (run with NCCL_DEBUG=INFO for details)",
        # not an exception line at all
        "Loading safetensors checkpoint shards: 100% Completed | 4/4",
    ],
)
def test_an_exception_of_no_family_is_left_alone(line: str) -> None:
    assert exception_family(line) is None


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        # NCCL's NCCLCHECK macro in nccl-tests between two hosts (nccl-tests#15)
        ("NCCL failure common.cu:921 'unhandled system error'", "nccl_error"),
        # the CUDA driver API's result refused (torch_memory_saver#35)
        (
            "[torch_memory_saver.cpp] CUresult error  result=1 file=csrc/torch_memory_saver.cpp "
            "func=resume line=214",
            "cuda_error",
        ),
    ],
)
def test_a_failure_reported_in_nccl_or_cuda_words_is_read(line: str, kind: str) -> None:
    assert classify(line) is None or classify(line) == BY_NAME[kind]  # (a pattern may too)
    found = reported_family(line)
    assert found is not None and found.name == kind


@pytest.mark.parametrize(
    "line",
    [
        "gpu01:2870757:2870757 [0] NCCL INFO comm 0x560c6a8aafd0 rank 0 nranks 2 - Abort COMPLETE",
        "node1:123:456 [0] NCCL WARN NET/Plugin: No plugin found, NCCL failure reported earlier",
        "WARNING 07-27 23:31:27 [utils.py:12] CUDA error reporting is asynchronous",
        "[INFO] retrying after a CUDA error",
        "model loaded: 28 layers, cuda graph captured",
    ],
)
def test_a_line_below_error_level_or_without_the_words_is_left_alone(line: str) -> None:
    assert reported_family(line) is None


def test_a_kind_s_own_wording_is_read_before_any_family() -> None:
    """The families are read only where no pattern read the line: NCCL's `unhandled cuda
    error`, which names CUDA's words, stays NCCL's failure; advice names no failure."""
    found = diagnose_chunks(
        [
            b"RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:891, unhandled cuda error, "
            b"NCCL version 2.21.5\n"
        ]
    )
    assert [f.kind for f in found][:1] == ["nccl_error"]
    assert not diagnose_chunks(
        [b"If a CUDA error occurs, consider passing CUDA_LAUNCH_BLOCKING=1 to see where.\n"]
    )


def test_a_family_read_ranks_with_the_first_failure() -> None:
    """A family's kind is a failure like any other: the first line that says one comes first,
    a dead actor (an echo) after it."""
    log = (
        b"Traceback (most recent call last):\n"
        b'  File "train.py", line 3, in <module>\n'
        b"    ray.get(ref)\n"
        b"ray.exceptions.RayTaskError(OutOfDiskError): ray::Writer.put() (pid=12, ip=10.0.0.1)\n"
        b"ray.exceptions.OutOfDiskError: Local disk is full\n"
        b"ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
    )
    kinds = [f.kind for f in diagnose_chunks([log])]
    assert kinds[0] == "disk_full", kinds


def test_an_exception_printed_after_other_text_is_read_by_its_family() -> None:
    """ray#49173: Ray prints its OutOfDiskError after the object store's own message, on the
    same line; the class, named with its module, is the exception. A bare `Error:` in a
    sentence is prose, and a retry of what an exception said is a notice, not the failure."""
    line = (
        "the object cannot be created because the local object store is full and the local "
        "disk utilization is over capacity. ray.exceptions.OutOfDiskError: Local disk is full"
    )
    found = reported_family(line)
    assert found is not None and found.name == "disk_full"
    assert [f.kind for f in diagnose_chunks([line.encode() + b"\n"])] == ["disk_full"]
    assert reported_family("the run stopped. Error: see the log above") is None
    assert reported_family("INFO caught ray.exceptions.OutOfDiskError: Local disk is full") is None
    retried = diagnose_chunks(
        [b"upload failed with requests.exceptions.ConnectionError: boom, retrying in 5s\n"]
    )
    assert [(f.kind, f.evidence[:6]) for f in retried] == [("network", "upload")]
