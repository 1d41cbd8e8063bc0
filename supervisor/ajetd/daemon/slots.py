"""One slot per live run: its record and everything the daemon keeps to supervise it (options,
host, deep-check backoff, live scanner, pane, timers). Every run's record is in `Runs`: a live
run's in its slot, an ended run's beside them (reports, session keep time and campaigns still
read it). Finishing a run drops its slot, and with it all that was kept for it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ajetd.adapters.store import Home
from ajetd.adapters.tmux import Pane
from ajetd.adapters.trialfiles import LogOf, output_log
from ajetd.adapters.trialpaths import RunPaths
from ajetd.adapters.trialpaths import paths as trial_paths
from ajetd.core.backoff import Backoff
from ajetd.core.model import Run, State
from ajetd.core.options import Options
from ajetd.diagnosis.live import LiveScans
from ajetd.frameworks import ajetout
from ajetd.hosts.base import Host

LIVE = (State.RUNNING, State.STOPPING)  # a trial runs, or is being stopped
ENDED_IN_MEMORY = 500  # ended runs kept in memory besides those with something left to do


@dataclass
class RunSlot:
    run: Run
    options: Options
    host: Host
    backoff: Backoff | None = None  # its deep checks (val file, pictures); None until it starts
    # its output read as it comes; an AgentJet run's noting where it printed what a record
    # must hold (`ajetout.MARKS`: read for records off schedule only then, `_output_moved`)
    live: LiveScans = field(default_factory=LiveScans)
    gpu_busy_at: float | None = None  # the last GPU sample that saw its GPUs busy
    pane: tuple[int, Pane] | None = None  # (trial, its pane) as tmux listed it last
    due_at: float | None = None  # when it next needs a full look (its own timers)
    supervised_at: float = float("-inf")  # when it last had one
    dead_since: float | None = None  # its pane seen dead without an exit status since
    unlisted: bool = False  # tmux lists no pane of it, yet its trial script runs (observe)
    stop_noted: str = ""  # the stop last kept on its pane while the home was full
    # (trial, its log's size, when the daemon's clock saw that size first): the hang rule's
    # silence, measured on the injected clock, not the file system's
    output_seen: tuple[int, int, float] | None = None
    metrics_read_at: float = float("-inf")  # when its metrics were last read (`_deep_check`)
    # its output holds bytes to read for records, their read held back until then
    # (`_output_moved`): a light tick comes for it then, though its output went quiet
    metrics_due_at: float | None = None
    val_size: int | None = None  # its val file's size when a change last brought a read
    _paths: tuple[int, RunPaths] | None = None
    moves_seen: tuple[int, int] | None = None  # (trial, size of its moved note) last read
    # (trial, its log's (device, inode) at the last look, None where missing), and when its
    # log's writer was last asked to check (`Observe.ask_writer_if_moved`)
    log_file_seen: tuple[int, tuple[int, int] | None] | None = None
    writer_asked_at: float = float("-inf")
    _folder: str | None = None

    def __post_init__(self) -> None:
        if self.run.kind == "agentjet":
            self.live.marks = ajetout.MARKS

    def folder(self, home: Home) -> str:
        """The run's folder, as the folder watch names it (built once: see `paths`)."""
        if self._folder is None:
            self._folder = str(home.run_dir(self.run.run_id))
        return self._folder

    @property
    def run_id(self) -> str:
        return self.run.run_id

    def paths(self, home: Home) -> RunPaths:
        """The current trial's file paths (built once: pathlib is costly at 50 runs a tick)."""
        trial = self.run.trial
        assert trial is not None
        if self._paths is None or self._paths[0] != trial.number:
            self._paths = (trial.number, trial_paths(home, self.run, trial.number))
        return self._paths[1]

    def log_of(self, home: Home) -> LogOf:
        """Where each trial's output is (`trialfiles.output_logs`): the current trial's as
        `paths` keeps it (no read of its moved note at every tick), an earlier one's asked."""

        def log(number: int) -> Path:
            trial = self.run.trial
            if trial is not None and number == trial.number:
                return self.paths(home).log
            return output_log(home, self.run, number)

        return log

    def reset_paths(self) -> None:
        """Build the paths again at their next use (the output went on elsewhere)."""
        self._paths = None

    def current_pane(self) -> Pane | None:
        """The current trial's pane, as tmux listed it last (None: not listed since it began)."""
        trial = self.run.trial
        if trial is None or self.pane is None or self.pane[0] != trial.number:
            return None
        return self.pane[1]

    def step_times(self) -> tuple[float, ...]:
        trial = self.run.trial
        return self.live.step_times((self.run_id, trial.number)) if trial else ()

    def first_step_at(self) -> float | None:
        trial = self.run.trial
        return self.live.first_step_at((self.run_id, trial.number)) if trial else None


class Runs(Mapping[str, Run]):
    """Every run's record by id: live runs' in their slots, ended runs' in `ended` while they
    have something left to do or are among the `ENDED_IN_MEMORY` most recent; the older ones
    are read again from disk when asked for (`load`), so the daemon's memory does not grow
    with every run the home ever held. One is let go only once its record is on disk
    (`on_disk`: a full home may hold the newest in memory)."""

    def __init__(
        self,
        load: Callable[[str], Run | None] | None = None,
        on_disk: Callable[[str], bool] | None = None,
    ) -> None:
        self.slots: dict[str, RunSlot] = {}
        self.ended: dict[str, Run] = {}  # in memory, least recently used first
        self.ended_ids: dict[str, None] = {}  # every ended run, in the order they came
        # ended runs with something left to do (reports to write, a session to close): what
        # housekeeping looks at each tick, not every run the home ever held
        self.unsettled: set[str] = set()
        self._load = load
        self._on_disk = on_disk

    def __getitem__(self, run_id: str) -> Run:
        slot = self.slots.get(run_id)
        if slot is not None:
            return slot.run
        run = self.ended.get(run_id)
        if run is None and run_id in self.ended_ids and self._load is not None:
            run = self._load(run_id)
            if run is not None:
                self._remember(run)
        if run is None:
            raise KeyError(run_id)
        return run

    def __contains__(self, run_id: object) -> bool:
        return run_id in self.slots or run_id in self.ended_ids

    def __iter__(self) -> Iterator[str]:
        yield from self.slots
        yield from self.ended_ids

    def __len__(self) -> int:
        return len(self.slots) + len(self.ended_ids)

    def live(self) -> list[Run]:
        """The runs not ended (each in its slot), without reading any ended one."""
        return [s.run for s in self.slots.values()] + [r for r in self.ended.values() if r.active]

    def open(self, run: Run, options: Options, host: Host) -> RunSlot:
        """A slot for a live run (admitted, or found live after a restart)."""
        self.ended.pop(run.run_id, None)
        self.ended_ids.pop(run.run_id, None)
        self.unsettled.discard(run.run_id)
        slot = self.slots[run.run_id] = RunSlot(run, options, host)
        return slot

    def put(self, run: Run) -> RunSlot | None:
        """Keep the run's new record; a run that ended leaves its slot (returned)."""
        slot = self.slots.get(run.run_id)
        if slot is not None and run.active:
            slot.run = run
            return None
        self.ended_ids[run.run_id] = None
        if run.reports_pending or run.finish_hook_due or (run.session and not run.session_closed):
            self.unsettled.add(run.run_id)
        else:
            self.unsettled.discard(run.run_id)
        self._remember(run)
        return self.slots.pop(run.run_id, None)

    def _remember(self, run: Run) -> None:
        """Keep an ended run in memory as the most recent; let the least recent settled ones
        go (their records are on disk) beyond `ENDED_IN_MEMORY`."""
        self.ended.pop(run.run_id, None)
        self.ended[run.run_id] = run
        if len(self.ended) <= ENDED_IN_MEMORY or self._load is None or self._on_disk is None:
            return
        for run_id, kept in list(self.ended.items()):
            if len(self.ended) <= ENDED_IN_MEMORY:
                break
            if run_id not in self.unsettled and not kept.active and self._on_disk(run_id):
                del self.ended[run_id]

    def unsettled_runs(self) -> list[Run]:
        """The ended runs with reports still to write, an on_finish hook still to fire or a
        session still open."""
        return [self.ended[run_id] for run_id in sorted(self.unsettled)]
