"""curves.png and gpus.png beside results.md: drawn by a child process, mid-run and at the end,
never able to fail a run."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from ajetd.adapters.store import Home
from ajetd.core import model
from ajetd.core.model import Run, Status, Trial
from ajetd.pictures import drawing
from ajetd.pictures.runcurves import TEST_WAIT_ENV, segments
from ajetd.views import report
from conftest import PYTHON, Env, wait_for

PNG = b"\x89PNG\r\n\x1a\n"


def _fake_gpus(env: Env) -> Path:
    path = env.tmp / "gpus.json"
    gpu = {"index": 0, "name": "H100", "memory_total_mib": 81920, "memory_used_mib": 0}
    path.write_text(json.dumps({"gpus": [{**gpu, "utilization": 0}]}))
    env.vars["AJETD_FAKE_GPUS"] = str(path)
    return path


@pytest.mark.pictures
def test_pictures_mid_run_and_at_the_end_linked_from_results(env: Env) -> None:
    file = _fake_gpus(env)
    env.start_daemon("--gpu-young-period", "0.2", "--gpu-period", "0.2")
    fake = {"file": str(file), "memory_mib": 30000, "utilization": 80}
    config = env.config("pics", fake_gpu=fake, forever=True, step_time=0.05)
    run_id = env.submit(env.blueprint("pics", config=config, ajetd="gpus: 1"))
    result = env.tmp / "results" / "pics"
    wait_for(
        (result / "curves.png").exists,
        timeout=60,
        what="the curves drawn while the run lives",
    )
    assert env.record(run_id)["state"] == "running"
    assert env.cli("stop", run_id).returncode == 0
    flag = json.loads((result / "finish.flag").read_text())
    assert flag["status"] == "stopped"
    for name in ("curves.png", "gpus.png"):
        assert (result / name).read_bytes().startswith(PNG)
    text = (result / "results.md").read_text()
    assert "![validation metrics by step](curves.png)" in text
    assert "![GPU utilisation and memory over time](gpus.png)" in text
    samples = (env.home / "runs" / run_id / "gpus.jsonl").read_text().splitlines()
    assert json.loads(samples[-1])["gpus"][0]["util"] == 80


def _run_with_history() -> Run:
    run = Run(run_id="abc123", source="b.md", submitted_at=1.0, result_dir="", purpose="p")
    for n in (1, 2):
        run = model.add_trial(run, Trial(number=n, command="c", session="ajet_x"))
        run = model.trial_started(run, 10.0 * n)
    history = [{"global_steps": s, "mean_reward": 0.1 * s} for s in (2, 4, 6, 2, 4)]
    return replace(run, history=tuple(history), fixes=("nccl_nvls_off",))


def test_history_pieces_are_labelled_by_trial_and_fix() -> None:
    run = _run_with_history()
    assert [len(p) for p in segments(list(run.history))] == [3, 2]
    assert drawing.segment_labels(run) == ["trial 1", "trial 2 (after fix nccl_nvls_off)"]
    assert drawing.segment_labels(replace(run, trials=run.trials[:1])) == ["part 1", "part 2"]


def test_a_plot_that_fails_is_logged_and_said_never_fatal(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    home.ensure()
    run = replace(_run_with_history(), result_dir=str(tmp_path / "result"))
    home.run_dir(run.run_id).mkdir()
    (tmp_path / "result").mkdir()
    drawn, problem = drawing.draw_final(home, run, timeout=0.001)
    assert drawn == [] and "longer than 0s" in problem
    ended = model.finish(run, Status.SUCCEEDED, "exit 0", 0, 99.0)
    ctx = report.ReportContext(host="h", plot_problem=problem)
    assert "Pictures not drawn: drawing took longer" in report.render_results(ended, ctx)
    drawn, problem = drawing.draw_final(home, run)  # the same run, given the time it needs
    assert drawn == ["curves.png"] and problem == ""
    assert (tmp_path / "result" / "curves.png").read_bytes().startswith(PNG)


def test_pictures_off_starts_no_plotter_and_links_no_picture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AJETD_PICTURES=off (the `env` fixture's daemons have it unless a test is marked
    `pictures`): neither the final pictures nor a mid-run drawing nor a campaign's
    progress.png start a child; the run's end says nothing of pictures."""
    from ajetd.pictures.campaigndrawing import Plotter

    monkeypatch.setenv(drawing.OFF_ENV, "off")
    home = Home(tmp_path / "home")
    home.ensure()
    run = replace(_run_with_history(), result_dir=str(tmp_path / "result"))
    home.run_dir(run.run_id).mkdir()
    (tmp_path / "result").mkdir()
    assert drawing.draw_final(home, run) == ([], "")
    drawing.LivePlots().request(home, run, 0.0)
    progress = Plotter()
    progress.request("c-abcdef", tmp_path / "plot.json", tmp_path / "result" / "progress.png")
    assert not progress.running and not progress.due
    assert list(home.run_dir(run.run_id).iterdir()) == []  # no spec for a plotter either
    assert list((tmp_path / "result").iterdir()) == []
    monkeypatch.setenv(drawing.OFF_ENV, "")
    assert drawing.wanted()


def test_matplotlib_never_enters_the_daemon_or_the_cli() -> None:
    code = "import sys, ajetd.daemon.loop, ajetd.cli.main; print('matplotlib' in sys.modules)"
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _drawn_title(tmp_path: Path, title: str) -> str:
    spec = {
        "result_dir": str(tmp_path),
        "title": title,
        "keys": ["mean_reward"],
        "history": [
            {"global_steps": 1, "mean_reward": 0.1},
            {"global_steps": 2, "mean_reward": 0.2},
        ],
        "gpu_file": str(tmp_path / "none.jsonl"),
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    argv = [PYTHON, "-m", "ajetd.pictures.runcurves", str(tmp_path / "spec.json")]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    assert (tmp_path / "curves.png").read_bytes().startswith(PNG)
    return str(json.loads(done.stdout.splitlines()[-1])["title"])


@pytest.mark.pictures
def test_a_purpose_no_font_can_draw_is_never_boxes(tmp_path: Path) -> None:
    """Walk 82, L3: a Chinese purpose was drawn as empty boxes in curves.png's title (no CJK
    font in matplotlib's list). The CJK fonts a machine has (fonts-noto-cjk,
    fonts-wqy-zenhei, ...) follow matplotlib's own; where no font has a character, the
    title is the run's name and says the purpose is in results.md."""
    from ajetd.pictures.runcurves import NO_FONT, drawable_title

    assert drawable_title("run abc123: 学习率", str.isascii) == f"run abc123 ({NO_FONT})"
    assert drawable_title("run abc123: lr 1e-4", str.isascii) == "run abc123: lr 1e-4"
    linear_b = "run abc123: \U00010000\U00010001"  # a script no font here has
    assert _drawn_title(tmp_path, linear_b) == f"run abc123 ({NO_FONT})"
    chinese = "run abc123: 验证学习率对收敛的影响"
    listed = ["fc-list", ":lang=zh"]
    has_cjk = shutil.which("fc-list") and subprocess.run(listed, check=False, capture_output=True)
    expected = chinese if has_cjk and has_cjk.stdout.strip() else f"run abc123 ({NO_FONT})"
    assert _drawn_title(tmp_path, chinese) == expected


def _recorded_after_exit(env: Env, run_id: str) -> float:
    """Seconds from the run's exit (its trial's exit file) to its end on record (the journal's
    `run ended` line, written with the `done` record): the same clock, not a file's time."""
    exited = float(env.record(run_id)["trials"][-1]["ended_at"])
    lines = (env.home / "runs" / run_id / "events.jsonl").read_text().splitlines()
    return min(float(json.loads(line)["at"]) for line in lines if "run ended" in line) - exited


@pytest.mark.pictures
def test_a_burst_of_ends_with_pictures_holds_no_other_end(env: Env) -> None:
    """Four runs with curves to draw end at once, a fifth a moment later: its end is on record
    at once, not once the drawings of the four are done (each a matplotlib child, ~1.2 s of
    CPU, that the loop waited for in turn: the fifth was recorded 3 s after its exit here, and
    40 such ends held a time limit two minutes late, walk 85). Each of the four still gets
    its pictures before its finish.flag."""
    env.start_daemon()
    go = env.tmp / "go"
    burst = []
    for n in range(4):
        config = env.config(f"burst{n}", hold_until=str(go))
        burst.append(env.submit(env.blueprint(f"burst{n}", config=config)))
    wait = f"while [ ! -e {go} ]; do sleep 0.02; done; sleep 0.2"
    late = env.submit(env.blueprint("late", command=wait))
    for run_id in (*burst, late):
        wait_for(lambda r=run_id: env.record(r).get("state") == "running", 60, what="running")
    go.touch()
    env.wait_done(late, timeout=120)
    assert _recorded_after_exit(env, late) < 1.0
    for n, run_id in enumerate(burst):
        assert env.wait_done(run_id, timeout=120)["status"] == "succeeded"
        result = env.tmp / "results" / f"burst{n}"
        assert (result / "curves.png").read_bytes().startswith(PNG)
        assert "![validation metrics by step](curves.png)" in (result / "results.md").read_text()


def _held_runs(tmp_path: Path, names: tuple[str, ...]) -> tuple[Home, list[Run]]:
    """A home and ended runs with curves to draw, each with its result dir."""
    home = Home(tmp_path / "home")
    home.ensure()
    runs = []
    for name in names:
        run = replace(_run_with_history(), run_id=name, result_dir=str(tmp_path / name))
        home.run_dir(name).mkdir()
        Path(run.result_dir).mkdir()
        runs.append(run)
    return home, runs


def test_final_drawings_queue_at_their_limit_and_a_hung_one_is_ended_at_its_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FinalDrawings' queue (`limit` children at once, the others in the order they ended)
    and its timeout had no test: real plotter children, held before they draw (a plotter
    that hangs), on an injected clock. A child past its time is killed and said to be; the
    next one in line starts in its place; a child that ended holds no place."""
    monkeypatch.setenv(TEST_WAIT_ENV, str(tmp_path / "never"))  # they hang
    now = [0.0]
    finals = drawing.FinalDrawings(limit=2, timeout=60.0, clock=lambda: now[0])
    home, (a, b, c) = _held_runs(tmp_path, ("aaaaa1", "bbbbb2", "ccccc3"))
    try:
        for run in (a, b, c):
            finals.start(run.run_id)
            assert finals.outcome(home, run) is None  # drawing, or waiting its turn
        child = {r: f.proc for r, f in finals.runs.items()}
        assert child["aaaaa1"] and child["bbbbb2"] and child["ccccc3"] is None  # two at once
        now[0] = 59.0
        assert finals.outcome(home, a) is None and finals.outcome(home, c) is None
        now[0] = 60.0
        drawn, problem = finals.outcome(home, a) or ([""], "")
        assert drawn == [] and problem.startswith("drawing took longer than 60s and was ended")
        assert child["aaaaa1"].returncode == -9 and not finals.holds("aaaaa1")
        assert finals.outcome(home, c) is None and finals.runs["ccccc3"].running()  # its turn
        finals.runs["bbbbb2"].proc.kill()  # type: ignore[union-attr]
        finals.runs["bbbbb2"].proc.wait()  # type: ignore[union-attr]
        d = replace(a, run_id="ddddd4")
        home.run_dir("ddddd4").mkdir()
        finals.start("ddddd4")
        assert finals.outcome(home, d) is None and finals.runs["ddddd4"].running()
    finally:
        for run_id in list(finals.runs):
            finals.forget(run_id)


def test_final_drawings_wake_the_loop_only_while_one_is_due(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `pending` was any drawing held, so a run whose reports wait for a full result
    dir (its drawing queued or its child ended, its outcome not asked) woke the loop every
    DRAW_POLL_S for as long as the disk stayed full. Now only a child drawing, or a drawing
    not yet started and not parked for a refusing folder, asks for the quick wake-up."""
    monkeypatch.setenv(TEST_WAIT_ENV, str(tmp_path / "never"))
    finals = drawing.FinalDrawings(limit=1)
    home, (a, b) = _held_runs(tmp_path, ("aaaaa1", "bbbbb2"))
    try:
        assert not finals.pending()
        finals.start("aaaaa1")
        assert finals.pending()  # started at the next pass
        finals.park("aaaaa1")  # its folder refuses the reports: looked at on its retry
        assert not finals.pending()
        assert finals.outcome(home, a) is None and finals.pending()  # asked again: drawing
        finals.start("bbbbb2")
        finals.park("bbbbb2")
        finals.runs["aaaaa1"].proc.kill()  # type: ignore[union-attr]
        finals.runs["aaaaa1"].proc.wait()  # type: ignore[union-attr]
        finals.park("aaaaa1")  # its child ended while its folder refuses: nothing to poll
        assert not finals.pending()
        assert finals.outcome(home, b) is None and finals.runs["bbbbb2"].running()
    finally:
        for run_id in list(finals.runs):
            finals.forget(run_id)
