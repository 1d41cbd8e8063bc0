"""A SIGKILL is no OOM by itself: the daemon's weighing of a `host_oom` that only echoes one;
pure.

Read as text (a pasted log, `ajetd diagnose`), a bare `Killed`, a shell's `line 155: 1126
Killed`, an `exitcode: -9` are `host_oom`: in a log someone pasted because their run died,
the kernel's OOM killer is what mostly sent it (the corpus's threads say so). The daemon knows
more: that the trial's program ended by SIGKILL (exit status 137, and ajetd's own trial script
printed that `Killed` line for it), and what the kernel recorded of its OOM kills while the
trial ran (`core.oomrecord.OomLook`, read by `adapters.oomwatch`). So it never states an OOM
as fact on a signal alone (walk97 F2: a `kill -9`, a preemption, a watchdog read as "the
machine ran out of host memory ... use a smaller batch"):
- a `host_oom` finding whose line only echoes a SIGKILL (no word of memory in it) becomes
  RECORDED where the kernel recorded an OOM kill of the trial's process (its pid, from that
  echo) or in its memory cgroup, its evidence the kernel's own line; else POSSIBLE, said as a
  possibility (`possibly host_oom: killed by SIGKILL from outside the program; no OOM kill
  was recorded: ...`);
- a trial that ended by SIGKILL with no such finding gets one: RECORDED first where the kernel
  recorded the kill; POSSIBLE where nothing else was found;
- a finding in the program's own words of memory (Ray's OOM message, `MemoryError`, the
  kernel's `Out of memory: Killed process` in its output) or its place's (Slurm's job state
  OUT_OF_MEMORY) is evidence itself: it and the echoes beside it are left as they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ajetd.core.finding import POSSIBLE, RECORDED, Finding
from ajetd.core.linecut import cut
from ajetd.core.oomrecord import KernelKill, OomLook
from ajetd.diagnosis.catalogue import BY_NAME
from ajetd.diagnosis.exitcodes import ECHOES, EVIDENCE_READ

HOST_OOM = "host_oom"
KILLED_STATUS = 137  # 128 + SIGKILL: the status bash gives a program SIGKILL ended
BEFORE_S = 1.0  # a kernel kill this long before the trial's start may still be its (clocks)
AFTER_S = 5.0  # ... and this long after its recorded end (the exit is written after it)
ECHO_SHOWN = 160  # characters of a program's echo quoted in a weighed finding's evidence

_MEMORY = re.compile(r"memory|\boom|bad_alloc", re.IGNORECASE)
# the pid an echo names as killed: a shell's job line (`script: line 155: 1126 Killed  cmd`), a
# launcher's `(pid: 1126)`, `received by PID 1126`
_ECHO_PID = re.compile(
    r"\bline \d{1,9}\s*:\s*(\d{1,10})\s+killed\b|\bpid[:=]?\s{0,3}(\d{1,10})\b", re.IGNORECASE
)
# a job line's head, the command it ran after it (`[1]+  Killed  cmd` too): the command's words
# (`gpu_memory_utilization=0.6`) are no message of memory
_JOB_HEAD = re.compile(
    r"\bline \d{1,9}\s*:\s*\d{1,10}\s+killed\b|^\s*\[\d{1,6}\][+-]?\s+killed\b", re.IGNORECASE
)
# the job line ajetd's own trial script prints for its program (`.../trial-1.sh: line 40:
# 32096 Killed  bash -o pipefail -c '...'`, the script's path maybe cut out of the evidence of
# a long line): ajetd's, never the program's words
_OWN_JOB = re.compile(r"\bline \d{1,9}: +(\d{1,10}) +Killed +(?:\S+ ){0,8}?bash -o pipefail -c ")

POSSIBLE_EXPLANATION = (
    "A process was killed by SIGKILL from outside the program, and no OOM kill of it was "
    "recorded: the machine running out of host (CPU) memory is only one possible cause."
)
POSSIBLE_FIX = (
    "Find what sent the SIGKILL (a person's `kill -9`, a scheduler's preemption, a watchdog) "
    "and relaunch; if host memory did run out (an OOM killer ajetd cannot see: a container's, "
    "another machine's), use fewer rollout workers or a smaller batch, free host memory, or "
    "raise Ray's memory threshold."
)
CAUSES = "a person, a scheduler's preemption, a watchdog, or an OOM killer ajetd cannot see"


def echoes_kill_only(finding: Finding) -> bool:
    """Whether `finding` is a `host_oom` read from a line that only echoes a SIGKILL (a bare
    `Killed`, a shell's job line, an exit status 137 or -9, `signal 9`), no word of memory."""
    if finding.kind != HOST_OOM or finding.certainty:
        return False
    head = finding.evidence[:EVIDENCE_READ]
    if ECHOES["KILL"].search(head) is None:
        return False
    return _MEMORY.search(_said(head)) is None


def _said(head: str) -> str:
    """What an echo's line says itself: a job line's head, before the command it ran."""
    job = _JOB_HEAD.search(head)
    return head[: job.end()] if job is not None else head


def needs_look(found: tuple[Finding, ...], exit_code: int | None) -> bool:
    """Whether the weighing needs the kernel's record (`adapters.oomwatch.look`): the trial
    ended by SIGKILL, or a finding only echoes one; and no `host_oom` found in words of
    memory (the program's, or its place's: Slurm's OUT_OF_MEMORY) explains it already."""
    if any(f.kind == HOST_OOM and not f.certainty and not echoes_kill_only(f) for f in found):
        return False
    return exit_code == KILLED_STATUS or any(echoes_kill_only(f) for f in found)


@dataclass(frozen=True)
class Trial:
    """What the weighing knows of the trial: its start and end (wall time)."""

    started_at: float
    ended_at: float


@dataclass(frozen=True)
class Verdict:
    """What the kernel's record says of the trial: `recorded`, the evidence of an OOM kill
    ("" none); `looked`, what was looked at, for the words of a possibility; `untied`, the
    OOM kills while it ran not known to be its own."""

    recorded: str
    looked: str
    untied: str = ""


def weigh(
    found: tuple[Finding, ...], exit_code: int | None, look: OomLook, trial: Trial
) -> tuple[Finding, ...]:
    """A failed (or ended) trial's findings with each SIGKILL echo weighed against the
    kernel's record (module doc); `found` as it is where nothing needs it."""
    if not needs_look(found, exit_code):
        return found
    killed = exit_code == KILLED_STATUS
    victims = {p for f in found if echoes_kill_only(f) for p in _echo_pids(f.evidence)}
    said = verdict(look, trial, victims)
    weighed = tuple(_weighed(f, said, killed) if echoes_kill_only(f) else f for f in found)
    oom = next((f for f in weighed if f.kind == HOST_OOM), None)
    if killed and said.recorded:
        if oom is None or oom.certainty not in ("", RECORDED):
            return (_exit_finding(said, RECORDED), *weighed)
        return (oom, *(f for f in weighed if f is not oom))  # what ended it, first
    if killed and not weighed:
        return (_exit_finding(said, POSSIBLE),)
    return weighed


def verdict(look: OomLook, trial: Trial, victims: set[int]) -> Verdict:
    """What the kernel recorded of OOM kills while the trial ran: one of `victims` killed
    (the pids its output's echoes name as killed: the trial's own), or one in its memory
    cgroup, or its cgroup's counter risen. Where the echoes name the pids killed and the
    kernel log was read, only their kills are the trial's: another process of a shared cgroup
    (another run's, the daemon's own service) killed meanwhile is said, not taken for it."""
    if look.elsewhere:
        return Verdict("", f"ajetd cannot see the OOM killer of {look.elsewhere}")
    window = [
        k
        for k in look.kills
        if trial.started_at - BEFORE_S <= look.boot_at + k.at <= trial.ended_at + AFTER_S
    ]
    mine = [k for k in window if k.pid in victims]
    if mine:
        return Verdict(_kernel_said(mine[-1], "this trial's process"), "")
    inside = [k for k in window if _within(k.memcg, look.cgroup)]
    counted = look.rise is not None and look.rise > 0
    looked = _looked(look)
    if victims and look.kernel_log:
        untied = [_kill_words(k) for k in inside[-3:]]
        if counted:
            untied.append(f"{_counter(look)} counted {look.rise} while it ran")
        return Verdict("", looked, "; ".join(untied))
    if inside:
        return Verdict(_kernel_said(inside[-1], f"in this trial's memory cgroup {look.cgroup}"), "")
    if counted:
        return Verdict(f"{_counter(look)} counted {look.rise} OOM kill(s) while the trial ran", "")
    others = [_kill_words(k) for k in window[-3:]]
    return Verdict("", looked, "; ".join(others))


def own_kill_pid(evidence: str) -> int | None:
    """The pid in ajetd's own trial script's `Killed` line for its program, if `evidence` is
    that line."""
    match = _OWN_JOB.search(evidence[:EVIDENCE_READ])
    return int(match.group(1)) if match else None


def _echo_pids(evidence: str) -> set[int]:
    """The pids an echo of a SIGKILL names as killed."""
    found = _ECHO_PID.finditer(_said(evidence[:EVIDENCE_READ]))
    return {int(m.group(1) or m.group(2)) for m in found}


def _within(memcg: str, cgroup: str) -> bool:
    """Whether `memcg` is `cgroup` or below it; never for the root (every process is there)."""
    if not memcg or cgroup in ("", "/"):
        return False
    return memcg == cgroup or memcg.startswith(cgroup.rstrip("/") + "/")


def _kernel_said(kill: KernelKill, whose: str) -> str:
    return (
        f"the kernel's OOM killer killed {kill.task} (pid {kill.pid}), {whose}, while the trial "
        f'ran: "{kill.text}"'
    )


def _kill_words(kill: KernelKill) -> str:
    return (
        f"the kernel's OOM killer killed {kill.task} (pid {kill.pid}), not known to be this trial's"
    )


def _counter(look: OomLook) -> str:
    return f"memory cgroup {look.cgroup}'s OOM kill counter"


def _looked(look: OomLook) -> str:
    """What was looked at and found without an OOM kill of the trial, in words."""
    counter = f"nor {_counter(look)}" if look.rise is not None else "no memory cgroup counter"
    if look.kernel_log:
        return f"none in the kernel log while it ran, {counter}"
    unread = f" ({look.unread})" if look.unread else ""
    if look.rise is not None:
        return f"none in {_counter(look)}; the kernel log was not read{unread}"
    return f"ajetd could read no OOM record here: not the kernel log{unread}, {counter}"


def _possible_evidence(what: str, said: Verdict) -> str:
    untied = f"; {said.untied}" if said.untied else ""
    return f"{what}; no OOM kill was recorded: {CAUSES} ({said.looked}{untied})"


def _weighed(finding: Finding, said: Verdict, killed: bool) -> Finding:
    """A finding that only echoes a SIGKILL, with the kernel's verdict."""
    own = own_kill_pid(finding.evidence)
    echo = cut(" ".join(finding.evidence.split()), ECHO_SHOWN)
    if said.recorded:
        quoted = "" if own is not None else f'; its output says "{echo}"'
        return replace(finding, evidence=said.recorded + quoted, certainty=RECORDED)
    if own is not None and killed:
        what = f"killed by SIGKILL from outside the program (pid {own})"
    else:
        what = f'"{echo}": a process killed by SIGKILL'
    return replace(
        finding,
        evidence=_possible_evidence(what, said),
        explanation=POSSIBLE_EXPLANATION,
        fix=POSSIBLE_FIX,
        certainty=POSSIBLE,
    )


def _exit_finding(said: Verdict, certainty: str) -> Finding:
    """The finding of a trial that ended by SIGKILL (exit status 137), from outside its
    output (line 0)."""
    kind = BY_NAME[HOST_OOM]
    if certainty == RECORDED:
        return Finding(
            kind.name,
            kind.severity.value,
            0,
            said.recorded,
            kind.explanation,
            kind.fix,
            certainty=RECORDED,
        )
    what = "killed by SIGKILL from outside the program (exit status 137)"
    evidence = _possible_evidence(what, said)
    return Finding(
        kind.name,
        kind.severity.value,
        0,
        evidence,
        POSSIBLE_EXPLANATION,
        POSSIBLE_FIX,
        certainty=POSSIBLE,
    )
