"""Lines that only mention a failure are not the run's failure (a blind user walk's defects).

A frame's source line inside a traceback is code; a write and a failure named on one line is
not a full disk; the real exception that ended the program stays the root cause.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ajetd.diagnosis.exitcodes import with_exit_code
from ajetd.diagnosis.stream import StreamDiagnoser, diagnose_text
from conftest import Env
from loopkit import Loop

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


# The walk's lines: vLLM's start-up INFO advice, a wandb retry it resolves, a launcher's advice
# on the allocator, an agent's tool output; each before the exception that ended the program.
_CUDAGRAPH_ADVICE = (
    "(WorkerDict pid=8123) INFO 07-27 23:31:40 [model_runner.py:1523] Capturing cudagraphs for "
    "decoding. This may lead to unexpected consequences if the model is not static. To run the "
    "model in eager mode, set 'enforce_eager=True' or use '--enforce-eager' in the CLI. If "
    "out-of-memory error occurs during cudagraph capture, consider decreasing "
    "`gpu_memory_utilization` or switching to eager mode. You can also reduce the "
    "`max_num_seqs` as needed to decrease memory usage."
)
HARMLESS = (
    _CUDAGRAPH_ADVICE,
    "WARNING: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid CUDA out of memory "
    "errors when fragmentation is high",
    "Tip: to avoid a NCCL timeout on slow file systems, raise NCCL_TIMEOUT.",
    "(TaskRunner pid=1) If you see 'No space left on device', point checkpoints elsewhere.",
    "wandb: Network error resolved after 0:00:12.345678, resuming normal operation.",
    "(TaskRunner pid=1) agent tool call failed: FileNotFoundError in user sandbox (task 17), "
    "reward 0",
    "(TaskRunner pid=1) episode 4: the agent caught OutOfMemoryError in its tool and went on",
    "(TaskRunner pid=1) In case of CUDA out of memory, the trainer halves its micro batch.",
)


@pytest.mark.parametrize("line", HARMLESS)
def test_a_line_that_only_mentions_a_failure_is_no_finding(line: str) -> None:
    assert _kinds(line + "\n") == []
    assert _kinds(line + "\n(TaskRunner pid=1) step:1 - actor/loss:0.1\n" + _RAISED) == [
        "unknown_traceback"
    ]


@pytest.mark.parametrize(
    "line",
    [
        "wandb: Network error (ConnectionError), entering retry loop.",
        "wandb: WARNING failed to write summary, retrying",
        "(TaskRunner pid=1) reward server unreachable (Connection refused), retrying in 2 s",
        "Server is not up yet. Retrying in 2.0 seconds...",
    ],
)
def test_a_retry_ranks_after_the_exception_that_ended_the_program(line: str) -> None:
    kinds = _kinds(line + "\n" + _RAISED)
    assert kinds[0] == "unknown_traceback" and len(kinds) == 2  # the retry still reported
    assert _kinds(line + "\n")  # alone (a run that hung retrying), it is what there is


def test_the_walk_h1a_h1b_logs_name_the_exception() -> None:
    walk = _CUDAGRAPH_ADVICE + "\n(TaskRunner pid=1) step:1 - actor/loss:0.1\n" + _RAISED
    (root,) = diagnose_text(walk)
    assert (root.kind, root.line) == ("unknown_traceback", 6)
    wandb = (
        "wandb: Network error (ConnectionError), entering retry loop.\n"
        "wandb: Network error resolved after 0:00:12.345678, resuming normal operation.\n"
        + _RAISED.replace("RuntimeError: reward judge", "ValueError: the reward judge")
    )
    found = diagnose_text(wandb)  # the retry it reported resolved is taken back
    assert [(f.kind, f.count) for f in found] == [("unknown_traceback", 1)]


_RETRY = "wandb: Network error (ConnectionError), entering retry loop.\n"
_OVER = "wandb: Network error resolved after 0:00:12.345678, resuming normal operation.\n"
_STEP = "(TaskRunner pid=1) step:1 - actor/loss:0.1\n"


def test_a_retry_the_program_says_resolved_is_taken_back_and_only_a_retry() -> None:
    """A finished retry is no failure: a healthy run showed `logger_error [retryable]` to its
    end (status, results.md) for a wandb blip it got over. A retry after the resolution, or
    the failure itself seen as an exception, stays."""
    assert _kinds(_RETRY + _STEP + _OVER + _STEP) == []
    assert _kinds(_RETRY + _OVER + _STEP + _RETRY) == ["logger_error"]  # failing again
    raised = _RETRY + "wandb.errors.CommError: Network error (ConnectionError)\n" + _OVER
    assert _kinds(raised) == ["logger_error"]  # it raised: that is no retry to take back
    assert _kinds(_OVER) == []


def test_a_live_reading_drops_the_retry_once_it_is_resolved() -> None:
    """The live reading (status while the run goes on) gives the finding while the retry is
    under way and takes it back once the program says it is over."""
    stream = StreamDiagnoser()
    stream.feed((_STEP + _RETRY).encode())
    assert [f.kind for f in stream.peek(ending=False)] == ["logger_error"]
    changes = stream.changes
    stream.feed((_STEP + _OVER).encode())
    assert stream.changes != changes and stream.peek(ending=False) == []


def test_a_failure_before_or_after_advice_on_its_line_is_still_read() -> None:
    # NCCL's watchdog: its advice-like sentence, then the error on the same line
    nccl = (
        "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out. "
        "[E ProcessGroupNCCL.cpp:460] To avoid data inconsistency, we are taking the entire "
        "process down. terminate called after throwing an instance of 'std::runtime_error' "
        "what(): NCCL error: remote process exited or there was a network error"
    )
    assert _kinds(nccl + "\n")[:1] == ["nccl_error"]
    # an out of memory reported, then advice (on a line that is no exception's)
    oom = (
        "(TaskRunner pid=1) ERROR step 3: CUDA out of memory. Tried to allocate 2.00 GiB. If "
        "reserved but unallocated memory is large try setting expandable_segments to avoid "
        "fragmentation."
    )
    assert _kinds(oom + "\n")[:1] == ["cuda_oom"]
    # an exception line keeps its advice (vLLM's own is how vllm_memory is told)
    vllm = (
        "ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine."
    )
    assert _kinds(vllm + "\n") == ["vllm_memory"]


_TOOL_OUTPUT = (
    "(TaskRunner pid=1) [agent] episode 12: tool `bash` returned: bash: foo: command not found\n"
)


def test_a_shells_complaint_inside_a_programs_log_is_not_its_failure() -> None:
    found = tuple(diagnose_text(_TOOL_OUTPUT + _RAISED))
    assert [f.kind for f in found] == ["unknown_traceback", "command_not_found"]
    # the program exited 1: its exception is the failure
    assert with_exit_code(found, 1)[0].kind == "unknown_traceback"
    # exit 127: the shell could not run the command, and said so
    assert with_exit_code(found, 127)[0].kind == "command_not_found"
    # alone in the output, it is still what there is
    assert _kinds(_TOOL_OUTPUT) == ["command_not_found"]
    assert _kinds("bash: line 1: no_such_program: command not found\n") == ["command_not_found"]


def test_an_exception_printed_as_one_is_still_read_on_a_line_that_is_no_exceptions() -> None:
    for line, kind in (
        (
            "(TaskRunner pid=1) load failed: FileNotFoundError: [Errno 2] No such file: 'a.parquet'",
            "missing_file",
        ),
        ("(TaskRunner pid=1) ray.exceptions.RayTaskError(FileNotFoundError): x", "missing_file"),
        ("step 3 failed with OutOfMemoryError", "cuda_oom"),
    ):
        assert _kinds(line + "\n")[:1] == [kind], line


def test_a_run_that_printed_mentions_gets_no_fix_for_them(env: Env, loop: Loop) -> None:
    """Through the daemon (real tmux): programs print the walk's vLLM advice, or wandb's retry
    that it resolves, then fail with an exception no kind explains and exit 1. The run ends on
    that exception: its config's gpu_memory_utilization and logger are never changed."""
    logs = {
        "advice": _CUDAGRAPH_ADVICE + "\n(TaskRunner pid=1) step:1 - actor/loss:0.1\n" + _RAISED,
        "retry": (
            "wandb: Network error (ConnectionError), entering retry loop.\n"
            "wandb: Network error resolved after 0:00:12.345678, resuming normal operation.\n"
            + _RAISED
        ),
    }
    runs = {}
    for name, text in logs.items():
        log = env.tmp / f"{name}.log"
        log.write_text("# source: the walk\n" + text)
        config = env.config(name)
        path = env.codebase / config
        conf = yaml.safe_load(path.read_text())
        conf["ajet"]["trainer_common"]["logger"] = "wandb"
        conf["ajet"]["rollout"] = {"gpu_memory_utilization": 0.9}
        path.write_text(yaml.safe_dump(conf))
        ajetd = "gpus: 0\nmax_trials: 3\nallow_fixes: {gpu_memory_utilization: {min: 0.3}}"
        command = f"python -m fakejet.printer {log} 0"
        runs[name] = loop.submit(env.blueprint(name, config=config, command=command, ajetd=ajetd))
    for name, run_id in runs.items():
        flag = loop.until_done(run_id)
        run = loop.run(run_id)
        assert flag["status"] == "failed", name
        assert not any("gpu_memory" in f or "logger" in f for f in run.fixes), (name, run.fixes)
        for trial in run.trials:
            assert trial.findings and trial.findings[0].kind == "unknown_traceback", name
        said = (Path(run.result_dir) / "results.md").read_text()
        ended = next(x for x in said.splitlines() if "run ended:" in x)
        assert "(unknown_traceback: RuntimeError: reward judge" in ended, (name, ended)


@pytest.mark.parametrize(
    "line",
    [
        "WARNING: CUDA out of memory on step 3, skipping the batch",
        "(TaskRunner pid=1) WARNING 07-27 23:31:40 [cache.py:1] No space left on device for the "
        "cache; not caching",
    ],
)
def test_a_failure_logged_as_a_warning_ranks_after_the_exception(line: str) -> None:
    """Logged as a warning, the program went on: an exception no kind explains that ended it
    comes first; alone, the warning is still what there is."""
    kinds = _kinds(line + "\n" + _RAISED)
    assert kinds[0] == "unknown_traceback" and len(kinds) == 2
    assert _kinds(line + "\n")


_OOM_PRINTED = (Path("/work/shared/fixtures/logs") / "cuda_oom_torch_compute_log_prob.log",)
_AUTOSCALER_WARNING = (
    "(autoscaler +18s) Warning: The following resource request cannot be scheduled right now:"
    " {'GPU': 1.0}. This is likely due to all cluster resources being used by other tasks or"
    " actors.\n"
)
_OOM_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/nemo_rl/models/policy/worker.py", line 812, in get_logprobs\n'
    "    logits = self.model(input_ids).logits\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 13.91 GiB.\n"
)


@pytest.mark.parametrize(
    "warning",
    [
        _AUTOSCALER_WARNING,
        "(autoscaler +1h2m3s, ip=10.0.0.1) Warning: The following resource request cannot be"
        " scheduled right now: {'GPU': 8.0}.\n",
        "[2025-05-23 18:02:42] [WARNING] The following resource request cannot be scheduled right"
        " now: {'GPU': 8.0}\n",
        "2024-02-27 18:08:15,439 WARNING - insufficient GPUs: requested 8, available 4\n",
    ],
)
def test_a_warning_in_any_logger_form_comes_after_the_exception(warning: str) -> None:
    """A failure logged as a warning (the program went on) ranks after the exception that
    ended the run, whatever logger and prefix printed it; alone, it is still the reason."""
    kinds = _kinds(warning + _OOM_TRACEBACK)
    assert kinds[0] == "cuda_oom"
    assert _kinds(warning)[0] == "insufficient_gpus"


def test_the_autoscaler_warning_before_a_real_oom_log_is_not_its_root_cause() -> None:
    (log,) = _OOM_PRINTED
    if not log.exists():
        pytest.skip("shared fixture not present")
    assert _kinds(_AUTOSCALER_WARNING + log.read_text())[0] == "cuda_oom"


@pytest.mark.parametrize(
    "quoted",
    [
        "(ParallelEnvManager pid=1305) agent output: I got a CUDA out of memory error? No, the"
        " API returned 401 Unauthorized.",
        "assistant: The traceback says torch.OutOfMemoryError: CUDA out of memory, so I retried.",
        "[2025-05-23 18:02:42] model_response: NCCL error: unhandled system error, let me check",
    ],
)
def test_a_models_quoted_text_names_no_failure_of_the_run(quoted: str) -> None:
    """What an agent or a model wrote, quoted in a log line, is not what the program did: the
    run's own failure after it is its root cause, and alone it says nothing."""
    assert _kinds(quoted + "\nKilled\n") == ["host_oom"]
    assert _kinds(quoted + "\n") == []


def test_a_bare_response_is_not_a_models_text() -> None:
    """An HTTP client's or a subprocess's `response:` may report the failure itself."""
    assert _kinds("response: CUDA out of memory. Tried to allocate 2.00 GiB\n") == ["cuda_oom"]


@pytest.mark.parametrize(
    "line",
    [
        "oom_kill 0",  # /proc/vmstat
        "memory.events: low 0 high 0 max 0 oom 0 oom_kill 0 oom_group_kill 0",  # cgroup v2
        "vm.oom_kill_allocating_task = 0",  # sysctl -a
        "memory.oom_kill_disable: 0",
        "  oom_kill_disable: true",  # a config key
        "INFO config: {'oom_kill_threshold': 0.95, 'enable_oom_killer': False}",
        "INFO setting oom_score_adj=-1000 so the oom-killer spares the trainer",
        "[2024-01-01] step 10: host mem 120G/512G, oom_kills=0",
        "RAY_memory_monitor_refresh_ms=250 RAY_memory_usage_threshold=0.95",
        "slurmstepd: Detected 0 oom_kill events in StepId=1.0",
        "TaskPluginParam=OomKillStep",
        "srun --oom-kill-step=1 python train.py",  # Slurm's option
        '    "OOMKilled": false,',  # docker inspect of a container that was not
        "oom killed: 0",
    ],
)
def test_an_oom_kill_setting_or_counter_is_no_oom_kill(line: str) -> None:
    """A memory setting's or counter's name that holds `oom_kill` (a kernel counter, a cgroup
    or config key, Ray's memory monitor settings) in healthy output is no host_oom: only an
    OOM kill said as an event is (`tests/test_diagnosis.py` CORPUS holds those shapes)."""
    assert _kinds(line + "\n") == []
    assert _kinds(line + "\n" + _RAISED) == ["unknown_traceback"]
