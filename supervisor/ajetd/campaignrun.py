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

import json
import logging
import os
import shlex
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from ajetd import campaign as cp
from ajetd.admission import stored_options
from ajetd.blueprint import Blueprint, extract_parts, parse_blueprint
from ajetd.errors import AjetdError
from ajetd.intake import SETTLE_S
from ajetd.model import Run, State
from ajetd.naming import new_run_id
from ajetd.options import load_yaml_part
from ajetd.store import OWNER_DIR, OWNER_FILE, Home, write_atomic, write_json

log = logging.getLogger(__name__)
SUFFIX = ".campaign"


@dataclass
class ExpState:
    index: int
    name: str
    description: str
    run_id: str = ""
    branch: str = ""
    parent_commit: str = ""
    commit: str = ""
    refused: str = ""  # why it could not be launched (recorded as a crash)
    recorded: bool = False
    status: str = ""
    value: float | None = None


@dataclass
class CampaignState:
    campaign_id: str
    started_at: float
    baseline_commit: str = ""
    repo: str = ""
    experiments: list[ExpState] = field(default_factory=list)
    best: float | None = None
    best_name: str = ""
    done: bool = False
    progress: str = ""
    refused: str = ""  # why the whole campaign cannot run


def load_folder(folder: Path) -> tuple[cp.CampaignSpec, Blueprint, str]:
    """The spec, its base blueprint (parsed), and the base's text; CampaignError if unusable."""
    files = {p.name for p in folder.iterdir() if p.is_file()}
    if "campaign.yaml" not in files:
        raise cp.CampaignError([f"{folder}: no campaign.yaml"])
    spec = cp.parse_campaign((folder / "campaign.yaml").read_text(), files)
    text = (folder / spec.base).read_text()
    try:
        return spec, parse_blueprint(text), text
    except AjetdError as exc:
        raise cp.CampaignError([f"base blueprint {spec.base}: {exc}"]) from exc


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
        self.loaded: dict[str, tuple[cp.CampaignSpec, Blueprint, str]] = {}  # read once

    def load(self) -> None:
        self.root.mkdir(mode=OWNER_DIR, exist_ok=True)
        for state_file in sorted(self.root.glob("*/state.json")):
            data = json.loads(state_file.read_text())
            data["experiments"] = [ExpState(**e) for e in data.get("experiments", [])]
            state = CampaignState(**data)
            self.states[state.campaign_id] = state

    def folder(self, campaign_id: str) -> Path:
        return self.root / campaign_id / "folder"

    def _load(self, campaign_id: str) -> tuple[cp.CampaignSpec, Blueprint, str]:
        """The campaign's folder, read and checked once (it does not change once claimed)."""
        if campaign_id not in self.loaded:
            self.loaded[campaign_id] = load_folder(self.folder(campaign_id))
        return self.loaded[campaign_id]

    def _save(self, state: CampaignState) -> None:
        write_json(self.root / state.campaign_id / "state.json", asdict(state), OWNER_FILE)

    # -- intake ---------------------------------------------------------------------------
    def claim(self, now: float) -> None:
        """Campaign folders dropped into the inbox (`<id>__<name>.campaign/` from `ajetd
        campaign`, or any folder holding campaign.yaml)."""
        self.root.mkdir(mode=OWNER_DIR, exist_ok=True)
        for entry in sorted(self.home.inbox.iterdir()):
            if not entry.is_dir() or entry.name.startswith("."):
                continue
            if not (entry / "campaign.yaml").is_file():
                continue
            if not entry.name.endswith(SUFFIX) and not _settled(entry, now):
                continue  # still being copied in (`ajetd campaign` renames it in whole)
            head, _, _ = entry.name.partition("__")
            campaign_id = head if entry.name.endswith(SUFFIX) and "__" in entry.name else ""
            if not campaign_id or (self.root / campaign_id).exists():
                campaign_id = new_run_id(lambda i: (self.root / i).exists())
            (self.root / campaign_id).mkdir(mode=OWNER_DIR)
            entry.rename(self.folder(campaign_id))
            state = CampaignState(campaign_id, now)
            self.states[campaign_id] = state
            self._start(state, now)

    def _start(self, state: CampaignState, now: float) -> None:
        """Check the folder and the git state once, at the campaign's start."""
        try:
            spec, base, _ = self._load(state.campaign_id)
        except (cp.CampaignError, OSError) as exc:
            self._refuse(state, str(exc), now)
            return
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
            write_atomic(ledger, cp.ledger_header())
        log.info("campaign %s (%s) started", spec.name, state.campaign_id)
        self._save(state)

    def _refuse(self, state: CampaignState, why: str, now: float) -> None:
        log.warning("campaign %s refused: %s", state.campaign_id, why)
        state.refused, state.done, state.progress = why, True, f"refused: {why}"
        self._save(state)

    # -- each tick --------------------------------------------------------------------------
    def tick(self, now: float, runs: dict[str, Run]) -> None:
        for state in self.states.values():
            if state.done:
                continue
            try:
                self._step(state, now, runs)
            except (OSError, AjetdError, subprocess.SubprocessError) as exc:
                log.exception("campaign %s: step failed", state.campaign_id)
                state.progress = f"error: {exc}"
                self._save(state)

    def _step(self, state: CampaignState, now: float, runs: dict[str, Run]) -> None:
        spec, base, base_text = self._load(state.campaign_id)
        changed = self._record(state, spec, runs)
        plan = cp.planned(spec)
        while True:
            prog = cp.progress(
                spec,
                len(state.experiments),
                len(plan) - len(state.experiments),
                state.started_at,
                now,
                state.best,
            )
            active = [e for e in state.experiments if e.run_id and not e.recorded]
            if prog.met or len(active) >= spec.parallel:
                break
            self._launch(state, spec, base, base_text, plan[len(state.experiments)], now)
            changed = True
        done = prog.met and not [e for e in state.experiments if not e.recorded]
        if changed or prog.text != state.progress or done != state.done:
            state.progress, state.done = prog.text, done
            self._record(state, spec, runs)
            self._save(state)
            self._report(state, spec)

    def _record(self, state: CampaignState, spec: cp.CampaignSpec, runs: dict[str, Run]) -> bool:
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
                value = cp.best_value(run.history, spec.metric, spec.maximise)
                status = run.status.value
            exp.value = value
            exp.status = cp.verdict(status, value, state.best, spec.maximise)
            if exp.status == "keep" and value is not None:
                state.best, state.best_name = value, exp.name
            self._append_row(spec, exp, run)
            exp.recorded, changed = True, True
        return changed

    def _append_row(self, spec: cp.CampaignSpec, exp: ExpState, run: Run | None) -> None:
        elapsed = None
        memory = None
        if run is not None and run.started_at and run.ended_at:
            elapsed = round((run.ended_at - run.started_at) / 60.0, 2)
        if run is not None and run.gpu_stats:
            memory = round(sum(r.get("mem_peak", 0.0) for r in run.gpu_stats.values()) / 1024, 2)
        trial = run.trial if run else None
        row = {
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
            "description": exp.description + (f" (refused: {exp.refused})" if exp.refused else ""),
        }
        with open(Path(spec.result_dir) / "ledger.tsv", "a") as ledger:
            ledger.write(cp.ledger_row(row))

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

    # -- one experiment ---------------------------------------------------------------------
    def _launch(
        self,
        state: CampaignState,
        spec: cp.CampaignSpec,
        base: Blueprint,
        base_text: str,
        exp: cp.Experiment,
        now: float,
    ) -> None:
        index = len(state.experiments)
        record = ExpState(index, exp.name, exp.description)
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
        spec: cp.CampaignSpec,
        exp: cp.Experiment,
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

    def _report(self, state: CampaignState, spec: cp.CampaignSpec) -> None:
        write_atomic(Path(spec.result_dir) / "campaign.md", render_report(spec, state))


def _identity(repo: str) -> list[str]:
    """An author for the hypothesis commit when the repository has none configured."""
    if git(repo, "config", "user.email")[0] == 0:
        return []
    return ["-c", "user.name=ajetd", "-c", "user.email=ajetd@localhost"]


def render(
    spec: cp.CampaignSpec,
    exp: cp.Experiment,
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


def render_report(spec: cp.CampaignSpec, state: CampaignState) -> str:
    lines = [f"# Campaign {spec.name}", "", f"- id: `{state.campaign_id}`"]
    lines += [f"- metric: `{spec.metric}` ({'higher' if spec.maximise else 'lower'} is better)"]
    lines += [f"- {state.progress}"]
    if state.best is not None:
        lines += [f"- best: {spec.metric} {state.best:g} ({state.best_name})"]
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
    lines += ["", "Ledger: `ledger.tsv` (NeMo-RL's experiment-log columns).", ""]
    return "\n".join(lines)


def submit_folder(home: Home, folder: Path) -> str:
    """`ajetd campaign FOLDER`: checked, then copied into the inbox atomically; its id."""
    spec, _, _ = load_folder(folder)
    home.ensure()
    campaign_id = new_run_id(lambda i: (home.root / "campaigns" / i).exists())
    tmp = home.inbox / f".{campaign_id}.tmp"
    shutil.copytree(folder, tmp)
    tmp.rename(home.inbox / f"{campaign_id}__{spec.name}{SUFFIX}")
    return campaign_id


def status_lines(home: Home) -> list[str]:
    """`campaign NAME (id): progress; best ...` for `ajetd status`."""
    out = []
    for state_file in sorted((home.root / "campaigns").glob("*/state.json")):
        try:
            data = json.loads(state_file.read_text())
        except (OSError, ValueError):
            continue
        line = f"campaign {data['campaign_id']}: {data.get('progress', '')}"
        if data.get("best") is not None:
            line += f"; best {data['best']:g} ({data.get('best_name')})"
        out.append(line + (" [done]" if data.get("done") else ""))
    return out
