"""A queued run (admitted, waiting for GPUs or its turn, no trial launched) whose record
(runs/<id>/state.json) was damaged while the daemon was down is not left out: nothing of it
ran, and its stored blueprint is still in its folder, so the daemon admits it again from that
copy, with its run id, result dir and place in the queue, keeps the damaged file beside it and
says so in its warnings; it is then placed and launched, once, as any run. A run that ended
while queued (stopped) is never admitted again: its journal says it ended. A real daemon,
real tmux on a private socket, fake GPUs."""

from __future__ import annotations

import json
import signal
from typing import Any

import pytest

from ajetd.adapters.store import Home
from ajetd.core.rebuilt import READMITTED, Unstarted, never_let_go, not_readmitted
from conftest import Env, wait_for
from loopkit import Killed, Loop, cut_before_it_went


def _facts(**changed: Any) -> Unstarted:
    facts = {
        "run_id": "abc123",
        "has_blueprint": True,
        "journal": ("blueprint bp.md claimed", "waiting for 1 GPU(s)"),
        "result_dir": "/r/x",
        "flag_bar": None,
        "taken": False,
    }
    return Unstarted(**{**facts, **changed})


def test_only_a_run_that_never_ended_and_owns_its_result_dir_is_admitted_again() -> None:
    assert not_readmitted(_facts()) is None
    assert "blueprint.md" in (not_readmitted(_facts(has_blueprint=False)) or "")
    for end in ("run ended: stopped: stopped by `ajetd stop`", "rejected: no codebase"):
        journal = ("blueprint bp.md claimed", end)
        assert "says it ended" in (not_readmitted(_facts(journal=journal)) or "")
    bar = "its result dir's finish.flag records its end"
    assert "finish.flag" in (not_readmitted(_facts(flag_bar=bar)) or "")
    assert "live run's" in (not_readmitted(_facts(taken=True)) or "")


def test_only_a_folder_whose_trials_never_went_counts_as_never_let_go() -> None:
    queued = ["blueprint.md", "source-name", "events.jsonl", "state.json"]
    assert never_let_go(queued)
    assert never_let_go([*queued, "trial-1.sh", "trial-1.wake", "trial-1.job.sh"])
    for went in ("trial-1.go", "trial-1.exit", "trial-1.hup", "trial-1.remote.sh", "trial-2.sh"):
        assert not never_let_go([*queued, "trial-1.sh", went]), went


def test_a_queued_run_with_a_damaged_record_is_admitted_again_and_launched_once(
    env: Env,
) -> None:
    env.fake_gpus(1)
    daemon = env.start_daemon("--liveness", "0.5")
    release = env.tmp / "end-now"
    holder = env.submit(
        env.blueprint(
            "holder", command=f"until [ -e {release} ]; do sleep 0.05; done", ajetd="gpus: 1"
        )
    )
    wait_for(lambda: env.record(holder).get("started_at"), what="the holder to start")
    ran = "echo ran >> $AJETD_RESULT_DIR/ran"
    waiting = env.submit(env.blueprint("waiting", command=ran, max_time="1h", ajetd="gpus: 1"))
    stopped = env.submit(env.blueprint("stopped", command=ran, ajetd="gpus: 1"))
    wait_for(
        lambda: all("GPU" in env.record(r).get("reason", "") for r in (waiting, stopped)),
        what="both runs to wait for the GPU",
    )
    assert env.cli("stop", stopped).returncode == 0  # it ended while queued
    before = env.record(waiting)
    assert before["state"] == "queued" and before["trials"] == []
    daemon.send_signal(signal.SIGTERM)
    daemon.wait(timeout=20)
    runs, results = env.home / "runs", env.tmp / "results"
    state = runs / waiting / "state.json"
    cut = state.read_bytes()[:120]  # cut short, as by a crash mid-write
    state.write_bytes(cut)
    (runs / stopped / "state.json").unlink()  # gone, and its finish.flag with it: only its
    (results / "stopped" / "finish.flag").unlink()  # journal says it ended
    daemon = env.start_daemon("--liveness", "0.5")
    wait_for(lambda: env.record(waiting).get("warnings"), what="the run to be admitted again")
    assert (runs / waiting / "state.json.damaged").read_bytes() == cut  # kept
    status = env.status(waiting)
    assert status["state"] == "queued" and status["trials"] == 0
    assert (status["result_dir"], status["max_time_s"]) == (before["result_dir"], 3600)
    assert abs(env.record(waiting)["submitted_at"] - before["submitted_at"]) < 0.01  # its turn
    [note] = [w for w in status["warnings"] if w.startswith(READMITTED)]
    assert f"runs/{waiting}/state.json" in note and "state.json.damaged" in note, note
    listed = json.loads(env.cli("status", "--json").stdout)
    assert next(r["warnings"] for r in listed if r["run_id"] == waiting)[0] == note
    shown = env.cli("status")
    assert waiting in shown.stdout and f"runs/{waiting}/state.json" not in shown.stdout
    assert f"runs/{stopped}/state.json is missing" in shown.stdout  # named, not admitted
    assert "says the run ended" in shown.stdout
    assert "admitted again" in env.daemon_log() and "not admitted again" in env.daemon_log()
    assert any(note == text for text in _journal(env, waiting))
    release.touch()  # the GPU frees: the re-admitted run is placed and launched
    ended = env.wait_done(waiting)
    assert (ended["status"], ended["trials"], ended["gpus"]) == ("succeeded", 1, [0]), ended
    assert (results / "waiting" / "ran").read_text() == "ran\n"  # once
    assert env.wait_done(holder)["status"] == "succeeded"
    assert not (runs / stopped / "state.json").exists()  # never admitted again:
    assert not (results / "stopped" / "ran").exists()  # never launched
    one = env.cli("status", stopped)
    assert one.returncode == 1 and "says the run ended" in one.stderr
    assert daemon.poll() is None


def _journal(env: Env, run_id: str) -> list[str]:
    lines = (env.home / "runs" / run_id / "events.jsonl").read_text().splitlines()
    return [json.loads(line)["event"] for line in lines]


def test_a_run_damaged_before_its_first_trial_was_let_go_is_admitted_again(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon died right after it wrote trial 1's script, before any session or go file;
    the record was then cut. Nothing of the run ran: it is admitted again whole (its
    admission's warnings, fixes and relaunches, not a rebuilt run's), and launched once."""
    ran = env.tmp / "ran"
    bp = env.blueprint("early", command=f"echo x >> {ran}", ajetd="gpus: 0")
    run_id = cut_before_it_went(env, monkeypatch, "trial-1.sh", bp)
    second = Loop(env)
    try:
        run = second.until(lambda: second.daemon.runs.get(run_id), f"run {run_id} again")
        assert [w for w in run.warnings if w.startswith(READMITTED)]
        flag = second.until_done(run_id)
        assert (flag["status"], flag["trials"]) == ("succeeded", 1)
        assert "rebuilt" not in flag["reason"] and ran.read_text() == "x\n"  # once
    finally:
        second.close()
    assert (env.home / "runs" / run_id / "state.json.damaged").exists()


def test_a_claim_whose_journal_line_was_cut_mid_character_is_admitted_once(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon died while it appended a claim's first journal line, cut inside a character
    of the blueprint's name (训练.md: three bytes each), so the journal is not UTF-8, and the
    run has no record. `status` and the daemon's start read that journal (is this record-less
    folder a run that ended?): the cut line is skipped, and the claim is admitted, launched
    once."""
    real_append = Home.append_event

    def die_mid_line(home: Home, run_id: str, at: float, text: str) -> None:
        if not text.endswith(" claimed"):
            return real_append(home, run_id, at, text)
        line = json.dumps({"at": at, "event": text}, ensure_ascii=False).encode()
        with open(home.run_dir(run_id) / "events.jsonl", "ab") as journal:
            journal.write(line[: line.index("训".encode()) + 2])  # cut inside 训
        raise Killed(text)

    monkeypatch.setattr(Home, "append_event", die_mid_line)
    first = Loop(env)
    ran = env.tmp / "ran"
    with pytest.raises(Killed):
        try:
            first.submit(env.blueprint("训练", command=f"echo x >> {ran}", ajetd="gpus: 0"))
        finally:
            first.close()
    monkeypatch.setattr(Home, "append_event", real_append)
    [run_id] = [p.name for p in (env.home / "runs").iterdir()]
    assert not (env.home / "runs" / run_id / "state.json").exists()
    shown = env.cli("status")
    assert shown.returncode == 0, shown.stderr
    daemon = env.start_daemon("--liveness", "0.5")
    ended = env.wait_done(run_id)
    assert (ended["status"], ended["trials"]) == ("succeeded", 1), ended
    assert ran.read_text() == "x\n"  # once
    assert daemon.poll() is None


def test_a_running_run_keeps_its_result_dir_from_a_queued_one_both_damaged(env: Env) -> None:
    """Queued run A's record was cut and its stored blueprint unreadable, so it was named;
    run B then took the same result dir and runs. B's record is cut too, and A's blueprint is
    restored (as the log says to). At the next start B, whose program runs there, is rebuilt
    and supervised; A is not admitted again into B's dir (it stays named), never launched."""
    env.fake_gpus(1)
    release, end_b = env.tmp / "release", env.tmp / "end-b"
    shared = env.tmp / "results" / "shared"
    daemon = env.start_daemon("--liveness", "0.5")
    holder = env.submit(
        env.blueprint(
            "holder", command=f"until [ -e {release} ]; do sleep 0.05; done", ajetd="gpus: 1"
        )
    )
    wait_for(lambda: env.record(holder).get("started_at"), what="the holder to start")
    a = env.submit(
        env.blueprint("a", command=f"echo ran >> {shared}/ran", result=str(shared), ajetd="gpus: 1")
    )
    wait_for(lambda: "GPU" in env.record(a).get("reason", ""), what="A to wait for the GPU")
    runs = env.home / "runs"

    daemon.send_signal(signal.SIGTERM)
    daemon.wait(timeout=20)
    (runs / a / "state.json").write_bytes((runs / a / "state.json").read_bytes()[:120])
    (runs / a / "blueprint.md").rename(env.tmp / "a-blueprint.md")  # unreadable: A named
    daemon = env.start_daemon("--liveness", "0.5")
    b = env.submit(
        env.blueprint(
            "b",
            command=f"until [ -e {end_b} ]; do sleep 0.05; done",
            result=str(shared),
            ajetd="gpus: 0",
        )
    )
    wait_for(lambda: env.record(b).get("started_at"), what="B to start")
    daemon.send_signal(signal.SIGTERM)
    daemon.wait(timeout=20)
    (runs / b / "state.json").write_bytes((runs / b / "state.json").read_bytes()[:120])
    (env.tmp / "a-blueprint.md").rename(runs / a / "blueprint.md")  # restored
    daemon = env.start_daemon("--liveness", "0.5")
    try:
        wait_for(lambda: env.record(b).get("attention"), what="B to be rebuilt")
        assert env.status(b)["state"] == "running"
        assert env.cli("status", a).returncode == 1  # named, not admitted again
        assert "is a live run's" in env.daemon_log()
        end_b.touch()
        assert env.wait_done(b)["status"] == "succeeded"
    finally:
        end_b.touch()
        release.touch()
    assert env.wait_done(holder)["status"] == "succeeded"
    assert not (shared / "ran").exists()  # A never launched
    assert env.cli("status", a).returncode == 1
    assert daemon.poll() is None
