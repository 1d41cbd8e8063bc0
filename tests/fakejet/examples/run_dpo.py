"""`python examples/run_dpo.py --config X.yaml [key=value ...]`: prints NeMo-RL's DPO formats.

Follows the print calls of NeMo-RL's `examples/run_dpo.py` and `nemo_rl/algorithms/dpo.py`
(github.com/NVIDIA-NeMo/RL main 7ea279a, as v0.4.0 on): `🔍 Running initial validation...`
(`dpo.val_at_start`), `===== Epoch E/K =====`, then `===== Step N/M =====` with N counted
within the epoch and M = min(batches per epoch, max_num_steps) (dpo.py:584-589), a
`📊 Validation Results for `<dataset>` set:` block per validation dataset every `val_period`
steps with a `• Validation <field>: {:.4f}` bullet per DPOValMetrics field (dpo.py:509-517),
`📊 Training Results:` and `⏱️  Timing:`, and the end: `Max number of steps has been reached`
or, at the last epoch, nothing. As a terminal shows it: bold headers, and a Ray worker's line
(coloured prefix, as Ray's log monitor prints it) between a block's bullets.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import yaml

FIELDS = ("loss", "sft_loss", "preference_loss", "accuracy", "rewards_chosen_mean")
FIELDS += ("rewards_rejected_mean", "num_valid_samples", "global_valid_seqs", "global_valid_toks")
SEP = "=" * 25


def validate(step: int, datasets: list[str]) -> None:
    for i, name in enumerate(datasets):
        loss = 0.70 - 0.02 * min(step, 6) + 0.05 * i  # improves, then flat from step 6
        print(f"\n📊 Validation Results for `{name}` set:")
        for field in FIELDS:
            value = loss if field == "loss" else 0.5
            print(f"    • Validation {field}: {value:.4f}")
            if field == "accuracy":
                print("\x1b[36m(DTensorPolicyWorkerV2[rank=0] pid=4242)\x1b[0m GPU Memory after")
        print(f"\n  ⏱️  Validation Timing for `{name}` set:")
        print("    • Total validation time: 1.23s", flush=True)


def main() -> int:
    args = sys.argv[1:]
    conf = yaml.safe_load(Path(args[args.index("--config") + 1]).read_text())
    values = {a.lstrip("+").split("=", 1)[0]: a.split("=", 1)[1] for a in args if "=" in a}
    dpo, fake = conf["dpo"], conf["fake"]
    epochs = int(values.get("dpo.max_num_epochs", dpo["max_num_epochs"]))
    max_steps = int(values.get("dpo.max_num_steps", dpo["max_num_steps"]))
    period = int(values.get("dpo.val_period", dpo["val_period"]))
    batches, datasets = int(fake["batches_per_epoch"]), list(fake["val_datasets"])
    print(f"📊 Using log directory: {values.get('logger.log_dir', 'logs')}/exp_001")
    if dpo.get("val_at_start"):
        print("\n🔍 Running initial validation...")
        validate(0, datasets)
    total = 0
    for epoch in range(epochs):
        print(f"\n\x1b[1m{SEP} Epoch {epoch + 1}/{epochs} {SEP}\x1b[0m")
        for step in range(batches):
            print(f"\n{SEP} Step {step + 1}/{min(batches, max_steps)} {SEP}")
            print("▶ Taking a training step...", flush=True)
            time.sleep(0.05)
            if period > 0 and (total + 1) % period == 0:
                validate(total + 1, datasets)
            print("\n📊 Training Results:\n  • loss: 0.6000\n\n⏱️  Timing:")
            print("  • Total step time: 0.05s", flush=True)
            total += 1
            if total >= max_steps:
                print("Max number of steps has been reached, stopping training early")
                return 0
    return 0  # max_num_epochs reached: NeMo-RL says nothing


if __name__ == "__main__":
    sys.exit(main())
