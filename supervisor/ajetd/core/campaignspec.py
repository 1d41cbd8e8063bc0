"""A research campaign's `campaign.yaml` (seed 002): what it asks for, validated; pure.

A campaign is a folder holding `campaign.yaml` and a base blueprint: a name, the metric and
its direction, the stop rules, the experiments (each overrides, a patch, a starting branch or
its own blueprint), how many run at once, and the branches they are committed on. Every
problem is found at once and raised as one `CampaignError`. `merged` and `entry` give the
text as the live `ajetd campaign add` / `set` change it, so it is validated the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ajetd.core import values, yamlpart
from ajetd.core.durations import format_duration
from ajetd.core.errors import AjetdError
from ajetd.core.shown import show
from ajetd.core.stoprules import loss_like
from ajetd.core.timefmt import iso
from ajetd.core.values import take

ENTRY_KEYS = ("name", "description", "overrides", "patch", "from", "blueprint", "smoke")
STOP_KEYS = ("max_experiments", "deadline", "per_experiment_timeout", "target_metric")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
_BRANCH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}\Z")


CAMPAIGN_MAX_CHARS = 256 * 1024
DEFAULT_METRIC = "mean_reward"  # campaign.yaml gives no `metric:` (AgentJet's)


class CampaignError(AjetdError):
    """A campaign that cannot start; `problems` names each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str = ""
    overrides: tuple[str, ...] = ()  # K=V: on the command; for AgentJet in a copy of its YAML
    patch: str = ""  # a patch file in the folder, applied and committed (branch_prefix only)
    start: str = ""  # the branch or commit it starts from (default: the baseline commit)
    blueprint: str = ""  # its own blueprint in the folder instead of the base
    smoke: bool = False  # a pipeline check: ledger status `smoke`, counts against no stop rule


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
    metric_named: bool = True  # campaign.yaml names its metric (else DEFAULT_METRIC)
    direction_named: bool = True  # it gives `direction` (else min for a loss, else max)
    # no branch_prefix given: seed 002's default prefix where the codebase allows it
    # (`default_prefix`); `branch_prefix: false` turns branches off
    branches: bool = True

    @property
    def default_rule(self) -> bool:
        """No campaign-level stop rule given: seed 002's baseline + three experiments holds."""
        return self.max_experiments is None and self.deadline_s is None and self.target is None


def _duration(key: str, value: Any, problems: list[str]) -> float | None:
    """A stop rule's duration, parsed by the one duration parser (`ajetd.core.values`)."""
    return None if value is None else take(problems, None, values.duration, key, value)


def override_problem(override: str) -> str | None:
    """Why an experiment's override is not one (None when it is): `K=V` with a non-empty key
    and no whitespace in it (Hydra's `+K=V`, `++K=V` and `~K` too). Checked here for
    campaign.yaml and for `ajetd campaign add`, so both refuse the same ones."""
    key, equals, _ = override.partition("=")
    bare = key.lstrip("+") if equals else key[1:] if key.startswith("~") else ""
    if not bare or any(c.isspace() for c in key):
        return f"override {show(override)} is not K=V (a key without spaces, =, a value)"
    return None


def override_key(override: str) -> str:
    """The key an override sets or removes (`++a.b=1`, `a.b=2` and `~a.b`: `a.b`)."""
    return override.partition("=")[0].lstrip("+~")


_HUNK = re.compile(r"^(?:@@ |diff --git |GIT binary patch|rename from |(?:new|deleted) file mode )")


def patch_problem(name: str, text: str) -> str | None:
    """Why a patch file holds no change git would apply (None when it holds one): empty, or
    no diff in it (walk97b F3: CAMPAIGN.md's `sed` changed nothing on a real config, `diff`
    wrote 0 bytes, and the experiment was a crash row `No valid patches in input`)."""
    if any(_HUNK.match(line) for line in text.splitlines()):
        return None
    what = "is empty" if not text.strip() else "holds no diff (no `@@` hunk, no `diff --git`)"
    return (
        f"patch {name} {what}: git would apply nothing (did the edit change the file? "
        "`git diff` or `diff -u OLD NEW` writes nothing where the files are the same)"
    )


def with_carried(carried: Sequence[str], own: Sequence[str]) -> tuple[str, ...]:
    """An experiment's overrides when it starts from an earlier one's branch or commit: the
    earlier one's (`carried`, which git does not hold), then its own; a key its own set or
    remove is not carried (its own value stands, and no program sees one key twice)."""
    keys = {override_key(o) for o in own}
    return (*(o for o in carried if override_key(o) not in keys), *own)


def added_file(index: int, name: str, key: str) -> str:
    """The folder's name for the patch (`key` patch) or blueprint an `add` brings."""
    return f"added-{index:02d}-{name}.{'patch' if key == 'patch' else 'md'}"


def name_problem(name: str) -> str | None:
    """Why `name` cannot name an experiment, or None. It goes into file names (an added
    experiment's patch, `added-NN-<name>.patch`) and branch names: no `/`, `..`, NUL, line
    break or space, at most 64 characters."""
    if name == "baseline":  # a valid word, taken: saying the charset read as a contradiction
        return (
            "name 'baseline' is reserved for the campaign's own first row (the base blueprint "
            "unchanged; `baseline: false` leaves it out): choose another name"
        )
    if not _NAME.match(name):
        return f"name {show(name)}: letters, digits, . _ - only (up to 64)"
    return None


def _experiment(i: int, raw: Any, files: set[str], problems: list[str]) -> Experiment | None:
    if not isinstance(raw, dict):
        problems.append(f"experiments[{i}]: expected {{name, description, overrides, patch}}")
        return None
    name = str(raw.get("name") or "")
    problem = name_problem(name)
    if problem:
        problems.append(f"experiments[{i}]: {problem}")
    overrides = raw.get("overrides") or []
    if isinstance(overrides, str):
        overrides = [overrides]
    if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
        problems.append(f"experiments[{i}] ({name}): overrides must be a list of strings")
        overrides = []
    for override in overrides:
        problem = override_problem(override)
        if problem:
            problems.append(f"experiments[{i}] ({name}): {problem}")
    for key in ("patch", "blueprint"):
        value = raw.get(key)
        if value and str(value) not in files:
            problems.append(f"experiments[{i}] ({name}): {key} {value} is not in the folder")
    values.unknown_keys(f"experiments[{i}] ({name})", raw, ENTRY_KEYS, problems)
    smoke = raw.get("smoke", False)
    if not isinstance(smoke, bool):
        problems.append(
            f"experiments[{i}] ({name}): smoke must be true or false, got {show(smoke)}"
        )
    start = str(raw.get("from") or "")
    if start and not _BRANCH.match(start):
        problems.append(f"experiments[{i}] ({name}): from {show(start)} is not a branch or commit")
    return Experiment(
        name,
        str(raw.get("description") or ""),
        tuple(overrides),
        str(raw.get("patch") or ""),
        start,
        str(raw.get("blueprint") or ""),
        smoke is True,
    )


def _stop_rules(
    stop: Any, problems: list[str]
) -> tuple[int | None, float | None, float | None, float | None]:
    if not isinstance(stop, dict):
        problems.append(
            "stop: expected {max_experiments, deadline, per_experiment_timeout, target_metric}"
        )
        return None, None, None, None
    bad = sorted(set(map(str, stop)) - set(STOP_KEYS))
    if bad:
        problems.append(f"stop: unknown rule {show(bad[0])} (known: {', '.join(STOP_KEYS)})")
    count = stop.get("max_experiments")
    if count is not None:
        count = take(problems, None, values.count, "stop.max_experiments", count, 1, 100000)
    target = stop.get("target_metric")
    if target is not None:
        target = take(problems, None, values.number, "stop.target_metric", target)
    deadline = _duration("stop.deadline", stop.get("deadline"), problems)
    per = _duration("stop.per_experiment_timeout", stop.get("per_experiment_timeout"), problems)
    if deadline is not None and per is not None and per > deadline:
        problems.append(
            f"stop: per_experiment_timeout ({format_duration(per)}) is longer than the deadline "
            f"({format_duration(deadline)}): an experiment starts only while a whole "
            "per_experiment_timeout remains before the deadline, so none would ever run"
        )
    return count, deadline, per, None if target is None else float(target)


def _experiments(raw: Any, files: set[str], problems: list[str]) -> list[Experiment]:
    if not isinstance(raw, list):
        problems.append("experiments: expected a list")
        return []
    found = [_experiment(i, e, files, problems) for i, e in enumerate(raw, 1)]
    experiments = [e for e in found if e is not None]
    problems += values.same_names("experiments", [e.name if e else None for e in found])
    return experiments


CAMPAIGN_KEYS = (
    "base",
    "baseline",
    "branch_prefix",
    "direction",
    "experiments",
    "gpus",
    "metric",
    "name",
    "parallel",
    "result_dir",
    "stop",
)


def _load(text: str) -> dict[Any, Any]:
    """campaign.yaml as a mapping, loaded with bounds; CampaignError when it is not one."""
    try:
        data = yamlpart.load(text, max_chars=CAMPAIGN_MAX_CHARS)
    except yamlpart.YamlError as exc:
        raise CampaignError([f"campaign.yaml: {exc}"]) from None
    if not isinstance(data, dict):
        raise CampaignError(["campaign.yaml: expected a mapping"])
    return data


def _header(
    data: dict[Any, Any], files: set[str], problems: list[str]
) -> tuple[str, str, str, str]:
    """The campaign's name, direction, base blueprint and result dir, each checked."""
    values.unknown_keys("", data, CAMPAIGN_KEYS, problems)
    name = str(data.get("name") or "")
    if not _NAME.match(name):
        problems.append(f"name: {show(name)}: letters, digits, . _ - (up to 64)")
    # none given: min for a metric named like a loss, else max (as a plateau rule's `mode:
    # auto` and NeMo-RL's `higher_is_better` default); a loss maximised kept the worse run
    metric = str(data.get("metric") or DEFAULT_METRIC)
    direction = str(data.get("direction") or ("min" if loss_like(metric) else "max"))
    if direction not in ("max", "min"):
        problems.append(f"direction: expected max or min, got {show(direction)}")
    base = str(data.get("base") or "")
    if base not in files:
        problems.append(f"base: the base blueprint {base or '(none given)'} is not in the folder")
    result_dir = str(data.get("result_dir") or "")
    if not result_dir.startswith("/"):
        problems.append(f"result_dir: expected an absolute path, got {show(result_dir)}")
    return name, direction, base, result_dir


def _needs_branches(experiments: list[Experiment], branches: bool, problems: list[str]) -> None:
    """Patches and `from` need branches: they are committed on one, or name where one starts.
    Only `branch_prefix: false` turns branches off; without branch_prefix the default prefix
    holds (walk97b F5: they were refused "needs branch_prefix" while it was in force), and
    where the codebase cannot take it, `campaignfolder.check_default_branches` says why."""
    off = "`branch_prefix: false` turns branches off"
    if any(e.patch for e in experiments) and not branches:
        problems.append(f"experiments: a patch is committed on a branch, and {off}")
    if any(e.start for e in experiments) and not branches:
        problems.append(f"experiments: `from` names where a branch starts, and {off}")


def hypothesis_message(exp: Experiment, campaign: str) -> str:
    """The hypothesis commit's message: the hypothesis, then the overrides it runs with (an
    override is no change to a file, so an override-only experiment's commit held nothing
    that said what it ran: walk89 F9), one a line."""
    head = f"hypothesis: {exp.description or exp.name} (ajetd campaign {campaign})"
    if not exp.overrides:
        return head
    return head + "\n\nruns with the overrides:\n" + "\n".join(exp.overrides) + "\n"


def default_prefix(spec: CampaignSpec, started_at: float) -> str:
    """Seed 002's default branch prefix for a campaign that gives none, descriptive as its
    example (`autoresearch/2026-03-24-dapo-qwen2p5`): the day it started (UTC) and its name."""
    day = (iso(started_at) or "")[:10]
    return f"autoresearch/{day}-{spec.name}"[:100]


def name_said(text: str) -> str:
    """The campaign's name as campaign.yaml gives it, where one can be read ("" where not):
    a campaign refused for any other fault (its base not in the folder) is still shown by
    its name (walk92 F4: `campaign list` showed none)."""
    try:
        data = _load(text)
    except CampaignError:
        return ""
    name = data.get("name")
    return name if isinstance(name, str) and _NAME.match(name) else ""


def parse_campaign(text: str, files: set[str]) -> CampaignSpec:
    """Validate `campaign.yaml` (`files`: the names in its folder); every problem at once."""
    data = _load(text)
    problems: list[str] = []
    name, direction, base, result_dir = _header(data, files, problems)
    count, deadline, per_experiment, target = _stop_rules(data.get("stop") or {}, problems)
    parallel = take(problems, 1, values.count, "parallel", data.get("parallel", 1), 1, 1000)
    prefix = str(data.get("branch_prefix") or "")
    if prefix and not _BRANCH.match(prefix):
        problems.append(f"branch_prefix: {show(prefix)} is not a usable branch name")
    experiments = _experiments(data.get("experiments") or [], files, problems)
    _needs_branches(experiments, data.get("branch_prefix") is not False, problems)
    spec = CampaignSpec(
        name=name,
        metric=str(data.get("metric") or DEFAULT_METRIC),
        metric_named=bool(data.get("metric")),
        direction_named=bool(data.get("direction")),
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
        branches=data.get("branch_prefix") is not False,
    )
    if problems:
        raise CampaignError(problems)
    return spec


DURATION_RULES = ("deadline", "per_experiment_timeout")


def bare_durations(stop: Mapping[Any, Any]) -> list[str]:
    """A stop rule's duration given as a bare number (`deadline: 2`), which reads as hours:
    refused where a campaign comes in (its folder, `campaign set`), naming the unit to write
    (walk97b F10: taken as 2 h in silence, where a blueprint's bare number is warned). Not
    in `parse_campaign`: a campaign already running with one goes on as it was read."""
    from ajetd.core.options import bare_number_note

    problems = []
    for key in DURATION_RULES:
        given = stop.get(key)
        seconds = _duration(key, given, [])
        note = seconds and bare_number_note(f"stop.{key}", given, seconds)
        if note:
            problems.append(f"{note} (a campaign's durations take their unit)")
    return problems


def planned(spec: CampaignSpec) -> list[Experiment]:
    """Every experiment in order, the baseline first when the campaign runs one."""
    first = [Experiment("baseline", "the base blueprint unchanged")] if spec.baseline else []
    return [*first, *spec.experiments]


def merged(text: str, added: Sequence[Mapping[str, Any]], stop: Mapping[str, Any]) -> str:
    """campaign.yaml with the experiments added live and the stop rules set live: what is
    parsed (and so validated) exactly as if the user had written it that way."""
    try:
        data = yamlpart.load(text, max_chars=CAMPAIGN_MAX_CHARS)
    except yamlpart.YamlError:
        return text  # parse_campaign says what is wrong
    if not isinstance(data, dict):
        return text  # parse_campaign says what is wrong
    if added:
        listed = data.get("experiments") or []
        data["experiments"] = [*listed, *added] if isinstance(listed, list) else listed
    if stop:
        rules_now = data.get("stop") or {}
        data["stop"] = {**rules_now, **stop} if isinstance(rules_now, dict) else rules_now
    return yamlpart.dump(data, sort_keys=False, allow_unicode=True)


def entry(
    name: str,
    description: str,
    overrides: Sequence[str] = (),
    patch: str = "",
    start: str = "",
    blueprint: str = "",
    smoke: bool = False,
) -> dict[str, Any]:
    """A campaign.yaml experiment entry, as `ajetd campaign add`'s options give it."""
    raw: dict[str, Any] = {"name": name, "description": description}
    if overrides:
        raw["overrides"] = list(overrides)
    for key, value in (("patch", patch), ("from", start), ("blueprint", blueprint)):
        if value:
            raw[key] = value
    if smoke:
        raw["smoke"] = True
    return raw
