"""Which environment variable names a run may set (`[ajetd] env:`, a user kind's `{env: ...}`
fix): the values are exported inside the trial's script (`core.trialscript`), after the script
set its own variables and before it runs the program, so a name the script or bash itself reads
from then on changes the script, not only the program. Those are refused, each saying why.
"""

from __future__ import annotations

import re

from ajetd.core.shown import show
from ajetd.core.trialscript import STOP_CODE

MAX_NAME_CHARS = 256
# a whole name: `fullmatch`, never `match` with `$` (which lets a name end in a newline, and the
# newline then ends the script's `export` line)
_SHAPE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# what the script exports for the program itself
SET_BY_AJETD = ("AJETD_RUN_ID", "AJETD_RESULT_DIR", "AJETD_TRIAL", "VIRTUAL_ENV")
# the script's own variables it reads after the run's environment is exported, and how it
# finds its tmux pane and server (its exit note on a full disk): `env: {exit_file: done.txt}`
# made it write the trial's exit record there
SCRIPT_NAMES = ("exit_file", "hup_file", STOP_CODE, "TMUX", "TMUX_PANE")
# names bash gives a meaning of its own: read-only ones (their export fails; in POSIX mode the
# script dies of it before it records anything) and those that change how it runs the script
BASH_NAMES = (
    "BASHOPTS",
    "BASH_VERSINFO",
    "EUID",
    "EXECIGNORE",
    "IFS",
    "POSIXLY_CORRECT",
    "PPID",
    "SHELLOPTS",
    "UID",
)


def env_name_problem(name: object, admitted: bool = False) -> str:
    """Why a run's environment may not set `name` ('' when it may). `admitted`: the run's
    stored blueprint, read again (a restart, its reports): only the name's shape is checked,
    so a name a later ajetd refuses never takes a live run's other options away (the whole
    `[ajetd]` part fell back to its defaults)."""
    if not isinstance(name, str) or len(name) > MAX_NAME_CHARS or not _SHAPE.fullmatch(name):
        return f"{show(name)} is not a valid environment variable name"
    if admitted:
        return ""
    if name in SET_BY_AJETD:
        return f"{name} is set by ajetd and cannot be overridden"
    if name == "PATH":
        return (
            "PATH is set by ajetd (the venv's bin first, as `source .venv/bin/activate` does); "
            "to add a folder, do it in the launch command: `export PATH=/opt/x/bin:$PATH && ...`"
        )
    if name == "CUDA_VISIBLE_DEVICES":
        return "CUDA_VISIBLE_DEVICES is set by ajetd from `gpus:`"
    if name in SCRIPT_NAMES:
        return (
            f"{name} is a name the trial's script keeps for itself (it would change where the "
            "script records the exit); choose another name"
        )
    if name in BASH_NAMES:
        return f"{name} is bash's own and would change how the trial's script runs"
    return ""
