"""The supervisor loop: one `while` whose body is a tick of named steps.

admit (inbox -> accepted or rejected runs), control (stop requests), launch (queued -> running),
observe + decide + act (each live run), housekeep (sessions past their keep time), publish
(daemon.json). Watchers only wake the loop; timers come from the policy's `next_wake`.

One rule holds the loop up: no exception from one run, one inbox file or one write ends the
daemon. Every step is guarded per item (`_each`, `_step`): an unexpected error marks its item
(a run gets `attention` with the error, a file is put aside with the reason), is logged once
with its traceback, and the loop goes on. A write refused by a full disk is held in memory and
retried (`diskfull`); nothing is reported that is not recorded.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any

from ajetd.adapters import diskfull, inbox, procs
from ajetd.adapters.hooks import Hooks
from ajetd.adapters.nvml import NoGpu, open_probe
from ajetd.adapters.preflight import LOCAL, Fs
from ajetd.adapters.store import Home, encode, write_atomic, write_in_place
from ajetd.adapters.tmux import Pane, Tmux
from ajetd.adapters.watch import Watcher
from ajetd.core import gpuuse, model, placement
from ajetd.core.backoff import Backoff
from ajetd.core.errors import AjetdError, TmuxError
from ajetd.core.finding import Finding
from ajetd.core.model import Run, State, Status
from ajetd.core.naming import RUN_ID, new_run_id
from ajetd.core.options import Options
from ajetd.core.policy import (
    Attention,
    BeginStop,
    Finish,
    NextStage,
    Observation,
    Restart,
    Send,
    Timing,
    decide,
    describe_exit,
    next_wake,
)
from ajetd.core.policy import hang_window as policy_hang_window
from ajetd.core.remedy import port_from_text
from ajetd.core.trialscript import parse_exit_file
from ajetd.daemon import admission, trials
from ajetd.daemon.campaigns import Campaigns
from ajetd.daemon.gpuwatch import GPU_LOST, GpuWatch, lost_finding
from ajetd.daemon.placer import GpuPlacer
from ajetd.diagnosis.live import LIVE_SCAN_S, LiveScans
from ajetd.diagnosis.userkinds import KindSet, home_kinds
from ajetd.hosts import slurm, sshcmd, sshremote, swarm
from ajetd.pictures import drawing
from ajetd.views.records import run_json

log = logging.getLogger(__name__)
DEAD_STATUS_WAIT_S = 0.5  # how long a dead pane may show no exit status before `lost`
DAEMON_JSON_BYTES = 4095  # one block: rewritable in place when the home is full
SWARM_POLL_S = 0.5  # how often a swarm server that is starting is asked for /health
SLURM_POLL_MAX_S = 80.0  # the longest wait between two squeue calls
TMUX_POLL_MAX_S = 60.0  # the longest wait between two `list-panes` while pane processes live
SUPERVISE_ALL_S = 60.0  # every live run is looked at in full at least this often


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


def _slurm_seen(run: Run, job: slurm.Job) -> Run:
    """What squeue says of a live job: its id, state, nodes, and a pending job's reason."""
    info = {**run.slurm, "job_id": job.job_id, "state": job.state, "nodes": job.nodes}
    info["reason"] = job.reason
    reason = f"pending in Slurm ({job.reason})" if job.state == "PENDING" else ""
    if info == run.slurm and reason == run.reason:
        return run
    return replace(run, slurm=info, reason=reason)


def _port_holder(findings: tuple[Finding, ...], run_id: str) -> str | None:
    """For a root `port_in_use` naming its port: who holds it, if not this run."""
    if not findings or findings[0].kind != "port_in_use":
        return None
    port = port_from_text(findings[0].evidence)
    return None if port is None else procs.port_holder(port, run_id)


class Daemon:
    def __init__(self, cfg: DaemonConfig, clock: Callable[[], float] = time.time) -> None:
        self.cfg = cfg
        self.clock = clock
        self.home = Home(cfg.home)
        self.tmux = Tmux(cfg.tmux_socket)
        self.wake = threading.Event()
        self.watcher = Watcher(self.wake)
        self.runs: dict[str, Run] = {}
        self.options: dict[str, Options] = {}
        self.backoffs: dict[str, Backoff] = {}
        self.panes: dict[str, Pane] = {}  # script path -> pane, refreshed every liveness_s
        self.last_liveness = 0.0
        self.tmux_polled_at = float("-inf")
        self.pane_starts: dict[int, int | None] = {}  # pane pid -> its start, as tmux listed
        # when each live run next needs a full look (its own timers), and when it had one
        self.due_at: dict[str, float] = {}
        self.supervised_at: dict[str, float] = {}
        self.stop_asked: set[str] = set()  # runs with a stop request in control/
        self.problems: list[str] = []  # why nothing is taken from the inbox now
        self.refused: list[str] = []  # inbox entries not taken (links, FIFOs, foreign files)
        self.published: list[str] | None = None
        self.published_at = 0.0
        self.published_checks: dict[str, float] = {}
        self.stopping = False
        self.live = LiveScans()
        # each trial's file paths, built once: ticks ask for them for every run, every time
        self.trial_paths: dict[tuple[str, int], trials.RunPaths] = {}
        # each trial's log size and when (daemon clock) it was seen to change: the hang rule's
        # silence, measured on the injected clock, not the file system's
        self.output_seen: dict[tuple[str, int], tuple[int, float]] = {}
        self.hooks = Hooks(cfg.hook_timeout_s)
        self.live_plots = drawing.LivePlots()
        self.live_growing = False  # some running trial printed during the last tick
        self.next_full_at = 0.0
        self.swarm = swarm.SwarmServers(self.home.swarm, self.tmux)
        self.swarm_waiting = False  # some run waits for its swarm server's /health
        self.gpus = GpuWatch(NoGpu("not probed yet"), cfg.gpu_period_s, cfg.gpu_young_period_s)
        self.placer = GpuPlacer(self.gpus, cfg.gpu_free_threshold)
        self.gpu_busy_at: dict[str, float] = {}  # run id -> last sample with a busy GPU
        self.campaigns = Campaigns(self.home)
        self.home_kinds: tuple[float, KindSet] = (-1.0, KindSet())  # kinds.yaml's mtime, kinds
        self.ssh_notes: dict[tuple[str, int], int] = {}
        self.slurm_polled_at = float("-inf")
        self.slurm_every = cfg.liveness_s  # grows while nothing changes (SLURM_POLL_MAX_S)
        self.slurm_seen: set[tuple[str, str]] = set()  # (job name, state) at the last poll
        self.held = self.home.held = diskfull.Held(clock, self.home.root, cfg.backoff_scale)
        self.troubles = self.held.troubles  # full folders: the home and result dirs
        self.failures: set[tuple[str, str, str]] = set()  # (item, step, error) logged once
        self.settle_at: float | None = None  # an inbox file still settling is due then
        self.stuck: dict[str, str] = {}  # inbox names that could not even be put aside
        self.unadmitted: dict[str, tuple[Path, str, Path]] = {}  # claimed; a disk was full
        self.dead_since: dict[str, float] = {}  # run id -> its pane seen dead without status
        self.finish_hooks: dict[str, Run] = {}  # ended runs whose on_finish waits for the record

    # -- life cycle -------------------------------------------------------------------------
    def serve(self) -> None:
        """Run until SIGTERM/SIGINT. Runs keep going in tmux after the daemon exits."""
        self.home.ensure()
        lock_fd = self.home.acquire_lock()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        log.info("ajetd daemon %d on %s (tmux %s)", os.getpid(), self.home.root, Tmux.version())
        self.gpus.probe = open_probe()
        self.campaigns.load()
        log.info("GPUs: %s", self.gpus.probe.description)
        try:
            self.reconcile(self.clock())
            self.watcher.start(
                self.home.inbox, self.home.control, (self.home.runs, self.home.swarm)
            )
            woken = True
            while not self.stopping:
                woken = self.wake.wait(self.turn(woken))
                self.wake.clear()
        finally:
            self.watcher.stop()
            stopped = {"pid": None, "stopped_at": self.clock()}
            with self._step("daemon", "saying it stopped"):
                self._write_daemon_json(stopped)
            os.close(lock_fd)
            log.info("ajetd daemon stopped; runs go on in tmux")

    def turn(self, woken: bool) -> float:
        """One pass of the loop at the clock's now: a full tick when an event woke it or a
        timer is due, else only new output is read; returns the seconds until the next pass
        (tests drive the loop with this and a fake clock, as `serve` does with real time)."""
        now = self.clock()
        full = woken or now >= self.next_full_at
        with self._step("daemon", "tick"):  # the last net: the steps guard themselves
            if full:
                self.tick(now)
            else:  # only the live-scan timer is due: read new output, nothing else
                self.scan_output(now)
        return self._sleep_for(self.clock(), full)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True
        self.wake.set()

    def _sleep_for(self, now: float, full: bool) -> float:
        """Seconds until the next tick: the earliest timer (recomputed after full ticks only),
        or the live-scan period while some running trial keeps printing."""
        if full:
            self.next_full_at = self._next_full_tick(now)
        wake_at = self.next_full_at
        if self.live_growing:  # read new output again soon: signatures are noticed in time
            wake_at = min(wake_at, now + LIVE_SCAN_S)
        return min(max(wake_at - now, 0.005), self.cfg.liveness_s)

    def _next_full_tick(self, now: float) -> float:
        wake_at = [self.last_liveness + self.cfg.liveness_s]
        dead = [t + DEAD_STATUS_WAIT_S for t in self.dead_since.values()]  # status by then
        for at in (self.settle_at, self.troubles.next_at(), min(dead, default=None)):
            if at is not None:
                wake_at.append(at)
        if self.swarm_waiting:
            wake_at.append(now + SWARM_POLL_S)
        campaign_at = self.campaigns.next_at(now)  # a deadline passing while one waits
        if campaign_at is not None:
            wake_at.append(campaign_at)
        gpu_at = self.gpus.next_at([r for r in self.runs.values() if r.state is State.RUNNING], now)
        if gpu_at is not None:
            wake_at.append(gpu_at)
        for run in self.runs.values():
            if run.state is State.RUNNING or run.state is State.STOPPING:
                opts = self.options[run.run_id]
                window = policy_hang_window(
                    opts.hang_window_s, self.cfg.timing, self._step_times(run)
                )
                quiet = [self._last_output(run, now), self.gpu_busy_at.get(run.run_id)]
                since = max((t for t in quiet if t is not None), default=None)
                t = next_wake(run, self.cfg.timing, window, since, now)
                own = [] if t is None else [t]
                if run.run_id in self.backoffs:
                    own.append(self.backoffs[run.run_id].next_at)
                wake_at += own
                self.due_at[run.run_id] = min(own, default=float("inf"))
        return min(wake_at)

    def scan_output(self, now: float) -> None:
        """The light tick: new output of running trials is diagnosed, nothing else is done."""
        self.live_growing = False
        for run in list(self.runs.values()):
            with self._each(run.run_id, "reading its output"):
                self._scan_new_output(run, now)

    def _scan_new_output(self, run: Run, now: float) -> None:
        trial = run.trial
        if run.state is State.RUNNING and trial is not None and trial.started_at is not None:
            self._live_scan(run.run_id, now, self._paths(run).log)

    def _due(self, run: Run, now: float, panes_fresh: bool) -> bool:
        """Whether a live run is looked at in full this tick: tmux was just asked about every
        pane, a moment of its own has come (time limit, a stop's next signal, its hang window,
        its deep check: `due_at`, from the last full tick), it is stopping or flagged, a stop
        was asked, or it was not looked at for `SUPERVISE_ALL_S`. Its exit needs none of
        these: an exit file wakes the loop for that run alone (`record_ends`), and a pane
        process that ended makes the liveness period ask tmux."""
        if panes_fresh or run.stop_cause is not None or run.attention is not None:
            return True
        if run.run_id in self.stop_asked:
            return True
        if now - self.supervised_at.get(run.run_id, float("-inf")) >= SUPERVISE_ALL_S:
            return True
        due = self.due_at.get(run.run_id)
        return due is None or now >= due

    # -- guards: one item's failure is that item's, never the loop's --------------------------
    def _logged_once(self, item: str, step: str, exc: BaseException) -> str:
        """Log an unexpected failure with its traceback the first time it is seen (a run that
        fails the same way every tick logs once); return it as a short line."""
        text = f"{type(exc).__name__}: {exc}"
        text = text if len(text) <= 300 else text[:297] + "..."
        key = (item, step, text)
        if key in self.failures:
            log.debug("%s: %s failed again: %s", item, step, text)
        else:
            if len(self.failures) >= 1000:  # bounded: old failures may be logged again
                self.failures.clear()
            self.failures.add(key)
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
        """One run's part of a step: an unexpected error marks that run `attention`."""
        try:
            yield
        except Exception as exc:  # the loop's guard: logged with its traceback
            text = self._logged_once(f"run {run_id}", step, exc)
            run = self.runs.get(run_id)
            why = f"internal error while {step}: {text}"
            if run is not None and run.attention != why:
                with self._step(f"run {run_id}", "marking it for attention"):
                    now = self.clock()
                    self.home.append_event(run_id, now, f"attention: {why}")
                    self._store(model.set_attention(run, why))
                    self._hook(self.runs[run_id], "on_attention", now)

    # -- the tick ---------------------------------------------------------------------------
    def tick(self, now: float) -> None:
        self.live_growing = False
        ask_tmux = self.record_ends(now)
        with self._step("disk", "writing what a full disk held back"):
            self.held.retry()
            self._finish_hooks(now)
        self.retry_reports(now)
        with self._step("inbox", "admitting blueprints"):
            self.admit(now)
        with self._step("campaigns", "claiming campaign folders"):
            self.campaigns.claim(now)
        with self._step("control", "taking stop requests"):
            self.control(now)
        with self._step("launch", "placing waiting runs"):
            self.launch(now)
        ended = ask_tmux  # exit files were taken by record_ends, tmux has nothing to add
        self.watcher.trial_end.clear()
        fresh = False
        with self._step("tmux", "listing panes"):
            recheck = any(now >= t + DEAD_STATUS_WAIT_S for t in self.dead_since.values())
            fresh = self.refresh_panes(now, force=ended or recheck)
        live = (State.RUNNING, State.STOPPING)
        for run_id in [r for r, run in self.runs.items() if run.state in live]:
            with self._each(run_id, "supervising it"):
                if self._due(self.runs[run_id], now, fresh):
                    self.supervise(run_id, now, fresh)
                    self.supervised_at[run_id] = now
                else:  # nothing of its own is due: only its new output is read
                    self._scan_new_output(self.runs[run_id], now)
        with self._step("campaigns", "advancing campaigns"):  # after supervision: a row as
            self.campaigns.tick(now, self.runs)  # soon as a run ends
        with self._step("gpus", "sampling GPUs"):
            self.sample_gpus(now)
        with self._step("housekeeping", "closing old sessions"):
            self.housekeep(now)
        with self._step("hooks", "reaping hooks"):
            self.hooks.reap()
        with self._step("plots", "reaping plot drawers"):
            self.live_plots.reap()
        with self._step("daemon.json", "publishing the daemon's state"):
            self.publish(now)

    def record_ends(self, now: float) -> bool:
        """The end first, the clean-up after: the runs whose trial just wrote its exit file
        are observed and decided before anything else this tick does (no inbox, no tmux, no
        other run), so the end is on record within milliseconds of the exit. True when tmux
        must be asked too: a hang-up marker, or an exit file that ended nothing."""
        ask_tmux = False
        for path in sorted(self.watcher.take_ended()):
            folder = Path(path).parent
            run = self.runs.get(folder.name)
            if folder.parent != self.home.runs or run is None or not path.endswith(".exit"):
                ask_tmux = True
                continue
            if run.state is State.RUNNING or run.state is State.STOPPING:
                with self._each(run.run_id, "recording its end"):
                    self.supervise(run.run_id, now, False)
                after = self.runs.get(run.run_id)
                ask_tmux |= after is None or after.trial == run.trial  # nothing came of it
        return ask_tmux

    def sample_gpus(self, now: float) -> None:
        """On its timer: fold each running run's GPU use into its record; a lost GPU is a
        finding on the runs that use it."""
        running = [r for r in self.runs.values() if r.state is State.RUNNING]
        due = self.gpus.next_at(running, now)
        if due is None or now < due:
            return
        self.gpus.take(now)
        for sampled in running:
            with self._each(sampled.run_id, "sampling its GPUs"):
                self._gpu_sampled(sampled, now)

    def _gpu_sampled(self, sampled: Run, now: float) -> None:
        seen = self.gpus.of_run(sampled)
        if not seen and not sampled.gpu_ids:
            return
        if gpuuse.busy(seen):
            self.gpu_busy_at[sampled.run_id] = now
        run = replace(sampled, gpu_stats=gpuuse.fold(sampled.gpu_stats, seen, now))
        if seen:
            drawing.record_gpus(self.home, run.run_id, now, seen)
        lost = self.gpus.lost_evidence(run)
        known = run.trial.live_findings if run.trial else ()
        if lost and run.trial and not any(f.kind == GPU_LOST for f in known):
            log.error("run %s: %s", run.run_id, lost)
            self.home.append_event(run.run_id, now, f"{GPU_LOST}: {lost}")
            run = model.found_live(run, (lost_finding(lost),))
        self._store(run)

    def admit(self, now: float) -> None:
        """Take complete blueprints from the inbox, each on its own: one that cannot be taken
        is put aside with the reason (or, if even that fails, left and named in status)."""
        problems = inbox.security_problems(self.home)
        refused: list[str] = []
        self.settle_at = None
        if self.troubles.blocked(self.home.root) or self.home.root in self.troubles.full:
            problems.append(f"{self.home.root} is full: blueprints wait in the inbox")
        if not problems:
            for run_id, (claimed, source, folder) in list(self.unadmitted.items()):
                if not self.troubles.blocked(folder):
                    del self.unadmitted[run_id]
                    self.accept(run_id, claimed, source, now)
                    if all(f != folder for _, _, f in self.unadmitted.values()):
                        self.troubles.clear(folder)  # it took the writes this time
            scan = inbox.scan(self.home, self.watcher.take_ready(), now)
            refused, self.settle_at = scan.refused, scan.settle_at
            for candidate in scan.found:
                name = candidate.path.name
                if name in self.stuck:
                    continue
                try:
                    self._take(candidate, now)
                except Exception as exc:  # one file never stops the loop
                    self._file_failed(candidate.path, exc, now)
        folder = self.home.inbox  # a file that could not be put aside is listed while it is there
        self.stuck = {n: w for n, w in self.stuck.items() if os.path.lexists(folder / n)}
        refused += [
            f"{self.home.inbox}/{inbox.safe_name(n)}: {why}" for n, why in self.stuck.items()
        ]
        self._set_problems(problems, refused)

    def _take(self, candidate: inbox.Candidate, now: float) -> None:
        run_id = candidate.run_id
        if run_id is None or (self.home.run_dir(run_id)).exists():
            run_id = new_run_id(lambda i: self.home.run_dir(i).exists())
        try:
            claimed = inbox.claim(self.home, candidate, run_id)
        except OSError as exc:
            if diskfull.is_full(exc):  # not taken: it waits in the inbox for space
                self.troubles.hit(self.home.root, exc, "$AJETD_HOME")
                return
            raise
        if claimed is not None:
            self.accept(run_id, claimed, f"{candidate.stem}.md", now)

    def _file_failed(self, path: Path, exc: Exception, now: float) -> None:
        """An inbox file that could not be taken: put aside with the reason, once."""
        shown = inbox.safe_name(path.name)
        text = self._logged_once(f"inbox file {shown}", "taking it", exc)
        why = f"not taken: internal error while taking it: {text}"
        try:
            if path.exists() or path.is_symlink():
                aside = inbox.put_aside(self.home, path, why, now)
                log.warning("inbox: %s put aside as %s: %s", shown, aside.name, why)
        except OSError as again:
            self.stuck[path.name] = f"{why} (and it cannot be put aside: {again.strerror})"

    def _set_problems(self, problems: list[str], refused: list[str]) -> None:
        """Why nothing is taken (an unsafe inbox, a full home) and which files are not taken;
        each line logged once, while it lasts."""
        for line in problems + refused:
            if line not in self.problems and line not in self.refused:
                log.warning("inbox: %s", line)
        if self.problems and not problems:
            log.info("inbox: problems resolved; taking blueprints again")
        self.problems, self.refused = problems, refused

    def accept(self, run_id: str, claimed: Path, source: str, now: float) -> None:
        busy = {r.result_dir for r in self.runs.values() if r.active}
        try:
            run, options = admission.admit(self.home, run_id, claimed, source, now, busy)
        except OSError as exc:
            if not diskfull.is_full(exc):
                raise
            self._admit_later(run_id, claimed, source, exc)
            return
        except Exception as exc:  # never die on input; never retry it forever
            text = self._logged_once(f"run {run_id}", "admitting it", exc)
            reason = f"internal error while admitting the blueprint: {text}"
            run = model.reject(Run(run_id=run_id, source=source, submitted_at=now), reason, now)
            self.home.save_run(run)
            options = None
        self.runs[run_id] = run
        if options is not None:
            self.options[run_id] = options

    def _admit_later(self, run_id: str, claimed: Path, source: str, exc: OSError) -> None:
        """A full disk is not the blueprint's fault: it is admitted again once the folder
        that refused a write takes it (the claimed file waits in the run's folder)."""
        folder = Path(exc.filename).parent if exc.filename else self.home.root
        if folder.is_relative_to(self.home.root):
            folder, what = self.home.root, "$AJETD_HOME"
        else:
            what = f"a folder run {run_id} needs"
        self.troubles.hit(folder, exc, what)
        self.unadmitted[run_id] = (claimed, source, folder)

    def control(self, now: float) -> None:
        """Take `ajetd stop` requests (files `control/<run_id>.stop`)."""
        self.stop_asked = set()
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.home.control):
                run_id, _, kind = entry.name.partition(".")
                if kind != "stop" or not RUN_ID.match(run_id):
                    continue
                self.stop_asked.add(run_id)
                with self._each(run_id, "taking its stop request"):
                    self._stop_request(run_id, entry, now)

    def _stop_request(self, run_id: str, entry: os.DirEntry[str], now: float) -> None:
        run = self.runs.get(run_id)
        if run is not None and run.state is State.QUEUED:
            self._store(
                trials.finish_run(
                    self.home,
                    self.tmux,
                    run,
                    Status.STOPPED,
                    "stopped by `ajetd stop` before it started",
                    None,
                    now,
                    None,
                )
            )
            Path(entry.path).unlink(missing_ok=True)
        elif (run is None and self.home.pending(run_id) is None) or (
            run is not None and not run.active
        ):
            Path(entry.path).unlink(missing_ok=True)

    def launch(self, now: float) -> None:
        waiting = (State.QUEUED, State.RESTARTING)
        self.swarm_waiting = False
        queue = sorted(
            (r for r in self.runs.values() if r.state in waiting), key=lambda r: r.submitted_at
        )
        places = self.placer.decide(queue, self.runs, self.options, now)
        for run_id in [r.run_id for r in queue]:
            with self._each(run_id, "launching it"):
                self._launch_one(run_id, places[run_id], now)
        if self.home.root in self.troubles.full:
            return
        for run in list(self.runs.values()):  # prepared, but a full home kept it from going
            trial = run.trial
            if run.state is State.RUNNING and trial is not None and trial.started_at is None:
                with self._each(run.run_id, "launching it"):
                    self._start(run, now)

    def _launch_one(self, run_id: str, place: placement.Decision, now: float) -> None:
        if self.home.root in self.troubles.full:  # its script and go file need the home
            why = f"waiting: {self.home.root} is full ({diskfull.free_space(self.home.root)} free)"
            self._store(model.waiting(self.runs[run_id], why))
            return
        if not self._placed(self.runs[run_id], place, now):
            return
        queued = self.runs[run_id]
        if not self._may_start(queued, now):
            return
        try:
            run = trials.prepare_trial(
                self.home,
                self.tmux,
                queued,
                self.options[queued.run_id],
                trials.active_sessions(list(self.runs.values())),
            )
        except (AjetdError, OSError) as exc:
            if isinstance(exc, OSError) and diskfull.is_full(exc):  # it waits for space
                self.troubles.hit(self.home.root, exc, "$AJETD_HOME")
                self.home.save_run(queued)
                return
            self._launch_failed(queued, exc, now)
            return
        self.runs[run.run_id] = run  # prepare_trial saved it
        if self._start(run, now):
            log.info(
                "run %s: trial %d started in session %s",
                run.run_id,
                len(run.trials),
                run.session,
            )

    def _placed(self, run: Run, decision: placement.Decision, now: float) -> bool:
        """Record where a waiting run goes, or why it waits or can never start."""
        if isinstance(decision, placement.Never):
            self._launch_failed(run, decision.reason, now)
            return False
        if isinstance(decision, placement.Wait):
            if decision.reason != run.reason:
                self.home.append_event(run.run_id, now, decision.reason)
            self._store(model.waiting(run, decision.reason))
            return False
        if decision.gpus != run.gpu_ids:
            if decision.gpus:
                where = ", ".join(map(str, decision.gpus))
                self.home.append_event(run.run_id, now, f"placed on GPU(s) {where}")
            self._store(replace(run, gpu_ids=decision.gpus))
        return True

    def _missing(self, run: Run, paths: tuple[str, ...]) -> tuple[str, ...]:
        """Which of `paths` (relative to the codebase) do not exist, here or on its host."""
        if not paths:
            return ()
        ssh = self.options[run.run_id].ssh
        try:
            fs: Fs = LOCAL if ssh is None else sshcmd.RemoteFs(ssh)
            return tuple(p for p in paths if not fs.exists(os.path.join(run.codebase_dir, p)))
        except AjetdError as exc:
            log.warning("run %s: cannot check %s: %s", run.run_id, ", ".join(paths), exc)
            return paths

    def _stage_outputs_missing(self, run: Run) -> tuple[str, ...]:
        stages = self.options[run.run_id].stages
        if not stages or run.stage >= len(stages):
            return ()
        return self._missing(run, stages[run.stage].outputs)

    def _may_start(self, run: Run, now: float) -> bool:
        """Whatever a run needs before its trial starts is there (the files its pipeline stage
        requires, its swarm server answering); if not, the run keeps waiting with the reason
        in status, or fails with it."""
        opts = self.options[run.run_id]
        if opts.stages and run.stage < len(opts.stages):
            stage = opts.stages[run.stage]
            missing = self._missing(run, stage.requires)
            if missing:
                why = f"stage {stage.name} requires {', '.join(missing)}, which does not exist"
                self._launch_failed(run, why + ": not started", now)
                return False
        if opts.swarm is None:
            return True
        if run.deadline is not None and now >= run.deadline:  # a relaunch waited too long
            why = f"stopped at exp_max_time while waiting: {run.reason}; data kept"
            self._store(
                trials.finish_run(
                    self.home, self.tmux, run, Status.TIME_LIMIT, why, None, now, None
                )
            )
            return False
        gate = self.swarm.gate(opts.swarm, run, trials.trial_env(run, opts), now)
        if isinstance(gate, swarm.Wait):
            self.swarm_waiting = True
            if gate.reason != run.reason:
                self.home.append_event(run.run_id, now, gate.reason)
            self._store(model.waiting(run, gate.reason))
            return False
        if isinstance(gate, swarm.Fail):
            self._launch_failed(run, gate.reason, now)
            return False
        return True

    def _start(self, run: Run, now: float) -> bool:
        """Let a prepared trial go and schedule its deep checks; a failed launch ends the run."""
        ssh = self.options[run.run_id].ssh if run.run_id in self.options else None
        try:
            # start_trial saved it: not saved a second time
            self.runs[run.run_id] = trials.start_trial(self.home, self.tmux, run, self.clock(), ssh)
        except (AjetdError, OSError) as exc:
            if isinstance(exc, OSError) and diskfull.is_full(exc):  # let go once there is room
                self.troubles.hit(self.home.root, exc, "$AJETD_HOME")
                return False
            self._launch_failed(run, exc, now)
            return False
        self.backoffs[run.run_id] = Backoff.start(now, self.cfg.backoff_scale)
        return True

    def _launch_failed(self, run: Run, exc: Exception | str, now: float) -> None:
        log.error("run %s: launch failed: %s", run.run_id, exc)
        reason = f"launch failed: {exc}"
        self._store(
            trials.finish_run(self.home, self.tmux, run, Status.FAILED, reason, None, now, None)
        )

    def refresh_panes(self, now: float, force: bool = False) -> bool:
        """Ask tmux for every pane once per liveness period (or at once after a trial ended);
        True when this tick did. Between two answers from tmux (at most `TMUX_POLL_MAX_S`
        apart) a period whose pane processes are all still the ones tmux listed last needs
        no tmux call: a pane lives as long as its own process does."""
        if not force and now - self.last_liveness < self.cfg.liveness_s:
            return False
        self.last_liveness = now
        if not force and now - self.tmux_polled_at < TMUX_POLL_MAX_S and self._panes_alive():
            return False
        self.tmux_polled_at = now
        try:
            panes = self.tmux.panes()
        except TmuxError as exc:
            if not exc.gone:  # a slow or failing tmux proves nothing about the runs
                log.warning("tmux did not answer: %s", exc)
                return False
            panes = []
        for port, why in self.swarm.check(panes).items():
            self._server_died(port, why, now)
        self._poll_slurm(now)
        self.panes = {}
        for run in self.runs.values():
            if run.active and run.trial is not None:
                script = self._paths(run).script
                pane = trials.find_pane(panes, script)
                if pane is not None:
                    self.panes[str(script)] = pane
        self.pane_starts = {
            p.pid: procs.started(p.pid) for p in self.panes.values() if p.pid and not p.dead
        }
        return True

    def _panes_alive(self) -> bool:
        """Every running trial's pane process is still the one tmux listed (same pid, same
        start time), and no run needs tmux or Slurm looked at (swarm servers, Slurm jobs)."""
        for run in self.runs.values():
            if run.state is not State.RUNNING and run.state is not State.STOPPING:
                continue
            opts = self.options.get(run.run_id)
            if opts is None or opts.swarm is not None or opts.slurm is not None:
                return False
            if run.trial is None or run.trial.started_at is None:
                continue
            pane = self._pane(run)
            if pane is None or pane.dead or not pane.pid:
                return False
            began = self.pane_starts.get(pane.pid)
            if began is None or procs.started(pane.pid) != began:
                return False
            if procs.lost_terminal(pane.pid):  # the session was killed, its process lingers
                return False
        return True

    def _poll_slurm(self, now: float) -> None:
        """One `squeue` for every Slurm run: pending reasons, nodes, and how ended jobs
        ended (a batch job Slurm ended without its script's exit file gets a done file)."""
        live = {
            slurm.job_name(r.run_id, r.trial.number): r
            for r in self.runs.values()
            if r.state in (State.RUNNING, State.STOPPING)
            and r.trial is not None
            and r.trial.started_at is not None
            and self.options[r.run_id].slurm is not None
        }
        if not live or now - self.slurm_polled_at < self.slurm_every:
            return  # one squeue for all runs, however many trial ends came meanwhile
        self.slurm_polled_at = now
        try:
            seen = slurm.jobs(set(live))
        except AjetdError as exc:
            log.warning("slurm: squeue failed: %s", exc)
            return
        states = {(name, seen[name].state if name in seen else "gone") for name in live}
        # the seed's backoff: poll less often while nothing changes, at once again on a change
        same = states == self.slurm_seen
        self.slurm_every = (
            min(self.slurm_every * 2, SLURM_POLL_MAX_S) if same else (self.cfg.liveness_s)
        )
        self.slurm_seen = states
        gone = {}
        for name, run in live.items():
            job = seen.get(name)
            if job is not None:
                self._store(_slurm_seen(run, job))
                continue
            number = run.trial.number if run.trial else 0
            if (job_id := self._job_id(run)) and run.slurm.get("final") != number:
                gone[job_id] = run
        ended = slurm.finished(set(gone))  # one scontrol for all of them
        for job_id, run in gone.items():
            if job_id in ended:
                self._store(self._slurm_ended(run, ended[job_id], now))

    def _job_id(self, run: Run) -> str:
        """The trial's job id: seen in squeue, or written by the batch follower."""
        assert run.trial is not None
        job_file = self.home.trial_file(run.run_id, run.trial.number, "job.id")
        known = str(run.slurm.get("job_id") or "")
        return known or (job_file.read_text().strip() if job_file.exists() else "")

    def _slurm_ended(self, run: Run, done: slurm.Job, now: float) -> Run:
        """How Slurm says the trial's job ended, recorded once (a finding where it says more
        than the output; a done file where its script could not write the exit code)."""
        info = dict(run.slurm)
        assert run.trial is not None
        n = run.trial.number
        info.update(job_id=done.job_id, state=done.state, reason=done.reason, final=n)
        found = slurm.finding(done)
        if found is not None:
            self.home.append_event(run.run_id, now, f"{found.kind}: {found.evidence}")
            run = model.found_live(run, (found,))
            if found.kind == "node_failure" and done.nodes:
                info["exclude"] = done.nodes
        if not self.home.trial_file(run.run_id, n, "job.exit").exists():
            code = done.exit_code if done.exit_code else 1
            write_atomic(self.home.trial_file(run.run_id, n, "job.done"), f"{code} {now}\n")
        return replace(run, slurm=info)

    def _server_died(self, port: int, why: str, now: float) -> None:
        """A swarm server died under running clients: each gets the finding and is
        interrupted; its relaunch waits for the server to answer again."""
        finding = self.swarm.died_finding(port, why)
        log.warning("swarm: %s", finding.evidence)
        for run in list(self.runs.values()):
            opts = self.options.get(run.run_id)
            if run.state is not State.RUNNING or opts is None or opts.swarm is None:
                continue
            if opts.swarm.port != port or run.trial is None:
                continue
            self.home.append_event(run.run_id, now, f"{swarm.SERVER_DIED}: {finding.evidence}")
            self._store(model.found_live(run, (finding,)))
            procs.signal_run(run.run_id, run.trial.pane_pid, "INT", run.started_at)

    def _paths(self, run: Run) -> trials.RunPaths:
        """The current trial's file paths (cached: pathlib is costly at 50 runs a tick)."""
        assert run.trial is not None
        key = (run.run_id, run.trial.number)
        got = self.trial_paths.get(key)
        if got is None:
            got = self.trial_paths[key] = trials.paths(self.home, run, run.trial.number)
        return got

    def _pane(self, run: Run) -> Pane | None:
        assert run.trial is not None
        return self.panes.get(str(self._paths(run).script))

    def _last_output(self, run: Run, now: float) -> float | None:
        """When the trial's log last grew, on the daemon's clock: the pass that saw its size
        change (the file's own time only for a log first seen, e.g. after a restart)."""
        if run.trial is None:
            return None
        key = (run.run_id, run.trial.number)
        try:
            info = self._paths(run).log.stat()
            size, mtime = info.st_size, info.st_mtime
        except OSError:
            size, mtime = -1, 0.0
        seen = self.output_seen.get(key)
        if seen is None:
            at = max(min(mtime, now), run.trial.started_at or 0.0)
        else:
            at = now if size != seen[0] else seen[1]
        self.output_seen[key] = (size, at)
        return at or None

    def supervise(self, run_id: str, now: float, panes_fresh: bool) -> None:
        """observe -> decide -> act for one live run (pane facts only when `panes_fresh`)."""
        run = self.runs[run_id]
        if run.trial is None or run.trial.started_at is None:
            return
        p = self._paths(run)
        exit_info = trials.read_exit(p.exit)
        pane = self._pane(run)
        if exit_info is None and pane is not None and pane.exit_note:  # the disk was full
            exit_info = parse_exit_file(pane.exit_note)
        gone, dead_status = False, None
        if exit_info is None and panes_fresh and (pane is None or pane.dead):
            exit_info = trials.read_exit(p.exit)  # written just before the pane died?
            gone = exit_info is None
            dead_status = pane.dead_status if pane is not None and pane.dead else None
            if gone and pane is not None and dead_status is None and self._status_due(run_id, now):
                gone = False  # tmux marks a pane dead before it has reaped its status
        if exit_info is not None or pane is None or not pane.dead:
            self.dead_since.pop(run_id, None)
        stop_file = self.home.control / f"{run_id}.stop"
        findings: tuple[Finding, ...] = ()
        config = None
        holder = None
        if exit_info is not None and exit_info[0] != 0 and run.stop_cause is None:
            trials.await_output(p.log, run.trial.number)  # its traceback is in the log
            found = self.live.finish((run_id, run.trial.number), p.log)
            if found is None:  # no live cursor (e.g. after a daemon restart): read the tail
                found = trials.diagnose_file(p.log, user=self._kinds(run_id))
            findings = (*self._observed_findings(run), *found)
            config = trials.load_config(run.config_path)
            holder = _port_holder(findings, run_id)
        obs = Observation(
            now=now,
            exit=exit_info,
            gone=gone,
            dead_status=dead_status,
            stop_requested=stop_file.exists(),
            last_output_at=self._last_output(run, now),
            findings=findings,
            proxychains=shutil.which("proxychains4") if findings else None,
            config=config,
            port_holder=holder,
            step_times=self._step_times(run),
            gpu_busy_at=self.gpu_busy_at.get(run_id),
            gpus_taken=self.placer.taken(run, self.runs, now) if findings else None,
            program_end=trials.program_end(run) if exit_info and exit_info[0] == 0 else None,
            missing_outputs=self._stage_outputs_missing(run) if exit_info else (),
            slurm_signalled=bool(exit_info)
            and self.options[run_id].slurm is not None
            and self.home.trial_file(run_id, run.trial.number, "job.exit.sigint").exists(),
        )
        self._deep_check(run_id, now)
        if exit_info is None:
            self._live_scan(run_id, now, p.log)
        self._ssh_notes(run_id, now)
        run = self.runs[run_id]
        opts = self.options[run_id]
        actions = decide(run, obs, self.cfg.timing, opts)
        for action in actions:
            run = self._act(run, action, now, pane, obs.findings)
        if obs.stop_requested:
            stop_file.unlink(missing_ok=True)
        self._store(run)

    def _kinds(self, run_id: str) -> KindSet:
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
        options = self.options.get(run_id)
        own = KindSet(options.kinds) if options is not None and options.kinds else KindSet()
        return own + self.home_kinds[1]

    def _status_due(self, run_id: str, now: float) -> bool:
        """A dead pane without its status yet (and no exit file: a full home): look again
        shortly before calling the run lost; the status is the only record of its exit."""
        first = self.dead_since.setdefault(run_id, now)
        if now - first < DEAD_STATUS_WAIT_S:
            return True
        del self.dead_since[run_id]
        return False

    def _observed_findings(self, run: Run) -> list[Finding]:
        """For a failed trial, what ajetd saw outside its output, the root cause before the
        output's own findings: a lost GPU; how Slurm ended its job (node failure,
        preemption, Slurm's time limit); a swarm server that died while it ran or does not
        answer now (its client may notice first)."""
        if run.trial is None:
            return []
        job_id = self._job_id(run) if self.options[run.run_id].slurm is not None else ""
        if job_id and run.slurm.get("final") != run.trial.number:
            ended = slurm.finished({job_id})  # Slurm may know more than the output
            if job_id in ended:
                run = self._slurm_ended(run, ended[job_id], self.clock())
                self._store(run)
        assert run.trial is not None
        seen = {f.kind: f for f in run.trial.live_findings}
        found = [seen[GPU_LOST]] if GPU_LOST in seen else []
        found += [seen[k] for k in ("node_failure", "preempted", "slurm_timeout") if k in seen]
        spec = self.options[run.run_id].swarm
        if swarm.SERVER_DIED in seen:
            found.append(seen[swarm.SERVER_DIED])
        elif spec is not None and not self.swarm.probe(spec.port):
            found.append(self.swarm.died_finding(spec.port, "stopped answering /health"))
        return found

    def _step_times(self, run: Run) -> tuple[float, ...]:
        return self.live.step_times((run.run_id, run.trial.number)) if run.trial else ()

    def _live_scan(self, run_id: str, now: float, log_file: Path) -> None:
        """Read what a running trial printed since the last tick; record new kinds."""
        run = self.runs[run_id]
        assert run.trial is not None
        key = (run_id, run.trial.number)
        try:
            size = log_file.stat().st_size
        except OSError:
            return
        if not self.live.pending(key, size):
            return
        self.live_growing = True
        new = self.live.scan(key, log_file, now, self._kinds(run_id))
        if new:
            for f in new:
                self.home.append_event(run_id, now, f"seen while running: {f.kind} (line {f.line})")
            self._store(model.found_live(run, tuple(new)))

    def _ssh_notes(self, run_id: str, now: float) -> None:
        """Connection drops and reattachments the follower of a remote trial noted."""
        run = self.runs[run_id]
        if run.trial is None or self.options[run_id].ssh is None:
            return
        key = (run_id, run.trial.number)
        run, self.ssh_notes[key] = sshremote.connection_notes(
            self.home, run, self.ssh_notes.get(key, 0), now
        )
        self._store(run)

    def _deep_check(self, run_id: str, now: float) -> None:
        backoff = self.backoffs.get(run_id)
        if backoff is None or not backoff.due(now):
            return
        run = self.runs[run_id]
        updated = trials.read_metrics(run, self._fetch(run))
        if updated is not run:
            self._store(updated)
            self.backoffs[run_id] = backoff.reset(now)
            self.home.append_event(run_id, now, f"validation: {len(updated.history)} record(s)")
        else:
            self.backoffs[run_id] = backoff.advance(now)
        self.live_plots.request(self.home, self.runs[run_id], now)  # a child draws; no wait

    def _act(
        self,
        run: Run,
        action: object,
        now: float,
        pane: Pane | None,
        findings: tuple[Finding, ...] = (),
    ) -> Run:
        pid = pane.pid if pane is not None else (run.trial.pane_pid if run.trial else None)
        if isinstance(action, Finish):
            self.backoffs.pop(run.run_id, None)
            self.gpu_busy_at.pop(run.run_id, None)
            self.live_plots.forget(run.run_id)
            self.live.forget(run.run_id)
            for key in [k for k in self.trial_paths if k[0] == run.run_id]:
                del self.trial_paths[key]
                self.output_seen.pop(key, None)
            self.due_at.pop(run.run_id, None)
            self.supervised_at.pop(run.run_id, None)
            self._remote_end(run, now, final=True)
            run = trials.finish_run(
                self.home,
                self.tmux,
                run,
                action.status,
                action.reason,
                action.exit_code,
                now,
                pid,
                findings or None,
                self._fetch(run),
            )
            self.runs[run.run_id] = run  # finish_run saved it: not saved a second time
            self.finish_hooks[run.run_id] = run  # fired once the end is on disk
            self._finish_hooks(now)
            return run
        if isinstance(action, Restart):
            return self._restart(run, action, now, pid, findings)
        if isinstance(action, NextStage):
            reason = f"stage done; next: stage {action.name}"
            run = trials.end_trial(self.home, run, reason, 0, now, pid, ())
            self._remote_end(run, now, final=False)
            run = model.next_stage(run, action.command, f"stage {action.name} next")
            self.home.append_event(run.run_id, now, f"stage {action.name} next: {action.command}")
            self._store(run)
            self.launch(now)
            return self.runs[run.run_id]
        if isinstance(action, BeginStop):
            why = f" ({action.why})" if action.why else ""
            self.home.append_event(run.run_id, now, f"stopping: {action.cause.value}{why}")
            return model.begin_stop(run, action.cause, now, action.why)
        if isinstance(action, Send):
            count = self._signal(run, pid, action.signal.value)
            self.home.append_event(run.run_id, now, f"sent SIG{action.signal.value} ({count})")
            return model.signal_sent(run, action.signal.value)
        if isinstance(action, Attention):
            text = action.reason or "cleared"
            self.home.append_event(run.run_id, now, f"attention: {text}")
            run = model.set_attention(run, action.reason)
            if action.reason:
                self._hook(run, "on_attention", now)
            return run
        raise AssertionError(action)

    def _fetch(self, run: Run) -> trials.Fetch:
        """How the run's val file is read: here, or over SSH from its host."""
        ssh = self.options[run.run_id].ssh if run.run_id in self.options else None
        return trials.read_local if ssh is None else sshremote.fetch(ssh, run.run_id)

    def _signal(self, run: Run, pid: int | None, name: str) -> int:
        """INT, TERM or KILL to the run's program, here or on its remote host."""
        ssh = self.options[run.run_id].ssh
        batch = self.options[run.run_id].slurm
        job_id = str(run.slurm.get("job_id", ""))
        if batch is not None and job_id:
            # a job still pending has nothing to save: it is cancelled outright
            pending = run.slurm.get("state") == "PENDING"
            sig = None if name == "KILL" or pending else name
            try:
                slurm.cancel(job_id, sig, batch.mode == "batch")
                return 1
            except AjetdError as exc:
                log.warning("run %s: scancel %s failed: %s", run.run_id, job_id, exc)
        if ssh is None:
            return procs.signal_run(run.run_id, pid, name, run.started_at)
        return sshremote.signal(ssh, run, name)

    def _remote_end(self, run: Run, now: float, final: bool) -> None:
        opts = self.options[run.run_id]
        if opts.ssh is not None:
            sshremote.end(self.home, opts.ssh, opts.pull, run, now, final)

    def _restart(
        self,
        run: Run,
        action: Restart,
        now: float,
        pid: int | None,
        findings: tuple[Finding, ...],
    ) -> Run:
        """End the failed trial, record the fix, and launch the next trial at once."""
        fix = action.remedy
        reason = describe_exit(action.exit_code)
        command = config_path = None
        if fix.config_patches:
            moved = trials.config_fix(run, dict(fix.config_patches))
            if moved is None:
                why = f"{reason}; {fix.why}, but it cannot reach what runs (--conf is not the "
                why += "run's config)"
                return trials.finish_run(
                    self.home,
                    self.tmux,
                    run,
                    Status.FAILED,
                    why,
                    action.exit_code,
                    now,
                    pid,
                    findings,
                )
            command, config_path = moved
        run = trials.end_trial(self.home, run, reason, action.exit_code, now, pid, findings)
        self._remote_end(run, now, final=False)
        run = model.restart(run, fix.fix, fix.why, fix.env, fix.prefix, command, config_path)
        self.home.append_event(run.run_id, now, f"trial {len(run.trials)} failed; {fix.why}")
        self._store(run)
        log.info("run %s: %s", run.run_id, fix.why)
        self.launch(now)
        return self.runs[run.run_id]

    def _finish_hooks(self, now: float) -> None:
        """on_finish hooks of ended runs whose record is on disk: a hook never reports an end
        that a full home has not let ajetd record yet."""
        for run_id in [r for r in self.finish_hooks if self.home.saved(r)]:
            self._hook(self.finish_hooks.pop(run_id), "on_finish", now)

    def _hook(self, run: Run, name: str, now: float) -> None:
        """The daemon's hook for this event, then the blueprint's; each once."""
        own = getattr(self.options.get(run.run_id, Options()), name)
        for command in (getattr(self.cfg, name), own):
            if command:
                self.home.append_event(run.run_id, now, f"hook {name} started: {command}")
                self.hooks.fire(self.home.run_dir(run.run_id), name, command, run_json(run, now))

    def _store(self, run: Run) -> None:
        if self.runs.get(run.run_id) != run:
            self.home.save_run(run)
        self.runs[run.run_id] = run

    def housekeep(self, now: float) -> None:
        """Close sessions of ended runs once their keep time is over; stop swarm servers
        that no run has needed for their keep time."""
        in_use = {
            opts.swarm.port
            for run_id, opts in self.options.items()
            if opts.swarm is not None and self.runs[run_id].active
        }
        self.swarm.housekeep(in_use, now)
        for run in list(self.runs.values()):
            if (
                not run.active
                and not run.session_closed
                and run.session
                and run.ended_at
                and now >= run.ended_at + run.keep_session_s
                and self.home.saved(run.run_id)  # its pane may hold the only exit status
            ):
                with self._each(run.run_id, "closing its session"):
                    trials.close_session(self.tmux, run)
                    self._store(replace(run, session_closed=True))

    def retry_reports(self, now: float) -> None:
        """Ended runs whose reports a full (or unwritable) result dir or home held back: write
        them once the record is on disk and the folder's retry is due; attention then clears."""
        for run in list(self.runs.values()):
            folder = Path(run.result_dir)
            if not run.reports_pending or not self.home.saved(run.run_id):
                continue
            if self.troubles.blocked(folder):
                continue
            with self._each(run.run_id, "writing its reports"):
                self._store(trials.publish_reports(self.home, run, now))

    def publish(self, now: float) -> None:
        """daemon.json for `status`: on any change of problems (a full disk's included), on a
        change of the next deep checks (at most once a second), else every minute."""
        checks = {run_id: round(b.next_at, 1) for run_id, b in self.backoffs.items()}
        moved = checks != self.published_checks and now - self.published_at >= 1
        disk = self.troubles.lines(self.held.count())
        problems = [*self.problems, *self.refused, *disk]
        if problems != self.published or moved or now - self.published_at >= 60:
            info = {
                "pid": os.getpid(),
                "heartbeat": now,
                "problems": self.problems,
                "refused": self.refused,
                "disk": disk,  # full folders, with free space
                "deep_checks": checks,  # run id -> when its next deep check is due
            }
            self._write_daemon_json(info)
            self.published, self.published_at = problems, now
            self.published_checks = checks

    def _write_daemon_json(self, info: dict[str, Any]) -> None:
        """Written whole; padded to one block so that, on a full home, it can still be
        rewritten in place (`status` then shows why nothing else is being saved)."""
        text = json.dumps(info, indent=2, ensure_ascii=False).ljust(DAEMON_JSON_BYTES) + "\n"
        try:
            write_atomic(self.home.daemon_file, text, 0o600)
        except OSError as exc:
            if not diskfull.is_full(exc) or not self.home.daemon_file.exists():
                raise
            self.troubles.hit(self.home.root, exc, "$AJETD_HOME")
            if "disk" in info:  # say so in the copy written in place
                info["disk"] = self.troubles.lines(self.held.count())
                self.published = [*self.problems, *self.refused, *info["disk"]]
            text = json.dumps(info, indent=2, ensure_ascii=False).ljust(DAEMON_JSON_BYTES) + "\n"
            write_in_place(self.home.daemon_file, encode(text))

    # -- restart ----------------------------------------------------------------------------
    def reconcile(self, now: float) -> None:
        """Take up where a previous daemon left off; never launch a started trial again."""
        for run_id, claimed, source in inbox.unfinished_claims(self.home):
            self.accept(run_id, claimed, source, now)
        for run in self.home.load_runs():
            self.runs[run.run_id] = run
            if not run.active:
                continue
            self.options[run.run_id] = admission.stored_options(self.home, run.run_id)
            trial = run.trial
            if trial is not None and trial.started_at is None:
                script = trials.paths(self.home, run, trial.number).script
                if not script.exists():  # cut between its record and its script: prepare again
                    self._store(model.unprepare(run))
                    log.info("run %s: trial %d was never prepared; again", run.run_id, trial.number)
                    continue
                self._start(run, now)
            elif run.state in (State.RUNNING, State.STOPPING):
                self.backoffs[run.run_id] = Backoff.start(now, self.cfg.backoff_scale)
                log.info("run %s: watching again (session %s)", run.run_id, run.session)
        self.last_liveness = 0.0
