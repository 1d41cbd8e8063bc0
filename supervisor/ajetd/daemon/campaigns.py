"""Carrying out campaigns: claim the folder, prepare each experiment, record its row.

Each experiment becomes an ordinary blueprint written into the inbox (so it is validated,
placed, supervised, fixed and reported like any run), with its own result dir under the
campaign's. With `branch_prefix`, it runs in its own `git worktree` on branch
`<prefix>/<name>`, made from the baseline commit (or the branch or commit it names), its patch
applied and committed as its hypothesis commit: experiments side by side never share a working
tree and the user's checkout is never touched. Git is only ever asked to add (a worktree, a
branch, a commit); where going on would need anything else, the experiment is refused with the
reason, and branches and worktrees of failed experiments are kept.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from ajetd.adapters import campaigngit, inbox
from ajetd.adapters.control import (
    SUFFIX,
    control_problem,
    is_campaign_id,
    new_campaign_id,
    pending_requests,
    read_request,
    write_answer,
)
from ajetd.adapters.diskfull import free_space, is_full, is_refused
from ajetd.adapters.inbox import stored_options
from ajetd.adapters.store import (
    OWNER_DIR,
    OWNER_FILE,
    Home,
    append_row,
    encode,
    json_text,
    write_atomic,
)
from ajetd.core import campaignrules as cr
from ajetd.core import campaignspec as cs
from ajetd.core import resultfiles
from ajetd.core.blueprint import Blueprint, parse_blueprint
from ajetd.core.campaignblueprint import experiment_blueprint, in_yaml_copy, unreached
from ajetd.core.campaignrecord import (
    MAX_REFUSALS,
    REASON_MAX,
    CampaignState,
    ExpState,
    crash_reason,
    ledger_fields,
    refusal,
    rule_holding,
    standing,
)
from ajetd.core.errors import AjetdError, one_line
from ajetd.core.model import Run, State, record_trials
from ajetd.core.naming import new_run_id
from ajetd.daemon import campaignrequests
from ajetd.frameworks.valresults import nonfinite_note
from ajetd.hosts import campaignfolder as cf
from ajetd.pictures.campaigndrawing import Plotter
from ajetd.views.campaign import render_report

log = logging.getLogger(__name__)
MAX_HANDLED = 200  # answers kept in state.json, so a request seen again is not applied twice


def full_said(exc: BaseException) -> str:
    """A full disk (quota, read-only disk) met on a campaign's way, as the campaign's progress
    says it: the file, the disk's state and its free space, never Python's `[Errno 28]`."""
    name = getattr(exc, "filename", None)
    where = Path(str(name)).parent if name else None
    free = f" ({free_space(where)} free)" if where is not None else ""
    what = getattr(exc, "strerror", None) or str(exc)
    return f"cannot write {name or 'a file'}: {what}{free}; tried again on the next pass"


def baseline_pending(state: CampaignState, spec: cs.CampaignSpec) -> bool:
    """The campaign's baseline is launched and its row not written yet: it runs alone,
    whatever `parallel` says, since every experiment is judged against the best so far, the
    baseline's first (walk87 F6: with `parallel: 2` the first experiment ran beside it and
    was judged `keep` against no best at all)."""
    return spec.baseline and bool(state.experiments) and not state.experiments[0].recorded


class Campaigns:
    def __init__(self, home: Home) -> None:
        self.home = home
        self.root = home.campaigns
        self.states: dict[str, CampaignState] = {}
        # read once per live change (revision), not every tick
        self.loaded: dict[str, tuple[int, cs.CampaignSpec, Blueprint, str]] = {}
        self.plots = Plotter()
        self.control_problem = ""  # why requests are not taken now (logged once)
        self.failures: set[str] = set()  # intake failures already logged (each retried)
        self.settle_at = math.inf  # when a folder being copied in by hand will have settled
        self.held: list[str] = []  # folders copied in by hand not taken yet, and why (status)

    def load(self, now: float) -> None:
        self.root.mkdir(mode=OWNER_DIR, exist_ok=True)
        for state_file in sorted(self.root.glob("*/state.json")):
            try:
                state = cf.load_state(state_file)
            except (OSError, ValueError, TypeError) as exc:  # left as it is, for a person
                log.error("campaign record %s unreadable, campaign left alone: %s", state_file, exc)
                continue
            self.states[state.campaign_id] = state
        for folder in sorted(self.root.glob("*/folder")):
            campaign_id = folder.parent.name
            if not is_campaign_id(campaign_id) or (folder.parent / "state.json").exists():
                continue
            # taken from the inbox by a daemon that ended before it wrote the record (which
            # `_start` writes once it checked the folder and git): started now, never lost
            log.warning(
                "campaign %s: claimed before the last daemon stopped; started now", campaign_id
            )
            try:
                state = CampaignState(campaign_id, now)
                self.states[campaign_id] = state
                self._start(state, now)
            except Exception as exc:  # the loop's per-item guard: one folder never stops others
                self._failed(f"starting {campaign_id}", exc)

    def folder(self, campaign_id: str) -> Path:
        return self.root / campaign_id / "folder"

    def _load(self, state: CampaignState) -> tuple[cs.CampaignSpec, Blueprint, str]:
        """The campaign's folder with its live changes, read and checked once per change."""
        cached = self.loaded.get(state.campaign_id)
        if cached is None or cached[0] != state.revision:
            found = cf.load_folder(
                self.folder(state.campaign_id), state.added, state.stop_set, admitted=True
            )
            cached = self.loaded[state.campaign_id] = (state.revision, *found)
        spec = cached[1]
        if state.branch_prefix and not spec.branch_prefix:  # the default taken at its start
            spec = replace(spec, branch_prefix=state.branch_prefix)
        return spec, cached[2], cached[3]

    def _save(self, state: CampaignState) -> None:
        self._write(self.root / state.campaign_id / "state.json", json_text(asdict(state)))

    def _write(self, path: Path, text: str) -> None:
        """An owner-only file of the home, written whole; held in memory and written later
        while the home is full (the daemon's `Held`): a full disk between two experiments
        delays the next one, never loses it."""
        if self.home.held is None:
            write_atomic(path, text, OWNER_FILE)
        else:
            self.home.held.write(path, encode(text), OWNER_FILE)

    # -- intake ---------------------------------------------------------------------------
    def claim(self, now: float) -> None:
        """Campaign folders dropped into the inbox (`<id>__<name>.campaign/` from `ajetd
        campaign`, or any folder holding campaign.yaml): this user's own, and none while the
        inbox is unsafe (the same rule as blueprints)."""
        self.settle_at = math.inf
        held, self.held = self.held, []
        if inbox.security_problems(self.home):
            return  # the daemon says why in its log and in `status` (`Admit.admit`)
        for entry in sorted(self.home.inbox.iterdir()):
            try:
                self._claim_one(entry, now)
            except Exception as exc:  # the loop's per-item guard: one folder never stops others
                self._failed(f"claiming {entry.name!r}", exc)
        for line in self.held:
            if line not in held:  # logged once while it lasts; in `status` meanwhile
                log.warning("inbox: %s", line)

    def _claim_one(self, entry: Path, now: float) -> None:
        """One inbox entry: claimed when it is a settled campaign folder of this user's."""
        if not entry.is_dir() or entry.name.startswith(".") or entry.is_symlink():
            return
        if entry.stat().st_uid != os.getuid():
            return  # another user's folder is never taken
        held: cf.Hold | None = None
        if entry.name.endswith(SUFFIX):  # `ajetd campaign` renames it in whole
            if not (entry / "campaign.yaml").is_file():
                return
        elif (again := cf.settles_at(entry, now)) is not None:  # copied by hand: once quiet
            self.settle_at = min(self.settle_at, again)
            return
        elif (held := cf.hold(entry, now)) is not None and held.line:  # and once whole
            self.held.append(held.line)
            self.settle_at = min(self.settle_at, held.again)
            return
        head, _, _ = entry.name.partition("__")
        campaign_id = head if entry.name.endswith(SUFFIX) and "__" in entry.name else ""
        if not is_campaign_id(campaign_id) or (self.root / campaign_id).exists():
            campaign_id = new_campaign_id(self.home)
        (self.root / campaign_id).mkdir(mode=OWNER_DIR)
        entry.rename(self.folder(campaign_id))
        cf.make_owner_only(self.folder(campaign_id))
        state = CampaignState(campaign_id, now)
        self.states[campaign_id] = state
        self._start(state, now, held)

    def _failed(self, what: str, exc: Exception) -> None:
        """Log a failed intake step once per distinct failure (it is retried every tick)."""
        key = f"{what}: {exc!r}"
        if key not in self.failures:
            if len(self.failures) >= 1000:  # bounded: the oldest distinct failures forgotten
                self.failures.clear()
            self.failures.add(key)
            log.exception("campaigns: %s failed", what)

    def _start(self, state: CampaignState, now: float, held: cf.Hold | None = None) -> None:
        """Check the folder and the git state once, at the campaign's start (`held`: a folder
        copied in by hand taken after its wait: refused as it says, or its refusal saying it
        was waited for). A refused campaign keeps the name its campaign.yaml gives."""
        folder = self.folder(state.campaign_id)
        if held is not None and held.refuse:
            state.name = cf.name_in(folder)
            self._refuse(state, held.refuse, now)
            return
        try:
            spec, base, _ = self._load(state)
            cf.check_units(folder)
            cf.check_whole(folder, spec)
            cf.check_patches(folder, spec)
            cf.check_blueprints(folder, spec)  # as new ones, once
            cf.check_overrides(spec, base)
            cf.check_metric(spec, base)
            cf.check_paths(spec, base)
            cf.check_result_dir(Path(spec.result_dir))
        except (cs.CampaignError, OSError) as exc:
            state.name = cf.name_in(folder)
            note = f" ({held.note})" if held is not None and held.note else ""
            self._refuse(state, f"{exc}{note}", now)
            return
        state.name = spec.name
        if spec.branch_prefix:
            top, head, refusal = campaigngit.baseline(base.codebase_dir)
            if refusal:
                self._refuse(state, refusal, now)
                return
            state.repo, state.baseline_commit = top, head
        elif spec.branches:
            self._default_branches(state, spec, base)
            needed = cf.branches_needed(spec.experiments)
            if needed and not state.branch_prefix:  # a patch would not be applied
                self._refuse(state, cf.default_branches_problem(needed, state.git_note), now)
                return
        Path(spec.result_dir).mkdir(parents=True, exist_ok=True)
        write_atomic(Path(spec.result_dir) / resultfiles.LEDGER, cr.ledger_header())
        log.info("campaign %s (%s) started", spec.name, state.campaign_id)
        self._save(state)

    @staticmethod
    def _default_branches(state: CampaignState, spec: cs.CampaignSpec, base: Blueprint) -> None:
        """Seed 002's default git trail for a campaign.yaml without branch_prefix: a branch
        per experiment under a descriptive default prefix, where the codebase is a clean
        repository and its paths allow worktrees; else none, and the record says why (a
        campaign made no branch or commit, its ledger's git columns empty: walk89 F9)."""
        prefix = cs.default_prefix(spec, state.started_at)
        top, head, why = campaigngit.baseline(base.codebase_dir)
        if not why:
            try:
                cf.check_paths(replace(spec, branch_prefix=prefix), base)
            except cs.CampaignError as exc:
                why = "; ".join(exc.problems)
        if not why:  # a worktree holds what git holds: an uncommitted config would be missing
            config = os.path.join(os.path.expanduser(base.codebase_dir), base.yaml_path)
            if campaigngit.git(top, "ls-files", "--error-unmatch", config)[0] != 0:
                why = f"exp_yaml_path {base.yaml_path} is not committed, so no worktree holds it"
        if why:
            state.git_note = (
                f"no branches or commits: campaign.yaml gives no branch_prefix, and the default "
                f"({prefix}) cannot be used: {why}"
            )
            return
        state.repo, state.baseline_commit, state.branch_prefix = top, head, prefix
        state.git_note = (
            f"branches under {prefix}, the default (campaign.yaml gives no branch_prefix; "
            "`branch_prefix: false` runs every experiment in the checkout, without branches)"
        )

    def _refuse(self, state: CampaignState, why: str, now: float) -> None:
        log.warning("campaign %s refused: %s", state.campaign_id, why)
        state.refused, state.done, state.progress = why, True, f"refused: {why}"
        state.phase, state.status, state.reason, state.ended_at = "done", "refused", why, now
        self._save(state)

    # -- each tick --------------------------------------------------------------------------
    def tick(self, now: float, runs: Mapping[str, Run]) -> None:
        """Record ended experiments, apply the requests filed, launch what the stop rules
        allow, and say where each campaign stands."""
        problem = control_problem(self.home)
        if problem != self.control_problem:
            if problem:
                log.warning("campaign requests: %s", problem)
            self.control_problem = problem
        requests = pending_requests(self.home)
        for state in self.states.values():
            filed = requests.pop(state.campaign_id, [])
            if state.done and not filed and not state.unwritten:
                continue
            try:
                self._step(state, now, runs, filed)
            except Exception as exc:  # the loop's per-item guard: this campaign, not the others
                progress = f"error: {full_said(exc) if is_full(exc) else exc}"
                if state.progress != progress:  # logged once per distinct failure
                    log.exception("campaign %s: step failed", state.campaign_id)
                    state.progress = progress
                with contextlib.suppress(OSError):
                    self._save(state)
        for campaign_id, filed in requests.items():
            if any(self.home.inbox.glob(f"{campaign_id}__*{SUFFIX}")):
                continue  # filed before the campaign was claimed: taken next tick
            for req_id, path in filed:
                log.warning("campaign request %s for unknown campaign %s", req_id, campaign_id)
                path.unlink(missing_ok=True)
        self.plots.reap()

    def next_at(self, now: float) -> float | None:
        """When the daemon must wake: a live campaign's earliest deadline (one waiting for its
        next experiment ends at once then), or a folder copied in by hand settling."""
        due = [self.settle_at]
        for state in self.states.values():
            cached = self.loaded.get(state.campaign_id)
            if not state.done and cached is not None and cached[1].deadline_s is not None:
                end = state.started_at + cached[1].deadline_s
                due += [end, end - (cached[1].per_experiment_s or 0.0)]  # too late for one more
        return min((t for t in due if now < t < math.inf), default=None)

    def _step(
        self,
        state: CampaignState,
        now: float,
        runs: Mapping[str, Run],
        filed: list[tuple[str, Path]],
    ) -> None:
        if state.status in ("stopped", "refused"):  # ended for good: answer, never load
            for req_id, path in filed:
                self._handle(state, req_id, path, now)
            if state.unwritten:
                self._report(state, self._load(state)[0])
            return
        spec, base, base_text = self._load(state)
        changed = self._record(state, spec, runs)
        for req_id, path in filed:
            changed = self._handle(state, req_id, path, now) or changed
        if state.status in ("stopped", "refused"):
            return
        spec, base, base_text = self._load(state)
        plan = cs.planned(spec)
        while not state.stopping:
            active = [e for e in state.experiments if e.run_id and not e.recorded]
            if (
                len(state.experiments) >= len(plan)
                or rule_holding(state, spec, now, plan[len(state.experiments)])
                or len(active) >= spec.parallel
                or baseline_pending(state, spec)
                or self._full(Path(spec.result_dir))
            ):
                break
            self._launch(state, spec, base, base_text, plan[len(state.experiments)], now)
            changed = True
        changed = self._record(state, spec, runs) or changed
        before = (state.progress, state.phase, state.status, state.reason)
        self._evaluate(state, spec, now)
        if changed or before != (state.progress, state.phase, state.status, state.reason):
            self._save(state)
            self._report(state, spec)
        elif state.unwritten:
            self._report(state, spec)
        if changed:
            self._plot(state, spec)

    def _evaluate(self, state: CampaignState, spec: cs.CampaignSpec, now: float) -> None:
        """Where the campaign stands now (`standing`), with the time it ended."""
        phase, status, reason, progress = standing(state, spec, now)
        if phase == "done" and state.phase != "done":
            state.ended_at = now
            log.info("campaign %s ended (%s): %s", state.campaign_id, status, reason)
        elif phase != "done":
            state.ended_at = None
        state.phase, state.status, state.reason = phase, status, reason
        state.done = phase == "done"
        state.progress = progress

    def _record(self, state: CampaignState, spec: cs.CampaignSpec, runs: Mapping[str, Run]) -> bool:
        """A ledger row for each experiment that ended (or was refused) since last time. A
        row is on record once it is in the ledger, whole (`append_row`); a result dir that
        refuses it (full) holds it, and the rows after it, until there is room, as a full
        home's writes are held (status names the folder); the record is saved after each row,
        so a daemon killed in between writes none twice."""
        changed = False
        ledger = Path(spec.result_dir) / resultfiles.LEDGER
        for exp in state.experiments:
            if exp.recorded:
                continue
            run = runs.get(exp.run_id) if exp.run_id else None
            if not exp.refused and (run is None or run.state is not State.DONE):
                continue
            if run is not None and not self.home.saved(run.run_id):
                continue  # its end is not on disk yet (a full home): no row reports it
            if self._waits(ledger.parent):
                break  # its folder is full and not due again: in index order, later
            done = self._judged(state, spec, exp, run)
            row = ledger_fields(spec, done, run, self._note(done, run), self._launcher(exp.run_id))
            if not self._wrote(state, ledger.parent, append_row, ledger, cr.ledger_row(row)):
                break
            exp.value, exp.status, exp.reason, exp.row = done.value, done.status, done.reason, row
            exp.value_trial, exp.value_note = done.value_trial, done.value_note
            exp.run_status = done.run_status
            if exp.status == "keep" and exp.value is not None:
                state.best, state.best_name, state.best_index = exp.value, exp.name, exp.index
            exp.recorded, changed = True, True
            self._save(state)  # at once: a restart before it would write the row again
        return changed

    @staticmethod
    def _judged(
        state: CampaignState, spec: cs.CampaignSpec, exp: ExpState, run: Run | None
    ) -> ExpState:
        """`exp` as its row will record it (value, verdict against the best so far, reason);
        the record takes it only once the row is written (a row held for a full result dir
        was judged against itself as the best when it came again)."""
        counted = cr.Counted(None)
        status = "failed"
        diverged = None
        if run is not None and run.status is not None:
            counted = cr.counted_value(run.history, record_trials(run), spec.metric, spec.maximise)
            status = run.status.value
            diverged = nonfinite_note(run.history, spec.metric)
        value = counted.value
        done = replace(
            exp,
            value=value,
            value_trial=counted.trial,
            value_note=counted.note,
            run_status=status if run is not None else "refused",
        )
        done.status = cr.verdict(
            status, value, state.best, spec.maximise, exp.smoke, diverged is not None
        )
        done.reason = crash_reason(done, run, spec.metric)
        if diverged and done.status == "crash" and status in ("succeeded", "plateau"):
            done.reason = one_line(f"diverged: {diverged}; {done.reason}", REASON_MAX)
        return done

    @staticmethod
    def _note(exp: ExpState, run: Run | None) -> str:
        """A smoke run's row says how the run itself ended."""
        if not exp.smoke:
            return ""
        status = run.status.value if run is not None and run.status is not None else "failed"
        return f" (smoke run: {status})"

    def _launcher(self, run_id: str) -> str:
        """How the experiment ran: `ajetd` here, `ajetd+ssh:<host>`, or `ajetd+slurm`."""
        if not run_id:
            return "ajetd"
        opts = stored_options(self.home, run_id)
        if opts.slurm is not None:
            return f"ajetd+slurm ({opts.slurm.mode})"
        if opts.ssh is not None:
            return f"ajetd+ssh:{opts.ssh.target}"
        return "ajetd"

    # -- requests (`ajetd campaign add / set / stop`) ------------------------------------------
    def _handle(self, state: CampaignState, req_id: str, path: Path, now: float) -> bool:
        """Apply one request once: its answer is saved with the change, then written out."""
        answer = state.handled.get(req_id)
        applied = answer is None
        if answer is None:
            request: dict[str, Any] = {}
            try:
                request = read_request(path)
                answer = campaignrequests.apply(
                    self.home,
                    self.folder(state.campaign_id),
                    state,
                    lambda: self._load(state)[0],
                    request,
                    now,
                )
            except (OSError, ValueError, TypeError) as exc:
                answer = {"ok": False, "error": f"unreadable request: {exc}"}
            log.info("campaign %s: request %s: %s", state.campaign_id, req_id, answer)
            state.handled[req_id] = answer
            for old in list(state.handled)[:-MAX_HANDLED]:
                del state.handled[old]
            if not answer.get("ok"):  # on record: its CLI may not have waited for the answer
                state.refused_requests.append(
                    refusal(req_id, request, str(answer.get("error")), now)
                )
                del state.refused_requests[:-MAX_REFUSALS]
            self._save(state)
        write_answer(self.home, state.campaign_id, req_id, answer)
        path.unlink(missing_ok=True)
        return applied

    # -- the result dir ---------------------------------------------------------------------
    def _full(self, folder: Path) -> bool:
        """The campaign's result dir refused its last write (full): no experiment is launched
        into it until it takes one again, since its log would be lost there."""
        return self.home.held is not None and folder in self.home.held.troubles.full

    def _waits(self, folder: Path) -> bool:
        """The campaign's result dir refused a write and is not due for another try."""
        return self.home.held is not None and self.home.held.troubles.blocked(folder)

    def _wrote(
        self,
        state: CampaignState,
        folder: Path,
        write: Callable[[Path, bytes], None],
        path: Path,
        text: str,
    ) -> bool:
        """One write into the campaign's result dir (`write(path, text)`): True once done (a
        folder known full is clear again); False where it refuses for a full disk, a quota or
        a permission: the folder is marked, tried again on the daemon's backoff, and `status`
        names it as it names a full home (the campaign's reason stays its own, never an
        errno). Any other error is raised."""
        troubles = self.home.held.troubles if self.home.held is not None else None
        try:
            write(path, encode(text))
        except OSError as exc:
            if troubles is None or not (is_full(exc) or is_refused(exc)):
                raise
            troubles.hit(folder, exc, f"the result dir of campaign {state.campaign_id}")
            return False
        if troubles is not None:
            troubles.clear(folder)
        return True

    def _report(self, state: CampaignState, spec: cs.CampaignSpec) -> None:
        """campaign.md as the record stands. One its result dir refuses (full) is owed
        (`unwritten`, on record, so a restart owes it too) and written once there is room,
        also after the campaign ended: an ended campaign is stepped again for it alone."""
        folder = Path(spec.result_dir)
        report = render_report(spec, state)
        wrote = not self._waits(folder) and self._wrote(
            state, folder, write_atomic, folder / resultfiles.CAMPAIGN_REPORT, report
        )
        if state.unwritten == wrote:
            state.unwritten = not wrote
            self._save(state)

    def _plot(self, state: CampaignState, spec: cs.CampaignSpec) -> None:
        """progress.png, drawn by a child process (matplotlib never enters the daemon)."""
        points = [
            {"index": e.index, "name": e.name, "status": e.status, "value": e.value}
            for e in state.experiments
            if e.recorded
        ]
        if not points:
            return
        baseline = next((e.value for e in state.experiments if e.name == "baseline"), None)
        data = {
            "title": f"campaign {spec.name} ({state.campaign_id}): {state.progress}",
            "metric": spec.metric,
            "maximise": spec.maximise,
            "baseline": baseline,
            "points": points,
        }
        source = self.root / state.campaign_id / "plot.json"
        self._write(source, json_text(data))
        self.plots.request(state.campaign_id, source, Path(spec.result_dir) / resultfiles.PROGRESS)

    # -- one experiment ---------------------------------------------------------------------
    def _launch(
        self,
        state: CampaignState,
        spec: cs.CampaignSpec,
        base: Blueprint,
        base_text: str,
        exp: cs.Experiment,
        now: float,
    ) -> None:
        index = len(state.experiments)
        record = ExpState(index, exp.name, exp.description, smoke=exp.smoke)
        state.experiments.append(record)
        codebase = base.codebase_dir
        moved: Callable[[str], str] = str
        if spec.branch_prefix:
            where = self._worktree(state, spec, exp, record, codebase)
            if where is None:
                return
            moved = cf.into_worktree(os.path.expanduser(codebase), where)
            codebase = where
            exp = self._carry(state, exp, record)
        text = base_text
        if exp.blueprint:
            try:
                text = cf.read_blueprint(self.folder(state.campaign_id) / exp.blueprint, True)
            except (AjetdError, OSError) as exc:
                record.refused = f"blueprint {exp.blueprint}: {exc}"
                return
        # read as an admitted copy: checked as a new blueprint where it came in (the folder's
        # start, its `add`), never refused after an upgrade (`cf.check_blueprints`)
        command = parse_blueprint(text, admitted=True).launch_command
        why = None if not exp.overrides or in_yaml_copy(command) else unreached(command)
        if why is not None:  # checked at intake; here too (its own blueprint, carried ones)
            record.refused = (
                f"overrides {' '.join(exp.overrides)} would not reach the program: {why}"
            )
            record.carried, record.carried_from = [], None  # its row lists none it never had
            return
        record.overrides = list(exp.overrides)  # what it runs with: none for a refused one
        elapsed = now - state.started_at
        blueprint = experiment_blueprint(spec, exp, index, text, codebase, elapsed, moved)
        run_id = new_run_id(lambda i: self.home.run_dir(i).exists(), os.urandom)
        target = self.home.inbox / f"{run_id}__{spec.name}-{index:02d}-{exp.name}.md"
        self._write(target, blueprint)  # a full home: it reaches the inbox once there is room
        record.run_id = run_id
        what = (spec.name, index, exp.name, run_id)
        log.info("campaign %s: experiment %d (%s) submitted as run %s", *what)

    def _carry(self, state: CampaignState, exp: cs.Experiment, record: ExpState) -> cs.Experiment:
        """`exp` with the overrides of the earlier experiment it starts from (`from` its
        branch, its commit, or a commit made on top of it: the nearest such, by git), which
        no branch holds; the record says which experiment and what was carried."""
        if not exp.start or not record.parent_commit:
            return exp
        earlier = [e for e in state.experiments[: record.index] if e.commit]
        source = next((e for e in reversed(earlier) if e.commit == record.parent_commit), None)
        if source is None:
            source = next(
                (
                    e
                    for e in reversed(earlier)
                    if campaigngit.is_ancestor(state.repo, e.commit, record.parent_commit)
                ),
                None,
            )
        if source is None or not source.overrides:
            return exp
        merged = cs.with_carried(source.overrides, exp.overrides)
        record.carried_from = source.index
        record.carried = [o for o in merged if o not in exp.overrides]
        log.info(
            "campaign experiment %d (%s) carries the overrides of experiment %d (%s): %s",
            record.index,
            record.name,
            source.index,
            source.name,
            " ".join(record.carried),
        )
        return replace(exp, overrides=merged)

    def _worktree(
        self,
        state: CampaignState,
        spec: cs.CampaignSpec,
        exp: cs.Experiment,
        record: ExpState,
        codebase: str,
    ) -> str | None:
        """The experiment's own worktree and branch with its hypothesis commit; None (and the
        experiment refused) when git cannot do it without overwriting something."""
        path = cf.worktree_of(spec, exp.name)
        made, refusal = campaigngit.hypothesis_worktree(
            state.repo,
            f"{spec.branch_prefix}/{exp.name}",
            path,
            exp.start or state.baseline_commit,
            self.folder(state.campaign_id) / exp.patch if exp.patch else None,
            cs.hypothesis_message(exp, spec.name),
        )
        record.branch, record.parent_commit, record.commit = made.branch, made.parent, made.commit
        if refusal:
            record.refused = refusal
            return None
        relative = os.path.relpath(os.path.realpath(codebase), os.path.realpath(state.repo))
        return str(path / relative) if relative != "." else str(path)
