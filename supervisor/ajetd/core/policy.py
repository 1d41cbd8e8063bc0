"""The one place that turns observations of a live run into decisions; pure.

The daemon observes (exit file, pane, output growth, the clock it passes in), calls `decide`,
and carries out the actions in order. Nothing here touches tmux, processes or files.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, replace
from typing import Any

from ajetd.core import remedy
from ajetd.core.durations import format_duration
from ajetd.core.finding import GPU_LOST, WAITING_FOR_INPUT, Finding
from ajetd.core.linecut import cut
from ajetd.core.model import RELAUNCHING_STOPS, Run, Signal, Status, StopCause, record_trials
from ajetd.core.options import Options
from ajetd.core.rebuilt import ENDED_NOTE, is_rebuilt
from ajetd.core.remedy import Relaunch
from ajetd.core.stoprules import followed, learned_window, plateau_reason, restart_index
from ajetd.core.timefmt import iso
from ajetd.core.tmuxoptions import lost_why
from ajetd.frameworks.valresults import UNREAD_RECORDS, step_text

HANG_PREFIX = "no output for "
INPUT_PREFIX = "waiting for input at a prompt: "  # what a prompt's attention begins with
GPU_LOST_PREFIX = "a GPU of the run is lost: "  # what a lost GPU's attention begins with
UNLISTED_PREFIX = "not on this tmux server: "  # a run whose pane another server holds
HUNG = "while hung: "  # how a time limit's reason begins to say the run was hung then
SILENT = "with no output at all"  # ... that its program printed nothing
AT_PROMPT = "while " + INPUT_PREFIX  # ... that it sat at a prompt for a person
LATE_S = 5.0  # a time limit enforced this long after it fell is said to be late, and why
DATA_KEPT = "data kept"
# a stop's signal its place did not take (an SSH host that does not answer) is sent again
# this often until it goes; its grace then counts from that moment (walk87 F8)
UNSENT_RETRY_S = 10.0
EXITED_0 = "the program exited with code 0"
DATA_KEPT_THEN = "data up to then kept"  # a run stopped while hung: what it did before
BUSY = "with its GPUs busy (possible collective deadlock"  # silent, yet its GPUs work
# a run silent while its GPUs work is not hung (it computes), unless it stays so this many hang
# windows: a collective that never completes (an NCCL deadlock) spins its GPUs at 100 % forever
BUSY_SILENCE_WINDOWS = 3
SLURM_PREFIX = "pending in Slurm ("  # what a job waiting in Slurm's queue is flagged with
# Slurm's pending reasons that no wait clears: the request is beyond what the partition, the
# account or the QOS allows, or a hold only a person lifts (flagged at once, walk87 F10)
SLURM_NEVER = frozenset(
    {
        "PartitionConfig",
        "PartitionNodeLimit",
        "PartitionTimeLimit",
        "BadConstraints",
        "InvalidAccount",
        "InvalidQOS",
        "DependencyNeverSatisfied",
        "JobHeldAdmin",
        "JobHeldUser",
    }
)


@dataclass(frozen=True)
class Timing:
    """Daemon-wide timing knobs (tests shrink them)."""

    grace_int_s: float = 30.0  # after SIGINT, before SIGTERM
    grace_term_s: float = 15.0  # after SIGTERM, before SIGKILL
    hang_auto_s: float = 1800.0  # `hang: {window: auto}` until steps are seen
    hang_floor_s: float = 600.0  # the learned window's bounds
    hang_ceiling_s: float = 7200.0
    slurm_pending_s: float = 3600.0  # a Slurm job pending this long is flagged


@dataclass(frozen=True)
class Observation:
    """What the daemon saw of one run this tick."""

    now: float
    exit: tuple[int, float | None] | None = None  # the trial's exit file, if written
    gone: bool = False  # tmux says the session or its pane no longer exists
    dead_status: int | None = None  # a dead pane's status when the script died unrecorded
    pane_dead: bool = False  # gone, yet its session and (dead) pane are still there
    unlisted: bool = False  # tmux lists no pane of it, yet its trial script runs
    # where it is gone with its session: what its tmux server says of why, where it knows
    # (the server gone too, a global destroy-unattached: `Tmux.gone_why`); "" where not
    gone_why: str = ""
    stop_requested: bool = False  # `ajetd stop` asked for this run
    stop_requested_at: float | None = None  # when that request was filed (its file's time)
    stop_read_at: float | None = None  # when the daemon read that request (None: at `now`)
    last_output_at: float | None = None  # when the trial's log last grew
    findings: tuple[Finding, ...] = ()  # diagnosis of a trial that exited non-zero
    proxychains: str | None = None  # an installed proxychains4 (or proxychains), if any
    config: dict[str, Any] | None = None  # the YAML a failed trial ran with
    port_holder: str | None = None  # a foreign holder of the port a bind error names
    step_times: tuple[float, ...] = ()  # when each new training step was first seen
    first_step_at: float | None = None  # when the trial's first step was seen
    gpu_busy_at: float | None = None  # the last sample in which a GPU of the run worked
    gpus_taken: str | None = None  # why the failed run's own GPUs are not free now
    program_end: str | None = None  # how a NeMo-RL program said it ended: max_steps, timeout
    missing_outputs: tuple[str, ...] = ()  # a pipeline stage's outputs absent after exit 0
    slurm_signalled: bool = False  # the job got SIGINT that ajetd did not send: --signal
    printed: bool = True  # its program printed a line (read where a time limit is due)
    last_step: int | None = None  # the last training step its output named, if seen
    daemon_began_at: float | None = None  # when this daemon started
    pass_before: float | None = None  # the daemon's full pass before this one (None: none)


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
    kind: str = ""  # the failure the fix answers (the root finding's kind, `hang`)


@dataclass(frozen=True)
class NextStage:
    """A pipeline stage succeeded and left its outputs: start the next stage."""

    name: str
    command: str


Action = Finish | BeginStop | Send | Attention | Restart | NextStage


_SHELL_CODES = {
    127: "command not found: a program the launch command names is not installed or not on "
    "the venv's PATH; the log's last lines name it",
    126: "a command could not be executed: not executable, or a folder",
}


def describe_exit(code: int) -> str:
    """`the program exited with code 130 (SIGINT: interrupted, as by Ctrl-C)`."""
    text = f"the program exited with code {code}"
    if code in _SHELL_CODES:  # bash's own codes for a command it could not run
        return f"{text} ({_SHELL_CODES[code]})"
    if code > 128:
        try:
            name = signal.Signals(code - 128).name
        except ValueError:
            return text
        hint = {"SIGINT": ": interrupted, as by Ctrl-C", "SIGKILL": ": killed"}.get(name, "")
        text += f" ({name}{hint})"
    return text


def trial_end(run: Run, code: int) -> str:
    """Why a trial that is followed by another ended: where ajetd stopped it (the hang rule's
    relaunch), that stop and the signal the exit answers (a 130 is ajetd's SIGINT, not a
    Ctrl-C nobody pressed); else its exit (`describe_exit`)."""
    if run.stop_cause is None:
        return describe_exit(code)
    sent = f"ajetd sent SIG{run.signals_sent[-1]}; " if run.signals_sent else ""
    what = {
        StopCause.HANG: "stopped by the hang rule, to relaunch it",
        StopCause.PROMPT: "stopped at wandb's login prompt, to relaunch it",
    }.get(run.stop_cause, f"stopped by ajetd ({run.stop_cause.value})")
    return f"{what}: {run.stop_reason} ({sent}it exited with code {code})"


def outcome(run: Run, code: int) -> Finish:
    """The terminal status of a run whose trial exited with `code`."""
    if run.stop_cause is StopCause.TIME_LIMIT:
        return Finish(Status.TIME_LIMIT, limit_reason(run), code)
    if run.stop_cause is StopCause.USER:
        why = f" ({run.stop_reason})" if run.stop_reason else ""
        return Finish(Status.STOPPED, f"stopped by `ajetd stop`{why}", code)
    if run.stop_cause is StopCause.PLATEAU:
        return Finish(Status.PLATEAU, f"stopped early on a plateau: {run.stop_reason}", code)
    if run.stop_cause is StopCause.HANG:
        return Finish(Status.FAILED, f"stopped by the hang rule: {run.stop_reason}", code)
    if run.stop_cause is StopCause.PROMPT:
        return Finish(Status.FAILED, f"stopped at a prompt: {run.stop_reason}", code)
    if code == 0:
        return Finish(Status.SUCCEEDED, EXITED_0, 0)
    return Finish(Status.FAILED, describe_exit(code), code)


def limit_reason(run: Run) -> str:
    """`stopped at exp_max_time (1m30s) while hung: no output for 1m28s (...), enforced 33s
    late: ...; data up to then kept`: the limit, what the run was doing when it fell and how
    late it was enforced (the stop's why, `_limit_why`), and what is kept."""
    why = run.stop_reason
    head = f"stopped at exp_max_time ({format_duration(run.max_time_s or 0)})"
    if why:
        head += f" {why}" if why.startswith((HUNG, SILENT, AT_PROMPT)) else f", {why}"
    stalled = why.startswith((HUNG, AT_PROMPT))  # what it did before is what there is
    return f"{head}; {DATA_KEPT_THEN if stalled else DATA_KEPT}"


UNREAD_LINES = (
    "its val file holds {n} line(s) that look like validation records and could not be read"
)


def kept_truly(
    reason: str, records: int, expected: bool = False, shown: bool = False, unread: int = 0
) -> str:
    """An end's reason whose `data kept` is true: a run that wrote no validation record has
    no metrics to keep, and its reason says so instead (read once its val file was read to
    its end: `records`, how many it holds). A clean exit of a run whose program was to write
    them (`expected`: a val file, NeMo-RL's output) says it wrote none: an exit 0 after 0.1 s
    that validated nothing read as any success. `shown`: its output shows validation results
    that gave no record (a shape the reader does not read): it says that, never that the
    program wrote none; so does a val file whose `unread` lines look like records and gave
    none (a value no reader knows)."""
    if unread and not records:
        return f"{reason}; {UNREAD_LINES.format(n=unread)}"
    if shown and not records:  # whether a record was expected or not: never "wrote none"
        return f"{reason}; {UNREAD_RECORDS}"
    if reason == EXITED_0 and expected and not records:
        return f"{reason}; it wrote no validation record"
    kept = next((k for k in (DATA_KEPT_THEN, DATA_KEPT) if reason.endswith(f"; {k}")), None)
    if kept is None or records:
        return reason
    if f" {SILENT}" in reason:  # nothing printed, nothing measured
        return f"{reason[: -len(kept)]}no validation record either: no data to keep"
    return f"{reason[: -len(kept)]}no validation record was written: no metrics, its log kept"


def _limit_why(run: Run, obs: Observation, window_s: float) -> str:
    """What a run was doing when its time limit fell, as its stop's why: it sat at a prompt
    for a person (its output's last line asks something: the live finding `waiting_for_input`,
    which explains any silence), its program printed nothing at all, or it was hung (no output
    for the hang window or more, or flagged so); and, where the limit was enforced `LATE_S` or
    more after it fell, by how much and why."""
    parts = []
    quiet = _quiet_since(run, obs)
    flagged = (  # flagged hung; not silent with its GPUs busy (`_hang_flag`)
        run.attention is not None
        and run.attention.startswith(HANG_PREFIX)
        and BUSY not in run.attention
    )
    trial = run.trial
    prompt = _prompt_seen(run)
    if prompt is not None:
        since = f"; no output since {iso(quiet)}" if quiet is not None else ""
        parts.append(f"{AT_PROMPT}`{prompt.evidence}` ({prompt.where()}{since})")
    elif not obs.printed:
        which = f" (trial {trial.number})" if trial is not None and trial.number > 1 else ""
        parts.append(f"{SILENT} from its program{which}")
    elif quiet is not None and (obs.now >= quiet + window_s or flagged):
        silent, since = _silence(obs, quiet)
        if flagged:  # flagged at one window of silence
            since += f"; needs attention since {iso(quiet + window_s)}"
        parts.append(f"{HUNG}{silent} ({since})")
    elif (busy := _busy_silence(obs, window_s)) is not None:
        parts.append(busy)
    if run.deadline is not None and obs.now - run.deadline >= LATE_S:
        late = format_duration(obs.now - run.deadline)
        parts.append(f"enforced {late} late: {_why_late(run.deadline, obs)}")
    return ", ".join(parts)


def _silence(obs: Observation, quiet: float) -> tuple[str, str]:
    """Where a silent run stands, for the time limit's and the hang rule's reasons alike:
    `no output for 1m20s, GPUs idle` and `since <when>, after step 12` (the last step its
    output named, where one was)."""
    after = f", after step {obs.last_step}" if obs.last_step is not None else ""
    idle = ", GPUs idle" if obs.gpu_busy_at is not None else ""
    return f"no output for {format_duration(obs.now - quiet)}{idle}", f"since {iso(quiet)}{after}"


def _busy_silence(obs: Observation, window_s: float) -> str | None:
    """`silent for 1m55s with its GPUs busy (possible collective deadlock; since <when>, after
    step 12)`: a run whose program printed nothing for the hang window or more while its GPUs
    kept working, which the hang rule does not count as hung; None where it printed within the
    window, or its GPUs were idle since (the hang rule's own case)."""
    out = obs.last_output_at
    if out is None or obs.gpu_busy_at is None or obs.gpu_busy_at <= out:
        return None
    if obs.now < out + window_s:
        return None
    after = f", after step {obs.last_step}" if obs.last_step is not None else ""
    return f"silent for {format_duration(obs.now - out)} {BUSY}; since {iso(out)}{after})"


def _stop_late(obs: Observation) -> str:
    """A user's stop taken LATE_S or more after it was filed: when it was asked, how late it
    is taken and why (walk 30: a stop filed while the daemon was frozen, taken by the next
    one 2 min later, read as if taken at once); empty when taken in time."""
    asked = obs.stop_requested_at
    taken = max(obs.now, obs.stop_read_at or obs.now)
    if asked is None or taken - asked < LATE_S:
        return ""
    late = format_duration(taken - asked)
    return f"asked at {iso(asked)}, taken {late} late: {_why_late(asked, obs, 'it was asked')}"


def _why_late(deadline: float, obs: Observation, what: str = "the limit fell") -> str:
    """Why a time limit (a stop: `what`) is acted on late: no daemon ran when it fell (this
    one started after), or the daemon made no pass across it (stopped with SIGSTOP,
    suspended, its machine asleep, or one step that took that long)."""
    began, before = obs.daemon_began_at, obs.pass_before
    if began is not None and began > deadline:
        return (
            f"the daemon was not running (this one started {format_duration(began - deadline)} "
            f"after {what})"
        )
    if before is not None and before < deadline:
        return (
            f"the daemon made no pass for {format_duration(obs.now - before)} (it was stopped, "
            "suspended or its machine asleep, or one of its steps took that long)"
        )
    return "the daemon was busy, or stopped (SIGSTOP) or suspended within a pass"


def hang_window(
    run_window: float | None, timing: Timing, step_times: tuple[float, ...] = ()
) -> float:
    """The blueprint's window, or one learned from the step interval (`hang: {window: auto}`)."""
    if run_window is not None:
        return run_window
    return learned_window(
        list(step_times), timing.hang_auto_s, timing.hang_floor_s, timing.hang_ceiling_s
    )


def _after_hang(run: Run, code: int, options: Options) -> Action:
    """A trial stopped by the hang rule ended: relaunch it if the blueprint says so."""
    if options.hang_action == "relaunch" and len(run.trials) < options.max_trials:
        why = f"hang: relaunched after {run.stop_reason}"
        return Restart(code, Relaunch("retry_hang", why), "hang")
    return outcome(run, code)


WANDB_OFFLINE = "wandb_offline"  # the fix's name, recorded on the run
WANDB_OFFLINE_ENV = (("WANDB_MODE", "offline"),)


def _wandb_prompt(run: Run, options: Options) -> str | None:
    """Why to stop a trial waiting at wandb's login prompt (no API key: it asks on the
    terminal ajetd gives it) and relaunch it with WANDB_MODE=offline, the known fix, as other
    environment fixes are applied; None where it is not that prompt (other prompts are only
    flagged: ajetd cannot know their answer), where that fix was tried, where the user set
    WANDB_MODE, or where no trial is left to relaunch (flagged only: someone may answer it)."""
    found = _prompt_seen(run)
    if found is None or not found.evidence.lower().startswith("wandb:"):
        return None
    if WANDB_OFFLINE in run.fixes or "WANDB_MODE" in options.env:
        return None
    if len(run.trials) >= options.max_trials:
        return None
    return f"`{found.evidence}` ({found.where()}): wandb has no API key"


def _prompt_seen(run: Run) -> Finding | None:
    """The prompt the running trial's output stops at (its live `waiting_for_input`, gone
    once output goes on), or None."""
    trial = run.trial
    found = [f for f in trial.live_findings if f.kind == WAITING_FOR_INPUT] if trial else []
    return found[0] if found else None


def _after_prompt(run: Run, code: int) -> Action:
    """A trial stopped at wandb's login prompt ended: its relaunch with WANDB_MODE=offline
    (`_wandb_prompt` checked that it has a trial left)."""
    why = (
        f"waiting_for_input: wandb's login prompt ({run.stop_reason}): relaunched with "
        "WANDB_MODE=offline (its logs stay in ./wandb; `wandb sync` uploads them later)"
    )
    return Restart(code, Relaunch(WANDB_OFFLINE, why, env=WANDB_OFFLINE_ENV), WAITING_FOR_INPUT)


def after_failure(run: Run, code: int, obs: Observation, options: Options) -> Action:
    """A trial ajetd did not stop exited non-zero: relaunch with a fix, or end the run."""
    choice = remedy.choose(
        run,
        obs.findings,
        options.max_trials,
        obs.proxychains,
        obs.now,
        obs.config,
        options.allow_fixes,
        obs.port_holder,
        obs.gpus_taken,
        options.gpus,
    )
    if isinstance(choice, Relaunch):
        return Restart(code, choice, obs.findings[0].kind if obs.findings else "")
    root = f" ({root_cause(obs.findings[0])})" if obs.findings else ""
    return Finish(Status.FAILED, f"{describe_exit(code)}{root}; {choice.reason}", code)


EVIDENCE_IN_REASON = 200  # characters of the root cause's line a failed run's reason quotes


def root_cause(finding: Finding) -> str:
    """`unknown_traceback: TypeError: ...`: the kind, and the line that shows it, on one line
    and cut, for a reason read in finish.flag and by agents (the kind alone said nothing of
    which exception, which file, which setting)."""
    said = cut(" ".join(finding.evidence.split()), EVIDENCE_IN_REASON)  # at a word, closed
    return f"{finding.named()}: {said}" if said else finding.named()


def plateau_from(run: Run, options: Options) -> float | None:
    """The moment from which the plateau rule applies to `run` (its `after:` fraction of
    exp_max_time, counted from the run's start), or None where it never does: a moment the
    loop wakes for (`next_wake`), as records that showed a plateau before it wait for it."""
    rule = options.plateau
    if rule is None or run.max_time_s is None or run.started_at is None:
        return None
    return run.started_at + rule.after * run.max_time_s


def _plateau(run: Run, options: Options, now: float) -> str | None:
    rule, applies = options.plateau, plateau_from(run, options)
    if rule is None or applies is None or run.max_time_s is None or run.started_at is None:
        return None
    rule = followed(rule, run.metric)  # the default follows the run's own metric
    history = list(run.history)
    start = restart_index(history, record_trials(run))
    elapsed = now - run.started_at
    if now >= applies:  # the moment `next_wake` names, compared as it computes it: the
        elapsed = max(elapsed, rule.after * run.max_time_s)  # difference may round below
    why = plateau_reason(rule, history[start:], elapsed, run.max_time_s)
    if why is None or not start:
        return why
    trial = record_trials(run)[start]
    return f"{why}; judged on trial {trial}'s own records: it restarted from step " + (
        f"{step_text(history[start])}, so an earlier trial's best is not its to beat"
    )


def _quiet_since(run: Run, obs: Observation) -> float | None:
    """Since when the run has done nothing visible: no output, and no GPU of it busy (a
    silent run whose GPUs work is computing, not hung); a Slurm job is silent while it waits
    in the queue, so its silence counts from its start there at the earliest."""
    times = [t for t in (obs.last_output_at, obs.gpu_busy_at) if t is not None]
    if times and run.slurm.began_at is not None:
        times.append(run.slurm.began_at)
    return max(times) if times else None


def _never_ran(run: Run) -> Finish | None:
    """A trial whose Slurm job ended without ever running (cancelled while pending: by
    `ajetd stop`, by a person or by Slurm): no program exited, so no exit code, and never a
    success nor a time limit (walk87 F10: `time_limit`, exit_code 1, `wait` exit 0)."""
    job, trial = run.slurm, run.trial
    if not job.never_ran or trial is None or job.final != trial.number:
        return None
    why = f"its Slurm job {job.job_id} ended {job.state or '?'} without ever running"
    why += f" (pending: {job.reason})" if job.reason and job.reason != "None" else ""
    if run.stop_cause is StopCause.USER:
        asked = f" ({run.stop_reason})" if run.stop_reason else ""
        return Finish(Status.STOPPED, f"stopped by `ajetd stop`{asked}: {why}", None)
    return Finish(Status.FAILED, f"{why}: no program ran", None)


def _after_exit(run: Run, code: int, obs: Observation, options: Options) -> Action:
    """The trial's program exited with `code`: what now."""
    never = _never_ran(run)
    if never is not None:
        return never
    slurm_limit = obs.slurm_signalled or (
        bool(obs.findings) and obs.findings[0].kind == "slurm_timeout"
    )
    if code != 0 and run.stop_cause is None and slurm_limit:
        why = f"Slurm's time limit (--time, with its --signal warning) ended the job; {DATA_KEPT}"
        return Finish(Status.TIME_LIMIT, why, code)
    if code != 0 and run.stop_cause is None:
        return after_failure(run, code, obs, options)
    if run.stop_cause is StopCause.HANG:
        return _after_hang(run, code, options)
    if run.stop_cause is StopCause.PROMPT:
        return _after_prompt(run, code)
    if code == 0 and run.stop_cause is None and options.stages:
        stage = options.stages[min(run.stage, len(options.stages) - 1)]
        if obs.missing_outputs:
            missing = ", ".join(obs.missing_outputs)
            why = f"stage {stage.name} exited with code 0 but did not leave {missing}"
            return Finish(Status.FAILED, why, 0)
        if run.stage + 1 < len(options.stages):
            following = options.stages[run.stage + 1]
            return NextStage(following.name, following.command)
    if code == 0 and run.stop_cause is None and obs.program_end == "timeout":
        why = (
            "NeMo-RL stopped at its own save-by timeout (checkpointing."
            "checkpoint_must_save_by: 'Timeout has been reached'), before its last step; "
            f"{DATA_KEPT}"
        )
        return Finish(Status.TIME_LIMIT, why, 0)
    return outcome(run, code)


def _no_next_trial(run: Run, action: Action, obs: Observation) -> Action:
    """An exit that would start another trial (a restart with its fix, a pipeline's next
    stage) ends the run instead where `ajetd stop` was asked or the time limit has passed:
    the exit is decided again at each tick while its next trial cannot be prepared (a fix's
    copy waiting for a full folder), and neither is read anywhere else once a trial exited."""
    if not isinstance(action, Restart | NextStage):
        return action
    code = action.exit_code if isinstance(action, Restart) else 0
    ended = f"{describe_exit(code)}; not relaunched"
    if obs.stop_requested:
        return Finish(Status.STOPPED, f"stopped by `ajetd stop` ({ended})", code)
    if run.deadline is not None and obs.now >= run.deadline:
        limit = format_duration(run.max_time_s or 0)
        why = f"exp_max_time ({limit}) reached ({ended}); {DATA_KEPT}"
        return Finish(Status.TIME_LIMIT, why, code)
    short = _too_late(run, obs)
    if isinstance(action, Restart) and short is not None:
        root = f" ({root_cause(obs.findings[0])})" if obs.findings else ""
        return Finish(Status.FAILED, f"{describe_exit(code)}{root}; {short}", code)
    return action


def _too_late(run: Run, obs: Observation) -> str | None:
    """Why no relaunch is made this close to the time limit, or None: less time is left
    than the failed trial took to reach its first step (its start-up: loading a model takes
    minutes), or, where it reached none, than it ran; such a trial could only start, burn
    its GPUs and be stopped by the limit."""
    trial = run.trial
    if run.deadline is None or trial is None or trial.started_at is None:
        return None
    if obs.first_step_at is not None:
        needed, what = obs.first_step_at - trial.started_at, "to reach its first step"
    else:
        end = trial.ended_at if trial.ended_at is not None else obs.now
        needed, what = end - trial.started_at, "to fail, reaching no step"
    left = run.deadline - obs.now
    if left >= needed:
        return None
    return (
        f"not relaunched: {format_duration(max(left, 0))} of exp_max_time "
        f"({format_duration(run.max_time_s or 0)}) left, less than the "
        f"{format_duration(needed)} trial {trial.number} took {what}"
    )


# how far a trial's exit time (its host's clock: an SSH host's, a Slurm node's) may lag this
# machine's for a stop request filed before it
CLOCK_SLACK_S = 2.0


def _stop_not_on_record(run: Run, obs: Observation) -> StopCause | None:
    """The stop that a failed exit was, where the record does not say so: the daemon that
    began it was killed before its record landed (a full home holds the write in memory;
    the signal was sent), and the program's exit to its SIGINT would read as a failure. What
    lasts says it: the `ajetd stop` request is still filed (it is removed only once the stop
    is on record) and was filed before the exit (a request filed once the program had failed,
    the daemon down, does not make its failure a stop), or the program exited at or past the
    time limit (ajetd stops it there). A clean exit stays a success; a plateau's or the hang
    rule's stop is not told this way."""
    if run.stop_cause is not None or obs.exit is None or obs.exit[0] == 0:
        return None
    ended = obs.exit[1] if obs.exit[1] is not None else obs.now
    asked = obs.stop_requested_at
    if obs.stop_requested and (asked is None or asked <= ended + CLOCK_SLACK_S):
        return StopCause.USER  # not a request filed after the program had failed
    if run.deadline is not None and ended >= run.deadline:
        return StopCause.TIME_LIMIT
    return None


def decide(run: Run, obs: Observation, timing: Timing, options: Options) -> list[Action]:
    """Actions for a live trial, in the order they must be carried out."""
    actions = _decide(run, obs, timing, options)
    return [_as_rebuilt(a) for a in actions] if is_rebuilt(run) else actions


def _session(run: Run) -> str:
    return f"tmux session {run.session}" if run.session else "its tmux session"


def _vanished(run: Run, obs: Observation) -> Finish:
    """The run's session is gone with no exit recorded: lost, with what its tmux server
    said of why where it knows (`core.tmuxoptions.lost_why`)."""
    said = f"{_session(run)} vanished outside ajetd's control (no exit recorded)"
    return Finish(Status.LOST, lost_why(said, obs.gone_why, run.warnings), None)


def _as_rebuilt(action: Action) -> Action:
    """A run whose record was rebuilt (`core.rebuilt`) ends with its trial: what it was
    relaunched with, or which stage it is in, was only in the lost record, so nothing is
    launched on a guess; its end says why."""
    if isinstance(action, Finish):
        return replace(action, reason=f"{action.reason}; {ENDED_NOTE}")
    if isinstance(action, Restart):
        why = f"{describe_exit(action.exit_code)}; not relaunched ({action.remedy.why}): "
        return Finish(Status.FAILED, why + ENDED_NOTE, action.exit_code)
    if isinstance(action, NextStage):
        why = f"a stage exited with code 0; the next ({action.name}) not started: {ENDED_NOTE}"
        return Finish(Status.FAILED, why, 0)
    return action


def _hang_stop(obs: Observation, quiet: float, window_s: float, options: Options) -> str | None:
    """Why the hang rule stops the run now, where its action is to (stop, relaunch): flagged
    at one window of silence, stopped after a grace of another; or silent while its GPUs
    worked for `BUSY_SILENCE_WINDOWS` windows, a collective deadlock's spin (README)."""
    if options.hang_action not in ("stop", "relaunch"):
        return None
    if obs.now >= quiet + 2 * window_s:
        silent, facts = _silence(obs, quiet)
        window = format_duration(window_s)
        return f"{silent} ({facts}; hang window {window}, then a grace of the same)"
    out = obs.last_output_at
    if out is None or obs.now < out + BUSY_SILENCE_WINDOWS * window_s:
        return None
    said = _busy_silence(obs, window_s) or f"silent for {format_duration(obs.now - out)}"
    return (
        f"{said}; hang window {format_duration(window_s)}, held back while the GPUs work, "
        f"stopped at {BUSY_SILENCE_WINDOWS} times it)"
    )


def _hang_flag(obs: Observation, quiet: float, window_s: float, options: Options) -> str | None:
    """The attention a silent run is flagged with: hung (no output, no busy GPU, for the
    window); or, where the user asked the hang rule to act, silent with its GPUs busy, saying
    that the rule is held back and until when. The window, not the silence so far, so that the
    flag's text does not change at every tick. None: nothing to flag."""
    if obs.now >= quiet + window_s:
        idle = ", GPUs idle" if obs.gpu_busy_at is not None else ""
        return f"{HANG_PREFIX}{format_duration(window_s)} or more{idle} (since {iso(quiet)})"
    out = obs.last_output_at
    if options.hang_action not in ("stop", "relaunch") or out is None:
        return None
    if _busy_silence(obs, window_s) is None:
        return None
    after = f", after step {obs.last_step}" if obs.last_step is not None else ""
    acts = iso(out + BUSY_SILENCE_WINDOWS * window_s)
    return (
        f"{HANG_PREFIX}{format_duration(window_s)} or more {BUSY}; since {iso(out)}{after}): "
        f"the hang rule ({options.hang_action}) is held back while the GPUs work; it acts at "
        f"{BUSY_SILENCE_WINDOWS} times its window, {acts}, if the run stays silent"
    )


def _decide(run: Run, obs: Observation, timing: Timing, options: Options) -> list[Action]:
    window_s = hang_window(options.hang_window_s, timing, obs.step_times)
    if obs.exit is not None:
        cause = _stop_not_on_record(run, obs)
        if cause is not None:
            run = replace(run, stop_cause=cause)
        return [_no_next_trial(run, _after_exit(run, obs.exit[0], obs, options), obs)]
    if obs.gone:
        if obs.dead_status is not None:
            return [outcome(run, obs.dead_status)]
        if obs.pane_dead:  # walk 30: a kill -9 of the trial script read as a session vanished
            return [
                Finish(
                    Status.LOST,
                    f"the trial's pane in {_session(run)} died with no exit recorded and no "
                    "status from tmux: its trial script was killed (a signal such as kill -9, "
                    "or the out-of-memory killer); the session is still there",
                    None,
                )
            ]
        return [_vanished(run, obs)]
    actions: list[Action] = []
    cause = run.stop_cause
    quiet_since = _quiet_since(run, obs)
    waiting = run.slurm.waiting  # in Slurm's queue: neither hung nor charged (`_slurm_flag`)
    # the moments `next_wake` names, compared as it computes them: `now - since >= window`
    # may round below the window at the very moment `since + window`
    quiet = quiet_since if quiet_since is not None else float("inf")
    if cause is None:
        why = ""
        if obs.stop_requested:
            cause = StopCause.USER
            why = _stop_late(obs)
        elif run.deadline is not None and obs.now >= run.deadline:
            cause = StopCause.TIME_LIMIT
            why = _limit_why(run, obs, window_s)
        elif not waiting and (hung := _hang_stop(obs, quiet, window_s, options)) is not None:
            cause, why = StopCause.HANG, hung
        elif (plateau := _plateau(run, options, obs.now)) is not None:
            cause, why = StopCause.PLATEAU, plateau
        elif (prompt := _wandb_prompt(run, options)) is not None:
            cause, why = StopCause.PROMPT, prompt
        if cause is not None:
            actions.append(BeginStop(cause, why))
    elif cause in RELAUNCHING_STOPS and obs.stop_requested:
        # the user's stop takes over (`model.begin_stop`): the hang rule's end would relaunch
        # the run, and the request is taken off once this is on record
        cause = StopCause.USER
        actions.append(BeginStop(cause, "asked while the hang rule was stopping it"))
    unsent = run.signal_unsent_at
    if cause is not None and unsent is not None and obs.now < unsent + UNSENT_RETRY_S:
        pass  # its place did not answer: asked again once the retry is due (`next_wake`)
    elif cause is not None:
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
    if cause is None:
        hung = None if waiting else _hang_flag(obs, quiet, window_s, options)
        # the cause of its silence, where its output or its place says it
        flag = (
            _unlisted_flag(run, obs)
            or _gpu_lost_flag(run)
            or _prompt_flag(run)
            or _slurm_flag(run, obs.now, timing)
        )
        actions += _attention(run, flag or hung)
    else:
        actions += _attention(run, None)
    return actions


def _attention(run: Run, flag: str | None) -> list[Action]:
    """The attention `flag` raised, changed or cleared: only over a flag of these rules'
    own (hung, at a prompt, waiting in Slurm, a GPU lost), never over another's."""
    ours = (HANG_PREFIX, INPUT_PREFIX, SLURM_PREFIX, GPU_LOST_PREFIX, UNLISTED_PREFIX)
    if flag is not None:
        if run.attention is None or run.attention.startswith(ours):
            return [Attention(flag)]
    elif run.attention is not None and run.attention.startswith(ours):
        return [Attention(None)]
    return []


def _unlisted_flag(run: Run, obs: Observation) -> str | None:
    """The attention for a trial whose pane the tmux server ajetd asks does not list while
    its trial script still runs: another server holds it (the daemon started with another
    TMUX_TMPDIR or AJETD_TMUX_SOCKET than the run, or the server's socket file removed by a
    /tmp cleaner). Never called lost for that: its exit file still records its end."""
    if not obs.unlisted:
        return None
    pid = run.trial.pane_pid if run.trial is not None else None
    return (
        f"{UNLISTED_PREFIX}{_session(run)} is not on the tmux server this daemon asks, yet "
        f"its trial script{f' (pid {pid})' if pid else ''} runs: the run lives on another "
        "server (a daemon started with another TMUX_TMPDIR or AJETD_TMUX_SOCKET than the "
        "run's, or the server's socket removed from /tmp: `kill -USR1` of the tmux server "
        "makes it again); its end is still recorded from its exit file, but its pane cannot "
        "be read or signalled from here"
    )


def _gpu_lost_flag(run: Run) -> str | None:
    """The attention for a trial one of whose GPUs was lost (`gpu_lost`, fatal, seen by the
    GPU sampler outside its output): flagged at once, for the trial's life. Its program may go
    on for a while, or hang on the dead GPU without a word; nothing it prints brings the GPU
    back, and a relaunch needs other GPUs or a reset first: the user decides."""
    trial = run.trial
    found = [f for f in trial.live_findings if f.kind == GPU_LOST] if trial else []
    if not found:
        return None
    return f"{GPU_LOST_PREFIX}{found[0].evidence}: {found[0].fix}"


def _prompt_flag(run: Run) -> str | None:
    """The attention for a trial whose output stopped at a question for a person (read from
    its unfinished last line; gone once output goes on): flagged at once, not after a hang
    window, since nobody will answer it."""
    found = _prompt_seen(run)
    if found is None:
        return None
    return f"{INPUT_PREFIX}`{found.evidence}` ({found.where()}): {found.fix}"


def _slurm_flag(run: Run, now: float, timing: Timing) -> str | None:
    """The attention for a trial whose Slurm job waits in the queue: at once where Slurm's
    reason says no wait will start it, else once it has waited `timing.slurm_pending_s`.
    Its time limit is not charged meanwhile (`Run.deadline`)."""
    trial = run.trial
    if not run.slurm.waiting or trial is None or trial.started_at is None:
        return None
    reason = run.slurm.reason or "no reason given yet"
    job = f"job {run.slurm.job_id}" if run.slurm.job_id else "its job"
    if run.slurm.reason in SLURM_NEVER:
        return (
            f"{SLURM_PREFIX}{reason}): Slurm will not start {job} as the cluster is set up "
            "(a request beyond its partition, account or QOS, or a hold): it waits for ever; "
            "stop the run and change its `slurm:` request"
        )
    if now < trial.started_at + timing.slurm_pending_s:
        return None
    return (
        f"{SLURM_PREFIX}{reason}) for {format_duration(timing.slurm_pending_s)} or more "
        f"(since {iso(trial.started_at)}; its time limit is not charged meanwhile): "
        f"`squeue --start -j {run.slurm.job_id or '<job>'}` says when Slurm expects to start it"
    )


def next_wake(
    run: Run,
    timing: Timing,
    window_s: float,
    last_output_at: float | None,
    now: float,
    options: Options | None = None,
) -> float | None:
    """The next moment after `now` at which a decision about `run` can change by itself:
    each time rule's (its time limit, a stop's graces, its hang window, a Slurm wait, the
    plateau rule's `after:` with `options`).

    Moments already past are left out: their decision was taken at this tick (a hang already
    flagged, a signal already sent), and waking for them again would spin the loop. What
    changes a decision by coming (output, records) is decided when it comes
    (`decision_inputs`), not here.
    """
    times: list[float] = []
    if run.stop_cause is None and run.deadline is not None:
        times.append(run.deadline)
    applies = plateau_from(run, options) if options is not None else None
    if run.stop_cause is None and applies is not None:  # walk90 F3: flat records before it
        times.append(applies)  # waited for the run's next full look, up to a minute
    trial = run.trial
    if run.slurm.waiting and trial is not None and trial.started_at is not None:
        times.append(trial.started_at + timing.slurm_pending_s)
    if run.stop_cause is not None and run.signal_unsent_at is not None:
        times.append(run.signal_unsent_at + UNSENT_RETRY_S)
    if run.stop_cause is not None and run.stop_began_at is not None:
        times.append(run.stop_began_at + timing.grace_int_s)
        times.append(run.stop_began_at + timing.grace_int_s + timing.grace_term_s)
    if last_output_at is not None and run.slurm.began_at is not None:
        last_output_at = max(last_output_at, run.slurm.began_at)  # `_decide`'s silence
    if last_output_at is not None and run.stop_cause is None and not run.slurm.waiting:
        times += [last_output_at + k * window_s for k in (1, 2, BUSY_SILENCE_WINDOWS)]
    future = [t for t in times if t > now]
    return min(future) if future else None


def decision_inputs(run: Run) -> tuple[object, ...]:
    """What `decide` reads of a live run's record that reading its output and its records
    changes between two of its decisions: its output's findings (a prompt: flagged at once)
    and its validation records (the plateau rule). Each is replaced, never changed in place,
    so the loop compares them by identity (`inputs_changed`): a read that changed one is
    decided at once (walk90 F2, F3: decided at the run's next full look, up to a minute
    later), and a run whose reading changed neither is not decided again (issue 15)."""
    trial = run.trial
    return (trial.live_findings if trial is not None else None, run.history)


def inputs_changed(before: Run, after: Run) -> bool:
    """Whether reading a run's output and records changed what its decision reads."""
    old, new = decision_inputs(before), decision_inputs(after)
    return any(a is not b for a, b in zip(old, new, strict=True))


def signal_went(run: Run, sig: str, timing: Timing, now: float) -> Run:
    """The stop's signal `sig` reached its place `now` after earlier tries did not (its SSH
    host did not answer): its grace counts from now, as if the stop had reached that signal
    on time (SIGINT: the whole escalation starts again), and the retry is over."""
    if run.signal_unsent_at is None or run.stop_began_at is None:
        return run
    before = {Signal.INT.value: 0.0, Signal.TERM.value: timing.grace_int_s}
    began = now - before.get(sig, timing.grace_int_s + timing.grace_term_s)
    return replace(run, stop_began_at=began, signal_unsent_at=None)
