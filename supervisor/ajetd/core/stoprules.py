"""When a run should stop early or be flagged: a metric plateau, or a hang; pure.

Seed 001 allows an early stop only "in the middle-to-late stage" of a run whose
`mean_reward` / `task_pass_rate` has not changed for a long time. Here: the chosen metric has
not improved by more than `min_delta` over its last `patience` validations nor moved by more
than `min_delta` a validation on average over them (a decline is change, not a plateau), and at
least the fraction `after` of `exp_max_time` has passed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ajetd.core.values import did_you_mean
from ajetd.frameworks.valresults import NOT_METRICS as _NOT_METRICS
from ajetd.frameworks.valresults import (
    judged,
    nonfinite_note,
    shown_value,
    step_of,
    step_text,
)


@dataclass(frozen=True)
class PlateauRule:
    metric: str = "mean_reward"
    patience: int = 3
    min_delta: float = 0.005
    after: float = 0.5  # fraction of exp_max_time
    mode: str = "auto"  # max, min, or auto (min for names with "loss", else max)
    named: bool = False  # the blueprint names `metric` (else it is the default, which follows)

    @property
    def maximise(self) -> bool:
        if self.mode == "auto":
            return not loss_like(self.metric)
        return self.mode == "max"


def loss_like(metric: str) -> bool:
    """A metric named like a loss (`val_loss`, `validation_default_loss`): lower is better
    where nothing says which (a plateau rule's `mode: auto`, a campaign with no `direction`)."""
    return "loss" in metric.lower()


def followed(rule: PlateauRule, run_metric: str) -> PlateauRule:
    """The rule as it judges a run: a metric the blueprint does not name follows the run's own
    (NeMo-RL's `checkpointing.metric_name`); one it names is judged as named, even where it is
    the default's name (`metric: mean_reward` in a NeMo-RL run is never read in its records:
    lint warns, and so does the run once its records hold none of it), never another."""
    if not rule.named and run_metric != rule.metric:
        return replace(rule, metric=run_metric)
    return rule


MISSING_PREFIX = "plateau.metric "
SHOWN_KEYS = 12  # a record's keys named in the note, at most


def metric_missing(rule: PlateauRule, history: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the plateau rule cannot act on this run: it has validation records and none holds
    the rule's metric (a typo, `mean_rewad`, or a key the program does not write), naming the
    keys they do hold; None where one holds it, or there is no record yet."""
    if not history or any(rule.metric in r for r in history):
        return None
    return (
        f"{MISSING_PREFIX}{rule.metric!r}: none of the run's {len(history)} validation "
        f"record(s) holds it, so the plateau rule cannot stop the run"
        f"{records_hold(rule.metric, history)}"
    )


def records_hold(metric: str, history: Sequence[Mapping[str, Any]]) -> str:
    """`; did you mean 'accuracy' (the records hold: accuracy, average_response_length)`:
    what a run's validation records hold instead of `metric` (at most SHOWN_KEYS names), said
    where a plateau rule or a campaign finds none of it."""
    held = list(dict.fromkeys(str(k) for r in history for k in r if k not in _NOT_METRICS))
    more = len(held) - SHOWN_KEYS
    shown = ", ".join(k[:80] for k in held[:SHOWN_KEYS]) + (f" (+{more} more)" if more > 0 else "")
    return f"{did_you_mean(metric, held, n=3)} (the records hold: {shown or 'no metric'})"


def restart_index(history: Sequence[Mapping[str, Any]], owners: Sequence[int | None]) -> int:
    """Where the records of the run's latest fresh start begin: the first record of the last
    trial whose first record's step is below the step of the record before it (a relaunch
    that trains again from step 0, not one resuming from a checkpoint, whose steps go on);
    0 where none did, or the steps or trials are not known. The plateau rule judges only
    these: a relaunched run climbing from scratch was stopped as a plateau because a model
    its relaunch discarded once scored higher (walk86 F18)."""
    start = 0
    for i in range(1, min(len(history), len(owners))):
        if owners[i] is None or owners[i] == owners[i - 1]:
            continue  # not the first record of a trial
        before, step = step_of(history[i - 1]), step_of(history[i])
        if before is not None and step is not None and step < before:
            start = i
    return start


def _scores(rule: PlateauRule, values: Sequence[float]) -> list[float]:
    """Each value as a score where higher is better; no finite number is the worst."""
    sign = 1.0 if rule.maximise else -1.0
    return [sign * v if math.isfinite(v) else -math.inf for v in values]


def changing(rule: PlateauRule, values: Sequence[float]) -> bool:
    """Whether the metric still moves: over its last `patience` validations it went up or
    down by more than `min_delta` a validation on average (its last value against the one
    `patience` before). Seed 001 stops early only a run whose metric "long stopped changing":
    a collapse (0.50 → 0.08) was stopped as `plateau` because it did not improve (walk89 F8),
    and a recovery still below the best would have been. A last value that is no finite
    number is no change (the run that diverged is stopped as before: walk86 F2); one that is
    finite again after nan is."""
    if len(values) <= rule.patience or not math.isfinite(values[-1]):
        return False
    first, last = values[-rule.patience - 1], values[-1]
    return not math.isfinite(first) or abs(last - first) > rule.patience * rule.min_delta


def plateau_reason(
    rule: PlateauRule, history: list[dict[str, Any]], elapsed_s: float, max_time_s: float
) -> str | None:
    """Why the run has plateaued, or None while it has not. Plateaued: its metric has not
    improved by more than `min_delta` over its last `patience` validations and has stopped
    changing (seed 001: "long stopped changing"; `changing`): a run whose metric still falls
    or climbs back goes on; once it stays put at a lower value it is a plateau, and its reason
    says it fell. A validation whose metric was no
    finite number (`nan`, `inf`: the training diverged) counts as no improvement, whichever
    way the metric is judged: a run whose metric turned nan is stopped as any run that stopped
    improving (before, nan was skipped and such a run was never stopped: walk86 F2)."""
    if elapsed_s < rule.after * max_time_s:
        return None
    values = [v for v, _ in judged(history, rule.metric)]
    if len(values) <= rule.patience or changing(rule, values):
        return None
    sign = 1.0 if rule.maximise else -1.0
    scores = _scores(rule, values)
    before = max(scores[: -rule.patience])
    recent = max(scores[-rule.patience :])
    if recent > before + rule.min_delta:
        return None
    diverged = nonfinite_note(history, rule.metric)
    best = "none finite" if before == -math.inf else f"{sign * before:.4f}"
    why = f"; {diverged}" if diverged else ""
    if not diverged and recent < before - rule.min_delta:
        why = "; it fell below its best before it stopped changing"
    return (
        f"{rule.metric} has not improved by more than {rule.min_delta} over the last "
        f"{rule.patience} validations and has stopped changing (best {best}, last "
        f"{shown_value(values[-1])}{why}), seen at {elapsed_s / max_time_s:.0%} of "
        f"exp_max_time (the rule applies from {rule.after:.0%})"
    )


FALL_WINDOW = 3  # validations the last must be worse than, each
FALL_SHARE = 0.1  # how far below its best, as a share of the metric's scale


def falling_note(
    history: Sequence[Mapping[str, Any]], owners: Sequence[int | None], key: str
) -> str | None:
    """`mean_reward fell to 0.3100 at step 40, below each of the 3 validations before it and
    0.2900 below its best, 0.6000 at step 10`: where the metric keeps getting worse; None
    otherwise. The plateau rule leaves a falling metric alone (a decline is change), and
    nothing else said it: a run collapsing from 0.60 to 0.31 read as any running run.

    The rule, over the records since the run's last fresh start (`restart_index`: a relaunch
    that trains again from step 0 begins anew) and `judged` as the plateau rule judges them:
    the last validation is worse (lower; higher for a metric named like a loss, as `best`) than
    each of the FALL_WINDOW before it, all finite numbers (a nan is `nonfinite_note`'s), and
    worse than the best of those records by at least FALL_SHARE of the metric's scale (the
    largest absolute value it took), so noise around a level (0.6038-0.6049) is never a fall.
    Pure: it holds while the metric falls and is gone once it rises or stays put."""
    values = judged(history[restart_index(history, owners) :], key)
    if len(values) <= FALL_WINDOW or not all(math.isfinite(v) for v, _ in values):
        return None
    sign = -1.0 if "loss" in key else 1.0
    scores = [sign * v for v, _ in values]
    last = scores[-1]
    if not all(last < before for before in scores[-FALL_WINDOW - 1 : -1]):
        return None
    best_at = max(range(len(scores)), key=lambda i: scores[i])
    drop = scores[best_at] - last
    scale = max(abs(v) for v, _ in values)
    if scale == 0 or drop < FALL_SHARE * scale:
        return None
    (now, record), (best, best_record) = values[-1], values[best_at]
    way = "rose" if sign < 0 else "fell"
    side = "above" if sign < 0 else "below"
    return (
        f"{key} {way} to {now:.4f} at step {step_text(record)}, {side} each of the "
        f"{FALL_WINDOW} validations before it and {drop:.4f} {side} its best, {best:.4f} at "
        f"step {step_text(best_record)}"
    )


HANG_FACTOR = 3.0  # a hang is this many typical step intervals without output


def learned_window(
    step_times: list[float], initial_s: float, floor_s: float, ceiling_s: float
) -> float:
    """The hang window: `HANG_FACTOR` times the median interval between the steps seen so far,
    clamped to [floor_s, ceiling_s]; `initial_s` until two steps have been seen."""
    if len(step_times) < 2:
        return initial_s
    gaps = sorted(b - a for a, b in itertools.pairwise(step_times))
    median = gaps[len(gaps) // 2]
    return min(max(HANG_FACTOR * median, floor_s), ceiling_s)
