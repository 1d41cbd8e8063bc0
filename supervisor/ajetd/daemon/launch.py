"""The launch step: queued and restarting runs are placed (GPUs), checked for what they need
before they start (stage inputs, their swarm server answering), prepared and let go. The
relaunch step of the tick is this one again, for trials that ended into a next one."""

from __future__ import annotations

import logging
from dataclasses import replace

from ajetd.adapters import diskfull, procs
from ajetd.adapters.samefile import one_file_as
from ajetd.adapters.tmux import Pane
from ajetd.core import model, placement
from ajetd.core.backoff import Backoff
from ajetd.core.errors import AjetdError, TmuxError
from ajetd.core.model import Run, State, Status
from ajetd.core.policy import DATA_KEPT
from ajetd.daemon import trials
from ajetd.daemon.base import Base
from ajetd.daemon.slots import RunSlot
from ajetd.hosts import swarm

log = logging.getLogger(__name__)


class Launch(Base):
    def launch(self, now: float) -> None:
        self.swarm_waiting = self.relaunch_due = False
        self.tmux_wait = {k: v for k, v in self.tmux_wait.items() if k in self.slots}
        queue = sorted(
            (s for s in self.slots.values() if s.run.state in model.WAITING),
            key=lambda s: model.launch_order(s.run),
        )
        queue = [s for s in queue if not self._past_deadline(s, now)]
        queue = [s for s in queue if not self._val_file_taken(s, now)]
        places = self.placer.decide(queue, self.slots, now)
        self.reserved = {
            gpu: slot.run_id
            for slot in queue
            if slot.host.machine is None
            and isinstance(place := places[slot.run_id], placement.Wait)
            for gpu in place.reserves
        }
        for slot in queue:
            with self._each(slot.run_id, "launching it"):
                self._launch_one(slot, places[slot.run_id], now)
        if self.home.root in self.troubles.full:
            return
        for slot in list(self.slots.values()):  # prepared, but a full home (or a silent tmux)
            trial = slot.run.trial  # kept it from going
            if self._tmux_waits(slot.run_id, now):
                continue
            if slot.run.state is State.RUNNING and trial is not None and trial.started_at is None:
                with self._each(slot.run_id, "launching it"):
                    self._start(slot, now)

    def relaunch(self, now: float) -> None:
        """The relaunch step: trials that ended into a next one this tick (a restart with its
        fix, a pipeline's next stage) are launched, with whatever else waits."""
        if self.relaunch_due:
            with self._step("launch", "relaunching"):
                self.launch(now)

    def _launch_one(self, slot: RunSlot, place: placement.Decision, now: float) -> None:
        if self.home.root in self.troubles.full:  # its script and go file need the home
            why = f"waiting: {self.home.root} is full ({diskfull.free_space(self.home.root)} free)"
            self._store(model.waiting(slot.run, why))
            return
        if self._tmux_waits(slot.run_id, now):
            return
        if self.pane_tails.waiting(slot.run_id):  # its pane's last trial's lines first
            return
        if not self._placed(slot.run, place, now) or not self._may_start(slot, now):
            return
        queued = _val_offset_now(slot)
        taken = trials.active_sessions(self.runs.live())
        try:
            panes = self.tmux.panes_or_empty()
            run = trials.prepare_trial(
                self.home, self.tmux, queued, slot.options, slot.host, taken, panes, now
            )
        except (AjetdError, OSError) as exc:
            if isinstance(exc, OSError) and diskfull.is_full(exc):  # it waits for space
                self.troubles.hit(self.home.root, exc, "$AJETD_HOME")
                self.home.save_run(queued)
                return
            if not self._tmux_silent(queued, exc, now):
                self._launch_failed(queued, exc, now)
            return
        self._keep(run)  # prepare_trial saved it
        if self._start(slot, now, panes):
            log.info(
                "run %s: trial %d started in session %s", run.run_id, len(run.trials), run.session
            )

    def _past_deadline(self, slot: RunSlot, now: float) -> bool:
        """A run waiting between trials (GPUs, memory to drain, its swarm server, tmux, a
        full home) whose time limit fell: it ends `time_limit` at once, no trial launched
        after it (walk87 F9: it waited, then launched a trial past its limit)."""
        run = slot.run
        if run.state is not State.RESTARTING or run.deadline is None or now < run.deadline:
            return False
        waited = f" ({model.wait_cause(run.reason)})" if run.reason else ""
        why = f"stopped at exp_max_time while it waited to relaunch{waited}; {DATA_KEPT}"
        self._store(self._finish_now(run, Status.TIME_LIMIT, why, now))
        return True

    def _val_file_taken(self, slot: RunSlot, now: float) -> bool:
        """The run waits for its val file (another live run writes it): recorded with the
        reason; it reserves no GPU meanwhile (it could not use one)."""
        run = slot.run
        why = placement.val_file_wait(run, self.runs.live(), one_file_as, self.here)
        if why is None and run.val_path and not run.trials and self.here(run):
            other = self.claims.val_file(run.run_id, run.val_path)  # other daemons' runs
            if other is not None:
                why = (
                    f"waiting for {other} to end: it writes the same val file {run.val_path} "
                    "(AgentJet appends every validation to it)"
                )
        if why is None:
            return False
        if why != slot.run.reason:
            self.home.append_event(slot.run_id, now, why)
        self._store(model.waiting(slot.run, why))
        return True

    def _placed(self, run: Run, decision: placement.Decision, now: float) -> bool:
        """Record where a waiting run goes, or why it waits or can never start."""
        if isinstance(decision, placement.Never):
            self._launch_failed(run, decision.reason, now)
            return False
        if isinstance(decision, placement.Wait):
            why = model.bounded_wait(run, decision.reason)
            if why != run.reason:
                self.home.append_event(run.run_id, now, why)
            self._store(model.waiting(run, why))
            return False
        if decision.gpus and self.here(run):  # seen by other daemons on this machine
            other = self.claims.gpus(run.run_id, self.gpu_keys(decision.gpus))
            if other is not None:
                where = ", ".join(map(str, decision.gpus))
                why = model.bounded_wait(run, f"waiting: GPU(s) {where} are held by {other}")
                if why != run.reason:
                    self.home.append_event(run.run_id, now, why)
                self._store(model.waiting(run, why))
                return False
        if decision.gpus != run.gpu_ids:
            if decision.gpus:
                where = ", ".join(map(str, decision.gpus))
                self.home.append_event(run.run_id, now, f"placed on GPU(s) {where}")
            self._store(replace(run, gpu_ids=decision.gpus))
        return True

    def _may_start(self, slot: RunSlot, now: float) -> bool:
        """Whatever a run needs before its trial starts is there (the files its pipeline stage
        requires, its swarm server answering); if not, the run keeps waiting with the reason
        in status, or fails with it."""
        opts, run = slot.options, slot.run
        if opts.stages and run.stage < len(opts.stages):
            stage = opts.stages[run.stage]
            missing = self._missing(slot, stage.requires)
            if missing:
                why = f"stage {stage.name} requires {', '.join(missing)}, which does not exist"
                self._launch_failed(run, why + ": not started", now)
                return False
        return opts.swarm is None or self._swarm_ready(slot, now)

    def _swarm_ready(self, slot: RunSlot, now: float) -> bool:
        """A swarm client goes only against a server that answers (started here if need be)."""
        run, spec = slot.run, slot.options.swarm
        assert spec is not None
        gate = self.swarm.gate(spec, run, trials.trial_env(run, slot.options), now)
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

    def _start(self, slot: RunSlot, now: float, panes: list[Pane] | None = None) -> bool:
        """Let a prepared trial go and schedule its deep checks; a failed launch ends the run.
        `panes`: tmux's panes as just listed for its preparation, if they were."""
        run = slot.run
        try:  # its exit file wakes the loop from the start (the periodic checks if not)
            self.watcher.watch_run(self.home.run_dir(run.run_id))
        except OSError as exc:
            log.warning(
                "run %s: its folder is not watched (%s): its end is seen by polling",
                run.run_id,
                exc,
            )
        try:  # start_trial saved it: not saved a second time
            started = trials.start_trial(self.home, self.tmux, run, self.clock(), slot.host, panes)
            self._keep(started)
        except (AjetdError, OSError) as exc:
            if isinstance(exc, diskfull.RemoteFullError):  # the host's: shown, tried again
                raise  # at each tick by `_each` (`step_full`), as a fix's full folder is
            if isinstance(exc, OSError) and diskfull.is_full(exc):  # let go once there is room
                self.troubles.hit(self.home.root, exc, "$AJETD_HOME")
                return False
            if not self._tmux_silent(run, exc, now):
                self._launch_failed(run, exc, now)
            return False
        self._tmux_answered(run.run_id, now)
        if len(run.trials) > 1 and self.pipes_due is not None:  # the pane respawned: the
            self.pipes_due.add(run.run_id)  # last trial's writer ends, its FIFOs can go
        slot.backoff = Backoff.start(now, self.cfg.backoff_scale)
        pid = slot.run.trial.pane_pid if slot.run.trial is not None else None
        if pid:  # known from its start, not only from tmux's next listing (up to a minute)
            self.pane_starts[pid] = procs.started(pid)
        return True

    def _tmux_waits(self, run_id: str, now: float) -> bool:
        """The run's launch waits for a tmux server that did not answer, and its next try is
        not due yet."""
        held = self.tmux_wait.get(run_id)
        return held is not None and now < held[0]

    def _tmux_silent(self, run: Run, exc: Exception, now: float) -> bool:
        """A launch that failed because tmux did not answer in time (a timeout, no refusal)
        is no failure of the run: it stays as it was (queued, or its trial prepared and not
        let go) with the reason in status, and is tried again 1 s, 2 s, 4 s ... (at most a
        minute) later, as a full disk's writes are. Exactly once still: a new-session that
        timed out may have made the session, which the next try finds by its script's pane
        (`trials.start_trial`) and lets go, never a second. False for any other failure."""
        if not isinstance(exc, TmuxError) or not exc.silent:
            return False
        scale = self.cfg.backoff_scale
        held = self.tmux_wait.get(run.run_id)
        first = max(diskfull.RETRY_FIRST_S * scale, diskfull.RETRY_FLOOR_S)
        most = max(diskfull.RETRY_MAX_S * scale, diskfull.RETRY_FLOOR_S)
        delay = first if held is None else min(held[1] * 2, most)
        self.tmux_wait[run.run_id] = (now + delay, delay)
        why = f"waiting: tmux did not answer ({exc}); its launch is tried again"
        if held is None:
            log.warning("run %s: %s", run.run_id, why)
            self.home.append_event(run.run_id, now, why)
        self._store(model.waiting(run, why))
        return True

    def _tmux_answered(self, run_id: str, now: float) -> None:
        """The launch went through: a wait for tmux, if there was one, is over (journalled)."""
        if self.tmux_wait.pop(run_id, None) is not None:
            self.home.append_event(run_id, now, "tmux answered again: launched")

    def _launch_failed(self, run: Run, exc: Exception | str, now: float) -> None:
        log.error("run %s: launch failed: %s", run.run_id, exc)
        self._store(self._finish_now(run, Status.FAILED, f"launch failed: {exc}", now))


def _val_offset_now(slot: RunSlot) -> Run:
    """A run about to launch its first trial counts only the validation lines written from
    now on: its val file may have grown since admission (a run it waited for wrote it)."""
    run = slot.run
    if run.trials or run.val_path is None:
        return run
    try:
        size = slot.host.fs().size(run.val_path)
    except AjetdError as exc:  # a host that does not answer: the launch says so itself
        log.warning("run %s: val file's size not read: %s", run.run_id, exc)
        return run
    return run if size is None or size <= run.val_offset else replace(run, val_offset=size)
