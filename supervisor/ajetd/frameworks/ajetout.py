"""AgentJet's (and verl's) validation metrics as its output prints them, for a run whose val
file holds none; pure.

AgentJet before 2026-03-30 (modelscope/AgentJet f2cf697, `val_print_to_markdown_file_path`)
writes no val file: its validation is only printed, and a newer one writes none where the option
is not its own (ajetd's preflight sets it in every copy). The shapes, from the sources
(docs/benchmarks.md "Metric shapes on AgentJet's output"; tests/data/metric_shapes/ajout_*):
- beast_logger's `print_dict(val_metrics, narrow=True, header=<dataset>, mod="evaluation")`,
  every AgentJet from its first commit (astuner, 2025-11-08) on: a rich panel 50 columns wide
  (`╭─── main_val_dataset ───╮`, rows `│ │ key │ value │ │` between rules `│ ├──┼──┤ │`) that
  loguru writes to stderr in the Ray actor (`(TaskRunner pid=N) ` before each line). A cell too
  long for its column goes on over the next lines (beast_logger's rich breaks a word at its
  punctuation: `num_all_success_` then `tasks`), joined here as one where rules stand between
  rows (without them, each line is a row); a cell rich cut (`…`) is no key. The keys:
  `'target dataset name'`, `TGC@1` ... up to f2cf697, then `global_steps` first (260e37a) and
  `task_pass_rate@1`; the title names the dataset (`target_dataset_name` where no row does).
- verl's console logger (`trainer.logger` with `console`): `step:N - key:value - ...`, one line
  a step, values `{:.3f}` before verl 18c6ffcf0 (2025-07-04), `pprint.pformat` since
  (`np.float64(0.25)` under numpy 2); only the validation keys are read (verl's `val-core/`,
  `val-aux/`, the first `val/test_score/<source>`, AgentJet's own and `eval_...`). The line may
  come glued to a tqdm bar (`...3.06s/it]step:2 - ...`).
- `pprint(f"Initial validation metrics: {val_metrics}")` (verl, AgentJet) and `Final ...`: a
  string of more than 80 characters pprint prints as string literals in parentheses over
  several lines (`("Initial validation metrics: {'val/test_score/openai/gsm8k': "` then
  ` '0.1326762699014405}')`), a shorter one as one literal; SFT `print`s it bare.
One validation prints several of them (its table, its own `step:N` line, the step's line with the
training metrics, the first one's `Initial ...`, the last one's `Final ...`): a table begins a
record; a step line or a dict joins the latest of the last LOOK_BACK records at its step, or,
where one of them names no step, the one whose shared metrics agree (to the 3 decimals verl
once printed), and fills in what it lacks (its step). Records are as the val file's (the file
wins where it holds any: `daemon.trials`), so the run's metric is chosen as for a file.
Lines are read as a person saw them (colour codes gone, the last `\\r` redraw, Ray's and the
launchers' prefixes taken off: `termtext.strip_dress`); a line of another process between a
table's lines is passed over (it may hold a step line: it is read).
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ajetd.core.lines import next_line
from ajetd.core.runparts import OutBlock, OutRead
from ajetd.core.termtext import clean_line, strip_dress, strip_srun_label
from ajetd.frameworks.valresults import (
    DATASET_KEYS,
    NOT_METRICS,
    agentjet_writes,
    is_nonfinite,
    parse_dict_line,
    scalar,
    step_of,
)

TABLE, STEPS, SAID = "table", "steps", "said"  # the shape a record was read from
MAX_LINE = 65_536  # a step line of a few hundred metrics; a longer one is read up to here
MAX_ROWS = 512  # lines of one table's rows kept (MAX_OPEN_LINES bounds them too)
MAX_CELL = 400  # characters of one cell kept (a key or value, over its lines too)
MAX_OPEN_LINES = 512  # lines a table or wrapped text may span, others' lines between counted
MAX_TEXT = 32_768  # characters of pprint's wrapped text
LOOK_BACK = 4  # records a step line or a dict may join

# each shape outside a block holds one of these in its raw line (colour codes and `\r` redraws
# only take text away): the lines between are passed over in C
_WORDS = re.compile(r"step:\d|validation metrics:|╭")
# the same as bytes, found in the raw output as it is read for diagnosis: output holding none
# holds no record, and is not read for records off the deep checks' schedule (`daemon.observe`)
MARKS = (b"step:", b"validation metrics:", "╭".encode())
# (not after a word or `/`: `global_step:3`, `.../step:3` are no step line)
_STEP = re.compile(r"(?:^|[^\w/])step:(\d{1,12}) - ")
_SAID = "validation metrics:"
_NUMPY = re.compile(r"(?:np|numpy)\.\w{1,20}\(([^()]{0,80})\)")
_SIDES = "│┃║|"
_RULES = "┌┏├┣┡└┗╞╘╟+"
_BETWEEN = "├┣╞╟+"  # a rule between two rows (`+`: an ASCII box's every rule)
_SPLIT = re.compile(r"[│┃║|]")
_QUOTES = ("'", '"')
_VAL_PREFIXES = ("val-core/", "val-aux/", "val/", "eval_")
_AJET_KEYS = re.compile(
    r"TGC@\d{1,6}(?:-all-pass)?|task_pass_rate@\d{1,6}-all-pass"
    r"|num_(?:all_success|pass_n)_(?:tasks|scenarios)(?:\(pass@\d{1,6}\))?|num_scenarios"
)
_DATASETS = (*DATASET_KEYS, "target dataset name")  # AgentJet's before 2026-03-30 too


def is_validation_key(key: str) -> bool:
    """Whether a step line's `key` is a validation metric: verl's (`val-core/`, `val-aux/`,
    `val/`), AgentJet's (`agentjet_writes`, the older `TGC@N`) or its `eval_...` ones."""
    return key.startswith(_VAL_PREFIXES) or agentjet_writes(key) or bool(_AJET_KEYS.fullmatch(key))


def _measured(value: Any) -> bool:
    """A metric's value: a number, or `nan`/`inf` as a record holds them."""
    if isinstance(value, bool):
        return False
    return isinstance(value, (int, float)) or is_nonfinite(value)


def _is_validation(record: Mapping[str, Any]) -> bool:
    """A record holds a validation metric (not only steps and settings)."""
    return any(
        k not in NOT_METRICS and is_validation_key(k) and _measured(v) for k, v in record.items()
    )


def _seen(raw: str) -> str:
    """A raw line as the text a person saw, without the dress before it."""
    line = clean_line(strip_srun_label(raw.rstrip("\r"))[:MAX_LINE])
    return strip_dress(line).strip()


def _value(text: str) -> Any:
    """A step line's value (`0.133`, `np.float64(0.25)`, `nan`), None where it is no number
    (`True`, text)."""
    text = text.strip()
    call = _NUMPY.fullmatch(text)
    got = scalar(call.group(1) if call else text)
    return got if _measured(got) else None


def _step_record(line: str, found: re.Match[str]) -> dict[str, Any] | None:
    """The validation metrics of one `step:N - key:value - ...` line, at step N; None where
    it holds none (a training step's line)."""
    record: dict[str, Any] = {"global_steps": int(found.group(1))}
    for part in line[found.end() :].split(" - "):
        key, colon, value = part.rpartition(":")
        key = key.strip()
        if colon and key not in record and is_validation_key(key):
            got = _value(value)
            if got is not None:
                record[key] = got
    return record if _is_validation(record) else None


def _said_record(text: str) -> dict[str, Any] | None:
    """The dict after `validation metrics:` in `text`, where it is a validation's."""
    at = text.find(_SAID)
    found = parse_dict_line(text[at + len(_SAID) :]) if at >= 0 else None
    return found if found is not None and _is_validation(found) else None


def _literal(text: str) -> dict[str, Any] | None:
    """pprint's string (one literal, or literals in parentheses) read back, then its dict."""
    if len(text) > MAX_TEXT:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return _said_record(value) if isinstance(value, str) else None


def _title(line: str) -> str:
    """A panel's title: `╭──── main_val_dataset ────╮` -> `main_val_dataset` (string
    operations: linear on a line of box characters)."""
    inner = line[1:].removesuffix("╮")
    return inner.strip("─━═ ")[:MAX_CELL]


RULE = ("\x1f", "\x1f")  # a rule between rows, among a table's lines (no line holds \x1f)


def _rows(lines: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """A table's rows from its lines: where rules stand between rows (beast_logger's
    `show_lines=True`), the lines between two rules are one row, each cell's pieces joined
    (rich carries a long cell over to the next line); where none does, each line is a row."""
    inner = list(lines)
    while inner and inner[0] == RULE:
        inner.pop(0)
    while inner and inner[-1] == RULE:
        inner.pop()
    if RULE not in inner:
        return inner
    rows, key, value = [], "", ""
    for line in [*inner, RULE]:
        if line == RULE:
            if key or value:
                rows.append((key, value))
            key, value = "", ""
        else:
            key, value = (key + line[0])[:MAX_CELL], (value + line[1])[:MAX_CELL]
    return rows


def _table_record(block: OutBlock) -> dict[str, Any] | None:
    """A closed table as a record: its rows (a cell cut with `…` is no key or value), the
    title as `target_dataset_name` where no row names the dataset; None where it holds no
    validation metric (another `print_dict`: a runtime env, a config)."""
    record: dict[str, Any] = {}
    for cells in _rows(block.rows):
        key, value = (" ".join(cell.split()) for cell in cells)
        if key and not key.endswith("…") and not value.endswith("…") and key not in record:
            record[key] = scalar(value)
    if block.title and not any(k in record for k in _DATASETS):
        record["target_dataset_name"] = block.title
    return record if _is_validation(record) else None


def _one_line(line: str) -> tuple[OutBlock | None, list[tuple[str, dict[str, Any]]]]:
    """What a line outside a block begins: a table, pprint's wrapped text; or the record it
    holds (a step line, a dict said on one line)."""
    if line.startswith("╭"):
        return OutBlock(TABLE, title=_title(line), lines=1), []
    at = line.find(_SAID)
    if at >= 0:
        if line.startswith("("):
            if line.endswith(")"):
                record = _literal(line)
            else:
                return OutBlock("text", text=line[:MAX_TEXT], lines=1), []
        elif line.startswith(_QUOTES):
            record = _literal(line)
        else:
            record = _said_record(line)
        return None, [(SAID, record)] if record else []
    found = _STEP.search(line)
    record = _step_record(line, found) if found else None
    return None, [(STEPS, record)] if record else []


def _in_table(block: OutBlock, line: str) -> OutBlock:
    """The table after one of its lines: a row's line (its key's and value's pieces) or a
    rule between rows kept, in order (`_rows` makes the rows at its end); another table's
    line (not two cells) passed over."""
    inner = line[1:].rstrip()
    if inner.endswith(tuple(_SIDES)):
        inner = inner[:-1]
    inner = inner.strip()
    if len(block.rows) >= MAX_ROWS:
        return block
    if inner[:1] in _RULES:  # between rows (the inner table's top and bottom: nothing)
        between = inner[:1] in _BETWEEN and block.rows and block.rows[-1] != RULE
        return replace(block, rows=(*block.rows, RULE)) if between else block
    if inner[:1] not in _SIDES:
        return block
    parts = [p.strip()[:MAX_CELL] for p in _SPLIT.split(inner)[1:-1]]
    if len(parts) != 2:  # no key and value: another print's table
        return block
    return replace(block, rows=(*block.rows, (parts[0], parts[1])))


def _go_on(block: OutBlock, line: str) -> tuple[OutBlock | None, list[tuple[str, dict[str, Any]]]]:
    """An open block after one more line: still open (None: closed or given up), and the
    records the line ended (the table it closed; a step line of another process between)."""
    if block.lines >= MAX_OPEN_LINES:  # never closed: given up, the line read anew
        return _one_line(line)
    block = replace(block, lines=block.lines + 1)
    if block.kind == TABLE:
        if line.startswith("╰"):
            record = _table_record(block)
            return None, [(TABLE, record)] if record else []
        if line[:1] in _SIDES:
            return _in_table(block, line), []
    elif line.startswith(_QUOTES):  # pprint's next literal
        text = f"{block.text}\n{line}"
        if len(text) > MAX_TEXT:
            return None, []
        if line.endswith(")"):
            record = _literal(text)
            return None, [(SAID, record)] if record else []
        return replace(block, text=text), []
    opened, found = _one_line(line)  # another process's line, between
    return (opened if opened is not None else block), found


def feed(state: OutRead, text: str) -> tuple[OutRead, list[tuple[str, dict[str, Any]]]]:
    """Read complete lines of new output: the state moved on, and the records that ended in
    them with the shape each was read from (a block open at the end stays in the state)."""
    found: list[tuple[str, dict[str, Any]]] = []
    block = state.block
    pos = 0  # only a line that holds a shape's word can matter while no block is open
    while (got_line := next_line(text, pos, _WORDS if block is None else None)) is not None:
        raw, pos = got_line
        line = _seen(raw)
        block, got = _one_line(line) if block is None else _go_on(block, line)
        found += got
    return replace(state, block=block), found


def _dataset(record: Mapping[str, Any]) -> Any:
    return next((record[k] for k in _DATASETS if k in record), None)


def _close(a: Any, b: Any) -> bool:
    """Two printings of one value: equal to the 3 decimals verl printed before 2025-07."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=5e-4)
    return bool(a == b)


def _agree(held: Mapping[str, Any], record: Mapping[str, Any]) -> bool:
    """The metrics both hold are one validation's values."""
    shared = [
        k
        for k, v in record.items()
        if k in held and k not in NOT_METRICS and _measured(v) and _measured(held[k])
    ]
    return bool(shared) and all(_close(held[k], record[k]) for k in shared)


def _joins(history: Sequence[Mapping[str, Any]], record: Mapping[str, Any]) -> int | None:
    """The index of the record (of the last LOOK_BACK) that `record` prints again: the latest
    of its dataset at its step, or one naming no step (or `record` naming none) whose values
    agree; None: a validation of its own."""
    step, dataset = step_of(record), _dataset(record)
    for i in range(len(history) - 1, max(len(history) - LOOK_BACK, 0) - 1, -1):
        held = history[i]
        named = _dataset(held)
        if dataset is not None and named is not None and dataset != named:
            continue
        at = step_of(held)
        if step is not None and at is not None:
            if step == at:
                return i
            continue
        if _agree(held, record):
            return i
    return None


def add_records(
    history: Sequence[Mapping[str, Any]], found: Sequence[tuple[str, Mapping[str, Any]]]
) -> tuple[dict[str, Any], ...]:
    """`history` with the records `feed` found: a table begins a record; a step line or a
    dict joins the one it prints again (`_joins`), filling in what it lacks, else begins one."""
    out = [dict(r) for r in history]
    for shape, record in found:
        at = None if shape == TABLE else _joins(out, record)
        if at is None:
            out.append(dict(record))
            continue
        for key, value in record.items():
            out[at].setdefault(key, value)
    return tuple(out)
