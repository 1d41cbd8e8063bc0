"""A science fix never writes a value outside its key's domain, and `allow_fixes` bounds that
would let it are refused at lint and admission (walk91 F1: `min: 0` on a micro batch size let
a fix write 0 and the run read `succeeded`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.core import fixdomain, model
from ajetd.core.errors import BlueprintError
from ajetd.core.finding import Finding
from ajetd.core.model import Run, Trial
from ajetd.core.options import SCIENCE_KEYS, SCIENCE_STEPS, parse_options
from ajetd.core.remedy import GiveUp, Relaunch, choose

T0 = 1_800_000_000.0


def _failed_run(kind: str = "agentjet") -> Run:
    run = Run(run_id="abc123", source="bp.md", submitted_at=T0, max_time_s=36000, kind=kind)
    run = model.add_trial(run, Trial(number=1, command="c", session="ajet_x"))
    run = model.trial_started(run, T0)
    return model.trial_ended(run, 1, T0 + 10)


def _problems(ajetd: str) -> list[str]:
    with pytest.raises(BlueprintError) as err:
        parse_options(ajetd)
    return list(err.value.problems)


@pytest.mark.parametrize(
    ("ajetd", "said"),
    [
        (
            "allow_fixes: {ppo_micro_batch_size_per_gpu: {min: 0}}",
            "allow_fixes.ppo_micro_batch_size_per_gpu.min: 0 is not a valid "
            "ppo_micro_batch_size_per_gpu (a whole number of at least 1)",
        ),
        (
            "allow_fixes: {train_mb_tokens: {min: -1}}",
            "allow_fixes.train_mb_tokens.min: -1 is not a valid train_mb_tokens",
        ),
        (
            "allow_fixes: {ppo_micro_batch_size_per_gpu: {min: 2.5}}",
            "2.5 is not a valid ppo_micro_batch_size_per_gpu (a whole number of at least 1): "
            "ppo_micro_batch_size_per_gpu counts, so its bounds are whole numbers",
        ),
        (
            "allow_fixes: {logprob_mb_tokens: {max: 1e3, min: 0.5}}",
            "allow_fixes.logprob_mb_tokens.min: 0.5 is not a valid logprob_mb_tokens",
        ),
        (
            "allow_fixes: {gpu_memory_utilization: {min: 1.5}}",
            "allow_fixes.gpu_memory_utilization.min: 1.5 is not a valid gpu_memory_utilization "
            "(a fraction above 0 and at most 1)",
        ),
        (
            "allow_fixes: {gpu_memory_utilization: {max: 1.2}}",
            "allow_fixes.gpu_memory_utilization.max: 1.2 is not a valid",
        ),
        (
            "allow_fixes: {gpu_memory_utilization: {min: 0}}",
            "allow_fixes.gpu_memory_utilization.min: 0 is not a valid",
        ),
        (
            "allow_fixes: {lr: {min: 0}}",
            "allow_fixes.lr.min: 0 is not a valid lr (a number above 0)",
        ),
        (
            "allow_fixes: {gpu_memory_utilization: {min: 0.5, max: 0.4}}",
            "allow_fixes.gpu_memory_utilization: min 0.5 is above max 0.4, so no value is allowed",
        ),
        (
            "allow_fixes: {max_response_length: {min: 4096, max: 1024}}",
            "allow_fixes.max_response_length: min 4096 is above max 1024",
        ),
    ],
)
def test_a_bound_outside_its_keys_domain_is_a_problem_naming_key_and_bound(
    ajetd: str, said: str
) -> None:
    problems = _problems(ajetd)
    assert any(said in p for p in problems), problems


def test_every_key_in_its_domain_is_accepted_and_a_stored_blueprint_is_not_judged() -> None:
    """The bounds a person writes stay accepted (YAML's `1e3` is 1000 on an integer key); an
    admitted run's stored blueprint read again keeps its options whatever a later ajetd
    refuses (the remedy keeps every value in the domain anyway)."""
    ok = parse_options(
        "allow_fixes: {ppo_micro_batch_size_per_gpu: {min: 1}, train_mb_tokens: {min: 1e3}, "
        "gpu_memory_utilization: {min: 0.3, max: 1}, lr: {min: 1e-7}, max_response_length: {}}"
    )
    assert ok.allow_fixes["train_mb_tokens"] == (1000.0, None)
    assert set(ok.allow_fixes) <= set(SCIENCE_KEYS)
    stored = parse_options("allow_fixes: {ppo_micro_batch_size_per_gpu: {min: 0}}", admitted=True)
    assert stored.allow_fixes == {"ppo_micro_batch_size_per_gpu": (0.0, None)}


def test_the_smallest_count_is_not_halved_to_zero_without_a_min() -> None:
    """No min given (`{}`): a micro batch size of 1, a budget of 1, a utilisation of 0.05 are
    where no fix is left, not 0."""
    oom = [Finding("cuda_oom", "science", 1, "e", "", "lower it")]
    for key, value in (
        ("ppo_micro_batch_size_per_gpu", 1),
        ("max_response_length", 1),
        ("gpu_memory_utilization", 0.05),
        ("gpu_memory_utilization", 0.03),
    ):
        config = {"actor_rollout_ref": {"actor": {key: value}}}
        got = choose(_failed_run(), oom, 3, None, T0 + 20, config, {key: (None, None)})
        assert isinstance(got, GiveUp) and "at their bounds" in got.reason, (key, got)
    config = {"actor_rollout_ref": {"actor": {"ppo_micro_batch_size_per_gpu": 3}}}
    allow = {"ppo_micro_batch_size_per_gpu": (None, None)}
    got = choose(_failed_run(), oom, 3, None, T0 + 20, config, allow)
    assert isinstance(got, Relaunch) and got.config_patches[0][1] == 1


def test_a_stored_bound_outside_the_domain_never_reaches_the_config() -> None:
    """walk91 F1's run as a decision: `min: 0` (a run admitted before bounds were checked)
    and a micro batch size of 1 after two fixes: no third fix writes 0."""
    allow = parse_options(
        "allow_fixes: {ppo_micro_batch_size_per_gpu: {min: 0}}", admitted=True
    ).allow_fixes
    oom = [Finding("cuda_oom", "science", 1, "e", "", "lower it")]
    config = {"actor_rollout_ref": {"actor": {"ppo_micro_batch_size_per_gpu": 1}}}
    got = choose(_failed_run(), oom, 6, None, T0 + 20, config, allow)
    assert isinstance(got, GiveUp), got


EVIDENCE = (
    "",
    "torch.OutOfMemoryError: CUDA out of memory.",
    "ValueError: Free memory on device (7.34/79.11 GiB) on startup is less than desired GPU "
    "memory utilization (0.6, 47.47 GiB).",
    "ValueError: Free memory on device (200/80 GiB) on startup is less than desired GPU "
    "memory utilization (0.6, 47.47 GiB).",
    "ValueError: The model's max seq len (8192) is larger than the maximum number of tokens "
    "that can be stored in KV cache (6048). Try increasing `gpu_memory_utilization`.",
)
_VALUES = st.one_of(
    st.integers(-4, 100_000),
    st.floats(-2, 200_000, allow_nan=False),
    st.sampled_from([0, 1, 2, 0.01, 0.05, 0.06, 0.95, 1.0, 1.5, 1e-300, 5e-324]),
)
_BOUND = st.one_of(st.none(), _VALUES)


def _nemo_or_agentjet(key: str, value: Any, framework: str) -> dict[str, Any]:
    """A config holding `key` where each framework's remedy finds it."""
    if framework == "nemo_rl":
        policy: dict[str, Any] = {"train_micro_batch_size": value, "logprob_batch_size": value}
        for mode in ("dynamic_batching", "sequence_packing"):
            policy[mode] = {"enabled": True, "train_mb_tokens": value, "logprob_mb_tokens": value}
        policy["generation"] = {"vllm_cfg": {"gpu_memory_utilization": value}}
        policy["optimizer"] = {"kwargs": {"lr": value}}
        return {"policy": policy}
    return {"actor_rollout_ref": {"actor": {key: value, "use_dynamic_bsz": None}}}


@settings(max_examples=400, deadline=None)
@given(
    kind=st.sampled_from(sorted(SCIENCE_STEPS)),
    key=st.sampled_from(SCIENCE_KEYS),
    framework=st.sampled_from(["agentjet", "nemo_rl"]),
    value=_VALUES,
    low=_BOUND,
    high=_BOUND,
    evidence=st.sampled_from(EVIDENCE),
    checked=st.booleans(),
)
def test_no_fix_writes_a_value_outside_its_keys_domain(
    kind: str,
    key: str,
    framework: str,
    value: Any,
    low: float | None,
    high: float | None,
    evidence: str,
    checked: bool,
) -> None:
    """The class: whatever the config holds and whatever bounds a stored blueprint carries
    (checked ones, or any at all), every value a science fix writes is in its key's domain."""
    if checked and fixdomain.bound_problems(key, low, high):
        return
    config = _nemo_or_agentjet(key, value, framework)
    run = replace(_failed_run(framework), kind=framework)
    finding = [Finding(kind, "science", 1, evidence, "", "fix it")]
    got = choose(run, finding, 6, None, T0 + 20, config, {key: (low, high)})
    if isinstance(got, Relaunch):
        for path, new in got.config_patches:
            assert fixdomain.valid(path[-1], new), (path, value, new, low, high)
            if path[-1] not in fixdomain.REAL_KEYS:
                assert type(new) is int, (path, new)


def test_a_min_not_below_the_configs_value_is_a_warning() -> None:
    """`min: 16` on a micro batch size of 8: the fix can never be made; a warning (the run is
    sound, and a campaign's overrides may change the value), said once per value."""
    said = fixdomain.current_warnings("ppo_micro_batch_size_per_gpu", 16.0, [8.0, 8.0])
    assert said == [
        "allow_fixes.ppo_micro_batch_size_per_gpu.min 16 is not below the config's "
        "ppo_micro_batch_size_per_gpu (8), so no fix can lower it: allow a min below 8 or "
        "leave ppo_micro_batch_size_per_gpu out of allow_fixes"
    ]
    assert fixdomain.current_warnings("ppo_micro_batch_size_per_gpu", 1.0, [8.0]) == []
    assert fixdomain.current_warnings("ppo_micro_batch_size_per_gpu", 16.0, []) == []
    assert fixdomain.current_warnings("ppo_micro_batch_size_per_gpu", None, [8.0]) == []
