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
import shlex
import shutil

from ajetd.core.shellwords import program_word

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


def missing_program(command: str, codebase: str, venv_exe: str, path: str) -> str | None:
    """A warning where the command's first program cannot run here: not found in the venv's
    `bin` or on `path` (the trial's PATH less the venv), or a file named by a path that is
    missing or not executable; None where it can, or where that cannot be told (a shell word
    first, an expansion, a command that does not parse)."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return None
    first = program_word(words)
    if not first or first in _NOT_PROGRAMS or any(c in first for c in "$`*?~"):
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
