"""Words that say what ajetd will do, or did, about a finding; pure.

The catalogue's severity says how bad a kind is; a reader wants to know what happens next. A
`cuda_oom` is a `science` kind: it is relaunched only with a fix the blueprint allows
(`[ajetd] allow_fixes`), so without one it must not read as "retryable". These labels are
computed here from the finding, the blueprint's allowed keys and the remedy table, so the
catalogue stays data and the wording stays in one place.
"""

from __future__ import annotations

from collections.abc import Collection

from ajetd.core.finding import Finding
from ajetd.core.model import Status
from ajetd.core.options import SCIENCE_STEPS
from ajetd.core.remedy import PLAIN_RETRY

# Kinds with an automatic, non-science fix in remedy.choose (besides the plain relaunches).
_OWN_FIX = frozenset({"network", "nccl_error", "logger_error", *PLAIN_RETRY})


def action_label(finding: Finding, allowed: Collection[str] = ()) -> str:
    """What ajetd does about a failed trial whose root cause is `finding`:
    `fatal` (never retried), `science fix allowed` / `science, no fix allowed`, `retryable`
    (relaunched, with the kind's own fix), `no automatic fix`, or `warning`."""
    kind, severity = finding.kind, finding.severity
    if severity == "fatal":
        return "fatal"
    if severity == "science" or kind in SCIENCE_STEPS:
        steps = SCIENCE_STEPS.get(kind, ())
        return "science fix allowed" if set(steps) & set(allowed) else "science, no fix allowed"
    if kind in _OWN_FIX or finding.remedy:
        return "retryable"
    if severity == "warning":
        return "warning"
    return "no automatic fix"


# How remedy.GiveUp and policy word why a failed run ends -> the note trials.md gives.
_ENDINGS = (
    ("is fatal, not retried", "fatal: not retried; the run ends"),
    ("science failure, not retried", "no fix allowed (a science kind with no fix): the run ends"),
    ("budget spent", "fix budget spent (max_trials): the run ends"),
    ("thrashing guard", "too many failures in a short time (thrashing guard): the run ends"),
    ("no science fix allowed", "no fix allowed ([ajetd] allow_fixes): the run ends"),
    ("at their bounds", "the allowed fixes are at their bounds: the run ends"),
    ("no science fix can be applied", "no fix can be applied (config unreadable): the run ends"),
    ("no known failure", "no known failure in the output, nothing to fix: the run ends"),
    ("no automatic fix", "no automatic fix for this kind: the run ends"),
    (" again", "the fix was tried and it failed again: the run ends"),
    ("cannot reach what runs", "the fix cannot reach the config that runs: the run ends"),
    ("hang rule", "stopped by the hang rule: the run ends"),
)


def ending_note(status: Status, reason: str) -> str:
    """The last trial's "what was done next" once the run ends with `status` for `reason`."""
    if status is Status.FAILED:
        for phrase, note in _ENDINGS:
            if phrase in reason:
                return note
        return "nothing more to try: the run ends"
    if status is Status.TIME_LIMIT:  # how it was then (hung, silent, enforced late), and
        return f"time limit reached, the run ends: {reason}"  # what is kept, as it says
    return {
        Status.STOPPED: "stopped by the user: the run ends",
        Status.LOST: "the session vanished: the run ends as lost",
        Status.PLATEAU: "stopped early on a plateau: the run ends with its data kept",
    }.get(status, "the run ends")
