"""AgentJet validation results: the file named by `val_print_to_markdown_file_path`.

Two layouts (`../shared/fixtures/agentjet/`): the classic one appends `str(dict)` per
validation pass, with numpy scalars printed as `np.float64(...)` under numpy>=2; the swarm
client tutorial appends `## Step N` headings followed by `- key: value` bullets, percentages with
a `%` sign. Both become a list of dicts keyed as the framework names them; percentages become
fractions (as the classic layout writes them) and the step heading becomes `global_steps`.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_NUMPY = re.compile(r"\b(?:np|numpy)\.[a-z_]+\d*\(\s*([^()]*?)\s*\)")
_NONFINITE = re.compile(r"(?<![\w'\"])(-?)(nan|inf)(?![\w'\"])")
_STEP = re.compile(r"^#{1,6}\s*step\s+(\d+)\s*$", re.IGNORECASE)
_BULLET = re.compile(r"^\s*[-*]\s*([^:]+?)\s*:\s*(.*?)\s*$")
TABLE_KEYS = (
    "mean_reward",
    "task_pass_rate@1",
    "task_pass_rate@2",
    "task_pass_rate@4",
    "task_pass_rate@8",
    "std_reward",
    "num_all_success_tasks",
)


_PASS_AT = re.compile(r"task_pass_rate@(\d{1,6})")


def table_keys(history: Sequence[Mapping[str, Any]]) -> list[str]:
    """The validation attributes of seed 001 that `history` holds, in its order: mean_reward,
    task_pass_rate@N for every N written (pass_n may be 16 or 32, not only 1-8), std_reward,
    num_all_success_tasks, then num_pass_n_tasks (AgentJet writes `num_pass_n_tasks(pass@N)`)."""
    held = list(dict.fromkeys(k for r in history for k in r))
    rates = sorted((int(m.group(1)), k) for k in held if (m := _PASS_AT.fullmatch(k)) is not None)
    passed = [k for k in held if k.startswith("num_pass_n_tasks")]
    first, *rest = [k for k in TABLE_KEYS if not _PASS_AT.fullmatch(k)]  # TABLE_KEYS' order,
    order = [first, *(k for _, k in rates), *rest]  # every pass@N where its 1-8 stand
    return [k for k in order if k in held] + passed


def _number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN; a missing value reads the same in reports
    return value


def parse_dict_line(line: str) -> dict[str, Any] | None:
    """One classic-layout line as a dict, or None if the line is not a complete dict."""
    text = line.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    text = _NUMPY.sub(r"\1", text)
    text = _NONFINITE.sub(lambda m: f"float('{m.group(1)}{m.group(2)}')", text)
    text = text.replace("float('nan')", "None").replace("float('-nan')", "None")
    text = text.replace("float('inf')", "None").replace("float('-inf')", "None")
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    return {str(k): _number(v) for k, v in value.items()}


def _scalar(text: str) -> Any:
    raw = text.strip()
    pct = raw.endswith("%")
    body = raw[:-1].strip() if pct else raw
    try:
        number = float(body)
    except ValueError:
        return raw
    if pct:
        return round(number / 100.0, 10)
    return int(number) if re.fullmatch(r"-?\d+", body) else _number(number)


def parse_val_text(text: str) -> list[dict[str, Any]]:
    """Every complete record in `text`, in file order, whichever layout it uses.

    A classic line counts only once its newline is written; a `## Step` block counts once it
    holds at least one bullet (later bullets of the same block update it in place).
    """
    records: list[dict[str, Any]] = []
    parse_val_lines(text.split("\n")[:-1], records, None)  # the last piece has no newline yet
    return records


def parse_val_lines(
    lines: Iterable[str], records: list[dict[str, Any]], block: dict[str, Any] | None
) -> tuple[dict[str, Any] | None, bool]:
    """Read complete `lines` on from where an earlier read left off, so that a file is read
    once, in pieces: their records are appended to `records`; `block` is the `## Step` block
    still open before them (the same object as `records[-1]` once it has a bullet, updated in
    place). Returns the block still open after them, and whether `records` changed."""
    changed = False
    for line in lines:
        step = _STEP.match(line.strip())
        if step:
            block = {"global_steps": int(step.group(1))}
            continue
        if block is not None:
            bullet = _BULLET.match(line)
            if bullet:
                if len(block) == 1:
                    records.append(block)
                block[bullet.group(1)] = _scalar(bullet.group(2))
                changed = True
                continue
            if line.strip():
                block = None
        record = parse_dict_line(line)
        if record is not None:
            records.append(record)
            changed = True
            block = None
    return block, changed


def metric_series(history: list[dict[str, Any]], key: str) -> list[float]:
    """The numeric values of `key` across records, skipping records without it."""
    return [
        float(r[key])
        for r in history
        if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)
    ]
