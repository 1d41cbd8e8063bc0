"""results.md, trials.md and finish.flag, rendered from records; pure.

`results.md` must let a reader who was not there understand the run: what was asked, what ran,
what happened when, the metrics, why it ended and how the output ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ajetd.core import gpuuse, resultfiles, stageresult
from ajetd.core.blueprint import visible
from ajetd.core.durations import format_duration
from ajetd.core.fixrecord import applied_json
from ajetd.core.markdown import fence
from ajetd.core.model import Run, Status, Trial, record_trials
from ajetd.core.runparts import Provenance
from ajetd.core.shellline import markdown_item
from ajetd.core.stageresult import StageResult
from ajetd.core.timefmt import iso
from ajetd.frameworks.valresults import (
    MAX_SHOWN_KEYS,
    STEPS_UNKNOWN_NOTE,
    UNREAD_RECORDS,
    best_point,
    cell,
    is_count,
    judged,
    last_value,
    metric_series,
    more_note,
    nonfinite_note,
    settings_note,
    shown_keys,
    shown_metric,
    shown_value,
    step_of,
    step_text,
)
from ajetd.views import timeline
from ajetd.views.listing import sparkline
from ajetd.views.records import best_json, best_note, run_json, trial_of
from ajetd.views.words import action_label


@dataclass(frozen=True)
class ReportContext:
    """What a report needs beyond the run record, gathered by the daemon."""

    host: str
    blueprint_text: str = ""  # as admitted
    # the stored copy, where it was edited after admission (a restart read its options)
    blueprint_edited: str = ""
    blueprint_edited_sha256: str = ""
    blueprint_kept: bool = True  # False: an older home kept no copy as admitted
    events: list[tuple[float, str]] = field(default_factory=list)
    journal: str = ""  # where the events are (the timeline folds repeats: `timeline.folded`)
    log_tail: list[str] = field(default_factory=list)
    trial_tails: dict[int, list[str]] = field(default_factory=dict)
    # a trial whose output went on outside the result dir (its log folder vanished and could
    # not be made again safely): that file, as trials.md names it
    trial_logs: dict[int, str] = field(default_factory=dict)
    allowed_fixes: tuple[str, ...] = ()  # the blueprint's `[ajetd] allow_fixes` keys
    pictures: tuple[str, ...] = ()  # curves.png / gpus.png drawn beside results.md
    plot_problem: str = ""  # why the pictures could not be drawn, if they could not
    # this run's part of its val file copied into the result dir (`val_records.md`), or why not
    val_copied: bool = False
    val_not_copied: str = ""
    # what a pipeline's stages left: outputs copied under `stages/`, the results they printed
    stage_results: tuple[StageResult, ...] = ()


def _gpu_section(run: Run) -> str:
    placed = ""
    if run.gpu_ids:
        placed = f"Placed on GPU(s) {', '.join(map(str, run.gpu_ids))} (CUDA_VISIBLE_DEVICES).\n\n"
    if run.gpu_stats.gpus:
        return placed + gpuuse.summary(run.gpu_stats, run.ended_at)
    if run.gpu_ids == ():
        return "CPU-only run (`gpus: 0`): no GPU was given to it."
    if run.gpu_ids:
        return placed + "No GPU sample was taken while it ran (it ended before the first one)."
    return "No GPU was visible to ajetd (no NVML driver): no GPU figures recorded."


def run_record(run: Run) -> dict[str, Any]:
    """`run.json`: the status object plus provenance and what exactly ran."""
    return {
        **run_json(run, run.ended_at or run.submitted_at),
        "provenance": {} if run.provenance is None else run.provenance.to_json(),
        "launch_command": run.launch_command,
        "commands": [t.command for t in run.trials],
        "config_path": run.config_path,
        "config_changes": list(run.config_changes),
        "fixes": list(run.fixes),
        "codebase_dir": run.codebase_dir,
        "venv_dir": run.venv_dir,
        "gpu_ids": None if run.gpu_ids is None else list(run.gpu_ids),
        "history": list(run.history),
    }


def finish_flag(run: Run) -> dict[str, Any]:
    """The JSON object of `finish.flag` (DESIGN §3)."""
    return {
        "run_id": run.run_id,
        "status": run.status.value if run.status else None,
        "reason": run.reason,
        "exit_code": run.exit_code,
        "trials": len(run.trials),
        "started_at": iso(run.started_at),
        "ended_at": iso(run.ended_at),
        "metrics": run.metrics,
        "best": best_json(run),
        "fixes_applied": applied_json(run.fixes, run.applied_fixes),
    }


SHOWN_BLOCK_LINES = 12  # lines of an unread `Validation Results` block results.md quotes


def unread_block(tail: Sequence[str]) -> list[str]:
    """The first `Validation Results` block in a trial's last output (its header and the
    lines after it, at most SHOWN_BLOCK_LINES, each cut to 300 characters), [] for none."""
    start = next((i for i, line in enumerate(tail) if "Validation Results" in line), None)
    if start is None:
        return []
    return [line[:300] for line in tail[start : start + SHOWN_BLOCK_LINES]]


def _metrics_section(run: Run, tail: Sequence[str] = ()) -> list[str]:
    """The section's lines. Where the run's reason says its output shows validation results
    no record was read from, it says the same and quotes the block it could not read (it
    said "No validation results were written", against the reason: walk86 F29)."""
    history = list(run.history)
    if not history and UNREAD_RECORDS in (run.reason or ""):
        block = unread_block(tail)
        said = [
            "No validation record could be read: the program's output shows validation "
            "results in a shape ajetd does not read, so their values are not here."
        ]
        if run.kind == "agentjet" and run.val_path:  # where it looked (walk93 F2)
            said[0] += (
                f" ajetd read its val file at `{run.val_path}`, which got none during this run "
                "(a program that runs in another folder, through a `cd` in a script, writes a "
                "relative path under that folder)."
            )
        if block:
            said += ["", "The first such block in its last output:", "", *fence(block)]
        return said
    unread = run.val_read.unread if run.kind != "nemo_rl" else 0
    lines_note = ""
    if unread:  # the lines that gave no record: never "none were written"
        lines_note = (
            f"{unread} line(s) of `{run.val_path}` written during this run look like validation "
            f"records and could not be read as any; the first: `{run.val_read.first_unread}`"
        )
        if not history:
            return [f"No validation record could be read: {lines_note}."]
    if not history:
        none = "No validation results were written during this run."
        if run.kind == "agentjet" and run.val_path and run.status is Status.SUCCEEDED:
            none += (
                " AgentJet writes one before training (val_before_train) and every test_freq "
                f"steps, to `{run.val_path}`: the program exited 0 without one there (it wrote "
                "them elsewhere, or ended before validating), so its results are not here."
            )
        return [none]
    every = shown_keys(history, run.metric)
    keys, left = every[:MAX_SHOWN_KEYS], every[MAX_SHOWN_KEYS:]
    lead = shown_metric(history, run.metric)
    lines = [
        "| trial | step | " + " | ".join(keys) + " |",
        "|---:|---:|" + "---:|" * len(keys),
    ]
    counts = {k: is_count(r.get(k) for r in history) for k in keys}
    for record, trial in zip(history, record_trials(run), strict=True):
        step = step_text(record)
        cells = " | ".join(cell(record.get(k), counts[k]) for k in keys)
        lines.append(f"| {cell(trial, True)} | {step} | {cells} |")
    lines.append("")
    settings = settings_note(history)
    if settings:  # seed 001's val attributes that are no metric: said, never left out
        lines += [f"Validation settings (no metric, so no column): {settings}.", ""]
    if unread:
        lines += [f"Not in this table: {lines_note}.", ""]
    if left:  # bounded: a program may log hundreds of keys
        lines += [f"Not in this table, {more_note(left)} (last values: finish.flag's metrics).", ""]
    if any(step_of(r) is None for r in history):
        lines += [f"Steps unknown: {STEPS_UNKNOWN_NOTE}.", ""]
    for key in dict.fromkeys((lead, "mean_reward", "task_pass_rate@1")):
        series, point = metric_series(history, key), best_point(history, key)
        if point is None:
            continue
        best, at = point
        first = shown_value(judged(history, key)[0][0])
        trial = trial_of(run, at) if len(run.trials) > 1 else None
        where = f"trial {trial}, step {step_text(at)}" if trial else f"step {step_text(at)}"
        lines.append(
            f"- **{key}**: first {first}, best {best:.4f} ({where}), "
            f"last {shown_value(last_value(history, key))}  `{sparkline(series)}`"
        )
        if best_note(run, trial):
            lines.append(f"  ({best_note(run, trial)})")
        diverged = nonfinite_note(history, key)
        if diverged:  # the run's news: its metric turned nan, whatever its best was
            lines.append(f"- **{diverged}**: the training diverged there")
    return lines


def _log_line(number: int, ctx: ReportContext) -> str:
    elsewhere = ctx.trial_logs.get(number)
    if elsewhere:
        return (
            f"- log: `{elsewhere}` (this dir's logs/ folder vanished during the trial and was not"
            " made again: something else was in its place; see the timeline)"
        )
    return f"- log: `logs/trial-{number}.log`"


def _trial_row(trial: Trial) -> str:
    duration = (
        format_duration(trial.ended_at - trial.started_at)
        if trial.started_at is not None and trial.ended_at is not None
        else ""
    )
    code = "" if trial.exit_code is None else str(trial.exit_code)
    wrong = trial.findings[0].named() if trial.findings else (trial.problem or "")
    return (
        f"| {trial.number} | {iso(trial.started_at) or 'not started'} | {iso(trial.ended_at) or ''}"
        f" | {duration} | {code} | {wrong} |"
    )


def _val_copy_said(run: Run, ctx: ReportContext) -> str:
    """Where this run's validation records were copied beside the reports, or why not."""
    if ctx.val_copied:
        return f" (this run's records copied to `{resultfiles.VAL_COPY}` here)"
    return f" ({ctx.val_not_copied})" if ctx.val_not_copied else ""


def _settings_section(run: Run, ctx: ReportContext) -> list[str]:
    """What the run was given: ids, places, limits, commands, and the blueprint's warnings."""
    lines = [
        "## Settings",
        "",
        f"- run id: `{run.run_id}` (blueprint file `{run.source}`)",
        f"- tmux session: `{run.session or '(none)'}` on host `{ctx.host}`",
        f"- result dir: `{run.result_dir}`",
        f"- max time: {format_duration(run.max_time_s) if run.max_time_s else '(none)'}",
        f"- codebase dir: `{run.codebase_dir}`" if run.codebase_dir else "- codebase dir: (none)",
        f"- venv: `{run.venv_dir}`" if run.venv_dir else "- venv: (none)",
        *(
            markdown_item("launch command (blueprint)", run.blueprint_command or run.launch_command)
            if run.launch_command
            else ["- launch command: (none)"]
        ),
        *(
            markdown_item("command run", run.trial.command)
            if run.trial
            else ["- command run: (none)"]
        ),
        _val_file_line(run, ctx),
    ]
    return lines + [f"- warning: {w}" for w in run.warnings]


def _val_file_line(run: Run, ctx: ReportContext) -> str:
    """Where the run's validation records come from: its val file, or for a NeMo-RL run,
    which writes none, its output (walk92 F9: "(none named in the YAML)" read as missing);
    for an AgentJet run whose val file holds none, its output too."""
    if run.out_read.taken:  # its val file held no record: they were printed (`ajetout`)
        named = f" (its validation results file `{run.val_path}` holds none)" * bool(run.val_path)
        return (
            "- validation records: read from the program's output, as AgentJet and verl print "
            f"them{named}"
        )
    if run.val_path:
        return f"- validation results file: `{run.val_path}`{_val_copy_said(run, ctx)}"
    if run.kind == "nemo_rl":
        return (
            "- validation records: read from the program's output (NeMo-RL prints them; it "
            "writes no validation results file)"
        )
    return "- validation results file: (none named in the YAML)"


def provenance_lines(p: Provenance | None) -> list[str]:
    """results.md's lines on where the code came from."""
    if p is None:
        return ["- not recorded"]
    lines = []
    if p.git:
        state = "dirty" if p.dirty else "clean"
        lines.append(f"- git: commit `{p.commit}` on branch `{p.branch}` ({state})")
        if p.dirty:
            lines.append(
                f"- uncommitted changes: {p.changed} tracked file(s) "
                f"(diff in `provenance.diff`), {len(p.untracked)} untracked"
            )
    else:
        lines.append(f"- git: {p.note or 'not a git repository'}")
    if p.blueprint_sha256:
        lines.append(f"- blueprint sha256: `{p.blueprint_sha256}`")
    return lines


def _provenance_section(run: Run) -> list[str]:
    """Where the code and the config came from."""
    return [
        "",
        "## Provenance",
        "",
        *provenance_lines(run.provenance),
        f"- config used: `{run.config_path}`"
        + (" (on the remote host)" if run.remote_dir else " (copied as `config-used.yaml`)")
        if run.config_path
        else "- config used: (none)",
        "- machine-readable: `run.json`",
    ]


def _timeline_section(run: Run, ctx: ReportContext) -> list[str]:
    """When it was submitted, started and ended, and the events in between (repeats folded:
    `timeline.folded`)."""
    elapsed = (
        format_duration(run.ended_at - run.started_at)
        if run.started_at is not None and run.ended_at is not None
        else "not started"
    )
    lines = [
        "",
        "## Timeline",
        "",
        f"- submitted: {iso(run.submitted_at)}",
        f"- started: {iso(run.started_at) or 'never'}",
        f"- ended: {iso(run.ended_at) or ''} (elapsed {elapsed})",
    ]
    journal = ctx.journal or f"$AJETD_HOME/runs/{run.run_id}/events.jsonl"
    return lines + timeline.folded(ctx.events, journal)


def _trials_section(run: Run) -> list[str]:
    """The trials table, the preflight's config changes and the fixes applied."""
    lines = ["", "## Trials", ""]
    if run.trials:
        lines += ["| trial | start | end | duration | exit code | what went wrong |"]
        lines += ["|---:|---|---|---|---:|---|"]
        lines += [_trial_row(t) for t in run.trials]
    else:
        lines.append("No trial was launched.")
    if run.config_changes:
        lines += ["", "## Config changes (preflight)", ""]
        lines += [f"- {c}" for c in run.config_changes]
    if run.fixes:
        lines += ["", "## Fixes applied", ""]
        lines += [
            f"- after trial {t.number}: {t.next_step}"
            for t in run.trials
            if t.next_step and t.number < len(run.trials)
        ]
    return lines


def _measures_section(run: Run, ctx: ReportContext) -> list[str]:
    """The validation metrics and the GPU summary, with their pictures when drawn."""
    lines = ["", "## Validation metrics", "", *_metrics_section(run, ctx.log_tail)]
    if "curves.png" in ctx.pictures:
        lines += ["", "![validation metrics by step](curves.png)"]
    if run.metrics:
        lines += ["", "Last validation record:", "", *fence([repr(run.metrics)])]
    lines += ["", "## GPU summary", "", _gpu_section(run)]
    if "gpus.png" in ctx.pictures:
        lines += ["", "![GPU utilisation and memory over time](gpus.png)"]
    if ctx.plot_problem:
        lines += ["", f"Pictures not drawn: {ctx.plot_problem} (the run itself is unaffected)."]
    return lines


def _last_diagnosis(run: Run) -> list[str]:
    """What the last trial's output showed, root cause first, where the reason does not name
    it: a run stopped (`ajetd stop`, its time limit, a plateau) ends for that, not for what it
    printed, yet a prompt it sat at or a lost GPU is why it did nothing (walk91 F2)."""
    found = run.trial.diagnosis if run.trial else ()
    if not found or found[0].kind in run.reason or f"`{found[0].evidence}`" in run.reason:
        return []  # said already (a failed run's reason names its root cause)
    shown = "; ".join(f"`{f.named()}` ({f.where()}): `{f.evidence}`" for f in found[:3])
    more = f"; {len(found) - 3} more" if len(found) > 3 else ""
    return [
        "",
        f"Its last trial's diagnosis, root cause first (trials.md has it whole): {shown}{more}",
    ]


def render_results(run: Run, ctx: ReportContext) -> str:
    """The results document of a finished (or rejected) run."""
    status = run.status.value if run.status else run.state.value
    lines = [
        f"# Results of run {run.run_id}",
        "",
        f"**Status: {status}**: {run.reason}",
        "",
        "## Purpose",
        "",
        run.purpose or "(none given)",
        "",
        *_settings_section(run, ctx),
        *_provenance_section(run),
        *_timeline_section(run, ctx),
        *_trials_section(run),
        *_measures_section(run, ctx),
        *stageresult.section(ctx.stage_results),
    ]
    lines += ["", "## Why it ended", "", f"{status}: {run.reason}", *_last_diagnosis(run)]
    lines += ["", "## Last 50 lines of output", "", *fence(ctx.log_tail[-50:], "text")]
    lines += _blueprint_sections(run, ctx)
    lines.append("")
    return "\n".join(lines)


def _blueprint_sections(run: Run, ctx: ReportContext) -> list[str]:
    """The blueprint as admitted (its sha256 the provenance's); where the stored copy was
    edited since (a restart read the run's options from it), that text too, with its sha256
    (the report showed the edit as submitted, beside the admitted sha256)."""

    def fenced(text: str) -> list[str]:  # as written, but no ESC reaches a terminal
        return ["", *fence(visible(text.rstrip()).split("\n"), "markdown", "~", 4)]

    lines: list[str] = []
    edited = ctx.blueprint_edited
    admitted = run.provenance.blueprint_sha256 if run.provenance else ""
    if ctx.blueprint_text and (ctx.blueprint_kept or not edited):
        lines += ["", "## Blueprint as submitted", *fenced(ctx.blueprint_text)]
    if edited:
        head = "## Blueprint as edited after admission"
        said = (
            f"The stored copy (`runs/{run.run_id}/blueprint.md`) was edited after the run was "
            f"admitted: sha256 `{ctx.blueprint_edited_sha256}`, not `{admitted}`; a daemon "
            "restart read the run's `[ajetd]` options from it."
        )
        if not ctx.blueprint_kept:
            said += " The text as submitted was not kept (a home older than that copy)."
        lines += ["", head, "", said, *fenced(edited)]
    return lines


def render_trials(run: Run, ctx: ReportContext) -> str:
    """The trial-and-error log: one section per launch."""
    lines = [f"# Trials of run {run.run_id}", ""]
    if not run.trials:
        lines += [f"No trial was launched: {run.reason}", ""]
    for trial in run.trials:
        duration = (
            format_duration(trial.ended_at - trial.started_at)
            if trial.started_at is not None and trial.ended_at is not None
            else ""
        )
        code = "none recorded" if trial.exit_code is None else str(trial.exit_code)
        lines += [
            f"## Trial {trial.number}" + (f" (stage {trial.stage})" if trial.stage else ""),
            "",
            *markdown_item("command", trial.command),
            f"- session: `{trial.session}`",
            f"- start: {iso(trial.started_at) or 'not started'}",
            f"- end: {iso(trial.ended_at) or ''}",
            f"- duration: {duration}",
            f"- exit code: {code}",
            _log_line(trial.number, ctx),
            f"- what went wrong: {trial.problem or 'nothing (exit 0)'}",
            f"- what was done next: {trial.next_step or 'nothing'}",
        ]
        if trial.diagnosis:
            # what was seen while it ran, where its end read nothing (ajetd stopped it)
            while_ran = "" if trial.findings else " of its output while it ran"
            lines += ["", f"Diagnosis{while_ran} (root cause first):", ""]
            for f in trial.diagnosis:
                label = action_label(f, ctx.allowed_fixes)
                lines.append(
                    f"- `{f.named()}` ({label}, {f.where()}, seen {f.count}x): "
                    f"{f.explanation} Fix: {f.fix}  \n  evidence: `{f.evidence}`"
                )
        tail = ctx.trial_tails.get(trial.number, [])
        if tail and trial.exit_code not in (0, None):
            lines += ["", "Last lines of its output:", "", *fence(tail, "text")]
        lines.append("")
    return "\n".join(lines)
