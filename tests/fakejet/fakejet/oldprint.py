"""How an AgentJet that writes no val file shows a validation (modelscope/AgentJet d20cce0,
2026-01-29, and every version before f2cf697): beast_logger's `print_dict(val_metrics,
narrow=True, header=<dataset>, mod="evaluation")`, a rich panel 50 columns wide that loguru
writes to stderr in Ray's TaskRunner actor (`(TaskRunner pid=N) ` before each line; a cell too
long for its column goes on over the next line), then, with `trainer.logger` holding `console`,
eval_dataset's own verl `step:N - key:value` line; before training, `pprint(f"Initial
validation metrics: {val_metrics}")`. The layout is beast_logger 0.1.8's as it ran for real
(tests/data/metric_shapes/ajout_table_tgc_initial.log)."""

from __future__ import annotations

import io
import os
import pprint
import sys
import time
from typing import Any

_KEY, _VALUE = 20, 19  # the columns' widths in a 50-column panel


def _ray(text: str) -> str:
    prefix = f"\x1b[36m(TaskRunner pid={os.getpid()})\x1b[0m "
    return "".join(f"{prefix}{line}\n" for line in text.split("\n"))


def _pieces(text: str, width: int) -> list[str]:
    return [text[i : i + width] for i in range(0, len(text), width)] or [""]


def table(values: dict[str, Any], title: str) -> str:
    """The panel's lines, as rich draws them for beast_logger."""
    rule = "─" * (_KEY + 2), "─" * (_VALUE + 2)
    lines = [f"╭{f' {title} '.center(48, '─')}╮", f"│ ┌{rule[0]}┬{rule[1]}┐ │"]
    for i, (key, value) in enumerate(values.items()):
        keys, shown = _pieces(str(key), _KEY), _pieces(str(value), _VALUE)
        for j in range(max(len(keys), len(shown))):
            a = keys[j] if j < len(keys) else ""
            b = shown[j] if j < len(shown) else ""
            lines.append(f"│ │ {a:<{_KEY}} │ {b:<{_VALUE}} │ │")
        last = i == len(values) - 1
        lines.append(
            f"│ {'└' if last else '├'}{rule[0]}{'┴' if last else '┼'}{rule[1]}{'┘' if last else '┤'} │"
        )
    lines.append(f"╰{'─' * 48}╯")
    return "\n".join(lines)


def validate(step: int, reward: float, console: bool, initial: bool) -> None:
    """Print one validation as AgentJet d20cce0 does (its keys: `'target dataset name'`,
    `TGC@N`, no `global_steps`)."""
    values: dict[str, Any] = {
        "target dataset name": "main_val_dataset",
        "pass_n": 4,
        "total_tasks": 1319,
        "num_all_success_tasks": int(reward * 500),
        "num_pass_n_tasks(pass@4)": int(reward * 1000),
        "TGC@1": reward,
        "TGC@4": min(1.0, reward + 0.2),
        "TGC@4-all-pass": reward / 2,
        "mean_reward": reward,
    }
    clock = time.strftime("%H:%M")
    head = f"\x1b[32m{clock}\x1b[0m | \x1b[36m    eval_dataset    \x1b[0m:\x1b[36m1051\x1b[0m | \x1b[1m"
    sys.stderr.write(_ray(f"{head}\n{table(values, 'main_val_dataset')}\n\x1b[0m"))
    sys.stderr.flush()
    if console:
        numbers = " - ".join(
            f"{k}:{pprint.pformat(v)}" for k, v in values.items() if k != "target dataset name"
        )
        sys.stdout.write(_ray(f"step:{step} - {numbers}"))
    if initial:
        said = io.StringIO()
        pprint.pprint(f"Initial validation metrics: {values}", stream=said)
        sys.stdout.write(_ray(said.getvalue().rstrip("\n")))
    sys.stdout.flush()
