"""`ajetd` command line. Reads the daemon's home directly; talks to the daemon only by files.

Exit codes: 0 ok, 1 failure, 2 usage error / unknown run / lint problems; `wait` adds 2 for a
run that needs attention and 124 for its own timeout (DESIGN §3).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ajetd.adapters.control import is_campaign_id
from ajetd.adapters.store import OWNER_FILE, Home, default_home, write_atomic
from ajetd.cli.campaign import campaign
from ajetd.core.errors import AjetdError, UnknownRunError

if TYPE_CHECKING:  # the client commands import only what they use (they must start fast)
    from ajetd.adapters.nvml import GpuSample
    from ajetd.core.model import Run
    from ajetd.views.listing import Filters

F = TypeVar("F", bound=Callable[..., Any])
POLL_S = 0.1
REPORTS_GRACE_S = 30.0


def json_option(fn: F) -> F:
    """Every command that shows data takes --json."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for programs.")(fn)


def _home() -> Home:
    return Home(default_home())


def _load(home: Home, run_id: str) -> Run:
    try:
        return home.load_run(run_id)
    except UnknownRunError as exc:
        raise click.UsageError(str(exc)) from exc


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ajetd")
def main() -> None:
    """ajetd: supervise RL training runs in tmux. Home: $AJETD_HOME (default ~/.ajetd)."""


@main.command()
@click.option(
    "--backoff-scale",
    type=float,
    default=1.0,
    show_default=True,
    help="Multiply the deep-check schedule (30 s .. 16 min); tests use 0.001.",
)
@click.option(
    "--grace-int",
    type=float,
    default=30.0,
    show_default=True,
    help="Seconds after SIGINT before SIGTERM when stopping a run.",
)
@click.option(
    "--grace-term",
    type=float,
    default=15.0,
    show_default=True,
    help="Seconds after SIGTERM before SIGKILL.",
)
@click.option(
    "--hang-auto",
    type=float,
    default=1800.0,
    show_default=True,
    help="Seconds without output that count as a hang when `hang.window` is auto.",
)
@click.option(
    "--liveness",
    type=float,
    default=5.0,
    show_default=True,
    help="Seconds between checks that each run's tmux pane still exists; also the loop's "
    "longest sleep (exits, stops and inbox drops wake it at once).",
)
@click.option(
    "--gpu-period",
    type=float,
    default=60.0,
    show_default=True,
    help="Seconds between GPU samples (utilisation, memory per run); every --gpu-young-period "
    "while some run is in its first 10 minutes.",
)
@click.option("--gpu-young-period", type=float, default=10.0, show_default=True)
@click.option(
    "--gpu-free-threshold",
    type=click.FloatRange(0.0, 1.0),
    default=0.05,
    show_default=True,
    help="A GPU is free for a run when other processes use at most this share of its memory.",
)
@click.option(
    "--on-finish", default="", help="A command run when any run ends (its JSON on stdin)."
)
@click.option("--on-attention", default="", help="A command run when any run needs attention.")
@click.option(
    "--hook-timeout",
    type=float,
    default=60.0,
    show_default=True,
    help="Seconds a hook may run before it is killed.",
)
@click.option("--log-level", default="INFO", show_default=True)
@click.option(
    "--detach",
    is_flag=True,
    help="Start in the background (output appended to $AJETD_HOME/daemon.log); print its pid. "
    "Stop it with `ajetd shutdown`.",
)
def daemon(
    backoff_scale: float,
    grace_int: float,
    grace_term: float,
    hang_auto: float,
    liveness: float,
    gpu_period: float,
    gpu_young_period: float,
    gpu_free_threshold: float,
    on_finish: str,
    on_attention: str,
    hook_timeout: float,
    log_level: str,
    detach: bool,
) -> None:
    """Run the supervisor in the foreground (what systemd starts), or in the background."""
    if detach:
        _detach(click.get_current_context().params)
        return
    from ajetd.adapters.nvml import FakeGpuError
    from ajetd.adapters.tmux import socket_from_env
    from ajetd.core.errors import StoreError
    from ajetd.core.policy import Timing
    from ajetd.daemon.loop import Daemon, DaemonConfig

    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    cfg = DaemonConfig(
        home=default_home(),
        tmux_socket=socket_from_env(),
        backoff_scale=backoff_scale,
        timing=Timing(grace_int_s=grace_int, grace_term_s=grace_term, hang_auto_s=hang_auto),
        liveness_s=liveness,
        gpu_period_s=gpu_period,
        gpu_young_period_s=gpu_young_period,
        gpu_free_threshold=gpu_free_threshold,
        on_finish=on_finish,
        on_attention=on_attention,
        hook_timeout_s=hook_timeout,
    )
    try:
        Daemon(cfg).serve()
    except (StoreError, FakeGpuError) as exc:
        click.echo(f"ajetd: {exc}", err=True)
        sys.exit(1)


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def submit(file: Path) -> None:
    """Copy a blueprint into the inbox atomically; print the run id."""
    from ajetd.cli.submit import submit as submit_file  # also `ajetd.cli.entry`'s fast path

    run_id, warning = submit_file(file)  # a write that fails: AjetdError, exit 1
    click.echo(run_id)
    if warning:
        click.echo(warning, err=True)


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@json_option
def lint(file: Path, as_json: bool) -> None:
    """Check a blueprint, its paths and its YAML; exit 0 if ok, 2 with the problems."""
    from ajetd.adapters.preflight import check_blueprint
    from ajetd.core.blueprint import MAX_BYTES, parse_blueprint_bytes
    from ajetd.core.errors import BlueprintError
    from ajetd.diagnosis.userkinds import home_kinds
    from ajetd.views import records as status_view

    problems: list[str]
    summary: dict[str, Any] = {}
    try:
        with open(file, "rb") as handle:
            bp = parse_blueprint_bytes(handle.read(MAX_BYTES + 1))
    except BlueprintError as exc:
        problems = exc.problems
    except OSError as exc:
        click.echo(f"ajetd lint: cannot read {file}: {exc.strerror or exc}", err=True)
        sys.exit(2)
    else:
        try:
            resolved, problems = check_blueprint(bp)
        except Exception as exc:  # lint reports, never a traceback: say what broke, exit 2
            resolved, problems = None, [f"lint: the checks stopped: {type(exc).__name__}: {exc}"]
        summary = {
            "purpose": bp.purpose,
            "codebase_dir": bp.codebase_dir,
            "venv_exe": bp.venv_exe,
            "yaml_path": resolved.yaml_path if resolved else bp.yaml_path,
            "launch_command": bp.launch_command,
            "result_dir": bp.result_dir,
            "max_time_s": bp.max_time_s,
            "val_path": resolved.val_path if resolved else None,
            "options": {
                "gpus": bp.options.gpus,
                "env": bp.options.env,
                "max_trials": bp.options.max_trials,
                "autokill": bp.options.autokill,
                "keep_session_s": bp.options.keep_session_s,
            },
            "warnings": resolved.review.warnings if resolved else [],
            "config_verdict": resolved.review.verdict if resolved else "rejected",
            "config_changes": resolved.review.changes if resolved else [],
        }
    problems = [*problems, *home_kinds(_home().root)[1]]
    if as_json:
        click.echo(
            json.dumps(
                {"ok": not problems, "problems": problems, "blueprint": summary},
                indent=2,
                ensure_ascii=False,
            )
        )
    elif problems:
        click.echo(f"{file}: {len(problems)} problem(s):", err=True)
        for problem in problems:
            click.echo(f"  - {problem}", err=True)
    else:
        click.echo(status_view.render_lint_summary(file, summary))
    sys.exit(2 if problems else 0)


@main.command()
@click.argument("run_id", required=False)
@click.option("--all", "show_all", is_flag=True, help="Every ended run, not only the last 10.")
@click.option(
    "--state",
    "state",
    default=None,
    help="Only runs in this state or with this status: live, ended, attention, queued, "
    "running, restarting, stopping, succeeded, failed, time_limit, plateau, stopped, "
    "rejected, lost.",
)
@click.option("--since", default=None, help="Only runs live or ended within this time (2d, 6h).")
@click.option("--campaign", default=None, help="Only the runs of this campaign (its id).")
@click.option("--watch", is_flag=True, help="Redraw every 2 s until q or Ctrl-C.")
@json_option
def status(
    run_id: str | None,
    show_all: bool,
    state: str | None,
    since: str | None,
    campaign: str | None,
    watch: bool,
    as_json: bool,
) -> None:
    """Live runs first, then the 10 most recent ended ones (or one run, or a campaign by its
    id, in full)."""
    if run_id is not None and is_campaign_id(run_id):
        from ajetd.cli.campaign import show_status

        show_status(run_id, as_json)
        return
    from ajetd.cli import statusterm
    from ajetd.views import listing as view
    from ajetd.views import records as status_view

    home = _home()
    now = time.time()
    if run_id is not None:
        run = _load(home, run_id)
        if as_json:
            click.echo(statusterm.json_dump(status_view.run_json(run, now)))
        else:
            statusterm.show(statusterm.detail(home, run, now, statusterm.width()))
        return
    filters = _status_filters(home, show_all, state, since, campaign)
    if watch:
        statusterm.watch(home, filters)
        return
    if as_json:  # the list of runs stays the contract; the daemon's own trouble goes to stderr
        for line in view.daemon_lines(home.daemon_running(), home.daemon_info(), 10**4):
            click.echo("".join(text for text, _ in line), err=True)
        runs = view.for_json(home.listing(), filters, now)
        click.echo(statusterm.json_dump([status_view.run_json(r, now) for r in runs]))
        return
    statusterm.show(statusterm.overview(home, filters, statusterm.width()))


def _status_filters(
    home: Home, show_all: bool, state: str | None, since: str | None, campaign: str | None
) -> Filters:
    """`status`'s filters from its options; a bad value is a usage error naming it."""
    from ajetd.cli import statusterm
    from ajetd.core.durations import parse_duration
    from ajetd.core.errors import DurationError
    from ajetd.views import listing as view

    if state is not None and state not in view.STATES:
        raise click.BadParameter(
            f"{state!r}; one of {', '.join(view.STATES)}", param_hint="--state"
        )
    since_s = None
    if since is not None:
        try:
            since_s = parse_duration(since)
        except DurationError as exc:
            raise click.BadParameter(str(exc), param_hint="--since") from exc
    runs = None
    if campaign is not None:
        runs = statusterm.campaign_runs(home, campaign)
        if runs is None:
            raise click.BadParameter(
                f"no campaign {campaign!r} in {home.root}", param_hint="--campaign"
            )
    return view.Filters(all=show_all, state=state, since_s=since_s, campaign_runs=runs)


@main.command()
@click.argument("run_id")
@click.option("--timeout", type=float, default=None, help="Give up after S seconds (exit 124).")
@json_option
def wait(run_id: str, timeout: float | None, as_json: bool) -> None:
    """Block until the run ends: 0 succeeded/time_limit/plateau, 1 failed/stopped/rejected/lost,
    2 needs attention, 124 timeout. A campaign id waits for the campaign (`campaign wait`)."""
    if is_campaign_id(run_id):
        from ajetd.cli.campaign import wait_campaign

        wait_campaign(run_id, False, timeout, as_json)
    from ajetd.core.model import WAIT_EXIT, State
    from ajetd.views import records as status_view

    home = _home()
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        run = _load(home, run_id)
        if run.state is State.DONE and run.status is not None:
            if run.attention:  # ended, but its reports could not be written (a full disk)
                code = 2
                break
            if not run.reports_pending:  # the record says finish.flag is written
                code = WAIT_EXIT[run.status]
                _await_flag(home, run)
                break
        if run.attention:
            code = 2
            break
        if deadline is not None and time.monotonic() >= deadline:
            code = 124
            break
        time.sleep(POLL_S)
    if as_json:
        click.echo(json.dumps(status_view.run_json(run, time.time()), ensure_ascii=False))
    else:
        click.echo(status_view.wait_line(run, code))
    sys.exit(code)


def _await_flag(home: Home, run: Run) -> None:
    """A run reads `done` a moment before its finish.flag is written (its leftover processes
    are ended first): wait for the flag, at most REPORTS_GRACE_S after the end and only while
    a daemon runs, so that `wait` then `cat finish.flag` never races."""
    if not run.result_dir or run.ended_at is None:
        return
    flag = Path(run.result_dir) / "finish.flag"
    while time.time() < run.ended_at + REPORTS_GRACE_S and home.daemon_running():
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if json.loads(flag.read_text()).get("run_id") == run.run_id:
                return
        time.sleep(POLL_S)


@main.command()
@click.argument("run_id")
@click.option("--no-wait", is_flag=True, help="Return once the request is filed.")
@click.option("--timeout", type=float, default=120.0, show_default=True)
def stop(run_id: str, no_wait: bool, timeout: float) -> None:
    """Stop a run (or a campaign, by its id) cleanly; results and finish.flag are still
    written."""
    if is_campaign_id(run_id):
        from ajetd.cli.campaign import stop_campaign

        stop_campaign(run_id, no_wait, timeout)
        return
    home = _home()
    run = _load(home, run_id)
    if not run.active:
        click.echo(f"run {run_id} already ended: {run.status.value if run.status else ''}")
        return
    write_atomic(home.control / f"{run_id}.stop", f"{time.time()}\n", OWNER_FILE)
    if not home.daemon_running():
        click.echo(
            f"ajetd: no daemon is running on {home.root}; the run stops when one starts", err=True
        )
        sys.exit(1)
    if no_wait:
        click.echo(f"stop requested for run {run_id}")
        return
    deadline = time.monotonic() + timeout
    while _load(home, run_id).active:
        if time.monotonic() >= deadline:
            click.echo(f"run {run_id} is still stopping after {timeout:.0f}s", err=True)
            sys.exit(124)
        time.sleep(POLL_S)
    run = _load(home, run_id)
    _await_flag(home, run)
    click.echo(f"run {run_id} {run.status.value if run.status else ''}: {run.reason}")


@main.command()
@click.argument("run_id")
@click.option("-f", "--follow", is_flag=True, help="Keep printing as the run writes.")
def logs(run_id: str, follow: bool) -> None:
    """The run's full output, every trial in order."""
    from ajetd.daemon.trials import trial_log

    home = _home()
    run = _load(home, run_id)
    out = sys.stdout.buffer
    for trial in run.trials:
        path = trial_log(run, trial.number)
        if path.exists():
            out.write(path.read_bytes())
    out.flush()
    if not follow or not run.trials:
        return
    number = run.trials[-1].number
    path = trial_log(run, number)
    offset = path.stat().st_size if path.exists() else 0
    while True:
        if path.exists() and path.stat().st_size > offset:
            with open(path, "rb") as handle:
                handle.seek(offset)
                chunk = handle.read()
            offset += len(chunk)
            out.write(chunk)
            out.flush()
        elif not _load(home, run_id).active:
            return
        time.sleep(0.25)


@main.command()
@click.argument("logfile", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--kinds",
    "kinds_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="User-defined kinds (YAML, as in $AJETD_HOME/kinds.yaml), tried first.",
)
@json_option
def diagnose(logfile: Path, kinds_file: Path | None, as_json: bool) -> None:
    """Classify a log offline: each finding's kind, line, evidence and fix, root cause first.
    User kinds: --kinds FILE first, then $AJETD_HOME/kinds.yaml, then the catalogue."""
    from ajetd.diagnosis.findings import diagnose_chunks
    from ajetd.diagnosis.scan import read_chunks
    from ajetd.diagnosis.userkinds import KindSet, home_kinds, load_kinds_file

    user = KindSet()
    if kinds_file is not None:
        given, problems = load_kinds_file(kinds_file)
        if problems:
            for problem in problems:
                click.echo(f"error: {problem}", err=True)
            sys.exit(2)
        user = KindSet(given)
    mine, problems = home_kinds(_home().root)
    for problem in problems:
        click.echo(f"warning: {problem} (its kinds are not used)", err=True)
    findings = diagnose_chunks(read_chunks(str(logfile)), user + KindSet(mine))
    if as_json:
        click.echo(json.dumps([f.to_json() for f in findings], indent=2, ensure_ascii=False))
        return
    if not findings:
        click.echo(f"{logfile}: no known failure found")
    for f in findings:
        click.echo(f"{f.kind} [{f.severity}] line {f.line} (seen {f.count}x)")
        click.echo(f"  evidence: {f.evidence}")
        click.echo(f"  why: {f.explanation}")
        click.echo(f"  fix: {f.fix}")


main.add_command(campaign)


@main.command()
@click.argument("run_id")
@json_option
def diag(run_id: str, as_json: bool) -> None:
    """A snapshot of a run (pane, processes, GPUs, findings, log tail), printed and saved in
    its result dir; the run is never touched."""
    from ajetd.adapters.tmux import Tmux, socket_from_env
    from ajetd.cli import diag

    home = _home()
    text, saved, data = diag.take(home, Tmux(socket_from_env()), _load(home, run_id))
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    click.echo(text)
    click.echo(f"saved to {saved}" if saved else "not saved: the result dir is not writable")


@main.command()
@json_option
def gpus(as_json: bool) -> None:
    """This machine's GPUs: utilisation, memory, temperature, power, and which run holds what."""
    from ajetd.adapters import procs
    from ajetd.adapters.nvml import open_probe
    from ajetd.views import records as status_view

    probe = open_probe()
    samples = probe.sample()
    holders: dict[int, list[str]] = {}
    for run in _home().listing():
        if run.active and run.gpu_ids:
            for index in run.gpu_ids:
                holders.setdefault(index, []).append(f"run {run.run_id} (placed)")
    owners = procs.owners({p.pid for g in samples for p in g.processes})
    for g in samples:
        for p in g.processes:
            who = owners.get(p.pid)
            mem = "" if p.memory_mib is None else f", {p.memory_mib:.0f} MiB"
            label = f"run {who}" if who and not who.startswith("swarm_") else who or "not ajetd's"
            holders.setdefault(g.index, []).append(f"pid {p.pid} ({label}{mem})")
    hosts = _remote_gpus(_home())
    if as_json:
        out: dict[str, Any] = {"local": status_view.gpus_json(samples, holders)}
        out.update(
            {
                host: None if got is None else status_view.gpus_json(got, held)
                for host, (got, held, _) in hosts.items()
            }
        )
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(status_view.render_gpus(probe.description, samples, holders))
    for host, (got, held, why) in hosts.items():
        click.echo("")
        click.echo(status_view.render_gpus(f"{host}: {why}", got or [], held))


def _remote_gpus(
    home: Home,
) -> dict[str, tuple[list[GpuSample] | None, dict[int, list[str]], str]]:
    """Each remote host of a live run: its GPUs (nvidia-smi over SSH), who holds them, and a
    word on how they were read."""
    from ajetd.core.blueprint import parse_blueprint
    from ajetd.hosts import sshcmd

    found: dict[str, tuple[list[GpuSample] | None, dict[int, list[str]], str]] = {}
    for run in home.listing():
        if not run.active:
            continue
        try:
            spec = parse_blueprint(home.blueprint_text(run.run_id)).options.ssh
        except (OSError, AjetdError):
            continue
        if spec is None:
            continue
        if spec.target not in found:
            try:
                got = sshcmd.gpus(spec)
                why = "nvidia-smi over SSH" if got is not None else "no nvidia-smi there"
            except AjetdError as exc:
                got, why = None, f"not reachable ({exc})"
            found[spec.target] = (got, {}, why)
        for index in run.gpu_ids or ():
            found[spec.target][1].setdefault(index, []).append(f"run {run.run_id} (placed)")
    return found


@main.command()
@click.argument("run_id")
def attach(run_id: str) -> None:
    """`tmux attach` to the run's session (Ctrl-b d to detach)."""
    from ajetd.adapters.tmux import Tmux, socket_from_env

    run = _load(_home(), run_id)
    if not run.session:
        raise click.UsageError(f"run {run_id} has no tmux session ({run.state.value})")
    argv, env = Tmux(socket_from_env()).attach(run.session)
    os.execvpe(argv[0], argv, env)  # noqa: S606 - argv is built by the tmux module, not a shell


def _detach(params: dict[str, Any]) -> None:
    """`ajetd daemon --detach`: the same daemon with the same options, in the background."""
    from ajetd.cli import daemonctl

    args: list[str] = []
    for name, value in params.items():
        if name != "detach":
            args += [f"--{name.replace('_', '-')}", str(value)]
    try:
        started = daemonctl.detach(_home(), args)
    except daemonctl.DaemonCtlError as exc:
        click.echo(f"ajetd: {exc}", err=True)
        sys.exit(1)
    click.echo(f"ajetd daemon started: pid {started.pid}, log {started.log_file}")


@main.command()
@click.option(
    "--timeout", type=float, default=60.0, show_default=True, help="Seconds to wait for it."
)
def shutdown(timeout: float) -> None:
    """Stop the daemon cleanly (SIGTERM, then wait); runs go on in tmux and the next daemon
    takes them up again."""
    from ajetd.cli import daemonctl

    home = _home()
    try:
        pid = daemonctl.shutdown(home, timeout)
    except daemonctl.DaemonCtlError as exc:
        click.echo(f"ajetd: {exc}", err=True)
        sys.exit(1)
    if pid is None:
        click.echo(f"no daemon is running on {home.root}")
    else:
        click.echo(f"ajetd daemon (pid {pid}) stopped; runs go on in tmux")


def entry() -> None:
    """Entry point that turns stray AjetdErrors into one clear line."""
    try:
        main()
    except AjetdError as exc:
        click.echo(f"ajetd: {exc}", err=True)
        sys.exit(1)
