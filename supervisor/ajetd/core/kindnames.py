"""The names of ajetd's own failure kinds, which no user-defined kind may take; pure.

A user kind names a failure the catalogue does not know (README, "User-defined kinds"). One
named like a built-in (`cuda_oom` with severity retryable) replaced it without a word: `ajetd
diagnose` printed the user's severity and explanation under the built-in's name, and a run
ended "cuda_oom is fatal, not retried: mine" with its `allow_fixes` bypassed (walk91 F5). The
user kinds' parser (`core.userkinds`, one for the home's kinds.yaml, a blueprint's `kinds:`
and `diagnose --kinds`) refuses these names. They are kept here, in the lowest layer, as
data: the catalogue (`ajetd.diagnosis.catalogue`) and the places that find a kind outside a
trial's output are above it; `tests/test_userkinds.py` holds this list equal to theirs.
"""

from __future__ import annotations

# `ajetd.diagnosis.catalogue.BY_NAME`: the kinds read from a trial's output
CATALOGUE_NAMES = frozenset(
    {
        "auth",
        "build_error",
        "command_not_found",
        "config_error",
        "connection_refused",
        "cuda_error",
        "cuda_oom",
        "disk_full",
        "gpus_not_free",
        "host_oom",
        "import_error",
        "insufficient_gpus",
        "launch_error",
        "logger_error",
        "missing_file",
        "missing_model",
        "nan_loss",
        "nccl_error",
        "nccl_timeout",
        "network",
        "no_workdir",
        "not_executable",
        "port_in_use",
        "ray_cluster",
        "ray_worker_died",
        "segfault",
        "unknown_traceback",
        "vllm_engine_dead",
        "vllm_memory",
    }
)
# the kinds found beside the output: a prompt it stops at (`core.finding`), a lost GPU
# (`daemon.gpuwatch`), a dropped SSH connection (`hosts.ssh`), a swarm server that died
# (`hosts.swarm`), how Slurm ended its job (`hosts.slurm.FINAL_STATES`)
OUTSIDE_NAMES = frozenset(
    {
        "waiting_for_input",
        "gpu_lost",
        "ssh_lost",
        "swarm_server_died",
        "node_failure",
        "preempted",
        "slurm_timeout",
    }
)
BUILTIN_NAMES = CATALOGUE_NAMES | OUTSIDE_NAMES
