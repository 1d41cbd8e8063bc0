"""The observe step: what is true of each live run now, gathered in one place.

tmux is asked about every pane once per liveness period (less while every pane process is
still the one it listed), each place's poller with it (one `squeue` for all Slurm runs); a
run's own files say the rest: its exit file, its new output (read and diagnosed as it comes),
its val file (on the deep-check backoff), its GPUs (on the sampling timer). `observe(slot,
now)` turns that into the `Observation` that `policy.decide` takes.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from ajetd.adapters import diskfull, procs, trialfiles
from ajetd.adapters.samefile import one_file_as
from ajetd.adapters.store import Home
from ajetd.adapters.tmux import find_pane, moved_note
from ajetd.adapters.trialfiles import read_exit
from ajetd.core import gpuuse, model, onefile, placement
from ajetd.core.errors import AjetdError, TmuxError
from ajetd.core.exitfile import parse_exit_note
from ajetd.core.finding import Finding
from ajetd.core.limits import VAL_TICK_BYTES
from ajetd.core.model import Run, State
from ajetd.core.policy import Observation, inputs_changed
from ajetd.core.remedy import PROXYCHAINS, port_from_text
from ajetd.core.trialscript import OWN_LINE_PREFIX, trial_rows
from ajetd.daemon import ending, trials
from ajetd.daemon.base import Base
from ajetd.daemon.gpuwatch import GPU_LOST, lost_finding
from ajetd.daemon.slots import RunSlot
from ajetd.diagnosis.live import diagnose_file
from ajetd.diagnosis.scan import log_tail
from ajetd.diagnosis.stream import diagnose_text
from ajetd.frameworks.framework import framed
from ajetd.hosts import swarm
from ajetd.hosts.ssh import SSH_LOST
from ajetd.pictures import drawing
from ajetd.views.records import validation_news

WRITER_ASK_AGAIN_S = 5.0  # how often a trial's log writer is asked while its log is missing

log = logging.getLogger(__name__)
DEAD_STATUS_WAIT_S = 0.5  # how long a dead pane may show no exit status before `lost`
TMUX_POLL_MAX_S = 60.0  # the longest wait between two `list-panes` while pane processes live
FRESH_SLACK_S = 2.0  # a stage's output written this long before its start still counts (mtime)
Exit = tuple[int, float | None]


def _proxychains() -> str | None:
    """The installed proxychains to relaunch a network failure under, if any."""
    return next((found for name in PROXYCHAINS if (found := shutil.which(name))), None)


def _port_holder(findings: tuple[Finding, ...], run_id: str) -> str | None:
    """For a root `port_in_use` naming its port: who holds it, if not this run."""
    if not findings or findings[0].kind != "port_in_use":
        return None
    port = port_from_text(findings[0].evidence)
    return None if port is None else procs.port_holder(port, run_id)


class Observe(Base):
    # -- tmux and the places, once per liveness period ------------------------------------------
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
        started = [(s.run, s.host) for s in self.live_slots() if _started(s)]
        for run in self.places.poll(started, now):
            self._store(run)
        self.pane_starts = {}
        for slot in self.slots.values():
            slot.pane = None
            if slot.run.trial is not None:
                pane = find_pane(panes, slot.paths(self.home).script)
                if pane is not None:
                    slot.pane = (slot.run.trial.number, pane)
                    self._store(self.session_seen(slot.run, pane.session, now))
                    if pane.pid and not pane.dead:
                        self.pane_starts[pane.pid] = procs.started(pane.pid)
        return True

    def _panes_alive(self) -> bool:
        """Every running trial's pane process is still the one tmux listed (same pid, same
        start time), and no run needs tmux or its place asked (swarm servers, Slurm jobs)."""
        for slot in self.live_slots():
            if slot.options.swarm is not None or not slot.host.pane_tells:
                return False
            if not _started(slot):
                continue
            pane = slot.current_pane()
            if pane is None or pane.dead or not pane.pid:
                return False
            began = self.pane_starts.get(pane.pid)
            now_seen = procs.pane_process(pane.pid)
            if began is None or now_seen is None or now_seen[0] != began:
                return False
            if now_seen[1]:  # it lost its terminal: the session was killed, it lingers
                return False
        return True

    def _server_died(self, port: int, why: str, now: float) -> None:
        """A swarm server died under running clients: each gets the finding and is
        interrupted; its relaunch waits for the server to answer again."""
        finding = self.swarm.died_finding(port, why)
        log.warning("swarm: %s", finding.evidence)
        for slot in list(self.slots.values()):
            run, spec = slot.run, slot.options.swarm
            if run.state is not State.RUNNING or spec is None or spec.port != port:
                continue
            if run.trial is None:
                continue
            self.home.append_event(run.run_id, now, f"{swarm.SERVER_DIED}: {finding.evidence}")
            self._store(model.found_live(run, (finding,)))
            procs.signal_run(run.run_id, run.trial.pane_pid, "INT", run.started_at)

    # -- one run ------------------------------------------------------------------------------
    def observe(self, slot: RunSlot, now: float, panes_fresh: bool) -> Observation:
        """What is true of a live run's trial now (pane facts only when `panes_fresh`); for a
        failed trial, its findings, root cause first."""
        exit_info, gone, dead_status = self._exit_seen(slot, now, panes_fresh)
        if exit_info is not None and _started(slot):  # a log folder gone at the end: said
            self.notice_moves(slot, now)
        if exit_info is not None and slot.run.slurm.waiting:
            # a job that began and ended between two polls (they back off while nothing
            # changes): Slurm says when it ran, so its wait is not counted as its run time
            settled = slot.host.settle(slot.run, self.clock())
            if settled is not slot.run:
                self._store(settled)
        run = slot.run
        code = exit_info[0] if exit_info is not None else None
        failed = code not in (0, None) and run.stop_cause is None
        said = code == 0 and trials.says_how_it_ended(run)
        if (failed or said) and run.trial is not None:
            # what is read below from the log (a failure's traceback, how a NeMo-RL run said
            # it ended) must have come through tmux first: the end is seen sooner. A clean
            # exit reads nothing there, so its record does not wait (its reports do)
            log_file = slot.paths(self.home).log
            if not trials.await_output(log_file, run.trial.number):
                # its writer notes a folder gone at the pane's end, maybe after the exit was
                # seen: the findings are read from the spare, not from a path now gone (then
                # the pane's, with no log line)
                self.notice_moves(slot, now)
                if slot.paths(self.home).log != log_file:
                    trials.await_output(slot.paths(self.home).log, run.trial.number)
        asked = _filed_at(self.home.stop_request(run.run_id))
        # whether its program printed anything, read once its time limit is due (a stop's
        # why says so), before any signal: a killed program's shell may print a line
        limit_due = run.deadline is not None and now >= run.deadline and run.stop_cause is None
        printed = not (limit_due and exit_info is None) or self._printed(slot)
        key = (run.run_id, run.trial.number) if run.trial is not None else None
        findings: tuple[Finding, ...] = ()
        if exit_info is not None and run.trial is not None:
            self._keep_pane_tail(slot)
        config = holder = None
        first_step = slot.first_step_at()  # (before a failure's diagnosis ends its reader)
        if failed and code is not None:
            findings = self._failure_findings(slot, code)
            config = self._config(slot)
            holder = _port_holder(findings, run.run_id)
        pane_dead = gone and (pane := slot.current_pane()) is not None and pane.dead
        return Observation(
            now=now,
            exit=exit_info,
            gone=gone,
            dead_status=dead_status,
            pane_dead=pane_dead,
            unlisted=slot.unlisted,
            # asked once: a session gone ends the run in this pass
            gone_why=self.tmux.gone_why() if gone and not pane_dead and dead_status is None else "",
            stop_requested=asked is not None,
            stop_requested_at=asked,
            # read now, not at the pass's start: a daemon frozen within a pass reads a stop
            # filed meanwhile after its `now` (walk 30), and its lateness counts from here
            stop_read_at=self.clock() if asked is not None else None,
            last_output_at=self._last_output(slot, now),
            findings=findings,
            proxychains=_proxychains() if findings else None,
            config=config,
            port_holder=holder,
            step_times=slot.step_times(),
            first_step_at=first_step,
            gpu_busy_at=slot.gpu_busy_at,
            gpus_taken=self.placer.taken(run, self.runs.live(), now) if findings else None,
            program_end=trials.program_end(run, slot.log_of(self.home)) if said else None,
            missing_outputs=self._stage_outputs_missing(slot) if exit_info else (),
            slurm_signalled=bool(exit_info) and slot.host.signalled(run),
            printed=printed,
            last_step=slot.live.last_step(key) if key is not None else None,
            daemon_began_at=self.began_at,
            pass_before=self.pass_before,
        )

    def _printed(self, slot: RunSlot) -> bool:
        """Whether the current trial's program printed a line into its log: any line there
        but ajetd's own (the script's banner, the followers' notes)."""
        lines = log_tail(slot.paths(self.home).log, 3)
        return any(line.strip() and not line.startswith(OWN_LINE_PREFIX) for line in lines)

    def _exit_seen(
        self, slot: RunSlot, now: float, panes_fresh: bool
    ) -> tuple[Exit | None, bool, int | None]:
        """The trial's exit (its exit file, or the note its pane kept when the disk was full),
        whether it is gone without one, and its dead pane's status."""
        p = slot.paths(self.home)
        exit_info = read_exit(p.exit)
        pane = slot.current_pane()
        if exit_info is None and pane is not None and pane.exit_note:  # the disk was full
            exit_info = parse_exit_note(pane.exit_note)
        gone, dead_status = False, None
        if exit_info is None and panes_fresh and (pane is None or pane.dead):
            exit_info = read_exit(p.exit)  # written just before the pane died?
            gone = exit_info is None
            dead_status = pane.dead_status if pane is not None and pane.dead else None
            if gone and pane is not None and dead_status is None and self._status_due(slot, now):
                gone = False  # tmux marks a pane dead before it has reaped its status
        if panes_fresh:  # kept between two answers from tmux: the flag would come and go
            slot.unlisted = False
        if gone and pane is None and slot.run.trial is not None:
            # not listed, yet its trial script runs: tmux is not the server it lives on
            # (another TMUX_TMPDIR, its socket removed, an answer misread: walk98 F1, F4,
            # F14); ended and recorded lost, a healthy run was killed by its supervisor. Its
            # exit file still says when and how it ends
            slot.unlisted = procs.on_its_terminal(slot.run.trial.pane_pid, str(p.script))
            gone = not slot.unlisted
        if exit_info is not None or pane is None or not pane.dead:
            slot.dead_since = None
        return exit_info, gone, dead_status

    def _status_due(self, slot: RunSlot, now: float) -> bool:
        """A dead pane without its status yet (and no exit file: a full home): look again
        shortly before calling the run lost; the status is the only record of its exit."""
        if slot.dead_since is None:
            slot.dead_since = now
        if now - slot.dead_since < DEAD_STATUS_WAIT_S:
            return True
        slot.dead_since = None
        return False

    def _config(self, slot: RunSlot) -> dict[str, Any] | None:
        """The failed run's config as it runs, read where it runs (a fix is decided on its
        values); None where it cannot be read (a host that does not answer)."""
        try:
            run = slot.run  # what its `defaults:` name counts too (NeMo-RL's, or Hydra's)
            nemo = run.kind == "nemo_rl"
            codebase = run.codebase_dir if run.kind == "agentjet" else ""
            return trials.load_config(run.config_path, slot.host.fs(), nemo, codebase)
        except AjetdError as exc:
            log.warning("run %s: config not read: %s", slot.run.run_id, exc)
            return None

    def _failure_findings(self, slot: RunSlot, code: int) -> tuple[Finding, ...]:
        """A failed trial's findings: what ajetd saw outside its output, then its output's
        (where it names none, what its exit code `code` names: the shell's 126 and 127; a
        SIGKILL weighed against the kernel's record of OOM kills, `ending.weigh_kills`)."""
        run = slot.run
        assert run.trial is not None
        p = slot.paths(self.home)  # its output is in the log (`observe` waited for it)
        found = slot.live.finish((run.run_id, run.trial.number), p.log)
        if found is None:  # no live cursor (e.g. after a daemon restart): read the tail
            found = diagnose_file(p.log, user=self._kinds(slot))
        if not found:
            found = self._pane_findings(slot)
        output = ending.failure_findings(tuple(found), code, p.log, run.trial.number, run.kind)
        # a SIGKILL is an OOM only where the kernel (or the place: Slurm's OUT_OF_MEMORY)
        # recorded one (walk97 F2)
        elsewhere = "" if slot.host.machine is None else slot.host.name
        ended = ending.ended_at(self.home, run, self.clock())
        every = (*self._observed_findings(slot), *output)
        return ending.weigh_kills(run, every, code, ended, elsewhere)

    def _keep_pane_tail(self, slot: RunSlot) -> None:
        """An ended trial whose log's disk is full lost its last lines there (its writer could
        write nothing more): the last 50 its pane kept are saved in the run's folder
        (`trialfiles.pane_tail`), which the reports show as its last lines, where they showed
        the log's cut end as if it were the program's (walk88 F8). Read once now, and at the
        next passes while its exit line has not shown (`daemon.panetails`): never waited for
        here."""
        run = slot.run
        assert run.trial is not None
        log_file = slot.paths(self.home).log
        free = diskfull.free_bytes(log_file.parent)
        if free is None or free >= diskfull.FULL_BELOW_BYTES:
            return
        pane = slot.current_pane() or find_pane(
            self.tmux.panes_or_empty(), slot.paths(self.home).script
        )
        if pane is None:
            return
        tail = trialfiles.pane_tail(self.home, run.run_id, run.trial.number)
        self.pane_tails.keep(
            run.run_id, run.trial.number, pane.pane_id, slot.paths(self.home), tail
        )

    def _pane_findings(self, slot: RunSlot) -> list[Finding]:
        """A failed trial whose log names no failure: what its pane kept. The log is a copy
        that a full disk may have cut (its writer drops what it cannot write, and the line
        that said why the program died can be that); the pane keeps the program's last lines
        whatever the disk. Found there, a finding has no log line (0)."""
        pane = slot.current_pane() or find_pane(  # not listed since it began: asked now
            self.tmux.panes_or_empty(), slot.paths(self.home).script
        )
        if pane is None:
            return []
        try:
            text = self.tmux.history(pane.pane_id)
        except TmuxError:
            return []  # the pane is gone: nothing more to read than the log
        trial = slot.run.trial
        assert trial is not None
        text = trial_rows(text, slot.run_id, trial.number)  # not the trials before's
        return [replace(f, line=0) for f in diagnose_text(text, user=self._kinds(slot))]

    def _observed_findings(self, slot: RunSlot) -> list[Finding]:
        """For a failed trial, what ajetd saw outside its output, the root cause before the
        output's own findings: a lost GPU; how its place ended it (Slurm: node failure,
        preemption, Slurm's time limit); a swarm server that died while it ran or does not
        answer now (its client may notice first)."""
        if slot.run.trial is None:
            return []
        settled = slot.host.settle(slot.run, self.clock())  # the place may know more
        if settled is not slot.run:
            self._store(settled)
        assert settled.trial is not None
        seen = {f.kind: f for f in settled.trial.live_findings}
        found = [seen[GPU_LOST]] if GPU_LOST in seen else []
        found += [seen[k] for k in slot.host.root_kinds if k in seen]
        spec = slot.options.swarm
        if swarm.SERVER_DIED in seen:
            found.append(seen[swarm.SERVER_DIED])
        elif spec is not None and not self.swarm.probe(spec.port):
            found.append(self.swarm.died_finding(spec.port, "stopped answering /health"))
        return found

    def _stage_outputs_missing(self, slot: RunSlot) -> tuple[str, ...]:
        """The stage's `outputs` it did not leave: absent, or there unchanged since before the
        stage began (a checkpoint of an earlier run satisfied it, and eval ran on it: walk89
        F4), each said as which."""
        stages = slot.options.stages
        run = slot.run
        if not stages or run.stage >= len(stages):
            return ()
        stage = stages[run.stage]
        missing = self._missing(slot, stage.outputs)
        begun = [t.started_at for t in run.trials if t.stage == stage.name and t.started_at]
        there = [p for p in stage.outputs if p not in missing]
        if not begun or not there:
            return missing
        try:
            fs = slot.host.fs()
            stale = [
                f"{p} (there, but unchanged since before the stage began: an earlier run's)"
                for p in there
                if not fs.fresh(os.path.join(run.codebase_dir, p), min(begun) - FRESH_SLACK_S)
            ]
        except AjetdError as exc:
            log.warning("run %s: cannot check %s: %s", run.run_id, ", ".join(there), exc)
            return missing
        return (*missing, *stale)

    def _last_output(self, slot: RunSlot, now: float) -> float | None:
        """When the trial's log last grew, on the daemon's clock: the pass that saw its size
        change (the file's own time only for a log first seen, e.g. after a restart)."""
        trial = slot.run.trial
        if trial is None:
            return None
        try:
            info = slot.paths(self.home).log.stat()
            size, mtime = info.st_size, info.st_mtime
        except OSError:
            size, mtime = -1, 0.0
        seen = slot.output_seen
        if seen is None or seen[0] != trial.number:
            at = max(min(mtime, now), trial.started_at or 0.0)
        else:
            at = now if size != seen[1] else seen[2]
        slot.output_seen = (trial.number, size, at)
        return at or None

    # -- output, val file, GPUs ---------------------------------------------------------------
    def _may_have_output(
        self, slot: RunSlot, written: set[str], watched: set[str], now: float
    ) -> bool:
        """Whether a light tick looks at this run's log (a `stat`, then a read of what it
        gained): its log was written since the last light tick (`written`, the log watch's
        events, taken before any log is looked at: a write after that is read now or is an
        event for the next), its folder is not watched (refused; removed, or vanished and
        noticed, `notice_moves`; a trial launched since the watches were last made) or was
        not when the full tick that watched it began (`logs_new`), its reading has not
        begun, its log was missing at the last look (its writer was asked to move:
        `ask_writer_if_moved`), its output's read for records, held back, is due
        (`_output_moved`), or its output ends in something a pause reads. No other can hold
        anything unread: each was read to its end by an earlier look, and nothing wrote to it
        since. Full ticks take the same filter for the runs not due (`supervise_live`): at 30
        quiet runs, reading every log at each liveness tick (5 s) was a third of the full
        tick's CPU; each run is still looked at in
        full within SUPERVISE_ALL_S."""
        if slot.run.state is not State.RUNNING or not _started(slot):
            return False
        trial = slot.run.trial
        assert trial is not None
        p = slot.paths(self.home)
        if str(p.log) in written or p.log_dir not in watched or p.log_dir in self.logs_new:
            return True
        if slot.log_file_seen is not None and slot.log_file_seen[1] is None:
            return True  # missed at the last look, its writer asked: looked for until found
        if slot.metrics_due_at is not None and now >= slot.metrics_due_at:
            return True  # its records' read was held back until now (`_output_moved`)
        key = (slot.run_id, trial.number)
        return not slot.live.started(key) or slot.live.pause_due(key)

    def _scan_new_output(self, slot: RunSlot, now: float) -> bool:
        """The light tick's look at a run not due in full: its new output read, and its
        metrics where their source moved (`_deep_check` off its schedule: walk 89, F13, the
        records came at the next full look, 20 to 30 s later). True where the run is to be
        decided now: what its decision reads changed (`policy.inputs_changed`: a prompt in
        its output, new records), or its output went on while it is flagged (a hang flag
        goes as output resumes); a run whose look changed nothing is not decided again."""
        if slot.run.state is not State.RUNNING or not _started(slot):
            return False
        before = slot.run
        self.notice_moves(slot, now)
        grew = self._live_scan(slot, now, slot.paths(self.home).log)
        self._deep_check(slot, now)
        return inputs_changed(before, slot.run) or (grew and before.attention is not None)

    def notice_moves(self, slot: RunSlot, now: float) -> None:
        """The trial's log folder vanished (its result dir removed, moved or replaced) and
        its writer went on elsewhere (`pipe_writer`): said in the timeline and the run's
        warnings, once each; where the output now goes to the spare, read from there. One
        `stat` a tick while nothing vanished, of a path built once per trial (`paths`): it
        was built anew at each look, a third of this look's cost (issue 15's quiet runs)."""
        run = slot.run
        trial = run.trial
        assert trial is not None
        spare = slot.paths(self.home).spare
        try:
            size = os.stat(moved_note(str(spare))).st_size
        except OSError:
            return
        if slot.moves_seen == (trial.number, size):
            return
        slot.moves_seen = (trial.number, size)
        noted = ending.note_moves(self.home, run, now, trial.number)
        said = noted is not run
        self._store(ending.note_swapped(self.home, noted, now))
        if said:
            run = slot.run
            # the log watch may be on the folder that vanished (moved: its watch follows it):
            # looked at every light tick until the next full tick watches where it is now
            self.watcher.forget_logs(slot.paths(self.home).log_dir)
            slot.reset_paths()  # the output may be in the spare now

    def ask_writer_if_moved(self, slot: RunSlot, now: float, info: os.stat_result | None) -> None:
        """Ask the trial's log writer to check its folder now (`trials.ask_log_writer`) where
        its log's path names no file or another file than at the last look: unasked, the
        writer looks only every `tmux.CHECK_EVERY_S` (60 s), and its output meanwhile goes to
        a file no name reaches (a result dir removed, moved or replaced), unread here. Asked
        again every WRITER_ASK_AGAIN_S while the path stays missing (a writer not started
        yet, or one that could not move); the writer keeps one unread answer at most."""
        trial = slot.run.trial
        assert trial is not None
        now_is = None if info is None else (info.st_dev, info.st_ino)
        last = slot.log_file_seen
        slot.log_file_seen = (trial.number, now_is)
        if last is not None and last[0] == trial.number:
            if now_is is not None and last[1] == now_is:
                return  # the same file as at the last look
            if now_is is None and now - slot.writer_asked_at < WRITER_ASK_AGAIN_S:
                return
        elif now_is is not None:
            return  # the trial's first look: nothing to compare with
        slot.writer_asked_at = now
        trials.ask_log_writer(self.home, slot.run)

    def _live_scan(self, slot: RunSlot, now: float, log_file: Path) -> bool:
        """Read what a running trial printed since the last tick; record new kinds. True
        where its log had grown since."""
        run = slot.run
        assert run.trial is not None
        key = (run.run_id, run.trial.number)
        try:
            info = log_file.stat()
        except OSError:
            self.ask_writer_if_moved(slot, now, None)
            return False
        self.ask_writer_if_moved(slot, now, info)
        size = info.st_size
        grew = slot.live.pending(key, size)
        if not grew:  # paused: its unfinished last line is read
            seen = slot.live.paused(key, size)
        else:
            self.live_growing = True
            # the user's kinds are taken once, with the trial's cursor (not a `stat` of
            # kinds.yaml and a merge of compiled sets at each read)
            user = None if slot.live.started(key) else self._kinds(slot)
            before = slot.live.read_to(key)
            seen = slot.live.scan(key, log_file, now, user)
            if before is not None and slot.live.holds_mark(key, before):
                _records_printed(slot, now)
        if seen is not None and not run.signals_sent:
            # once ajetd signals the trial, what it prints is its reaction to that (its
            # stop's `Killed`, an interrupted start-up's `Fatal Python error`): no finding
            # while it runs; its end reads the output up to the signal (`ending.end_trial`)
            found = self._weighed_live(slot, seen.findings, now)
            named = {f.kind: f.named() for f in found}
            known = {f.kind for f in run.trial.live_findings}  # (before a daemon restart)
            replaced = seen.replaced
            if seen.first:  # what the output showed before a restart goes too, unless read again
                outside = _outside_output(slot)
                shown = run.trial.live_findings
                replaced |= {f.kind for f in shown if f.line and f.kind not in outside}
            for f in seen.new:
                if f.kind not in known:
                    where = " in its unfinished last output" if f.kind in seen.unsure else ""
                    text = f"seen while running{where}: {named.get(f.kind, f.kind)} ({f.where()})"
                    self.home.append_event(run.run_id, now, text)
            self._store(model.seen_in_output(run, framed(found, run.kind), replaced))
        return grew

    def _weighed_live(
        self, slot: RunSlot, found: tuple[Finding, ...], now: float
    ) -> tuple[Finding, ...]:
        """A running trial's findings with a SIGKILL its output echoes (a worker's `exitcode:
        -9`, a shell's `Killed`) weighed against the kernel's record of OOM kills so far, as
        its end's are (`ending.weigh_kills`): shown while it runs, and where ajetd stops it,
        in its reports."""
        elsewhere = "" if slot.host.machine is None else slot.host.name
        return ending.weigh_kills(slot.run, found, None, now, elsewhere)

    def _deep_check(self, slot: RunSlot, now: float) -> None:
        """On its backoff: the val file read again (where the run writes it); batched with
        another run's due check where its own is near (`Backoff.due`). Also, off the
        schedule, when its val file here changed size since it was read (`_val_moved`): the
        schedule reaches 16 min, and status would show metrics that old."""
        backoff = slot.backoff
        slot.metrics_due_at = None  # a read held back is due again only if still held back
        if backoff is None:
            return
        due = backoff.due(now, self.deep_batch)
        if not due and not _val_moved(slot, self.home, now):
            return
        run = slot.run
        if self._val_file_taken_over(slot, now):
            return
        slot.metrics_read_at = now
        read = trials.read_metrics(run, slot.host.fetch, log_of=slot.log_of(self.home))
        updated = trials.plateau_unmet(read, slot.options)
        if updated is not run and _output_read_on(run, updated):
            # where its output was read to, alone: nothing new, no picture, the schedule goes
            # on (a printing run's check came every 30 s), kept in memory, not saved (a
            # synced write each; after a restart it reads on from the last saved place, whose
            # open print and last shape were saved with it: the same records)
            self._keep(updated)
            if due:
                slot.backoff = backoff.advance(now)
            return
        if updated is not run:  # read on: soon again (a file larger than one read's budget)
            self._store(updated)
            slot.backoff = backoff.reset(now)
            said = validation_news(run, updated) if updated.history is not run.history else None
            if said is not None:  # the first records, a new best: not every read (walk93 F3)
                self.home.append_event(run.run_id, now, said)
        elif due:  # a line still being written moved the size alone: the schedule stays
            slot.backoff = backoff.advance(now)
        else:
            return
        self._store(ending.note_swapped(self.home, slot.run, now))  # before a picture's write
        self.live_plots.request(self.home, slot.run, now)  # a child draws; no wait

    def _val_file_taken_over(self, slot: RunSlot, now: float) -> bool:
        """Whether the run's val file (on this machine) is one another live run that began
        first writes too (`placement.val_file_owner`): its records are that run's, and none
        is read as this one's from then on (its val file dropped, the reason journaled and
        warned, naming both runs and the real path)."""
        run = slot.run
        if slot.host.machine is not None or run.kind != "agentjet" or not run.val_path:
            return False
        shared = placement.val_file_owner(run, self.runs.live(), one_file_as, self.here)
        if shared is None:
            return False
        other, real = shared
        said = (
            f"val file {onefile.spelt(run.val_path, other.run_id, other.val_path or real, real)}"
            f" is written by live run {other.run_id} too, which "
            "began first: this run reads no more records from it (each run would take the "
            "other's validations as its own); the records read before stay"
        )
        log.warning("run %s: %s", run.run_id, said)
        self.home.append_event(run.run_id, now, said)
        self._store(model.warn(replace(run, val_path=None), said))
        return True

    def sample_gpus(self, now: float) -> None:
        """On its timer: fold each running run's GPU use into its record; a lost GPU is a
        finding on the runs that use it."""
        running = [s for s in self.slots.values() if s.run.state is State.RUNNING]
        due = self.gpus.next_at([s.run for s in running], now)
        if due is None or now < due:
            return
        self.gpus.timed(now)
        for slot in running:
            with self._each(slot.run_id, "sampling its GPUs"):
                self._gpu_sampled(slot, now)

    def _gpu_sampled(self, slot: RunSlot, now: float) -> None:
        sampled = slot.run
        seen = self.gpus.of_run(sampled)
        if not seen and not sampled.gpu_ids:
            return
        # a placed GPU the driver no longer lists (this machine's runs: another machine's
        # GPUs are not in this sample) is lost, its figures none
        missing = self.gpus.missing(sampled) if slot.host.machine is None else ()
        seen += [gpuuse.RunGpu(i, None, None, lost=True) for i in missing]
        if gpuuse.busy(seen):
            slot.gpu_busy_at = now
        run = replace(sampled, gpu_stats=gpuuse.fold(sampled.gpu_stats, seen, now))
        if seen:
            drawing.record_gpus(self.home, run.run_id, now, seen)
        lost = self.gpus.lost_evidence(run)
        if lost is None and missing:
            listed = ", ".join(str(g.index) for g in self.gpus.last)
            lost = (
                f"GPU {missing[0]} is no longer listed by the driver (it lists GPU(s) {listed}): "
                "it fell off the bus, or was taken from this machine's view"
            )
        known = run.trial.live_findings if run.trial else ()
        if lost and run.trial and not any(f.kind == GPU_LOST for f in known):
            log.error("run %s: %s", run.run_id, lost)
            self.home.append_event(run.run_id, now, f"{GPU_LOST}: {lost}")
            run = model.found_live(run, (lost_finding(lost),))
        self._store(run)


def _outside_output(slot: RunSlot) -> frozenset[str]:
    """The kinds ajetd finds outside a trial's output (`model.found_live`), which a reading of
    the output never replaces (nor a finding at line 0, as each of those is: Slurm's final
    state may say host_oom, a kind the output may say too)."""
    return frozenset((GPU_LOST, swarm.SERVER_DIED, SSH_LOST, *slot.host.root_kinds))


METRICS_READ_S = 5.0  # a NeMo-RL run's output read for records at most this often between
# its deep checks (its metrics are in its output, which grows all the time)


def _val_moved(slot: RunSlot, home: Home, now: float) -> bool:
    """An AgentJet run's val file on this machine changed size since the last read it
    brought: records came (or it was cut or replaced). One `stat`, and one read per change
    (bytes that hold no record yet, a line still being written, bring no second read until
    the size moves again); a run elsewhere (SSH: a round trip) waits for its deep checks, and
    a NeMo-RL run (its metrics are in its output) too unless its output moved
    (`_output_moved`: the deep checks back off to 16 min, and status and the plateau rule
    were that far behind a long run); so does an AgentJet run's while its val file holds no
    record (they may be printed: `ajetout`)."""
    run = slot.run
    if slot.host.machine is None and trials.reads_output(run) and _output_moved(slot, home, now):
        return True
    if run.kind == "nemo_rl":
        return False
    if slot.host.machine is not None or run.kind != "agentjet" or not run.val_path:
        return False
    try:
        size = os.stat(run.val_path).st_size
    except OSError:  # none yet: its first records will be a change
        return False
    if slot.val_size is None:  # as far as the reads went (a restart's first look too)
        read = run.val_read.pos
        slot.val_size = run.val_offset if read is None else read
    moved, slot.val_size = size != slot.val_size, size
    return moved


def _records_printed(slot: RunSlot, now: float) -> None:
    """The live reading saw a mark of a record (`ajetout.MARKS`) in a run's new output: where
    its records come from its output, it is read for them as soon as `_output_moved` allows
    (a full look checks its records before it reads its output: unsaid, a record printed
    just before the output went quiet waited for the next deep check)."""
    if slot.host.machine is None and trials.reads_output(slot.run):
        due = max(now, slot.metrics_read_at + METRICS_READ_S)
        slot.metrics_due_at = due if slot.metrics_due_at is None else min(due, slot.metrics_due_at)


def _output_read_on(before: Run, after: Run) -> bool:
    """Whether a read of an AgentJet run's records changed nothing but how far its output
    was read (`OutRead`: an output that printed none)."""
    return after.history is before.history and replace(after, out_read=before.out_read) == before


def _output_moved(slot: RunSlot, home: Home, now: float) -> bool:
    """A run whose records come from its output (`trials.reads_output`: NeMo-RL's, an
    AgentJet run's while its val file holds none) is read on at once where its output is a
    tick's read or more ahead (a run printing GBs an hour: the deep checks' schedule, a read
    each, would leave it all for its end), or where anything is unread METRICS_READ_S after
    its last read; a read held back (within METRICS_READ_S) is due then
    (`RunSlot.metrics_due_at`: a light tick comes for it, though its output went quiet; a
    record printed just before it went quiet was read a minute later). An AgentJet run's
    output is read so only where the live reading saw a mark of a record in what was not read
    for records (`ajetout.MARKS`), or a print is open: a quiet run that prints none costs no
    read, no `stat` (issue 15: every quiet run read again, its offset saved, each 5 s)."""
    run = slot.run
    trial = run.trial
    slot.metrics_due_at = None
    if trial is None or trial.started_at is None:
        return False
    done = trials.output_offset(run)
    if run.kind != "nemo_rl" and run.out_read.block is None:
        key = (run.run_id, trial.number)
        if slot.live.holds_mark(key, done) is False:
            return (slot.live.read_to(key) or 0) - done >= VAL_TICK_BYTES
    try:
        size = os.stat(slot.log_of(home)(trial.number)).st_size
    except OSError:
        return False
    if size - done >= VAL_TICK_BYTES:
        return True
    if size <= done:
        return False
    due_at = slot.metrics_read_at + METRICS_READ_S
    if now >= due_at:
        return True
    slot.metrics_due_at = due_at
    return False


def _started(slot: RunSlot) -> bool:
    trial = slot.run.trial
    return trial is not None and trial.started_at is not None


def _filed_at(path: Path) -> float | None:
    """When the request file at `path` was written; None where there is none."""
    try:
        return path.stat().st_mtime
    except OSError:
        return None
