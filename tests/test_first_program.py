"""The first program of a launch command, read as bash tokenizes it: a group's `(` or `{` (with
or without a space after it), `!`, `time`, leading assignments, redirections and the wrappers
`nohup`, `exec`, `command`, `env` are passed over to the program they run. `(cd DIR && python
...)` was warned to end at once with exit 127, `(cd` not found (walk97 F7)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.hosts.program import first_program, missing_program

# what may stand before a simple command, as bash allows it: groups and `!`/`time` first
GROUPS = st.lists(st.sampled_from(["(", "( ", "{ ", "! ", "time ", "time -p "]), max_size=4)
PREFIXES = st.lists(
    st.sampled_from(
        [
            "A=1 ",
            "B='x y' ",
            "nohup ",
            "exec ",
            "exec -a nm ",
            "env ",
            "env A=B ",
            "env -i ",
            "env -u X ",
            "command ",
            "2>/dev/null ",
            "> /dev/null ",
            "LANG=C.UTF-8 ",
        ]
    ),
    max_size=4,
)
ARGS = st.sampled_from(["", " -x", " a 'b c'", " 2>&1 | tee /dev/null", " > /dev/null 2>&1"])
HERE = shutil.which("ls") or "/bin/ls"
VENV_PYTHON = sys.executable


def _composed(groups: list[str], prefixes: list[str], program: str, args: str) -> str:
    """The command with each group closed as bash wants it (`)`, `; }`)."""
    closing = "".join(")" if g.startswith("(") else "; }" for g in reversed(groups) if g[0] in "({")
    body = "".join(prefixes) + program + args
    opened = "".join(groups)
    return opened + (body if not closing else f"{body}{closing}")


def _valid(command: str) -> bool:
    done = subprocess.run(["bash", "-n", "-c", command], capture_output=True, check=False)
    return done.returncode == 0


@settings(max_examples=150, deadline=None)
@given(GROUPS, PREFIXES, ARGS)
def test_no_false_127_for_a_program_that_is_there(
    groups: list[str], prefixes: list[str], args: str
) -> None:
    """Any valid composition around a program on the PATH: no warning, and the program read
    is that program (not `(ls`, not `nohup`)."""
    command = _composed(groups, prefixes, "ls", args)
    if not _valid(command):
        return  # a composition bash refuses is not one a run could have
    assert first_program(command) == "ls", command
    assert missing_program(command, "/", VENV_PYTHON, os.path.dirname(HERE)) is None, command


@settings(max_examples=150, deadline=None)
@given(GROUPS, PREFIXES, ARGS)
def test_a_missing_program_is_named_as_bash_would_run_it(
    groups: list[str], prefixes: list[str], args: str
) -> None:
    command = _composed(groups, prefixes, "no-such-program-97", args)
    if not _valid(command):
        return
    said = missing_program(command, "/", VENV_PYTHON, os.path.dirname(HERE))
    assert said is not None and said.startswith("exp_launch_command: no-such-program-97 is not")


def test_the_walks_subshell_and_what_cannot_be_told() -> None:
    path = os.path.dirname(HERE)
    assert missing_program("(cd /tmp && ls -x)", "/", VENV_PYTHON, path) is None
    assert first_program("(cd /tmp && ls)") == "cd"
    # the command's own PATH, a wrapper that runs elsewhere or nothing: not judged
    for command in ("PATH=/opt/x:$PATH nope", "env -C /x nope", "command -v nope", "f() { nope; }"):
        assert missing_program(command, "/", VENV_PYTHON, path) is None, command
    # a here document's lines are no commands; a line of assignments runs none
    assert first_program("cat > n.md <<EOF\n(nope\nEOF\nls") == "cat"
    assert first_program("A=1 B=2") == ""
