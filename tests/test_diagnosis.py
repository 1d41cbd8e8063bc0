"""Diagnosis over a corpus: several real-world phrasings per kind, from many library versions."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.diagnosis.catalogue import (
    BY_NAME,
    CATALOGUE,
    DFA_FROM_BYTES,
    TRIGGER_WORDS,
    WORDS,
    candidates,
    word_search,
)
from ajetd.diagnosis.findings import Diagnoser
from ajetd.diagnosis.scan import read_chunks
from ajetd.diagnosis.stream import StreamDiagnoser, diagnose_chunks, diagnose_text
from ajetd.diagnosis.text import decode_line
from conftest import python_says

FIXTURES = Path(__file__).parent / "data" / "logs"

CORPUS: dict[str, list[str]] = {
    "cuda_oom": [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB",
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 14.21 GiB already allocated)",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.53 GiB",
        "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported",
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 12.00GiB.",
        # diag98: TensorFlow's allocator out of device memory
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[16,112,112,147] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
        "ResourceExhaustedError (see above for traceback): OOM when allocating tensor of shape [563354,256] and type float",
    ],
    "host_oom": [
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
        "(raylet) [2024-05-01 10:00:00] Memory on the node (IP: 10.0.0.1) where the task was running was 240.1GB / 251.7GB (0.95), which exceeds the memory usage threshold of 0.95.",
        "Killed",
        "run.sh: line 12: 48213 Killed                  python -m ajet.launcher --conf x.yaml",
        "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) local_rank: 0 (pid: 123)",
        "MemoryError: Unable to allocate 37.3 GiB for an array with shape (100000, 50000)",
        # an OOM kill said as an event, by the kernel, Slurm, systemd, Kubernetes and Docker
        "[12345.678] python3 invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0",
        "[12345.679] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,task=python,pid=7899",
        "Memory cgroup out of memory: Killed process 1234 (python) total-vm:1kB, anon-rss:1kB",
        "[12345.680] oom_reaper: reaped process 1234 (python3), now anon-rss:0kB, file-rss:0kB",
        "slurmstepd: error: Detected 1 oom-kill event(s) in step 1234.batch cgroup. Some of your processes may have been killed by the cgroup out-of-memory handler.",
        "slurmstepd: error: Detected 2 oom_kill events in StepId=9178265.0.",
        "trainer.service: Failed with result 'oom-kill'.",
        "A process of this unit has been killed by the OOM killer.",
        "      Reason:       OOMKilled",
        'State: {"Status": "exited", "OOMKilled": true}',
        "pod trainer-0 was OOMKilled",
        # diag98: a child SIGKILL ended (the OOM killer); TensorFlow out of host memory
        "RuntimeError: DataLoader worker (pid 19597) is killed by signal: Killed.",
        "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL",
        "ResourceExhaustedError: OOM when allocating tensor with shape[4096,4096] and type float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu",
    ],
    "vllm_memory": [
        "ValueError: Free memory on device (7.34/139.72 GiB) on startup is less than desired GPU memory utilization (0.9, 125.75 GiB).",
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.",
        "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (21984). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
    ],
    "vllm_engine_dead": [
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
        "vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.",
        "[2025-03-10T15:07:20Z] ERROR 03-10 08:07:20 [core.py:302] EngineCore hit an exception: Traceback (most recent call last):",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ],
    "ray_cluster": [
        "[2025-03-13 09:40:40,475 W 1760803 1760803] gcs_rpc_client.h:148: Failed to connect to GCS at address 192.168.12.104:6379 within 5 seconds.",
        "ConnectionError: Could not find any running Ray instance. Please specify the one to connect to by setting `--address` flag or `RAY_ADDRESS` environment variable.",
        "RuntimeError: Failed to get cluster ID from GCS server: TimedOut",
        "ConnectionError: Ray is trying to start at 10.0.0.1:6379, but is already running at 10.0.0.1:6379.",
        # diag98 B2: the GCS not reached again; a node whose Ray processes never came up
        "[2021-04-18 06:54:54,934 C 756 756] service_based_gcs_client.cc:229: Couldn't reconnect to GCS server. The last attempted GCS server address was 10.42.0.44:43507",
        "TimeoutError: Timed out after 60 seconds while waiting for node to startup. Did not find socket name tcp://127.0.0.1:65429 in the list of object store socket names.",
        "Exception: The current node timed out during startup. This could happen because some of the Ray processes failed to startup.",
    ],
    "ray_worker_died": [
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
        "ray.exceptions.RayActorError: The actor died because of an error raised in its creation task",
        "A worker died or was killed while executing a task by an unexpected system error.",
        "Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2.",
        "(raylet) A worker died or was killed while executing a task by an unexpected system error. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. Some common causes include: (1) the process was killed by the OOM killer due to high memory usage, (2) ray stop --force was called",
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage.",
    ],
    "nccl_timeout": [
        "[rank1]:[E314 14:33:45.172185860 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600009 milliseconds before timing out.",
        "[E ProcessGroupNCCL.cpp:475] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800472 milliseconds before timing out.",
        "RuntimeError: NCCL communicator timed out after 600 seconds",
    ],
    "nccl_error": [
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5",
        "RuntimeError: NCCL Error 3: internal error",
        "ncclInternalError: Internal check failed.",
        "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\nncclUnhandledCudaError: Call to CUDA function failed.",
        "(RayWorkerWrapper pid=67451, ip=10.1.0.7) ERROR 06-25 15:28:30 worker_base.py:148] RuntimeError: NCCL Error 2: unhandled system error (run with NCCL_DEBUG=INFO for details)",
        "misc/nvmlwrap.cc:183 NCCL WARN nvmlDeviceGetHandleByPciBusId() failed; transport/nvls.cc:598 NCCL WARN Cuda failure 'out of memory'",
    ],
    "port_in_use": [
        "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 10086): address already in use",
        "OSError: [Errno 98] Address already in use",
        "RuntimeError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use",
        "OSError: [Errno 48] Address already in use",
    ],
    "network": [
        "ConnectionError: Couldn't reach 'nielsr/funsd' on the Hub (ProxyError)",
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded with url: /api/models (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution'))",
        "httpx.ConnectError: [Errno -2] Name or service not known",
        "requests.exceptions.SSLError: HTTPSConnectionPool(host='api.openai.com', port=443): Max retries exceeded (Caused by SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED]')))",
        "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it in the cached files",
        "urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='cdn-lfs.hf.co', port=443): Read timed out.",
        "OSError: [Errno 101] Network is unreachable",
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.swanlab.cn', port=443): Max retries exceeded with url: /api/login/api_key (Caused by NameResolutionError(\"<urllib3.connection.HTTPSConnection object at 0x7fb389d70d60>: Failed to resolve 'api.swanlab.cn' ([Errno -3] Temporary failure in name resolution)\"))",
        # diag97: Python's lower-case socket exceptions; huggingface_hub's file neither fetched
        # nor cached (not an entry a repository lacks, missing_model's)
        "socket.timeout: timed out",
        "socket.gaierror: [Errno -5] No address associated with hostname",
        "huggingface_hub.errors.LocalEntryNotFoundError: An error happened while trying to locate the files on the Hub and we cannot find the appropriate snapshot folder for the specified revision on the local disk.",
        "huggingface_hub.utils._errors.LocalEntryNotFoundError: Cannot find the requested files in the disk cache and outgoing traffic has been disabled.",
    ],
    "connection_refused": [
        "requests.exceptions.ConnectionError: HTTPConnectionPool(host='127.0.0.1', port=10086): Max retries exceeded with url: /health (Caused by NewConnectionError(': Failed to establish a new connection: [Errno 111] Connection refused'))",
        "httpx.ConnectError: [Errno 111] Connection refused",
        "ConnectionRefusedError: [Errno 111] Connection refused",
        "openai.APIConnectionError: Connection error. ... connect ECONNREFUSED 127.0.0.1:8000",
    ],
    "auth": [
        "huggingface_hub.errors.GatedRepoError: 403 Client Error. Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json.",
        "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/api/whoami-v2",
        "openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided: sk-xxxx'}}",
        "ValueError: Invalid token passed!",
        "dashscope: InvalidApiKey: Invalid API-key provided.",
    ],
    "logger_error": [
        "wandb: ERROR api_key not configured (no-tty). call wandb.login(key=[your_api_key])",
        "wandb.errors.UsageError: api_key not configured (no-tty). call wandb.login(key=[your_api_key])",
        "swanlab.error.KeyFileError: api key not configured (no-tty), call `swanlab.login(api_key=[your_api_key])`",
        "mlflow.exceptions.MlflowException: API request to endpoint /api/2.0/mlflow/runs/create failed with error code 403",
        "wandb: Network error (ConnectionError), entering retry loop.",
        "(TaskRunner pid=1962988) swanlab: swanlab api error, status code: 401, reason: Unauthorized",
        "swanlab: swanlab api error ('Trace id: mh0g73vh1nlvdo4r', 'POST https://api.swanlab.cn/api/house/metrics', '401 Authorization Required')",
        '  File "/usr/local/lib/python3.11/site-packages/swift/arguments/sft_args.py", line 76, in _init_swanlab\n    swanlab.login(self.swanlab_token)\nswanlab.error.AuthenticationError: invalid api key',
    ],
    "missing_model": [
        "OSError: /mnt/models/Qwen2.5-7B-Instruct is not a local folder and is not a valid model identifier listed on 'https://huggingface.co/models'",
        "huggingface_hub.errors.RepositoryNotFoundError: 401 Client Error. Repository Not Found for url: https://huggingface.co/Qwen/Qwen9-7B/resolve/main/config.json.",
        "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/mnt/data/model/'. Use `repo_type` argument if needed.",
        "OSError: /data/ckpt does not appear to have a file named config.json.",
        "FileNotFoundError: [Errno 2] No such file or directory: '/mnt/models/qwen/config.json'",
        "OSError: Can't load tokenizer for '/models/llama'. If you were trying to load it from 'https://huggingface.co/models', make sure you don't have a local directory with the same name.",
    ],
    "config_error": [
        "omegaconf.errors.ConfigAttributeError: Key 'rollout_n' is not in struct",
        "hydra.errors.ConfigCompositionException: Could not override 'actor_rollout_ref.rollout.gpu_memory_utilisation'.",
        "omegaconf.errors.MissingMandatoryValue: Missing mandatory value: data.train_files",
        "AssertionError: real_train_batch_size (256) must be divisible by minimal possible batch size (6)",
        "yaml.scanner.ScannerError: mapping values are not allowed here",
        "launcher.py: error: unrecognized arguments: --config x.yaml",
        "omegaconf.errors.InterpolationResolutionError: Interpolation key 'trainer.n_gpus' not found",
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for MasterConfig",
        "Error executing job with overrides: ['train.batch_size=128']\nTraceback (most recent call last):\n  File \"/x/main.py\", line 130, in main\n    pred = int(cfg.train.pred_delta)\nomegaconf.errors.ConfigAttributeError: Key 'pred_delta' is not in struct\n    full_key: train.pred_delta\n    object_type=dict\n\nSet the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.",
        "Could not override 'reward_model.reward_kwargs.n_samples_per_prompt'.\nTo append to your config use +reward_model.reward_kwargs.n_samples_per_prompt=32\nKey 'reward_kwargs' is not in struct",
        # diag97: the run's data not what it is read as (its schema, its columns, empty), or a
        # chat template the tokenizer lacks
        "datasets.table.CastError: Couldn't cast",
        "TypeError: Couldn't cast array of type struct<a: int64> to {'a': Value(dtype='string')}",
        "datasets.exceptions.DatasetGenerationCastError: An error occurred while generating the dataset",
        "pyarrow.lib.ArrowInvalid: Target schema's field names are not matching the table's field names: ['qry', 'pos'], ['pos', 'qry']",
        "ValueError: Can only automatically infer lengths for datasets whose items are dictionaries with an 'input_ids' key.",
        "ValueError: Column name ['system'] not in the dataset. Current columns in the dataset: ['prompt', 'answer'].",
        "ValueError: The train dataset does not contain a 'messages' or 'text' column",
        "IndexError: Invalid key: 0 is out of bounds for size 0",
        "ValueError: num_samples should be a positive integer value, but got num_samples=0",
        "ValueError: The training dataset is empty after filtering.",
        "ValueError: Cannot use chat template functions because tokenizer.chat_template is not set and no template argument was passed!",
        "ValueError: As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat template if the tokenizer does not define one.",
        "ValueError: chat_template choice is tokenizer_default but tokenizer's chat_template is null.",
        # diag98: a model placed by a device map, refused by the distributed trainer
        "ValueError: You can't train a model that has been loaded with `device_map='auto'` in any distributed mode. Please rerun your script specifying `--num_processes=1` or by launching with `python {{myscript.py}}`.",
        "ValueError: DeepSpeed Zero-3 is not compatible with `low_cpu_mem_usage=True` or with passing a `device_map`.",
        "ValueError: DeepSpeed is not compatible with `device_map`. n_gpu: 8, local_world_size: 1.",
        "ValueError: You can't train a model that has been loaded in 8-bit precision on a different device than the one you're training on.",
    ],
    "import_error": [
        "ModuleNotFoundError: No module named 'ajet'",
        "ImportError: cannot import name 'LLM' from 'vllm' (unknown location)",
        "ImportError: /venv/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi",
        "OSError: libcudart.so.12: cannot open shared object file: No such file or directory",
    ],
    "build_error": [
        "csrc/ops.cu:12:10: fatal error: cuda_runtime_api.h: No such file or directory",
        "ninja: build stopped: subcommand failed.",
        "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.",
        "RuntimeError: Error compiling objects for extension",
        "error: metadata-generation-failed",
        "error: subprocess-exited-with-error",
        "× Failed to build `flash-attn==2.7.4.post1`",
        "  × No solution found when resolving dependencies:",
        "ERROR: Could not find a version that satisfies the requirement vllm==0.99.0 (from versions: 0.8.5)",
        "ERROR: No matching distribution found for torch==2.99",
        "ERROR: Failed building wheel for deepspeed",
    ],
    "gpus_not_free": [  # AgentJet's launcher (ajet/launcher.py check_avail_gpu)
        "RuntimeError: GPU memory check failed: all GPUs must have >= 95% free. Violations: GPU 4 (NVIDIA H100 80GB HBM3): free_ratio=0.129 < 0.950",
    ],
    "insufficient_gpus": [
        "ValueError: Total available GPUs 4 is less than total desired GPUs 8.",
        "RuntimeError: No CUDA GPUs are available",
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver",
        "RuntimeError: CUDA error: invalid device ordinal",
        "nemo_rl.distributed.virtual_cluster.ResourceInsufficientError: Maximum number of retries reached (6). Cluster resources may be insufficient or cluster itself is highly unstable. Please check your cluster configuration and your cluster logs.",
        "Warning: The following resource request cannot be scheduled right now: {'GPU': 1.0, 'CPU': 1.0}.",
        # diag97: a device named by its index that is not there
        "ValueError: The requested device for vllm (cuda:1) is not available. You are likely using vLLM without restricting the number of GPUs for training.",
        "RuntimeError: npu:3 is not available",
    ],
    "disk_full": [
        "OSError: [Errno 28] No space left on device: '/ckpt/global_step_100'",
        "RuntimeError: [enforce fail at inline_container.cc:595] . unexpected pos 123 vs 456 ... No space left on device",
        "OSError: [Errno 122] Disk quota exceeded",
        # diag98: /dev/shm full, as PyTorch's DataLoader says it
        "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
        "RuntimeError: DataLoader worker (pid 37) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.",
    ],
    "cuda_error": [
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "torch.AcceleratorError: CUDA error: device-side assert triggered",
        "RuntimeError: CUDA error: unspecified launch failure",
        "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle, opa, opb, m, n, k)`",
        "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR",
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
    ],
    "segfault": [
        "Segmentation fault (core dumped)",
        "Fatal Python error: Segmentation fault",
        "*** SIGSEGV received at time=1709028495 on cpu 22 ***",
        "Bus error (core dumped)",
        "  traceback : Signal 11 (SIGSEGV) received by PID 3304209",
        "terminate called after throwing an instance of 'c10::Error'",
    ],
    "missing_file": [
        "FileNotFoundError: [Errno 2] No such file or directory: '/data/gsm8k/train.parquet'",
        "datasets.exceptions.DatasetNotFoundError: Dataset 'openai/gsm8kk' doesn't exist on the Hub or cannot be accessed.",
        "ValueError: checkpoint not found at /ckpt/global_step_100",
        "AssertionError: Checkpoint directory /results/step_50 does not exist",
        "FileNotFoundError: Unable to find '/data/train.jsonl'",
        # diag98: a checkpoint asked for that is not there
        "ValueError: Can't find a valid checkpoint at /finetune-sft/outputs-sft-v2/checkpoint-32500",
        "ValueError: No valid checkpoint found in output directory (/out)",
    ],
    "launch_error": [
        "[ERROR] Background srun 'ray-worker-1' died (pid=123456). Attempting to exit.",
        "srun: error: Unable to create step for job 1853845: Memory required by task is not available",
        "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified",
        "slurmstepd: error: pyxis: couldn't start container",
        "srun: error: Unable to allocate resources: Requested node configuration is not available",
    ],
    "nan_loss": [
        "(TaskRunner pid=123) step:12 - actor/pg_loss:nan - actor/grad_norm:nan - critic/score/mean:0.1",
        "ValueError: Loss is NaN, stopping training",
        "RuntimeError: Function 'LogSoftmaxBackward0' returned nan values in its 0th output. detected NaN",
        "train loss: nan at step 40",
        # diag98: fp16's loss scaling out of room
        "Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.",
        "FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding. Try lowering the learning rate, using gradient clipping or increasing the batch size.",
    ],
    "command_not_found": [
        "bash: line 1: ajet: command not found",
        "run.sh: line 4: torchrun: command not found",
        "sh: 1: uv: not found",
        "bash: line 1: ./scripts/train_grpo.sh: No such file or directory",
    ],
    "not_executable": [
        "bash: line 1: ./scripts/train_grpo.sh: Permission denied",
        "bash: ./train.sh: /bin/bash^M: bad interpreter: No such file or directory",
        "bash: ./vllm-arm64: cannot execute binary file: Exec format error",
    ],
    "no_workdir": [
        "/home/me/.ajetd/runs/k3x9az/trial-1.sh: line 20: cd: /data/agentjet: No such file or directory",
        "bash: line 1: cd: /mnt/nfs/verl: Permission denied",
    ],
}


@pytest.mark.parametrize(("kind", "text"), [(k, t) for k, ts in CORPUS.items() for t in ts])
def test_each_phrasing_is_recognised(kind: str, text: str) -> None:
    findings = diagnose_text(text)
    assert findings, text
    assert findings[0].kind == kind, [f.kind for f in findings]


def test_every_kind_is_in_the_corpus() -> None:
    assert set(CORPUS) | {"unknown_traceback"} == set(BY_NAME) == set(TRIGGER_WORDS)


@pytest.mark.parametrize(("kind", "text"), [(k, t) for k, ts in CORPUS.items() for t in ts])
def test_each_phrasing_holds_a_trigger_word_of_its_kind(kind: str, text: str) -> None:
    assert any(word in text.lower() for word in TRIGGER_WORDS[kind])


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("cuda_oom_torch_compute_log_prob.log", "cuda_oom"),
        ("nccl_watchdog_timeout.log", "nccl_timeout"),
        ("network_proxy_error.log", "network"),
        ("port_in_use_uvicorn_bind.log", "port_in_use"),
        ("ray_gcs_connect_failed.log", "ray_cluster"),
        ("vllm_gpu_memory_insufficient_at_startup.log", "vllm_memory"),
    ],
)
def test_real_logs(name: str, kind: str) -> None:
    text = (FIXTURES / name).read_text().split("\n", 1)[1]  # line 1 names the source thread
    path = Path(f"/tmp/ajetd-diag-{name}")
    path.write_text(text)
    findings = diagnose_chunks(read_chunks(str(path)))
    assert findings[0].kind == kind


def test_root_cause_comes_before_the_cascade() -> None:
    text = """(WorkerDict pid=1) Traceback (most recent call last):
(WorkerDict pid=1)   File "/verl/workers/fsdp_workers.py", line 782, in compute_log_prob
(WorkerDict pid=1)     output = self.actor.compute_log_prob(data=data)
(WorkerDict pid=1) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 13.91 GiB.
ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
Traceback (most recent call last):
  File "main.py", line 3, in <module>
RuntimeError: something unrecognised happened"""
    findings = diagnose_text(text)
    # issue 12: echoes a kind explains (a dead Ray actor) before an exception no kind explains
    assert [f.kind for f in findings] == ["cuda_oom", "ray_worker_died", "unknown_traceback"]
    assert findings[0].line == 4 and findings[2].evidence.startswith("RuntimeError")


def test_unknown_traceback_and_benign_exits() -> None:
    tb = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n    f()\n'
    found = diagnose_text(tb + "ZeroDivisionError: division by zero")
    assert [f.kind for f in found] == ["unknown_traceback"]
    assert diagnose_text(tb + "KeyboardInterrupt") == []


def test_vllm_prefixed_traceback_is_followed() -> None:
    text = """(EngineCore_0 pid=9) ERROR 09-03 11:03:37 [core.py:712] Traceback (most recent call last):
(EngineCore_0 pid=9) ERROR 09-03 11:03:37 [core.py:712]   File "/x/gpu_worker.py", line 180, in init_device
(EngineCore_0 pid=9) ERROR 09-03 11:03:37 [core.py:712] KeyError: 'weird'"""
    [finding] = diagnose_text(text)
    assert finding.kind == "unknown_traceback" and finding.evidence == "KeyError: 'weird'"


def test_noise_is_not_a_finding() -> None:
    text = """Training Progress:  45%|████▌     | 45/100 [10:00<12:13, 13.3s/it]
(TaskRunner pid=5) step:45 - actor/pg_loss:0.012 - critic/score/mean:0.61 - response_length/mean:512
INFO 09-03 11:03:37 [gpu_model_runner.py:1200] Model loading took 14.99 GiB and 5.1 seconds
(raylet) WARNING: 4 PYTHON worker processes have been started on node ... [repeated 3x across cluster]
wandb: Tracking run with wandb version 0.17.0
wandb: Syncing run exp-401
swanlab: Tracking run with swanlab version 0.5.6
wandb: Currently logged in as: coolrr (coolrr-team). Use `wandb login --relogin` to force relogin
Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.
NCCL INFO Channel 00/24 : 0 1 2 3
Saving checkpoint to /ckpt/global_step_40"""
    assert diagnose_text(text) == []


def test_what_a_run_goes_on_from_is_not_a_failure() -> None:
    """diag98's benign classes: fp16's loss scaler backing off at the start, a setting a
    library turns off for itself, a resume that finds no checkpoint and starts afresh."""
    text = """[2024-07-17 19:44:06,829] [INFO] [loss_scaler.py:190:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, but hysteresis is 2. Reducing hysteresis to 1
[2021-02-04 15:06:19,825] [INFO] [stage2.py:1357:step] [deepscale] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 134217728.0, reducing to 67108864.0
Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0
`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`.
Could not find a checkpoint in /ckpt, training from scratch
Some weights of BertForMaskedLM were not initialized from the model checkpoint at bert-base-cased and are newly initialized: ['cls.predictions.decoder.bias']"""
    assert diagnose_text(text) == []


def test_an_echo_that_points_to_its_cause_above_ranks_after_it() -> None:
    """vLLM's `Engine core initialization failed. See root cause above.`: an exception no kind
    explains printed above it is the root cause (SkyRL#1343); alone, the echo is the finding."""
    cause = "(EngineCore_DP0 pid=12) ERROR 03-18 23:23:32 [core.py:1006] AssertionError: The env var, X, is not permitted because it is reserved for the internal use."
    echo = "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"
    assert [f.kind for f in diagnose_text(cause + "\n" + echo)] == [
        "unknown_traceback",
        "vllm_engine_dead",
    ]
    assert [f.kind for f in diagnose_text(echo)] == ["vllm_engine_dead"]
    dead = "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause."
    assert next(f.kind for f in diagnose_text(cause + "\n" + dead)) == "unknown_traceback"


def test_an_mpi_rank_tag_is_dress() -> None:
    """Open MPI's `--tag-output` and horovodrun's rank tags are a line's dress: a warning under
    them is still a warning (UNITER#28: no science finding from a TensorBoard notice)."""
    [finding] = diagnose_text("[1,0]<stdout>:Warning: NaN or Inf found in input tensor.")
    assert (finding.kind, finding.severity) == ("nan_loss", "warning")
    [oom] = diagnose_text("[0]<stderr>:torch.OutOfMemoryError: CUDA out of memory.")
    assert (oom.kind, oom.evidence) == ("cuda_oom", "torch.OutOfMemoryError: CUDA out of memory.")


def test_stream_handles_terminal_bytes_cut_anywhere() -> None:
    data = (
        b"\x1b[31mred\x1b[0m line\r\n10%|\xe2\x96\x88 \r50%|\xe2\x96\x88\xe2\x96\x88 \r\n"
        b"bad \xff byte\n"
        b"(VllmGenerationWorker pid=331005, ip=10.0.0.2) \x1b[1mCUDA out of memory\x1b[0m"
        b" [repeated 7x across cluster]\n"
        b'Traceback (most recent call last):\n  File "x.py", line 1\n'
        b"Zero\xc3\xa9Error: partial"
    )
    for step in (1, 7, 64, len(data)):
        stream = StreamDiagnoser()
        for i in range(0, len(data), step):  # cut anywhere, even inside a UTF-8 sequence
            stream.feed(data[i : i + step])
        findings = stream.close()
        assert [(f.kind, f.line) for f in findings] == [("cuda_oom", 4), ("unknown_traceback", 7)]
        assert findings[0].evidence == "CUDA out of memory"
        assert findings[1].evidence == "Zero\u00e9Error: partial"


def test_a_line_remembered_as_quiet_never_hides_a_finding() -> None:
    """Lines equal to a quiet one but for digits are skipped only where no candidate kind
    reads digits: `exitcode: -9` after `exitcode: 1`, HTTP 401 after HTTP 500, and a
    repeated finding still count; repeated NCCL chatter does not."""
    quiet_then_loud = [
        ("worker exitcode: 1", "worker exitcode: -9", "host_oom"),
        (
            "HTTPError: HTTP Error 500: api_key check",
            "HTTPError: HTTP Error 401: api_key check",
            "auth",
        ),
        ("OSError: [Errno 27] File too large", "OSError: [Errno 28] No space left", "disk_full"),
    ]
    for quiet, loud, kind in quiet_then_loud:
        text = "\n".join([quiet] * 3 + [loud, quiet, loud])
        found = {f.kind: f for f in diagnose_text(text)}
        assert kind in found and found[kind].line == 4, (quiet, loud, found)
    chatter = "\n".join(f"NCCL INFO Channel {i:02d}/24 : 0 1 2 3" for i in range(50))
    found = diagnose_text(
        chatter + "\nNCCL error: unhandled system error (run with NCCL_DEBUG=INFO)"
    )
    assert [(f.kind, f.line, f.count) for f in found] == [("nccl_error", 51, 1)]


@pytest.mark.parametrize("text", [t for ts in CORPUS.values() for t in ts])
def test_remembering_quiet_lines_changes_no_finding(text: str) -> None:
    """Each corpus phrasing between its digit twins (digits all 0, or all 7) gives the
    same findings through the scan, which remembers quiet lines, as line by line."""
    twins = [text.translate(str.maketrans("0123456789", d * 10)) for d in "07"]
    whole = "\n".join([twins[0], text, twins[1], text, twins[0]])
    reference = Diagnoser()
    reference.feed(enumerate((decode_line(x.encode()) for x in whole.split("\n")), 1))
    assert diagnose_text(whole) == reference.findings()


def test_traceback_followed_across_chunks() -> None:
    stream = StreamDiagnoser()
    stream.feed(b'noise\nTraceback (most recent call last):\n  File "a.py"')
    stream.feed(b", line 2\n    boom()\n")
    stream.feed(b"ValueError: odd\nmore noise\n")
    [finding] = stream.close()
    assert (finding.kind, finding.line, finding.evidence) == (
        "unknown_traceback",
        5,
        "ValueError: odd",
    )


def test_diagnose_command(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    log = tmp_path / "x.log"
    log.write_text((FIXTURES / "ray_gcs_connect_failed.log").read_text())
    out = subprocess.run(
        [sys.executable, "-m", "ajetd", "diagnose", str(log), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    data = json.loads(out.stdout)
    assert out.returncode == 0 and data[0]["kind"] == "ray_cluster"
    assert set(data[0]) == {
        "kind",
        "severity",
        "line",
        "evidence",
        "explanation",
        "fix",
        "count",
        "remedy",
        "certainty",
    }
    text = subprocess.run(
        [sys.executable, "-m", "ajetd", "diagnose", str(log)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    assert text.startswith("ray_cluster [retryable] line 2")
    clean = tmp_path / "clean.log"
    clean.write_text("all good\n")
    assert (
        "no known failure"
        in subprocess.run(
            [sys.executable, "-m", "ajetd", "diagnose", str(clean)],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    )


def test_trial_log_tail_diagnosis_keeps_true_line_numbers(tmp_path: Path) -> None:
    from ajetd.diagnosis.live import diagnose_file

    log = tmp_path / "trial-1.log"
    head = b"".join(b"step %d ok\n" % i for i in range(5000))
    log.write_bytes(
        head
        + b"CUDA out of memory early\n"
        + head
        + b"OSError: [Errno 28] No space left on device\n"
    )
    [finding] = diagnose_file(log, tail_bytes=len(head) + 50)  # starts inside the OOM line
    assert (finding.kind, finding.line) == ("disk_full", 10002)
    kinds = [f.kind for f in diagnose_file(log)]
    assert kinds == ["cuda_oom", "disk_full"]


def test_live_cursor_finishes_with_the_same_findings_as_a_full_read(tmp_path: Path) -> None:
    from ajetd.diagnosis.live import LiveScans, diagnose_file

    log = tmp_path / "trial-1.log"
    log.write_bytes(b"step:1 ok\n(WorkerDict pid=3) CUDA out of memory\n")
    live = LiveScans()
    seen = live.scan(("r", 1), log, 0.0)
    assert seen is not None and [f.kind for f in seen.findings] == ["cuda_oom"]
    with open(log, "ab") as handle:  # printed after the last live scan
        handle.write(b'Traceback (most recent call last):\n  File "x.py"\nValueError: odd')
    finished = live.finish(("r", 1), log)
    assert finished == diagnose_file(log)
    assert [f.kind for f in finished or []] == ["cuda_oom", "unknown_traceback"]
    assert live.finish(("r", 1), log) is None  # one-shot: the cursor is gone


def test_lines_ajetd_prints_are_not_diagnosed() -> None:
    text = (
        "[ajetd] run abc123 trial 1: python train.py # torch.OutOfMemoryError: CUDA out of memory\n"
        "[ajetd] could not pass SIGINT on: ssh: connect to host h port 22: Connection refused\n"
        "[ajetd] trial 1 exited with code 1\n"
    )
    assert diagnose_text(text) == []
    assert diagnose_text(text + "torch.OutOfMemoryError: CUDA out of memory.\n")[0].line == 4


def test_a_number_is_a_trigger_word_only_as_a_whole_number() -> None:
    """HTTP's 401 and 403 are trigger words of `auth`, taken only as whole numbers: a step
    counter, pid or loss that holds the digits (step:14013) is not read at all (a long log has
    one on every line: the scan read them all, a third of its time), while a refusal is still
    named, at the start of a block or at its end."""
    noise = b"".join(
        b"(TaskRunner pid=4013) step:%d - loss:0.4031 - t:4010s\n" % (14010 + i) for i in range(50)
    )
    assert StreamDiagnoser()._trigger_lines(noise) == []
    for refusal in (
        b"HfHubHTTPError: 403 Client Error: Forbidden for url: https://hf.co/x",
        b"urllib.error.HTTPError: HTTP Error 401",
        b"403 Client Error: Forbidden for url: https://hf.co/x",
    ):
        for text in (noise + refusal + b"\n", refusal + b"\n" + noise, refusal):
            assert [f.kind for f in diagnose_chunks([text])][:1] == ["auth"], (refusal, text[:9])


_WORDS = sorted({w for words in TRIGGER_WORDS.values() for w in words})


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(_WORDS),
            st.text(max_size=12),
            st.sampled_from(["\udcff", "\u2019", "已", "ı", "0", " "]),
        ),
        max_size=12,
    )
)
def test_the_kinds_a_line_may_be_are_those_whose_words_it_holds(parts: list[str]) -> None:
    """A line read without the scan's words (a traceback's frames and source lines) has its
    kinds' trigger words found in one pass: the same kinds, in the same order, as testing each
    kind's words in turn (which cost ~420 substring searches a line)."""
    lowered = "".join(parts).lower()
    expected = [k for k in CATALOGUE if any(w in lowered for w in TRIGGER_WORDS[k.name])]
    assert candidates(lowered) == expected


# a read of output: whole words of the automata among bytes of any kind, line ends among them
_READ = st.lists(
    st.sampled_from(WORDS)
    | st.binary(max_size=12)
    | st.sampled_from([b"\n", b" ", b"0", b"\xff", "已".encode()]),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_READ)
def test_a_short_read_and_a_long_one_find_the_same_words(parts: list[bytes]) -> None:
    """A read shorter than DFA_FROM_BYTES is searched by the small NFA, a longer one by the
    DFA built at the first such read: the same matches, in the same order, from either."""
    text = b"".join(parts)
    short, long = word_search(0), word_search(DFA_FROM_BYTES)
    assert short is not long
    assert short.find_matches_as_indexes(text, overlapping=True) == long.find_matches_as_indexes(
        text, overlapping=True
    )


def test_the_dfa_is_built_at_the_first_long_read_not_at_import() -> None:
    """A daemon whose runs print a few lines at a time never holds the DFA (2.1 MiB; issue
    15's RSS at 100 quiet runs): reads that short take the NFA; a long one builds it."""
    code = (
        "from ajetd.diagnosis import catalogue\n"
        "from ajetd.diagnosis.stream import StreamDiagnoser\n"
        "s = StreamDiagnoser()\n"
        "s.feed(b'step 1 loss 0.5\\nRuntimeError: CUDA error: out of memory\\n' * 100)\n"
        "print(catalogue._word_dfa.cache_info().currsize)\n"
        "s.feed(b'x' * catalogue.DFA_FROM_BYTES + b'\\n')\n"
        "print(catalogue._word_dfa.cache_info().currsize)\n"
    )
    assert python_says(code) == ["0", "1"]


RAY_WRAPPED_OOM = """Traceback (most recent call last):
  File "/app/verl/trainer/main_ppo.py", line 64, in run_ppo
    ray.get(runner.run.remote(config))
ray.exceptions.RayTaskError(OutOfMemoryError): ray::TaskRunner.run() (pid=41233, ip=10.0.0.1, \
actor_id=aa, repr=<main_ppo.TaskRunner object at 0x7f>)
(TaskRunner pid=41233) SyntaxWarning: invalid escape sequence
  File "/app/verl/workers/fsdp_workers.py", line 812, in compute_log_prob
    output = self.actor.compute_log_prob(data=data)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total \
capacity of 79.19 GiB of which 1.05 GiB is free.
[rank0]: RuntimeError: NCCL communicator was aborted
"""


def test_a_wrapped_finding_quotes_its_cause_own_line_not_the_wrapper() -> None:
    """A driver's `RayTaskError(OutOfMemoryError): ray::TaskRunner.run() (pid=...)` printed
    before the torch line: the evidence (and the failed run's reason that quotes it) is the
    cause's line with its figures; the kinds and their order do not change."""
    from ajetd.core.policy import root_cause

    findings = diagnose_text(RAY_WRAPPED_OOM)
    assert findings[0].kind == "cuda_oom" and findings[0].count == 2
    assert findings[0].evidence.startswith("torch.OutOfMemoryError: CUDA out of memory. Tried")
    assert findings[0].line == 8
    assert root_cause(findings[0]).startswith("cuda_oom: torch.OutOfMemoryError: CUDA out of")
    # only the wrapper printed: it stays the evidence
    alone = diagnose_text(RAY_WRAPPED_OOM.split("(TaskRunner pid", maxsplit=1)[0])
    assert alone[0].kind == "cuda_oom" and "RayTaskError(OutOfMemoryError)" in alone[0].evidence
    # the order among kinds is where each was first seen: a kind seen between the wrapper and
    # its cause's line stays after it
    between = diagnose_text(
        RAY_WRAPPED_OOM.replace(
            "(TaskRunner pid=41233) SyntaxWarning", "OSError: [Errno 28] No space left on device\nX"
        )
    )
    assert [f.kind for f in between][:2] == ["cuda_oom", "disk_full"]
