"""How `tests/data/homes/v1/` was made: run with the ajetd of commit 4190b39 (before runs had
typed parts), as a pytest test inside that version's own `tests/` folder:

    git archive 4190b39 | tar -x -C /tmp/v1
    cp tests/data/homes/v1/make_home.py /tmp/v1/tests/test_make_home.py
    cd /tmp/v1/tests && AJETD_FIXTURE_OUT=$PWD/out PYTHONPATH=/tmp/v1/supervisor \
        python -m pytest -q test_make_home.py

A real daemon on a real home, a real Slurm cluster (tests/slurmcluster.py) and fake GPUs:
- `slurm_nemo`: a NeMo-RL run through a Slurm batch job, ended (slurm, nemo, provenance);
- `failed`: a local AgentJet run that crashed (findings, live findings, gpu_stats);
- `live`: a local AgentJet run still running when the daemon was killed with SIGKILL
  (gpu_stats, provenance, history): its record, trial script and go file are kept, and the
  test that reads this home starts its pane again as the daemon had (`tmux new-session`).
What the old CLI printed for the ended runs (`status ID --json`) is kept beside them. Paths
are replaced by @TMP@ (the test's folder) and @VENV@ (the Python environment).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

from slurmcluster import SlurmCluster

from conftest import PYTHON, Env, git, wait_for


def _gpus(env: Env) -> Path:
    path = env.tmp / "gpus.json"
    gpus = [
        {
            "index": i,
            "name": "H100",
            "memory_total_mib": 81920,
            "memory_used_mib": 0,
            "utilization": 0,
        }
        for i in range(2)
    ]
    path.write_text(json.dumps({"gpus": gpus}))
    env.vars["AJETD_FAKE_GPUS"] = str(path)
    return path


def _copy(src: Path, dst: Path, env: Env) -> None:
    """Files under `src` to `dst`, paths replaced by placeholders (FIFOs and sockets left)."""
    venv = str(Path(PYTHON).parent.parent)
    for path in sorted(src.rglob("*")):
        if not path.is_file():
            continue
        target = dst / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = path.read_bytes()
        data = data.replace(str(env.tmp).encode(), b"@TMP@").replace(venv.encode(), b"@VENV@")
        target.write_bytes(data)


def test_make_home(env: Env, slurm_cluster: SlurmCluster) -> None:
    out = Path(os.environ["AJETD_FIXTURE_OUT"])
    shutil.rmtree(out, ignore_errors=True)
    env.vars["SLURM_CONF"] = str(slurm_cluster.conf)
    gpus = _gpus(env)
    git(env.codebase, "init", "-q")
    git(env.codebase, "add", "-A")
    git(env.codebase, "commit", "-qm", "fakejet")
    (env.codebase / "configs" / "smoke.yaml").write_text("# changed, not committed\n")
    env.start_daemon("--gpu-young-period", "0.2", "--gpu-period", "0.2")
    command = (
        "python examples/run_grpo.py --config examples/configs/grpo_fake.yaml "
        "grpo.max_num_steps=6 grpo.val_period=2"
    )
    nemo = env.submit(
        env.blueprint(
            "slurm_nemo",
            config="examples/configs/grpo_fake.yaml",
            command=command,
            ajetd="slurm: {mode: batch}\nmax_trials: 1",
        )
    )
    fake_gpu = {"file": str(gpus), "memory_mib": 30000, "utilization": 80}
    crash = env.config("failed", fake_gpu=fake_gpu, crash_at=3, exit_code=3, step_time=0.3)
    failed = env.submit(env.blueprint("failed", config=crash, ajetd="gpus: 1\nmax_trials: 1"))
    slow = env.config("live", fake_gpu=fake_gpu, steps=8, step_time=1.0)
    live = env.submit(env.blueprint("live", config=slow, max_time="1h", ajetd="gpus: 1"))
    env.wait_done(nemo, timeout=90)
    env.wait_done(failed, timeout=60)

    def live_enough() -> bool:
        rec = env.record(live)
        return bool(rec.get("history") and rec.get("gpu_stats"))

    wait_for(live_enough, timeout=60, what="the live run's history and GPU figures")
    env.daemons[0].send_signal(signal.SIGKILL)
    env.daemons[0].wait()
    snapshot_at = time.time()
    runs = {"slurm_nemo": nemo, "failed": failed, "live": live}
    for name, run_id in runs.items():
        _copy(env.home / "runs" / run_id, out / "ajetd-home" / "runs" / run_id, env)
        if name != "live":
            status = env.cli("status", run_id, "--json")
            assert status.returncode == 0, status.stderr
            expected = out / "expected" / f"{name}.status.json"
            expected.parent.mkdir(parents=True, exist_ok=True)
            _copy_text(status.stdout, expected, env)
            _copy(env.tmp / "results" / name, out / "results" / name, env)
    live_config = env.codebase / "configs" / "live.yaml"
    _copy(live_config.parent, out / "codebase" / "configs", env)
    meta = {"snapshot_at": snapshot_at, "runs": runs, "made_by": "ajetd 4190b39"}
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    env.tmux("kill-server")


def _copy_text(text: str, target: Path, env: Env) -> None:
    venv = str(Path(PYTHON).parent.parent)
    target.write_text(text.replace(str(env.tmp), "@TMP@").replace(venv, "@VENV@"))
