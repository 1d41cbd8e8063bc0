"""The daemon's eyes on the GPUs: one sample serves placement, attribution and hang rules.

A sample is taken when a run waits for GPUs and on a timer (every `young_period_s` while some
run is in its first minutes, when most failures and idle GPUs show, else every `period_s`).
Each GPU process is matched to a run by the `AJETD_RUN_ID` it was started with, which
survives Ray and vLLM leaving the process tree.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ajetd.adapters import procs
from ajetd.adapters.nvml import GpuProbe
from ajetd.core.finding import GPU_LOST, Finding
from ajetd.core.gpuuse import GpuSample, RunGpu
from ajetd.core.model import Run

__all__ = ["GPU_LOST", "GpuWatch", "lost_finding"]
log = logging.getLogger(__name__)
YOUNG_S = 600.0  # a run younger than this is sampled more often
FRESH_S = 1.0  # a sample this recent serves the runs' timer too (not taken twice)
XID_FALLEN_OFF_BUS = 79


def lost_finding(evidence: str) -> Finding:
    return Finding(
        GPU_LOST,
        "fatal",
        0,
        evidence,
        "A GPU of this run fell off the bus or reported a critical Xid error.",
        "Check `nvidia-smi` and the kernel log (dmesg | grep -i xid); the GPU usually needs a "
        "reset or the node a reboot. Relaunch on other GPUs (`[ajetd] gpus`).",
    )


@dataclass
class GpuWatch:
    probe: GpuProbe
    period_s: float = 60.0
    young_period_s: float = 10.0
    last: list[GpuSample] = field(default_factory=list)
    owner: dict[int, str] = field(default_factory=dict)  # GPU pid -> AJETD_RUN_ID
    xids: dict[int, list[int]] = field(default_factory=dict)  # GPU index -> Xids seen
    sampled_at: float = float("-inf")  # the last sample, for whatever need
    # the last one folded into the running runs (their timer's: placement's samples, taken at
    # every pass while a run waits for GPUs, must not put it off for ever)
    folded_at: float = float("-inf")

    def take(self, now: float) -> list[GpuSample]:
        """A fresh sample (and the Xid events since the last), with process owners."""
        self.last = self.probe.sample()
        for index, xid in self.probe.xid_events():
            log.warning("GPU %d: Xid %d", index, xid)
            self.xids.setdefault(index, []).append(xid)
        pids = {p.pid for g in self.last for p in g.processes}
        self.owner = procs.owners(pids) if pids else {}
        self.sampled_at = now
        return self.last

    def next_at(self, runs: list[Run], now: float) -> float | None:
        """When the running runs' next timed sample is due (None: no GPU, or no running
        run), counted from the last one folded into them."""
        started = [r.started_at for r in runs if r.started_at is not None]
        if (not self.last and self.sampled_at > float("-inf")) or not started:
            return None
        young = any(now - t < YOUNG_S for t in started)
        return self.folded_at + (self.young_period_s if young else self.period_s)

    def timed(self, now: float) -> list[GpuSample]:
        """The running runs' sample: the one placement took this second, else a new one."""
        if now - self.sampled_at > FRESH_S:
            self.take(now)
        self.folded_at = now
        return self.last

    def own_pids(self, owners: set[str]) -> frozenset[int]:
        """GPU processes of the given owners (run ids, `swarm_<port>`)."""
        return frozenset(pid for pid, who in self.owner.items() if who in owners)

    def of_run(self, run: Run) -> list[RunGpu]:
        """The GPUs the run's processes are on, with their memory; else the GPUs it was
        placed on, with the whole GPU's figures (the driver listed no processes)."""
        seen = []
        for gpu in self.last:
            mine = [p for p in gpu.processes if self.owner.get(p.pid) == run.run_id]
            if mine:
                memory = sum(p.memory_mib or 0.0 for p in mine)
                seen.append(RunGpu(gpu.index, gpu.utilization, memory, self._lost(gpu)))
            elif run.gpu_ids and gpu.index in run.gpu_ids and not gpu.processes:
                seen.append(RunGpu(gpu.index, gpu.utilization, gpu.memory_used_mib, gpu.lost))
        return seen

    def missing(self, run: Run) -> tuple[int, ...]:
        """The GPUs the run was placed on that the driver no longer lists, while it lists
        others (fallen off the bus and the driver reloaded, the container's view cut): lost,
        never shown with their last figures as current (walk87 F13)."""
        listed = {gpu.index for gpu in self.last}
        if not listed:  # no sample at all: nothing is known of any GPU
            return ()
        return tuple(i for i in run.gpu_ids or () if i not in listed)

    def _lost(self, gpu: GpuSample) -> bool:
        return gpu.lost or XID_FALLEN_OFF_BUS in self.xids.get(gpu.index, [])

    def lost_evidence(self, run: Run) -> str | None:
        """Why a GPU of the run is lost (fallen off the bus, or a Xid 79), or None."""
        indices = set(run.gpu_ids or ()) | {g.index for g in self.of_run(run)}
        for gpu in self.last:
            if gpu.index in indices and self._lost(gpu):
                xids = self.xids.get(gpu.index, [])
                note = f"; Xid {', '.join(map(str, xids))}" if xids else ""
                what = " ".join(x for x in (gpu.name, gpu.uuid) if x)
                return f"GPU {gpu.index} ({what}) fell off the bus{note}"
        return None
