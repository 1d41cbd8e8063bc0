"""A shell word as bash reads it, for patterns that find a flag's value in a launch command
(AgentJet's `--conf`, its `--kill`), a simple command's program past its `NAME=value`
assignments, and AgentJet's process-killing switches, which ajetd
takes out of a launch command. Pure, and light: `ajetd status` and lint import it."""

from __future__ import annotations

import re

# A run of unquoted characters (not a space, quote, backslash or an operator), '...' (no '
# inside), "..." (\" and \\ escaped), \x. Each token's first character is no other's, and
# nothing follows the word in the pattern, so a word never backtracks into another split;
# inside "...", one character a step (a run there could split exponentially ways when the
# closing quote is missing): linear in the command's length.
SHELL_WORD = r"""(?:[^\s'"\\;|&<>()`]+|'[^']*'|"(?:[^"\\]|\\.)*"|\\.)+"""
# `NAME=value` before a simple command's program (`CUDA_VISIBLE_DEVICES=0 python ...`): a
# variable the shell sets for it, not its program (`match` on a word split as the shell would)
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def program_word(words: list[str]) -> str:
    """The program of a simple command split into `words`: its first word that is no
    `NAME=value` assignment (`ASSIGNMENT`); '' where every word is one, or there are none."""
    return next((w for w in words if not ASSIGNMENT.match(w)), "")


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


def protect_autokill(command: str, instead: str = "") -> tuple[str, bool]:
    """Drop AgentJet's `--autokill` and `--kill X`, which kill every process of every user
    whose command line holds one of its words (python, ray, vllm: this daemon and other runs
    included); ajetd cleans up the run's own processes instead. Only the switch goes (with
    its value), with the spaces before it: the rest stays byte for byte (spaces in a quoted
    argument; a `\\` continuation, which still continues onto the next line or ends the
    command where the switch stood alone on the last). `instead`: a word put where the first
    switch stood (SKIP_GPU_CHECK, which the switch had turned off)."""
    kept, at = [], 0
    for found in _AUTOKILL.finditer(command):
        kept.append(command[at : found.start()].rstrip(" \t"))
        if instead and len(kept) == 1:
            kept.append(f" {instead}")
        at = found.end()
    if not kept:
        return command, False
    return "".join([*kept, command[at:]]), True


# AgentJet's launcher, without `--autokill` or `--kill`, runs `check_avail_gpu(0.95)`: every
# GPU of the machine (nvidia-smi, which ignores CUDA_VISIBLE_DEVICES) must be 95 % free, or it
# raises `GPU memory check failed` (ajet/launcher.py, ajet/utils/launch_utils.py). Dropping
# the switch turns that check on, so ajetd puts this in its place where the launcher has it
# (AgentJet from 2026-01-13 on): the run's GPUs are its own by ajetd's placement.
SKIP_GPU_CHECK = "--skip-check-avail-gpu"
# AgentJet's launcher in a command: `python -m ajet.launcher`, `python ajet/launcher.py`, or its
# console script `ajet` (pyproject's `ajet = "ajet.launcher:main"`) as a program word; the
# flag means nothing to another program (a wrapper, fakejet), which would refuse it
_AJET_LAUNCHER = re.compile(r"\bajet[./]launcher\b|(?:^|[\s;&|(/])ajet(?=[ \t]|$)", re.MULTILINE)


def runs_ajet_launcher(command: str) -> bool:
    """Whether `command` runs AgentJet's launcher, which SKIP_GPU_CHECK is a flag of."""
    return _AJET_LAUNCHER.search(command) is not None


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


_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"  # zero-width: no space on screen, none to bash


def odd_space(command: str) -> str | None:
    """A problem where the command holds, outside quotes, a space bash does not split words
    at: a no-break space (U+00A0, what text copied from a web page, a chat or a PDF holds), a
    full-width one (U+3000, a Chinese IME's) or a zero-width character. Bash reads `python\\u00a0-m`
    as one word (`python -m: command not found`), so the run failed at once with a baffling
    error (walk 86). Named with its code point, line and column and the text before it; one
    pass. Inside quotes such a character is an argument's own."""
    import unicodedata  # here: only a command that holds one pays for the names

    quote = ""
    line, column = 1, 0
    escaped = False
    for at, char in enumerate(command):
        column += 1
        if char == "\n":
            line, column = line + 1, 0
        if escaped:
            escaped = False
        elif quote == "'":
            quote = "" if char == "'" else quote
        elif quote:
            escaped = char == "\\"
            quote = "" if char == '"' else quote
        elif char == "\\":
            escaped = True
        elif char in "'\"":
            quote = char
        elif (char.isspace() and char not in " \t\n") or char in _INVISIBLE:
            name = unicodedata.name(char, "space").lower()
            before = command[max(0, at - 20) : at].rsplit("\n", 1)[-1]
            return (
                f"exp_launch_command: holds U+{ord(char):04X} ({name}) at line {line}, column "
                f"{column}, after {before!r}: bash does not split words there, so it reads the "
                "words on either side as one; type a plain space (or remove it)"
            )
    return None
