"""What an exit code alone says about a failed trial: bash's own codes for a command it could
not run (127: not found, 126: not executable; the trial script's 126: the codebase could not
be entered); pure.

The shell prints why into the output (`bash: line 1: foo: command not found`) and the catalogue
reads that line; where the output holds no finding (the line never reached the log, a wrapper
swallowed it) the code itself still names the kind, so such a failure never ends with no
finding or a generic one. The catalogue ranks these kinds as echoes (a probe's `sh: 1: nvcc:
not found` is printed by programs that go on); the exit code saying the same puts the matching
finding first: then it is what ended the trial.
"""

from __future__ import annotations

from ajetd.core.finding import Finding
from ajetd.diagnosis.catalogue import BY_NAME

# the kinds whose lines say why the shell exited with each code
MATCHING = {127: ("command_not_found",), 126: ("not_executable", "no_workdir")}
SAID_BY_SHELL = frozenset(name for names in MATCHING.values() for name in names)
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
    """A failed trial's findings, with the kind its exit code names where they name none, and
    the finding that says why the shell gave that code first where they hold one."""
    if exit_code is None or exit_code not in SHELL_CODES:
        return found
    if found:
        agreeing = [f for f in found if f.kind in MATCHING[exit_code]][:1]
        return (*agreeing, *(f for f in found if f not in agreeing))
    name, evidence = SHELL_CODES[exit_code]
    kind = BY_NAME[name]
    return (Finding(kind.name, kind.severity.value, 0, evidence, kind.explanation, kind.fix),)
