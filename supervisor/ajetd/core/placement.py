"""Which GPUs each waiting run gets, or why it must wait; pure.

A GPU is free when no live run of ajetd holds it and the memory of other processes on it is at
most `threshold` of its total (AgentJet's own launcher demands 95 % free: default 0.05). A run
asks for `all` (the default: every visible GPU, exclusively, as seed 000 says), a count, a
list of indices, or `0` (CPU only: it never waits). A count takes any suitable free GPUs, at
a relaunch too (those it ran on first, while they are free); a list is pinned to its GPUs.

Queueing policy: first come, first served, in submission order, with a reservation for
whoever waits: a run that cannot start keeps the GPUs it waits for from later runs. A count
or `all` request reserves every GPU that is free now (so a large request is not starved by a
stream of small ones that keep taking GPUs as they free up); a list request reserves only the
GPUs it names, so later runs may still take the others. CPU-only runs pass by everything.
A reservation is only made while ajetd's own runs stand in the way, which end: a run that
also needs a GPU that a process outside ajetd holds (or a lost one) reserves nothing, since
nobody can say when that GPU frees; it waits, saying which GPU and which process, and later
runs may take the free GPUs meanwhile (walk87 F7: the whole queue stalled behind it, silently).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ajetd.core.gpuuse import GpuSample
from ajetd.core.model import Run
from ajetd.core.onefile import Same, as_written, same_file, spelt

DEFAULT_THRESHOLD = 0.05
NO_RESERVATION = (
    "it reserves no GPU meanwhile, as a GPU it needs is held outside ajetd (or lost), which "
    "ajetd cannot free: later runs may use the free ones"
)


@dataclass(frozen=True)
class Ask:
    """One waiting run's request, in queue order."""

    run_id: str
    gpus: str  # Options.gpus: "all", "0", a count "4", or a list "[0,1]"
    held: tuple[int, ...] | None = None  # GPUs it held (a count's relaunch prefers them)
    yaml_gpus: int | None = None  # the GPUs its config asks for (`frameworks.gpuask`), if known
    yaml_keys: str = "n_gpus_per_node x nnodes"  # the keys that count is read from


@dataclass(frozen=True)
class Place:
    """Start now on these GPUs (None: no GPU is visible and none was asked for by number:
    leave CUDA_VISIBLE_DEVICES as it is)."""

    gpus: tuple[int, ...] | None


@dataclass(frozen=True)
class Wait:
    """Not now: asked again later (`reason` says what for: GPUs busy or taken, a swarm server
    still starting); `reserves`: the free GPUs kept for it meanwhile (`plan`)."""

    reason: str
    reserves: tuple[int, ...] = ()


@dataclass(frozen=True)
class Never:
    """The request cannot be met on this machine, however long it waits."""

    reason: str


Decision = Place | Wait | Never


def foreign_mib(gpu: GpuSample, own_pids: frozenset[int]) -> float:
    """Memory on `gpu` held by processes that are not ajetd runs' (all of it when the driver
    does not say per process)."""
    used = gpu.memory_used_mib or 0.0
    own = 0.0
    for proc in gpu.processes:
        if proc.pid in own_pids:
            if proc.memory_mib is None:
                return 0.0 if len(gpu.processes) == 1 else used
            own += proc.memory_mib
    return max(0.0, used - own)


def busy_reason(
    gpu: GpuSample,
    own_pids: frozenset[int],
    threshold: float,
    commands: Mapping[int, str] | None = None,
) -> str | None:
    """Why `gpu` cannot be given to a run now, apart from ajetd's own assignments; the
    other processes by pid, and by command line where `commands` knows it."""
    if gpu.lost:
        return f"GPU {gpu.index} is lost (fell off the bus)"
    total = gpu.memory_total_mib or 0.0
    foreign = foreign_mib(gpu, own_pids)
    if total and foreign > threshold * total:
        pids = [p.pid for p in gpu.processes if p.pid not in own_pids]
        known = commands or {}
        named = [f"{pid} {known[pid][:60]}" if pid in known else str(pid) for pid in pids[:5]]
        who = f" (pids {', '.join(named)})" if pids else ""
        return (
            f"GPU {gpu.index} has {foreign / 1024:.1f} GiB of {total / 1024:.0f} GiB used by "
            f"other processes{who}; it is free at {threshold:.0%} or less"
        )
    return None


def _need(ask: Ask, visible: Sequence[int]) -> tuple[int, tuple[int, ...] | None] | str:
    """How many GPUs, and which if named; or why never."""
    if ask.gpus == "all":
        return len(visible), None
    if ask.gpus.startswith("["):
        named = tuple(int(i) for i in ask.gpus.strip("[]").split(",") if i.strip())
        missing = [i for i in named if i not in visible]
        if missing:
            return (
                f"gpus: {list(named)} names GPU {missing[0]}, which this machine does not have "
                f"(visible: {list(visible) or 'none'})"
            )
        return len(named), named
    count = int(ask.gpus)
    if count > len(visible):
        return f"gpus: {count} asks for more GPUs than this machine has ({len(visible)} visible)"
    return count, None


def _yaml_mismatch(ask: Ask, count: int) -> str | None:
    if ask.yaml_gpus is None or ask.gpus == "0" or ask.yaml_gpus == count:
        return None
    return (
        f"the YAML's {ask.yaml_keys} = {ask.yaml_gpus}, but the run gets {count} "
        f"GPU(s) (gpus: {ask.gpus}); make them agree"
    )


def never(ask: Ask, visible: Sequence[int]) -> str | None:
    """Why `ask` can never start on a machine whose GPUs are `visible`, or None: what `plan`
    decides as `Never`, for `ajetd lint` to say before the run is dropped in."""
    if ask.gpus == "0" or (not visible and ask.gpus == "all"):
        return None
    need = _sized(ask, visible)
    return need if isinstance(need, str) else None


def _sized(ask: Ask, visible: Sequence[int]) -> tuple[int, tuple[int, ...] | None] | str:
    """`_need`, and why never where the YAML's GPU count disagrees with it."""
    need = _need(ask, visible)
    if isinstance(need, str):
        return need
    return _yaml_mismatch(ask, need[0]) or need


def plan(
    queue: Sequence[Ask],
    gpus: Sequence[GpuSample],
    assigned: Mapping[str, tuple[int, ...]],
    own_pids: frozenset[int],
    threshold: float = DEFAULT_THRESHOLD,
    commands: Mapping[int, str] | None = None,
) -> dict[str, Decision]:
    """A decision for each run of `queue` (oldest first), given the GPUs as sampled now and
    the GPUs live runs hold (`assigned`: run id -> indices); `commands`: the command lines
    of other processes on them, where known, to name them."""
    visible = [g.index for g in gpus]
    taken = {i: run_id for run_id, held in assigned.items() for i in held}
    unusable = {g.index: r for g in gpus if (r := busy_reason(g, own_pids, threshold, commands))}
    reserved: dict[int, str] = {}  # GPU -> the earlier waiting run it is kept for
    out: dict[str, Decision] = {}
    for ask in queue:
        if ask.gpus == "0":
            out[ask.run_id] = Place(())
            continue
        if not visible and ask.gpus == "all":
            out[ask.run_id] = Place(None)
            continue
        need = _sized(ask, visible)
        if isinstance(need, str):
            out[ask.run_id] = Never(need)
            continue
        count, named = need
        candidates = named if named is not None else tuple(visible)
        others = {i: r for i, r in taken.items() if r != ask.run_id}
        free = [
            i for i in candidates if i not in others and i not in unusable and i not in reserved
        ]
        if len(free) >= count:
            chosen = _chosen(free, count, ask.held or ())
            out[ask.run_id] = Place(chosen)
            taken.update(dict.fromkeys(chosen, ask.run_id))
            continue
        why = _wait_reason(count, candidates, others, unusable, reserved)
        kept: tuple[int, ...] = ()
        if count <= len([i for i in candidates if i not in unusable]):  # ajetd's runs free them
            kept = tuple(i for i in candidates if i not in others and i not in reserved)
            reserved.update(dict.fromkeys(kept, ask.run_id))
        else:
            why += f"; {NO_RESERVATION}"
        out[ask.run_id] = Wait(why, kept)
    return out


def _chosen(free: Sequence[int], count: int, held: Sequence[int]) -> tuple[int, ...]:
    """`count` of the `free` GPUs for a count or `all` request: those it held already first
    (a relaunch stays where it ran while they are free), then the lowest others. A relaunch
    no longer waits for its own GPUs while others are free (walk92 F6: a `gpus: 1` run's
    relaunch after vllm_memory waited for the GPU an outside process held, the other idle);
    a list request's GPUs are its own to wait for (`candidates` are only they)."""
    return tuple(sorted(sorted(free, key=lambda i: (i not in held, i))[:count]))


def _wait_reason(
    count: int,
    candidates: Sequence[int],
    taken: Mapping[int, str],
    unusable: Mapping[int, str],
    reserved: Mapping[int, str],
) -> str:
    parts = []
    for i in candidates:
        if i in taken:
            parts.append(f"GPU {i} is held by run {taken[i]}")
        elif i in unusable:
            parts.append(unusable[i])
        elif i in reserved:
            parts.append(f"GPU {i} is reserved for run {reserved[i]}, earlier in the queue")
    return f"waiting for {count} GPU(s): " + "; ".join(parts)


def _here(run: Run) -> bool:
    """Every run on this machine: where the caller does not tell."""
    return True


def val_file_wait(
    run: Run, live: Sequence[Run], same: Same = as_written, here: Callable[[Run], bool] = _here
) -> str | None:
    """Why a run that has not started waits for its val file, or None when it may start.

    AgentJet appends every validation to one file: two runs writing it at once would each
    read the other's results as their own. A run given no file of its own (no `--conf` for a
    copy, `preflight._own_val_file`) therefore waits while another live run writes it: one
    started, or one ahead of it in the queue (first come, first served). `same`: the real
    path of the one file two paths name, None where they name two (the daemon's
    `samefile.one_file`: a symlinked codebase, a `..`, a bind mount, walk93 F1), used where
    both runs run on this machine (`here`), else paths compared as written (`core.onefile`)."""
    if run.val_path is None or run.trials:
        return None
    mine = (run.submitted_at, run.run_id)
    compare = same_file(run.val_path, same)  # its own path resolved once, not per run
    for other in live:
        if other.run_id == run.run_id or not other.val_path:
            continue
        if not other.trials and (other.submitted_at, other.run_id) > mine:
            continue
        real = compare(other.val_path, here(run) and here(other))
        if real is None:
            continue
        return (
            f"waiting for run {other.run_id} to end: it writes the same val file "
            f"{spelt(run.val_path, other.run_id, other.val_path, real)} (AgentJet appends "
            "every validation to it; the command passes no --conf for a copy that gives this "
            "run a file of its own)"
        )
    return None


def _began(run: Run) -> tuple[float, float, str]:
    first = run.trials[0].started_at if run.trials else None
    return (float("inf") if first is None else first, run.submitted_at, run.run_id)


def val_file_owner(
    run: Run, live: Sequence[Run], same: Same = as_written, here: Callable[[Run], bool] = _here
) -> tuple[Run, str] | None:
    """The live run that began first among those writing `run`'s val file, with the file's
    real path, where that is another run; None where `run` writes it alone (or first).

    Admission and the queue keep two live runs off one file (`val_file_wait`); a path whose
    file changed since (a folder swapped for a link to another run's) would still give a run
    the other's records as its own (walk93 F1, F2): read where it is written, its records
    are not taken. `same`, `here`: as `val_file_wait`'s."""
    if run.val_path is None or not run.trials:
        return None
    mine = _began(run)
    compare = same_file(run.val_path, same)  # its own path resolved once, not per run
    for other in live:
        if other.run_id == run.run_id or not other.val_path or not other.trials:
            continue
        if _began(other) >= mine:
            continue
        real = compare(other.val_path, here(run) and here(other))
        if real is not None:
            return other, real
    return None
