"""One line of terminal output as the text a person saw; pure.

Terminal output is not text: it has ANSI colours, `\\r` progress redraws and control bytes,
and under Ray every worker line carries a prefix such as `(VllmGenerationWorker pid=331005,
ip=10.0.0.1)` (NeMo-RL's policy workers name themselves `DTensorPolicyWorkerV2[rank=0]`, an
unnamed task is `(pid=42)`) and may end in `[repeated 7x across cluster]`. Here, below both
the diagnosis and the frameworks' output readers, so that both read lines the same way.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
# The same codes in raw output, none read past a line's end (a code never holds a newline, so a
# block without them has the same lines): what `stream` removes from a block before it looks
# for trigger words, which a code inside a phrase would hide (Rich colours numbers and words
# in the middle of a line: `LLVM \x1b[1;31mERROR\x1b[0m:`, `(WorkerDict pid=\x1b[1;36m12\x1b[0m)`)
ANSI_BYTES = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_CONTROL = {c: None for c in [*range(32), 127] if c != 9}
# (the name, then at most one `[...]` of a bounded length: no nested repetition, linear)
_RAY_PREFIX = re.compile(
    r"^(?:\x1b\[[0-9;]*m)*\((?:[A-Za-z_][\w.:-]*(?:\[[^\]\s]{0,64}\])?\s+)?pid=\d+"
    r"(?:,\s*ip=[\w.:-]+)?\)(?:\x1b\[0m)?\s?"
)
# Ray's own processes: `(raylet) ...`, `(autoscaler +18s) Tip: ...`, `(gcs_server) ...`
_RAY_DAEMON = re.compile(
    r"^(?:\x1b\[[0-9;]*m)*\((?:raylet|gcs_server|log_monitor|monitor|dashboard\w{0,40}"
    r"|autoscaler(?: \+[0-9hms]{1,16})?)(?:,\s*ip=[\w.:-]+)?\)"
)
_REPEATED = re.compile(r"(?<!\s)\s*\[repeated \d+x across cluster\]\s*$")
# SkyPilot's job output: Ray's prefix of the task SkyPilot names with a trailing comma
# (sky/backends/task_codegen.py: `{task_name},` or `task,` on one node, `{head|workerN}, rank=R,`
# on several; 2022's `node-2, head, rank=0,`): `(train, pid=1504) `, `(task, pid=4734) `,
# `(head, rank=0, pid=4734) `, `(worker1, rank=1, pid=2345, ip=...) `. The comma before `pid=`
# tells it from a Ray worker's `(Actor pid=N)`: it wraps the job's own (the driver's) lines.
# (Each name ends in `, `: no two ways to split a prefix, linear)
SKY_PREFIX = r"\((?:[\w.:\-]{1,64},\s){1,3}(?:rank=\d{1,6},\s*)?pid=\d+(?:,\s*ip=[\w.:\-]+)?\)"
_SKY_PREFIX = re.compile(rf"^{SKY_PREFIX}\s?")
# `srun --label`'s task number before each line (`0: `, right-aligned for wider numbers)
SRUN_LABEL_SOURCE = r"\d{1,4}: "
_SRUN_LABEL = re.compile(rf" {{0,3}}{SRUN_LABEL_SOURCE}")


# A Ray worker's mark: (TaskRunner pid=4242), (WorkerDict pid=1, ip=10.0.0.1), (Actor[rank=0]
# pid=1), (pid=123)
RAY_WORKER = r"\((?:[A-Za-z_][\w.:\-]*(?:\[[^\]\s]*\])?\s+)?pid=\d+(?:,\s*ip=[\w.:\-]+)?\)"
# tqdm's bar with a total (`{desc}: {percentage}%|{bar}| {n}/{total} [{elapsed}<{remaining},
# {rate}{postfix}]`), a description of a few words before it; a bar up to 1000 bytes wide (330
# columns of block characters). `BAR_RUN`, the bar itself, is the one count RE2 pays for in
# states (user kinds' patterns are widened over the dress and compiled by RE2, linear without
# a bound: `kindset` drops it there)
BAR_RUN = r"[^|\n]{0,1000}"
PROGRESS_BAR = (
    rf"|[ \t]{{0,8}}(?:[\w .\-]{{1,60}}:[ \t]{{1,4}})?\d{{1,3}}%\|{BAR_RUN}\|[^\[\n]{{0,80}}"
    r"\[[^\[\]\n]{0,200}\]"
)
# One decoration at the start of a line; `strip_dress` removes as many as are stacked.
DRESS_SOURCE = (
    # colour codes, also as pasted into an issue (the ESC byte lost, `[36m` left)
    r"(?:\x1b\[[0-9;]*m|\[[0-9;]{1,8}m)*"
    r"(?:"
    # Ray: (TaskRunner pid=4242), (WorkerDict pid=1, ip=10.0.0.1), (Actor[rank=0] pid=1),
    # (pid=123), (raylet), (raylet, ip=10.0.0.1), (gcs_server)
    rf"{RAY_WORKER}(?:\x1b?\[0m)?\s?"
    # SkyPilot's job output, its task's name (and node, rank) before each line: (train,
    # pid=1504), (task, pid=4734), (head, rank=0, pid=4734), (worker1, rank=1, pid=2345,
    # ip=10.0.0.2), (node-2, head, rank=0, pid=23862)
    rf"|{SKY_PREFIX}\s?"
    # Ray's own processes: (raylet), (gcs_server), the autoscaler's `(autoscaler +18s)`
    r"|\((?:raylet|gcs_server|autoscaler(?: \+[0-9hms]{1,16})?|monitor|dashboard\w*|log_monitor)"
    r"(?:,\s*ip=[\w.:\-]+)?\)"
    r"(?:\x1b?\[0m)?\s?"
    # vLLM: `ERROR 07-27 23:31:27 [core.py:591] ` and the older `ERROR 01-10 21:49:05 x.py:366] `
    r"|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+\d\d-\d\d\s+\d\d:\d\d:\d\d(?:\.\d+)?\s+"
    r"\[?[\w./\-]+:\d+\[?\]\s?"
    # torch.distributed / torchrun: [rank0]: , [default0]: ; srun --label: `0: `
    r"|\[(?:rank|default)\d+\]:\s?"
    # Open MPI's `mpirun --tag-output` (`[1,0]<stdout>:`, job and rank) and Horovod's
    # `horovodrun` (`[0]<stderr>:`) before each line of a rank
    r"|\[\d{1,6}(?:,\d{1,6})?\]<std(?:out|err|diag)>:\s?"
    r"|" + SRUN_LABEL_SOURCE + r""
    # timestamps: [2025-05-23 18:02:42], 2024-02-27 18:08:15,439, [2024-02-27 18:08:15,439 E 1 1],
    # SGLang's: [2025-04-15 12:43:15 TP0], [2026-05-28 00:11:09.816 DP0 TP0 EP0]; with a
    # logging level after it: `[2026-12-02 10:00:01] INFO: `
    r"|\[?\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"(?:\s+[DIWEFC]\s+\d+\s+\d+|(?:\s[A-Z]P\d{1,4}){1,4})?\]?\s?(?:[-|:]\s)?"
    r"(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):\s)?"
    r"|\[\d\d:\d\d:\d\d(?:[.,]\d+)?\]\s?"
    # glog: I0523 18:02:42.123456  1234 file.cc:12]; absl's (XLA, JAX): E0000 00:00:1712345678.12
    r"|[DIWEF]\d{4}\s+\d\d:\d\d:\d{2,10}\.\d+\s+\d+\s+[\w.\-]+:\d+\]\s?"
    # logging's default format and levels in brackets: ERROR:root: , INFO:nemo_rl.x: , [ERROR]?
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.\-]*:\s?"
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL|SUCCESS|TRACE)\s+[-|:]\s"
    # loguru's default format after its time and level (`2025-01-03 12:00:01.123 | ERROR    |
    # trainer:run:42 - `): the logger's name, function and line
    r"|[\w.\-]{1,200}:[\w<>.\-]{1,200}:\d{1,7} - "
    # Docker Compose's service and replica (`trainer-1  | `, v1's `trainer_1  | `); `kubectl
    # logs --prefix`'s pod and container (`[pod/trainer-0/main] `)
    r"|[\w.\-]{1,64}[-_]\d{1,4} {1,40}\| ?"
    r"|\[pod/[\w.\-]{1,253}/[\w.\-]{1,63}\] "
    # the journal's (`journalctl`, syslog): `Jan 03 12:00:01 gpu-node-7 python3[48213]: `
    r"|[A-Z][a-z]{2} [ 0-3]\d \d\d:\d\d:\d\d [\w.\-]{1,64} [\w.\-@/]{1,64}(?:\[\d{1,10}\])?: "
    # a shell trace: `+ cmd`, `++ cmd`
    r"|\++ "
    # pytest: the `E   ` column before the lines of an exception a failing test raised
    r"|E {3,}"
    # a tqdm bar the next output was printed after, on the same line (a bar is redrawn with
    # `\r` and ends in no newline until it closes, so a program's error, a shell's `Killed`,
    # a rank's NCCL line lands after its `]`): `  31%|███▌   | 331/1063 [01:06<03:59,
    # 3.06it/s]`, `Epoch 1:  45%|...| 9/20 [00:10<00:12,  1.1s/it, loss=0.5]`; the bar says
    # nothing, the text after it is the line. (Bounded runs, none of them repeated: linear)
     + PROGRESS_BAR + r")"
)
DRESS = re.compile(DRESS_SOURCE)
DRESS_BYTES = re.compile(b"(?m)^(?:" + DRESS_SOURCE.encode() + b")+")
# (`(?<!\s)`: tried from the first blank of a run only, not from each: linear)
MAX_DRESS = 6  # decorations stacked on one line, at most


def clean_line(line: str) -> str:
    """What a person saw last on that line: after the final `\\r`, without colour codes."""
    line = line.rstrip("\r\n")
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "\r" in line:
        line = line.rstrip("\r").rsplit("\r", 1)[-1]
    return line.translate(_CONTROL)


def is_worker_line(line: str) -> bool:
    """Whether a line came from a Ray worker (its `(Actor pid=N)` prefix) or one of Ray's own
    processes (`(raylet)`, `(autoscaler +18s)`), not the driver."""
    if not line.startswith(("(", "\x1b")):
        return False
    return _RAY_PREFIX.match(line) is not None or _RAY_DAEMON.match(line) is not None


def strip_ray(line: str) -> str:
    """A worker's own text, without Ray's `(Actor pid=N, ip=...)` prefix (or SkyPilot's
    `(head, rank=0, pid=N)`) and repeat suffix."""
    if ", pid=" in line[:256]:
        line = _SKY_PREFIX.sub("", line, count=1)
    return _REPEATED.sub("", _RAY_PREFIX.sub("", line, count=1))


def strip_srun_label(line: str) -> str:
    """A line without the task number `srun --label` put before it (`0: `), if any."""
    label = _SRUN_LABEL.match(line)
    return line[label.end() :] if label else line


def strip_dress(line: str) -> str:
    """The line's own text: every stacked decoration before it removed, and Ray's
    `[repeated Nx across cluster]` after it."""
    for _ in range(MAX_DRESS):
        match = DRESS.match(line)
        if match is None or not match.end():
            break
        line = line[match.end() :]
    if line.endswith("cluster]"):
        line = _REPEATED.sub("", line)
    return line
