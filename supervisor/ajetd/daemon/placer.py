"""Placing waiting runs on GPUs from fresh samples: this machine's (NVML or the fake) and those
of each other machine a run's host names (an SSH host's `nvidia-smi`); the decisions themselves
are `placement.plan`'s."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence

from ajetd.adapters import procs
from ajetd.core import claims, placement
from ajetd.core.errors import AjetdError
from ajetd.core.model import Run
from ajetd.daemon.gpuwatch import GpuWatch
from ajetd.daemon.slots import RunSlot
from ajetd.frameworks import gpuask
from ajetd.hosts.sshcmd import NvidiaSmiError

FOREIGN_NAMED = 32  # other processes on this machine's GPUs whose command lines are read


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


def _without_gpus(slot: RunSlot, why: str) -> placement.Decision:
    """A run on a host whose `nvidia-smi` fails: one that asks for no GPU is placed; the
    others wait, saying why (its driver may come back; a run started there now would find
    no GPU it can use)."""
    if slot.options.gpus == "0":
        return placement.Place(())
    return placement.Wait(f"{why}; its GPUs cannot be seen or used until it works")


def _ask(slot: RunSlot) -> placement.Ask:
    run = slot.run
    keys = gpuask.keys_of(run.kind)
    return placement.Ask(run.run_id, slot.options.gpus, run.gpu_ids, run.yaml_gpus, keys)


class GpuPlacer:
    def __init__(
        self,
        watch: GpuWatch,
        threshold: float,
        elsewhere: Callable[[Sequence[tuple[int, str]]], dict[str, tuple[int, ...]]] = (
            lambda _keys: {}
        ),
    ) -> None:
        self.watch = watch
        self.threshold = threshold
        # this machine's GPUs (index, `claims.gpu_key`) other daemons' live runs hold, by
        # holder: placed around as this daemon's own runs' (walk98 F6)
        self.elsewhere = elsewhere

    def decide(
        self, queue: list[RunSlot], slots: Mapping[str, RunSlot], now: float
    ) -> dict[str, placement.Decision]:
        """A decision for every waiting run at once (the queue order matters); `slots`: every
        live run's."""
        if not queue:
            return {}
        decided = self._elsewhere([s for s in queue if s.host.machine is not None], slots)
        asks = [_ask(s) for s in queue if s.run_id not in decided]
        if all(a.gpus == "0" for a in asks):
            return {**decided, **{a.run_id: placement.Place(()) for a in asks}}
        gpus = self.watch.take(now)
        active = [s.run for s in slots.values() if s.run.active]
        assigned = self.elsewhere([(g.index, claims.gpu_key(g.index, g.uuid)) for g in gpus])
        assigned.update({r.run_id: r.gpu_ids for r in active if r.gpu_ids})
        servers = {
            f"swarm_{s.options.swarm.port}"
            for s in slots.values()
            if s.run.active and s.options.swarm is not None
        }
        own = self.watch.own_pids({r.run_id for r in active} | servers)
        others = sorted({p.pid for g in gpus for p in g.processes if p.pid not in own})
        names = procs.commands(others[:FOREIGN_NAMED])  # this machine's: named in the reasons
        return {**decided, **placement.plan(asks, gpus, assigned, own, self.threshold, names)}

    def _elsewhere(
        self, queue: list[RunSlot], slots: Mapping[str, RunSlot]
    ) -> dict[str, placement.Decision]:
        """Runs on other machines, per machine, from its own sample (one call per machine)."""
        machines: dict[Hashable, list[RunSlot]] = {}
        for slot in queue:
            machines.setdefault(slot.host.machine, []).append(slot)
        out: dict[str, placement.Decision] = {}
        for machine, waiting in machines.items():
            host = waiting[0].host
            where = host.name
            try:
                gpus = host.gpus()
            except NvidiaSmiError as exc:  # GPUs there, unseen: a run needing none goes on
                out.update({s.run_id: _without_gpus(s, str(exc)) for s in waiting})
                continue
            except AjetdError as exc:
                reason = f"{where} does not answer: {exc}"
                out.update({s.run_id: placement.Wait(reason) for s in waiting})
                continue
            if gpus is None:
                out.update({s.run_id: remote_as_given(s.options.gpus, where) for s in waiting})
                continue
            assigned = {
                s.run_id: s.run.gpu_ids
                for s in slots.values()
                if s.run.active and s.run.gpu_ids and s.host.machine == machine
            }
            plan = placement.plan(
                [_ask(s) for s in waiting], gpus, assigned, frozenset(), self.threshold
            )
            out.update(plan)
        return out

    def taken(self, run: Run, live: Iterable[Run], now: float) -> str | None:
        """Why a failed run's own GPUs are not free now (other processes' memory)."""
        if not run.gpu_ids:
            return None
        gpus = self.watch.take(now)
        own = self.watch.own_pids({r.run_id for r in live if r.active})
        reasons = [
            why
            for g in gpus
            if g.index in run.gpu_ids and (why := placement.busy_reason(g, own, self.threshold))
        ]
        return "; ".join(reasons) or None
