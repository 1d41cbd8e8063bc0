"""`ajetd status RUN`: one run in full, as lines for a person; pure.

Purpose, the `tmux attach` line to copy (or `ajetd attach RUN` where it would not fit), state
and why, time used and left, the trials with their exit codes and what was done next, the
findings with their explanation and fix, the fixes applied, the last validation records with
the metric's trend, the GPUs, and when the daemon looks again (its next deep check). The live
view (statusterm.frame) shows its head and the run's last lines of output.
"""

from __future__ import annotations

import shlex
import textwrap
from dataclasses import dataclass

from ajetd.core import linecut, unsaved
from ajetd.core.durations import format_duration
from ajetd.core.exitfile import UnrecordedExit
from ajetd.core.model import Run
from ajetd.core.timefmt import iso
from ajetd.frameworks.valresults import (
    UNREAD_RECORDS,
    best_point,
    cell,
    is_count,
    last_value,
    metric_series,
    more_note,
    nonfinite_note,
    shown_keys,
    shown_metric,
    shown_value,
    step_text,
)
from ajetd.views.listing import Line, cut, gpu_cell, shorten, sparkline, state_style, state_word
from ajetd.views.records import reports_left, shown_reason, trial_of


@dataclass(frozen=True)
class RunExtras:
    """What one run's detail needs beyond its record, gathered by the caller."""

    # the words that reach its session's server from the reader's shell (`-L NAME`, or
    # `-S PATH` where its TMUX_TMPDIR leads elsewhere: `adapters.tmuxsocket.server_words`)
    tmux_words: tuple[str, ...] = ()
    next_check_at: float | None = None  # the daemon's next deep check of this run
    output: tuple[str, ...] = ()  # its last lines of output (the live view)
    exited: UnrecordedExit | None = None  # its program's exit, not recorded (no daemon)
    daemon_up: bool = True  # a daemon runs on its home (who writes reports still to come)


def _kv(key: str, value: str, width: int, style: str = "") -> Line:
    return [(f"{key:<11}", "dim"), (cut(value, max(width - 11, 1)), style)]


@dataclass(frozen=True)
class _Fit:
    """How text wider than the terminal is shown. `ajetd status RUN` is the run in full: what
    a person reads to act (why the run is in its state, a finding's explanation and fix, what
    was done next, a warning) is wrapped, never cut with '…' (on 80 columns a fix's advice
    was cut mid-sentence, and a pipe's 400 columns cut a rejection naming seven parts). The
    live view's head is a glance in a few rows: it cuts (`whole=False`). Tables and the
    trials' one-line rows are cut in both."""

    width: int
    whole: bool

    def kv(self, key: str, value: str, style: str = "") -> list[Line]:
        """`key  value`, the value wrapped under itself."""
        if not self.whole:
            return [_kv(key, value, self.width, style)]
        parts = textwrap.wrap(value, max(self.width - 11, 1), break_on_hyphens=False) or [""]
        return [_kv("" if i else key, part, self.width, style) for i, part in enumerate(parts)]

    def prose(self, first: str, text: str, style: str = "") -> list[Line]:
        """`first` then `text`, wrapped under `text`'s start."""
        if not self.whole:  # at a word, brackets closed (a finding's evidence, its fix)
            return [[(linecut.cut(first + text, self.width), style)]]
        head: list[Line] = []
        if len(first) > self.width // 2:  # a narrow terminal: the text goes under `first`
            head, first = [[(cut(first.rstrip(), self.width), style)]], "    "
        parts = textwrap.wrap(
            text,
            max(self.width, len(first) + 1),
            initial_indent=first,
            subsequent_indent=" " * len(first),
            break_on_hyphens=False,
        )
        return head + [[(part, style)] for part in parts or [first.rstrip()]]


def attach_line(session: str, words: tuple[str, ...]) -> str:
    argv = ["tmux", *words, "attach", "-t", session]
    return shlex.join(argv)


def _trial_lines(run: Run, fit: _Fit) -> list[Line]:
    lines: list[Line] = [[("TRIALS", "header")]]
    if not run.trials:  # as METRICS says none: a heading with nothing under it reads as cut
        lines.append([("  none yet" if run.active else "  none: no trial was launched", "dim")])
    for t in run.trials:
        took = (
            format_duration(t.ended_at - t.started_at)
            if t.started_at is not None and t.ended_at is not None
            else ("running" if t.started_at is not None else "not started")
        )
        code = "-" if t.exit_code is None else str(t.exit_code)
        wrong = t.findings[0].named() if t.findings else (t.problem or "")
        text = f"  #{t.number} {iso(t.started_at) or '':<20} {took:<8} exit {code:<4} {wrong}"
        bad = "bad" if t.exit_code not in (0, None) else ""
        lines.append([(cut(text.rstrip(), fit.width), bad)])
        if t.next_step:
            lines += fit.prose("     next: ", t.next_step, "dim")
    return lines


def _finding_lines(run: Run, fit: _Fit) -> list[Line]:
    trial = run.trial
    found = trial.diagnosis if trial else ()
    if not found:
        return []
    lines: list[Line] = [
        [(f"FINDINGS (trial {trial.number if trial else 0}, root cause first)", "header")]
    ]
    for f in found:
        head = f"  {f.named()} [{f.severity}] {f.where()}: "
        lines += fit.prose(head, f.evidence, "bad" if f.severity == "fatal" else "")
        if f.explanation:
            lines += fit.prose("    why: ", f.explanation)
        if f.fix:
            lines += fit.prose("    fix: ", f.fix, "good")
    return lines


def _metric_lines(run: Run, width: int, rows: int = 5) -> list[Line]:
    history = list(run.history)
    if not history:
        none = "no validation results yet" if run.active else "no validation results were written"
        if UNREAD_RECORDS in (run.reason or ""):  # as its reason says (walk86 F29)
            none = "its output shows validation results in a shape ajetd does not read"
        if run.val_read.unread and run.kind != "nemo_rl":  # lines that look like records
            none = f"{run.val_read.unread} line(s) of its val file could not be read as records"
        if unsaved.NOTE in run.warnings:  # the record on disk is not the newest: never claimed
            none = "none on disk yet: the run's newest record is held in memory (a full home)"
        return [[("METRICS", "header")], [(f"  {none}", "dim")]]
    metric = shown_metric(history, run.metric)
    keys = shown_keys(history, run.metric)
    if metric not in keys:
        keys.insert(0, metric)  # a metric with no value yet: its column, empty
    keys, left = keys[:4], keys[4:]
    lines: list[Line] = [
        [(f"METRICS (last {min(rows, len(history))} of {len(history)})", "header")]
    ]
    lines.append(
        # a long key cut in the middle: `task_pass_rate@1` and `@4` differ at their end
        [
            (
                cut(
                    "  " + "step".rjust(7) + "".join(shorten(k, 14).rjust(16) for k in keys), width
                ),
                "dim",
            )
        ]
    )
    counts = [is_count(r.get(k) for r in history) for k in keys]
    for record in history[-rows:]:
        cells = "".join(
            cell(record.get(k), count).rjust(16) for k, count in zip(keys, counts, strict=True)
        )
        lines.append([(cut("  " + step_text(record).rjust(7) + cells, width), "")])
    series, point = metric_series(history, metric), best_point(history, metric)
    last = shown_value(last_value(history, metric))
    diverged = nonfinite_note(history, metric)
    if point is not None:
        trial = trial_of(run, point[1]) if len(run.trials) > 1 else None
        of = f" (trial {trial})" if trial else ""
        text = f"  {metric}: {sparkline(series[-40:])}  best {point[0]:.4f}{of}, last {last}"
        lines.append([(cut(text, width), "bad" if diverged else "good")])
    if diverged:  # a metric that turned nan is the run's news, never hidden behind its best
        lines.append([(cut(f"  {diverged}: the training diverged?", width), "bad")])
    if left:  # the columns a terminal has room for; the rest named (results.md has them)
        lines.append([(cut(f"  {more_note(left)} (results.md)", width), "dim")])
    return lines


def _gpus_text(run: Run, cell: str) -> str:
    """The run's GPUs as the list shows them; where none was placed, why: before its start,
    or none seen (`gpus: all` on a machine where ajetd sees no GPU: it leaves the program's
    CUDA_VISIBLE_DEVICES as it was, and said "not placed" of a run that ran)."""
    if cell != "-":
        return cell
    if run.started_at is not None:
        return "not restricted (no GPU seen; CUDA_VISIBLE_DEVICES as it was)"
    return "not placed"


def _state_why(run: Run, exited: UnrecordedExit | None) -> str:
    """What the state line says after the state: its program's exit no daemon recorded (what
    is known without one) first, then what needs attention or the reason."""
    why = run.attention or shown_reason(run)
    if exited is None:
        return why
    return exited.words() + (f"; {why}" if why else "")


def _state_lines(run: Run, word: str, fit: _Fit, extras: RunExtras) -> list[Line]:
    """The state and why; for an ended run whose reports are still to come (finish.flag not
    there yet), by whom and what holds them: a stop right after its end left them, and
    `status` said only `succeeded` (walk98 F19)."""
    why = _state_why(run, extras.exited)
    lines = fit.kv("state", f"{word}" + (f": {why}" if why else ""), state_style(word))
    if run.reports_pending and not run.active:
        who = "the daemon" if extras.daemon_up else "the next daemon (no daemon runs now)"
        lines += fit.kv("reports", f"not written yet: {reports_left(run, who)}", "waiting")
    return lines


def detail(
    run: Run, now: float, width: int, extras: RunExtras = RunExtras(), whole: bool = True
) -> list[Line]:
    """`ajetd status RUN`: one run in full (`whole`: long text wrapped, see `_Fit`)."""
    fit = _Fit(width, whole)
    word = state_word(run)
    lines: list[Line] = [
        [(f"run {run.run_id}  ", "header"), (word.upper(), state_style(word))],
        *fit.kv("purpose", (run.purpose or "(none)").splitlines()[0]),
    ]
    if run.session:
        lines.append(_kv("session", run.session, width))
        if run.active or not run.session_closed:
            line = attach_line(run.session, extras.tmux_words)  # whole, to copy, or:
            short = f"ajetd attach {run.run_id}"
            lines.append(_kv("attach", line if len(line) <= width - 11 else short, width, "good"))
    lines += _state_lines(run, word, fit, extras)
    if run.started_at is not None:
        used = run.time_used(now)
        text = f"used {format_duration(used)}"
        if run.max_time_s:
            text += f" of {format_duration(run.max_time_s)}"
            if run.active:
                text += f", {format_duration(run.max_time_s - used)} left"
        if run.slurm.waited_s or run.slurm.waiting:
            text += " (time in Slurm's queue not counted)"
        lines.append(_kv("time", text, width))
    else:  # queued, or ended before a trial ran (rejected): what its blueprint asks for
        limit = f" (limit {format_duration(run.max_time_s)})" if run.max_time_s else ""
        when = f"; submitted {format_duration(now - run.submitted_at)} ago" if run.active else ""
        lines.append(_kv("time", f"not started{limit}{when}", width))
    lines += fit.kv("result dir", run.result_dir or "-")
    if not run.trials and (run.codebase_dir or run.launch_command):
        lines += fit.kv("codebase", run.codebase_dir or "-")
        lines += fit.kv("command", run.launch_command or "-")
    for warning in run.admission_notes:  # what admission changed or doubted
        lines += fit.kv("warning", warning, "waiting")
    if run.active and extras.next_check_at is not None:
        due = extras.next_check_at - now
        text = f"in {format_duration(due)}" if due > 0 else "due now"
        lines.append(_kv("deep check", text + " (val results, plateau, GPUs)", width))
    gpus = gpu_cell(run)
    lines.append(_kv("GPUs", _gpus_text(run, gpus), width))
    lines.append([])
    lines += _trial_lines(run, fit)
    found = _finding_lines(run, fit)
    if found:
        lines += [[], *found]
    if run.fixes:
        lines += [[], [("FIXES APPLIED", "header")]]
        for t in run.trials:
            if t.next_step and t.number < len(run.trials):
                lines += fit.prose(f"  after trial {t.number}: ", t.next_step)
    lines += [[], *_metric_lines(run, width)]
    if extras.output:
        lines += [[], [("LAST OUTPUT", "header")]]
        lines += [[(cut("  " + text, width), "dim")] for text in extras.output]
    return lines
