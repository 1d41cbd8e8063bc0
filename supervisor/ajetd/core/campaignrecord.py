"""A campaign's record (`$AJETD_HOME/campaigns/<id>/state.json`) and what is read from it
alone: how many experiments count, where the campaign stands (`standing`), the best so far,
and an ended experiment's ledger row. The daemon's campaign runner writes the record,
`ajetd campaign status / wait / list` read it: kept apart from the runner so the CLI imports
only this (and YAML for the spec), not the daemon's modules. Pure: the file is read by
`ajetd.hosts.campaignfolder.load_state`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ajetd.core import campaignrules as cr
from ajetd.core import campaignspec as cs
from ajetd.core import campaignstop
from ajetd.core.copyname import original_of
from ajetd.core.errors import one_line
from ajetd.core.model import Run, stored_as_declared
from ajetd.core.shellline import pasteable
from ajetd.core.shown import show
from ajetd.core.stoprules import records_hold


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
    reason: str = ""  # a crash row's why: its run's reason (one line, bounded), or `refused`
    recorded: bool = False
    status: str = ""
    run_status: str = ""  # how its run ended (`failed`, `time_limit`, ...): a crash row's kind
    value: float | None = None
    # where `value` came from when not every record of its run counted (`counted_value`):
    # the trial whose fresh start its records begin at, and what the views say of it
    value_trial: int | None = None
    value_note: str = ""
    smoke: bool = False
    row: dict[str, Any] = field(default_factory=dict)  # its ledger row, typed (status --json)
    # the overrides it ran with (those carried first), and those carried from the experiment
    # whose branch or commit it started from (`carried_from`, that one's index): an override
    # is no commit, so a branch from an override-only experiment would not hold it
    overrides: list[str] = field(default_factory=list)
    carried: list[str] = field(default_factory=list)
    carried_from: int | None = None


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
    stop_asked_at: float | None = None  # when the daemon took that stop (None: an older record)
    rounds: int = 1  # rounds of the default stop rule granted (`--continue` adds one)
    added: list[dict[str, Any]] = field(default_factory=list)  # campaign.yaml entries, live
    stop_set: dict[str, Any] = field(default_factory=dict)  # stop rules set live
    handled: dict[str, dict[str, Any]] = field(default_factory=dict)  # request id -> answer
    revision: int = 0  # bumped by every live change of the spec
    # requests the daemon refused (`refusal`): `campaign status` shows them, so one filed
    # while no daemon ran, whose CLI could not wait for the answer, is never lost
    refused_requests: list[dict[str, Any]] = field(default_factory=list)
    # campaign.yaml gives no branch_prefix: the default one taken at the start (seed 002),
    # and what the views say of the git trail (the default, or why there is none)
    branch_prefix: str = ""
    git_note: str = ""
    # campaign.md is behind the record: its result dir refused it (full); written once it can
    # be, also after the campaign ended (`Campaigns._report`)
    unwritten: bool = False


MAX_REFUSALS = 20  # refused requests kept in the record (the newest)


def refusal(req_id: str, request: Mapping[str, Any], why: str, now: float) -> dict[str, Any]:
    """A refused request as the record keeps it: what it asked (`op`, the experiment's
    `name` for an add), why not, when it was filed (its id begins with the time in ns) and
    when refused."""
    head = req_id.partition("-")[0]
    entry = request.get("entry")
    name = entry.get("name") if isinstance(entry, Mapping) else None
    return {
        "request_id": req_id,
        "op": str(request.get("op") or ""),
        "name": str(name) if name else None,
        "reason": why,
        "filed_at": int(head) / 1e9 if head.isdigit() else None,
        "refused_at": now,
    }


def closed_problem(state: CampaignState) -> str | None:
    """Why a campaign takes no more experiments or rules, ever (stopped, refused), or None."""
    if state.status not in ("stopped", "refused"):
        return None
    left = (
        "a stopped campaign takes no more experiments or rules: start another with "
        "`ajetd campaign FOLDER` (a new result_dir)"
        if state.status == "stopped"
        else "a refused campaign never ran: fix its folder and submit it again with "
        "`ajetd campaign FOLDER`"
    )
    return f"campaign {state.campaign_id} {state.status}: {state.reason}; {left}"


def name_taken(state: CampaignState, spec: cs.CampaignSpec, name: Any, now: float) -> str | None:
    """Why an experiment added live cannot be named `name`: an experiment of the campaign
    (`spec` as it stands) has that name, said with its index and where it stands (one
    planned that a stop rule holds back: how to let it run); or None."""
    plan = cs.planned(spec)
    index = next((i for i, e in enumerate(plan) if e.name == name), None)
    if index is None:
        return None
    if index >= len(state.experiments):
        held = held_back(state, spec, now, plan[index])
        if held:
            go_on = (
                f"`ajetd campaign set {state.campaign_id} --continue`"
                if progress_of(state, spec, now).needs_decision
                else f"`ajetd campaign set {state.campaign_id}` with the rule raised"
            )
            return (
                f"name {show(name)}: experiment {index} of campaign {state.campaign_id} has "
                f"it (planned, not run: {held}); to run it, let the campaign go on ({go_on}), "
                "not add it again; a new experiment needs another name"
            )
        where = "planned, not yet launched"
    else:
        exp = state.experiments[index]
        where = (
            f"ended: {exp.status}"
            if exp.recorded
            else "refused"
            if exp.refused
            else f"running as run {exp.run_id}"
        )
    return (
        f"name {show(name)}: experiment {index} of campaign {state.campaign_id} has it "
        f"({where}); a name names the experiment's result dir and branch: give the new one "
        "another name"
    )


def check_stored(data: Mapping[str, Any]) -> None:
    """ValueError naming the first field of a stored campaign record (its state.json, which a
    person may edit or a crash may damage) that holds what its type cannot, as a run's
    record is checked: such a value broke `ajetd status`, `campaign list` and `campaign
    status` (a time of text, a name that is a list, experiments that are `true`)."""
    stored_as_declared(CampaignState, data, "campaign")
    for exp in data.get("experiments") or ():
        stored_as_declared(ExpState, exp, "experiment")


def attempted(state: CampaignState) -> int:
    """What the count rules count: launched (or refused) experiments, crashes included,
    smoke runs not."""
    return sum(1 for e in state.experiments if not e.smoke)


def not_launched(state: CampaignState, spec: cs.CampaignSpec) -> list[tuple[int, cs.Experiment]]:
    """The experiments given (campaign.yaml, `add`) and not yet launched, with their index."""
    return list(enumerate(cs.planned(spec)))[len(state.experiments) :]


def rules_of(
    state: CampaignState, spec: cs.CampaignSpec, now: float, ahead: bool = False
) -> list[cr.Rule]:
    """Every stop rule against where the campaign stands now; `ahead`: with the experiments
    given and not yet launched counted as attempted (smoke runs not), as they will be: is
    there room for one more after them?"""
    planned = sum(1 for _, e in not_launched(state, spec) if not e.smoke) if ahead else 0
    return cr.rules(
        spec, attempted(state), state.started_at, now, state.best, state.rounds, planned
    )


def progress_of(
    state: CampaignState, spec: cs.CampaignSpec, now: float, ahead: bool = False
) -> cr.Progress:
    """The stop rules met now (`ahead`: once what is planned ran, `rules_of`). Experiments
    launch in order while no rule is met now, so one added when the rules are met `ahead`
    would never run: `campaign add` refuses it (walk 82, M1: it was accepted, never ran)."""
    return cr.progress(spec, rules_of(state, spec, now, ahead), attempted(state))


COUNT_RULES = frozenset({"max_experiments", "default"})


def rule_holding(
    state: CampaignState, spec: cs.CampaignSpec, now: float, exp: cs.Experiment | None = None
) -> str:
    """The stop rules met that hold back the launch of `exp` (any experiment where None), in
    the seed's words, or "": every rule met; for a smoke run only the deadline and the
    target, since it counts against no count rule (walk89 F17: a smoke run planned after the
    count experiments was never run once their count was met)."""
    if exp is None or not exp.smoke:
        prog = progress_of(state, spec, now)
        return prog.text if prog.met else ""
    met = [r.text for r in rules_of(state, spec, now) if r.met and r.rule not in COUNT_RULES]
    return "stop condition met: " + "; ".join(met) if met else ""


def held_back(
    state: CampaignState, spec: cs.CampaignSpec, now: float, exp: cs.Experiment | None = None
) -> str:
    """Why the experiments given and not yet launched (`exp`, where given) are not launched
    ("" when they run in their turn): the campaign stopped (or stopping), or a stop rule met
    (which `campaign set`, or `--continue` for the default rule, may lift; `rule_holding`)."""
    if state.stopping or state.status == "stopped":
        return f"the campaign was {stopped_by(state)}"
    return rule_holding(state, spec, now, exp)


def stopped_by(state: CampaignState) -> str:
    """Who stopped the campaign and when (`campaignstop.stopped_by`)."""
    return campaignstop.stopped_by(state.stop_asked_at, state.ended_at)


NOT_RUN_SHOWN = 10  # planned experiments named in a reason; the rest counted


def not_run_note(left: list[tuple[int, cs.Experiment]], decision: bool) -> str:
    """`planned, not run: 4 e4, 5 e5`: what a stop rule or a stop left unlaunched, never
    dropped in silence; `decision`: they run if the campaign is let go on."""
    names = ", ".join(f"{i} {e.name}" for i, e in left[:NOT_RUN_SHOWN])
    if len(left) > NOT_RUN_SHOWN:
        names += f" and {len(left) - NOT_RUN_SHOWN} more"
    return f"planned, not run: {names}" + (" (they run if it goes on)" if decision else "")


def best_line(spec: cs.CampaignSpec, state: CampaignState) -> str:
    """`accuracy 0.42: longer (branch ar/longer, commit 1a2b3c4d5e6f)`, or `none yet`; for a
    campaign that ended without one, `none` and why (a walk read "none yet" on a finished
    campaign, whose best would never come)."""
    if state.best is None or state.best_index is None:
        if not state.done:
            return "none yet"
        return f"none: {_none_kept(spec, state)}"
    exp = state.experiments[state.best_index]
    where = [f"run {exp.run_id}"] if exp.run_id else []
    if exp.branch:
        where += [f"branch {exp.branch}", f"commit {exp.commit[:12]}"]
    return f"{spec.metric} {state.best:g}: {exp.name} ({', '.join(where)})"


# how a row that recorded a value is still no best, said of its run
_NOT_KEPT = {"time_limit": "timed out", "failed": "failed", "lost": "got lost"}
_SMOKE = "smoke run (never judged)"


def _none_kept(spec: cs.CampaignSpec, state: CampaignState) -> str:
    """Why an ended campaign has no best: no run recorded its metric, or those that did are
    none eligible, counted by why (walk 90 F10: four experiments that recorded values and
    all timed out read "no experiment's run recorded a value")."""
    valued = [e for e in state.experiments if e.recorded and e.value is not None]
    if not valued:
        return f"no experiment's run recorded a value of {spec.metric}"
    why: dict[str, int] = {}
    for exp in valued:
        if exp.status == "crash":
            kind = _NOT_KEPT.get(exp.run_status, "crashed")
            if exp.run_status in ("succeeded", "plateau"):
                kind = "diverged"  # its last validation was nan or inf (`verdict`)
        elif exp.status == "smoke":
            kind = _SMOKE
        else:
            kind = exp.status or "not judged"
        why[kind] = why.get(kind, 0) + 1
    count = len(valued)
    if count == 1:
        kind = next(iter(why))
        text = f"the one experiment that recorded {spec.metric} is not kept: "
        text += "it was a " + kind if kind == _SMOKE else "it " + kind
    else:
        said = [f"all {kind}" if n == count else f"{n} {kind}" for kind, n in why.items()]
        text = f"none of the {count} experiments that recorded {spec.metric} is kept: "
        text += ", ".join(said)
    if any(e.status == "crash" for e in valued):
        text += " (a run that failed, timed out or diverged is a crash, whatever it recorded)"
    return text


def standing(state: CampaignState, spec: cs.CampaignSpec, now: float) -> tuple[str, str, str, str]:
    """(phase, status, reason, progress): running, waiting (with the reason) or done (with its
    status), from the stop rules and what is still running or planned; the reason names the
    planned experiments a stop rule or a stop leaves unlaunched."""
    prog = progress_of(state, spec, now)
    left = not_launched(state, spec)
    running = [e for e in state.experiments if not e.recorded]
    phase, status, reason = "running", "", ""
    smoke = (
        left[0] if left and prog.met and not rule_holding(state, spec, now, left[0][1]) else None
    )
    said = prog.text
    if state.stopping:
        # no stop rule's words (`stop condition not yet met`, `needs a decision`): the user's
        # stop ends it, whatever the rules say; where they stood is told after
        if running:
            reason = f"stopping ({stopped_by(state)}): {len(running)} experiment(s) still ending"
        else:
            phase, status, reason = "done", "stopped", stopped_by(state)
        standing_rules = cr.rules_standing(spec, rules_of(state, spec, now), attempted(state))
        said = reason + (f"; stop rules: {standing_rules}" if standing_rules else "")
    elif smoke is not None:  # a smoke run counts against no count rule: it runs first
        reason = f"{prog.text}; smoke run {smoke[0]} {smoke[1].name} runs first (it counts "
        reason += "against no count rule)"
        left = []
    elif prog.met:
        if running:
            reason = f"{prog.text}; {len(running)} running experiment(s) end first"
        elif prog.needs_decision:
            phase, status, reason = "done", "needs_decision", prog.text
            if state.best is not None:
                reason += f"; best {spec.metric} {state.best:g} ({state.best_name})"
        else:
            phase, status, reason = "done", "completed", prog.text
    elif not running and not left:
        phase = "waiting"
        reason = add_hint(state.campaign_id)
    if left and (state.stopping or prog.met):
        reason += "; " + not_run_note(left, prog.needs_decision and not state.stopping)
    return phase, status, reason, said


def add_hint(campaign_id: str) -> str:
    """Why a waiting campaign waits, and what the agent does next."""
    return (
        "no experiment left to run: add the next one with `ajetd campaign add "
        f"{campaign_id} --name N --description D ...` (or stop it: `ajetd "
        f"campaign stop {campaign_id}`)"
    )


def recipe(run: Run) -> str:
    """The config the run's experiment ran, as its codebase names it (the same for every
    experiment of one recipe, whichever worktree ran it), never ajetd's copy of it."""
    path = original_of(run.config_path)
    if run.codebase_dir and path.startswith(run.codebase_dir.rstrip("/") + "/"):
        return posixpath.relpath(path, run.codebase_dir)
    return path


REASON_MAX = 200  # characters of a crash row's reason: one line of a table, a TSV cell


def crash_reason(exp: ExpState, run: Run | None, metric: str = "") -> str:
    """Why a crash row crashed, on one line of at most REASON_MAX characters: its run's
    reason (`exited with code 1; cuda_oom: ...`, `no validation record`), or why it could
    not be launched; "" for any other row. A run that ended well (`succeeded`, `plateau`)
    and recorded no value of the campaign's `metric` is a crash for that, said so: its own
    reason (`the program exited with code 0`) read as a crash with no cause (walk97b F1)."""
    if exp.status != "crash":
        return ""
    if run is not None and exp.value is None and exp.run_status in ("succeeded", "plateau"):
        return one_line(no_value(metric, run), REASON_MAX)
    return one_line(exp.refused or (run.reason if run is not None else ""), REASON_MAX)


def no_value(metric: str, run: Run) -> str:
    """`no value of val:accuracy was recorded (the run succeeded; ...)`: why a run that ended
    well is no result of its campaign, and what its records hold instead."""
    ended = f"the run {run.status.value if run.status is not None else 'ended'}"
    if not run.history:
        return f"no value of {metric} was recorded ({ended}, and wrote no validation record)"
    return (
        f"no value of {metric} was recorded ({ended}; none of its {len(run.history)} "
        f"validation record(s) holds it{records_hold(metric, run.history)})"
    )


def ledger_fields(
    spec: cs.CampaignSpec, exp: ExpState, run: Run | None, note: str, launcher: str
) -> dict[str, Any]:
    """The ledger row of an ended (or refused) experiment, its columns typed."""
    elapsed = None
    memory = None
    if run is not None and run.started_at and run.ended_at:
        elapsed = round((run.ended_at - run.started_at) / 60.0, 2)
    if run is not None and run.gpu_stats.gpus:
        memory = round(sum(g.mem_peak for g in run.gpu_stats.gpus) / 1024, 2)
    # one meaning a cell: a number is measured (0: sampled, none held), empty is not; a run
    # placed on GPUs and never sampled says so, as two such rows read alike (walk93 F4)
    unsampled = run is not None and memory is None and bool(run.gpu_ids) and run.trials
    note += " (memory_gb empty: it ended before its GPUs were first sampled)" if unsampled else ""
    trial = run.trial if run else None
    refused = f" (refused: {exp.refused})" if exp.refused else ""
    counted = f" ({exp.value_note})" if exp.value_note else ""
    return {
        "index": exp.index,
        "branch": exp.branch,
        "parent_commit": exp.parent_commit,
        "commit": exp.commit,
        "recipe": recipe(run) if run else "",
        "metric_name": spec.metric,
        "metric_value": exp.value,
        "memory_gb": memory,
        "elapsed_min": elapsed,
        "launcher": launcher,
        "job_id": (run.slurm.job_id if run else "") or exp.run_id,
        "command": pasteable(trial.command) if trial else "",  # one line, as it ran
        "log_path": f"{run.result_dir}/logs/trial-{trial.number}.log" if run and trial else "",
        "status": exp.status,
        "description": exp.description + refused + counted + note,
    }
