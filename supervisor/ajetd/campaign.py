"""Research campaigns (seed 002): the spec, the stop rules, verdicts and the ledger; pure.

A campaign is a folder holding `campaign.yaml` and a base blueprint. ajetd runs a baseline
first (unless told there is one), then each experiment as an ordinary run, in order, as many
at once as `parallel` allows, until a stop rule is met: `max_experiments` (attempts, baseline
included, crashes included), `deadline` (from the campaign's start; also met when what is left
cannot hold one more `per_experiment_timeout`), `target_metric` (the best value reaches it),
or no experiment left. Each ended experiment appends one row to `ledger.tsv` with the columns
of NeMo-RL's experiment-log template and a verdict: `keep` (better than the best so far),
`discard`, or `crash` (failed, timed out, or no metric: seed 002 treats a timeout as a failure).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from ajetd.durations import format_duration, parse_duration
from ajetd.errors import AjetdError, DurationError

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
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_BRANCH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$")


class CampaignError(AjetdError):
    """A campaign that cannot start; `problems` names each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str = ""
    overrides: tuple[str, ...] = ()  # appended to the base launch command (Hydra key=value)
    patch: str = ""  # a patch file in the folder, applied and committed (branch_prefix only)
    start: str = ""  # the branch or commit it starts from (default: the baseline commit)
    blueprint: str = ""  # its own blueprint in the folder instead of the base


@dataclass(frozen=True)
class CampaignSpec:
    name: str
    metric: str
    maximise: bool
    base: str
    result_dir: str
    experiments: tuple[Experiment, ...]
    max_experiments: int | None = None
    deadline_s: float | None = None
    per_experiment_s: float | None = None
    target: float | None = None
    gpus: Any = None  # `[ajetd] gpus` of every experiment, when given
    parallel: int = 1
    branch_prefix: str = ""
    baseline: bool = True  # run the base unchanged first


def _duration(key: str, value: Any, problems: list[str]) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(str(value)) if not isinstance(value, (int, float)) else value * 3600.0
    except DurationError as exc:
        problems.append(f"{key}: {exc}")
        return None


def _experiment(i: int, raw: Any, files: set[str], problems: list[str]) -> Experiment | None:
    if not isinstance(raw, dict):
        problems.append(f"experiments[{i}]: expected {{name, description, overrides, patch}}")
        return None
    name = str(raw.get("name") or "")
    if not _NAME.match(name) or name == "baseline":
        problems.append(f"experiments[{i}]: name {name!r}: letters, digits, . _ - ; not baseline")
    overrides = raw.get("overrides") or []
    if isinstance(overrides, str):
        overrides = [overrides]
    if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
        problems.append(f"experiments[{i}] ({name}): overrides must be a list of strings")
        overrides = []
    for key in ("patch", "blueprint"):
        value = raw.get(key)
        if value and str(value) not in files:
            problems.append(f"experiments[{i}] ({name}): {key} {value} is not in the folder")
    unknown = sorted(
        set(map(str, raw)) - {"name", "description", "overrides", "patch", "from", "blueprint"}
    )
    if unknown:
        problems.append(f"experiments[{i}] ({name}): unknown key {unknown[0]!r}")
    return Experiment(
        name,
        str(raw.get("description") or ""),
        tuple(overrides),
        str(raw.get("patch") or ""),
        str(raw.get("from") or ""),
        str(raw.get("blueprint") or ""),
    )


def _stop_rules(
    stop: Any, problems: list[str]
) -> tuple[int | None, float | None, float | None, float | None]:
    if not isinstance(stop, dict):
        problems.append(
            "stop: expected {max_experiments, deadline, per_experiment_timeout, target_metric}"
        )
        return None, None, None, None
    known = {"max_experiments", "deadline", "per_experiment_timeout", "target_metric"}
    bad = sorted(set(map(str, stop)) - known)
    if bad:
        problems.append(f"stop: unknown rule {bad[0]!r}")
    count = stop.get("max_experiments")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        problems.append(f"stop.max_experiments: expected a whole number >= 1, got {count!r}")
        count = None
    target = stop.get("target_metric")
    if target is not None and (isinstance(target, bool) or not isinstance(target, (int, float))):
        problems.append(f"stop.target_metric: expected a number, got {target!r}")
        target = None
    deadline = _duration("stop.deadline", stop.get("deadline"), problems)
    per = _duration("stop.per_experiment_timeout", stop.get("per_experiment_timeout"), problems)
    return count, deadline, per, None if target is None else float(target)


def _experiments(raw: Any, files: set[str], problems: list[str]) -> list[Experiment]:
    if not isinstance(raw, list):
        problems.append("experiments: expected a list")
        return []
    found = [_experiment(i, e, files, problems) for i, e in enumerate(raw, 1)]
    experiments = [e for e in found if e is not None]
    names = [e.name for e in experiments]
    if len(set(names)) != len(names):
        problems.append("experiments: two experiments have the same name")
    return experiments


def parse_campaign(text: str, files: set[str]) -> CampaignSpec:
    """Validate `campaign.yaml` (`files`: the names in its folder); every problem at once."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CampaignError([f"campaign.yaml: not valid YAML: {str(exc).splitlines()[0]}"]) from exc
    if not isinstance(data, dict):
        raise CampaignError(["campaign.yaml: expected a mapping"])
    problems: list[str] = []
    known = {
        "name",
        "metric",
        "direction",
        "stop",
        "gpus",
        "parallel",
        "base",
        "result_dir",
        "branch_prefix",
        "baseline",
        "experiments",
    }
    unknown = sorted(set(map(str, data)) - known)
    if unknown:
        problems.append(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
    name = str(data.get("name") or "")
    if not _NAME.match(name):
        problems.append(f"name: {name!r}: letters, digits, . _ - (up to 64)")
    direction = str(data.get("direction", "max"))
    if direction not in ("max", "min"):
        problems.append(f"direction: expected max or min, got {direction!r}")
    base = str(data.get("base") or "")
    if base not in files:
        problems.append(f"base: the base blueprint {base or '(none given)'} is not in the folder")
    result_dir = str(data.get("result_dir") or "")
    if not result_dir.startswith("/"):
        problems.append(f"result_dir: expected an absolute path, got {result_dir!r}")
    count, deadline, per_experiment, target = _stop_rules(data.get("stop") or {}, problems)
    parallel = data.get("parallel", 1)
    if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
        problems.append(f"parallel: expected a whole number >= 1, got {parallel!r}")
        parallel = 1
    prefix = str(data.get("branch_prefix") or "")
    if prefix and not _BRANCH.match(prefix):
        problems.append(f"branch_prefix: {prefix!r} is not a usable branch name")
    experiments = _experiments(data.get("experiments") or [], files, problems)
    if any(e.patch for e in experiments) and not prefix:
        problems.append("experiments: a patch needs branch_prefix (it is committed on a branch)")
    spec = CampaignSpec(
        name=name,
        metric=str(data.get("metric") or "mean_reward"),
        maximise=direction != "min",
        base=base,
        result_dir=result_dir.rstrip("/"),
        experiments=tuple(experiments),
        max_experiments=count,
        deadline_s=deadline,
        per_experiment_s=per_experiment,
        target=target,
        gpus=data.get("gpus"),
        parallel=parallel,
        branch_prefix=prefix.rstrip("/"),
        baseline=data.get("baseline", True) is not False,
    )
    if problems:
        raise CampaignError(problems)
    return spec


def planned(spec: CampaignSpec) -> list[Experiment]:
    """Every experiment in order, the baseline first when the campaign runs one."""
    first = [Experiment("baseline", "the base blueprint unchanged")] if spec.baseline else []
    return [*first, *spec.experiments]


def better(value: float, best: float | None, maximise: bool) -> bool:
    return best is None or (value > best if maximise else value < best)


def best_value(history: Sequence[Mapping[str, Any]], metric: str, maximise: bool) -> float | None:
    """An experiment's best validation value of the campaign's metric."""
    values = [float(r[metric]) for r in history if isinstance(r.get(metric), (int, float))]
    if not values:
        return None
    return max(values) if maximise else min(values)


def verdict(status: str, value: float | None, best: float | None, maximise: bool) -> str:
    """keep (better than the best so far), discard, or crash (failed, timed out, no metric)."""
    if status not in ("succeeded", "plateau") or value is None:
        return "crash"
    return "keep" if better(value, best, maximise) else "discard"


@dataclass(frozen=True)
class Progress:
    met: bool
    text: str


def progress(
    spec: CampaignSpec,
    attempted: int,
    left: int,
    started_at: float,
    now: float,
    best: float | None,
) -> Progress:
    """Every stop rule against where the campaign stands, in the seed's words."""
    met: list[str] = []
    parts: list[str] = []
    if spec.max_experiments is not None:
        parts.append(f"{attempted}/{spec.max_experiments} attempted")
        if attempted >= spec.max_experiments:
            met.append(f"{attempted}/{spec.max_experiments} attempted")
    else:
        parts.append(f"{attempted} attempted")
    if spec.deadline_s is not None:
        remaining = started_at + spec.deadline_s - now
        if remaining <= 0:
            met.append("deadline reached")
        elif spec.per_experiment_s is not None and remaining < spec.per_experiment_s:
            met.append(
                f"{format_duration(remaining)} remaining, less than one experiment "
                f"({format_duration(spec.per_experiment_s)})"
            )
        else:
            parts.append(f"{format_duration(remaining)} remaining")
    if spec.target is not None:
        if best is not None and not better(spec.target, best, spec.maximise):
            met.append(f"{spec.metric} {best:g} reached the target {spec.target:g}")
        else:
            shown = "none yet" if best is None else f"{best:g}"
            parts.append(f"best {spec.metric} {shown} (target {spec.target:g})")
    if left <= 0:
        met.append("every planned experiment attempted")
    if met:
        return Progress(True, "stop condition met: " + "; ".join(met))
    return Progress(False, "stop condition not yet met: " + ", ".join(parts))


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
