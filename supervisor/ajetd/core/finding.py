"""A finding: one failure kind seen in a trial's output (or by ajetd around it); pure.

The one type findings have inside ajetd, from the diagnosis to the policy, the remedies, the
views and the hooks' payloads. JSON only at the edges: `to_json`, the one shape, for
state.json, `status --json`, `diag --json`, `diagnose --json` and the reports; `from_json`
reads a stored one back, tolerant of older records (a missing field takes its default, an
unknown one is ignored).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# a program waiting at a prompt for an answer nobody will type (`diagnosis.prompt`): read from
# its unfinished last output, so only while it runs; the run is flagged for attention
WAITING_FOR_INPUT = "waiting_for_input"
# a GPU of a running trial fell off the bus (NVML, Xid 79), seen outside its output: fatal, and
# the run is flagged for attention while that trial lives (`policy._gpu_lost_flag`)
GPU_LOST = "gpu_lost"
# How sure a finding is, where it is not simply read from the output (`certainty` ""): the
# daemon weighs a `host_oom` that only echoes a SIGKILL (bash's `Killed`, an exit status 137
# or -9) against the kernel's record of OOM kills (`diagnosis.killed`): RECORDED, the kernel
# recorded an OOM kill of the trial's process or in its memory cgroup; POSSIBLE, it recorded
# none, so the machine running out of memory is one cause among others (a person's `kill -9`,
# a scheduler's preemption, a watchdog)
RECORDED = "recorded"
POSSIBLE = "possible"


@dataclass(frozen=True)
class Finding:
    """One failure kind seen in a log: its first line, how often, and what to do. `remedy`:
    a user kind's remedy (userkinds.UserKind), "" for the catalogue's kinds."""

    kind: str
    severity: str
    line: int
    evidence: str
    explanation: str
    fix: str
    count: int = 1
    remedy: str = ""
    certainty: str = ""  # "", RECORDED or POSSIBLE

    def to_json(self) -> dict[str, str | int | None]:
        """The one shape a finding has in JSON, stored and shown alike (`status --json`'s
        `diagnosis`, `diag --json` and `diagnose --json`'s findings, hooks, run.json): every
        field, `remedy` null where the kind has none (as every field without a value),
        `certainty` null for a finding read from the output as it says."""
        return {
            "kind": self.kind,
            "severity": self.severity,
            "line": self.line,
            "evidence": self.evidence,
            "explanation": self.explanation,
            "fix": self.fix,
            "count": self.count,
            "remedy": self.remedy or None,
            "certainty": self.certainty or None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        """A stored finding; what an older record lacks takes its default."""
        return cls(
            kind=str(data.get("kind") or ""),
            severity=str(data.get("severity") or ""),
            line=_int(data.get("line"), 0),
            evidence=str(data.get("evidence") or ""),
            explanation=str(data.get("explanation") or ""),
            fix=str(data.get("fix") or ""),
            count=_int(data.get("count"), 1),
            remedy=str(data.get("remedy") or ""),
            certainty=str(data.get("certainty") or ""),
        )

    def where(self) -> str:
        """Where it was seen, for people: `line N` of the log, or `no log line` for one read
        from outside the log (its pane's history, its exit code, a full disk, its place):
        line 0 in JSON, never shown as `line 0`, which named no line of any file."""
        return f"line {self.line}" if self.line > 0 else "no log line"

    def named(self) -> str:
        """Its kind as the text views name it: `possibly host_oom` for a kind that is only
        possible (`POSSIBLE`), never stated as fact; else the kind."""
        return f"possibly {self.kind}" if self.certainty == POSSIBLE else self.kind

    def summary(self) -> str:
        return f"{self.named()} ({self.where()}): {self.explanation} Evidence: {self.evidence}"


def _int(value: Any, default: int) -> int:
    """A stored integer; anything else (absent, null, text) is the default."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default
