"""How many GPUs a run's config asks for, whatever its framework, and the one check of that
count against what `[ajetd] gpus` gives the run; pure.

Each framework says it in its own keys: AgentJet's `ajet.trainer_common.n_gpus_per_node ×
nnodes`, NeMo-RL's `cluster.gpus_per_node × cluster.num_nodes` (the command's Hydra-style
overrides counted, `cluster.gpus_per_node=8`). A config that asks for GPUs the run is not
given waits for them (NeMo-RL's placement groups, Ray's resources) or fails; asking for none
while the run is given some leaves them idle. Both are the same mistake for every framework
(walk97 F1: a NeMo-RL config asking for 1 GPU under `gpus: 0` was admitted and ran with no
GPU visible, while AgentJet's was refused), so one function judges it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ajetd.core.shown import show
from ajetd.frameworks import nemorl

MAX_YAML_GPUS = 1 << 20  # no run is given more; a stored integer is at most 2**63

AGENTJET_KEYS = "n_gpus_per_node × nnodes"
NEMO_KEYS = "cluster.gpus_per_node × cluster.num_nodes"


def keys_of(run_kind: str) -> str:
    """The keys a run of this kind (`Run.kind`) says its GPU count in, for placement's words."""
    return (NEMO_KEYS if run_kind == "nemo_rl" else AGENTJET_KEYS).replace("×", "x")


def keys_for(command: str) -> str:
    """`keys_of` the framework a launch command runs."""
    return keys_of("nemo_rl" if nemorl.is_nemo_launch(command) else "agentjet")


@dataclass(frozen=True)
class GpuAsk:
    """A config's GPU count: how it says it (`said`, the keys and, where useful, the factors)
    and the count; `why` says what the framework does when the count is not given."""

    keys: str  # the keys it is read from, as a person finds them in the config
    said: str  # e.g. "n_gpus_per_node × nnodes" or "... = 8 × 2"
    count: int
    note: str = ""  # said after the count, e.g. " (the command's overrides counted)"
    why: str = ""  # what happens where the run gets fewer ("": nothing added)


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def agentjet_ask(config: Any) -> GpuAsk | None:
    """`n_gpus_per_node × nnodes` of an AgentJet config (`nnodes` 1 where unset), where it
    says."""
    ajet = config.get("ajet") if isinstance(config, Mapping) else None
    trainer = ajet.get("trainer_common") if isinstance(ajet, Mapping) else None
    if not isinstance(trainer, Mapping):
        return None
    per_node = _number(trainer.get("n_gpus_per_node"))
    nodes = trainer.get("nnodes")
    nodes = 1 if nodes is None else _number(nodes)
    if per_node is None or nodes is None:
        return None
    return GpuAsk(AGENTJET_KEYS, AGENTJET_KEYS, per_node * nodes)


def nemo_ask(config: Any, command: str) -> GpuAsk | None:
    """`cluster.gpus_per_node × cluster.num_nodes` of a NeMo-RL config as the run reads it:
    the command's overrides (`cluster.gpus_per_node=8`, `++cluster.num_nodes=2`) over the
    config's values, `num_nodes` 1 where unset; None where the per-node count is not a
    number (unset, `null`, an interpolation)."""
    if not isinstance(config, Mapping):
        config = {}
    per_node = _number(nemorl.setting(config, command, "cluster.gpus_per_node"))
    nodes = nemorl.setting(config, command, "cluster.num_nodes")
    nodes = 1 if nodes is None else _number(nodes)
    if per_node is None or nodes is None:
        return None
    return GpuAsk(
        NEMO_KEYS,
        f"{NEMO_KEYS} = {per_node} × {nodes}",
        per_node * nodes,
        " (the command's overrides counted)",
        "NeMo-RL's placement groups would wait for GPUs it does not have, then fail",
    )


def gpu_ask(config: Any, command: str) -> GpuAsk | None:
    """The GPU count the run's config asks for, read in its framework's keys: NeMo-RL's for
    a NeMo-RL launch, else AgentJet's; None where the config does not say."""
    if nemorl.is_nemo_launch(command):
        return nemo_ask(config, command)
    return agentjet_ask(config)


def gpu_count(config: Any, command: str) -> int | None:
    """`gpu_ask`'s count, kept in a run's record for placement (a `gpus: all` run is judged
    when it learns how many it gets); None where unknown or beyond any run's."""
    ask = gpu_ask(config, command)
    return ask.count if ask is not None and 0 <= ask.count <= MAX_YAML_GPUS else None


def given_count(gpus: str) -> int | None:
    """How many GPUs `[ajetd] gpus` gives the run: a count, a list's length; None for `all`
    (known only when the run is placed)."""
    if gpus == "all":
        return None
    if gpus.startswith("["):
        return len([i for i in gpus.strip("[]").split(",") if i.strip()])
    return int(gpus)


def gpu_problem(ask: GpuAsk | None, gpus: str) -> str | None:
    """Why the config's GPU count and `[ajetd] gpus` (its text) cannot both hold, or None:
    the same for every framework, `gpus: 0` (CPU only) included."""
    if ask is None:
        return None
    if not 0 <= ask.count <= MAX_YAML_GPUS:
        return (
            f"exp_yaml_path: {ask.said} = {show(ask.count)} GPUs: "
            f"a count from 0 to {MAX_YAML_GPUS} is wanted"
        )
    given = given_count(gpus)
    if given is None or given == ask.count:
        return None  # `all`: checked when the run is placed on the GPUs it gets
    none = " (CPU only: no GPU visible to it)" if given == 0 else ""
    why = f": {ask.why}" if ask.why and ask.count > given else ""
    return (
        f"exp_yaml_path: {ask.said} = {ask.count} GPUs{ask.note}, but [ajetd] gpus gives the run "
        f"{given}{none}{why}; make them agree (set `[ajetd] gpus: {ask.count}`, or the "
        f"config's {ask.keys} to what the run gets)"
    )
