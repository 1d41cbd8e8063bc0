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

`CDPATH`: bash looks a `cd name` up in it first (a name not starting `/`, `.` or `..`; each
folder of it in turn, then the current one), so `cd sub` may go to `/elsewhere/sub`. Its
value is the blueprint's `env:` (`workdir`'s `env`), as the command then sets it (`CDPATH=...`,
`export CDPATH=...`, `unset CDPATH`, `CDPATH=/x cd sub`); the trial's script unsets any it
inherited before it exports the blueprint's (`core.trialscript`), so nothing else sets it.
Such a step is looked up where the folder is asked for, on the machine that runs it
(`Workdir.folder`'s `isdir`), or the folder is unknown; a value that cannot be read off the
command (`CDPATH=$X`) makes the step unknown. Not followed: what a sourced file or a script
the command runs does (`source env.sh` may `cd` or set CDPATH; `./run.sh` may `cd` first).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ajetd.core.shelltokens import OPERATORS, Lexed, simple
from ajetd.core.shelltokens import tokens as lex
from ajetd.core.shellwords import ASSIGNMENT, program_word

_MOVERS = frozenset({"cd", "pushd", "popd"})
# a command line that does not parse (an open quote): the shell refuses it; any `cd` word in it
# makes the folder unknown, said from that word
_RAW_MOVE = re.compile(r"(?<![^\s;&|(])(?:cd|pushd|popd)(?![^\s;&|)])")
# commands that prepare the shell and are not the program: passed over before it
_SETUP = frozenset(
    {
        *("source", ".", "export", "set", "unset", "ulimit", "umask", "shopt", "hash"),
        *("echo", "printf", "true", ":", "mkdir", "module", "ml", "conda", "trap", "alias"),
    }
)
_UNSAFE = frozenset("$`*?[{")  # an expansion: the folder is the shell's to know


@dataclass(frozen=True)
class Workdir:
    """Where the program runs, from exp_codebase_dir: the folders `cd`'d into before it, in
    order (each relative to the one before; `~` as the shell expands it), or `unknown`: the
    move ajetd cannot follow, as written (`cd $DIR`), "" where it can."""

    steps: tuple[str, ...] = ()
    unknown: str = ""
    # the steps bash looks up in CDPATH: each one's index in `steps`, and CDPATH's value then
    searched: tuple[tuple[int, str], ...] = ()

    def folder(
        self,
        codebase: str,
        expand: Callable[[str], str],
        isdir: Callable[[str], bool] | None = None,
    ) -> str | None:
        """The program's folder on the machine that runs it (`expand`: its `~`), or None
        where the command does not tell it. A step bash looks up in CDPATH (`searched`) goes
        where bash's `cd` would: the first of CDPATH's folders that holds it (`isdir`, on that
        machine), else the current folder's; None where `isdir` is not given, or CDPATH has
        more than `MAX_CDPATH` folders."""
        if self.unknown:
            return None
        searched = dict(self.searched)
        here: str | None = codebase
        for at, step in enumerate(self.steps):
            assert here is not None
            target = expand(step)
            if at in searched:
                here = _looked_up(here, target, searched[at], expand, isdir)
                if here is None:
                    return None
            else:
                here = os.path.normpath(os.path.join(here, target))
        return here

    def said(self) -> str:
        """The move as the warnings name it."""
        return self.unknown or " && ".join(f"cd {shlex.quote(s)}" for s in self.steps)


MAX_CDPATH = 16  # folders of CDPATH looked in (each one a lookup, over SSH a round trip)


def _looked_up(
    here: str,
    target: str,
    cdpath: str,
    expand: Callable[[str], str],
    isdir: Callable[[str], bool] | None,
) -> str | None:
    """Where bash's `cd target` goes from `here` with CDPATH `cdpath`: the first of its
    folders (relative ones from `here`, an empty one is `here`, `~` expanded) that holds
    `target` as a folder, else `here`'s; None where that cannot be looked at."""
    folders = cdpath.split(":")
    if isdir is None or len(folders) > MAX_CDPATH:
        return None
    for folder in folders:
        base = os.path.join(here, expand(folder)) if folder else here
        candidate = os.path.normpath(os.path.join(base, target))
        if isdir(candidate):
            return candidate
    return os.path.normpath(os.path.join(here, target))  # bash tries the folder itself last


def _searched(target: str) -> bool:
    """Whether bash looks `target` up in CDPATH: not from `/` or `~` (a path from the root
    once expanded), nor `.` or `..`, nor starting `./` or `../`."""
    return not (target.startswith(("/", "~", "./", "../")) or target in {".", ".."})


_UNREAD = "\0"  # CDPATH set to a value that cannot be read off the command (`CDPATH=$X`)


def _cdpath_set(words: list[str], cdpath: str | None) -> str | None:
    """CDPATH after the simple command `words` (assignments alone, `export`, `unset`), from
    `cdpath` before it: `_UNREAD` where it is set to an expansion; None where unset or empty
    (bash looks nothing up then)."""
    program = program_word(words)
    if program in {"", "export"}:
        for word in words:
            name, equals, value = word.partition("=")
            if equals and name == "CDPATH":
                cdpath = _UNREAD if _UNSAFE & set(value) or "~" in value else value or None
    elif program == "unset" and "CDPATH" in words and "-f" not in words:
        cdpath = None
    return cdpath


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


# words after which the next is in command position still (`builtin cd x`, `if cd x; then`)
_PREFIXES = frozenset(
    {"builtin", "command", "if", "then", "else", "elif", "do", "while", "until", "{", "!", "time"}
)
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish"})
_NESTING = 8  # `eval eval ... cd`: deeper than this, a move is assumed


# commands that run the command after them (`env A=1 bash -c '...'`, `timeout 5 sh -c ...`):
# their options, assignments and a duration are passed over to it
_WRAPPERS = frozenset({"env", "sudo", "nohup", "nice", "exec", "setsid", "stdbuf", "timeout"})
_WRAPPER_ARG = re.compile(r"-.*|[A-Za-z_][A-Za-z0-9_]*=.*|\d+(?:\.\d+)?[smhd]?", re.S)


def _program(words: list[str]) -> int:
    """Where the word in command position is among a simple command's `words`: past
    assignments, the words that keep the next in command position, and a wrapper with its
    options (len(words): none)."""
    at = 0
    while at < len(words):
        if ASSIGNMENT.match(words[at]) or words[at] in _PREFIXES:
            at += 1
        elif os.path.basename(words[at]) in _WRAPPERS:
            at += 1
            while at < len(words) and _WRAPPER_ARG.fullmatch(words[at]):
                at += 1
        else:
            break
    return at


def _moves_in(words: list[str], depth: int) -> bool:
    """Whether the simple command `words` moves, or runs a script that does (`bash -c '...'`,
    `eval ...`: a move ajetd does not follow, so the folder is unknown)."""
    at = _program(words)
    if at == len(words):
        return False
    program, args = words[at], words[at + 1 :]
    if program in _MOVERS:
        return True
    if program == "eval":
        return _moves(" ".join(args), depth + 1)
    if os.path.basename(program) in _SHELLS:
        flag = next((i for i, w in enumerate(args) if re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", w)), -1)
        return flag >= 0 and flag + 1 < len(args) and _moves(args[flag + 1], depth + 1)
    return False


def _moves(command: str, depth: int = 0) -> bool:
    """Whether `command` has a `cd`/`pushd`/`popd` in command position, its own or in a
    script it runs (`bash -c`, `eval`); a script that does not parse: any `cd` word in it."""
    lexed = lex(command) if depth <= _NESTING else None
    if lexed is None:
        return _RAW_MOVE.search(command) is not None
    return bool(_move_starts(lexed, depth))


def _move_starts(lexed: Lexed, depth: int = 0) -> list[tuple[int, int]]:
    """Each simple command that moves (`_moves_in`), as where its words begin and end."""
    found: list[tuple[int, int]] = []
    at = 0
    while at < len(lexed.words):
        if lexed.words[at] in OPERATORS:
            at += 1
            continue
        words, end = simple(lexed.words, at)
        if _moves_in(words, depth):
            found.append((at, end))
        at = end
    return found


def workdir(command: str, env: Mapping[str, str] | None = None) -> Workdir:
    """Where `command`'s program runs, as far as the command tells (module docstring): only
    words in command position move it; a `cd` in an argument, a quote or a comment does not.
    `env`: the environment the command is run with on top of the trial's (the blueprint's
    `env:` and its fixes'), where its CDPATH is read."""
    lexed = lex(command)
    if lexed is None:
        raw = _RAW_MOVE.search(command)
        if raw is None:
            return Workdir()
        text = re.split(r"&&|;|\n", command[raw.start() :], maxsplit=1)[0].strip()
        return Workdir(unknown=text if len(text) <= 60 else text[:59] + "…")
    moves = _move_starts(lexed)
    if not moves:
        return Workdir()
    tokens = lexed.words
    # per subshell: the steps so far (each with the CDPATH bash looks it up in, or None), and
    # CDPATH's value there
    start = _cdpath_set([f"CDPATH={(env or {}).get('CDPATH', '')}"], None)
    stack: list[tuple[tuple[tuple[str, str | None], ...], str | None]] = [((), start)]
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
        if word in OPERATORS:  # a pipe, a `&`: what follows is not the program's shell
            break
        words, end = simple(tokens, at)
        after = tokens[end] if end < len(tokens) else ";"
        program = program_word(words)
        steps, cdpath = stack[-1]
        if program in _MOVERS:
            step = _step(words, program, cdpath)
            if step is None or after in {"|", "&", "|&"}:
                return Workdir(unknown=lexed.written(command, at, end))
            stack[-1] = ((*steps, step), cdpath)
            followed += 1
            at = _past_alternative(tokens, end) if after == "||" else end
            continue
        if (program in _SETUP or not program) and after not in {"|", "|&", "&"}:
            stack[-1] = (steps, _cdpath_set(words, cdpath))
            at = end
            continue
        break  # the program: it runs in the folder reached so far
    if followed != len(moves):  # a move after the program began, or in a script it runs
        return Workdir(unknown=lexed.written(command, *moves[min(followed, len(moves) - 1)]))
    steps = stack[-1][0]
    searched = tuple((i, looked) for i, (_, looked) in enumerate(steps) if looked is not None)
    return Workdir(steps=tuple(target for target, _ in steps), searched=searched)


def _step(words: list[str], program: str, cdpath: str | None) -> tuple[str, str | None] | None:
    """The folder the move `words` (its `program` a `cd` or `pushd`) goes to, with the CDPATH
    bash looks it up in (None: none); None where that cannot be read off it (`cd $DIR`,
    `popd`, `CDPATH=$X cd sub`)."""
    at = words.index(program)
    target = _target(words[at:]) if program != "popd" else None
    if target is None:
        return None
    looked = _cdpath_set(words[:at], cdpath) if _searched(target) else None  # `CDPATH=/x cd`
    return None if looked == _UNREAD else (target, looked)


def _past_alternative(tokens: list[str], at: int) -> int:
    """Past `|| exit 1` (what runs where a `cd` fails): to the next `;` or `&&`."""
    while at < len(tokens) and tokens[at] not in {";", "&&"}:
        at += 1
    return at
