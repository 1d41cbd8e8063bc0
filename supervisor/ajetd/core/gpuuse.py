"""A run's GPU use over time: which GPUs its processes hold, utilisation and memory; pure.

The daemon samples the GPUs (more often while a run is young) and attributes each GPU to the
run whose processes appear on it (NVML's process list matched with the run's processes), or,
where the driver lists no processes, to the run it was assigned to. Each sample folds into a
small per-GPU record on the run (JSON-safe, bounded: at most `MAX_IDLE` idle stretches), from
which `status` shows the latest figures and results.md a summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ajetd.core.durations import format_duration
from ajetd.core.timefmt import iso

IDLE_UTIL = 5.0  # percent: at or below, a GPU does no useful work
MIN_IDLE_S = 60.0  # shorter idle stretches are not worth reporting
MAX_IDLE = 20


@dataclass(frozen=True)
class RunGpu:
    """One GPU as one run uses it, at one sample."""

    index: int
    utilization: float | None
    memory_mib: float | None  # the run's processes' memory (or the GPU's, if not per process)
    lost: bool = False


def fold(stats: Mapping[str, Any], seen: list[RunGpu], now: float) -> dict[str, dict[str, Any]]:
    """`stats` (per GPU index as a string) with one more sample folded in."""
    out = {k: dict(v) for k, v in stats.items()}
    for gpu in seen:
        rec = out.setdefault(
            str(gpu.index),
            {
                "n": 0,
                "util_sum": 0.0,
                "util_peak": 0.0,
                "mem_sum": 0.0,
                "mem_peak": 0.0,
                "first_at": now,
                "idle": [],
                "idle_from": None,
            },
        )
        util = gpu.utilization or 0.0
        mem = gpu.memory_mib or 0.0
        rec["n"] += 1
        rec["util_sum"] += util
        rec["mem_sum"] += mem
        rec["util_peak"] = max(rec["util_peak"], util)
        rec["mem_peak"] = max(rec["mem_peak"], mem)
        rec["util_last"], rec["mem_last"], rec["last_at"] = gpu.utilization, gpu.memory_mib, now
        rec["lost"] = gpu.lost
        if util <= IDLE_UTIL:
            if rec["idle_from"] is None:
                rec["idle_from"] = now
        elif rec["idle_from"] is not None:
            _close_idle(rec, now)
    return out


def _close_idle(rec: dict[str, Any], end: float) -> None:
    start = rec["idle_from"]
    rec["idle_from"] = None
    if start is not None and end - start >= MIN_IDLE_S:
        rec["idle"] = [*rec["idle"], [start, end]][-MAX_IDLE:]


def busy(seen: list[RunGpu]) -> bool:
    """Some GPU of the run works (above the idle line) in this sample."""
    return any((g.utilization or 0.0) > IDLE_UTIL for g in seen)


def now_view(stats: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The latest figures per GPU, for `status`."""
    return [
        {
            "index": int(k),
            "utilization": v.get("util_last"),
            "memory_mib": None if v.get("mem_last") is None else round(v["mem_last"]),
            "lost": bool(v.get("lost")),
        }
        for k, v in sorted(stats.items(), key=lambda kv: int(kv[0]))
    ]


def short(stats: Mapping[str, Any]) -> str:
    """`0:87% 61.2G 1:90% 60.8G` for the status table."""
    parts = []
    for g in now_view(stats):
        util = "?" if g["utilization"] is None else f"{g['utilization']:.0f}%"
        mem = "?" if g["memory_mib"] is None else f"{g['memory_mib'] / 1024:.1f}G"
        parts.append(f"{g['index']}:{'LOST' if g['lost'] else util} {mem}")
    return " ".join(parts)


def summary(stats: Mapping[str, Any], ended_at: float | None) -> str:
    """results.md's GPU summary: mean and peak per GPU, and the idle stretches."""
    if not stats:
        return ""
    lines = [
        "| GPU | samples | mean util | peak util | mean memory | peak memory |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    idle_lines = []
    for key, rec in sorted(stats.items(), key=lambda kv: int(kv[0])):
        n = max(1, rec["n"])
        lost = " (lost)" if rec.get("lost") else ""
        lines.append(
            f"| {key}{lost} | {rec['n']} | {rec['util_sum'] / n:.0f} % | {rec['util_peak']:.0f} % "
            f"| {rec['mem_sum'] / n / 1024:.1f} GiB | {rec['mem_peak'] / 1024:.1f} GiB |"
        )
        stretches = list(rec.get("idle", []))
        idle_from = rec.get("idle_from")
        if idle_from is not None and ended_at is not None and ended_at - idle_from >= MIN_IDLE_S:
            stretches.append([idle_from, ended_at])
        for start, end in stretches:
            idle_lines.append(
                f"- GPU {key} idle (≤ {IDLE_UTIL:.0f} %) for {format_duration(end - start)} "
                f"from {iso(start)}"
            )
    if idle_lines:
        lines += ["", "Idle stretches:", "", *idle_lines]
    return "\n".join(lines)
