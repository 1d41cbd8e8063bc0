"""Runs and trials as frozen records, and the transitions between their states.

The transition table lives here and nowhere else; each function says why its edge exists.
Times are UTC epoch seconds passed in by the caller (never read here).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from typing import Any

from ajetd.core.durations import format_duration
from ajetd.core.finding import Finding
from ajetd.core.fixrecord import AppliedFix, ConfigChange
from ajetd.core.runparts import GpuStats, NemoRead, OutRead, Provenance, SlurmJob, ValRead
from ajetd.core.shown import show
from ajetd.core.stageresult import StageResult
from ajetd.core.timefmt import iso
from ajetd.core.values import path_problem


class State(str, Enum):
    """Where a run is in its life; values go straight into JSON."""

    QUEUED = "queued"
    RUNNING = "running"
    RESTARTING = "restarting"
    STOPPING = "stopping"
    DONE = "done"


class Status(str, Enum):
    """How a finished run ended (DESIGN §3)."""

    SUCCEEDED = "succeeded"
    TIME_LIMIT = "time_limit"
    PLATEAU = "plateau"
    FAILED = "failed"
    STOPPED = "stopped"
    REJECTED = "rejected"
    LOST = "lost"


# `ajetd wait` exit codes per terminal status (DESIGN §3).
WAIT_EXIT = {
    Status.SUCCEEDED: 0,
    Status.TIME_LIMIT: 0,
    Status.PLATEAU: 0,
    Status.FAILED: 1,
    Status.STOPPED: 1,
    Status.REJECTED: 1,
    Status.LOST: 1,
}


class StopCause(str, Enum):
    """Why ajetd is stopping a live trial; decides the terminal status once it exits."""

    TIME_LIMIT = "time_limit"
    USER = "stopped"
    HANG = "hang"
    PLATEAU = "plateau"
    # a program at wandb's login prompt, stopped to be relaunched with WANDB_MODE=offline
    PROMPT = "prompt"


class Signal(str, Enum):
    """Escalation steps of a graceful stop."""

    INT = "INT"
    TERM = "TERM"
    KILL = "KILL"


@dataclass(frozen=True)
class Trial:
    """One launch of the command. `started_at` is set once the program was let go."""

    number: int
    command: str
    session: str
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    pane_pid: int | None = None  # the trial script's pid (the pane's own process)
    problem: str = ""  # what went wrong, as read from the output
    findings: tuple[Finding, ...] = ()  # diagnosis of its output, root cause first
    live_findings: tuple[Finding, ...] = ()  # seen while it still ran, in order seen
    next_step: str = ""  # what ajetd did about it
    stage: str = ""  # the pipeline stage it ran (`[ajetd] stages`), if any
    # where its validation records begin in the run's history (those before are earlier
    # trials'), set as it starts; None in a record older than this field
    first_record: int | None = None
    # the memory cgroup its pane's process was in as it started (as the kernel names it, and
    # its folder here) and that cgroup's OOM kill counter then (`adapters.oomwatch`): a kill
    # by SIGKILL is an OOM kill only where the kernel recorded one (`diagnosis.killed`).
    # Empty (None): it ran elsewhere, no cgroup was found, or a record older than these
    memory_cgroup: str = ""
    memory_cgroup_dir: str = ""
    oom_kills_at_start: int | None = None

    @property
    def diagnosis(self) -> tuple[Finding, ...]:
        """Its diagnosis, root cause first, as every view shows it (status, diag, trials.md):
        that of its end; where its end read none, what was seen while it ran. A trial ajetd
        stopped (its time limit, `ajetd stop`) is diagnosed at its end only up to the signal,
        and a prompt it sat at or a GPU lost under it are seen only while it runs (walk91 F2:
        status showed them, trials.md did not)."""
        return self.findings or self.live_findings

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["findings"] = [f.to_json() for f in self.findings]
        data["live_findings"] = [f.to_json() for f in self.live_findings]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Trial:
        """A stored trial; findings become `Finding`s, unknown keys are ignored."""
        stored_as_declared(cls, data, "trial")
        known = {f.name for f in fields(cls)}
        return cls(
            **{
                **{k: v for k, v in data.items() if k in known},
                "findings": _findings(data.get("findings")),
                "live_findings": _findings(data.get("live_findings")),
            }
        )


CONFIG_CHANGED = "config changed at admission: "  # a change among the warnings
_BIG = 1 << 63  # no count, pid, offset or exit code of ajetd's is larger


def _integer(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and -_BIG <= v <= _BIG


_LATEST = 253402300799.0  # 9999-12-31T23:59:59Z: the last time a record can be shown at


def _number(v: Any) -> bool:  # a time, a span, a metric (a campaign's best): a finite float
    return _integer(v) or (isinstance(v, float) and math.isfinite(v))


def _time(v: Any) -> bool:  # a field `*_at`: a time a calendar holds (status formats it)
    return v is None or (_number(v) and -_LATEST <= v <= _LATEST)


def _each(fits: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, list | tuple) and all(fits(x) for x in v)


def _or_none(fits: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or fits(v)


def _text(v: Any) -> bool:
    return isinstance(v, str)


def _object(v: Any) -> bool:
    return isinstance(v, Mapping)


# What a stored field may hold, by its declared type (as `runparts._plain` reads a part's); a
# type not here (a part with its own `from_json`) is read by that part, leniently.
_STORED: dict[str, Callable[[Any], bool]] = {
    "str": _text,
    "str | None": _or_none(_text),
    "int": _integer,
    "int | None": _or_none(_integer),
    "float": _number,
    "float | None": _or_none(_number),
    "bool": lambda v: isinstance(v, bool),
    "State": _text,
    "Status | None": _or_none(_text),
    "StopCause | None": _or_none(_text),
    "dict[str, Any]": _object,
    "tuple[str, ...]": _each(_text),
    "list[str]": _each(_text),
    "tuple[int, ...] | None": _or_none(_each(_integer)),
    "tuple[tuple[str, str], ...]": _each(lambda v: isinstance(v, list | tuple) and len(v) == 2),
    "tuple[dict[str, Any], ...]": _each(_object),
    "tuple[Trial, ...]": _each(_object),
    "tuple[Finding, ...]": _each(lambda v: True),  # what is no object is skipped (_findings)
    "list[ExpState]": _each(_object),  # a campaign's record (campaignrecord.check_stored)
    "list[dict[str, Any]]": _each(_object),
    "dict[str, dict[str, Any]]": lambda v: _object(v) and all(_object(x) for x in v.values()),
}


def stored_as_declared(cls: type, data: Mapping[str, Any], what: str) -> None:
    """ValueError naming the first field of a stored record (a run's state.json, which a
    person may edit or a crash may damage) that holds what its type cannot: text where a
    time goes, a number past any float, a list where text goes. Read as they were, such
    values broke whatever used them later (`ajetd status` died with OverflowError,
    AttributeError, TypeError), or a run's supervision."""
    for f in fields(cls):
        fits = _STORED.get(str(f.type))
        if fits is not None and f.name in data and not fits(data[f.name]):
            raise ValueError(f"{what} field {f.name!r} holds {show(data[f.name])}, not {f.type}")
        if f.name.endswith("_at") and f.name in data and not _time(data[f.name]):
            raise ValueError(f"{what} field {f.name!r} holds {show(data[f.name])}, no time")
        unusable = path_problem(f.name, data.get(f.name) or "") if f.name in _PATHS else None
        if unusable:  # a NUL, a name too long: what opened it raised (as intake refuses)
            raise ValueError(f"{what} field {unusable}")


_PATHS = (
    "result_dir",
    "result_real",
    "reports_dir",
    "codebase_dir",
    "venv_dir",
    "venv_exe",
    "val_path",
    "config_path",
)


def _findings(data: Any) -> tuple[Finding, ...]:
    """Stored findings (what is not an object is no finding: skipped)."""
    items = data if isinstance(data, list | tuple) else ()
    return tuple(Finding.from_json(f) for f in items if isinstance(f, Mapping))


@dataclass(frozen=True)
class Run:
    """One blueprint's life in ajetd. Saved as JSON after every change."""

    run_id: str
    source: str  # the inbox file name it came from
    submitted_at: float
    purpose: str = ""
    session: str = ""
    state: State = State.QUEUED
    status: Status | None = None
    reason: str = ""
    attention: str | None = None
    result_dir: str = ""
    # the result dir as its links led when the run was admitted (`os.path.realpath`): a link
    # in its path then is the user's; one put there later is not written through
    # (`trialfiles.swapped`); "" in a record older than this field: not checked
    result_real: str = ""
    # where its reports (results.md ... finish.flag) were written: the result dir, or its
    # folder in the home where nothing could be written through the dir; "" until written
    reports_dir: str = ""
    max_time_s: float | None = None
    codebase_dir: str = ""
    venv_dir: str = ""
    venv_exe: str = ""  # exp_venv_exe resolved (a bare `python` runs it: TrialSpec.venv_exe)
    # the tmux server its session lives on, as `tmux -L` names it ("default": the user's own);
    # "" in a record older than this field
    tmux_socket: str = ""
    # that server's socket, its full path (`$TMUX_TMPDIR/tmux-UID/NAME`, as `tmux -S` takes
    # it): the server is this path, not only its -L name, and a shell or daemon with another
    # TMUX_TMPDIR reaches another server (walk98 F4); "" in a record older than this field
    # (reached by `tmux_socket` with the reader's TMUX_TMPDIR, as before)
    tmux_path: str = ""
    # what the next trial launches: the blueprint's command with ajetd's changes (a config
    # copy, NeMo-RL overrides, a fix's copy, a pipeline's next stage)
    launch_command: str = ""
    blueprint_command: str = ""  # exp_launch_command as written ("": a record older than it)
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    trials: tuple[Trial, ...] = ()
    val_path: str | None = None
    val_offset: int = 0
    val_read: ValRead = field(default_factory=ValRead)  # how far its val file was read
    metrics: dict[str, Any] = field(default_factory=dict)
    history: tuple[dict[str, Any], ...] = ()
    stop_cause: StopCause | None = None
    stop_began_at: float | None = None
    stop_reason: str = ""  # why ajetd began to stop it (shown in the final reason)
    signals_sent: tuple[str, ...] = ()
    # when the stop's last signal could not be sent (its place did not answer): sent again
    # from then on (`policy.UNSENT_RETRY_S`), its grace counted from when it went (walk87 F8)
    signal_unsent_at: float | None = None
    # the trial log's size when ajetd sent the first of them: what the program printed after
    # it is its reaction to ajetd's signal (an interrupted start-up's `Fatal Python error`),
    # no finding about the program; None: not known (an older record, no log)
    signal_log_bytes: int | None = None
    keep_session_s: float = 3600.0
    session_closed: bool = False
    warnings: tuple[str, ...] = ()
    config_changes: tuple[str, ...] = ()  # what the YAML preflight fixed in a copy
    config_path: str = ""  # the YAML the command's --conf runs (original or a fixed copy)
    fixes: tuple[str, ...] = ()  # fixes applied so far, in order (they accumulate)
    # what each of them changed, as data (status's `fixes_applied`); shorter than `fixes`
    # in a record of a version before it
    applied_fixes: tuple[AppliedFix, ...] = ()
    fix_env: tuple[tuple[str, str], ...] = ()
    fix_prefix: tuple[str, ...] = ()
    gpu_ids: tuple[int, ...] | None = None  # placed GPUs (None: not placed, env left as is)
    yaml_gpus: int | None = None  # the GPUs its config asks for (frameworks.gpuask)
    gpu_stats: GpuStats = field(default_factory=GpuStats)  # gpuuse.fold over its samples, per GPU
    remote_dir: str = ""  # on a remote host (`ssh`): the run's folder there
    provenance: Provenance | None = None  # git state, blueprint hash (None: not collected)
    kind: str = "agentjet"  # or "nemo_rl": where the metrics come from, how it ends
    metric: str = "mean_reward"  # the metric that judges the run (NeMo-RL: its metric_name)
    nemo: NemoRead = field(default_factory=NemoRead)  # how far nemorl.feed read its output
    out_read: OutRead = field(default_factory=OutRead)  # how far ajetout.feed read its output
    stage: int = 0  # index of the pipeline stage it is in (`[ajetd] stages`)
    # what each stage that ran left (outputs, the result lines it printed), gathered as its
    # reports are written at the run's end (status's `stages`); () until then
    stage_results: tuple[StageResult, ...] = ()
    slurm: SlurmJob = field(
        default_factory=SlurmJob
    )  # its Slurm job: id, state, reason, nodes, exclude
    reports_pending: bool = False  # ended, but results.md/finish.flag not written yet
    # ended, its on_finish hook not fired yet: on record with the end, so a daemon killed
    # between the end and the hook fires it after a restart (walk87 F1)
    finish_hook_due: bool = False

    def __post_init__(self) -> None:
        # each warning once, in the order first given: a relaunch that meets the same thing
        # again, or an older home's record that stored it at every relaunch, shows it once
        unique = tuple(dict.fromkeys(self.warnings))
        if unique != self.warnings:
            object.__setattr__(self, "warnings", unique)

    @property
    def trial(self) -> Trial | None:
        return self.trials[-1] if self.trials else None

    @property
    def admission_notes(self) -> tuple[str, ...]:
        """What was changed or doubted at admission, as `status` shows it (its `warnings`, in
        the status object and the human view): the warnings, then each change made to the
        config it runs (a logger swapped, the val file moved into the result dir, NeMo-RL's
        overrides), which results.md lists in a section of their own."""
        return (*self.warnings, *(f"{CONFIG_CHANGED}{c}" for c in self.config_changes))

    @property
    def deadline(self) -> float | None:
        """When the time limit falls: first launch + exp_max_time, across relaunches, the
        time its Slurm jobs waited in the queue left out; None while one waits there (no
        program runs: nothing is charged, walk87 F10)."""
        if self.started_at is None or self.max_time_s is None or self.slurm.waiting:
            return None
        return self.started_at + self.max_time_s + self.slurm.waited_s

    def time_used(self, now: float) -> float:
        """The time charged against its limit so far (`deadline`'s clock): since its first
        launch, the time its Slurm jobs waited in the queue left out."""
        if self.started_at is None:
            return 0.0
        end = self.ended_at or now
        waited = self.slurm.waited_s
        trial = self.trial
        if self.slurm.waiting and trial is not None and trial.started_at is not None:
            waited += max(end - trial.started_at, 0.0)  # the wait so far of the job pending
        return max(end - self.started_at - waited, 0.0)

    @property
    def active(self) -> bool:
        return self.state is not State.DONE

    def to_json(self) -> dict[str, Any]:
        """The record as JSON data (state.json); `from_json` reads it back."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["trials"] = [t.to_json() for t in self.trials]
        data["gpu_stats"] = self.gpu_stats.to_json()
        data["provenance"] = {} if self.provenance is None else self.provenance.to_json()
        data["nemo"] = self.nemo.to_json()
        data["out_read"] = self.out_read.to_json()
        data["val_read"] = self.val_read.to_json()
        data["slurm"] = self.slurm.to_json()
        data["applied_fixes"] = [a.to_json() for a in self.applied_fixes]
        data["stage_results"] = [r.to_json() for r in self.stage_results]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Run:
        """A stored record, written by this version or an older one: what it lacks takes its
        default, what this version does not know is ignored."""
        stored_as_declared(cls, data, "run")
        data = dict(data)
        data["state"] = State(data["state"])
        data["status"] = Status(data["status"]) if data.get("status") else None
        data["stop_cause"] = StopCause(data["stop_cause"]) if data.get("stop_cause") else None
        data["trials"] = tuple(Trial.from_json(t) for t in data.get("trials", ()))
        data["gpu_stats"] = GpuStats.from_json(data.get("gpu_stats"))
        data["provenance"] = Provenance.from_json(data.get("provenance"))
        data["nemo"] = NemoRead.from_json(data.get("nemo"))
        data["out_read"] = OutRead.from_json(data.get("out_read"))
        data["val_read"] = ValRead.from_json(data.get("val_read"))
        data["slurm"] = SlurmJob.from_json(data.get("slurm"))
        data["history"] = tuple(data.get("history", ()))
        data["signals_sent"] = tuple(data.get("signals_sent", ()))
        data["warnings"] = tuple(data.get("warnings", ()))
        data["fixes"] = tuple(data.get("fixes", ()))
        stored = data.get("applied_fixes")
        read = (AppliedFix.from_json(a) for a in (stored if isinstance(stored, list) else ()))
        data["applied_fixes"] = tuple(a for a in read if a is not None)
        data["config_changes"] = tuple(data.get("config_changes", ()))
        stages = data.get("stage_results")
        results = (StageResult.from_json(r) for r in (stages if isinstance(stages, list) else ()))
        data["stage_results"] = tuple(r for r in results if r is not None)
        data["fix_env"] = tuple(tuple(pair) for pair in data.get("fix_env", ()))
        data["fix_prefix"] = tuple(data.get("fix_prefix", ()))
        if data.get("gpu_ids") is not None:
            data["gpu_ids"] = tuple(data["gpu_ids"])
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


def reject(run: Run, reason: str, now: float) -> Run:
    """An invalid blueprint never runs; the reason names the part and the problem."""
    return replace(
        run,
        state=State.DONE,
        status=Status.REJECTED,
        reason=reason,
        ended_at=now,
        finish_hook_due=True,
    )


def warn(run: Run, *notes: str) -> Run:
    """The run with `notes` added to its warnings, each that it does not hold yet (in order)."""
    return replace(run, warnings=tuple(dict.fromkeys((*run.warnings, *notes))))


def add_trial(run: Run, trial: Trial) -> Run:
    """A new launch is prepared (not yet let go): recorded first so a crash cannot launch twice."""
    return replace(
        run, state=State.RUNNING, session=trial.session, trials=(*run.trials, trial), reason=""
    )


def unprepare(run: Run) -> Run:
    """Forget a trial recorded but never prepared nor let go (a crash between the two): the
    run waits for it again, as it did before."""
    trial = run.trial
    assert trial is not None and trial.started_at is None
    state = State.RESTARTING if len(run.trials) > 1 else State.QUEUED
    return replace(run, trials=run.trials[:-1], state=state)


def waiting(run: Run, reason: str) -> Run:
    """A queued (or restarting) run cannot start yet: why, for `status`."""
    return run if run.reason == reason else replace(run, reason=reason)


def bounded_wait(run: Run, why: str) -> str:
    """Why a waiting run waits, and for a relaunch how long at most: its time limit goes on
    counting between trials, and once it falls the run ends `time_limit` with no trial
    launched (`Launch._past_deadline`); said in the reason, so a wait for GPUs that an outside
    process holds is never one without an end in sight (walk92 F6). A run not started yet is
    charged nothing while it waits: none is said."""
    deadline = run.deadline
    if run.state is not State.RESTARTING or deadline is None:
        return why
    limit = format_duration(run.max_time_s) if run.max_time_s is not None else "its limit"
    falls = f"(exp_max_time {limit}) falls at {iso(deadline)}, then ends time_limit"
    return f"{why}{WAIT_BOUND} {falls}"


WAIT_BOUND = "; it waits at most until its time limit"


def wait_cause(reason: str) -> str:
    """A waiting run's reason without its bound (`bounded_wait`): what it waited for, as the
    end of a run stopped or timed out while it waited says it."""
    return reason.partition(WAIT_BOUND)[0]


WAITING = (State.QUEUED, State.RESTARTING)  # runs the launch step places and lets go


def launch_order(run: Run) -> tuple[float, str]:
    """The order the launch step takes waiting runs in (placement reserves GPUs for the
    first, `core.placement.plan`): the oldest claim first. Admission gives the runs it
    claims in one pass distinct times in the inbox's order, so the run id breaks no tie
    that a user made; `status` lists and numbers queued runs in this order."""
    return run.submitted_at, run.run_id


def session_renamed(run: Run, name: str) -> Run:
    """The run's tmux session is now called `name` (a user's `tmux rename-session`; its pane
    is found by its script, not by name): the run and its current trial take the name, so
    its attach line, reports and the session's close at its end use the one tmux has."""
    if not name or name == run.session or run.trial is None:
        return run
    return _update_trial(replace(run, session=name), session=name)


def _update_trial(run: Run, **changes: Any) -> Run:
    trial = run.trial
    assert trial is not None
    return replace(run, trials=(*run.trials[:-1], replace(trial, **changes)))


def trial_started(
    run: Run, now: float, pane_pid: int | None = None, oom: tuple[str, str, int] | None = None
) -> Run:
    """The program was let go: the time limit counts from the first trial's start. Its
    validation records begin after those in the history now (`start_trial` read the val file
    to its end before letting it go: what is there is earlier trials'). `oom`: its memory
    cgroup, that cgroup's folder, and its OOM kill counter now (`Trial.memory_cgroup`)."""
    started = run.started_at if run.started_at is not None else now
    trial = run.trial
    assert trial is not None
    first = len(run.history) if trial.first_record is None else trial.first_record
    cgroup, folder, count = oom if oom is not None else ("", "", None)
    updated = _update_trial(
        run,
        started_at=now,
        pane_pid=pane_pid,
        first_record=first,
        memory_cgroup=cgroup,
        memory_cgroup_dir=folder,
        oom_kills_at_start=count,
    )
    return replace(updated, started_at=started)


def record_trials(run: Run) -> list[int | None]:
    """The trial that wrote each of the run's validation records (in history order): the last
    trial whose records begin at or before it. None for each where that is not on record (a
    run of several trials recorded before trials kept `first_record`)."""
    count = len(run.history)
    if len(run.trials) == 1:
        return [run.trials[0].number] * count
    started = [t for t in run.trials if t.started_at is not None]
    if not started or any(t.first_record is None for t in started):
        return [None] * count
    starts = sorted((t.first_record or 0, t.number) for t in started)
    out: list[int | None] = []
    current: int | None = None
    for index in range(count):
        while starts and starts[0][0] <= index:  # a trial that wrote none: the next one's
            current = starts.pop(0)[1]
        out.append(current)
    return out


def found_live(run: Run, findings: tuple[Finding, ...]) -> Run:
    """New kinds seen in a running trial's output (kept in the order they appeared)."""
    trial = run.trial
    assert trial is not None
    return _update_trial(run, live_findings=(*trial.live_findings, *findings))


def seen_in_output(run: Run, findings: tuple[Finding, ...], replaced: frozenset[str]) -> Run:
    """A running trial's output read so far: its `findings` (root cause first) replace those
    it gave before (kinds `replaced`); what ajetd saw outside the output (a lost GPU, a lost
    connection: `found_live`) stays, before them, as a failed trial's findings put it."""
    trial = run.trial
    assert trial is not None
    gone = replaced | {f.kind for f in findings}
    kept = tuple(f for f in trial.live_findings if f.kind not in gone)
    return _update_trial(run, live_findings=(*kept, *findings))


def trial_ended(
    run: Run,
    exit_code: int | None,
    ended_at: float,
    problem: str = "",
    findings: tuple[Finding, ...] = (),
    clean: bool = False,
) -> Run:
    """The trial's program exited (or vanished, exit_code None). A `clean` end (exit 0, not
    stopped by ajetd, nothing failed) keeps no diagnosis (README): what its output showed
    while it ran goes (walk90 F4: a prompt answered just before the exit stayed the ended
    run's `diagnosis`); a fatal finding its end read in its output stays in `findings`
    (`ending._hidden_crash`, said in its warnings)."""
    live = () if clean else (run.trial.live_findings if run.trial is not None else ())
    return _update_trial(
        run,
        ended_at=ended_at,
        exit_code=exit_code,
        problem=problem,
        findings=findings,
        live_findings=live,
    )


def restart(
    run: Run,
    fix: str,
    why: str,
    env: tuple[tuple[str, str], ...],
    prefix: tuple[str, ...],
    command: str | None = None,
    config_path: str | None = None,
    kind: str = "",
    config: tuple[ConfigChange, ...] = (),
) -> Run:
    """A failed trial has a fix to try: the run waits for its next trial with every fix so far
    (a config fix also brings the command pointed at the fixed copy); what the fix changes
    is kept as data (`applied_fixes`): the failure `kind` it answers, the `config` keys'
    old and new values, its environment, prefix and command."""
    trial = run.trial
    assert trial is not None
    updated = replace(trial, next_step=why)
    made = AppliedFix(
        after_trial=trial.number,
        fix=fix,
        kind=kind,
        change=why,
        config=config,
        env=env,
        prefix=prefix,
        command_before=run.launch_command,
        command_after=command if command is not None else "",
    )
    return replace(
        run,
        stop_cause=None,
        stop_began_at=None,
        signals_sent=(),
        signal_unsent_at=None,
        signal_log_bytes=None,
        stop_reason="",
        attention=None,
        launch_command=command if command is not None else run.launch_command,
        config_path=config_path if config_path is not None else run.config_path,
        state=State.RESTARTING,
        trials=(*run.trials[:-1], updated),
        fixes=(*run.fixes, fix),
        applied_fixes=(*run.applied_fixes, made),
        fix_env=(*run.fix_env, *env),
        fix_prefix=prefix or run.fix_prefix,
    )


def next_stage(run: Run, command: str, why: str) -> Run:
    """A stage succeeded and left its outputs: the run waits for the next stage's trial."""
    trial = run.trial
    assert trial is not None
    return replace(
        run,
        state=State.RESTARTING,
        launch_command=command,
        stage=run.stage + 1,
        attention=None,
        trials=(*run.trials[:-1], replace(trial, next_step=why)),
    )


RELAUNCHING_STOPS = (StopCause.HANG, StopCause.PROMPT)  # stops whose end may relaunch the run


def begin_stop(run: Run, cause: StopCause, now: float, why: str = "") -> Run:
    """A live trial is asked to end; the first cause wins (a user stop after the limit is moot),
    but a user's stop takes over the hang rule's (whose end may relaunch the run): the signals
    already sent and their grace go on."""
    if run.stop_cause in RELAUNCHING_STOPS and cause is StopCause.USER:
        return replace(run, stop_cause=cause, stop_reason=why)
    if run.stop_cause is not None:
        return run
    return replace(
        run,
        state=State.STOPPING,
        stop_cause=cause,
        stop_began_at=now,
        signals_sent=(),
        signal_log_bytes=None,
        signal_unsent_at=None,
        stop_reason=why,
    )


def signal_sent(run: Run, sig: str, log_bytes: int | None = None) -> Run:
    """ajetd sent the trial `sig`; `log_bytes`: its log's size then (kept from the first)."""
    first = run.signal_log_bytes if run.signals_sent else log_bytes
    return replace(run, signals_sent=(*run.signals_sent, sig), signal_log_bytes=first)


def set_attention(run: Run, reason: str | None) -> Run:
    return run if run.attention == reason else replace(run, attention=reason)


def finish(run: Run, status: Status, reason: str, exit_code: int | None, ended: float) -> Run:
    """The run is over; `exit_code` is the program's own (None where there is none), `ended`
    when it ended (its last trial's own exit time where known)."""
    return replace(
        run,
        state=State.DONE,
        status=status,
        reason=reason,
        exit_code=exit_code,
        ended_at=ended,
        attention=None,
        finish_hook_due=True,  # every end fires on_finish, once
    )


def tmux_socket_of(run: Run, fallback: str | None) -> str | None:
    """The `tmux -L` socket of the run's server (None: the default one); `fallback` where
    the record predates the field."""
    if not run.tmux_socket:
        return fallback
    return None if run.tmux_socket == DEFAULT_TMUX else run.tmux_socket


DEFAULT_TMUX = "default"  # tmux's own name for the socket of `tmux` without -L
