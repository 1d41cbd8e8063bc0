"""The commands on runs: `submit`, `status`, `wait`, `stop`, `logs`, `attach`.

`status`, `wait` and `stop` also take a campaign id (`c-` and six characters) and hand it to
`ajetd.cli.campaign`. What `submit`, `status` and `wait` import stays small (they must start
fast: tests/test_cli_imports.py); everything else is imported inside the command that needs it.

Exit codes: 0 ok, 1 failure, 2 usage error / unknown run; `wait` adds 2 for a run that needs
attention and 124 for its own timeout (DESIGN §3).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from ajetd.adapters.control import is_campaign_id
from ajetd.adapters.store import Home
from ajetd.cli.common import (
    DAEMON_ENDED,
    NOT_NEGATIVE,
    POLL_S,
    RUN,
    echo_json,
    interruptible,
    json_option,
    load_run,
    open_home,
    run_socket,
    say_socket_problem,
    with_live_session,
)
from ajetd.core.errors import FolderGoneError
from ajetd.core.shown import show

if TYPE_CHECKING:  # the client commands import only what they use (they must start fast)
    from ajetd.adapters.tmux import Tmux
    from ajetd.core.model import Run
    from ajetd.views.listing import Filters


@click.command()
@click.argument(
    "file", type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path)
)
def submit(file: Path) -> None:
    """Copy a blueprint (FILE, or - for standard input) into the inbox atomically; print the
    run id."""
    from ajetd.cli.submit import submit as submit_file  # also `ajetd.cli.entry`'s fast path

    run_id, warning = submit_file(file)  # a write that fails: AjetdError, exit 1
    click.echo(run_id)
    if warning:
        click.echo(warning, err=True)


def _check_watch(as_json: bool) -> None:
    """`--watch` redraws a terminal until a key ends it: into a pipe or a file it would write
    escape codes forever, and a script or an agent calling it would never get control back."""
    if as_json:
        raise click.UsageError("--watch and --json do not go together: --json prints once")
    if not sys.stdout.isatty():
        raise click.UsageError(
            "--watch needs a terminal and stdout is not one; programs: `ajetd status --json` "
            "(once), `ajetd wait RUN` (until a run ends)"
        )


def _check_one(**filters: object) -> None:
    """`status RUN` shows that run (or campaign) whatever a list filter says: one given with
    it would be ignored, and a script asking `status RUN --state running` would read a
    failed run, exit 0, as its answer. A usage error instead."""
    given = [name for name, value in filters.items() if value not in (None, False)]
    if given:
        opt = "--" + given[0].replace("show_all", "all")
        raise click.UsageError(
            f"{opt} chooses the runs of the list; `ajetd status RUN` shows that one run "
            "whatever it says: drop the RUN to filter the list (with --watch, the list beside it)"
        )


@click.command()
@click.argument("run_id", type=RUN, required=False, metavar="[RUN]")
@click.option("--all", "show_all", is_flag=True, help="Every ended run, not only the last 10.")
@click.option(
    "--state",
    "state",
    default=None,
    help="Only runs in this state or with this status: live, ended (or done), attention, "
    "queued, running, restarting, stopping, succeeded, failed, time_limit, plateau, stopped, "
    "rejected, lost.",
)
@click.option("--since", default=None, help="Only runs live or ended within this time (2d, 6h).")
@click.option(
    "--campaign", default=None, help="Only the runs of this campaign (its id or its name)."
)
@click.option("--watch", is_flag=True, help="Redraw every 2 s on a terminal until q or Ctrl-C.")
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
    if watch:
        _check_watch(as_json)
    elif run_id is not None:
        _check_one(show_all=show_all, state=state, since=since, campaign=campaign)
    if run_id is not None and is_campaign_id(run_id):
        from ajetd.cli.campaign import show_status

        show_status(run_id, as_json)
        return
    from ajetd.cli import statusterm
    from ajetd.views import listing as view
    from ajetd.views import records as status_view

    home = open_home()
    say_socket_problem()
    now = time.time()
    if run_id is not None and not watch:
        run = with_live_session(home, load_run(home, run_id))
        if run.active:  # the daemon's own trouble, where it leaves this run unwatched
            say_daemon_trouble(home, now)
        exited = home.unrecorded_exits([run], home.daemon_running()).get(run.run_id)
        if as_json:
            echo_json(status_view.run_json(run, now, exited))
        else:
            statusterm.show(statusterm.detail(home, run, now, statusterm.width(), exited))
        return
    filters = _status_filters(home, show_all, state, since, campaign)
    if watch:
        statusterm.watch(home, filters, selected=run_id and load_run(home, run_id).run_id)
        return
    if as_json:  # the list of runs stays the contract; the daemon's own trouble goes to stderr
        listed = home.listing()  # first: it finds the damaged records daemon_info names
        for line in view.daemon_lines(home.daemon_running(), home.daemon_info(), 10**4, now):
            click.echo("".join(text for text, _ in line), err=True)
        runs = view.for_json(listed, filters, now)
        exits = home.unrecorded_exits(runs, home.daemon_running())
        echo_json([status_view.run_json(r, now, exits.get(r.run_id)) for r in runs])
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

    if state is not None:  # as the table shows it (ATTENTION!) or as typed (Failed)
        state = state.strip().rstrip("!").lower()
    if state is not None and state not in view.STATES:
        raise click.BadParameter(
            f"{show(state)}; one of {', '.join(view.STATES)}", param_hint="--state"
        )
    since_s = None
    if since is not None:
        try:
            since_s = parse_duration(since)
        except DurationError as exc:
            raise click.BadParameter(str(exc), param_hint="--since") from exc
    runs = None
    if campaign is not None:
        from ajetd.cli.campaignread import resolve_or_fail

        campaign_id = resolve_or_fail(home, campaign, "--campaign")
        runs = statusterm.campaign_runs(home, campaign_id) or frozenset()  # none yet: in the inbox
    return view.Filters(all=show_all, state=state, since_s=since_s, campaign_runs=runs)


@click.command()
@click.argument("run_ids", metavar="RUN...", nargs=-1, required=True, type=RUN)
@click.option(
    "--timeout", type=NOT_NEGATIVE, default=None, help="Give up after S seconds (exit 124)."
)
@click.option(
    "--through-attention",
    is_flag=True,
    help="Wait on while the run needs attention (no exit 2): until it ends and its reports "
    "are written, or the timeout.",
)
@json_option
@interruptible("it goes on (`ajetd status ID` shows it)")
def wait(
    run_ids: tuple[str, ...], timeout: float | None, through_attention: bool, as_json: bool
) -> None:
    """Block until the run ends: 0 succeeded/time_limit/plateau, 1 failed/stopped/rejected/lost,
    2 needs attention, 124 timeout, 130 Ctrl-C (the run goes on). With --through-attention,
    attention does not end the wait (a hang flag, reports held by a full disk): only the
    run's end on disk or the timeout does. A campaign id waits for the campaign (`campaign
    wait`). Several runs: each is waited for (one timeout for all), a line each as it is
    known, and the exit is the worst of theirs (124, then 2, then 1); --json: a list."""
    if len(run_ids) == 1 and is_campaign_id(run_ids[0]):
        from ajetd.cli.campaignread import wait_campaign

        wait_campaign(run_ids[0], False, timeout, as_json)
    campaigns = [r for r in run_ids if is_campaign_id(r)]
    if campaigns:
        raise click.UsageError(
            f"{campaigns[0]} is a campaign: wait for it alone (`ajetd wait {campaigns[0]}`)"
        )
    from ajetd.views import records as status_view

    home = open_home()
    _refuse_unknown(home, run_ids)
    deadline = None if timeout is None else time.monotonic() + timeout
    ended: list[tuple[Run, int]] = []
    for run_id in dict.fromkeys(run_ids):  # each once, in the order given
        run, code = _wait_one(home, run_id, deadline, through_attention)
        ended.append((run, code))
        if not as_json:
            click.echo(status_view.wait_line(run, code))
    if as_json:
        now = time.time()
        exits = home.unrecorded_exits([run for run, _ in ended], home.daemon_running())
        shown = [status_view.run_json(run, now, exits.get(run.run_id)) for run, _ in ended]
        echo_json(shown[0] if len(run_ids) == 1 else shown)
    sys.exit(max((code for _, code in ended), key=WAIT_WORST.index))


WAIT_WORST = (0, 1, 2, 124)  # `wait`'s exits, least worrying first: several runs exit the worst


def _refuse_unknown(home: Home, run_ids: tuple[str, ...]) -> None:
    """A usage error (exit 2) naming every id no run has, before anything is waited for:
    `wait LIVE TYPO` blocked on the live run and said the typo only at its end, hours later,
    its exit 2 taken for the live run's (walk88 F5). A run whose folder is gone while the
    daemon holds it is a run (the wait waits on it); a damaged record is said at once."""
    from ajetd.core.errors import UnknownRunError

    unknown: dict[str, str] = {}  # id: the store's words on it
    for run_id in dict.fromkeys(run_ids):
        try:
            home.load_run(run_id)
        except UnknownRunError as exc:
            unknown[run_id] = str(exc)
        except FolderGoneError:
            continue
    if len(unknown) == 1:
        raise click.UsageError(f"{next(iter(unknown.values()))}; nothing was waited for")
    if unknown:
        named = ", ".join(show(r) for r in unknown)
        raise click.UsageError(
            f"no runs {named}; nothing was waited for (`ajetd status --all` lists the runs)"
        )


def _wait_one(
    home: Home, run_id: str, deadline: float | None, through_attention: bool
) -> tuple[Run, int]:
    """Wait for one run as `wait` does: the run as it stands then and the exit code."""
    from ajetd.core.model import WAIT_EXIT, State

    run, said_gone = _first_look(home, run_id, deadline)
    checked = said_exit = False
    while True:
        try:
            run = load_run(home, run_id) if checked else run
        except FolderGoneError as exc:  # the run goes on; so does the wait (on its last state)
            if not said_gone:
                click.echo(f"ajetd: {exc}; waiting", err=True)
            said_gone = True
        # attention: a live run's (a hang flag, a rebuilt record), or an ended one's whose
        # reports a full disk holds back: exit 2 at once, unless asked to wait through it
        stop_at_attention = bool(run.attention) and not through_attention
        if run.state is State.DONE and run.status is not None:
            if stop_at_attention:  # ended, but its reports could not be written (a full disk)
                return run, 2
            if not run.reports_pending:  # on record: finish.flag written, or never can be
                return run, WAIT_EXIT[run.status]
        if stop_at_attention:
            return run, 2
        if deadline is not None and time.monotonic() >= deadline:
            return run, 124
        if not checked:
            checked = True
            _say_if_no_daemon(home, f"run {run.run_id} is taken up when one starts")
            if home.daemon_running():  # not responding, not taking blueprints, a full disk
                say_daemon_trouble(home, time.time())
        if not said_exit and (exited := home.unrecorded_exits([run], home.daemon_running())):
            said_exit = True  # once: what is known without the daemon (its end waits for it)
            click.echo(f"ajetd: run {run.run_id} {exited[run.run_id].words()}", err=True)
        time.sleep(POLL_S)


def _first_look(home: Home, run_id: str, deadline: float | None) -> tuple[Run, bool]:
    """`wait`'s first read of the run, waiting on a folder removed by hand while the daemon
    holds the run (it makes it again); whether that was said. Its timeout: exit 124."""
    said = False
    while True:
        try:
            return load_run(home, run_id), said
        except FolderGoneError as exc:
            if not said:
                click.echo(f"ajetd: {exc}; waiting", err=True)
            said = True
            if deadline is not None and time.monotonic() >= deadline:
                click.echo(f"run {run_id}: its folder is still gone (wait timed out)")
                sys.exit(124)
            time.sleep(POLL_S)


def say_daemon_trouble(home: Home, now: float) -> None:
    """The daemon's own trouble on stderr, for a command about a run it leaves unwatched or
    untaken (`status RUN`, `wait`: walk 30, a wait was silent while the daemon was NOT
    RESPONDING or took no blueprint): its `daemon: ...` lines of the status header."""
    from ajetd.views import listing

    for line in listing.daemon_lines(home.daemon_running(), home.daemon_info(), 10**4, now):
        text = "".join(part for part, _ in line)
        if text.startswith("daemon: "):
            click.echo(text, err=True)


def _say_if_no_daemon(home: Home, what: str) -> None:
    """One line on stderr when no daemon runs on the home: a wait would otherwise block
    without a word (it still waits: a daemon started later takes the run up)."""
    if not home.daemon_running():
        click.echo(
            f"ajetd: no daemon is running on {home.root}; {what} "
            "(start it with `ajetd daemon --detach`); waiting",
            err=True,
        )


def _settled(run: Run) -> bool:
    """Ended and its reports written (finish.flag on disk), or held back with `attention`
    saying why (a full result dir); the record is written after the reports, so it is the
    truth and no flag is awaited that a refused result dir will never get."""
    return not run.active and (not run.reports_pending or run.attention is not None)


@click.command()
@click.argument("run_id", type=RUN, metavar="RUN")
@click.option("--no-wait", is_flag=True, help="Return once the request is filed.")
@click.option(
    "--timeout",
    type=NOT_NEGATIVE,
    default=120.0,
    show_default=True,
    help="Give up waiting for the run to end after S seconds (exit 124); the stop goes on.",
)
@json_option
@interruptible("the stop request stands (`ajetd status RUN` to see it)")
def stop(run_id: str, no_wait: bool, timeout: float, as_json: bool) -> None:
    """Stop a run (or a campaign, by its id) cleanly; results and finish.flag are still
    written. --json: the run's (campaign's) status object as it stands when stop returns."""
    if is_campaign_id(run_id):
        from ajetd.cli.campaign import stop_campaign

        stop_campaign(run_id, no_wait, timeout, as_json)
        return
    home = open_home()
    run = load_run(home, run_id)
    if not run.active:
        _stop_says(
            run, f"run {run_id} already ended: {run.status.value if run.status else ''}", as_json
        )
        return
    try:
        already = _already_stopping(home, run)
    except OSError as exc:  # not even an empty request file could be made
        _not_filed(run, exc, as_json)
    run = load_run(home, run_id)  # as it stands with the request filed
    if not home.daemon_running():
        click.echo(
            f"ajetd: no daemon is running on {home.root}; the run stops when one starts", err=True
        )
        _stop_says(run, "", as_json)
        sys.exit(1)
    if no_wait:
        said = f"run {run_id} is {already}" if already else f"stop requested for run {run_id}"
        _stop_says(run, said, as_json)
        return
    if already:  # a second `ajetd stop`: no second stop, its end waited for as the first's
        click.echo(f"ajetd: run {run_id} is {already}; waiting for it to end", err=True)
    deadline = time.monotonic() + timeout
    while not _settled(run := load_run(home, run_id)) and not _held_end(run):
        if not home.daemon_running():  # it died meanwhile: nothing goes on until the next
            click.echo(
                f"ajetd: {DAEMON_ENDED} on {home.root}; the run stops when one starts", err=True
            )
            _stop_says(run, "", as_json)
            sys.exit(1)
        if time.monotonic() >= deadline:
            click.echo(
                f"run {run_id} is still stopping after {timeout:g}s; the stop goes on "
                f"(`ajetd wait {run_id}` blocks until the run ended)",
                err=True,
            )
            _stop_says(run, "", as_json)
            sys.exit(124)
        time.sleep(POLL_S)
    _stop_says(run, f"run {run_id} {run.status.value if run.status else ''}: {run.reason}", as_json)
    if _held_end(run):
        click.echo(
            f"ajetd: run {run_id}'s end and its reports wait for room in $AJETD_HOME {home.root} "
            f"(full: `ajetd status` says how full); written once there is room (`ajetd wait "
            f"{run_id}` returns then)",
            err=True,
        )
    if run.attention:
        click.echo(f"ajetd: run {run_id} needs attention: {run.attention}", err=True)


def _held_end(run: Run) -> bool:
    """The run ended (stopped) and its end is held in the daemon's memory, its record and
    reports waiting for room in a full home: the stop is done, and `stop` says so and where
    the rest waits, where it said `still stopping` until its timeout (124)."""
    from ajetd.core import unsaved

    return not run.active and unsaved.NOTE in run.warnings


def _not_filed(run: Run, exc: OSError, as_json: bool) -> NoReturn:
    """No stop request could be filed (a home with no inode left, read-only): said as it is
    (the run goes on, nothing was stopped) with how to stop its program by hand; exit 1."""
    import shlex

    from ajetd.adapters.diskfull import free_space
    from ajetd.adapters.tmuxsocket import SocketSettingError, server_words
    from ajetd.core.model import tmux_socket_of

    where = Path(str(exc.filename or "")).parent
    try:
        socket = run_socket(run)
    except SocketSettingError:  # not what this says: the words as the record has them
        socket = tmux_socket_of(run, None)
    tmux = shlex.join(["tmux", *server_words(socket, run.tmux_path)])
    by_hand = (
        f"`{tmux} send-keys -t {run.session} C-c` (the program's Ctrl-C)"
        if run.session
        else "ending its program yourself"
    )
    click.echo(
        f"ajetd: cannot file the stop request {exc.filename}: {exc.strerror or exc} "
        f"({free_space(where)} free); nothing was stopped and run {run.run_id} goes on. Free "
        f"some room in $AJETD_HOME and run `ajetd stop {run.run_id}` again, or stop it by "
        f"hand with {by_hand}",
        err=True,
    )
    _stop_says(run, "", as_json)
    sys.exit(1)


def _already_stopping(home: Home, run: Run) -> str | None:
    """Files this `ajetd stop`'s request unless one stands, and says `already stopping
    (...)` where the run was: stopping for an earlier `ajetd stop` (its request still filed,
    or taken by the daemon: no second request, no second stop) or for the daemon's own reason
    (the time limit, the hang rule, a plateau: the request is filed, a user's stop taking over
    the hang rule's); None where this call began the stop."""
    from ajetd.core.model import State, StopCause
    from ajetd.core.timefmt import iso

    stopping = run.state is State.STOPPING and run.stop_cause is not None
    began: float | None = None
    if stopping and run.stop_cause is StopCause.USER:
        began = run.stop_began_at
    elif not home.ask_stop(run.run_id, f"{time.time()}\n"):
        try:
            began = home.stop_request(run.run_id).stat().st_mtime
        except OSError:  # taken by the daemon meanwhile: on record now
            began = run.stop_began_at
    else:
        if not stopping or run.stop_cause is None:
            return None
        cause = {
            StopCause.TIME_LIMIT: "its time limit",
            StopCause.HANG: "the hang rule",
            StopCause.PLATEAU: "its plateau rule",
            StopCause.PROMPT: "wandb's login prompt",
        }.get(run.stop_cause, run.stop_cause.value)
        return f"already stopping (for {cause})"
    at = f" at {iso(began)}" if began is not None else ""
    return f"already stopping (a stop was asked{at}, by another `ajetd stop`)"


def _stop_says(run: Run, line: str, as_json: bool) -> None:
    """`stop`'s answer on stdout: its line, or with --json the run's status object (the one
    `status RUN --json` prints)."""
    from ajetd.views import records as status_view

    if as_json:
        echo_json(status_view.run_json(run, time.time()))
    elif line:
        click.echo(line)


@click.command()
@click.argument("run_id", type=RUN, metavar="RUN")
@click.option("-f", "--follow", is_flag=True, help="Keep printing as the run writes.")
@interruptible("the run goes on (`ajetd status RUN` shows it)")
def logs(run_id: str, follow: bool) -> None:
    """The run's full output, every trial in order. A run that ended without a trial (one
    rejected) has none: exit 1, with its reason on stderr. With -f: from a queued run's first
    trial through every relaunch to the run's end."""
    home = open_home()
    run = load_run(home, run_id)
    printed: dict[int, int] = {}
    _print_new(home, run, printed)
    if not follow and run.active and not run.trials:  # an empty stdout alone says nothing
        click.echo(
            f"ajetd: run {run_id} is {_why(run)}; no trial has started yet, so it has no "
            f"output yet (`ajetd logs {run_id} -f` waits for it)",
            err=True,
        )
    while follow and run.active:
        time.sleep(0.25)
        run = load_run(home, run_id)  # before the logs: once it has ended, they are whole
        _print_new(home, run, printed)
    if not run.trials and not run.active:  # also a queued run followed until it was refused
        ended = run.status.value if run.status else run.state.value
        how = "was rejected" if ended == "rejected" else f"ended ({ended})"
        click.echo(
            f"ajetd: run {run_id} {how}: {run.reason}; no trial ran, so it has no output",
            err=True,
        )
        sys.exit(1)
    gone = _logs_gone(home, run)
    for number, path in gone:  # an empty stdout alone read as "the program printed nothing"
        click.echo(
            f"ajetd: trial {number}'s log {path} is not there (its result dir moved or "
            "removed?): its output cannot be shown",
            err=True,
        )
    if gone:
        sys.exit(1)


def _logs_gone(home: Home, run: Run) -> list[tuple[int, str]]:
    """The started trials whose log is not where the run keeps it (its result dir, or where
    its log folder vanished and was not made again, ajetd's spare: `output_log`)."""
    from ajetd.adapters.trialfiles import output_log

    found = ((t.number, output_log(home, run, t.number)) for t in run.trials if t.started_at)
    return [(number, str(path)) for number, path in found if not os.path.lexists(path)]


def _print_new(home: Home, run: Run, printed: dict[int, int]) -> None:
    """Each trial's output not printed yet (`printed`: bytes already out, by trial number),
    in trial order (a log made again, or the spare, starts with the old text: read on)."""
    from ajetd.adapters.trialfiles import output_log

    out = sys.stdout.buffer
    for trial in run.trials:
        path = output_log(home, run, trial.number)
        done = printed.get(trial.number, 0)
        try:
            with open(path, "rb") as handle:
                handle.seek(done)
                while chunk := handle.read(1 << 20):  # a log of any size, in bounded pieces
                    if chunk.endswith(b"\r"):  # its `\n` may be in the next read
                        chunk = chunk[:-1]
                        handle.seek(-1, os.SEEK_CUR)
                        if not chunk:
                            break
                    # the terminal's line ends (the pty's `\r\n` for each `\n`) as the
                    # program printed them; a `\r` redraw stays
                    out.write(chunk.replace(b"\r\n", b"\n"))
                    done += len(chunk)
        except FileNotFoundError:
            continue
        printed[trial.number] = done
    out.flush()


def _session_alive(tmux: Tmux, run: Run) -> None:
    """Exit 1 saying so when the run's session is not on the server (lost, closed after the
    run ended), rather than leave the user with tmux's bare "can't find session"."""
    from ajetd.core.errors import TmuxError

    try:
        alive = run.session in tmux.session_names()
    except TmuxError:
        return  # tmux itself will say what is wrong
    if not alive:
        raise click.ClickException(
            f"run {run.run_id}'s tmux session {run.session} is gone ({_why(run)}); its "
            f"output: ajetd logs {run.run_id}"
        )


def _why(run: Run) -> str:
    """`queued: waiting for 1 GPU(s) ...`, `done, lost: ...`: where the run stands."""
    why = run.state.value + (f", {run.status.value}" if run.status else "")
    return why + (f": {run.reason}" if run.reason else "")


@click.command()
@click.argument("run_id", type=RUN, metavar="RUN")
@interruptible("the run goes on (`ajetd status RUN` shows it)")
def attach(run_id: str) -> None:
    """`tmux attach` to the run's session (Ctrl-b d to detach); a queued run's once it
    starts."""
    from ajetd.adapters.tmux import Tmux

    home = open_home()
    run = load_run(home, run_id)
    tmux = Tmux(run_socket(run), path=run.tmux_path)
    inside = "switch-client" in tmux.attach(run.session or "-")[0]  # needs no terminal
    if not inside and not sys.stdin.isatty():  # tmux would only say "not a terminal"
        raise click.UsageError(
            f"attach needs a terminal and stdin is not one; to read the run's output: "
            f"ajetd logs {run_id} (-f to follow), or ajetd status {run_id}"
        )
    if not run.session and run.active:
        click.echo(f"ajetd: run {run_id} is {_why(run)}; attaching once it starts", err=True)
        while not run.session and run.active:
            time.sleep(0.25)
            run = load_run(home, run_id)
    if not run.session:  # it ended without one: exit 1, saying how
        raise click.ClickException(f"run {run_id} has no tmux session ({_why(run)})")
    run = with_live_session(home, run)  # renamed by hand since: the name tmux has now
    tmux = Tmux(run_socket(run), path=run.tmux_path)  # once started
    argv, env = tmux.attach(run.session)
    _session_alive(tmux, run)
    os.execvpe(argv[0], argv, env)  # noqa: S606 - argv is built by the tmux module, not a shell
