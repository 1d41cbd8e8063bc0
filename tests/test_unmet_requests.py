"""Failures of a run that waits for what never comes: a resource request no node can meet, a
server that never came up, an engine loop that stalled. areal24's blind misses, by class
(bench/heldout/areal24-queries.md, docs/benchmarks.md): each rule is tested on the real
excerpts of several projects and on variants of their words, whole and in pieces."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.diagnosis.stream import diagnose_chunks, diagnose_text

CORPUS = Path(__file__).parent / "data" / "corpus"


def _diagnose(name: str) -> list[str]:
    data = (CORPUS / name).read_bytes()
    return [f.kind for f in diagnose_chunks([data[data.find(b"\n") + 1 :]])]


def _kinds(text: str) -> list[str]:
    """The kinds, root cause first, read whole and line by line in pieces (the same both ways)."""
    whole = [(f.kind, f.line) for f in diagnose_text(text)]
    pieces = [line.encode() + b"\n" for line in text.split("\n")]
    assert [(f.kind, f.line) for f in diagnose_chunks(pieces)] == whole
    return [kind for kind, _ in whole]


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        # a resource request larger than the cluster offers, short of CPUs or memory
        ("config_error/areal-120.log", "config_error"),
        ("config_error/arenabaselines-17.log", "config_error"),
        ("config_error/tesp-8.log", "config_error"),
        ("config_error/ray-25218.log", "config_error"),
        ("config_error/ray-14621.log", "config_error"),
        # a client that gave up waiting for the server it launched
        ("connection_refused/areal-240.log", "connection_refused"),
        ("connection_refused/modalexamples-1553.log", "connection_refused"),
        ("connection_refused/olmocr-82.log", "connection_refused"),
        ("connection_refused/olmocr-267.log", "connection_refused"),
        ("connection_refused/vllmomni-7612.log", "connection_refused"),
        ("connection_refused/openr1-543.log", "connection_refused"),
        # vLLM V0's engine loop that stalled or whose background task failed
        ("vllm_engine_dead/indexttsvllm-54.log", "vllm_engine_dead"),
        ("vllm_engine_dead/vllm-13957.log", "vllm_engine_dead"),
        # NCCL's socket transport that lost its peer: an NCCL error, not a collective's timeout
        ("nccl_error/nccl-706.log", "nccl_error"),
    ],
)
def test_areal24s_blind_misses_are_read_by_their_class(name: str, kind: str) -> None:
    assert _diagnose(name)[0] == kind


# the words of the excerpts this class was written from, and around them
_TUNE = (
    "ray.tune.error.TuneError: Insufficient cluster resources to launch trial: trial requested "
    "{cpu} CPUs, {gpu} GPUs but the cluster has only {have_cpu} CPUs, {have_gpu} GPUs, 1.37 GiB "
    "heap, 0.44 GiB objects. Pass `queue_trials=True` in ray.tune.run()"
)


@pytest.mark.parametrize(
    ("counts", "kinds"),
    [
        # the CPUs short, the GPUs not: the trial's requests to lower
        ((11, 1, 4, 1), ["config_error"]),
        ((22, 0, 8, 2), ["config_error"]),
        # the GPUs short (whatever else is): more GPUs asked for than there are
        ((1, 2, 8, 1), ["insufficient_gpus"]),
        ((16, 8, 4, 1), ["insufficient_gpus"]),
        # nothing short: Tune's words still say that the trial did not fit
        ((1, 0, 8, 1), ["config_error"]),
    ],
)
def test_a_trials_request_names_the_resource_that_falls_short(
    counts: tuple[int, int, int, int], kinds: list[str]
) -> None:
    cpu, gpu, have_cpu, have_gpu = counts
    text = _TUNE.format(cpu=cpu, gpu=gpu, have_cpu=have_cpu, have_gpu=have_gpu)
    assert _kinds(text + "\n") == kinds


@pytest.mark.parametrize(
    ("line", "kinds"),
    [
        # the same check in other words: asked `requires`, there `only has`
        ("the job requires 64 CPUs but this node only has 32 CPUs", ["config_error"]),
        ("the job requires 4 GPUs but this node only has 2 GPUs", ["insufficient_gpus"]),
        ("the job requires 4 GPUs but this node only has 8 GPUs", []),
        # amounts in other units, or none: nothing to compare
        ("requested 300 MB memory but the cluster has only 200 GB memory", []),
        ("requested a GPU node but the cluster has only CPU nodes", []),
        # the autoscaler's words: CPUs and memory are the request's, GPUs insufficient_gpus'
        (
            "Error: No available node types can fulfill resource request {'CPU': 1.0, "
            "'memory': 42949672960.0}. Add suitable node types to this cluster",
            ["config_error"],
        ),
        (
            "(autoscaler +34s) Error: No available node types can fulfill resource request "
            "defaultdict(<class 'float'>, {'CPU': 8.0, 'GPU': 8.0}).",
            ["insufficient_gpus"],
        ),
        # the scheduler's warning with its request on the same line
        (
            "WARNING worker.py:1093 -- The actor or task with ID ff01 cannot be scheduled right "
            "now. It requires {CPU_group_22bb: 1.000000} for placement, but this node only has "
            "remaining {3.000000/4.000000 CPU}",
            ["config_error"],
        ),
        (
            "The actor or task with ID ff01 is pending and cannot currently be scheduled. It "
            "requires {GPU: 1.000000} for placement, but this node only has remaining {CPU: 8}",
            ["insufficient_gpus"],
        ),
    ],
)
def test_a_request_no_node_can_meet_is_told_by_the_resource_it_names(
    line: str, kinds: list[str]
) -> None:
    assert _kinds(line + "\n") == kinds


def test_the_schedulers_warning_with_its_request_on_the_next_line_names_that_request() -> None:
    # ray#21097: the warning, then `Required resources for this actor or task: {GPU: ...}`;
    # the warning's own line names no resource, so it says nothing of its own
    warning = (
        "WARNING worker.py:1245 -- The actor or task with ID ff9c cannot be scheduled right now. "
        "You can ignore this message if this Ray cluster is expected to auto-scale."
    )
    assert _kinds(warning + "\n") == []
    assert _kinds(
        warning + "\n  | Required resources for this actor or task: {GPU: 1.000000}\n"
    ) == ["insufficient_gpus"]
    assert _diagnose("insufficient_gpus/ray-21097.log")[0] == "insufficient_gpus"


_SERVER_DOWN = (
    "RuntimeError: server launch failed",
    "TimeoutError: SGLang server not ready within 300 seconds",
    "Exception: sglang server did not become ready after waiting.",
    "RuntimeError: Server failed to start within 1200 seconds",
    "INFO - trl.extras.vllm_client - Server is not up yet. Retrying in 2.0 seconds...",
    "WARNING - Attempt 287: Please wait for vllm server to become ready...",
    "ERROR (Router) Failed to load model: vllm-server failed to start within timeout",
    "RuntimeError: inference server never became healthy after 600 s",
)


@given(
    st.sampled_from(_SERVER_DOWN),
    st.lists(st.sampled_from(["", "step 3 loss 0.21", "[INFO] saving", "Loading weights"])),
)
@settings(max_examples=60, deadline=None)
def test_a_client_that_gave_up_on_its_server_is_a_server_not_up(
    line: str, noise: list[str]
) -> None:
    assert _kinds("\n".join([*noise, line, *noise]) + "\n")[0] == "connection_refused"


@pytest.mark.parametrize(
    "line",
    [
        # a server's check of its own HTTP front end while it starts (sglang#28493: a bug of the
        # server's warmup, not a server a client could not reach)
        "Server warmup failed; aborting startup: HTTP server did not become ready at http://x/h",
        # Ray's own client server, a part of the cluster: ray_cluster's
        "Ray client server failed to start; failed to install hooks later",
        # the words apart, or about something else than a server
        "the server answered; the worker did not become ready in time",
        "dataloader not ready yet, waiting",
        "Uvicorn running on http://0.0.0.0:8000; server started",
    ],
)
def test_other_words_near_a_server_are_no_server_not_up(line: str) -> None:
    assert "connection_refused" not in _kinds(line + "\n")
    assert _diagnose("unknown_traceback/sglang-28493.log")[0] == "unknown_traceback"


@pytest.mark.parametrize(
    ("line", "kinds"),
    [
        (
            "ERROR 06-25 17:27:19 [async_llm_engine.py:883] Engine iteration timed out. This "
            "should never happen!",
            ["vllm_engine_dead"],
        ),
        (
            "ERROR 01-28 17:10:28 async_llm_engine.py:68] Engine background task failed",
            ["vllm_engine_dead"],
        ),
        (
            "ERROR: Exception in callback functools.partial(<function _log_task_completion at "
            "0x7fa8>, error_callback=<bound method AsyncLLMEngine._error_callback of <x>>)",
            ["vllm_engine_dead"],
        ),
        # an event loop's callback of another function: not vLLM's engine task
        ("ERROR: Exception in callback functools.partial(<function on_done at 0x7f>)", []),
    ],
)
def test_vllms_engine_loop_that_failed_is_a_dead_engine(line: str, kinds: list[str]) -> None:
    assert _kinds(line + "\n") == kinds


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        # NCCL's socket transport: a call to a peer that failed, whatever its reason
        (
            "w-23:83:2526 [0] misc/socket.cc:503 NCCL WARN Net : Call to recv from "
            "100.96.188.199<41468> failed : Connection timed out",
            "nccl_error",
        ),
        (
            "w-1:8:9 [0] NCCL WARN Net : Call to connect to 10.0.0.2<5000> failed : "
            "Connection refused",
            "nccl_error",
        ),
        # a collective that timed out is still the timeout's
        (
            "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
            "OpType=ALLREDUCE) ran for 1800035 milliseconds before timing out.",
            "nccl_timeout",
        ),
    ],
)
def test_ncclls_failed_socket_call_is_an_nccl_error(line: str, kind: str) -> None:
    assert _kinds(line + "\n")[0] == kind
