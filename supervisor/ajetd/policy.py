"""The one place that turns observations of a live run into decisions; pure.

The daemon observes (exit file, pane, output growth, the clock it passes in), calls `decide`,
and carries out the actions in order. Nothing here touches tmux, processes or files.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Any

from ajetd import remedy
from ajetd.durations import format_duration
from ajetd.model import Run, Signal, Status, StopCause
from ajetd.options import Options
from ajetd.remedy import Relaunch
from ajetd.stoprules import plateau_reason
from ajetd.timefmt import iso

HANG_PREFIX = "no output for "


@dataclass(frozen=True)
class Timing:
    """Daemon-wide timing knobs (tests shrink them)."""

    grace_int_s: float = 30.0  # after SIGINT, before SIGTERM
    grace_term_s: float = 15.0  # after SIGTERM, before SIGKILL
    hang_auto_s: float = 1800.0  # `hang: {window: auto}`


@dataclass(frozen=True)
class Observation:
    """What the daemon saw of one run this tick."""

    now: float
    exit: tuple[int, float | None] | None = None  # the trial's exit file, if written
    gone: bool = False  # tmux says the session or its pane no longer exists
    dead_status: int | None = None  # a dead pane's status when the script died unrecorded
    stop_requested: bool = False  # `ajetd stop` asked for this run
    last_output_at: float | None = None  # when the trial's log last grew
    findings: tuple[dict[str, Any], ...] = ()  # diagnosis of a trial that exited non-zero
    proxychains: str | None = None  # an installed proxychains4, if any
    config: dict[str, Any] | None = None  # the YAML a failed trial ran with
    port_holder: str | None = None  # a foreign holder of the port a bind error names


@dataclass(frozen=True)
class Finish:
    status: Status
    reason: str
    exit_code: int | None


@dataclass(frozen=True)
class BeginStop:
    cause: StopCause
    why: str = ""


@dataclass(frozen=True)
class Send:
    signal: Signal


@dataclass(frozen=True)
class Attention:
    reason: str | None


@dataclass(frozen=True)
class Restart:
    """End the failed trial and launch the next one with `remedy`'s fix."""

    exit_code: int
    remedy: Relaunch


Action = Finish | BeginStop | Send | Attention | Restart


def describe_exit(code: int) -> str:
    """`the program exited with code 130 (SIGINT: interrupted, as by Ctrl-C)`."""
    text = f"the program exited with code {code}"
    if code > 128:
        try:
            name = signal.Signals(code - 128).name
        except ValueError:
            return text
        hint = {"SIGINT": ": interrupted, as by Ctrl-C", "SIGKILL": ": killed"}.get(name, "")
        text += f" ({name}{hint})"
    return text


def outcome(run: Run, code: int, hang_window_s: float) -> Finish:
    """The terminal status of a run whose trial exited with `code`."""
    if run.stop_cause is StopCause.TIME_LIMIT:
        limit = format_duration(run.max_time_s or 0)
        return Finish(Status.TIME_LIMIT, f"stopped at exp_max_time ({limit}); data kept", code)
    if run.stop_cause is StopCause.USER:
        return Finish(Status.STOPPED, "stopped by `ajetd stop`", code)
    if run.stop_cause is StopCause.PLATEAU:
        return Finish(Status.PLATEAU, f"stopped early on a plateau: {run.stop_reason}", code)
    if run.stop_cause is StopCause.HANG:
        quiet = format_duration(hang_window_s)
        return Finish(Status.FAILED, f"stopped after {quiet} without output (hang rule)", code)
    if code == 0:
        return Finish(Status.SUCCEEDED, "the program exited with code 0", 0)
    return Finish(Status.FAILED, describe_exit(code), code)


def hang_window(run_window: float | None, timing: Timing) -> float:
    return timing.hang_auto_s if run_window is None else run_window


def after_failure(run: Run, code: int, obs: Observation, options: Options) -> Action:
    """A trial ajetd did not stop exited non-zero: relaunch with a fix, or end the run."""
    choice = remedy.choose(
        run,
        list(obs.findings),
        options.max_trials,
        obs.proxychains,
        obs.now,
        obs.config,
        options.allow_fixes,
        obs.port_holder,
    )
    if isinstance(choice, Relaunch):
        return Restart(code, choice)
    root = f" ({obs.findings[0]['kind']})" if obs.findings else ""
    return Finish(Status.FAILED, f"{describe_exit(code)}{root}; {choice.reason}", code)


def _plateau(run: Run, options: Options, now: float) -> str | None:
    if options.plateau is None or run.max_time_s is None or run.started_at is None:
        return None
    return plateau_reason(options.plateau, list(run.history), now - run.started_at, run.max_time_s)


def decide(run: Run, obs: Observation, timing: Timing, options: Options) -> list[Action]:
    """Actions for a live trial, in the order they must be carried out."""
    window_s = hang_window(options.hang_window_s, timing)
    if obs.exit is not None:
        code = obs.exit[0]
        if code != 0 and run.stop_cause is None:
            return [after_failure(run, code, obs, options)]
        return [outcome(run, code, window_s)]
    if obs.gone:
        if obs.dead_status is not None:
            return [outcome(run, obs.dead_status, window_s)]
        return [
            Finish(
                Status.LOST,
                f"tmux session {run.session} vanished outside ajetd's control (no exit recorded)",
                None,
            )
        ]
    actions: list[Action] = []
    cause = run.stop_cause
    silence = obs.now - obs.last_output_at if obs.last_output_at is not None else 0.0
    if cause is None:
        why = ""
        if obs.stop_requested:
            cause = StopCause.USER
        elif run.deadline is not None and obs.now >= run.deadline:
            cause = StopCause.TIME_LIMIT
        elif silence >= window_s and options.hang_action == "stop":
            cause = StopCause.HANG
        elif (plateau := _plateau(run, options, obs.now)) is not None:
            cause, why = StopCause.PLATEAU, plateau
        if cause is not None:
            actions.append(BeginStop(cause, why))
    if cause is not None:
        began = run.stop_began_at if run.stop_began_at is not None else obs.now
        sent = run.signals_sent
        if Signal.INT.value not in sent:
            actions.append(Send(Signal.INT))
        elif Signal.TERM.value not in sent and obs.now >= began + timing.grace_int_s:
            actions.append(Send(Signal.TERM))
        elif (
            Signal.KILL.value not in sent
            and obs.now >= began + timing.grace_int_s + timing.grace_term_s
        ):
            actions.append(Send(Signal.KILL))
    if silence >= window_s and cause is None:
        since = iso(obs.last_output_at)
        reason = f"{HANG_PREFIX}{format_duration(window_s)} or more (since {since})"
        if run.attention is None or run.attention.startswith(HANG_PREFIX):
            actions.append(Attention(reason))
    elif run.attention is not None and run.attention.startswith(HANG_PREFIX):
        actions.append(Attention(None))
    return actions


def next_wake(
    run: Run, timing: Timing, window_s: float, last_output_at: float | None, now: float
) -> float | None:
    """The next moment after `now` at which a decision about `run` can change by itself.

    Moments already past are left out: their decision was taken at this tick (a hang already
    flagged, a signal already sent), and waking for them again would spin the loop.
    """
    times: list[float] = []
    if run.stop_cause is None and run.deadline is not None:
        times.append(run.deadline)
    if run.stop_cause is not None and run.stop_began_at is not None:
        times.append(run.stop_began_at + timing.grace_int_s)
        times.append(run.stop_began_at + timing.grace_int_s + timing.grace_term_s)
    if last_output_at is not None:
        times.append(last_output_at + window_s)
    future = [t for t in times if t > now]
    return min(future) if future else None
