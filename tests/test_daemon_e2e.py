"""The supervision loop end to end: a real daemon, real tmux, the fake launcher, real files."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from ajetd.adapters import procs
from conftest import Env, git, marked_processes, shared_paths, wait_for


def _flag(env: Env, name: str) -> dict[str, object]:
    return dict(json.loads((env.tmp / "results" / name / "finish.flag").read_text()))


def test_success_writes_results_and_flag_last(daemon_env: Env) -> None:
    env = daemon_env
    run_id = env.submit(env.blueprint("ok", purpose="Math top-k ablation k=4"))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded"
    assert status["exit_code"] == 0
    assert status["session"] == "ajet_math_top_k_ablation_k_4"
    assert status["metrics"]["global_steps"] == 4
    result = env.tmp / "results" / "ok"
    flag = _flag(env, "ok")
    assert flag["status"] == "succeeded" and flag["run_id"] == run_id and flag["trials"] == 1
    assert set(flag) >= {
        "run_id",
        "status",
        "reason",
        "exit_code",
        "trials",
        "started_at",
        "ended_at",
        "metrics",
    }
    # finish.flag is written after the reports it announces
    assert (result / "finish.flag").stat().st_mtime_ns >= (result / "results.md").stat().st_mtime_ns
    results = (result / "results.md").read_text()
    for section in (
        "## Purpose",
        "## Settings",
        "## Timeline",
        "## Trials",
        "## Validation metrics",
        "## GPU summary",
        "## Why it ended",
        "## Last 50 lines of output",
    ):
        assert section in results
    assert "| 4 |" in results  # the metrics table has the step-4 row
    log = (result / "logs" / "trial-1.log").read_text()
    assert "tty=True" in log  # the program saw a real terminal
    assert f"run={run_id}" in log and f"cwd={env.codebase}" in log
    assert "autokill=False" in log  # --autokill was removed (protect is the default)
    assert "Training finished." in log
    trials = (result / "trials.md").read_text()
    assert "## Trial 1" in trials and "exit code: 0" in trials
    assert env.launches() == [f"{run_id} 1"]


def test_a_command_on_continued_lines_runs_without_its_autokill(daemon_env: Env) -> None:
    """A launch command written over several lines (a fenced block, `\\` continuations) with
    `--autokill` on its own last line: removing the flag left the command ending in a lone
    `\\`, which the launcher got as an argument (exit 2, 'unrecognized arguments')."""
    env = daemon_env
    config = env.config("multi")
    command = f"python -m fakejet.launcher \\\n    --conf {config} \\\n    --autokill"
    bp = env.blueprint("multi", config=config, command="MULTI")
    text = bp.read_text().replace(
        "- [exp_launch_command] 执行训练的命令: `MULTI`\n",
        f"\n## [exp_launch_command]\n```bash\n{command}\n```\n\n## 其他实验相关信息\n",
    )
    assert "MULTI" not in text
    bp.write_text(text)
    status = env.wait_done(env.submit(bp))
    assert status["status"] == "succeeded", status
    log = (env.tmp / "results" / "multi" / "logs" / "trial-1.log").read_text()
    assert "autokill=False" in log and "Training finished." in log


def test_venv_is_active_in_the_trial(daemon_env: Env) -> None:
    env = daemon_env
    venv = env.tmp / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
        check=True,
    )
    probe = (
        'python -c \'import os, sys; e = os.environ; print("PFX", sys.prefix, e["VIRTUAL_ENV"],'
        ' e["PYTHONUNBUFFERED"], e["AJETD_RESULT_DIR"], e["CUDA_VISIBLE_DEVICES"] == "")\''
    )
    bp = env.blueprint("venv", command=probe, python=f"{venv}/bin/python", ajetd="gpus: 0")
    run_id = env.submit(bp)
    assert env.wait_done(run_id)["status"] == "succeeded"
    log = (env.tmp / "results" / "venv" / "logs" / "trial-1.log").read_text()
    assert f"PFX {venv} {venv} 1 {env.tmp / 'results' / 'venv'} True" in log


def test_crash_records_exit_code_and_traceback(daemon_env: Env) -> None:
    env = daemon_env
    config = env.config("crash", crash_at=3, exit_code=3)
    run_id = env.submit(env.blueprint("crash", config=config))
    status = env.wait_done(run_id)
    assert status["status"] == "failed"
    assert status["exit_code"] == 3
    assert "code 3" in status["reason"]
    assert env.cli("wait", run_id).returncode == 1
    trials = (env.tmp / "results" / "crash" / "trials.md").read_text()
    assert "torch.OutOfMemoryError: CUDA out of memory" in trials
    assert _flag(env, "crash")["exit_code"] == 3


def test_ctrl_c_from_attached_user_is_an_exit(daemon_env: Env) -> None:
    env = daemon_env
    config = env.config("ctrlc", forever=True, step_time=0.05)
    run_id = env.submit(env.blueprint("ctrlc", config=config, purpose="ctrl c"))
    wait_for(
        lambda: (
            "step:2" in (env.tmp / "results/ctrlc/logs/trial-1.log").read_text()
            if (env.tmp / "results/ctrlc/logs/trial-1.log").exists()
            else False
        )
    )
    session = env.status(run_id)["session"]
    assert env.tmux("send-keys", "-t", f"={session}:", "C-c").returncode == 0
    status = env.wait_done(run_id)
    assert status["status"] == "failed"
    assert status["exit_code"] == 130
    assert "SIGINT" in status["reason"]


def test_time_limit_stops_everything_and_keeps_data(daemon_env: Env) -> None:
    env = daemon_env
    config = env.config("limit", forever=True, step_time=0.05, ignore_sigint=True, orphan=True)
    run_id = env.submit(env.blueprint("limit", config=config, max_time="3s"))
    wait_for(lambda: env.record(run_id).get("started_at"), what="start")
    status = env.wait_done(run_id, timeout=30)
    assert status["status"] == "time_limit"
    assert status["exit_code"] == 143  # SIGINT ignored, so SIGTERM after the grace period
    assert status["metrics"]  # data kept
    events = [
        json.loads(line)
        for line in (env.home / "runs" / run_id / "events.jsonl").read_text().splitlines()
    ]
    started = env.record(run_id)["started_at"]
    stop_at = next(e["at"] for e in events if e["event"] == "stopping: time_limit")
    assert 3.0 <= stop_at - started < 4.0  # enforced within a second of exp_max_time
    assert marked_processes(run_id) == []
    assert env.cli("wait", run_id).returncode == 0
    assert _flag(env, "limit")["status"] == "time_limit"


def test_stop_command_ends_run_with_results(daemon_env: Env) -> None:
    env = daemon_env
    config = env.config("stop", forever=True, step_time=0.05)
    run_id = env.submit(env.blueprint("stop", config=config))
    wait_for(lambda: env.record(run_id).get("started_at"), what="start")
    out = env.cli("stop", run_id)
    assert out.returncode == 0, out.stderr
    status = env.status(run_id)
    assert status["status"] == "stopped"
    assert _flag(env, "stop")["status"] == "stopped"
    assert env.cli("wait", run_id).returncode == 1


def test_kill_9_and_restart_mid_run_launches_once(env: Env) -> None:
    daemon = env.start_daemon()
    config = env.config("restart", steps=40, step_time=0.05)
    run_id = env.submit(env.blueprint("restart", config=config))
    wait_for(lambda: env.record(run_id).get("started_at"), what="start")
    daemon.send_signal(signal.SIGKILL)
    daemon.wait()
    assert env.record(run_id)["state"] == "running"
    env.start_daemon()
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded"
    assert env.launches() == [f"{run_id} 1"]
    assert "watching again" in env.daemon_log()


def test_trial_that_ended_while_daemon_was_down_is_finished(env: Env) -> None:
    daemon = env.start_daemon()
    config = env.config("away", steps=10, step_time=0.05, exit_code=5)
    run_id = env.submit(env.blueprint("away", config=config))
    wait_for(lambda: env.record(run_id).get("started_at"), what="start")
    daemon.send_signal(signal.SIGKILL)
    daemon.wait()
    wait_for((env.home / "runs" / run_id / "trial-1.exit").exists, what="trial end")
    env.start_daemon()
    status = env.wait_done(run_id)
    assert status["status"] == "failed" and status["exit_code"] == 5
    assert env.launches() == [f"{run_id} 1"]


def test_blueprint_dropped_while_daemon_down_is_taken_on_start(env: Env) -> None:
    env.cli("status")  # nothing to show, creates nothing
    env.home.mkdir(mode=0o700)
    (env.home / "inbox").mkdir(mode=0o700)
    bp = env.blueprint("early")
    (env.home / "inbox" / "early.md").write_text(bp.read_text())
    os.utime(env.home / "inbox" / "early.md", (1, 1))  # settled long ago
    env.start_daemon()
    runs = wait_for(lambda: json.loads(env.cli("status", "--json").stdout), what="a run")
    assert len(runs) == 1
    assert env.wait_done(runs[0]["run_id"])["status"] == "succeeded"
    assert not (env.home / "inbox" / "early.md").exists()


def test_second_daemon_on_same_home_refuses(daemon_env: Env) -> None:
    env = daemon_env
    second = env.start_daemon()
    assert second.wait(timeout=20) == 1
    assert "another ajetd daemon" in env.daemon_log()
    assert env.daemons[0].poll() is None


def test_tmux_server_killed_marks_runs_lost_and_daemon_survives(daemon_env: Env) -> None:
    env = daemon_env
    config = env.config("lost", forever=True, step_time=0.05, orphan=True)
    run_id = env.submit(env.blueprint("lost", config=config))
    wait_for(lambda: env.record(run_id).get("started_at"), what="start")
    env.tmux("kill-server")
    status = env.wait_done(run_id)
    assert status["status"] == "lost"
    assert status["exit_code"] is None
    assert _flag(env, "lost")["status"] == "lost"
    assert env.daemons[0].poll() is None
    # the daemon keeps working: a new run starts a new tmux server
    again = env.submit(env.blueprint("after"))
    assert env.wait_done(again)["status"] == "succeeded"


def test_result_dir_reuse_is_refused(daemon_env: Env) -> None:
    env = daemon_env
    first = env.submit(env.blueprint("reuse", result=str(env.tmp / "results" / "same")))
    env.wait_done(first)
    before = (env.tmp / "results" / "same" / "finish.flag").read_text()
    second = env.submit(env.blueprint("reuse2", result=str(env.tmp / "results" / "same")))
    status = env.wait_done(second)
    assert status["status"] == "rejected"
    assert "already holds" in status["reason"]
    assert (env.tmp / "results" / "same" / "finish.flag").read_text() == before


def test_rejected_blueprint_gets_results_and_flag(daemon_env: Env) -> None:
    env = daemon_env
    bp = env.blueprint("bad")
    bp.write_text(bp.read_text().replace(str(env.codebase), str(env.tmp / "nowhere"), 1))
    run_id = env.submit(bp)
    status = env.wait_done(run_id)
    assert status["status"] == "rejected"
    assert "exp_codebase_dir" in status["reason"]
    flag = _flag(env, "bad")
    assert flag["status"] == "rejected" and flag["exit_code"] is None
    assert "exp_codebase_dir" in (env.tmp / "results" / "bad" / "results.md").read_text()
    assert list((env.home / "rejected").glob(f"{run_id}__*.why.txt"))
    assert env.cli("wait", run_id).returncode == 1
    garbage = env.tmp / "garbage.md"
    garbage.write_bytes(b"\xff\xfe not a blueprint \x00")
    assert env.wait_done(env.submit(garbage))["status"] == "rejected"
    assert env.daemons[0].poll() is None


def test_insecure_inbox_is_refused_until_fixed(daemon_env: Env) -> None:
    env = daemon_env
    os.chmod(env.home / "inbox", 0o777)
    run_id = env.submit(env.blueprint("insecure"))
    wait_for(lambda: "writable by others" in env.cli("status").stdout, what="the refusal")
    assert env.record(run_id) == {}
    reason = env.status(run_id)["reason"]  # the waiting run names the cause, as the header does
    assert reason.startswith("waiting in the inbox: the daemon is not taking blueprints: ")
    assert "inbox is writable by others" in reason, reason
    os.chmod(env.home / "inbox", 0o700)
    assert env.wait_done(run_id)["status"] == "succeeded"


def test_foreign_blueprint_is_not_taken(daemon_env: Env) -> None:
    env = daemon_env
    if os.getuid() != 0:
        import pytest

        pytest.skip("needs root to give a file to another user")
    # The file appears in the inbox already foreign, by a rename, as another user's `mv`
    # would make it: written there and chowned after, it would be this user's complete file
    # for an instant, which the daemon rightly takes at once on its close.
    made = env.blueprint("foreign")
    os.chown(made, 65534, 65534)
    path = env.home / "inbox" / "foreign.md"
    made.rename(path)
    wait_for(lambda: "owned by uid 65534" in env.cli("status").stdout, what="the refusal")
    assert path.exists()


def test_wait_exit_codes_attention_and_timeout(daemon_env: Env) -> None:
    env = daemon_env
    config = env.config("hang", steps=1, hang=True)
    run_id = env.submit(env.blueprint("hang", config=config, ajetd="hang: {window: 1s}"))
    wait_for(lambda: env.record(run_id).get("started_at"), what="start")
    out = env.cli("wait", run_id, "--timeout", "20")
    assert out.returncode == 2, out.stdout + out.stderr
    assert env.status(run_id)["attention"].startswith("no output for")
    config2 = env.config("long", forever=True)
    long_id = env.submit(env.blueprint("long", config=config2))
    out = env.cli("wait", long_id, "--timeout", "0.5")
    assert out.returncode == 124
    assert env.cli("wait", "zzzzzz").returncode == 2
    assert env.cli("status", "nope").returncode == 2
    env.cli("stop", run_id)
    env.cli("stop", long_id)


def test_status_json_fields_and_table(daemon_env: Env) -> None:
    env = daemon_env
    run_id = env.submit(env.blueprint("fields"))
    env.wait_done(run_id)
    runs = json.loads(env.cli("status", "--json").stdout)
    assert isinstance(runs, list) and runs[0]["run_id"] == run_id
    for key in (
        "run_id",
        "purpose",
        "session",
        "state",
        "status",
        "trial",
        "attention",
        "started_at",
        "ended_at",
        "max_time_s",
        "result_dir",
        "exit_code",
        "metrics",
    ):
        assert key in runs[0]
    assert runs[0]["max_time_s"] == 120.0
    assert runs[0]["started_at"].endswith("Z")
    table = env.cli("status").stdout
    assert run_id in table and "succeeded" in table and "MEAN_REWARD" in table
    logs = env.cli("logs", run_id)
    assert "Training finished." in logs.stdout


def test_session_names_are_unique(daemon_env: Env) -> None:
    env = daemon_env
    env.tmux("new-session", "-d", "-s", "ajet_same_purpose", "sleep 60")
    a = env.submit(env.blueprint("a", purpose="same purpose"))
    assert env.wait_done(a)["session"] == "ajet_same_purpose_2"
    b = env.submit(env.blueprint("b", purpose="同样的目的"))
    assert env.wait_done(b)["session"] == "ajet_b"


def test_attach_gives_a_real_client_and_logs_follow(daemon_env: Env) -> None:
    env = daemon_env
    config = env.config("attach", steps=60, step_time=0.05)
    run_id = env.submit(env.blueprint("attach", config=config, purpose="attach me"))
    wait_for(lambda: env.record(run_id).get("started_at"), what="start")
    # a user's terminal: `ajetd attach` on a pseudo-terminal, outside tmux
    cmd = f"{sys.executable} -m ajetd attach {run_id}"
    terminal = subprocess.Popen(
        ["script", "-qfec", cmd, "/dev/null"],
        env=env.vars,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for(
        lambda: "ajet_attach_me" in env.tmux("list-clients", "-F", "#{client_session}").stdout,
        what="an attached client",
    )
    follow = env.cli("logs", run_id, "-f", timeout=60)  # returns once the run has ended
    assert follow.returncode == 0
    assert follow.stdout.count("Training finished.") == 1
    assert env.wait_done(run_id)["status"] == "succeeded"
    # walk 86, F14: the program's own line ends (the log holds the terminal's `\r\n`)
    raw = subprocess.run(
        [sys.executable, "-m", "ajetd", "logs", run_id],
        env=env.vars,
        capture_output=True,
        check=False,
        timeout=60,
    )
    log = (env.tmp / "results" / "attach" / "logs" / "trial-1.log").read_bytes()
    assert raw.returncode == 0 and b"\r\n" in log and b"\r\n" not in raw.stdout
    assert raw.stdout == log.replace(b"\r\n", b"\n")  # the progress bar's `\r` redraws kept
    env.tmux("detach-client", "-s", "=ajet_attach_me")
    assert terminal.wait(timeout=20) == 0


def test_session_closed_after_keep_time(daemon_env: Env) -> None:
    env = daemon_env
    run_id = env.submit(env.blueprint("keep", purpose="keep short", ajetd="keep_session: 1s"))
    env.wait_done(run_id)
    assert "ajet_keep_short" in env.tmux("ls").stdout or True  # may already be closed
    wait_for(lambda: "ajet_keep_short" not in env.tmux("ls").stdout, what="session closed")


def test_file_closed_after_writing_is_taken_at_once(daemon_env: Env) -> None:
    env = daemon_env
    text = env.blueprint("closed").read_text()
    with open(env.home / "inbox" / "closed.md", "w") as handle:
        handle.write(text[:40])
        handle.flush()
        handle.write(text[40:])
    runs = wait_for(lambda: json.loads(env.cli("status", "--json").stdout), what="a run")
    assert env.wait_done(runs[0]["run_id"])["status"] == "succeeded"
    assert runs[0]["blueprint"] == "closed.md"


def test_fixed_blueprint_may_reuse_the_dir_of_its_rejection(daemon_env: Env) -> None:
    env = daemon_env
    result = str(env.tmp / "results" / "fixme")
    bad = env.blueprint("fixme", result=result, max_time="whenever")
    first = env.submit(bad)
    assert env.wait_done(first)["status"] == "rejected"
    assert _flag(env, "fixme")["status"] == "rejected"
    second = env.submit(env.blueprint("fixme", result=result))
    assert env.wait_done(second)["status"] == "succeeded"
    assert _flag(env, "fixme")["run_id"] == second
    kept = env.tmp / "results" / "fixme" / f"rejected-{first}" / "finish.flag"
    assert json.loads(kept.read_text())["run_id"] == first  # moved aside, never lost


def test_markdown_extension_and_other_files_ignored(daemon_env: Env) -> None:
    env = daemon_env
    (env.home / "inbox" / "notes.txt").write_text("not a blueprint")
    (env.home / "inbox" / "exp.Markdown").write_text(env.blueprint("ext").read_text())
    runs = wait_for(lambda: json.loads(env.cli("status", "--json").stdout), what="a run")
    assert len(runs) == 1 and runs[0]["blueprint"] == "exp.md"
    assert env.wait_done(runs[0]["run_id"])["status"] == "succeeded"
    assert (env.home / "inbox" / "notes.txt").exists()


def test_submitted_run_is_queued_before_the_daemon_takes_it(env: Env) -> None:
    run_id = env.submit(env.blueprint("pending"))  # no daemon yet
    status = env.status(run_id)
    assert status["state"] == "queued" and status["status"] is None
    assert "inbox" in status["reason"]
    assert [r["run_id"] for r in json.loads(env.cli("status", "--json").stdout)] == [run_id]
    assert env.cli("wait", run_id, "--timeout", "0.3").returncode == 124
    env.start_daemon()
    assert env.cli("wait", run_id, "--timeout", "30").returncode == 0


def test_submit_then_wait_at_once(daemon_env: Env) -> None:
    env = daemon_env
    for name in ("race1", "race2", "race3"):
        run_id = env.submit(env.blueprint(name))
        assert env.cli("wait", run_id, "--timeout", "30").returncode == 0


def test_a_blueprint_on_standard_input_is_submitted(daemon_env: Env) -> None:
    """`ajetd submit -` (an agent's here-document): by the fast path and the full command line;
    more than a blueprint may be is refused, nothing submitted."""
    env = daemon_env
    for n, args in enumerate((("submit", "-"), ("submit", "--", "-"))):
        got = subprocess.run(
            [sys.executable, "-m", "ajetd", *args],
            input=env.blueprint(f"piped{n}").read_bytes(),  # a result dir each
            env=env.vars,
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert got.returncode == 0, got.stderr
        status = env.wait_done(got.stdout.decode().strip())
        assert status["status"] == "succeeded" and status["blueprint"] == "stdin.md"
    got = subprocess.run(
        [sys.executable, "-m", "ajetd", "submit", "-"],
        input=b"x" * (1024 * 1024 + 1),
        env=env.vars,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert got.returncode == 2
    assert b"standard input: larger than 1024 KiB" in got.stderr


def test_stop_before_admission_is_honoured(env: Env) -> None:
    run_id = env.submit(env.blueprint("early_stop"))
    assert env.cli("stop", run_id, "--no-wait").returncode == 1  # no daemon: filed, says so
    env.start_daemon()
    status = env.wait_done(run_id)
    assert status["status"] == "stopped" and env.launches() == []


def test_huge_file_is_rejected_not_read(daemon_env: Env) -> None:
    """Dropped into the inbox (`ajetd submit` refuses such a file itself: test_cli_usage).
    Whatever is rejected, the user's file is kept whole in rejected/, byte for byte: one too
    large (read only to its limit), one not UTF-8, one in UTF-16 (walk 28's H5: the first was
    kept cut to 1 MiB, the others rewritten as the daemon decoded them)."""
    env = daemon_env
    files = {
        "huge": b"# big\n" + b"x" * (1024 * 1024 + 178_000),
        "latin": "# caf\u00e9\n- [exp_purpose] \u00e9t\u00e9\n".encode("latin-1") * 3,
        "wide": "\ufeff# wide\n- [exp_purpose] no other part\n".encode("utf-16-le"),
    }
    for name, data in files.items():
        (env.tmp / f"{name}.md").write_bytes(data)
        os.rename(env.tmp / f"{name}.md", env.home / "inbox" / f"{name}.md")

    def all_ended() -> list[dict[str, Any]]:
        runs = json.loads(env.cli("status", "--json").stdout)
        return runs if len(runs) == 3 and all(r["state"] == "done" for r in runs) else []

    runs = wait_for(all_ended, what="three runs rejected")
    by_name = {r["blueprint"]: r for r in runs}
    assert "larger than" in by_name["huge.md"]["reason"]
    for name, data in files.items():
        run = by_name[f"{name}.md"]
        assert run["status"] == "rejected", run
        kept = env.home / "rejected" / f"{run['run_id']}__{name}.md"
        assert kept.read_bytes() == data, name
        assert kept.stat().st_nlink == 1  # not shared with the daemon's copy in runs/
        note = kept.with_name(f"{kept.stem}.why.txt").read_text()
        assert "the file as it came, byte for byte" in note
    assert not list((env.home / "inbox").iterdir())


def test_session_killed_by_hand_is_lost_at_once(daemon_env: Env) -> None:
    env = daemon_env
    config = env.config("killed", forever=True, step_time=0.05)
    run_id = env.submit(env.blueprint("killed", config=config, purpose="killed by hand"))
    wait_for(lambda: env.record(run_id).get("started_at"), what="start")
    env.tmux("kill-session", "-t", "=ajet_killed_by_hand")
    status = env.wait_done(run_id, timeout=3)  # event-driven, not the 5 s liveness poll
    assert status["status"] == "lost" and status["exit_code"] is None


def test_session_killed_by_hand_is_lost_even_while_the_program_is_quiet(
    daemon_env: Env,
) -> None:
    # A silent program never hits the closed terminal, and the trial script's HUP trap waits
    # for it: the pane's process lives on without a terminal, which must not pass for alive.
    env = daemon_env
    blueprint = env.blueprint("quiet", purpose="quiet then killed", command="sleep 300")
    run_id = env.submit(blueprint)
    wait_for(lambda: env.record(run_id).get("started_at"), what="start")
    env.tmux("kill-session", "-t", "=ajet_quiet_then_killed")
    status = env.wait_done(run_id, timeout=10)  # not the 60 s between two tmux polls
    assert status["status"] == "lost" and status["exit_code"] is None


def test_a_pane_process_that_outlives_its_killed_session_has_lost_its_terminal(env: Env) -> None:
    # What the daemon's cheap liveness check looks at between two tmux polls (up to 60 s).
    script = "trap 'exit 129' HUP; sleep 300"
    env.tmux("new-session", "-d", "-s", "quiet", "bash", "-c", script)
    pid = int(env.tmux("list-panes", "-t", "=quiet", "-F", "#{pane_pid}").stdout)
    # tmux's child takes its terminal just after the fork that gave it its pid: until then it
    # has none (a listing taken in between read as a lost terminal, once in a full run)
    wait_for(lambda: not procs.lost_terminal(pid), timeout=5, what="the pane's terminal")
    env.tmux("kill-session", "-t", "=quiet")
    wait_for(lambda: procs.lost_terminal(pid), timeout=5, what="the hangup")
    assert procs.started(pid) is not None  # still alive: only its terminal tells
    shell = psutil.Process(pid)
    for proc in [*shell.children(), shell]:
        proc.kill()


def test_failed_trial_is_diagnosed(daemon_env: Env) -> None:
    env = daemon_env
    config = env.config("oom", crash_at=2, exit_code=1)
    run_id = env.submit(env.blueprint("oom", config=config))
    status = env.wait_done(run_id)
    assert status["status"] == "failed"
    assert status["diagnosis"][0]["kind"] == "cuda_oom"
    trials = (env.tmp / "results" / "oom" / "trials.md").read_text()
    assert "`cuda_oom` (science, no fix allowed" in trials  # nothing retries it here
    assert "no fix allowed ([ajetd] allow_fixes): the run ends" in trials
    finding = status["diagnosis"][0]
    assert finding["severity"] == "science" and finding["explanation"] and finding["fix"]
    out = env.cli("diagnose", str(env.tmp / "results" / "oom" / "logs" / "trial-1.log"), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)[0]["kind"] == "cuda_oom"


@pytest.mark.parametrize("code", [0, 1])
def test_ajetds_own_lines_are_never_findings(daemon_env: Env, code: int) -> None:
    """The banner holds the launch command, error text and all; it and the exit line are
    ajetd's, not the program's: a silent program has no finding, whatever its command says."""
    env = daemon_env
    command = f"echo -n; exit {code} # CUDA out of memory. Tried to allocate 2.00 GiB"
    run_id = env.submit(env.blueprint(f"quiet{code}", command=command))
    status = env.wait_done(run_id)
    assert status["status"] == ("succeeded" if code == 0 else "failed")
    assert status["diagnosis"] == [], status["diagnosis"]
    result = env.tmp / "results" / f"quiet{code}"
    log = result / "logs" / "trial-1.log"
    assert "CUDA out of memory" in log.read_text()  # the banner is there, and read past
    assert "cuda_oom" not in (result / "trials.md").read_text()
    out = env.cli("diagnose", str(log), "--json")
    assert out.returncode == 0 and json.loads(out.stdout) == [], out.stdout


NETWORK = (
    "requests.exceptions.ProxyError: HTTPSConnectionPool(host='huggingface.co', port=443): "
    "Max retries exceeded with url: /api/models (Caused by ProxyError('Unable to connect to proxy'))"
)
NCCL = (
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
    "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5"
)


def _proxychains_shim(env: Env, name: str = "proxychains4") -> None:
    """A stand-in for proxychains4 on the daemon's PATH: marks the environment, runs the rest.
    Named `proxychains` (version 3, the command seed 001 names), it takes no `-q`: its
    script would run `-q` as the program."""
    bin_dir = env.tmp / "bin"
    bin_dir.mkdir()
    shim = bin_dir / name
    quiet = '[ "$1" = "-q" ] && shift' if name == "proxychains4" else '[ "$1" = "-q" ] && exit 127'
    shim.write_text(f'#!/bin/sh\n{quiet}\nexport PROXIED=1\nexec "$@"\n')
    shim.chmod(0o755)
    env.vars["PATH"] = f"{bin_dir}:{env.vars['PATH']}"


@pytest.mark.parametrize(
    "proxychains, under",
    [
        ("proxychains4", "proxychains4 -q python"),
        # seed 001 says `proxychains python xxx.py`: version 3 alone installed is used as the
        # seed writes it (it takes no -q), not "proxychains4 is not installed"
        ("proxychains", "/proxychains python"),
    ],
)
def test_network_failure_is_relaunched_under_proxychains(
    env: Env, proxychains: str, under: str
) -> None:
    _proxychains_shim(env, proxychains)
    env.start_daemon()
    config = env.config("net", fail={"text": NETWORK, "unless_env": {"PROXIED": 1}})
    run_id = env.submit(env.blueprint("net", config=config, purpose="net fix"))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded" and status["trials"] == 2, status
    assert status["command"].endswith(f"{under} -m fakejet.launcher --conf configs/net.yaml")
    trials = (env.tmp / "results" / "net" / "trials.md").read_text()
    shown = under.lstrip("/").removesuffix(" python")
    assert "`network` (retryable" in trials and f"relaunched under {shown}\n" in trials
    assert "## Fixes applied" in (env.tmp / "results" / "net" / "results.md").read_text()
    assert env.launches() == [f"{run_id} 1", f"{run_id} 2"]
    assert [s for s in env.tmux("ls", "-F", "#{session_name}").stdout.split() if "net" in s] == [
        "ajet_net_fix"
    ]  # the relaunch reused the session's pane


def test_a_clean_exit_without_a_validation_record_is_a_success_that_says_so(
    daemon_env: Env,
) -> None:
    env = daemon_env
    command = "python -c \"print('nothing to do')\""
    run_id = env.submit(env.blueprint("noop", command=command))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    assert status["reason"] == "the program exited with code 0; it wrote no validation record"
    flag = json.loads((env.tmp / "results" / "noop" / "finish.flag").read_text())
    assert flag["reason"] == status["reason"]


def test_nccl_error_is_relaunched_with_nvls_off(daemon_env: Env) -> None:
    env = daemon_env
    config = env.config("nccl", fail={"text": NCCL, "unless_env": {"NCCL_NVLS_ENABLE": 0}})
    run_id = env.submit(env.blueprint("nccl", config=config))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded" and status["trials"] == 2
    # the relaunch's command shows its fix (it read as trial 1's, the fix nowhere in it)
    first, second = (t["command"] for t in env.record(run_id)["trials"])
    assert second == f"NCCL_NVLS_ENABLE=0 {first}" and status["command"] == second
    trials = (env.tmp / "results" / "nccl" / "trials.md").read_text()
    assert f"- command: `NCCL_NVLS_ENABLE=0 {first}`" in trials, trials


def test_two_validation_datasets_at_one_step_never_mix(daemon_env: Env) -> None:
    """walk89 F19: AgentJet writes a record per validation dataset (`target_dataset_name`),
    main then ood, at each step. The run's last values were the ood set's (mean_reward 0.1
    while main was at 0.7) and the plateau rule judged the two interleaved. The main set (the
    first named) judges the run; the others are rows of results.md's table, named."""
    env = daemon_env
    config = env.config("two", steps=6, rewards=[0.3, 0.5, 0.7], second_dataset=True)
    rule = "plateau: {metric: mean_reward, patience: 1, min_delta: 0.005, after: 0.0}"
    run_id = env.submit(env.blueprint("two", config=config, ajetd=rule))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status  # 0.3, 0.5, 0.7: no plateau
    assert status["metrics"]["mean_reward"] == 0.7, status["metrics"]
    assert status["metrics"]["target_dataset_name"] == "main_val_dataset"
    flag = json.loads((env.tmp / "results" / "two" / "finish.flag").read_text())
    assert flag["metrics"]["mean_reward"] == 0.7 and flag["best"]["value"] == 0.7, flag
    results = (env.tmp / "results" / "two" / "results.md").read_text()
    assert "| trial | step | target_dataset_name | mean_reward |" in results, results
    assert "| 1 | 6 | ood_val_dataset | 0.1000 |" in results
    assert "- **mean_reward**: first 0.3000, best 0.7000 (step 6), last 0.7000" in results


def test_results_md_names_the_validation_settings_beside_the_metrics(daemon_env: Env) -> None:
    """walk89 F20: seed 001 lists `pass_n` and `total_tasks` among the val attributes; they are
    no metric (the same in every record), and results.md's table left them out in silence
    though the README says every metric is shown. They are said under the table."""
    env = daemon_env
    run_id = env.submit(env.blueprint("sets", config=env.config("sets")))
    assert env.wait_done(run_id)["status"] == "succeeded"
    results = (env.tmp / "results" / "sets" / "results.md").read_text()
    said = "Validation settings (no metric, so no column): pass_n 4, total_tasks 1319."
    assert said in results, results


def test_results_metrics_say_which_trial_wrote_each_row(daemon_env: Env) -> None:
    """A relaunched run's validation rows start again at step 2: results.md's table had no
    trial column, so a reader could not tell trial 1's rows from trial 2's. Trial 1 writes
    steps 2 and 4 and then fails (NCCL: relaunched with NVLS off), trial 2 writes them again."""
    env = daemon_env
    fail = {"text": NCCL, "unless_env": {"NCCL_NVLS_ENABLE": 0}, "at_step": 4}
    run_id = env.submit(env.blueprint("again", config=env.config("again", fail=fail)))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded" and status["trials"] == 2, status
    results = (env.tmp / "results" / "again" / "results.md").read_text()
    table = results[results.index("| trial | step | mean_reward |") :]
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[:2] for row in rows[1:]] == [
        ["| 1", "2"],
        ["| 1", "4"],
        ["| 2", "2"],
        ["| 2", "4"],
    ], rows
    trials = [t["first_record"] for t in env.record(run_id)["trials"]]
    assert trials == [0, 2], trials


def test_fatal_kind_is_not_retried_and_budget_is_kept(daemon_env: Env) -> None:
    env = daemon_env
    config = env.config(
        "fatal",
        fail={"text": "ModuleNotFoundError: No module named 'vllm'", "unless_env": {"NEVER": 1}},
    )
    run_id = env.submit(env.blueprint("fatal", config=config))
    status = env.wait_done(run_id)
    assert status["status"] == "failed" and status["trials"] == 1
    assert "import_error" in status["reason"] and "fatal" in status["reason"]
    config2 = env.config("budget", fail={"text": NCCL, "unless_env": {"NEVER": 1}})
    budget = env.submit(env.blueprint("budget", config=config2, ajetd="max_trials: 1"))
    status = env.wait_done(budget)
    assert status["trials"] == 1 and "retry budget spent" in status["reason"]
    config3 = env.config("twice", fail={"text": NCCL, "unless_env": {"NEVER": 1}})
    twice = env.submit(env.blueprint("twice", config=config3))
    status = env.wait_done(twice)
    assert status["trials"] == 2 and "again with NCCL_NVLS_ENABLE=0" in status["reason"]


def test_plateau_stops_a_flat_run(daemon_env: Env) -> None:
    env = daemon_env
    config = env.config("flat", forever=True, flat=True, step_time=0.05)
    rule = "plateau: {metric: mean_reward, patience: 2, min_delta: 0.001, after: 0.25}"
    run_id = env.submit(env.blueprint("flat", config=config, max_time="8s", ajetd=rule))
    status = env.wait_done(run_id, timeout=30)
    assert status["status"] == "plateau", status
    assert "mean_reward has not improved" in status["reason"]
    assert 2.0 <= status["elapsed_s"] < 8.0  # after a quarter of the budget, before the limit
    assert env.cli("wait", run_id).returncode == 0
    assert (
        json.loads((env.tmp / "results" / "flat" / "finish.flag").read_text())["status"]
        == "plateau"
    )


def test_a_collapsing_metric_runs_on_until_it_stops_changing(daemon_env: Env) -> None:
    """walk89 F8: a metric falling at every validation (0.5 → 0.2) was stopped as `plateau`
    at its first falls; seed 001 stops early only a run whose metric stopped changing. It
    runs on through the fall and stops once it stays at 0.2, its reason saying it fell."""
    env = daemon_env
    rewards = [0.3, 0.4, 0.5, 0.44, 0.38, 0.32, 0.26, 0.2]
    config = env.config("fall", forever=True, step_time=0.15, rewards=rewards)
    rule = "plateau: {metric: mean_reward, patience: 3, min_delta: 0.005, after: 0.0}"
    run_id = env.submit(env.blueprint("fall", config=config, max_time="40s", ajetd=rule))
    status = env.wait_done(run_id, timeout=60)
    assert status["status"] == "plateau", status
    assert (
        "(best 0.5000, last 0.2000; it fell below its best before it stopped changing)"
        in (status["reason"])
    ), status["reason"]
    history = json.loads((env.tmp / "results" / "fall" / "run.json").read_text())["history"]
    assert [h["mean_reward"] for h in history[:8]] == rewards  # the whole fall was run
    assert [h["mean_reward"] for h in history[8:]][:3] == [0.2] * 3, history


def test_signature_of_a_running_program_is_noticed_within_2s(daemon_env: Env) -> None:
    env = daemon_env
    config = env.config("live", steps=1, hang=True)  # prints, then stays alive and silent
    run_id = env.submit(env.blueprint("live", config=config))
    wait_for(lambda: env.record(run_id).get("started_at"), what="start")
    log = env.tmp / "results" / "live" / "logs" / "trial-1.log"
    wait_for(lambda: log.exists() and "waiting for rollout workers" in log.read_text())
    # a worker's traceback lands in the log while the driver still runs (as under Ray)
    with open(log, "a") as handle:
        handle.write(
            "(WorkerDict pid=7) torch.OutOfMemoryError: CUDA out of memory. Tried to "
            "allocate 2.00 GiB.\n"
        )
    written = time.monotonic()
    wait_for(
        lambda: any(
            f["kind"] == "cuda_oom"
            for t in env.record(run_id).get("trials", [])
            for f in t.get("live_findings", [])
        ),
        timeout=5,
        what="a live finding",
    )
    assert time.monotonic() - written < 2.0
    assert env.status(run_id)["diagnosis"][0]["kind"] == "cuda_oom"
    env.cli("stop", run_id)


def test_config_is_fixed_in_a_copy_and_the_original_kept(daemon_env: Env) -> None:
    env = daemon_env
    config = env.config("patch")
    path = env.codebase / config
    data = yaml.safe_load(path.read_text())
    data["ajet"]["execute_test"] = True
    data["ajet"]["trainer_common"]["val_before_train"] = False
    data["ajet"]["trainer_common"]["logger"] = "swanlab"  # no SWANLAB_API_KEY: swapped
    del data["ajet"]["trainer_common"]["val_print_to_markdown_file_path"]
    path.write_text(yaml.safe_dump(data))
    before = path.read_text()
    lint = json.loads(env.cli("lint", str(env.blueprint("patch", config=config)), "--json").stdout)
    assert lint["ok"] and lint["blueprint"]["config_verdict"] == "patched"
    run_id = env.submit(env.blueprint("patch", config=config))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded"
    assert status["command"].endswith(f"--conf configs/patch.ajetd-{run_id}.yaml")
    assert path.read_text() == before  # the user's file is never edited
    copy = yaml.safe_load((env.codebase / "configs" / f"patch.ajetd-{run_id}.yaml").read_text())
    assert copy["ajet"]["execute_test"] is False
    result = env.tmp / "results" / "patch"
    assert copy["ajet"]["trainer_common"]["val_print_to_markdown_file_path"] == str(
        result / "val_results.md"
    )
    assert status["metrics"]["global_steps"] == 4  # read from the new val file
    text = (result / "results.md").read_text()
    assert "## Config changes (preflight)" in text and "execute_test: True → False" in text
    # the line labelled as the blueprint's says what the blueprint said, not ajetd's copy
    own = f"python -m fakejet.launcher --conf {config} --autokill"
    assert f"- launch command (blueprint): `{own}`\n" in text
    assert f"patch.ajetd-{run_id}.yaml" in text.split("- command run:")[1]
    # every change made at admission is among its warnings too (README: "what was changed
    # or doubted at admission"), in status RUN --json, status --json and status RUN (walk
    # 28's M3: results.md listed the logger swap and the val file moved, `warnings` was [])
    changed = [w for w in status["warnings"] if w.startswith("config changed at admission: ")]
    assert any("logger: swanlab → tensorboard" in w for w in changed), status["warnings"]
    assert any(f"→ {result / 'val_results.md'}" in w for w in changed), status["warnings"]
    assert any("execute_test: True → False" in w for w in changed), status["warnings"]
    for line in text.split("## Config changes (preflight)")[1].split("\n\n")[1].splitlines():
        assert f"config changed at admission: {line[2:]}" in status["warnings"], line
    listed = json.loads(env.cli("status", "--json").stdout)
    assert next(r["warnings"] for r in listed if r["run_id"] == run_id) == status["warnings"]
    shown = " ".join(env.cli("status", run_id).stdout.split())
    assert "warning config changed at admission: ajet.trainer_common.logger: swanlab" in shown


def test_two_live_runs_never_read_one_val_file(daemon_env: Env) -> None:
    """Once the second run of one config read the first's validation lines as its own (and
    the first read the second's): AgentJet appends every validation to one file."""
    env = daemon_env
    first_conf = env.config("shared", forever=True, step_time=0.1)  # live until stopped
    second_conf = env.config("again", steps=4)
    data = yaml.safe_load((env.codebase / second_conf).read_text())
    data["ajet"]["trainer_common"]["val_print_to_markdown_file_path"] = (
        "./saved_val_result/shared.md"
    )
    (env.codebase / second_conf).write_text(yaml.safe_dump(data))
    first = env.submit(env.blueprint("shared", config=first_conf))
    wait_for(lambda: env.record(first).get("history"), what="the first run's first validation")
    second = env.submit(env.blueprint("again", config=second_conf))
    status = env.wait_done(second)
    assert status["status"] == "succeeded"
    result = env.tmp / "results" / "again"
    assert status["metrics"]["global_steps"] == 4  # its own file, not the first run's
    assert (result / "val_results.md").exists()
    assert f"live run {first} writes" in (result / "results.md").read_text()
    # no --conf (a script runs the launcher): no copy to point elsewhere; it waits its turn
    (env.codebase / "noconf.sh").write_text(f"exec python -m fakejet.launcher --conf {second_conf}")
    waiting = env.submit(env.blueprint("noconf", config=second_conf, command="bash noconf.sh"))
    wait_for(lambda: f"run {first} to end" in env.status(waiting)["reason"], what="its reason")
    assert env.status(waiting)["state"] == "queued" and not env.record(waiting)["trials"]
    env.cli("stop", first)
    assert env.wait_done(first)["status"] == "stopped"
    steps = [h["global_steps"] for h in env.record(first)["history"]]
    assert steps == sorted(steps) and len(steps) == len(set(steps)), steps  # none of the second's
    after = env.wait_done(waiting)  # then it ran, reading only its own validations
    assert after["status"] == "succeeded" and after["metrics"]["global_steps"] == 4
    assert [h["global_steps"] for h in env.record(waiting)["history"]] == [2, 4]


def test_oom_fixed_only_when_a_batch_change_is_allowed(daemon_env: Env) -> None:
    env = daemon_env
    runs = {}
    for name, ajetd in (
        ("allowed", "allow_fixes: {ppo_micro_batch_size_per_gpu: {min: 1}}"),
        ("refused", ""),
    ):
        config = env.config(name, oom_above_micro_batch=2)
        path = env.codebase / config
        data = yaml.safe_load(path.read_text())
        data["actor_rollout_ref"] = {"actor": {"ppo_micro_batch_size_per_gpu": 8}}
        path.write_text(yaml.safe_dump(data))
        runs[name] = env.submit(env.blueprint(name, config=config, ajetd=ajetd))
    allowed = env.wait_done(runs["allowed"])
    assert allowed["status"] == "succeeded" and allowed["trials"] == 3, allowed  # 8 → 4 → 2
    last = yaml.safe_load(
        (env.codebase / "configs" / f"allowed.ajetd-{runs['allowed']}-t3.yaml").read_text()
    )
    assert last["actor_rollout_ref"]["actor"]["ppo_micro_batch_size_per_gpu"] == 2
    trials = (env.tmp / "results" / "allowed" / "trials.md").read_text()
    assert "ppo_micro_batch_size_per_gpu 8 → 4" in trials and "4 → 2" in trials
    assert "`cuda_oom` (science fix allowed" in trials
    results = (env.tmp / "results" / "allowed" / "results.md").read_text()
    own = "python -m fakejet.launcher --conf configs/allowed.yaml --autokill"
    assert f"- launch command (blueprint): `{own}`\n" in results  # not the last fix's copy
    refused = env.wait_done(runs["refused"])
    assert refused["status"] == "failed" and refused["trials"] == 1
    assert "cuda_oom" in refused["reason"] and "allow_fixes" in refused["reason"]
    said = (env.tmp / "results" / "refused" / "trials.md").read_text()  # walk 86, F3: once
    wrong = [line for line in said.splitlines() if line.startswith("- what went wrong")]
    assert wrong and all(line.count("CUDA out of memory") == 1 for line in wrong), wrong


def test_a_learning_rate_written_1e_6_is_halved_on_nan(daemon_env: Env) -> None:
    """`lr: 1e-6`, as configs write it, is a float to OmegaConf (Hydra, NeMo-RL) and text to
    PyYAML alone (YAML 1.1 wants `1.0e-6`): ajetd read it as text, and a NaN loss with the
    `lr` fix allowed found no number to halve. The fixed copy keeps every other number as
    it was written."""
    env = daemon_env
    config = env.config("lr", nan_above_lr="6e-7")
    path = env.codebase / config
    text = path.read_text() + "actor_rollout_ref:\n  actor:\n    optim:\n      lr: 1e-6\n"
    path.write_text(text + "      weight_decay: 1e-2\n      betas: [0.9, 0.999]\n")
    run_id = env.submit(env.blueprint("lr", config=config, ajetd="allow_fixes: {lr: {min: 1e-9}}"))
    done = env.wait_done(run_id)
    assert done["status"] == "succeeded" and done["trials"] == 2, done
    key = "actor_rollout_ref.actor.optim.lr"
    assert [f["config"] for f in done["fixes_applied"]] == [
        [{"key": key, "old": 1e-6, "new": 5e-7}]
    ]
    copy = (env.codebase / "configs" / f"lr.ajetd-{run_id}-t2.yaml").read_text()
    assert "weight_decay: 1e-2\n" in copy and "!!float" not in copy, copy
    assert yaml.safe_load(copy)["actor_rollout_ref"]["actor"]["optim"]["lr"] == 5e-7


def test_what_each_fix_changed_is_in_every_json_and_line(daemon_env: Env) -> None:
    """Walk88 F6: a run that succeeded only after ajetd halved its batch size twice read
    plainly `succeeded: the program exited with code 0` in `status --json`, `wait`, the
    table and finish.flag; run.json's `fixes` held bare names. Now `fixes_applied` says, per
    fix, after which trial, for which failure, each config key's old and new value, and the
    command before and after, in every JSON; the one-line views say it too."""
    env = daemon_env
    config = env.config("halved", oom_above_micro_batch=2)
    path = env.codebase / config
    data = yaml.safe_load(path.read_text())
    data["actor_rollout_ref"] = {"actor": {"ppo_micro_batch_size_per_gpu": 8}}
    path.write_text(yaml.safe_dump(data))
    allow = "allow_fixes: {ppo_micro_batch_size_per_gpu: {min: 1}}"
    run_id = env.submit(env.blueprint("halved", config=config, ajetd=allow))
    done = env.wait_done(run_id)
    assert done["status"] == "succeeded" and done["trials"] == 3, done
    key = "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"
    fixes = done["fixes_applied"]
    assert [(f["after_trial"], f["kind"], f["science"]) for f in fixes] == [
        (1, "cuda_oom", True),
        (2, "cuda_oom", True),
    ], fixes
    assert [f["config"] for f in fixes] == [
        [{"key": key, "old": 8, "new": 4}],
        [{"key": key, "old": 4, "new": 2}],
    ]
    assert fixes[0]["command"]["old"].endswith(f"--conf {config} --autokill")
    assert fixes[0]["command"]["new"].endswith(f"halved.ajetd-{run_id}-t2.yaml --autokill")
    assert fixes[1]["command"]["old"] == fixes[0]["command"]["new"]
    assert "8 → 4" in fixes[0]["change"] and fixes[0]["env"] == {} and fixes[0]["prefix"] == []
    reports = Path(done["reports_dir"])
    flag = json.loads((reports / "finish.flag").read_text())
    record = json.loads((reports / "run.json").read_text())
    assert flag["fixes_applied"] == fixes and record["fixes_applied"] == fixes
    assert record["fixes"] == ["science_ppo_micro_batch_size_per_gpu"] * 2  # names, as before
    waited = env.cli("wait", run_id).stdout
    said = "(after 2 fixes: ppo_micro_batch_size_per_gpu 8 → 4; ppo_micro_batch_size_per_gpu 4 → 2"
    assert said in waited and "not the blueprint's" in waited, waited
    assert said in env.cli("status").stdout


def test_oom_fix_lowers_a_key_only_the_configs_hydra_defaults_set(daemon_env: Env) -> None:
    """Walk M3: benchmark_math.yaml gets `ajet.rollout.gpu_memory_utilization` 0.85 from
    ajet_default.yaml through its Hydra `defaults:` (found on its `hydra.searchpath`, from the
    codebase); the config read alone lacked it, so a cuda_oom with the key allowed said 'the
    allowed keys (...) are unset or at their bounds' and the run failed. Read as AgentJet
    composes it, the fix lowers it in the copy (which keeps its defaults, `_self_` last, so
    its value wins), and the fake AgentJet, composing as Hydra does, runs."""
    env = daemon_env
    defaults = env.codebase / "ajet" / "default_config"
    defaults.mkdir(parents=True)
    (defaults / "ajet_default.yaml").write_text(
        yaml.safe_dump({"ajet": {"rollout": {"gpu_memory_utilization": 0.85}}})
    )
    config = env.config("hydra", oom_above_gpu_memory_utilization=0.8)
    path = env.codebase / config
    data = yaml.safe_load(path.read_text())
    data["hydra"] = {"searchpath": ["file://ajet/default_config"]}
    data["defaults"] = ["ajet_default", "_self_"]
    path.write_text(yaml.safe_dump(data))
    allow = (
        "allow_fixes: {ppo_micro_batch_size_per_gpu: {min: 1}, gpu_memory_utilization: {min: 0.5}}"
    )
    run_id = env.submit(env.blueprint("hydra", config=config, ajetd=allow))
    done = env.wait_done(run_id)
    assert done["status"] == "succeeded" and done["trials"] == 2, done  # 0.85 → 0.8
    fixed = yaml.safe_load((env.codebase / "configs" / f"hydra.ajetd-{run_id}-t2.yaml").read_text())
    assert fixed["ajet"]["rollout"]["gpu_memory_utilization"] == 0.8
    assert fixed["defaults"] == ["ajet_default", "_self_"]  # still composed by AgentJet
    trials = (env.tmp / "results" / "hydra" / "trials.md").read_text()
    assert "gpu_memory_utilization 0.85 → 0.8" in trials, trials


def test_oom_fix_on_agentjets_real_defaults_lowers_the_token_budget(daemon_env: Env) -> None:
    """Walk 89, F2: with AgentJet's real verl_default.yaml composed (`use_dynamic_bsz: true`,
    `ppo_max_token_len_per_gpu: 16384`, micro batch sizes ignored), a cuda_oom lowered only
    gpu_memory_utilization, 0.05 a trial, until the budget was spent. The fix now halves the
    actor's token budget, the key that sizes its memory there, and the run trains."""
    env = daemon_env
    real = Path(__file__).parent / "data" / "agentjet" / "configs" / "ajet" / "default_config"
    shutil.copytree(real, env.codebase / "ajet" / "default_config")
    config = env.config("dyn", oom_above_actor_tokens=5000)
    path = env.codebase / config
    data = yaml.safe_load(path.read_text())
    data["hydra"] = {
        "searchpath": ["file://ajet/default_config", "file://ajet/default_config/verl"]
    }
    data["defaults"] = ["verl_default", "ajet_default", "_self_"]
    path.write_text(yaml.safe_dump(data))
    allow = (
        "allow_fixes: {ppo_micro_batch_size_per_gpu: {min: 1}, gpu_memory_utilization: "
        "{min: 0.5}, ppo_max_token_len_per_gpu: {min: 2048}}"
    )
    run_id = env.submit(env.blueprint("dyn", config=config, ajetd=allow))
    done = env.wait_done(run_id)
    assert done["status"] == "succeeded" and done["trials"] == 3, done  # 16384 → 8192 → 4096
    fixed = yaml.safe_load((env.codebase / "configs" / f"dyn.ajetd-{run_id}-t3.yaml").read_text())
    assert fixed["actor_rollout_ref"]["actor"]["ppo_max_token_len_per_gpu"] == 4096
    assert "gpu_memory_utilization" not in fixed["ajet"].get("rollout", {})
    trials = (env.tmp / "results" / "dyn" / "trials.md").read_text()
    assert "16384 → 8192" in trials and "8192 → 4096" in trials, trials
    assert "verl ignores ppo_micro_batch_size_per_gpu" in trials, trials


# vLLM refusing to start inside a Ray actor's creation task, as verl's rollout workers print it
VLLM_REFUSED = """ray.exceptions.ActorDiedError: The actor died because of an error raised in \
its creation task, ray::WorkerDict.__init__() (pid=41500, ip=10.0.0.1, actor_id=8f3a)
  File "/opt/vllm/v1/worker/gpu_worker.py", line 180, in init_device
    raise ValueError(
ValueError: Free memory on device (7.34/79.11 GiB) on startup is less than desired GPU memory \
utilization (0.6, 47.47 GiB). Decrease GPU memory utilization or reduce GPU memory used by \
other processes."""


def test_vllm_memory_that_cannot_fit_ends_at_once_saying_why(daemon_env: Env) -> None:
    """Lowering 0.6 by steps asked 39+ GiB of a GPU with 7.34 GiB free at every trial until
    the budget was spent: the figures say no allowed value fits, so one trial, not three."""
    env = daemon_env
    config = env.config(
        "nofit", fail={"text": VLLM_REFUSED, "unless_env": {"AJETD_TEST_NEVER": "1"}}
    )
    path = env.codebase / config
    data = yaml.safe_load(path.read_text())
    data["actor_rollout_ref"] = {"rollout": {"gpu_memory_utilization": 0.6}}
    path.write_text(yaml.safe_dump(data))
    ajetd = "allow_fixes: {gpu_memory_utilization: {min: 0.4}}"
    status = env.wait_done(env.submit(env.blueprint("nofit", config=config, ajetd=ajetd)))
    assert status["status"] == "failed" and status["trials"] == 1, status
    reason = status["reason"]
    assert "other processes held 71.77 of 79.11 GiB" in reason, reason
    assert "at most 0.07 would fit, below the allowed min 0.4" in reason, reason


def test_a_kv_cache_with_no_room_raises_gpu_memory_utilization(daemon_env: Env) -> None:
    """Walk 86, F11: vLLM's `max seq len ... is larger than ... KV cache. Try increasing
    gpu_memory_utilization` was 'fixed' by lowering it, 0.85 → 0.8 → 0.75, every trial burnt:
    the fix now goes the way the message says, within allow_fixes' max, and the run trains."""
    env = daemon_env
    config = env.config("kv", kv_cache_below_gpu_memory_utilization=0.9)
    path = env.codebase / config
    data = yaml.safe_load(path.read_text())
    data["ajet"]["rollout"] = {"gpu_memory_utilization": 0.85}
    path.write_text(yaml.safe_dump(data))
    ajetd = "allow_fixes: {gpu_memory_utilization: {min: 0.5, max: 0.95}}"
    run_id = env.submit(env.blueprint("kv", config=config, ajetd=ajetd))
    done = env.wait_done(run_id)
    assert done["status"] == "succeeded" and done["trials"] == 2, done
    fixed = yaml.safe_load((env.codebase / "configs" / f"kv.ajetd-{run_id}-t2.yaml").read_text())
    assert fixed["ajet"]["rollout"]["gpu_memory_utilization"] == 0.9
    trials = (env.tmp / "results" / "kv" / "trials.md").read_text()
    assert "gpu_memory_utilization 0.85 → 0.9" in trials and "max 0.95" in trials, trials


def test_no_relaunch_when_the_time_left_cannot_hold_a_trials_start(daemon_env: Env) -> None:
    """Walk 86, F25: a retryable failure seconds before the time limit was relaunched, and the
    new trial could only start and be stopped by the limit (on real GPUs, minutes of model
    loading burnt). Trial 1 took 5 s to its first step and failed with 3 s left: no trial 2."""
    env = daemon_env
    command = (
        "sleep 5; echo step:1; sleep 4; echo '[Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600000 milliseconds'; exit 1"
    )
    bp = env.blueprint("late", command=command, max_time="12s", ajetd="gpus: 0")
    status = env.wait_done(env.submit(bp), timeout=40)
    assert status["status"] == "failed" and status["trials"] == 1, (status["reason"], status)
    reason = status["reason"]
    assert "nccl_timeout" in reason and "not relaunched: " in reason, reason
    assert re.search(
        r"of exp_max_time \(12s\) left, less than the [5-8]s trial 1 took to reach its first step",
        reason,
    ), reason


def test_a_huge_output_line_is_cut_in_the_reports(daemon_env: Env) -> None:
    """Walk 86, F15: a 5 MiB line made results.md and trials.md 260 KB, one unmarked line."""
    env = daemon_env
    text = "X" * 300_000 + "\ntorch.OutOfMemoryError: CUDA out of memory."
    config = env.config("wide", fail={"text": text, "unless_env": {"AJETD_TEST_NEVER": "1"}})
    status = env.wait_done(env.submit(env.blueprint("wide", config=config)))
    assert status["status"] == "failed", status
    for name in ("results.md", "trials.md"):
        report = (env.tmp / "results" / "wide" / name).read_text()
        assert max(len(line) for line in report.splitlines()) < 2100, name
        assert "X" * 2000 + " … (300,000 characters, cut)" in report, name


def test_port_held_by_a_foreign_process_is_named(daemon_env: Env) -> None:
    env = daemon_env
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket, time; s = socket.socket(); "
            "s.bind(('127.0.0.1', 0)); s.listen(); print(s.getsockname()[1], flush=True); "
            "time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        port = int(holder.stdout.readline())
        text = (
            f"ERROR:    [Errno 98] error while attempting to bind on address "
            f"('127.0.0.1', {port}): address already in use"
        )
        config = env.config("port", fail={"text": text, "unless_env": {"NEVER": 1}})
        status = env.wait_done(env.submit(env.blueprint("port", config=config)))
        assert status["status"] == "failed" and status["trials"] == 1  # no pointless retry
        assert f"pid {holder.pid}" in status["reason"]
    finally:
        holder.kill()


def test_hang_is_flagged_then_relaunched_after_a_grace(daemon_env: Env) -> None:
    env = daemon_env
    config = env.config("hangs", steps=1, hang=True)  # prints, then hangs silently, every trial
    rule = "hang: {window: 1s, action: relaunch}\nmax_trials: 2"
    run_id = env.submit(env.blueprint("hangs", config=config, ajetd=rule))
    status = env.wait_done(run_id, timeout=30)
    assert status["status"] == "failed" and status["trials"] == 2, status
    assert "hang rule" in status["reason"]
    trials = (env.tmp / "results" / "hangs" / "trials.md").read_text()
    assert "hang: relaunched after no output for" in trials
    # walk 86, F19: trial 1's end is ajetd's own stop, not a Ctrl-C nobody pressed
    results = (env.tmp / "results" / "hangs" / "results.md").read_text()
    assert "Ctrl-C" not in trials + results, trials
    assert "stopped by the hang rule, to relaunch it: no output for" in trials, trials
    assert "ajetd sent SIGINT; it exited with code" in trials, trials
    events = (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert "attention: no output for" in events and "stopping: hang" in events


def test_hooks_get_the_run_json_on_stdin(daemon_env: Env) -> None:
    env = daemon_env
    sink = env.tmp / "hook-out"
    ajetd = f"on_finish: 'cat > {sink}.finish'\non_attention: 'cat > {sink}.attention'"
    config = env.config("hooked", steps=1, hang=True)
    run_id = env.submit(
        env.blueprint("hooked", config=config, ajetd=ajetd + "\nhang: {window: 1s}")
    )
    attention = wait_for(
        lambda: Path(f"{sink}.attention").exists() and Path(f"{sink}.attention").read_text(),
        what="on_attention",
    )
    assert json.loads(attention)["attention"].startswith("no output for")
    env.cli("stop", run_id)
    finish = wait_for(
        lambda: Path(f"{sink}.finish").exists() and Path(f"{sink}.finish").read_text(),
        what="on_finish",
    )
    data = json.loads(finish)
    assert data["run_id"] == run_id and data["status"] == "stopped"


def test_daemon_hooks_run_once_per_event_fail_softly_and_time_out(env: Env) -> None:
    count = env.tmp / "finished"
    env.start_daemon(
        "--on-finish",
        f"cat >/dev/null; echo x >> {count}; exit 3",
        "--on-attention",
        "sleep 600",
        "--hook-timeout",
        "1",
    )
    config = env.config("silent", steps=1, hang=True)
    run_id = env.submit(env.blueprint("silent", config=config, ajetd="hang: {window: 1s}"))
    hooks_log = env.home / "runs" / run_id / "hooks.log"
    wait_for(
        lambda: (
            hooks_log.exists()
            and "on_attention timed out after 1 s: killed" in hooks_log.read_text()
        ),
        what="the slow hook killed",
    )
    env.cli("stop", run_id)
    wait_for(
        lambda: "on_finish failed with exit code 3" in hooks_log.read_text(),
        what="the failing hook logged",
    )
    other = env.submit(env.blueprint("other"))
    assert env.wait_done(other)["status"] == "succeeded"  # the daemon went on
    wait_for(lambda: count.exists() and len(count.read_text().split()) == 2, what="2 finishes")
    assert count.read_text().split() == ["x", "x"]  # once per run's end, never twice
    assert "hook on_finish" in env.daemon_log()


def test_provenance_of_a_dirty_git_codebase_and_of_a_plain_folder(daemon_env: Env) -> None:
    env = daemon_env
    plain = env.submit(env.blueprint("plain"))
    assert env.wait_done(plain)["status"] == "succeeded"
    record = json.loads((env.tmp / "results" / "plain" / "run.json").read_text())
    assert record["provenance"]["git"] is False
    assert "not a git repository" in (env.tmp / "results" / "plain" / "results.md").read_text()
    git(env.codebase, "init", "-q", "-b", "main")
    git(env.codebase, "add", "-A")
    git(env.codebase, "commit", "-q", "-m", "base")
    commit = git(env.codebase, "rev-parse", "HEAD")
    launcher = env.codebase / "fakejet" / "launcher.py"
    launcher.write_text(launcher.read_text() + "\n# hypothesis: a tweak\n")
    (env.codebase / "scratch.txt").write_text("new")
    run_id = env.submit(env.blueprint("dirty"))
    assert env.wait_done(run_id)["status"] == "succeeded"
    result = env.tmp / "results" / "dirty"
    record = json.loads((result / "run.json").read_text())
    prov = record["provenance"]
    assert prov["git"] and prov["commit"] == commit and prov["branch"] == "main"
    assert prov["dirty"] and "scratch.txt" in prov["untracked"]
    assert len(prov["blueprint_sha256"]) == 64
    assert "+# hypothesis: a tweak" in (result / "provenance.diff").read_text()
    assert (result / "config-used.yaml").read_text().startswith("ajet:")
    text = (result / "results.md").read_text()
    assert f"commit `{commit}` on branch `main` (dirty)" in text
    assert record["commands"] == [record["command"]] and record["status"] == "succeeded"


def test_diag_snapshots_a_live_run_without_touching_it(daemon_env: Env) -> None:
    env = daemon_env
    config = env.config("diag", forever=True, step_time=0.1)
    run_id = env.submit(env.blueprint("diag", config=config))
    log = env.tmp / "results" / "diag" / "logs" / "trial-1.log"
    wait_for(lambda: log.exists() and "step:2 " in log.read_text(), what="output")
    out = env.cli("diag", run_id)
    assert out.returncode == 0, out.stderr
    for section in ("## Pane", "## Processes", "## GPUs", "## Findings", "## Last 50 lines"):
        assert section in out.stdout
    assert "fakejet.launcher" in out.stdout and "Training Progress" in out.stdout
    saved = list((env.tmp / "results" / "diag" / "diag").glob("diag-*.md"))
    assert len(saved) == 1 and "## Processes" in saved[0].read_text()
    as_json = env.cli("diag", run_id, "--json")  # every command that shows data takes --json
    assert as_json.returncode == 0, as_json.stderr
    snap = json.loads(as_json.stdout)
    assert snap["run_id"] == run_id and snap["state"] == "running" and snap["status"] is None
    assert any("fakejet.launcher" in row for row in snap["processes"])
    assert isinstance(snap["findings"], list) and snap["log_tail"] and snap["saved"]
    assert env.record(run_id)["state"] == "running" and len(env.record(run_id)["trials"]) == 1
    size = len(log.read_text())
    wait_for(lambda: len(log.read_text()) > size, what="the run to go on")
    env.cli("stop", run_id)


def _pipeline(env: Env, name: str, train_outputs: str, eval_requires: str) -> Path:
    evaluate = "cp saved_val_result/*.md eval.json"  # reads the "checkpoint", writes a result
    ajetd = (
        "stages:\n"
        f"  - {{name: train, outputs: [{train_outputs}]}}\n"
        f"  - {{name: eval, command: '{evaluate}', requires: [{eval_requires}], "
        "outputs: [eval.json]}"
    )
    return env.blueprint(name, ajetd=ajetd)


def test_a_pipeline_runs_eval_after_train_left_its_checkpoint(daemon_env: Env) -> None:
    env = daemon_env
    val = "saved_val_result/pipe.md"  # what the fake trainer writes: its "checkpoint"
    run_id = env.submit(_pipeline(env, "pipe", val, val))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded" and status["trials"] == 2, status
    assert (env.codebase / "eval.json").exists()
    trials = (env.tmp / "results" / "pipe" / "trials.md").read_text()
    assert "## Trial 1 (stage train)" in trials and "## Trial 2 (stage eval)" in trials
    assert "stage eval next" in trials


def test_a_stage_never_runs_on_a_missing_checkpoint(daemon_env: Env) -> None:
    env = daemon_env
    run_id = env.submit(_pipeline(env, "nockpt", "ckpt/final.pt", "ckpt/final.pt"))
    status = env.wait_done(run_id)
    assert status["status"] == "failed" and status["trials"] == 1
    assert "stage train exited with code 0 but did not leave ckpt/final.pt" in status["reason"]
    assert not (env.codebase / "eval.json").exists()
    # the trial-and-error log says what went wrong with the trial that failed the run
    trials = (env.tmp / "results" / "nockpt" / "trials.md").read_text()
    assert "- what went wrong: stage train exited with code 0 but did not leave" in trials
    assert "nothing (exit 0)" not in trials
    results = (env.tmp / "results" / "nockpt" / "results.md").read_text()
    assert "| 0 | stage train exited with code 0 but did not leave" in results
    early = env.submit(_pipeline(env, "noreq", "saved_val_result/noreq.md", "ckpt/other.pt"))
    status = env.wait_done(early)
    assert status["status"] == "failed" and status["trials"] == 1
    assert "stage eval requires ckpt/other.pt, which does not exist" in status["reason"]


def test_a_stale_checkpoint_from_before_the_run_is_not_the_stage_s_output(
    daemon_env: Env,
) -> None:
    """walk89 F4: `ckpt/final.pt` left by an earlier run satisfied the train stage's
    `outputs` though this training never wrote it, and eval ran on the old checkpoint; the
    run said `succeeded`. An output there unchanged since before the stage began is not the
    stage's (seed 000: eval stops where training did not produce its checkpoint); a folder
    the stage wrote into (a checkpoint rewritten in place) is."""
    env = daemon_env
    old = env.codebase / "ckpt" / "final.pt"
    old.parent.mkdir()
    old.write_text("an earlier run's weights")
    os.utime(old, (1_793_491_200, 1_793_491_200))  # 2026-11-01
    os.utime(old.parent, (1_793_491_200, 1_793_491_200))
    run_id = env.submit(_pipeline(env, "stale", "ckpt/final.pt", "ckpt/final.pt"))
    status = env.wait_done(run_id)
    assert status["status"] == "failed" and status["trials"] == 1, status
    assert (
        "stage train exited with code 0 but did not leave ckpt/final.pt (there, but unchanged "
        "since before the stage began: an earlier run's)"
    ) in status["reason"], status["reason"]
    assert not (env.codebase / "eval.json").exists()
    # a folder output whose file the training rewrote in place: the stage's own
    os.utime(old.parent, (1_793_491_200, 1_793_491_200))
    config = env.config("inplace")
    train = f"python -m fakejet.launcher --conf {config} --autokill && echo new > ckpt/final.pt"
    os.utime(old.parent, (1_793_491_200, 1_793_491_200))
    ajetd = "stages:\n  - {name: train, outputs: [ckpt]}\n  - {name: eval, command: 'true'}"
    run_id = env.submit(env.blueprint("inplace", config=config, command=train, ajetd=ajetd))
    assert env.wait_done(run_id)["status"] == "succeeded"


def test_the_eval_stage_s_result_is_recorded_with_the_run(daemon_env: Env) -> None:
    """walk89 F5: an eval stage printed `score=0.6100 (18.3/30)` and wrote eval/result.json,
    and neither went into any record: the JSON stayed in the shared codebase for the next run
    to overwrite, the score was in the log tail only. Each stage's outputs are copied into
    the result dir (`stages/<stage>/`), their numbers and the result lines it printed said in
    results.md; a folder output is named, not copied."""
    env = daemon_env
    script = env.codebase / "evaluate.sh"
    script.write_text(
        'mkdir -p eval\necho \'{"score": 0.61, "n": 30}\' > eval/result.json\n'
        "echo 'loading checkpoint'\necho 'score=0.6100 (18.3/30)'\n"
    )
    val = "saved_val_result/scored.md"
    ajetd = (
        f"stages:\n  - {{name: train, outputs: [{val}, saved_val_result]}}\n"
        f"  - {{name: eval, command: 'bash evaluate.sh', requires: [{val}], "
        "outputs: [eval/result.json]}"
    )
    run_id = env.submit(env.blueprint("scored", ajetd=ajetd))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded" and status["trials"] == 2, status
    result = env.tmp / "results" / "scored"
    results = (result / "results.md").read_text()
    for said in (
        "## Stage results",
        "### Stage eval",
        "- printed: `score=0.6100 (18.3/30)`",
        "- output `eval/result.json`: copied to `stages/eval/eval/result.json`; score 0.61, n 30",
        f"- output `{val}`: copied to `stages/train/{val}`",
        "- output `saved_val_result`: a folder: named, not copied",
    ):
        assert said in results, (said, results)
    copied = json.loads((result / "stages" / "eval" / "eval" / "result.json").read_text())
    assert copied == {"score": 0.61, "n": 30}
    assert (result / "stages" / "train" / val).read_text() == (env.codebase / val).read_text()
    # the same in `status --json` (session 34's gap: results.md alone said the eval's score),
    # in `status RUN --json`, `wait --json` and run.json alike
    eval_stage = {
        "stage": "eval",
        "trial": 2,
        "exit_code": 0,
        "printed": ["score=0.6100 (18.3/30)"],
        "outputs": [
            {
                "path": "eval/result.json",
                "copied_as": "stages/eval/eval/result.json",
                "note": None,
                "values": {"score": 0.61, "n": 30},
            }
        ],
    }
    listed = json.loads(env.cli("status", "--json").stdout)
    stages = next(r for r in listed if r["run_id"] == run_id)["stages"]
    assert [s["stage"] for s in stages] == ["train", "eval"] and stages[1] == eval_stage, stages
    train = stages[0]
    assert train["trial"] == 1 and train["exit_code"] == 0 and train["printed"] == []
    assert [o["path"] for o in train["outputs"]] == [val, "saved_val_result"], train
    assert train["outputs"][0]["copied_as"] == f"stages/train/{val}"
    assert train["outputs"][1]["copied_as"] is None and "folder" in train["outputs"][1]["note"]
    assert env.status(run_id)["stages"] == stages
    assert json.loads(env.cli("wait", run_id, "--json").stdout)["stages"] == stages
    assert json.loads((result / "run.json").read_text())["stages"] == stages


def test_a_stages_glob_is_matched(daemon_env: Env) -> None:
    """walk86 F32: `outputs: [saved/ckpt_*]` was looked for as written: a training that left
    `saved/ckpt_6` 'did not leave saved/ckpt_*' and failed, and eval never ran. A glob is
    present when a path matches it; one that nothing matches still fails the run, saying
    so; a folder a wildcard reaches through a link is not gone into."""
    env = daemon_env
    (env.tmp / "elsewhere" / "ckpt_9").mkdir(parents=True)
    (env.codebase / "linked").symlink_to(env.tmp / "elsewhere")
    train = "python -m fakejet.launcher --conf {c} --autokill && mkdir -p saved/ckpt_6"
    evaluate = "ls -d saved/ckpt_* > eval.json"
    ajetd = (
        "stages:\n  - {name: train, outputs: ['saved/ckpt_*']}\n"
        f"  - {{name: eval, command: '{evaluate}', requires: ['saved/ckpt_[0-9]'], "
        "outputs: ['eval.*']}"
    )
    config = env.config("globbed")
    run_id = env.submit(
        env.blueprint("globbed", config=config, command=train.format(c=config), ajetd=ajetd)
    )
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded" and status["trials"] == 2, status
    assert (env.codebase / "eval.json").read_text() == "saved/ckpt_6\n"
    ajetd = "stages:\n  - {name: train, outputs: ['*/ckpt_9', 'saved/step_*']}\n"
    ajetd += "  - {name: eval, command: 'true'}"
    run_id = env.submit(env.blueprint("unmatched", ajetd=ajetd))
    status = env.wait_done(run_id)
    assert status["status"] == "failed", status
    reason = status["reason"]
    assert "did not leave */ckpt_9, saved/step_*" in reason, reason  # not through the link


def test_a_trial_recorded_but_never_prepared_is_prepared_again(env: Env) -> None:
    """A daemon killed between a trial's record and its script: on restart the trial is
    prepared again and launched once (never twice: it had not been let go)."""
    env.start_daemon()
    run_id = env.submit(env.blueprint("cut"))
    env.wait_done(run_id)
    env.daemons[0].send_signal(signal.SIGTERM)
    env.daemons[0].wait()
    state_file = env.home / "runs" / run_id / "state.json"
    record = json.loads(state_file.read_text())
    trial = {**record["trials"][0], "started_at": None, "ended_at": None, "exit_code": None}
    record.update(state="running", status=None, trials=[trial], started_at=None, ended_at=None)
    state_file.write_text(json.dumps(record))
    for leftover in (env.home / "runs" / run_id).glob("trial-1.*"):
        leftover.unlink()
    for name in ("finish.flag", "results.md", "trials.md", "run.json"):
        (env.tmp / "results" / "cut" / name).unlink()
    # nor did its journal get past the trial's record (an end journalled is an end: the run
    # would be restored as ended from it, never launched again)
    journal = env.home / "runs" / run_id / "events.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(x for x in lines if '"run ended: ' not in x))
    (env.codebase / "launches.log").unlink()
    env.tmux("kill-server")  # the first life's session: a trial never let go has none
    env.start_daemon()
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded" and status["trials"] == 1
    assert env.launches() == [f"{run_id} 1"]


@pytest.mark.pictures
def test_every_file_and_folder_in_the_home_is_owner_only(env: Env) -> None:
    """DESIGN: ajetd's home is owner-only, whatever the user's umask (here 022) or the mode of
    the blueprint the user copied in: the trial script's exit file, hooks.log, plot.log, the
    claimed blueprint; the program itself keeps the user's umask."""
    old = os.umask(0o022)
    try:
        env.start_daemon()
        config = env.config("private", steps=2)
        made = env.tmp / "results" / "private" / "made-by-program"
        command = f"python -m fakejet.launcher --conf {config} && touch {made}"
        blueprint = env.blueprint("private", config=config, command=command)
        blueprint.write_text(
            blueprint.read_text() + "\n## [ajetd]\n```yaml\non_finish: 'true'\n```\n"
        )
        blueprint.chmod(0o644)
        shutil.copy(blueprint, env.home / "inbox" / "private.md")  # cp keeps 644
        run_id = wait_for(lambda: [p.name for p in (env.home / "runs").iterdir()], what="claim")[0]
        env.wait_done(run_id)
        wait_for((env.home / "runs" / run_id / "hooks.log").exists, what="the hook's log")
    finally:
        os.umask(old)
    assert made.stat().st_mode & 0o777 == 0o644, "the program keeps the user's umask"
    offenders = shared_paths(env.home)
    assert not offenders, "group/other bits in the home: " + ", ".join(offenders)


def test_a_stored_blueprint_edited_while_the_daemon_was_down_is_reported_truthfully(
    env: Env,
) -> None:
    """Walk 82, L1: runs/<id>/blueprint.md edited while the daemon was down (a restart reads
    a live run's options from it, as documented) was shown in results.md as 'Blueprint as
    submitted' beside the admitted sha256. The text as admitted is kept (read-only, never
    replaced) and shown; the edit is said once in the timeline and warnings, and shown with
    its own sha256."""
    import hashlib

    go = env.tmp / "go"
    env.start_daemon()
    bp = env.blueprint("edited", command=f"while [ ! -e {go} ]; do sleep 0.05; done")
    submitted = bp.read_text()
    run_id = env.submit(bp)
    wait_for(lambda: env.record(run_id).get("started_at"), what="the run's start")
    env.daemons[0].send_signal(signal.SIGTERM)
    env.daemons[0].wait()
    stored = env.home / "runs" / run_id / "blueprint.md"
    copy = env.home / "runs" / run_id / "blueprint.submitted.md"
    assert copy.read_text() == stored.read_text() and copy.stat().st_mode & 0o777 == 0o400
    edit = stored.read_text() + "\nA note added by hand.\n"
    stored.write_text(edit)
    for _ in range(2):  # a second restart says it no more
        env.start_daemon()
        wait_for(
            lambda: "edited after admission" in str(env.status(run_id)["warnings"]),
            what="the edit in status",
        )
        env.daemons[-1].send_signal(signal.SIGTERM)
        env.daemons[-1].wait()
    env.start_daemon()
    go.touch()
    assert env.wait_done(run_id)["status"] == "succeeded"
    events = (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert events.count("was edited after admission") == 1, events
    results = (env.tmp / "results" / "edited" / "results.md").read_text()
    as_submitted = results.split("## Blueprint as submitted")[1].split("## Blueprint as edited")[0]
    assert "A note added by hand" not in as_submitted and "[exp_purpose]" in as_submitted
    edited = results.split("## Blueprint as edited after admission")[1]
    assert "A note added by hand" in edited
    assert hashlib.sha256(edit.encode()).hexdigest() in edited
    admitted = hashlib.sha256(copy.read_text().encode()).hexdigest()
    assert f"- blueprint sha256: `{admitted}`" in results
    assert submitted.strip() in copy.read_text()
