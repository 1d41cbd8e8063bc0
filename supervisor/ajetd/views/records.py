"""What `ajetd status`, `wait` and `lint` show: run records as JSON and as text; pure."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ajetd.core import gpuuse
from ajetd.core.durations import format_duration
from ajetd.core.exitfile import UnrecordedExit
from ajetd.core.fixrecord import SCIENCE_PREFIX, applied_json
from ajetd.core.gpuuse import GpuSample
from ajetd.core.model import Run, State, StopCause, Trial, record_trials
from ajetd.core.resultfiles import HELD_TAIL, REPORTS_HELD
from ajetd.core.timefmt import iso
from ajetd.frameworks.valresults import best_point, shown_metric, shown_value, step_of

if TYPE_CHECKING:
    from ajetd.core.options import Options


def _elapsed(run: Run, now: float) -> float | None:
    if run.started_at is None:
        return None
    return (run.ended_at or now) - run.started_at


def run_json(run: Run, now: float, exited: UnrecordedExit | None = None) -> dict[str, Any]:
    """The contract's status object (DESIGN §3) plus the finish data; `exited`: its program's
    exit that no daemon recorded yet (`exitfile`), beside the record, which it never changes."""
    elapsed = _elapsed(run, now)
    trial = run.trial
    return {
        "run_id": run.run_id,
        "purpose": run.purpose or None,
        "session": run.session or None,
        # the `tmux -L` name of the session's server (`default`: tmux's own), which the
        # human view's attach line names: an agent reaches the pane without parsing that
        "tmux_socket": run.tmux_socket or None,
        # that server's socket, its full path: `tmux -S "$tmux_socket_path"` reaches it from
        # any shell, whatever its TMUX_TMPDIR (null before the first launch, and in a record
        # older than the field)
        "tmux_socket_path": run.tmux_path or None,
        "state": shown_state(run),
        "status": run.status.value if run.status else None,
        # ended, its reports (results.md, trials.md, finish.flag) still to come: `done` is
        # on record before them, so a reader of `status` is never told they are there
        "reports_pending": run.reports_pending,
        "reason": shown_reason(run) or None,
        "trial": trial.number if trial else 0,
        "trials": len(run.trials),
        "attention": run.attention,
        "submitted_at": iso(run.submitted_at),
        "started_at": iso(run.started_at),
        "ended_at": iso(run.ended_at),
        "elapsed_s": None if elapsed is None else round(elapsed, 3),
        "max_time_s": run.max_time_s,
        "result_dir": run.result_dir or None,
        "reports_dir": run.reports_dir or None,
        "exit_code": run.exit_code,
        # {trial, exit_code, exited_at, why}: its program exited and no daemon recorded it
        # (`state` stays the record's, `running`, until one does); null otherwise
        "unrecorded_exit": None if exited is None else exited.to_json(),
        "metrics": run.metrics,
        "best": best_json(run),
        "blueprint": run.source,
        # before a trial ran (queued, rejected): the command its blueprint names
        "command": trial.command if trial else (run.launch_command or None),
        "warnings": list(run.admission_notes),
        "gpus": None if run.gpu_ids is None else list(run.gpu_ids),
        "gpu": gpuuse.now_view(run.gpu_stats),
        "diagnosis": [f.to_json() for f in (trial.diagnosis if trial else ())],
        # what each fix between trials changed (walk88 F6: a run that succeeded only
        # after its batch size was halved twice read plainly `succeeded`)
        "fixes_applied": applied_json(run.fixes, run.applied_fixes),
        # a pipeline's stages and what each left (the gap a user walk found: only
        # results.md's `## Stage results` said an eval's score)
        "stages": stages_json(run),
    }


def stages_json(run: Run) -> list[dict[str, Any]] | None:
    """The status object's `stages`: one object per stage that ran or runs, in the order
    they began, `{"stage", "trial", "exit_code", "printed", "outputs"}` (`trial` its last
    trial's number, `exit_code` that trial's, null while it runs; `printed` the lines it
    printed that state a result and `outputs` each declared output, `{"path", "copied_as",
    "note", "values"}`, both null until the run's reports gathered them at its end); null
    for a run without stages."""
    last: dict[str, Trial] = {}  # in the order the stages began; a relaunch's trial last
    for trial in run.trials:
        if trial.stage:
            last[trial.stage] = trial
    if not last:
        return None
    gathered = {r.stage: r for r in run.stage_results}
    shown = []
    for stage, trial in last.items():
        result = gathered.get(stage)
        shown.append(
            {
                "stage": stage,
                "trial": trial.number,
                "exit_code": trial.exit_code,
                "printed": None if result is None else list(result.printed),
                "outputs": None if result is None else [o.to_json() for o in result.outputs],
            }
        )
    return shown


def fixes_said(run: Run) -> str:
    """` (after 2 fixes: ppo_micro_batch_size_per_gpu 8 → 4; ... 4 → 2; the science
    changed)`: the fixes a run ran with, for a one-line view; "" where none."""
    if not run.fixes:
        return ""
    what = "; ".join(a.summary() for a in run.applied_fixes) or ", ".join(run.fixes)
    science = any(f.startswith(SCIENCE_PREFIX) for f in run.fixes)
    changed = "; its hyperparameters are not the blueprint's" if science else ""
    n = len(run.fixes)
    return f" (after {n} fix{'es' if n > 1 else ''}: {what}{changed})"


def best_json(run: Run) -> dict[str, Any] | None:
    """The best value of the metric the run's views lead with, beside `metrics` (the last
    record): `{"metric", "value", "step", "trial"}` (`step` null where its record names none;
    `trial` the trial that wrote it, null where that is not on record: a relaunched run's
    step 6 may be either trial's, and only the last trial's model is what the run leaves:
    walk86 F17), null before a record holds it. A campaign's ledger records this best
    (`metric_value`)."""
    metric = shown_metric(list(run.history), run.metric)
    point = best_point(list(run.history), metric)
    if point is None:
        return None
    trial = trial_of(run, point[1])
    return {"metric": metric, "value": point[0], "step": step_of(point[1]), "trial": trial}


def validation_news(before: Run, after: Run) -> str | None:
    """The journal's line for the records a read brought (`before` → `after`), where they
    matter: the first, and each new best of the metric the run's views lead with; None for
    records that change neither (one line a read made the timeline a counter log: walk93
    F3). It begins `validation: N record(s)`, N the run's records then."""
    count = len(after.history)
    if not count or after.history == before.history:
        return None
    best = best_json(after)
    where = ""
    if best is not None:
        step = "" if best["step"] is None else f" (step {best['step']})"
        where = f"best {best['metric']} {shown_value(best['value'])}{step}"
    if not before.history:
        return f"validation: {count} record(s), the first" + (f"; {where}" if where else "")
    was = best_json(before)
    if best is None or (was is not None and _point(was) == _point(best)):
        return None
    return f"validation: {count} record(s): new {where}"


def _point(best: Mapping[str, Any]) -> tuple[Any, ...]:
    return (best["metric"], best["value"], best["step"])


def trial_of(run: Run, record: Mapping[str, Any]) -> int | None:
    """The trial that wrote `record`, one of the run's history (`record_trials`)."""
    index = next((i for i, r in enumerate(run.history) if r is record), None)
    return None if index is None else record_trials(run)[index]


def best_note(run: Run, trial: int | None) -> str:
    """Where the best is not the last trial's: that the model the run leaves is the last
    trial's, not the one the best measured ('' otherwise)."""
    last = run.trials[-1].number if run.trials else None
    if trial is None or last is None or trial == last:
        return ""
    return (
        f"the best is trial {trial}'s; the run was relaunched since, so the model it leaves is "
        f"trial {last}'s"
    )


def shown_state(run: Run) -> str:
    """The state as users see it: a trial whose Slurm job still waits is `queued`."""
    if run.state is State.RUNNING and run.slurm.state == "PENDING":
        return State.QUEUED.value
    return run.state.value


def _state_word(run: Run) -> str:
    if run.state is State.DONE and run.status is not None:
        return run.status.value
    return shown_state(run) + (" (!)" if run.attention else "")


def owner_run(who: str | None) -> str | None:
    """The run a GPU process's `AJETD_RUN_ID` names: None outside ajetd and for a swarm
    server (`swarm_<port>`, shared by runs)."""
    return None if who is None or who.startswith("swarm_") else who


def gpus_json(
    samples: list[GpuSample],
    holders: dict[int, list[str]],
    placed: Mapping[int, list[str]],
    owners: Mapping[int, str],
) -> list[dict[str, Any]]:
    """`ajetd gpus --json`: every figure of each GPU, and who holds it: in words (`held_by`)
    and as values, the runs placed on it or with a process on it (`run_ids`) and each
    process's run (`owners`: pid -> its `AJETD_RUN_ID`; a swarm server's is no run)."""

    def run_of(pid: int) -> str | None:
        return owner_run(owners.get(pid))

    return [
        {
            "index": g.index,
            "name": g.name,
            "uuid": g.uuid,
            "utilization": g.utilization,
            "memory_used_mib": g.memory_used_mib,
            "memory_total_mib": g.memory_total_mib,
            "temperature_c": g.temperature_c,
            "power_w": g.power_w,
            "lost": g.lost,
            "processes": [
                {"pid": p.pid, "memory_mib": p.memory_mib, "run_id": run_of(p.pid)}
                for p in g.processes
            ],
            "held_by": holders.get(g.index, []),
            "run_ids": sorted(
                {*placed.get(g.index, []), *filter(None, map(run_of, (p.pid for p in g.processes)))}
            ),
        }
        for g in samples
    ]


def render_gpus(description: str, samples: list[GpuSample], holders: dict[int, list[str]]) -> str:
    """`ajetd gpus`: one line per GPU."""
    lines = [f"GPUs: {description}"]
    if not samples:
        return "\n".join(lines)
    rows = [("GPU", "NAME", "UTIL", "MEMORY", "TEMP", "POWER", "HELD BY")]

    def fig(value: float | None, fmt: str) -> str:
        return "-" if value is None else fmt.format(value)

    for g in samples:
        memory = f"{fig(g.memory_used_mib, '{:.0f}')}/{fig(g.memory_total_mib, '{:.0f}')} MiB"
        rows.append(
            (
                str(g.index),
                g.name,
                "LOST" if g.lost else fig(g.utilization, "{:.0f}%"),
                memory,
                fig(g.temperature_c, "{:.0f}C"),
                fig(g.power_w, "{:.0f}W"),
                "; ".join(holders.get(g.index, [])) or "-",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)


def wait_line(run: Run, code: int) -> str:
    if code == 124 and run.state is State.DONE:  # ended; its reports held back (a full disk)
        held = f": {run.attention}" if run.attention else ""
        return (
            f"run {run.run_id} ended {_state_word(run)}, but its reports are not written yet "
            f"(wait timed out){held}"
        )
    if code == 124:
        return f"run {run.run_id}: still {run.state.value} (wait timed out)"
    if code == 2:
        return f"run {run.run_id} {_state_word(run)}, needs attention: {run.attention}"
    return f"run {run.run_id} {_state_word(run)}: {run.reason}{fixes_said(run)}"


def lint_options(opts: Options, rules: Mapping[str, Any]) -> dict[str, Any]:
    """`ajetd lint`'s `options`: every `[ajetd]` option as read, so an agent can check each
    was (walk92 F9: on_finish was not shown, nor was any sign its hook was read): the plain
    ones, `rules` (hang, plateau, allow_fixes, as `_rules` reads them), the hooks (null where
    none), and the others where given (a pipeline, a remote host, Slurm, a swarm server,
    artifacts to pull, failure kinds of its own, YAML overrides)."""
    from ajetd.core.options import gpus_shown  # lint's alone: not on `status`'s way

    given = {
        "stages": [dataclasses.asdict(stage) for stage in opts.stages],
        "swarm": dataclasses.asdict(opts.swarm) if opts.swarm is not None else None,
        "ssh": dataclasses.asdict(opts.ssh) if opts.ssh is not None else None,
        "pull": list(opts.pull),
        "slurm": dataclasses.asdict(opts.slurm) if opts.slurm is not None else None,
        "kinds": [dataclasses.asdict(kind) for kind in opts.kinds],
        "yaml_overrides": list(opts.yaml_overrides),
    }
    return {
        "gpus": gpus_shown(opts.gpus),
        "env": opts.env,
        "max_trials": opts.max_trials,
        "autokill": opts.autokill,
        "keep_session_s": opts.keep_session_s,
        **rules,
        "on_finish": opts.on_finish or None,
        "on_attention": opts.on_attention or None,
        **{key: value for key, value in given.items() if value},
    }


LINT_HOOKS = ("on_finish", "on_attention")


def render_lint_summary(file: Path, summary: dict[str, Any]) -> str:
    lines = [f"{file}: ok"]
    for key in (
        "purpose",
        "codebase_dir",
        "venv_exe",
        "yaml_path",
        "launch_command",
        "result_dir",
        "val_path",
    ):
        value = summary.get(key)
        parts = str(value).splitlines() if value else ["-"]
        more = f" (+{len(parts) - 1} more line{'s' * (len(parts) > 2)})" if len(parts) > 1 else ""
        lines.append(f"  {key}: {parts[0]}{more}")
    lines.append(f"  max_time: {format_duration(summary['max_time_s'])}")
    options = dict(summary["options"])
    rules = {key: options.pop(key, None) for key in ("hang", "plateau", "allow_fixes")}
    hooks = {key: options.pop(key, None) for key in LINT_HOOKS}
    lines.append(f"  options: {options}")
    lines += _rule_lines(rules, summary["max_time_s"])
    lines += [f"  {key}: {command or 'none'}" for key, command in hooks.items()]
    lines += [f"  warning: {w}" for w in summary.get("warnings", [])]
    for change in summary.get("config_changes", []):
        where = (  # NeMo-RL's are overrides on its command line; AgentJet's go in a copy
            "on the command line"
            if str(change).startswith("NeMo-RL override")
            else "in a copy beside the original"
        )
        lines.append(f"  config change ({where}): {change}")
    return "\n".join(lines)


def _rule_lines(rules: dict[str, Any], max_time_s: float) -> list[str]:
    """lint's lines for the stop rules and the permitted fixes, as read (durations as
    durations, `after` also as the time it begins)."""
    lines = []
    hang = rules.get("hang")
    if hang:
        window = hang["window_s"]
        shown = "auto" if window is None else format_duration(window)
        lines.append(f"  hang: window {shown}, action {hang['action']}")
    plateau = rules.get("plateau")
    if not plateau:  # shown when absent too, as hang is: what is not asked is seen not asked
        lines.append("  plateau: none (no stop on a flat metric)")
    else:
        begins = format_duration(plateau["after"] * max_time_s)
        own = "" if plateau.get("metric_named", True) else " (the run's own)"
        lines.append(
            f"  plateau: metric {plateau['metric']}{own}, patience {plateau['patience']}, "
            f"min_delta {plateau['min_delta']:g}, after {plateau['after']:g} ({begins}), "
            f"mode {plateau['mode']}"
        )
    fixes = rules.get("allow_fixes") or {}
    if not fixes:
        lines.append("  allow_fixes: none (no science fix changes a hyperparameter)")
    else:
        bounds = (  # in words: `lr 1e-07..-` read as a range to a dash (walk 86, F3)
            f"{key} {_bound('min', b['min'])}, {_bound('max', b['max'])}"
            for key, b in fixes.items()
        )
        lines.append(f"  allow_fixes: {'; '.join(bounds)}")
    return lines


_STOP_CAUSES = {
    StopCause.USER: "asked by `ajetd stop`",
    StopCause.TIME_LIMIT: "its exp_max_time reached",
    StopCause.HANG: "the hang rule",
    StopCause.PLATEAU: "a plateau",
    StopCause.PROMPT: "wandb's login prompt, to relaunch it offline",
}


def shown_reason(run: Run) -> str:
    """The run's reason as status shows it: a `stopping` run's is why and how far the stop
    has gone (its record keeps the reason for its end, which is not there yet: status said
    null for the whole grace of a stop)."""
    if run.reason or run.state is not State.STOPPING or run.stop_cause is None:
        return run.reason
    why = f": {run.stop_reason}" if run.stop_reason else ""
    sent = ", ".join(f"SIG{s}" for s in run.signals_sent) or "no signal"
    unsent = ""
    if run.signal_unsent_at is not None:  # its SSH host did not take the next one
        unsent = f"; its place did not answer at {iso(run.signal_unsent_at)}: sent once it does"
    return f"being stopped, {_STOP_CAUSES[run.stop_cause]}{why} ({sent} sent so far{unsent})"


def _bound(side: str, value: float | None) -> str:
    """`min 1e-07`, `no max`: one side of an allow_fixes bound as lint shows it."""
    return f"no {side}" if value is None else f"{side} {value:g}"


def reports_left(run: Run, who: str = "the next daemon") -> str:
    """An ended run's reports that no daemon wrote yet (`reports_pending`): which files, who
    writes them (`who`), and what holds them back where its result dir refused them (its
    attention, `ending.publish_reports`)."""
    said = f"its results.md, trials.md and finish.flag will be written by {who}"
    held = run.attention or ""
    if held.startswith(REPORTS_HELD):
        folder, _, why = held[len(REPORTS_HELD) :].removesuffix(HELD_TAIL).strip().rpartition(": ")
        said += f" once it can write to {folder} ({why})" if folder else f" ({why})"
    return said


def reports_left_line(run: Run) -> str:
    """What `ajetd shutdown` says of each ended run whose reports are left after the daemon
    stopped: a stop right after a run's end left them unwritten and said nothing, while
    `status` said `succeeded` (walk98 F19)."""
    status = run.status.value if run.status else "?"
    return f"run {run.run_id} ended ({status}); {reports_left(run)}"
