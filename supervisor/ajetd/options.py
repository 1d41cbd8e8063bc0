"""The blueprint's optional `[ajetd]` part: YAML for what the eight parts cannot say.

Key names are contract (DESIGN §3). Every key is validated here, purely; an unknown key is an
error that names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from ajetd.durations import parse_duration
from ajetd.errors import BlueprintError, DurationError
from ajetd.stoprules import PlateauRule
from ajetd.userkinds import UserKind, parse_kinds

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
)
# Not carried out yet: the run is still the one asked for, so it runs, with a warning.
SCIENCE_KEYS = (
    "ppo_micro_batch_size_per_gpu",
    "log_prob_micro_batch_size_per_gpu",
    "micro_batch_size_per_gpu",
    "gpu_memory_utilization",
    "max_response_length",
    "lr",
)
HANG_ACTIONS = ("attention", "stop", "relaunch")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED_ENV = ("AJETD_RUN_ID", "AJETD_RESULT_DIR", "VIRTUAL_ENV")


SWARM_PORT = 10086  # AgentJet's default swarm port


@dataclass(frozen=True)
class SwarmSpec:
    """AgentJet swarm mode: a shared server on `port`, then the blueprint's command as client."""

    port: int = SWARM_PORT
    server_command: str = ""  # empty: `ajet-swarm start --swarm-port=<port>`
    health_timeout_s: float = 120.0
    keep_s: float = 600.0  # how long an idle server ajetd started stays up after its last run

    @property
    def command(self) -> str:
        return self.server_command or f"ajet-swarm start --swarm-port={self.port}"


@dataclass(frozen=True)
class SshSpec:
    """A remote host: the session stays local, its pane runs `ssh` to the host."""

    host: str
    user: str = ""
    port: int = 22
    identity_file: str = ""
    options: tuple[tuple[str, str], ...] = ()  # extra `ssh -o Key=value`

    @property
    def target(self) -> str:
        return f"{self.user}@{self.host}" if self.user else self.host


@dataclass(frozen=True)
class SlurmSpec:
    """Run through Slurm (`[ajetd] slurm`): the allocation asked for, and how."""

    partition: str = ""
    nodes: int = 1
    gpus_per_node: int | None = None
    cpus_per_task: int | None = None
    mem: str = ""
    time: str = ""  # a Slurm time limit; default exp_max_time plus a margin
    account: str = ""
    qos: str = ""
    constraint: str = ""
    exclude: str = ""
    extra: tuple[str, ...] = ()  # more sbatch/srun options, as given
    mode: str = "interactive"  # interactive (srun --pty in the pane) or batch (sbatch)


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
    kinds: tuple[UserKind, ...] = ()  # user-defined failure kinds (userkinds.py)


def load_yaml_part(text: str) -> dict[str, Any]:
    body = text.strip()
    fenced = re.search(r"^\s*(`{3,}|~{3,})[^\n]*\n(.*?)^\s*\1\s*$", body, re.DOTALL | re.MULTILINE)
    if fenced:
        body = fenced.group(2)
    if not body.strip():
        return {}
    try:
        data = yaml.safe_load(body)
    except yaml.YAMLError as exc:
        raise BlueprintError([f"not valid YAML: {str(exc).splitlines()[0]}"]) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise BlueprintError([f"must be a YAML mapping of keys, got {type(data).__name__}"])
    return {str(k): v for k, v in data.items()}


def _duration(key: str, value: Any, problems: list[str], *, zero_ok: bool = False) -> float | None:
    if zero_ok and re.fullmatch(r"\s*0+(?:\.0*)?\s*[a-z]*\s*", str(value)):
        return 0.0
    if isinstance(value, bool):
        problems.append(f"{key}: expected a duration such as 30m, got {value!r}")
        return None
    if isinstance(value, (int, float)):
        return float(value) * 3600.0 if value > 0 else 0.0
    try:
        return parse_duration(str(value))
    except DurationError as exc:
        problems.append(f"{key}: {exc}")
        return None


def _gpus(value: Any, problems: list[str]) -> str:
    if value == "all" or value is None:
        return "all"
    if isinstance(value, bool):
        problems.append(f"gpus: expected a count, `all` or a list of indices, got {value!r}")
        return "all"
    if isinstance(value, int) and value >= 0:
        return str(value)
    if (
        isinstance(value, list)
        and value
        and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in value)
    ):
        if len(set(value)) != len(value):
            problems.append(f"gpus: repeated index in {value}")
        return "[" + ",".join(str(i) for i in value) + "]"
    problems.append(f"gpus: expected a count, `all` or a list of indices, got {value!r}")
    return "all"


def _env(value: Any, problems: list[str]) -> dict[str, str]:
    if not isinstance(value, dict):
        problems.append(f"env: expected a mapping NAME: value, got {type(value).__name__}")
        return {}
    env: dict[str, str] = {}
    for name, val in value.items():
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            problems.append(f"env: {name!r} is not a valid environment variable name")
        elif name in _RESERVED_ENV:
            problems.append(f"env: {name} is set by ajetd and cannot be overridden")
        elif isinstance(val, (dict, list)) or val is None:
            problems.append(f"env: {name} must be a string or number")
        else:
            env[name] = str(val).lower() if isinstance(val, bool) else str(val)
    return env


def _hang(value: Any, problems: list[str]) -> tuple[float | None, str]:
    if not isinstance(value, dict):
        problems.append(
            "hang: expected {window: auto | DURATION, action: attention | stop | relaunch}"
        )
        return None, "attention"
    unknown = sorted(set(map(str, value)) - {"window", "action"})
    if unknown:
        problems.append(f"hang: unknown key {unknown[0]!r} (known: window, action)")
    window = value.get("window", "auto")
    seconds = None if window == "auto" else _duration("hang.window", window, problems)
    action = str(value.get("action", "attention"))
    if action not in HANG_ACTIONS:
        problems.append(f"hang.action: expected attention, stop or relaunch, got {action!r}")
    return seconds, action


def _plateau(value: Any, problems: list[str]) -> PlateauRule | None:
    if value is None or value is False:
        return None
    if value is True:
        return PlateauRule()
    if not isinstance(value, dict):
        problems.append("plateau: expected {metric, patience, min_delta, after, mode} or true")
        return None
    unknown = sorted(set(map(str, value)) - {"metric", "patience", "min_delta", "after", "mode"})
    if unknown:
        problems.append(
            f"plateau: unknown key {unknown[0]!r} (known: metric, patience, min_delta, after, mode)"
        )
    rule = PlateauRule()
    metric = value.get("metric", rule.metric)
    patience = value.get("patience", rule.patience)
    min_delta = value.get("min_delta", rule.min_delta)
    after = value.get("after", rule.after)
    mode = value.get("mode", rule.mode)
    if not isinstance(metric, str) or not metric:
        problems.append(
            f"plateau.metric: expected a validation key such as mean_reward, got {metric!r}"
        )
    if isinstance(patience, bool) or not isinstance(patience, int) or patience < 1:
        problems.append(f"plateau.patience: expected a whole number >= 1, got {patience!r}")
    if isinstance(min_delta, bool) or not isinstance(min_delta, (int, float)) or min_delta < 0:
        problems.append(f"plateau.min_delta: expected a number >= 0, got {min_delta!r}")
    if isinstance(after, bool) or not isinstance(after, (int, float)) or not 0 <= after <= 1:
        problems.append(
            f"plateau.after: expected a fraction of exp_max_time in [0, 1], got {after!r}"
        )
    if mode not in ("auto", "max", "min"):
        problems.append(f"plateau.mode: expected auto, max or min, got {mode!r}")
    if any(p.startswith("plateau") for p in problems):
        return None
    return PlateauRule(str(metric), int(patience), float(min_delta), float(after), str(mode))


def _number_or_none(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(value)
    return float(value)


def _allow_fixes(value: Any, problems: list[str]) -> dict[str, tuple[float | None, float | None]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append("allow_fixes: expected {key: {min: N, max: N}}")
        return {}
    out: dict[str, tuple[float | None, float | None]] = {}
    for key, given in value.items():
        if key not in SCIENCE_KEYS:
            problems.append(
                f"allow_fixes: {key!r} is not a key ajetd can fix "
                f"(known: {', '.join(SCIENCE_KEYS)})"
            )
            continue
        bounds = {} if given is None else given
        if not isinstance(bounds, dict) or set(map(str, bounds)) - {"min", "max"}:
            problems.append(f"allow_fixes.{key}: expected {{min: N, max: N}}")
            continue
        try:  # YAML reads `1e-7` (no dot) as a string: take numbers in either form
            low, high = (_number_or_none(bounds.get(side)) for side in ("min", "max"))
        except (TypeError, ValueError):
            problems.append(f"allow_fixes.{key}: min and max must be numbers")
            continue
        out[str(key)] = (low, high)
    return out


def _swarm(value: Any, problems: list[str]) -> SwarmSpec | None:
    if value is None or value is False:
        return None
    if value is True:
        return SwarmSpec()
    if isinstance(value, int) and not isinstance(value, bool):
        value = {"port": value}
    if not isinstance(value, dict):
        problems.append("swarm: expected {port, server_command, health_timeout, keep} or true")
        return None
    known = ("port", "server_command", "health_timeout", "keep")
    unknown = sorted(set(map(str, value)) - set(known))
    if unknown:
        problems.append(f"swarm: unknown key {unknown[0]!r} (known: {', '.join(known)})")
    port = value.get("port", SWARM_PORT)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        problems.append(f"swarm.port: expected a TCP port number 1-65535, got {port!r}")
        port = SWARM_PORT
    command = value.get("server_command", "")
    if command is None or not isinstance(command, str):
        problems.append("swarm.server_command: expected a shell command (a string)")
        command = ""
    timeout = _duration("swarm.health_timeout", value.get("health_timeout", "120s"), problems)
    keep = _duration("swarm.keep", value.get("keep", "10m"), problems, zero_ok=True)
    return SwarmSpec(port, command.strip(), timeout or 120.0, 600.0 if keep is None else keep)


_SSH_WORD = re.compile(r"^[A-Za-z0-9_.@:%+\[\]-]+$")


def _ssh(value: Any, problems: list[str]) -> SshSpec | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = {"host": value}
    if not isinstance(value, dict):
        problems.append("ssh: expected {host, user, port, identity_file, options}")
        return None
    known = ("host", "user", "port", "identity_file", "options")
    unknown = sorted(set(map(str, value)) - set(known))
    if unknown:
        problems.append(f"ssh: unknown key {unknown[0]!r} (known: {', '.join(known)})")
    host, user = str(value.get("host") or ""), str(value.get("user") or "")
    if not host or not _SSH_WORD.match(host) or host.startswith("-"):
        problems.append(f"ssh.host: expected a host name or address, got {value.get('host')!r}")
    if user and (not _SSH_WORD.match(user) or user.startswith("-")):
        problems.append(f"ssh.user: not a user name: {user!r}")
    port = value.get("port", 22)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        problems.append(f"ssh.port: expected a TCP port number 1-65535, got {port!r}")
        port = 22
    identity = str(value.get("identity_file") or "")
    extra = value.get("options") or {}
    if not isinstance(extra, dict) or not all(
        isinstance(k, str) and _SSH_WORD.match(k) and not isinstance(v, (dict, list))
        for k, v in extra.items()
    ):
        problems.append("ssh.options: expected {OptionName: value} (as `ssh -o` takes them)")
        extra = {}
    pairs = tuple((str(k), str(v)) for k, v in extra.items())
    return SshSpec(host, user, port, identity, pairs)


_SLURM_WORD = re.compile(r"^[A-Za-z0-9_.,:=@\[\]-]*$")


def _slurm(value: Any, problems: list[str]) -> SlurmSpec | None:
    if value is None or value is False:
        return None
    if value is True:
        value = {}
    if not isinstance(value, dict):
        problems.append("slurm: expected {partition, nodes, gpus_per_node, time, mode, ...}")
        return None
    known = set(SlurmSpec.__dataclass_fields__)
    unknown = sorted(set(map(str, value)) - known)
    if unknown:
        problems.append(f"slurm: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
    words = {}
    for key in ("partition", "mem", "time", "account", "qos", "constraint", "exclude"):
        text = str(value.get(key) or "")
        if not _SLURM_WORD.match(text):
            problems.append(f"slurm.{key}: {text!r} is not a Slurm value")
        words[key] = text
    counts: dict[str, int | None] = {}
    for key in ("nodes", "gpus_per_node", "cpus_per_task"):
        raw = value.get(key)
        if raw is not None and (isinstance(raw, bool) or not isinstance(raw, int) or raw < 0):
            problems.append(f"slurm.{key}: expected a whole number, got {raw!r}")
            raw = None
        counts[key] = raw
    extra = value.get("extra") or []
    if not isinstance(extra, list) or not all(isinstance(e, str) for e in extra):
        problems.append("slurm.extra: expected a list of options such as --exclusive")
        extra = []
    mode = str(value.get("mode") or "interactive")
    if mode not in ("interactive", "batch"):
        problems.append(f"slurm.mode: expected interactive or batch, got {mode!r}")
    return SlurmSpec(
        nodes=counts["nodes"] or 1,
        gpus_per_node=counts["gpus_per_node"],
        cpus_per_task=counts["cpus_per_task"],
        extra=tuple(extra),
        mode=mode,
        **words,
    )


def _paths(key: str, value: Any, problems: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        problems.append(f"{key}: expected a list of paths (relative to exp_codebase_dir)")
        return ()
    return tuple(v.strip() for v in value)


def _stages(value: Any, problems: list[str]) -> tuple[Stage, ...]:
    if value is None or value == []:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        problems.append("stages: expected a list of {name, command, requires, outputs}")
        return ()
    known = ("name", "command", "requires", "outputs")
    out: list[Stage] = []
    for i, raw in enumerate(value, 1):
        unknown = sorted(set(map(str, raw)) - set(known))
        if unknown:
            problems.append(f"stages[{i}]: unknown key {unknown[0]!r} (known: {', '.join(known)})")
        name = str(raw.get("name") or f"stage{i}")
        command = raw.get("command") or ""
        if not isinstance(command, str):
            problems.append(f"stages[{i}] ({name}): command must be a shell command (a string)")
            command = ""
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
    if len({s.name for s in out}) != len(out):
        problems.append("stages: two stages have the same name")
    return tuple(out)


def _hook(key: str, value: Any, problems: list[str]) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        problems.append(f"{key}: expected a shell command (a string), got {type(value).__name__}")
        return ""
    return value.strip()


def parse_options(text: str) -> Options:
    """Validate the `[ajetd]` part's YAML; raise BlueprintError listing every problem."""
    data = load_yaml_part(text)
    problems: list[str] = []
    for key in data:
        if key not in KNOWN_KEYS:
            problems.append(f"unknown key {key!r} (known: {', '.join(KNOWN_KEYS)})")
    max_trials = data.get("max_trials", 3)
    if isinstance(max_trials, bool) or not isinstance(max_trials, int) or max_trials < 1:
        problems.append(f"max_trials: expected a whole number >= 1, got {max_trials!r}")
        max_trials = 3
    autokill = str(data.get("autokill", "protect"))
    if autokill not in ("protect", "allow"):
        problems.append(f"autokill: expected protect or allow, got {autokill!r}")
    keep = _duration("keep_session", data.get("keep_session", "1h"), problems, zero_ok=True)
    hang_window, hang_action = _hang(data.get("hang", {}), problems)
    options = Options(
        gpus=_gpus(data.get("gpus", "all"), problems),
        env=_env(data.get("env", {}), problems),
        max_trials=max_trials,
        hang_window_s=hang_window,
        hang_action=hang_action,
        autokill=autokill,
        keep_session_s=3600.0 if keep is None else keep,
        plateau=_plateau(data.get("plateau"), problems),
        allow_fixes=_allow_fixes(data.get("allow_fixes"), problems),
        on_finish=_hook("on_finish", data.get("on_finish"), problems),
        on_attention=_hook("on_attention", data.get("on_attention"), problems),
        swarm=_swarm(data.get("swarm"), problems),
        ssh=_ssh(data.get("ssh"), problems),
        pull=_paths("pull", data.get("pull"), problems),
        stages=_stages(data.get("stages"), problems),
        slurm=_slurm(data.get("slurm"), problems),
        kinds=parse_kinds(data.get("kinds"), problems),
    )
    if options.slurm is not None and options.ssh is not None:
        problems.append("slurm and ssh: one or the other (ajetd submits to Slurm from here)")
    if options.pull and options.ssh is None:
        problems.append("pull: only for runs on a remote host (`ssh:`)")
    if problems:
        raise BlueprintError(problems)
    return options
