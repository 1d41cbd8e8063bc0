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
# SkyPilot's job output: `(head, rank=0, pid=4734) `, `(worker1, rank=1, pid=2345, ip=...) `
_SKY_PREFIX = re.compile(
    r"^\((?:head|worker\d{1,4}),\s*rank=\d{1,6},\s*pid=\d+(?:,\s*ip=[\w.:-]+)?\)\s?"
)
# `srun --label`'s task number before each line (`0: `, right-aligned for wider numbers)
SRUN_LABEL_SOURCE = r"\d{1,4}: "
_SRUN_LABEL = re.compile(rf" {{0,3}}{SRUN_LABEL_SOURCE}")


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
    if line.startswith(("(head", "(worker")):
        line = _SKY_PREFIX.sub("", line, count=1)
    return _REPEATED.sub("", _RAY_PREFIX.sub("", line, count=1))


def strip_srun_label(line: str) -> str:
    """A line without the task number `srun --label` put before it (`0: `), if any."""
    label = _SRUN_LABEL.match(line)
    return line[label.end() :] if label else line
