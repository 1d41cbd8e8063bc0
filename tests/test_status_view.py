"""`ajetd status` for people: live runs first, the recent ended ones, fitted to the terminal."""

from __future__ import annotations

import itertools
import json
import re
import shlex
import signal
import time
from collections.abc import Callable
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.adapters.store import Home
from ajetd.core import model
from ajetd.core.finding import Finding
from ajetd.core.model import Run, State, Status, Trial
from ajetd.views import listing as view
from ajetd.views.listing import Filters, overview, plain, select, shorten
from ajetd.views.rundetail import detail
from conftest import PYTHON, Env, wait_for

NOW = 1_800_000_000.0
LONG = "ajet_grpo_qwen2_5_7b_instruct_gsm8k_lr3e_6_kl0_001_batch512_x"


def _run(i: int, state: State = State.DONE, **kw: object) -> Run:
    run = Run(
        run_id=f"r{i:05d}",
        source="bp.md",
        submitted_at=NOW - 100_000 + i,
        purpose=f"experiment {i}",
        max_time_s=7200,
        result_dir=f"/data/results/{i}",
        gpu_ids=(0,),
    )
    run = model.add_trial(run, Trial(number=1, command="python -m ajet.launcher", session=LONG))
    run = model.trial_started(run, NOW - 90_000 + i)
    history = tuple({"global_steps": s, "mean_reward": 0.1 * s} for s in range(1, 7))
    run = replace(run, history=history, metrics=dict(history[-1]))
    if state is State.DONE:
        run = model.trial_ended(run, 0, NOW - 80_000 + i * 10)
        run = model.finish(run, Status.SUCCEEDED, "exit 0", 0, NOW - 80_000 + i * 10)
    else:
        run = replace(run, state=state)
    return replace(run, **kw)  # type: ignore[arg-type]


def _world() -> list[Run]:
    ended = [_run(i) for i in range(500)]
    live = [
        _run(900, State.RUNNING),
        _run(901, State.QUEUED, trials=(), started_at=None, reason="waiting for 2 GPUs"),
        _run(902, State.RUNNING, attention="no output for 31m"),
        _run(903, State.RESTARTING),
        _run(904, State.STOPPING),
    ]
    return [*ended[:250], *live, *ended[250:]]


def test_live_runs_first_then_ten_newest_ended_in_80_columns() -> None:
    lines = overview(_world(), Filters(), NOW, 80, True, {})
    text = plain(lines)
    rows = text.splitlines()
    assert all(len(row) <= 80 for row in rows), max(rows, key=len)
    ids = [row.split()[0] for row in rows if row.startswith("r0")]
    assert ids[:5] == ["r00902", "r00900", "r00904", "r00903", "r00901"]  # attention first
    assert ids[5:] == [f"r{i:05d}" for i in range(499, 489, -1)]  # newest ended first
    assert "ATTENTION!" in rows[1 + ids.index("r00902")]
    assert "! attention r00902: no output for 31m" in text
    assert "queued r00901 (1st to launch): waiting for 2 GPUs" in text
    assert "490 older ended run(s) not shown (--all shows every run)" in text
    assert "…" in text and LONG not in text  # the long session name is shortened
    assert "0.6000 ▁▂▃▅▆█" in text  # the metric and its trend


def test_queued_runs_are_listed_and_numbered_in_the_order_they_launch(env: Env) -> None:
    """Before: queued runs were listed newest first, the reverse of the order the daemon
    launches them in (oldest claim first, placement reserving GPUs for the first), and
    nothing said which goes next. Three runs wait for the one GPU another holds: they are
    listed in their launch order, each note says its place, and the first is launched."""
    env.fake_gpus(1)
    env.start_daemon("--liveness", "0.2")
    end = env.tmp / "end-now"
    holder = env.blueprint(
        "holder", command=f"while [ ! -e {end} ]; do sleep 0.05; done", ajetd="gpus: 1"
    )
    holding = env.submit(holder)
    wait_for(lambda: env.record(holding).get("started_at"), what="the holder to start")
    waiting = []
    for name in ("first", "second", "third"):
        waiting.append(env.submit(env.blueprint(name, command="sleep 60", ajetd="gpus: 1")))
        wait_for(lambda: env.record(waiting[-1]).get("state") == "queued", what=name)
    shown = env.cli("status").stdout.splitlines()
    listed = [row.split()[0] for row in shown if row.split() and row.split()[0] in waiting]
    assert listed == waiting, shown
    for place, run_id in zip(("1st", "2nd", "3rd"), waiting, strict=True):
        assert any(line.startswith(f"queued {run_id} ({place} to launch): ") for line in shown)
    end.touch()
    wait_for(lambda: env.record(waiting[0]).get("started_at"), what="the first to launch")
    assert not env.record(waiting[1]).get("started_at")


def test_a_finding_read_outside_the_log_names_no_line() -> None:
    """A finding read from a pane's history, an exit code or a full disk has line 0 in JSON;
    shown, it said `line 0`, a line of no file: now `no log line`, and a log's finding its
    line as before."""
    run = _run(1, State.RUNNING)
    pane = Finding("nccl_error", "infra", 0, "NCCL error", "why", "fix")
    logged = replace(pane, kind="cuda_oom", line=12)
    run = replace(run, trials=(replace(run.trials[0], live_findings=(pane, logged)),))
    text = plain(detail(run, NOW, 100))
    assert "nccl_error [infra] no log line: NCCL error" in text, text
    assert "cuda_oom [infra] line 12: NCCL error" in text and "line 0" not in text


def test_wide_terminal_shows_whole_session_and_narrow_drops_columns() -> None:
    wide = plain(overview(_world(), Filters(), NOW, 200, True, {}))
    assert LONG in wide
    narrow = plain(overview(_world(), Filters(), NOW, 50, True, {}))
    assert all(len(row) <= 50 for row in narrow.splitlines())
    assert "r00902" in narrow


def test_filters() -> None:
    runs = _world()
    sel = select(runs, Filters(all=True), NOW)
    assert len(sel.live) == 5 and len(sel.ended) == 500 and sel.hidden == 0
    assert [r.run_id for r in select(runs, Filters(state="attention"), NOW).live] == ["r00902"]
    assert select(runs, Filters(state="queued"), NOW).ended == []
    assert len(select(runs, Filters(state="succeeded"), NOW).ended) == 500
    since = select(runs, Filters(since_s=80_000 - 4990 + 1), NOW)  # ended within: i >= 499
    assert [r.run_id for r in since.ended] == ["r00499"] and len(since.live) == 5
    camp = select(runs, Filters(campaign_runs=frozenset({"r00003", "r00900"})), NOW)
    assert [r.run_id for r in (*camp.live, *camp.ended)] == ["r00900", "r00003"]


def test_shorten_keeps_both_ends() -> None:
    assert shorten("ajet_abcdefghij_2", 9) == "ajet…ij_2"
    assert shorten("short", 9) == "short"


def test_one_run_in_full() -> None:
    run = _run(7, State.RUNNING)
    finding = Finding(
        kind="cuda_oom",
        severity="science",
        line=12,
        evidence="torch.OutOfMemoryError",
        explanation="A GPU ran out of memory.",
        fix="Lower the micro batch size.",
    )
    trial = replace(run.trials[0], live_findings=(finding,))
    run = replace(run, trials=(trial,))
    text = plain(detail(run, NOW, 100))
    assert "purpose    experiment 7" in text
    assert f"tmux attach -t {LONG}" in text
    assert "ajetd attach r00007" in plain(detail(run, NOW, 60))
    assert "used 25h" in text or "used" in text
    assert "cuda_oom [science] line 12" in text and "why: A GPU ran out" in text
    assert "fix: Lower the micro batch size." in text
    assert "#1" in text and "mean_reward: ▁▂▃▅▆█" in text


def _home_with_runs(env: Env, count: int, live: int) -> Home:
    home = Home(env.home)
    home.ensure()
    now = time.time()
    for i in range(count):
        run = _run(i)
        home.run_dir(run.run_id).mkdir()
        home.save_run(replace(run, ended_at=now - 1000 + i, submitted_at=now - 5000 + i))
    for i in range(live):
        run = _run(900 + i, State.RUNNING)
        home.run_dir(run.run_id).mkdir()
        home.save_run(replace(run, started_at=now - 60, submitted_at=now - 70))
    return home


def test_status_cli_with_500_ended_and_5_live_fits_80_columns(env: Env) -> None:
    _home_with_runs(env, 500, 5)
    env.vars["COLUMNS"] = "80"
    out = env.cli("status")
    assert out.returncode == 0, out.stderr
    rows = out.stdout.splitlines()
    assert all(len(row) <= 80 for row in rows), max(rows, key=len)
    ids = [row.split()[0] for row in rows if row.startswith("r0")]
    assert set(ids[:5]) == {f"r00{900 + i}" for i in range(5)}
    assert ids[5:] == [f"r{i:05d}" for i in range(499, 489, -1)]
    assert "daemon: not running (start it with `ajetd daemon --detach`)" in out.stdout
    every = json.loads(env.cli("status", "--json").stdout)
    assert len(every) == 505  # the contract: one object per run
    live = json.loads(env.cli("status", "--json", "--state", "live").stdout)
    assert sorted(r["run_id"] for r in live) == [f"r00{900 + i}" for i in range(5)]
    assert len(env.cli("status", "--all").stdout.splitlines()) > 505
    bad = env.cli("status", "--state", "sleeping")
    assert bad.returncode == 2 and "--state" in bad.stderr
    assert env.cli("status", "--since", "soon").returncode == 2
    assert env.cli("status", "--campaign", "nope").returncode == 2


@pytest.mark.parametrize("columns", ["60", "120"])
def test_status_run_fits_too(env: Env, columns: str) -> None:
    _home_with_runs(env, 1, 0)
    env.vars["COLUMNS"] = columns
    out = env.cli("status", "r00000")
    assert out.returncode == 0, out.stderr
    assert all(len(row) <= int(columns) for row in out.stdout.splitlines())
    assert "SUCCEEDED" in out.stdout and "TRIALS" in out.stdout


def _watch_in_a_pane(
    env: Env, name: str, width: int, variables: str, history: bool
) -> Callable[[], str]:
    """`ajetd status --watch` in a 40-row tmux pane `width` wide of session `name` (with
    `variables` set), its exit code echoed after it; what reads the pane (`history`: its
    scrollback too)."""
    home = shlex.quote(str(env.home))
    command = (
        f"env {variables} AJETD_HOME={home} {PYTHON} -m ajetd status --watch;"
        " echo WATCH-EXIT $?; sleep 600"
    )
    made = env.tmux("new-session", "-d", "-s", name, "-x", str(width), "-y", "40", command)
    assert made.returncode == 0, made.stderr
    since = ("-S", "-") if history else ()

    def screen() -> str:
        return env.tmux("capture-pane", "-p", *since, "-t", f"={name}:").stdout

    return screen


def test_watch_redraws_in_a_real_tmux_pane_until_q(daemon_env: Env) -> None:
    env = daemon_env
    run_id = env.submit(env.blueprint("watched", config=env.config("watched", forever=True)))
    wait_for(lambda: env.record(run_id).get("state") == "running", what="the run to start")
    sock = shlex.quote(env.socket)
    screen = _watch_in_a_pane(env, "watcher", 110, f"AJETD_TMUX_SOCKET={sock}", history=False)

    first = wait_for(
        lambda: (s := screen()) and run_id in s and "LAST OUTPUT" in s and "step:" in s and s,
        timeout=30,
        what="the live view with the run and its output",
    )
    assert "ajetd status --watch" in first and "running" in first
    stamp = re.search(r"\d\d:\d\d:\d\d", first)
    assert stamp is not None
    wait_for(
        lambda: (s := re.search(r"\d\d:\d\d:\d\d", screen())) and s.group() != stamp.group(),
        timeout=15,
        what="a redraw",
    )
    assert all(len(row) <= 110 for row in screen().splitlines())
    env.tmux("send-keys", "-t", "=watcher:", "q")
    wait_for(lambda: "WATCH-EXIT 0" in screen(), timeout=15, what="q to end the view")
    assert "LAST OUTPUT" not in screen()  # the alternate screen is gone, the shell is back


def test_watch_on_a_dumb_terminal_prints_each_frame(env: Env) -> None:
    """On TERM=dumb (an editor's shell, a serial console) rich's live display draws nothing:
    `ajetd status --watch` showed a blank screen until q. A terminal that cannot redraw in
    place gets each frame printed below the last, every 2 s; q still ends it."""
    _home_with_runs(env, 2, 1)
    screen = _watch_in_a_pane(env, "dumb", 100, "TERM=dumb", history=True)

    wait_for(
        lambda: screen().count("ajetd status --watch") >= 2 and "r00000" in screen(),
        timeout=30,
        what="two frames, one below the other",
    )
    assert "\x1b" not in screen()
    env.tmux("send-keys", "-t", "=dumb:", "q")
    wait_for(lambda: "WATCH-EXIT 0" in screen(), timeout=15, what="q to end the view")


def test_watch_without_a_terminal_says_so_and_exits(env: Env) -> None:
    """Once it wrote escape codes into the pipe forever: a script or an agent calling
    `status --watch` never got control back."""
    _home_with_runs(env, 1, 0)
    out = env.cli("status", "--watch")  # stdout is a pipe here
    assert out.returncode == 2 and "needs a terminal" in out.stderr, out
    assert "ajetd status --json" in out.stderr and out.stdout == ""
    both = env.cli("status", "--watch", "--json")
    assert both.returncode == 2 and "--json prints once" in both.stderr, both


def test_a_submission_waiting_names_the_daemon_down(env: Env) -> None:
    run_id = env.submit(env.blueprint("waiting"))
    status = json.loads(env.cli("status", run_id, "--json").stdout)
    assert status["state"] == "queued"
    assert status["reason"] == f"waiting in the inbox: the daemon is {view.DAEMON_DOWN}"
    listed = json.loads(env.cli("status", "--json").stdout)
    assert [r["reason"] for r in listed] == [status["reason"]]


def test_campaign_lines_follow_the_filters() -> None:
    """`--state live` and `--since` hide a finished campaign as they hide an ended run."""
    runs = _world()
    done = view.Campaign("c1", "3/3", "ended", "done", "completed", done=True, ended_at=NOW - 60)
    going = view.Campaign("c2", "1/3", "going", started_at=NOW - 600)

    def shown(f: Filters) -> list[str]:
        lines = plain(overview(runs, f, NOW, 120, True, {}, [done, going])).splitlines()
        return [line.split()[1] for line in lines if line.startswith("campaign ")]

    assert shown(Filters()) == ["c1", "c2"]
    assert shown(Filters(state="live")) == ["c2"]
    assert shown(Filters(state="ended")) == shown(Filters(state="completed")) == ["c1"]
    assert shown(Filters(state="queued")) == []
    assert shown(Filters(since_s=1)) == ["c2"]  # ended a minute ago; the live one stays
    assert shown(Filters(since_s=3600)) == ["c1", "c2"]


def test_a_done_campaign_s_line_says_done_once() -> None:
    """walk92 F9: "campaign c-qy4cx3 (camp1) done (completed): ... best 0.7 (baseline) [done]"
    said done twice; `[done]` stays only where its phase does not say so."""
    done = view.Campaign("c1", "3/3", "camp1", "done", "completed", 0.7, "baseline", done=True)
    assert done.line() == "campaign c1 (camp1) done (completed): 3/3; best 0.7 (baseline)"
    stale = view.Campaign("c2", "3/3", "camp2", "running", done=True)
    assert stale.line().endswith(" [done]")


def test_the_default_view_shows_live_campaigns_and_the_last_ended_ones() -> None:
    """As for runs, the default view stays a screen: every live campaign, the three that
    ended last, then a count of the others; `--all` shows every one."""
    ended = [
        view.Campaign(f"e{i}", "3/3", f"old{i}", "done", "completed", done=True, ended_at=NOW - i)
        for i in range(6)
    ]
    going = view.Campaign("live", "1/3", "going", started_at=NOW - 600)

    def shown(f: Filters) -> list[str]:
        return plain(overview([], f, NOW, 120, True, {}, [*ended, going])).splitlines()

    default = shown(Filters())
    assert [line.split()[1] for line in default if line.startswith("campaign ")] == [
        "e0",
        "e1",
        "e2",
        "live",
    ]
    assert default[-1].startswith("3 older ended campaign(s) not shown (--all")
    assert len([line for line in shown(Filters(all=True)) if line.startswith("campaign ")]) == 7


def test_campaign_lines_are_in_the_order_the_campaigns_began() -> None:
    """Walk88 F12: the campaign lines under `status` came in id order (the records' folders
    sorted), a live campaign between ended ones; `campaign list` has them as they began."""
    by_id = [  # as `statusterm.campaigns` reads them: sorted by id
        view.Campaign("c-aaaaaa", "1/3", "second", started_at=NOW - 600),
        view.Campaign(
            "c-mmmmmm", "3/3", "third", "done", "completed", done=True, started_at=NOW - 300
        ),
        view.Campaign(
            "c-zzzzzz", "3/3", "first", "done", "completed", done=True, started_at=NOW - 900
        ),
    ]
    lines = plain(overview([], Filters(), NOW, 120, True, {}, by_id)).splitlines()
    shown = [line.split()[1] for line in lines if line.startswith("campaign ")]
    assert shown == ["c-zzzzzz", "c-aaaaaa", "c-mmmmmm"], shown


def test_a_piped_status_prints_every_line_whole(daemon_env: Env) -> None:
    """Walk88 F12: piped, `ajetd status` cut a run's reason at 400 characters with `…`,
    though a pipe is to get whole lines, for grep (an agent's `ajetd status | grep failed`
    lost the fix's words)."""
    env = daemon_env
    rejected = env.tmp / "rejected.md"
    rejected.write_text("just words, no parts\n")
    run_id = env.submit(rejected)
    reason = env.wait_done(run_id)["reason"]
    assert len(reason) > 400, reason
    piped = env.cli("status")
    said = [line for line in piped.stdout.splitlines() if line.startswith(f"rejected {run_id}: ")]
    assert said == [f"rejected {run_id}: {' '.join(reason.split())}"], piped.stdout


def test_a_stalled_heartbeat_is_named_only_past_three_periods() -> None:
    info = {"pid": 7, "heartbeat": 1000.0, "publish_every": 60}
    assert view.stalled(True, info, 1000.0 + 180) is None
    said = view.stalled(True, info, 1000.0 + 181)
    assert said is not None and "NOT RESPONDING" in said and "3m01s" in said and "pid 7" in said
    assert view.stalled(False, info, 5000.0) is None  # down is said otherwise
    held = {**info, "disk": ["cannot write to $AJETD_HOME: Read-only file system"]}
    assert view.stalled(True, held, 5000.0) is None  # it cannot write its heartbeat
    assert view.stalled(True, {"heartbeat": 1000.0}, 5000.0) is None  # an older daemon's file
    assert view.stalled(True, {**info, "publish_every": "x"}, 5000.0) is None


def test_status_names_a_daemon_whose_loop_stopped(daemon_env: Env) -> None:
    """A daemon that holds its home but whose loop no longer turns (stopped, wedged in a
    system call) looked healthy: nothing watched the runs and nothing said so."""
    env = daemon_env
    home = Home(env.home)
    wait_for(lambda: home.daemon_info().get("publish_every"), what="daemon.json")
    daemon = env.daemons[-1]
    daemon.send_signal(signal.SIGSTOP)
    try:
        info = home.daemon_info()
        info["heartbeat"] -= 17 * 60  # as if it had been stopped for 17 minutes
        env.home.joinpath("daemon.json").write_text(json.dumps(info))
        out = env.cli("status")
        assert "daemon: NOT RESPONDING" in out.stdout and f"pid {daemon.pid}" in out.stdout, out
        listed = env.cli("status", "--json")  # the list stays the contract; stderr says it
        assert json.loads(listed.stdout) == [] and "NOT RESPONDING" in listed.stderr, listed
    finally:
        daemon.send_signal(signal.SIGCONT)


def test_an_ended_run_without_validation_says_none_were_written() -> None:
    """'no validation results yet' promised some to come for a run that had ended."""
    live = replace(_run(8, State.RUNNING), history=(), metrics={})
    assert "no validation results yet" in plain(detail(live, NOW, 100))
    ended = replace(live, state=State.DONE, status=Status.SUCCEEDED, ended_at=NOW)
    text = plain(detail(ended, NOW, 100))
    assert "yet" not in text and "no validation results were written" in text


def test_status_run_shows_what_to_read_whole_in_any_width(daemon_env: Env) -> None:
    """`ajetd status RUN` is the run in full: on 80 columns a failed run's reason, each
    trial's next step and each finding's evidence, explanation and fix were cut with '…'
    mid-sentence (the fix unreadable), and a pipe's 400 columns cut a long rejection. They
    are wrapped; every line still fits the terminal."""
    env = daemon_env
    timeout = (
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
        "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600012 milliseconds before timing out."
    )
    bp = env.blueprint(
        "wrap", command=f"echo {shlex.quote(timeout)}; exit 1", ajetd="gpus: 0\nmax_trials: 2"
    )
    run_id = env.submit(bp)
    ended = env.wait_done(run_id)
    assert ended["status"] == "failed" and len(ended["reason"]) > 80, ended
    finding = ended["diagnosis"][0]
    texts = [ended["reason"], finding["evidence"], finding["explanation"], finding["fix"]]
    rejected = env.tmp / "rejected.md"
    rejected.write_text("just words, no parts\n")
    rejected_id = env.submit(rejected)
    reason = env.wait_done(rejected_id)["reason"]
    assert len(reason) > 400, reason
    for columns in ("80", "40"):
        env.vars["COLUMNS"] = columns
        shown = env.cli("status", run_id)
        assert shown.returncode == 0, shown.stderr
        assert max(len(line) for line in shown.stdout.splitlines()) <= int(columns), shown.stdout
        flat = " ".join(shown.stdout.split())
        for text in texts:
            assert " ".join(text.split()) in flat, (columns, text, shown.stdout)
        assert flat.count("next: ") == 2 and "…" not in flat.split("TRIALS")[0], shown.stdout
    del env.vars["COLUMNS"]
    piped = env.cli("status", rejected_id)  # a pipe: lines up to 400 columns, for grep
    assert " ".join(reason.split()) in " ".join(piped.stdout.split()), piped.stdout


def test_a_run_without_a_trial_says_so_under_trials() -> None:
    """A queued or rejected run's `status RUN` printed a bare TRIALS heading with nothing under
    it, where METRICS says 'no validation results yet'."""
    queued = Run(run_id="q00001", source="bp.md", submitted_at=NOW - 60)
    text = plain(detail(queued, NOW, 100))
    assert "TRIALS\n  none yet" in text, text
    rejected = model.reject(queued, "exp_purpose: missing", NOW)
    assert "TRIALS\n  none: no trial was launched" in plain(detail(rejected, NOW, 100))


def test_a_run_that_ran_on_no_gpu_ajetd_saw_is_not_called_unplaced() -> None:
    """`gpus: all` where ajetd sees no GPU leaves CUDA_VISIBLE_DEVICES as it was: the run ran,
    and `status RUN` said `GPUs not placed` of it (a blind walk read it as a run never placed)."""
    from ajetd.core.model import Run, State, Status
    from ajetd.views.rundetail import detail

    def gpus_line(run: Run) -> str:
        lines = ["".join(part for part, _ in line) for line in detail(run, 100.0, 120)]
        return next(line for line in lines if line.lstrip().startswith("GPUs"))

    ran = Run("abc123", "x.md", 1.0, state=State.DONE, status=Status.SUCCEEDED, started_at=2.0)
    assert "not restricted (no GPU seen" in gpus_line(ran)
    assert "not placed" in gpus_line(Run("abc124", "x.md", 1.0))  # queued
    assert "cpu" in gpus_line(Run("abc125", "x.md", 1.0, started_at=2.0, gpu_ids=()))


def test_an_ended_run_that_went_wrong_says_why_under_the_table() -> None:
    """A walk read `failed` in the table and had to ask `status RUN` for why, one run at a
    time: a shown ended run that failed, was lost or rejected has its reason on one line
    under the table (cut to the width); a success or a limit is the table's word alone."""
    why = "exited with code 1; cuda_oom: torch.OutOfMemoryError: CUDA out of memory.\nTried"
    runs = [
        _run(1),
        replace(_run(2), status=Status.FAILED, reason=why),
        replace(_run(3), status=Status.LOST, reason="its tmux session vanished"),
        replace(_run(4), status=Status.REJECTED, reason="exp_result_dir: missing"),
        replace(_run(5), status=Status.TIME_LIMIT, reason="stopped at exp_max_time (2h)"),
        replace(_run(6), status=Status.FAILED, reason="held", attention="reports held"),
    ]
    text = plain(overview(runs, Filters(), NOW, 80, True, {}))
    rows = text.splitlines()
    assert all(len(row) <= 80 for row in rows), max(rows, key=len)
    failed = next(r for r in rows if r.startswith("failed r00002: "))
    assert failed.startswith("failed r00002: exited with code 1; cuda_oom: torch.OutOfMem")
    assert failed.endswith("…") and "\n" not in failed
    assert "lost r00003: its tmux session vanished" in rows
    assert "rejected r00004: exp_result_dir: missing" in rows
    assert not any(r.startswith(("time_limit r00005", "succeeded r00001")) for r in rows)
    assert not any(r.startswith("failed r00006") for r in rows)  # its attention line says
    assert "! attention r00006: reports held" in text


def test_metric_columns_keep_the_end_of_a_long_key() -> None:
    """`task_pass_rate@1`, `@2` and `@4` were all headed `task_pass_rate`: a long key is
    cut in the middle, so its end (what tells the columns apart) stays."""
    run = _run(7, State.RUNNING)
    record = {"global_steps": 2, "task_pass_rate@1": 0.5, "task_pass_rate@2": 0.6}
    run = replace(run, history=({**record, "task_pass_rate@4": 0.7},), metric="task_pass_rate@1")
    text = plain(detail(run, NOW, 120))
    header = next(line for line in text.splitlines() if line.strip().startswith("step"))
    assert "task_pa…rate@1" in header and "task_pa…rate@2" in header, header
    assert "task_pa…rate@4" in header, header


def test_the_metric_column_is_headed_metric_where_a_run_shows_another_metric() -> None:
    """walk 89: `MEAN_REWARD` headed NeMo-RL rows that show `accuracy=0.4200`."""
    reward = replace(_run(1, State.RUNNING), history=({"global_steps": 1, "mean_reward": 0.5},))
    text = plain(overview([reward], Filters(), NOW, 100, True, {}))
    assert "MEAN_REWARD" in text.splitlines()[0] and "0.5000" in text
    nemo = replace(
        _run(2, State.RUNNING), history=({"step": 1, "accuracy": 0.42},), metric="accuracy"
    )
    text = plain(overview([reward, nemo], Filters(), NOW, 100, True, {}))
    assert "METRIC" in text.splitlines()[0] and "MEAN_REWARD" not in text, text
    assert "accuracy=0.4200" in text


_VALUES = st.lists(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300),
    min_size=1,
    max_size=40,
)


@given(_VALUES)
@settings(max_examples=300, deadline=None)
def test_a_sparkline_keeps_order_and_uses_every_bar_for_a_real_spread(values: list[float]) -> None:
    """One bar per value, never a higher bar for a lower value; a spread of at least the
    minimum span (of the values' magnitude) goes from the lowest bar to the highest."""
    line = view.sparkline(values)
    assert len(line) == len(values) and set(line) <= set(view.SPARK)
    levels = [view.SPARK.index(c) for c in line]
    for (a, la), (b, lb) in itertools.combinations(zip(values, levels, strict=True), 2):
        assert (a < b) <= (la <= lb) and (b < a) <= (lb <= la), (values, line)
    spread, size = max(values) - min(values), max(abs(v) for v in values)
    if spread > 0 and spread >= 1.01 * view.SPARK_MIN_SPAN * size:
        assert min(levels) == 0 and max(levels) == len(view.SPARK) - 1, (values, line)


@given(
    st.floats(min_value=1e-6, max_value=1e6) | st.floats(min_value=-1e6, max_value=-1e-6),
    st.lists(st.floats(min_value=-1.0, max_value=1.0), min_size=2, max_size=40),
)
@settings(max_examples=300, deadline=None)
def test_a_sparkline_draws_small_relative_noise_flat(centre: float, noise: list[float]) -> None:
    """Values that differ by a tenth of the minimum span of their magnitude or less (walk 81,
    L6: 0.6038 to 0.6049 drawn as full swings) are at most one bar apart."""
    wobble = view.SPARK_MIN_SPAN / 20 * abs(centre)
    values = [centre + n * wobble for n in noise]
    levels = [view.SPARK.index(c) for c in view.sparkline(values)]
    assert max(levels) - min(levels) <= 1, (values, levels)


def test_the_walks_noise_is_flat_and_a_real_climb_is_not() -> None:
    assert len(set(view.sparkline([0.6038, 0.6049, 0.6041, 0.6045, 0.6040]))) == 1
    assert view.sparkline([0.1, 0.3, 0.2, 0.6]) == "▁▃▂█"
    assert view.sparkline([0.0, 0.0]) == view.sparkline([0.5, 0.5]) == "▁▁"


def test_a_run_judged_by_another_metric_heads_the_column_metric_before_it_has_one() -> None:
    """walk92 F9: a NeMo-RL run (its metric `accuracy`) whose records a full home held showed
    `-` under MEAN_REWARD. The column is METRIC where a run is judged by another metric, and
    a run whose newest record is held in memory says `in memory` there."""
    from ajetd.core import unsaved

    nemo = Run("nemo01", "n.md", NOW - 60, state=State.RUNNING, started_at=NOW - 50)
    nemo = replace(nemo, kind="nemo_rl", metric="accuracy", warnings=(unsaved.NOTE,))
    text = plain(overview([nemo], Filters(), NOW, 120, True, {}, []))
    header = next(line for line in text.splitlines() if line.startswith("RUN"))
    assert "METRIC" in header and "MEAN_REWARD" not in header, text
    assert "in memory" in text, text
