"""A shell word as bash reads it, for patterns that find a flag's value in a launch command
(AgentJet's `--conf`, its `--kill`), and AgentJet's process-killing switches, which ajetd
takes out of a launch command. Pure, and light: `ajetd status` and lint import it."""

from __future__ import annotations

import re

# A run of unquoted characters (not a space, quote, backslash or an operator), '...' (no '
# inside), "..." (\" and \\ escaped), \x. Each token's first character is no other's, and
# nothing follows the word in the pattern, so a word never backtracks into another split;
# inside "...", one character a step (a run there could split exponentially ways when the
# closing quote is missing): linear in the command's length.
SHELL_WORD = r"""(?:[^\s'"\\;|&<>()`]+|'[^']*'|"(?:[^"\\]|\\.)*"|\\.)+"""


# the flag wherever bash would still pass it: not part of a longer word (`--autokill-later`,
# `--autokill=...` is not AgentJet's flag), but followed by anything else: a space, `;`, a
# closing quote (`bash -c "... --autokill"`), a `\` continuation, a redirection (`>log`), the
# end; linear: no repetition. AgentJet's launcher turns `--autokill` into `--kill
# "ray|vllm|VLLM|python"`, so `--kill X` (`--kill=X`, or as argparse takes an unambiguous
# prefix: `--kil X`, `--ki X`) is the same switch spelt out (walk 86), with its value: one
# shell word (quoted or not: `SHELL_WORD`), after spaces, a `\` continuation or `=`
_KILL = (
    r"(?<![\w-])(?:--autokill(?![\w=-])"
    rf"|--(?:kill|kil|ki)(?:=|(?:[ \t]|\\\n)+)(?:{SHELL_WORD}))"
)
_AUTOKILL = re.compile(_KILL)


def killing_words(command: str) -> list[str]:
    """AgentJet's process-killing switches in `command` as written (`--autokill`, `--kill
    "ray|vllm|python"`), in order: what `protect_autokill` drops."""
    return [found.group() for found in _AUTOKILL.finditer(command)]


def protect_autokill(command: str) -> tuple[str, bool]:
    """Drop AgentJet's `--autokill` and `--kill X`, which kill every process of every user
    whose command line holds one of its words (python, ray, vllm: this daemon and other runs
    included); ajetd cleans up the run's own processes instead. Only the switch goes (with
    its value), with the spaces before it: the rest stays byte for byte (spaces in a quoted
    argument; a `\\` continuation, which still continues onto the next line or ends the
    command where the switch stood alone on the last)."""
    kept, at = [], 0
    for found in _AUTOKILL.finditer(command):
        kept.append(command[at : found.start()].rstrip(" \t"))
        at = found.end()
    if not kept:
        return command, False
    return "".join([*kept, command[at:]]), True


def autokill_note(command: str, autokill: str) -> str | None:
    """What becomes of the command's killing switches (`killing_words`) under `autokill`:
    a note for lint and the run's warnings; None where it has none, or only `--autokill`
    under protect (said at each launch as `--autokill removed`, as it always was)."""
    words = killing_words(command)
    if not words:
        return None
    shown = ", ".join(w if len(w) <= 60 else w[:59] + "…" for w in words)
    if autokill == "allow":
        return (
            f"exp_launch_command: {shown} kept (autokill: allow): AgentJet ends every process "
            "of every user whose command line matches (python: this daemon and every other run "
            "included)"
        )
    if words == ["--autokill"]:
        return None
    return (
        f"exp_launch_command: {shown} removed (autokill: protect): it would end every process "
        "of every user whose command line matches, ajetd and other runs included; ajetd ends "
        "the run's own processes itself (`autokill: allow` in [ajetd] keeps it)"
    )
