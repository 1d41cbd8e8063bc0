"""The folder a launch command's program runs in, where the command tells it. Pure.

Why: a trial runs its command from exp_codebase_dir, and the program resolves its relative
paths (the `--conf` it is given, AgentJet's `val_print_to_markdown_file_path`) against the
folder it runs in. `cd sub && python -m ajet.launcher --conf configs/x.yaml` writes its val
file under `sub/`; ajetd watched the codebase's, read nothing of the run's own, and once read
another run's records there as this one's (walk93 F2). So the leading `cd DIR` (also `pushd`,
inside `( ... )`, joined by `&&`, `;`, a line's end, or `|| exit`) of a literal DIR is
followed, each relative to the folder before it; setup commands before the program (`source`,
`export`, `VAR=x`, `mkdir`, `echo`, `module`, `conda`) are passed over. Where the command
moves in a way that cannot be read off it (`cd $DIR`, `cd -`, `popd`, a `cd` inside a quoted
`bash -c '...'`, one after the program began, a line that does not parse), the folder is
unknown and said as such: ajetd never guesses it.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

# a `cd`/`pushd`/`popd` anywhere in the text, quoted or not: each must be one this module
# followed, or the folder is unknown (a `bash -c 'cd x && ...'` moves the program too)
_MOVES = re.compile(r"(?:^|[\s;&|(`'\"])(?:cd|pushd|popd)(?=[\s;&|)`'\"]|$)")
_OPERATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", ";;", "|&"})
# commands that prepare the shell and are not the program: passed over before it
_SETUP = frozenset(
    {
        *("source", ".", "export", "set", "unset", "ulimit", "umask", "shopt", "hash"),
        *("echo", "printf", "true", ":", "mkdir", "module", "ml", "conda", "trap", "alias"),
    }
)
_UNSAFE = frozenset("$`*?[{")  # an expansion: the folder is the shell's to know
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Workdir:
    """Where the program runs, from exp_codebase_dir: the folders `cd`'d into before it, in
    order (each relative to the one before; `~` as the shell expands it), or `unknown`: the
    move ajetd cannot follow, as written (`cd $DIR`), "" where it can."""

    steps: tuple[str, ...] = ()
    unknown: str = ""

    def folder(self, codebase: str, expand: Callable[[str], str]) -> str | None:
        """The program's folder on the machine that runs it (`expand`: its `~`), or None
        where the command does not tell it."""
        if self.unknown:
            return None
        here = codebase
        for step in self.steps:
            here = os.path.normpath(os.path.join(here, expand(step)))
        return here

    def said(self) -> str:
        """The move as the warnings name it."""
        return self.unknown or " && ".join(f"cd {shlex.quote(s)}" for s in self.steps)


def _tokens(command: str) -> list[str] | None:
    """The command's words and operators, a line's end as `;`; None where it does not parse."""
    out: list[str] = []
    for line in command.replace("\\\n", " ").split("\n"):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        try:
            out += [*lexer, ";"]
        except ValueError:  # an open quote
            return None
    return out


def _simple(tokens: list[str], at: int) -> tuple[list[str], int]:
    """The words of the simple command at `at`, and where the operator after it is."""
    end = at
    while end < len(tokens) and tokens[end] not in _OPERATORS:
        end += 1
    return tokens[at:end], end


def _target(words: list[str]) -> str | None:
    """The folder a `cd`/`pushd` goes to, when it is a literal path; None where not."""
    kept = _unredirected(words[1:])
    args = [w for w in kept if w != "--" and not (w.startswith("-") and len(w) > 1)]
    if len(args) != 1 or any(c in _UNSAFE for c in args[0]) or args[0] == "-":
        return None
    return args[0]


def _unredirected(words: list[str]) -> list[str]:
    """`words` less their redirections (`> /dev/null`, `2>&1`: `pushd x > /dev/null`)."""
    out: list[str] = []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word and set(word) <= set("<>&"):
            skip = True
            continue
        if word.isdigit() and i + 1 < len(words) and set(words[i + 1]) <= set("<>&"):
            continue
        out.append(word)
    return out


def workdir(command: str) -> Workdir:
    """Where `command`'s program runs, as far as the command tells (module docstring)."""
    moves = len(_MOVES.findall(command))
    if not moves:
        return Workdir()
    tokens = _tokens(command)
    if tokens is None:
        return Workdir(unknown=_first_move(command))
    stack: list[tuple[str, ...]] = [()]
    followed = 0
    at = 0
    while at < len(tokens):
        word = tokens[at]
        if word == "(":
            stack.append(stack[-1])
            at += 1
            continue
        if word == ")":
            stack = stack[:-1] if len(stack) > 1 else stack
            at += 1
            continue
        if word in {";", "&&"}:
            at += 1
            continue
        if word == "||":  # what runs where the setup before it failed
            at = _past_alternative(tokens, at)
            continue
        if word in _OPERATORS:  # a pipe, a `&`: what follows is not the program's shell
            break
        words, end = _simple(tokens, at)
        after = tokens[end] if end < len(tokens) else ";"
        program = next((w for w in words if not _ASSIGNMENT.match(w)), "")
        if program in {"cd", "pushd", "popd"}:
            target = _target(words[words.index(program) :]) if program != "popd" else None
            if target is None or after in {"|", "&", "|&"}:
                return Workdir(unknown=" ".join(words))
            stack[-1] = (*stack[-1], target)
            followed += 1
            at = _past_alternative(tokens, end) if after == "||" else end
            continue
        if (program in _SETUP or not program) and after not in {"|", "|&", "&"}:
            at = end
            continue
        break  # the program: it runs in the folder reached so far
    if followed != moves:  # a move after the program began, or one inside a quoted string
        return Workdir(unknown=_first_move(command, skip=followed))
    return Workdir(steps=stack[-1])


def _past_alternative(tokens: list[str], at: int) -> int:
    """Past `|| exit 1` (what runs where a `cd` fails): to the next `;` or `&&`."""
    while at < len(tokens) and tokens[at] not in {";", "&&"}:
        at += 1
    return at


def _first_move(command: str, skip: int = 0) -> str:
    """The text of the move ajetd could not follow, for the warnings (up to 60 characters)."""
    found = list(_MOVES.finditer(command))
    match = found[min(skip, len(found) - 1)]
    start = match.start() + (1 if command[match.start()] in " \t;&|(`'\"" else 0)
    text = re.split(r"&&|;|\n", command[start:], maxsplit=1)[0].strip()
    return text if len(text) <= 60 else text[:59] + "…"
