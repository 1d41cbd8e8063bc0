"""Runs through Slurm: the only module that runs Slurm's commands.

The run's tmux session stays here (a login node) and its pane either runs `srun --pty` (mode
`interactive`: the program keeps a terminal, the attached user sees it live) or a follower of
an `sbatch` job's output (mode `batch`, `ajetd.hosts.slurmfollow`). In both, the job runs the same
generated trial script as a local trial, on the allocated node, writing its exact exit code
to `trial-N.job.exit` (AJETD_HOME and the result dir must be on a filesystem the nodes share,
as home directories are on clusters). The daemon asks the controller about all its jobs in one
`squeue` call per liveness period, and `scontrol show job` (which keeps a finished job for
`MinJobAge`) for those squeue no longer lists; `sacct` is not needed.
"""

from __future__ import annotations

import math
import re
import shlex
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime

from ajetd.core.errors import AjetdError
from ajetd.core.finding import Finding
from ajetd.core.hostspecs import SlurmSpec
from ajetd.core.values import OptionError, format_mib, format_slurm_minutes, slurm_minutes

TIME_MARGIN_S = 300.0  # Slurm's own limit sits past exp_max_time: ajetd stops first, gracefully
TIMEOUT_S = 10.0
JOB_PREFIX = "ajet_"
# Slurm job states -> (ajetd finding kind or None, severity); PENDING/RUNNING are live
FINAL_STATES = {
    "COMPLETED": None,
    "FAILED": None,
    "CANCELLED": None,
    "TIMEOUT": ("slurm_timeout", "fatal"),
    "DEADLINE": ("slurm_timeout", "fatal"),
    "NODE_FAIL": ("node_failure", "retryable"),
    "BOOT_FAIL": ("node_failure", "retryable"),
    "PREEMPTED": ("preempted", "retryable"),
    "OUT_OF_MEMORY": ("host_oom", "retryable"),
}


class SlurmError(AjetdError):
    """A Slurm command failed; the message says which and what it printed."""


@dataclass(frozen=True)
class Job:
    job_id: str
    state: str  # PENDING, RUNNING, COMPLETED, FAILED, NODE_FAIL, ...
    reason: str = ""
    exit_code: int | None = None
    nodes: str = ""
    ended_at: float | None = None  # when Slurm says it ended (sacct's End, scontrol's EndTime)
    # when it began running (squeue's %S of a job past PENDING, sacct's Start, scontrol's
    # StartTime); None: not told, or it never ran
    started_at: float | None = None


def job_name(run_id: str, trial: int) -> str:
    return f"{JOB_PREFIX}{run_id}_t{trial}"


def allocation(spec: SlurmSpec, max_time_s: float | None, name: str) -> list[str]:
    """The options both `srun` and `sbatch` take for this run's allocation."""
    args = [f"--job-name={name}", f"--nodes={spec.nodes}"]
    pairs = (
        ("--partition", spec.partition),
        ("--account", spec.account),
        ("--qos", spec.qos),
        ("--constraint", spec.constraint),
        ("--exclude", spec.exclude),
    )
    args += [f"{flag}={value}" for flag, value in pairs if value]
    if spec.mem_mib is not None:
        args.append(f"--mem={format_mib(spec.mem_mib)}")
    if spec.cpus_per_task:
        args.append(f"--cpus-per-task={spec.cpus_per_task}")
    if spec.gpus_per_node:
        args.append(f"--gres=gpu:{spec.gpus_per_node}")
    wanted = wanted_minutes(spec, max_time_s)
    if wanted is not None or spec.time_unlimited:
        args.append(f"--time={format_slurm_minutes(wanted)}")
    return [*args, *spec.extra]


def wanted_minutes(spec: SlurmSpec, max_time_s: float | None) -> int | None:
    """The `--time` this run asks for, in whole minutes: `slurm.time` as parsed, else
    exp_max_time plus the margin, rounded up; None: no limit (UNLIMITED, or neither given)."""
    if spec.time_min is not None or spec.time_unlimited:
        return spec.time_min
    if max_time_s:
        return math.ceil((max_time_s + TIME_MARGIN_S) / 60)
    return None


def interactive_command(spec: SlurmSpec, max_time_s: float | None, name: str, script: str) -> str:
    """What the pane runs in interactive mode (quoted; srun keeps the terminal)."""
    argv = ["srun", "--pty", *allocation(spec, max_time_s, name), "bash", script]
    return shlex.join(argv)


def sbatch_argv(
    spec: SlurmSpec, max_time_s: float | None, name: str, script: str, log: str, grace_s: float
) -> list[str]:
    """`sbatch` for batch mode; `--signal=B:INT@grace` gives the program the graceful stop
    it gets locally (the trial script passes it on)."""
    return [
        "sbatch",
        "--parsable",
        f"--output={log}",
        "--open-mode=append",
        "--no-requeue",  # ajetd resubmits itself, as a recorded trial, never behind its back
        f"--signal=B:INT@{int(grace_s)}",
        *allocation(spec, max_time_s, name),
        script,
    ]


def _run(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SlurmError(f"{argv[0]}: {exc}") from exc
    if done.returncode != 0:
        raise SlurmError(f"{shlex.join(argv[:2])}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def submit(argv: list[str]) -> str:
    """sbatch; the job id."""
    out = _run(argv).strip().split(";")[0]
    if not out.isdigit():
        raise SlurmError(f"sbatch printed no job id: {out!r}")
    return out


def _exit(text: str) -> int | None:
    m = re.match(r"(\d+):(\d+)", text)
    if not m:
        return None
    code, sig = int(m.group(1)), int(m.group(2))
    return 128 + sig if sig else code


def jobs(names: set[str]) -> dict[str, Job]:
    """Every job of these names this user has: one `squeue` call, then `scontrol` for the ones
    squeue no longer lists (finished: their final state and exit code)."""
    if not names:
        return {}
    out = _run(["squeue", "-h", "--me", "-o", "%i|%j|%T|%r|%N|%S"])
    found: dict[str, Job] = {}
    for line in out.splitlines():
        cells = line.split("|")
        if len(cells) == 6 and cells[1] in names:
            # a pending job's %S is only Slurm's guess of when it may start
            began = slurm_time(cells[5]) if cells[2] != "PENDING" else None
            found[cells[1]] = Job(cells[0], cells[2], cells[3], None, cells[4], None, began)
    return found


LIVE_STATES = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED")


def finished(job_ids: set[str]) -> dict[str, Job]:
    """Jobs squeue no longer lists that have ended, in one call for all of them: `sacct`
    where accounting is on (it keeps every job), else `scontrol show job` (which keeps a
    finished job for `MinJobAge`). A job still called live is left out."""
    if not job_ids:
        return {}
    try:
        if accounting():
            fields = "JobID,State,ExitCode,DerivedExitCode,NodeList,End,Start,Reason"
            out = _run(["sacct", "-n", "-P", "-X", "-j", ",".join(sorted(job_ids)), "-o", fields])
            return parse_sacct(out, job_ids)
        return parse_scontrol(_run(["scontrol", "show", "job", "-o"]), job_ids)
    except SlurmError:
        return {}


def accounting() -> bool:
    """Whether the cluster keeps job accounting (asked once a minute at most)."""
    now = time.monotonic()
    cached = _CACHE.get("accounting")
    if cached is not None and now - cached[0] < PARTITIONS_TTL_S:
        return bool(cached[1])
    out = _run(["scontrol", "show", "config"])
    kind = re.search(r"AccountingStorageType\s*=\s*(\S+)", out)
    enabled = kind is not None and "none" not in kind.group(1)
    _CACHE["accounting"] = (now, {"on": {}} if enabled else {})
    return enabled


def parse_scontrol(out: str, job_ids: set[str]) -> dict[str, Job]:
    """`scontrol show job -o` lines of ended jobs among `job_ids`."""
    found = {}
    for line in out.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        job_id = fields.get("JobId", "")
        state = fields.get("JobState", "")
        if job_id in job_ids and state and state not in LIVE_STATES:
            found[job_id] = Job(
                job_id,
                state,
                fields.get("Reason", ""),
                _exit(fields.get("ExitCode", "")),
                fields.get("NodeList", ""),
                slurm_time(fields.get("EndTime", "")),
                _started(fields.get("StartTime", ""), fields.get("NodeList", "")),
            )
    return found


def slurm_time(text: str) -> float | None:
    """A time as Slurm prints it (`2026-12-02T09:28:05`, in the local time zone of the
    command that printed it: this machine's, as ajetd runs sacct and scontrol here); None for
    `Unknown`, `None` or anything else."""
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").timestamp()
    except (ValueError, OverflowError, OSError):
        return None


def _started(start: str, nodes: str) -> float | None:
    """scontrol's StartTime of an ended job, where it ran: one cancelled while pending has a
    StartTime (its end) but no node."""
    return slurm_time(start) if nodes and nodes != "(null)" else None


def parse_sacct(out: str, job_ids: set[str]) -> dict[str, Job]:
    """`sacct -n -P -X -o JobID,State,ExitCode,DerivedExitCode,NodeList,End,Start,Reason` lines of
    ended jobs among `job_ids`; `CANCELLED by 1000` reads as CANCELLED; a zero exit code with
    a non-zero derived one (a failed step) gives the derived one. The reason is last: free
    text, it may hold the separator."""
    found = {}
    for line in out.splitlines():
        cells = line.split("|")
        if len(cells) < 5 or cells[0] not in job_ids:
            continue
        state = cells[1].split()[0] if cells[1] else ""
        if not state or state in LIVE_STATES:
            continue
        code, derived = _exit(cells[2]), _exit(cells[3])
        found[cells[0]] = Job(
            cells[0],
            state,
            "|".join(cells[7:]),
            derived if not code and derived else code,
            cells[4],
            slurm_time(cells[5]) if len(cells) > 5 else None,
            slurm_time(cells[6]) if len(cells) > 6 else None,
        )
    return found


def cancel(job_id: str, signal: str | None = None, batch: bool = False) -> None:
    """`scancel` the job (with a signal: only signal it; `batch`: its batch shell too)."""
    argv = ["scancel"]
    if signal:
        argv.append(f"--signal={signal}")
        if batch:
            argv.append("--batch")
    _run([*argv, job_id])


_CACHE: dict[str, tuple[float, dict[str, dict[str, str]]]] = {}
PARTITIONS_TTL_S = 60.0


def partitions() -> dict[str, dict[str, str]]:
    """`scontrol show partition`: name -> its fields (for the admission check; asked once a
    minute at most, so a burst of blueprints is not a burst of controller calls)."""
    now = time.monotonic()
    cached = _CACHE.get("partitions")
    if cached is not None and now - cached[0] < PARTITIONS_TTL_S:
        return cached[1]
    out = _run(["scontrol", "show", "partition", "-o"])
    parts = {}
    for line in out.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if "PartitionName" in fields:
            parts[fields["PartitionName"]] = fields
    _CACHE["partitions"] = (now, parts)
    return parts


def node_sizes() -> dict[str, dict[str, str]]:
    """`sinfo -N`: partition -> the most CPUs (`cpus`) and memory in MiB (`mem`) any one of
    its nodes has (a task's CPUs and a job's memory per node must fit on one node); asked
    once a minute at most, as `partitions`."""
    now = time.monotonic()
    cached = _CACHE.get("nodes")
    if cached is not None and now - cached[0] < PARTITIONS_TTL_S:
        return cached[1]
    sizes: dict[str, dict[str, str]] = {}
    for line in _run(["sinfo", "-h", "-N", "-o", "%R|%c|%m"]).splitlines():
        cells = line.strip().split("|")
        if len(cells) != 3 or not all(c.isdigit() for c in cells[1:]):
            continue  # a form this parser does not know: the cluster has the last word
        size = sizes.setdefault(cells[0], {"cpus": "0", "mem": "0"})
        for key, value in zip(("cpus", "mem"), cells[1:], strict=True):
            size[key] = str(max(int(size[key]), int(value)))
    _CACHE["nodes"] = (now, sizes)
    return sizes


def partition_minutes(text: str) -> int | None:
    """A partition's `MaxTime` as `scontrol` prints it, in minutes; None: no limit (also for
    a form this parser does not know: the cluster, not ajetd, then has the last word)."""
    if not text or text.upper() in ("UNLIMITED", "INFINITE", "NONE"):
        return None
    try:
        return slurm_minutes("MaxTime", text)
    except OptionError:
        return None


def check(
    spec: SlurmSpec,
    parts: dict[str, dict[str, str]],
    max_time_s: float | None,
    sizes: dict[str, dict[str, str]] | None = None,
) -> list[str]:
    """What the cluster cannot give this run (from `scontrol show partition`, and the
    partition's nodes' `sizes`: a request no node can hold stays PENDING for ever, walk87
    F10)."""
    if not parts:
        return ["slurm: the cluster lists no partition"]
    name = spec.partition or next(
        (n for n, f in parts.items() if f.get("Default") == "YES"), next(iter(parts))
    )
    part = parts.get(name)
    if part is None:
        return [f"slurm.partition: unknown partition {name!r} (the cluster has {', '.join(parts)})"]
    problems = []
    limit = partition_minutes(part.get("MaxTime", ""))
    wanted = wanted_minutes(spec, max_time_s)
    if limit is not None and spec.time_unlimited:
        problems.append(
            f"slurm.time: UNLIMITED asked, above partition {name}'s MaxTime of {limit} min"
        )
    elif limit is not None and wanted is not None and wanted > limit:
        problems.append(
            f"slurm: the run needs {wanted} min (exp_max_time plus a margin, or slurm.time), "
            f"above partition {name}'s MaxTime of {limit} min"
        )
    gpus = re.search(r"gres/gpu=(\d+)", part.get("TRES", ""))
    nodes = int(part.get("TotalNodes", "1") or 1)
    if spec.gpus_per_node:
        have = int(gpus.group(1)) // max(1, nodes) if gpus else 0
        if spec.gpus_per_node > have:
            problems.append(
                f"slurm.gpus_per_node: {spec.gpus_per_node} asked, partition {name} has {have} "
                "per node"
            )
    if spec.nodes > nodes:
        problems.append(f"slurm.nodes: {spec.nodes} asked, partition {name} has {nodes}")
    size = (sizes or {}).get(name, {})
    cpus, mem = int(size.get("cpus", "0")), int(size.get("mem", "0"))
    if spec.cpus_per_task and cpus and spec.cpus_per_task > cpus:
        problems.append(
            f"slurm.cpus_per_task: {spec.cpus_per_task} asked, partition {name}'s largest node "
            f"has {cpus} CPUs"
        )
    if spec.mem_mib and mem and spec.mem_mib > mem:
        problems.append(
            f"slurm.mem: {format_mib(spec.mem_mib)} asked, partition {name}'s largest node has "
            f"{format_mib(mem)}"
        )
    return problems


def finding(job: Job) -> Finding | None:
    """What a job's final Slurm state says that its output may not: node failure, preemption,
    the job's memory limit, Slurm's own time limit."""
    known = FINAL_STATES.get(job.state.split()[0])
    if known is None:
        return None
    kind, severity = known
    fixes = {
        "node_failure": "ajetd resubmits once with the failed node excluded.",
        "preempted": "ajetd resubmits once (the job was preempted, not faulty).",
        "host_oom": "Ask for more memory (`slurm: {mem: ...}`) or reduce the batch size.",
        "slurm_timeout": "Raise `slurm: {time: ...}` or lower exp_max_time.",
    }
    evidence = f"Slurm job {job.job_id} ended {job.state} on {job.nodes or '?'} "
    evidence += f"({job.reason or 'no reason given'})"
    explanation = f"Slurm says the job ended {job.state}."
    return Finding(kind, severity, 0, evidence, explanation, fixes[kind])
