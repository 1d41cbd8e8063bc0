"""The one interface the daemon has to the place where a run's trials run: `Host`.

Every trial has a pane in the daemon's tmux server here: the program itself (this machine), a
follower (an SSH host, a Slurm batch job) or `srun --pty` (Slurm interactive). The pane, its
log and its exit file are the same everywhere; what differs by place is everything around the
pane: what it runs, how the program there is started, signalled, read, asked about and cleaned
up after. Those differences live behind `Host`, one implementation per place (`local`, `ssh`,
`slurmjob`); `places.Places` says which host a run gets. The daemon asks the run's host and
never which place it is, so a new place is one new module (and one line in `places`).

A swarm client is not a place: it runs here like any local trial. Its server is a gate before
the client starts and one more cause of its death (`swarm`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ajetd.adapters.regular import NotRegularError, open_regular
from ajetd.core import lines
from ajetd.core.gpuuse import GpuSample
from ajetd.core.limits import VAL_PIECE_BYTES
from ajetd.core.lines import Cursor
from ajetd.core.model import Run
from ajetd.core.runparts import Provenance
from ajetd.core.trialscript import TrialSpec
from ajetd.hosts.fs import Fs

Fetch = Callable[[str, int, int], "tuple[int, bytes] | None"]


def read_local(path: str, offset: int, limit: int) -> tuple[int, bytes] | None:
    """A file's size and at most `limit` of its bytes after `offset` (from its start if it
    shrank); None where it cannot be read or is no regular file (a FIFO at a val file's path
    would hold the loop)."""
    try:
        with open_regular(Path(path)) as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(offset if size >= offset else 0)
            return size, handle.read(limit)
    except (OSError, NotRegularError):
        return None


@dataclass(frozen=True)
class LinesRead:
    """What `read_lines` read: where reading goes on, how many lines it skipped as too long
    and where the first began; `shrunk`: the file is now shorter than where reading stood
    (truncated or replaced), so nothing was read and the reader starts over."""

    cursor: Cursor
    skipped: int = 0
    first_skipped: int | None = None
    shrunk: bool = False


def read_lines(
    fetch: Fetch,
    path: str,
    at: Cursor,
    budget: int | None,
    line_max: int,
    take: Callable[[Sequence[str]], None],
) -> LinesRead:
    """Read the complete lines of a growing file from `at` on, a piece of `VAL_PIECE_BYTES`
    at a time, each piece's lines given to `take` before the next is read (so at most one
    piece is held, however large the file), until its end or, with a `budget`, until that
    many bytes were read (the rest at the next call). A file that cannot be read now reads as
    nothing new."""
    read, skipped, first = 0, 0, None
    while budget is None or read < budget:
        got = fetch(path, at.pos, VAL_PIECE_BYTES)
        if got is None:
            break
        size, data = got
        if size < at.pos:
            return LinesRead(at, skipped, first, shrunk=True)
        piece = lines.cut(data, at, len(data) >= VAL_PIECE_BYTES, line_max)
        if piece.lines:
            take(piece.lines)
        if piece.skipped and first is None:
            first = piece.skipped[0]
        skipped += len(piece.skipped)
        at, read = piece.cursor, read + len(data)
        if not piece.more:
            break
    return LinesRead(at, skipped, first)


class Poller(Protocol):
    """One question for all the live runs of a place at once (one `squeue` for every Slurm
    run), asked on the liveness period; returns the records it changed."""

    def poll(self, runs: list[Run], now: float) -> list[Run]: ...


class Host(Protocol):
    """Where one run's trials run."""

    # Asked once per liveness period for all its place's runs together (None: nothing to ask).
    poller: Poller | None
    # Whether a live pane process proves the trial lives; if not, tmux is asked every period.
    pane_tells: bool
    # Live findings of this place that are a failed trial's root cause, before its output's.
    root_kinds: tuple[str, ...]
    # The other machine whose GPUs the run is placed on (runs with equal keys share one), or
    # None: this machine's, as the daemon samples them (NVML).
    machine: Hashable | None
    name: str  # the place, as messages name it

    def gpus(self) -> list[GpuSample] | None:
        """The GPUs of `machine` now; None where it has no `nvidia-smi`."""
        ...

    def prepare(self, run: Run, spec: TrialSpec, log: Path) -> tuple[Run, TrialSpec]:
        """The trial's script as this place runs it: `spec` is the program's, as it would run
        here; the spec returned is the pane's (the program's, a follower's or `srun`'s).
        `log`: the trial's log here."""
        ...

    def launch(self, run: Run, now: float) -> None:
        """Start the program where it runs, before its pane goes (idempotent)."""
        ...

    def signal(self, run: Run, pid: int | None, name: str) -> int | None:
        """INT, TERM or KILL to the trial's program; how many processes were sent it, None
        where the place did not answer (nothing was sent: the stop sends it again later)."""
        ...

    def fetch(self, path: str, offset: int, limit: int) -> tuple[int, bytes] | None:
        """A file of the run (its val file) where the program writes it: its size, and at
        most `limit` of its bytes after `offset` (from its start where it is shorter)."""
        ...

    def fs(self) -> Fs:
        """The file system the program sees (stage inputs and outputs)."""
        ...

    def notes(self, run: Run, now: float) -> Run:
        """What the pane noted of the place while the trial ran (dropped connections)."""
        ...

    def settle(self, run: Run, now: float) -> Run:
        """What the place knows of how the trial ended, recorded before it is diagnosed."""
        ...

    def signalled(self, run: Run) -> bool:
        """Whether the place passed a signal to the program (its exit then says so)."""
        ...

    def provenance(self, codebase_dir: str) -> tuple[Provenance, bytes]:
        """The codebase's git state where the program runs, and a dirty tree's diff."""
        ...

    def end(self, run: Run, now: float, final: bool) -> None:
        """A trial ended: clean up where it ran; `final`: the run ended too."""
        ...
