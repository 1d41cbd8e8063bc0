"""A run's GPU use over time: which GPUs its processes hold, utilisation and memory; pure.

The daemon samples the GPUs (more often while a run is young) and attributes each GPU to the
run whose processes appear on it (NVML's process list matched with the run's processes), or,
where the driver lists no processes, to the run it was assigned to. Each sample folds into a
small per-GPU record on the run (`runparts.GpuTrack`, bounded: at most `MAX_IDLE` idle
stretches), from which `status` shows the latest figures and results.md a summary.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ajetd.core.durations import format_duration
from ajetd.core.runparts import GpuStats, GpuTrack
from ajetd.core.timefmt import iso

IDLE_UTIL = 5.0  # percent: at or below, a GPU does no useful work
MIN_IDLE_S = 60.0  # shorter idle stretches are not worth reporting
MAX_IDLE = 20


@dataclass(frozen=True)
class GpuProcess:
    """A process on a GPU, as the driver lists it."""

    pid: int
    memory_mib: float | None  # None where the driver does not say (e.g. in some containers)


@dataclass(frozen=True)
class GpuSample:
    """One GPU at one sample, as the driver (or `adapters.nvml`'s fake) reports it."""

    index: int
    name: str
    uuid: str
    utilization: float | None  # percent
    memory_used_mib: float | None
    memory_total_mib: float | None
    temperature_c: float | None = None
    power_w: float | None = None
    processes: tuple[GpuProcess, ...] = ()
    lost: bool = False  # fell off the bus (NVML_ERROR_GPU_IS_LOST)


@dataclass(frozen=True)
class RunGpu:
    """One GPU as one run uses it, at one sample."""

    index: int
    utilization: float | None
    memory_mib: float | None  # the run's processes' memory (or the GPU's, if not per process)
    lost: bool = False


def fold(stats: GpuStats, seen: list[RunGpu], now: float) -> GpuStats:
    """`stats` with one more sample folded in."""
    tracks = {g.index: g for g in stats.gpus}
    for gpu in seen:
        tracks[gpu.index] = _fold_one(tracks.get(gpu.index), gpu, now)
    return GpuStats(tuple(sorted(tracks.values(), key=lambda g: g.index)))


def _fold_one(track: GpuTrack | None, gpu: RunGpu, now: float) -> GpuTrack:
    rec = track if track is not None else GpuTrack(gpu.index, first_at=now)
    util = gpu.utilization or 0.0
    mem = gpu.memory_mib or 0.0
    rec = replace(
        rec,
        n=rec.n + 1,
        util_sum=rec.util_sum + util,
        mem_sum=rec.mem_sum + mem,
        util_peak=max(rec.util_peak, util),
        mem_peak=max(rec.mem_peak, mem),
        util_last=gpu.utilization,
        mem_last=gpu.memory_mib,
        last_at=now,
        lost=gpu.lost,
    )
    if util <= IDLE_UTIL:
        return rec if rec.idle_from is not None else replace(rec, idle_from=now)
    return _close_idle(rec, now) if rec.idle_from is not None else rec


def _close_idle(rec: GpuTrack, end: float) -> GpuTrack:
    start = rec.idle_from
    idle = rec.idle
    if start is not None and end - start >= MIN_IDLE_S:
        idle = (*idle, (start, end))[-MAX_IDLE:]
    return replace(rec, idle_from=None, idle=idle)


def busy(seen: list[RunGpu]) -> bool:
    """Some GPU of the run works (above the idle line) in this sample."""
    return any((g.utilization or 0.0) > IDLE_UTIL for g in seen)


def now_view(stats: GpuStats) -> list[dict[str, Any]]:
    """The latest figures per GPU, for `status --json` (JSON data: the edge)."""
    return [
        {
            "index": g.index,
            "utilization": g.util_last,
            "memory_mib": None if g.mem_last is None else round(g.mem_last),
            "lost": g.lost,
        }
        for g in stats.gpus
    ]


def short(stats: GpuStats) -> str:
    """`0:87% 61.2G 1:90% 60.8G` for the status table."""
    parts = []
    for g in stats.gpus:
        util = "?" if g.util_last is None else f"{g.util_last:.0f}%"
        mem = "?" if g.mem_last is None else f"{round(g.mem_last) / 1024:.1f}G"
        parts.append(f"{g.index}:{'LOST' if g.lost else util} {mem}")
    return " ".join(parts)


def summary(stats: GpuStats, ended_at: float | None) -> str:
    """results.md's GPU summary: mean and peak per GPU, and the idle stretches."""
    if not stats.gpus:
        return ""
    lines = [
        "| GPU | samples | mean util | peak util | mean memory | peak memory |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    idle_lines = []
    for rec in stats.gpus:
        key = rec.index
        n = max(1, rec.n)
        lost = " (lost)" if rec.lost else ""
        lines.append(
            f"| {key}{lost} | {rec.n} | {rec.util_sum / n:.0f} % | {rec.util_peak:.0f} % "
            f"| {rec.mem_sum / n / 1024:.1f} GiB | {rec.mem_peak / 1024:.1f} GiB |"
        )
        stretches = list(rec.idle)
        idle_from = rec.idle_from
        if idle_from is not None and ended_at is not None and ended_at - idle_from >= MIN_IDLE_S:
            stretches.append((idle_from, ended_at))
        for start, end in stretches:
            idle_lines.append(
                f"- GPU {key} idle (≤ {IDLE_UTIL:.0f} %) for {format_duration(end - start)} "
                f"from {iso(start)}"
            )
    if idle_lines:
        lines += ["", "Idle stretches:", "", *idle_lines]
    return "\n".join(lines)
