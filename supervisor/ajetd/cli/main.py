"""`ajetd` command line: the group, the daemon's own commands (`daemon`, `shutdown`) and the
entry point; the commands on runs are in `runcmds`, those that only look in `inspectcmds`,
`ajetd campaign ...` in `campaign`. Reads the daemon's home directly; talks to the daemon only
by files.

Exit codes: 0 ok, 1 failure, 2 usage error / unknown run / lint problems; `wait` adds 2 for a
run that needs attention and 124 for its own timeout (DESIGN §3).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import click

from ajetd.adapters.store import default_home
from ajetd.cli import inspectcmds, prunecmd, runcmds
from ajetd.cli.campaign import campaign
from ajetd.cli.common import NOT_NEGATIVE, POSITIVE, Number, open_home
from ajetd.cli.entry import interrupted
from ajetd.core.errors import AjetdError

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class _Main(click.Group):
    """The command group, whose commands end at Ctrl-C with one line and exit 130 (click's
    own `Aborted!` exits 1, which a script cannot tell from a failure; a command that says
    what goes on, as `wait` does, catches it first)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            interrupted("")


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ajetd")
def main() -> None:
    """ajetd: supervise RL training runs in tmux. Home: $AJETD_HOME (default ~/.ajetd).

    RUN, where a command takes one: a run's id (in any case), or the name of its tmux
    session as `tmux ls` shows it."""


@main.command()
@click.option(
    "--backoff-scale",
    type=POSITIVE,
    default=1.0,
    show_default=True,
    help="Multiply the deep-check schedule (30 s .. 16 min); tests use 0.001 (> 0).",
)
@click.option(
    "--grace-int",
    type=NOT_NEGATIVE,
    default=30.0,
    show_default=True,
    help="Seconds after SIGINT before SIGTERM when stopping a run (>= 0).",
)
@click.option(
    "--grace-term",
    type=NOT_NEGATIVE,
    default=15.0,
    show_default=True,
    help="Seconds after SIGTERM before SIGKILL (>= 0).",
)
@click.option(
    "--hang-auto",
    type=POSITIVE,
    default=1800.0,
    show_default=True,
    help="Seconds without output that count as a hang when `hang.window` is auto (> 0).",
)
@click.option(
    "--liveness",
    type=POSITIVE,
    default=5.0,
    show_default=True,
    help="Seconds between checks that each run's tmux pane still exists; also the loop's "
    "longest sleep (exits, stops and inbox drops wake it at once; > 0).",
)
@click.option(
    "--gpu-period",
    type=POSITIVE,
    default=60.0,
    show_default=True,
    help="Seconds between GPU samples (utilisation, memory per run); every --gpu-young-period "
    "while some run is in its first 10 minutes (> 0).",
)
@click.option(
    "--gpu-young-period",
    type=POSITIVE,
    default=10.0,
    show_default=True,
    help="Seconds between GPU samples while some run is young (> 0).",
)
@click.option(
    "--gpu-free-threshold",
    type=Number(0.0, 1.0),
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
    type=POSITIVE,
    default=60.0,
    show_default=True,
    help="Seconds a hook may run before it is killed (> 0).",
)
@click.option(
    "--reports-grace",
    type=NOT_NEGATIVE,
    default=600.0,
    show_default=True,
    help="Seconds an ended run's reports wait for its full result dir before they are "
    "written to $AJETD_HOME/runs/<id>/ instead (>= 0).",
)
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    default="INFO",
    show_default=True,
    help="The daemon log's least severity.",
)
@click.option(
    "--log-max-bytes",
    type=click.IntRange(min=1024),
    default=16 << 20,
    show_default=True,
    help="With --detach: daemon.log is renamed daemon.log.1 (older ones .2, ...) and begun "
    "again once it would grow past this many bytes (>= 1024).",
)
@click.option(
    "--log-keep",
    type=click.IntRange(min=1, max=100),
    default=3,
    show_default=True,
    help="With --detach: the rotated daemon logs kept (1-100; the oldest beyond is removed).",
)
@click.option(
    "--log-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    hidden=True,  # what --detach starts the daemon with: $AJETD_HOME/daemon.log
)
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
    reports_grace: float,
    log_level: str,
    log_max_bytes: int,
    log_keep: int,
    log_file: Path | None,
    detach: bool,
) -> None:
    """Run the supervisor in the foreground (what systemd starts), or in the background."""
    from ajetd.adapters.tmuxsocket import socket_from_env

    socket = socket_from_env()  # a setting no tmux server can be made by: refused here, exit 1
    if detach:  # (before a daemon is started in the background only to die of it)
        _detach(click.get_current_context().params)
        return
    from ajetd.adapters import daemonlog
    from ajetd.adapters.nvml import FakeGpuError
    from ajetd.core.errors import StoreError
    from ajetd.core.policy import Timing
    from ajetd.daemon.loop import Daemon, DaemonConfig

    if log_file is None:  # in the foreground (systemd's journal keeps stderr)
        logging.basicConfig(level=log_level.upper(), format=daemonlog.FORMAT)
    else:
        daemonlog.log_to(log_file, log_level, log_max_bytes, log_keep)
    cfg = DaemonConfig(
        home=default_home(),
        tmux_socket=socket,
        backoff_scale=backoff_scale,
        timing=Timing(grace_int_s=grace_int, grace_term_s=grace_term, hang_auto_s=hang_auto),
        liveness_s=liveness,
        gpu_period_s=gpu_period,
        gpu_young_period_s=gpu_young_period,
        gpu_free_threshold=gpu_free_threshold,
        on_finish=on_finish,
        on_attention=on_attention,
        hook_timeout_s=hook_timeout,
        reports_grace_s=reports_grace,
    )
    try:
        Daemon(cfg).serve()
    except (StoreError, FakeGpuError) as exc:
        click.echo(f"ajetd: {exc}", err=True)
        sys.exit(1)


def _detach(params: dict[str, Any]) -> None:
    """`ajetd daemon --detach`: the same daemon with the same options, in the background."""
    from ajetd.cli import daemonctl

    home = open_home()
    args: list[str] = ["--log-file", str(home.log_file)]
    for name, value in params.items():
        if name not in ("detach", "log_file"):
            args += [f"--{name.replace('_', '-')}", str(value)]
    try:
        started = daemonctl.detach(home, args)
    except daemonctl.DaemonCtlError as exc:
        click.echo(f"ajetd: {exc}", err=True)
        sys.exit(1)
    click.echo(f"ajetd daemon started: pid {started.pid}, log {started.log_file}")
    if started.note:
        click.echo(f"ajetd: {started.note}", err=True)


@main.command()
@click.option(
    "--timeout", type=NOT_NEGATIVE, default=60.0, show_default=True, help="Seconds to wait for it."
)
def shutdown(timeout: float) -> None:
    """Stop the daemon cleanly (SIGTERM, then wait); runs go on in tmux and the next daemon
    takes them up again. The reports of runs that ended before it are written first (10 s
    at most); a run whose reports are left to the next daemon is named."""
    from ajetd.cli import daemonctl

    home = open_home()
    try:
        pid = daemonctl.shutdown(home, timeout)
    except daemonctl.DaemonCtlError as exc:
        click.echo(f"ajetd: {exc}", err=True)
        sys.exit(1)
    if pid is None:
        click.echo(f"no daemon is running on {home.root}")
        return
    click.echo(f"ajetd daemon (pid {pid}) stopped; runs go on in tmux")
    from ajetd.views.records import reports_left_line

    for run in daemonctl.reports_left(home):  # ended before the stop; the stop could not
        click.echo(reports_left_line(run))  # write their reports (walk98 F19)


for command in (
    runcmds.submit,
    runcmds.status,
    runcmds.wait,
    runcmds.stop,
    runcmds.logs,
    runcmds.attach,
    inspectcmds.lint,
    inspectcmds.diagnose,
    inspectcmds.diag,
    inspectcmds.gpus,
    prunecmd.prune,
    campaign,
):
    main.add_command(command)


def entry() -> None:
    """Entry point that turns stray AjetdErrors into one clear line: a file named on the
    command line that is not a regular one (a FIFO, a device) is a usage error (exit 2). A
    file system that refuses a read or write (read-only, full, a permission) is one line
    naming the file and the reason, exit 1, never a traceback."""
    from ajetd.adapters.regular import NotRegularError

    try:
        main()
    except NotRegularError as exc:
        click.echo(f"ajetd: {exc}", err=True)
        sys.exit(2)
    except AjetdError as exc:
        click.echo(f"ajetd: {exc}", err=True)
        sys.exit(1)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        click.echo(f"ajetd: {where}{exc.strerror or exc}", err=True)
        sys.exit(1)
