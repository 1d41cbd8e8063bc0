"""`ajetd diag RUN`: a snapshot of a live run, gathered without touching it.

The pane's screen, the process tree with CPU and RSS (on the SSH host for a remote run), GPU
use, recent findings and the log tail; rendered as markdown, printed, and saved as
`diag/diag-<time>.md` in the result dir so it stays with the run's results (a rejected run's
in its folder in the home: the result dir it named may be another run's).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ajetd.adapters import procs
from ajetd.adapters.inbox import stored_options
from ajetd.adapters.nvml import open_probe
from ajetd.adapters.store import OWNER_FILE, Home, write_new
from ajetd.adapters.tmux import Tmux, find_pane
from ajetd.adapters.trialfiles import output_log, report_dir
from ajetd.core import gpuuse
from ajetd.core.errors import AjetdError
from ajetd.core.markdown import fence
from ajetd.core.model import Run, Status
from ajetd.core.timefmt import iso
from ajetd.diagnosis.scan import log_tail
from ajetd.hosts import sshcmd
from ajetd.views.records import run_json


def take(home: Home, tmux: Tmux, run: Run) -> tuple[str, Path | str, dict[str, Any]]:
    """The snapshot as markdown, where it was saved (or why it was not, naming the file or
    folder: a full disk names the snapshot's file), and the same facts as a JSON-ready dict
    (`ajetd diag RUN --json`: every command that shows data takes `--json`)."""
    now = time.time()
    shown = run_json(run, now)  # the fields diag shares with the status object, as it has them
    trial = run.trial
    screen, processes, gpus = _screen(home, tmux, run), _processes(home, run), _gpus(run)
    findings = trial.diagnosis if trial else ()
    log_file = output_log(home, run, trial.number) if trial else None
    tail = (log_tail(log_file, 50) or ["(no log)"]) if log_file else []
    lines = [f"# Diagnostic snapshot of run {run.run_id}", "", f"- taken: {iso(now)}"]
    lines += [f"- state: {shown['state']}" + (f" ({run.status.value})" if run.status else "")]
    lines += [f"- reason: {run.reason}" if run.reason else "- reason: -"]
    lines += [f"- attention: {run.attention}"] if run.attention else []
    lines += ["", "## Pane", "", *fence(screen, "text")]
    lines += ["", "## Processes", "", *processes]
    lines += ["", "## GPUs", "", *gpus]
    lines += ["", "## Findings", ""]
    lines += [f"- {f.named()} ({f.severity}, {f.where()}): {f.evidence}" for f in findings] or [
        "- none"
    ]
    lines += ["", "## Last 50 lines of output", "", *fence(tail, "text"), ""]
    text = "\n".join(lines)
    saved: Path | str = "the run has no folder to hold it yet"
    folder, mode = _where(home, run)
    if folder is not None:
        target = folder / "diag" / f"diag-{time.strftime('%Y%m%dT%H%M%S')}.md"
        try:
            target.parent.mkdir(0o700 if mode == OWNER_FILE else 0o777, exist_ok=True)
            saved = write_new(target, text, mode)  # a second one this second: diag-...-2.md
        except OSError as exc:  # each write names its file (store.named)
            saved = f"{exc.filename or target}: {exc.strerror or exc}"
    data: dict[str, Any] = {
        "run_id": run.run_id,
        "taken_at": iso(now),
        **{key: shown[key] for key in ("state", "status", "reason", "attention")},
        "pane": screen,
        "processes": processes,
        "gpus": gpus,
        "findings": [f.to_json() for f in findings],
        "log_tail": tail,
        "saved": str(saved) if isinstance(saved, Path) else None,
    }
    return text, saved, data


def _where(home: Home, run: Run) -> tuple[Path | None, int]:
    """Where a snapshot is saved, and its mode: the run's result dir, beside its results; for
    a rejected run, or one not launched yet (its blueprint may still be refused), its folder
    in the home (owner-only), because the dir it named may be one it was (or will be) refused
    for: another run's results, or a live run's; and where the run's reports go there
    (`trialfiles.report_dir`: the result dir leads elsewhere than it did, or the output went
    on in the spare), there too: never through a link put in the dir's path; and where the
    result dir is gone (removed by its user), in the home too: a snapshot never makes it again."""
    folder = home.run_dir(run.run_id)
    if run.status is Status.REJECTED or not run.trials:
        return (folder if folder.is_dir() else None), OWNER_FILE
    if not run.result_dir:
        return None, 0o644
    reports = report_dir(home, run)
    if not reports.is_dir():  # removed (or unmounted) by the user: never made again here
        return (folder if folder.is_dir() else None), OWNER_FILE
    return reports, (OWNER_FILE if reports == folder else 0o644)


def _screen(home: Home, tmux: Tmux, run: Run) -> list[str]:
    if run.trial is None:
        return ["(no trial yet)"]
    script = home.trial_file(run.run_id, run.trial.number, "sh")
    pane = find_pane(tmux.panes_or_empty(), script)
    if pane is None:
        return ["(the pane is gone)"]
    try:
        return tmux.capture(pane.pane_id).rstrip("\n").splitlines()
    except AjetdError as exc:
        return [f"(could not capture it: {exc})"]


def _processes(home: Home, run: Run) -> list[str]:
    ssh = stored_options(home, run.run_id).ssh
    if ssh is not None:
        try:
            return [
                "On " + ssh.target + ":",
                "",
                *fence(sshcmd.processes(ssh, run.run_id).rstrip("\n").splitlines(), "text"),
            ]
        except AjetdError as exc:
            return [f"(not read on {ssh.target}: {exc})"]
    pid = run.trial.pane_pid if run.trial else None
    rows = procs.snapshot(run.run_id, pid) if run.active else []
    if not rows:
        return ["- none alive"]
    out = [
        "| pid | ppid | CPU % | RSS MiB | state | command |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    out += [
        f"| {r['pid']} | {r['ppid']} | {r['cpu_percent']} | {r['rss_mib']} | {r['status']} | "
        f"`{str(r['command']).replace('|', '/')}` |"
        for r in rows
    ]
    return out


def _gpus(run: Run) -> list[str]:
    out = [f"- placed on: {list(run.gpu_ids) if run.gpu_ids is not None else 'not placed'}"]
    if run.gpu_stats.gpus:
        out.append(f"- latest sample: {gpuuse.short(run.gpu_stats)}")
    try:
        probe = open_probe()
    except AjetdError as exc:
        return [*out, f"- probe: {exc}"]
    out.append(f"- probe: {probe.description}")
    for g in probe.sample():
        if run.gpu_ids is None or g.index in run.gpu_ids:
            used = "?" if g.memory_used_mib is None else f"{g.memory_used_mib:.0f}"
            util = "?" if g.utilization is None else f"{g.utilization:.0f}"
            out.append(
                f"- GPU {g.index} {g.name}: {util} % busy, {used} MiB used, "
                f"{len(g.processes)} process(es)"
            )
    return out
