"""NeMo-RL runs: recognising the launch, the overrides each run needs, and reading the
authoritative metrics from its output; pure.

The shapes read, from NeMo-RL's own print calls (github.com/NVIDIA-NeMo/RL, from the first
commit of 2025-03-20 to v0.7.0 and main of 2026-08-22; tests/test_nemorl.py quotes each):
- the step header `===== Step N/M =====` (every algorithm). SFT, DPO, RM, distillation, PPO
  and GRPO since v0.4 count N within an epoch (`===== Epoch E/K =====` before it), async GRPO
  and GRPO before v0.4 over the run: the step read is the run's (what NeMo-RL logs and names
  its checkpoints `step_N` by), the steps of the epochs before added to N.
- `📊 Validation Results:` then `• Label: value` bullets (GRPO, async GRPO, distillation,
  PPO: `• Accuracy:`; SFT and DPO before v0.4: `• Validation loss:`), and ``📊 Validation
  Results for `default` set:`` once per dataset (DPO and RM since v0.4), whose `• Validation
  loss:` is NeMo-RL's `validation-<name>_loss`. A value is `{:.4f}` (so `nan`, `inf`, read as
  None: no number), `{:.1f} tokens` or `{:.0f}`. A validation before the first step (`val_at_
  start`) is at step 0.
- the single controller's `train step N/M  trainer_v=..  lag=..` after each step (main's
  `run_grpo_single_controller.py`, printed by a Ray actor: no Step header), N over the run.
- a bullet's mark as printed (`•`), as pasted (`*`, `-`), or as a stream that could not write
  it left it (`?` under an ASCII stream's errors=replace, U+FFFD, cp1252's `â€¢`, and `·◦▪‣●–`);
  a bullet whose value is no number (PPO's `• Critic Loss: N/A`) is passed over, not the end.
- a run judged by a `train:` metric (`checkpointing.metric_name: train:loss`, NeMo-RL since
  v0.4; the single controller takes nothing else; `feed(train=True)`): each step's `📊 Training
  Results:` bullets, named as NeMo-RL names them (`• Loss:` loss, `• Avg Reward:` reward, `• Avg
  Total/Filtered Reward:` reward/filtered_reward, PPO's `• Policy Loss:` loss; DPO and RM print
  each by its name), and the single controller's `step_metrics={...}`, as `train_<name>`
  records at their step (a validation at that step joins them).
- `📊 Using log directory: <dir>`.
- an evaluation's result (`run_eval.py`, nemo_rl/evals/eval.py `_print_results`): `score=
  {:.4f} ({score}/{dataset_size})` (`{:.2f}` in v0.2), a record with `score`, at step 0.
- how it ended: `Max number of steps has been reached, stopping training early` (also `Max
  steps reached, stopping training.`, cross-tokenizer distillation; `Configured step/epoch
  limit has been reached, stopping training`, async PPO), the save-by timeout `Timeout has been
  reached, stopping training early` (`Timeout reached, stopping training early.`), GRPO's
  `Validation <metric> reached the early-stop threshold (...); stopping training`, all with exit
  code 0. Reaching `max_num_epochs` prints nothing.
Lines are read as a person saw them in the pane (colour codes gone, the last `\\r` redraw); a
Ray worker's line (`(DTensorPolicyWorkerV2[rank=0] pid=1) ...`) or a Ray process's (`(raylet)
...`, `(autoscaler +18s) ...`), printed by another process between a block's lines, does not
end the block.

Records use the metric names of `checkpointing.metric_name` without `val:` (`accuracy`,
`val_loss`, `validation_default_loss`; `val_reward`, GRPO's name before v0.4, is `accuracy`),
plus `step` and `global_steps` so reports and stop rules treat them as AgentJet's; a `train:`
metric is `train_<name>` (`train:critic/loss` is `train_critic_loss`), never a validation
metric's name. The command's own `checkpointing.metric_name=` and `higher_is_better=` win over
the config's, as Hydra takes them. Not printed, so not read: `val:total_reward/mean` (NeMo-Gym
VLM recipes), `pass_k`, the cross-tokenizer distillation's validation (logged only).
The shapes, and the launchers' prefixes they come behind, are a corpus in
tests/data/metric_shapes/ (tests/test_metric_shapes.py).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ajetd.core import shelltokens
from ajetd.core.lines import next_line
from ajetd.core.resultfiles import NEMO_RL
from ajetd.core.runparts import NemoBlock, NemoRead
from ajetd.core.termtext import (
    clean_line,
    is_worker_line,
    strip_dress,
    strip_ray,
    strip_srun_label,
)
from ajetd.core.values import did_you_mean
from ajetd.frameworks.valresults import from_percent, nonfinite_text, parse_dict_line

_LAUNCH = re.compile(r"(?:^|[\s/])run_[a-z0-9_]+\.py(?:\s|$)")
# (`(?<!=)`: the run of `=` is tried from its first character only: linear on a line of `=`)
_STEP = re.compile(r"(?<!=)={3,}\s*Step\s+(\d{1,9})/(\d{1,9})\s*=")
_EPOCH = re.compile(r"(?<!=)={3,}\s*Epoch\s+(\d{1,9})/(\d{1,9})\s*=")
# the single controller's line after each step (main's `run_grpo_single_controller.py`, in a
# Ray actor): N counts over the run (`_train_steps`), no epoch header
_TRAIN_STEP = re.compile(r"train step (\d{1,9})/(\d{1,9})(?:\s|$)")
_RESULTS = re.compile(
    r"Validation Results(?:\s+(?:for|on)\s+`?(?P<name>[^`:]{1,200}?)`?(?:\s+set)?)?\s*:\s*$"
)
_NUMBER = r"[-+]?(?:\d{1,40}(?:\.\d{0,40})?|\.\d{1,40})(?:[eE][-+]?\d{1,4})?|[-+]?(?:nan|inf)\b"
# a bullet's mark as printed (`•`), as pasted (`*`, `-`), or as a stream that cannot write it
# leaves it: `?` (an ASCII stream's errors=replace), U+FFFD (bytes decoded with replacement),
# `â€¢` (UTF-8 read as cp1252), and the other one-character marks (`·`, `◦`, `▪`, `‣`, `●`, `–`)
_MARK = r"(?:[•*?\ufffd·◦▪‣●–-]|â€¢)"
_MARKED = re.compile(rf"^\s*{_MARK}\s")  # a bullet, its value a number or not (`N/A`)
_BULLET = re.compile(
    rf"^\s*{_MARK}\s*(?P<label>[A-Za-z][\w ()/@.-]{{0,120}}?)\s*:\s*(?P<value>{_NUMBER})"
    r"(?:\s*(?P<pct>%))?"
)
# a run judged by a `train:` metric (`feed(train=True)`): each step's `📊 Training Results:`
# block, and the single controller's `step_metrics={...}` (main), read as `train_<name>`
_TRAINING = re.compile(r"Training Results\s*:\s*$")
_STEP_METRICS = re.compile(r"step_metrics=(?P<dict>\{.*\})\s*$")
TRAIN_PREFIX = "train_"
_DICT_MAX = 65_536  # a step's metrics as a dict: a longer line is no record
# the labels GRPO and PPO print for the metrics NeMo-RL names otherwise (grpo.py:
# `• Avg Reward:` is np.mean(rewards), its metrics["reward"]; with dynamic sampling `• Avg
# Total Reward:` is "reward" and `• Avg Filtered Reward:` "filtered_reward"; ppo.py's
# `• Policy Loss:` is "loss"); DPO and RM print each metric by its name (`• sft_loss:`)
_TRAIN_NAMES = {
    "avg_reward": "reward",
    "avg_total_reward": "reward",
    "avg_filtered_reward": "filtered_reward",
    "generation_kl_error": "gen_kl_error",
    "mean_generation_length": "mean_gen_tokens_per_sample",
    "policy_loss": "loss",
}
_LOG_DIR = re.compile(r"Using log directory:\s*(\S.*?)\s*$")
_SCORE = re.compile(rf"^score=(?P<value>{_NUMBER}) \(")  # run_eval.py's result
# Each shape outside a block holds one of these words, in the raw line as in the line seen
# (colour codes and a `\r` redraw only take text away): the lines between are passed over
_WORDS = re.compile(r"Step|Epoch|Results|directory|score=|train step|step_metrics=")
_MAX_LINE = 2048  # every shape read is a short line: a longer one is read up to here
NORMAL_END = "Max number of steps has been reached, stopping training early"
TIMEOUT_END = "Timeout has been reached, stopping training early"
_ENDS = (  # what the program prints as it stops, and what that stop is
    (TIMEOUT_END, "timeout"),
    ("Timeout reached, stopping training early.", "timeout"),  # xtoken_off_policy_distillation
    (NORMAL_END, "max_steps"),
    ("Max steps reached, stopping training.", "max_steps"),  # xtoken_off_policy_distillation
    ("Configured step/epoch limit has been reached, stopping training", "max_steps"),  # PPO
    (" reached the early-stop threshold (", "early_stop"),  # grpo.stop_at_validation_threshold
)
_NAMES = {"validation loss": "val_loss", "loss": "val_loss"}
# `metric_name`s of the configs before v0.4 (no `val:`): GRPO saved `val_reward` as accuracy
_OLD_NAMES = {"val_reward": "accuracy"}
# the metrics of NeMo-RL's algorithms' base configs, as its records name them (metric_key)
KNOWN_METRICS = ("accuracy", "val_loss", "validation_default_loss")
# what GRPO's `validate` prints under `📊 Validation Results:` (grpo.py: `• Accuracy:`,
# `• Average response length: N tokens`), as its records name them: never a loss
GRPO_METRICS = ("accuracy", "average_response_length")


def is_nemo_launch(command: str) -> bool:
    """`uv run examples/run_grpo.py --config ...` and its kin (`run_sft.py`, `run_dpo.py`...)."""
    return bool(_LAUNCH.search(command))


def metric_key(label: str) -> str:
    """`Accuracy` -> `accuracy`, `Validation loss` -> `val_loss`, as NeMo-RL's `val:` names."""
    text = label.strip().lower()
    return _NAMES.get(text, re.sub(r"[^a-z0-9@]+", "_", text).strip("_"))


# what each algorithm's base config names (examples/configs/sft.yaml, dpo.yaml, rm.yaml; GRPO,
# distillation, PPO: val:accuracy), for a recipe that sets `metric_name: null` or none
_BASE_METRICS = {"sft": "val:val_loss", "dpo": "val:validation-default_loss"}
_BASE_METRICS["rm"] = "val:validation-default_loss"
_SCRIPT = re.compile(r"(?:^|[\s/])run_(sft|dpo|rm)\.py(?:\s|$)")


def primary_metric(config: Mapping[str, Any] | None, command: str = "") -> tuple[str, bool]:
    """The metric that judges a run, and whether higher is better (NeMo-RL's checkpointing).
    Without a metric_name, the one its algorithm's base config names: the algorithm is the
    config's section (`sft:`) or, for a recipe that inherits it all through `defaults:`, the
    script the command runs (`run_dpo.py`). An evaluation's config (`eval:`, no checkpointing)
    is judged by its `score=`."""
    if not isinstance(config, Mapping):
        return "accuracy", True
    ckpt = config.get("checkpointing")
    if ckpt is None and isinstance(config.get("eval"), Mapping):
        return "score", True
    ckpt = ckpt if isinstance(ckpt, Mapping) else {}
    script = _SCRIPT.search(command)
    algorithms = [k for k in _BASE_METRICS if isinstance(config.get(k), Mapping)]
    algorithms += [script.group(1)] if script else []
    base = _BASE_METRICS[algorithms[0]] if algorithms else None
    named = _checkpointing(ckpt, command, "metric_name")
    full = str((named if named is not _UNSET else None) or base or "val:accuracy")
    if full.strip().startswith("train:"):  # a training metric: never a validation one's name
        name = train_key(full.split(":", 1)[1])
    else:
        given = full.split(":", 1)[-1]
        given = _OLD_NAMES.get(given.strip(), given)
        name = metric_key(given.replace("val_loss", "validation loss"))
    higher = _checkpointing(ckpt, command, "higher_is_better")
    return name, bool(not name.endswith("loss") if higher is _UNSET else higher)


def known_metrics(config: Mapping[str, Any] | None, command: str = "") -> tuple[str, ...]:
    """The validation metrics a NeMo-RL run is known to write, its own first (`primary_metric`):
    a GRPO config's (`grpo:`) what GRPO prints (`val_loss` is SFT's: a GRPO run never writes
    it, walk97b F1), any other's the metrics of NeMo-RL's algorithms' base configs."""
    own = primary_metric(config, command)[0]
    grpo = isinstance(config, Mapping) and isinstance(config.get("grpo"), Mapping)
    return tuple(dict.fromkeys((own, *(GRPO_METRICS if grpo else KNOWN_METRICS))))


_NULL_WORDS = {"", "null", "none", "~"}
_UNSET = object()  # a key neither the config nor the command sets (its `null` is falsy)


def _checkpointing(ckpt: Mapping[str, Any], command: str, key: str) -> Any:
    """`checkpointing.<key>` as the run takes it: the command's own override wins over the
    config (`checkpointing.metric_name=val:val_loss`, `++checkpointing.higher_is_better=false`,
    read as YAML reads `null` and a boolean), else the config's value."""
    said = override(command, f"checkpointing.{key}")
    if said is None:
        return ckpt.get(key, _UNSET)
    word = said.strip()
    if word.lower() in _NULL_WORDS:
        return None
    if word.lower() in ("true", "false"):
        return word.lower() == "true"
    try:  # a number, as Hydra's override grammar reads it (`higher_is_better=0`: false)
        return int(word)
    except ValueError:
        pass
    try:
        return float(word)
    except ValueError:
        return word


def train_key(name: str) -> str:
    """A training metric's record key: `train:loss` and `• Loss:` -> `train_loss`, `• Avg
    Reward:` -> `train_reward` (what NeMo-RL names it), `critic/loss` -> `train_critic_loss`."""
    plain = re.sub(r"[^a-z0-9@]+", "_", name.strip().lower()).strip("_")
    return TRAIN_PREFIX + _TRAIN_NAMES.get(plain, plain)


def given(command: str, key: str) -> bool:
    """Whether the command sets `key` itself (`key=...`, `+key=`, `++key=`, quoted or not): it
    wins over the config file."""
    return re.search(rf"(?:^|\s)['\"]?\+{{0,2}}{re.escape(key)}=", command) is not None


_OPERATORS = {";", "&", "&&", "|", "|&", "||", "(", ")", ";;", ";&", ";;&"}


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
    tokens = shelltokens.words(command)
    at = None if tokens is None else script_at(tokens)
    return tokens is not None and at is not None and after_arguments(tokens, at) is None


def script_at(tokens: Sequence[str]) -> int | None:
    """Where among the command's words the first naming `run_*.py` is (None: none does)."""
    return next((i for i, t in enumerate(tokens) if _names_run_script(t)), None)


def after_arguments(tokens: Sequence[str], at: int) -> str | None:
    """What follows the arguments of the command whose word `at` is (an operator, another
    line, a `# comment`: words appended to the line would go there, not to that command), as
    the words from there; None when only its arguments (and redirections) follow."""
    for i in range(at, len(tokens)):
        word = tokens[i]
        if word in _OPERATORS or "\n" in word or word.startswith("#"):
            return " ".join(tokens[i:]).replace("\n", "\\n")
    return None


def compound_warnings(command: str) -> list[str]:
    """The warning for a NeMo-RL launch inside a compound shell line, to which ajetd adds
    none of the overrides a supervised run needs (`launch_overrides`); given by the
    preflight, so `ajetd lint` shows what admission gives."""
    if not is_nemo_launch(command) or overridable(command):
        return []
    return [
        "NeMo-RL runs inside a compound shell line (e.g. COMMAND=... for ray.sub, or "
        "followed by another line or a # comment): "
        "ajetd added no overrides; give it its own logger.log_dir and "
        "checkpointing.checkpoint_dir yourself, and logger.wandb_enabled=False unless "
        "a WANDB_API_KEY is set"
    ]


# the dirs a supervised run gets of its own, in its result dir (under `nemo_rl/`)
OWN_DIRS = {"logger.log_dir": "logs", "checkpointing.checkpoint_dir": "checkpoints"}


def writes_own_dirs(command: str) -> bool:
    """Whether ajetd points this command's log or checkpoint dir into the run's result dir
    (`launch_overrides`: a NeMo-RL launch it can add overrides to that sets one not itself)."""
    return (
        is_nemo_launch(command)
        and overridable(command)
        and not all(given(command, key) for key in OWN_DIRS)
    )


def launch_overrides(
    command: str, result_dir: str, env: Mapping[str, str]
) -> tuple[str, list[str]]:
    """The command with the overrides a supervised run needs, and a line for each: its own
    log and checkpoint dirs (another run's checkpoints would make it resume, or exit at once),
    and wandb off unless a key is in the environment (wandb can block on a login prompt).
    `++` adds a key the config may lack; what the command already sets is left alone."""
    wanted = {key: f"{result_dir}/{NEMO_RL}/{leaf}" for key, leaf in OWN_DIRS.items()}
    if not env.get("WANDB_API_KEY"):
        wanted["logger.wandb_enabled"] = "False"
    added, notes = [], []
    for key, value in wanted.items():
        if given(command, key):
            continue
        added.append(shlex.quote(f"++{key}={value}"))
        why = "no WANDB_API_KEY in the environment" if "wandb" in key else "this run's own"
        notes.append(f"++{key}={value} ({why})")
    if not added:
        return command, []
    return f"{command.rstrip()} {' '.join(added)}", notes


def _step_of(state: NemoRead, header: re.Match[str]) -> NemoRead:
    """The state after a `Step N/M` header: the run's step is N plus the steps of the epochs
    before (estimated as M per epoch where they were not seen: a relaunch that resumes in a
    later epoch, or a record older than the epoch count)."""
    n, per = int(header.group(1)), int(header.group(2))
    base = state.epoch_base
    if base is None:
        base = (state.epoch - 1) * per if state.epoch else 0
    return replace(state, step=base + n, max_steps=per, epoch_base=base)


def _epoch_of(state: NemoRead, header: re.Match[str]) -> NemoRead:
    """The state after an `Epoch E/K` header. The next epoch starts after the steps seen so
    far (exact, even where dynamic sampling ran fewer steps than batches); the same epoch
    again (a relaunch resuming in it) changes nothing; any other is estimated at its step."""
    epoch = int(header.group(1))
    if state.epoch is not None and epoch == state.epoch:
        return state
    follows = state.epoch is not None and epoch == state.epoch + 1 and state.step is not None
    return replace(state, epoch=epoch, epoch_base=state.step if follows else None)


def _key(prefix: str, label: str) -> str:
    """A bullet's metric name: a named block's `Validation loss` is NeMo-RL's
    `validation-<name>_loss` (its prefix holds `validation-<name>_`), others `metric_key`'s."""
    if not prefix:
        return metric_key(label)
    field = label[len("validation ") :] if label.lower().startswith("validation ") else label
    return metric_key(prefix + field)


def _value(text: str, percent: bool = False) -> float | str:
    """A bullet's value: its number (one written with `%` as its fraction, `from_percent`), or
    `nan`/`inf` as text where it is none (a diverged metric is shown and judged so, never
    hidden as a missing one: walk86 F2)."""
    number = float(text)
    if number - number != 0:
        return nonfinite_text(number)
    return from_percent(number) if percent else number


def _seen(raw: str, limit: int = _MAX_LINE) -> tuple[str, bool]:
    """A raw line as the text a person saw (up to _MAX_LINE of it), and whether a Ray worker
    printed it (its prefix removed); the driver's line without the dress a launcher or a
    logger put before it (srun's `0: `, SkyPilot's `(head, rank=0, pid=N)`, a timestamp, a
    logging prefix: `termtext.strip_dress`, as diagnosis reads it)."""
    raw = strip_srun_label(raw.rstrip("\r"))
    line = clean_line(raw[raw.rfind("\r") + 1 :][:limit])
    if is_worker_line(line):
        return strip_ray(line), True
    return strip_dress(line), False


def _progress(state: NemoRead, line: str) -> NemoRead | None:
    """The state after a line that says where the run is (a step or epoch header, the single
    controller's `train step N/M`, the log dir); None for any other line."""
    if m := _STEP.search(line):
        return _step_of(state, m)
    if m := _TRAIN_STEP.match(line):  # counted over the run: no epoch to add
        n, most = int(m.group(1)), int(m.group(2))
        return replace(state, step=n, max_steps=most, epoch=None, epoch_base=None)
    if m := _EPOCH.search(line):
        return _epoch_of(state, m)
    if m := _LOG_DIR.search(line):
        return replace(state, log_dir=m.group(1))
    return None


def _opened(state: NemoRead, line: str, train: bool) -> NemoBlock | None:
    """The block a results header opens (`📊 Validation Results:`, one dataset's; with `train`
    `📊 Training Results:`), at the step of the last header; None for any other line."""
    at = state.step if state.step is not None else 0
    if m := _RESULTS.search(line):
        name = m.group("name")
        return NemoBlock(f"validation-{name.strip()}_" if name else "", step=at)
    if train and _TRAINING.search(line):
        return NemoBlock(TRAIN_PREFIX, step=at)
    return None


def _one_line(state: NemoRead, line: str, raw: str, train: bool) -> NemoBlock | None:
    """A record one line holds: an evaluation's `score=`; with `train`, the single
    controller's `step_metrics={...}` (printed before its `train step N/M`: at the step after
    the last one read). None for any other line."""
    if m := _SCORE.match(line):
        at = state.step if state.step is not None else 0
        return NemoBlock("", (("score", _value(m.group("value"))),), step=at)
    if not train or "step_metrics={" not in raw[:512]:
        return None
    whole, _worker = _seen(raw, _DICT_MAX)  # a dict of many metrics: longer than a shape
    found = _STEP_METRICS.match(whole)
    parsed = parse_dict_line(found.group("dict")) if found else None
    values: dict[str, float | str | None] = {}
    for key, value in (parsed or {}).items():
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if number or value in ("nan", "inf", "-inf"):
            values[train_key(key)] = value
    return NemoBlock(TRAIN_PREFIX, tuple(values.items()), step=(state.step or 0) + 1)


def feed(state: NemoRead, text: str, train: bool = False) -> tuple[NemoRead, list[dict[str, Any]]]:
    """Read complete lines of new output: the state moved on, and the validation records that
    ended in them (a block still open at the end stays open in the state). With `train` (a
    run judged by a `train:` metric), each step's training metrics too, as `train_<name>`."""
    records: list[NemoBlock] = []
    block = state.block
    pos = 0  # only a line that holds a shape's word can matter while no block is open
    while (got_line := next_line(text, pos, _WORDS if block is None else None)) is not None:
        raw, pos = got_line
        line, worker = _seen(raw)
        if (moved := _progress(state, line)) is not None:
            state = moved
        elif (one := _one_line(state, line, raw, train)) is not None:
            records += [block, one] if block else [one]
            block = None
            continue
        elif (opened := _opened(state, line, train)) is not None:
            if block:
                records.append(block)
            block = opened
            continue
        if block is None:
            continue
        bullet = _BULLET.match(line)
        if bullet:
            label = bullet.group("label")
            train_bullet = block.prefix == TRAIN_PREFIX
            key = train_key(label) if train_bullet else _key(block.prefix, label)
            values = dict(block.values)  # a label seen again keeps its place
            values[key] = _value(bullet.group("value"), bool(bullet.group("pct")))
            block = replace(block, values=tuple(values.items()))
        elif (line.strip() or block.values) and not worker and not _MARKED.match(line):
            records.append(block)  # the block ends at the driver's first non-bullet line
            block = None
    state = replace(state, block=block)
    finished = []
    for rec in records:  # each at the step it followed (an older record's block: the last)
        at = next((s for s in (rec.step, state.step) if s is not None), 0)
        if rec.values:
            finished.append({"step": at, "global_steps": at, **dict(rec.values)})
    return state, finished


def add_records(
    history: Sequence[Mapping[str, Any]], records: Sequence[Mapping[str, Any]]
) -> tuple[dict[str, Any], ...]:
    """`history` with new records after it. A record at the same step as the one before it,
    with none of its metrics, joins it: DPO and RM print one block per validation dataset, and
    NeMo-RL's own record of that validation (its `val:` metrics) holds them all."""
    out = [dict(r) for r in history]
    for rec in records:
        last = out[-1] if out else None
        if last is not None and last.get("step") == rec.get("step"):
            names = set(rec) - {"step", "global_steps"}
            if not names & set(last):
                last.update(rec)
                continue
        out.append(dict(rec))
    return tuple(out)


def ending(text: str) -> str | None:
    """How the program said it ended, the last it said: `max_steps`, `timeout` (its save-by
    timeout), `early_stop` (a validation metric reached its threshold), or None (nothing said:
    `max_num_epochs` reached, or it did not end by itself)."""
    found = [(text.rfind(said), kind) for said, kind in _ENDS]
    at, kind = max(found)
    return kind if at >= 0 else None


def override(command: str, key: str) -> str | None:
    """The value the command gives `key` itself (`key=V`, `+key=V`, `++key=V`; the last one
    wins, as Hydra takes it), None where it gives none."""
    found = None
    for word in shelltokens.words(command) or ():
        name, eq, value = word.lstrip("+").partition("=")
        if eq and name == key:
            found = value
    return found


def hydra_arguments(command: str) -> list[str]:
    """The words the command gives NeMo-RL's run_*.py after its script, `--config FILE`
    left out: what it hands Hydra as overrides (its argparse keeps only `--config`), up to
    the first shell operator; [] where no run_*.py is a word of its own."""
    tokens = shelltokens.words(command) or []
    at = script_at(tokens)
    if at is None:
        return []
    words: list[str] = []
    skip = False
    rest = tokens[at + 1 :]
    for i, word in enumerate(rest):
        redirect = word.startswith((">", "<")) or (
            word.isdigit() and rest[i + 1 : i + 2] and rest[i + 1].startswith((">", "<"))
        )
        if word in _OPERATORS or "\n" in word or word.startswith("#") or redirect:
            break
        if skip or word.startswith("--config"):
            skip = word == "--config"  # its value is the next word
            continue
        if not word.startswith("-"):
            words.append(word)
    return words


# a key Hydra's grammar reads as a dotted path (no list index, no interpolation, no group
# `@package`): only these are judged against the config; anything else is left to Hydra
_HYDRA_KEY = re.compile(r"[A-Za-z_][\w-]{0,200}(?:\.[\w-]{1,200}){0,50}")


def override_problems(config: Mapping[str, Any], overrides: Sequence[str]) -> list[str]:
    """Why Hydra (struct mode, as NeMo-RL composes its config) would refuse each of
    `overrides` at once, taken in order (a `+key=` earlier makes `key=` later valid): `key=V`
    of a key the config lacks (Hydra: `Could not override`, whose next line is the fix, `To
    append to your config use +key=V`, said here too), `+key=V` of a key it holds, `~key` of
    one it lacks, a word with no `=` (OverrideParseException). `config` with its `defaults:`
    merged (`read_inherited`). A path through a list or a non-mapping is not judged."""
    tree: dict[str, Any] = _copied(config)
    problems: list[str] = []
    for word in overrides:
        delete = word.startswith("~")
        key, eq, _ = word.lstrip("+~").partition("=")
        plus = len(word) - len(word.lstrip("+"))
        if not eq and not delete:
            problems.append(
                f"override {word!r} is not key=value: Hydra refuses it at once "
                f"(OverrideParseException); write {word}=VALUE"
            )
            continue
        if not _HYDRA_KEY.fullmatch(key):
            continue
        parts = key.split(".")
        node: Any = tree
        depth = 0
        while depth < len(parts) - 1 and isinstance(node, dict) and parts[depth] in node:
            node, depth = node[parts[depth]], depth + 1
        if not isinstance(node, dict):
            continue  # through a list or a value: not judged here
        last = parts[depth]
        held = last in node
        if depth < len(parts) - 1 and plus:  # `+a.b=1` makes `a` where it is not there
            for part in parts[depth:]:
                node = node.setdefault(part, {})
            continue
        missing = ".".join(parts[: depth + 1])
        hint = did_you_mean(last, list(node), n=3)
        if delete and not held:
            problems.append(
                f"override {word!r}: the config has no key {missing!r}, so Hydra cannot "
                f"remove it{hint}"
            )
        elif plus == 1 and held:
            problems.append(
                f"override {word!r}: the config already has {key!r} (Hydra: Could not append "
                f"to config. An item is already at '{key}'); change it with {word[1:]} "
                f"(or force with +{word})"
            )
        elif not plus and not delete and not held:
            problems.append(
                f"override {word!r}: the config has no key {missing!r} (Hydra: Could not "
                f"override '{key}'. Key '{last}' is not in struct){hint}; To append to your "
                f"config use +{word}"
            )
        elif delete:
            node.pop(last, None)
        elif plus:
            node.setdefault(last, {})
    return problems


def _copied(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config's mappings copied (what `override_problems` changes), its values shared."""
    return {k: _copied(v) if isinstance(v, Mapping) else v for k, v in config.items()}


def setting(config: Mapping[str, Any], command: str, path: str) -> Any:
    """`path` (dotted) as the run sees it: the command's override (read as YAML reads a
    number), else the config's."""
    given_value = override(command, path)
    if given_value is not None:
        try:
            return int(given_value)
        except ValueError:
            return given_value
    node: Any = config
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def validation_review(config: Mapping[str, Any], command: str) -> list[str]:
    """Warnings about a NeMo-RL run's validation, the command's overrides counted: a
    `grpo.val_period` that never validates (≤ 0, or past `grpo.max_num_steps`): the run's
    metric is never written, and a plateau rule on it can never act, as AgentJet's
    `test_freq` past its steps. (Its GPU count is judged with AgentJet's by
    `frameworks.gpuask`.)"""
    warnings: list[str] = []
    period = setting(config, command, "grpo.val_period")
    steps = setting(config, command, "grpo.max_num_steps")
    if isinstance(period, int) and not isinstance(period, bool):
        past = isinstance(steps, int) and not isinstance(steps, bool) and period > steps > 0
        if period <= 0 or past:
            why = "≤ 0" if period <= 0 else f"past grpo.max_num_steps ({steps})"
            warnings.append(
                f"grpo.val_period = {period} ({why}): NeMo-RL would never validate during "
                "training, so the run's metric (val:accuracy) is never written and a plateau "
                "rule on it can never act; set a period within the run's steps"
            )
    return warnings
