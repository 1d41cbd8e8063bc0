"""What every command shares: the home, a run loaded by its id (an unknown one is a usage
error), and `--json`."""

from __future__ import annotations

import functools
import json
import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ajetd.adapters.store import Home, default_home
from ajetd.cli import entry
from ajetd.core.durations import MAX_DURATION_S
from ajetd.core.errors import UnknownRunError
from ajetd.core.naming import SESSION_PREFIX
from ajetd.core.shown import SHOW_CHARS, show

if TYPE_CHECKING:  # the client commands import only what they use (they must start fast)
    from ajetd.core.model import Run

F = TypeVar("F", bound=Callable[..., Any])
POLL_S = 0.1


class Number(click.FloatRange):
    """A number in a range, and a number at all: click's FloatRange lets `nan` through (every
    comparison with it is false) and `inf` (no upper end), which a sleep cannot take (`ajetd
    daemon --liveness nan` died in its first tick with a traceback) and a wait reads as
    never (`wait --timeout nan` waited for ever); a value past the range's end overflows the
    same way (`--liveness 1e308`). Each is a usage error (exit 2) naming the option."""

    name = "number"

    def _describe_range(self) -> str:
        """The range the help shows (`[x>0]`), none for a number without bounds: click's
        own said `[x<=None]` (`campaign set --target-metric`, walk97b F10)."""
        if self.min is None and self.max is None:
            return ""
        return str(super()._describe_range())

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            number = super().convert(value, param, ctx)
        except click.BadParameter:  # click's message holds the value whole (100 KB of it)
            if isinstance(value, str) and len(value) > SHOW_CHARS:
                self.fail(f"{show(value)} is not a number", param, ctx)
            raise
        if not math.isfinite(number):
            self.fail(f"{show(value)} is not a finite number", param, ctx)
        return number


# Durations, scales and timeouts on the command line: a bad one is a usage error (exit 2),
# not a daemon that spins (0 s between checks), a wait that never waits (a negative one) or
# a sleep that overflows (more than a year of seconds, as a blueprint's durations are bound).
POSITIVE = Number(min=0.0, min_open=True, max=MAX_DURATION_S)
NOT_NEGATIVE = Number(min=0.0, max=MAX_DURATION_S)


INTERRUPTED = entry.INTERRUPTED


def interruptible(what: str) -> Callable[[F], F]:
    """A command that blocks (wait, stop): Ctrl-C ends the waiting with exit 130 and one line
    saying that `what` goes on, not click's `Aborted!` with exit 1, which a script cannot
    tell from a run that failed."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except KeyboardInterrupt:
                click.echo(f"ajetd: interrupted; {what}", err=True)
                sys.exit(INTERRUPTED)

        return run  # type: ignore[return-value]

    return wrap


def json_option(fn: F) -> F:
    """Every command that shows data takes --json."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for programs.")(fn)


def open_home() -> Home:
    """The home this command works on: $AJETD_HOME, or ~/.ajetd; a StoreError (exit 1) when
    it is a file, not a folder."""
    home = Home(default_home())
    home.check()
    return home


_MAX_HANDLE = 200  # longer than any run id or session name: looked up as it is


def resolve_run(text: str) -> str:
    """A run as a person names it, as its id: the id in any case (ids are lower case), or
    the name of its tmux session as `tmux ls` shows it (`ajet_...`): the live run that has
    it, else the newest that had it (a name is free again once its session closed). Any
    other text is given back as it is, for the command's own words on it (a campaign id,
    an unknown id). Two live runs with one session name (on two tmux servers): refused,
    naming both ids."""
    from ajetd.core.naming import RUN_ID

    if RUN_ID.match(text.lower()):
        return text.lower()
    if not text.startswith(SESSION_PREFIX) or len(text) > _MAX_HANDLE:
        return text
    runs = [r for r in open_home().load_runs() if r.session == text]
    live = [r for r in runs if r.active]
    if len(live) > 1:
        ids = ", ".join(sorted(r.run_id for r in live))
        raise click.UsageError(
            f"{len(live)} live runs have the tmux session {show(text)} (on different tmux "
            f"servers): {ids}; name the run by its id"
        )
    chosen = live or runs
    if not chosen:
        raise click.UsageError(
            f"no run has the tmux session {show(text)}; `ajetd status` lists the runs"
        )
    return max(chosen, key=lambda r: r.submitted_at).run_id


class RunHandle(click.ParamType):  # type: ignore[type-arg]
    """A command's RUN argument: `resolve_run` at parse time, so every later look of the
    command (its reads, its messages) uses the id."""

    name = "RUN"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        return resolve_run(str(value))


RUN = RunHandle()


def load_run(home: Home, run_id: str) -> Run:
    try:
        return home.load_run(run_id)
    except UnknownRunError as exc:
        raise click.UsageError(str(exc)) from exc


def with_live_session(home: Home, run: Run) -> Run:
    """The run with its tmux session as tmux calls it now: its trial's pane found by its
    script (`tmux.find_pane`, as the daemon finds it), whose session a user may have renamed
    (`tmux rename-session`) since the daemon last listed the panes (it takes the new name
    within a minute). One `list-panes` on the run's server, asked only where the session is
    there to attach to; the record as it is where tmux does not answer or has no such pane."""
    from ajetd.core import model

    if run.trial is None or not run.session or (not run.active and run.session_closed):
        return run
    from ajetd.adapters.tmux import Tmux, find_pane
    from ajetd.adapters.tmuxsocket import SocketSettingError
    from ajetd.core.errors import TmuxError

    try:
        panes = Tmux(run_socket(run), path=run.tmux_path).panes()
    except (TmuxError, SocketSettingError):  # `status` says what is wrong with the setting
        return run
    pane = find_pane(panes, home.trial_file(run.run_id, run.trial.number, "sh"))
    return run if pane is None else model.session_renamed(run, pane.session)


def run_socket(run: Run) -> str | None:
    """The `tmux -L` name of the run's server (None: the default one): its record's, or
    AJETD_TMUX_SOCKET's for a record older than the field (`SocketSettingError` where that
    names no server tmux could make: `tmuxsocket.socket_problem`)."""
    from ajetd.adapters.tmuxsocket import socket_from_env
    from ajetd.core.model import tmux_socket_of

    return tmux_socket_of(run, None if run.tmux_socket else socket_from_env())


def say_socket_problem(home: Home | None = None) -> None:
    """One line on stderr where AJETD_TMUX_SOCKET (or TMUX_TMPDIR) names no server tmux could
    make: a daemon started with it refuses to start (`home`: only where none runs on it)."""
    from ajetd.adapters.tmuxsocket import socket_note

    note = socket_note()
    if note is not None and (home is None or not home.daemon_running()):
        click.echo(f"ajetd: {note}", err=True)


def echo_json(data: Any) -> None:
    """Indented JSON, non-ASCII kept as it is."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


# `stop` waiting for the end while the daemon died (kill -9, OOM): it said "the stop goes on"
# at its timeout, where nothing went on (walk87 F15)
DAEMON_ENDED = "the daemon ended while the stop waited (its request stands)"
