"""The remedy policy after a failed trial: pure, with the clock passed in."""

from __future__ import annotations

from dataclasses import replace

from ajetd.core import model
from ajetd.core.finding import Finding
from ajetd.core.model import Run, Trial
from ajetd.core.remedy import GiveUp, Relaunch, choose

T0 = 1_800_000_000.0


def _failed_run(n: int = 1, gap: float = 300.0) -> Run:
    run = Run(run_id="abc123", source="bp.md", submitted_at=T0, max_time_s=36000)
    for i in range(n):
        run = model.add_trial(run, Trial(number=i + 1, command="c", session="ajet_x"))
        run = model.trial_started(run, T0 + i * gap)
        run = model.trial_ended(run, 1, T0 + i * gap + 10)
    return run


def _finding(kind: str, severity: str = "retryable") -> list[Finding]:
    return [Finding(kind, severity, 1, "e", "", "do X")]


def test_network_goes_under_proxychains_once() -> None:
    choice = choose(_failed_run(), _finding("network"), 3, "/usr/bin/proxychains4", T0 + 20)
    assert isinstance(choice, Relaunch) and choice.prefix == ("/usr/bin/proxychains4", "-q")
    run = model.restart(_failed_run(), choice.fix, choice.why, choice.env, choice.prefix)
    again = choose(run, _finding("network"), 3, "/usr/bin/proxychains4", T0 + 30)
    assert isinstance(again, GiveUp) and "proxy" in again.reason


def test_network_without_proxychains_says_so() -> None:
    choice = choose(_failed_run(), _finding("network"), 3, None, T0 + 20)
    assert isinstance(choice, GiveUp) and "not installed" in choice.reason


def test_nccl_error_sets_nvls_off() -> None:
    choice = choose(_failed_run(), _finding("nccl_error"), 3, None, T0 + 20)
    assert isinstance(choice, Relaunch) and choice.env == (("NCCL_NVLS_ENABLE", "0"),)


def test_fatal_kinds_are_never_retried() -> None:
    for kind in ("missing_model", "config_error", "import_error", "build_error"):
        choice = choose(_failed_run(), _finding(kind, "fatal"), 3, None, T0 + 20)
        assert isinstance(choice, GiveUp) and "fatal" in choice.reason


def test_budget_thrashing_and_no_blind_retry() -> None:
    assert isinstance(choose(_failed_run(3), _finding("nccl_error"), 3, None, T0 + 999), GiveUp)
    thrash = choose(_failed_run(4, gap=60), _finding("nccl_error"), 10, None, T0 + 250)
    assert isinstance(thrash, GiveUp) and "thrashing" in thrash.reason
    assert isinstance(choose(_failed_run(), [], 3, None, T0 + 20), GiveUp)
    assert isinstance(choose(_failed_run(), _finding("cuda_oom"), 3, None, T0 + 20), GiveUp)


def test_transient_kinds_get_one_plain_retry() -> None:
    choice = choose(_failed_run(), _finding("ray_worker_died"), 3, None, T0 + 20)
    assert isinstance(choice, Relaunch) and choice.env == () and choice.prefix == ()
    run = model.restart(_failed_run(), choice.fix, choice.why, choice.env, choice.prefix)
    assert isinstance(choose(run, _finding("ray_worker_died"), 3, None, T0 + 30), GiveUp)


def test_fixes_accumulate_and_round_trip() -> None:
    run = model.restart(_failed_run(), "nccl_nvls_off", "w", (("NCCL_NVLS_ENABLE", "0"),), ())
    run = model.restart(run, "proxychains", "w", (), ("/p", "-q"))
    assert run.fixes == ("nccl_nvls_off", "proxychains")
    assert run.fix_env == (("NCCL_NVLS_ENABLE", "0"),) and run.fix_prefix == ("/p", "-q")
    assert Run.from_json(run.to_json()) == run


CONFIG = {
    "ajet": {"trainer_common": {"logger": "swanlab"}, "rollout": {"gpu_memory_utilization": 0.9}},
    "actor_rollout_ref": {"actor": {"ppo_micro_batch_size_per_gpu": 8, "optim": {"lr": 1e-6}}},
}


def test_cuda_oom_halves_the_allowed_micro_batch_within_bounds() -> None:
    allow = {"ppo_micro_batch_size_per_gpu": (2.0, None)}
    choice = choose(_failed_run(), _finding("cuda_oom"), 3, None, T0 + 20, CONFIG, allow)
    assert isinstance(choice, Relaunch)
    assert choice.config_patches == (
        (("actor_rollout_ref", "actor", "ppo_micro_batch_size_per_gpu"), 4),
    )
    at_bound = {"actor_rollout_ref": {"actor": {"ppo_micro_batch_size_per_gpu": 2}}}
    stuck = choose(_failed_run(), _finding("cuda_oom"), 3, None, T0 + 20, at_bound, allow)
    assert isinstance(stuck, GiveUp) and "bounds" in stuck.reason


def test_cuda_oom_without_permission_is_refused_with_a_hint() -> None:
    choice = choose(_failed_run(), _finding("cuda_oom"), 3, None, T0 + 20, CONFIG, {})
    assert isinstance(choice, GiveUp) and "allow_fixes" in choice.reason


def test_vllm_memory_nan_and_logger_fixes() -> None:
    vllm = choose(
        _failed_run(),
        _finding("vllm_memory"),
        3,
        None,
        T0 + 20,
        CONFIG,
        {"gpu_memory_utilization": (0.5, None)},
    )
    assert isinstance(vllm, Relaunch)
    assert vllm.config_patches == ((("ajet", "rollout", "gpu_memory_utilization"), 0.85),)
    nan = choose(
        _failed_run(),
        _finding("nan_loss", "warning"),
        3,
        None,
        T0 + 20,
        CONFIG,
        {"lr": (1e-8, None)},
    )
    assert isinstance(nan, Relaunch) and nan.config_patches[0][1] == 5e-7
    logger = choose(_failed_run(), _finding("logger_error"), 3, None, T0 + 20, CONFIG)
    assert isinstance(logger, Relaunch)
    assert logger.config_patches == ((("ajet", "trainer_common", "logger"), "tensorboard"),)


def test_port_parsing_and_foreign_holder() -> None:
    from ajetd.core.remedy import port_from_text

    assert (
        port_from_text(
            "error while attempting to bind on address ('0.0.0.0', 7878): address already in use"
        )
        == 7878
    )
    assert port_from_text("server socket has failed to listen ... port: 29500, useIpv6: 0") == 29500
    assert port_from_text("bind tcp 127.0.0.1:8000: address already in use") == 8000
    assert port_from_text("OSError: [Errno 98] Address already in use") is None
    held = choose(
        _failed_run(),
        _finding("port_in_use"),
        3,
        None,
        T0 + 20,
        port_holder="port 10086 is held by pid 7 (python serve.py)",
    )
    assert isinstance(held, GiveUp) and "pid 7" in held.reason
    assert isinstance(choose(_failed_run(), _finding("port_in_use"), 3, None, T0 + 20), Relaunch)


def _user_finding(remedy: str, severity: str = "retryable") -> list[Finding]:
    return [replace(_finding("quota_hit", severity)[0], remedy=remedy)]


def test_user_kind_remedies_apply_once_each() -> None:
    env = choose(_failed_run(), _user_finding("env:SKIP_BAD=1"), 3, None, T0 + 20)
    assert isinstance(env, Relaunch) and env.env == (("SKIP_BAD", "1"),)
    run = model.restart(_failed_run(), env.fix, env.why, env.env, env.prefix)
    again = choose(run, _user_finding("env:SKIP_BAD=1"), 3, None, T0 + 30)
    assert isinstance(again, GiveUp) and "again after its remedy" in again.reason
    plain = choose(_failed_run(), _user_finding("relaunch"), 3, None, T0 + 20)
    assert isinstance(plain, Relaunch) and plain.fix == "retry_quota_hit"
    proxy = choose(_failed_run(), _user_finding("proxychains"), 3, "/usr/bin/proxychains4", T0 + 20)
    assert isinstance(proxy, Relaunch) and proxy.prefix[0] == "/usr/bin/proxychains4"
    none = choose(_failed_run(), _user_finding("proxychains"), 3, None, T0 + 20)
    assert isinstance(none, GiveUp) and "not installed" in none.reason


def test_user_kind_severity_decides_first() -> None:
    fatal = choose(_failed_run(), _user_finding("relaunch", "fatal"), 3, None, T0 + 20)
    assert isinstance(fatal, GiveUp) and "fatal" in fatal.reason
    science = choose(_failed_run(), _user_finding("relaunch", "science"), 3, None, T0 + 20)
    assert isinstance(science, GiveUp) and "no automatic fix" in science.reason


# vLLM's refusal to start, as its versions word it: 0.8 to 0.10 name no device, later ones do
REFUSAL = (
    "ValueError: Free memory on device (7.34/79.11 GiB) on startup is less than desired GPU "
    "memory utilization (0.6, 47.47 GiB). Decrease GPU memory utilization or reduce GPU memory "
    "used by other processes."
)
REFUSAL_NAMED = (
    "ValueError: Free memory on device cuda:0 (60.2/79.11 GiB) on startup is less than desired "
    "GPU memory utilization (0.9, 71.2 GiB). Decrease GPU memory utilization or reduce GPU "
    "memory used by other processes."
)
VLLM_CONFIG = {"actor_rollout_ref": {"rollout": {"gpu_memory_utilization": 0.6}}}


def _vllm(evidence: str) -> list[Finding]:
    return [Finding("vllm_memory", "science", 5, evidence, "", "lower it")]


def test_vllm_refusal_figures_are_read_in_every_wording() -> None:
    from ajetd.core.vllmfit import shortfall

    short = shortfall(REFUSAL)
    assert short is not None and (short.free_gib, short.total_gib) == (7.34, 79.11)
    assert (short.utilization, short.asked_gib, short.held_gib) == (0.6, 47.47, 71.77)
    assert short.fitting() == 0.07  # 7.34 / 79.11 = 0.093, less the 2 % margin
    named = shortfall(REFUSAL_NAMED)
    assert named is not None and named.fitting() == 0.74
    wrapped = "(WorkerDict pid=41500) " + REFUSAL.replace(" is less", "\n  is less")
    assert shortfall(wrapped) == short  # a prefix, a paste broken over lines
    assert shortfall("No available memory for the cache blocks.") is None
    assert shortfall("Free memory on device (" + "9" * 10_000) is None  # bounded


def test_vllm_memory_that_cannot_fit_the_allowed_min_ends_saying_who_holds_it() -> None:
    allow = {"gpu_memory_utilization": (0.4, None)}
    choice = choose(_failed_run(), _vllm(REFUSAL), 3, None, T0 + 20, VLLM_CONFIG, allow)
    assert isinstance(choice, GiveUp)
    assert "other processes held 71.77 of 79.11 GiB" in choice.reason
    assert "7.34 GiB free" in choice.reason and "at most 0.07 would fit" in choice.reason
    assert "below the allowed min 0.4" in choice.reason and "not relaunched" in choice.reason


def test_vllm_memory_jumps_straight_to_what_fits() -> None:
    allow = {"gpu_memory_utilization": (0.05, None)}
    choice = choose(_failed_run(), _vllm(REFUSAL), 3, None, T0 + 20, VLLM_CONFIG, allow)
    assert isinstance(choice, Relaunch)
    assert choice.config_patches == (
        (("actor_rollout_ref", "rollout", "gpu_memory_utilization"), 0.07),
    )
    assert "0.6 → 0.07" in choice.why and "7.34 GiB free" in choice.why
    config = {"rollout": {"gpu_memory_utilization": 0.9}}
    named = choose(_failed_run(), _vllm(REFUSAL_NAMED), 3, None, T0 + 20, config, allow)
    assert isinstance(named, Relaunch) and named.config_patches[0][1] == 0.74


def test_vllm_memory_waits_for_foreign_memory_before_reading_the_figures() -> None:
    allow = {"gpu_memory_utilization": (0.4, None)}
    taken = "pid 77 holds 70 GiB on GPU 0"
    wait = choose(_failed_run(), _vllm(REFUSAL), 3, None, T0 + 20, VLLM_CONFIG, allow, None, taken)
    assert isinstance(wait, Relaunch) and wait.fix == "wait_gpu_drain"
    run = model.restart(_failed_run(), wait.fix, wait.why, (), ())
    run = model.trial_started(run, T0 + 400)
    run = model.trial_ended(run, 1, T0 + 410)
    again = choose(run, _vllm(REFUSAL), 3, None, T0 + 420, VLLM_CONFIG, allow, None, taken)
    assert isinstance(again, GiveUp) and "71.77 of 79.11 GiB" in again.reason


def _nemo(run: Run) -> Run:
    return replace(run, kind="nemo_rl")


def test_the_advice_follows_the_runs_framework() -> None:
    """Walk 28, L5: a NeMo-RL run was told AgentJet's keys and AgentJet's documented fix."""
    oom = _finding("cuda_oom")
    agentjet = choose(_failed_run(), oom, 3, None, T0 + 20)
    nemo = choose(_nemo(_failed_run()), oom, 3, None, T0 + 20)
    assert isinstance(agentjet, GiveUp) and isinstance(nemo, GiveUp)
    said = "for one of AgentJet's: ppo_max_token_len_per_gpu, log_prob_max_token_len_per_gpu, "
    assert said + "ppo_micro_batch_size_per_gpu," in agentjet.reason  # walk 89, F2: first
    assert "train_micro_batch_size" not in agentjet.reason
    assert nemo.reason.endswith(
        "for one of NeMo-RL's: train_mb_tokens, logprob_mb_tokens, train_micro_batch_size, "
        "logprob_batch_size, gpu_memory_utilization"
    ), nemo.reason
    nccl = choose(_nemo(_failed_run()), _finding("nccl_error"), 3, None, T0 + 20)
    assert isinstance(nccl, Relaunch) and "AgentJet" not in nccl.why
    assert "the workaround NeMo-RL applies itself" in nccl.why
    plain = choose(_failed_run(), _finding("nccl_error"), 3, None, T0 + 20)
    assert isinstance(plain, Relaunch) and "(AgentJet's documented fix)" in plain.why


def test_an_integer_keys_bound_stays_an_integer() -> None:
    """Walk 28, L5: bounds read as floats were shown `min 1.0`, `min 2000.0`, and a value
    clamped to one was written into the config as a float (4 → 3.0)."""
    from ajetd.core.options import parse_options

    allow = parse_options("allow_fixes: {train_micro_batch_size: {min: 3}}").allow_fixes
    config = {"policy": {"train_micro_batch_size": 4}}
    oom = _finding("cuda_oom")
    got = choose(_nemo(_failed_run()), oom, 3, None, T0 + 20, config, allow)
    assert isinstance(got, Relaunch), got
    assert got.config_patches == ((("policy", "train_micro_batch_size"), 3),)
    assert type(got.config_patches[0][1]) is int
    assert got.why.endswith("train_micro_batch_size 4 → 3 (allowed by [ajetd] allow_fixes, min 3)")
    allow = {"max_response_length": (2000.0, None)}
    config = {"data": {"max_response_length": 4096}}
    got = choose(_failed_run(), oom, 3, None, T0 + 20, config, allow)
    assert isinstance(got, Relaunch) and got.why.endswith(
        "4096 → 3072 (allowed by [ajetd] allow_fixes, min 2000)"
    ), got
    allow = {"gpu_memory_utilization": (0.5, None)}
    config = {"rollout": {"gpu_memory_utilization": 0.9}}
    got = choose(_failed_run(), oom, 3, None, T0 + 20, config, allow)
    assert isinstance(got, Relaunch) and got.why.endswith("min 0.5)"), got


KV_ROOM = (
    "ValueError: The model's max seq len (8192) is larger than the maximum number of tokens "
    "that can be stored in KV cache (6048). Try increasing `gpu_memory_utilization` or "
    "decreasing `max_model_len` when initializing the engine."
)


def test_a_fix_moves_a_key_the_way_the_failures_message_says() -> None:
    """Walk 86, F11: vLLM's KV cache refusal says to raise gpu_memory_utilization; lowering it
    (as for the free-memory refusal, the same kind) burnt every trial."""
    config = {"ajet": {"rollout": {"gpu_memory_utilization": 0.85}}}
    allow = {"gpu_memory_utilization": (0.5, 0.95)}
    up = choose(_failed_run(), _vllm(KV_ROOM), 3, None, T0 + 20, config, allow)
    assert isinstance(up, Relaunch), up
    assert up.config_patches == ((("ajet", "rollout", "gpu_memory_utilization"), 0.9),)
    assert "0.85 → 0.9" in up.why and "max 0.95" in up.why
    top = {"ajet": {"rollout": {"gpu_memory_utilization": 0.95}}}
    spent = choose(_failed_run(), _vllm(KV_ROOM), 3, None, T0 + 20, top, allow)
    assert isinstance(spent, GiveUp) and "at its allowed max" in spent.reason
    assert "max_model_len" in spent.reason
    unbounded = choose(
        _failed_run(),
        _vllm(KV_ROOM),
        3,
        None,
        T0 + 20,
        top,
        {"gpu_memory_utilization": (0.5, None)},
    )
    assert isinstance(unbounded, GiveUp)  # 0.95 is ajetd's own cap: never past it
    # foreign memory is no cause of a KV cache with no room: no wait for it to drain
    taken = "pid 77 holds 70 GiB on GPU 0"
    now = choose(_failed_run(), _vllm(KV_ROOM), 3, None, T0 + 20, config, allow, None, taken)
    assert isinstance(now, Relaunch) and now.fix == "science_gpu_memory_utilization"


def test_the_direction_of_every_vllm_memory_excerpt_follows_its_message() -> None:
    """Every corpus excerpt of the kind: the free-memory refusal and vLLM's advice to lower it
    go down; every no-room shape (KV cache too small, no cache blocks, a negative KV budget,
    SGLang's `increase --mem-fraction-static`) goes up; a plain CUDA OOM says nothing."""
    from pathlib import Path

    from ajetd.core.advice import said
    from ajetd.diagnosis.stream import diagnose_chunks

    corpus = Path(__file__).parent / "data" / "corpus"
    seen = 0
    for path in sorted((corpus / "vllm_memory").glob("*.log")):
        data = path.read_bytes()
        findings = diagnose_chunks([data[data.find(b"\n") + 1 :]])
        if not findings or findings[0].kind != "vllm_memory":
            continue
        seen += 1
        evidence = findings[0].evidence.lower()
        down = "free memory on device" in evidence or "lowering" in evidence
        expected = "lower" if down else "raise"
        if "free memory on device" in evidence and "decrease" not in evidence:
            expected = None  # the excerpt's line stops before vLLM's advice
        assert said(findings[0].evidence, "gpu_memory_utilization") == expected, path.name
    assert seen >= 20
    assert (
        said("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "lr") is None
    )
    assert (
        said(
            "Try increasing `gpu_memory_utilization` or decreasing `max_model_len`", "max_model_len"
        )
        == "lower"
    )
    assert said("x " * 10_000 + "increase gpu_memory_utilization", "gpu_memory_utilization") is None
    # vLLM V1's refusal cut before its advice (a finding's evidence is cut in the middle)
    v1 = "(24.0 GiB KV cache is needed, which is larger than the available KV cache memory (3.18"
    assert said(v1, "gpu_memory_utilization") == "raise"


def test_a_fix_at_several_paths_names_each() -> None:
    """Walk 86, F23: both micro batch sizes were halved and the report named one change."""
    config = {
        "actor_rollout_ref": {
            "actor": {"ppo_micro_batch_size_per_gpu": 8},
            "critic": {"ppo_micro_batch_size_per_gpu": 16},
        }
    }
    allow = {"ppo_micro_batch_size_per_gpu": (1.0, None)}
    oom = _finding("cuda_oom", "science")
    choice = choose(_failed_run(), oom, 3, None, T0 + 20, config, allow)
    assert isinstance(choice, Relaunch) and len(choice.config_patches) == 2
    assert "ppo_micro_batch_size_per_gpu at 2 paths:" in choice.why, choice.why
    assert "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu 8 → 4" in choice.why
    assert "actor_rollout_ref.critic.ppo_micro_batch_size_per_gpu 16 → 8" in choice.why


# -- session 34's gap: NeMo-RL's token budgets were not allowable, as AgentJet's (verl's) are ----


def _nemo_config(on: str | None, budget: object = 4096) -> dict[str, object]:
    """A NeMo-RL policy with both token batching sections, `on` the one enabled (or none)."""
    policy: dict[str, object] = {"train_micro_batch_size": 4, "logprob_batch_size": 4}
    for mode in ("dynamic_batching", "sequence_packing"):
        policy[mode] = {
            "enabled": mode == on,
            "train_mb_tokens": budget,
            "logprob_mb_tokens": budget,
        }
    return {"policy": policy}


def test_a_nemo_token_budget_is_lowered_where_its_batching_is_on() -> None:
    from ajetd.core.options import parse_options

    allow = parse_options("allow_fixes: {train_mb_tokens: {min: 1024}}").allow_fixes
    oom = _finding("cuda_oom")
    for on in ("sequence_packing", "dynamic_batching"):
        got = choose(_nemo(_failed_run()), oom, 3, None, T0 + 20, _nemo_config(on), allow)
        assert isinstance(got, Relaunch), got
        # the mode that is off keeps its budget: it sizes nothing
        assert got.config_patches == ((("policy", on, "train_mb_tokens"), 2048),), got
        assert got.why.endswith(
            "train_mb_tokens 4096 → 2048 (allowed by [ajetd] allow_fixes, min 1024)"
        ), got.why
    # an AgentJet run is never given NeMo-RL's key, whatever its config holds
    config = _nemo_config("sequence_packing")
    agentjet = choose(_failed_run(), oom, 3, None, T0 + 20, config, allow)
    assert isinstance(agentjet, GiveUp), agentjet
    assert "train_mb_tokens" not in agentjet.reason.split("AgentJet's:")[-1], agentjet.reason


def test_what_nemo_ignores_in_its_batch_mode_is_named_with_the_key_to_allow() -> None:
    oom = _finding("cuda_oom")
    micro = {"train_micro_batch_size": (1.0, None)}
    config = _nemo_config("sequence_packing")
    packed = choose(_nemo(_failed_run()), oom, 3, None, T0 + 20, config, micro)
    assert isinstance(packed, GiveUp), packed
    assert (
        "sequence_packing is on, so NeMo-RL ignores train_micro_batch_size (its micro batches "
        "are packed up to the token budgets): allow train_mb_tokens or logprob_mb_tokens for "
        "a fix that sizes its batches"
    ) in packed.reason, packed.reason
    budgets = {"train_mb_tokens": (1.0, None)}
    off = choose(_nemo(_failed_run()), oom, 3, None, T0 + 20, _nemo_config(None), budgets)
    assert isinstance(off, GiveUp), off
    assert (
        "dynamic_batching and sequence_packing are off, so NeMo-RL ignores train_mb_tokens "
        "(nothing uses the budgets): allow train_micro_batch_size or logprob_batch_size"
    ) in off.reason, off.reason
    # NeMo-RL's own default budget follows the micro batch size: lowering that one works
    follows = "${mul:${policy.max_total_sequence_length}, ${policy.train_micro_batch_size}}"
    config = _nemo_config("sequence_packing", budget=follows)
    got = choose(_nemo(_failed_run()), oom, 3, None, T0 + 20, config, micro)
    assert isinstance(got, Relaunch), got
    assert got.config_patches == ((("policy", "train_micro_batch_size"), 2),), got


def test_the_budget_is_named_only_where_a_fix_would_otherwise_be_tried() -> None:
    """walk91 F4: `max_trials: 1`, a cuda_oom, no allow_fixes: the reason said "retry budget
    spent", as if a larger max_trials would help; with the default budget the same crash said
    "no science fix allowed". The class: for every kind in the catalogue (with and without a
    fix allowed, and after its fix was tried), a run whose budget (or thrashing guard) is
    spent ends for the same reason as one with budget left, unless that one is relaunched:
    only then is the budget (or the guard) the reason."""
    from ajetd.diagnosis.catalogue import BY_NAME

    allowed = {"ppo_micro_batch_size_per_gpu": (1.0, None)}
    config = {"actor_rollout_ref": {"actor": {"ppo_micro_batch_size_per_gpu": 8}}}
    for name, kind in BY_NAME.items():
        oom = [Finding(name, kind.severity.value, 1, "e", "", "do X")]
        for allow in ({}, allowed):
            for tried in ((), (f"retry_{name}", "nccl_nvls_off", "proxychains", "local_logger")):
                fresh = replace(_failed_run(1), fixes=tried)
                spent = replace(_failed_run(3), fixes=tried)
                thrash = replace(_failed_run(4, gap=60), fixes=tried)
                free = choose(fresh, oom, 9, None, T0 + 20, config, allow)
                at_budget = choose(spent, oom, 3, None, T0 + 9999, config, allow)
                thrashing = choose(thrash, oom, 9, None, T0 + 250, config, allow)
                if isinstance(free, GiveUp):
                    assert at_budget == free and thrashing == free, (name, at_budget, free)
                else:
                    assert isinstance(at_budget, GiveUp), (name, at_budget)
                    assert at_budget.reason.startswith("retry budget spent"), (name, at_budget)
                    assert isinstance(thrashing, GiveUp), (name, thrashing)
                    assert thrashing.reason.startswith("thrashing guard"), (name, thrashing)
    once = choose(_failed_run(1), _finding("cuda_oom", "science"), 1, None, T0 + 20, config, {})
    assert isinstance(once, GiveUp) and once.reason.startswith("cuda_oom: no science fix allowed")
