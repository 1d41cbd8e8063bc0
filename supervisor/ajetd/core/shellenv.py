"""What a launch command sets in its own environment, read from its words; pure.

`SWANLAB_API_KEY=k python -m ajet.launcher ...`, `export WANDB_MODE=offline && ...` and
`env K=V cmd` set variables for the program as much as `[ajetd] env:` does, so the preflight
(a logger that needs a key, NeMo-RL's wandb) counts them. Words are read as bash splits them
(`shelltokens`: quotes removed, a continued line joined, a here document's lines input, not
commands); a command whose words cannot be read (an open quote) sets nothing that can be
known.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ajetd.core.shelltokens import OPERATORS
from ajetd.core.shelltokens import words as shell_words

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BETWEEN = OPERATORS | {"\n"}  # a simple command ends at an operator or a line's end


def command_env(command: str) -> dict[str, str]:
    """The variables `command` assigns for what it runs: `K=V` words at the start of a simple
    command, after `export`, and after `env` before its command."""
    words = shell_words(command)
    if words is None:
        return {}
    found: dict[str, str] = {}
    mode = "start"  # start: a command's first words; export / env: after that word; "": args
    for word in words:
        if word in _BETWEEN:
            mode = "start"
            continue
        name, eq, value = word.partition("=")
        if eq and _NAME.fullmatch(name) and mode:
            found[name] = value
        elif mode == "start" and word in ("export", "env"):
            mode = word
        elif mode != "export" and not (mode == "env" and word.startswith("-")):
            mode = ""  # the command itself: what follows are its arguments
    return found


_PASSED = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})")


def launch_env(
    base: Mapping[str, str], options_env: Mapping[str, str], command: str
) -> dict[str, str]:
    """The environment the launch command's program sees, as far as it can be known here:
    the daemon's (`base`), the blueprint's `[ajetd] env:`, then what the command sets. A value
    the shell would expand counts only where it can be known: one variable passed on
    (`K=$K`, `K=${K}`) is that variable's value here, or unset; anything else with a `$` or a
    backquote (`${K:-x}`, `$(cat key)`) leaves the variable as it was, so a key passed on
    from a shell that has none is not taken as set."""
    env = {**base, **options_env}
    for name, value in command_env(command).items():
        if "$" not in value and "`" not in value:
            env[name] = value
            continue
        passed = _PASSED.fullmatch(value)
        if passed is None:
            continue
        if (got := env.get(passed.group(1) or passed.group(2))) is not None:
            env[name] = got
        else:
            env.pop(name, None)
    return env
