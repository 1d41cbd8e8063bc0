"""The supervisor loop: one `while` whose body is a tick of named steps.

A tick: record ends (trials whose exit file just appeared, first), admit (inbox -> accepted or
rejected runs), control (stop requests), launch (queued -> running), observe + act (each live
run: `observe` -> `policy.decide` -> act), relaunch (trials that ended into a next one),
housekeep (sessions past their keep time, held reports, GPU samples), publish (daemon.json).
Watchers only wake the loop; timers come from the policy's `next_wake`. Between full ticks a
light tick only reads new output.

The steps live in their own modules, one class each, joined here: `admit`, `launch`,
`observe`, `act`, `housekeep`; what they share (state, run slots, guards) is `base`'s. Where a
trial runs is its host's business (`ajetd.hosts`): nothing here asks which place it is.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import time
from pathlib import Path
from types import FrameType

from ajetd.adapters.nvml import open_probe
from ajetd.adapters.store import OWNER_DIR
from ajetd.adapters.tmux import Tmux
from ajetd.adapters.tmuxsocket import same_socket
from ajetd.core.errors import StoreError
from ajetd.core.model import DEFAULT_TMUX, Run, State
from ajetd.core.policy import hang_window as policy_hang_window
from ajetd.core.policy import next_wake
from ajetd.daemon.act import Act
from ajetd.daemon.admit import STOP_SLACK_S, Admit
from ajetd.daemon.base import DaemonConfig
from ajetd.daemon.housekeep import PUBLISH_EVERY_S, Housekeep
from ajetd.daemon.launch import Launch
from ajetd.daemon.observe import DEAD_STATUS_WAIT_S
from ajetd.daemon.panetails import PANE_POLL_S
from ajetd.daemon.slots import LIVE, RunSlot
from ajetd.diagnosis.live import LIVE_SCAN_S
from ajetd.hosts import sshcmd
from ajetd.pictures import drawing

__all__ = ["Daemon", "DaemonConfig"]
log = logging.getLogger(__name__)
SWARM_POLL_S = 0.5  # how often a swarm server that is starting is asked for /health
FAILED_PASS_PAUSE_S = 1.0  # the least wait after a pass in which a step failed
COPY_POLL_S = 1.0  # how often a copy back under way is looked at (`Housekeep.copy_back`)
DRAW_POLL_S = 0.1  # how often a final drawing under way or due to start is looked at
SUPERVISE_ALL_S = 60.0  # every live run is looked at in full at least this often
# a clean stop's wait for the reports of runs that ended before it (all of them together):
# each takes well under a second, its final picture 1-2.5 s of a loaded 2-core machine's
# time; what does not come in time (a drawing that hangs, a copy back) is left to the next
# daemon and named by `ajetd shutdown`. Well within systemd's TimeoutStopSec (30 s, the unit)
STOP_REPORTS_S = 10.0
STOP_DRAWINGS = 8  # final pictures drawn at once during a stop, at most (and a core each)
# the step's one name, also where an exit file brought it first: a full folder it met is
# waited for as one (`Base.step_full`), whichever of the two takes the write
SUPERVISING = "supervising it"


def _tmpdir_named(theirs: str, here: str, always: bool = False) -> str:
    """` TMUX_TMPDIR=FOLDER`: the TMUX_TMPDIR that leads to the socket `theirs` (the folder
    that holds its `tmux-UID` folder), where it is another than `here`'s (or `always`)."""
    if not theirs:
        return ""
    folder, there = os.path.dirname(os.path.dirname(theirs)), os.path.dirname(os.path.dirname(here))
    if not always and same_socket(folder, there):
        return ""
    return f" TMUX_TMPDIR={shlex.quote(folder)}"


class Daemon(Act, Launch, Admit, Housekeep):
    # -- life cycle -------------------------------------------------------------------------
    def serve(self) -> None:
        """Run until SIGTERM/SIGINT. Runs keep going in tmux after the daemon exits."""
        self.home.ensure()
        # what refuses a start is asked before the lock is taken: a daemon without tmux took
        # the lock and then died, and `--detach`, which waits for the lock, said it started
        # (walk98 F8; `--detach` now also waits for the first daemon.json)
        version = Tmux.version()
        self._same_tmux_server()
        lock_fd = self.home.acquire_lock()
        pid_recorded = self.home.record_pid(lock_fd)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        log.info("ajetd daemon %d on %s (tmux %s)", os.getpid(), self.home.root, version)
        self.gpus.probe = open_probe()
        self.campaigns.load(self.clock())
        log.info("GPUs: %s", self.gpus.probe.description)
        if not drawing.wanted():
            log.info("pictures: none drawn (%s=off)", drawing.OFF_ENV)
        try:
            self.reconcile(self.clock())
            self.watcher.start(self.home.inbox, self.home.control, (self.home.swarm,))
            self._watch_runs_folder()
            woken = True
            while not self.stopping:
                if not pid_recorded:  # a full home at start: written once there is room
                    pid_recorded = self.home.record_pid(lock_fd)
                began = self.clock()
                wait = self.turn(woken)
                ended = self.clock()
                self.last_turn = (began, ended, ended + wait)
                woken = self.wake.wait(wait)
                self.wake.clear()
            self.finish_before_stop()
        finally:
            self.watcher.stop()
            stopped = {"pid": None, "stopped_at": self.clock(), **self._frozen(self.clock())}
            with self._step("daemon", "saying it stopped"):
                self._write_daemon_json(stopped)
            with self._step("daemon", "closing its SSH connections"):
                for failed in sshcmd.stop_connections():  # not left open CONTROL_PERSIST_S
                    log.warning(
                        "the shared SSH connection to %s was not closed: it closes %d s after "
                        "its last use",
                        failed,
                        sshcmd.CONTROL_PERSIST_S,
                    )
            os.close(lock_fd)
            log.info("ajetd daemon stopped; runs go on in tmux")

    def _frozen(self, now: float) -> dict[str, float]:
        """`no_pass_since` for daemon.json at its stop: when its last pass began, where that
        pass took, or its wait after it overran, more than STOP_SLACK_S (frozen by SIGSTOP
        with a SIGTERM pending, then continued: walk 30). The next daemon's absence line
        counts from there, not from this stop, which a restart within seconds hid."""
        if self.last_turn is None:
            return {}
        began, ended, due = self.last_turn  # frozen in its wait, or within the pass itself
        if now - due <= STOP_SLACK_S and ended - began <= STOP_SLACK_S:
            return {}
        return {"no_pass_since": began}

    def _watch_runs_folder(self) -> None:
        """A live run's folder removed or moved by hand is made again within a pass
        (`Watcher.watch_runs_folder`); a runs folder that cannot be watched leaves it to the
        run's next supervision, said once."""
        try:
            self.home.runs.mkdir(mode=OWNER_DIR, exist_ok=True)
            self.watcher.watch_runs_folder(self.home.runs)
        except OSError as exc:
            log.warning(
                "%s is not watched (%s): a run folder removed by hand is made again at the "
                "run's next supervision",
                self.home.runs,
                exc.strerror or exc,
            )

    def _same_tmux_server(self) -> None:
        """Refuse to start where a live run's session is on another tmux server than this
        daemon's: it would see no session, call the run lost and end its program. A server is
        its socket's whole path (`Run.tmux_path`): the -L name in the folder TMUX_TMPDIR
        chose, so a daemon with the run's AJETD_TMUX_SOCKET and another TMUX_TMPDIR is
        refused too (walk98 F4), naming both variables. A record older than the path is held
        to the name alone. The records are read one at a time (`each_run`), as `reconcile`
        reads them: not all held at once."""
        mine = self.tmux.socket_name or DEFAULT_TMUX
        here = self.tmux.socket_path()
        for run in self.home.each_run():
            theirs = run.tmux_socket
            if not (run.active and run.session and theirs):
                continue
            if theirs != mine:
                raise StoreError(
                    f"run {run.run_id} lives on tmux server -L {theirs}, and this daemon would "
                    f"use -L {mine} (AJETD_TMUX_SOCKET): it would find none of its sessions "
                    f"and call its runs lost; start it with AJETD_TMUX_SOCKET={theirs}"
                    + _tmpdir_named(run.tmux_path, here)
                )
            if run.tmux_path and not same_socket(run.tmux_path, here):
                raise StoreError(
                    f"run {run.run_id} lives on the tmux server of socket {run.tmux_path}, and "
                    f"this daemon would use {here} (the -L name {mine} in the folder its "
                    "TMUX_TMPDIR chooses): it would find none of its sessions and call its "
                    "runs lost; start it with AJETD_TMUX_SOCKET="
                    f"{theirs}{_tmpdir_named(run.tmux_path, here, always=True)}"
                )

    def turn(self, woken: bool) -> float:
        """One pass of the loop at the clock's now: a full tick when an event woke it or a
        timer is due, else only new output is read; returns the seconds until the next pass
        (tests drive the loop with this and a fake clock, as `serve` does with real time)."""
        now = self.clock()
        full = woken or now >= self.next_full_at
        self.failures.in_pass = False
        with self._step("daemon", "tick"):  # the last net: the steps guard themselves
            if full:
                self.tick(now)
            else:  # only the live-scan timer is due: read new output, nothing else
                self.scan_output(now)
        wait = self._sleep_for(self.clock(), full)
        # a step that failed is tried again at the next pass: not at once, where its moment
        # stays due (a deep check whose record cannot be written), the loop would spin and
        # log as fast as it can; an exit file or a request still wakes it at once
        return max(wait, FAILED_PASS_PAUSE_S) if self.failures.in_pass else wait

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stop_now = self.stopping  # a second one: no more waiting for reports
        self.stopping = True
        self.wake.set()

    def finish_before_stop(self, bound: float = STOP_REPORTS_S) -> list[Run]:
        """A clean stop's last work: the ends whose exit files came before it are recorded,
        and the reports of the runs that ended (results.md, trials.md, finish.flag) written,
        within `bound` seconds in all: a stop right after a run ended left them to the next
        daemon, and said nothing (walk98 F19). A report whose folder refuses it (full,
        unwritable) is not waited for (it failed at once and waits for its retry), nor one
        whose record a full home holds. A final drawing still under way at the bound is ended
        (the next daemon draws it again); a copy back goes on in its child, whose outcome the
        next daemon takes. Runs still running go on in tmux. A second SIGTERM/SIGINT ends the
        wait. Returns the ended runs whose reports are left, each said in the log (`ajetd
        shutdown` names them from the records)."""
        began = time.monotonic()
        with self._step("daemon", "recording the ends that came before its stop"):
            self.record_ends(self.clock())
        waiting = self._reports_to_write()
        had = bool(waiting) or any(r.reports_pending for r in self.runs.unsettled_runs())
        if waiting:
            # no run is supervised any more: their pictures drawn at once, a core each at
            # most, not MAX_FINAL at a time (a picture's 1-2 s of CPU each is most of a stop)
            cores = min(len(waiting), os.cpu_count() or 1, STOP_DRAWINGS)
            self.finals.limit = max(self.finals.limit, cores)
            log.info(
                "stopping: the reports of %d ended run(s) first (%s; at most %.0f s)",
                len(waiting),
                " ".join(waiting),
                bound,
            )
        while waiting and not self.stop_now:
            with self._step("tmux", "reading ended trials' panes"):
                self.pane_tails.look()
            with self._step("disk", "writing what a full disk held back"):
                self.held.retry()
            self.retry_reports(self.clock())
            waiting = self._reports_to_write()
            left = began + bound - time.monotonic()
            if not waiting or left <= 0:
                break
            self.wake.wait(min(DRAW_POLL_S, left))
            self.wake.clear()
        with self._step("claims", "removing ended runs' claims"):  # as a tick ends
            pending = {r.run_id for r in self.runs.unsettled_runs() if r.reports_pending}
            self.claims.sweep({r.run_id for r in self.runs.live()} | pending)
        left_runs = [r for r in self.runs.unsettled_runs() if r.reports_pending]
        for run in left_runs:
            self.finals.forget(run.run_id)  # its drawing, if any: drawn again by the next
            why = f" (not done in {bound:.0f} s)" if run.run_id in waiting else ""
            if why and self.stop_now:
                why = " (a second stop signal)"
            log.warning(
                "run %s ended %s; its reports are left for the next daemon%s%s",
                run.run_id,
                run.status.value if run.status else "?",
                why,
                f": {run.attention}" if run.attention else "",
            )
        if had or began + 0.5 < time.monotonic():
            log.info("stopping: its last work took %.2f s", time.monotonic() - began)
        return left_runs

    def _reports_to_write(self) -> list[str]:
        """The ended runs whose reports a stop waits for: pending, their record on disk, and
        their folder not known to refuse them until a retry that is not due yet."""
        return [
            run.run_id
            for run in self.runs.unsettled_runs()
            if run.reports_pending
            and self.home.saved(run.run_id)
            and not self.troubles.blocked(Path(run.result_dir))
        ]

    def _sleep_for(self, now: float, full: bool) -> float:
        """Seconds until the next tick: the earliest timer (recomputed after full ticks only),
        or the live-scan period while some running trial keeps printing."""
        if full:
            self.next_full_at = self._next_full_tick(now)
        wake_at = self.next_full_at
        if self.live_growing:  # read new output again soon: signatures are noticed in time
            wake_at = min(wake_at, now + LIVE_SCAN_S)
        owed = [
            s.metrics_due_at
            for s in self.slots.values()
            if s.metrics_due_at is not None and s.run.state is State.RUNNING
        ]
        if owed:  # a read of printed records held back (`_output_moved`): a light tick then
            wake_at = min(wake_at, *owed)
        return min(max(wake_at - now, 0.005), self.cfg.liveness_s)

    def _next_full_tick(self, now: float) -> float:
        # the heartbeat's next publication too: a --liveness over a minute would let it age
        # past what `status` reads as a loop that stopped turning
        wake_at = [self.last_liveness + self.cfg.liveness_s, self.published_at + PUBLISH_EVERY_S]
        dead = [t + DEAD_STATUS_WAIT_S for t in self._dead()]  # status by then
        tmux_at = min((at for at, _ in self.tmux_wait.values()), default=None)  # a launch
        for at in (self.settle_at, self.troubles.next_at(), min(dead, default=None), tmux_at):
            if at is not None:
                wake_at.append(at)
        if self.swarm_waiting:
            wake_at.append(now + SWARM_POLL_S)
        for slot in self.slots.values():  # a time limit falling between trials (walk87 F9)
            deadline = slot.run.deadline
            if slot.run.state is State.RESTARTING and deadline is not None:
                wake_at.append(deadline)
        if self.copies.under_way:  # a copy back's end is noticed within this
            wake_at.append(now + COPY_POLL_S)
        if self.pane_tails.pending():  # a full disk's trial end: its pane read again
            wake_at.append(now + PANE_POLL_S)
        if self.finals.pending():  # a final drawing's end, its reports then
            wake_at.append(now + DRAW_POLL_S)
        campaign_at = self.campaigns.next_at(now)  # a deadline passing while one waits
        if campaign_at is not None:
            wake_at.append(campaign_at)
        running = [s.run for s in self.slots.values() if s.run.state is State.RUNNING]
        gpu_at = self.gpus.next_at(running, now)
        if gpu_at is not None:
            wake_at.append(gpu_at)
        # a run's moment that fell while this pass ran (from its start, `last_pass`, to
        # `now`: another run's end and reports take a while) was not decided by it: woken
        # for at once, not left out as past (it waited for the run's next full look, up to
        # SUPERVISE_ALL_S: walk90 F3's plateau `after:`, a time limit alike)
        began = min(self.last_pass, now) if self.last_pass is not None else now
        for slot in self.live_slots():
            own = self._own_wake(slot, now, began)
            wake_at += own
            slot.due_at = min(own, default=float("inf"))
        return min(wake_at)

    def _own_wake(self, slot: RunSlot, now: float, decided_at: float) -> list[float]:
        """When a live run's own timers next fire: its policy's next moment after its last
        decision (`decided_at`), its deep check."""
        window = policy_hang_window(slot.options.hang_window_s, self.cfg.timing, slot.step_times())
        quiet = [self._last_output(slot, now), slot.gpu_busy_at]
        since = max((t for t in quiet if t is not None), default=None)
        t = next_wake(slot.run, self.cfg.timing, window, since, decided_at, slot.options)
        own = [] if t is None else [t]
        if slot.backoff is not None:
            own.append(slot.backoff.next_at)
        return own

    def _dead(self) -> list[float]:
        """Since when the panes seen dead without an exit status were."""
        return [s.dead_since for s in self.slots.values() if s.dead_since is not None]

    def _due(self, slot: RunSlot, now: float, panes_fresh: bool) -> bool:
        """Whether a live run is looked at in full this tick: tmux was just asked about every
        pane, a moment of its own has come (time limit, a stop's next signal, its hang window,
        its deep check: `due_at`, from the last full tick; its deep check near another's that
        is due: `deep_batch`), it is stopping or flagged, a stop was asked, or it was not
        looked at for `SUPERVISE_ALL_S`. Its exit needs none of
        these: an exit file wakes the loop for that run alone (`record_ends`), and a pane
        process that ended makes the liveness period ask tmux. A run whose supervision waits
        for a full folder is due at every tick: its new output read alone would pass for the
        step going through and take the folder's line out of status."""
        run = slot.run
        if panes_fresh or run.stop_cause is not None or run.attention is not None:
            return True
        if (slot.run_id, SUPERVISING) in self.step_full:  # tried again, not only read
            return True
        if run.run_id in self.stop_asked or now - slot.supervised_at >= SUPERVISE_ALL_S:
            return True
        if self.deep_batch and slot.backoff is not None and slot.backoff.due(now, batch=True):
            return True
        return slot.due_at is None or now >= slot.due_at

    # -- the tick ---------------------------------------------------------------------------
    def tick(self, now: float) -> None:
        self.pass_before, self.last_pass = self.last_pass, now
        # the ends first, before the live folders' watches are brought up to date (0.2 ms at
        # 50 runs): the exit files it takes are of folders watched already
        self.live_growing = False
        self.deep_batch = False  # set by supervise_live once ends are on record
        ask_tmux = self.record_ends(now)
        self.watch_live()
        ask_tmux |= self.tmux_due
        self.tmux_due = False
        with self._step("tmux", "reading ended trials' panes"):  # once a pass: no waiting
            self.pane_tails.look()
        self.relaunch(now)  # a trial that ended into a next one: at once, before the rest
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
        self.watcher.trial_end.clear()  # exit files were taken by record_ends
        self.ends_meanwhile()
        self.supervise_live(now, ask_tmux)
        self.ends_meanwhile()
        self.relaunch(now)
        with self._step("hooks", "firing on_finish hooks"):  # the ends supervision just
            self._finish_hooks(now)  # recorded: fired in this pass, not a sleep later
        with self._step("campaigns", "advancing campaigns"):  # after supervision: a row as
            self.campaigns.tick(now, self.runs)  # soon as a run ends
        self.housekeeping(now)
        self.ends_meanwhile()
        with self._step("claims", "removing ended runs' claims"):
            # a run whose reports still wait (a full result dir) still holds its dir: its
            # claim goes once they are written, never while another daemon could move in
            waiting = {r.run_id for r in self.runs.unsettled_runs() if r.reports_pending}
            self.claims.sweep({r.run_id for r in self.runs.live()} | waiting)
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
            slot = self.slots.get(folder.name)
            if folder.parent != self.home.runs or slot is None or not path.endswith(".exit"):
                ask_tmux = True
                continue
            run = slot.run
            if run.state in LIVE:
                with self._each(run.run_id, SUPERVISING):  # the end first: as supervision
                    self.supervise(run.run_id, now, False)
                after = self.runs.get(run.run_id)
                ask_tmux |= after is None or after.trial == run.trial  # nothing came of it
        return ask_tmux

    def watch_live(self) -> None:
        """The live runs' folders are watched for their trials' end files, the others not: a
        run launched here was watched before its trial could go (`Launch._start`); this
        catches the runs live after a restart (before this tick reads their exit files) and
        drops the ended ones. Their trials' log folders are watched the same way, for the
        light tick (`Daemon.scan_output`); a folder refused is read as before, every tick."""
        live = self.live_slots()
        folders = {s.folder(self.home) for s in live}
        refused = self.watcher.keep_runs(folders)
        gone = {f for f in refused if self.run_folder_gone(Path(f).name, self.clock())}
        refused = {f: why for f, why in refused.items() if f not in gone}  # watched again
        for folder in refused.keys() - self.unwatched:  # said once, tried again each tick
            log.warning(
                "%s is not watched (%s): its trial's end is seen by polling",
                folder,
                refused[folder],
            )
        self.unwatched = set(refused)
        before = self.watcher.watched_logs()
        self.watcher.keep_logs({s.paths(self.home).log_dir for s in live if s.run.trial})
        # a log written between the last look at it and its watch (a trial launched last
        # tick: read once, empty, then its banner and a prompt) has no event for it: looked
        # at once more, else left unread until the run's next full look (flaky walk90 F2)
        self.logs_new = frozenset(self.watcher.watched_logs() - before)

    def ends_meanwhile(self) -> None:
        """Trials that ended while this tick ran are recorded between its steps, not after
        the rest of it: the steps after an end (tmux asked for every pane, the ended run's
        session closed, daemon.json written) take several milliseconds, and ends come close
        together (a campaign's trials, a job array). What else they need (tmux asked, a
        relaunch) comes with the next tick, which the same exit files have woken."""
        if self.watcher.ends_waiting():
            self.tmux_due |= self.record_ends(self.clock())

    def supervise_live(self, now: float, ended: bool) -> None:
        """Observe and act on every live run whose moment has come; the others' new output
        is read. tmux is asked at once when a trial ended (`ended`) or a dead pane is due."""
        fresh = False
        live = self.live_slots()
        self.deep_batch = any(s.backoff is not None and s.backoff.due(now) for s in live)
        with self._step("tmux", "listing panes"):
            recheck = any(now >= t + DEAD_STATUS_WAIT_S for t in self._dead())
            fresh = self.refresh_panes(now, force=ended or recheck)
        written = self.watcher.logs_written()  # the light tick's filter, also here
        watched = self.watcher.watched_logs()
        for slot in live:
            if self._due(slot, now, fresh):
                with self._each(slot.run_id, SUPERVISING):
                    self.supervise(slot.run_id, now, fresh)
                    slot.supervised_at = now
            elif written is None or self._may_have_output(slot, written, watched, now):
                self._read_output(slot, now, SUPERVISING)  # nothing of its own is due: only
                # its new output is read, where it may have any, and decided where that
                # changed what its decision reads (a run not due is looked at in full within
                # SUPERVISE_ALL_S all the same)
        self.logs_new = frozenset()  # each looked at since its watch came

    def scan_output(self, now: float) -> None:
        """The light tick: new output of running trials is read, nothing else is done but
        the decisions it changed (`_read_output`). Only the logs that may hold something
        unread are looked at (`_may_have_output`)."""
        self.live_growing = False
        written = self.watcher.logs_written()  # first: it takes the watches the kernel ended
        watched = self.watcher.watched_logs()
        for slot in list(self.slots.values()):
            if written is None or self._may_have_output(slot, written, watched, now):
                self._read_output(slot, now, "reading its output")

    def _read_output(self, slot: RunSlot, now: float, step: str) -> None:
        """A run's new output and records read (`_scan_new_output`, as its `step`), and where
        they changed what its decision reads, the run decided at once, within the light
        tick's period: a prompt flagged (`ajetd wait` exits 2, on_attention runs), a plateau
        stopped as its records show it, a hang flag cleared as output resumes (walk90 F2, F3:
        each waited for the run's next full look, up to SUPERVISE_ALL_S). Its own timers are
        then brought up to date (a stop's graces), as a full tick's are."""
        changed = False
        with self._each(slot.run_id, step):
            changed = self._scan_new_output(slot, now)
        if not changed:
            return
        with self._each(slot.run_id, SUPERVISING):
            self.supervise(slot.run_id, now, False, read=False)
            slot.supervised_at = now
            if slot.run.state in LIVE:
                own = self._own_wake(slot, now, now)
                slot.due_at = min(own, default=float("inf"))
                self.next_full_at = min([self.next_full_at, *own])

    def housekeeping(self, now: float) -> None:
        with self._step("gpus", "sampling GPUs"):
            self.sample_gpus(now)
        with self._step("housekeeping", "closing old sessions"):
            self.housekeep(now)
        with self._step("hooks", "reaping hooks"):
            self.hooks.reap()
        with self._step("plots", "reaping plot drawers"):
            self.live_plots.reap()
