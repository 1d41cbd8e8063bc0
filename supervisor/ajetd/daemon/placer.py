"""Placing waiting runs on GPUs from fresh samples: this machine's (NVML or the fake) and
each SSH host's (`nvidia-smi`); the decisions themselves are `placement.plan`'s."""

from __future__ import annotations

from collections.abc import Mapping

from ajetd.core import placement
from ajetd.core.errors import AjetdError
from ajetd.core.hostspecs import SshSpec
from ajetd.core.model import Run
from ajetd.core.options import Options
from ajetd.daemon.gpuwatch import GpuWatch
from ajetd.hosts import sshcmd


def remote_as_given(gpus: str, host: str) -> placement.Decision:
    """A run on a host without `nvidia-smi`: names and `all` as given; a count cannot be met."""
    if gpus == "all":
        return placement.Place(None)
    if gpus == "0":
        return placement.Place(())
    if gpus.startswith("["):
        return placement.Place(tuple(int(i) for i in gpus.strip("[]").split(",")))
    return placement.Never(
        f"gpus: {gpus}: {host} has no nvidia-smi, so ajetd cannot see or choose its GPUs; "
        "name them (gpus: [0, 1]) or take them all (gpus: all)"
    )


class GpuPlacer:
    def __init__(self, watch: GpuWatch, threshold: float) -> None:
        self.watch = watch
        self.threshold = threshold

    def decide(
        self,
        queue: list[Run],
        runs: Mapping[str, Run],
        options: Mapping[str, Options],
        now: float,
    ) -> dict[str, placement.Decision]:
        """A decision for every waiting run at once (the queue order matters)."""
        if not queue:
            return {}
        decided = self._remote([r for r in queue if options[r.run_id].ssh], runs, options)
        asks = [
            placement.Ask(r.run_id, options[r.run_id].gpus, r.gpu_ids, r.yaml_gpus)
            for r in queue
            if r.run_id not in decided
        ]
        if all(a.gpus == "0" for a in asks):
            return {**decided, **{a.run_id: placement.Place(()) for a in asks}}
        gpus = self.watch.take(now)
        active = [r for r in runs.values() if r.active]
        assigned = {r.run_id: r.gpu_ids for r in active if r.gpu_ids}
        servers = {
            f"swarm_{o.swarm.port}"
            for r in active
            if (o := options.get(r.run_id)) is not None and o.swarm is not None
        }
        own = self.watch.own_pids({r.run_id for r in active} | servers)
        return {**decided, **placement.plan(asks, gpus, assigned, own, self.threshold)}

    def _remote(
        self, queue: list[Run], runs: Mapping[str, Run], options: Mapping[str, Options]
    ) -> dict[str, placement.Decision]:
        """Runs on remote hosts, per host, from its `nvidia-smi` (one call per host)."""
        hosts: dict[SshSpec, list[Run]] = {}
        for run in queue:
            spec = options[run.run_id].ssh
            assert spec is not None
            hosts.setdefault(spec, []).append(run)
        out: dict[str, placement.Decision] = {}
        for spec, waiting in hosts.items():
            try:
                gpus = sshcmd.gpus(spec)
            except AjetdError as exc:
                reason = f"{spec.target} does not answer: {exc}"
                out.update({r.run_id: placement.Wait(reason) for r in waiting})
                continue
            if gpus is None:
                out.update(
                    {
                        r.run_id: remote_as_given(options[r.run_id].gpus, spec.target)
                        for r in waiting
                    }
                )
                continue
            asks = [
                placement.Ask(r.run_id, options[r.run_id].gpus, r.gpu_ids, r.yaml_gpus)
                for r in waiting
            ]
            assigned = {
                r.run_id: r.gpu_ids
                for r in runs.values()
                if r.active and r.gpu_ids and options[r.run_id].ssh == spec
            }
            out.update(placement.plan(asks, gpus, assigned, frozenset(), self.threshold))
        return out

    def taken(self, run: Run, runs: Mapping[str, Run], now: float) -> str | None:
        """Why a failed run's own GPUs are not free now (other processes' memory)."""
        if not run.gpu_ids:
            return None
        gpus = self.watch.take(now)
        own = self.watch.own_pids({r.run_id for r in runs.values() if r.active})
        reasons = [
            why
            for g in gpus
            if g.index in run.gpu_ids and (why := placement.busy_reason(g, own, self.threshold))
        ]
        return "; ".join(reasons) or None
