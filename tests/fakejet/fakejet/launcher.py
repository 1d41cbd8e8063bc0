"""`python -m fakejet.launcher --conf X.yaml [--autokill]`: behaves like `ajet.launcher` on a CPU.

Prints verl-style step lines and a tqdm bar redrawn with `\\r`, appends one `str(dict)` line per
validation pass to `ajet.trainer_common.val_print_to_markdown_file_path` (relative to the cwd,
numpy>=2 style `np.float64(...)` values), and can crash with a real traceback, fail with a given error
text unless an environment variable is set (as a fix would set it), hang, ignore SIGINT, leave
a detached child behind, or exit with a chosen code. Behaviour comes from the
YAML's `fakejet:` section, so a blueprint's command line stays exactly like a real one.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import yaml

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


def _swarm_up(port: int) -> bool:
    """A swarm client talks to its server at every step; a dead server fails it."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://127.0.0.1:{port}/health", timeout=2) as got:
            return b"ok" in got.read()
    except OSError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conf", required=True)
    parser.add_argument("--autokill", action="store_true")
    args = parser.parse_args()
    conf = yaml.safe_load(Path(args.conf).read_text())
    fake = conf.get("fakejet", {})
    common = conf["ajet"]["trainer_common"]
    val_path = Path(common["val_print_to_markdown_file_path"])
    val_path.parent.mkdir(parents=True, exist_ok=True)
    steps = int(fake.get("steps", 6))
    step_time = float(fake.get("step_time", 0.05))
    test_freq = int(common.get("test_freq", 2))
    with open("launches.log", "a") as launches:  # lets tests count launches exactly
        launches.write(f"{os.environ.get('AJETD_RUN_ID')} {os.environ.get('AJETD_TRIAL')}\n")
    micro = conf.get("actor_rollout_ref", {}).get("actor", {}).get("ppo_micro_batch_size_per_gpu")
    if fake.get("oom_above_micro_batch") is not None and micro > fake["oom_above_micro_batch"]:
        print(OOM, flush=True)  # as a too-large micro batch does on a real GPU
        return 1
    fail = fake.get("fail")
    if fail and any(os.environ.get(k) != str(v) for k, v in fail.get("unless_env", {}).items()):
        print(fail["text"], flush=True)  # a real failure's text, e.g. from ../shared/fixtures
        return int(fail.get("exit_code", 1))
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
        f"tty={sys.stdout.isatty()} venv={os.environ.get('VIRTUAL_ENV')} "
        f"run={os.environ.get('AJETD_RUN_ID')} cwd={os.getcwd()}"
    )
    rng = random.Random(0)
    reward = 0.4
    step = 0
    forever = bool(fake.get("forever"))
    swarm_port = fake.get("swarm_port")
    while forever or step < steps:
        step += 1
        if swarm_port and not _swarm_up(int(swarm_port)):
            print(SWARM_DOWN.format(port=swarm_port), flush=True)
            return 1
        bar = "█" * min(step, 20)
        sys.stdout.write(f"\rTraining Progress: {bar:<20}| {step}/{steps} [00:0{step % 10}<00:10]")
        sys.stdout.flush()
        time.sleep(step_time)
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
        if step % test_freq == 0:
            record = (
                f"{{'global_steps': {step}, 'pass_n': 4, 'total_tasks': 1319, "
                f"'num_all_success_tasks': {int(reward * 500)}, "
                f"'task_pass_rate@1': {reward}, 'mean_reward': {reward}, "
                f"'std_reward': np.float64({0.5 - reward / 4}), "
                f"'target_dataset_name': 'main_val_dataset'}}\n"
            )
            with open(val_path, "a") as handle:
                handle.write(record)
    if fake.get("hang"):
        print("waiting for rollout workers...", flush=True)
        while True:
            time.sleep(3600)
    print("Training finished.", flush=True)
    return int(fake.get("exit_code", 0))


if __name__ == "__main__":
    sys.exit(main())
