"""Structure-aware reading (issue 12), each shape checked on real excerpts from the corpus.

The excerpts are public issue threads' logs (`tests/data/corpus`, first line: the source);
each case names the shape it stands for and the line that must be read as the root cause.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.core.finding import Finding
from ajetd.core.termtext import strip_dress
from ajetd.diagnosis.catalogue import CATALOGUE, candidates
from ajetd.diagnosis.patterns import Unless, compiled, gate
from ajetd.diagnosis.shape import continued, glued_lines
from ajetd.diagnosis.stream import StreamDiagnoser, _clean_block, diagnose_chunks, diagnose_text
from ajetd.diagnosis.wrapped import _gate_exact, classify

CORPUS = Path(__file__).parent / "data" / "corpus"


def _diagnose(name: str) -> list[Finding]:
    data = (CORPUS / name).read_bytes()
    return diagnose_chunks([data[data.find(b"\n") + 1 :]])


@pytest.mark.parametrize(
    ("dressed", "bare"),
    [
        (
            "(TaskRunner pid=4098) omegaconf.errors.ConfigKeyError: Key 'x' not in 'HFModelConfig'",
            "omegaconf.errors.ConfigKeyError: Key 'x' not in 'HFModelConfig'",
        ),
        (
            "(DTensorPolicyWorker[rank=0] pid=19328) ==== backtrace (tid:  19328) ====",
            "==== backtrace (tid:  19328) ====",
        ),
        ('(raylet)   File "default_worker.py", line 8', '  File "default_worker.py", line 8'),
        (
            "(EngineCore pid=128) ERROR 03-16 08:31:22 [core.py:1090]     self.event.synchronize()",
            "    self.event.synchronize()",
        ),
        (
            "ERROR 01-10 21:49:05 engine.py:366] RuntimeError: CUDA error: device-side assert triggered",
            "RuntimeError: CUDA error: device-side assert triggered",
        ),
        (
            "[2024-02-27 18:08:15,439 E 73667 73667] logging.cc:361: *** SIGSEGV received ***",
            "logging.cc:361: *** SIGSEGV received ***",
        ),
        ("[rank0]: Traceback (most recent call last):", "Traceback (most recent call last):"),
        ("+ echo '[ERROR] Background srun died'", "echo '[ERROR] Background srun died'"),
        ("INFO:nemo_rl.utils.venvs:Using existing venv", "Using existing venv"),
        ("(WorkerDict pid=1) TypeError: x [repeated 43x across cluster]", "TypeError: x"),
        # colour codes pasted into an issue lose their ESC byte
        (
            "[36m(main_task pid=3523385)[0m ValueError: x (8) is smaller",
            "ValueError: x (8) is smaller",
        ),
        # pytest's column before the lines of an exception a failing test raised
        (
            "E       ray.exceptions.RayTaskError: ray::W.f()",
            "ray.exceptions.RayTaskError: ray::W.f()",
        ),
        # glog's level letter is not pytest's column
        ("E0328 18:23:00.165781 81395 core_worker.cc:382] x", "x"),
        # SGLang's timestamp with its ranks (tensor, data, expert parallel)
        ("[2025-04-15 12:43:15 TP0] Load weight begin.", "Load weight begin."),
        ("[2026-05-28 00:11:09.816 DP0 TP0 EP0] Scheduler hit an", "Scheduler hit an"),
        # SkyPilot's node and rank before each line of a job's output (walk 86, F31)
        (
            "(head, rank=0, pid=4734) Traceback (most recent call last):",
            "Traceback (most recent call last):",
        ),
        ('(worker1, rank=1, pid=2345, ip=10.0.0.2)   File "x.py", line 3', '  File "x.py", line 3'),
    ],
)
def test_dress_is_stripped(dressed: str, bare: str) -> None:
    assert strip_dress(dressed) == bare


@pytest.mark.parametrize(
    ("name", "kind", "evidence"),
    [
        # a traceback whose every line carries a Ray actor prefix
        ("config_error/verl-4672.log", "config_error", "omegaconf.errors.ConfigKeyError"),
        ("cuda_error/verl-1611.log", "cuda_error", "an illegal memory access"),
        # vLLM's logger prefix on every line of a traceback, interleaved with bare frames
        ("cuda_error/vllm-11931.log", "cuda_error", "device-side assert triggered"),
        ("cuda_error/vllm-37159.log", "cuda_error", "torch.AcceleratorError"),
        # timestamps (Ray's C++ logger) before a native crash
        ("segfault/ray-43456.log", "segfault", "SIGSEGV"),
        # RayTaskError(Inner): classified by what it wraps, and quoting the cause's own line
        # printed after it (the wrapper's says only where it was raised)
        ("import_error/verl-7320.log", "import_error", "ModuleNotFoundError: No module named"),
        ("missing_file/ray-8581.log", "missing_file", "FileNotFoundError: [Errno 2] No such"),
        # ActorDiedError raised by a creation task, chained by "The above exception was the
        # direct cause": the innermost exception is the root cause
        ("unknown_traceback/nemorl-1228.log", "unknown_traceback", "TypeError: Llama31"),
        # torchrun's ChildFailedError root-cause section
        ("segfault/megatron-1880.log", "segfault", "exitcode  : -11"),
        # a bare exception line, no Traceback header above it
        ("cuda_oom/nemorl-493.log", "cuda_oom", "torch.OutOfMemoryError"),
        ("unknown_traceback/trl-3587.log", "unknown_traceback", "Exception: Request failed"),
        # compiler, ninja/cmake inside CalledProcessError, uv building a worker venv
        ("build_error/groupedgemm-20.log", "build_error", "fatal error: cutlass/bfloat16.h"),
        ("build_error/vllm-8852.log", "build_error", "CalledProcessError"),
        ("build_error/nemorl-970.log", "build_error", "Failed to build `deep-gemm"),
        # launch scripts' own errors (with a `+ ` shell trace), srun, slurmstepd
        ("launch_error/nemorl-1022.log", "launch_error", "[ERROR] Background srun"),
        ("launch_error/nemorl-1019.log", "launch_error", "srun: error: Unable to create step"),
        ("launch_error/pyxis-127.log", "launch_error", "slurmstepd: error: pyxis"),
        # an exception raised in an experiment logger's own frames is the logger's failure
        ("logger_error/tensorboard-5759.log", "logger_error", "FileNotFoundError"),
        # `SomeError:message` with no space after the colon is still an exception line
        ("logger_error/tensorboard-6398.log", "logger_error", "InvalidArgumentError:events"),
        # a launcher's logger line `[ERROR] [launch.py:...]` is not a launch script's own error
        ("host_oom/deepspeed-3232.log", "host_oom", "sigkill_handler"),
        ("segfault/deepspeedexamples-626.log", "segfault", "sigkill_handler"),
        # a specific echo (a worker exit) is named before an unexplained exception
        ("ray_worker_died/verl-4921.log", "ray_worker_died", "ActorDiedError"),
        # a traceback the excerpt ends inside (cut before its exception line)
        ("unknown_traceback/lmmr1-49.log", "unknown_traceback", "Traceback (most recent"),
        ("unknown_traceback/segzero-105.log", "unknown_traceback", "Traceback (most recent"),
        # a Ray system component that ended (crashed, terminated, its connection closed)
        ("ray_cluster/ray-19695.log", "ray_cluster", "the local raylet has crashed"),
        ("ray_cluster/ray-31119.log", "ray_cluster", "Raylet is terminated"),
        # an exception message wrapped over two lines is read as one
        (
            "insufficient_gpus/vllmascend-14628-2.log",
            "insufficient_gpus",
            "the number of visible devices (0)",
        ),
        # after freeze 6: Ray's RaySystemError read as the cause its message carries
        ("import_error/ray-27015.log", "import_error", "No module named 'policy'"),
        # an actor's constructor that raised, its exception cut from the paste
        ("unknown_traceback/nemorl-621.log", "unknown_traceback", "Exception raised in creation"),
        # pytest's `E` column; a RayTaskError naming no inner exception is an exception in a
        # task, not a dead worker
        ("unknown_traceback/nemorl-1633.log", "unknown_traceback", "RayTaskError: ray::Megatron"),
        # Hydra's `Error in call to target` announces the failure printed after it
        ("build_error/voteflow-2.log", "build_error", "Error building extension"),
        # after freeze 9: a traceback cut while a module is being imported (its last source
        # line an import; importlib's own frames, in a paste that begins below the header)
        ("import_error/megatron-577.log", "import_error", "from megatron.arguments import"),
        ("import_error/vllm-21226.log", "import_error", "from .communication_op import"),
        ("import_error/vllm-13047.log", "import_error", "in _find_and_load"),
        # a C++ assertion that failed (glog's `Check failed:`), no kind explaining it
        ("unknown_traceback/nemorl-1051.log", "unknown_traceback", "Check failed: !core_worker"),
        # ROCm's `HIP error:` is CUDA's `CUDA error:`
        ("cuda_error/verl-3163.log", "cuda_error", "HIP error: invalid device function"),
        # after freeze 10: argparse refusing one argument (an older trl without `vllm-serve`);
        # the NCCLCHECK macro's failure line; vLLM's advice to lower its own memory budget;
        # a node marked dead, named by its IP address
        ("config_error/simplear-24.log", "config_error", "invalid choice: 'vllm-serve'"),
        ("nccl_error/nccltests-15.log", "nccl_error", "NCCL failure common.cu:921"),
        ("vllm_memory/vllm-17939.log", "vllm_memory", "lowering `max_num_seqs`"),
        ("ray_cluster/verl-1632.log", "ray_cluster", "10.122.123.196 has been marked dead"),
        # after freeze 12: a socket between ranks that timed out waiting for the peer (c10d's
        # store while a rank still loaded its checkpoint); uv refusing an extra the project does
        # not define, the name quoted in backticks
        ("nccl_timeout/verl-668.log", "nccl_timeout", "poll for socket SocketImpl"),
        ("build_error/sleap-2533.log", "build_error", "Extra `dev` is not defined"),
        # after freeze 11 (aimed at SGLang): an ignored import error whose error is a compiler's
        # failed run; a refusal after the connection dropped; Triton's resource refusal before
        # the shell's `Killed`; an architecture the server cannot run; a setting compared with
        # the Hugging Face config; a client giving up on the server it launched
        (
            "build_error/sglang-4253.log",
            "build_error",
            "Ignore import error when loading sglang.srt.models.deepseek_v2. Command",
        ),
        ("connection_refused/sglang-25084.log", "connection_refused", "Connection refused"),
        ("cuda_error/sglang-8513.log", "cuda_error", "out of resource: shared memory"),
        ("config_error/sglang-5441.log", "config_error", "are not supported for now"),
        ("config_error/slime-1730.log", "config_error", "is not equal to untie_embeddings"),
        ("connection_refused/areal-240.log", "connection_refused", "server launch failed"),
    ],
)
def test_structural_shapes_on_real_excerpts(name: str, kind: str, evidence: str) -> None:
    findings = _diagnose(name)
    assert findings, name
    assert (findings[0].kind, evidence in findings[0].evidence) == (kind, True), findings[0]


def test_an_unknown_traceback_never_precedes_the_kind_that_explains_it() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "main.py", line 3, in <module>\n'
        "ray.exceptions.ActorUnavailableError: The actor is temporarily unavailable\n"
        "(raylet) A worker died or was killed while executing a task by an unexpected system "
        "error. Worker exit type: SYSTEM_ERROR\n"
    )
    assert [f.kind for f in diagnose_text(text)] == ["ray_worker_died", "unknown_traceback"]


def test_a_wrapper_is_ranked_after_what_it_wraps() -> None:
    text = (
        "ray.exceptions.RayTaskError(EngineDeadError): ray::Worker.generate() (pid=1)\n"
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "  exitcode  : -9 (pid: 3)\n"
    )
    assert [f.kind for f in diagnose_text(text)][:2] == ["host_oom", "vllm_engine_dead"]


def test_warnings_and_benign_exits_are_not_root_causes() -> None:
    text = (
        "WARNING:2025-04-17 11:31:13,747:Retrying after connection broken by 'SSLError(1)'\n"
        "swanlab: swanlab api error, status code: 401, reason: Unauthorized\n"
        "KeyboardInterrupt\n"
    )
    assert [f.kind for f in diagnose_text(text)] == ["logger_error", "network"]


def test_an_indented_traceback_ends_at_its_own_indentation() -> None:
    text = (
        "      Traceback (most recent call last):\n"
        '        File "setup.py", line 1, in <module>\n'
        "          main()\n"
        "      subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit "
        "status 1.\n"
        "      [end of output]\n"
    )
    assert [f.kind for f in diagnose_text(text)] == ["build_error"]


@pytest.mark.parametrize(
    "line",
    [
        # SIGABRT is as often a deliberate abort (NCCL's watchdog) as a crash
        "ERROR 07-01 13:54:43 multiproc_worker_utils.py:120] Worker pid 1159 died, exit code: -6",
        # a placement group merely created is a healthy run's line
        "INFO placement_group.py:42 -- Created placement group with bundles [{'GPU': 1.0}]",
        # a device count stated, not compared against
        "INFO trainer.py:88] num_gpus=8, number of visible devices: 8",
        # a command that is not ssh exiting 255 is not ssh failing to reach a host
        "Command '['sshpass', '-f', 'pw', 'rsync', 'a', 'b']' returned non-zero exit status 255.",
        # a collective library's timeout setting is not a timeout that happened
        "export HCCL_CONNECT_TIMEOUT=7200 RCCL_TIMEOUT_MS=600000",
        # a script that sets the variable, not the runtime advising it after a failure
        "export CUDA_LAUNCH_BLOCKING=1 ASCEND_LAUNCH_BLOCKING=1",
        # Ray named, nothing failed
        "INFO worker.py:1841 -- Connected to Ray cluster. View the dashboard at 127.0.0.1:8265",
        # vLLM's engine core starting is not the engine core failing
        "(EngineCore_DP0 pid=6940) INFO 09-03 11:03:37 [core.py:71] Initializing a V1 LLM engine",
        # a compiler quoted as a command that did not fail (pip's verbose output)
        "running command 'gcc -O2 -c x.c -o x.o'",
        # a failed command that is not a compiler or a build tool
        "Command '['git', 'clone', 'https://x/y']' returned non-zero exit status 128.",
        # a library's logger line `[ERROR] COMPONENT(pid,...)` (CANN's plog) is not a launch
        # script's own error
        "[ERROR] RUNTIME(129510,all__):2026-01-20-09:48:14.622.900 [stars_engine.cc:1502]133843 "
        "ProcLogicCqReport:Task run failed, device_id=5",
    ],
)
def test_shapes_that_say_nothing_by_themselves(line: str) -> None:
    assert diagnose_text(line + "\n") == []


@pytest.mark.parametrize(
    "line",
    [
        # an invalid device *function* is a kernel built for another GPU, an invalid device
        # *pointer* a memory bug: neither is a device index the run cannot have
        "RuntimeError: CUDA error: invalid device function",
        "RuntimeError: CUDA error: invalid device pointer",
    ],
)
def test_an_invalid_device_that_is_not_an_index_is_a_cuda_error(line: str) -> None:
    assert [f.kind for f in diagnose_text(line + "\n")] == ["cuda_error"]


def test_a_traceback_cut_off_is_unexplained_only_once_the_output_has_ended() -> None:
    text = 'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n    f()\n'
    stream = StreamDiagnoser()
    stream.feed(text.encode())
    assert stream.findings() == []  # the live daemon: the traceback may still be printing
    assert [(f.kind, f.line) for f in stream.close()] == [("unknown_traceback", 1)]
    # ended by its exception line: one finding, not a second for the header
    ended = diagnose_text(text + "ValueError: bad value\n")
    assert [(f.kind, f.count) for f in ended] == [("unknown_traceback", 1)]
    # cut, but a frame already said what it was: no unexplained exception beside it
    said = text + "    torch.cuda.OutOfMemoryError: CUDA out of memory\n"
    assert [f.kind for f in diagnose_text(said)] == ["cuda_oom"]


def test_a_write_refused_by_permissions_is_not_a_full_disk() -> None:
    text = "OSError: failed to write checkpoint /ckpt/step_9: Permission denied\n"
    assert [f.kind for f in diagnose_text(text)] == ["unknown_traceback"]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # a complete sentence, then a log line
        ("ValueError: the batch size must be divisible by the number of GPUs.", "of course"),
        # a message, then code that a warning printed
        ("UserWarning: this overload of add_ is deprecated and will go", "warnings.warn(msg)"),
        # a short message is not a wrapped one
        ("KeyError: 'model'", "not found here"),
        # two ranks' lines are not one message
        ("[rank0]: RuntimeError: a long message that stops in the middle of", "  File x.py"),
        # the next line starts a new exception
        ("RuntimeError: a long message that stops in the middle of a", "ValueError: other"),
    ],
)
def test_lines_that_are_not_one_wrapped_message(first: str, second: str) -> None:
    assert continued(first, second) is None


def test_a_wrapped_message_keeps_its_dress_and_is_read_once() -> None:
    text = (
        "[rank0]: AssertionError: local_world_size (8) must be less than or equal to the number\n"
        "[rank0]: of visible devices (0).\n"
    )
    findings = diagnose_text(text)
    assert [(f.kind, f.line, f.count) for f in findings] == [("insufficient_gpus", 1, 1)]
    assert findings[0].evidence.endswith("number of visible devices (0).")


def test_a_collective_timeout_of_nccls_counterparts_is_a_collective_timeout() -> None:
    # Ascend's HCCL (vllm-ascend#16646) and AMD's RCCL say it in their own words
    assert [f.kind for f in _diagnose("nccl_timeout/vllmascend-16646.log")] == ["nccl_timeout"]
    line = "RCCL operation AllReduce timed out after 600000 ms on rank 3\n"
    assert [f.kind for f in diagnose_text(line)] == ["nccl_timeout"]


def test_a_ray_system_error_whose_cause_says_nothing_is_the_clusters() -> None:
    line = "ray.exceptions.RaySystemError: System error: Failed to unpickle serialized exception\n"
    assert [f.kind for f in diagnose_text(line)] == ["ray_cluster"]


def test_a_task_exception_is_named_by_what_follows_it_not_as_a_dead_worker() -> None:
    bare = "ray.exceptions.RayTaskError: ray::Worker.generate() (pid=1, ip=10.0.0.1)\n"
    assert [f.kind for f in diagnose_text(bare)] == ["unknown_traceback"]
    caused = bare + "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert diagnose_text(caused)[0].kind == "cuda_error"


def test_an_announced_failure_is_named_alone_when_nothing_follows() -> None:
    hydra = "Error in call to target 'trainer.Model':\nTypeError: __init__() got an unexpected\n"
    assert diagnose_text(hydra)[0].kind == "config_error"
    ray = "Exception raised in creation task: The actor died because of an error raised in its "
    found = diagnose_text(ray + "creation task, ray::A.__init__() (pid=1)\nValueError: bad x\n")
    assert (found[0].kind, found[0].evidence) == ("unknown_traceback", "ValueError: bad x")


@pytest.mark.parametrize(
    ("line", "kinds"),
    [
        # a client error (404), or requests' own words for a 5xx, is not Ray's job server
        ("RuntimeError: Request failed with status code 404: job not found", ["unknown_traceback"]),
        (
            "HTTPError: 500 Server Error: Internal Server Error for url: http://rm/s",
            ["unknown_traceback"],
        ),
        # the raylet's generic worker death names a node (its id) but no node that died
        (
            "(raylet) A worker died or was killed while executing a task by an unexpected system "
            "error. Worker ID: 5e Node ID: 75 Worker IP address: 10.0.1.75 Worker port: 10230",
            ["ray_worker_died"],
        ),
        # the KV cache's budget, when there is room for it
        ("INFO 01-12 08:36:24 gpu_worker.py:276] Available KV cache memory: 10.52 GiB", []),
        # an optional import that failed, logged as a warning, is not the failure
        ("WARNING: Failed to import apex, falling back to torch", ["import_error"]),
        # a device count compared is about devices, not a setting; tensors compared are a bug
        (
            "AssertionError: local_world_size (8) must be less than or equal to the number of "
            "visible devices (0).",
            ["insufficient_gpus"],
        ),
        (
            "RuntimeError: The size of tensor a (5) must match the size of tensor b (3)",
            ["unknown_traceback"],
        ),
        # a job whose launch failed is not a kernel whose launch failed
        ("srun: error: Application launch failed: Job step creation failed", ["launch_error"]),
        ("ERROR 07-07 06:13:02 [x.py:9] FlashAttentionScore launch kernel failed.", ["cuda_error"]),
        # a setting compared by name with what it is checked against
        (
            "AssertionError: train_batch_size is not equal to micro_batch_per_gpu * "
            "gradient_acc_step * world_size 256 != 2 * 18 * 7",
            ["config_error"],
        ),
    ],
)
def test_lines_the_freeze6_shapes_leave_alone(line: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(line + "\n")] == kinds


@pytest.mark.parametrize(
    ("line", "kinds"),
    [
        # npu-smi's table names the AI Core as a column, not as a fault
        ("| Chip | Bus-Id | AICore(%)    Memory-Usage(MB)  HBM-Usage(MB) |", []),
        # the runtime's report of a faulted compute unit, and the unit's own exception
        (
            "EZ9999[PID: 7] The error from device(chipId:3, dieId:0), serial number is 7, there "
            "is an exception of aivec error, core id is 3, error code = 0x800000",
            ["cuda_error"],
        ),
        ("        Kernel task happen error, retCode=0x2a, [aicpu exception].", ["cuda_error"]),
        # an operator call that failed, and one whose kernel binary is missing
        ("RuntimeError: call aclnnCast failed, detail:EZ9999: Inner Error!", ["cuda_error"]),
        ("        launch failed for Cast, errno:561000.", ["cuda_error"]),
        # HCCL's codes: a timed-out wait is a collective timeout, another failure an HCCL error;
        # a CANN inner error (EI9999) says neither, and a timeout setting is not a timeout
        (
            "EI0002: The wait execution of the Notify register times out. Reason: the Notify "
            "register has not received the Notify record from remote rank [4].",
            ["nccl_timeout"],
        ),
        (
            "[rank1]: EI0009: [PID: 2] 2025-09-24-20:59:48.119.066 Transport init error. Reason: "
            "[Create][DestLink]Create Dest error!",
            ["nccl_error"],
        ),
        ("EI9999: Inner Error!", []),
        ("        Possible Cause: ... (You can set the interval by using HCCL_EXEC_TIMEOUT.)", []),
    ],
)
def test_lines_the_freeze7_shapes_read_and_leave_alone(line: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(line + "\n")] == kinds


@pytest.mark.parametrize(
    ("line", "kinds"),
    [
        # PyTorch's class for an accelerator's error, named alone by a Ray wrapper (THUDM/slime
        # #1783), and with its message: `out of memory` is memory (NVIDIA-NeMo/RL#2702)
        (
            "ray.exceptions.RayTaskError(AcceleratorError): ray::MegatronTrainRayActor.train() "
            "(pid=15345, ip=10.217.25.171, actor_id=1da0d4093917dd238330b9a602000000, repr=<"
            "slime.backends.megatron_utils.actor.MegatronTr",
            ["cuda_error"],
        ),
        (
            "(MegatronPolicyWorker pid=35477) torch.AcceleratorError: CUDA error: out of memory",
            ["cuda_oom"],
        ),
        ("class AcceleratorErrorHandler: pass", []),
        # a GPU kernel compiler's fatal error (Triton through LLVM on a V100: verl#985, the same
        # line under vLLM's engine in vllm#17449); LLVM's own host allocation failure is not
        (
            "(WorkerDict pid=1473743) LLVM ERROR: Failed to compute parent layout for slice "
            "layout.",
            ["cuda_error"],
        ),
        ("LLVM ERROR: out of memory", []),
        ("Dependency 'llvm error: foo' installed", []),
        # Ray's client that could not connect to the raylet's socket (verl#158, Slurm); another
        # program's socket is not Ray's
        (
            "raylet_client.cc:60: Could not connect to socket /traindata/huida/runs/verl/"
            "ray_clusters/session_2025-01-31_21-33-56_370352_2880738/sockets/raylet.1",
            ["ray_cluster"],
        ),
        ("Could not connect to socket /var/run/docker.sock", []),
    ],
)
def test_lines_the_freeze8_shapes_read_and_leave_alone(line: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(line + "\n")] == kinds


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # ROCm's spelling of CUDA's runtime error and of its advice (verl#3163, an AMD R9700);
        # its out of memory and invalid ordinal are what CUDA's are; a script's setting is not
        ("(TaskRunner pid=2) RuntimeError: HIP error: invalid device function", ["cuda_error"]),
        ("For debugging consider passing AMD_SERIALIZE_KERNEL=3", ["cuda_error"]),
        ("RuntimeError: HIP error: out of memory", ["cuda_oom"]),
        ("RuntimeError: HIP error: invalid device ordinal", ["insufficient_gpus"]),
        ("export AMD_SERIALIZE_KERNEL=3", []),
        ("Fixing the chip error: none left", []),
        # the GPUs wanted and the GPUs there are, compared (verl#5954, NeMo-RL#89); a count
        # stated, or compared without GPUs, is not
        (
            "ValueError: Total available GPUs 7.0 is less than total desired GPUs 8",
            ["insufficient_gpus"],
        ),
        ("Requested 16 GPUs, but only 8 are available in the cluster.", ["insufficient_gpus"]),
        ("8 GPUs available, 8 requested", []),
        # the wanted ones more, said the other way round; the wanted ones fewer is no failure
        ("requested 16 GPUs, more than the 8 available on this node", ["insufficient_gpus"]),
        ("Requested 4 GPUs, fewer than the 8 available; 4 will stay idle", []),
        ("available GPUs 8 is more than the requested 4", []),
        ("the requested batch is less than the available memory", []),
        # a program saying it ignores an error it caught (SGLang with an older transformers)
        (
            "[2025-04-15 12:43:15 TP0] Ignore import error when loading sglang.srt.models."
            "mllama4. cannot import name 'Llama4Config' from 'transformers'",
            [],
        ),
        ("ImportError: cannot import name 'Llama4Config' from 'transformers'", ["import_error"]),
        # a C++ assertion that failed (NeMo-RL#1051: Ray's core worker initialised twice)
        (
            "[2025-09-03 01:42:26,011 C 576323 576323] core_worker_process.cc:69:  Check failed:"
            " !core_worker_process The process is already initialized for core worker.",
            ["unknown_traceback"],
        ),
        ("test_check_failed_count: 3", []),
        # glog's own dress (severity F: a CHECK aborting), and absl's (XLA, JAX: `E0000
        # 00:00:<epoch>.us`), stripped before the line is read: a C++ check that failed all the
        # same (the review of 2026-12-01: read as nothing)
        (
            "F1201 12:34:56.789012 12345 gpu_process.cc:123] Check failed: status == 0 (1 vs. 0)",
            ["unknown_traceback"],
        ),
        (
            "F0000 00:00:1712345678.123456   81234 pjrt_client.cc:55] Check failed: buffer != "
            "nullptr",
            ["unknown_traceback"],
        ),
        ("E0000 00:00:1712345678.123456   81234 hlo.cc:12] Failed to parse", []),
        ("health: Check failed for endpoint /v1/models, retrying", []),
        ("the Check failed: line glog prints is read as an abort", []),
        # a traceback cut while importing, and cut elsewhere; an import that ran to its end
        (
            'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n'
            '    from b import c\n  File "b.py", line',
            ["import_error"],
        ),
        (
            'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n'
            '    from b import c\n  File "b.py", line 5, in <module>\n    x = f()',
            ["unknown_traceback"],
        ),
        (
            'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n'
            "    import torch\nRuntimeError: CUDA error: an illegal memory access was encountered",
            ["cuda_error"],
        ),
        # a paste that begins below a traceback's header; faulthandler's frames are not one
        ('  File "x.py", line 3, in f\n    y()', ["unknown_traceback"]),
        ('  File "x.py", line 3 in f', []),
    ],
)
def test_lines_the_freeze9_shapes_read_and_leave_alone(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # argparse refusing one argument (wdrink/SimpleAR#24: a trl older than its
        # `vllm-serve`), and its other messages for one argument; prose that says the words is not
        (
            "usage: trl\nTRL CLI: error: argument command: invalid choice: 'vllm-serve' "
            "(choose from 'chat', 'dpo', 'env', 'grpo', 'kto', 'sft')",
            ["config_error"],
        ),
        ("train.py: error: argument --lr: invalid float value: 'x'", ["config_error"]),
        ("main.py: error: argument -n/--nodes: expected one argument", ["config_error"]),
        ("an error: argument parsing takes 2 ms", []),
        # the NCCLCHECK macro's line (NVIDIA/nccl-tests#15), with or without the host and
        # `Test`; a line about NCCL failures in general is not one
        ("NCCL failure common.cu:921 'unhandled system error'", ["nccl_error"]),
        (
            "node1: Test NCCL failure common.cu:1010 'remote process exited or there was a "
            "network error'",
            ["nccl_error"],
        ),
        ("INFO NCCL failure detection is on", []),
        # vLLM's advice to lower its budget after its own allocation failed (vllm#17939), read
        # before the out of memory it follows; an out of memory without that advice is the
        # computation's; the setting merely printed, or a function named so, is not advice
        (
            "RuntimeError: CUDA out of memory occurred when warming up sampler with 256 dummy "
            "requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when "
            "initializing the engine.",
            ["vllm_memory"],
        ),
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
            ["cuda_oom"],
        ),
        ("INFO rollout: gpu_memory_utilization=0.6, lower_bound=0.1", []),
        ("    reduce_gpu_memory_utilization(cfg)", []),
        # a node marked dead with its IP address in the sentence (verl#1632, ray#46548); a
        # sentence that ended before `dead` is not one node's death
        (
            "(raylet) The node with node id: f30f and address: 10.122.123.196 and node name: "
            "10.122.123.196 has been marked dead because the detector has missed too many "
            "heartbeats from it.",
            ["ray_cluster"],
        ),
        ("Started node 10.0.0.3. Two queue items were marked dead", []),
    ],
)
def test_lines_the_freeze10_shapes_read_and_leave_alone(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # a socket between ranks that timed out waiting for the peer's data (verl#668: c10d's
        # store, torch's warning dress; LlamaFactory#5071: HCCL's socket)
        (
            "(WorkerDict pid=10872) [rank5]:[W319 11:31:42.914854611 socket.cpp:487] [c10d] "
            "waitForInput: socket SocketImpl(fd=114, addr=[::ffff:10.166.105.83]:38584, "
            "remote=[::ffff:10.166.105.83]:39283) timed out after 600000ms",
            ["nccl_timeout"],
        ),
        (
            "[W319 11:31:42.912407157 socket.cpp:462] [c10d] waitForInput: poll for socket "
            "SocketImpl(fd=114) returned 0, likely a timeout",
            ["nccl_timeout"],
        ),
        (
            "EI0006: 2024-08-05-18:15:21.270.506 Getting socket times out. Reason: Remote Rank "
            "did not send the data in time.",
            ["nccl_timeout"],
        ),
        # a socket that could not connect is the network's, and so is Python's socket.timeout
        # (diag97: urllib3's connect to the Hub, SfMNeXt-Impl#24); neither, nor a socket
        # timeout set or reported healthy, nor a socket after the timeout, is a stalled rank
        (
            "[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying "
            "to connect to 192.0.0.1:1234",
            ["network"],
        ),
        ("socket.timeout: timed out", ["network"]),
        ("INFO setting socket timeout to 600 s", []),
        ("the request timed out, then the socket closed", []),
        # uv refusing an extra the project does not define, its name in quotes or backticks
        # (NeMo-RL#3547, SLEAP#2533); the extra defined, or only named, is not a failure
        (
            "error: Extra 'vllm' is not defined in the project's optional-dependencies table",
            ["build_error"],
        ),
        (
            "error: Extra `dev` is not defined in the project's `optional-dependencies` table",
            ["build_error"],
        ),
        ("Extra `dev` is defined in the project's `optional-dependencies` table", []),
        ("uv sync --extra dev --extra nn-cpu", []),
    ],
)
def test_lines_the_freeze12_shapes_read_and_leave_alone(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # an ignored import error whose error is a compiler's failed run (sglang#4253) is the
        # build's failure; one whose error is an import (sglang#5389's notices) says nothing
        (
            "[2025-03-10 14:17:52 TP6] Ignore import error when loading "
            "sglang.srt.models.deepseek_v2. Command '['/usr/bin/gcc', '/tmp/t/main.c', '-O3', "
            "'-shared', '-fPIC', '-o', '/tmp/t/cuda_utils.so', '-lcuda']' returned non-zero "
            "exit status 1.",
            ["build_error"],
        ),
        (
            "[2025-04-15 12:43:15 TP0] Ignore import error when loading "
            "sglang.srt.models.mllama4. cannot import name 'Llama4Config' from 'transformers'",
            [],
        ),
        # Triton refusing a kernel for its shared memory (sglang#8513), singular as Triton
        # says it; Triton named beside other words is no failure
        (
            "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: "
            "147456, Hardware limit: 101376. Reducing block sizes or `num_stages` may help.",
            ["cuda_error"],
        ),
        ("INFO using triton 3.3.1, kernel cache in /tmp/triton", []),
        # an architecture the installed server cannot run (sglang#5441, sglang#467's wording);
        # the architectures merely listed are no failure
        (
            "ValueError: Model architectures ['Glm4ForCausalLM'] are not supported for now. "
            "Supported architectures: dict_keys(['BaichuanForCausalLM', 'ChatGLMModel'])",
            ["config_error"],
        ),
        ("ValueError: Unsupported architectures: LlavaQwenForCausalLM", ["config_error"]),
        ("INFO model architectures ['Qwen2ForCausalLM'] resolved to qwen2.py", []),
        # a setting read from the Hugging Face config found not equal to the argument it is
        # checked against (slime#1730); the check announced is no failure
        (
            "AssertionError: hf_validate_args failed: tie_word_embeddings in hf config True is "
            "not equal to untie_embeddings_and_output_weights True, please check the config.",
            ["config_error"],
        ),
        ("INFO checking tie_word_embeddings in hf config against the arguments", []),
        # a client that gave up waiting for the server it launched (AReaL#240); a launch that
        # finished is no failure
        ("RuntimeError: server launch failed", ["connection_refused"]),
        ("INFO server launch finished in 12.3 s", []),
        # a client whose connection dropped and that is then refused saw the server go down
        # (sglang#25084): the refusal first; a dropped connection alone is the network's
        (
            "Error: ('Connection aborted.', RemoteDisconnected('Remote end closed connection "
            "without response'))\nError: HTTPConnectionPool(host='10.0.0.8', port=30033): Max "
            "retries exceeded with url: /v1/chat/completions (Caused by NewConnectionError("
            "'<urllib3.connection.HTTPConnection object at 0x7f6>: Failed to establish a new "
            "connection: [Errno 111] Connection refused'))",
            ["connection_refused", "network"],
        ),
        (
            "Error: ('Connection aborted.', RemoteDisconnected('Remote end closed connection "
            "without response'))",
            ["network"],
        ),
    ],
)
def test_lines_the_freeze11_shapes_read_and_leave_alone(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


def test_an_exception_whose_message_begins_on_the_next_line_is_read_with_it() -> None:
    # NVIDIA-NeMo/RL#1112: Megatron-Bridge raises `ValueError(f"\\n✗ Model architecture not
    # supported ...")`; Python prints `ValueError: ` alone and the message on the next line, in
    # the Ray actor's dress: an architecture the installed bridge cannot take, not an exception
    # no kind explains
    found = _diagnose("config_error/nemorl-1112.log")
    assert [f.kind for f in found] == ["config_error"]
    assert found[0].evidence.endswith(
        "ValueError: ✗ Model architecture not supported by AutoBridge"
    )
    joined = continued("(W pid=7) ValueError: ", "(W pid=8) ✗ Model architecture not supported")
    assert joined == "(W pid=7) ValueError: ✗ Model architecture not supported"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # no colon: Python printed an exception without a message; nothing follows it
        ("ValueError", "✗ Model architecture not supported by AutoBridge"),
        # a frame, an indented line, a traceback's header, a new exception, an empty line
        ("ValueError:", '  File "x.py", line 3, in <module>'),
        ("ValueError: ", 'File "x.py", line 3, in <module>'),
        ("ValueError: ", "    raise ValueError("),
        ("ValueError:", "Traceback (most recent call last):"),
        ("ValueError:", "The above exception was the direct cause of the following exception:"),
        ("ValueError:", "KeyError: 'model'"),
        ("ValueError:", ""),
        # another process's line is not its message
        ("(A pid=1) ValueError:", "(B pid=1) ✗ Model architecture not supported"),
    ],
)
def test_lines_that_are_not_an_empty_message_and_its_next_line(first: str, second: str) -> None:
    assert continued(first, second) is None


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # an architecture refused, said by the exception, on one line or two (sglang#5441,
        # NeMo-RL#1112); one path not supporting an architecture and falling back to another,
        # or the words without an exception, is no failure
        (
            "ValueError: Model architectures ['Glm4ForCausalLM'] are not supported for now.",
            ["config_error"],
        ),
        ("ValueError: \n✗ Model architecture not supported by AutoBridge", ["config_error"]),
        (
            "WARNING 05-01 10:00:00 [arg_utils.py:1] Model architecture ['Qwen2VLForConditional"
            "Generation'] is not supported by the V1 Engine. Falling back to V0.",
            [],
        ),
        ("INFO checked: model architecture not supported by the fast path, using the slow", []),
    ],
)
def test_lines_the_freeze13_shapes_read_and_leave_alone(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


@pytest.mark.parametrize(
    "name",
    [
        # freeze 14's blind misses: Transformers' words for a model type it has no class for
        # (sglang#128; ComfyUI_ExtraModels#114, looked for after, prints them too), AReaL's
        # allocation backend refused with the values it may take, slime's setting another one
        # requires: each a configuration the run cannot start with, not an exception no kind
        # explains
        "config_error/sglang-128.log",
        "config_error/comfyextramodels-114.log",
        "config_error/areal-752.log",
        "config_error/slime-1909.log",
    ],
)
def test_freeze14s_configuration_errors_are_read(name: str) -> None:
    assert [f.kind for f in _diagnose(name)] == ["config_error"]


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        (
            "ValueError: The checkpoint you are trying to load has model type `qwen3` but "
            "Transformers does not recognize this architecture. This could be because of an "
            "issue with the checkpoint, or because your version of Transformers is out of date.",
            ["config_error"],
        ),
        ("AssertionError: '--save' is required when save_interval is set.", ["config_error"]),
        ("ValueError: Invalid backend: megatron, expected fsdp or archon", ["config_error"]),
        # the words without the model type, or outside an exception, are no failure
        ("GemmaLoader Transformers does not recognize this architecture.", []),
        ("INFO rollout_routed_experts is required when replay is set; returning them", []),
        ("WARNING invalid backend: None, expected sglang or vllm; using sglang", []),
        # a value refused with no word of what it should be is not a setting's (AReaL's reward
        # function returning the wrong type); a package another one requires is no setting
        ("ValueError: Invalid reward type: <class 'NoneType'>", ["unknown_traceback"]),
        (
            "ERROR: Could not build wheels for flash-attn, which is required to install "
            "pyproject.toml-based projects",
            [],
        ),
    ],
)
def test_lines_the_freeze14_shapes_read_and_leave_alone(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


@pytest.mark.parametrize(
    "name",
    [
        # a KeyError raised by a name's look-up in a registry or mapping: a reward function not
        # registered (a miss of the corpus since it was gathered), a model type the installed
        # Transformers has no entry for (Qwen3#434, OpenRLHF#1043: looked for after, through the
        # mapping's own `__getitem__`; the second pasted from its first frame, no header)
        "config_error/dsp-5.log",
        "config_error/qwen3-434.log",
        "config_error/openrlhf-1043.log",
    ],
)
def test_a_key_error_of_a_name_looked_up_in_a_registry_is_a_configuration_error(
    name: str,
) -> None:
    assert [f.kind for f in _diagnose(name)] == ["config_error"]


_LOOKUP = (
    "Traceback (most recent call last):\n"
    '  File "/w/train.py", line 9, in build\n'
    "    reward_cls = REWARD_REGISTRY[cfg.reward]\n"
)


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        (_LOOKUP + "KeyError: 'mathx'", ["config_error"]),
        # the mapping's own frames carry the look-up on; any other frame ends it
        (
            _LOOKUP + '  File "/w/reg.py", line 3, in __getitem__\n    return self._d[k]\n'
            "KeyError: 'mathx'",
            ["config_error"],
        ),
        (
            _LOOKUP + '  File "/w/reward.py", line 5, in __init__\n    x = self._cache[k]\n'
            "KeyError: 'ids'",
            ["unknown_traceback"],
        ),
        # another exception after a look-up, a KeyError after no look-up, a registry named
        # but not indexed: no configuration of the run's
        (_LOOKUP + "TypeError: 'NoneType' object is not subscriptable", ["unknown_traceback"]),
        (
            'Traceback (most recent call last):\n  File "/w/t.py", line 2, in f\n'
            "    return self.handlers[event]\nKeyError: 'on_step'",
            ["unknown_traceback"],
        ),
        (
            'Traceback (most recent call last):\n  File "/w/t.py", line 2, in f\n'
            "    registry.register(name)\nKeyError: 'x'",
            ["unknown_traceback"],
        ),
    ],
)
def test_a_name_look_up_is_told_by_its_frames(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


def _record(source: str, error: str = "KeyError: 'prompt'") -> str:
    return (
        'Traceback (most recent call last):\n  File "/w/trl/dpo_trainer.py", line 85, in f\n'
        f"    {source}\n{error}\n"
    )


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # a KeyError of a data record's field read by its name (diag97: TRL's DPO tokenizer
        # through datasets' own `__getitem__`, ms-swift#1922; open-instruct#592's
        # `train_dataset[0][INPUT_IDS_PROMPT_KEY]`, a corpus miss since freeze 14, when
        # 768735d left dataset-row KeyErrors unread): the dataset lacks the column the
        # trainer or its config names, a configuration of the run's
        (_record('prompt = features["prompt"]'), ["config_error"]),
        (
            _record('prompt = features["prompt"]').replace(
                "KeyError",
                '  File "/w/datasets/formatting.py", line 277, in __getitem__\n'
                "    value = self.data[key]\nKeyError",
            ),
            ["config_error"],
        ),
        (_record("self.formatting_func = lambda x: x[dataset_text_field]"), ["config_error"]),
        (_record("return row['input_ids_j']"), ["config_error"]),
        (
            _record("visualize_token(train_dataset[0][INPUT_IDS_PROMPT_KEY], tokenizer)"),
            ["config_error"],
        ),
        # a record taken by position, then read by a key held in a variable (mlx-examples#381,
        # diag97's B2: a JSONL without the "text" key)
        (_record("return self._data[idx][self._key]", "KeyError: 'text'"), ["config_error"]),
        (_record("row = rows[i]['label']", "KeyError: 'label'"), ["config_error"]),
        # a record's position, another exception, another mapping: no column of the data's
        (_record("x = batch[0]"), ["unknown_traceback"]),
        (_record('prompt = features["prompt"]', "TypeError: bad operand"), ["unknown_traceback"]),
        (_record("v = self.kv_cache[layer]"), ["unknown_traceback"]),
        (_record("v = self.kv_cache[layer][head]"), ["unknown_traceback"]),
    ],
)
def test_a_data_record_field_look_up_is_told_by_its_frames(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text)] == kinds


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # pytest's failure report quotes the failing function's source above its `E` lines:
        # its comments are code (swarms#228, diag97: `#    - private and gated repos if user
        # is not authenticated` was read as auth before the RepositoryNotFoundError below it)
        (
            "                # 401 is misleading as it is returned for:\n"
            "                #    - private and gated repos if user is not authenticated\n"
            ">               raise RepositoryNotFoundError(message, response) from e\n"
            "E               huggingface_hub.utils._errors.RepositoryNotFoundError: 401 Client "
            "Error.",
            ["missing_model"],
        ),
        # a notebook's numbered context line, the same
        ("    953     # no CUDA out of memory here, the shard is narrowed\n", []),
        # gdb's and glibc's frames, a banner of hashes, an unindented line: not comments
        ("#0  0x00007f3a in raise () from /lib/libc.so.6 Segmentation fault\n", ["segfault"]),
        ("  #### CUDA error: an illegal memory access was encountered\n", ["cuda_error"]),
    ],
)
def test_a_quoted_source_comment_says_nothing(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


_ENGINES = (
    'File "slime/ray/rollout.py", line 104, in start_engines\n'
    "    base_gpu_id = int(reordered_gpu_ids[gpu_index])\n"
)


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # an IndexError of a position looked up in a list of devices (slime#1896, freeze 17:
        # the rollout's GPU settings reach past its placement group): a setting to change,
        # printed with its header and indented as well as pasted without either
        (_ENGINES + "IndexError: list index out of range", ["config_error"]),
        (
            'Traceback (most recent call last):\n  File "/w/rank.py", line 7, in setup\n'
            "    torch.cuda.set_device(visible_devices[local_rank])\n"
            "IndexError: list index out of range",
            ["config_error"],
        ),
        # the look-up ends with the frame: a later frame's IndexError is its own
        (
            _ENGINES + 'File "slime/utils/data.py", line 3, in pick\n    return rows[i]\n'
            "IndexError: list index out of range",
            ["unknown_traceback"],
        ),
        # an IndexError of another list, another exception of a device list: no setting's
        (
            'Traceback (most recent call last):\n  File "/w/batch.py", line 2, in f\n'
            "    n = self.elem_counts_per_gb[batch_idx]\nIndexError: list index out of range",
            ["unknown_traceback"],
        ),
        (_ENGINES + "TypeError: int() argument must be a string", ["unknown_traceback"]),
    ],
)
def test_a_device_position_look_up_is_told_by_its_frames(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


_SHORT = (
    "RayMasterWorker CRITICAL: Ray does not have enough resources to launch workers. "
    "Required: {cpu} CPU, {gpu} GPU, {mem} GB memory. "
    "Available: 80.0 CPU, 8.0 GPU, 255.89 GB memory. "
    "Please launch more Ray nodes otherwise the experiment will get stuck."
)


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # AReaL#120 (freeze 17): host memory short, the GPUs not: the workers' requests
        (_SHORT.format(cpu=16, gpu=4, mem="351.56"), ["config_error"]),
        (_SHORT.format(cpu=96, gpu=4, mem="100.00"), ["config_error"]),
        # the GPUs short (whatever else is): more GPUs asked for than there are
        (_SHORT.format(cpu=16, gpu=16, mem="100.00"), ["insufficient_gpus"]),
        (_SHORT.format(cpu=96, gpu=16, mem="351.56"), ["insufficient_gpus"]),
        # nothing short, amounts in different units, no amounts: nothing said
        (_SHORT.format(cpu=16, gpu=4, mem="100.00"), []),
        ("Required: 16 CPU, 300 MB memory. Available: 8 CPU, 200 GB memory.", ["config_error"]),
        ("Required: 300 MB memory. Available: 200 GB memory.", []),
        ("Required: a GPU node. Available: none yet, retrying", []),
    ],
)
def test_a_launchers_resource_check_names_the_resource_that_falls_short(
    text: str, kinds: list[str]
) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("config_error/areal-120.log", "config_error"),
        ("config_error/slime-1896.log", "config_error"),
    ],
)
def test_freeze17s_blind_misses_are_read_by_their_class(name: str, kind: str) -> None:
    assert [f.kind for f in _diagnose(name)] == [kind]


def test_a_notice_of_an_ignored_import_error_is_not_a_finding() -> None:
    # sgl-project/sglang#5389: SGLang's startup notices, then the scheduler's traceback, cut
    found = _diagnose("build_error/sglang-5389.log")
    assert [f.kind for f in found] == ["unknown_traceback"]
    assert "Scheduler hit an exception" in found[0].evidence


def test_a_kernel_compiler_abort_is_named_by_the_compiler_before_the_abort() -> None:
    # verl#985: Triton's LLVM error first, then SIGABRT and faulthandler's `Fatal Python error`
    found = _diagnose("cuda_error/verl-985.log")
    assert [f.kind for f in found] == ["cuda_error", "segfault"]
    assert "LLVM ERROR" in found[0].evidence


def test_an_npu_traceback_is_named_by_the_compute_unit_that_faulted() -> None:
    # Ascend/pytorch#66: the NPU function error's traceback first, the vector core's fault after
    found = _diagnose("cuda_error/ascendpytorch-66.log")
    assert found[0].kind == "cuda_error"
    assert "vector core execution is abnormal" in found[0].evidence


def test_a_failed_import_warned_about_is_ranked_after_the_failure() -> None:
    text = "WARNING: Failed to import apex\ntorch.OutOfMemoryError: CUDA out of memory.\n"
    assert [f.kind for f in diagnose_text(text)] == ["cuda_oom", "import_error"]


def _hostile_lines(source: str) -> list[str]:
    """64 KiB lines that hold a pattern's own words thousands of times: where a backtracking
    matcher tries a `.*` from each of them to the line's end."""
    words = sorted(set(re.findall(r"[a-z]{2,}", source.lower())))
    units = ["a", " ", "a_", "a.", *(w + sep for w in words for sep in (" ", "", "_"))]
    return [(unit * (65536 // len(unit) + 1))[:65536] for unit in units]


def test_every_catalogue_pattern_stays_linear_on_a_hostile_line() -> None:
    """Quadratic patterns took 10 to 25 s each on such a line (`gcs .*(cannot|...)`, tried
    from each `gcs `); a linear one takes milliseconds (0.5 s of this process's CPU time, not
    of the clock: a loaded VM does not make it fail)."""
    slow = []
    for kind in CATALOGUE:
        for pattern in kind.patterns:
            for line in _hostile_lines(pattern.pattern):
                start = time.process_time()
                pattern.search(line)
                took = time.process_time() - start
                if took > 0.5:
                    slow.append(f"{kind.name} {pattern.pattern!r}: {took:.1f} s on {line[:30]!r}")
                    break
    assert not slow, slow


def test_a_head_with_nothing_unless_after_it_reads_as_its_lookahead_did() -> None:
    """`Unless` (RE2 has no lookahead) gives what `head(?!.*unless).*tail` gave in `re`."""
    words = [
        "nccl ",
        "NCCL operation ",
        "hccl ",
        "failed or timed out ",
        "call to ncclX failed ",
        "call to nccl failed ",
        "timed out ",
        "write ",
        "fail ",
        "permission ",
        "socket ",
        "connect ",
        "likely a timeout ",
        "will retry ",
        "retrying ",
        "ray client ",
        "raylet ",
        "failed ",
        "failed to install pip requirements ",
        "failed to install hooks ",
        "cuda failure 'operation ",
        "cuda failure 801 'invalid ",
        "failed: cuda error /c/a.cu:307 'peer ",
        "out of memory' ",
        "an illegal ",
        "misaligned ",
        "can't find a valid checkpoint ",
        "could not find a ckpt ",
        "scratch ",
        "starting a new ",
        "x ",
    ]
    lines = [
        " ".join(words[(i * 7 + j * 3) % len(words)] for j in range(i % 6 + 1)) for i in range(600)
    ]
    unless = [p for k in CATALOGUE for p in k.patterns if isinstance(p, Unless)]
    assert len(unless) == 8
    for pattern in unless:
        before = re.compile(pattern.pattern, re.IGNORECASE)
        for line in lines:
            assert pattern.search(line) == bool(before.search(line)), (pattern.pattern, line)


def test_rays_repeated_tag_after_a_long_run_of_blanks_is_removed_in_linear_time() -> None:
    """`\\s*\\[repeated Nx across cluster\\]` was tried from each blank of the run: 4 s on one
    64 KiB line (each line ending so is undressed; each chunk with it for user kinds)."""
    line = " " * 65000 + "x  [repeated 2x across cluster]"
    start = time.process_time()
    assert strip_dress(line) == " " * 65000 + "x"
    assert strip_dress(" " * 65000 + "[repeated 2x across cluster]") == ""
    raw = line.encode() + b"\n"
    assert _clean_block(raw) == " " * 65000 + "x\n"
    assert time.process_time() - start < 0.5


@pytest.mark.parametrize(
    "text",
    [
        # logging's stack_info=True: a stack printed under its own header, then the log goes on
        'WARNING:root:slow step\nStack (most recent call last):\n  File "/app/train.py", line 10,'
        ' in <module>\n    main()\n  File "/app/train.py", line 7, in main\n    logging.warning('
        '"slow step", stack_info=True)\nINFO:root:step 1 loss=0.3\nINFO:root:step 2 loss=0.2',
        # traceback.print_stack(): frames alone, then lines shaped like an exception's last
        # (`word:`, a lone word)
        '  File "/app/train.py", line 10, in <module>\n    main()\n  File "/app/train.py", line'
        " 7, in main\n    traceback.print_stack()\nepoch: 1 loss 0.3\nDone",
        # asyncio's debug mode on a coroutine never awaited, then the run goes on
        'Coroutine created at (most recent call last)\n  File "/app/rollout.py", line 88, in '
        "generate\n    self.fetch(x)\nwandb: step 3",
    ],
)
def test_a_stack_printed_without_an_exception_is_not_a_traceback(text: str) -> None:
    # frames without a traceback's header begin a paste's traceback (freeze 9) only when an
    # exception line ends them, or the output ends inside them; a stack a healthy program
    # prints and goes on from is no failure, read whole or as it grows
    assert diagnose_text(text + "\n") == []
    assert diagnose_chunks([line.encode() + b"\n" for line in text.split("\n")]) == []


def test_vllms_advice_to_lower_its_budget_ranks_before_the_out_of_memory_chained_above_it() -> None:
    # vllm-project/vllm#15105, #26278: the worker prints the out of memory it caught, then
    # `The above exception was the direct cause ...`, then its RuntimeError with the advice
    # (freeze 10's excerpt, vllm-17939, begins below the first part); another rank's out of
    # memory printed after the advice is an echo too
    worker = "(VllmWorker rank=0 pid=2445155) ERROR 05-10 16:00:15 [multiproc_executor.py:470] "
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/vllm/v1/worker/gpu_model_runner.py", line 1600, in _dummy_sampler_run',
        "    sampler_output = self.sampler(logits=logits, sampling_metadata=dummy_metadata)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.74 GiB. GPU 0 has a "
        "total capacity of 23.57 GiB of which 605.88 MiB is free.",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/venv/vllm/v1/worker/gpu_model_runner.py", line 1604, in _dummy_sampler_run',
        "    raise RuntimeError(",
        "RuntimeError: CUDA out of memory occurred when warming up sampler with 256 dummy "
        "requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when "
        "initializing the engine.",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.74 GiB.",
    ]
    text = "".join(worker + line + "\n" for line in lines)
    found = diagnose_text(text)
    assert [(f.kind, f.line, f.count) for f in found] == [
        ("vllm_memory", 11, 1),
        ("cuda_oom", 4, 2),
    ]
    # read as it grows, the out of memory is named first until the advice comes
    stream = StreamDiagnoser()
    stream.feed(text.split("The above")[0].encode())
    assert [f.kind for f in stream.peek()] == ["cuda_oom"]
    stream.feed(("The above" + text.split("The above")[1]).encode())
    assert [f.kind for f in stream.close()] == ["vllm_memory", "cuda_oom"]


@pytest.mark.parametrize(
    ("line", "kinds"),
    [
        # vLLM's advice after its own allocation failed, and another program's after its OOM
        (
            "RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy "
            "requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when "
            "initializing the engine.",
            ["vllm_memory"],
        ),
        (
            "ERROR GPU OOM at minimum chunk size 64. Cannot recover further. Consider reducing "
            "gpu_memory_utilization in generation.yaml.",
            ["vllm_memory"],
        ),
        # no failure on the line: a program lowering its own budget, a recommendation printed
        # by a healthy check, a config dump (freeze 10's rule read each as vllm_memory)
        (
            "INFO GPU cache low (12.0% < 20%), other models need VRAM, lowering "
            "gpu_memory_utilization to 0.60",
            [],
        ),
        ("Reducing gpu_memory_utilization to 0.80", []),
        ("GPU 0: Consider reducing gpu_memory_utilization below 0.95 to avoid OOM errors", []),
        ("'loss_agg_mode': 'token-mean', 'reduction': 'mean', 'gpu_memory_utilization': 0.6", []),
    ],
)
def test_advice_to_lower_the_vllm_budget_is_a_finding_only_after_a_memory_failure(
    line: str, kinds: list[str]
) -> None:
    assert [f.kind for f in diagnose_text(line + "\n")] == kinds


@pytest.mark.parametrize("frames", [1, 2, 3])
def test_a_paste_of_frames_that_lost_their_indentation_is_still_read_as_a_traceback(
    frames: int,
) -> None:
    # a traceback's lower part pasted flush left: each frame goes on with it, to its exception
    # line or to the end of the output; a line that is neither still ends it saying nothing
    text = "".join(f'File "/app/m{i}.py", line {i + 1}, in f\n    g()\n' for i in range(frames))
    assert [f.kind for f in diagnose_text(text)] == ["unknown_traceback"]
    assert [f.kind for f in diagnose_text(text + "ValueError: bad\n")] == ["unknown_traceback"]
    assert diagnose_text(text + "Done\n") == []


# -- each kind's patterns behind one search (patterns.gate) ----------------------------------
_PATTERN_WORDS = sorted(
    {w for k in CATALOGUE for p in k.patterns for w in re.findall(r"[a-z_]{2,}", p.pattern)}
)


def _tried_one_by_one(line: str) -> str | None:
    """The kind `classify` named before the gates: every pattern of every candidate tried."""
    for kind in candidates(line.lower()):
        if any(p.search(line) for p in kind.patterns):
            return kind.name
    return None


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(_PATTERN_WORDS),
            st.sampled_from(
                [
                    " ",
                    "  ",
                    ": ",
                    ".",
                    ",",
                    "'",
                    "(",
                    ")",
                    "=",
                    "/",
                    "0",
                    "8",
                    "16",
                    "é",
                    "\t",
                    "\x0b",
                    "\x1c",
                    "\x1f",
                ]
            ),
            st.text(max_size=3),
        ),
        max_size=24,
    )
)
def test_a_kinds_gate_never_changes_what_a_line_is(parts: list[str]) -> None:
    """A kind's patterns are tried one by one only where their shared RE2 search found one of
    them could match: the kind named is the one trying every pattern names (words of the
    catalogue's own patterns, joined at random, ASCII or not)."""
    line = "".join(parts)
    got = classify(line)
    assert (got.name if got else None) == _tried_one_by_one(line)


def test_a_gate_leaves_lines_with_res_own_spaces_to_the_patterns() -> None:
    """`re`'s `\\s` counts a vertical tab and the ASCII separators \\x1c-\\x1f as space, RE2's
    does not: a gate standing for an `re` pattern with `\\s` would miss such a line, so a line
    holding one is not given to the gates (`_gate_exact`), and is read pattern by pattern."""
    own, other = compiled(r"no space\sleft"), compiled(r"disk .* full")
    shared, always = gate((own, other))
    assert shared is not None and always == ()
    for sep in ("\x0b", "\x1c", "\x1f"):
        line = f"OSError: no space{sep}left on device"
        assert own.search(line) and shared.search(line) is None  # where the two differ
        assert not _gate_exact(line)
    assert _gate_exact("OSError: no space left\ton device")
    assert not _gate_exact("OSError: no space left on device é")


def test_the_gates_keep_every_catalogue_line_read_the_same() -> None:
    """On every corpus line holding a trigger word, gated and one-by-one reading agree."""
    for path in sorted(CORPUS.glob("*/*.log")):
        for line in path.read_text(errors="replace").splitlines():
            got = classify(line)
            assert (got.name if got else None) == _tried_one_by_one(line), (path.name, line)


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # torch.compile's autotuning (max-autotune) on a GPU with less shared memory than a
        # candidate kernel needs: Inductor logs Triton's refusal and drops that candidate, and
        # the run goes on healthy (Physical-Intelligence/openpi#654, pytorch#150980): no failure
        (
            "E0912 11:54:57.366000 1121181 torch/_inductor/select_algorithm.py:2100] [7/0] "
            "Runtime error during autotuning: \n"
            "E0912 11:54:57.366000 1121181 torch/_inductor/select_algorithm.py:2100] [7/0] No "
            "valid triton configs. OutOfResources: out of resource: shared memory, Required: "
            "131072, Hardware limit: 101376. Reducing block sizes or `num_stages` may help.. \n"
            "E0912 11:54:57.366000 1121181 torch/_inductor/select_algorithm.py:2100] [7/0] "
            "Ignoring this choice.\n"
            "AUTOTUNE bmm(8x50x256, 8x256x1018)",
            [],
        ),
        # ... while Triton's own exception, raised (sglang#8513, the autotuner's older module),
        # or carried by the compile it ended, is the failure
        (
            "triton.runtime.autotuner.OutOfResources: out of resource: shared memory, Required: "
            "131072, Hardware limit: 98304. Reducing block sizes or `num_stages` may help.",
            ["cuda_error"],
        ),
        (
            "(TaskRunner pid=1) triton.runtime.errors.OutOfResources: out of resource: shared "
            "memory, Required: 147456, Hardware limit: 101376.",
            ["cuda_error"],
        ),
    ],
)
def test_triton_refusing_a_kernel_is_a_failure_only_where_it_is_raised(
    text: str, kinds: list[str]
) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # the inference server the run launched could not reach the Hub (DNS, an unreachable
        # host) and ended; the client is then refused by it: the network is the cause (a relaunch
        # under a proxy may help, a plain one cannot), the refusal its echo
        (
            "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't "
            "find it in the cached files and it looks like Qwen/Qwen2.5-7B is not the path to a "
            "directory containing a file named config.json.\n"
            "requests.exceptions.ConnectionError: HTTPConnectionPool(host='localhost', port=8000)"
            ": Max retries exceeded with url: /health (Caused by NewConnectionError('<urllib3."
            "connection.HTTPConnection object at 0x7f>: Failed to establish a new connection: "
            "[Errno 111] Connection refused'))",
            ["network", "connection_refused"],
        ),
        (
            "OSError: [Errno -3] Temporary failure in name resolution\n"
            "Error: HTTPConnectionPool(host='127.0.0.1', port=30000): Max retries exceeded with "
            "url: /generate (Caused by NewConnectionError('<urllib3.connection.HTTPConnection "
            "object at 0x7f6>: Failed to establish a new connection: [Errno 111] Connection "
            "refused'))",
            ["network", "connection_refused"],
        ),
        # a connection to the server that dropped, then refused (sglang#25084), either order of
        # the two kinds' lines: the server went down, the refusal first
        (
            "Error: HTTPConnectionPool(host='10.0.0.8', port=30033): Max retries exceeded with "
            "url: /v1/chat/completions (Caused by NewConnectionError('<urllib3.connection."
            "HTTPConnection object at 0x7f6>: Failed to establish a new connection: [Errno 111] "
            "Connection refused'))\n"
            "requests.exceptions.ConnectionError: ('Connection aborted.', ConnectionResetError("
            "104, 'Connection reset by peer'))",
            ["connection_refused", "network"],
        ),
    ],
)
def test_a_refusal_explains_only_a_connection_that_dropped(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # c10d's client whose connect to the store timed out, said in the server's name and
        # retried (torch's socket.cpp, `C10D_WARNING("The server socket on {} has timed out,
        # will retry.")`, printed while a rendezvous waits on a host that is not up yet): a
        # warning a run that goes on prints, no rank stalled waiting for a peer
        (
            "[W1201 10:00:00.123456789 socket.cpp:936] [c10d] The server socket on "
            "[::ffff:10.5.0.2]:29500 has timed out, will retry.",
            [],
        ),
        ("[W socket.cpp:...] [c10d] The server socket has timed out, retrying (attempt 1/3)", []),
        # the peer that did not send in time is still a stalled rank (verl#668)
        (
            "[rank7]:[W410 21:36:52.177160212 socket.cpp:485] [c10d] waitForInput: socket "
            "timed out after 300000ms",
            ["nccl_timeout"],
        ),
    ],
)
def test_a_socket_timeout_retried_is_no_stalled_rank(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


@pytest.mark.parametrize(
    ("name", "kinds"),
    [
        # freeze 15's blind misses, each read by a rule for its class: Ray's OwnerDiedError (a
        # worker that created objects died: ray#31265, ray#40731, verl#572 through a
        # RayTaskError), Ray's OutOfDiskError (ray#49173), a path longer than the OS allows
        # (boost's `File name too long` before the abort it causes, ray#7724; Ray's AF_UNIX
        # check, verl#1120), a setting refused with the values it may take without its
        # exception's name (vllm#1769), pydantic's words for a config field's validator
        # (vllm#28857), a request longer than the model's context (vllm#20409), a runtime env's
        # install that failed under the Ray client (ray#22610), a GPU below the compute
        # capability a program runs on, printed after the dtype it refused (vllm#1284), and an
        # OSError's text logged at error level (slime#326)
        ("ray_worker_died/ray-31265.log", ["ray_worker_died"]),
        ("ray_worker_died/ray-40731.log", ["ray_worker_died"]),
        ("ray_worker_died/verl-572.log", ["ray_worker_died", "unknown_traceback"]),
        ("disk_full/ray-49173.log", ["disk_full"]),
        ("config_error/ray-7724.log", ["config_error", "segfault"]),
        ("config_error/verl-1120.log", ["config_error"]),
        ("config_error/vllm-1769.log", ["config_error"]),
        ("config_error/vllm-28857.log", ["config_error"]),
        ("config_error/vllm-20409.log", ["config_error"]),
        ("build_error/ray-22610.log", ["build_error", "unknown_traceback"]),
        ("cuda_error/vllm-1284.log", ["cuda_error", "config_error"]),
        ("unknown_traceback/slime-326.log", ["unknown_traceback"]),
    ],
)
def test_freeze15s_classes_are_read(name: str, kinds: list[str]) -> None:
    assert [f.kind for f in _diagnose(name)] == kinds


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("OSError: [Errno 36] File name too long: '/ckpt/run_lr0.001_bs64_...'", ["config_error"]),
        (
            "Unknown load format: foo. Must be one of ['auto', 'pt', 'safetensors']",
            ["config_error"],
        ),
        (
            "RuntimeError: Failed to create runtime_env for Ray client server: Failed to install "
            "pip requirements:",
            ["build_error"],
        ),
        # the words of a class outside it: a rule that names no setting, a context length said
        # otherwise, a Ray client that failed of itself (an install of something else after
        # it), an OSError's text logged below error level, a more specific kind's validator
        ("INFO the value must be one of the listed values", []),
        ("context length 4096 is the maximum this model takes", []),
        ("Ray client server failed to start; failed to install hooks later", ["ray_cluster"]),
        ("WARNING: cache write: error: [Errno 5] Input/output error; retrying", []),
        ("INFO: saved; the previous error: [Errno 5] Input/output error", []),
        (
            "  Value error, Invalid repository ID or local directory specified: 'x/y' "
            "[type=value_error, input_value=ArgsKwargs(()), input_type=ArgsKwargs]",
            ["missing_model"],
        ),
        # a GPU refused altogether explains the dtype it refused above it, in either order; any
        # other CUDA error does not
        (
            "RuntimeError: GPUs with compute capability below 7.0 are not supported.\n"
            "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least "
            "8.0.",
            ["cuda_error", "config_error"],
        ),
        (
            "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least "
            "8.0.\nRuntimeError: CUDA error: an illegal memory access was encountered",
            ["config_error", "cuda_error"],
        ),
    ],
)
def test_lines_the_freeze15_shapes_read_and_leave_alone(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


@pytest.mark.parametrize(
    ("name", "kinds"),
    [
        # freeze 16's blind misses, each read by a rule for its class: the CUDACHECK macro of
        # NCCL's examples as vLLM's and SGLang's custom allreduce print it (sglang#552), NCCL's
        # own CUDACHECK in its WARN line (vllm#20226), vLLM's V0 engine dead in its client's and
        # server's words (vllm#10024, vllm#9175), vLLM finding no device at all (vllm#13946)
        ("cuda_error/sglang-552.log", ["cuda_error"]),
        ("nccl_error/vllm-20226.log", ["nccl_error", "unknown_traceback"]),
        ("vllm_engine_dead/vllm-10024.log", ["vllm_engine_dead"]),
        ("vllm_engine_dead/vllm-9175.log", ["vllm_engine_dead", "unknown_traceback"]),
        ("insufficient_gpus/vllm-13946.log", ["insufficient_gpus"]),
    ],
)
def test_freeze16s_classes_are_read(name: str, kinds: list[str]) -> None:
    assert [f.kind for f in _diagnose(name)] == kinds


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # the examples' CUDACHECK, whatever CUDA's error string; its out of memory is cuda_oom's
        ("Failed: CUDA error /src/allreduce.cu:88 'invalid device function'", ["cuda_error"]),
        ("Failed: Cuda error /src/x.cu:12 'out of memory'", ["cuda_oom"]),
        # NCCL's CUDACHECK (`Cuda failure '<error>'`, newer NCCL with the code, its `Last error:`
        # echo alone): NCCL's failure; a kernel failure NCCL only reports is named as that
        (
            "gpu1:2:3 [0] transport/nvls.cc:621 NCCL WARN Cuda failure 801 'operation not supported'",
            ["nccl_error"],
        ),
        ("Cuda failure 1 'invalid argument'", ["nccl_error"]),
        (
            "host:1:2 [1] enqueue.cc:1556 NCCL WARN Cuda failure 700 'an illegal memory access "
            "was encountered'",
            ["cuda_error"],
        ),
        # NVLS failing to map its multicast memory says `out of memory`: NCCL's failure still
        # (NCCL_NVLS_ENABLE=0 is its fix), not the GPU's memory
        (
            "transport/nvls.cc:598 NCCL WARN Cuda failure 2 'out of memory'",
            ["nccl_error"],
        ),
        # vLLM's V0 engine dead, each of its words; not its lines while it runs
        (
            "ERROR 12-06 14:09:37 client.py:282] RuntimeError('Engine process (pid 16470) died.')",
            ["vllm_engine_dead"],
        ),
        (
            "CRITICAL 11-04 12:53:11 launcher.py:72] AsyncLLMEngine has failed, terminating "
            "server process",
            ["vllm_engine_dead"],
        ),
        ("DEBUG 10-10 01:25:14 client.py:170] Waiting for output from MQLLMEngine.", []),
        ("INFO the engine loop is running; engine process (pid 12) started", []),
        # vLLM finding no device, in its 0.3 and later words; a platform merely undetected is a
        # notice (the failure, if any, follows it)
        ("RuntimeError: No supported device detected.", ["insufficient_gpus"]),
        (
            "INFO 04-01 [__init__.py:243] No platform detected, vLLM is running on UnspecifiedPlatform",
            [],
        ),
    ],
)
def test_lines_the_freeze16_shapes_read_and_leave_alone(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


def _rich_traceback(frames: list[tuple[str, list[str]]], exception: str, prefix: str = "") -> str:
    """A traceback as Rich renders it (`rich.traceback.Traceback`, 72 columns, no colour): the
    box, each frame's `path:line in function` and its source with the `❱` at the line that
    raised, then the exception line under the box."""
    inner = 68
    lines = ["╭" + " Traceback (most recent call last) ".center(inner + 2, "─") + "╮"]
    for number, (where, source) in enumerate(frames):
        if number:
            lines.append("│ " + " " * inner + " │")
        lines += ["│ " + where.ljust(inner) + " │", "│ " + " " * inner + " │"]
        lines += ["│ " + code[:inner].ljust(inner) + " │" for code in source]
    lines += ["╰" + "─" * (inner + 2) + "╯", exception]
    return "".join(f"{prefix}{line}\n" for line in lines)


_RICH_FRAMES = [
    ("/opt/nemo-rl/examples/run_grpo.py:9 in <module>", ["    8 try:", " ❱  9 │   main()"]),
    (
        "/opt/nemo-rl/nemo_rl/models/policy/lm_policy.py:7 in get_logprobs",
        [
            '    6 │   # retry with smaller batch on "CUDA out of memory"',
            " ❱  7 │   return cfg['dtensor_cfg']",
            "    8 try:",
        ],
    ),
]
_RICH_OOM_FRAMES = [
    (
        "/opt/nemo-rl/nemo_rl/models/policy/worker.py:13 in forward",
        [
            '   12 │   # free the cache on "CUDA out of memory"',
            ' ❱ 13 │   raise RuntimeError("CUDA out of memory. Tried to allocate 2',
        ],
    )
]


@pytest.mark.parametrize("prefix", ["", "(DTensorPolicyWorker[rank=0] pid=41, ip=10.0.0.1) "])
def test_a_rich_boxed_tracebacks_lines_are_code_and_its_exception_the_finding(prefix: str) -> None:
    """NeMo-RL logs through `RichHandler(rich_tracebacks=True)`: the box's frame and source
    lines are code (a comment naming an out of memory is no out of memory); the exception
    line after the box is what ended the program, counted once."""
    text = _rich_traceback(_RICH_FRAMES, "KeyError: 'dtensor_cfg'", prefix)
    assert [f.kind for f in diagnose_text(text)] == ["unknown_traceback"]
    oom = _rich_traceback(
        _RICH_OOM_FRAMES, "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", prefix
    )
    (found,) = diagnose_text(oom)
    assert found.kind == "cuda_oom" and found.count == 1
    assert found.evidence.startswith("RuntimeError: CUDA out of memory")
    # a box cut before its exception line: an exception ended the program, which one unsaid
    cut = "".join(oom.splitlines(keepends=True)[:-2])
    assert [f.kind for f in diagnose_text(cut)] == ["unknown_traceback"]


def test_a_rich_boxed_source_line_pasted_without_its_box_is_code() -> None:
    text = '  │    6 │   # retry with smaller batch on "CUDA out of memory"    │\n'
    assert [f.kind for f in diagnose_text(text + "KeyError: 'dtensor_cfg'\n")] == [
        "unknown_traceback"
    ]
    assert diagnose_text(text) == []


@pytest.mark.parametrize(
    ("name", "kinds"),
    [
        # freeze 18's blind misses, each read by a rule for its class: an exception saying a
        # component does not support the setting asked of it (SGLang's PD disaggregation under
        # llm-d, prefill and decode with different TP sizes), SGLang's newer words for a static
        # memory fraction that leaves the KV cache nothing (InferenceX#2128)
        ("config_error/llmd-2433.log", ["config_error"]),
        ("config_error/slime-1732.log", ["config_error"]),
        ("vllm_memory/inferencex-2128.log", ["vllm_memory"]),
    ],
)
def test_freeze18s_classes_are_read(name: str, kinds: list[str]) -> None:
    assert [f.kind for f in _diagnose(name)] == kinds


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # a component refusing what it was asked, said by an exception: the setting to change
        (
            "RuntimeError: PD Disaggregation does NOT support PD different TP sizes yet",
            ["config_error"],
        ),
        ("ValueError: The attention backend doesn't support sliding window", ["config_error"]),
        # ... not a warning that falls back, prose, or an exception's name in a sentence
        (
            "WARNING 05-01 12:00:00 [cuda.py:80] FlashAttention does not support head size 72, "
            "falling back to xformers",
            [],
        ),
        ("note: this build does not support ROCm; CUDA will be used", []),
        # no room left for the KV cache, in SGLang's words: the static fraction to raise
        (
            "ValueError: Loaded weights leave no GPU memory for the KV cache under "
            "--mem-fraction-static=0.5.",
            ["vllm_memory"],
        ),
        ("[2026-01-01 TP0] KV Cache is allocated. #tokens: 136429, K size: 2.34 GB", []),
        ("INFO: reserving GPU memory for the KV cache: 12.5 GiB", []),
    ],
)
def test_lines_the_freeze18_shapes_read_and_leave_alone(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # verl skips the optimizer's step where the gradient norm is not finite (its
        # `_optimizer_step`: `WARN: grad_norm is not finite`, zero_grad, no step): a metrics
        # line with only the norm NaN beside finite losses is an update skipped, not divergence
        (
            "(TaskRunner pid=4121) step:40 - actor/entropy:0.53 - actor/pg_loss:0.012 - "
            "actor/pg_clipfrac:0.0 - actor/grad_norm:nan - critic/score/mean:0.41",
            [],
        ),
        ("step:7 - actor/pg_loss:-0.003 - actor/kl_loss:0.001 - actor/grad_norm:inf", []),
        ("(WorkerDict pid=9) WARN: rank 0 grad_norm is not finite: nan", []),
        # ... a loss that is NaN itself is still the divergence (verl#498's critic), as is any
        # other value that is not finite, or a norm with no loss beside it
        (
            "(TaskRunner pid=123) step:12 - actor/pg_loss:nan - actor/grad_norm:nan - "
            "critic/score/mean:0.1",
            ["nan_loss"],
        ),
        ("step:1 - critic/vf_loss:nan - critic/grad_norm:nan - actor/pg_loss:0.1", ["nan_loss"]),
        ("step:5 - actor/pg_loss:0.1 - actor/grad_norm:nan - actor/kl:nan", ["nan_loss"]),
        ("step:5 - actor/grad_norm:nan - critic/score/mean:0.1", ["nan_loss"]),
        # ... and Hugging Face's Trainer steps whatever the norm (ModernBERT#233: the loss 0.0
        # after it, the weights NaN): its line stays the divergence
        (
            "{'loss': 0.2051, 'grad_norm': nan, 'learning_rate': 9.77e-06, 'epoch': 0.53}",
            ["nan_loss"],
        ),
    ],
)
def test_a_verl_step_whose_gradient_norm_alone_is_not_finite_is_an_update_skipped(
    text: str, kinds: list[str]
) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


def test_skypilots_prefix_is_not_in_a_findings_evidence() -> None:
    """Walk 86, F31: its `(head, rank=0, pid=N)` kept the exception lines unread (the finding
    was unknown_traceback, its evidence the Traceback header, prefix and all)."""
    from ajetd.core.termtext import strip_ray

    assert strip_ray("(head, rank=0, pid=4734) TimeoutError: x") == "TimeoutError: x"
    assert strip_ray("(headless pid=3) x") == "x"  # Ray's own, as before
    assert strip_ray("(head, rank=0) x") == "(head, rank=0) x"  # not SkyPilot's whole shape


@pytest.mark.parametrize(
    ("name", "kinds"),
    [
        # freeze 19's blind misses, each read by a rule for its class: C++'s abort announced
        # before the `what()` that names its cause (3dgrut; Visual-RFT, Megatron, vLLM-Ascend,
        # DeepSpeed and PyTorch print the pair so); a CUDA error in THC's words (PyTorch before
        # 1.5: maskrcnn-benchmark, pytorch#2567, human-pose-estimation); ssh's exit 255 as pdsh
        # reports it (DeepSpeed's autotuner)
        ("cuda_error/3dgrut-191.log", ["cuda_error", "segfault"]),
        ("cuda_error/visualrft-22.log", ["cuda_error", "segfault"]),
        ("nccl_timeout/megatron-935.log", ["nccl_timeout"]),
        ("cuda_error/maskrcnnbenchmark-238.log", ["cuda_error"]),
        ("cuda_error/humanposeestimation-21.log", ["cuda_error"]),
        ("launch_error/deepspeed-5709.log", ["launch_error"]),
        # a resume's notice that a checkpoint does not exist yet is no failure: slime's data
        # buffer's, printed before the exception that ended the run
        ("unknown_traceback/slime-178.log", ["unknown_traceback"]),
    ],
)
def test_freeze19s_classes_are_read(name: str, kinds: list[str]) -> None:
    assert [f.kind for f in _diagnose(name)][: len(kinds)] == kinds


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # the abort is the echo of what `what()` names after it, whatever precedes it on its
        # line (a progress bar without a newline)
        (
            "Training 19% step: 5700 loss: 0.028terminate called after throwing an instance of "
            "'c10::Error'\n  what():  CUDA error: unknown error",
            ["cuda_error", "segfault"],
        ),
        (
            "terminate called after throwing an instance of 'std::runtime_error'\n"
            "  what():  NCCL error: unhandled system error, NCCL version 2.14.3",
            ["nccl_error", "segfault"],
        ),
        # ... and a `what()` no kind explains leaves the abort as what is known
        (
            "terminate called after throwing an instance of 'std::logic_error'\n"
            "  what():  basic_string::_M_construct null not valid",
            ["segfault"],
        ),
        # THC's words for a CUDA error; its out of memory and a missing device are not this kind
        (
            "RuntimeError: cuda runtime error (30) : unknown error at "
            "/opt/conda/aten/src/THC/THCGeneral.cpp:51",
            ["cuda_error"],
        ),
        (
            "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCCachingHostAllocator.cpp line=265 "
            "error=59 : device-side assert triggered",
            ["cuda_error"],
        ),
        (  # (no excerpt shows THC's out of memory and cuda_oom's patterns do not read it;
            # since freeze 21 the families do: a CUDA call's `out of memory`, `families`)
            "RuntimeError: cuda runtime error (2) : out of memory at "
            "/pytorch/aten/src/THC/THCCachingAllocator.cpp:510",
            ["cuda_oom"],
        ),
        (
            "THCudaCheck FAIL file=torch/csrc/cuda/Module.cpp line=34 error=10 : invalid "
            "device ordinal",
            ["insufficient_gpus"],
        ),
        # pdsh's report of ssh's own failure; not a rank's program exiting through it
        (
            "pdsh@node-0: localhost: ssh exited with exit code 255",
            ["launch_error"],
        ),
        ("pdsh@node-0: node-1: ssh exited with exit code 1", []),
        # a checkpoint that does not exist, said as a failure, is still the missing file ...
        (
            "ValueError: Checkpoint does not exist, outputs/ckpt/TransducerWithBert.best.pth",
            ["missing_file"],
        ),
        ("[ERROR] checkpoint path /ckpt/step_100 does not exist", ["missing_file"]),
        ("Checkpoint /ckpt/step_100 not found, aborting", ["missing_file"]),
        # ... a resume's notice that there is none yet is not: verl at every start from
        # scratch, slime's data buffer
        (
            "(TaskRunner pid=247607) Checkpoint tracker file does not exist: "
            "/workspace/checkpoints/verl_example/latest_checkpointed_iteration.txt\n"
            "(TaskRunner pid=247607) Training from scratch",
            [],
        ),
        (
            "(Buffer pid=414283) Checkpoint /root/Qwen2.5-0.5B_torch_dist/rollout/"
            "global_dataset_state_dict_-1.pt does not exist.",
            [],
        ),
    ],
)
def test_lines_the_freeze19_shapes_read_and_leave_alone(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


@pytest.mark.parametrize(
    ("name", "kinds"),
    [
        # freeze 20's blind misses, each read by a rule for its class: a notebook's traceback
        # through torch's extension build in IPython 8's frame format (gpt-neo-fine-tuning-
        # example; DeepSpeed#885 and #1127 in IPython 7's, read before); a DeepSpeed CPU
        # optimizer whose op was never built, seen only through its destructor (LMFlow); the
        # GPUs a run asks for said to exceed what there is (vLLM's Ray executor, cut after
        # `exceeds the total`); a container image that cannot be pulled (AReaL's guide)
        ("build_error/gptneofinetuningexample-12.log", ["build_error"]),
        ("build_error/deepspeed-885.log", ["build_error"]),
        ("build_error/deepspeed-1127.log", ["build_error"]),
        ("build_error/lmflow-471.log", ["build_error"]),
        ("insufficient_gpus/vllm-4655.log", ["insufficient_gpus"]),
        ("launch_error/areal-1339.log", ["launch_error"]),
        # read right blind: pdsh's ssh exit under GPT-NeoX, DeepSpeed's batch check (also
        # wrapped over three lines by rich), a notebook's build and a plain one
        ("launch_error/gptneox-734.log", ["launch_error"]),
        ("config_error/deepspeed-6914.log", ["config_error"]),
        ("config_error/starcoder-77.log", ["config_error"]),
        ("build_error/deepspeed-694.log", ["build_error"]),
    ],
)
def test_freeze20s_classes_are_read(name: str, kinds: list[str]) -> None:
    assert [f.kind for f in _diagnose(name)][: len(kinds)] == kinds


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # IPython 8's frames through the build, and IPython 7's, whichever build backend
        (
            "File /opt/conda/lib/python3.10/site-packages/torch/utils/cpp_extension.py:2105, "
            "in _run_ninja_build(build_directory, verbose, error_prefix)",
            ["build_error"],
        ),
        (
            "~/venv/lib/python3.8/site-packages/setuptools/build_meta.py in build_wheel("
            "wheel_directory, config_settings, metadata_directory)",
            ["build_error"],
        ),
        # ... not another frame of the same file that is no build (loading a built op), nor a
        # notebook's frame of the user's own code
        (
            "File ~/venv/lib/python3.10/site-packages/torch/utils/cpp_extension.py:1284, in load",
            [],
        ),
        ("File /home/me/train.py:42, in main(args)", []),
        # a DeepSpeed CPU optimizer without its native op (Adam, Adagrad, Lion) ...
        (
            "AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'",
            ["build_error"],
        ),
        (
            "AttributeError: 'DeepSpeedCPULion' object has no attribute 'ds_opt_lion'",
            ["build_error"],
        ),
        # ... not another object's missing attribute
        (
            "AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'param_groups'",
            ["unknown_traceback"],
        ),
        # the GPUs asked for said to exceed what there is, whole or cut
        (
            "ValueError: The number of required GPUs exceeds the total number of available "
            "GPUs in the placement group.",
            ["insufficient_gpus"],
        ),
        ("The number of requested devices exceeds the number on this node", ["insufficient_gpus"]),
        # ... not the GPUs a run has exceeding what it asked, nor memory exceeding a limit
        ("INFO: available GPUs exceed the required count; using 8 of 16", []),
        ("WARNING: requested memory exceeds 90% of the GPU", []),
        # a container image the launch names that cannot be pulled, in Docker's words
        (
            "docker: Error response from daemon: pull access denied for verl-img, repository "
            "does not exist or may require 'docker login'.",
            ["launch_error"],
        ),
        (
            "Error response from daemon: manifest for vllm/vllm-openai:v9.9.9 not found: "
            "manifest unknown: manifest unknown",
            ["launch_error"],
        ),
    ],
)
def test_lines_the_freeze20_shapes_read_and_leave_alone(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


@pytest.mark.parametrize(
    "text",
    [
        # the Docker daemon's other refusals are no image that cannot be pulled (other kinds
        # read some of them: a port already allocated)
        "docker: Error response from daemon: driver failed programming external connectivity "
        "on endpoint web: Bind for 0.0.0.0:8000 failed: port is already allocated.",
        'docker: Error response from daemon: Conflict. The container name "/trainer" is already '
        "in use by container 3f1e.",
        'docker: Error response from daemon: could not select device driver "" with '
        "capabilities: [[gpu]].",
    ],
)
def test_the_docker_daemons_other_refusals_are_no_image_missing(text: str) -> None:
    assert "launch_error" not in [f.kind for f in diagnose_text(text + "\n")]


@pytest.mark.parametrize(
    ("name", "kinds"),
    [
        # freeze 20b's blind miss: pydantic's error indented under its header (vLLM-Omni);
        # read right blind: a request longer than the model's context in vLLM's newer words
        # through the OpenAI client (grounded-rl), argparse refusing a pydantic-validated option
        # (Vector Inference), the wanted GPUs said to exceed, wrapped by rich (distilabel)
        ("config_error/vllmomni-2170.log", ["config_error"]),
        ("config_error/vllm-28857.log", ["config_error"]),
        ("config_error/groundedrl-16.log", ["config_error"]),
        ("config_error/vectorinference-157.log", ["config_error"]),
        ("insufficient_gpus/distilabel-1044.log", ["insufficient_gpus"]),
    ],
)
def test_freeze20bs_classes_are_read(name: str, kinds: list[str]) -> None:
    assert [f.kind for f in _diagnose(name)][: len(kinds)] == kinds


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # pydantic's error for one field, as it prints it (indented) and as pastes flatten it
        (
            "  Value error, torch.bfloat16 is not supported for quantization method awq. "
            "Supported dtypes: [torch.float16] [type=value_error, input_value=ArgsKwargs((), "
            "{}), input_type=ArgsKwargs]",
            ["config_error"],
        ),
        (
            "(APIServer pid=7)   Value error, No model architectures are specified "
            "[type=value_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]",
            ["config_error"],
        ),
        # ... not prose that says value error, nor a line of code far indented
        ("note: a value error, if any, is logged [type=value_error] later", []),
        ("                  Value error, x [type=value_error]", []),
    ],
)
def test_lines_the_freeze20b_shapes_read_and_leave_alone(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


def _excerpt_kinds(name: str) -> list[str]:
    data = (CORPUS / name).read_bytes()
    return [f.kind for f in diagnose_chunks([data[data.find(b"\n") + 1 :]])]


def test_a_paste_that_lost_its_newlines_is_read_line_by_line() -> None:
    """Freeze 21's blind miss verl#2812: a Ray worker's traceback pasted outside a code block,
    its lines run together, each after `(TaskRunner pid=132279)`, cut inside the exception's
    message (`RuntimeError: this eve`): read as its lines, an exception no kind explains. The
    corpus's other such paste (OpenRLHF#970, host_oom by its thread, one of the corpus's misses)
    is read first as before, the watchdog's timeout, and now also says the actor that died
    (its echo)."""
    assert _excerpt_kinds("unknown_traceback/verl-2812.log") == ["unknown_traceback"]
    assert _excerpt_kinds("host_oom/openrlhf-970.log") == ["nccl_timeout", "ray_worker_died"]
    glued = (
        'in _build_rollout (TaskRunner pid=7) rollout = SGLangRollout( (TaskRunner pid=7) File "'
        'x.py", line 3, in f (TaskRunner pid=7) RuntimeError: this event loop is already running'
    )
    assert glued_lines(glued) == [
        "in _build_rollout",
        "rollout = SGLangRollout(",
        'File "x.py", line 3, in f',
        "RuntimeError: this event loop is already running",
    ]


@pytest.mark.parametrize(
    "line",
    [
        "step:3 - actor/pg_loss:0.0123 - actor/grad_norm:0.88",  # a worker's line, undressed
        # one mark inside a message is a worker named, not a paste
        "A worker died or was killed while executing a task (WorkerDict pid=12) just now",
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::TaskRunner.run() (pid=41233, "
        "ip=10.0.0.1, actor_id=af67a3a6fa70baaa8f2d6ff301000000)",
    ],
)
def test_a_line_is_one_line_unless_it_holds_several_workers_marks(line: str) -> None:
    assert glued_lines(line) is None


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # freeze 21's blind miss DistServe#39: RTX 4090s over PCIe give no peer access
        (
            "(ParaWorker pid=1955026) Error: Peer-to-peer access is unsupported on this "
            "platform.\n(ParaWorker pid=1955026) Exiting...",
            ["cuda_error"],
        ),
        (
            "RuntimeError: CUDA error: peer access is not supported between these two devices",
            ["cuda_error"],
        ),
        # NCCL choosing another path is no failure
        ("gpu01:1:2 [0] NCCL INFO P2P is disabled between connected GPUs 1 and 0.", []),
    ],
)
def test_gpus_without_peer_access_are_a_cuda_error(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in diagnose_text(text + "\n")] == kinds


# freeze 22's blind misses, by class: a traceback whose exception line is not in the paste,
# where another of its parts names the exception. A notebook's traceback (IPython, Jupyter)
# names the class in its header; a frame's `raise X(` names it in the source.
_NOTEBOOK = (
    "---------------------------------------------------------------------------\n"
    "{cls}                                  Traceback (most recent call last)\n"
    "<ipython-input-12-3435b262f1ae> in <module>\n"
    "----> 1 trainer.train()\n"
    "\n"
    "~/venv/lib/python3.10/site-packages/trainer.py in train(self, num_steps)\n"
    "    413             self._resize_worker_group()\n"
    "--> 415             return self.worker_group.train(num_steps)\n"
)


@pytest.mark.parametrize(
    ("cls", "kinds"),
    [
        # ray#14352: the header's class is all the paste says; Ray's wrapper names its inner one
        ("RayTaskError(AttributeError)", ["unknown_traceback"]),
        ("ValueError", ["unknown_traceback"]),
        # a class that says the kind, as its exception line would (the families)
        ("ModuleNotFoundError", ["import_error"]),
        ("ray.exceptions.OutOfDiskError", ["disk_full"]),
        ("FileNotFoundError", ["missing_file"]),
    ],
)
def test_a_notebooks_traceback_cut_before_its_exception_is_read_by_its_header(
    cls: str, kinds: list[str]
) -> None:
    text = _NOTEBOOK.format(cls=cls)
    findings = diagnose_text(text)
    assert [(f.kind, f.line) for f in findings] == [(k, 2) for k in kinds]
    assert findings[0].evidence.startswith(cls)
    stream = StreamDiagnoser()
    stream.feed(text.encode())
    assert stream.findings() == []  # live: the traceback may still be printing
    assert [f.kind for f in stream.peek()] == kinds  # a pause reads it as the output so far
    assert [f.kind for f in stream.close()] == kinds


def test_a_notebooks_traceback_with_its_exception_line_is_read_by_that_line_once() -> None:
    # the exception line, with its message, is the evidence (AReaL#269, NeMo#378: before, the
    # header's words were; now the line that says which name could not be imported)
    text = _NOTEBOOK.format(cls="ImportError") + "ImportError: cannot import name 'BatchTag'\n"
    assert [(f.kind, f.line, f.count) for f in diagnose_text(text)] == [("import_error", 9, 1)]
    findings = _diagnose("import_error/nemo-378.log")
    assert [f.kind for f in findings] == ["import_error"]
    assert "BatchTag" in findings[0].evidence
    # a kind read below the header already said more than its class can: nothing beside it
    said = (
        _NOTEBOOK.format(cls="RuntimeError")
        + "    torch.cuda.OutOfMemoryError: CUDA out of memory\n"
    )
    assert [f.kind for f in diagnose_text(said)] == ["cuda_oom"]


@pytest.mark.parametrize(
    "line",
    [
        # prose that ends in the words, a class-less header, a header with text after it
        "See the notebook's output. Traceback (most recent call last)",
        "                                  Traceback (most recent call last)",
        "ValueError                                  Traceback (most recent call last) (cont.)",
        "the_value                                   Traceback (most recent call last)",
    ],
)
def test_lines_that_are_not_a_notebooks_traceback_header(line: str) -> None:
    assert diagnose_text(line + "\n") == []


def test_frames_that_end_in_a_raise_then_its_message_are_a_traceback_without_its_line() -> None:
    # SwanLab#1014: frames pasted without their header, the last one's source `raise
    # ValueError(`, then the message alone (its `ValueError: ` lost): no stack a program prints
    # and goes on from ends in a raise statement, so the statement says what ended the program
    findings = _diagnose("unknown_traceback/swanlab-1014.log")
    assert [(f.kind, f.line) for f in findings] == [("unknown_traceback", 8)]
    assert findings[0].evidence.startswith("raise ValueError( Please make sure")
    frames = (
        '  File "/app/train.py", line 10, in <module>\n    main()\n'
        '  File "/app/engine.py", line 7, in load\n    raise RuntimeError(\n'
    )
    # the statement's words name a kind where they do
    oom = frames + "CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert [f.kind for f in diagnose_text(oom)] == ["cuda_oom"]
    chunks = [line.encode() + b"\n" for line in oom.splitlines()]
    assert [f.kind for f in diagnose_chunks(chunks)] == ["cuda_oom"]
    # ... and a stack printed to go on from (its last source no raise) stays no failure
    printed = frames.replace("raise RuntimeError(", "traceback.print_stack()")
    assert diagnose_text(printed + "epoch: 1 loss 0.3\n") == []


@given(st.text(alphabet=" \tTraceback(mostrecntalErrorV:)\n", max_size=400))
@settings(max_examples=200, deadline=None)
def test_notebook_headers_read_the_same_whole_or_in_pieces(tail: str) -> None:
    text = _NOTEBOOK.format(cls="KeyError") + tail
    whole = [(f.kind, f.line) for f in diagnose_text(text)]
    pieces = [line.encode() + b"\n" for line in text.split("\n")]
    assert [(f.kind, f.line) for f in diagnose_chunks(pieces)] == whole


# freeze 23's blind misses, by class (bench/heldout/freeze23-queries.md, docs/benchmarks.md).


def _kinds(text: str) -> list[str]:
    return [f.kind for f in diagnose_text(text)]


def _whole_and_in_pieces(text: str) -> list[tuple[str, int]]:
    whole = [(f.kind, f.line) for f in diagnose_text(text)]
    pieces = [line.encode() + b"\n" for line in text.split("\n")]
    assert [(f.kind, f.line) for f in diagnose_chunks(pieces)] == whole
    return whole


_ADVICE = (
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
    "Since the operator is called asynchronously, the stacktrace may be inaccurate. If you want "
    "to get the accurate stacktrace, please set the environment variable ASCEND_LAUNCH_BLOCKING=1.",
)
_OOM = (
    "RuntimeError: CUDA error: out of memory",
    "[PID: 7] Memory_Allocation_Failure(EL0004): Failed to allocate memory requested by GE module.",
    "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB",
)


def test_the_runtimes_launch_blocking_advice_is_the_echo_of_its_out_of_memory() -> None:
    # Helios#62: Ascend prints its advice above the error's own block, the memory the GE module
    # could not allocate below it; the advice names no failure of its own
    assert _diagnose("cuda_oom/helios-62.log")[0].kind == "cuda_oom"
    # a kernel's own failure beside the advice is not the out of memory's echo
    kernel = "RuntimeError: CUDA error: an illegal memory access was encountered\n" + _ADVICE[0]
    assert _kinds(kernel + "\n" + _OOM[0] + "\n")[0] == "cuda_error"
    assert _kinds(_ADVICE[0] + "\n")[0] == "cuda_error"  # the advice alone still says CUDA's


@given(
    st.sampled_from(_ADVICE),
    st.sampled_from(_OOM),
    st.booleans(),
    st.lists(st.sampled_from(["", "step 3 loss 0.21", "[INFO] saving"]), max_size=4),
)
@settings(max_examples=60, deadline=None)
def test_advice_and_an_out_of_memory_in_either_order_name_the_memory(
    advice: str, oom: str, advice_first: bool, noise: list[str]
) -> None:
    parts = [advice, *noise, oom] if advice_first else [oom, *noise, advice]
    found = _whole_and_in_pieces("\n".join(parts) + "\n")
    assert found[0][0] == "cuda_oom"


@pytest.mark.parametrize(
    ("message", "kinds"),
    [
        # lmdeploy#2236: TurboMind's out of memory in C++'s words, no exception class printed
        (
            "[TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/allocator.h:233",
            ["cuda_oom"],
        ),
        ("std::exception: No space left on device", ["disk_full"]),
        ("Connection refused (os error 111)", ["connection_refused"]),
        # a message no family names: the abort is what is known
        ("basic_string::_M_construct null not valid", ["segfault"]),
    ],
)
def test_an_uncaught_cpp_exceptions_message_is_read_as_an_exceptions(
    message: str, kinds: list[str]
) -> None:
    text = f"terminate called after throwing an instance of 'std::runtime_error'\n  what():  {message}\n"
    found = _whole_and_in_pieces(text)
    assert [k for k, _ in found][: len(kinds)] == kinds
    assert [f.kind for f in _diagnose("cuda_oom/lmdeploy-2236.log")] == ["cuda_oom", "segfault"]
    # the words `what():` inside a sentence are no such message
    assert _kinds("I asked what():  out of memory on the GPU means\n") != ["cuda_oom"]


@pytest.mark.parametrize(
    ("line", "model"),
    [
        # lmql#343, autotrain-advanced#520 (cut after the host, as pasted)
        (
            "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://huggingface.co",
            True,
        ),
        (
            "HTTPError: 404 Client Error: Not Found for url: https://huggingface.co/x/y/resolve/main/config.json",
            True,
        ),
        (
            "HTTPError: 404 Client Error: Not Found for url: https://hf-mirror.com/api/models/x/y",
            True,
        ),
        # a dataset's file, another host: not a model's absence
        (
            "HTTPError: 404 Client Error: Not Found for url: https://huggingface.co/datasets/a/b/resolve/main/t.json",
            False,
        ),
        ("HTTPError: 404 Client Error: Not Found for url: https://example.com/model.bin", False),
    ],
)
def test_the_hubs_404_for_a_models_url_is_a_missing_model(line: str, model: bool) -> None:
    assert (_kinds(line + "\n")[:1] == ["missing_model"]) is model
    for name in ("missing_model/lmql-343.log", "missing_model/autotrain-520.log"):
        assert [f.kind for f in _diagnose(name)] == ["missing_model"]


@pytest.mark.parametrize(
    ("line", "refused"),
    [
        ("Error: No such command 'run'.", True),  # torchtune#2001
        ("Error: No such option: --confg", True),
        ("Error: Invalid value for '--nproc-per-node': 'x' is not a valid integer.", True),
        ("Error: Missing option '--config'.", True),
        ("Error: Missing argument 'RECIPE'.", True),
        ("Error: Got unexpected extra argument (foo)", True),
        ("Error: No such container: trainer", False),
        ("The error: no such command was ever typed, he said", False),
    ],
)
def test_a_click_command_line_refused_is_a_config_error(line: str, refused: bool) -> None:
    usage = "Usage: tune [OPTIONS] COMMAND [ARGS]...\nTry 'tune --help' for help.\n\n"
    assert (_kinds(usage + line + "\n")[:1] == ["config_error"]) is refused
    assert [f.kind for f in _diagnose("config_error/torchtune-2001.log")] == ["config_error"]


@pytest.mark.parametrize(
    ("line", "kinds"),
    [
        (
            "2020-01-23 19:31:13,975 ERROR scripts.py:410 -- Ray processes died unex",
            ["ray_cluster"],
        ),
        ("Some Ray subprocesses exited unexpectedly:", ["ray_cluster"]),
        ("All Ray processes exited.", []),
    ],
)
def test_ray_start_reporting_its_own_processes_died_is_the_clusters(
    line: str, kinds: list[str]
) -> None:
    assert _kinds(line + "\n") == kinds
    assert [f.kind for f in _diagnose("ray_cluster/ray-6902.log")] == ["ray_cluster"]


_MARKED_FRAMES = (
    'File "/app/trainer.py", line 318, in fit\n'
    "    metrics = self._train_step(batch_dict)\n"
    "              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    '  File "/app/daemon.py", line 379, in get_train_data_batch\n'
    "    original_sample = self._task_id_to_original_sample[rollout_id]\n"
    "                      ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~^^^^^^^^^^^^\n"
)


def test_frames_python_marked_with_carets_are_an_exceptions_traceback() -> None:
    # agent-lightning#218: the frames without their header or exception line, then the server's
    # own lines. Python marks the position that raised only in an exception's traceback
    findings = _diagnose("unknown_traceback/agentlightning-218.log")
    assert [(f.kind, f.line) for f in findings] == [("unknown_traceback", 1)]
    tail = "(Process-1 server) Task rollout-1 timed out after 600.0s, requeued (attempt 1)\n"
    assert _whole_and_in_pieces(_MARKED_FRAMES + tail) == [("unknown_traceback", 1)]
    # the same frames as a stack printed to go on from (no carets): no failure
    unmarked = "".join(line + "\n" for line in _MARKED_FRAMES.splitlines() if "^" not in line)
    assert diagnose_text(unmarked + tail) == []
    # with its exception line, that line is read, once
    assert _kinds(_MARKED_FRAMES + "KeyError: 'rollout-1'\n") == ["unknown_traceback"]
    assert [f.line for f in diagnose_text(_MARKED_FRAMES + "KeyError: 'rollout-1'\n")] == [7]


@given(st.text(alphabet=" ~^\tKeyError:x'\n", max_size=200))
@settings(max_examples=150, deadline=None)
def test_marked_frames_with_any_tail_read_the_same_whole_or_in_pieces(tail: str) -> None:
    _whole_and_in_pieces(_MARKED_FRAMES + tail)


_C10 = (
    "Exception raised from OperationSetup at build/op_plugin/compiler_depend.ts:131 "
    "(most recent call first):\n"
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0xb8 (0xffff in libc10.so)\n"
)


@pytest.mark.parametrize(
    ("above", "kinds"),
    [
        # ms-swift#3726: torch_npu logged the message at error level, with no exception line
        (
            "[rank0]:[E329 11:57:50.830056524 compiler_depend.ts:422] setup failed!\n",
            ["unknown_traceback"],
        ),
        ("", ["unknown_traceback"]),
        # its message read as a failure already: nothing beside it
        ("RuntimeError: CUDA error: an illegal memory access was encountered\n", ["cuda_error"]),
        ("RuntimeError: setup failed!\n", ["unknown_traceback"]),
        # a warning's report (c10d's store at a peer's exit, NeMo#15019)
        (
            "[rank1]:[W1102 00:39:34.733 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=96): failed to recv\n\n",
            [],
        ),
        ("WARNING: retrying the store: failed to connect\n", []),
    ],
)
def test_c10s_report_of_a_cpp_exception_is_one_where_its_message_was_not_read(
    above: str, kinds: list[str]
) -> None:
    assert [k for k, _ in _whole_and_in_pieces(above + _C10)] == kinds
    assert [f.kind for f in _diagnose("unknown_traceback/msswift-3726.log")] == [
        "unknown_traceback"
    ]
    assert [f.kind for f in _diagnose("nccl_error/nemo-15019.log")] == ["nccl_error"]


@given(
    st.lists(
        st.sampled_from(
            [
                _C10.rstrip("\n"),
                "[W1102 00:39:34.733 TCPStore.cpp:125] recvValue failed",
                "[E329 11:57:50.8 x.ts:422] setup failed!",
                "RuntimeError: setup failed!",
                "",
                "step 4 loss 0.1",
            ]
        ),
        max_size=12,
    )
)
@settings(max_examples=150, deadline=None)
def test_c10_reports_read_the_same_whole_or_in_pieces(lines: list[str]) -> None:
    _whole_and_in_pieces("\n".join(lines) + "\n")


# freeze 24's blind misses, by class (bench/heldout/freeze24-queries.md, docs/benchmarks.md).


@pytest.mark.parametrize(
    "node_id", ["0fc14938add3345146c57e92449e77a584cace230879f50fd0813cc0", "9d2c"]
)
def test_a_node_named_by_its_long_id_and_ip_and_marked_dead_is_the_clusters(node_id: str) -> None:
    # ray#18449: Ray's warning names the node by its 56-hex-digit id and its IP before saying
    # it was marked dead; the sentence ran past the window a node's death was looked for in
    line = (
        f"2021-09-05 05:42:38,294     WARNING worker.py:1228 -- The node with node id: {node_id} "
        "and ip: 172.31.57.35 has been marked dead because the detector has missed too many "
        "heartbeats from it.\n"
    )
    assert _kinds(line) == ["ray_cluster"]
    assert [f.kind for f in _diagnose("ray_cluster/ray-18449.log")] == ["ray_cluster"]
    # a node and a death in two sentences are not one node's death
    assert _kinds("Started the node. The run died later of its own error.\n") != ["ray_cluster"]


@given(
    st.text(alphabet="0123456789abcdef", max_size=64),
    st.from_regex(r"\A\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\Z"),
    st.sampled_from(["", "(raylet) ", "2021-09-05 05:42:38,294\tWARNING worker.py:1228 -- "]),
)
@settings(max_examples=60, deadline=None)
def test_any_node_id_and_ip_marked_dead_read_the_same_whole_or_in_pieces(
    node_id: str, ip: str, dress: str
) -> None:
    text = (
        f"{dress}The node with node id: {node_id} and ip: {ip} has been marked dead because "
        "the detector has missed too many heartbeats from it.\n"
    )
    assert [k for k, _ in _whole_and_in_pieces(text)] == ["ray_cluster"]


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # EfficientZero#2: the paste wrapped Ray's sentence after its first clause
        (
            "2022-07-07 19:05:41,609 WARNING worker.py:1404 -- A worker died or was killed\n"
            "while executing a task by an unexpected system error. To troubleshoot the\n",
            ["ray_worker_died"],
        ),
        (
            "(raylet) A worker died or was killed while executing a task by an unexpected",
            ["ray_worker_died"],
        ),
        ("No worker died and none was killed in this run.", []),
    ],
)
def test_rays_dead_worker_sentence_wrapped_after_its_first_clause(
    text: str, kinds: list[str]
) -> None:
    assert _kinds(text + "\n") == kinds
    assert [f.kind for f in _diagnose("ray_worker_died/efficientzero-2.log")] == ["ray_worker_died"]


@pytest.mark.parametrize(
    ("line", "build"),
    [
        (
            "ray.exceptions.RuntimeEnvSetupError: Failed to setup runtime environment.",
            True,
        ),  # ray#27962
        ("Status message: runtime_env setup failed: Failed to set up runtime environment.", True),
        ("Failed to create runtime env for actor Trainer: pip install exited with 1", True),
        ("Could not create the runtime_env for the job", True),
        # uv with nowhere to install (HyDE#1723), pip and uv refusing a PEP 668 interpreter
        (
            "RuntimeError: error: No virtual environment found; run `uv venv` to create an "
            "environment, or pass `--system` to install into a non-virtual environment",
            True,
        ),
        ("error: externally-managed-environment", True),
        ("Setting up the runtime environment for job raysubmit_1", False),
        ("Using the virtual environment found at .venv", False),
    ],
)
def test_an_environment_that_could_not_be_set_up_is_a_build_error(line: str, build: bool) -> None:
    assert (_kinds(line + "\n")[:1] == ["build_error"]) is build
    for name in (
        "build_error/ray-22472.log",
        "build_error/ray-27962.log",
        "build_error/hyde-1723.log",
    ):
        assert _diagnose(name)[0].kind == "build_error"
    # a disk that filled while the environment was built is still the disk's failure
    assert _diagnose("disk_full/tracecat-1361.log")[0].kind == "disk_full"


@pytest.mark.parametrize(
    ("line", "limited"),
    [
        (  # transformers#34841
            "requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for URL: "
            "https://huggingface.co/meta-llama/Meta-Llama-3-8B/resolve/main/config.json",
            True,
        ),
        (
            "Download failed: request error: HTTP status client error (429 Too Many Requests) "
            "for url (https://huggingface.co/x/y/resolve/main/config.json)",
            True,
        ),
        ("huggingface_hub.utils._errors.HfHubHTTPError: 429 Client Error: Too Many Requests", True),
        ("served 429 requests, too many requests were queued", False),
    ],
)
def test_a_rate_limited_request_is_a_network_failure(line: str, limited: bool) -> None:
    assert (_kinds(line + "\n")[:1] == ["network"]) is limited
    assert [f.kind for f in _diagnose("network/transformers-34841.log")] == ["network"]


_CANN_MODULES = ("TBE", "GE", "FE", "ASCENDCL", "HCCL", "HCCP", "DRV", "AICPU", "TEFUSION")


@given(
    st.sampled_from(_CANN_MODULES),
    st.sampled_from(
        [" Subprocess[task_distribute] raise error[], main process disappeared!", "(17,python):x"]
    ),
    st.sampled_from(["", "(WorkerDict pid=1896673) "]),
)
@settings(max_examples=40, deadline=None)
def test_canns_modules_logging_an_error_are_no_launch_script(
    module: str, tail: str, dress: str
) -> None:
    # verl#2012: the Ascend kernel compiler's subprocesses at their parent's exit
    found = _whole_and_in_pieces(f"{dress}[ERROR] {module}{tail}\n")
    assert "launch_error" not in [k for k, _ in found]


def test_a_launch_scripts_own_error_is_still_a_launch_error() -> None:
    assert _kinds("[ERROR] Background srun 'ray-worker-1' died (pid=123456).\n") == ["launch_error"]
    assert _kinds("[ERROR] Generation of the head node failed\n") == ["launch_error"]
    assert "launch_error" not in _excerpt_kinds("unknown_traceback/verl-2012.log")
