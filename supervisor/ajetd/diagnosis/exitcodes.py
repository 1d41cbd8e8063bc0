"""What an exit code alone says about a failed trial: bash's own codes for a command it could
not run (127: not found, 126: not executable; the trial script's 126: the codebase could not
be entered); pure.

The shell prints why into the output (`bash: line 1: foo: command not found`) and the catalogue
reads that line; where the output holds no finding (the line never reached the log, a wrapper
swallowed it) the code itself still names the kind, so such a failure never ends with no
finding or a generic one.
"""

from __future__ import annotations

from ajetd.core.finding import Finding
from ajetd.diagnosis.catalogue import BY_NAME

SHELL_CODES = {
    127: (
        "command_not_found",
        "exit code 127: the shell's code for a command it could not find (no line of the "
        "output names it)",
    ),
    126: (
        "not_executable",
        "exit code 126: the shell's code for a command it found but could not run (the trial "
        "script's too, when it cannot enter the codebase dir); no line of the output names it",
    ),
}


def with_exit_code(found: tuple[Finding, ...], exit_code: int | None) -> tuple[Finding, ...]:
    """A failed trial's findings, with the kind its exit code names where they name none."""
    said = SHELL_CODES.get(exit_code) if exit_code is not None else None
    if said is None or found:
        return found
    name, evidence = said
    kind = BY_NAME[name]
    return (Finding(kind.name, kind.severity.value, 0, evidence, kind.explanation, kind.fix),)
