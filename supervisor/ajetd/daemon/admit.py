"""The steps that take work in: admit (inbox -> accepted or rejected runs), control (`ajetd
stop` requests), and, once at start, reconcile (take up where a previous daemon left off)."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ajetd.adapters import diskfull, inbox, trialfiles
from ajetd.adapters.regular import NotRegularError, read_small
from ajetd.adapters.trialpaths import paths as trial_paths
from ajetd.core import endevidence, jsontext, model, resultfiles
from ajetd.core.backoff import Backoff
from ajetd.core.durations import format_duration
from ajetd.core.journal import REJECTED
from ajetd.core.model import Run, State, Status
from ajetd.core.naming import RUN_ID, new_run_id, safe_name
from ajetd.core.onefile import Writer
from ajetd.core.policy import DATA_KEPT
from ajetd.core.timefmt import iso
from ajetd.daemon import admission, rebuild
from ajetd.daemon.base import Base, Unadmitted
from ajetd.daemon.slots import LIVE, RunSlot

log = logging.getLogger(__name__)
ABSENT = "ajetd was not running"
STOP_SLACK_S = 10.0  # a restart (`ajetd shutdown`, then `ajetd daemon`) is not an absence


def absence(info: Mapping[str, Any], now: float) -> str | None:
    """What a daemon starting at `now` writes in each live run's journal about the time no
    daemon ran, from the last daemon's daemon.json (`info`): since it stopped (`stopped_at`),
    or since its last heartbeat where it ended without stopping (killed, the machine down);
    None for a short restart or nothing known. What a run did meanwhile is journalled when the
    new daemon notices it, so without this line a reader of its timeline takes the restart's
    time for the event's (the end's own time is on record: `ended_at`, from its exit file)."""

    def number(key: str) -> float | None:
        value = info.get(key)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return None
        return float(value) if 0 < value < now else None

    stopped, beat, every = number("stopped_at"), number("heartbeat"), number("publish_every")
    frozen = number("no_pass_since")
    if stopped is not None and frozen is not None and frozen < stopped:
        since, slack = frozen, STOP_SLACK_S
        how = (
            f"its last pass; it made none from then until it was stopped at {iso(stopped)}: "
            "frozen (SIGSTOP), suspended, its machine asleep, or one of its steps took that long"
        )
    elif stopped is not None:
        since, how, slack = stopped, "it was stopped", STOP_SLACK_S
    elif beat is not None:  # a beat is written at least every `publish_every` seconds
        since, slack = beat, (every or 60.0) + STOP_SLACK_S
        how = "its last heartbeat; it ended without stopping: killed, or the machine went down"
    else:
        return None
    if now - since <= slack:
        return None
    return (
        f"{ABSENT} from {iso(since)} ({how}) to {iso(now)}, {format_duration(now - since)}: "
        "what this run did meanwhile is journalled from now on, at the time it was noticed"
    )


CLAIM_STEP_S = 1e-6  # between the claim times of the blueprints taken in one pass


class Admit(Base):
    def admit(self, now: float) -> None:
        """Take complete blueprints from the inbox, each on its own: one that cannot be taken
        is put aside with the reason (or, if even that fails, left and named in status)."""
        problems = inbox.security_problems(self.home)
        refused: list[str] = []
        self.settle_at = None
        if self.troubles.blocked(self.home.root) or self.home.root in self.troubles.full:
            problems.append(f"{self.home.root} is full: blueprints wait in the inbox")
        if not problems:
            self._admit_held(now)
            self.readmit_waiting(now)
            scan = inbox.scan(self.home, self.watcher.take_ready(), now, self.writer_asks)
            refused, self.settle_at = scan.refused, scan.settle_at
            for path in scan.overdue:  # open for writing, unchanged for OPEN_HOLD_S
                self._put_aside(path, inbox.overdue_why(path), now)
            for i, candidate in enumerate(scan.found):
                if candidate.path.name in self.stuck:
                    continue
                try:  # claimed in the inbox's order, each at its own time (`launch_order`)
                    self._take(candidate, now + i * CLAIM_STEP_S)
                except Exception as exc:  # one file never stops the loop
                    self._file_failed(candidate.path, exc, now)
        folder = self.home.inbox  # a file that could not be put aside is listed while it is there
        self.stuck = {n: w for n, w in self.stuck.items() if os.path.lexists(folder / n)}
        refused += [f"{self.home.inbox}/{safe_name(n)}: {why}" for n, why in self.stuck.items()]
        self._set_problems(problems, refused)

    def _admit_held(self, now: float) -> None:
        """Blueprints claimed while a folder they need was full, once it takes writes."""
        for run_id, (claimed, source, folder, again) in list(self.unadmitted.items()):
            if not self.troubles.blocked(folder):
                del self.unadmitted[run_id]
                self.accept(run_id, claimed, source, now, again)
                if all(held.folder != folder for held in self.unadmitted.values()):
                    self.troubles.clear(folder)  # it took the writes this time

    def _take(self, candidate: inbox.Candidate, now: float) -> None:
        run_id = candidate.run_id
        if run_id is None or not inbox.claimable(self.home, run_id):
            run_id = new_run_id(lambda i: self.home.run_dir(i).exists(), os.urandom)
        try:
            claimed = inbox.claim(self.home, candidate, run_id)
        except OSError as exc:
            if diskfull.is_full(exc):  # not taken: it waits in the inbox for space
                self.troubles.hit(self.home.root, exc, "$AJETD_HOME")
                return
            raise
        if claimed is not None:
            source = f"{candidate.stem}.md"
            self.home.append_event(run_id, now, f"blueprint {source} claimed")  # once: a
            self.accept(run_id, claimed, source, now)  # blueprint held for space comes again

    def _file_failed(self, path: Path, exc: Exception, now: float) -> None:
        """An inbox file that could not be taken: put aside with the reason, once."""
        text = self._logged_once(f"inbox file {safe_name(path.name)}", "taking it", exc)
        self._put_aside(path, f"not taken: internal error while taking it: {text}", now)

    def _put_aside(self, path: Path, why: str, now: float) -> None:
        """An inbox file moved to rejected/ beside a note saying why, unread; where even that
        fails, named in `status` while it is there."""
        try:
            if path.exists() or path.is_symlink():
                aside = inbox.put_aside(self.home, path, why, now)
                log.warning("inbox: %s put aside as %s: %s", safe_name(path.name), aside.name, why)
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

    def accept(
        self,
        run_id: str,
        claimed: Path,
        source: str,
        now: float,
        again: tuple[float, str] | None = None,
    ) -> None:
        """Admit a claimed blueprint (`again`: a second time, `admission.admit`'s)."""
        live = self.runs.live()
        busy = {r.result_dir: r.run_id for r in live}
        writers = {path: Writer(who) for path, who in self.claims.val_writers().items()}
        writers.update({r.val_path: Writer(r.run_id, self.here(r)) for r in live if r.val_path})
        try:
            run, options = admission.admit(
                self.home,
                run_id,
                claimed,
                source,
                now,
                busy,
                writers,
                self.places.host_for,
                again,
                self.troubles.full_seen(self.home.root),  # a file cut short: said if then
                admission.Records(self.runs.get, self._keep),
                lambda folder: self.claims.result_dir(run_id, folder),
            )
        except Exception as exc:  # never die on input; never retry it forever
            if isinstance(exc, OSError) and diskfull.is_full(exc):
                self._admit_later(run_id, claimed, source, exc, again)
                return
            text = self._logged_once(f"run {run_id}", "admitting it", exc)
            reason = f"internal error while admitting the blueprint: {text}"
            run = model.reject(Run(run_id=run_id, source=source, submitted_at=now), reason, now)
            self.home.append_event(run_id, now, f"{REJECTED}{reason}")  # its end, journalled
            self.home.save_run(run)
            options = None
        if options is not None and run.active:
            self.open_slot(run, options)
            if run.val_path and self.here(run):  # else claimed before its launch (`launch`)
                self.claims.val_file(run_id, run.val_path)
        else:
            self._keep(run)
            if not run.active:  # rejected: an end like any other
                self.on_finish_due(run)

    def _admit_later(
        self,
        run_id: str,
        claimed: Path,
        source: str,
        exc: OSError,
        again: tuple[float, str] | None,
    ) -> None:
        """A full disk is not the blueprint's fault: it is admitted again once the folder
        that refused a write takes it (the claimed file waits in the run's folder)."""
        folder = Path(exc.filename).parent if exc.filename else self.home.root
        if folder.is_relative_to(self.home.root):
            folder, what = self.home.root, "$AJETD_HOME"
        else:
            what = f"a folder run {run_id} needs"
        self.troubles.hit(folder, exc, what)
        self.unadmitted[run_id] = Unadmitted(claimed, source, folder, again)

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
        why = "stopped by `ajetd stop` before it started"
        if run is None and run_id in self.unadmitted:
            run, why = self._stop_unadmitted(run_id, now)
        if run is not None and run.state is State.RESTARTING:  # between trials: at once
            waited = f" ({model.wait_cause(run.reason)})" if run.reason else ""
            why = f"stopped by `ajetd stop` while it waited to relaunch{waited}; {DATA_KEPT}"
        if run is not None and run.state in model.WAITING:  # walk87 F9: a restarting run's too
            self._store(self._finish_now(run, Status.STOPPED, why, now))
            if self.home.saved(run_id):  # else taken once the end is on disk (below)
                Path(entry.path).unlink(missing_ok=True)
        elif (
            run is None and self.home.pending(run_id) is None and run_id not in self.readmit_later
        ) or (run is not None and not run.active and self.home.saved(run_id)):
            # kept for a run waiting to be admitted again, and for one whose end a full home
            # holds in memory: a daemon killed then finds the request with the program's exit
            Path(entry.path).unlink(missing_ok=True)

    def _stop_unadmitted(self, run_id: str, now: float) -> tuple[Run, str]:
        """A blueprint claimed but held for a full folder, stopped: made the queued run it
        reads as (`Home.pending`), so the stop ends it at once like any queued run's, its
        reason saying what it waited for (walk 30: it stopped only once space was freed, and
        `ajetd stop` timed out meanwhile). It is never admitted after."""
        held = self.unadmitted.pop(run_id)
        if all(other.folder != held.folder for other in self.unadmitted.values()):
            self.troubles.clear(held.folder)  # nothing waits for it now
        queued = self.home.pending(run_id)
        if queued is None:  # its claimed blueprint gone from its folder: the run is still it
            queued = Run(run_id=run_id, source=held.source, submitted_at=now)
        why = f"stopped by `ajetd stop` before it was admitted (it waited for {held.folder}, "
        return replace(queued, state=State.QUEUED), why + "full, to take writes)"

    def reconcile(self, now: float) -> None:
        """Take up where a previous daemon left off; never launch a started trial again."""
        self.absent = absence(self.home.daemon_info(), now)  # before this daemon publishes
        for run_id, claimed, source in inbox.unfinished_claims(self.home):
            self.accept(run_id, claimed, source, now)
        live = []
        for stored in self.home.each_run():  # one at a time: ended ones are kept, not all held
            run = stored
            if run.active or run.reports_pending:
                run = self._as_its_end_says(run, now)
            if run.active:
                live.append(run)
            else:
                self._keep(run)
        taken = {r.result_dir for r in live}
        # a run whose trial was let go first: its program may write in its result dir, which
        # no run admitted again may then take (nor one rebuilt unstarted)
        live += self._rebuild_damaged(now, taken, let_go=True)
        readmit = self._readmissions(now, taken)
        live += self._rebuild_damaged(now, taken, let_go=False)
        for run in sorted(live, key=lambda r: (r.submitted_at, r.run_id)):
            with self._each(run.run_id, "taking it up again"):  # one run never stops a start
                self._take_up(run, now)
        for run_id, again in readmit:  # once the live runs are known: their dirs are busy
            with self._each(run_id, "admitting it again"):
                self._admit_again(run_id, again, now)
        for line in self.home.damaged_lines():  # named; the other runs go on
            log.error("DAMAGED: %s", line)
        self.last_liveness = 0.0

    def _as_its_end_says(self, run: Run, now: float) -> Run:
        """The record `run` (live, or its reports still to come) as the run's end marks have
        it: where its journal says it ended, or its result dir's finish.flag names it as
        ended, and the record says otherwise (an older copy put back), restored as ended from
        them, saved, and said in the journal and the log; never ended a second time, no report
        rewritten (`core.endevidence`). A journal that cannot be read is no mark, nor is the
        journal's end where the result dir holds no report at all."""
        journal = None
        with contextlib.suppress(ValueError):
            journal = endevidence.journalled_end(self.home.events(run.run_id))
        folder = trialfiles.report_dir(self.home, run) if run.result_dir else None
        flag = None
        if folder is not None:
            try:
                data = jsontext.loads(read_small(folder / resultfiles.FINISH_FLAG))
            except (OSError, ValueError, NotRegularError):
                data = None
            flag = endevidence.flagged_end(run.run_id, data, f"finish.flag in {folder}")
        if flag is None and folder is not None and journal is not None:
            written = (folder / name for name in resultfiles.REPORTS)
            if not any(path.exists() for path in written):
                # the end was cut short before any report (a daemon killed between the
                # journal's end and the record's save, a full home): nothing to overwrite;
                # ended from its exit as before, its reports written once
                journal = None
        why = endevidence.contradicted(run, journal, flag)
        if why is None:
            return run
        done = endevidence.restored(run, journal, flag, why)
        note = done.warnings[-1]
        log.warning("run %s: %s", run.run_id, note)
        self.home.append_event(run.run_id, now, note)
        self.home.save_run(done)
        return done

    def _readmissions(self, now: float, taken: set[str]) -> list[tuple[str, rebuild.Readmission]]:
        """The damaged records of runs that never launched a trial (queued), to admit again
        from their stored blueprints (`rebuild.readmission`); the others stay for
        `_rebuild_damaged`, or named."""
        found = []
        for run_id, line in sorted(self.home.damaged.items()):
            with self._each(run_id, "admitting its damaged record again"):
                again = rebuild.readmission(self.home, run_id, line, now, taken)
                if isinstance(again, str):  # its place does not answer: named meanwhile
                    log.error("run %s: not admitted again yet: %s; asked again", run_id, again)
                    self.readmit_later[run_id] = line
                elif again is not None:
                    del self.home.damaged[run_id]
                    found.append((run_id, again))
                    taken.add(again.result_dir)
        return found

    def _admit_again(self, run_id: str, again: rebuild.Readmission, now: float) -> None:
        """A damaged run that never let a trial go, admitted from its stored blueprint with its
        first submission time and the warning it carries."""
        self.accept(run_id, again.claimed, again.source, now, (again.submitted_at, again.note))

    def readmit_waiting(self, now: float) -> None:
        """The damaged queued runs whose place did not answer at start (`_readmissions`),
        asked again once a liveness period: admitted again once it answers."""
        if not self.readmit_later or now - self.readmit_asked_at < self.cfg.liveness_s:
            return
        self.readmit_asked_at = now
        for run_id, line in sorted(self.readmit_later.items()):
            with self._each(run_id, "admitting its damaged record again"):
                taken = {r.result_dir for r in self.runs.live()}
                again = rebuild.readmission(self.home, run_id, line, now, taken)
                if isinstance(again, str):
                    continue
                del self.readmit_later[run_id]
                if again is not None:
                    self.home.damaged.pop(run_id, None)
                    self._admit_again(run_id, again, now)

    def _rebuild_damaged(self, now: float, taken: set[str], let_go: bool) -> list[Run]:
        """The live runs among the damaged records, rebuilt from their folders (`rebuild`):
        never left running unwatched. The others stay named. `taken`: the live runs' result
        dirs, which no rebuilt run may write into. `let_go`: those whose folder says a trial
        was let go (`rebuild.let_go`), else the others."""
        chosen = [
            (run_id, line)
            for run_id, line in sorted(self.home.damaged.items())
            if rebuild.let_go(self.home, run_id) is let_go
        ]
        if not chosen:
            return []
        panes = self.tmux.panes_or_empty()
        socket = self.tmux.socket_name or model.DEFAULT_TMUX
        found = []
        for run_id, line in chosen:
            with self._each(run_id, "rebuilding its damaged record"):
                run = rebuild.rebuild(
                    self.home, run_id, line, panes, socket, now, taken, self.tmux.socket_path()
                )
                if run is not None:
                    del self.home.damaged[run_id]
                    found.append(run)
                    taken.add(run.result_dir)
        return found

    def _claim_again(self, slot: RunSlot, now: float) -> None:
        """A live run's claims made again by this daemon (its result dir, val file and GPUs,
        `claimkeeper`): those of the daemon before it name a process that ended. One another
        daemon took meanwhile is said in the journal and the log."""
        run = slot.run
        if slot.host.machine is not None:
            return
        said = []
        if run.result_dir and os.path.isdir(run.result_dir):
            said.append(self.claims.result_dir(run.run_id, run.result_dir))
        if run.val_path and run.trials:
            other = self.claims.val_file(run.run_id, run.val_path)
            said.append(other and f"its val file {run.val_path} is claimed by {other}")
        if run.gpu_ids and run.trials:
            other = self.claims.gpus(run.run_id, self.gpu_keys(run.gpu_ids))
            said.append(other and f"its GPUs are claimed by {other}")
        for line in filter(None, said):
            log.warning("run %s: %s", run.run_id, line)
            self.home.append_event(run.run_id, now, line)

    def _take_up(self, run: Run, now: float) -> None:
        """A live run found on start: its trial started if it was prepared but never let go,
        else watched again."""
        options, problem = inbox.read_stored_options(self.home, run.run_id)
        if problem is not None:
            log.error("run %s: %s", run.run_id, problem)
            self.home.append_event(run.run_id, now, problem)
        edited = inbox.edited_note(run, inbox.blueprint_texts(self.home, run))
        if edited and edited not in run.warnings:  # said once per edit, not at each restart
            log.warning("run %s: %s", run.run_id, edited)
            self.home.append_event(run.run_id, now, edited)
            run = model.warn(run, edited)
            self._store(run)
        slot = self.open_slot(run, options)
        self._claim_again(slot, now)
        trial = run.trial
        if trial is not None and trial.started_at is None:
            script = trial_paths(self.home, run, trial.number).script
            if not script.exists():  # cut between its record and its script: prepare again
                self._store(model.unprepare(run))
                log.info("run %s: trial %d was never prepared; again", run.run_id, trial.number)
                return
            self._start(slot, now)
        elif run.state in LIVE:
            if self.absent is not None and run.started_at is not None:
                self.home.append_event(run.run_id, now, self.absent)
            slot.backoff = Backoff.start(now, self.cfg.backoff_scale)
            log.info("run %s: watching again (session %s)", run.run_id, run.session)
