"""What every step of the loop shares: the daemon's configuration and state, the run table,
and the guards that keep one item's failure that item's.

One rule holds the loop up: no exception from one run, one inbox file or one write ends the
daemon. Every step is guarded per item (`_each`, `_step`): an unexpected error marks its item
(a run gets `attention` with the error, a file is put aside with the reason), is logged once
with its traceback, and the loop goes on. A write refused by a full disk is held in memory and
retried (`diskfull`); nothing is reported that is not recorded.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from ajetd.adapters import diskfull, inbox
from ajetd.adapters.endwatch import Wake
from ajetd.adapters.hooks import Hooks
from ajetd.adapters.kindsfile import home_kinds
from ajetd.adapters.nvml import NoGpu
from ajetd.adapters.store import OWNER_DIR, Home
from ajetd.adapters.tmux import Tmux
from ajetd.adapters.watch import Watcher
from ajetd.core import claims, model, pathglob, placement
from ajetd.core.errors import AjetdError
from ajetd.core.model import Run, Status
from ajetd.core.options import Options
from ajetd.core.policy import Timing
from ajetd.core.writerasks import Asked
from ajetd.daemon import ending
from ajetd.daemon.campaigns import Campaigns
from ajetd.daemon.claimkeeper import ClaimKeeper
from ajetd.daemon.gpuwatch import GpuWatch
from ajetd.daemon.panetails import PaneTails
from ajetd.daemon.placer import GpuPlacer
from ajetd.daemon.slots import LIVE, Runs, RunSlot
from ajetd.diagnosis.kindset import KindSet
from ajetd.hosts import copyback, swarm
from ajetd.hosts.fs import Fs
from ajetd.hosts.places import Places
from ajetd.hosts.sshcmd import SshError
from ajetd.pictures import drawing
from ajetd.views.records import run_json

log = logging.getLogger(__name__)
HOOK_STARTED = "hook on_finish started: "  # its journal line: a restart does not fire it again


class Unadmitted(NamedTuple):
    """A blueprint claimed while a folder it needs was full, admitted once that folder takes
    writes (`Admit._admit_held`)."""

    claimed: Path  # the blueprint, in its run's folder
    source: str  # the name it came by
    folder: Path  # the full folder
    again: tuple[float, str] | None  # `Admit.accept`'s: a damaged run admitted a second time


@dataclass(frozen=True)
class DaemonConfig:
    home: Path
    tmux_socket: str | None = None
    timing: Timing = field(default_factory=Timing)
    backoff_scale: float = 1.0  # tests shrink the seed's 30 s ... 16 min schedule
    # How often tmux is asked whether panes still exist, and the longest sleep: the safety net
    # under the watchers (exits, stops and inbox drops wake the loop at once).
    liveness_s: float = 5.0
    gpu_period_s: float = 60.0  # GPU sampling for attribution and the GPU summary
    gpu_young_period_s: float = 10.0  # ... while some run is in its first 10 minutes
    gpu_free_threshold: float = placement.DEFAULT_THRESHOLD  # foreign memory share allowed
    on_finish: str = ""  # the daemon's own hooks, for every run (before the blueprint's)
    on_attention: str = ""
    hook_timeout_s: float = 60.0
    # how long after a run's end its reports wait for a full result dir before they are
    # written to the run's folder in the home instead (`ending.reports_aside`)
    reports_grace_s: float = 600.0


@dataclass
class Failures:
    """The unexpected failures of the daemon's steps: each (item, step, error) is logged with
    its traceback once; `in_pass`: one came in the loop's current pass (it then pauses)."""

    seen: set[tuple[str, str, str]] = field(default_factory=set)
    in_pass: bool = False


class Base:
    # the loop's last pass: when it began, when it ended, when its wait was to end at the latest
    last_turn: tuple[float, float, float] | None = None
    # runs whose ended trials' FIFOs may wait to be removed (`pipes.remove_idle`); None until
    # the first housekeeping looked at every run's folder (set there, per daemon)
    pipes_due: set[str] | None = None
    pipes_at = float("-inf")  # when they are next looked at
    # log folders watched since the full tick's last look at them: what their logs got
    # before the watch came brought no event, so each is looked at once (`watch_live`)
    logs_new: frozenset[str] = frozenset()
    # this machine's free GPUs kept for a waiting run (`placement.plan`), for `ajetd gpus`;
    # and as daemon.json last said
    reserved: dict[int, str]
    published_reserved: dict[int, str]
    stuck: dict[str, str]  # inbox names that could not even be put aside
    writer_asks: dict[str, Asked]  # the kernel's last answers for the inbox's files (writerasks)

    def __init__(self, cfg: DaemonConfig, clock: Callable[[], float] = time.time) -> None:
        self.cfg = cfg
        self.clock = clock
        self.home = Home(cfg.home)
        self.tmux = Tmux(cfg.tmux_socket)
        self.wake = Wake()
        self.watcher = Watcher(self.wake)
        self.runs = Runs(self._ended_record, self.home.saved)  # every run's; live ones' slots
        self.slots = self.runs.slots
        self.places = Places(self.home, cfg.liveness_s)
        self.last_liveness = 0.0
        self.began_at = clock()  # when this daemon started (a time limit it enforces late
        self.last_pass: float | None = None  # says why: its full passes, the last and the
        self.pass_before: float | None = None  # one before the current one)
        self.tmux_polled_at = float("-inf")
        self.pane_starts: dict[int, int | None] = {}  # pane pid -> its start (tmux; launches since)
        self.stop_asked: set[str] = set()  # runs with a stop request in control/
        self.problems: list[str] = []  # why nothing is taken from the inbox now
        self.refused: list[str] = []  # inbox entries not taken (links, FIFOs, foreign files)
        self.published: list[str] | None = None
        self.published_at, self.reserved, self.published_reserved = 0.0, {}, {}
        self.published_checks: dict[str, float] = {}
        self.published_unsaved: dict[str, dict[str, Any]] = {}
        # stopping; some run waits for its swarm server's /health; a second stop signal came
        # (no more waiting for the ended runs' reports: `Daemon.finish_before_stop`)
        self.stopping = self.swarm_waiting = self.stop_now = False
        self.hooks = Hooks(cfg.hook_timeout_s)
        # pictures drawn in children: mid-run ones, and the ended runs' (their reports wait)
        self.live_plots, self.finals = drawing.LivePlots(), drawing.FinalDrawings()
        self.live_growing = False  # some running trial printed during the last tick
        self.deep_batch = False  # some run's deep check is due this tick: near ones join it
        self.relaunch_due = False  # a trial ended into another: the relaunch step launches it
        self.tmux_due = False  # an end recorded in the middle of a tick asked for tmux
        self.unwatched: set[str] = set()  # live runs' folders the kernel would not watch
        self.absent: str | None = None  # what reconcile journals for each live run taken up
        self.closing: list[tuple[float, subprocess.Popen[bytes]]] = []  # kill-session clients
        # copy backs from SSH hosts under way; full disks' trial ends read from their panes
        self.copies, self.pane_tails = copyback.Children(), PaneTails(self.home, self.tmux)
        self.next_full_at = 0.0
        self.swarm = swarm.SwarmServers(self.home.swarm, self.tmux)
        # its GPUs; what other daemons on this machine see it hold (result dirs, val files, GPUs)
        self.gpus, self.claims = (
            GpuWatch(NoGpu("not probed yet"), cfg.gpu_period_s, cfg.gpu_young_period_s),
            ClaimKeeper(self.home.root),
        )
        self.placer = GpuPlacer(self.gpus, cfg.gpu_free_threshold, self.claims.gpus_held)
        self.campaigns = Campaigns(self.home)
        self.home_kinds: tuple[float, KindSet] = (-1.0, KindSet())  # kinds.yaml's mtime, kinds
        self.held = self.home.held = diskfull.Held(clock, self.home.root, cfg.backoff_scale)
        self.troubles = self.held.troubles  # full folders: the home and result dirs
        self.failures = Failures()
        self.step_full: dict[tuple[str, str], Path] = {}  # (run, step) waiting for a full folder
        self.settle_at: float | None = None  # an inbox file still settling is due then
        self.stuck, self.writer_asks = {}, {}
        self.unadmitted: dict[str, Unadmitted] = {}  # claimed while a disk was full
        # runs whose launch waits for a tmux server that did not answer: (retry at, delay)
        self.tmux_wait: dict[str, tuple[float, float]] = {}
        # damaged queued runs whose place did not answer at start, and their damaged lines
        self.readmit_later: dict[str, str] = {}
        self.readmit_asked_at = float("-inf")
        # the options of runs this daemon ended whose on_finish waits for the record
        self.finish_hooks: dict[str, Options | None] = {}

    # -- the run table ------------------------------------------------------------------------
    def held_reasons(self) -> dict[str, str]:
        """Why each blueprint claimed while a folder it needs was full waits, for `status`
        (daemon.json's `held`: the run has no record yet, and is listed as queued with it)."""
        out = {}
        for run_id, held in sorted(self.unadmitted.items()):
            full = self.troubles.line(held.folder) or f"{held.folder} did not take a write"
            out[run_id] = f"not admitted yet: {full}; admitted once it takes writes"
        return out

    def _ended_record(self, run_id: str) -> Run | None:
        """An ended run's record read again from disk (the daemon keeps only recent ones)."""
        try:
            return self.home.load_run(run_id)
        except (AjetdError, OSError) as exc:
            log.warning("run %s: its record cannot be read again: %s", run_id, exc)
            return None

    def open_slot(self, run: Run, options: Options) -> RunSlot:
        return self.runs.open(run, options, self.places.host_for(run.run_id, options))

    def _keep(self, run: Run) -> None:
        """Keep a record already saved; a run that ended leaves its slot."""
        if self.runs.put(run) is not None:
            self.live_plots.forget(run.run_id)

    def run_folder_gone(self, run_id: str, now: float) -> bool:
        """A live run's folder (`runs/<id>`) moved or removed by hand: the run is still the
        daemon's (its program runs on, its record is in memory), so the folder is made again
        and the record written there, the journal saying what happened; True when made. A
        file or link put in its place is never written through: the run is marked for
        attention, saying so, and supervised from memory until it is moved aside."""
        folder = self.home.run_dir(run_id)
        run = self.runs.get(run_id)
        if run is None or folder.is_dir():
            return False
        in_place = f"{folder} is not a folder (a file or link put in its place)"
        if os.path.lexists(folder):
            why = f"{in_place}: nothing of this run is written there; move it aside and ajetd "
            why += "makes the folder again"
            if run.attention != why:
                log.error("run %s: %s", run_id, why)
                self._keep(model.set_attention(run, why))  # on disk once it can be
            return False
        self.home.runs.mkdir(mode=OWNER_DIR, exist_ok=True)
        folder.mkdir(mode=OWNER_DIR)
        self.watcher.watch_run_again(folder)  # its trial's exit file is written here
        if run.attention is not None and run.attention.startswith(in_place):
            run = model.set_attention(run, None)  # moved aside: that is over
        self.home.save_run(run)
        self._keep(run)
        said = (
            f"the run's folder {folder} was gone (moved or removed while the run lived): made "
            "again from the daemon's memory; its journal and trial files from before are "
            "wherever it went"
        )
        log.warning("run %s: %s", run_id, said)
        self.home.append_event(run_id, now, said)
        return True

    def _store(self, run: Run) -> None:
        """Save a run's record if it changed, and keep it."""
        if self.runs.get(run.run_id) != run:
            self.home.save_run(run)
        self._keep(run)

    def session_seen(self, run: Run, session: str, now: float, ended: bool = False) -> Run:
        """The run as tmux names its session now (`session`: its pane's, found by script):
        a live run's session renamed by `tmux rename-session` takes the new name, said in
        its journal, so its attach line, reports and the session's close use it. `ended`:
        also a run whose end was just recorded (its reports are still to be written)."""
        if not (run.active or ended) or not session or session == run.session:
            return run
        said = f"tmux session {run.session} was renamed {session}: shown and attached as such"
        log.info("run %s: %s", run.run_id, said)
        self.home.append_event(run.run_id, now, said)
        return model.session_renamed(run, session)

    def gpu_keys(self, indices: tuple[int, ...]) -> list[str]:
        """This machine's GPUs `indices` as claims name them (`claims.gpu_key`: the UUID
        the last sample gave, else the index)."""
        uuids = {g.index: g.uuid for g in self.gpus.last}
        return [claims.gpu_key(i, uuids.get(i, "")) for i in indices]

    def here(self, run: Run) -> bool:
        """Whether `run` runs on this machine, whose paths this machine resolves (an SSH
        run's are another's: `core.onefile`). A run with no slot (ended, its reports being
        written) by its record: an SSH run's has its folder there."""
        slot = self.slots.get(run.run_id)
        return slot.host.machine is None if slot is not None else not run.remote_dir

    def live_slots(self) -> list[RunSlot]:
        """The runs whose trial runs or is being stopped, in the order they came."""
        return [s for s in self.slots.values() if s.run.state in LIVE]

    def _finish_now(self, run: Run, outcome: Status, reason: str, now: float) -> Run:
        """End a run whose trial never ran (or cannot run again): no exit, no processes."""
        end = ending.TrialEnd(reason, None)
        ended = ending.finish_run(self.home, run, outcome, end, now, finals=self.finals)
        self.on_finish_due(ended)
        return ended

    def on_finish_due(self, run: Run, options: Options | None = None) -> None:
        """Every end fires on_finish, also one without a trial (a rejection, a stop while
        queued, a launch that failed): once its record is on disk (`_finish_hooks`). The
        record says it is due (`finish_hook_due`); this keeps the options it ran with and
        that this daemon ended it (its hook cannot have started before)."""
        self.finish_hooks[run.run_id] = options

    def _missing(self, slot: RunSlot, paths: tuple[str, ...]) -> tuple[str, ...]:
        """Which of `paths` (relative to the codebase) do not exist where the run runs."""
        if not paths:
            return ()
        run = slot.run
        try:
            fs = slot.host.fs()
            return tuple(p for p in paths if not _present(fs, os.path.join(run.codebase_dir, p)))
        except AjetdError as exc:
            log.warning("run %s: cannot check %s: %s", run.run_id, ", ".join(paths), exc)
            return paths

    # a step of another module that this one's call
    def _start(self, slot: RunSlot, now: float) -> bool:
        raise NotImplementedError  # `launch`'s

    # -- guards: one item's failure is that item's, never the loop's --------------------------
    def _logged_once(self, item: str, step: str, exc: BaseException) -> str:
        """Log an unexpected failure with its traceback the first time it is seen (a run that
        fails the same way every tick logs once); return it as a short line."""
        text = f"{type(exc).__name__}: {exc}"
        text = text if len(text) <= 300 else text[:297] + "..."
        key = (item, step, text)
        self.failures.in_pass = True  # the loop pauses before its next pass (`Loop.turn`)
        if key in self.failures.seen:
            log.debug("%s: %s failed again: %s", item, step, text)
        else:
            if len(self.failures.seen) >= 1000:  # bounded: old ones may be logged again
                self.failures.seen.clear()
            self.failures.seen.add(key)
            log.error("%s: %s failed: %s", item, step, text, exc_info=exc)
        return text

    @contextlib.contextmanager
    def _step(self, item: str, step: str) -> Iterator[None]:
        """A step that has no run or file of its own: logged once, the loop goes on."""
        try:
            yield
        except Exception as exc:  # the loop's guard: logged with its traceback
            self._logged_once(item, step, exc)

    @contextlib.contextmanager
    def _each(self, run_id: str, step: str) -> Iterator[None]:
        """One run's part of a step: an unexpected error marks that run `attention`. A full
        disk is no internal error: the folder is shown full in status and the step, tried
        again at each tick, goes on once it takes the write (the line then goes)."""
        try:
            yield
        except OSError as exc:
            if isinstance(exc, FileNotFoundError) and self._folder_went(run_id):
                return  # made again; the step is tried at the next tick
            if not diskfull.is_full(exc):
                self._unexpected(run_id, step, exc)
                return
            folder = Path(exc.filename).parent if exc.filename else self.home.root
            self.troubles.hit(folder, exc, f"a folder run {run_id} needs")
            self.step_full[(run_id, step)] = folder
        except Exception as exc:  # the loop's guard: logged with its traceback
            self._unexpected(run_id, step, exc)
        else:
            if self.step_full:
                self._full_step_done(run_id, step)

    def _folder_went(self, run_id: str) -> bool:
        """Whether a step's write met its live run's folder gone (moved or removed by hand
        between the pass's look and the write): the folder is made again here, as the pass
        would (`run_folder_gone`), and no internal error is said. Marked for attention, a
        `wait` in flight exited 2 while the run went on (test_run_folder_gone, at load 7)."""
        if run_id not in self.runs or os.path.lexists(self.home.run_dir(run_id)):
            return False
        self.run_folder_gone(run_id, self.clock())
        return True

    def _full_step_done(self, run_id: str, step: str) -> None:
        """A step that waited for a full folder went through (and runs that ended wait no
        more): a folder no step waits for is no longer shown full (but the home while writes
        of its own are held: those clear it)."""
        live = {r.run_id for r in self.runs.live()}
        before = set(self.step_full.values())
        self.step_full = {
            key: folder
            for key, folder in self.step_full.items()
            if key != (run_id, step) and key[0] in live
        }
        for folder in before - set(self.step_full.values()):
            if folder != self.home.root or not self.held.count():
                self.troubles.clear(folder)

    def _unexpected(self, run_id: str, step: str, exc: Exception) -> None:
        """The run marked `attention` for an error its step did not expect (logged once)."""
        text = self._logged_once(f"run {run_id}", step, exc)
        run = self.runs.get(run_id)
        # a host that stops answering is no fault of ajetd's: said as such; tried each tick
        what = "its SSH host did not answer" if isinstance(exc, SshError) else "internal error"
        why = f"{what} while {step}: {text}"
        if run is not None and run.attention != why:
            with self._step(f"run {run_id}", "marking it for attention"):
                now = self.clock()
                self.home.append_event(run_id, now, f"attention: {why}")
                self._store(model.set_attention(run, why))
                self._hook(self.runs[run_id], "on_attention", now)

    # -- hooks and user kinds -----------------------------------------------------------------
    def _finish_hooks(self, now: float) -> None:
        """on_finish hooks of ended runs whose record is on disk: a hook never reports an end
        that a full home has not let ajetd record yet. The record says the hook is due until
        it fired (`finish_hook_due`), so one a daemon killed in between never fired is fired
        by the next (walk87 F1); where the journal says it started already (killed after
        that, before the record), it is not fired again."""
        for run in self.runs.unsettled_runs():
            if not run.finish_hook_due or not self.home.saved(run.run_id):
                continue
            ours = run.run_id in self.finish_hooks
            options = self.finish_hooks.pop(run.run_id, None)
            with self._each(run.run_id, "firing its on_finish hook"):
                if ours or not self._finish_hook_started(run):
                    self._hook(run, "on_finish", now, options)
                self._store(replace(run, finish_hook_due=False))

    def _finish_hook_started(self, run: Run) -> bool:
        """Whether the run's journal has its on_finish hook started (a daemon killed between
        that line and the record's save; a run ends once, so any such line is its end's). A
        journal that cannot be read says no: a hook fired twice is better than an end nobody
        is told of."""
        try:
            events = self.home.events(run.run_id)
        except ValueError:
            return False
        return any(text.startswith(HOOK_STARTED) for _, text in events)

    def _hook(self, run: Run, name: str, now: float, options: Options | None = None) -> None:
        """The daemon's hook for this event, then the blueprint's; each once."""
        if options is None:
            slot = self.slots.get(run.run_id)
            options = slot.options if slot else inbox.stored_options(self.home, run.run_id)
        for command in (getattr(self.cfg, name), getattr(options, name)):
            if command:
                self.home.append_event(run.run_id, now, f"hook {name} started: {command}")
                self.hooks.fire(self.home.run_dir(run.run_id), name, command, run_json(run, now))

    def _kinds(self, slot: RunSlot) -> KindSet:
        """User-defined kinds for a run: its blueprint's, then `$AJETD_HOME/kinds.yaml`'s
        (read again when the file changes; a file with problems is logged and not used)."""
        path = self.home.root / "kinds.yaml"
        try:
            mtime = path.stat().st_mtime
        except OSError:
            mtime = 0.0
        if mtime != self.home_kinds[0]:
            kinds, problems = home_kinds(self.home.root)
            for problem in problems:
                log.warning("user kinds: %s (its kinds are not used)", problem)
            self.home_kinds = (mtime, KindSet(kinds))
        own = KindSet(slot.options.kinds) if slot.options.kinds else KindSet()
        return own + self.home_kinds[1]


def _present(fs: Fs, path: str) -> bool:
    """A stage's path is there: as written, or (a glob, `saved/ckpt_*`) matched by one."""
    return fs.matches(path) if pathglob.is_glob(path) else fs.exists(path)
