"""This machine: the pane runs the program itself. The other places build on it."""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path

from ajetd.adapters import git, procs
from ajetd.adapters.store import Home
from ajetd.core.gpuuse import GpuSample
from ajetd.core.model import Run
from ajetd.core.runparts import Provenance
from ajetd.core.trialscript import TrialSpec
from ajetd.hosts.base import Poller, read_local
from ajetd.hosts.fs import LOCAL, Fs


class LocalHost:
    """A trial in a pane here: signals go to its process tree (`procs`), files are read here,
    nothing is left to clean up but processes (`trials.reap_leftovers`)."""

    poller: Poller | None = None
    pane_tells = True
    root_kinds: tuple[str, ...] = ()
    machine: Hashable | None = None
    name = "this machine"

    def __init__(self, home: Home) -> None:
        self.home = home

    def gpus(self) -> list[GpuSample] | None:
        return None  # this machine's are the daemon's own samples

    def prepare(self, run: Run, spec: TrialSpec, log: Path) -> tuple[Run, TrialSpec]:
        return run, spec

    def launch(self, run: Run, now: float) -> None:
        return None

    def signal(self, run: Run, pid: int | None, name: str) -> int | None:
        return procs.signal_run(run.run_id, pid, name, run.started_at)

    def fetch(self, path: str, offset: int, limit: int) -> tuple[int, bytes] | None:
        return read_local(path, offset, limit)

    def fs(self) -> Fs:
        return LOCAL

    def notes(self, run: Run, now: float) -> Run:
        return run

    def settle(self, run: Run, now: float) -> Run:
        return run

    def signalled(self, run: Run) -> bool:
        return False

    def provenance(self, codebase_dir: str) -> tuple[Provenance, bytes]:
        return git.collect(codebase_dir)

    def end(self, run: Run, now: float, final: bool) -> None:
        return None
