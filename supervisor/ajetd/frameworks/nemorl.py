"""NeMo-RL runs: recognising the launch, the overrides each run needs, and reading the
authoritative metrics from its output; pure.

NeMo-RL prints its validation to stdout (`📊 Validation Results:` then `• Accuracy: 0.42`
bullets; SFT and DPO print `• Validation loss: ...`, DPO once per dataset), announces each step
as `Step N/M`, its log dir as `📊 Using log directory: ...`, and ends either normally (`Max
number of steps has been reached, stopping training early`) or at its save-by timeout
(`Timeout has been reached, stopping training early`), both with exit code 0. Records use the
metric names of `checkpointing.metric_name` without `val:` (`accuracy`, `val_loss`), plus
`step` and `global_steps` (the step of the last `Step N/M` header before the block) so
reports and stop rules treat them as AgentJet's.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ajetd.core.runparts import NemoBlock, NemoRead

_LAUNCH = re.compile(r"(?:^|[\s/])run_[a-z0-9_]+\.py(?:\s|$)")
_STEP = re.compile(r"=+\s*Step\s+(\d+)/(\d+)\s*=+")
_RESULTS = re.compile(r"Validation Results(?:\s+(?:for|on)\s+(?P<name>[^:]+?))?\s*:\s*$")
_BULLET = re.compile(
    r"^\s*[•*-]\s*(?P<label>[A-Za-z][\w ()/@.-]*?)\s*:\s*(?P<value>-?[\d.]+(?:e-?\d+)?)"
)
_LOG_DIR = re.compile(r"Using log directory:\s*(\S+)")
NORMAL_END = "Max number of steps has been reached, stopping training early"
TIMEOUT_END = "Timeout has been reached, stopping training early"
_NAMES = {"validation loss": "val_loss", "loss": "val_loss"}


def is_nemo_launch(command: str) -> bool:
    """`uv run examples/run_grpo.py --config ...` and its kin (`run_sft.py`, `run_dpo.py`...)."""
    return bool(_LAUNCH.search(command))


def metric_key(label: str) -> str:
    """`Accuracy` -> `accuracy`, `Validation loss` -> `val_loss`, as NeMo-RL's `val:` names."""
    text = label.strip().lower()
    return _NAMES.get(text, re.sub(r"[^a-z0-9@]+", "_", text).strip("_"))


def primary_metric(config: Mapping[str, Any] | None) -> tuple[str, bool]:
    """The metric that judges a run, and whether higher is better (NeMo-RL's checkpointing)."""
    ckpt = config.get("checkpointing") if isinstance(config, Mapping) else None
    name, higher = "accuracy", True
    if isinstance(ckpt, Mapping):
        given = str(ckpt.get("metric_name") or "val:accuracy")
        name = metric_key(given.split(":", 1)[-1].replace("val_loss", "validation loss"))
        higher = bool(ckpt.get("higher_is_better", not name.endswith("loss")))
    return name, higher


def _given(command: str, key: str) -> bool:
    return re.search(rf"(?:^|\s)\+{{0,2}}{re.escape(key)}=", command) is not None


_OPERATORS = {";", "&", "&&", "|", "||", "(", ")", ";;"}


_SCRIPT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


def _names_run_script(token: str) -> bool:
    """Whether `token` ends in `run_<name>.py` (as `run_[a-z0-9_]+\\.py$` would say), in one
    backward pass: the pattern searched in a long token of `run_run_...` is quadratic."""
    if not token.endswith(".py"):
        return False
    start = end = len(token) - 3
    while start > 0 and token[start - 1] in _SCRIPT_CHARS:
        start -= 1
    found = token.find("run_", start, end)
    return found >= 0 and found + 4 < end


def overridable(command: str) -> bool:
    """Whether overrides appended to the command reach `run_*.py`: it is a word of its own
    and nothing but its arguments follows it (not `... run_grpo.py ...; wait`, nor another
    line, nor a `# comment`, nor a `COMMAND="uv run ... run_grpo.py"` handed to ray.sub)."""
    joined = re.sub(r"\\\r?\n", " ", command.strip())  # a continued line is one line
    lexer = shlex.shlex(joined, posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace, lexer.commenters = " \t\r", ""  # a line break or a comment is seen
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return False
    at = next((i for i, t in enumerate(tokens) if _names_run_script(t)), None)
    if at is None or _OPERATORS.intersection(tokens[at:]):
        return False
    # appended text would go to the next line's command, or into the comment
    return not any("\n" in t or t.startswith("#") for t in tokens[at:])


def launch_overrides(
    command: str, result_dir: str, env: Mapping[str, str]
) -> tuple[str, list[str]]:
    """The command with the overrides a supervised run needs, and a line for each: its own
    log and checkpoint dirs (another run's checkpoints would make it resume, or exit at once),
    and wandb off unless a key is in the environment (wandb can block on a login prompt).
    `++` adds a key the config may lack; what the command already sets is left alone."""
    wanted = {
        "logger.log_dir": f"{result_dir}/nemo_rl/logs",
        "checkpointing.checkpoint_dir": f"{result_dir}/nemo_rl/checkpoints",
    }
    if not env.get("WANDB_API_KEY"):
        wanted["logger.wandb_enabled"] = "False"
    added, notes = [], []
    for key, value in wanted.items():
        if _given(command, key):
            continue
        added.append(shlex.quote(f"++{key}={value}"))
        why = "no WANDB_API_KEY in the environment" if "wandb" in key else "this run's own"
        notes.append(f"++{key}={value} ({why})")
    if not added:
        return command, []
    return f"{command.rstrip()} {' '.join(added)}", notes


def feed(state: NemoRead, text: str) -> tuple[NemoRead, list[dict[str, Any]]]:
    """Read complete lines of new output: the state moved on, and the validation records that
    ended in them (a block still open at the end stays open in the state)."""
    step, max_steps, log_dir = state.step, state.max_steps, state.log_dir
    records: list[NemoBlock] = []
    block = state.block
    for raw in text.splitlines():
        line = raw.rsplit("\r", 1)[-1]
        if m := _STEP.search(line):
            step, max_steps = int(m.group(1)), int(m.group(2))
        elif m := _LOG_DIR.search(line):
            log_dir = m.group(1)
        elif m := _RESULTS.search(line):
            if block:
                records.append(block)
            block = NemoBlock(f"{m.group('name').strip()}/" if m.group("name") else "", step=step)
            continue
        if block is None:
            continue
        bullet = _BULLET.match(line)
        if bullet:
            key = block.prefix + metric_key(bullet.group("label"))
            value = float(bullet.group("value"))
            values = dict(block.values)  # a label seen again keeps its place
            values[key] = value
            block = replace(block, values=tuple(values.items()))
        elif line.strip() or block.values:  # the block ends at its first non-bullet line
            records.append(block)
            block = None
    out = replace(state, step=step, max_steps=max_steps, log_dir=log_dir, block=block)
    finished = []
    for rec in records:  # each at the step it followed (an older record's block: the last)
        at = next((s for s in (rec.step, step) if s is not None), 0)
        if rec.values:
            finished.append({"step": at, "global_steps": at, **dict(rec.values)})
    return out, finished


def ending(text: str) -> str | None:
    """How the program said it ended: `max_steps`, `timeout`, or None."""
    if TIMEOUT_END in text:
        return "timeout"
    if NORMAL_END in text:
        return "max_steps"
    return None
