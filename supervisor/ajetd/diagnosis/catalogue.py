"""The failure kinds ajetd recognises, as data: how each reads, how bad it is, what to do.

Kind names are contract (`ajetd diagnose --json`, trials.md, status). Order matters: a line is
given the first kind whose pattern matches it, so the more specific kinds come first (a
connection refused before a generic network error, a logger's missing key before auth, a
missing repository before a 401). Patterns are written for the phenomenon across PyTorch,
vLLM, Ray, NCCL, Hugging Face Hub, requests/httpx/urllib3, uvicorn, uv/pip and
omegaconf/Hydra versions, not for one phrasing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from functools import cache, cached_property

from ahocorasick_rs import BytesAhoCorasick, Implementation, MatchKind

from ajetd.diagnosis.patterns import Pattern, Shortfall, Unless, compiled, gate
from ajetd.frameworks.framework import AGENTJET


class Severity(str, Enum):
    FATAL = "fatal"  # retrying cannot help until a person changes something
    RETRYABLE = "retryable"  # a relaunch (maybe with a fix) can succeed
    SCIENCE = "science"  # only a change to the experiment helps: tried where allow_fixes permits
    WARNING = "warning"  # worth reporting; does not end a run by itself


@dataclass(frozen=True)
class Kind:
    name: str
    severity: Severity
    explanation: str
    fix: str
    patterns: tuple[Pattern, ...]
    consequence: bool = False  # usually the cascade of another failure, not its root
    # kinds whose failure this one names the cause of: found with it, they rank as its echoes
    explains: tuple[str, ...] = ()
    # where given, only their lines this matches are such echoes: the others name a cause of
    # their own
    explains_only: re.Pattern[str] | None = None
    # where given, only this kind's lines that it matches name those causes (a GPU refused
    # altogether does, any other CUDA error does not)
    explains_from: re.Pattern[str] | None = None

    @cached_property
    def gated(self) -> tuple[Pattern | None, tuple[Pattern, ...]]:
        """Its patterns behind one RE2 search (`patterns.gate`): the search, and the patterns
        tried whatever it says. Made from this kind's own patterns (a copy with fewer, as the
        held-out figures make, has its own)."""
        return gate(self.patterns)


def _p(*patterns: str | Unless | Shortfall) -> tuple[Pattern, ...]:
    """Each linear in a line's length (`patterns`)."""
    return tuple(compiled(p) if isinstance(p, str) else p for p in patterns)


# An environment's install that failed (Ray building a runtime env: `Failed to install conda
# environment <prefix>:`, `Failed to install pip requirements`): a build's failure
_ENV_INSTALL_FAILED = (
    r"\bfailed to install (the )?(conda|pip|uv|python)?\s?(env\w*|requirements|packages?"
    r"|dependencies)\b"
)

# NCCL's own words for a call that failed (its timeout said as a failure): not a timeout
_NCCL_SAID_FAILED = r"(failed or timed out|call to \w+( (from|to) \S+)? failed)"

F, R, W, S = Severity.FATAL, Severity.RETRYABLE, Severity.WARNING, Severity.SCIENCE

CATALOGUE: tuple[Kind, ...] = (
    Kind(
        "disk_full",
        F,
        "The disk (or quota) is full: files, checkpoints or logs cannot be written.",
        "Free space or point checkpoints/logs at a larger volume, then relaunch.",
        _p(
            r"no space left on device",
            r"\[errno 28\]",
            r"\benospc\b",
            r"disk quota exceeded",
            r"\[errno 122\]",
            r"not enough (free )?disk space",
            r"\bis over \d+% full\b",
            # shape: a write that failed in the words of what wrote (the C library's `write():
            # fd N failed`, PyTorch's stream writer's `failed writing file` and `file write
            # failed`); not any line with a write and a failure on it (`write val results ok,
            # 0 failed`, a logger's `failed to write summary, retrying`, source code)
            r"(\bwrite\(\):? fd \d+ failed|\bfailed writing file\b|\bfile write failed\b)",
            r"error writing \(tmp\) checkpoint file",
            r"error writing .*file.*resource exhausted",
            # Ray refusing to create an object when its store is full and the node's disk is
            # past its threshold (`ray.exceptions.OutOfDiskError: Local disk is full`, `... the
            # local disk's utilization is over capacity (95% by default)`): spilling filled it
            r"\boutofdiskerror\b",
            r"\blocal disk is full\b",
            r"\bdisk('s)? utilization is over capacity\b",
            # shape: the shared memory (/dev/shm, a container's 64 MB by default) full, as
            # PyTorch's DataLoader says it (a worker's `ERROR: Unexpected bus error encountered
            # in worker. This might be caused by insufficient shared memory (shm).`, the
            # parent's `DataLoader worker (pid N) is killed by signal: Bus error. It is possible
            # that dataloader's workers are out of shared memory.`), Paddle's likewise (`... in
            # DataLoader worker. This might be caused by insufficient shared memory (shm)`)
            r"\binsufficient shared memory\b",
            r"\bworkers are out of shared memory\b",
            r"\bis killed by signal: bus error\b",
        ),
    ),
    Kind(
        "vllm_memory",
        S,
        "vLLM cannot reserve its memory: other processes hold the GPU (less is free than "
        "gpu_memory_utilization asks), or its budget leaves the KV cache no room for "
        "max_model_len (the weights take it).",
        "If other processes hold the GPU (free memory less than desired), wait for it to drain "
        "or lower gpu_memory_utilization; if the KV cache has no room (max seq len larger than "
        "the KV cache, no memory for the cache blocks), raise gpu_memory_utilization or lower "
        "max_model_len.",
        _p(
            r"free memory on device .* is less than desired gpu memory utilization",
            r"no available memory for the cache blocks",
            r"max seq len .* is larger than the maximum number of tokens .* in kv cache",
            r"(insufficient|not enough) (gpu )?memory .*(kv cache|gpu_memory_utilization)",
            r"gpu_memory_utilization.*(too (low|small|high)|insufficient|increase|decrease)",
            # the advice in any of its verb forms (`Try increasing `gpu_memory_utilization``,
            # vLLM V1's words; `increase the gpu_memory_utilization`, V0's)
            r"\b(increas|decreas|rais)(e|es|ed|ing)\b (the )?`?gpu_memory_utilization`?",
            # shape: vLLM V1's refusal to start an engine whose KV cache cannot hold one
            # request of max_model_len (`To serve at least one request with the models's max
            # seq len (8192), (4.50 GiB KV cache is needed, which is larger than the available
            # KV cache memory (2.20 GiB)`, v1/core/kv_cache_utils.py): V0 said it in tokens
            r"\bkv cache is needed\b[^.]{0,40}\blarger than the available kv cache memory\b",
            # shape: vLLM's advice, after an allocation of its own failed, to lower its budget
            # or the setting beside it (`CUDA out of memory occurred when warming up sampler
            # ... Please try lowering `max_num_seqs` or `gpu_memory_utilization``): the budget
            # is the cause, not the computation that ran out. The failure is on the line: a
            # program lowering its own budget (`lowering gpu_memory_utilization to 0.60`), a
            # recommendation (`... below 0.95 to avoid OOM errors`) or a config key is no failure
            r"(out of memory|\boom\b).*\b(lower|reduc)\w{0,4}\b[^.]{0,80}gpu_memory_utilization",
            r"free memory on device .* is less than desired",
            r"increase --?mem[-_]fraction[-_]static",
            r"larger than the profiled value -\d+",
            # shape: vLLM's own budget line showing no room left for the KV cache (the weights
            # alone take more than the memory it may use): `Available KV cache memory: -0.87 GiB`
            r"\bkv cache memory:?\s*-\d",
            # shape: the budget said in words to leave no memory for the KV cache (SGLang's
            # `ValueError: Loaded weights leave no GPU memory for the KV cache under
            # --mem-fraction-static=0.88. Raise --mem-fraction-static above 0.912 ...`, raised
            # where the weights take all the static fraction allows): the fraction to raise
            r"\bno (gpu |device )?memory (left |remaining )?for (the )?kv cache\b",
        ),
        # vLLM's advice follows the out of memory it caught, chained above it in the log
        # (`torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ...`, then `The above
        # exception was the direct cause ...`, then `RuntimeError: CUDA out of memory occurred
        # when warming up sampler ... Please try lowering ... gpu_memory_utilization`)
        explains=("cuda_oom",),
    ),
    Kind(
        "host_oom",
        R,
        "The machine ran out of host (CPU) memory and a process was killed.",
        "Use fewer rollout workers or a smaller batch, free host memory, or raise Ray's "
        "memory threshold; then relaunch.",
        _p(
            r"ray\.exceptions\.outofmemoryerror",
            r"node (is )?running low on memory",
            r"memory on the node .* exceeds the memory usage threshold",
            r"out of memory: kill(ed)? process",
            # shapes: an OOM kill said as an event, never a name that only holds `oom_kill`
            # (a kernel counter `oom_kill 0`, cgroup's `oom_kill_disable`, a config key, a
            # setting's `oom-killer` in prose): the kernel's `oom-kill:constraint=...`,
            # `python invoked oom-killer:`, `oom_reaper: reaped process`; Slurm's `Detected 1
            # oom_kill event(s)` (either spelling); systemd's `Failed with result 'oom-kill'`
            # and `has been killed by the OOM killer`; a process, task or pod that `was`, `has
            # been` or `got OOM killed`; Kubernetes' `Reason: OOMKilled`, Docker's
            # `"OOMKilled": true`
            r"\boom-kill:",
            r"\binvoked oom-killer\b",
            r"\boom_reaper: reaped process\b",
            r"\bdetected [1-9]\d{0,8} oom[_-]kill event",
            r"\bresult '?oom-kill\b",
            r"\b(has|have) been killed by the oom[ -]?killer\b",
            r"\b(was|were|been|got|is|are) oom[ -]?killed\b",
            r"\breason:\s{0,20}oomkilled\b",
            r"\"?oomkilled\"?:\s{0,4}true\b",
            r"^\s*killed\s*$",
            # shape: a shell reporting a job it ran as killed (`script: line 155: 1126 Killed`,
            # also pasted as `line 155 : 1126 Killed :9`)
            r"\bline \d+\s*:\s*\d+\s+killed\b",
            r"\bmemoryerror\b",
            r"std::bad_alloc",
            r"cannot allocate memory",
            r"signal 9 \(sigkill\) received",
            r"exitcode\s*:\s*-9\b",
            r"rayoutofmemoryerror",
            r"more than \d+% of the memory on node",
            r"ray-oom-prevention",
            r"task was killed due to the node running low on memory",
            r"killed due to memory pressure",
            r"return code = -9\b",
            r"^\s*已杀死\s*$",
            # shapes: an OutOfMemoryError class in Ray's namespace (Ray's memory monitor kills
            # on host memory); an exit status that says SIGKILL (-9, or 128 + 9 from a shell)
            r"\bray\.[\w.]*outofmemoryerror",
            r"\b(exit ?code|exitcode|return ?code|returncode|exit status)\W{0,4}(-9|137)\b",
            # shape: a child process that SIGKILL ended, as its parent reports it (PyTorch's
            # DataLoader: `DataLoader worker (pid 19597) is killed by signal: Killed.`;
            # torch.multiprocessing's `process 1 terminated with signal SIGKILL`): the kernel's
            # OOM killer, which picks the largest process, a worker holding a copy of the data
            r"\bis killed by signal: killed\b",
            r"\bterminated with signal sigkill\b",
            # TensorFlow's allocator out of host memory (`OOM when allocating tensor with
            # shape[...] ... on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu`);
            # on a GPU it is cuda_oom's
            r"\boom when allocating tensor\b.{0,400}(\bdevice:cpu:\d|\bby allocator (mkl)?cpu\b)",
        ),
    ),
    Kind(
        "cuda_oom",
        S,
        "A GPU ran out of memory during computation.",
        "Lower the micro batch size (ppo_micro_batch_size_per_gpu, log_prob_micro_batch_size; "
        "NeMo-RL: policy.train_micro_batch_size, policy.logprob_batch_size), the sequence "
        "lengths, or vLLM's gpu_memory_utilization; enable offload or "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.",
        _p(
            r"cuda out of memory",
            r"(torch\.)?(cuda\.)?outofmemoryerror",
            r"cuda error: out of memory",
            r"cudaerrormemoryallocation",
            r"cublas_status_alloc_failed",
            r"hip out of memory",
            r"resource_exhausted: out of memory",
            r"cuda_error_out_of_memory",
            r"out of memory on device",
            r"curesult error: \d+ \(out of memory\)",
            r"curesult error:?\s+(result=)?2\b",
            r"memory_allocation_failure",
            r"failed to allocate memory requested by",
            # shape: PyTorch's caching allocator's message, whatever the device it names
            # (CUDA, ROCm, an NPU, an XPU): `<device> out of memory. Tried to allocate <size>`
            r"out of memory\. tried to allocate \d",
            # shape: an accelerator other than a CUDA GPU that ran out of its device memory
            # (Ascend NPUs, Intel XPUs, Gaudi HPUs, Cambricon MLUs)
            r"\b(npu|xpu|hpu|mlu)\s+out of memory\b",
            # ROCm's spelling of CUDA's `CUDA error: out of memory` (PyTorch built for AMD GPUs
            # says `HIP error:` where the CUDA build says `CUDA error:`; see cuda_error)
            r"\bhip error: out of memory",
            # shape: the CUDACHECK macro of NCCL's examples, whose other errors cuda_error reads
            # (`Failed: Cuda error <file>:<line> '<error>'`), when CUDA's error string is the out
            # of memory (not NCCL's own `Cuda failure 'out of memory'`: NVLS failing to map its
            # multicast memory says so, an NCCL failure)
            r"\bfailed: cuda error [^\s:']{1,200}:\d{1,6} 'out of memory'",
            # shape: TensorFlow's allocator out of device memory (`ResourceExhaustedError: OOM
            # when allocating tensor with shape[16,112,112,147] and type float on
            # /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc`, TF 1's `(see
            # above for traceback): OOM when allocating tensor of shape [563354,256]`, the
            # kernel's `OP_REQUIRES failed at tile_ops.cc:123 : Resource exhausted: OOM when
            # ...`); its host memory's (`device:CPU`) is host_oom's, read first
            r"\boom when allocating tensor\b",
        ),
        # the accelerator runtime's advice to rerun with its launches blocking (CUDA's `For
        # debugging consider passing CUDA_LAUNCH_BLOCKING=1`, Ascend's `please set the
        # environment variable ASCEND_LAUNCH_BLOCKING=1`, ROCm's `AMD_SERIALIZE_KERNEL=3`) names
        # no failure of its own: it comes with whatever error the runtime reported, printed
        # above it (CUDA) or below it (Ascend's `[ERROR]` block: Helios#62, the memory the GE
        # module could not allocate); where that error is an out of memory, the advice is its
        # echo (a kernel's own failure on another line, an illegal access, is not)
        explains=("cuda_error",),
        explains_only=re.compile(r"_launch_blocking\b|\bamd_serialize_kernel=", re.IGNORECASE),
    ),
    Kind(
        "nccl_timeout",
        R,
        "A collective (NCCL, RCCL, HCCL) operation timed out: a rank stalled or died, or the "
        "network between GPUs is blocked.",
        "Look for the first rank that failed; check the interconnect, raise the timeout, or "
        "relaunch after stale processes are gone.",
        _p(
            r"watchdog caught collective operation timeout",
            r"ran for \d+ milliseconds before timing out",
            Unless(("processgroupnccl",), "failed or timed out", "time(d)? ?out"),
            Unless(("nccl (operation|communicator)?",), _NCCL_SAID_FAILED, "timed? ?out"),
            r"collective operation timeout",
            # shape: NCCL's AMD and Ascend counterparts (RCCL, HCCL) saying that a task or
            # operation of theirs timed out
            Unless((r"\b[hr]ccl\b",), _NCCL_SAID_FAILED, r"\btime(d)? ?out\b"),
            # shape: HCCL's own error codes (CANN's `EI00..`) saying that a wait of a collective
            # timed out (`EI0002 ... The wait execution of the Notify register times out`,
            # `EI0006 ... Getting socket times out`)
            r"\bei00\d\d\b.{0,160}\btimes out\b",
            # shape: a socket between ranks that timed out waiting for the peer's data: a rank
            # stalled (c10d's store: `[c10d] waitForInput: socket SocketImpl(...) timed out
            # after 600000ms`, `poll for socket ... returned 0, likely a timeout`; HCCL's
            # `Getting socket times out. Reason: Remote Rank did not send the data in time`).
            # Not a socket that could not connect (the network's: `The client socket has timed
            # out after 60s while trying to connect to ...`), nor one retried (c10d's client
            # whose connect timed out, said in the server's name: `The server socket on ... has
            # timed out, will retry.`, a warning while a rendezvous waits), nor Python's
            # `socket.timeout`
            Unless(
                (r"\bsocket ",),
                r"\b(connect|retr(y|ying|ies)\b)",
                r"\b((timed|times) out|likely a timeout)\b",
            ),
        ),
    ),
    Kind(
        "nccl_error",
        R,
        "NCCL failed (driver, topology or NVLS/NVLink-SHARP trouble).",
        f"Relaunch with NCCL_NVLS_ENABLE=0 ({AGENTJET.nccl_source}); set NCCL_DEBUG=INFO "
        "to see the transport that fails.",
        _p(
            r"nccl error",
            r"\bnccl(internal|unhandledcuda|system|invalidusage|remote)error\b",
            r"unhandled (system|cuda) error.*nccl",
            r"distbackenderror.*nccl",
            r"nccl communicator was aborted",
            r"transport/nvls",
            r"ncclcommInitRank failed",
            r"\bnet\s*:\s*call to (recv|send|connect)\b.*failed",
            r"\bnet/(ib|socket)\s*:.*(error|failed)",
            r"doesn't have nccl built in",
            r"\bhccl (function )?error",
            r"call hccl api failed",
            r"\bibv_\w+ failed",
            # shapes: an RDMA work completion that came back with an error (InfiniBand/RoCE,
            # under NCCL's transport or the driver's own `mlx5:` line); a call into the
            # collective library (an `nccl*`/`hccl*` function) that returned an error code
            r"\bgot completion\b.*\bwith (error|status)\b",
            r"\b[nh]ccl[a-z]\w*\b.{0,80}\berror code is [1-9]",
            # shape: HCCL's own error codes (`EI00..`) for a failure that is not a timeout
            # (`EI0009 ... Transport init error`); its timeouts are read first, by nccl_timeout
            r"\bei00\d\d\b.{0,160}\berror\b",
            # shape: the NCCLCHECK macro of NCCL's examples, nccl-tests and the C++ programs that
            # copy it: a call that did not return ncclSuccess, with NCCL's error string quoted
            # (`NCCL failure common.cu:921 'unhandled system error'`)
            r"\bnccl failure [^\s:']{1,200}:\d+ '",
            # shape: NCCL's own CUDACHECK, a CUDA call inside NCCL that failed, with CUDA's error
            # string quoted (`init.cc:416 NCCL WARN Cuda failure 'operation not supported'`,
            # `transport/shm.cc:590 NCCL WARN Cuda failure 217 'peer access is not supported
            # ...'`, its `Last error:` echo `Cuda failure 1 'invalid argument'`; NCCL returns
            # ncclUnhandledCudaError); not the kernel failures and the out of memory it only
            # reports, which cuda_error and cuda_oom name
            # (an `Unless`, in RE2: a lookahead would keep it out of the kind's one gate search,
            # tried on each of NCCL's INFO lines)
            Unless(
                (r"\bcuda failure (\d{1,4} )?'",),
                r"(out of memory|an illegal|unspecified launch|device-side assert|misaligned)",
            ),
        ),
    ),
    Kind(
        "cuda_error",
        F,
        "A CUDA kernel or library call failed (not memory): an illegal memory access, a "
        "device-side assert, a launch failure, a cuBLAS/cuDNN error or no kernel for this GPU.",
        "Rerun with CUDA_LAUNCH_BLOCKING=1 to find the failing op; check token ids against the "
        "vocabulary (device-side asserts), the GPU architecture the wheels were built for, and "
        "the driver; then relaunch.",
        _p(
            r"illegal memory access",
            r"device-side assert(ion)? triggered",
            r"unspecified launch failure",
            r"cublas_status_(?!alloc_failed)\w",  # (one is enough: `\w+` ran to the word's end)
            r"cudnn_status_\w+",
            r"cudnn error",
            r"no kernel image is available",
            r"cudaerror(illegaladdress|assert|launchfailure|nokernelimage|misalignedaddress)",
            r"cuda_error_(illegal_address|assert|launch_failed|no_binary_for_gpu)",
            r"misaligned address",
            r"an illegal instruction was encountered",
            r"cuda error: (?!out of memory|invalid device ordinal|no cuda-capable device)",
            r"cuda driver error",
            r"\bxid\b.*\b(13|31|43|48|63|64|74|79|94|95)\b",
            r"triton.*(illegal|out of resources\b)",
            # Triton refusing a kernel whose launch needs more than the GPU has, raised: its
            # exception line (`triton.runtime.errors.OutOfResources: out of resource: shared
            # memory, Required: 147456, Hardware limit: 101376`). Not the same words inside a
            # line: torch.compile's autotuning logs them for a candidate kernel it then drops
            # (`No valid triton configs. OutOfResources: out of resource: ...`, then `Ignoring
            # this choice.`) and goes on
            r"^\s*([\w.]+\.)?outofresources: out of resource\b",
            r"cutlass error",
            r"\.cu:\d+: .*assertion .* failed",
            r"curesult error",
            # shape: the accelerator runtime's own advice after a kernel failed and was reported
            # late (CUDA's, ROCm's or Ascend's: pass, set or unset `*_LAUNCH_BLOCKING`), not a
            # script that merely sets the variable
            r"\b(consider passing|environment variable|please unset)\s+(cuda|hip|ascend)"
            r"_launch_blocking\b",
            # shape: a kernel whose launch failed, in words that name the kernel launch
            # (Ascend's `FlashAttentionScore launch kernel failed.`); not a job's launch
            r"\b(kernel launch|launch(ing)? (the )?kernels?)\b.{0,20}\bfail",
            # shapes, an Ascend NPU's operators in torch_npu's and CANN's words: a call into the
            # operator library (`aclnn*`) that failed; an operator whose kernel the launcher
            # could not start (`launch failed for Cast`); no kernel binary for an operator (the
            # CANN kernels package missing or not matching: the NPU's `no kernel image`)
            r"\bcall aclnn\w+ failed\b",
            r"\blaunch failed for \w",
            r"\b(does not ha(s|ve) any binary|parse dynamic kernel config fail)",
            # shape: the runtime's report that one of the NPU's compute units (AI Core, AI
            # Vector, AI CPU) faulted while it ran a kernel (`there is an exception of aivec
            # error`, `[aicpu exception]`, `The vector core execution is abnormal`)
            r"\bexception of (fftsplus )?(aicore|aivec|aivector|aicpu) error\b",
            r"\b(aicore|aicpu|vector core) (exception|execution is abnormal)\b",
            # shape: PyTorch's own class for an accelerator's error (`torch.AcceleratorError`,
            # raised for CUDA errors since PyTorch 2.8), named alone when a wrapper says only
            # its class: `RayTaskError(AcceleratorError): ray::Actor.fn()`; one whose message
            # says `out of memory` is read by cuda_oom first
            r"\bacceleratorerror\b",
            # shape: a GPU kernel compiler's fatal error (Triton compiles its kernels through
            # LLVM; one it cannot build for this GPU aborts the process: `LLVM ERROR: Failed to
            # compute parent layout for slice layout.` on a V100, then SIGABRT); not LLVM's
            # own host allocation failure
            r"^\s{0,8}llvm error: (?!out of memory)",
            # shapes: ROCm's spelling of two of the CUDA shapes above (PyTorch built for AMD GPUs
            # says `HIP error: invalid device function` where the CUDA build says `CUDA error:
            # ...`, and advises `AMD_SERIALIZE_KERNEL=3` where CUDA's advises
            # `CUDA_LAUNCH_BLOCKING=1`); its out of memory is cuda_oom's, an invalid device
            # ordinal insufficient_gpus'
            r"\bhip error: (?!out of memory|invalid device ordinal|no hip-capable device)",
            # shapes: the same CUDA error in the words of PyTorch before 1.5 (THC: `RuntimeError:
            # cuda runtime error (30) : unknown error at .../THCGeneral.cpp:51`, its check's
            # `THCudaCheck FAIL file=... line=265 error=4 : unspecified launch failure`); its out
            # of memory is cuda_oom's, an invalid device ordinal insufficient_gpus'
            r"\bcuda runtime error \(\d{1,4}\) : "
            r"(?!out of memory|invalid device ordinal|no cuda-capable device)",
            r"\bthcudacheck fail\b[^\n]{0,300}? error=\d{1,4} : "
            r"(?!out of memory|invalid device ordinal|no cuda-capable device)",
            r"\bconsider passing amd_serialize_kernel=",
            # shape: GPUs below a compute capability refused altogether (vLLM's `RuntimeError:
            # GPUs with compute capability below 7.0 are not supported.`): no kernel of the
            # program is built for this GPU, whatever the settings
            r"\bgpus? with compute capability (below|less than|lower than|under) [\d.]{1,5} "
            r"(is|are) not supported\b",
            # shape: GPUs the platform gives no peer access between (DistServe's `Error:
            # Peer-to-peer access is unsupported on this platform.` on RTX 4090s over PCIe;
            # CUDA's own `peer access is not supported between these two devices`): the
            # program's transfers between GPUs cannot run on this machine
            r"\bpeer(?:[- ]to[- ]peer)? access is (?:not supported|unsupported)\b",
            # shape: the CUDACHECK macro of NCCL's examples and of the programs that copy it
            # (vLLM's and SGLang's custom allreduce, nccl-tests): a CUDA call that did not return
            # cudaSuccess, with CUDA's error string quoted (`Failed: Cuda error
            # .../custom_all_reduce.cuh:307 'peer access is not supported between these two
            # devices'`), then exit; its out of memory is not this kind's
            Unless((r"\bfailed: cuda error [^\s:']{1,200}:\d{1,6} '",), r"out of memory"),
        ),
        # a GPU that the program or its wheels cannot run names the cause of the dtype or
        # quantization that the same GPU refused before it (vLLM's `Bfloat16 is only supported
        # on GPUs with compute capability of at least 8.0`, printed above the refusal of the
        # GPU itself): that refusal is its echo; a setting refused on a GPU that runs is not
        explains=("config_error",),
        explains_only=re.compile(r"compute capability", re.IGNORECASE),
        explains_from=re.compile(r"compute capability", re.IGNORECASE),
    ),
    Kind(
        "port_in_use",
        R,
        "A server could not bind its port: something else already listens there.",
        "End the leftover holder of the port if it is this run's, else choose another port.",
        _p(
            r"address already in use",
            r"\[errno (98|48)\]",
            r"\beaddrinuse\b",
            r"port \d+ is (already )?in use",
            r"only one usage of each socket address",
            r"trying to use a port number \d+ that is (already )?used",
            r"no available ports",
        ),
    ),
    Kind(
        "connection_refused",
        R,
        "A server the run needs is not up: the connection was refused.",
        "Start the server first (swarm server, Ray head, vLLM endpoint) or wait until its "
        "health check passes; then relaunch.",
        _p(
            # an HTTPS host refusing (a hub, a proxy) is the network's failure, not a server of
            # the run's own (Ray, vLLM, the swarm server speak plain HTTP or gRPC)
            r"^(?!.*(httpsconnection|runtime.env.agent)).*connection refused",
            r"\beconnrefused\b",
            r"^(?!.*httpsconnection).*\[errno 111\]",
            r"connectionrefusederror",
            r"actively refused",
            # shape: a client that waited for the server it launched or needs and says, in the
            # same clause, that the server never came up (TRL's `Server is not up yet.
            # Retrying`, AReaL's remote engine's `RuntimeError: server launch failed`, olmocr's
            # `sglang server did not become ready after waiting.`, a deploy's `SGLang server
            # not ready within 300 seconds`, a test
            # harness's `Server failed to start within 1200 seconds`): whatever kept the server
            # down is in the server's own log, and the run cannot go on without it. Not a
            # runtime's own front-end server failing as the runtime starts (SGLang's `Server
            # warmup failed; aborting startup: HTTP server did not become ready`, sglang#28493;
            # Ray's `Ray client server failed to start`, ray_cluster's): the runtime's own
            # failure, its cause in the lines around
            r"(?<!http )(?<!client )\bserver\b[^;,!?]{0,40}?\b(is not up|not ready"
            r"|did not (become|start)|didn'?t (become|start)|never (became|started)"
            r"|failed to (start|launch)|launch(ed)? failed)\b",
            # and the client's lines while it waits (olmocr's `Attempt 287: Please wait for vllm
            # server to become ready...`), as TRL's `not up yet` ones
            r"\bwait(ing)? for (the )?[\w-]{0,20} ?server to (become (ready|healthy)|start"
            r"|come up)\b",
            r"host='(localhost|127\.0\.0\.1|0\.0\.0\.0)'.*max retries exceeded",
        ),
        # a client that lost its connection to the server (`RemoteDisconnected('Remote end
        # closed connection without response')`, a reset, a read that timed out) and is then
        # refused by it saw the server go down: the refusal names the cause of the drop. Only
        # of a drop: a host that could not be reached at all (DNS, a proxy, TLS, the Hub over
        # HTTPS, a connect that timed out) is the network's own failure, and a server of the
        # run that needed it (its model on the Hub) ends and refuses as its echo
        explains=("network",),
        explains_only=re.compile(
            r"^(?!.*https).*\b(remotedisconnected|remote end closed|connection ?(reset|aborted)"
            r"|readtimeout|read timed out)",
            re.IGNORECASE,
        ),
    ),
    Kind(
        "ray_cluster",
        R,
        "Ray could not reach its cluster (GCS unreachable, stale or not started).",
        "Stop this run's stale Ray (`ray stop` for this user) and relaunch; check the head's "
        "address and port.",
        _p(
            r"failed to connect to gcs",
            r"failed to get cluster id from gcs",
            r"timed out while waiting for gcs",
            r"unable to connect to gcs",
            r"gcs (server )?has failed",
            r"could not find any running ray instance",
            r"ray has not been started",
            r"raysystemerror",
            r"can't find a `?node_ip_address\.json",
            r"ray is trying to start at .* but is already running",
            r"failed to register worker .* to raylet",
            r"gcs_client.*(failed|timed out)",
            r"failed to register worker\b.*\bto raylet",
            r"raylet exited",
            r"ray agent failed",
            r"gcs .*(cannot|can't|could not|failed to) (find|connect|reach)",
            r"retrying to connect to socket",
            r"raylet_client.*retrying",
            r"ray client connection timed out",
            r"failed to get register_center_actor",
            r"runtime.env.agent.*(error|failed|refused)",
            r"failed to connect to the default ray cluster",
            # shape: `ray start` reporting that the processes it started died (`ERROR
            # scripts.py:410 -- Ray processes died unexpectedly`, ray#6902; newer Rays: `Some Ray
            # subprocesses exited unexpectedly:`): the node never joined its cluster
            r"\bray (sub)?process(es)? (died|exited) unex",
            # shape: a Ray system component (raylet, GCS, its agents, the client) failed, ended
            # (crashed, terminated, its connection closed) or could not be reached; the cluster
            # named by its address (`Failed to connect to Ray at address: ...`)
            # (not an install that failed while the runtime env of one was built: `Failed to
            # create runtime_env for Ray client server: Failed to install conda environment`,
            # a build's failure, build_error's)
            Unless(
                (r"\b(raylet|gcs|ray agent|ray client|runtime.env.agent|ray cluster)\w*\b",),
                _ENV_INSTALL_FAILED,
                r"\b(exited|failed|refused|timed out|retrying|error|crashed|terminated|closed)\b",
            ),
            r"\b((failed|unable) to|could not|couldn.t|cannot|can.t) "
            r"(re)?(connect|reach|register)\b"
            r".*\b(raylet|gcs|ray cluster|ray instance|ray client|ray head|ray at\b)",
            # shape: a node whose Ray processes never came up (`TimeoutError: Timed out after 60
            # seconds while waiting for node to startup. Did not find socket name ...`, then
            # `The current node timed out during startup. This could happen because some of the
            # Ray processes failed to startup.`)
            r"\btimed out\b[^\n]{0,120}\bwaiting for (the )?node to start",
            r"\bnode timed out during startup\b",
            # shape: a node of the cluster that died (an actor dead *because its node died*,
            # Ray's NodeDiedError, a node marked dead by the GCS), within one sentence; a node
            # named by its IP address (`node name: 10.122.123.196 has been marked dead`) is
            # still in it: a dot before a digit does not end the sentence; nor is it too far when
            # named by its 56-hex-digit id and its IP (`The node with node id: <id> and ip:
            # 172.31.57.35 has been marked dead`, Ray's worker.py warning, ray#18449): room for
            # both, still one sentence
            r"\bnode\b(?:[^.]|\.\d){0,160}\b(has died|died|dying|marked (as )?dead)\b",
            r"\bnodediederror\b",
            # shape: Ray's job server answering a job request with a server error (its SDK's own
            # words; other HTTP clients print a 5xx as `500 Server Error` or the like)
            r"\brequest failed with status code 5\d\d\b",
        ),
    ),
    Kind(
        "ray_worker_died",
        R,
        "A Ray worker or actor died (often the echo of an earlier error).",
        # (said true of a log with no earlier error too: Ray's own list of what kills a worker)
        "Look above it for the error that killed the worker; where the log shows none, Ray's "
        "own causes remain: the OOM killer (`dmesg`, Ray's memory monitor), a crash (SIGSEGV) "
        "or `ray stop --force`: read the worker's log in Ray's session folder "
        "(`/tmp/ray/session_latest/logs`, `worker-*.err`, `raylet.out`). Relaunch once fixed.",
        _p(
            r"actordiederror",
            r"the actor died unexpectedly",
            r"rayactorerror",
            r"worker exit type: (system_error|unexpected_system_exit)",
            # Ray's sentence, also when a paste wraps or cuts it after its first clause (`A worker
            # died or was killed` / `while executing a task by an unexpected system error.`,
            # EfficientZero#2): the clause is Ray's alone
            r"\ba worker died or was killed\b",
            r"workercrashederror",
            r"the actor is dead because its worker process has died",
            r"the actor is already dead",
            r"actor .*state: dead\b",
            r"^(task_receiver|core_worker|task_manager|actor_\w+|raylet\w*|node_manager|worker_pool)"
            r"\.cc:\d+:\s+check failed",
            # shape: an actor said to be dead
            r"\bactor\b.*\bdead\b",
            # the worker that created an object (its owner) died, and the object with it
            # (Ray's `ray.exceptions.OwnerDiedError: Failed to retrieve object ...` and its
            # `The object's owner has exited.`)
            r"\bownerdiederror\b",
            r"\bthe object's owner has exited\b",
        ),
        consequence=True,
    ),
    Kind(
        "vllm_engine_dead",
        R,
        "The vLLM engine process died or stopped answering.",
        "Read the error that killed the engine (memory, CUDA, config) and relaunch.",
        _p(
            r"enginedeaderror",
            r"engine loop is not running",
            r"engine core initialization failed",
            r"engine process failed to start",
            r"enginecore.*(died|hit an exception|failed to start)",
            # shape: the engine core reporting that it met a failure (`encountered an issue`,
            # `encountered a fatal error`)
            r"\benginecore encountered an? (\w+ )?(issue|error|exception)\b",
            r"vllm engine (died|is dead)",
            r"background loop has errored already",
            # vLLM V0's async engine loop whose iteration timed out (`Engine iteration timed out.
            # This should never happen!`): the engine stalled (a worker hung or died)
            r"\bengine iteration timed out\b",
            # shape: vLLM V0's background engine task ended with an exception, as its completion
            # hook (`_log_task_completion`) says it (`Engine background task failed`) or as the
            # event loop reports the hook's own raise (`Exception in callback functools.partial(
            # <function _log_task_completion ...>, ...)`): the engine is dead from then on
            r"\bengine background task failed\b"
            r"|\bexception in callback\b.{0,80}\b_log_task_completion\b",
            r"worker proc \S+ died unexpectedly",
            # shape: vLLM's V0 engine dead, in its client's and its server's words (the client's
            # heartbeat: `RuntimeError('Engine loop has died')`, `Engine process (pid 76)
            # died.`; the launcher: `MQLLMEngine is already dead, terminating server process`,
            # `AsyncLLMEngine has failed, terminating server process`)
            r"\bengine loop has died\b",
            r"\bengine process \(pid \d{1,10}\) died\b",
            r"\b(async|mq)llmengine (is already dead|has failed)\b",
            # shape: one of vLLM's processes (engine core, worker) died
            r"\bproc \S+ died\b",
        ),
        consequence=True,
    ),
    Kind(
        "segfault",
        F,
        "A process crashed in native code (segmentation fault, abort, bus error).",
        "Read the native backtrace and the last Python frames: often a library built against "
        "another CUDA/PyTorch/NCCL version, or a bad extension; rebuild the venv, then relaunch.",
        _p(
            r"segmentation fault",
            r"(?<!due to )\bsigsegv\b",  # not Ray's list of possible causes
            r"\bsigbus\b",
            r"\bsigabrt\b",
            r"fatal python error",
            r"\(core dumped\)",
            r"\bcore dumped\b",
            r"^bus error",
            r"caught signal (11|7|6)\b",
            r"signal (11|7|6) \((sigsegv|sigbus|sigabrt)\)",
            r"exitcode\s*:\s*-(11|7|6)\b",
            r"segfault encountered",
            r"terminate called after throwing an instance of",
            r"return code = -(11|7|6)\b",
            # shape: an exit status that says SIGSEGV or SIGBUS (-N, or 128 + N); not SIGABRT,
            # which is as often a deliberate abort (NCCL's watchdog, a failed check) as a crash
            r"\b(exit ?code|exitcode|return ?code|returncode|exit status)\W{0,4}"
            r"(-11|-7|139|135)\b",
        ),
    ),
    Kind(
        "logger_error",
        R,
        "The experiment logger (SwanLab, wandb, MLflow) failed.",
        "Relaunch with a local logger (tensorboard/console) or provide its API key.",
        _p(
            # the logger's own messages (`wandb: ERROR ...`, `swanlab: swanlab api error ...`),
            # not any line whose URL happens to name its host
            r"^\s*(wandb|swanlab)\s*:.*\b(error|failed|unauthorized|forbidden|not logged in"
            r"|permission denied)\b",
            r"\b(wandb|swanlab)\.(errors?|exceptions?)\b",
            r"\b(wandb|swanlab)\b.*\b(invalid|missing|no|wrong) api[_ -]?key",
            r"\b(wandb|swanlab)\.login\(",
            r"mlflowexception",
            r"mlflow\.exceptions",
            r"api_key not configured \(no-tty\)",
            r"\bmlflow\.utils\.[\w.]+:.*\bfailed\b",
            r"api request to \S*mlflow\S* failed",
            r"events_writer.*(failed|could not)",
            r"events\.out\.tfevent\S*.*(invalid|error|failed|denied)",
            r"error\W*events\.out\.tfevent",
            r"run initialization has timed out",
        ),
    ),
    Kind(
        "missing_model",
        F,
        "The model path or Hugging Face repo id does not exist or is invalid.",
        "Fix the model path (must exist locally) or the repo id, then relaunch.",
        _p(
            r"repositorynotfounderror",
            r"repository not found for url",
            r"is not a local folder and is not a valid model identifier",
            r"can't load (the configuration|tokenizer|the model) (of|for)",
            r"does not appear to have a file named",
            r"hfvalidationerror",
            r"repo id must (be|use) ",
            r"incorrect path_or_model_id",
            # an entry absent from a repository (`EntryNotFoundError`); not huggingface_hub's
            # `LocalEntryNotFoundError`, which says the Hub could not be reached and nothing is
            # cached (network's)
            r"\bentrynotfounderror",
            r"no such file or directory: .*(config\.json|\.safetensors|pytorch_model|tokenizer)",
            r"invalid repository id or local directory",
            r"is not a local folder and is not a",
            r"invalid (folder|model) path\b.*model",
            # shape: a model path or repository id said to be invalid
            r"invalid (folder|model|repo\w*) (path|id)",
            # shape: the Hub (or its mirror) answering 404 for a model's URL, as `requests`
            # prints it where huggingface_hub did not turn it into RepositoryNotFoundError (an
            # older hub, a direct request: `HTTPError: 404 Client Error: Not Found for url:
            # https://huggingface.co/...`): no such repository, revision or file. A dataset's
            # URL is a dataset's absence, not a model's
            r"\b404 client error: not found for url: https?://(huggingface\.co|hf-mirror\.com)"
            r"(?!/datasets/|/api/datasets/)",
        ),
    ),
    Kind(
        "auth",
        F,
        "Access was refused: missing or invalid token, API key, or a gated model.",
        "Provide the token / API key in the environment or accept the model's licence; relaunch.",
        _p(
            r"\b401 client error\b",
            r"\bunauthorized\b",
            r"gatedrepoerror",
            r"(gated repo|access to model .* is restricted|cannot access gated repo)",
            r"invalid (user )?token",
            r"invalid ?api[-_ ]?key",
            r"incorrect api key provided",
            r"authenticationerror",
            r"authentication (failed|required)",
            r"http error 40[13]\b",
            r"status code:? 40[13]\b",
            r"\b403 client error\b",
            r"api[_ ]key (is )?(not set|missing|required|not found)",
        ),
    ),
    Kind(
        "network",
        R,
        "The network failed: DNS, proxy, TLS, timeout or unreachable host.",
        "Relaunch under proxychains4 (if installed and configured) or fix the proxy / DNS; "
        "use a local model copy.",
        _p(
            r"proxyerror",
            r"couldn['’]t reach",
            r"name or service not known",
            r"temporary failure in name resolution",
            r"nodename nor servname",
            r"getaddrinfo failed",
            r"network is unreachable",
            r"no route to host",
            r"connecttimeout(error)?",
            r"readtimeout(error)?",
            r"\bsslerror\b",
            r"certificate_verify_failed",
            r"could not resolve host",
            r"failed to establish a new connection",
            r"max retries exceeded with url",
            # shape: the server refusing for now, the client over its rate limit (HTTP 429 as
            # requests, huggingface_hub and Rust's reqwest print it: `429 Client Error: Too Many
            # Requests for url: https://huggingface.co/...`, `(429 Too Many Requests)`,
            # transformers#34841): retryable after a wait, as a network failure is
            r"\b429\W{1,3}(client error\W{1,3})?too many requests\b",
            r"we couldn't connect to '?https?://",
            r"connection reset by peer",
            r"httpx\.connecterror",
            r"remotedisconnected",
            r"connection (timed out|aborted)",
            r"\[errno -[23]\]",
            r"\[errno 101\]",
            r"check your (internet )?connection",
            r"make sure your internet connection is on",
            # shape: huggingface_hub's own words for a file it could not fetch and has no copy
            # of (`LocalEntryNotFoundError: An error happened while trying to locate the files on
            # the Hub and we cannot find the appropriate snapshot folder for the specified
            # revision on the local disk.`, `... cannot find the requested files in the disk
            # cache`): the Hub was not reached, whatever words follow (a paste cut before them)
            r"\blocalentrynotfounderror\b",
            r"\bcannot find the (requested files|appropriate snapshot folder)\b",
            # shape: Python's socket module's exceptions, whose classes are lower case (so no
            # exception line's shape reads them): `socket.timeout: timed out` from urllib3's
            # `create_connection`, `socket.gaierror: [Errno -2] Name or service not known`
            r"\bsocket\.(timeout|gaierror|herror)\b",
            r"tcp client failed to connect",
            r"client socket has timed out",
            r"gloo connectfullmesh failed",
            r"connect\(\) timed out",
            # shape: a connect that timed out or failed, whatever the library
            r"\bconnect\w*\b.*\btimed? ?out\b",
            r"\bconnect\w*\b.*\bfailed\b",
        ),
    ),
    Kind(
        "gpus_not_free",
        F,
        "AgentJet's launcher checked every GPU of the machine, not only the run's, and found "
        "one with less than 95 % of its memory free (check_avail_gpu, run where the command "
        "has no --autokill or --kill): another run's or another user's job is enough.",
        "Add --skip-check-avail-gpu to the command (ajetd gives the run GPUs of its own), or "
        "free the GPUs the message names; ajetd adds it itself where it removes --autokill "
        "and the codebase's ajet/launcher.py knows it (AgentJet from 2026-01-13 on).",
        _p(r"\bgpu memory check failed: all gpus must have\b"),
    ),
    Kind(
        "insufficient_gpus",
        R,
        "The run asked for more GPUs than it can get.",
        "Ask for fewer GPUs (n_gpus_per_node × nnodes) or wait until they are free.",
        _p(
            r"total available gpus \d+ is less than total desired gpus",
            r"no cuda gpus are available",
            r"found no nvidia driver",
            r"invalid device ordinal",
            # shape: a device index the runtime rejects as invalid (CUDA's `invalid device
            # ordinal`, Ascend's `invalid device=1`); not `invalid device function|pointer`
            # (and one named by its index said not to be there: TRL's `ValueError: The
            # requested device for vllm (cuda:1) is not available. You are likely using vLLM
            # without restricting the number of GPUs for training.`, a `cuda:3 is not visible`:
            # the run placed a process on a GPU it was not given)
            r"\binvalid device( ordinal| id| index|\s*=\s*\d+)"
            r"|\b(cuda|npu|xpu|gpu):\d{1,3}\)?\s(is|was) not (available|visible)\b",
            r"requested \d+ gpus? but only \d+",
            r"resource request cannot be scheduled right now.*gpu",
            r"no available node types can fulfill resource request.*gpu",
            r"(not enough|insufficient) (gpus|gpu resources)",
            r"cuda_visible_devices.*(invalid|no devices)",
            r"device >= 0 && device < num_gpus",
            r"required resources for this (actor or task|task|actor): \{[^}]*\bgpu\b",
            r"must be less than or equal to the number( of (visible )?(devices|gpus))?",
            r"number of visible devices \(0\)",
            r"waiting for creating a placement group.*\bgpu\b",
            # NeMo-RL's virtual cluster giving up on its GPU bundles (nemo_rl/distributed/
            # virtual_cluster.py: `TimeoutError: Timed out waiting for placement groups to be
            # ready. The cluster may not have enough resources ...`): they are all GPU bundles
            r"timed out waiting for placement groups to be ready",
            # and giving up after its retries (the same file's `ResourceInsufficientError:
            # Maximum number of retries reached (6). Cluster resources may be insufficient or
            # cluster itself is highly unstable`), what a 1n8g recipe prints on a 4-GPU node
            r"\bcluster resources may be insufficient\b",
            r"total available gpus [\d.]+ is less than total desired gpus",
            # shape: a resource request naming GPUs that cannot be met yet (not a placement
            # group merely created: that is a healthy run's line)
            r"\b(cannot (currently )?be scheduled|infeasible|waiting for .*placement group"
            r"|pending placement group).*\bgpu\b",
            # shape: a device index or a size that needs devices checked against how many
            # devices there are (`device < num_gpus`, `... less than or equal to the number of
            # visible devices`), in code or in words
            r"(<=?|\bless than( or equal to)?|\bgreater than|\bmore than|\bexceeds?)\s*(the )?"
            r"(num_(gpus|devices)\b|number of (visible |available )?(devices|gpus|npus)\b)",
            # shape: the GPUs a run wants and the GPUs there are, compared in one sentence,
            # either first, the wanted ones more (NeMo-RL's `Requested 16 GPUs, but only 8 are
            # available`, verl's `Total available GPUs 7.0 is less than total desired GPUs 8`;
            # not `Requested 4 GPUs, fewer than the 8 available`)
            # (one shape, so one pattern: either order, the comparison word saying which way)
            r"\bavailable\b.{0,40}\bgpus?\b.{0,60}\b(less than|fewer than)\b.{0,60}"
            r"\b(requested|desired|required|needed)\b"
            r"|\b(requested|desired|required|needed)\b.{0,40}\bgpus?\b.{0,60}"
            r"\b(but only|more than)\b.{0,60}\bavailable\b",
            # the same said of the wanted GPUs alone, their count said to exceed what there is
            # (vLLM's Ray executor: `ValueError: The number of required GPUs exceeds the total
            # number of available GPUs in the placement group.`, a paste cut after `exceeds the
            # total`): the wanted devices as the subject of `exceed` say which way already
            r"\b(requested|desired|required|needed) (gpus|devices|npus)\b.{0,20}\bexceeds?\b",
            # shape: vLLM finding no device it can run on at all (its DeviceConfig's `Failed to
            # infer device type`, 0.3's `No supported device detected`: no GPU visible in the
            # container, the driver's libraries not found, a platform plugin missing); as
            # `No CUDA GPUs are available` says for PyTorch
            # shape: a launcher's check of what it asks for against what the cluster has,
            # resource by resource, where the GPUs fall short (AReaL's `Ray does not have enough
            # resources to launch workers. Required: ... 16 GPU ... Available: ... 8.0 GPU ...`;
            # where another resource falls short it is config_error's)
            Shortfall(gpus=True),
            r"\bfailed to infer device type\b",
            r"\bno supported device detected\b",
        ),
    ),
    Kind(
        "config_error",
        F,
        "The configuration is wrong (YAML, Hydra override, incompatible setting).",
        "Fix the named key in the YAML or the override, then relaunch.",
        _p(
            r"omegaconf\.errors",
            r"configkeyerror",
            r"configattributeerror",
            r"is not in struct",
            r"could not override '",
            r"hydra\.errors",
            r"missingmandatoryvalue",
            r"missing mandatory value",
            r"interpolationresolutionerror",
            r"error merging (override|'|config)",
            r"yaml\.(scanner|parser|constructor)\.",
            r"error in call to target",
            r"instantiationexception",
            r"error: unrecognized arguments",
            r"error: the following arguments are required",
            # shape: argparse refusing one argument of the command line (`TRL CLI: error:
            # argument command: invalid choice: 'vllm-serve' (choose from ...)`, `invalid int
            # value`, `expected one argument`): its messages for one argument all begin so
            r"error: argument [^:\s]{1,80}: ",
            # shape: click's (and Typer's) refusal of the command line, its counterpart of
            # argparse's: `Usage: tune [OPTIONS] COMMAND [ARGS]...`, `Try 'tune --help' for
            # help.`, then `Error: No such command 'run'.` (torchtune#2001: another package's
            # `tune` on the PATH), `Error: No such option: --x`, `Error: Invalid value for
            # '--x': ...`, `Error: Missing option '--x'.`, `Error: Got unexpected extra argument`
            r"^\s*error: (no such (command|option)\b|invalid value for\b"
            r"|missing (argument|option|parameter)\b|got unexpected extra arguments?\b)",
            r"(must|should) be divisible by",
            r"is not divisible by",
            r"validation errors? for \w+",
            r"key '[^']+' is not in struct",
            r"unsupported (config|configuration|value)",
            # shape: a model placed by a device map (split by layers over the GPUs) refused by
            # the distributed trainer the launch chose, either order on one line (accelerate's
            # `You can't train a model that has been loaded with `device_map='auto'` in any
            # distributed mode.`, transformers' `DeepSpeed Zero-3 is not compatible with
            # `low_cpu_mem_usage=True` or with passing a `device_map`.`, ms-swift's `DeepSpeed
            # is not compatible with `device_map`.`); and accelerate's kin for a quantized
            # model loaded on another device (`You can't train a model that has been loaded in
            # 8-bit precision on a different device ...`)
            r"\b(not compatible|incompatible)\b[^\n]{0,120}\bdevice_map\b",
            r"\bdevice_map\b[^\n]{0,120}\b(not compatible|incompatible|in any distributed mode)\b",
            r"\byou can'?t train a model that has been loaded (with|in)\b",
            # shape: the model's architecture is not one the installed library can run
            # (SGLang's and vLLM's `Model architectures ['Glm4ForCausalLM'] are not supported
            # for now. Supported architectures: ...`, Megatron-Bridge's AutoBridge `ValueError:`
            # with `✗ Model architecture not supported by AutoBridge` on its next line, SGLang's
            # older `Unsupported architectures: LlavaQwenForCausalLM`): the model chosen does
            # not fit the install. Said by the exception: a warning that an architecture is not
            # supported by one path and falls back to another is no failure
            r"^[\w.]{0,80}(error|exception): \W{0,4}model architectures? (\[[^\]]{0,300}\] )?"
            r"((are|is) )?not supported\b",
            r"\bunsupported architectures?: \w",
            # the same in Transformers' words for a config whose `model_type` it has no class for
            # (`ValueError: The checkpoint you are trying to load has model type `llava_mistral`
            # but Transformers does not recognize this architecture.`), whichever program loads it
            r"\bhas model type `[^`]{1,80}` but transformers does not recognize this "
            r"architecture\b",
            r"invalid (config|configuration)",
            r"^in '[^']+': could not (find|load) '",
            r"^config search path:",
            r"valueerror: unknown [\w ]{1,40}: \S+",
            # shape: a setting's value refused with the values it may take (AReaL's trainers on
            # their allocation: `ValueError: Invalid backend: None, expected sglang or vllm`)
            r"valueerror: invalid [\w ]{1,40}: [^,\s][^,]{0,80}, expected\b",
            # shape: a setting that another one requires (slime: `rollout_routed_experts is
            # required in rollout_data when use_rollout_routing_replay is set.`, `'--save' is
            # required when save_interval is set.`), said by the exception
            r"^(valueerror|assertionerror): .{0,160}\bis required (in [\w.]{1,40} )?when\b",
            r"does not have a sharding strategy registered",
            r"\b(must|should|has to|have to|needs to) be "
            r"(greater|larger|less|smaller|no (more|less)) th[ae]n\b",
            r"\w+ \(\d+\) (is|must be|should be) (>=|<=|>|<|greater|larger|smaller|less)",
            r"reward function is not implemented for data_source",
            r"bfloat16 is only supported on gpus with compute capability",
            r"must not be (provided|set|specified|given|passed)",
            r"(longer|larger|greater|bigger) than (the )?max(imum)?[_ ]",
            # shape: a ValueError/AssertionError that states a setting's constraint
            r"^(valueerror|assertionerror): .*\b(must|should|has to|needs to)( not)? be\b",
            # shape: a setting, named as code names it (snake_case, maybe with its value),
            # found not equal to, or smaller or larger than, what it is checked against
            r"\b[a-z]+(_[a-z0-9]+)+( \(\d[\d.]*\))? (is|are) (not equal to|(smaller|larger|greater"
            r"|less) than)\b",
            # the same with where the setting was read and its value between (slime's check of
            # the Megatron arguments against the Hugging Face config: `tie_word_embeddings in hf
            # config True is not equal to untie_embeddings_and_output_weights True`)
            r"\b[a-z]+(_[a-z0-9]+)+ in [a-z_ ]{1,30} [\w.-]{1,40} (is|are) not equal to "
            r"[a-z]+(_[a-z0-9]+)+\b",
            # shape: NotImplementedError at run time: the chosen option or combination is not
            # supported
            r"^notimplementederror: ",
            # the same said by any exception in the words of the component that refuses it
            # (SGLang's PD disaggregation, prefill and decode with different TP sizes:
            # `RuntimeError: PD Disaggregation does NOT support PD different TP sizes ...`;
            # `NotImplementedError: GDN does not support packed sequence for now.`): the option
            # or the combination of settings to change. Said by the exception: a warning that
            # a path does not support something and falls back is no failure
            r"^[\w.]{0,80}(error|exception): .{0,160}\b(does not|do not|doesn't) support\b",
            # shape: a setting's value refused with the values it may take, in the program's
            # message without its exception's name (vLLM's `Unknown quantization method: gptq.
            # Must be one of ['awq', 'squeezellm']`, printed as `str(e)`)
            r"\b(unknown|invalid|unsupported) [\w ]{1,40}: [^\s,]{1,80}\.? must be one of\b",
            # shape: one field's validator refusing its value, in pydantic's words for it (vLLM's
            # engine configs are pydantic dataclasses: `Value error, torch.bfloat16 is not
            # supported for quantization method awq. Supported dtypes: [torch.float16]
            # [type=value_error, input_value=...]`); its header (`validation error for
            # ModelConfig`) is read above. Pydantic prints each error indented under that header
            # (`  Value error, No model architectures are specified [type=value_error, ...]`,
            # vLLM-Omni's); a paste may have lost the indent (vLLM's)
            r"^\s{0,8}value error, .{1,400}\[type=value_error\b",
            # shape: a request longer than the served model's context (vLLM's and OpenAI's
            # `This model's maximum context length is 16384 tokens. However, you requested 19591
            # tokens ...`): the context length or the requests' lengths to change
            r"\bmaximum context length is \d+ tokens\b",
            # shape: the run's data not the schema it is read with (🤗 datasets: `CastError:
            # Couldn't cast ... to {...} because column names don't match`,
            # `DatasetGenerationCastError: ... All the data files must have the same columns, but
            # at some point there are 4 new columns`; pyarrow's `Target schema's field names are
            # not matching the table's field names`): the data files, or the features the config
            # gives them, to make agree. Not datasets' bare `DatasetGenerationError`: it wraps
            # any failure of the build, a full disk too
            r"\bcouldn'?t cast\b|\bdatasetgenerationcasterror\b"
            r"|\bdata files must have the same columns\b|\bcolumn names don'?t match\b"
            r"|\bfield names (are not|aren't) matching\b",
            # shape: a dataset said to lack the key, column or field a setting or the trainer
            # reads, within one sentence, either first (Transformers' length-grouped sampler:
            # `Can only automatically infer lengths for datasets whose items are dictionaries
            # with an 'input_ids' key.`; 🤗 datasets' `Original column names {'1', '0'} not in
            # the dataset. Current columns in the dataset: ['text']`). (RE2: linear)
            r"\bdatasets?\b[^.]*\b(with|whose|contains?|containing|has|have|missing|lacks?"
            r"|without)\b[^.]*\b(keys?|columns?|fields?)\b"
            r"|\b(columns?|keys?|fields?)\b[^.]*\bnot (in|found in|present in) the dataset\b",
            # shape: the dataset the trainer reads is empty (every row filtered out or too long,
            # its columns removed): 🤗 datasets' `IndexError: Invalid key: 28 is out of bounds for
            # size 0`, PyTorch's sampler's `num_samples should be a positive integer value, but
            # got num_samples=0`, a trainer's `train dataset is empty`
            r"\bout of bounds for size 0\b"
            r"|\bnum_samples should be a positive integer value, but got num_samples ?= ?0\b"
            r"|\b(dataset|data ?loader)s?\b.{0,20}\b(is|was|are) empty\b",
            # shape: a chat template the run needs and the tokenizer lacks (Transformers' `Cannot
            # use chat template functions because tokenizer.chat_template is not set`, its older
            # `... default chat template is no longer allowed, so you must provide a chat
            # template`, axolotl's `tokenizer's chat_template is null`, a server's `does not
            # have a chat template`): a base model given a chat dataset or `apply_chat_template`
            r"\bchat[_ ]template\b.{0,40}\b(is not set|not set|is null|is none|no longer "
            r"allowed)|\b(must provide|does not have|doesn't have|has no) (a |any )?chat[_ ]"
            r"template\b",
            # shape: a path longer than the OS allows (ENAMETOOLONG: `[Errno 36] File name too
            # long`, boost's `system_error: File name too long`; Ray's check of a socket path
            # under its temp dir: `AF_UNIX path length cannot exceed 107 bytes`): the directory
            # the run was given (TMPDIR, Ray's temp dir, an output path) to shorten
            r"\bfile name too long\b",
            r"\[errno 36\]",
            r"\bpath length (cannot|can't|must not|may not) exceed\b",
            # shape: a launcher's check of what it asks for against what the cluster has,
            # resource by resource, where host memory or CPUs fall short and the GPUs do not
            # (AReaL's `Required: 16 CPU, 4 GPU, 351.56 GB memory. Available: 80.0 CPU, 8.0 GPU,
            # 255.89 GB memory.`; Ray Tune's `trial requested 11 CPUs, 1 GPUs but the cluster has
            # only 4 CPUs, 1 GPUs`): the workers' requested resources (memory, CPUs per worker)
            # to lower; where the GPUs fall short it is insufficient_gpus'
            Shortfall(gpus=False),
            # shape: Ray's own words for a resource request no node can meet, said without the
            # amounts compared (Tune's `Insufficient cluster resources to launch trial`, the
            # autoscaler's `No available node types can fulfill resource request {'CPU': 1.0,
            # 'memory': ...}`, the scheduler's `The actor or task ... cannot be scheduled right
            # now. It requires {...} for placement` for a placement group that did not declare
            # its workers' CPUs): the request to fit what the nodes offer. A line of them that
            # names GPUs is insufficient_gpus' (tried first); the scheduler's warning whose
            # request is on the next line (`Required resources for this actor or task: {GPU:
            # 1.000000}`, ray#21097) says nothing here: that line says which resource
            r"\b(insufficient cluster resources|no available node types can fulfill"
            r"|cannot (currently )?be scheduled\b.{0,40}\bit requires)\b",
        ),
    ),
    Kind(
        "import_error",
        F,
        "A Python module or native library could not be imported.",
        "Install the missing package in the run's venv (or fix the version mismatch); relaunch.",
        _p(
            # shape: a library's own words for an import that failed (`Failed to import
            # torch_npu.`, vLLM's `Failed to import from vllm._C with ...`, transformers'
            # `Failed to import transformers.x because of the following error`)
            r"\bfailed to import\b",
            r"modulenotfounderror",
            r"\bimporterror\b",
            r"no module named",
            r"cannot import name",
            r"undefined symbol",
            r"cannot open shared object file",
            r"dll load failed",
            r"version `glibc_[\d.]+' not found",
            r"symbol not found",
            r"\bdlopen\(.*(not found|cannot|image not found)",
        ),
    ),
    Kind(
        "build_error",
        F,
        "Building or installing the environment failed (uv, pip, compilers).",
        "Fix the dependency or build error in the venv, then relaunch.",
        _p(
            r"failed to build\b",
            # shape: an environment's install that failed (`_ENV_INSTALL_FAILED`)
            _ENV_INSTALL_FAILED,
            r"failed building wheel for",
            r"subprocess-exited-with-error",
            r"building wheel for .* (error|did not run successfully)",
            r"no solution found when resolving dependencies",
            r"resolutionimpossible",
            r"could not find a version that satisfies the requirement",
            r"no matching distribution found",
            r"error: could not compile",
            r"cmake error",
            r"nvcc fatal",
            r"failed to (download|prepare|install) (distribution|package|`)",
            r"^\s*error: failed to (build|install|prepare)",
            r"fatal error: \S+\.(h|hpp|hh|cuh|inc)\b",
            r"fatal error: .*: no such file or directory",
            r"^\S+\.(c|cc|cpp|cxx|cu|h|hpp|cuh):\d+(:\d+)?: (fatal )?error:",
            r"compilation terminated",
            r"ninja: build stopped",
            r"ninja: error",
            r"calledprocesserror: command .*ninja",
            r"error compiling objects for extension",
            r"error building extension",
            r"error: command .* failed with exit (code|status)",
            r"command errored out",
            r"metadata-generation-failed",
            r"did not run successfully",
            r"failed to (create|build|set up|setup) (the )?(worker )?(venv|virtual ?env)",
            # shape: Ray could not set up the runtime environment a job or actor asked for (its
            # pip/conda/uv packages, working_dir): `RuntimeEnvSetupError: Failed to setup runtime
            # environment.`, a job's `runtime_env setup failed: Failed to set up runtime
            # environment.` (Ray#22472, #27962), as `Failed to create runtime_env for Ray client
            # server: Failed to install conda environment` is (Ray#22610)
            r"\bruntimeenvsetuperror\b",
            r"\b(failed to (create|set ?up)|could not create) (the |its )?(associated )?"
            r"runtime[ _]?env(ironment)?\b",
            r"\bruntime[ _]?env(ironment)? (setup|creation) failed\b",
            # shape: the installer refusing to install where it was asked: no environment to
            # install into (uv's `No virtual environment found; run `uv venv` ...`, HyDE#1723),
            # or one it may not change (pip's and uv's PEP 668 `externally-managed-environment`)
            r"\bno (virtual|python) environment found\b",
            r"\bexternally[- ]managed[- ]environment\b",
            r"(uv|pip) (venv|sync|install) .*(failed|error)",
            r"error: (uv|pip) ",
            r"cmake generate step failed",
            r"configuring incomplete",
            r"build did not complete successfully",
            r"analysis of target .* failed",
            r"error loading package",
            r"^make(\[\d+\])?: \*\*\*",
            r"failed to download and build",
            # uv asked for an extra the project does not define, the extra's name quoted
            # (`Extra 'vllm' ...` in older uv, `Extra `dev` ... `optional-dependencies``)
            r"extra ['`][^'`]{1,100}['`] is not defined in the project's `?optional-dependencies",
            # shapes: a build tool's summary that the build stopped (ninja, bazel, make); a
            # traceback through a Python build backend's frames (a wheel being built)
            r"\b(build|compilation) (stopped|aborted|failed|terminated|did not complete)",
            # shape: the linker's own failure (a library or object it cannot find, its exit)
            r"\bld: cannot find\b",
            r"\bcollect2: (error: )?ld returned \d+ exit status",
            # shape: a compiler or build tool quoted as the command that failed
            # (`CalledProcessError: Command '['ninja', '-v']'`, `error: command 'gcc' failed`,
            # `Worker failed with error 'Command '['/usr/bin/clang++', ...`)
            r"^(?=.*\b(error|fail\w*|non-zero|exit status)\b).*\bcommand '\W*[^']*?"
            r"\b(gcc|g\+\+|c\+\+|clang\+\+|clang|nvcc|ninja|cmake)'",
            r'^\s*file "[^"]*[/\\](pyproject_hooks|pep517|setuptools[/\\]build_meta\.py'
            r"|torch[/\\]utils[/\\]cpp_extension\.py)",
            # the same frames as IPython/Jupyter print them, in either of its formats: `<path> in
            # <function>(<args>)` (IPython 7 and before) and `File <path>:<line>, in
            # <function>(<args>)` (IPython 8): a notebook's traceback, often pasted cut before
            # its last line
            r"^\s*(file )?\S*[/\\](pyproject_hooks[/\\]\S*|setuptools[/\\]build_meta\.py"
            r"|torch[/\\]utils[/\\]cpp_extension\.py)(:\d+,)? in \w+\(",
            # shape: a DeepSpeed CPU optimizer whose native op could not be built or loaded,
            # seen through the attribute its constructor never set (`self.ds_opt_adam =
            # CPUAdamBuilder().load()`, the same for Adagrad and Lion): its destructor's
            # `AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'`, often
            # all a paste keeps of the JIT build that failed before it
            r"\bobject has no attribute 'ds_opt_\w+'",
        ),
    ),
    # The shell's own words for a command it could not run at all (bash's exit codes 127 and
    # 126, and the trial script's 126 when it cannot enter the codebase): before missing_file,
    # whose "no such file or directory" a missing script or folder also says. Ranked as
    # echoes (`consequence`): a program that goes on to fail otherwise was not ended by such a
    # line (DeepSpeed's and vLLM's probes print `sh: 1: nvcc: not found` and carry on); the
    # trial's exit code 127 or 126 puts the matching one first (`exitcodes`).
    Kind(
        "command_not_found",
        F,
        "The shell could not find a program the launch command runs (exit code 127): it is "
        "not installed, not on the venv's PATH, misspelt, or a script's #! interpreter is "
        "missing.",
        "Install the program in the venv (exp_venv_exe) or give its full path, check the "
        "spelling and the script's #! line; then submit again.",
        _p(
            r":\s*command not found\b",  # bash `foo: command not found`, zsh `... found: foo`
            r"^(\S*/)?(ba|da|k|z)?sh: (line )?\d+: [^:]+: not found\s*$",  # dash's
            # a command given as a path that does not exist (not a `cd`, which names no `/`
            # before its colon)
            r"^(\S*/)?(ba|da|k|z)?sh: (line \d+: )?[^\s:]*/[^\s:]*: no such file or directory",
            r"cannot execute: required file not found",  # bash 5.2: no such #! interpreter
        ),
        consequence=True,
    ),
    Kind(
        "not_executable",
        F,
        "The shell found the program but could not run it (exit code 126): the file lacks "
        "its execute bit (or lies on a noexec mount), is a folder, is a binary for another "
        "machine, or its #! line is broken (a Windows line end, a wrong path).",
        "chmod +x the script (or run it as `bash script.sh` / `python script.py`), fix its "
        "#! line (dos2unix), or use the binary built for this machine; then submit again.",
        _p(
            r"^(\S*/)?(ba|da|k|z)?sh: (line \d+: |\d+: )?[^:]+: (permission denied|is a "
            r"directory)\s*$",
            r"\bbad interpreter\b",
            r"cannot execute binary file",
            r"\bexec format error\b",
        ),
        consequence=True,
    ),
    Kind(
        "no_workdir",
        F,
        "The folder the command must run in cannot be entered: the codebase dir (ajetd runs "
        "every trial there; its script exits 126 without it) or a folder a `cd` in the launch "
        "command names was removed, moved, unmounted, or is not a folder or not readable.",
        "Restore or remount the folder (check exp_codebase_dir and the launch command's "
        "`cd`), then submit again.",
        _p(
            r"^\S+: (line \d+: )?cd: .*: (no such file or directory|not a directory|permission "
            r"denied)"
        ),
        consequence=True,
    ),
    Kind(
        "missing_file",
        F,
        "A dataset, checkpoint or data file the run reads does not exist.",
        "Fix the path (dataset, checkpoint, data file) in the config or create the file; relaunch.",
        _p(
            r"datasetnotfounderror",
            r"filenotfounderror",
            r"no such file or directory",
            r"couldn't find (a )?dataset script",
            # a checkpoint, or a file, that does not exist, said as a failure (an exception's
            # message, an error logged, a load that fails or aborts); not a resume's notice that
            # there is none yet, which the run goes on from: verl at every start from scratch
            # (`Checkpoint tracker file does not exist: .../latest_checkpointed_iteration.txt`,
            # then `Training from scratch`), slime's data buffer (`Checkpoint .../rollout/
            # global_dataset_state_dict_-1.pt does not exist.`)
            r"(error|exception|fail|fatal|cannot|can't|unable)[^\n]*\b(checkpoint|ckpt)s? "
            r"(file |dir(ectory)? |path )?.*(not found|does not exist|doesn't exist)",
            r"\b(checkpoint|ckpt)s? (file |dir(ectory)? |path )?.*"
            r"(not found|does not exist|doesn't exist)\b.*\b(abort\w*|exit\w*|fail\w*|error)\b",
            r"(dataset|data file|data path|data_path|train_files|val_files|parquet)\b.*"
            r"(not found|does not exist|doesn't exist|cannot be found)",
            r"(error|exception|fail|fatal|cannot|can't|unable)[^\n]*(file|path|directory) .*"
            r"(does not exist|doesn't exist|not found)",
            r"(file|path|directory) .*(does not exist|doesn't exist|not found)\b.*"
            r"\b(abort\w*|exit\w*|fail\w*|error)\b",
            r"unable to find '[^']+'",
            # shape: a checkpoint asked for (to resume, to load) that is not there, in the
            # loader's words (transformers' Trainer: `ValueError: Can't find a valid checkpoint
            # at /out/checkpoint-32500`, `No valid checkpoint found in output directory (...)`);
            # not a resume that goes on without one (`Could not find a checkpoint, training from
            # scratch`)
            Unless(
                (
                    r"\b(can'?t|cannot|could ?n[o']t|unable to) find "
                    r"(a |any )?(valid )?(checkpoint|ckpt)s?\b",
                ),
                r"(\bscratch\b|\bstart(ing)? (a )?(new|fresh)\b)",
            ),
            r"\bno valid checkpoint found in output directory\b",
            r"\[errno 2\]",
        ),
    ),
    Kind(
        "launch_error",
        F,
        "The launch script or the scheduler failed before (or around) the program: a cluster "
        "script's own [ERROR], srun/sbatch/salloc refusing or losing the job step.",
        "Read the launcher's message: the allocation (nodes, memory, GPUs, account), the "
        "container or the node named; fix the launch, then relaunch.",
        _p(
            # a script's own; not a logger's `[ERROR] 2025-10-29-...` nor `[ERROR] RUNTIME(pid,..)`,
            # nor another of CANN's modules logging under its name (`[ERROR] TBE Subprocess[
            # task_distribute] raise error[], main process disappeared!`, the Ascend kernel
            # compiler's workers at their parent's exit, verl#2012; `[ERROR] GE(...)`, `[ERROR]
            # ASCENDCL(...)`)
            r"^\[error\] (?!\d{4}-|\[|[a-z_]+\(\d+,|(tbe|ge|fe|ascendcl|hccl|hccp|drv|aicpu"
            r"|tefusion|tdt|slog|dvpp|profiling)\b)",
            r"^(srun|slurmstepd|sbatch|salloc|sacct|scontrol|pyxis|enroot)\s*:\s*error\s*:"
            r"(?!.*(exited with exit code|task \d+: (killed|terminated)))",
            r"^(srun|slurmstepd|sbatch|salloc)\s*:\s*error\s*:\s*(unable to|invalid|"
            r"\*\*\* job .* cancelled|.*node failure)",
            r"^error: (unable to allocate|job submit|batch job submission failed)",
            r"^(slurmstepd|srun): error: \*\*\* (step|job) .*cancelled",
            r"^error: job submission failed",
            r"\bjob submission failed\b",
            # shape: ssh itself failed (its exit status 255: the host could not be reached or
            # refused the login), however the launcher quotes the command (`'ssh ...'`,
            # `'['ssh ...']'`)
            r"command '\W*ssh\b.* returned non-zero exit status 255",
            # the same said by pdsh, which DeepSpeed's multi-node runner (and its autotuner) start
            # the ranks through: `pdsh@host: node: ssh exited with exit code 255`
            r"^pdsh@[^:\s]{1,200}: [^:\s]{1,200}: ssh exited with exit code 255\b",
            # shape: the container image the launch names cannot be pulled, in Docker's words
            # (`Error response from daemon: failed to resolve reference "...": ...: not found`,
            # `docker: Error response from daemon: pull access denied for ..., repository does
            # not exist`, `manifest unknown`), as pyxis's failed import is; not the daemon's
            # other refusals (a port already allocated, no GPU driver), which other kinds read
            r"\berror response from daemon: .{0,400}\b(failed to resolve reference|manifest "
            r"(unknown|for \S{1,300} not found)|pull access denied|repository does not exist)\b",
            r"orte daemon has unexpectedly failed",
            r"mpirun (noticed|was unable|detected)",
        ),
    ),
    Kind(
        "nan_loss",
        S,
        "The loss or gradients became NaN/Inf: training diverged.",
        "Lower the learning rate, check the reward function for NaN, enable gradient clipping.",
        _p(
            r"\b(loss|grad_norm|pg_loss|kl)\w*\s*[:=]\s*[-+]?(nan|inf)\b",
            r"loss (is|became) (nan|inf)",
            r"nan (loss|detected|values? (found|detected))",
            r"detected (nan|inf)",
            r"nan or inf found in",
            r"non-finite (loss|values)",
            r"returned nan values",
            r"grad[ _]norm\s*[:=]\s*[-+]?(nan|inf)\b",
            r"found nan in",
            r"(loss|grad_norm)[\w/.'\"]*(\s*[:=]\s*|\s+)[-+]?(nan|inf)\b",
            # shape: fp16's dynamic loss scaling out of room, every step overflowing to Inf/NaN
            # (DeepSpeed's `Current loss scale already at minimum - cannot decrease scale
            # anymore. Exiting run.`, fairseq's `Minimum loss scale reached (0.0001). Your loss
            # is probably exploding.`); not the overflow notices before it, which the scaler
            # recovers from at the start of any fp16 run (`OVERFLOW! Rank 0 Skipping step`)
            r"\bloss scale already at minimum\b",
            r"\bminimum loss scale reached\b",
        ),
    ),
)
UNKNOWN = Kind(
    "unknown_traceback",
    R,
    "A Python exception ajetd does not recognise ended the program.",
    "Read the exception and the frames above it in the log.",
    (),
    consequence=False,
)
BY_NAME = {kind.name: kind for kind in (*CATALOGUE, UNKNOWN)}

# Lower-case words of which every line that a kind's patterns match holds at least one. The
# scan finds these in whole chunks at C speed and runs the patterns only on those lines, so a
# new pattern must come with its trigger word here (tests check the corpus against both).
TRIGGER_WORDS: dict[str, tuple[str, ...]] = {
    "disk_full": (
        "no space left",
        "errno 28",
        "enospc",
        "quota exceeded",
        "errno 122",
        "disk space",
        "% full",
        "write failed",
        "failed writing",
        "write(): fd",
        "error writing",
        "writ",
        "fail to write",
        "outofdiskerror",
        "disk is full",
        "over capacity",
        "shared memory",
        "signal: bus error",
    ),
    "vllm_memory": (
        "free memory on device",
        "no available memory",
        "kv cache",
        "gpu_memory_utilization",
        "mem-fraction-static",
        "mem_fraction_static",
        "profiled value",
        "kv cache memory",
    ),
    "host_oom": (
        "outofmemoryerror",
        "low on memory",
        "memory usage threshold",
        "out of memory",
        "oom",
        "killed",
        "memoryerror",
        "bad_alloc",
        "cannot allocate memory",
        "sigkill",
        "exitcode",
        "rayoutofmemoryerror",
        "of the memory on node",
        "memory pressure",
        "oom_kill",
        "return code = -9",
        "已杀死",
        "exit code",
        "exit status",
        "return code",
        "returncode",
    ),
    "cuda_oom": (
        "out of memory",
        "outofmemoryerror",
        "cudaerrormemoryallocation",
        "cublas_status_alloc_failed",
        "cuda_error_out_of_memory",
        "curesult error",
        "memory_allocation_failure",
        "failed to allocate memory",
        "oom when allocating",
    ),
    "nccl_timeout": (
        "collective operation timeout",
        "before timing out",
        "nccl",
        "hccl",
        "rccl",
        "ei00",
        "socket ",
    ),
    "nccl_error": (
        "nccl",
        "nvls",
        "net : call",
        "net: call",
        "net/ib",
        "net/socket",
        "hccl",
        "ibv_",
        "got completion",
        "ei00",
        "cuda failure",
    ),
    "cuda_error": (
        "peer access",
        "peer-to-peer access",
        "peer to peer access",
        "illegal memory access",
        "device-side assert",
        "unspecified launch failure",
        "cublas_status",
        "cudnn",
        "no kernel image",
        "cudaerror",
        "cuda_error_",
        "misaligned address",
        "illegal instruction",
        "cuda error",
        "cuda driver error",
        "_launch_blocking",
        "xid",
        "triton",
        "outofresources",
        "cutlass",
        ".cu:",
        "curesult error",
        "hip error",
        "amd_serialize_kernel",
        "kernel launch",
        "launch kernel",
        "launching kernel",
        "launching the kernel",
        "launch the kernel",
        "call aclnn",
        "launch failed for",
        "any binary",
        "parse dynamic kernel config",
        "aicore",
        "aicpu",
        "aivec",
        "vector core",
        "acceleratorerror",
        "llvm error",
        "compute capability",
        "cuda runtime error",
        "thcudacheck fail",
    ),
    "segfault": (
        "segmentation fault",
        "sigsegv",
        "sigbus",
        "sigabrt",
        "fatal python error",
        "core dumped",
        "bus error",
        "caught signal",
        "exitcode",
        "segfault",
        "terminate called",
        "signal 11",
        "signal 7",
        "signal 6",
        "return code = -",
        "exit code",
        "exit status",
        "return code",
        "returncode",
    ),
    "port_in_use": (
        "in use",
        "errno 98",
        "errno 48",
        "eaddrinuse",
        "only one usage",
        "trying to use a port",
        "no available ports",
    ),
    "connection_refused": (
        "refused",
        "errno 111",
        "not up",
        "launch failed",
        "launched failed",
        "not ready",
        "did not become",
        "did not start",
        "didn't become",
        "didnt become",
        "didn't start",
        "didnt start",
        "never became",
        "never started",
        "failed to start",
        "failed to launch",
        "server to become",
        "server to start",
        "server to come up",
        "host='localhost'",
        "host='127.0.0.1'",
        "host='0.0.0.0'",
    ),
    "ray_cluster": (
        "ray processes",
        "ray subprocesses",
        "gcs",
        "running ray",
        "ray has not been started",
        "raysystemerror",
        "node_ip_address",
        "already running",
        "failed to register worker",
        "raylet",
        "ray agent",
        "retrying to connect",
        "ray client",
        "register_center_actor",
        "runtime env agent",
        "runtime_env_agent",
        "default ray cluster",
        "ray cluster",
        "ray instance",
        "ray head",
        "ray at",
        "died",
        "dying",
        "marked dead",
        "marked as dead",
        "nodediederror",
        "request failed with status code",
        "node to start",
        "timed out during startup",
    ),
    "ray_worker_died": (
        "actordiederror",
        "actor died",
        "rayactorerror",
        "worker exit type",
        "worker died",
        "workercrashederror",
        "process has died",
        "raytaskerror",
        "actor is already dead",
        "state: dead",
        "check failed",
        "dead",
        "ownerdiederror",
        "owner has exited",
    ),
    "vllm_engine_dead": (
        "enginedeaderror",
        "engine loop",
        "engine core initialization",
        "engine process failed",
        "enginecore",
        "vllm engine",
        "background loop has errored",
        "engine iteration",
        "engine background task",
        "_log_task_completion",
        "died unexpectedly",
        "died",
        "llmengine",
    ),
    "logger_error": (
        "wandb",
        "swanlab",
        "mlflow",
        "api_key not configured",
        "events_writer",
        "events.out.tfevent",
        "run initialization",
    ),
    "missing_model": (
        "not found for url",
        "repositorynotfounderror",
        "repository not found",
        "not a valid model identifier",
        "can't load",
        "does not appear to have a file named",
        "hfvalidationerror",
        "repo id must",
        "path_or_model_id",
        "entrynotfounderror",
        "no such file or directory",
        "invalid repository id",
        "not a local folder",
        "invalid folder path",
        "invalid model path",
        "invalid folder",
        "invalid model",
        "invalid repo",
    ),
    "auth": (
        "401",
        "403",
        "unauthorized",
        "gated",
        "restricted",
        "invalid",
        "incorrect api key",
        "authentication",
        "api key",
        "api_key",
    ),
    "network": (
        "too many requests",
        "proxyerror",
        "couldn't reach",
        "name or service not known",
        "name resolution",
        "nodename nor servname",
        "getaddrinfo failed",
        "network is unreachable",
        "no route to host",
        "connecttimeout",
        "readtimeout",
        "sslerror",
        "certificate_verify_failed",
        "could not resolve host",
        "failed to establish a new connection",
        "max retries exceeded",
        "couldn't connect to",
        "connection reset by peer",
        "connecterror",
        "remotedisconnected",
        "connection timed out",
        "connection aborted",
        "errno -2",
        "errno -3",
        "errno 101",
        "your connection",
        "internet connection",
        "couldn’t reach",
        "tcp client failed",
        "client socket has timed out",
        "connectfullmesh",
        "connect() timed out",
        "connect",
        "localentrynotfounderror",
        "cannot find the requested files",
        "cannot find the appropriate snapshot",
        "socket.timeout",
        "socket.gaierror",
        "socket.herror",
    ),
    "gpus_not_free": ("memory check failed",),
    "insufficient_gpus": (
        "gpu",
        "not available",
        "not visible",
        "resources may be insufficient",
        "nvidia driver",
        "invalid device ordinal",
        "invalid device",
        "cuda_visible_devices",
        "equal to the number",
        "visible devices",
        "available devices",
        "num_devices",
        "number of devices",
        "number of npus",
        "infer device type",
        "supported device",
        "required:",
        "placement groups to be ready",
        "devices exceed",
        "npus exceed",
    ),
    "config_error": (
        "device_map",
        "you can't train a model",
        "you cant train a model",
        "error: no such",
        "error: invalid value for",
        "error: missing argument",
        "error: missing option",
        "error: missing parameter",
        "error: got unexpected extra",
        "omegaconf",
        "configkeyerror",
        "configattributeerror",
        "not in struct",
        "could not override",
        "hydra",
        "missingmandatoryvalue",
        "missing mandatory value",
        "interpolationresolutionerror",
        "error merging",
        "yaml.",
        "error in call to target",
        "instantiationexception",
        "unrecognized arguments",
        "arguments are required",
        "error: argument",
        "divisible by",
        "validation error",
        "unsupported",
        "model architecture",
        "does not recognize this architecture",
        "invalid",
        "could not find '",
        "could not load '",
        "config search path",
        "error: unknown",
        "sharding strategy",
        "should be",
        "must be",
        "smaller than",
        "larger than",
        "reward function is not implemented",
        "bfloat16 is only supported",
        "to be greater",
        "to be less",
        "to be smaller",
        "not equal to",
        "greater than",
        "less than",
        "to be larger",
        "must not be",
        "than the max",
        "than max",
        "has to be",
        "needs to be",
        "not be",
        "notimplementederror",
        "does not support",
        "do not support",
        "doesn't support",
        "is required",
        "must be one of",
        "type=value_error",
        "maximum context length",
        "couldn't cast",
        "couldnt cast",
        "datasetgenerationcasterror",
        "data files must have the same columns",
        "column names don",
        "field names are",
        "field names aren't",
        "dataset",
        "out of bounds for size 0",
        "num_samples should be",
        "data loader",
        "dataloader",
        "chat_template",
        "chat template",
        "name too long",
        "errno 36",
        "path length",
        "required:",
        "requested ",
        "requires ",
        "insufficient cluster resources",
        "node types can fulfill",
        "be scheduled",
    ),
    "import_error": (
        "failed to import",
        "modulenotfounderror",
        "importerror",
        "no module named",
        "cannot import name",
        "undefined symbol",
        "cannot open shared object",
        "dll load failed",
        "glibc",
        "symbol not found",
        "dlopen",
    ),
    "build_error": (
        "runtimeenvsetuperror",
        "runtime env",
        "runtime_env",
        "runtimeenv",
        "environment found",
        "externally",
        "failed to build",
        "failed to install",
        "failed building wheel",
        "subprocess-exited-with-error",
        "building wheel",
        "no solution found",
        "resolutionimpossible",
        "could not find a version",
        "no matching distribution",
        "could not compile",
        "cmake error",
        "nvcc fatal",
        "failed to",
        "fatal error",
        "error:",
        "compilation terminated",
        "ninja",
        "compiling objects",
        "building extension",
        "errored out",
        "metadata-generation-failed",
        "did not run successfully",
        "venv",
        "virtual env",
        "cmake",
        "configuring incomplete",
        "did not complete successfully",
        "analysis of target",
        "error loading package",
        "make: ***",
        "]: ***",
        "optional-dependencies",
        "build stopped",
        "build aborted",
        "build failed",
        "build terminated",
        "build did not complete",
        "compilation stopped",
        "compilation aborted",
        "compilation failed",
        "compilation did not complete",
        "pyproject_hooks",
        "pep517",
        "build_meta.py",
        "cpp_extension.py",
        "ld: cannot find",
        "collect2",
        "command '",
    ),
    "command_not_found": (
        "command not found",
        "not found",
        "no such file or directory",
        "required file not found",
    ),
    "not_executable": (
        "permission denied",
        "is a directory",
        "bad interpreter",
        "cannot execute binary file",
        "exec format error",
    ),
    "no_workdir": ("cd: ",),
    "missing_file": (
        "datasetnotfounderror",
        "filenotfounderror",
        "no such file or directory",
        "dataset script",
        "not found",
        "does not exist",
        "doesn't exist",
        "cannot be found",
        "unable to find",
        "errno 2]",
        "find a checkpoint",
        "find a ckpt",
        "find a valid",
        "find any checkpoint",
        "find any ckpt",
        "find any valid",
        "find checkpoint",
        "find ckpt",
        "find valid",
        "valid checkpoint found",
    ),
    "launch_error": (
        "[error]",
        "error:",
        "error :",
        "cancelled",
        "job submission failed",
        "ssh ",
        "orte daemon",
        "mpirun",
        "ssh exited with exit code",
        "error response from daemon",
    ),
    "nan_loss": (
        "nan",
        "non-finite",
        ":inf",
        "= inf",
        ": inf",
        "=inf",
        "loss scale already at minimum",
        "minimum loss scale reached",
    ),
    "unknown_traceback": ("traceback (most recent call last)",),
}
# Words that an exception line, a wrapped exception or a launcher's error line holds whatever
# it says (logshape.EXCEPTION_LINE): such a line is read even when no kind's word is in it.
SHAPE_WORDS: tuple[bytes, ...] = (
    b"error:",
    b"error(",
    b"error\n",
    b"exception:",
    b"exception(",
    b"exception\n",
    b"exit:",
    b"interrupt:",
    b"fault:",
    b"failure:",
    b"timeout:",
    b"killed:",
    b"stopiteration",
    b"assertionerror",
    b"[error]",
    # C++'s message of an exception nothing caught (`what():  ...`, after `terminate called
    # after throwing an instance of ...`), and c10's report of where a C++ exception was raised
    # (`Exception raised from X at file.cpp:12 (most recent call first):`)
    b"what():",
    b"exception raised from ",
    # a traceback's frame (`File "x.py", line 3, in f`): a paste may begin below the header
    b'", line ',
    # Python's report that it ignored an exception, above the traceback it prints
    # (`Exception ignored in: <function X.__del__ ...>`): that traceback is no finding
    b"exception ignored",
)
TRIGGERS: tuple[bytes, ...] = tuple(
    sorted({w.encode() for ws in TRIGGER_WORDS.values() for w in ws})
)


_WORD_KINDS: dict[bytes, frozenset[int]] = {
    word: frozenset(i for i, k in enumerate(CATALOGUE) if word.decode() in TRIGGER_WORDS[k.name])
    for word in TRIGGERS
}

# An automaton's words (`word_search`): the trigger words, then the shape words, whose
# indexes name no kind here
WORDS: tuple[bytes, ...] = (*TRIGGERS, *SHAPE_WORDS)
_KINDS_OF_INDEX = (
    *(_WORD_KINDS[word] for word in TRIGGERS),
    *(frozenset[int]() for _ in SHAPE_WORDS),
)

# Trigger words whose kinds never name a digit: a line holding only these says the same with
# any digits in it, so the scan may remember it by its digit-blind form (all digits as `0`).
DIGIT_BLIND: frozenset[bytes] = frozenset(
    word
    for word, kinds in _WORD_KINDS.items()
    if not any(c.isdigit() for c in word.decode())
    and not any(re.search("[0-9]", p.pattern) for i in kinds for p in CATALOGUE[i].patterns)
)


# Every word of `WORDS` in a text in one linear pass (Aho-Corasick, in Rust): a read of new
# output finds its lines to classify with it (`stream`), and a line read without them (a
# traceback's frames and source lines) its candidate kinds: testing each kind's words one by
# one cost ~420 substring searches a line (`ajetd diagnose` read a traceback-heavy log at
# 0.6 MB/s). One automaton over the same words serves both: it was built twice.
_WORD_SEARCH = BytesAhoCorasick(list(WORDS), matchkind=MatchKind.Standard)
# A DFA is a third faster over a long text than the NFA above (the search 0.29 -> 0.20 s for
# 64 MiB, docs/benchmarks.md "The scan's own time"), but holds 2.1 MiB against 0.2 and takes
# 4 ms to build: it is built at the first read that long (a flood of output, a whole log read
# at a trial's end or by `ajetd diagnose`), not at import. The quiet runs' reads, a few lines
# each, are as quick in either (0.5-0.6 us for a line); a daemon that never reads a long block
# keeps 2 MiB less (issue 15: RSS at 100 quiet runs).
DFA_FROM_BYTES = 64 * 1024


def word_search(size: int) -> BytesAhoCorasick:
    """The automaton over `WORDS` for a text of `size` bytes: the same matches from either."""
    return _WORD_SEARCH if size < DFA_FROM_BYTES else _word_dfa()


@cache
def _word_dfa() -> BytesAhoCorasick:
    return BytesAhoCorasick(
        list(WORDS), matchkind=MatchKind.Standard, implementation=Implementation.DFA
    )


def candidates(lowered: str, words: frozenset[bytes] | None = None) -> list[Kind]:
    """The kinds, in catalogue order, whose trigger words occur in a lower-cased line: the only
    ones whose patterns can match it. `words`, when the caller already found them, saves the
    search."""
    found: set[int] = set()
    if words is None:
        # a word occurs in the text exactly when its UTF-8 occurs in the text's (UTF-8 never
        # matches across a character's bytes; surrogatepass: undecodable bytes kept as such)
        text = lowered.encode("utf-8", "surrogatepass")
        for index in _WORD_SEARCH.find_matches_as_indexes(text, overlapping=True):
            found |= _KINDS_OF_INDEX[index[0]]
    else:
        for word in words:
            found |= _WORD_KINDS.get(word, frozenset())
    return [CATALOGUE[i] for i in sorted(found)]
