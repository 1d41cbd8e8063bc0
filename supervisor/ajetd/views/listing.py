"""What `ajetd status` shows a person: which runs, in which order, in how many columns; pure.

The default view answers "what is going on now": live runs first (attention, then running,
stopping, restarting, then queued; those that wait in the order they are launched, each
queued one's note saying its place), then the most recent ended runs, newest first; filters
narrow it (`--all`, `--state`, `--since`, `--campaign`). The table is fitted to the terminal's
width (never wrapped): fixed columns keep their natural width, the session name takes what is
left and is shortened in the middle, and every line is cut to the width as a last resort.

Lines are lists of (text, style) segments; `plain` joins them for pipes and files, and the
terminal renderer (statusterm) gives the styles to rich. No I/O here: the caller passes the
runs, the clock, the daemon's published info and the terminal width.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ajetd.core import gpuuse, model
from ajetd.core.campaignstop import shown_progress
from ajetd.core.durations import format_duration
from ajetd.core.exitfile import UnrecordedExit
from ajetd.core.model import Run, State, Status
from ajetd.core.unsaved import NOTE, REFUSED, ROOM_BACK
from ajetd.frameworks.valresults import last_value, metric_series, shown_metric, shown_value
from ajetd.views.records import fixes_said, reports_left_line, shown_state

Segment = tuple[str, str]  # (text, style name; "" for none)
Line = list[Segment]

SPARK = "▁▂▃▄▅▆▇█"
RECENT = 10  # ended runs in the default view
RECENT_CAMPAIGNS = 3  # ended campaigns in the default view (live ones always)
SPARK_POINTS = 8
MIN_SESSION = 8
GAP = "  "
# Order of live runs: those that need a person first, then what runs, then what waits.
_LIVE_RANK = {"attention": 0, "running": 1, "stopping": 2, "restarting": 3, "queued": 4}
STATES = ("live", "ended", "attention", *(s.value for s in (*State, *Status)))


@dataclass(frozen=True)
class Filters:
    """The user's filters: `--all`, `--state S`, `--since D` (seconds), `--campaign C` (the
    campaign's run ids; None when not asked for)."""

    all: bool = False
    state: str | None = None
    since_s: float | None = None
    campaign_runs: frozenset[str] | None = None
    recent: int = RECENT

    @property
    def narrowed(self) -> bool:
        return self.state is not None or self.since_s is not None or self.campaign_runs is not None


@dataclass(frozen=True)
class Selection:
    live: list[Run]
    ended: list[Run]
    hidden: int = 0  # ended runs that matched but fell beyond `recent`
    # each waiting run's place in the launch order (1: launched first), among every run
    # listed, whatever the filters keep
    places: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Campaign:
    """One campaign as its record (`campaigns/<id>/state.json`) holds it."""

    campaign_id: str
    progress: str
    name: str = ""
    phase: str = "running"
    status: str = ""
    best: float | None = None
    best_name: str = ""
    done: bool = False
    run_ids: frozenset[str] = field(default_factory=frozenset)
    started_at: float = 0.0
    ended_at: float | None = None

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Campaign:
        best = data.get("best")
        return cls(
            campaign_id=str(data.get("campaign_id", "?")),
            progress=shown_progress(
                str(data.get("status") or ""),
                str(data.get("progress") or ""),
                str(data.get("reason") or ""),
            ),
            name=str(data.get("name") or ""),
            phase=str(data.get("phase") or "running"),
            status=str(data.get("status") or ""),
            best=float(best) if isinstance(best, (int, float)) else None,
            best_name=str(data.get("best_name") or ""),
            done=bool(data.get("done")),
            started_at=_seconds(data.get("started_at")) or 0.0,
            ended_at=_seconds(data.get("ended_at")),
            run_ids=frozenset(
                str(e["run_id"])
                for e in data.get("experiments") or ()
                if isinstance(e, dict) and e.get("run_id")
            ),
        )

    def line(self) -> str:
        """`campaign ID (name) phase (status): progress; best X (experiment)`, and `[done]`
        only where its phase does not say so already (walk92 F9: "done (completed): ...
        [done]")."""
        phase = self.phase + (f" ({self.status})" if self.status else "")
        progress = " ".join((self.progress or "starting").split())
        text = f"campaign {self.campaign_id} ({self.name or '?'}) {phase}: {progress}"
        if self.best is not None:
            text += f"; best {self.best:g} ({self.best_name})"
        return text + (" [done]" if self.done and self.phase != "done" else "")


def _seconds(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def campaign_matches(c: Campaign, f: Filters, now: float) -> bool:
    """The runs' filters, for a campaign's line: one not done is live, a done one ended (its
    phase and status are its other state words); `--since` keeps an ended one by its end."""
    if f.campaign_runs is not None and c.run_ids != f.campaign_runs:
        return False
    if f.state is not None and f.state not in (
        "live" if not c.done else "ended",
        "done" if c.done else "live",
        c.phase,
        c.status,
    ):
        return False
    if f.since_s is not None and c.done:
        return (c.ended_at or c.started_at) >= now - f.since_s
    return True


def state_word(run: Run) -> str:
    """`attention`, the live state, or the terminal status."""
    if run.state is State.DONE:
        return run.status.value if run.status else "done"
    return "attention" if run.attention else shown_state(run)


def matches(run: Run, f: Filters, now: float) -> bool:
    if f.campaign_runs is not None and run.run_id not in f.campaign_runs:
        return False
    if f.state is not None:
        word = state_word(run)
        wanted = f.state
        if not (
            word == wanted
            or (wanted == "live" and run.active)
            or (wanted == "ended" and not run.active)
            or (wanted == "done" and not run.active)
            or (wanted == shown_state(run))
        ):
            return False
    if f.since_s is not None and not run.active:
        return (run.ended_at or run.submitted_at) >= now - f.since_s
    return True


def _live_key(run: Run) -> tuple[int, float, str]:
    """Within their rank, runs that wait in the order they are launched (`launch_order`),
    the others newest first."""
    rank = _LIVE_RANK.get(state_word(run), 5)
    if run.state in model.WAITING and not run.attention:
        return rank, *model.launch_order(run)
    return rank, -(run.started_at or run.submitted_at), run.run_id


def launch_places(runs: Iterable[Run]) -> dict[str, int]:
    """Each waiting run's place in the launch order (1: the next launched)."""
    waiting = sorted((r for r in runs if r.state in model.WAITING), key=model.launch_order)
    return {r.run_id: i for i, r in enumerate(waiting, 1)}


def select(runs: Iterable[Run], f: Filters, now: float) -> Selection:
    """Live runs first, then ended runs newest first (`recent` of them unless `--all` or a
    filter narrows the view)."""
    every = list(runs)
    chosen = [r for r in every if matches(r, f, now)]
    live = sorted((r for r in chosen if r.active), key=_live_key)
    ended = sorted(
        (r for r in chosen if not r.active),
        key=lambda r: (r.ended_at or r.submitted_at, r.run_id),
        reverse=True,
    )
    places = launch_places(every)
    if f.all or f.narrowed:
        return Selection(live, ended, places=places)
    return Selection(live, ended[: f.recent], max(0, len(ended) - f.recent), places)


def for_json(runs: Iterable[Run], f: Filters, now: float) -> list[Run]:
    """`status --json`: every run that matches, in the record order (all runs by default)."""
    return [r for r in runs if matches(r, f, now)]


# -- cells ------------------------------------------------------------------------------------
SPARK_MIN_SPAN = 0.02  # of the values' magnitude: a smaller spread is drawn as flat as it is


def sparkline(values: Sequence[float]) -> str:
    """One bar per value, the lowest value the lowest bar. The scale spans at least
    `SPARK_MIN_SPAN` of the values' magnitude (the largest absolute value), so noise (0.6038
    to 0.6049: 0.2 %) reads as the flat line it is, not as full swings; a spread wider than
    that uses every bar. A value that is no finite number is drawn as the lowest bar."""
    finite = [v for v in values if math.isfinite(v)]
    size = max((abs(v) for v in finite), default=0.0)
    if size == 0.0:  # nothing finite, or all zero: flat
        return SPARK[0] * len(values)
    scaled = [v / size for v in finite]  # in [-1, 1]: no spread overflows
    lo, hi = min(scaled), max(scaled)
    span = max(hi - lo, SPARK_MIN_SPAN)
    top = len(SPARK) - 1

    def bar(v: float) -> str:
        if not math.isfinite(v):
            return SPARK[0]
        level = (v / size - lo) / span * top + 1e-9  # the division's last bits not counted
        return SPARK[min(top, max(0, int(level)))]

    return "".join(bar(v) for v in values)


def shorten(text: str, width: int) -> str:
    """`text` in at most `width` characters, cut in the middle (both ends of a session name
    say something: its purpose and its `_2`)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    head = (width - 1 + 1) // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _time_cell(run: Run, now: float) -> str:
    if run.active:
        if run.started_at is None:
            return f"waits {format_duration(now - run.submitted_at)}"
        used = format_duration(run.time_used(now))
        return f"{used}/{format_duration(run.max_time_s)}" if run.max_time_s else used
    return f"{format_duration(now - (run.ended_at or run.submitted_at))} ago"


def _metric_cell(run: Run) -> str:
    metric = run.metric if run.metric in run.metrics else shown_metric(run.history, run.metric)
    series = metric_series(list(run.history), metric)[-SPARK_POINTS:]
    # the series' last value (the first benchmark's: a run validated on several has its
    # latest record from another, which may lack the metric, and showed `-`), else the latest
    value = series[-1] if series else run.metrics.get(metric)
    last = last_value(list(run.history), metric)
    if last is not None and not math.isfinite(last):  # diverged: said, never its last finite
        return f"{metric}={shown_value(last)} {sparkline(series)}".rstrip()
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        # its newest record held on a full home: not `-`, as if it had none (walk92 F9)
        return "in memory" if NOTE in run.warnings else "-"
    shown = f"{value:.4f}" if metric == "mean_reward" else f"{metric}={value:.4f}"
    return f"{shown} {sparkline(series)}".rstrip()


def gpu_cell(run: Run) -> str:
    if run.state is State.RUNNING and run.gpu_stats.gpus:
        return gpuuse.short(run.gpu_stats)
    if run.gpu_ids == ():
        return "cpu"
    return ",".join(map(str, run.gpu_ids)) if run.gpu_ids else "-"


def state_style(word: str) -> str:
    return {
        "attention": "attention",
        "running": "running",
        "stopping": "waiting",
        "restarting": "waiting",
        "queued": "waiting",
        "succeeded": "good",
        "plateau": "good",
        "time_limit": "good",
        "failed": "bad",
        "lost": "bad",
        "rejected": "bad",
        "stopped": "dim",
    }.get(word, "")


HEADER = ("RUN", "STATE", "T", "TIME", "MEAN_REWARD", "GPU", "SESSION")
_DROP_ORDER = (5, 4)  # columns given up, in this order, when the width is too small


def _row(run: Run, now: float) -> list[str]:
    word = state_word(run)
    return [
        run.run_id,
        "ATTENTION!" if word == "attention" else word,
        str(len(run.trials)),
        _time_cell(run, now),
        _metric_cell(run),
        cut(gpu_cell(run), 16),
        run.session or "-",
    ]


def _fit(rows: list[list[str]], width: int) -> tuple[list[int], int]:
    """Column widths (0: dropped) and the session column's width for `width` characters."""
    keep = list(range(len(HEADER) - 1))
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]

    def session_room() -> int:
        return width - sum(widths[i] for i in keep) - len(GAP) * len(keep)

    for column in _DROP_ORDER:
        if session_room() >= MIN_SESSION:
            break
        keep.remove(column)
    out = [widths[i] if i in keep else 0 for i in range(len(HEADER) - 1)]
    return out, max(min(session_room(), widths[-1]), 1)


def table(sel: Selection, now: float, width: int, selected: str | None = None) -> list[Line]:
    """The runs table, header first; `selected` (a run id) is highlighted (the live view)."""
    runs = [*sel.live, *sel.ended]
    body = [_row(r, now) for r in runs]
    header = list(HEADER)
    # a metric of its own name shown (`accuracy=`), or judged by one before it has a value
    # (a NeMo-RL run's `accuracy`: walk92 F9, headed MEAN_REWARD while its records were held)
    if any("=" in row[4] for row in body) or any(r.metric != "mean_reward" for r in runs):
        header[4] = "METRIC"
    rows = [header, *body]
    widths, session_w = _fit(rows, width)
    lines: list[Line] = []
    for n, row in enumerate(rows):
        run = runs[n - 1] if n else None
        segments: Line = []
        for i, cell in enumerate(row[:-1]):
            if not widths[i]:
                continue
            style = (
                "header"
                if run is None
                else (state_style(cell.lower().rstrip("!")) if i == 1 else "")
            )
            segments.append((cell.ljust(widths[i]), style))
            segments.append((GAP, ""))
        segments.append((shorten(row[-1], session_w), "header" if run is None else ""))
        if run is not None and run.run_id == selected:
            segments = [(text, f"{style} selected".strip()) for text, style in segments]
        lines.append(segments)
    if sel.live and sel.ended:
        lines.insert(1 + len(sel.live), [(cut("── ended, newest first", width), "dim")])
    if not runs:
        lines.append([("(no runs match)", "dim")])
    return lines


# ended runs whose one line says why under the table: an end that went wrong (a success, a
# limit, a plateau or a stop asked for is the table's word alone)
_SAY_WHY = frozenset({Status.FAILED, Status.LOST, Status.REJECTED})


def notes(
    sel: Selection,
    width: int,
    exits: Mapping[str, UnrecordedExit] | None = None,
    daemon_up: bool = True,
) -> list[Line]:
    """Under the table: why runs wait, what needs attention, which live runs' programs
    exited with no daemon to record it (`exits`), which ended runs' reports no daemon is
    there to write (`daemon_up`: a stop right after their end, walk98 F19), why shown ended
    runs failed, were lost or rejected (their reason, one line cut to the width), which
    others ran with fixes (a success whose batch size ajetd halved is not the blueprint's),
    what is hidden."""
    lines: list[Line] = []
    for run in [] if daemon_up else sel.ended:  # held ones say so in their attention
        if run.reports_pending and not run.attention:
            lines.append([(cut(reports_left_line(run), width), "attention")])
    for run in [*sel.live, *(r for r in sel.ended if r.attention)]:  # ended: reports held
        exited = (exits or {}).get(run.run_id)
        if exited is not None:
            lines.append([(cut(f"{run.run_id} {exited.words()}", width), "attention")])
        if run.attention:
            text = f"! attention {run.run_id}: {run.attention}"
            lines.append([(cut(text, width), "attention")])
        elif shown_state(run) == State.QUEUED.value and run.reason:
            place = sel.places.get(run.run_id)
            nth = f" ({ordinal(place)} to launch)" if place else ""
            text = f"queued {run.run_id}{nth}: {run.reason}"
            lines.append([(cut(text, width), "waiting")])
    for run in sel.ended:
        if run.status in _SAY_WHY and run.reason and not run.attention:
            text = f"{run.status.value} {run.run_id}: {' '.join(run.reason.split())}"
            lines.append([(cut(text, width), state_style(run.status.value))])
        elif run.fixes and run.status is not None:  # a success that ran with changes
            text = f"{run.status.value} {run.run_id}{fixes_said(run)}"
            lines.append([(cut(text, width), "waiting")])
    if sel.hidden:
        text = f"{sel.hidden} older ended run(s) not shown (--all shows every run)"
        lines.append([(cut(text, width), "dim")])
    return lines


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


DAEMON_DOWN = "not running (start it with `ajetd daemon --detach`)"
NOT_TAKING = "NOT TAKING BLUEPRINTS"


def waiting_cause(up: bool, info: dict[str, Any]) -> str:
    """Why a blueprint waits in the inbox, as the status header says it (the daemon down, the
    home or inbox unsafe: `daemon.json`'s problems); empty when nothing is known to stop it."""
    if not up:  # a stopped daemon's problems are of the past: the next one looks again
        return f"the daemon is {DAEMON_DOWN}"
    return "; ".join(f"the daemon is {NOT_TAKING.lower()}: {p}" for p in info.get("problems") or [])


def inbox_reason(up: bool, info: dict[str, Any]) -> str:
    """A submission's reason while it waits in the inbox: its cause when one is known."""
    cause = waiting_cause(up, info)
    if cause:
        return f"waiting in the inbox: {cause}"
    return "waiting in the inbox for the daemon to take it"


def claimed_reason(run_id: str, up: bool, info: dict[str, Any]) -> str:
    """A blueprint the daemon claimed (moved into its run's folder) but has not admitted:
    what it waits for as the daemon published it (daemon.json's `held`: a full folder it
    needs, with its free space), else being admitted now; with the daemon down, its start."""
    if not up:
        return f"claimed, not admitted yet: the daemon is {DAEMON_DOWN}; admitted when it starts"
    held = info.get("held")
    said = held.get(run_id) if isinstance(held, dict) else None
    return said if isinstance(said, str) and said else "being admitted by the daemon"


def stalled(up: bool, info: dict[str, Any], now: float) -> str | None:
    """Why a daemon that holds its home looks stuck: its heartbeat (daemon.json, rewritten at
    least every `publish_every` seconds while its loop turns) is over three periods old. Not
    while its writes are held (a full or read-only home: the heartbeat cannot be written)."""
    beat, every = info.get("heartbeat"), info.get("publish_every")
    if not up or info.get("disk") or not isinstance(beat, (int, float)):
        return None
    if not isinstance(every, (int, float)) or isinstance(every, bool) or every <= 0:
        return None
    age = now - beat
    if age <= 3 * every:
        return None
    pid = info.get("pid")
    return (
        f"NOT RESPONDING: its last heartbeat was {format_duration(age)} ago (pid {pid}); "
        "runs are not being watched: see daemon.log, or restart it (`ajetd shutdown`, or "
        f"`kill -9 {pid}` where that does not end it, then `ajetd daemon --detach`; runs go "
        "on in tmux and the next daemon takes them up)"
    )


def daemon_lines(
    up: bool, info: dict[str, Any], width: int, now: float | None = None
) -> list[Line]:
    lines: list[Line] = []
    if not up:
        lines.append([(cut(f"daemon: {DAEMON_DOWN}", width), "bad")])
    elif now is not None and (stuck := stalled(up, info, now)):
        lines.append([(cut(f"daemon: {stuck}", width), "bad")])
    # a stopped daemon's last problems are said as past (the home may have changed since:
    # the next daemon looks again), never as what stops blueprints now
    taking = f"{NOT_TAKING}: " if up else f"when it stopped: it was {NOT_TAKING.lower()}: "
    refused = "" if up else "when the daemon stopped: "
    style = "attention" if up else "dim"
    for problem in info.get("problems") or []:
        lines.append([(cut(f"daemon: {taking}{problem}", width), style)])
    for line in info.get("refused") or []:  # the other files are taken
        lines.append([(cut(f"inbox: {refused}{line}", width), style)])
    for problem in (info.get("disk") or []) if up else []:  # held writes, retried
        as_said = isinstance(problem, str) and problem.startswith((REFUSED, ROOM_BACK))
        said = problem if as_said else f"DISK FULL: {problem}"
        lines.append([(cut(f"daemon: {said}", width), "bad")])
    for problem in info.get("damaged") or []:  # run folders left out, whether or not it runs
        lines.append([(cut(f"DAMAGED: {problem}", width), "bad")])
    return lines


def overview(
    runs: Sequence[Run],
    f: Filters,
    now: float,
    width: int,
    daemon_up: bool,
    info: dict[str, Any],
    campaigns: Sequence[Campaign] = (),
    selected: str | None = None,
    exits: Mapping[str, UnrecordedExit] | None = None,
) -> list[Line]:
    """The default view: the daemon's trouble, the table, its notes, one line per campaign;
    `exits`: the live runs' exits no daemon recorded (`Home.unrecorded_exits`)."""
    sel = select(runs, f, now)
    lines = daemon_lines(daemon_up, info, width, now)
    if not runs:
        lines.append(
            [("(no runs yet: `ajetd submit FILE` or drop a blueprint.md into the inbox)", "dim")]
        )
    else:
        lines += table(sel, now, width, selected)
        lines += notes(sel, width, exits, daemon_up)
    # in the order they began, as `campaign list` has them (the records' id order put a live
    # campaign between ended ones, walk88 F12); ties in id order
    shown = sorted(
        (c for c in campaigns if campaign_matches(c, f, now)),
        key=lambda c: (c.started_at, c.campaign_id),
    )
    ended = sorted((c for c in shown if c.done), key=lambda c: c.ended_at or 0, reverse=True)
    old = [] if f.all or f.narrowed else [c.campaign_id for c in ended[RECENT_CAMPAIGNS:]]
    lines += [[(cut(c.line(), width), "campaign")] for c in shown if c.campaign_id not in old]
    if hidden := len(old):  # as for runs: the default view stays a screen whatever the history
        text = f"{hidden} older ended campaign(s) not shown (--all, or `ajetd campaign list`)"
        lines.append([(cut(text, width), "dim")])
    return lines


def plain(lines: Iterable[Line]) -> str:
    return "\n".join("".join(text for text, _ in line).rstrip() for line in lines)
