"""The one place that knows each framework's name and keys, and words ajetd's advice for a
run of it; pure.

A run is AgentJet's or NeMo-RL's (`Run.kind`: "agentjet", "nemo_rl"). What ajetd says about
it follows: the fixes `allow_fixes` can name for each failure kind are the keys its configs
hold (NeMo-RL's `policy.train_micro_batch_size`, not verl's `ppo_micro_batch_size_per_gpu`),
and a diagnosis's advice names its framework's documented fix. The catalogue's text is
AgentJet's (`ajetd diagnose` of a log knows no run); `framed` gives a NeMo-RL run's findings
NeMo-RL's words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ajetd.core.finding import Finding
from ajetd.core.model import Run
from ajetd.core.options import SCIENCE_STEPS
from ajetd.core.stoprules import PlateauRule
from ajetd.frameworks import nemorl


@dataclass(frozen=True)
class Framework:
    name: str  # as a person writes it
    science_keys: frozenset[str]  # the `allow_fixes` keys its configs hold
    nccl_source: str  # who documents NCCL_NVLS_ENABLE=0 for its NCCL errors

    def science_steps(self, kind: str) -> tuple[str, ...]:
        """The keys a science fix for failure `kind` lowers in its runs, in order."""
        return tuple(k for k in SCIENCE_STEPS.get(kind, ()) if k in self.science_keys)


AGENTJET = Framework(
    "AgentJet",
    frozenset(
        {
            "ppo_max_token_len_per_gpu",  # verl's, under use_dynamic_bsz
            "log_prob_max_token_len_per_gpu",
            "ppo_micro_batch_size_per_gpu",  # verl's, without it
            "log_prob_micro_batch_size_per_gpu",
            "micro_batch_size_per_gpu",
            "gpu_memory_utilization",  # vLLM's
            "max_response_length",
            "lr",
        }
    ),
    "AgentJet's documented fix",
)
NEMO_RL = Framework(
    "NeMo-RL",
    # policy.{dynamic_batching,sequence_packing}.{train,logprob}_mb_tokens (its token budgets),
    # policy.train_micro_batch_size, policy.logprob_batch_size, policy.generation.
    # vllm_cfg.gpu_memory_utilization, policy.optimizer.kwargs.lr
    frozenset(
        {
            "train_mb_tokens",
            "logprob_mb_tokens",
            "train_micro_batch_size",
            "logprob_batch_size",
            "gpu_memory_utilization",
            "lr",
        }
    ),
    # nemo_rl/models/generation/vllm/vllm_generation.py sets it "to avoid the NCCL error"
    "the workaround NeMo-RL applies itself for vLLM across nodes",
)


def of(run_kind: str) -> Framework:
    """The framework of a run of this kind (`Run.kind`)."""
    return NEMO_RL if run_kind == "nemo_rl" else AGENTJET


def run_metric(rule: PlateauRule | None, config: Mapping[str, Any] | None, command: str) -> str:
    """The metric a run is judged by (status, results.md, and a plateau rule that names none):
    a NeMo-RL run's own (`checkpointing.metric_name`, `nemorl.primary_metric`); an AgentJet
    run's, the plateau rule's where the blueprint has one, else mean_reward."""
    if nemorl.is_nemo_launch(command):
        return nemorl.primary_metric(config, command)[0]
    return rule.metric if rule is not None else Run.metric


@dataclass(frozen=True)
class Unwritten:
    """A metric a run of this framework is not known to write (`unwritten_metric`)."""

    framework: str  # "NeMo-RL", "AgentJet"
    known: tuple[str, ...]  # the names it is known to write, the run's own first
    hint: str  # "; did you mean 'accuracy'", "; its records name NeMo-RL's val:accuracy ..."
    own: str = ""  # the run's own metric (NeMo-RL's `checkpointing.metric_name`), "" if none

    def said(self, metric: str, also: str = "") -> str:
        """`'x' is not a validation key NeMo-RL is known to write; did you mean ...{also}
        (known: ...)`: the words lint's plateau warning and a campaign's refusal share."""
        return (
            f"{metric!r} is not a validation key {self.framework} is known to write{self.hint}"
            f"{also} (known: {', '.join(self.known)})"
        )


def unwritten_metric(
    metric: str, config: Mapping[str, Any] | None, command: str
) -> Unwritten | None:
    """Whether a run of `command` (its config `config`) is known to write `metric`: None where
    it is (or may be), else what it writes. NeMo-RL's records name its `val:` metrics without
    `val:` (`nemorl.metric_key`), its run's own first (`nemorl.known_metrics`); AgentJet's val
    file its keys (`valresults.agentjet_writes`). One check for a plateau rule's metric (lint,
    admission) and a campaign's (`campaign`, lint of its folder)."""
    from ajetd.core.values import did_you_mean
    from ajetd.frameworks import valresults

    if nemorl.is_nemo_launch(command):
        known = nemorl.known_metrics(config, command)
        if metric in known:
            return None
        if metric.startswith("val:"):
            name = nemorl.metric_key(metric[4:])
            hint = f"; its records name NeMo-RL's {metric} {name!r}: write that"
        else:
            hint = did_you_mean(metric, list(known), n=3)
        return Unwritten("NeMo-RL", known, hint, known[0])
    if valresults.agentjet_writes(metric):
        return None
    known = tuple(valresults.TABLE_KEYS)
    return Unwritten("AgentJet", known, did_you_mean(metric, list(known), n=3))


# NeMo-RL's README, Tips and Tricks: a worker venv built before the submodules were checked
# out lacks them (`No module named 'megatron'`); these packages live only in worker venvs.
_SUBMODULE_PACKAGES = ("megatron", "nemo_automodel", "nemo_gym")
_MISSING = re.compile(r"No module named '([\w.]{1,200})'")
_IN_WORKER = re.compile(r"creation task|^(?:[\w.]+\.)?RaySystemError\b")
WORKER_VENV_EXPLANATION = (
    "A NeMo-RL Ray worker could not import a module: NeMo-RL runs each worker class in its "
    "own venv (venvs/<worker class> in the NeMo-RL checkout, or NEMO_RL_VENV_DIR), built at "
    "its first launch and reused; one built before the git submodules (3rdparty: Megatron-"
    "Bridge, Automodel, Gym) were checked out, or before the checkout changed, lacks them."
)
WORKER_VENV_FIX = (
    "As NeMo-RL's README (Tips and Tricks) says: run `git submodule update --init "
    "--recursive` in the NeMo-RL checkout, then relaunch with NRL_FORCE_REBUILD_VENVS=true "
    "(`[ajetd] env: {NRL_FORCE_REBUILD_VENVS: 'true'}`), which rebuilds the worker venvs; "
    "take it out afterwards (while set, every launch rebuilds them)."
)


def _in_worker(found: Finding, findings: Sequence[Finding]) -> bool:
    """Whether an import error was a Ray worker's: an actor died of it in its creation task,
    Ray's own machinery raised it in a worker, or the module is one only workers' venvs
    hold."""
    missing = _MISSING.search(found.evidence)
    if missing and missing.group(1).split(".")[0] in _SUBMODULE_PACKAGES:
        return True
    return any(
        f.kind in ("import_error", "ray_worker_died") and _IN_WORKER.search(f.evidence)
        for f in findings
    )


def framed(findings: Sequence[Finding], run_kind: str) -> tuple[Finding, ...]:
    """`findings` as advice for a run of this kind: a NeMo-RL run's NCCL error names who
    documents the fix for it, and a Ray worker's import error says how NeMo-RL's worker venvs
    are rebuilt; an AgentJet run's as the catalogue says."""
    framework = of(run_kind)
    if framework is AGENTJET:
        return tuple(findings)
    out = []
    for found in findings:
        said = found
        if found.kind == "nccl_error":
            fix = found.fix.replace(AGENTJET.nccl_source, framework.nccl_source)
            said = replace(found, fix=fix)
        elif found.kind == "import_error" and not found.remedy and _in_worker(found, findings):
            said = replace(found, explanation=WORKER_VENV_EXPLANATION, fix=WORKER_VENV_FIX)
        out.append(said)
    return tuple(out)
