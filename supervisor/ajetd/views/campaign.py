"""What `ajetd campaign status / list / wait` show: built from the campaign's state file, its
spec and the records of its running experiments; pure (the clock is passed in).

`status_json` is the handoff of seed 002 in one object: the goal, every stop rule and how far
it is from being met, attempted/remaining, the deadline left, the best experiment (name,
branch, commit, value), the running experiments with their live metric, and the ledger rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ajetd.core import campaignrules as cr
from ajetd.core import campaignspec as cs
from ajetd.core import unsaved
from ajetd.core.campaignrecord import (
    REASON_MAX,
    CampaignState,
    ExpState,
    attempted,
    best_line,
    held_back,
    not_launched,
    progress_of,
    rules_of,
    standing,
)
from ajetd.core.campaignstop import shown_progress
from ajetd.core.durations import format_duration
from ajetd.core.markdown import table_cell
from ajetd.core.model import Run, record_trials
from ajetd.core.timefmt import iso
from ajetd.frameworks.valresults import is_nonfinite

HYPOTHESIS_MAX = 120  # characters of an experiment's description in campaign.md's table
WAIT_EXIT = {"completed": 0, "stopped": 1, "refused": 1, "needs_decision": 2}
FOUND_NOTHING = 3  # `campaign wait`: completed, and no experiment kept (no best)


def wait_exit(state: CampaignState) -> int:
    """`campaign wait`'s exit for an ended campaign: 0 completed with a best, 3 completed
    with none (every experiment crashed, or none ran: a script branching on 0 read such a
    campaign as a success, walk97b F6), 1 stopped or refused, 2 needs a decision."""
    code = WAIT_EXIT.get(state.status, 1)
    return FOUND_NOTHING if code == 0 and state.best is None else code


ROW_EXIT = {"keep": 0, "discard": 0, "smoke": 0, "crash": 1, "stopped": 1}


def progress_shown(state: CampaignState) -> str:
    """The campaign's stored progress as the views say it (`campaignstop.shown_progress`)."""
    return shown_progress(state.status, state.progress, state.reason)


def _experiment(exp: ExpState) -> dict[str, Any]:
    return {
        "index": exp.index,
        "name": exp.name,
        "description": exp.description,
        "smoke": exp.smoke,
        "run_id": exp.run_id or None,
        "branch": exp.branch or None,
        "parent_commit": exp.parent_commit or None,
        "commit": exp.commit or None,
        "overrides": list(exp.overrides),
        "carried_from": exp.carried_from,
        "carried": list(exp.carried),
    }


def row_json(exp: ExpState) -> dict[str, Any]:
    """A ledger row (the TSV's columns, typed) with the experiment's name and run; an empty
    column is null, as the same fields are in `best`, `baseline` and `running`."""
    typed = {key: None if value == "" else value for key, value in exp.row.items()}
    return {
        **typed,
        "name": exp.name,
        "run_id": exp.run_id or None,
        "smoke": exp.smoke,
        "reason": exp.reason or None,
        "value_trial": exp.value_trial,
        "value_note": exp.value_note or None,
        "overrides": list(exp.overrides),
        "carried_from": exp.carried_from,
        "carried": list(exp.carried),
    }


def carried_line(exp: ExpState, experiments: list[ExpState]) -> str:
    """What an experiment carried from the one whose branch or commit it started from, or
    "" (`carries experiment 1 (lr-low)'s overrides: a=1`)."""
    if exp.carried_from is None or not exp.carried:
        return ""
    source = next((e.name for e in experiments if e.index == exp.carried_from), "?")
    what = " ".join(exp.carried)
    return f"carries experiment {exp.carried_from} ({source})'s overrides: {what}"


def _running(spec: cs.CampaignSpec, state: CampaignState, runs: Mapping[str, Run]) -> list[Any]:
    """The experiments not yet recorded, each with its run's state and live metric."""
    running = []
    for exp in state.experiments:
        if exp.recorded:
            continue
        run = runs.get(exp.run_id) if exp.run_id else None
        metrics = dict(run.metrics) if run else {}
        value = metrics.get(spec.metric)
        running.append(
            {
                **_experiment(exp),
                "run_state": run.state.value if run else "submitted",
                # a number, or `nan`/`inf` as text where the metric diverged (walk86 F2)
                "metric": value if isinstance(value, (int, float)) or is_nonfinite(value) else None,
                "best_metric": cr.counted_value(
                    run.history, record_trials(run), spec.metric, spec.maximise
                ).value
                if run
                else None,
                "metrics": metrics,
                # its newest record (metrics, records) held in the daemon's memory on a full
                # home: `metric` is the one on disk (walk92 F9: "no metric yet" beside 5)
                "held_in_memory": bool(run and unsaved.NOTE in run.warnings),
                "result_dir": run.result_dir if run else None,
            }
        )
    return running


def _planned(spec: cs.CampaignSpec, state: CampaignState, now: float) -> list[dict[str, Any]]:
    """The experiments given and not launched, each with what holds it back (`not_run`): a
    smoke run only what holds a smoke run back (`held_back`), unless one before it is held
    (they launch in order)."""
    out: list[dict[str, Any]] = []
    before = ""
    for i, e in not_launched(state, spec):
        held = before or held_back(state, spec, now, e)
        before = before or held
        out.append(
            {
                "index": i,
                "name": e.name,
                "description": e.description,
                "smoke": e.smoke,
                "not_run": held or None,
            }
        )
    return out


def _whole(seconds: float | None) -> float | None:
    """Seconds to the whole second (still a number, a float as the JSON contract has it)."""
    return None if seconds is None else float(round(seconds))


def _rule_json(rule: cr.Rule) -> dict[str, Any]:
    timed = rule.rule == "deadline"  # its figures are seconds
    return {
        "rule": rule.rule,
        "met": rule.met,
        "text": rule.text,
        "limit": rule.limit,
        "current": _whole(rule.current) if timed else rule.current,
        "remaining": _whole(rule.remaining) if timed else rule.remaining,
    }


def _best_and_baseline(state: CampaignState) -> tuple[Any, Any]:
    """The best experiment with its value, and the baseline with its value and status."""
    best = None
    if state.best_index is not None and state.best is not None:
        best = {**_experiment(state.experiments[state.best_index]), "value": state.best}
    baseline = next((e for e in state.experiments if e.name == "baseline"), None)
    if baseline is None:
        return best, None
    return best, {**_experiment(baseline), "value": baseline.value, "status": baseline.status}


def _campaign_json(spec: cs.CampaignSpec, state: CampaignState, now: float) -> dict[str, Any]:
    """The goal, the stop rules and how far each is from being met, and the deadline: for a
    campaign that ended, as they stood at its end (as its `progress`, and a run's elapsed
    time, are), not against the clock since (its deadline 'met' an hour after it completed)."""
    if state.done and state.ended_at is not None:
        now = state.ended_at
    prog = progress_of(state, spec, now)
    said = standing(state, spec, now)[3] if state.stopping else prog.text
    rules = rules_of(state, spec, now)
    count = next((r for r in rules if r.rule in ("max_experiments", "default")), None)
    deadline = next((r for r in rules if r.rule == "deadline"), None)
    return {
        "progress": said if not state.done else progress_shown(state),
        "goal": {"metric": spec.metric, "direction": "max" if spec.maximise else "min"},
        "stop_rules": [_rule_json(r) for r in rules],
        "default_stop_rule": spec.default_rule,
        "stop_met": prog.met,
        "attempted": attempted(state),
        "remaining": None if count is None else count.remaining,
        "deadline_at": None if spec.deadline_s is None else iso(state.started_at + spec.deadline_s),
        # whole seconds, as the durations people read (7198, not 7198.764630556107)
        "deadline_left_s": None if deadline is None else _whole(deadline.remaining),
        "per_experiment_timeout_s": spec.per_experiment_s,
    }


# `status_json`'s fields that come from the campaign's spec, in its order: a refused
# campaign (no spec) has them too, null where nothing is known
_SPEC_FIELDS = (
    "goal",
    "stop_rules",
    "default_stop_rule",
    "stop_met",
    "attempted",
    "remaining",
    "deadline_at",
    "deadline_left_s",
    "per_experiment_timeout_s",
    "best",
    "baseline",
    "running",
    "planned",
    "rows",
    "result_dir",
    "ledger",
    "report",
    "plot",
    "branch_prefix",
    "git_note",
    "repo",
    "baseline_commit",
    "parallel",
)


def status_json(
    spec: cs.CampaignSpec | None,
    state: CampaignState,
    runs: Mapping[str, Run],
    now: float,
    folder: str = "",
) -> dict[str, Any]:
    """Everything an agent needs to go on (`ajetd campaign status ID --json`)."""
    out: dict[str, Any] = {
        "campaign_id": state.campaign_id,
        "name": state.name or (spec.name if spec else ""),
        "state": state.phase,
        "status": state.status or None,
        "reason": state.reason or None,
        "progress": progress_shown(state),
        "started_at": iso(state.started_at),
        "ended_at": iso(state.ended_at),
        "folder": folder,
        "refused_requests": [
            {**r, "filed_at": _iso(r.get("filed_at")), "refused_at": _iso(r.get("refused_at"))}
            for r in state.refused_requests
        ],
    }
    rows = [row_json(e) for e in state.experiments if e.recorded]
    if spec is None:  # refused before its folder could be read: every field, few known
        known = {
            "stop_rules": [],
            "attempted": attempted(state),
            "running": [],
            "planned": [],
            "rows": rows,
            "repo": state.repo or None,
            "baseline_commit": state.baseline_commit or None,
        }
        return {**out, **{key: known.get(key) for key in _SPEC_FIELDS}}
    best, baseline = _best_and_baseline(state)
    out.update(_campaign_json(spec, state, now))
    out.update(
        {
            "best": best,
            "baseline": baseline,
            "running": _running(spec, state, runs),
            "planned": _planned(spec, state, now),
            "rows": rows,
            "result_dir": spec.result_dir,
            "ledger": f"{spec.result_dir}/ledger.tsv",
            "report": f"{spec.result_dir}/campaign.md",
            "plot": f"{spec.result_dir}/progress.png",
            "branch_prefix": spec.branch_prefix or state.branch_prefix or None,
            "git_note": state.git_note or None,
            "repo": state.repo or None,
            "baseline_commit": state.baseline_commit or None,
            "parallel": spec.parallel,
        }
    )
    return out


HELD = "none on disk yet: the run's newest records are held in memory (a full home)"


def _running_line(run: dict[str, Any], metric: str) -> str:
    last = run["metric"]
    held = run.get("held_in_memory")
    if last is None:
        value = f"{metric}: {HELD}" if held else "no metric yet"
    else:  # `nan` (a text): said, never hidden
        value = f"last {metric} {last if isinstance(last, str) else f'{last:g}'}"
    if run["metric"] is not None and run["best_metric"] is not None:
        value += f" (best {run['best_metric']:g})"
    if last is not None and held:
        value += " on disk; newer records are held in memory, not on disk yet (a full home)"
    return (
        f"running: {run['index']} {run['name']} (run {run['run_id']}, {run['run_state']}): {value}"
    )


def _table_line(row: dict[str, Any], carried: str) -> str:
    value = "" if row["metric_value"] is None else f"{row['metric_value']:g}"
    line = (
        f"{row['index']:>3}  {row['status']:<8} {value:>10}  "
        f"{row['name']:<24} {row['branch'] or '-'}"
    )
    line += f"\n{'':>5}{carried}" if carried else ""
    line += f"\n{'':>5}{row['value_note']}" if row.get("value_note") else ""
    return line + (f"\n{'':>5}why: {row['reason']}" if row.get("reason") else "")


def pending_line(request: dict[str, Any]) -> str:
    """`pending: add lr-high (filed ...): applied when the daemon takes it`."""
    what = str(request["op"])
    if request.get("name"):
        what += f" {request['name']}"
    elif request.get("stop"):
        what += " " + ", ".join(f"{k}={v}" for k, v in request["stop"].items())
    then = " (the campaign stops then)" if request["op"] == "stop" else ""
    return (
        f"pending: {what} (filed {request.get('filed_at') or '?'}): applied when the daemon "
        f"takes it{then}; not taken yet"
    )


def render_status(spec: cs.CampaignSpec | None, state: CampaignState, data: dict[str, Any]) -> str:
    """The text view of `status_json`."""
    phase = data["state"] + (f" ({data['status']})" if data["status"] else "")
    lines = [f"campaign {data['campaign_id']} ({data['name']}): {phase}"]
    if data["reason"]:
        lines.append(f"  {data['reason']}")
    lines += [refused_line(r) for r in state.refused_requests]
    lines += [pending_line(r) for r in data.get("pending_requests") or []]
    if spec is None:
        return "\n".join(lines)
    goal = data["goal"]
    lines.append(
        f"goal: {goal['metric']} ({'higher' if goal['direction'] == 'max' else 'lower'} is better)"
    )
    lines.append(data["progress"])
    # an ended campaign's rules and deadline as they stood at its end, said so: "19m53s
    # left" under a completed campaign read as if it still ran (walk97 F12)
    ended = state.done and state.ended_at is not None
    for rule in data["stop_rules"]:
        mark = "met" if rule["met"] else "not met"
        when = " at its end" if ended else ""
        lines.append(f"  - {rule['rule']}: {rule['text']}{when} ({mark})")
    if data["deadline_left_s"] is not None:
        left = format_duration(data["deadline_left_s"])
        if not ended:
            said = f"{left} left"
        elif data["deadline_left_s"] > 0:
            said = f"the campaign ended {left} before it"
        else:
            said = "reached before the campaign ended"
        lines.append(f"deadline: {data['deadline_at']} ({said})")
    lines.append(f"best: {best_line(spec, state)}")
    lines += [f"git: {state.git_note}"] if state.git_note else []
    lines += [_running_line(run, goal["metric"]) for run in data["running"]]
    for planned in data["planned"]:
        why = f" (not run: {planned['not_run']})" if planned["not_run"] else ""
        lines.append(f"planned: {planned['index']} {planned['name']}{why}")
    if data["rows"]:
        lines.append("")
        lines.append(f"{'#':>3}  {'status':<8} {'best':>10}  {'experiment':<24} branch")
        shown = {e.index: carried_line(e, state.experiments) for e in state.experiments}
        lines += [_table_line(row, shown.get(row["index"], "")) for row in data["rows"]]
    lines.append(f"ledger: {data['ledger']}  plot: {data['plot']}")
    return "\n".join(lines)


def summary_json(data: dict[str, Any]) -> dict[str, Any]:
    """One line of `ajetd campaign list --json`."""
    keys = (
        "campaign_id",
        "name",
        "state",
        "status",
        "reason",
        "progress",
        "attempted",
        "best",
        "result_dir",
        "started_at",
        "ended_at",
    )
    return {k: data.get(k) for k in keys}


def row_line(row: dict[str, Any]) -> str:
    value = (
        "no metric"
        if row["metric_value"] is None
        else f"best {row['metric_name']} {row['metric_value']:g}"
    )
    why = f" ({row['reason']})" if row.get("reason") else ""
    why += f" ({row['value_note']})" if row.get("value_note") else ""
    return f"experiment {row['index']} ({row['name']}) {row['status']}: {value}{why}"


def _iso(value: Any) -> str | None:
    """A time of a refused request as stored (a person may edit the record): ISO or None."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e11
    return iso(value) if ok else None


def refused_line(refused: Mapping[str, Any]) -> str:
    """`refused: add bad (filed 2026-12-02T03:00:00Z, refused ...): why`."""
    what = " ".join(str(w) for w in (refused.get("op"), refused.get("name")) if w)
    when = f"filed {_iso(refused.get('filed_at'))}, refused {_iso(refused.get('refused_at'))}"
    return f"refused: {what} ({when}): {refused.get('reason')}"


def render_report(spec: cs.CampaignSpec, state: CampaignState) -> str:
    """campaign.md: the handoff a reader (or an agent that lost its context) resumes from."""
    lines = [f"# Campaign {spec.name}", "", f"- id: `{state.campaign_id}`"]
    lines += [f"- goal: `{spec.metric}` ({'higher' if spec.maximise else 'lower'} is better)"]
    shown = state.phase + (f" ({state.status})" if state.status else "")
    lines += [f"- state: {shown}" + (f": {state.reason}" if state.reason else "")]
    lines += [f"- {progress_shown(state)}"]
    lines += [f"- best: {best_line(spec, state)}"]
    lines += [
        f"- each row's `best {spec.metric}` (the ledger's `metric_value`) is the best value of "
        "the model its run ended with: the best of its validation records since its last fresh "
        "start (a relaunch that trained again from step 0 counts its own records only, an "
        "earlier trial's peak is said under the table, never counted), not its last: a run's "
        "finish.flag holds its last validation record as `metrics`, its best of all as `best`"
    ]
    lines += [f"- {refused_line(r)}" for r in state.refused_requests]
    if state.baseline_commit:
        lines += [f"- baseline commit: `{state.baseline_commit}` in `{state.repo}`"]
    lines += [f"- git: {state.git_note}"] if state.git_note else []
    lines += [
        "",
        f"| # | experiment | hypothesis | branch | run | status | best {spec.metric} | why |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for e in state.experiments:
        value = "" if e.value is None else f"{e.value:g}"
        status = e.status or ("refused" if e.refused else "running")
        hypothesis = table_cell(e.description, HYPOTHESIS_MAX)
        why = table_cell(e.reason, REASON_MAX)  # a crash row's
        lines.append(
            f"| {e.index} | {e.name} | {hypothesis} | {e.branch or '-'} | {e.run_id or '-'} "
            f"| {status} | {value} | {why} |"
        )
    for index, exp in not_launched(state, spec):  # never dropped in silence
        hypothesis = table_cell(exp.description, HYPOTHESIS_MAX)
        lines.append(f"| {index} | {exp.name} | {hypothesis} | - | - | planned |  |  |")
    carried = [(e, carried_line(e, state.experiments)) for e in state.experiments]
    lines += [""] if any(text for _, text in carried) else []
    lines += [f"- experiment {e.index} ({e.name}) {text}" for e, text in carried if text]
    counted = [e for e in state.experiments if e.value_note]
    lines += [""] if counted else []
    lines += [f"- experiment {e.index} ({e.name}): {e.value_note}" for e in counted]
    lines += [
        "",
        "Ledger: `ledger.tsv` (NeMo-RL's experiment-log columns); plot: `progress.png`; "
        f"live: `ajetd campaign status {state.campaign_id} --json`.",
        "",
    ]
    return "\n".join(lines)
