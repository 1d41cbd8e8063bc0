"""Where a trial runs, as the blueprint's `[ajetd]` part says it: an AgentJet swarm server
(`swarm`), a remote host over SSH (`ssh`), or a Slurm allocation (`slurm`). Pure.

The specs are what the hosts (`ajetd.hosts`) are given; each is validated here, once, key by
key, with the value parsers of `ajetd.core.values`, so a host never sees text as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ajetd.core import values
from ajetd.core.shown import show
from ajetd.core.values import OptionError, take, unknown_keys

MAX_GPUS = 1024  # the most GPUs a run (or one Slurm node) may name
# The keys inside each place's option (also what the option table test covers, key by key).
SWARM_KEYS = ("port", "server_command", "health_timeout", "keep")
SSH_KEYS = ("host", "user", "port", "identity_file", "options")
SLURM_KEYS = (
    "partition",
    "nodes",
    "gpus_per_node",
    "cpus_per_task",
    "mem",
    "time",
    "account",
    "qos",
    "constraint",
    "exclude",
    "extra",
    "mode",
)
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


REMOTE_BASE = ".ajetd-remote"  # an SSH host's runs' folders: $HOME/.ajetd-remote/<run id>
REMOTE_SCRIPT = "remote.sh"  # trial-N.remote.sh: an SSH trial's program script, kept as sent


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
    mem_mib: int | None = None  # `--mem`, in MiB (0: all of the node's memory)
    time_min: int | None = None  # `--time` in minutes; None: exp_max_time plus a margin
    time_unlimited: bool = False  # `time: UNLIMITED`
    account: str = ""
    qos: str = ""
    constraint: str = ""
    exclude: str = ""
    extra: tuple[str, ...] = ()  # more sbatch/srun options, as given
    mode: str = "interactive"  # interactive (srun --pty in the pane) or batch (sbatch)


def swarm(value: Any, problems: list[str]) -> SwarmSpec | None:
    if value is None or value is False:
        return None
    if value is True:
        return SwarmSpec()
    if isinstance(value, int) and not isinstance(value, bool):
        value = {"port": value}
    if not isinstance(value, dict):
        problems.append("swarm: expected {port, server_command, health_timeout, keep} or true")
        return None
    unknown_keys("swarm", value, SWARM_KEYS, problems)
    port = take(problems, SWARM_PORT, values.port, "swarm.port", value.get("port", SWARM_PORT))
    command = take(
        problems,
        "",
        values.text,
        "swarm.server_command",
        value.get("server_command") or "",
        what="a shell command",
    )
    timeout = take(
        problems,
        120.0,
        values.duration,
        "swarm.health_timeout",
        value.get("health_timeout", "120s"),
    )
    keep = take(
        problems,
        600.0,
        values.duration,
        "swarm.keep",
        value.get("keep", "10m"),
        zero_ok=True,
    )
    return SwarmSpec(port, command.strip(), timeout, keep)


_SSH_WORD = re.compile(r"[A-Za-z0-9_.@:%+\[\]-]+")


def ssh(value: Any, problems: list[str]) -> SshSpec | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = {"host": value}
    if not isinstance(value, dict):
        problems.append("ssh: expected {host, user, port, identity_file, options}")
        return None
    unknown_keys("ssh", value, SSH_KEYS, problems)
    host = take(problems, "", _ssh_word, "ssh.host", value.get("host"), "a host name")
    if not host and not any(p.startswith("ssh.host") for p in problems):
        problems.append("ssh.host: expected a host name or address, got nothing")
    user = take(problems, "", _ssh_word, "ssh.user", value.get("user"), "a user name")
    port = take(problems, 22, values.port, "ssh.port", value.get("port", 22))
    identity = ""
    if value.get("identity_file"):
        identity = take(problems, "", values.path, "ssh.identity_file", value["identity_file"])
    extra = value.get("options") or {}
    pairs: tuple[tuple[str, str], ...] = ()
    if not isinstance(extra, dict) or not all(
        isinstance(k, str)
        and len(k) <= 256
        and _SSH_WORD.fullmatch(k)
        and not isinstance(v, (dict, list))
        for k, v in extra.items()
    ):
        problems.append("ssh.options: expected {OptionName: value} (as `ssh -o` takes them)")
    else:
        pairs = tuple(
            (k, take(problems, "", values.text, f"ssh.options.{k}", v, allowed=""))
            for k, v in extra.items()
        )
    return SshSpec(host, user, port, identity, pairs)


def _ssh_word(key: str, value: Any, what: str) -> str:
    word = values.word(key, value, _SSH_WORD, what)
    if word.startswith("-"):
        raise OptionError(f"{key}: {show(word)} is not {what}")
    return word


_SLURM_WORD = re.compile(r"[A-Za-z0-9_.,:=@\[\]-]*")


def slurm(value: Any, problems: list[str]) -> SlurmSpec | None:
    if value is None or value is False:
        return None
    if value is True:
        value = {}
    if not isinstance(value, dict):
        problems.append("slurm: expected {partition, nodes, gpus_per_node, time, mode, ...}")
        return None
    unknown_keys("slurm", value, SLURM_KEYS, problems)
    words = {
        key: take(
            problems,
            "",
            values.word,
            f"slurm.{key}",
            value.get(key),
            _SLURM_WORD,
            "a Slurm value",
        )
        for key in ("partition", "account", "qos", "constraint", "exclude")
    }
    counts: dict[str, int | None] = {
        key: None
        if value.get(key) is None
        else take(problems, None, values.count, f"slurm.{key}", value[key], 1, high)
        for key, high in (
            ("nodes", 100000),
            ("gpus_per_node", MAX_GPUS),
            ("cpus_per_task", 1 << 20),
        )
    }
    mem = None
    if value.get("mem") not in (None, ""):
        mem = take(problems, None, values.size_mib, "slurm.mem", value["mem"])
    time_min, unlimited = None, False
    if value.get("time") not in (None, ""):
        try:
            time_min = values.slurm_minutes("slurm.time", value["time"])
            unlimited = time_min is None
        except OptionError as exc:
            problems.append(str(exc))
    extra = take(problems, (), values.string_list, "slurm.extra", value.get("extra"), _slurm_option)
    mode = value.get("mode") or "interactive"
    if mode not in ("interactive", "batch"):
        problems.append(f"slurm.mode: expected interactive or batch, got {show(mode)}")
        mode = "interactive"
    return SlurmSpec(
        nodes=counts["nodes"] or 1,
        gpus_per_node=counts["gpus_per_node"],
        cpus_per_task=counts["cpus_per_task"],
        mem_mib=mem,
        time_min=time_min,
        time_unlimited=unlimited,
        extra=extra,
        mode=str(mode),
        **words,
    )


def _slurm_option(key: str, value: Any) -> str:
    option = values.text(key, value, what="an option such as --exclusive", allowed="")
    if not option.startswith("-"):
        raise OptionError(f"{key}: expected an option such as --exclusive, got {show(value)}")
    return option
