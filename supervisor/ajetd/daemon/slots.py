"""One slot per live run: its record and everything the daemon keeps to supervise it (options,
host, deep-check backoff, live scanner, pane, timers). Every run's record is in `Runs`: a live
run's in its slot, an ended run's beside them (reports, session keep time and campaigns still
read it). Finishing a run drops its slot, and with it all that was kept for it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from ajetd.adapters.store import Home
from ajetd.adapters.tmux import Pane
from ajetd.core.backoff import Backoff
from ajetd.core.model import Run, State
from ajetd.core.options import Options
from ajetd.daemon import trials
from ajetd.diagnosis.live import LiveScans
from ajetd.hosts.base import Host

LIVE = (State.RUNNING, State.STOPPING)  # a trial runs, or is being stopped


@dataclass
class RunSlot:
    run: Run
    options: Options
    host: Host
    backoff: Backoff | None = None  # its deep checks (val file, pictures); None until it starts
    live: LiveScans = field(default_factory=LiveScans)  # its output read as it comes
    gpu_busy_at: float | None = None  # the last GPU sample that saw its GPUs busy
    pane: tuple[int, Pane] | None = None  # (trial, its pane) as tmux listed it last
    due_at: float | None = None  # when it next needs a full look (its own timers)
    supervised_at: float = float("-inf")  # when it last had one
    dead_since: float | None = None  # its pane seen dead without an exit status since
    # (trial, its log's size, when the daemon's clock saw that size first): the hang rule's
    # silence, measured on the injected clock, not the file system's
    output_seen: tuple[int, int, float] | None = None
    _paths: tuple[int, trials.RunPaths] | None = None

    @property
    def run_id(self) -> str:
        return self.run.run_id

    def paths(self, home: Home) -> trials.RunPaths:
        """The current trial's file paths (built once: pathlib is costly at 50 runs a tick)."""
        trial = self.run.trial
        assert trial is not None
        if self._paths is None or self._paths[0] != trial.number:
            self._paths = (trial.number, trials.paths(home, self.run, trial.number))
        return self._paths[1]

    def current_pane(self) -> Pane | None:
        """The current trial's pane, as tmux listed it last (None: not listed since it began)."""
        trial = self.run.trial
        if trial is None or self.pane is None or self.pane[0] != trial.number:
            return None
        return self.pane[1]

    def step_times(self) -> tuple[float, ...]:
        trial = self.run.trial
        return self.live.step_times((self.run_id, trial.number)) if trial else ()


class Runs(Mapping[str, Run]):
    """Every run's record by id: live runs' in their slots, ended runs' in `ended`."""

    def __init__(self) -> None:
        self.slots: dict[str, RunSlot] = {}
        self.ended: dict[str, Run] = {}
        # ended runs with something left to do (reports to write, a session to close): what
        # housekeeping looks at each tick, not every run the home ever held
        self.unsettled: set[str] = set()

    def __getitem__(self, run_id: str) -> Run:
        slot = self.slots.get(run_id)
        return slot.run if slot is not None else self.ended[run_id]

    def __contains__(self, run_id: object) -> bool:
        return run_id in self.slots or run_id in self.ended

    def __iter__(self) -> Iterator[str]:
        yield from self.slots
        yield from self.ended

    def __len__(self) -> int:
        return len(self.slots) + len(self.ended)

    def open(self, run: Run, options: Options, host: Host) -> RunSlot:
        """A slot for a live run (admitted, or found live after a restart)."""
        self.ended.pop(run.run_id, None)
        self.unsettled.discard(run.run_id)
        slot = self.slots[run.run_id] = RunSlot(run, options, host)
        return slot

    def put(self, run: Run) -> RunSlot | None:
        """Keep the run's new record; a run that ended leaves its slot (returned)."""
        slot = self.slots.get(run.run_id)
        if slot is not None and run.active:
            slot.run = run
            return None
        self.ended[run.run_id] = run
        if run.reports_pending or (run.session and not run.session_closed):
            self.unsettled.add(run.run_id)
        else:
            self.unsettled.discard(run.run_id)
        return self.slots.pop(run.run_id, None)

    def unsettled_runs(self) -> list[Run]:
        """The ended runs with reports still to write or a session still open."""
        return [self.ended[run_id] for run_id in sorted(self.unsettled)]
