"""`python examples/run_grpo.py --config X.yaml [key=value ...]`: prints NeMo-RL's formats.

Follows the print formats of NeMo-RL's `examples/run_grpo.py` and `grpo_train` (see
../shared/fixtures/nemo_rl/sample_grpo_stdout.log): the log and checkpoint directories, a
`Step N/M` header per step, `📊 Validation Results:` with `• Accuracy:` every `grpo.val_period`
steps, a checkpoint folder per step, and the normal end or the save-by timeout
(`checkpointing.checkpoint_must_save_by`, here the step at which it fires). Resumes from the
last `step_N` in its checkpoint dir, as NeMo-RL does. `fake.nccl_timeout_at`: trial 1 dies at
that step of an NCCL watchdog timeout (as the fixture's log prints it); `fake.resumed_drop`:
what a resumed trial's accuracy loses (a relaunch that validates worse than before it);
`fake.step_time`: seconds a step takes (0.05).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TextIO

import yaml


class _Dressed:
    """Standard output with `dress` before each line, as a launcher or a logger puts it
    (`fake.prefix=`, `_` for a space: SkyPilot's `(head, rank=0, pid=N) `, a timestamp)."""

    def __init__(self, out: TextIO, dress: str) -> None:
        self.out, self.dress, self.at_start = out, dress, True

    def write(self, text: str) -> int:
        for part in text.splitlines(keepends=True):
            self.out.write(self.dress + part if self.at_start else part)
            self.at_start = part.endswith("\n")
        return len(text)

    def flush(self) -> None:
        self.out.flush()


def main() -> int:
    args = sys.argv[1:]
    dress = next((a.split("=", 1)[1] for a in args if a.startswith("fake.prefix=")), "")
    if dress:
        sys.stdout = _Dressed(sys.stdout, dress.replace("_", " "))  # type: ignore[assignment]
    conf_path = args[args.index("--config") + 1]
    overrides = [a for a in args if "=" in a and not a.startswith("--")]
    values = {a.lstrip("+").split("=", 1)[0]: a.split("=", 1)[1] for a in overrides}
    conf = yaml.safe_load(Path(conf_path).read_text())
    with open("launches.log", "a") as launches:
        launches.write(f"{os.environ.get('AJETD_RUN_ID')} {os.environ.get('AJETD_TRIAL')}\n")
    steps = int(values.get("grpo.max_num_steps", conf["grpo"]["max_num_steps"]))
    period = int(values.get("grpo.val_period", conf["grpo"]["val_period"]))
    timeout_at = int(values.get("checkpointing.checkpoint_must_save_by", "0") or 0)
    log_dir = values.get("logger.log_dir", conf["logger"]["log_dir"])
    ckpt = Path(values.get("checkpointing.checkpoint_dir", conf["checkpointing"]["checkpoint_dir"]))
    # (`fake.oom_above_micro`: a CUDA OOM after the first step while the micro batch is larger)
    micro = int(conf.get("policy", {}).get("train_micro_batch_size", 1))
    fake = conf.get("fake", {})
    # (`fake.oom_above_mb_tokens`: the same while sequence packing's token budget is larger)
    packing = conf.get("policy", {}).get("sequence_packing") or {}
    mb_tokens = int(packing.get("train_mb_tokens", 0)) if packing.get("enabled") else 0
    too_big = micro > int(fake.get("oom_above_micro", micro)) or (
        mb_tokens > int(fake.get("oom_above_mb_tokens", mb_tokens))
    )
    first = os.environ.get("AJETD_TRIAL") == "1"
    flat = values.get("fake.flat") == "1"  # (`fake.flat=1`: an accuracy that never improves)
    if values.get("fake.fail_with"):  # (`fake.fail_with=LOG`: print that log and exit 1)
        print(Path(values["fake.fail_with"]).read_text(), end="", flush=True)
        return 1
    if values.get("fake.replay"):  # (`fake.replay=SHAPE`: print a metric shape, exit 0)
        text = Path(values["fake.replay"]).read_bytes().decode("utf-8")
        sys.stdout.buffer.write(text[text.index("\n") + 1 :].encode("utf-8"))
        sys.stdout.flush()
        return 0
    print(f"Loaded configuration from: {conf_path}")
    print(f"Overrides: {overrides}")
    print(f"policy.train_micro_batch_size={micro}")
    if mb_tokens:
        print(f"policy.sequence_packing.train_mb_tokens={mb_tokens}")
    print(f"📊 Using log directory: {log_dir}/exp_001")
    print(f"📊 Using checkpoint directory: {ckpt}")
    print(f"wandb_enabled={values.get('logger.wandb_enabled', 'default')}")
    done = [int(p.name.split("_")[1]) for p in ckpt.glob("step_*")] if ckpt.exists() else []
    start = max(done, default=0)
    if start:
        print(f"Resuming from checkpoint step {start}")
    print("========================= Epoch 1/1 =========================")
    for step in range(start + 1, steps + 1):
        print(f"\n========================= Step {step}/{steps} =========================")
        print("▶ Preparing batch...", flush=True)
        for _ in range(int(values.get("fake.flood", "0"))):  # (`fake.flood=N`: N bursts of
            # 5000 Ray-prefixed 256-byte lines a step, a run printing tens of GB an hour)
            sys.stdout.write(f"(TaskRunner pid={os.getpid()}, ip=10.0.0.1) {'x' * 217}\n" * 5000)
            sys.stdout.flush()
        time.sleep(float(fake.get("step_time", 0.05)))
        if step % period == 0:
            print(f"▶ Starting validation at step {step}...\n")
            print("📊 Validation Results:")
            drop = 0.0 if first else float(fake.get("resumed_drop", 0.0))
            accuracy = 0.30 + (0 if flat else 0.02 * step) - drop
            if values.get("fake.table") == "1":  # (`fake.table=1`: a shape ajetd does not read)
                print(f"| Metric | Value |\n|---|---|\n| Accuracy | {accuracy:.4f} |\n")
                continue
            if values.get("fake.percent") == "1":  # (`fake.percent=1`: `• Accuracy: 36.00%`)
                print(f"    • Accuracy: {accuracy * 100:.2f}%")
            else:
                print(f"    • Accuracy: {accuracy:.4f}")
            print("    • Average response length: 231.4 tokens")
            print("    • Samples processed: 256\n")
            print("  ⏱️  Validation Timing:")
            print("    • Total validation time: 14.87s", flush=True)
        if first and step == fake.get("nccl_timeout_at"):
            print(
                f"(WorkerDict pid=231421) [rank1]:[E314 14:33:45.172185860 ProcessGroupNCCL.cpp"
                f":607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum="
                f"{step}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
                "600009 milliseconds before timing out.",
                file=sys.stderr,
                flush=True,
            )
            return 1
        (ckpt / f"step_{step}").mkdir(parents=True, exist_ok=True)
        if too_big:
            print("Traceback (most recent call last):", file=sys.stderr)
            print('  File "nemo_rl/algorithms/grpo.py", line 812, in grpo_train', file=sys.stderr)
            print(
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 "
                "has a total capacity of 79.10 GiB of which 1.02 GiB is free.",
                file=sys.stderr,
                flush=True,
            )
            return 1
        if step == timeout_at:
            print("Timeout has been reached, stopping training early", flush=True)
            return 0
    print("Max number of steps has been reached, stopping training early")
    print("🛑 Shutting down environment OpenMathInstruct-2...", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
