"""`ajetd status` on a terminal: gathers what the views need, draws them, and the live view.

The imperative shell around `statusview`: reads the home (runs, campaign records, what the
daemon published), the terminal's size and keys. Colours come from `rich`, imported only when
the output is a terminal (pipes get plain text and a fast start). `--watch` is a rich `Live`
on the alternate screen: each frame replaces the last in place (no flicker), every 2 s or at
once on a key; `q` or Ctrl-C ends it, `j`/`k` (or the arrow keys) choose the run whose last
output is shown.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import sys
import termios
import time
import tty
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ajetd.adapters.regular import load_record
from ajetd.adapters.store import Home
from ajetd.core.limits import BLUEPRINT_MAX_BYTES
from ajetd.core.model import Run, tmux_socket_of
from ajetd.diagnosis.scan import tail_bytes
from ajetd.diagnosis.text import tail_lines
from ajetd.views import listing as view
from ajetd.views import rundetail

if TYPE_CHECKING:
    from rich.text import Text

    from ajetd.core.exitfile import UnrecordedExit

REFRESH_S = 2.0
TAIL_BYTES = 64 * 1024
STYLES = {
    "attention": "bold white on red",
    "running": "bold green",
    "waiting": "yellow",
    "good": "green",
    "bad": "bold red",
    "dim": "dim",
    "header": "bold",
    "campaign": "cyan",
    "selected": "reverse",
}


def campaigns(home: Home) -> list[view.Campaign]:
    """Each campaign as its record holds it (written by the daemon's campaign runner)."""
    out = []
    for path in sorted((home.root / "campaigns").glob("*/state.json")):
        with contextlib.suppress(OSError, ValueError):
            data = load_record(path)  # larger than any record is: left out, never read
            if isinstance(data, dict):
                from ajetd.core.campaignrecord import check_stored  # yaml: only with campaigns

                check_stored(data)  # a damaged one is left out here (`campaign list` names it)
                out.append(view.Campaign.from_record(data))
    return out


def campaign_runs(home: Home, campaign_id: str) -> frozenset[str] | None:
    """The run ids of the campaign of this id (`campaignread.resolve_or_fail` gives it from
    a name), or None where it has no record (yet)."""
    for c in campaigns(home):
        if c.campaign_id == campaign_id:
            return c.run_ids
    return None


def output_tail(run: Run, count: int) -> tuple[str, ...]:
    """The last `count` lines the run's current trial printed, as a person saw them."""
    if run.trial is None or not run.result_dir or count <= 0:
        return ()
    log = Path(run.result_dir) / "logs" / f"trial-{run.trial.number}.log"
    return tuple(tail_lines(tail_bytes(log, TAIL_BYTES), count))


def extras(
    home: Home, run: Run, output_lines: int = 0, exited: UnrecordedExit | None = None
) -> rundetail.RunExtras:
    """What the run's view takes from beside its record. The next deep check only where a
    daemon runs: a stopped daemon's daemon.json still names one, and `status RUN` said
    `deep check in 11s` of a check no daemon would make (walk 90 F12)."""
    from ajetd.adapters.tmuxsocket import server_words

    up = home.daemon_running()
    checks = (home.daemon_info().get("deep_checks") or {}) if up else {}
    at = checks.get(run.run_id) if isinstance(checks, dict) else None
    return rundetail.RunExtras(
        tmux_words=server_words(
            tmux_socket_of(run, os.environ.get("AJETD_TMUX_SOCKET") or None), run.tmux_path
        ),
        next_check_at=float(at) if isinstance(at, (int, float)) else None,
        output=output_tail(run, output_lines),
        exited=exited,
        daemon_up=up,
    )


# written to a pipe or file: every line whole, as long as it needs, for grep (400 cut a
# failed run's reason mid-fix, walk88 F12); what a view shows is bounded below this (a
# blueprint, whose purpose is the longest text, is read up to BLUEPRINT_MAX_BYTES)
PIPE_WIDTH = BLUEPRINT_MAX_BYTES * 4


def detail(
    home: Home, run: Run, now: float, cols: int, exited: UnrecordedExit | None = None
) -> list[view.Line]:
    """`ajetd status RUN` (`exited`: its program's exit no daemon recorded yet)."""
    return rundetail.detail(run, now, cols, extras(home, run, exited=exited))


def width() -> int:
    """The terminal's width (`COLUMNS` first); a pipe gets whole lines, for grep."""
    if not os.environ.get("COLUMNS") and not sys.stdout.isatty():
        return PIPE_WIDTH
    return max(shutil.get_terminal_size((100, 24)).columns, 20)


def to_text(lines: Sequence[view.Line]) -> Text:
    from rich.text import Text

    text = Text(no_wrap=True, overflow="crop")
    for n, line in enumerate(lines):
        if n:
            text.append("\n")
        for part, style in line:
            text.append(part, " ".join(STYLES.get(s, "") for s in style.split()).strip())
    return text


def show(lines: Sequence[view.Line], stream: TextIO = sys.stdout) -> None:
    """Print a view: in colour on a terminal, plain otherwise."""
    if not stream.isatty() or os.environ.get("NO_COLOR"):
        stream.write(view.plain(lines) + "\n")
        return
    from rich.console import Console

    Console(file=stream, highlight=False, soft_wrap=True).print(to_text(lines))


def shown_ended(filters: view.Filters) -> int | None:
    """How many ended runs the view shows in full (the older ones are only counted), None
    for all: reading thousands of records in full is most of a big home's `status`."""
    return None if filters.all or filters.narrowed else filters.recent


def overview(
    home: Home, filters: view.Filters, cols: int, selected: str | None = None
) -> list[view.Line]:
    runs = home.listing(shown_ended(filters))
    up = home.daemon_running()
    return view.overview(
        runs,
        filters,
        time.time(),
        cols,
        up,
        home.daemon_info(),
        campaigns(home),
        selected,
        home.unrecorded_exits(runs, up),
    )


# -- the live view ----------------------------------------------------------------------------
@contextlib.contextmanager
def _keys() -> Iterator[bool]:
    """stdin in cbreak mode (keys arrive one by one, unechoed) while it is a terminal."""
    if not sys.stdin.isatty():
        yield False
        return
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        yield True
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _read_key(timeout: float, keys: bool) -> str:
    """The next key within `timeout` seconds ("" for none); arrows as `up` / `down`."""
    if not keys:
        time.sleep(timeout)  # nothing to read: only the clock moves the view
        return ""
    ready, _, _ = select.select([sys.stdin], [], [], timeout)
    if not ready:
        return ""
    key = os.read(sys.stdin.fileno(), 8).decode(errors="replace")
    return {"\x1b[A": "up", "\x1b[B": "down", "\x1bOA": "up", "\x1bOB": "down"}.get(key, key)


def frame(
    home: Home, filters: view.Filters, cols: int, rows: int, selected: str | None
) -> tuple[list[view.Line], list[str]]:
    """One screen of the live view and the order of the runs it shows (for j/k)."""
    runs = home.listing(shown_ended(filters))
    now = time.time()
    sel = view.select(runs, filters, now)
    order = [r.run_id for r in (*sel.live, *sel.ended)]
    chosen = selected if selected in order else (order[0] if order else None)
    up = home.daemon_running()
    exits = home.unrecorded_exits(runs, up)
    lines = view.overview(
        runs, filters, now, cols, up, home.daemon_info(), campaigns(home), chosen, exits
    )
    stamp = f"ajetd status --watch  {time.strftime('%H:%M:%S')}  j/k: choose a run  q: quit"
    lines = [[(view.cut(stamp, cols), "dim")], *lines]
    run = next((r for r in runs if r.run_id == chosen), None)
    if run is not None:
        room = max(rows - len(lines) - 6, 3)
        seen = extras(home, run, room, exits.get(run.run_id))
        detail = rundetail.detail(run, now, cols, seen, whole=False)
        head = [line for line in detail[:8] if line]
        out = [line for line in detail if line and line[0][0] == "LAST OUTPUT"]
        lines += [[], *head]
        if out:
            lines += detail[detail.index(out[0]) :]
    return lines[:rows], order


def watch(
    home: Home, filters: view.Filters, interval: float = REFRESH_S, selected: str | None = None
) -> None:
    """Redraw every `interval` seconds until `q` or Ctrl-C; `selected`: the run shown first.
    A terminal that cannot redraw in place (TERM=dumb: an editor's shell, a serial console),
    where rich's live display draws nothing at all, gets each frame printed below the last."""
    from rich.console import Console
    from rich.live import Live

    console = Console(highlight=False)
    live = (
        None if console.is_dumb_terminal else Live(console=console, screen=True, auto_refresh=False)
    )
    with _keys() as keys, live or contextlib.nullcontext(), contextlib.suppress(KeyboardInterrupt):
        while True:
            lines, order = frame(home, filters, console.width, console.height, selected)
            if selected not in order:
                selected = order[0] if order else None
            if live is None:
                console.print(to_text(lines))
                console.print()
            else:
                live.update(to_text(lines), refresh=True)
            key = _read_key(interval, keys)
            if key in ("q", "Q", "\x03"):
                break
            if order and key in ("j", "down", "k", "up"):
                at = order.index(selected) if selected in order else 0
                step = 1 if key in ("j", "down") else -1
                selected = order[(at + step) % len(order)]
