"""A campaign's record (`$AJETD_HOME/campaigns/<id>/state.json`) and what is read from it
alone: the daemon's campaign runner writes it, `ajetd campaign status / wait / list` read it.
Kept apart from the runner so the CLI imports only this (and YAML for the spec), not the
daemon's modules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ajetd.core import campaignrules as cr
from ajetd.core import campaignspec as cs


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
    smoke: bool = False
    row: dict[str, Any] = field(default_factory=dict)  # its ledger row, typed (status --json)


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
    name: str = ""
    best_index: int | None = None
    phase: str = "running"  # running, waiting (for `campaign add`), done
    status: str = ""  # once done: completed, needs_decision, stopped, refused
    reason: str = ""  # why it waits, or why it ended
    ended_at: float | None = None
    stopping: bool = False  # `ajetd campaign stop` asked; done once nothing runs
    rounds: int = 1  # rounds of the default stop rule granted (`--continue` adds one)
    added: list[dict[str, Any]] = field(default_factory=list)  # campaign.yaml entries, live
    stop_set: dict[str, Any] = field(default_factory=dict)  # stop rules set live
    handled: dict[str, dict[str, Any]] = field(default_factory=dict)  # request id -> answer
    revision: int = 0  # bumped by every live change of the spec


def read_spec(
    folder: Path,
    added: list[dict[str, Any]] | None = None,
    stop: dict[str, Any] | None = None,
    extra_files: frozenset[str] = frozenset(),
) -> cs.CampaignSpec:
    """campaign.yaml with what was added and set live, validated; CampaignError if unusable."""
    files = {p.name for p in folder.iterdir() if p.is_file()} | extra_files
    if "campaign.yaml" not in files:
        raise cs.CampaignError([f"{folder}: no campaign.yaml"])
    text = (folder / "campaign.yaml").read_text()
    if added or stop:
        text = cs.merged(text, added or [], stop or {})
    return cs.parse_campaign(text, files)


def load_state(path: Path) -> CampaignState:
    data = json.loads(path.read_text())
    data["experiments"] = [ExpState(**e) for e in data.get("experiments", [])]
    return CampaignState(**data)


def attempted(state: CampaignState) -> int:
    """What the count rules count: launched (or refused) experiments, crashes included,
    smoke runs not."""
    return sum(1 for e in state.experiments if not e.smoke)


def rules_of(state: CampaignState, spec: cs.CampaignSpec, now: float) -> list[cr.Rule]:
    """Every stop rule against where the campaign stands now."""
    return cr.rules(spec, attempted(state), state.started_at, now, state.best, state.rounds)


def progress_of(state: CampaignState, spec: cs.CampaignSpec, now: float) -> cr.Progress:
    return cr.progress(spec, rules_of(state, spec, now), attempted(state))


def best_line(spec: cs.CampaignSpec, state: CampaignState) -> str:
    """`accuracy 0.42: longer (branch ar/longer, commit 1a2b3c4d5e6f)`, or `none yet`."""
    if state.best is None or state.best_index is None:
        return "none yet"
    exp = state.experiments[state.best_index]
    where = [f"run {exp.run_id}"] if exp.run_id else []
    if exp.branch:
        where += [f"branch {exp.branch}", f"commit {exp.commit[:12]}"]
    return f"{spec.metric} {state.best:g}: {exp.name} ({', '.join(where)})"
