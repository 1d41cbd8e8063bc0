"""What to do after a trial failed: relaunch with a fix, or give up and say why; pure.

A bounded, recorded remedy per failure kind. Environment fixes apply by themselves, each at
most once per run (`network` → run under proxychains4, or proxychains, when installed;
`nccl_error` → NCCL_NVLS_ENABLE=0, AgentJet's documented fix). Kinds that are often transient
(a timed-out collective, a dead Ray actor or vLLM engine, a refused connection, a stale Ray, a
port still held) get one plain relaunch after this run's leftover processes were ended. Fatal
kinds end the run at once: no blind retries. Every path is bounded by the retry budget
(`max_trials`) and a thrashing guard (THRASH_FAILURES failures within THRASH_WINDOW_S).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ajetd.core import advice, fixdomain
from ajetd.core.finding import Finding
from ajetd.core.model import Run
from ajetd.core.options import SCIENCE_STEPS
from ajetd.core.vllmfit import Shortfall, shortfall
from ajetd.frameworks import framework as frameworks
from ajetd.frameworks.agentjet import find_paths, get_path, local_logger_patch
from ajetd.frameworks.framework import AGENTJET, Framework

THRASH_FAILURES = 4
THRASH_WINDOW_S = 600.0
PLAIN_RETRY = (
    "nccl_timeout",
    "ray_worker_died",
    "vllm_engine_dead",
    "connection_refused",
    "ray_cluster",
    "port_in_use",
    "swarm_server_died",
    "node_failure",
    "preempted",
)


@dataclass(frozen=True)
class Relaunch:
    """Launch the next trial with this fix on top of the earlier ones."""

    fix: str  # a short name, recorded on the run: proxychains, nccl_nvls_off, retry_<kind>
    why: str
    env: tuple[tuple[str, str], ...] = ()
    prefix: tuple[str, ...] = ()  # argv words put before the command
    config_patches: tuple[tuple[tuple[str, ...], Any], ...] = ()  # into a new config copy
    # each patched path's value in the config the failed trial ran with, in the patches'
    # order (what the fix changed, kept as data: `fixrecord.AppliedFix.config`)
    config_before: tuple[Any, ...] = ()

    def config_changes(self) -> tuple[tuple[str, Any, Any], ...]:
        """(dotted key, old, new) per patched path; old None where not known."""
        before = (*self.config_before, *[None] * len(self.config_patches))
        return tuple(
            (".".join(path), old, new)
            for (path, new), old in zip(self.config_patches, before, strict=False)
        )


@dataclass(frozen=True)
class GiveUp:
    reason: str


_PORT = (
    re.compile(r"\(\s*'[^']*'\s*,\s*(\d{2,5})\s*\)"),  # uvicorn: ('0.0.0.0', 10086)
    re.compile(r"\bport\b\s*[=:]?\s*(\d{2,5})", re.IGNORECASE),
    re.compile(r":(\d{2,5})\b"),
)


def port_from_text(text: str) -> int | None:
    """The port a bind error names, if it names one."""
    for pattern in _PORT:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return None


def _failures_since(run: Run, since: float) -> int:
    return sum(
        1
        for t in run.trials
        if t.exit_code not in (0, None) and t.ended_at is not None and t.ended_at >= since
    )


def _lowered(key: str, value: float, low: float | None) -> float | None:
    """The next, smaller value for `key` within its lower bound and its domain (never a
    micro batch size of 0); None when none is left."""
    if key == "gpu_memory_utilization":
        new: float = round(value - 0.05, 2)
    elif key == "max_response_length":
        new = int(value * 0.75)
    elif key == "lr":
        new = value / 2
    else:
        new = int(value) // 2
    if low is not None and new < low:
        new = low if key in fixdomain.REAL_KEYS else math.ceil(low)  # an integer stays one
    if key not in fixdomain.REAL_KEYS and new < 1:
        new = 1  # the smallest count
    return new if new < value and fixdomain.valid(key, new) else None


RAISE_CAP = {"gpu_memory_utilization": 0.95}  # where allow_fixes sets no max: vLLM's own limit
# is 1.0, and the CUDA context and the sampler need room beside the budget


def _raised(key: str, value: float, high: float | None) -> float | None:
    """The next, larger value for `key` (a memory budget the failure said was too small)
    within its upper bound; None when none is left or the key has no sensible step up."""
    cap = high if high is not None else RAISE_CAP.get(key)
    if key != "gpu_memory_utilization" or cap is None:
        return None
    new = min(round(value + 0.05, 2), cap)
    return new if new > value and fixdomain.valid(key, new) else None


def shown_bound(key: str, bound: float | None) -> str:
    """A bound as the key's values are written: `min 1`, `min 2000` for an integer key (YAML
    gives `1.0` where `1e3` or `1.` was written), `min 0.5`, `min 1e-07` otherwise."""
    if bound is None:
        return "none"
    if key not in fixdomain.REAL_KEYS and float(bound).is_integer():
        return str(int(bound))
    return f"{bound:g}"


def _fitted(
    kind: str, short: Shortfall, numeric: list[tuple[tuple[str, ...], Any]], low: float | None
) -> Relaunch | str | None:
    """vLLM's refusal to start read by its figures: straight to the utilisation that fits
    within the allowed bound, or why none can (not relaunched with a value that cannot work);
    None where the figures do not bear on the config's values (already at or under the fit)."""
    fit = short.fitting()
    floor = low if low is not None else 0.01
    if fit < floor:
        at_most = f"at most {fit:g} would fit" if fit > 0 else "no utilisation would fit"
        bound = f"the allowed min {low:g}" if low is not None else "any usable value"
        return (
            f"{kind}: {short.said()}; {at_most}, below {bound}, so it is not relaunched with a "
            "value that cannot work: free that memory (nvidia-smi names who holds it) and "
            f"rerun, or lower gpu_memory_utilization to {fit:g} or less if the model fits in it"
        )
    patches = [(p, fit) for p, v in numeric if fit < float(v)]
    if not patches or not fixdomain.valid("gpu_memory_utilization", fit):
        return None
    bound = shown_bound("gpu_memory_utilization", low)
    old = dict(numeric)
    return Relaunch(
        "science_gpu_memory_utilization",
        f"{kind}: gpu_memory_utilization {numeric[0][1]} → {fit:g}, what the free memory "
        f"fits ({short.said()}; allowed by [ajetd] allow_fixes, min {bound})",
        config_patches=tuple(patches),
        config_before=tuple(old[p] for p, _ in patches),
    )


# An AgentJet config read as its launcher composes it (`read_composed`) holds its backend's
# defaults too (verl_default.yaml: actor_rollout_ref..., reward.reward_model.rollout.
# gpu_memory_utilization), marked DO NOT EDIT there: its users set `ajet:`'s keys
# (ajet_default.yaml), from which AgentJet configures the backend. Where `ajet:` sets the
# key, the fix lowers that one alone (not a reward model's engine); else every one found.


# verl's two ways of sizing a training micro batch (AgentJet's verl_default.yaml: actor
# `use_dynamic_bsz: true`, ref/rollout `log_prob_use_dynamic_bsz: true`): with dynamic batch
# sizes it packs sequences up to a token budget per GPU and ignores the micro batch sizes;
# without, the micro batch sizes hold and the token budgets are ignored. A cuda_oom fix
# lowers only the keys that size memory in the config at hand.
_TOKEN_BUDGETS = ("ppo_max_token_len_per_gpu", "log_prob_max_token_len_per_gpu")
_MICRO_BATCHES = (
    "ppo_micro_batch_size_per_gpu",
    "log_prob_micro_batch_size_per_gpu",
    "micro_batch_size_per_gpu",
)


def _dynamic_bsz(config: Mapping[str, Any]) -> bool | None:
    """Whether the config sizes verl's micro batches by token budget (any `use_dynamic_bsz`
    or `log_prob_use_dynamic_bsz` true); None where it says neither (not a verl config)."""
    flags = [
        get_path(config, p)
        for key in ("use_dynamic_bsz", "log_prob_use_dynamic_bsz")
        for p in find_paths(config, key)
    ]
    if not any(isinstance(v, bool) for v in flags):
        return None
    return any(v is True for v in flags)


# NeMo-RL's two ways of sizing a micro batch by tokens (`policy.dynamic_batching`,
# `policy.sequence_packing`, each `enabled`, with `train_mb_tokens` and `logprob_mb_tokens`):
# where one is on, its micro batches are packed up to those budgets and the micro batch sizes
# count only through them (its configs default each budget to `${mul:${policy.
# max_total_sequence_length}, ${policy.train_micro_batch_size}}`: lowering the size lowers the
# budget; a budget written as a number does not follow it); where both are off, the budgets
# are ignored. The AgentJet side's token budgets (verl's) are allowable; these are NeMo-RL's.
_NEMO_BATCHING = ("dynamic_batching", "sequence_packing")
_NEMO_BUDGETS = {
    "train_mb_tokens": "train_micro_batch_size",
    "logprob_mb_tokens": "logprob_batch_size",
}


def _nemo_batching(config: Mapping[str, Any]) -> list[str] | None:
    """The NeMo-RL token batching modes on in the config (`dynamic_batching`,
    `sequence_packing`); None where it has neither section (not a NeMo-RL config)."""
    policy = config.get("policy")
    if not isinstance(policy, Mapping):
        return None
    sections = [(m, policy[m]) for m in _NEMO_BATCHING if isinstance(policy.get(m), Mapping)]
    if not sections:
        return None
    return [m for m, section in sections if section.get("enabled") is True]


def _nemo_budget_paths(
    config: Mapping[str, Any], numeric: list[tuple[tuple[str, ...], Any]]
) -> list[tuple[tuple[str, ...], Any]]:
    """A NeMo-RL token budget's paths in the modes that are on (a budget of a mode that is off
    sizes nothing: lowering it would change the experiment's record, not its memory)."""
    on = {("policy", m) for m in _nemo_batching(config) or ()}
    return [(p, v) for p, v in numeric if p[:2] in on]


def _nemo_acting(allowed: list[str], config: Mapping[str, Any]) -> tuple[list[str], str]:
    """`_acting` for NeMo-RL's keys: with token batching on, a micro batch size whose budget
    there is written as a number is ignored (one written as NeMo-RL's default follows it);
    with it off, the budgets are."""
    on = _nemo_batching(config)
    if on is None:
        return allowed, ""
    if on:
        ignored = []
        for budget, size in _NEMO_BUDGETS.items():
            found = [(p, get_path(config, p)) for p in find_paths(config, budget)]
            paths = _nemo_budget_paths(config, found)
            if any(isinstance(v, int | float) and not isinstance(v, bool) for _, v in paths):
                ignored.append(size)
        instead = [b for b, size in _NEMO_BUDGETS.items() if size in ignored]
        what = f"{' and '.join(on)} {'is' if len(on) == 1 else 'are'} on"
        why = "its micro batches are packed up to the token budgets"
    else:
        ignored, instead = list(_NEMO_BUDGETS), list(_NEMO_BUDGETS.values())
        what, why = "dynamic_batching and sequence_packing are off", "nothing uses the budgets"
    left = [k for k in allowed if k in ignored]
    if not left:
        return allowed, ""
    note = (
        f"; {what}, so NeMo-RL ignores {', '.join(left)} ({why}): allow "
        f"{' or '.join(instead)} for a fix that sizes its batches"
    )
    return [k for k in allowed if k not in ignored], note


def _acting(kind: str, allowed: list[str], config: Mapping[str, Any]) -> tuple[list[str], str]:
    """The allowed keys that size memory in this config, and a note naming those left out
    (keys verl, or NeMo-RL, ignores in its batch mode), for the fix's reason."""
    if kind == "cuda_oom" and any(
        k in _NEMO_BUDGETS or k in _NEMO_BUDGETS.values() for k in allowed
    ):
        return _nemo_acting(allowed, config)
    dynamic = _dynamic_bsz(config) if kind == "cuda_oom" else None
    if dynamic is None:
        return allowed, ""
    ignored = _MICRO_BATCHES if dynamic else _TOKEN_BUDGETS
    left = [k for k in allowed if k in ignored]
    if not left:
        return allowed, ""
    mode = "on" if dynamic else "off"
    instead = _TOKEN_BUDGETS if dynamic else _MICRO_BATCHES[:2]
    note = (
        f"; use_dynamic_bsz is {mode}, so verl ignores {', '.join(left)}: allow "
        f"{' or '.join(instead)} for a fix that sizes its batches"
    )
    return [k for k in allowed if k not in ignored], note


def _ajet_token_budget(config: Mapping[str, Any]) -> list[tuple[tuple[str, ...], Any]]:
    """AgentJet's own actor token budget: `ajet.rollout.ppo_max_token_len_per_gpu`, which its
    launcher copies over verl's key (ajet/utils/config_utils.align_parameters); left null
    it follows `ajet.rollout.max_model_len`, so that is its value and the fix sets the key."""
    path = ("ajet", "rollout", "ppo_max_token_len_per_gpu")
    if path not in find_paths(config, "ppo_max_token_len_per_gpu") or get_path(config, path):
        return []
    follows = get_path(config, ("ajet", "rollout", "max_model_len"))
    if isinstance(follows, int) and not isinstance(follows, bool):
        return [(path, follows)]
    return []


def held(config: Mapping[str, Any], key: str) -> list[tuple[tuple[str, ...], Any]]:
    """The paths a science fix of `key` would change in `config`, with their numeric values
    (also what lint compares the key's allowed min with)."""
    paths = find_paths(config, key)
    values = [get_path(config, p) for p in paths]
    numeric = [
        (p, v)
        for p, v in zip(paths, values, strict=True)
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    ]
    if key == "ppo_max_token_len_per_gpu":
        numeric = _ajet_token_budget(config) or numeric
    if key in _NEMO_BUDGETS:
        numeric = _nemo_budget_paths(config, numeric)
    own = [(p, v) for p, v in numeric if p[0] == "ajet"]
    return own or numeric  # AgentJet's section where it sets the key (see the note above)


def _science(
    kind: str,
    config: Mapping[str, Any] | None,
    allow: Mapping[str, tuple[float | None, float | None]],
    evidence: str = "",
    framework: Framework = AGENTJET,
) -> Relaunch | str:
    """A science fix the blueprint allows for `kind`, or why there is none (`evidence`: the
    finding's line, whose figures, where it has them, size the fix), among the keys of the
    run's `framework`."""
    steps = framework.science_steps(kind)
    allowed = [k for k in steps if k in allow]
    if not allowed:
        return (
            f"{kind}: no science fix allowed; to let ajetd try one, add [ajetd] allow_fixes "
            f"for one of {framework.name}'s: {', '.join(steps)}"
        )
    if config is None:
        return f"{kind}: the run's config cannot be read, so no science fix can be applied"
    allowed, note = _acting(kind, allowed, config)
    at_top: list[str] = []  # keys the failure asks to raise that are at their max
    for key in allowed:
        numeric = held(config, key)
        if not numeric:
            continue
        low = allow[key][0]
        short = shortfall(evidence) if key == "gpu_memory_utilization" else None
        fitted = _fitted(kind, short, numeric, low) if short is not None else None
        if fitted is not None:
            return fitted
        if advice.said(evidence, key) == "raise":  # the message says the value is too small
            high = allow[key][1]
            raised = [
                (p, new) for p, v in numeric if (new := _raised(key, float(v), high)) is not None
            ]
            if raised:
                return _patched(kind, key, dict(numeric), raised, f"max {_cap(key, high)}")
            at_top.append(key)
            continue
        patches = [
            (p, new) for p, v in numeric if (new := _lowered(key, float(v), low)) is not None
        ]
        if patches:
            bound = f"min {shown_bound(key, low)}{note}"
            return _patched(kind, key, dict(numeric), patches, bound)
    if at_top:
        return (
            f"{kind}: the failure asks for more {', '.join(at_top)}, which is at its allowed "
            "max (or unset); raise the max in [ajetd] allow_fixes, or lower max_model_len "
            "(the longest sequence vLLM must hold in its KV cache)"
        )
    if not allowed:
        return f"{kind}: no allowed key sizes this config's memory{note}"
    return f"{kind}: the allowed keys ({', '.join(allowed)}) are unset or at their bounds{note}"


def _cap(key: str, high: float | None) -> str:
    """The upper bound a raise stops at, as said in the fix: allow_fixes' max, else ajetd's."""
    if high is not None:
        return shown_bound(key, high)
    return f"{RAISE_CAP.get(key, 0):g}, ajetd's cap where allow_fixes sets none"


def _patched(
    kind: str,
    key: str,
    old: Mapping[tuple[str, ...], Any],
    patches: list[tuple[tuple[str, ...], Any]],
    bound: str,
) -> Relaunch:
    """The relaunch that sets `key` at every path found (each changed path named where
    there are several, since each is a change to the experiment)."""
    change = f"{key} {old[patches[0][0]]} → {patches[0][1]}"
    if len(patches) > 1:
        change = f"{key} at {len(patches)} paths: " + ", ".join(
            f"{'.'.join(p)} {old[p]} → {v}" for p, v in patches
        )
    return Relaunch(
        f"science_{key}",
        f"{kind}: {change} (allowed by [ajetd] allow_fixes, {bound})",
        config_patches=tuple(patches),
        config_before=tuple(old[p] for p, _ in patches),
    )


def _user_remedy(
    kind: str, remedy: str, fix: str, applied: set[str], proxychains: str | None
) -> Relaunch | GiveUp:
    """A user kind's remedy (userkinds.UserKind.remedy), each at most once per run."""
    name = {"relaunch": f"retry_{kind}", "proxychains": "proxychains"}.get(remedy, f"env_{kind}")
    if name in applied:
        return GiveUp(f"{kind} again after its remedy ({remedy}): {fix}")
    if remedy == "relaunch":
        return Relaunch(name, f"{kind}: relaunched once, as its user-defined kind says")
    if remedy == "proxychains":
        if proxychains is None:
            return GiveUp(f"{kind}: its remedy is proxychains, which is not installed: {fix}")
        prefix = proxy_prefix(proxychains)
        return Relaunch(name, f"{kind}: relaunched under {_shown(prefix)}", prefix=prefix)
    variable, _, value = remedy.removeprefix("env:").partition("=")
    return Relaunch(name, f"{kind}: relaunched with {variable}={value}", env=((variable, value),))


def _spent(run: Run, max_trials: int, now: float) -> GiveUp | None:
    """Why a fix the failure has is not tried: a spent retry budget, or thrashing. Asked only
    once there is a fix to try: a failure no relaunch would answer (a fatal kind, a science
    kind with no fix allowed, a kind with no automatic fix) ends for that, whatever the budget
    (walk91 F4: `max_trials: 1` and a cuda_oom with no allow_fixes said "retry budget spent",
    so raising max_trials looked like the way out)."""
    if len(run.trials) >= max_trials:
        return GiveUp(f"retry budget spent: {len(run.trials)} of max_trials {max_trials} launches")
    if _failures_since(run, now - THRASH_WINDOW_S) >= THRASH_FAILURES:
        return GiveUp(
            f"thrashing guard: {THRASH_FAILURES} failures within {THRASH_WINDOW_S / 60:.0f} minutes"
        )
    return None


PROXYCHAINS = ("proxychains4", "proxychains")  # looked up in this order (`shutil.which`)


def proxy_prefix(proxychains: str) -> tuple[str, ...]:
    """The words before the command: proxychains-ng's `proxychains4` quietened with `-q`;
    version 3's `proxychains` (the name seed 001 writes) as it is, since its script would
    run `-q` as the program."""
    quiet = ("-q",) if proxychains.rsplit("/", 1)[-1] == "proxychains4" else ()
    return (proxychains, *quiet)


def _shown(prefix: tuple[str, ...]) -> str:
    return " ".join([prefix[0].rsplit("/", 1)[-1], *prefix[1:]])


def _network(applied: set[str], proxychains: str | None) -> Relaunch | GiveUp:
    """A network error: once under proxychains (proxychains4 or version 3's proxychains),
    when it is installed."""
    if "proxychains" in applied:
        return GiveUp("network error again under proxychains: check the proxy configuration")
    if proxychains is None:
        return GiveUp(
            "network error; proxychains (proxychains4, or version 3's proxychains) is not "
            "installed, so it cannot be retried through a proxy (install and configure it, or "
            "fix DNS/proxy)"
        )
    prefix = proxy_prefix(proxychains)
    return Relaunch(
        "proxychains", f"network error: relaunched under {_shown(prefix)}", prefix=prefix
    )


def _nccl(applied: set[str], framework: Framework) -> Relaunch | GiveUp:
    """An NCCL error: once with NVLS off (AgentJet's documented fix, NeMo-RL's own
    workaround)."""
    if "nccl_nvls_off" in applied:  # the fix's text begins with the fix just tried
        return GiveUp(
            "NCCL failed again with NCCL_NVLS_ENABLE=0, the known fix: not relaunched; rerun "
            "with NCCL_DEBUG=INFO (in `[ajetd] env:`) to see the transport that fails, and "
            "check the driver, the topology (nvidia-smi topo -m) and NCCL_P2P/IB settings"
        )
    return Relaunch(
        "nccl_nvls_off",
        f"NCCL error: relaunched with NCCL_NVLS_ENABLE=0 ({framework.nccl_source})",
        env=(("NCCL_NVLS_ENABLE", "0"),),
    )


def _logger(applied: set[str], fix: str, config: Mapping[str, Any] | None) -> Relaunch | GiveUp:
    """A logger error: once with a local logger in a copy of the config."""
    patch = local_logger_patch(config) if config is not None else None
    if patch is None or "local_logger" in applied:
        return GiveUp(f"logger_error: {fix}")
    return Relaunch(
        "local_logger",
        "logger_error: relaunched with a local logger (tensorboard) in a copy of the config",
        config_patches=tuple(patch.items()),
        config_before=tuple(get_path(config, p) for p in patch),
    )


def _plain_retry(kind: str, applied: set[str], fix: str) -> Relaunch | GiveUp:
    """A kind that is often transient: one plain relaunch."""
    name = f"retry_{kind}"
    if name in applied:
        return GiveUp(f"{kind} again after a relaunch: {fix}")
    return Relaunch(
        name,
        f"{kind} is often transient: relaunched once after ending this run's leftover processes",
    )


def choose(
    run: Run,
    findings: Sequence[Finding],
    max_trials: int,
    proxychains: str | None,
    now: float,
    config: Mapping[str, Any] | None = None,
    allow_fixes: Mapping[str, tuple[float | None, float | None]] | None = None,
    port_holder: str | None = None,
    gpus_taken: str | None = None,
    gpus: str = "all",
) -> Relaunch | GiveUp:
    """The remedy for `run`'s last trial, which failed with `findings` (root cause first).

    `proxychains` is the path of an installed proxychains4, or None; `config` is the YAML the
    trial ran with, and `allow_fixes` the science fixes its blueprint permits; `port_holder`
    describes a process outside this run that holds the port a bind error names;
    `gpus_taken` says which other processes hold memory on the run's GPUs now, and `gpus`
    is what the run asks for (`[ajetd] gpus`: a count's relaunch may go to other GPUs).

    A GiveUp's reason is the first thing that stops a relaunch, in the order a user would fix
    it: no known failure, a fatal kind, no fix for this failure (none allowed, none in this
    version, or the one it has tried and failed), and only then the retry budget and the
    thrashing guard, which stop a fix that would otherwise be tried.
    """
    if not findings:
        return GiveUp("no known failure in the output, so no fix to try (not retried blindly)")
    root = findings[0]
    if root.severity == "fatal":
        return GiveUp(f"{root.kind} is fatal, not retried: {root.fix}")
    choice = _remedy(
        run, root, proxychains, config, allow_fixes, port_holder, gpus_taken, gpus
    )  # the fix this failure has, the budget aside; why it has none, the first thing to fix
    if isinstance(choice, GiveUp):
        return choice
    return _spent(run, max_trials, now) or choice


def _remedy(
    run: Run,
    root: Finding,
    proxychains: str | None,
    config: Mapping[str, Any] | None,
    allow_fixes: Mapping[str, tuple[float | None, float | None]] | None,
    port_holder: str | None,
    gpus_taken: str | None,
    gpus: str = "all",
) -> Relaunch | GiveUp:
    """`choose`'s remedy for a failure whose root cause `root` is not fatal, its retry budget
    and thrashing guard not asked."""
    kind = root.kind
    fix = root.fix
    applied = set(run.fixes)
    if root.remedy and root.severity == "retryable":  # a user kind's own remedy
        return _user_remedy(kind, root.remedy, fix, applied, proxychains)
    if kind == "network":
        return _network(applied, proxychains)
    if kind == "nccl_error":
        return _nccl(applied, frameworks.of(run.kind))
    if kind == "logger_error":
        return _logger(applied, fix, config)
    if (
        kind == "vllm_memory"
        and gpus_taken is not None
        and "wait_gpu_drain" not in applied
        and advice.said(root.evidence, "gpu_memory_utilization") != "raise"
    ):  # others' memory is the cause only where the budget was too large for what was free
        count = gpus not in ("all", "0") and not gpus.startswith("[")
        then = (
            "goes to other free GPUs (gpus: a count), or waits until that memory drains where "
            "too few are free"
            if count
            else "waits until that memory drains (its GPUs are named or all: it waits for them)"
        )
        return Relaunch(
            "wait_gpu_drain",
            f"vllm_memory while other processes hold its GPUs ({gpus_taken}): the relaunch " + then,
        )
    if kind in SCIENCE_STEPS:
        framework = frameworks.of(run.kind)
        science = _science(kind, config, allow_fixes or {}, root.evidence, framework)
        return science if isinstance(science, Relaunch) else GiveUp(science)
    if kind == "port_in_use" and port_holder is not None:
        return GiveUp(
            f"port_in_use: {port_holder}; it is not this run's, so ajetd leaves it: "
            "end it or choose another port"
        )
    if kind in PLAIN_RETRY:
        return _plain_retry(kind, applied, fix)
    return GiveUp(f"{root.named()}: no automatic fix in this version: {fix}")
