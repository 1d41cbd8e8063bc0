"""What an exit code alone says about a failed trial: bash's own codes for a command it could
not run (127: not found, 126: not executable; the trial script's 126: the codebase could not
be entered); pure.

The shell prints why into the output (`bash: line 1: foo: command not found`) and the catalogue
reads that line; where the output holds no finding (the line never reached the log, a wrapper
swallowed it) the code itself still names the kind, so such a failure never ends with no
finding or a generic one. The catalogue ranks these kinds as echoes (a probe's `sh: 1: nvcc:
not found` is printed by programs that go on); the exit code saying the same puts the matching
finding first: then it is what ended the trial.

The other way round, an exit by a signal ajetd sent (its stop's SIGINT, SIGTERM, SIGKILL) and
the lines that echo it are no finding at all (`without_own_signals`).
"""

from __future__ import annotations

import re

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


# How an exit by each signal ajetd sends (`model.Signal`) is echoed in a trial's output: the
# shell's job-status word (`Killed`, `Terminated`, `Interrupt`; zh_CN's), its number and the
# exit status it makes (-N as Python gives it, 128 + N as a shell does)
_ECHOED = {
    "INT": (2, "interrupt", "中断"),
    "TERM": (15, "terminated", "已终止"),
    "KILL": (9, "killed", "已杀死"),
}


def _echo_pattern(number: int, word: str, word_zh: str) -> re.Pattern[str]:
    """A line that only reports an exit by signal `number`: the word alone, a shell's job line
    (`script: line 155: 1126 Killed  cmd`, `[1]+  Killed  cmd`), an exit status, a launcher's
    `signal 9 (SIGKILL) received`."""
    return re.compile(
        rf"^\s*({word}|{word_zh})\s*$"
        rf"|\bline \d+\s*:\s*\d+\s+{word}\b"
        rf"|^\s*\[\d+\][+-]?\s+{word}\b"
        rf"|\b(exit ?code|exitcode|return ?code|returncode|exit status)\W{{0,4}}"
        rf"(-{number}|{128 + number})\b"
        rf"|\bsignal {number}\b",
        re.IGNORECASE,
    )


EVIDENCE_READ = 400  # an echo is a short line: the first characters of a finding's evidence
ECHOES = {name: _echo_pattern(*spec) for name, spec in _ECHOED.items()}


def without_own_signals(found: tuple[Finding, ...], sent: tuple[str, ...]) -> tuple[Finding, ...]:
    """A trial's findings without those that only read an exit by a signal ajetd itself sent
    it (`sent`: a stop and its escalation, for a user, a time limit, a hang rule, a plateau):
    that exit and the shell's `Killed` for it are ajetd's doing, not a finding about the
    program (bash's `Killed` read as the machine out of memory); the run's reason already
    says it was stopped. A finding whose first line says more (`Out of memory: Killed
    process`) stays."""
    echoes = [ECHOES[name] for name in sent if name in ECHOES]
    if not echoes:
        return found
    return tuple(f for f in found if not any(e.search(f.evidence[:EVIDENCE_READ]) for e in echoes))


def before_own_signal(found: tuple[Finding, ...], last_line: int | None) -> tuple[Finding, ...]:
    """A trial's findings without those the program printed after ajetd's first signal
    (`last_line`: the lines its output held then; None: not known): its reaction to being
    stopped (Python interrupted while it starts, `Fatal Python error: init_import_site`, a
    traceback ending in KeyboardInterrupt, a collective aborted by it) is ajetd's doing, not a
    failure of the program. What ajetd found outside the output (line 0) stays."""
    if last_line is None:
        return found
    return tuple(f for f in found if f.line <= last_line)
