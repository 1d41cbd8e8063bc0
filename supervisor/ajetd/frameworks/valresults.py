"""AgentJet validation results: the file named by `val_print_to_markdown_file_path`.

The layouts, from AgentJet's source (github.com/modelscope/AgentJet upstream c68c154, read in
the fork charlesHsuGG/AgentJet, and its history; tests/test_valresults.py quotes each):
- classic (`ajet/backbone/trainer_verl.py`, `f.write(str(val_metrics))` then a newline, mode
  `a+`): one `str(dict)` per validation pass. Numpy scalars print as `np.float64(...)`,
  `np.int64(...)` under numpy>=2 and bare under numpy 1; an empty mean prints `nan`. The keys
  changed: from 2026-03-30 12:42 (f2cf697) no `global_steps` and `'target dataset name'` first,
  from 12:49 (260e37a) `global_steps` first, later `target_dataset_name` last and `eval_tool_
  stats/...`, `eval_rewards/...` floats; the fork puts verl's `val-core/<source>/reward/
  mean@N` and `val-aux/num_turns/min` (np.int64) first.
- the swarm client tutorials' `## Step N` heading then `- key: value` bullets, percentages
  with a `%` sign (`tutorial/example_appworld_swarm/agent_roll.py`). Those that evaluate several
  benchmarks write a block per benchmark: `## Step N (label)` (`tutorial/example_cocktail_
  rl_v2/cocktail_v2_runner.py`) or a `- dataset: label` bullet (`tutorial/opencode_build_aime/
  auto_research/auto_train.py`); the heading's label is read as that bullet.
All become a list of dicts keyed as the framework names them; percentages become fractions (as
the classic layout writes them), the step heading `global_steps`, `nan` and `inf` None (JSON
has none). Where records name several benchmarks (`dataset`; AgentJet's classic layout:
`target_dataset_name`), a metric's series and the run's latest record are the first benchmark's
(it judges the run): the others are shown, never mixed into it.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# one match per string literal (left as it is: a key's text is never rewritten), call (a
# numpy scalar's `np.float64(0.5)`, torch's `tensor(231.4000, device='cuda:0')`, numpy 2's
# `np.str_('gsm8k')`, any other: `array([1, 2])`, `datetime.date(2026, 1, 2)`), numpy 2's
# bare `np.True_`, bare nan/inf, or a JSON word (true, false, null, NaN, Infinity); each
# alternative starts unambiguously and is bounded, so the scan is linear
_ARG = r"""(?:[^()'"\n]|'(?:[^'\\\n]|\\.){0,200}'|"(?:[^"\\\n]|\\.){0,200}"){0,400}"""
_TOKENS = re.compile(
    r"""(?P<string>'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")"""
    rf"|(?<![\w.])(?P<call>[A-Za-z_][\w.]{{0,60}})\((?P<args>{_ARG})\)"
    r"|(?<![\w.])(?:np|numpy)\.(?P<npbool>True|False)_(?![\w.])"
    r"|(?<![\w.])(?P<nonfinite>-?(?:nan|inf|NaN|Infinity))(?![\w.])"
    r"|(?<![\w.])(?P<json>true|false|null)(?![\w.])"
)
_JSON_WORDS = {"true": "True", "false": "False", "null": "None"}
# a call's only positional argument, where it is a number, nan/inf or one string literal
_SOLE_NUMBER = re.compile(
    r"\s*(?P<number>[-+]?(?:\d[\d_]{0,80}(?:\.\d{0,80})?|\.\d{1,80})(?:[eE][-+]?\d{1,4})?"
    r"|[-+]?(?:nan|inf))\.?\s*(?:,\s*[A-Za-z_]\w{0,40}\s*=.*)?",
    re.S,
)
_SOLE_STRING = re.compile(r"""\s*(?P<string>'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")\s*""")
_STEP = re.compile(
    r"^#{1,6}\s*step\s*(?::\s*)?(\d{1,12})(?:\s*/\s*\d{1,12})?"
    r"(?:\s*\((?P<label>[^()]{1,200})\))?\s*(?::\s*)?$",
    re.I,
)
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
# key families AgentJet writes with names of their own: verl's `val-core/<source>/reward/
# mean@N`, `val-aux/...`, `eval_rewards/...`, `eval_tool_stats/...`, num_pass_n_tasks(pass@N)
_FAMILIES = ("val-core/", "val-aux/", "eval_rewards/", "eval_tool_stats/", "num_pass_n_tasks")


def agentjet_writes(key: str) -> bool:
    """Whether `key` is a validation key AgentJet is known to write (TABLE_KEYS, any pass@N,
    and the families of its verl layouts)."""
    return key in TABLE_KEYS or bool(_PASS_AT.fullmatch(key)) or key.startswith(_FAMILIES)


_FLOAT_MAX = int(float.fromhex("0x1.fffffffffffffp+1023"))  # the largest float


def table_keys(history: Sequence[Mapping[str, Any]]) -> list[str]:
    """The validation attributes of seed 001 that `history` holds, in its order: mean_reward,
    task_pass_rate@N for every N written (pass_n may be 16 or 32, not only 1-8), std_reward,
    num_all_success_tasks, then num_pass_n_tasks (AgentJet writes `num_pass_n_tasks(pass@N)`);
    first `dataset`, where records name the benchmark they hold."""
    held = list(dict.fromkeys(k for r in history for k in r))
    rates = sorted((int(m.group(1)), k) for k in held if (m := _PASS_AT.fullmatch(k)) is not None)
    passed = [k for k in held if k.startswith("num_pass_n_tasks")]
    first, *rest = [k for k in TABLE_KEYS if not _PASS_AT.fullmatch(k)]  # TABLE_KEYS' order,
    order = [first, *(k for _, k in rates), *rest]  # every pass@N where its 1-8 stand
    # several benchmarks: which row is which (AgentJet names its one in every record)
    several = len({str(r[k]) for r in history for k in DATASET_KEYS[1:] if k in r}) > 1
    named = ["dataset"] if "dataset" in held else ["target_dataset_name"] if several else []
    return named + [k for k in order if k in held] + passed


MAX_SHOWN_KEYS = 12  # metric columns of a validation table or panels' worth; more: named
MAX_NAMED_MORE = 10  # names a note of the metrics left out lists, then how many more
# what records hold beside their metrics: steps, a benchmark's name, AgentJet's pass_n and
# total_tasks (its settings, the same in every record)
NOT_METRICS = frozenset({"global_steps", "step", "dataset", "pass_n", "total_tasks"})
SETTINGS = ("pass_n", "total_tasks")  # seed 001's val attributes that are no metric
SETTING_VALUES_SHOWN = 5  # distinct values of a setting a note names, then how many more


def settings_note(history: Sequence[Mapping[str, Any]]) -> str:
    """`pass_n 4, total_tasks 1319`: the validation settings the records hold (seed 001 lists
    them among the val attributes; the table, of metrics, left them out in silence: walk89
    F20), each with its distinct values in order (several where datasets differ); '' for
    none."""
    parts = []
    for key in SETTINGS:
        values = list(dict.fromkeys(str(r[key])[:40] for r in history if key in r))
        if not values:
            continue
        more = len(values) - SETTING_VALUES_SHOWN
        shown = ", ".join(values[:SETTING_VALUES_SHOWN]) + (f" (+{more} more)" if more > 0 else "")
        parts.append(f"{key} {shown}")
    return ", ".join(parts)


def shown_keys(history: Sequence[Mapping[str, Any]], metric: str) -> list[str]:
    """Every metric a run's records hold, in the order its views show them: `dataset` (the
    benchmark's name) where records name one, the run's own metric (the one that judges it)
    where they hold it, seed 001's attributes (`table_keys`), then the records' other numeric
    attributes in the order they came (a program's `acc_top1`, `rouge_l`: they were dropped
    wherever mean_reward was there too). Not capped: a view shows the first it has room for
    and says how many more (`more_note`)."""
    keys = table_keys(history)
    named = keys[:1] if keys[:1] and keys[0] in DATASET_KEYS else []
    numeric = dict.fromkeys(
        k
        for r in history
        for k, v in r.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in NOT_METRICS
    )
    lead = [metric] if metric in numeric else []
    rest = keys[len(named) :] + [k for k in numeric if k not in keys]
    return named + lead + [k for k in rest if k != metric]


def more_note(left: Sequence[str]) -> str:
    """`and N more: a, b, …` for the metrics a view had no room for ('' for none); the names
    bounded (MAX_NAMED_MORE), the count whole."""
    if not left:
        return ""
    names = ", ".join(left[:MAX_NAMED_MORE]) + (", …" if len(left) > MAX_NAMED_MORE else "")
    return f"and {len(left)} more: {names}"


def shown_metric(history: Sequence[Mapping[str, Any]], metric: str) -> str:
    """The attribute a run's views lead with: its own metric where its records hold it, else
    the first of its table that does (a val file without mean_reward showed a blank)."""
    if metric_series(history, metric):
        return metric
    return next((k for k in shown_keys(history, metric) if metric_series(history, k)), metric)


NONFINITE = ("nan", "inf", "-inf")


def nonfinite_text(value: float) -> str:
    """A number that is no finite float as a record holds it: `nan`, `inf` or `-inf`. JSON
    has no NaN, and None (what it was before) hid a diverged metric as a missing one: a run's
    views showed the last finite value as its last (walk86 F2)."""
    if math.isnan(value):
        return "nan"
    return "inf" if value > 0 else "-inf"


def is_nonfinite(value: Any) -> bool:
    """Whether a record's value is a number that was no finite float (`nonfinite_text`)."""
    return isinstance(value, str) and value in NONFINITE


def _number(value: Any) -> Any:
    """`value` as a record holds it: a JSON value, whatever the line's literal was. A number
    that is no finite float (nan, inf, an integer past 1e308) is its text (`nonfinite_text`):
    JSON has no NaN, and every series converts to float (a series skips it; `judged` and the
    views do not). A tuple is
    a list; a dict's keys are text; what JSON has no form for (a set, bytes, a complex
    number, `...`) is kept as written (its repr): the run's record must stay writable."""
    if isinstance(value, (bool, str)) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else nonfinite_text(value)
    if isinstance(value, int):
        return value if -_FLOAT_MAX <= value <= _FLOAT_MAX else ("inf" if value > 0 else "-inf")
    if isinstance(value, (list, tuple)):
        return [_number(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _number(v) for k, v in value.items()}
    return repr(value)


def _nonfinite_literal(token: str) -> str:
    """The literal a bare `nan`, `-inf`, `Infinity` stands for: its text (`nonfinite_text`)."""
    word = token.lstrip("-+").lower()
    if word == "nan":
        return "'nan'"
    return "'-inf'" if token.startswith("-") else "'inf'"


def _literal(match: re.Match[str]) -> str:
    """The Python literal a token stands for: a string as written; nan/inf/NaN/Infinity
    their text (`_number`'s rule); JSON's words Python's; numpy's bools Python's; a call its only
    positional argument where that is a number or a string (`np.float64(0.5)`,
    `tensor(0.5, device='cuda:0')`, `np.str_('gsm8k')`), else its text as a string: one value
    no literal spells never costs its record the others (`tensor([1, 2])`, `array(...)`)."""
    if match.group("string") is not None:
        return match.group(0)
    if match.group("nonfinite") is not None:
        return _nonfinite_literal(match.group("nonfinite"))
    if match.group("json") is not None:
        return _JSON_WORDS[match.group("json")]
    if match.group("npbool") is not None:
        return match.group("npbool")
    args = match.group("args")
    number = _SOLE_NUMBER.fullmatch(args)
    if number is not None:
        return _number_literal(number.group("number").replace("_", ""))
    string = _SOLE_STRING.fullmatch(args)
    if string is not None:
        return string.group("string")
    return repr(match.group(0))


def _number_literal(text: str) -> str:
    """A call's sole number as Python spells it: `01` (a leading zero, as C and numpy print
    it: `A(01)`) is no Python literal, and the whole record was lost to it."""
    if text.lstrip("-+") in ("nan", "inf"):
        return _nonfinite_literal(text)
    try:
        value: float = int(text)
    except ValueError:
        value = float(text)
    return repr(value) if math.isfinite(value) else _nonfinite_literal(str(value))


def parse_dict_line(line: str) -> dict[str, Any] | None:
    """One classic-layout line (or a JSON object's line) as a dict, or None if the line is
    not a complete dict."""
    text = line.strip().lstrip("\ufeff").strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    text = _TOKENS.sub(_literal, text)
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    return {str(k): _number(v) for k, v in value.items()}


def unreadable(line: str) -> bool:
    """Whether `line` looks like a record (a `{`...) that `parse_dict_line` could not read:
    such a line is counted and named, never dropped in silence."""
    text = line.strip().lstrip("\ufeff")
    return text.startswith("{") and parse_dict_line(line) is None


_NOTED = re.compile(r"(?P<value>[^()\s]{1,100})\s+\([^()]{0,200}\)")  # `0.5 (+0.1)`: a note


def from_percent(number: float) -> float:
    """A value written with `%` (`45.00%`) as the fraction it is (0.45): the one rule of every
    reader (a swarm client's bullets, NeMo-RL's), so a metric has one scale whichever printed
    it, the scale AgentJet's classic records and NeMo-RL's plain ones write (walk89 F14:
    NeMo-RL's `36.00%` was read as 36.0, a swarm client's `45.00%` as 0.45)."""
    return round(number / 100.0, 10)


def scalar(text: str) -> Any:
    """A printed value as a record holds it: a number (one written with `%` as its fraction,
    one with a note after it as the number), `nan`/`inf` as their text, else the text."""
    raw = text.strip().lstrip("*`").strip().rstrip("`").strip()
    noted = _NOTED.fullmatch(raw)
    if noted is not None and not isinstance(scalar(noted.group("value")), str):
        return scalar(noted.group("value"))  # a number with a note: the number
    pct = raw.endswith("%")
    body = raw[:-1].strip() if pct else raw
    try:
        number = float(body)
    except ValueError:
        return raw
    if not math.isfinite(number):
        return nonfinite_text(number)  # as _number: `1e999`, or 400 digits, is no finite value
    if pct:
        return from_percent(number)
    return int(number) if re.fullmatch(r"-?\d+", body) else number


def parse_val_text(text: str) -> list[dict[str, Any]]:
    """Every complete record in `text`, in file order, whichever layout it uses.

    A classic line counts only once its newline is written; a `## Step` block counts once it
    holds at least one bullet (later bullets of the same block update it in place).
    """
    records: list[dict[str, Any]] = []
    parse_val_lines(text.split("\n")[:-1], records, None)  # the last piece has no newline yet
    return records


UNREAD_SHOWN = 200  # characters of the first unreadable line a note quotes


class Unread:
    """Lines that look like a record (`{...`) and could not be read as one: how many, and the
    first (its first UNREAD_SHOWN characters)."""

    def __init__(self, count: int = 0, first: str = "") -> None:
        self.count = count
        self.first = first

    def add(self, line: str) -> None:
        self.count += 1
        if not self.first:
            text = line.strip()
            self.first = text[:UNREAD_SHOWN] + ("…" if len(text) > UNREAD_SHOWN else "")


def parse_val_lines(
    lines: Iterable[str],
    records: list[dict[str, Any]],
    block: dict[str, Any] | None,
    unread: Unread | None = None,
) -> tuple[dict[str, Any] | None, bool]:
    """Read complete `lines` on from where an earlier read left off, so that a file is read
    once, in pieces: their records are appended to `records`; `block` is the `## Step` block
    still open before them (the same object as `records[-1]` once it has a bullet, updated in
    place); `unread` counts the lines that look like a record and are none. Returns the block
    still open after them, and whether `records` changed."""
    changed = False
    for line in lines:
        step = _STEP.match(line.strip())
        if step:
            block = {"global_steps": int(step.group(1))}
            if step.group("label"):
                block["dataset"] = step.group("label").strip()
            continue
        if block is not None:
            bullet = _BULLET.match(line)
            if bullet:
                if not records or records[-1] is not block:  # its first bullet
                    records.append(block)
                key = bullet.group(1).strip("*` ") or bullet.group(1)  # `**mean_reward**`
                block[key] = scalar(bullet.group(2))
                changed = True
                continue
            if line.strip():
                block = None
        record = parse_dict_line(line)
        if record is not None:
            records.append(record)
            changed = True
            block = None
        elif unread is not None and line.strip().lstrip("\ufeff").startswith("{"):
            unread.add(line)
    return block, changed


# what a run's reason says where its output shows validation results no record was read from
# (here, where the views that repeat it can import it without the daemon's policy)
UNREAD_RECORDS = "its output shows validation results, yet no record was read from them"

STEP_UNKNOWN = "unknown"
# Why a record's step is not derived from its place in the file (val_before_train → 0, then
# every test_freq): a trial resumed from a checkpoint validates at the checkpoint's step, and
# verl validates the last step too, whatever test_freq says: a count would name wrong steps.
STEPS_UNKNOWN_NOTE = (
    "the val file's records name no step (AgentJet before 2026-03-30 wrote no "
    "`global_steps`); steps are not guessed from their order, since a resumed trial and the "
    "last step validate off the test_freq grid"
)


def step_of(record: Mapping[str, Any]) -> int | float | None:
    """The step a record was validated at (`global_steps`), None where it names none (the
    old layout starting with `'target dataset name'`)."""
    step = record.get("global_steps")
    if isinstance(step, (int, float)) and not isinstance(step, bool):
        return step
    return None


def step_text(record: Mapping[str, Any]) -> str:
    """A record's step as the views print it: the number, or `unknown` (never `None`, never
    blank)."""
    step = step_of(record)
    return STEP_UNKNOWN if step is None else f"{step:g}"


# the keys that name the benchmark a record holds: the swarm tutorials' `dataset` (a bullet or
# the step heading's label), AgentJet's classic `target_dataset_name` (several validation
# datasets validate at one step: main, then ood)
DATASET_KEYS = ("dataset", "target_dataset_name")


def dataset_of(record: Mapping[str, Any]) -> Any:
    """The benchmark `record` holds (`DATASET_KEYS`), or None where it names none."""
    return next((record[k] for k in DATASET_KEYS if k in record), None)


def first_dataset(history: Sequence[Mapping[str, Any]]) -> Any:
    """The first benchmark the records name: the one that judges the run (None: none named)."""
    return next((d for r in history if (d := dataset_of(r)) is not None), None)


def _of_first(record: Mapping[str, Any], first: Any) -> bool:
    """Whether `record` is of the judged benchmark (or names none)."""
    named = dataset_of(record)
    return named is None or named == first


def latest_record(history: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The run's latest record of the judged benchmark (`metrics`, finish.flag's last values):
    with two datasets validated at each step, the latest record was the second's, and the
    run's last value was another benchmark's than its series and best (walk89 F19)."""
    first = first_dataset(history)
    return next((r for r in reversed(history) if _of_first(r, first)), None)


def metric_series(history: Sequence[Mapping[str, Any]], key: str) -> list[float]:
    """The numeric values of `key` across records, skipping records without it, and those of
    any benchmark but the first named (`dataset_of`): a series never mixes benchmarks."""
    first = first_dataset(history)
    return [
        float(r[key])
        for r in history
        if isinstance(r.get(key), (int, float))
        and not isinstance(r.get(key), bool)
        and _of_first(r, first)
    ]


def best_point(
    history: Sequence[Mapping[str, Any]], key: str
) -> tuple[float, Mapping[str, Any]] | None:
    """The best value of `key` in the records `metric_series` reads (the lowest for a loss,
    else the highest) and the first record that holds it; None where none holds one."""
    series = metric_series(history, key)
    if not series:
        return None
    best = min(series) if "loss" in key else max(series)
    return best, next(r for r in history if r.get(key) == best)


def judged(history: Sequence[Mapping[str, Any]], key: str) -> list[tuple[float, Mapping[str, Any]]]:
    """Every value of `key` a run is judged by, with its record, in order: `metric_series`'
    records and those where it was no finite number (`nan`, `inf`: as float). A diverged
    metric is no missing one: the plateau rule counts it as no improvement, the views show
    it as the last value, a campaign as a crash (walk86 F2)."""
    first = first_dataset(history)
    out: list[tuple[float, Mapping[str, Any]]] = []
    for r in history:
        value: Any = r.get(key)
        if not _of_first(r, first):
            continue
        if is_nonfinite(value) or (isinstance(value, (int, float)) and not isinstance(value, bool)):
            out.append((float(value), r))
    return out


def last_value(history: Sequence[Mapping[str, Any]], key: str) -> float | None:
    """The last value of `key` the records hold, nan and inf included (`judged`)."""
    values = judged(history, key)
    return values[-1][0] if values else None


def nonfinite_note(history: Sequence[Mapping[str, Any]], key: str) -> str | None:
    """`mean_reward is nan in the last 147 validations (since step 4)`: where the last value
    of `key` was no finite number, how long it has been so; None where it is finite."""
    values = judged(history, key)
    count = 0
    for value, _ in reversed(values):
        if math.isfinite(value):
            break
        count += 1
    if not count:
        return None
    last, since = values[-1][0], values[-count][1]
    word = nonfinite_text(last)
    span = "validation" if count == 1 else f"{count} validations"
    return f"{key} is {word} in the last {span} (since step {step_text(since)})"


def is_count(values: Iterable[Any]) -> bool:
    """A metric's column holds a count (`samples_processed`, `num_tokens`): every finite
    value in it is a whole number and one is above 1 (a rate of 0s and 1s is no count).
    Records hold floats whatever the program printed, so the values say it, not their type."""
    above = False
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            continue
        if float(value) != int(value) or abs(value) >= 1e15:
            return False
        above = above or abs(value) > 1
    return above


def cell(value: Any, count: bool) -> str:
    """A value in a metric's column: a count's as an integer (`256`, not `256.0000`: walk 90
    F12), another number with four decimals, `nan`/`inf` named, "" for none."""
    if isinstance(value, float):
        if count and math.isfinite(value):
            return str(int(value))
        return f"{value:.4f}" if math.isfinite(value) else nonfinite_text(value)
    return "" if value is None else str(value)


def shown_value(value: float | None) -> str:
    """A metric's value as the views print it: `0.5000`, `nan`, `inf`, or `-` for none."""
    if value is None:
        return "-"
    return f"{value:.4f}" if math.isfinite(value) else nonfinite_text(value)
