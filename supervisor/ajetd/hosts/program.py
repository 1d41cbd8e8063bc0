"""Whether the program a launch command starts can be found where it will run (this machine).

A command whose first program is not on the trial's PATH (`uv run ...` with no uv installed,
`./train.sh` missing or not executable) ends at once with bash's 127 or 126: lint said ok and
the run failed seconds after its launch. Said as a warning, never a problem: the command may
make the program available itself (`source x && ...` is not judged), and the daemon's PATH,
which the trial inherits, may hold more than the shell `ajetd lint` was typed in (admission
checks again with the daemon's own).
"""

from __future__ import annotations

import os
import re
import shutil

from ajetd.core.shelltokens import tokens as lex
from ajetd.core.shellwords import ASSIGNMENT

# Words that are not a program on PATH: shell keywords and builtins a command may begin with
# (what follows them is the shell's to run), and the python the trial script provides itself.
_NOT_PROGRAMS = frozenset(
    # bash's keywords and builtins (`compgen -k -b`), then the trial script's own python
    [
        "!",
        "[[",
        "]]",
        "{",
        "}",
        "(",
        "case",
        "coproc",
        "do",
        "done",
        "elif",
        "else",
        "esac",
        "fi",
        "for",
        "function",
        "if",
        "in",
        "select",
        "then",
        "time",
        "until",
        "while",
        ".",
        ":",
        "[",
        "alias",
        "bg",
        "bind",
        "break",
        "builtin",
        "caller",
        "cd",
        "command",
        "compgen",
        "complete",
        "compopt",
        "continue",
        "declare",
        "dirs",
        "disown",
        "echo",
        "enable",
        "eval",
        "exec",
        "exit",
        "export",
        "false",
        "fc",
        "fg",
        "getopts",
        "hash",
        "help",
        "history",
        "jobs",
        "kill",
        "let",
        "local",
        "logout",
        "mapfile",
        "popd",
        "printf",
        "pushd",
        "pwd",
        "read",
        "readarray",
        "readonly",
        "return",
        "set",
        "shift",
        "shopt",
        "source",
        "suspend",
        "test",
        "times",
        "trap",
        "true",
        "type",
        "typeset",
        "ulimit",
        "umask",
        "unalias",
        "unset",
        "wait",
        "python",
        "python3",
    ]
)
# what bash reads before the program and is not it: a group's opening, `!`, `time`
_BEFORE = frozenset({"(", "{", "!", ";", "&&", "||"})
# a wrapper that runs the words after it as the program: its options that take a word, and
# those after which it runs none or elsewhere (None: cannot be told)
_WRAPPERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "time": (frozenset(), frozenset()),
    "nohup": (frozenset(), frozenset()),
    "exec": (frozenset({"-a"}), frozenset()),
    "command": (frozenset(), frozenset({"-v", "-V"})),
    "env": (frozenset({"-u", "--unset"}), frozenset({"-C", "--chdir", "-S", "--split-string"})),
}
_REDIRECT = re.compile(r"\d*(?:[<>]|>>|&>>?|[<>]&|>\||<>|<<<?)")
_UNSURE = frozenset("$`*?~()[]{}")  # an expansion, a glob, a function or a group


def first_program(command: str) -> str | None:
    """The program bash runs first for `command`, as written (`python`, `./train.sh`), read
    as bash tokenizes it (`core.shelltokens`): past a group's `(` or `{` (with no space
    after it too: `(cd DIR && ...)` was read as a program named `(cd`, walk97 F7), `!`,
    `time`, leading assignments, redirections and the wrappers `nohup`, `exec`, `command` and
    `env` with their options; "" where the command runs none (only assignments), None where
    it cannot be told: it does not parse, it sets its own PATH, a wrapper runs the program
    elsewhere (`env -C`, `env -S`) or not at all (`command -v`)."""
    lexed = lex(command)
    if lexed is None:
        return None
    words, at = lexed.words, 0
    while at < len(words):
        word = words[at]
        if word in _BEFORE or (word.isdigit() and _REDIRECT.fullmatch(_next(words, at))):
            at += 1
        elif _REDIRECT.fullmatch(word):
            at += 2  # the operator and its file
        elif ASSIGNMENT.match(word):
            if word.startswith("PATH="):
                return None  # the program is looked up on a PATH of the command's own
            at += 1
        elif word in _WRAPPERS:
            at = _past_wrapper(words, at)
            if at < 0:
                return None
        else:
            return word
    return ""


def _next(words: list[str], at: int) -> str:
    return words[at + 1] if at + 1 < len(words) else ""


def _past_wrapper(words: list[str], at: int) -> int:
    """Where the words a wrapper at `at` runs begin (past its options, and for `env` its
    assignments but PATH's); -1 where the program is not to be told (`_WRAPPERS`)."""
    with_word, unsure = _WRAPPERS[words[at]]
    at += 1
    while at < len(words) and words[at].startswith("-") and len(words[at]) > 1:
        option = words[at].split("=", 1)[0]
        if option in unsure or words[at] == "--":
            return -1 if option in unsure else at + 1
        at += 2 if option in with_word and "=" not in words[at] else 1
    return at


def missing_program(command: str, codebase: str, venv_exe: str, path: str) -> str | None:
    """A warning where the command's first program (`first_program`) cannot run here: not
    found in the venv's `bin` or on `path` (the trial's PATH less the venv), or a file named
    by a path that is missing or not executable; None where it can, or where that cannot be
    told (a shell word first, an expansion, a command that does not parse)."""
    first = first_program(command)
    if not first or first in _NOT_PROGRAMS or any(c in _UNSURE for c in first):
        return None
    if "/" in first:  # a path: bash runs that file, relative to the codebase (its cd)
        file = first if os.path.isabs(first) else os.path.join(codebase, first)
        if not os.path.exists(file):
            return (
                f"exp_launch_command: {first} does not exist (from exp_codebase_dir "
                f"{codebase}): the run would end at once with exit 127"
            )
        if os.path.isfile(file) and not os.access(file, os.X_OK):
            return (
                f"exp_launch_command: {first} is not executable (chmod +x it, or run it "
                "with bash): the run would end at once with exit 126"
            )
        return None
    venv_bin = os.path.dirname(venv_exe)
    if shutil.which(first, path=os.pathsep.join(p for p in (venv_bin, path) if p)) is not None:
        return None
    return (
        f"exp_launch_command: {first} is not in the venv's bin ({venv_bin}) nor on the PATH "
        "here: the run would end at once with exit 127 (command not found), unless the "
        "command makes it available first"
    )
