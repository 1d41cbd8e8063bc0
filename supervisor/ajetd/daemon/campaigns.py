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
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from ajetd.adapters import inbox
from ajetd.adapters.control import (
    SUFFIX,
    control_problem,
    is_campaign_id,
    new_campaign_id,
    pending_requests,
    read_request,
    write_answer,
)
from ajetd.adapters.inbox import SETTLE_S
from ajetd.adapters.store import OWNER_DIR, OWNER_FILE, Home, write_atomic, write_json
from ajetd.core import campaignrules as cr
from ajetd.core import campaignspec as cs
from ajetd.core.blueprint import Blueprint, extract_parts, parse_blueprint
from ajetd.core.campaignrecord import (
    CampaignState,
    ExpState,
    best_line,
    load_state,
    progress_of,
    read_spec,
)
from ajetd.core.durations import parse_duration
from ajetd.core.errors import AjetdError, DurationError
from ajetd.core.model import Run, State
from ajetd.core.naming import new_run_id
from ajetd.core.options import load_yaml_part
from ajetd.daemon.admission import stored_options

log = logging.getLogger(__name__)
MAX_HANDLED = 200  # answers kept in state.json, so a request seen again is not applied twice


def load_folder(
    folder: Path,
    added: list[dict[str, Any]] | None = None,
    stop: dict[str, Any] | None = None,
    extra_files: frozenset[str] = frozenset(),
) -> tuple[cs.CampaignSpec, Blueprint, str]:
    """The spec (with what was added and set live), its base blueprint (parsed), and the
    base's text; CampaignError if unusable."""
    spec = read_spec(folder, added, stop, extra_files)
    base_text = (folder / spec.base).read_text()
    try:
        return spec, parse_blueprint(base_text), base_text
    except AjetdError as exc:
        raise cs.CampaignError([f"base blueprint {spec.base}: {exc}"]) from exc


def _settled(folder: Path, now: float) -> bool:
    """Nothing in the folder changed for SETTLE_S: a copy into the inbox is complete."""
    try:
        newest = max(p.stat().st_mtime for p in [folder, *folder.rglob("*")])
    except (OSError, ValueError):
        return False
    return now - newest >= SETTLE_S


def git(repo: str, *args: str) -> tuple[int, str]:
    """One git command, no shell; (exit code, stdout or stderr)."""
    done = subprocess.run(
        ["git", "-C", repo, *args], capture_output=True, text=True, timeout=120, check=False
    )
    return done.returncode, (done.stdout if done.returncode == 0 else done.stderr).strip()


class Campaigns:
    def __init__(self, home: Home) -> None:
        self.home = home
        self.root = home.root / "campaigns"
        self.states: dict[str, CampaignState] = {}
        # read once per live change (revision), not every tick
        self.loaded: dict[str, tuple[int, cs.CampaignSpec, Blueprint, str]] = {}
        self.plots = Plotter()
        self.control_problem = ""  # why requests are not taken now (logged once)
        self.failures: set[str] = set()  # intake failures already logged (each retried)

    def load(self) -> None:
        self.root.mkdir(mode=OWNER_DIR, exist_ok=True)
        for state_file in sorted(self.root.glob("*/state.json")):
            try:
                state = load_state(state_file)
            except (OSError, ValueError, TypeError) as exc:  # left as it is, for a person
                log.error("campaign record %s unreadable, campaign left alone: %s", state_file, exc)
                continue
            self.states[state.campaign_id] = state

    def folder(self, campaign_id: str) -> Path:
        return self.root / campaign_id / "folder"

    def _load(self, state: CampaignState) -> tuple[cs.CampaignSpec, Blueprint, str]:
        """The campaign's folder with its live changes, read and checked once per change."""
        cached = self.loaded.get(state.campaign_id)
        if cached is None or cached[0] != state.revision:
            found = load_folder(self.folder(state.campaign_id), state.added, state.stop_set)
            cached = self.loaded[state.campaign_id] = (state.revision, *found)
        return cached[1], cached[2], cached[3]

    def _save(self, state: CampaignState) -> None:
        write_json(self.root / state.campaign_id / "state.json", asdict(state), OWNER_FILE)

    # -- intake ---------------------------------------------------------------------------
    def claim(self, now: float) -> None:
        """Campaign folders dropped into the inbox (`<id>__<name>.campaign/` from `ajetd
        campaign`, or any folder holding campaign.yaml): this user's own, and none while the
        inbox is unsafe (the same rule as blueprints)."""
        self.root.mkdir(mode=OWNER_DIR, exist_ok=True)
        if inbox.security_problems(self.home):
            return  # the daemon says why in its log and in `status`
        for entry in sorted(self.home.inbox.iterdir()):
            try:
                self._claim_one(entry, now)
            except Exception as exc:  # the loop's per-item guard: one folder never stops others
                self._failed(f"claiming {entry.name!r}", exc)

    def _claim_one(self, entry: Path, now: float) -> None:
        """One inbox entry: claimed when it is a settled campaign folder of this user's."""
        if not entry.is_dir() or entry.name.startswith(".") or entry.is_symlink():
            return
        if entry.stat().st_uid != os.getuid():
            return  # another user's folder is never taken
        if not (entry / "campaign.yaml").is_file():
            return
        if not entry.name.endswith(SUFFIX) and not _settled(entry, now):
            return  # still being copied in (`ajetd campaign` renames it in whole)
        head, _, _ = entry.name.partition("__")
        campaign_id = head if entry.name.endswith(SUFFIX) and "__" in entry.name else ""
        if not is_campaign_id(campaign_id) or (self.root / campaign_id).exists():
            campaign_id = new_campaign_id(self.home)
        (self.root / campaign_id).mkdir(mode=OWNER_DIR)
        entry.rename(self.folder(campaign_id))
        state = CampaignState(campaign_id, now)
        self.states[campaign_id] = state
        self._start(state, now)

    def _failed(self, what: str, exc: Exception) -> None:
        """Log a failed intake step once per distinct failure (it is retried every tick)."""
        key = f"{what}: {exc!r}"
        if key not in self.failures:
            if len(self.failures) >= 1000:  # bounded: the oldest distinct failures forgotten
                self.failures.clear()
            self.failures.add(key)
            log.exception("campaigns: %s failed", what)

    def _start(self, state: CampaignState, now: float) -> None:
        """Check the folder and the git state once, at the campaign's start."""
        try:
            spec, base, _ = self._load(state)
        except (cs.CampaignError, OSError) as exc:
            self._refuse(state, str(exc), now)
            return
        state.name = spec.name
        if spec.branch_prefix:
            code, top = git(base.codebase_dir, "rev-parse", "--show-toplevel")
            if code != 0:
                self._refuse(state, f"branch_prefix needs a git repository: {top}", now)
                return
            _, dirty = git(top, "status", "--porcelain", "--untracked-files=no")
            if dirty:
                self._refuse(
                    state,
                    f"{top} has uncommitted changes ({len(dirty.splitlines())} file(s)); the "
                    "experiments branch from a commit and would not contain them. Commit or "
                    "stash them yourself (ajetd never stashes or resets), then submit again",
                    now,
                )
                return
            _, head = git(top, "rev-parse", "HEAD")
            state.repo, state.baseline_commit = top, head
        Path(spec.result_dir).mkdir(parents=True, exist_ok=True)
        ledger = Path(spec.result_dir) / "ledger.tsv"
        if not ledger.exists():
            write_atomic(ledger, cr.ledger_header())
        log.info("campaign %s (%s) started", spec.name, state.campaign_id)
        self._save(state)

    def _refuse(self, state: CampaignState, why: str, now: float) -> None:
        log.warning("campaign %s refused: %s", state.campaign_id, why)
        state.refused, state.done, state.progress = why, True, f"refused: {why}"
        state.phase, state.status, state.reason, state.ended_at = "done", "refused", why, now
        self._save(state)

    # -- each tick --------------------------------------------------------------------------
    def tick(self, now: float, runs: dict[str, Run]) -> None:
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
            if state.done and not filed:
                continue
            try:
                self._step(state, now, runs, filed)
            except Exception as exc:  # the loop's per-item guard: this campaign, not the others
                progress = f"error: {exc}"
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
        """When the earliest deadline of a live campaign falls: the daemon wakes then, so a
        campaign waiting for its next experiment ends at once when its deadline passes."""
        due = []
        for state in self.states.values():
            cached = self.loaded.get(state.campaign_id)
            if not state.done and cached is not None and cached[1].deadline_s is not None:
                end = state.started_at + cached[1].deadline_s
                due += [end, end - (cached[1].per_experiment_s or 0.0)]  # too late for one more
        return min((t for t in due if t > now), default=None)

    def _step(
        self, state: CampaignState, now: float, runs: dict[str, Run], filed: list[tuple[str, Path]]
    ) -> None:
        if state.status in ("stopped", "refused"):  # ended for good: answer, never load
            for req_id, path in filed:
                self._handle(state, req_id, path, now)
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
                progress_of(state, spec, now).met
                or len(active) >= spec.parallel
                or len(state.experiments) >= len(plan)
            ):
                break
            self._launch(state, spec, base, base_text, plan[len(state.experiments)], now)
            changed = True
        changed = self._record(state, spec, runs) or changed
        before = (state.progress, state.phase, state.status, state.reason)
        self._evaluate(state, spec, len(plan), now)
        if changed or before != (state.progress, state.phase, state.status, state.reason):
            self._save(state)
            self._report(state, spec)
        if changed:
            self._plot(state, spec)

    def _evaluate(
        self, state: CampaignState, spec: cs.CampaignSpec, planned: int, now: float
    ) -> None:
        """running, waiting (with the reason) or done (with its status), from the stop rules
        and what is still running or planned."""
        prog = progress_of(state, spec, now)
        running = [e for e in state.experiments if not e.recorded]
        phase, status, reason = "running", "", ""
        if state.stopping:
            if running:
                reason = f"stopping: {len(running)} experiment(s) still ending"
            else:
                phase, status, reason = "done", "stopped", "stopped by `ajetd campaign stop`"
        elif prog.met:
            if running:
                reason = f"{prog.text}; {len(running)} running experiment(s) end first"
            elif prog.needs_decision:
                phase, status, reason = "done", "needs_decision", prog.text
                if state.best is not None:
                    reason += f"; best {spec.metric} {state.best:g} ({state.best_name})"
            else:
                phase, status, reason = "done", "completed", prog.text
        elif not running and len(state.experiments) >= planned:
            phase = "waiting"
            reason = (
                "no experiment left to run: add the next one with `ajetd campaign add "
                f"{state.campaign_id} --name N --description D ...` (or stop it: `ajetd "
                f"campaign stop {state.campaign_id}`)"
            )
        if phase == "done" and state.phase != "done":
            state.ended_at = now
            log.info("campaign %s ended (%s): %s", state.campaign_id, status, reason)
        elif phase != "done":
            state.ended_at = None
        state.phase, state.status, state.reason = phase, status, reason
        state.done = phase == "done"
        state.progress = prog.text

    def _record(self, state: CampaignState, spec: cs.CampaignSpec, runs: dict[str, Run]) -> bool:
        """A ledger row for each experiment that ended (or was refused) since last time."""
        changed = False
        for exp in state.experiments:
            if exp.recorded:
                continue
            run = runs.get(exp.run_id) if exp.run_id else None
            if not exp.refused and (run is None or run.state is not State.DONE):
                continue
            value = None
            status = "failed"
            if run is not None and run.status is not None:
                value = cr.best_value(run.history, spec.metric, spec.maximise)
                status = run.status.value
            exp.value = value
            exp.status = cr.verdict(status, value, state.best, spec.maximise, exp.smoke)
            if exp.status == "keep" and value is not None:
                state.best, state.best_name, state.best_index = value, exp.name, exp.index
            note = f" (smoke run: {status})" if exp.smoke else ""
            exp.row = self._row(spec, exp, run, note)
            with open(Path(spec.result_dir) / "ledger.tsv", "a") as ledger:
                ledger.write(cr.ledger_row(exp.row))
            exp.recorded, changed = True, True
        if changed:  # at once: a restart before the next save would write the rows again
            self._save(state)
        return changed

    def _row(
        self, spec: cs.CampaignSpec, exp: ExpState, run: Run | None, note: str
    ) -> dict[str, Any]:
        elapsed = None
        memory = None
        if run is not None and run.started_at and run.ended_at:
            elapsed = round((run.ended_at - run.started_at) / 60.0, 2)
        if run is not None and run.gpu_stats:
            memory = round(sum(r.get("mem_peak", 0.0) for r in run.gpu_stats.values()) / 1024, 2)
        trial = run.trial if run else None
        refused = f" (refused: {exp.refused})" if exp.refused else ""
        return {
            "index": exp.index,
            "branch": exp.branch,
            "parent_commit": exp.parent_commit,
            "commit": exp.commit,
            "recipe": run.config_path if run else "",
            "metric_name": spec.metric,
            "metric_value": exp.value,
            "memory_gb": memory,
            "elapsed_min": elapsed,
            "launcher": self._launcher(exp.run_id),
            "job_id": (run.slurm.get("job_id") if run else None) or exp.run_id,
            "command": trial.command if trial else "",
            "log_path": f"{run.result_dir}/logs/trial-{trial.number}.log" if run and trial else "",
            "status": exp.status,
            "description": exp.description + refused + note,
        }

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
            try:
                answer = self._apply(state, read_request(path), now)
            except (OSError, ValueError, TypeError) as exc:
                answer = {"ok": False, "error": f"unreadable request: {exc}"}
            log.info("campaign %s: request %s: %s", state.campaign_id, req_id, answer)
            state.handled[req_id] = answer
            for old in list(state.handled)[:-MAX_HANDLED]:
                del state.handled[old]
            self._save(state)
        write_answer(self.home, state.campaign_id, req_id, answer)
        path.unlink(missing_ok=True)
        return applied

    def _apply(self, state: CampaignState, request: dict[str, Any], now: float) -> dict[str, Any]:
        op = request.get("op")
        if op == "stop":
            return self._stop(state)
        if state.status in ("stopped", "refused"):
            return {
                "ok": False,
                "error": f"campaign {state.campaign_id} {state.status}: {state.reason}",
            }
        if state.stopping:
            return {"ok": False, "error": f"campaign {state.campaign_id} is stopping"}
        if op == "add":
            return self._add(state, request, now)
        if op == "set":
            return self._set(state, request, now)
        return {"ok": False, "error": f"unknown request {op!r}"}

    def _continue(self, state: CampaignState, spec: cs.CampaignSpec, now: float) -> None:
        """`--continue`: one more round of the default rule, where it is what stopped."""
        if progress_of(state, spec, now).needs_decision:
            state.rounds += 1

    def _add(self, state: CampaignState, request: dict[str, Any], now: float) -> dict[str, Any]:
        spec, _, _ = self._load(state)
        raw = request.get("entry")
        if not isinstance(raw, dict):
            return {"ok": False, "error": "the request holds no experiment"}
        rounds = state.rounds
        if request.get("continue"):
            self._continue(state, spec, now)
        prog = progress_of(state, spec, now)
        if prog.met:
            state.rounds = rounds
            hint = "" if prog.needs_decision else " (raise it with `ajetd campaign set`)"
            return {"ok": False, "error": f"campaign {state.campaign_id}: {prog.text}{hint}"}
        index = len(cs.planned(spec))
        files: dict[str, str] = {}
        for key in ("patch", "blueprint"):
            text = request.get(f"{key}_text")
            if isinstance(text, str):
                ext = "patch" if key == "patch" else "md"
                files[key] = f"added-{index:02d}-{str(raw.get('name'))[:64]}.{ext}"
                raw = {**raw, key: files[key]}
        folder = self.folder(state.campaign_id)
        if any((folder / f).exists() for f in files.values()):
            state.rounds = rounds
            return {"ok": False, "error": f"{sorted(files.values())} already in the folder"}
        try:
            load_folder(folder, [*state.added, raw], state.stop_set, frozenset(files.values()))
        except cs.CampaignError as exc:
            state.rounds = rounds
            return {"ok": False, "error": "; ".join(exc.problems)}
        start = str(raw.get("from") or "")
        if start and state.repo:
            code, _ = git(state.repo, "rev-parse", "--verify", "-q", f"{start}^{{commit}}")
            if code != 0:
                state.rounds = rounds
                return {"ok": False, "error": f"from {start!r}: no such branch or commit"}
        for key, file_name in files.items():
            write_atomic(folder / file_name, str(request[f"{key}_text"]), OWNER_FILE)
        state.added.append(raw)
        state.revision += 1
        state.done = False  # a needs_decision campaign goes on
        name = raw.get("name")
        return {
            "ok": True,
            "index": index,
            "name": name,
            "message": f"experiment {index} ({name}) added to campaign {state.campaign_id}",
        }

    def _set(self, state: CampaignState, request: dict[str, Any], now: float) -> dict[str, Any]:
        spec, _, _ = self._load(state)
        rules = request.get("stop") or {}
        if not isinstance(rules, dict):
            return {"ok": False, "error": "the request holds no stop rules"}
        rules = dict(rules)
        if "deadline" in rules:  # from now, as the user means it; stored from the start
            try:
                seconds = parse_duration(str(rules["deadline"]))
            except DurationError as exc:
                return {"ok": False, "error": f"deadline: {exc}"}
            rules["deadline"] = f"{int(now - state.started_at + seconds)}s"
        try:
            load_folder(self.folder(state.campaign_id), state.added, {**state.stop_set, **rules})
        except cs.CampaignError as exc:
            return {"ok": False, "error": "; ".join(exc.problems)}
        if request.get("continue"):
            self._continue(state, spec, now)
        state.stop_set.update(rules)
        state.revision += 1
        state.done = False  # re-evaluated at once: goes on if no rule is met any more
        spec, _, _ = self._load(state)
        return {"ok": True, "message": progress_of(state, spec, now).text}

    def _stop(self, state: CampaignState) -> dict[str, Any]:
        if state.done and state.status != "needs_decision":  # that one ends as stopped
            return {
                "ok": True,
                "message": f"campaign {state.campaign_id} already ended ({state.status})",
            }
        state.stopping = True
        running = [e for e in state.experiments if e.run_id and not e.recorded]
        for exp in running:
            write_atomic(self.home.control / f"{exp.run_id}.stop", "campaign stop\n", OWNER_FILE)
        return {
            "ok": True,
            "message": f"stopping campaign {state.campaign_id} "
            f"({len(running)} running experiment(s))",
        }

    # -- reports ----------------------------------------------------------------------------
    def _report(self, state: CampaignState, spec: cs.CampaignSpec) -> None:
        write_atomic(Path(spec.result_dir) / "campaign.md", render_report(spec, state))

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
        write_json(source, data, OWNER_FILE)
        self.plots.request(state.campaign_id, source, Path(spec.result_dir) / "progress.png")

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
        if spec.branch_prefix:
            where = self._worktree(state, spec, exp, record, codebase)
            if where is None:
                return
            codebase = where
        text = base_text
        if exp.blueprint:
            text = (self.folder(state.campaign_id) / exp.blueprint).read_text()
        blueprint = render(spec, exp, index, text, codebase, now - state.started_at)
        run_id = new_run_id(lambda i: self.home.run_dir(i).exists())
        target = self.home.inbox / f"{run_id}__{spec.name}-{index:02d}-{exp.name}.md"
        write_atomic(target, blueprint, OWNER_FILE)
        record.run_id = run_id
        log.info(
            "campaign %s: experiment %d (%s) submitted as run %s",
            spec.name,
            index,
            exp.name,
            run_id,
        )

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
        branch = f"{spec.branch_prefix}/{exp.name}"
        path = Path(spec.result_dir) / "worktrees" / exp.name
        start = exp.start or state.baseline_commit
        code, parent = git(state.repo, "rev-parse", "--verify", f"{start}^{{commit}}")
        if code != 0:
            record.refused = f"cannot start from {start!r}: {parent}"
            return None
        code, _ = git(state.repo, "rev-parse", "--verify", f"refs/heads/{branch}")
        if code == 0 or path.exists():
            record.refused = (
                f"branch {branch} or worktree {path} already exists; ajetd never "
                "overwrites: choose another name or branch_prefix"
            )
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        code, out = git(state.repo, "worktree", "add", "-b", branch, str(path), parent)
        if code != 0:
            record.refused = f"git worktree add failed: {out}"
            return None
        record.branch, record.parent_commit = branch, parent
        if exp.patch:
            patch = self.folder(state.campaign_id) / exp.patch
            code, out = git(str(path), "apply", "--index", str(patch))
            if code != 0:
                record.refused = f"patch {exp.patch} does not apply on {parent[:12]}: {out}"
                return None
        message = f"hypothesis: {exp.description or exp.name} (ajetd campaign {spec.name})"
        code, out = git(
            str(path), *_identity(state.repo), "commit", "-q", "--allow-empty", "-m", message
        )
        if code != 0:
            record.refused = f"the hypothesis commit failed: {out}"
            return None
        record.commit = git(str(path), "rev-parse", "HEAD")[1]
        relative = os.path.relpath(os.path.realpath(codebase), os.path.realpath(state.repo))
        return str(path / relative) if relative != "." else str(path)


def _identity(repo: str) -> list[str]:
    """An author for the hypothesis commit when the repository has none configured."""
    if git(repo, "config", "user.email")[0] == 0:
        return []
    return ["-c", "user.name=ajetd", "-c", "user.email=ajetd@localhost"]


def render(
    spec: cs.CampaignSpec,
    exp: cs.Experiment,
    index: int,
    base_text: str,
    codebase: str,
    elapsed_s: float,
) -> str:
    """The experiment's blueprint: the base's parts, its codebase (worktree), command with
    overrides, own result dir and time limit (the stricter of the base's and the campaign's
    per-experiment timeout, never past the deadline), and `gpus` from the campaign."""
    parts = extract_parts(base_text)
    base = parse_blueprint(base_text)
    limits = [base.max_time_s]
    if spec.per_experiment_s:
        limits.append(spec.per_experiment_s)
    if spec.deadline_s:
        limits.append(max(60.0, spec.deadline_s - elapsed_s))
    command = " ".join([base.launch_command, *(shlex.quote(o) for o in exp.overrides)])
    options = load_yaml_part(parts.get("ajetd", ""))
    if spec.gpus is not None:
        options["gpus"] = spec.gpus
    purpose = f"{base.purpose} (campaign {spec.name}, experiment {index} {exp.name}"
    purpose += f": {exp.description})" if exp.description else ")"
    sections = {
        "exp_purpose": purpose,
        "exp_codebase_dir": codebase,
        "exp_venv_exe": base.venv_exe,
        "exp_yaml_path": base.yaml_path,
        "exp_launch_command": f"```bash\n{command}\n```",
        "exp_result_dir": f"{spec.result_dir}/{index:02d}-{exp.name}",
        "exp_max_time": f"{int(min(limits))}s",
    }
    lines = [f"# {spec.name}: experiment {index} ({exp.name})", ""]
    for key, value in sections.items():
        lines += [f"## [{key}]", value, ""]
    if options:
        lines += ["## [ajetd]", "```yaml", yaml.safe_dump(options, sort_keys=False).strip(), "```"]
    return "\n".join(lines) + "\n"


def render_report(spec: cs.CampaignSpec, state: CampaignState) -> str:
    """campaign.md: the handoff a reader (or an agent that lost its context) resumes from."""
    lines = [f"# Campaign {spec.name}", "", f"- id: `{state.campaign_id}`"]
    lines += [f"- goal: `{spec.metric}` ({'higher' if spec.maximise else 'lower'} is better)"]
    shown = state.phase + (f" ({state.status})" if state.status else "")
    lines += [f"- state: {shown}" + (f": {state.reason}" if state.reason else "")]
    lines += [f"- {state.progress}"]
    lines += [f"- best: {best_line(spec, state)}"]
    if state.baseline_commit:
        lines += [f"- baseline commit: `{state.baseline_commit}` in `{state.repo}`"]
    lines += [
        "",
        "| # | experiment | branch | run | status | metric |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for e in state.experiments:
        value = "" if e.value is None else f"{e.value:g}"
        status = e.status or ("refused" if e.refused else "running")
        lines.append(
            f"| {e.index} | {e.name} | {e.branch or '-'} | {e.run_id or '-'} | {status} | {value} |"
        )
    lines += [
        "",
        "Ledger: `ledger.tsv` (NeMo-RL's experiment-log columns); plot: `progress.png`; "
        f"live: `ajetd campaign status {state.campaign_id} --json`.",
        "",
    ]
    return "\n".join(lines)


def submit_folder(home: Home, folder: Path) -> str:
    """`ajetd campaign FOLDER`: checked, then copied into the inbox atomically; its id."""
    spec, _, _ = load_folder(folder)
    home.ensure()
    campaign_id = new_campaign_id(home)
    tmp = home.inbox / f".{campaign_id}.tmp"
    shutil.copytree(folder, tmp)
    tmp.rename(home.inbox / f"{campaign_id}__{spec.name}{SUFFIX}")
    return campaign_id


class Plotter:
    """Draws progress.png in a child process, one at a time per campaign, never waiting for
    it: the daemon's loop goes on, and a failed plot is logged, never the campaign's failure."""

    def __init__(self) -> None:
        self.running: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
        self.due: dict[str, tuple[Path, Path]] = {}  # campaign id -> (plot.json, png)

    def request(self, campaign_id: str, source: Path, png: Path) -> None:
        self.due[campaign_id] = (source, png)
        self._start()

    def reap(self) -> None:
        for campaign_id, (proc, errors) in list(self.running.items()):
            if proc.poll() is None:
                continue
            del self.running[campaign_id]
            if proc.returncode != 0:
                try:
                    tail = errors.read_text(errors="replace")[-2000:].strip()
                except OSError as exc:
                    tail = f"(its output is unreadable: {exc})"
                log.warning(
                    "campaign %s: progress.png not drawn (exit %s): %s",
                    campaign_id,
                    proc.returncode,
                    tail,
                )
        self._start()

    def _start(self) -> None:
        for campaign_id in [c for c in self.due if c not in self.running]:
            source, png = self.due.pop(campaign_id)
            errors = source.with_name("plot.log")
            try:
                with open(errors, "wb") as out:
                    proc = subprocess.Popen(
                        [sys.executable, "-m", "ajetd.pictures.progress", str(source), str(png)],
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        env={**os.environ, "MPLBACKEND": "Agg"},
                    )
            except OSError as exc:
                log.warning("campaign %s: cannot start the plotter: %s", campaign_id, exc)
                continue
            self.running[campaign_id] = (proc, errors)
