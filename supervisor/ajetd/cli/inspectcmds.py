"""The commands that look and change nothing: `lint` a blueprint, `diagnose` a log, `diag` a
run (a snapshot), and the `gpus` here and on the live runs' SSH hosts.

Each imports what it needs inside its function, so that loading the command line stays cheap.
`lint` exits 2 with the problems it finds.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ajetd.adapters.store import Home
from ajetd.cli.common import RUN, echo_json, json_option, load_run, open_home, run_socket
from ajetd.core.errors import AjetdError
from ajetd.core.onefile import Writer

if TYPE_CHECKING:
    from ajetd.core.blueprint import Blueprint
    from ajetd.core.gpuuse import GpuSample
    from ajetd.core.model import Run
    from ajetd.hosts.preflight import Resolved


LINTED_RUN = "linted"  # the run id a linted blueprint's paths are measured with (any six)


@click.command()
@click.argument("file", type=click.Path(exists=True, path_type=Path))
@json_option
def lint(file: Path, as_json: bool) -> None:
    """Check a blueprint, its paths and its YAML (or a campaign folder, or its campaign.yaml,
    as `ajetd campaign` would); exit 0 if ok, 2 with the problems."""
    if file.is_dir() or file.name == "campaign.yaml":
        _lint_campaign(file if file.is_dir() else file.parent, as_json)
    from ajetd.adapters.kindsfile import home_kinds
    from ajetd.adapters.regular import open_regular
    from ajetd.adapters.resultdir import placed_first
    from ajetd.core.blueprint import MAX_BYTES, parse_blueprint_bytes
    from ajetd.core.cutshort import cut_sign
    from ajetd.core.errors import BlueprintError
    from ajetd.hosts.preflight import check_blueprint, nemo_launch
    from ajetd.views import records as status_view

    problems: list[str]
    summary: dict[str, Any] = {}
    cut: list[str] = []  # a file cut short is said as the daemon says it (`cutshort`)
    try:
        with open_regular(file) as handle:
            raw = handle.read(MAX_BYTES + 1)
        sign = cut_sign(raw) if len(raw) <= MAX_BYTES else None
        cut = [f"blueprint: {sign}"] if sign else []
        bp = parse_blueprint_bytes(raw)
    except BlueprintError as exc:
        problems = exc.problems
    except OSError as exc:
        click.echo(f"ajetd lint: cannot read {file}: {exc.strerror or exc}", err=True)
        sys.exit(2)
    else:
        home = open_home()
        live = [r for r in home.load_runs() if r.active]
        writers, val_notes = _val_writers(home, live)
        try:
            resolved, problems = check_blueprint(bp, writers)
        except Exception as exc:  # lint reports, never a traceback: say what broke, exit 2
            resolved, problems = None, [f"lint: the checks stopped: {type(exc).__name__}: {exc}"]
        busy = {r.result_dir: r.run_id for r in live}
        target = resolved.result_dir if resolved else bp.result_dir
        problems = placed_first(target, problems, busy, home.root)
        problems += _not_launched(home, bp, resolved)
        theirs, claim_warnings = _claimed(home, bp, target)
        problems += theirs
        claim_warnings = list(dict.fromkeys([*val_notes, *claim_warnings]))  # one folder's once
        summary = {
            "purpose": bp.purpose,
            # each path as the run takes it (`~` expanded, walk93 F4), where it resolved
            "codebase_dir": resolved.codebase_dir if resolved else bp.codebase_dir,
            "venv_exe": resolved.venv_exe if resolved else bp.venv_exe,
            "yaml_path": resolved.yaml_path if resolved else bp.yaml_path,
            "launch_command": bp.launch_command,
            "result_dir": target if os.path.isabs(target) else _expanded(target),
            "max_time_s": bp.max_time_s,
            "val_path": resolved.val_path if resolved else None,
            "options": status_view.lint_options(bp.options, _rules(bp, resolved)),
            "warnings": [*(resolved.review.warnings if resolved else []), *claim_warnings],
            "config_verdict": resolved.review.verdict if resolved else "rejected",
            # as admission records them: the review's, then NeMo-RL's overrides
            "config_changes": [*resolved.changes_made, *nemo_launch(bp, resolved.result_dir)[1]]
            if resolved
            else [],
        }
    from ajetd.adapters.tmuxsocket import socket_note

    setting = socket_note()  # the daemon's, as a daemon started here would take it
    problems = [*cut, *problems, *home_kinds(open_home().root)[1], *([setting] if setting else [])]
    _lint_verdict(file, problems, "blueprint", summary, as_json)
    click.echo(status_view.render_lint_summary(file, summary))
    sys.exit(0)


def _not_launched(home: Home, bp: Blueprint, resolved: Resolved | None) -> list[str]:
    """Why the run would never be launched, as the daemon would find it: a GPU ask this
    machine cannot meet (`_never_here`); paths too long for its launch's one tmux call, as
    admission refuses them (`launchsize.admitted_launch_problem`)."""
    never = _never_here(bp, resolved)
    found = [never] if never else []
    if resolved is not None:
        from ajetd.adapters.launchsize import admitted_launch_problem

        dirs = (resolved.codebase_dir, resolved.result_dir)
        too_long = admitted_launch_problem(home, LINTED_RUN, *dirs, bp.options)
        found += [too_long] if too_long else []
    return found


def _val_writers(home: Home, live: list[Run]) -> tuple[dict[str, Writer], list[str]]:
    """The val files live runs write, as admission gathers them (`Admit.accept`): other
    daemons' runs' (their claims), then this home's; and the lines on claims not read."""
    from ajetd.cli.claimsread import val_writers

    theirs, notes = val_writers(home)
    writers = {path: Writer(who) for path, who in theirs.items()}
    # a run on an SSH host (its folder there known once it started) writes a file there:
    # compared as written, never resolved on this machine (`core.onefile`)
    writers.update({r.val_path: Writer(r.run_id, not r.remote_dir) for r in live if r.val_path})
    return writers, notes


def _claimed(home: Home, bp: Blueprint, result_dir: str) -> tuple[list[str], list[str]]:
    """What other daemons on this machine hold that this run asks for (`cli.claimsread`): its
    result dir (as resolved, where it did), which admission would refuse (a problem), and GPUs
    it would wait for (a warning); with a warning for each claim that could not be read. A
    run on an SSH host is not judged (admission claims only this machine's dirs)."""
    if bp.options.ssh is not None:
        return [], []
    from ajetd.adapters.nvml import open_probe
    from ajetd.cli.claimsread import gpus_wait, result_dir_taken

    taken: str | None = None
    warnings: list[str] = []
    if os.path.isabs(result_dir):  # else refused as not absolute
        taken, warnings = result_dir_taken(home, result_dir)
    if bp.options.slurm is None:
        try:
            samples = open_probe().sample()
        except AjetdError:  # said by `_never_here`
            samples = []
        wait, notes = gpus_wait(home, bp.options.gpus, samples)
        warnings += [*([wait] if wait else []), *notes]
    return [taken] if taken else [], warnings


def _lint_campaign(folder: Path, as_json: bool) -> None:
    """`ajetd lint FOLDER`: the campaign folder checked as `ajetd campaign FOLDER` checks it
    (`check_folder`), nothing submitted; exit 0 with what it understood, 2 with the problems."""
    from ajetd.core.campaignspec import CampaignError
    from ajetd.hosts.campaignfolder import check_folder

    summary: dict[str, Any] = {}
    try:
        spec = check_folder(folder)
    except CampaignError as exc:
        problems = exc.problems
    except OSError as exc:
        problems = [f"cannot read {folder}: {exc.strerror or exc}"]
    else:
        direction = "max" if spec.maximise else "min"
        problems = []
        summary = {
            "name": spec.name,
            "metric": spec.metric,
            "direction": direction,
            "direction_named": spec.direction_named,
            "base": spec.base,
            "result_dir": spec.result_dir,
            "experiments": [e.name for e in spec.experiments],
        }
    _lint_verdict(folder, problems, "campaign", summary, as_json)
    how = "" if summary["direction_named"] else " (no direction given: "
    how += "" if summary["direction_named"] else "min for a loss-like name, else max)"
    click.echo(
        f"{folder}: ok: campaign {summary['name']}, metric {summary['metric']} "
        f"{summary['direction']}{how}, base {summary['base']}, "
        f"{len(summary['experiments'])} experiment(s) given"
    )
    sys.exit(0)


def _lint_verdict(
    where: Path, problems: list[str], what: str, summary: dict[str, Any], as_json: bool
) -> None:
    """What `lint` says of WHERE once its checks ran, the same for a blueprint and a campaign
    folder: as JSON (`ok`, `problems` and the summary under WHAT), exit 0 or 2; or its
    problems, one a line on stderr, exit 2. Returns only when there is no problem and no JSON:
    the caller then prints its own summary."""
    if as_json:
        echo_json({"ok": not problems, "problems": problems, what: summary})
        sys.exit(2 if problems else 0)
    if problems:
        click.echo(f"{where}: {len(problems)} problem(s):", err=True)
        for problem in problems:
            click.echo(f"  - {problem}", err=True)
        sys.exit(2)


def _expanded(path: str) -> str:
    """A result dir that did not resolve, shown as the run would take it: `~/x` is the
    home's (the result dir is on this machine); any other relative path as written (it is
    refused: not absolute)."""
    return os.path.normpath(os.path.expanduser(path)) if path.startswith("~") else path


def _rules(bp: Blueprint, resolved: Resolved | None) -> dict[str, Any]:
    """The stop rules and the fixes it permits, as read (seconds, fractions, bounds): what
    `hang: {window: 30}` and its kin turned into is seen before the run, not after it. The
    plateau's metric is the one it judges: a rule naming none judges the run's own (NeMo-RL's
    `checkpointing.metric_name`), as admission reads it."""
    from ajetd.core.stoprules import followed
    from ajetd.frameworks.framework import run_metric

    opts = bp.options
    rule = opts.plateau
    if rule is not None:
        config = None
        if resolved is not None:
            fixed = resolved.review.patches and resolved.copy_reaches
            config = resolved.runs_with if fixed else resolved.config
        rule = followed(rule, run_metric(rule, config, bp.launch_command))
    return {
        "hang": {"window_s": opts.hang_window_s, "action": opts.hang_action},  # None: auto
        "plateau": None
        if rule is None
        else {
            "metric": rule.metric,
            "metric_named": rule.named,
            "patience": rule.patience,
            "min_delta": rule.min_delta,
            "after": rule.after,
            "mode": rule.mode,
        },
        "allow_fixes": {k: {"min": lo, "max": hi} for k, (lo, hi) in opts.allow_fixes.items()},
    }


def _never_here(bp: Blueprint, resolved: Resolved | None) -> str | None:
    """Why the daemon would fail this run at its launch for want of GPUs on this machine
    (`placement.never`, with the GPUs this machine shows now), or None; runs on an SSH host
    or through Slurm are placed on other machines and are not judged here."""
    from ajetd.adapters.nvml import never_here
    from ajetd.frameworks import gpuask

    opts = bp.options
    if opts.ssh is not None or opts.slurm is not None:
        return None
    yaml_gpus = resolved.gpu_count if resolved is not None else None
    reason = never_here(opts.gpus, yaml_gpus, gpuask.keys_for(bp.launch_command))
    if reason is None or reason.startswith("gpus: cannot see"):
        return reason
    return f"{reason}: the daemon would fail this run when it comes to start it"


@click.command()
@click.argument(
    "logfile", type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path)
)
@click.option(
    "--kinds",
    "kinds_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="User-defined kinds (YAML, as in $AJETD_HOME/kinds.yaml), tried first.",
)
@json_option
def diagnose(logfile: Path, kinds_file: Path | None, as_json: bool) -> None:
    """Classify a log offline: each finding's kind, line, evidence and fix, root cause first.
    LOGFILE `-` reads standard input (a pipe), as a FIFO (`<(zcat LOG)`) is read; a gzip, bzip2
    or xz log is read decompressed.
    User kinds: --kinds FILE first, then $AJETD_HOME/kinds.yaml, then the catalogue."""
    from ajetd.adapters.kindsfile import home_kinds, load_kinds_file
    from ajetd.adapters.regular import open_log
    from ajetd.core.textfile import (
        CompressedError,
        NotTextError,
        TextSniff,
        chained,
        compression_of,
        text_chunks,
    )
    from ajetd.diagnosis.kindset import KindSet
    from ajetd.diagnosis.scan import CHUNK_BYTES
    from ajetd.diagnosis.stream import diagnose_chunks

    user = KindSet()
    if kinds_file is not None:
        given, problems = load_kinds_file(kinds_file)
        if problems:
            for problem in problems:
                click.echo(f"error: {problem}", err=True)
            sys.exit(2)
        user = KindSet(given)
    mine, problems = home_kinds(open_home().root)
    for problem in problems:
        click.echo(f"warning: {problem} (its kinds are not used)", err=True)
    sniff = TextSniff()
    with open_log(logfile) as handle:  # a FIFO read as stdin is; /dev/zero: refused
        first = handle.read(CHUNK_BYTES)
        raw = chained(first, iter(lambda: handle.read(CHUNK_BYTES), b""))
        try:  # UTF-16, compressed: read as the text they hold
            findings = diagnose_chunks(map(sniff.add, text_chunks(raw)), user + KindSet(mine))
        except CompressedError as exc:  # said as every unreadable file is: `ajetd: f: ...`
            raise CompressedError(f"{logfile}: {exc}") from exc
    not_text = sniff.binary() or (None if findings else sniff.why_not())
    if not_text is not None:  # never "no known failure found" for what is not text
        raise NotTextError(f"{logfile}: not a log: {not_text}; nothing in it was diagnosed")
    odd = sniff.why_not()
    if odd is not None:
        click.echo(f"warning: {logfile}: {odd}; the findings are those of its text", err=True)
    if as_json:
        echo_json([f.to_json() for f in findings])
        return
    if not findings:
        packed = compression_of(first)
        read = f" (read {packed}-decompressed)" if packed else ""
        click.echo(f"{logfile}: no known failure found{read}")
    for f in findings:
        click.echo(f"{f.named()} [{f.severity}] {f.where()} (seen {f.count}x)")
        click.echo(f"  evidence: {f.evidence}")
        click.echo(f"  why: {f.explanation}")
        click.echo(f"  fix: {f.fix}")


@click.command()
@click.argument("run_id", type=RUN, metavar="RUN")
@json_option
def diag(run_id: str, as_json: bool) -> None:
    """A snapshot of a run (pane, processes, GPUs, findings, log tail), printed and saved in
    its result dir; the run is never touched."""
    from ajetd.adapters.tmux import Tmux
    from ajetd.cli import diag

    home = open_home()
    run = load_run(home, run_id)
    tmux = Tmux(run_socket(run), path=run.tmux_path)
    text, saved, data = diag.take(home, tmux, run)
    if as_json:
        echo_json(data)
        return
    click.echo(text)
    click.echo(f"saved to {saved}" if isinstance(saved, Path) else f"not saved: {saved}")


@click.command()
@json_option
def gpus(as_json: bool) -> None:
    """This machine's GPUs: utilisation, memory, temperature, power, and which run holds what."""
    from ajetd.adapters import procs
    from ajetd.adapters.nvml import open_probe
    from ajetd.cli.claimsread import gpu_claims
    from ajetd.views import records as status_view

    probe = open_probe()
    samples = probe.sample()
    holders: dict[int, list[str]] = {}
    placed: dict[int, list[str]] = {}
    home = open_home()
    for run in home.listing():
        if run.active and run.gpu_ids:
            for index in run.gpu_ids:
                holders.setdefault(index, []).append(f"run {run.run_id} (placed)")
                placed.setdefault(index, []).append(run.run_id)
    for index, waiting in _reserved(home).items():
        holders.setdefault(index, []).append(f"reserved for run {waiting} (queued)")
    theirs = gpu_claims(home, samples)  # other daemons' runs on this machine
    for index, said in theirs.said.items():
        holders.setdefault(index, []).extend(said)
    for note in theirs.notes:  # on stderr: `--json`'s keys stay the GPUs' and hosts'
        click.echo(f"warning: {note}", err=True)
    owners = procs.owners({p.pid for g in samples for p in g.processes})
    for g in samples:
        for p in g.processes:
            who = owners.get(p.pid)
            mem = "" if p.memory_mib is None else f", {p.memory_mib:.0f} MiB"
            run_id = status_view.owner_run(who)
            label = f"run {run_id}" if run_id else who or "not ajetd's"
            holders.setdefault(g.index, []).append(f"pid {p.pid} ({label}{mem})")
    hosts = _remote_gpus(home)
    if as_json:
        local = status_view.gpus_json(samples, holders, placed, owners)
        for gpu in local:
            gpu["claims"] = theirs.shown.get(gpu["index"], [])
        out: dict[str, Any] = {"local": local}
        out.update(
            {
                host: None if got is None else status_view.gpus_json(got, held, placed_there, {})
                for host, (got, held, placed_there, _) in hosts.items()
            }
        )
        echo_json(out)
        return
    click.echo(status_view.render_gpus(probe.description, samples, holders))
    for host, (got, held, _, why) in hosts.items():
        click.echo("")
        click.echo(status_view.render_gpus(f"{host}: {why}", got or [], held))


def _reserved(home: Home) -> dict[int, str]:
    """This machine's free GPUs the running daemon keeps for a waiting run (first come, first
    served: `placement.plan`), as it last published them; none without a daemon."""
    if not home.daemon_running():
        return {}
    published = home.daemon_info().get("reserved")
    if not isinstance(published, dict):
        return {}
    return {
        int(gpu): run_id
        for gpu, run_id in published.items()
        if isinstance(gpu, str) and gpu.isdigit() and isinstance(run_id, str)
    }


def _remote_gpus(
    home: Home,
) -> dict[str, tuple[list[GpuSample] | None, dict[int, list[str]], dict[int, list[str]], str]]:
    """Each remote host of a live run: its GPUs (nvidia-smi over SSH), who holds them (in
    words, and the runs placed on each), and a word on how they were read."""
    from ajetd.core.blueprint import parse_blueprint
    from ajetd.hosts import sshcmd

    found: dict[
        str, tuple[list[GpuSample] | None, dict[int, list[str]], dict[int, list[str]], str]
    ] = {}
    for run in home.listing():
        if not run.active:
            continue
        try:
            spec = parse_blueprint(home.blueprint_text(run.run_id), admitted=True).options.ssh
        except (OSError, AjetdError):
            continue
        if spec is None:
            continue
        if spec.target not in found:
            try:
                got = sshcmd.gpus(spec)
                why = "nvidia-smi over SSH" if got is not None else "no nvidia-smi there"
            except sshcmd.NvidiaSmiError as exc:
                got, why = None, str(exc)
            except AjetdError as exc:
                got, why = None, f"not reachable ({exc})"
            found[spec.target] = (got, {}, {}, why)
        for index in run.gpu_ids or ():
            found[spec.target][1].setdefault(index, []).append(f"run {run.run_id} (placed)")
            found[spec.target][2].setdefault(index, []).append(run.run_id)
    return found
