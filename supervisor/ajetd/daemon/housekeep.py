"""The steps after the runs: housekeep (sessions past their keep time, idle swarm servers,
reports a full folder held back) and publish (daemon.json, which `status` reads)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ajetd.adapters import diskfull, pipes
from ajetd.adapters.store import encode, write_atomic, write_in_place
from ajetd.adapters.tmux import Pane
from ajetd.adapters.trialpaths import paths as trial_paths
from ajetd.core.errors import TmuxError
from ajetd.core.model import Run
from ajetd.core.naming import SESSION_PREFIX
from ajetd.core.resultfiles import REPORTS_HELD
from ajetd.core.trialscript import PIPES, RELEASE_WAIT_S, exit_line
from ajetd.daemon import ending, lostoutput
from ajetd.daemon.base import Base
from ajetd.diagnosis.scan import tail_bytes
from ajetd.hosts import copyback
from ajetd.pictures import drawing

DAEMON_JSON_BYTES = 16383  # four blocks, all written: rewritable in place when the home is full
PUBLISH_EVERY_S = 60  # daemon.json's heartbeat is at most this old while the loop turns
# how often the FIFOs of ended trials are looked at: a few opens each, for runs whose writer
# may have ended (a session closed, a relaunch) or still lives (a dead pane's kept session)
PIPES_EVERY_S = 5.0

log = logging.getLogger(__name__)


class Housekeep(Base):
    orphans_closed = False  # this daemon's first housekeeping closed the orphaned sessions

    def housekeep(self, now: float) -> None:
        """Close sessions of ended runs once their keep time is over (and, once, those whose
        run's folder was removed by hand); stop swarm servers that no run has needed for
        their keep time."""
        if not self.orphans_closed:
            self.orphans_closed = True
            self._close_orphans()
        in_use = {s.options.swarm.port for s in self.slots.values() if s.options.swarm is not None}
        self.swarm.housekeep(in_use, now)
        self._reap_closing()
        looks = now >= self.pipes_at  # a writer released after its run's reports, looked at
        for unsettled in self.runs.unsettled_runs():
            due = bool(
                not unsettled.session_closed
                and unsettled.session
                and unsettled.ended_at
                and now >= unsettled.ended_at + unsettled.keep_session_s
                and self.home.saved(unsettled.run_id)  # its pane may hold the only exit status
                and self._pane_read(unsettled, now)
            )
            run = unsettled
            if (looks or due) and not run.reports_pending:
                run = self._drained(run, now, due)
            if due:
                with self._each(run.run_id, "closing its session"):
                    closing = ending.close_session(self.tmux, run)
                    if closing is not None:
                        self.closing.append((time.monotonic(), closing))
                    self._store(replace(run, session_closed=True))
                    self._pipes_due().add(run.run_id)  # its writers end with the session
        if now >= self.pipes_at:
            self.pipes_at = now + PIPES_EVERY_S
            self._remove_pipes()

    def _pane_read(self, run: Run, now: float) -> bool:
        """Whether an ended run's session can be closed without its pane's last output: its
        last trial's exit line is in its log (all before it too), or its script had its
        RELEASE_WAIT_S to end (`trialscript._held`). A session closed at once (`keep_session:
        0`) while tmux had not read the pane to its end lost the program's last lines."""
        trial = run.trial
        ended = trial.ended_at if trial is not None and trial.ended_at else run.ended_at
        if trial is None or trial.exit_code is None or ended is None:
            return True
        if now >= ended + RELEASE_WAIT_S:
            return True
        log_file = trial_paths(self.home, run, trial.number).log
        return exit_line(trial.number) in tail_bytes(log_file, 4096)

    def _close_orphans(self) -> None:
        """Close the kept session of each ended trial whose run's folder is gone and which
        this daemon holds no run for: `rm -rf runs/<id>` of an ended run whose `keep_session`
        had not run out left its session open for good, no record to close it (walk88 F10).
        Only a dead pane whose own script lies in this home's runs/: a live one is a run that
        goes on (the daemon that holds it makes its folder again), a session not ajetd's is
        never touched."""
        try:
            panes = self.tmux.panes()
        except TmuxError as exc:  # no server: nothing to close
            if not exc.gone:
                log.warning("orphaned sessions not looked for: %s", exc)
            return
        for pane in panes:
            if self._orphan(pane):
                log.info("closing tmux session %s: its run's folder is gone", pane.session)
                with self._each(pane.session, "closing an orphaned session"):
                    self.tmux.kill_session(pane.session)

    def _orphan(self, pane: Pane) -> bool:
        script = Path(pane.script) if pane.script else None
        if not pane.dead or script is None or not pane.session.startswith(SESSION_PREFIX):
            return False
        run_id = script.parent.name
        if script.parent.parent != self.home.runs or run_id in self.slots:
            return False
        return not os.path.lexists(script.parent)

    def _drained(self, run: Run, now: float, closing: bool) -> Run:
        """The run, with what its log writer wrote after its reports said once it is done
        (`lostoutput.note_drained`; `closing`: its session is about to be)."""
        if not lostoutput.draining(self.home, run):
            return run
        with self._each(run.run_id, "saying what its log writer wrote after its reports"):
            said = lostoutput.note_drained(self.home, run, now, closing)
            if said is not run:
                self._store(said)
                return said
        return run

    def _pipes_due(self) -> set[str]:
        """The runs whose ended trials' FIFOs may still be there: at first every run with a
        `.pipes` folder (a home written before they were removed, a daemon stopped before
        it removed them); then those added as their trials' writers end."""
        if self.pipes_due is None:
            with contextlib.suppress(OSError):
                self.pipes_due = {d.name for d in self.home.runs.iterdir() if (d / PIPES).is_dir()}
        if self.pipes_due is None:
            self.pipes_due = set()
        return self.pipes_due

    def _remove_pipes(self) -> None:
        """The FIFOs of ended trials whose writer is gone, removed (`pipes.remove_idle`);
        a run stays due while a writer lives on (its dead pane's session still kept)."""
        due = self._pipes_due()
        for run_id in sorted(due):
            slot = self.slots.get(run_id)
            live = slot.run.trial.number if slot and slot.run.active and slot.run.trial else None
            if pipes.remove_idle(self.home.run_dir(run_id), live):
                due.discard(run_id)

    def _reap_closing(self) -> None:
        """Collect the `kill-session` clients that are done; one that hangs past tmux's own
        timeout is killed (a tmux server that does not answer)."""
        late = time.monotonic() - self.tmux.timeout
        for started, proc in self.closing:
            if proc.poll() is None and started < late:
                proc.kill()
                proc.wait()
        self.closing = [(t, p) for t, p in self.closing if p.poll() is None]

    def retry_reports(self, now: float) -> None:
        """Ended runs whose reports wait: for a copy back from their host (`copy_back`), or
        for a full (or unwritable) result dir or home. Written once the record is on disk, the
        copy has come and the folder's retry is due; attention then clears."""
        grace = self.cfg.reports_grace_s
        for run in self.runs.unsettled_runs():  # held past the grace: bound for the home
            if ending.reports_overdue(self.home, run, now, grace):
                self._store(ending.reports_aside(self.home, run, now, grace))
                self.troubles.clear(Path(run.result_dir))  # nothing more is written there
        copies = False
        for run in self.runs.unsettled_runs():
            if not run.reports_pending or not self.home.saved(run.run_id):
                continue
            if self.copy_back(run, now):
                copies = True
                continue
            if self.pane_tails.waiting(run.run_id):  # its last lines first (`panetails`)
                continue
            folder = Path(run.result_dir)
            if self.troubles.blocked(folder):
                self.finals.park(run.run_id)  # looked at when the folder's retry is due
                continue
            with self._each(run.run_id, "writing its reports"):
                options = self.finals.options(run.run_id)  # before its drawing is taken
                ready, drawn = self._final_pictures(run)
                if not ready:  # drawing: the reports once it ended
                    continue
                self.finals.forget(run.run_id)  # one a full folder's reports went before
                self._store(ending.publish_reports(self.home, run, now, drawn, options))
        self.copies.under_way = copies

    def _final_pictures(self, run: Run) -> tuple[bool, tuple[list[str], str] | None]:
        """Whether an ended run's reports can be written now, and with what pictures: the
        outcome of its final drawing once its child ended (not ready meanwhile: one is
        started, in its turn, where it has pictures and none was; after a restart too).
        Reports a full folder held back are written first and draw nothing (None: see
        `publish_reports`)."""
        if run.attention is not None and run.attention.startswith(REPORTS_HELD):
            return True, None
        if not self.finals.holds(run.run_id):
            if not drawing.final_due(self.home, run):
                return True, ([], "")
            self.finals.start(run.run_id)
        drawn = self.finals.outcome(self.home, run)
        return drawn is not None, drawn

    def copy_back(self, run: Run, now: float) -> bool:
        """A remote run's copy back (`hosts.copyback`): started in a child where none copies
        (at its end, or after a restart found the job without an outcome; a second child that
        ends without one gives up saying so), its outcome put in the journal once there.
        True while it is under way: the reports wait for it."""
        run_dir = self.home.run_dir(run.run_id)
        if not copyback.job_file(run_dir).exists():
            return False
        child = self.copies.running.get(run.run_id)
        if child is not None and child.poll() is None:
            return True
        if not copyback.due(run_dir):
            self.copies.running.pop(run.run_id, None)
            self.home.append_event(run.run_id, now, copyback.outcome(run_dir))
            return False
        if copyback.copying(run_dir):  # a child from before a restart: still at it
            return True
        with self._each(run.run_id, "copying back its files"):
            if child is not None:  # it ended without an outcome: again, once
                if run.run_id in self.copies.again:
                    copyback.gave_up(run_dir, copyback.target_of(run_dir))
                    return self.copy_back(run, now)
                self.copies.again.add(run.run_id)
            self.copies.running[run.run_id] = copyback.start(run_dir)
        return True

    def publish(self, now: float) -> None:
        """daemon.json for `status`: on any change of problems (a full disk's included) or of
        the records a full home holds, on a change of the next deep checks (at most once a
        second), else every minute."""
        checks = {s.run_id: round(s.backoff.next_at, 1) for s in self.slots.values() if s.backoff}
        moved = checks != self.published_checks and now - self.published_at >= 1
        disk = self.troubles.lines(self.held.count())
        held = self.held_reasons()
        refused = [*self.refused, *self.campaigns.held]  # folders held are not taken yet
        problems = [*self.problems, *refused, *disk, *held.values()]
        records = self.held.unsaved()
        changed = problems != self.published or records != self.published_unsaved
        changed = changed or self.reserved != self.published_reserved
        if changed or moved or now - self.published_at >= PUBLISH_EVERY_S:
            info = {
                "pid": os.getpid(),
                "heartbeat": now,
                "publish_every": PUBLISH_EVERY_S,  # how `status` tells a stalled loop
                "problems": self.problems,
                "refused": refused,
                "disk": disk,  # full folders, with free space
                "held": held,  # run id -> why its claimed blueprint is not admitted yet
                "deep_checks": checks,  # run id -> when its next deep check is due
                "unsaved": records,  # run id -> its newest state while a full home holds it
                # this machine's GPU index -> the waiting run it is kept for (`ajetd gpus`)
                "reserved": {str(gpu): run_id for gpu, run_id in self.reserved.items()},
            }
            self._write_daemon_json(info)
            self.published, self.published_at = problems, now
            self.published_checks, self.published_unsaved = checks, records
            self.published_reserved = dict(self.reserved)

    def _write_daemon_json(self, info: dict[str, Any]) -> None:
        """Written whole; padded to DAEMON_JSON_BYTES so that, on a full home, it can still be
        rewritten in place (`status` then shows why nothing else is being saved, and where
        the runs whose records are held stand)."""
        try:
            write_atomic(self.home.daemon_file, fitted(info, DAEMON_JSON_BYTES), 0o600)
        except OSError as exc:
            if not diskfull.is_full(exc) or not self.home.daemon_file.exists():
                raise
            self.troubles.hit(self.home.root, exc, "$AJETD_HOME")
            if "disk" in info:  # say so in the copy written in place
                info["disk"] = self.troubles.lines(self.held.count())
                self.published = [*self.problems, *info["refused"], *info["disk"]]
                self.published += info["held"].values()
            room = self.home.daemon_file.stat().st_size  # its blocks: no more can be written
            write_in_place(self.home.daemon_file, encode(fitted(info, room)))


def fitted(info: dict[str, Any], room: int) -> str:
    """daemon.json's text, padded with spaces to `room` bytes; where the held records do not
    all fit, the newest ends are kept and `unsaved_more` counts the ones left out (the `disk`
    line still names them)."""
    records: dict[str, dict[str, Any]] = info.get("unsaved") or {}
    order = sorted(records, key=lambda r: -(records[r].get("ended_at") or 0.0))
    for keep in range(len(order), -1, -1):
        left = len(order) - keep
        shown = {"unsaved": {r: records[r] for r in order[:keep]}} if records else {}
        data = {**info, **shown, **({"unsaved_more": left} if left else {})}
        text = json.dumps(data, indent=2, ensure_ascii=False)
        size = len(encode(text))
        if size < room or keep == 0:
            return text + " " * (room - size - 1) + "\n"
    raise AssertionError("unreachable: the last round keeps none and returns")
