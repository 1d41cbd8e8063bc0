"""The act step: for each live run, observe -> decide -> act. `policy.decide` (pure) says what
to do; each action of its closed union is carried out here, by one `match` that mypy checks
is exhaustive. A trial that ends into another (a restart with its fix, a pipeline's next stage)
is recorded here and launched by the tick's relaunch step."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

from ajetd.adapters import procs
from ajetd.adapters.tmux import Pane, PanesAsked, find_pane
from ajetd.core import launchshape, model, stopnote
from ajetd.core.errors import TmuxError
from ajetd.core.finding import Finding
from ajetd.core.model import Run, Status
from ajetd.core.policy import (
    UNSENT_RETRY_S,
    Action,
    Attention,
    BeginStop,
    Finish,
    NextStage,
    Restart,
    Send,
    decide,
    signal_went,
    trial_end,
)
from ajetd.daemon import ending, lostoutput, trials
from ajetd.daemon.observe import Observe
from ajetd.daemon.slots import RunSlot

log = logging.getLogger(__name__)
Findings = tuple[Finding, ...]
Seen = tuple[Findings, float | None]  # a failed trial's findings; when its program exited


def unreachable(action: NoReturn) -> NoReturn:
    """mypy proves this is never called: every action of the union has its case."""
    raise AssertionError(f"not an action: {action!r}")


class Act(Observe):
    def supervise(self, run_id: str, now: float, panes_fresh: bool, read: bool = True) -> None:
        """observe -> decide -> act for one live run (pane facts only when `panes_fresh`);
        `read` False: its new output and records were just read (`Daemon._read_output`)."""
        slot = self.slots.get(run_id)
        if slot is None or slot.run.trial is None or slot.run.trial.started_at is None:
            return
        if not slot.paths(self.home).exit.parent.is_dir():  # moved or removed by hand (its watch
            self.run_folder_gone(run_id, now)  # may not say: a file open in it holds it)
        pane = slot.current_pane()
        obs = self.observe(slot, now, panes_fresh)

        if read:  # (a run due at every tick, its attention set, has no light one)
            self._deep_check(slot, now)
        if read and obs.exit is None:
            self.notice_moves(slot, now)
            self._live_scan(slot, now, slot.paths(self.home).log)
            # output it is losing (a full disk, its log writer gone), said while it runs
            seen = slot.current_pane() if panes_fresh else None
            log_file = slot.paths(self.home).log
            self._store(lostoutput.notice(self.home, slot.run, log_file, seen, now))
        self._store(slot.host.notes(slot.run, now))
        self._take_noted_stop(slot, pane, now)
        run = slot.run
        exited = obs.exit[1] if obs.exit is not None else None  # the pane's line too
        for action in decide(run, obs, self.cfg.timing, slot.options):
            run = self._act(slot, run, action, now, pane, (obs.findings, exited))
        self._store(run)
        if obs.stop_requested and self.home.saved(run_id):  # taken once on record, not before
            self.home.stop_request(run_id).unlink(missing_ok=True)

    def _take_noted_stop(self, slot: RunSlot, pane: Pane | None, now: float) -> None:
        """A stop its pane kept (`core.stopnote`) and its record lacks: begun by a daemon that
        ended while its home was full. Taken back before the exit or the next signal is
        decided, so the run ends as that stop decided, and no signal is sent twice."""
        noted = stopnote.noted_stop(slot.run, pane.stop_note, now) if pane is not None else None
        if noted is None or noted.stop_cause is None:
            return
        why = f" ({noted.stop_reason})" if noted.stop_reason else ""
        self.home.append_event(
            noted.run_id,
            now,
            f"stopping: {noted.stop_cause.value}{why}, as its tmux pane kept it (the daemon "
            "that began it ended before its home had room for the record)",
        )
        self._store(noted)

    def _note_stop(self, slot: RunSlot, pane: Pane | None, run: Run) -> None:
        """While a stop's record is held in memory by a full home, keep it on the pane too,
        before its first signal goes out (a daemon killed between the two lost it)."""
        if pane is None or run.stop_cause is None or self.home.saved(run.run_id):
            return
        note = stopnote.stop_note(run)
        if note in (pane.stop_note, slot.stop_noted):
            return
        try:
            self.tmux.note_stop(pane.pane_id, note)
        except TmuxError as exc:
            log.warning("run %s: its stop could not be kept on its pane: %s", run.run_id, exc)
            return
        slot.stop_noted = note

    def _act(
        self,
        slot: RunSlot,
        run: Run,
        action: Action,
        now: float,
        pane: Pane | None,
        seen: Seen,
    ) -> Run:
        """Carry out one action; `seen`: the failed trial's findings and its exit's time."""
        pid = pane.pid if pane is not None else (run.trial.pane_pid if run.trial else None)
        match action:
            case Finish():
                return self._finish(slot, run, action, now, pid, seen)
            case Restart():
                return self._restart(slot, run, action, now, pid, seen)
            case NextStage():
                return self._next_stage(slot, run, action, now, pid, seen[1])
            case BeginStop():
                why = f" ({action.why})" if action.why else ""
                self.home.append_event(run.run_id, now, f"stopping: {action.cause.value}{why}")
                run = model.begin_stop(run, action.cause, now, action.why)
                # on record before the first signal: a daemon killed between the two would
                # otherwise find the program ended by its SIGINT (130) and no stop on record,
                # and call the run failed (bench/chaos.py found it); on its pane too while a
                # full home holds the record back
                self._store(run)
                self._note_stop(slot, pane, run)
                return run
            case Send():
                return self._send(slot, run, action.signal.value, now, pid)
            case Attention() if action.reason == run.attention:
                return run  # already so (a hang flag stays while silent): no event, no hook again
            case Attention():
                self.home.append_event(run.run_id, now, f"attention: {action.reason or 'cleared'}")
                run = model.set_attention(run, action.reason)
                if action.reason:
                    self._hook(run, "on_attention", now)
                return run
            case _:
                unreachable(action)

    def _send(self, slot: RunSlot, run: Run, sig: str, now: float, pid: int | None) -> Run:
        """A stop's signal to the trial. One its place did not take (an SSH host that does not
        answer) is not counted as sent: said once, tried again (`policy.UNSENT_RETRY_S`) until
        it goes, its grace then counted from that moment (walk87 F8: SIGINT, SIGTERM and
        SIGKILL were journalled as sent to nothing, and the program ran on for ever)."""
        size = None if run.signals_sent else _size(slot.paths(self.home).log)
        count = slot.host.signal(run, pid, sig)
        if count is None:
            if run.signal_unsent_at is None:
                said = (
                    f"SIG{sig} not sent: {slot.host.name} does not answer; "
                    f"tried again every {UNSENT_RETRY_S:.0f} s until it goes"
                )
                log.warning("run %s: %s", run.run_id, said)
                self.home.append_event(run.run_id, now, said)
            return replace(run, signal_unsent_at=now)
        if run.signal_unsent_at is not None:
            said = f"sent SIG{sig} ({count}), late: {slot.host.name} answers again"
            run = signal_went(run, sig, self.cfg.timing, now)
        else:
            said = f"sent SIG{sig} ({count})"
        self.home.append_event(run.run_id, now, said)
        return model.signal_sent(run, sig, size)

    def _others(self, pid: int | None) -> dict[int, int]:
        """The other panes' processes (pid: start time, as tmux listed them last): what runs
        in their sessions is not this trial's (`procs.run_pids`)."""
        return {p: t for p, t in self.pane_starts.items() if p != pid and t is not None}

    def _finish(
        self, slot: RunSlot, run: Run, action: Finish, now: float, pid: int | None, seen: Seen
    ) -> Run:
        """The run ends: cleaned up where it ran, recorded, reported; its slot is dropped.
        Its session's name is asked of tmux once the end is on record, before the reports
        (renamed since the panes were last listed: its reports and the session's close use
        the name it has); a tmux call is milliseconds no end's record should wait for."""
        slot.host.end(run, now, final=True)
        found, exited = seen
        action = self._detached(slot, run, action, now, pid)
        failed = action.status is Status.FAILED
        end = ending.TrialEnd(
            action.reason,
            action.exit_code,
            pid,
            found or None,
            self._others(pid),
            failed,
            exited,
            _elsewhere(slot),
        )
        fetch, options = slot.host.fetch, slot.options
        named = functools.partial(self._named_now, slot, now) if run.session else None
        run = ending.finish_run(
            self.home, run, action.status, end, now, fetch, options, self.finals, named
        )
        self._keep(run)  # finish_run saved it: not saved a second time
        # fired once the end is on disk, by the loop's own step later in this tick: never
        # here, where the caller still stores the run it holds (the mark would come back)
        self.on_finish_due(run, slot.options)
        return run

    def _detached(
        self, slot: RunSlot, run: Run, action: Finish, ended: float, pid: int | None
    ) -> Finish:
        """A success that is none: the command exited 0 soon after it started, no record
        was read, and processes it started run on (`launchshape.detached_end`): it put the
        program in the background, and the end would end the training as a leftover. Failed,
        saying so (walk 86: `succeeded` in 0 s). Only where the program ran here (its
        processes are this machine's), and one pass over /proc, at a success's end only."""
        trial = run.trial
        if (
            action.status is not Status.SUCCEEDED
            or action.exit_code != 0
            or trial is None
            or trial.started_at is None
            or run.history
            or slot.host.machine is not None
            or not slot.host.pane_tells
        ):
            return action
        lasted = max(ended - trial.started_at, 0.0)
        if lasted > launchshape.DETACHED_WITHIN_S:
            return action
        left = procs.live_commands(run.run_id, pid, run.started_at, self._others(pid))
        why = launchshape.detached_end(lasted, len(run.history), left)
        return action if why is None else Finish(Status.FAILED, why, 0)

    def _named_now(self, slot: RunSlot, now: float) -> Callable[[Run], Run]:
        """Asks tmux for the panes now (one call, started, not waited for) and gives how the
        answer names the run: `session_seen` with the trial's pane as tmux lists it (a tmux
        that does not answer leaves the name as recorded). Asked for a run whose end is on
        record, whose pane stays until housekeeping closes it."""
        try:
            asked: PanesAsked | None = self.tmux.panes_soon()
        except TmuxError:
            asked = None

        def named(run: Run) -> Run:
            if asked is None or run.trial is None or not run.session:
                return run
            try:
                pane = find_pane(asked.panes(), slot.paths(self.home).script)
            except TmuxError:
                return run
            return run if pane is None else self.session_seen(run, pane.session, now, True)

        return named

    def _next_stage(
        self,
        slot: RunSlot,
        run: Run,
        action: NextStage,
        now: float,
        pid: int | None,
        exited: float | None,
    ) -> Run:
        reason = f"stage done; next: stage {action.name}"
        end = ending.TrialEnd(reason, 0, pid, (), self._others(pid), exited_at=exited)
        run = ending.end_trial(self.home, run, end, now)
        slot.host.end(run, now, final=False)
        run = model.next_stage(run, action.command, f"stage {action.name} next")
        self.home.append_event(run.run_id, now, f"stage {action.name} next: {action.command}")
        self._store(run)
        self.relaunch_due = True
        return run

    def _restart(
        self, slot: RunSlot, run: Run, action: Restart, now: float, pid: int | None, seen: Seen
    ) -> Run:
        """End the failed trial and record the fix; the relaunch step starts the next trial."""
        fix = action.remedy
        reason = trial_end(run, action.exit_code)
        command = config_path = None
        if fix.config_patches:
            env = {**trials.trial_env(run, slot.options), **dict(fix.env)}  # the next trial's
            moved = trials.config_fix(run, dict(fix.config_patches), slot.host.fs(), env)
            if isinstance(moved, str):
                why = f"{reason}; {fix.why}, but it cannot reach what runs ({moved})"
                ended = Finish(Status.FAILED, why, action.exit_code)  # an end as any other:
                return self._finish(slot, run, ended, now, pid, seen)  # cleanup, hooks
            command, config_path = moved
        found, exited = seen
        end = ending.TrialEnd(
            reason,
            action.exit_code,
            pid,
            found,
            self._others(pid),
            exited_at=exited,
            elsewhere=_elsewhere(slot),
        )
        run = ending.end_trial(self.home, run, end, now)
        slot.host.end(run, now, final=False)
        run = model.restart(
            run,
            fix.fix,
            fix.why,
            fix.env,
            fix.prefix,
            command,
            config_path,
            kind=action.kind,
            config=fix.config_changes(),
        )
        self.home.append_event(run.run_id, now, f"trial {len(run.trials)} failed; {fix.why}")
        self._store(run)
        log.info("run %s: %s", run.run_id, fix.why)
        self.relaunch_due = True
        return run


def _elsewhere(slot: RunSlot) -> str:
    """The place the run's trials run when it is not this machine (`TrialEnd.elsewhere`)."""
    return "" if slot.host.machine is None else slot.host.name


def _size(log: Path) -> int | None:
    """The trial log's size before ajetd's first signal (taken before it is sent: what comes
    after is the program's reaction to it); None where it cannot be read."""
    try:
        return os.stat(log).st_size
    except OSError:
        return None
