"""AgentJet configs read as its launcher composes them (Hydra `defaults:` on its
`hydra.searchpath`), on the real configs in the fixtures: a key only a default sets can be
fixed (walk M3), within bounds (the codebase, a depth, no symlink out)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import yaml

from ajetd.core.model import Run
from ajetd.core.remedy import Relaunch, _science
from ajetd.daemon.trials import _shadowed, load_config
from ajetd.frameworks.agentjet import apply_patches, find_paths
from ajetd.hosts.fs import LOCAL, MAX_INHERITANCE, read_composed, read_config

CONFIGS = Path(__file__).parent / "data" / "agentjet" / "configs"
MATH = CONFIGS / "tests" / "bench" / "benchmark_math" / "benchmark_math.yaml"
ALLOW = {"ppo_micro_batch_size_per_gpu": (1.0, None), "gpu_memory_utilization": (0.5, None)}


def test_the_canonical_config_reads_its_defaults_and_its_own_keys_win() -> None:
    alone = read_config(str(MATH), LOCAL)
    assert isinstance(alone, dict) and "rollout" in alone["ajet"]
    assert "gpu_memory_utilization" not in alone["ajet"]["rollout"]  # only the default sets it
    composed = read_composed(str(MATH), str(CONFIGS), LOCAL)
    assert isinstance(composed, dict), composed
    assert "defaults" not in composed
    assert composed["ajet"]["rollout"]["gpu_memory_utilization"] == 0.85  # ajet_default.yaml
    assert composed["ajet"]["trainer_common"]["test_freq"] == 999999  # its own, over 20
    assert composed["ajet"]["rollout"]["temperature"] == 0.9
    assert composed["trinity"]["synchronizer"]["sync_method"] == "nccl"  # merged into
    assert "actor_rollout_ref" in composed  # verl_default.yaml, on the search path too


def test_the_oom_fix_lowers_ajets_key_and_the_copy_carries_it() -> None:
    """The walk's cuda_oom: 'the allowed keys (...) are unset or at their bounds' on the
    file alone; composed, ajet.rollout.gpu_memory_utilization is lowered (not verl's reward
    model engine's), and the copy (the file, its defaults list kept) composes to the fix."""
    alone = read_config(str(MATH), LOCAL)
    assert isinstance(alone, dict)
    said = _science("cuda_oom", alone, ALLOW)
    assert isinstance(said, str) and "unset or at their bounds" in said
    composed = read_composed(str(MATH), str(CONFIGS), LOCAL)
    assert isinstance(composed, dict)
    fix = _science("cuda_oom", composed, ALLOW)
    assert isinstance(fix, Relaunch), fix
    assert fix.config_patches == ((("ajet", "rollout", "gpu_memory_utilization"), 0.8),)
    fixed = apply_patches(alone, dict(fix.config_patches))
    assert fixed["defaults"] == alone["defaults"]
    again = read_composed(str(MATH), str(CONFIGS), LOCAL, fixed)
    assert isinstance(again, dict) and again["ajet"]["rollout"]["gpu_memory_utilization"] == 0.8
    run = Run("abc123", "bp.md", 0.0, kind="agentjet", codebase_dir=str(CONFIGS))
    run = replace(run, config_path=str(MATH))
    assert _shadowed(run, fixed, dict(fix.config_patches), LOCAL) is None


def _write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_default_after_self_shadows_the_copy_and_the_fix_says_so(tmp_path: Path) -> None:
    _write(tmp_path / "d" / "base.yaml", {"ajet": {"rollout": {"gpu_memory_utilization": 0.85}}})
    conf = {"hydra": {"searchpath": ["file://d"]}, "defaults": ["_self_", "base"], "ajet": {}}
    path = _write(tmp_path / "c" / "x.yaml", conf)
    patches = {("ajet", "rollout", "gpu_memory_utilization"): 0.8}
    run = Run("abc123", "bp.md", 0.0, kind="agentjet", codebase_dir=str(tmp_path))
    run = replace(run, config_path=str(path))
    said = _shadowed(run, apply_patches(conf, patches), patches, LOCAL)
    assert said is not None and "ajet.rollout.gpu_memory_utilization" in said
    assert "put `_self_` last" in said


def test_composition_is_bounded(tmp_path: Path) -> None:
    outside = _write(tmp_path / "outside" / "evil.yaml", {"ajet": {"x": 1}})
    codebase = tmp_path / "code"
    (codebase / "d").mkdir(parents=True)
    os.symlink(outside, codebase / "d" / "evil.yaml")
    conf = {"hydra": {"searchpath": ["file://d"]}, "defaults": ["evil"], "ajet": {}}
    path = _write(codebase / "x.yaml", conf)
    said = read_composed(str(path), str(codebase), LOCAL)
    assert isinstance(said, str) and "outside exp_codebase_dir" in said, said
    for item in ("../outside/evil", "/etc/passwd", {"group": "option"}):
        _write(path, {**conf, "defaults": [item]})
        said = read_composed(str(path), str(codebase), LOCAL)
        assert isinstance(said, str) and "is not a config name" in said, said
    for n in range(MAX_INHERITANCE + 2):  # a chain deeper than read_inherited's bound
        _write(codebase / "d" / f"c{n}.yaml", {"defaults": [f"c{n + 1}"], "k": n})
    _write(path, {**conf, "defaults": ["c0"]})
    said = read_composed(str(path), str(codebase), LOCAL)
    assert isinstance(said, str) and "nested more than" in said, said
    _write(path, {**conf, "defaults": ["missing"]})
    said = read_composed(str(path), str(codebase), LOCAL)
    assert isinstance(said, str) and "no missing.yaml in" in said, said
    # where the defaults cannot be read, the run's fix reads the file alone, as before
    assert load_config(str(path), LOCAL, codebase=str(codebase)) == {
        **conf,
        "defaults": ["missing"],
    }


def test_the_oom_fix_on_a_dynamic_batch_config_lowers_the_token_budget() -> None:
    """Walk 89, F2: benchmark_math composes verl_default.yaml's `use_dynamic_bsz: true`,
    where verl packs micro batches up to `ppo_max_token_len_per_gpu` and ignores the micro
    batch sizes: the fix halves the token budget (16384 → 8192), not gpu_memory_utilization
    by 0.05 a trial; where only the micro batch sizes are allowed, the reason says they are
    ignored and which keys to allow."""
    composed = read_composed(str(MATH), str(CONFIGS), LOCAL)
    assert isinstance(composed, dict)
    allow = {**ALLOW, "ppo_max_token_len_per_gpu": (2048.0, None)}
    fix = _science("cuda_oom", composed, allow)
    assert isinstance(fix, Relaunch), fix
    actor = ("actor_rollout_ref", "actor", "ppo_max_token_len_per_gpu")
    assert dict(fix.config_patches)[actor] == 8192, fix
    assert "16384 → 8192" in fix.why and "use_dynamic_bsz is on" in fix.why, fix.why
    alone = read_config(str(MATH), LOCAL)
    assert isinstance(alone, dict)
    again = read_composed(
        str(MATH), str(CONFIGS), LOCAL, apply_patches(alone, dict(fix.config_patches))
    )
    assert isinstance(again, dict) and again["actor_rollout_ref"]["actor"][actor[-1]] == 8192
    micro = {
        "ppo_micro_batch_size_per_gpu": (1.0, None),
        "log_prob_micro_batch_size_per_gpu": (1.0, None),
    }
    said = _science("cuda_oom", composed, micro)
    assert isinstance(said, str), said
    assert "verl ignores ppo_micro_batch_size_per_gpu, log_prob_micro_batch_size_per_gpu" in said
    assert "allow ppo_max_token_len_per_gpu or log_prob_max_token_len_per_gpu" in said


def test_the_oom_fix_sets_agentjets_own_token_budget_where_it_follows_max_model_len() -> None:
    """AgentJet's launcher copies `ajet.rollout.ppo_max_token_len_per_gpu` over verl's key,
    and null there means `ajet.rollout.max_model_len` (ajet/utils/config_utils.py,
    align_parameters): lowering verl's key would be overwritten, so the fix sets AgentJet's."""
    composed = read_composed(str(MATH), str(CONFIGS), LOCAL)
    assert isinstance(composed, dict)
    composed["ajet"]["rollout"]["ppo_max_token_len_per_gpu"] = None
    fix = _science("cuda_oom", composed, {"ppo_max_token_len_per_gpu": (1024.0, None)})
    assert isinstance(fix, Relaunch), fix
    length = composed["ajet"]["rollout"]["max_model_len"]
    own = ("ajet", "rollout", "ppo_max_token_len_per_gpu")
    assert fix.config_patches == ((own, length // 2),), fix


def test_without_dynamic_batch_sizes_the_micro_batch_is_lowered() -> None:
    """The other mode: `use_dynamic_bsz: false` makes verl ignore the token budgets, so the
    micro batch size is the key that acts, though the token budget is allowed too."""
    composed = read_composed(str(MATH), str(CONFIGS), LOCAL)
    assert isinstance(composed, dict)
    for path in [
        *find_paths(composed, "use_dynamic_bsz"),
        *find_paths(composed, "log_prob_use_dynamic_bsz"),
    ]:
        composed = apply_patches(composed, {path: False})
    composed["actor_rollout_ref"]["actor"]["ppo_micro_batch_size_per_gpu"] = 8
    allow = {
        "ppo_max_token_len_per_gpu": (1024.0, None),
        "ppo_micro_batch_size_per_gpu": (1.0, None),
    }
    fix = _science("cuda_oom", composed, allow)
    assert isinstance(fix, Relaunch), fix
    assert "ppo_micro_batch_size_per_gpu 8 → 4" in fix.why and "verl ignores ppo_max" in fix.why
