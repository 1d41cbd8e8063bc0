"""`python -m fakejet.launcher --conf X.yaml [--autokill]`: behaves like `ajet.launcher` on a CPU.

Prints verl-style step lines and a tqdm bar redrawn with `\\r`, appends one `str(dict)` line per
validation pass to `ajet.trainer_common.val_print_to_markdown_file_path` (relative to the cwd,
numpy>=2 style `np.float64(...)` values), and can crash with a real traceback, fail with a given error
text unless an environment variable is set (as a fix would set it), hang, ignore SIGINT, leave
a detached child behind, or exit with a chosen code. Behaviour comes from the
YAML's `fakejet:` section, so a blueprint's command line stays exactly like a real one.
`old_agentjet: true` (or `console`: with verl's console logger) behaves as an AgentJet before
2026-03-30, which writes no val file: each validation is only printed (`fakejet.oldprint`), the
first before training; `print_table: true` prints the table beside the val file's record, as a
newer AgentJet does.
"""

from __future__ import annotations

import argparse
import atexit
import fcntl
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from fakejet import oldprint

OOM = """Traceback (most recent call last):
  File "/app/verl/workers/fsdp_workers.py", line 812, in compute_log_prob
    output = self.actor.compute_log_prob(data=data)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. \
GPU 0 has a total capacity of 79.19 GiB of which 1.05 GiB is free."""

SWARM_DOWN = """Traceback (most recent call last):
  File "/app/tutorial/example_appworld_swarm/agent_roll.py", line 88, in main
    swarm_client.begin_episode()
requests.exceptions.ConnectionError: HTTPConnectionPool(host='127.0.0.1', port={port}): \
Max retries exceeded with url: /begin_episode (Caused by NewConnectionError('<urllib3.connection.\
HTTPConnection object>: Failed to establish a new connection: [Errno 111] Connection refused'))"""


VLLM_MEMORY = (
    "(EngineCore_0 pid={pid}) ERROR 09-03 11:03:37 [core.py:712] ValueError: Free memory on "
    "device (7.34/79.19 GiB) on startup is less than desired GPU memory utilization (0.9, "
    "71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."
)

# vLLM's refusal when its budget leaves the KV cache too little room (OpenRLHF#336): the cure
# is a larger gpu_memory_utilization, the opposite of VLLM_MEMORY's
KV_CACHE = (
    "(LLMRayActor pid={pid}) ERROR 06-28 06:11:45 worker_base.py:145] ValueError: The model's "
    "max seq len (8192) is larger than the maximum number of tokens that can be stored in KV "
    "cache (6048). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
    "initializing the engine."
)


def _edit_fake_gpus(path: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Change the `AJETD_FAKE_GPUS` file as a driver's state would change (locked, atomic)."""
    with open(path + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        doc = json.loads(Path(path).read_text())
        change(doc)
        tmp = f"{path}.{os.getpid()}.tmp"
        Path(tmp).write_text(json.dumps(doc))
        os.replace(tmp, path)


def _hold_gpus(path: str, pid: int, memory_mib: float, utilization: float) -> None:
    """Appear on the GPUs of CUDA_VISIBLE_DEVICES with `memory_mib` each (0: let go)."""
    mine = {int(i) for i in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if i}

    def change(doc: dict[str, Any]) -> None:
        for gpu in doc["gpus"]:
            procs = [p for p in gpu.get("processes", []) if p["pid"] != pid]
            if gpu["index"] in mine and memory_mib:
                procs.append({"pid": pid, "memory_mib": memory_mib})
            gpu["processes"] = procs
            gpu["memory_used_mib"] = sum(p["memory_mib"] for p in procs)
            if gpu["index"] in mine:
                gpu["utilization"] = utilization if memory_mib else 0

    _edit_fake_gpus(path, change)


def _swarm_up(port: int) -> bool:
    """A swarm client talks to its server at every step; a dead server fails it."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://127.0.0.1:{port}/health", timeout=2) as got:
            return b"ok" in got.read()
    except OSError:
        return False


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        below = out.get(key)
        out[key] = (
            _merge(below, value) if isinstance(below, dict) and isinstance(value, dict) else value
        )
    return out


def _composed(conf: dict[str, Any], path: Path) -> dict[str, Any]:
    """The config as AgentJet's launcher (Hydra) composes it: each `defaults:` name found as
    `<name>.yaml` in the config's folder, then in `hydra.searchpath`'s `file://` folders (from
    the working dir), merged in order; the file's own keys where `_self_` stands (else last)."""
    names = conf.pop("defaults", None)
    if not names:
        return conf
    entries = conf.get("hydra", {}).get("searchpath", [])
    folders = [path.parent, *(Path(e.removeprefix("file://")) for e in entries)]
    out: dict[str, Any] = {}
    for name in names if "_self_" in names else [*names, "_self_"]:
        if name == "_self_":
            out = _merge(out, conf)
            continue
        found = next(f / f"{name}.yaml" for f in folders if (f / f"{name}.yaml").is_file())
        out = _merge(out, _composed(yaml.safe_load(found.read_text()), found))
    return out


def _actor_tokens(conf: dict[str, Any]) -> float:
    """The tokens in one actor micro batch as verl sizes it: up to `ppo_max_token_len_per_gpu`
    (AgentJet's `ajet.rollout.` key over verl's, null there meaning `max_model_len`) under
    `use_dynamic_bsz`, else `ppo_micro_batch_size_per_gpu` sequences of 2048 tokens."""
    actor = conf.get("actor_rollout_ref", {}).get("actor", {})
    if not actor.get("use_dynamic_bsz"):
        return float(actor.get("ppo_micro_batch_size_per_gpu") or 0) * 2048
    rollout = conf.get("ajet", {}).get("rollout", {})
    if "ppo_max_token_len_per_gpu" in rollout:
        return float(rollout["ppo_max_token_len_per_gpu"] or rollout["max_model_len"])
    return float(actor["ppo_max_token_len_per_gpu"])


def _resolved(value: str, conf: dict[str, Any]) -> str:
    """`value` with its `${a.b}` and `${oc.env:X[,default]}` resolved, as Hydra gives
    AgentJet its config."""

    def one(found: re.Match[str]) -> str:
        inner = found.group(1)
        if inner.startswith("oc.env:"):
            name, _, default = inner[len("oc.env:") :].partition(",")
            return os.environ.get(name, default)
        node: Any = conf
        for part in inner.split("."):
            node = node[part]
        return str(node)

    return re.sub(r"\$\{([^${}]+)\}", one, value)


def _flood(flood: dict[str, int] | None) -> None:
    """`flood: {lines, bytes, times}`: print `times` bursts of `lines` Ray-prefixed lines of
    `bytes` bytes each (a run that prints tens of GB an hour), as fast as the pty takes them."""
    if not flood:
        return
    head = f"(TaskRunner pid={os.getpid()}, ip=10.0.0.1) "
    line = head + "x" * max(0, int(flood.get("bytes", 256)) - len(head) - 1) + "\n"
    burst = line * int(flood.get("lines", 5000))
    for _ in range(int(flood.get("times", 20))):
        sys.stdout.write(burst)
        sys.stdout.flush()


def _reward(fake: dict[str, Any], reward: float, index: int) -> float:
    """mean_reward at validation `index`: `rewards`' (see `_val_line`), else `reward`."""
    rewards = fake.get("rewards")
    if isinstance(rewards, dict):  # per trial: {"1": [...], "else": [...]}
        rewards = rewards.get(os.environ.get("AJETD_TRIAL", ""), rewards.get("else"))
    return float(rewards[min(index, len(rewards) - 1)]) if rewards else reward


def _val_line(fake: dict[str, Any], step: int, reward: float, index: int) -> str:
    """One validation record as AgentJet writes it (`str(dict)`, numpy>=2 scalars), or as
    `val_format` says: `json` (a program that writes `json.dumps(...)`: true/false/null),
    `torch` (a torch scalar and a numpy 2 string among the values, as `str(dict)` prints
    them), `object` (an object's `<... at 0x...>` repr among them: no reader can read it).
    `rewards` may be a mapping per trial (`AJETD_TRIAL`, else `else`); `second_dataset`: a
    record of `ood_val_dataset` (mean_reward 0.1) follows each, as AgentJet writes one per
    validation dataset (`target_dataset_name`). `rewards`: mean_reward at each validation in turn (the last repeats; `nan` as
    numpy's mean of an empty array prints it) instead of the climbing default."""
    reward = _reward(fake, reward, index)
    if fake.get("val_format") == "json":
        record = {"global_steps": step, "mean_reward": reward, "task_pass_rate@1": reward}
        return json.dumps({**record, "is_best": False, "note": None}) + "\n"
    extra = ""
    if fake.get("val_format") == "object":  # a value only its repr shows: no literal at all
        extra = "'sampler': <verl.Sampler object at 0x7f3a2c>, "
    if fake.get("val_format") == "torch":
        extra = "'response_length/mean': tensor(231.4000), 'data_source': np.str_('gsm8k'), "
    return (
        f"{{'global_steps': {step}, 'pass_n': 4, 'total_tasks': 1319, "
        f"'num_all_success_tasks': {int(reward * 500) if math.isfinite(reward) else 0}, {extra}"
        f"'task_pass_rate@1': {reward}, 'mean_reward': {reward}, "
        f"'std_reward': np.float64({0.5 - reward / 4}), "
        f"'target_dataset_name': 'main_val_dataset'}}\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conf", required=True)
    parser.add_argument("--autokill", action="store_true")
    parser.add_argument("--with-ray-cluster", action="store_true")
    args = parser.parse_args()
    conf = _composed(yaml.safe_load(Path(args.conf).read_text()), Path(args.conf))
    fake = conf.get("fakejet", {})
    common = conf["ajet"]["trainer_common"]
    val_path = Path(_resolved(common["val_print_to_markdown_file_path"], conf))
    val_path.parent.mkdir(parents=True, exist_ok=True)
    steps = int(fake.get("steps", 6))
    step_time = float(fake.get("step_time", 0.05))
    test_freq = int(common.get("test_freq", 2))
    with open("launches.log", "a") as launches:  # lets tests count launches exactly
        launches.write(f"{os.environ.get('AJETD_RUN_ID')} {os.environ.get('AJETD_TRIAL')}\n")
    gpu = fake.get("fake_gpu")  # {file, memory_mib, utilization}: appear on the fake GPUs
    if gpu:
        _hold_gpus(
            gpu["file"], os.getpid(), gpu.get("memory_mib", 1000), gpu.get("utilization", 90)
        )
        atexit.register(_hold_gpus, gpu["file"], os.getpid(), 0, 0)
        signal.signal(signal.SIGINT, lambda *_: sys.exit(130))  # let atexit run on Ctrl-C
        grab = gpu.get("grabbed_once")  # another user takes the GPU, vLLM then cannot start
        if grab and not Path(grab).exists():
            Path(grab).touch()
            _hold_gpus(gpu["file"], 1, 60000, 0)  # pid 1: surely not ours
            print(VLLM_MEMORY.format(pid=os.getpid()), flush=True)
            return 1
    micro = conf.get("actor_rollout_ref", {}).get("actor", {}).get("ppo_micro_batch_size_per_gpu")
    if fake.get("oom_above_micro_batch") is not None and micro > fake["oom_above_micro_batch"]:
        bar = fake.get("oom_after_bar")  # bytes of a progress bar the error ends, on its line
        oom = f"{'#' * bar} {OOM.splitlines()[-1]}" if bar else OOM
        print(oom, flush=True)  # as a too-large micro batch does on a real GPU
        return 1
    if _actor_tokens(conf) > fake.get("oom_above_actor_tokens", math.inf):
        print(OOM, flush=True)  # the actor's micro batch no longer fits
        return 1
    lr = conf.get("actor_rollout_ref", {}).get("actor", {}).get("optim", {}).get("lr")
    if fake.get("nan_above_lr") is not None and float(lr) > float(fake["nan_above_lr"]):
        # (float(): `1e-6` is text to PyYAML alone, a float to OmegaConf, as the real one reads)
        print("step:1 - actor/pg_loss:0.12 - actor/grad_norm:3.1 - actor/lr:" + str(lr))
        print("step:2 - actor/pg_loss:nan - actor/grad_norm:nan - actor/lr:" + str(lr), flush=True)
        print("ValueError: loss is nan at step 2, stopping", flush=True)
        return 1
    utilization = conf["ajet"].get("rollout", {}).get("gpu_memory_utilization")
    over = fake.get("oom_above_gpu_memory_utilization")
    if over is not None and utilization > over:
        print(OOM, flush=True)  # vLLM's cache leaves the trainer too little memory
        return 1
    room = fake.get("kv_cache_below_gpu_memory_utilization")
    if room is not None and utilization < room:
        print(KV_CACHE.format(pid=os.getpid()), flush=True)  # the weights leave no KV cache
        return 1
    fail = fake.get("fail")  # `at_step`: after that step's validation record, else at once
    if fail and any(os.environ.get(k) != str(v) for k, v in fail.get("unless_env", {}).items()):
        if fail.get("at_step") is None:
            print(fail["text"], flush=True)  # a real failure's text, e.g. from ../shared/fixtures
            return int(fail.get("exit_code", 1))
    else:
        fail = None
    asks = fake.get("prompt")
    if isinstance(asks, str):  # another program's question, e.g. `Continue? [y/N]: `
        sys.stdout.write(asks)
        sys.stdout.flush()
        print(f"answered {input()!r}", flush=True)
    elif asks and os.environ.get("WANDB_MODE") not in ("offline", "disabled", "dryrun"):
        # wandb's login menu, as it asks on a terminal without an API key (never offline)
        print("wandb: (1) Create a W&B account\nwandb: (2) Use an existing W&B account")
        print("wandb: (3) Don't visualize my results")
        sys.stdout.write("wandb: Enter your choice: ")
        sys.stdout.flush()
        print(f"wandb: answered {input()!r}", flush=True)
    if fake.get("ignore_sigint"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if fake.get("ignore_sigterm"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if fake.get("orphan"):
        subprocess.Popen(  # a detached helper, as Ray's raylet is
            [sys.executable, "-c", "import time; time.sleep(3600)"], start_new_session=True
        )
    print(
        f"(TaskRunner pid={os.getpid()}) ajet launcher: conf={args.conf} autokill={args.autokill}"
    )
    print(
        f"ray_cluster={args.with_ray_cluster} master={os.environ.get('MASTER_ADDR')} "
        f"tty={sys.stdout.isatty()} venv={os.environ.get('VIRTUAL_ENV')} "
        f"run={os.environ.get('AJETD_RUN_ID')} cwd={os.getcwd()}"
    )
    rng = random.Random(0)
    reward = 0.4
    step = 0
    validations = 0
    forever = bool(fake.get("forever"))
    swarm_port = fake.get("swarm_port")
    old = fake.get("old_agentjet")
    if old and common.get("val_before_train"):
        oldprint.validate(0, _reward(fake, reward, 0), old == "console", initial=True)
        validations += 1
    while forever or step < steps:
        step += 1
        if swarm_port and not _swarm_up(int(swarm_port)):
            print(SWARM_DOWN.format(port=swarm_port), flush=True)
            return 1
        bar = "█" * min(step, 20)
        sys.stdout.write(f"\rTraining Progress: {bar:<20}| {step}/{steps} [00:0{step % 10}<00:10]")
        sys.stdout.flush()
        time.sleep(step_time)
        _flood(fake.get("flood"))
        if not fake.get("flat"):
            reward = min(1.0, reward + rng.uniform(0.0, 0.05))
        print(
            f"\n(TaskRunner pid={os.getpid()}) step:{step}"
            f" - actor/pg_loss:{rng.uniform(-0.1, 0.1):.4f}"
            f" - critic/score/mean:{reward:.4f} - timing_s/step:{step_time:.3f}"
        )
        if step == fake.get("crash_at"):
            print(OOM, flush=True)
            return int(fake.get("exit_code", 1))
        if step % test_freq == 0 and old:
            oldprint.validate(step, _reward(fake, reward, validations), old == "console", False)
            validations += 1
        elif step % test_freq == 0:
            if fake.get("print_table"):
                oldprint.validate(step, _reward(fake, reward, validations), False, False)
            with open(val_path, "a") as handle:
                handle.write(_val_line(fake, step, reward, validations))
                if fake.get("second_dataset"):  # an ood set validated after the main one
                    line = _val_line({"rewards": [0.1]}, step, 0.1, 0)
                    handle.write(line.replace("'main_val_dataset'", "'ood_val_dataset'"))
            validations += 1
        if fail and step == fail["at_step"]:
            print(fail["text"], flush=True)
            return int(fail.get("exit_code", 1))
    hold = fake.get("hold_until")  # a file a test creates when this run may end
    while hold and not Path(hold).exists():
        time.sleep(0.02)
    if fake.get("hang"):
        print("waiting for rollout workers...", flush=True)
        while True:
            time.sleep(3600)
    print("Training finished.", flush=True)
    return int(fake.get("exit_code", 0))


if __name__ == "__main__":
    sys.exit(main())
