"""Real logs printed by real programs in real runs: the kind the daemon records is the kind
`ajetd diagnose` names on the same excerpt.

A program (`fakejet.printer`) prints one corpus excerpt per kind into its tmux pane, in
pieces cut anywhere with pauses (some longer than the daemon's read period), through the pty
and `pipe-pane`, a third of them in colour, a third without a last newline, then exits 1 (the kind is the failed run's diagnosis) or hangs (the kind is
what the running trial shows, its output diagnosed while it runs). One daemon, every run at
once.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from ajetd.diagnosis.scan import read_chunks
from ajetd.diagnosis.stream import diagnose_chunks
from conftest import Env, wait_for

CORPUS = Path(__file__).parent / "data" / "corpus"
# One excerpt per kind: where reading it live once differed from reading it whole (the order
# of kinds seen in different reads, an exception line waiting for its message's second line,
# a traceback the output ends inside, a last line that the script's exit line was glued to:
# host_oom's, printed without its last newline), else the kind's longest excerpt.
SAMPLE = (
    "auth/sglang-14644.log",
    "build_error/deepspeed-885.log",
    "config_error/verl-4672.log",
    "connection_refused/lmmr1-30.log",
    "cuda_error/vllmascend-11720.log",
    "cuda_oom/llamafactory-5491.log",
    "disk_full/verl-3346.log",
    "host_oom/dreamerv3-203.log",
    "import_error/flashattn-1612.log",
    "insufficient_gpus/vllmascend-14628-2.log",
    "launch_error/pyxis-61.log",
    "logger_error/swanlab-946.log",
    "missing_file/megatron-119.log",
    "missing_model/animatediff-92.log",
    "nan_loss/verl-6319.log",
    "nccl_error/hubert-1.log",
    "nccl_timeout/janusvln-22.log",
    "network/llava-395.log",
    "port_in_use/deepspeed-3916.log",
    "ray_cluster/ray-9044.log",
    "ray_worker_died/verl-383.log",
    "segfault/chitu-102.log",
    "unknown_traceback/lmmr1-49.log",
    "vllm_engine_dead/lmcache-2306.log",
    "vllm_memory/vllm-2418.log",
)


def _offline_kinds(path: Path) -> list[str]:
    """What `ajetd diagnose FILE` names (it reads the file in chunks, as here)."""
    return [f.kind for f in diagnose_chunks(read_chunks(str(path)))]


def _submit_all(env: Env, mode: str) -> dict[str, Path]:
    runs = {}
    for seed, name in enumerate(SAMPLE):
        path = CORPUS / name
        dress = ("", "--no-final-newline", "--colour")[seed % 3]
        command = f"python -m fakejet.printer {path} {seed} {mode} {dress}".strip()
        label = f"{mode.strip('-') or 'exit'}-{path.parent.name}"
        blueprint = env.blueprint(
            label, config=env.config(label), command=command, ajetd="gpus: 0\nmax_trials: 1"
        )
        runs[env.submit(blueprint)] = path
    return runs


def _all_status(env: Env) -> dict[str, dict[str, Any]]:
    out = env.cli("status", "--all", "--json")
    assert out.returncode == 0, out.stderr
    return {r["run_id"]: r for r in json.loads(out.stdout)}


def _result_dir(env: Env, run_id: str) -> Path:
    return Path(env.record(run_id).get("result_dir") or "/nonexistent")


def _live_kinds(record: dict[str, Any]) -> list[str]:
    trials = record.get("trials") or [{}]
    return [f["kind"] for f in trials[-1].get("live_findings") or []]


def test_a_failed_runs_kind_is_the_offline_kind_of_what_it_printed(daemon_env: Env) -> None:
    env = daemon_env
    runs = _submit_all(env, "")

    def ended() -> bool:
        records = [env.record(r) for r in runs]
        return all(r.get("state") == "done" and not r.get("reports_pending") for r in records)

    wait_for(ended, timeout=90, what="every run to end")
    shown = _all_status(env)
    differ = []
    for run_id, path in runs.items():
        status = shown[run_id]
        assert status["status"] == "failed", json.dumps(status)
        result = Path(status["result_dir"])
        assert json.loads((result / "finish.flag").read_text())["status"] == "failed"
        live = [f["kind"] for f in status["diagnosis"]]
        # its reason names the root cause's kind, and its line (policy.root_cause): `possibly
        # host_oom` for a bare `Killed` no OOM kill on record confirms (diagnosis.killed)
        said = (result / "results.md").read_text()
        root = status["diagnosis"][0] if live else {}
        possible = root.get("certainty") == "possible"
        named = f"possibly {root.get('kind')}" if possible else root.get("kind")
        assert not live or f"({named})" in said or f"({named}: " in said, said
        if live != _offline_kinds(path):
            differ.append(f"{path.relative_to(CORPUS)}: ran {live}, offline {_offline_kinds(path)}")
    assert not differ, differ


def test_a_hung_runs_diagnosis_is_the_offline_kind_of_what_it_printed(daemon_env: Env) -> None:
    """The program prints its failure and stays alive: the running trial's diagnosis (status
    --json) is, root cause first, what `ajetd diagnose` names on what it printed; a last line
    without its newline or a traceback it stopped inside included."""
    env = daemon_env
    runs = _submit_all(env, "--hang")
    expected = {run_id: _offline_kinds(path) for run_id, path in runs.items()}

    def printed(run_id: str) -> bool:
        return (_result_dir(env, run_id) / "printed").exists()

    def settled() -> bool:
        return all(printed(r) and _live_kinds(env.record(r)) == expected[r] for r in runs)

    with contextlib.suppress(AssertionError):  # at the deadline: which ones differ, below
        wait_for(settled, timeout=30, what="every running trial to show its kinds")
    shown = _all_status(env)
    differ = [
        f"{path.relative_to(CORPUS)}: running shows "
        f"{[f['kind'] for f in shown[r]['diagnosis']]}, offline {expected[r]}"
        for r, path in runs.items()
        if [f["kind"] for f in shown[r]["diagnosis"]] != expected[r]
    ]
    assert all(printed(r) and shown[r]["state"] == "running" for r in runs)
    assert not differ, differ
    for run_id, kinds in expected.items():  # and the timeline says when each was seen
        events = (env.home / "runs" / run_id / "events.jsonl").read_text()
        said = [(f": {k} (line" in events or f": possibly {k} (line" in events) for k in kinds]
        assert "seen while running" in events and all(said), events


def test_a_program_waiting_at_a_prompt_is_flagged_at_once(daemon_env: Env) -> None:
    """Walk 86, F28: a program at a prompt (`Continue? [y/N]: `, no newline, the program
    reading its terminal) showed `running`, no attention, no finding, until the hang window
    (30 min under `hang: auto`). Flagged within seconds; ajetd cannot know the answer, so it
    only flags it; once someone answers in the pane and output goes on, the flag goes."""
    env = daemon_env
    config = env.config("asks", prompt="Continue? [y/N]: ", steps=400)
    run_id = env.submit(env.blueprint("asks", config=config))

    def flagged() -> str:
        return str(env.record(run_id).get("attention") or "")

    said = wait_for(flagged, timeout=20, what="the prompt to be flagged")
    assert said.startswith("waiting for input at a prompt: `Continue? [y/N]:`"), said
    assert "unattended" in said and "hang" not in said
    kinds = [f["kind"] for f in env.status(run_id)["diagnosis"]]
    assert kinds[:1] == ["waiting_for_input"], kinds
    session = env.record(run_id)["session"]
    env.tmux("send-keys", "-t", session, "y", "Enter")  # a person answers it
    wait_for(lambda: not flagged(), timeout=20, what="the flag to go once answered")
    assert env.record(run_id)["state"] == "running" and len(env.record(run_id)["trials"]) == 1
    assert env.cli("stop", run_id).returncode == 0
    env.wait_done(run_id)


def test_wandbs_login_prompt_is_relaunched_offline(daemon_env: Env) -> None:
    """Walk 86, F28: wandb's login menu (`wandb: Enter your choice: `, no API key) was only
    flagged: the run waited for ever. Its known fix is applied by itself, as other
    environment fixes are: the trial is stopped and relaunched with WANDB_MODE=offline
    (recorded in trials.md), and the run trains to its end."""
    env = daemon_env
    run_id = env.submit(env.blueprint("wandb", config=env.config("wandb", prompt=True)))
    status = env.wait_done(run_id, timeout=60)
    assert status["status"] == "succeeded" and status["trials"] == 2, status
    record = env.record(run_id)
    assert record["fixes"] == ["wandb_offline"] and ["WANDB_MODE", "offline"] in record["fix_env"]
    first = (env.tmp / "results" / "wandb" / "logs" / "trial-1.log").read_text()
    second = (env.tmp / "results" / "wandb" / "logs" / "trial-2.log").read_text()
    assert "Enter your choice" in first and "Enter your choice" not in second
    trials = (env.tmp / "results" / "wandb" / "trials.md").read_text()
    assert "relaunched with WANDB_MODE=offline" in trials, trials
    events = (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert "stopping: prompt" in events, events
