"""User-defined kinds end to end: `diagnose --kinds`, `lint`, and the daemon (live diagnosis,
the failed trial's diagnosis, the kind's remedy) with `$AJETD_HOME/kinds.yaml` and
`[ajetd] kinds:`."""

from __future__ import annotations

import json

from conftest import Env
from loopkit import Loop

HOME_KINDS = """
kinds:
  - name: quota_hit
    patterns: ['QuotaExceeded: project \\w+']
    severity: fatal
    explanation: The cluster's job quota was hit.
    fix: Wait for other jobs to end.
"""
BLUEPRINT_KINDS = """kinds:
  - name: bad_shard
    patterns: ['^ShardError: shard \\d+ is corrupt']
    severity: retryable
    explanation: A data shard is corrupt.
    fix: Skip bad shards.
    remedy: {env: {SKIP_BAD_SHARDS: 1}}"""


def test_diagnose_with_kinds_file_and_its_errors(env: Env) -> None:
    kinds = env.tmp / "kinds.yaml"
    kinds.write_text(HOME_KINDS)
    log = env.tmp / "x.log"
    log.write_text(
        "(TaskRunner pid=1) sbatch: QuotaExceeded: project abc\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    out = env.cli("diagnose", str(log), "--kinds", str(kinds), "--json")
    found = json.loads(out.stdout)
    assert out.returncode == 0 and [f["kind"] for f in found] == ["quota_hit", "cuda_error"]
    assert found[0]["severity"] == "fatal" and found[0]["line"] == 1
    plain = json.loads(env.cli("diagnose", str(log), "--json").stdout)
    assert [f["kind"] for f in plain] == ["cuda_error"]
    kinds.write_text(HOME_KINDS.replace("project \\w+", "project (\\w+"))
    bad = env.cli("diagnose", str(log), "--kinds", str(kinds))
    assert bad.returncode == 2 and "quota_hit: bad pattern" in bad.stderr


def test_lint_names_the_kind_with_a_bad_pattern(env: Env) -> None:
    text = env.blueprint("k", ajetd=BLUEPRINT_KINDS.replace("\\d+ is", "\\d+ (is")).read_text()
    path = env.tmp / "k.md"
    path.write_text(text)
    out = env.cli("lint", str(path))
    assert out.returncode == 2 and "bad_shard: bad pattern" in out.stderr
    good = env.blueprint("k2", ajetd=BLUEPRINT_KINDS)
    assert env.cli("lint", str(good)).returncode == 0
    env.home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (env.home / "kinds.yaml").write_text("kinds: [{name: Q}]\n")
    out = env.cli("lint", str(good))
    assert out.returncode == 2 and "kinds.yaml" in out.stderr and "Q: name must" in out.stderr


def test_daemon_uses_home_and_blueprint_kinds(daemon_env: Env) -> None:
    env = daemon_env
    (env.home / "kinds.yaml").write_text(HOME_KINDS)
    quota = env.config("quota", fail={"text": "QuotaExceeded: project abc", "unless_env": {"N": 1}})
    shard = env.config(
        "shard",
        fail={"text": "ShardError: shard 7 is corrupt", "unless_env": {"SKIP_BAD_SHARDS": 1}},
    )
    q_id = env.submit(env.blueprint("quota", config=quota))
    s_id = env.submit(env.blueprint("shard", config=shard, ajetd=BLUEPRINT_KINDS))
    q = env.wait_done(q_id)
    assert q["status"] == "failed" and q["trials"] == 1, q
    assert q["diagnosis"][0]["kind"] == "quota_hit" and "fatal" in q["reason"]
    s = env.wait_done(s_id)
    assert s["status"] == "succeeded" and s["trials"] == 2, s
    trials = (env.tmp / "results" / "shard" / "trials.md").read_text()
    assert "bad_shard" in trials and "SKIP_BAD_SHARDS=1" in trials


def test_a_kind_named_like_a_built_in_is_refused_everywhere(env: Env) -> None:
    """walk91 F5: lint, `diagnose --kinds` and the home file each refuse a user `cuda_oom`,
    naming it (it replaced the built-in without a word)."""
    mine = BLUEPRINT_KINDS.replace("bad_shard", "cuda_oom")
    said = "cuda_oom: cuda_oom is one of ajetd's built-in kinds"
    out = env.cli("lint", str(env.blueprint("uk", ajetd=mine)))
    assert out.returncode == 2 and said in out.stderr, out.stderr
    kinds = env.tmp / "kinds.yaml"
    kinds.write_text(HOME_KINDS.replace("quota_hit", "cuda_oom"))
    log = env.tmp / "oom.log"
    log.write_text("torch.OutOfMemoryError: CUDA out of memory.\n")
    out = env.cli("diagnose", str(log), "--kinds", str(kinds))
    assert out.returncode == 2 and said in out.stderr, out.stderr
    env.home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (env.home / "kinds.yaml").write_text(kinds.read_text())
    out = env.cli("lint", str(env.blueprint("k2", ajetd=BLUEPRINT_KINDS)))
    assert out.returncode == 2 and "kinds.yaml" in out.stderr and said in out.stderr


def test_admission_rejects_a_kind_named_like_a_built_in(env: Env, loop: Loop) -> None:
    """walk91 F5's uk.md: a blueprint's own `cuda_oom` (fatal, beside allow_fixes) ran and
    ended "cuda_oom is fatal, not retried: mine". Rejected at admission, naming the kind."""
    mine = BLUEPRINT_KINDS.replace("bad_shard", "cuda_oom")
    ajetd = f"gpus: 0\nallow_fixes: {{ppo_micro_batch_size_per_gpu: {{min: 1}}}}\n{mine}"
    run_id = loop.submit(env.blueprint("uk", ajetd=ajetd))
    run = loop.run(run_id)
    assert run.status is not None and run.status.value == "rejected", run
    assert "cuda_oom: cuda_oom is one of ajetd's built-in kinds" in run.reason, run.reason
