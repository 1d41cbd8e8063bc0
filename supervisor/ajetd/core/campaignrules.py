"""When a research campaign (seed 002) stops and what each experiment's result means: the
stop rules, the verdicts, and the ledger rows that record them; pure (the clock is passed in).

Stop rules: `max_experiments` (attempts, baseline included, crashes included), `deadline`
(from the campaign's start; also met when what is left cannot hold one more
`per_experiment_timeout`) or `target_metric` (the best value reaches it). With none of these
given, seed 002's default holds: the baseline and at most three experiments, then a decision
is needed (`--continue` grants another three). A campaign that runs out of experiments waits
for `ajetd campaign add`; it never ends on its own while its stop rules are unmet. Each ended
experiment appends one row to `ledger.tsv` with the columns of NeMo-RL's experiment-log
template and a verdict: `keep` (better than the best so far), `discard`, `crash` (failed,
timed out, or no metric: seed 002 treats a timeout as a failure), `smoke` (a pipeline check:
counts against no stop rule, never judges the idea) or `stopped` (ended by `ajetd stop` /
`ajetd campaign stop`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ajetd.core.campaignspec import CampaignSpec
from ajetd.core.durations import format_duration
from ajetd.core.stoprules import restart_index
from ajetd.frameworks.valresults import metric_series, step_text

LEDGER_COLUMNS = (
    "index",
    "branch",
    "parent_commit",
    "commit",
    "recipe",
    "metric_name",
    "metric_value",
    "memory_gb",
    "elapsed_min",
    "launcher",
    "job_id",
    "command",
    "log_path",
    "status",
    "description",
)
DEFAULT_EXPERIMENTS = 3  # seed 002: no stop rule given -> the baseline and at most three


def better(value: float, best: float | None, maximise: bool) -> bool:
    return best is None or (value > best if maximise else value < best)


def best_value(history: Sequence[Mapping[str, Any]], metric: str, maximise: bool) -> float | None:
    """An experiment's best validation value of the campaign's metric (of the benchmark that
    judges the run, `metric_series`: never another validation dataset's)."""
    values = metric_series(history, metric)
    if not values:
        return None
    return max(values) if maximise else min(values)


@dataclass(frozen=True)
class Counted:
    """The value an experiment is judged by, and where it came from."""

    value: float | None
    trial: int | None = None  # the trial whose fresh start the counted records begin at
    note: str = ""  # which records counted and what an earlier trial reached, where not all


def counted_value(
    history: Sequence[Mapping[str, Any]],
    owners: Sequence[int | None],
    metric: str,
    maximise: bool,
) -> Counted:
    """The best value of `metric` of the model the experiment ended with: over the records
    since its last fresh start (`restart_index`: a relaunch that trained again from step 0,
    as AgentJet's does, leaves the model of its own records; one resuming from a checkpoint
    goes on from the earlier trial's, whose records count). An earlier trial's better value
    is said in `note`, never counted: a campaign kept an experiment for a peak of a model its
    relaunch threw away, and discarded a real gain against it (walk89 F1)."""
    start = restart_index(history, owners)
    value = best_value(history[start:], metric, maximise)
    if not start:
        return Counted(value)
    trial = owners[start]
    note = (
        f"counted: trial {trial}'s records only (it trained again from the start: its first "
        f"record, step {step_text(history[start])}, is below step "
        f"{step_text(history[start - 1])} before it)"
    )
    earlier = best_value(history[:start], metric, maximise)
    if earlier is not None and (value is None or better(earlier, value, maximise)):
        pairs = zip(history[:start], owners[:start], strict=True)
        owner = next((o for r, o in pairs if r.get(metric) == earlier), None)
        who = f"trial {owner}'s" if owner is not None else "an earlier trial's"
        note += f"; {who} best {earlier:g} was of a model the relaunch threw away"
    return Counted(value, trial, note)


def verdict(
    status: str,
    value: float | None,
    best: float | None,
    maximise: bool,
    smoke: bool = False,
    diverged: bool = False,
) -> str:
    """keep (better than the best so far), discard, crash (failed, timed out, no metric,
    or `diverged`: its metric's last validation was nan or inf, so the model it leaves is
    not the one its best value measured: walk86 F2), stopped (by the user), or smoke (a
    pipeline check never judges the idea)."""
    if smoke:
        return "smoke"
    if status == "stopped":
        return "stopped"
    if status not in ("succeeded", "plateau") or value is None or diverged:
        return "crash"
    return "keep" if better(value, best, maximise) else "discard"


@dataclass(frozen=True)
class Rule:
    """One stop rule against where the campaign stands (what `campaign status` shows)."""

    rule: str  # max_experiments, deadline, target_metric, or default (no rule given)
    met: bool
    text: str  # the seed's words: `17/24 attempted`, `6h12m remaining`, ...
    limit: float | None = None  # the count, the seconds from the start, the target
    current: float | None = None  # attempted, seconds elapsed, the best value
    remaining: float | None = None  # experiments or seconds left; None for a target


def _count_rule(rule: str, attempted: int, limit: int, planned: int = 0) -> Rule:
    """A count rule; with `planned` (experiments given but not yet launched, smoke runs not)
    judged on what will have been attempted once they ran: met when none more would run."""
    return Rule(
        rule,
        attempted + planned >= limit,
        f"{attempted}/{limit} attempted" + (f" and {planned} planned" if planned else ""),
        limit,
        attempted + planned,
        max(limit - attempted - planned, 0),
    )


def _deadline_rule(spec: CampaignSpec, deadline_s: float, started_at: float, now: float) -> Rule:
    remaining = started_at + deadline_s - now
    per = spec.per_experiment_s
    if remaining <= 0:
        met, text = True, "deadline reached"
    elif per is not None and remaining < per:
        met = True
        text = (
            f"{format_duration(remaining)} remaining, less than one experiment "
            f"({format_duration(per)})"
        )
    else:
        met, text = False, f"{format_duration(remaining)} remaining"
    return Rule("deadline", met, text, deadline_s, now - started_at, max(remaining, 0.0))


def _target_rule(spec: CampaignSpec, target: float, best: float | None) -> Rule:
    reached = best is not None and not better(target, best, spec.maximise)
    if reached and best is not None:
        text = f"{spec.metric} {best:g} reached the target {target:g}"
    else:
        shown = "none yet" if best is None else f"{best:g}"
        text = f"best {spec.metric} {shown} (target {target:g})"
    return Rule("target_metric", reached, text, target, best)


def rules(
    spec: CampaignSpec,
    attempted: int,
    started_at: float,
    now: float,
    best: float | None,
    rounds: int = 1,
    planned: int = 0,
) -> list[Rule]:
    """Every stop rule, how far it is from being met. `attempted` counts launched experiments
    that are not smoke runs (crashes included); `rounds` of the default rule granted so far;
    `planned`: not yet launched ones counted too (is there room for one more after them?)."""
    out: list[Rule] = []
    if spec.default_rule:
        limit = int(spec.baseline) + DEFAULT_EXPERIMENTS * max(rounds, 1)
        out.append(_count_rule("default", attempted, limit, planned))
    if spec.max_experiments is not None:
        out.append(_count_rule("max_experiments", attempted, spec.max_experiments, planned))
    if spec.deadline_s is not None:
        out.append(_deadline_rule(spec, spec.deadline_s, started_at, now))
    if spec.target is not None:
        out.append(_target_rule(spec, spec.target, best))
    return out


@dataclass(frozen=True)
class Progress:
    met: bool
    text: str
    needs_decision: bool = False  # only the default rule is met: ask before going on


def progress(spec: CampaignSpec, found: Sequence[Rule], attempted: int) -> Progress:
    """The stop rules `found` (by `rules`) against where the campaign stands, in the seed's
    words."""
    met = [r.text for r in found if r.met]
    if spec.default_rule and met:
        return Progress(
            True,
            f"stop condition met: {met[0]} (no stop rule given: the baseline and at most "
            f"{DEFAULT_EXPERIMENTS} experiments); needs a decision: `ajetd campaign add "
            "--continue` or `ajetd campaign set`",
            needs_decision=True,
        )
    if met:
        return Progress(True, "stop condition met: " + "; ".join(met))
    return Progress(False, "stop condition not yet met: " + rules_standing(spec, found, attempted))


def rules_standing(spec: CampaignSpec, found: Sequence[Rule], attempted: int) -> str:
    """Where every stop rule stands, met or not, in their own words (`1/3 attempted, 1h59m
    remaining`): the experiments attempted first where no count rule counts them."""
    parts = [r.text for r in found]
    if spec.max_experiments is None and not spec.default_rule:
        parts.insert(0, f"{attempted} attempted")
    return ", ".join(parts)


def ledger_header() -> str:
    return "\t".join(LEDGER_COLUMNS) + "\n"


def ledger_row(values: Mapping[str, Any]) -> str:
    """One TSV line; tabs and newlines inside a field become spaces."""
    cells = []
    for column in LEDGER_COLUMNS:
        value = values.get(column)
        text = "" if value is None else (f"{value:g}" if isinstance(value, float) else str(value))
        cells.append(re.sub(r"[\t\r\n]+", " ", text))
    return "\t".join(cells) + "\n"
