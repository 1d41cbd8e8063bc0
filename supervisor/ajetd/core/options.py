"""The blueprint's optional `[ajetd]` part: YAML for what the eight parts cannot say.

Key names are contract (DESIGN §3). Every key is validated here, purely, each value by the one
parser of its kind in `ajetd.core.values` (durations, Slurm times, sizes, counts, numbers, words,
paths, lists); an unknown key is an error that names it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ajetd.core import fixdomain, hostspecs, pathglob, values
from ajetd.core.durations import format_duration
from ajetd.core.envnames import env_name_problem
from ajetd.core.errors import BlueprintError
from ajetd.core.hostspecs import (
    MAX_GPUS,
    SLURM_KEYS,
    SSH_KEYS,
    SWARM_KEYS,
    SlurmSpec,
    SshSpec,
    SwarmSpec,
)
from ajetd.core.markdown import fenced_body
from ajetd.core.shown import show
from ajetd.core.stoprules import PlateauRule
from ajetd.core.userkinds import UserKind, parse_kinds
from ajetd.core.values import (
    OptionError,
    did_you_mean,
    take,
    unknown_key,
    unknown_keys,
)
from ajetd.frameworks.agentjet import checked_override

KNOWN_KEYS = (
    "gpus",
    "env",
    "max_trials",
    "allow_fixes",
    "plateau",
    "hang",
    "autokill",
    "keep_session",
    "swarm",
    "ssh",
    "pull",
    "stages",
    "on_finish",
    "on_attention",
    "slurm",
    "kinds",
    "yaml_overrides",
)
# The science fixes (`allow_fixes`): for each failure kind one can help, the YAML keys a
# remedy lowers, in order (`ajetd.core.remedy`); a blueprint may permit only these keys.
SCIENCE_STEPS = {
    "cuda_oom": (
        "ppo_max_token_len_per_gpu",  # AgentJet's (verl's) under use_dynamic_bsz, its default
        "log_prob_max_token_len_per_gpu",
        "ppo_micro_batch_size_per_gpu",  # verl's without dynamic batch sizes
        "log_prob_micro_batch_size_per_gpu",
        "micro_batch_size_per_gpu",
        # NeMo-RL's token budgets, `policy.dynamic_batching.` / `policy.sequence_packing.`
        "train_mb_tokens",
        "logprob_mb_tokens",
        "train_micro_batch_size",  # NeMo-RL's `policy.` keys
        "logprob_batch_size",
        "gpu_memory_utilization",  # vLLM's, in both
        "max_response_length",
    ),
    "vllm_memory": ("gpu_memory_utilization",),
    "nan_loss": ("lr",),
}
SCIENCE_KEYS = tuple(dict.fromkeys(key for keys in SCIENCE_STEPS.values() for key in keys))
# The keys inside each structured option (also what the table test covers, key by key).
SUBKEYS: dict[str, tuple[str, ...]] = {
    "hang": ("window", "action"),
    "plateau": ("metric", "patience", "min_delta", "after", "mode"),
    "swarm": SWARM_KEYS,
    "ssh": SSH_KEYS,
    "slurm": SLURM_KEYS,
    "stages": ("name", "command", "requires", "outputs"),
    "allow_fixes": ("min", "max"),
}
HANG_ACTIONS = ("attention", "stop", "relaunch")


@dataclass(frozen=True)
class Stage:
    """One step of a pipeline (seed 000): its command (empty: the blueprint's launch
    command), the files that must exist before it starts, and those it must leave."""

    name: str
    command: str = ""
    requires: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Options:
    """Validated `[ajetd]` settings with their defaults."""

    gpus: str = "all"  # "all", "0" (CPU only), a count "4", or a list "[0,1]"
    env: dict[str, str] = field(default_factory=dict)
    max_trials: int = 3
    hang_window_s: float | None = None  # None: auto
    hang_action: str = "attention"
    autokill: str = "protect"
    keep_session_s: float = 3600.0
    plateau: PlateauRule | None = None
    # science fixes the blueprint permits: key -> (min, max); None means unbounded that way
    allow_fixes: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    on_finish: str = ""  # hook commands, run with the run's JSON on stdin
    on_attention: str = ""
    swarm: SwarmSpec | None = None
    ssh: SshSpec | None = None
    pull: tuple[str, ...] = ()  # remote artifacts copied back into the result dir (ssh runs)
    stages: tuple[Stage, ...] = ()  # a pipeline; empty: the launch command alone
    slurm: SlurmSpec | None = None
    kinds: tuple[UserKind, ...] = ()  # user-defined failure kinds (core/userkinds.py)
    # K=V set in the copy of exp_yaml_path that --conf is pointed at (AgentJet's launcher
    # takes no key=value arguments; a campaign's overrides for it come this way)
    yaml_overrides: tuple[str, ...] = ()
    # what was read but may not be what was meant: a duration given as a bare number (hours)
    notes: tuple[str, ...] = ()


_IN_PART = re.compile(r"\bline \d{1,9}")  # "line 3" in a YAML error: the part's own line


def load_yaml_part(text: str) -> dict[str, Any]:
    """The `[ajetd]` part's YAML (plain or the first fenced block) as a mapping, loaded with
    bounds (`ajetd.core.yamlpart`); raise BlueprintError saying what is wrong."""
    from ajetd.core import yamlpart  # here: `ajetd status` reads inbox blueprints without YAML

    body = text.strip()
    fenced = fenced_body(body)
    if fenced is not None:
        body = fenced
    if not body.strip():
        return {}
    try:
        data = yamlpart.load(body)
    except yamlpart.YamlError as exc:  # its lines count from the part's first, not the file's
        raise BlueprintError([_IN_PART.sub(r"\g<0> of the [ajetd] part", str(exc))]) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        wide = yamlpart.wide_colon(body)
        hint = "" if wide is None else "; " + _IN_PART.sub(r"\g<0> of the [ajetd] part", wide)
        raise BlueprintError([f"must be a YAML mapping of keys, got {show(data)}{hint}"])
    if isinstance(data.get("env"), dict):  # `VERSION: 0.10` is "0.10", not 0.1
        typed = yamlpart.plain_scalars_under(body, "env")
        data["env"] = {
            k: typed.get(k, v) if isinstance(k, str) else v for k, v in data["env"].items()
        }
    return {str(k): v for k, v in data.items()}


MAX_TRIALS = 100


_GPU_LIST = re.compile(r"\d{1,4}(?:[ \t]*,[ \t]*\d{1,4})*[ \t]*,?")


def _gpus_as_text(value: str) -> Any:
    """`gpus:` as text, read as its YAML value would be: `"2"` a count, `0,1` (as in
    CUDA_VISIBLE_DEVICES) a list, `ALL` all; anything else as it is (refused by name)."""
    text = value.strip()
    if text.lower() == "all":
        return "all"
    if len(text) <= 200 and _GPU_LIST.fullmatch(text):
        numbers = [int(n) for n in text.rstrip(", \t").split(",")]
        return numbers if "," in text else numbers[0]
    return value


def gpus_option(value: Any, problems: list[str]) -> str:
    """`gpus:` as a blueprint's `[ajetd]` part reads it (a campaign's `gpus:` too)."""
    return _gpus(value, problems)


def _gpus(value: Any, problems: list[str]) -> str:
    expected = "gpus: expected a count, `all` or a list of indices"
    if isinstance(value, str):
        value = _gpus_as_text(value)
    if value == "all" or value is None:
        return "all"
    if isinstance(value, list) and value:
        indices = take(
            problems,
            None,
            _indices,
            value,
        )
        if indices is None:
            return "all"
        if len(set(indices)) != len(indices):
            problems.append(f"gpus: repeated index in {indices}")
        return "[" + ",".join(str(i) for i in indices) + "]"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(take(problems, 0, values.count, "gpus", value, 0, MAX_GPUS))
    problems.append(f"{expected}, got {show(value)}")
    return "all"


def gpus_shown(gpus: str) -> int | str | list[int]:
    """`Options.gpus` as the YAML value it stands for, as lint shows it: a count (`0`, CPU
    only, as `2`), `all`, or a list of indices, as the status object lists the GPUs a run
    got. Shown as text, `'0'` read as a name rather than as no GPU (walk 90, F12)."""
    if gpus.startswith("["):
        return [int(i) for i in gpus.strip("[]").split(",") if i]
    return int(gpus) if gpus.isdigit() else gpus


def _indices(value: list[Any]) -> list[int]:
    values.count("gpus: the list's length", len(value), 1, MAX_GPUS)
    return [values.count(f"gpus[{i}]", v, 0, MAX_GPUS - 1) for i, v in enumerate(value, 1)]


def _env(value: Any, problems: list[str], admitted: bool = False) -> dict[str, str]:
    if value is None:  # `env:` with nothing under it
        return {}
    if not isinstance(value, dict):
        problems.append(f"env: expected a mapping NAME: value, got {show(value)}")
        return {}
    env: dict[str, str] = {}
    for name, val in value.items():
        if name == "CUDA_VISIBLE_DEVICES" and not admitted:  # placement replaces it, silently
            problems.append(
                "env: CUDA_VISIBLE_DEVICES is set by ajetd from `gpus:`; to run on those "
                f"GPUs write `gpus: [{str(val)[:64]}]`"
            )
        elif env_name_problem(name, admitted):
            problems.append(f"env: {env_name_problem(name, admitted)}")
        elif isinstance(val, (dict, list)) or val is None:
            problems.append(f"env: {name} must be a string or number")
        else:
            text = take(problems, None, values.text, f"env.{name}", val)
            if text is not None:
                env[name] = text
    return env


def _hang(value: Any, problems: list[str]) -> tuple[float | None, str]:
    if value is None:  # `hang:` with nothing under it: the defaults
        value = {}
    if not isinstance(value, dict):
        problems.append(
            "hang: expected {window: auto | DURATION, action: attention | stop | relaunch}"
        )
        return None, "attention"
    unknown_keys("hang", value, SUBKEYS["hang"], problems)
    window = value.get("window", "auto")
    seconds = None
    if window != "auto":
        seconds = take(problems, None, values.duration, "hang.window", window)
    action = value.get("action", "attention")
    if action not in HANG_ACTIONS:
        problems.append(f"hang.action: expected attention, stop or relaunch, got {show(action)}")
        action = "attention"
    return seconds, str(action)


def _plateau(value: Any, problems: list[str]) -> PlateauRule | None:
    if value is None or value is False:
        return None
    if value is True:
        return PlateauRule()
    if not isinstance(value, dict):
        problems.append("plateau: expected {metric, patience, min_delta, after, mode} or true")
        return None
    mark = len(problems)
    unknown_keys("plateau", value, SUBKEYS["plateau"], problems)
    rule = PlateauRule()
    metric = value.get("metric", rule.metric)
    if not isinstance(metric, str) or not metric or len(metric) > 256:
        problems.append(
            f"plateau.metric: expected a validation key such as mean_reward, got {show(metric)}"
        )
    given = {key: value.get(key, getattr(rule, key)) for key in ("patience", "min_delta", "after")}
    patience = take(problems, 0, values.count, "plateau.patience", given["patience"], 1, 10000)
    min_delta, after = (
        take(problems, 0.0, values.number, f"plateau.{key}", given[key], 0.0, high, what=what)
        for key, high, what in (
            ("min_delta", 1e9, "a number"),
            ("after", 1.0, "a fraction of exp_max_time"),
        )
    )
    mode = value.get("mode", rule.mode)
    if mode not in ("auto", "max", "min"):
        problems.append(f"plateau.mode: expected auto, max or min, got {show(mode)}")
    if len(problems) > mark:
        return None
    return PlateauRule(str(metric), patience, min_delta, after, str(mode), "metric" in value)


def _allow_fixes(
    value: Any, problems: list[str], admitted: bool = False
) -> dict[str, tuple[float | None, float | None]]:
    """Each allowed key's (min, max). `admitted`: a run's stored blueprint read again, whose
    bounds are not judged against the key's values (`fixdomain`): a bound a later ajetd
    refuses never takes a live run's other options away, and the remedy never writes a value
    outside the key's domain whatever its bounds."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append("allow_fixes: expected {key: {min: N, max: N}}")
        return {}
    out: dict[str, tuple[float | None, float | None]] = {}
    for key, given in value.items():
        if key not in SCIENCE_KEYS:
            problems.append(
                f"allow_fixes: {show(key)} is not a key ajetd can fix"
                f"{did_you_mean(str(key), SCIENCE_KEYS)} "
                f"(known: {', '.join(SCIENCE_KEYS)})"
            )
            continue
        bounds = {} if given is None else given
        if not isinstance(bounds, dict):
            problems.append(f"allow_fixes.{key}: expected {{min: N, max: N}}")
            continue
        mark = len(problems)
        unknown_keys(f"allow_fixes.{key}", bounds, SUBKEYS["allow_fixes"], problems)
        # YAML reads `1e-7` (no dot) as a string: values.number takes numbers in either form
        low, high = (
            take(problems, None, _bound, f"allow_fixes.{key}.{side}", bounds)
            for side in ("min", "max")
        )
        if len(problems) == mark and not admitted:
            problems.extend(fixdomain.bound_problems(str(key), low, high))
        if len(problems) == mark:
            out[str(key)] = (low, high)
    return out


def _bound(key: str, bounds: dict[str, Any]) -> float | None:
    given = bounds.get(key.rsplit(".", 1)[1])
    return None if given is None else values.number(key, given)


def _paths(key: str, value: Any, problems: list[str]) -> tuple[str, ...]:
    """A list of paths relative to exp_codebase_dir (one alone may be given as a string); a
    glob (`saved/ckpt_*`) is present when one path matches it (`core.pathglob`: a checkpoint
    whose step is not known in advance, walk86 F32), a bracket set in it checked here."""
    paths: tuple[str, ...] = take(problems, (), values.string_list, key, value, values.path)
    problems.extend(p for path in paths if (p := pathglob.glob_problem(key, path)))
    return paths


def _stages(value: Any, problems: list[str]) -> tuple[Stage, ...]:
    if value is None or value == []:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        problems.append("stages: expected a list of {name, command, requires, outputs}")
        return ()
    if len(value) > 100:
        problems.append(f"stages: {len(value)} stages (at most 100)")
        return ()
    out: list[Stage] = []
    for i, raw in enumerate(value, 1):
        unknown_keys(f"stages[{i}]", raw, SUBKEYS["stages"], problems)
        name = take(problems, f"stage{i}", _stage_name, i, raw.get("name"))
        command = take(
            problems,
            "",
            values.text,
            f"stages[{i}] ({name}): command",
            raw.get("command") or "",
            what="a shell command (a string)",
        )
        if i == 1 and command.strip():
            problems.append(
                f"stages[1] ({name}): the first stage runs exp_launch_command; give its command "
                "there, not here"
            )
        if i > 1 and not command.strip():
            problems.append(f"stages[{i}] ({name}): needs a command")
        requires = _paths(f"stages[{i}].requires", raw.get("requires"), problems)
        outputs = _paths(f"stages[{i}].outputs", raw.get("outputs"), problems)
        out.append(Stage(name, command.strip(), requires, outputs))
    problems += values.same_names("stages", [s.name for s in out])
    return tuple(out)


def _stage_name(i: int, value: Any) -> str:
    if value is None or value == "":
        return f"stage{i}"
    name = values.text(f"stages[{i}].name", value, allowed="")
    if len(name) > 100:
        raise OptionError(f"stages[{i}].name: {show(name)} is longer than 100 characters")
    return name


def _hook(key: str, value: Any, problems: list[str]) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        problems.append(f"{key}: expected a shell command (a string), got {show(value)}")
        return ""
    return take(
        problems, "", values.text, key, value, what="a shell command", allowed="\t\n"
    ).strip()


# The duration options, each where it sits in the part and where its seconds are kept.
DURATION_KEYS: tuple[tuple[tuple[str, ...], Callable[[Options], float | None]], ...] = (
    (("keep_session",), lambda o: o.keep_session_s),
    (("hang", "window"), lambda o: o.hang_window_s),
    (("swarm", "health_timeout"), lambda o: o.swarm.health_timeout_s if o.swarm else None),
    (("swarm", "keep"), lambda o: o.swarm.keep_s if o.swarm else None),
)
_BARE_NUMBER = re.compile(r"[ \t]*\d{1,15}(?:\.\d{1,15})?[ \t]*")


def _given(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    """The value at `path` in the part as written (None where a mapping on the way is not)."""
    given: Any = data
    for key in path:
        if not isinstance(given, dict):
            return None
        given = given.get(key)
    return given


def bare_number_note(key: str, given: Any, seconds: float) -> str | None:
    """The note for a duration option given as a bare number, which ajetd reads as hours
    (as exp_max_time): `hang: {window: 30}` is 30 hours, `keep_session: 600` 25 days; None
    for a value with a unit, or zero (the same in any unit)."""
    bare = isinstance(given, (int, float)) and not isinstance(given, bool)
    if isinstance(given, str) and len(given) <= 40 and _BARE_NUMBER.fullmatch(given):
        bare = True
    if not bare or not seconds:
        return None
    number = show(given).strip("'").strip()
    days = f" ({seconds / 86400:.3g} days)" if seconds >= 2 * 86400 else ""
    return (
        f"{key}: {number} is a bare number, read as {seconds / 3600:g} hours{days}; "
        f"for seconds or minutes write `{number}s` or `{number}m`, for hours `{number}h`"
    )


def _bare_numbers(data: dict[str, Any], options: Options) -> tuple[str, ...]:
    notes = []
    for path, seconds in DURATION_KEYS:
        got = seconds(options)
        note = got and bare_number_note(".".join(path), _given(data, path), got)
        notes += [note] if note else []
    return tuple(notes)


def never_notes(options: Options, max_time_s: float) -> tuple[str, ...]:
    """The rules that can never act within exp_max_time (`max_time_s`): a hang window not
    shorter than it (the time limit stops the run first), a plateau whose `after` leaves no
    time after it."""
    notes = []
    window = options.hang_window_s
    if window is not None and max_time_s and window >= max_time_s:
        notes.append(
            f"hang.window: {format_duration(window)} is not shorter than exp_max_time "
            f"({format_duration(max_time_s)}): the hang rule can never fire (the time limit "
            "stops the run first); give a shorter window, with its unit (`90s`, `5m`)"
        )
    rule = options.plateau
    if rule is not None and max_time_s and rule.after >= 1.0:
        notes.append(
            f"plateau.after: {rule.after:g} of exp_max_time leaves no time for the rule to "
            "act (the time limit stops the run when it would begin); `after` is a fraction "
            "of exp_max_time, e.g. 0.5"
        )
    return tuple(notes)


def parse_options(text: str, admitted: bool = False) -> Options:
    """Validate the `[ajetd]` part's YAML; raise BlueprintError listing every problem.
    `admitted`: an admitted run's stored part, read again (`envnames.env_name_problem`)."""
    data = load_yaml_part(text)
    problems: list[str] = []
    for key in data:
        if key not in KNOWN_KEYS:
            problems.append(unknown_key("", key, KNOWN_KEYS))
    max_trials = take(
        problems, 3, values.count, "max_trials", data.get("max_trials", 3), 1, MAX_TRIALS
    )
    autokill = data.get("autokill", "protect")
    if autokill not in ("protect", "allow"):
        problems.append(f"autokill: expected protect or allow, got {show(autokill)}")
        autokill = "protect"
    keep = take(
        problems,
        3600.0,
        values.duration,
        "keep_session",
        data.get("keep_session", "1h"),
        zero_ok=True,
    )
    hang_window, hang_action = _hang(data.get("hang", {}), problems)
    options = Options(
        gpus=_gpus(data.get("gpus", "all"), problems),
        env=_env(data.get("env", {}), problems, admitted),
        max_trials=max_trials,
        hang_window_s=hang_window,
        hang_action=hang_action,
        autokill=str(autokill),
        keep_session_s=keep,
        plateau=_plateau(data.get("plateau"), problems),
        allow_fixes=_allow_fixes(data.get("allow_fixes"), problems, admitted),
        on_finish=_hook("on_finish", data.get("on_finish"), problems),
        on_attention=_hook("on_attention", data.get("on_attention"), problems),
        swarm=hostspecs.swarm(data.get("swarm"), problems),
        ssh=hostspecs.ssh(data.get("ssh"), problems),
        pull=_paths("pull", data.get("pull"), problems),
        stages=_stages(data.get("stages"), problems),
        slurm=hostspecs.slurm(data.get("slurm"), problems),
        kinds=parse_kinds(data.get("kinds"), problems, admitted),
        yaml_overrides=take(
            problems,
            (),
            values.string_list,
            "yaml_overrides",
            data.get("yaml_overrides"),
            checked_override,
        ),
    )
    if options.slurm is not None and options.ssh is not None:
        problems.append("slurm and ssh: one or the other (ajetd submits to Slurm from here)")
    if options.pull and options.ssh is None:
        problems.append("pull: only for runs on a remote host (`ssh:`)")
    if problems:
        raise BlueprintError(problems)
    return replace(options, notes=_bare_numbers(data, options))
