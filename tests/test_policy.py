"""Decisions over a passed-in clock: no tmux, no processes, no sleeping."""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from ajetd.core import model
from ajetd.core.backoff import Backoff
from ajetd.core.model import Run, Signal, Status, StopCause, Trial
from ajetd.core.options import Options
from ajetd.core.policy import (
    Attention,
    BeginStop,
    Finish,
    Observation,
    Restart,
    Send,
    Timing,
    decide,
    next_wake,
    signal_went,
)
from ajetd.core.stoprules import PlateauRule, learned_window, plateau_reason

T0 = 1_800_000_000.0
TIMING = Timing(grace_int_s=10, grace_term_s=5, hang_auto_s=600)
OPTIONS = Options(max_trials=1)


def _run(max_time: float = 100.0) -> Run:
    run = Run(
        run_id="abc123", source="bp.md", submitted_at=T0, max_time_s=max_time, session="ajet_x"
    )
    run = model.add_trial(run, Trial(number=1, command="python x.py", session="ajet_x"))
    return model.trial_started(run, T0)


def _decide(run: Run, **obs: object) -> list[object]:
    now = obs.pop("now", T0 + 1)
    observation = Observation(now=now, last_output_at=obs.pop("last", now), **obs)  # type: ignore[arg-type]
    return list(decide(run, observation, TIMING, OPTIONS))


def test_exit_zero_succeeds_and_nonzero_fails() -> None:
    assert _decide(_run(), exit=(0, None)) == [
        Finish(Status.SUCCEEDED, "the program exited with code 0", 0)
    ]
    [fin] = _decide(_run(), exit=(137, None))
    assert isinstance(fin, Finish) and fin.status is Status.FAILED and "SIGKILL" in fin.reason


def test_running_quietly_within_limits_does_nothing() -> None:
    assert _decide(_run(), now=T0 + 50) == []


def test_time_limit_begins_stop_at_the_second() -> None:
    run = _run(100)
    assert _decide(run, now=T0 + 99.9) == []
    assert _decide(run, now=T0 + 100) == [BeginStop(StopCause.TIME_LIMIT), Send(Signal.INT)]


def test_a_signal_its_place_did_not_take_is_sent_again_and_its_grace_starts_then() -> None:
    """walk87 F8: SIGINT that found no host (not counted as sent) is asked again each
    UNSENT_RETRY_S, never escalated meanwhile; once it goes, the graces count from then."""
    began = model.begin_stop(_run(100), StopCause.USER, T0 + 100)
    unsent = replace(began, signal_unsent_at=T0 + 100)
    assert _decide(unsent, now=T0 + 109.9) == []
    assert next_wake(unsent, TIMING, 600, None, T0 + 100) == T0 + 110
    assert _decide(unsent, now=T0 + 200) == [Send(Signal.INT)]  # INT, never TERM or KILL
    went = model.signal_sent(signal_went(unsent, "INT", TIMING, T0 + 200), "INT")
    assert went.signal_unsent_at is None
    assert _decide(went, now=T0 + 209) == []
    assert _decide(went, now=T0 + 210) == [Send(Signal.TERM)]
    late_term = signal_went(replace(went, signal_unsent_at=T0 + 250), "TERM", TIMING, T0 + 300)
    late_term = model.signal_sent(late_term, "TERM")
    assert _decide(late_term, now=T0 + 304) == []
    assert _decide(late_term, now=T0 + 305) == [Send(Signal.KILL)]


def test_escalation_int_term_kill_after_grace() -> None:
    run = model.signal_sent(model.begin_stop(_run(100), StopCause.TIME_LIMIT, T0 + 100), "INT")
    assert _decide(run, now=T0 + 109) == []
    assert _decide(run, now=T0 + 110) == [Send(Signal.TERM)]
    run = model.signal_sent(run, "TERM")
    assert _decide(run, now=T0 + 114) == []
    assert _decide(run, now=T0 + 115) == [Send(Signal.KILL)]
    [fin] = _decide(run, exit=(143, None), now=T0 + 116)
    assert isinstance(fin, Finish) and fin.status is Status.TIME_LIMIT and fin.exit_code == 143


def test_user_stop_and_first_cause_wins() -> None:
    run = _run(100)
    assert _decide(run, stop_requested=True) == [BeginStop(StopCause.USER), Send(Signal.INT)]
    stopping = model.begin_stop(run, StopCause.USER, T0 + 1)
    assert model.begin_stop(stopping, StopCause.TIME_LIMIT, T0 + 2) is stopping
    [fin] = _decide(stopping, exit=(130, None))
    assert isinstance(fin, Finish) and fin.status is Status.STOPPED


def test_vanished_session_is_lost_but_a_dead_pane_has_a_status() -> None:
    [fin] = _decide(_run(), gone=True)
    assert isinstance(fin, Finish) and fin.status is Status.LOST and fin.exit_code is None
    [fin] = _decide(_run(), gone=True, dead_status=9)
    assert isinstance(fin, Finish) and fin.status is Status.FAILED and fin.exit_code == 9


def test_hang_raises_and_clears_attention() -> None:
    run = _run(10_000)
    [att] = _decide(run, now=T0 + 700, last=T0 + 50)
    assert isinstance(att, Attention) and att.reason and att.reason.startswith("no output for 10m")
    flagged = model.set_attention(run, att.reason)
    assert _decide(flagged, now=T0 + 701, last=T0 + 50) == [att]  # same text: no churn
    assert _decide(flagged, now=T0 + 702, last=T0 + 701) == [Attention(None)]


def test_hang_stop_action() -> None:
    run = _run(10_000)
    obs = Observation(now=T0 + 700, last_output_at=T0)
    stop = replace(OPTIONS, hang_action="stop")
    [attention] = decide(run, obs, TIMING, stop)  # one window: flagged
    assert isinstance(attention, Attention) and attention.reason
    later = Observation(now=T0 + 1300, last_output_at=T0)  # a further grace: stopped
    [begin, send] = decide(run, later, TIMING, stop)
    assert (
        isinstance(begin, BeginStop) and begin.cause is StopCause.HANG and send == Send(Signal.INT)
    )
    assert "no output for 21m40s" in begin.why
    stopping = model.begin_stop(run, StopCause.HANG, T0 + 1300, begin.why)
    [fin] = decide(stopping, replace(later, exit=(143, None)), TIMING, stop)
    assert isinstance(fin, Finish) and fin.status is Status.FAILED and "hang rule" in fin.reason
    relaunch = replace(OPTIONS, hang_action="relaunch", max_trials=2)
    [again] = decide(stopping, replace(later, exit=(143, None)), TIMING, relaunch)
    assert isinstance(again, Restart) and again.remedy.fix == "retry_hang"
    restarted = model.restart(stopping, "retry_hang", "w", (), ())
    assert restarted.stop_cause is None and restarted.signals_sent == ()


def test_hang_stop_says_where_it_hung_as_the_time_limit_does() -> None:
    """The hang rule's reason gives the same facts as a time limit's `while hung`: since when
    nothing happened, the last step seen, whether the GPUs were idle."""
    stop = replace(OPTIONS, hang_action="stop")
    seen = Observation(now=T0 + 1300, last_output_at=T0 + 60, last_step=12, gpu_busy_at=T0 + 30)
    [begin, _] = decide(_run(10_000), seen, TIMING, stop)
    assert isinstance(begin, BeginStop) and begin.cause is StopCause.HANG
    facts = "no output for 20m40s, GPUs idle (since 2027-01-15T08:01:00Z, after step 12"
    assert begin.why == f"{facts}; hang window 10m, then a grace of the same)", begin.why
    [limit, _] = decide(_run(1300), seen, TIMING, OPTIONS)
    assert isinstance(limit, BeginStop) and limit.cause is StopCause.TIME_LIMIT
    assert limit.why == f"while hung: {facts})", limit.why


def test_hang_window_is_learned_from_the_step_interval() -> None:
    assert learned_window([], 1800, 600, 7200) == 1800
    assert learned_window([0, 300, 600, 900], 1800, 600, 7200) == 900  # 3 x 5 min
    assert learned_window([0, 10, 20], 1800, 600, 7200) == 600  # floor
    assert learned_window([0, 5000, 10000], 1800, 600, 7200) == 7200  # ceiling


def test_next_wake_is_the_earliest_timer() -> None:
    run = _run(100)
    assert next_wake(run, TIMING, 600.0, T0 + 50, T0 + 60) == T0 + 100
    stopping = model.begin_stop(run, StopCause.USER, T0 + 20)
    assert next_wake(stopping, TIMING, 600.0, T0 + 50, T0 + 21) == T0 + 30


def test_deadline_counts_from_first_trial_across_relaunch() -> None:
    run = _run(100)
    run = model.trial_ended(run, 1, T0 + 10)
    run = model.add_trial(run, Trial(number=2, command="c", session="ajet_x"))
    run = model.trial_started(run, T0 + 20)
    assert run.deadline == T0 + 100


def test_backoff_follows_seed_schedule_and_resets() -> None:
    b = Backoff.start(T0)
    gaps = []
    now = T0
    for _ in range(8):
        gaps.append(b.next_at - now)
        now = b.next_at
        b = b.advance(now)
    assert gaps == [30, 60, 120, 240, 480, 960, 960, 960]
    assert b.reset(now).next_at == now + 30
    assert Backoff.start(T0, scale=0.001).next_at == T0 + 0.03
    b = Backoff.start(T0)  # due at T0 + 30; with another run's check, from T0 + 27 (a tenth)
    assert not b.due(T0 + 26.9, batch=True) and b.due(T0 + 27, batch=True)
    assert not b.due(T0 + 29.9) and b.due(T0 + 30)
    assert b.advance(T0 + 30).due(T0 + 84, batch=True)  # 60 s on: 6 s early at most


def test_record_round_trips_through_json() -> None:
    run = replace(_run(), metrics={"mean_reward": 0.5}, history=({"a": 1},))
    run = model.begin_stop(run, StopCause.TIME_LIMIT, T0)
    assert Run.from_json(run.to_json()) == run


def test_next_wake_ignores_moments_already_past() -> None:
    run = _run(10_000)
    hung = model.set_attention(run, "no output for 10m or more")
    assert next_wake(hung, TIMING, 600.0, T0, T0 + 650) == T0 + 1200  # the grace, not T0 + 600
    stopping = model.begin_stop(run, StopCause.USER, T0)
    assert next_wake(stopping, TIMING, 600.0, T0, T0 + 1000) is None


def _history(*values: float) -> tuple[dict[str, object], ...]:
    return tuple({"global_steps": i * 10, "mean_reward": v} for i, v in enumerate(values))


def test_plateau_rule() -> None:
    rule = PlateauRule(patience=3, min_delta=0.005, after=0.5)
    flat = list(_history(0.5, 0.6, 0.7, 0.702, 0.698, 0.704))
    assert plateau_reason(rule, flat, 40, 100) is None  # too early in the run
    reason = plateau_reason(rule, flat, 60, 100)
    assert reason is not None and "mean_reward" in reason and "0.7000" in reason
    rising = list(_history(0.5, 0.6, 0.7, 0.72, 0.74, 0.76))
    assert plateau_reason(rule, rising, 90, 100) is None
    assert plateau_reason(rule, flat[:3], 90, 100) is None  # not enough validations
    loss = [{"val_loss": v} for v in (2.0, 1.5, 1.2, 1.21, 1.198, 1.2)]
    assert plateau_reason(PlateauRule(metric="val_loss"), loss, 90, 100) is not None


def test_plateau_stops_gracefully_with_its_status() -> None:
    run = replace(_run(100), history=_history(0.5, 0.7, 0.7, 0.7, 0.7))
    options = replace(OPTIONS, plateau=PlateauRule())
    obs = Observation(now=T0 + 60, last_output_at=T0 + 60)
    [begin, send] = decide(run, obs, TIMING, options)
    assert (
        isinstance(begin, BeginStop)
        and begin.cause is StopCause.PLATEAU
        and send == Send(Signal.INT)
    )
    stopping = model.begin_stop(run, begin.cause, T0 + 60, begin.why)
    [fin] = decide(stopping, replace(obs, exit=(130, None)), TIMING, options)
    assert isinstance(fin, Finish) and fin.status is Status.PLATEAU and "mean_reward" in fin.reason


@given(
    start=st.floats(min_value=1e9, max_value=4e9),
    max_time=st.floats(min_value=1, max_value=1e6),
    after=st.floats(min_value=0.001, max_value=0.999),
)
def test_the_plateau_rules_after_moment_is_woken_for_and_decided_at_it(
    start: float, max_time: float, after: float
) -> None:
    """walk90 F3: records flat before the rule's `after:` waited for the run's next full look
    (up to a minute): `next_wake` names the moment, and the rule acts at it, never before."""
    run = replace(_run(max_time), history=_history(0.5, 0.7, 0.7, 0.7, 0.7), started_at=start)
    options = replace(OPTIONS, plateau=PlateauRule(after=after))
    at = next_wake(run, TIMING, 1e9, None, start, options)
    assert at is not None and at <= start + max_time
    causes = []
    for now in (at, math.nextafter(at, 0)):
        obs = Observation(now=now, last_output_at=now)
        begun = [a for a in decide(run, obs, TIMING, options) if isinstance(a, BeginStop)]
        causes.append(begun[0].cause if begun else None)
    assert causes == [StopCause.PLATEAU, None]
    assert next_wake(run, TIMING, 1e9, None, start) == run.deadline  # no rule: its limit only


@given(
    since=st.floats(min_value=1e9, max_value=4e9),
    window=st.floats(min_value=1, max_value=10_000),
    action=st.sampled_from(["attention", "stop"]),
)
def test_a_hang_moment_next_wake_names_is_decided_at_that_moment(
    since: float, window: float, action: str
) -> None:
    """The loop sleeps until `next_wake` and decides then: at that very moment (float sums
    of a large epoch time and a window included) the decision has changed."""
    run = replace(_run(), max_time_s=None)
    options = replace(OPTIONS, hang_window_s=window, hang_action=action)
    flag_at = next_wake(run, TIMING, window, since, since)
    assert flag_at == since + window
    [attention] = decide(run, Observation(now=flag_at, last_output_at=since), TIMING, options)
    assert isinstance(attention, Attention) and attention.reason
    flagged = model.set_attention(run, attention.reason)
    stop_at = next_wake(flagged, TIMING, window, since, flag_at)
    assert stop_at == since + 2 * window
    later = decide(flagged, Observation(now=stop_at, last_output_at=since), TIMING, options)
    assert isinstance(later[0], BeginStop if action == "stop" else Attention)


def test_a_stop_the_record_lost_is_told_by_what_lasts() -> None:
    """A daemon killed after its stop's SIGINT, before the record that says so landed (a full
    home held it): the program's exit to the signal is the stop's, not a failure, where the
    request is still filed or the exit came at or past the time limit (bench/chaos.py
    --full-disk found such runs recorded failed)."""
    run = _run(100)
    [fin] = _decide(run, exit=(130, T0 + 5), stop_requested=True, now=T0 + 6)
    assert isinstance(fin, Finish) and fin.status is Status.STOPPED and fin.exit_code == 130
    [fin] = _decide(run, exit=(130, T0 + 100.4), now=T0 + 101)
    assert isinstance(fin, Finish) and fin.status is Status.TIME_LIMIT and fin.exit_code == 130
    # what is not a stop stays what it was: a failure before the limit (noticed after it), a
    # clean exit past it
    [fin] = _decide(run, exit=(1, T0 + 99), now=T0 + 300)
    assert isinstance(fin, Finish) and fin.status is Status.FAILED
    [fin] = _decide(run, exit=(0, T0 + 100.4), now=T0 + 101)
    assert isinstance(fin, Finish) and fin.status is Status.SUCCEEDED


def test_a_stop_asked_after_the_program_failed_leaves_it_failed() -> None:
    """The daemon down, the program failed (its OOM at T0+5); `ajetd stop` asked at T0+60,
    before a daemon started again and saw both: the failure is not the stop's (before: read
    as a stop whose record was lost, 'stopped', its failure and diagnosis hidden). A request
    filed before the exit (a clock lag of the trial's host allowed) is the stop's."""
    run = _run(1000)
    [fin] = _decide(run, exit=(1, T0 + 5), stop_requested=True, stop_requested_at=T0 + 60)
    assert isinstance(fin, Finish) and fin.status is Status.FAILED, fin
    for asked in (T0 + 2, T0 + 5.5):
        [fin] = _decide(run, exit=(130, T0 + 5), stop_requested=True, stop_requested_at=asked)
        assert isinstance(fin, Finish) and fin.status is Status.STOPPED, fin


def test_a_failed_runs_reason_quotes_its_root_causes_line_on_one_line_and_cut() -> None:
    """finish.flag's reason named only the kind (`(unknown_traceback)`): which exception, which
    setting, an agent had to open trials.md to learn. It quotes the root cause's line, its
    whitespace folded and cut at EVIDENCE_IN_REASON characters."""
    from ajetd.core.finding import Finding
    from ajetd.core.policy import EVIDENCE_IN_REASON

    def finding(evidence: str) -> Finding:
        return Finding("unknown_traceback", "fatal", 9, evidence, "why", "Read the exception.")

    said = "TypeError: unsupported operand type(s) for +: 'int' and 'str'"
    [fin] = _decide(_run(), exit=(1, None), findings=(finding(said),))
    assert isinstance(fin, Finish) and fin.status is Status.FAILED
    assert f"exited with code 1 (unknown_traceback: {said});" in fin.reason, fin.reason
    [fin] = _decide(_run(), exit=(1, None), findings=(finding("ValueError:\t" + "x" * 500),))
    assert isinstance(fin, Finish)
    quoted = fin.reason.split("(unknown_traceback: ", 1)[1].split(");", 1)[0]
    assert quoted.startswith("ValueError: xxx") and quoted.endswith("…")
    assert len(quoted) == EVIDENCE_IN_REASON and "\n" not in fin.reason


def test_nccl_failing_again_after_its_fix_says_what_to_look_at_not_the_same_fix() -> None:
    """The reason after NCCL_NVLS_ENABLE=0 failed too recommended NCCL_NVLS_ENABLE=0."""
    from ajetd.core.finding import Finding
    from ajetd.core.remedy import GiveUp, choose

    run = replace(_run(), fixes=("nccl_nvls_off",))
    nccl = Finding("nccl_error", "retryable", 3, "NCCL error", "why", "Relaunch with ...")
    got = choose(run, [nccl], 3, None, T0)
    assert isinstance(got, GiveUp) and "NCCL_DEBUG=INFO" in got.reason
    assert "Relaunch with NCCL_NVLS_ENABLE=0" not in got.reason


def test_a_clean_exit_that_validated_nothing_says_so() -> None:
    """An exit 0 of a run whose program was to write validation records (a val file,
    NeMo-RL's output) that wrote none read as any success (the blind walk: exit 0 after
    0.09 s); its reason says it wrote none. Where none were to come, or some came: as before."""
    from ajetd.core.policy import EXITED_0, kept_truly

    assert kept_truly(EXITED_0, 0, expected=True) == f"{EXITED_0}; it wrote no validation record"
    assert kept_truly(EXITED_0, 3, expected=True) == EXITED_0
    assert kept_truly(EXITED_0, 0, expected=False) == EXITED_0


def test_an_unread_validation_is_never_said_unwritten() -> None:
    """Walk 83: a NeMo-RL log with `• Accuracy:` blocks the reader could not read (under
    `srun --label`) ended 'it wrote no validation record'; where its output shows validation
    results and none was read, the reason says that instead, whatever the end."""
    from ajetd.core.policy import DATA_KEPT, EXITED_0, UNREAD_RECORDS, kept_truly

    assert kept_truly(EXITED_0, 0, True, shown=True) == f"{EXITED_0}; {UNREAD_RECORDS}"
    limit = f"stopped at exp_max_time (1m); {DATA_KEPT}"
    assert kept_truly(limit, 0, True, shown=True) == f"{limit}; {UNREAD_RECORDS}"
    assert kept_truly(EXITED_0, 2, True, shown=True) == EXITED_0
    assert "no validation record" not in kept_truly(limit, 0, True, shown=True)


def test_a_plateau_metric_follows_the_runs_own_only_where_none_is_named() -> None:
    """Walk 28, M4: the default follows the run's metric (NeMo-RL's `accuracy`); a metric the
    blueprint names, even the default's name, stays as named."""
    from ajetd.core.options import parse_options
    from ajetd.core.stoprules import followed

    assert followed(PlateauRule(), "accuracy").metric == "accuracy"
    unnamed = parse_options("plateau: {patience: 2}").plateau
    named = parse_options("plateau: {metric: mean_reward}").plateau
    assert unnamed is not None and named is not None
    assert followed(unnamed, "accuracy").metric == "accuracy"
    assert followed(named, "accuracy").metric == "mean_reward"
    assert parse_options("plateau: true").plateau == PlateauRule()


def test_silence_with_busy_gpus_is_said_held_back_then_stopped_at_three_windows() -> None:
    """An NCCL collective deadlock: no output, its GPUs spinning at 100 %. Not hung (its GPUs
    work), but the time limit's reason says so, a user's `hang: {action: stop}` is said to be
    held back, and the rule acts at 3 windows of silence."""
    run = _run(10_000)
    stop = replace(OPTIONS, hang_window_s=20.0, hang_action="stop")
    busy = Observation(now=T0 + 40, last_output_at=T0 + 5, last_step=3, gpu_busy_at=T0 + 39)
    [flag] = decide(run, busy, TIMING, stop)
    assert isinstance(flag, Attention) and flag.reason is not None
    assert flag.reason == (
        "no output for 20s or more with its GPUs busy (possible collective deadlock; since "
        "2027-01-15T08:00:05Z, after step 3): the hang rule (stop) is held back while the GPUs "
        "work; it acts at 3 times its window, 2027-01-15T08:01:05Z, if the run stays silent"
    )
    flagged = model.set_attention(run, flag.reason)
    assert decide(flagged, replace(busy, now=T0 + 50, gpu_busy_at=T0 + 49), TIMING, stop) == [
        flag
    ]  # the same text: no churn
    assert decide(run, busy, TIMING, replace(stop, hang_action="attention")) == []  # as before
    begin = decide(flagged, replace(busy, now=T0 + 65, gpu_busy_at=T0 + 64), TIMING, stop)[0]
    assert isinstance(begin, BeginStop) and begin.cause is StopCause.HANG
    assert begin.why == (
        "silent for 1m with its GPUs busy (possible collective deadlock; since "
        "2027-01-15T08:00:05Z, after step 3); hang window 20s, held back while the GPUs work, "
        "stopped at 3 times it)"
    )
    # the time limit falling first says the silence, not `data kept` alone
    short = replace(_run(120), attention=flag.reason)
    at_limit = Observation(now=T0 + 120, last_output_at=T0 + 5, last_step=3, gpu_busy_at=T0 + 119)
    limit = decide(short, at_limit, TIMING, replace(stop, hang_action="attention"))[0]
    assert isinstance(limit, BeginStop) and limit.cause is StopCause.TIME_LIMIT
    stopped = model.begin_stop(short, StopCause.TIME_LIMIT, T0 + 120, limit.why)
    [end] = decide(stopped, replace(at_limit, exit=(130, None)), TIMING, OPTIONS)
    assert isinstance(end, Finish) and end.reason == (
        "stopped at exp_max_time (2m), silent for 1m55s with its GPUs busy (possible collective "
        "deadlock; since 2027-01-15T08:00:05Z, after step 3); data kept"
    ), end.reason


def test_a_slurm_job_waiting_in_the_queue_is_not_charged_nor_hung_and_is_flagged_late() -> None:
    """walk87 F10: the time limit, the hang rule's silence and the run's time used count from
    the job's start in Slurm, not from its submission; a job still pending after
    `slurm_pending_s` gets attention (once, same text at each tick), and next_wake names it."""
    from ajetd.core.runparts import SlurmJob

    timing = replace(TIMING, slurm_pending_s=1000)
    pending = replace(_run(100), slurm=SlurmJob(job_id="7", state="PENDING", reason="Priority"))
    assert pending.deadline is None and pending.time_used(T0 + 500) == 0
    assert next_wake(pending, timing, 600.0, T0, T0 + 1) == T0 + 1000
    late = Observation(now=T0 + 999, last_output_at=T0)
    assert decide(pending, late, timing, OPTIONS) == []  # silent 999 s > its 600 s window
    [att] = decide(pending, replace(late, now=T0 + 1000), timing, OPTIONS)
    assert isinstance(att, Attention) and att.reason is not None
    assert att.reason.startswith("pending in Slurm (Priority) for 16m40s or more"), att.reason
    flagged = model.set_attention(pending, att.reason)
    assert decide(flagged, replace(late, now=T0 + 1500), timing, OPTIONS) == [att]
    # it began at T0+1200: from then on its limit and its silence count, the flag goes
    began = replace(pending, slurm=replace(pending.slurm, state="RUNNING", began_at=T0 + 1200))
    began = replace(began, slurm=replace(began.slurm, waited_s=1200), attention=att.reason)
    assert began.deadline == T0 + 1300 and began.time_used(T0 + 1250) == 50
    assert decide(began, replace(late, now=T0 + 1250), timing, OPTIONS) == [Attention(None)]
    # not "while hung": its silence counts from its start (T0+1200), not from T0
    assert decide(began, replace(late, now=T0 + 1300), timing, OPTIONS)[0] == BeginStop(
        StopCause.TIME_LIMIT
    )


def test_a_slurm_reason_no_wait_clears_is_flagged_at_once() -> None:
    from ajetd.core.runparts import SlurmJob

    job = SlurmJob(job_id="7", state="PENDING", reason="PartitionConfig")
    [att] = _decide(replace(_run(100), slurm=job), now=T0 + 2)
    assert isinstance(att, Attention) and att.reason is not None
    assert att.reason.startswith("pending in Slurm (PartitionConfig): Slurm will not start job 7")


def test_only_wandbs_prompt_is_stopped_to_relaunch_offline_and_only_while_it_can_be() -> None:
    """walk86 F28: wandb's login prompt gets its known fix (a stop, then a relaunch with
    WANDB_MODE=offline); any other prompt, a run whose trials are spent, one whose user set
    WANDB_MODE, or one that had the fix already, is only flagged (someone may answer it)."""
    from ajetd.core.finding import WAITING_FOR_INPUT, Finding
    from ajetd.core.policy import WANDB_OFFLINE

    def asked(text: str, run: Run | None = None) -> Run:
        found = Finding(WAITING_FOR_INPUT, "warning", 4, text, "waits", "fix it")
        return model.found_live(run or _run(10_000), (found,))

    wandb = asked("wandb: Enter your choice:")
    [stop, sig] = decide(wandb, Observation(now=T0 + 2, last_output_at=T0 + 1), TIMING, OPTIONS3)
    assert stop == BeginStop(
        StopCause.PROMPT, "`wandb: Enter your choice:` (line 4): wandb has no API key"
    )
    assert sig == Send(Signal.INT)
    stopping = model.begin_stop(wandb, StopCause.PROMPT, T0 + 2, stop.why)  # type: ignore[union-attr]
    [restart] = decide(stopping, Observation(now=T0 + 3, exit=(130, None)), TIMING, OPTIONS3)
    assert isinstance(restart, Restart) and restart.remedy.fix == WANDB_OFFLINE
    assert restart.remedy.env == (("WANDB_MODE", "offline"),)
    only_flagged = [
        (asked("Continue? [y/N]:"), OPTIONS3),
        (wandb, OPTIONS),  # max_trials 1: no relaunch left
        (wandb, replace(OPTIONS3, env={"WANDB_MODE": "online"})),
        (replace(wandb, fixes=(WANDB_OFFLINE,)), OPTIONS3),
    ]
    for run, options in only_flagged:
        [att] = decide(run, Observation(now=T0 + 2, last_output_at=T0 + 1), TIMING, options)
        assert isinstance(att, Attention) and att.reason is not None
        assert att.reason.startswith("waiting for input at a prompt"), att


OPTIONS3 = Options(max_trials=3)


def test_a_collapse_is_no_plateau_until_it_stops_changing() -> None:
    """walk89 F8: a metric falling at every validation (0.50 → 0.08) was stopped as
    `plateau`, though seed 001 stops early only a run whose metric stopped changing. The run
    goes on while it falls (or climbs back, still under its best); once it stays put at the
    lower value it is one, saying it fell."""
    rule = PlateauRule(patience=3, min_delta=0.005, after=0.2)
    falling = list(_history(0.3, 0.4, 0.5, 0.47, 0.44, 0.41, 0.38, 0.35, 0.32))
    assert plateau_reason(rule, falling, 90, 100) is None
    settled = [*falling, *_history(0.08, 0.08, 0.08)]
    assert plateau_reason(rule, settled, 90, 100) is None  # 0.32 → 0.08, 0.08, 0.08: it fell
    recovering = [*settled, *_history(0.1, 0.15, 0.2)]
    assert plateau_reason(rule, recovering, 90, 100) is None  # back up, under its best
    settled = [*settled, *_history(0.08)]
    reason = plateau_reason(rule, settled, 90, 100)
    assert reason is not None and "has stopped changing (best 0.5000, last 0.0800" in reason
    assert "it fell below its best before it stopped changing" in reason
    # a loss rising at each validation is the same decline
    loss = PlateauRule(metric="val_loss", patience=2, min_delta=0.001)
    rising = [{"val_loss": v} for v in (2.0, 1.5, 1.2, 1.4, 1.7)]
    assert plateau_reason(loss, rising, 90, 100) is None
    # a noisy level is a plateau, as before; a metric stuck at nan is one too (walk86 F2)
    noisy = list(_history(0.5, 0.6, 0.7, 0.69, 0.702, 0.695))
    assert plateau_reason(rule, noisy, 90, 100) is not None
    nan = [*_history(0.5, 0.6), *({"mean_reward": "nan"} for _ in range(3))]
    assert plateau_reason(rule, nan, 90, 100) is not None
