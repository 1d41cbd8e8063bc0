"""Paths that are unusual or change under a run.

Paths tmux would read as its own syntax, or the shell as its own: a home, codebase and result
dir holding `%` (strftime, in some tmux commands), `#` (tmux formats: `#{...}`, `##`,
`#[...]`), spaces, quotes, `$`, backslashes and accents. Before, `pipe-pane` wrote the trial's
log to a file named after the date and the session (`%Y` -> 2026, `#{session_name}` ->
ajet_...), `new-session -c` fell back to the daemon's folder, and a home with `"`, `$` or `\\`
in it made every run's pane unfindable (tmux lists its command escaped). A result dir removed
or replaced mid-run: nothing printed is lost, and its output is read where it went on. Real
tmux, a real daemon, real files."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from ajetd.adapters.tmux import CHECK_EVERY_S, VANISHED_NOTE, Tmux, find_pane
from ajetd.hosts import copyback
from ajetd.pictures import drawing
from ajetd.pictures.campaigndrawing import Plotter
from conftest import Env, fill, gated_script, printed, replace_by_file, wait_for

# each of tmux's expansions and each of the shell's quotes, in one folder name
ODD = "a %Y %% #{session_name} ## #[fg=red] #S x# $HOME q\"u'o \\b é"


def _odd_world(env: Env) -> Path:
    """Move the test's home and codebase under a folder of the odd name; return that folder."""
    odd = env.tmp / ODD
    odd.mkdir()
    shutil.move(env.codebase, odd / "codebase")
    env.codebase = odd / "codebase"
    env.home = odd / "home"
    env.vars["AJETD_HOME"] = str(env.home)
    return odd


def test_odd_characters_in_every_path_reach_tmux_and_the_shell_as_written(env: Env) -> None:
    odd = _odd_world(env)
    result = odd / "result"
    env.start_daemon()
    go = odd / "go"
    command = f"pwd > where.txt; echo line-one; while [ ! -e {shlex.quote(str(go))} ]; do "
    command += "sleep 0.05; done; echo line-two; exit 3"
    bp = env.blueprint("odd", command=command, result=f"`{result}`", ajetd="gpus: 0")
    text = bp.read_text().replace(f": {env.codebase}\n", f": `{env.codebase}`\n")
    bp.write_text(text)
    run_id = env.submit(bp)
    log = result / "logs" / "trial-1.log"
    wait_for(lambda: printed(log, "line-one"), what="the first line")
    diag = json.loads(env.cli("diag", run_id, "--json").stdout)  # its pane, found by its script
    assert any("line-one" in line for line in diag["pane"]), diag["pane"]
    go.touch()
    status = env.wait_done(run_id)
    assert (status["status"], status["exit_code"]) == ("failed", 3), status
    assert (env.codebase / "where.txt").read_text() == f"{env.codebase}\n"  # new-session -c
    text = log.read_text()  # pipe-pane's command, as written
    assert "line-one\nline-two\n" in text, text
    assert sorted(p.name for p in odd.iterdir()) == ["codebase", "go", "home", "result"]
    assert not list(env.tmp.glob("a 2*")), "a file named by strftime"
    assert (result / "finish.flag").exists()
    logs = env.cli("logs", run_id)
    assert "line-two" in logs.stdout, logs.stderr
    assert "lost" not in env.daemon_log()


@pytest.mark.parametrize("name", [ODD, "ends;", "ends\\;", "##[x] ###[y] #[z"])
def test_each_tmux_call_takes_a_path_as_written(env: Env, name: str) -> None:
    """new-session's -c, its pipe-pane's command and a respawn, without a daemon."""
    folder = env.tmp / name
    folder.mkdir()
    script = folder / "s.sh"
    go = gated_script(script, 'pwd > "$0.where"; echo printed\n')
    log = folder / "logs" / "trial-1.log"
    log.parent.mkdir()
    tmux = Tmux(env.socket)
    pane = tmux.new_session("ajet_odd", str(folder), str(script), str(log), "trial-1")
    go.touch()  # its pane made and piped: what it prints now reaches the log
    wait_for(lambda: log.exists() and "printed" in log.read_text(), what="the output in its log")
    assert (folder / "s.sh.where").read_text() == f"{folder}\n"
    assert find_pane(tmux.panes(), script) is not None
    again = folder / "again.sh"
    again.write_text("echo again; sleep 30\n")
    wait_for(lambda: find_pane(tmux.panes(), script).dead, what="the first script to end")
    tmux.respawn(pane.pane_id, str(again), "trial-#2")
    wait_for(lambda: find_pane(tmux.panes(), again), what="the respawned pane found")
    windows = env.tmux("list-windows", "-a", "-F", "#{window_name}").stdout
    assert windows == "trial-#2\n", windows
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["again.sh", "logs", "s.sh", "s.sh.go", "s.sh.where"]


def test_a_nemo_runs_metrics_are_read_where_its_output_went_on(env: Env) -> None:
    """A NeMo-RL run's metrics are its output: once its result dir is replaced by a link mid-run,
    the output goes on in the spare (`$AJETD_HOME/runs/<id>/trial-1.log`), and the readers
    (`trials.unread`, the metrics' reader, `shows_validation`, `program_end`) read it there.
    Before, they read `<result dir>/logs/trial-1.log`, through the link: no record after the
    swap, the run's best and its end's words lost."""
    source = env.codebase / "examples" / "configs" / "grpo_fake.yaml"
    slow = source.with_name("grpo_slow.yaml")
    # (its own `fake:` changed: a second `fake:` key is refused, as OmegaConf refuses it)
    slow.write_text(source.read_text().replace("step_time: 0.05", "step_time: 0.4", 1))
    config = "examples/configs/grpo_slow.yaml"
    command = (
        f"python examples/run_grpo.py --config {config} grpo.max_num_steps=6 grpo.val_period=2"
    )
    env.start_daemon()
    run_id = env.submit(env.blueprint("nemo_moved", config=config, command=command))
    result = env.tmp / "results" / "nemo_moved"
    log = result / "logs" / "trial-1.log"
    wait_for(lambda: log.exists() and "Step 1/6" in log.read_text(), what="the first step")
    shutil.rmtree(result)
    elsewhere = env.tmp / "elsewhere"
    elsewhere.mkdir()
    result.symlink_to(elsewhere)
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    history = env.record(run_id)["history"]
    assert [h["accuracy"] for h in history] == [0.34, 0.38, 0.42], history
    assert status["metrics"]["accuracy"] == 0.42, status
    assert list(elsewhere.glob("*.md")) == [], "a report written through the link"


def _numbers(text: str) -> list[int]:
    return [int(line[1:]) for line in text.splitlines() if re.fullmatch(r"n\d+", line)]


@pytest.mark.parametrize("how", ["removed", "moved away"])
def test_what_is_printed_before_the_writer_sees_its_folder_gone_is_all_kept(
    env: Env, how: str
) -> None:
    """A result dir removed or moved away while the program prints hundreds of lines a second
    loses none of them, those printed before the writer saw it (into the file it still held)
    copied back in order ahead of the rest. The writer looks on its own only every
    CHECK_EVERY_S (60 s): it is the daemon that misses the log (its path names no file) and
    asks it at once. Measured (2 cores, bench load, 5 s checks): 0 lines lost of
    3,000-300,000, seen 0.5-5.0 s late."""
    stop = env.tmp / "stop"
    pause = "read -r -t 0.002 -u 9 _"  # bash's own wait: no process a line
    command = f"exec 9<> <(:); i=0; until [ -e {stop} ]; do i=$((i+1)); echo n$i; {pause}; done"
    command += "; echo n$i-end"
    env.start_daemon()
    run_id = env.submit(env.blueprint("window", command=command, ajetd="gpus: 0"))
    result = env.tmp / "results" / "window"
    log = result / "logs" / "trial-1.log"
    wait_for(lambda: log.exists() and len(_numbers(log.read_text())) > 100, what="output")
    if how == "removed":
        shutil.rmtree(result)
    else:
        result.rename(env.tmp / "results" / "elsewhere")
    seen = wait_for(
        lambda: log.exists() and VANISHED_NOTE in log.read_text() and log.read_text(),
        timeout=CHECK_EVERY_S / 4,
        what="the writer to see its folder gone",
    )
    wait_for(lambda: len(_numbers(log.read_text())) > len(_numbers(seen)) + 100, what="more")
    stop.touch()
    assert env.wait_done(run_id)["status"] == "succeeded"
    numbers = _numbers(log.read_text())
    last = int(re.findall(r"^n(\d+)-end$", log.read_text(), re.M)[0])
    assert numbers == list(range(1, last + 1)), "lines lost or out of order"


@pytest.mark.pictures
def test_pictures_a_full_result_dir_held_back_are_drawn_once_it_has_room(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The first drawing of a run's curves met its result dir's full disk (the plotter failed);
    once there is room, the next deep check draws them. Before, the failed drawing counted as
    drawn: the next came LIVE_EVERY_S (30 s) after it at the soonest, at a deep check (their
    backoff reaches 16 min), so a run's curves could stay missing for many minutes."""
    disk = tmpfs(env.tmp / "small", "1m")
    result = disk / "out"
    env.start_daemon()
    config = env.config("held", forever=True, step_time=0.05)
    text = (env.codebase / config).read_text().replace("test_freq: 2", "test_freq: 10")
    (env.codebase / config).write_text(
        text.replace("val_before_train: true", "val_before_train: false")
    )
    run_id = env.submit(env.blueprint("held", config=config, result=str(result)))
    wait_for(lambda: env.record(run_id).get("started_at"), what="the run to start")
    filler = fill(disk)
    wait_for(lambda: "mid-run pictures not drawn" in env.daemon_log(), what="a failed drawing")
    assert not (result / "curves.png").exists()
    filler.unlink()
    wait_for((result / "curves.png").exists, timeout=15, what="the curves drawn with room")
    assert env.cli("stop", run_id).returncode == 0


def test_a_campaigns_progress_that_met_a_full_disk_is_drawn_once_there_is_room(
    tmp_path: Path, tmpfs: Callable[[Path, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """progress.png failed on its folder's full disk: drawn again once there is room (the
    plotter's next pass), not only at the campaign's next ledger row."""
    monkeypatch.setenv(drawing.OFF_ENV, "")
    disk = tmpfs(tmp_path / "small", "1m")
    source = tmp_path / "plot.json"
    points = [{"index": i, "name": f"e{i}", "value": 0.1 * i, "status": "keep"} for i in (1, 2)]
    data = {"title": "c", "metric": "m", "maximise": True, "baseline": 0.1, "points": points}
    source.write_text(json.dumps(data))
    filler = fill(disk)
    plotter = Plotter()
    plotter.request("c-abcdef", source, disk / "progress.png")
    wait_for(lambda: plotter.reap() or not plotter.running, what="the drawing to fail")
    assert not (disk / "progress.png").exists() and "c-abcdef" in plotter.undrawn
    plotter.reap()
    assert not plotter.running, "drawn again into a disk still full"
    filler.unlink()
    wait_for(lambda: plotter.reap() or (disk / "progress.png").exists(), what="progress.png")


@pytest.mark.parametrize("to", ["another folder", "the same folder moved"])
def test_a_link_swapped_into_the_result_dirs_path_is_never_written_through(
    env: Env, to: str
) -> None:
    """The result dir is given through a link (`via` -> `real`: the user's, followed). While
    the run lives, `via` is pointed at another folder holding a folder of the dir's name (ours,
    no link in it: the writer's own checks pass), or `real` is moved and `via` pointed at it
    (the log still reaches the file its writer holds). Before, the log's writer made `logs/`
    and the log in the other folder, and the reports were written there: through a link
    nobody expected. Now every writer refuses: the output goes on in the spare (all of it,
    before and after), the reports beside it, and the run needs attention saying why."""
    real, other, via = env.tmp / "real", env.tmp / "other", env.tmp / "via"
    real.mkdir()
    if to == "another folder":
        (other / "out").mkdir(parents=True)
    via.symlink_to(real)
    result, go = via / "out", env.tmp / "go"
    env.start_daemon()
    command = f"echo before; while [ ! -e {go} ]; do sleep 0.05; done; echo after"
    run_id = env.submit(env.blueprint("swap", command=command, result=str(result)))
    log = real / "out" / "logs" / "trial-1.log"  # through the user's own link
    wait_for(lambda: printed(log, "before"), what="the first output")
    if to != "another folder":
        real.rename(other)
    swap = env.tmp / "swap"
    swap.symlink_to(other)
    swap.replace(via)  # one rename: the path leads elsewhere from now on
    go.touch()
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    written = [p.name for p in (other / "out").iterdir()]
    assert written == ([] if to == "another folder" else ["logs"]), "written through the link"
    folder = env.home / "runs" / run_id
    text = (folder / "trial-1.log").read_text()
    assert text.index("\nbefore\n") < text.index("\nafter\n"), text
    said = f"the result dir {result} now leads to {other / 'out'}, not to {real / 'out'}"
    assert status["attention"].startswith(said), status["attention"]
    assert (folder / "finish.flag").exists() and (folder / "results.md").exists()
    assert env.cli("wait", run_id).returncode == 2  # its result dir holds no finish.flag
    assert "after" in env.cli("logs", run_id).stdout


def test_a_copy_back_into_a_result_dir_that_leads_elsewhere_is_not_made(tmp_path: Path) -> None:
    """An SSH run's copy back pulls its remote result dir into the local one of the same path:
    where a link was put in that path after admission, nothing is pulled through it (the files
    stay on the host, the journal's line says why), before any connection is made."""
    real, other, via = tmp_path / "real", tmp_path / "other", tmp_path / "via"
    real.mkdir()
    (other / "out").mkdir(parents=True)
    via.symlink_to(other)
    job = copyback.Job("{}", "gpu-host", "/code", ("ckpt/",), str(via / "out"), str(real / "out"))
    said = copyback.copy(copyback.Job.from_json(json.loads(json.dumps(job.to_json()))))
    assert said.startswith(f"not copied back from gpu-host: the result dir {via / 'out'}"), said
    assert said.endswith("; the files stay there") and list((other / "out").iterdir()) == []


@pytest.mark.pictures
def test_a_final_drawing_a_full_result_dir_refused_leaves_no_stale_curves(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """curves.png (~100 KB) was drawn mid-run; the result dir then filled (16 KiB left) and the
    final drawing failed; then room came back for the reports, not for a picture. Before, the
    mid-run picture (an older best) stayed, linked, beside results.md's "Pictures not drawn".
    Now whatever results.md links was drawn once the run ended, and one it does not link is
    gone, as it says."""
    disk = tmpfs(env.tmp / "small", "2m")
    result = disk / "out"
    env.start_daemon()
    config = env.config("stale", forever=True, step_time=0.05)
    run_id = env.submit(env.blueprint("stale", config=config, result=str(result)))
    wait_for((result / "curves.png").exists, timeout=30, what="the mid-run curves")
    filler = fill(disk)
    size = filler.stat().st_size
    with filler.open("r+b") as handle:
        handle.truncate(size - 16 * 1024)
    env.cli("stop", "--no-wait", run_id)
    wait_for(lambda: "pictures not drawn:" in env.daemon_log(), what="the final drawing failed")
    with filler.open("r+b") as handle:  # room for the reports (~44 KiB), not for a picture
        handle.truncate(size - 80 * 1024)
    env.wait_done(run_id)
    ended = float(env.record(run_id)["ended_at"])
    results = (result / "results.md").read_text()
    picture = result / "curves.png"
    if picture.exists():  # drawn again with the room the stale one left
        assert picture.stat().st_mtime >= ended and "](curves.png)" in results
        assert "Pictures not drawn" not in results, results
    else:
        assert "Pictures not drawn" in results and "curves.png, which showed an older" in results
        assert "](curves.png)" not in results, results
    filler.unlink()


@pytest.mark.parametrize("how", ["removed", "replaced by a file"])
def test_a_result_dir_gone_before_a_failure_says_where_the_reports_went(env: Env, how: str) -> None:
    """The result dir is moved away (a file put in its place) or removed, then the program
    fails at once: the reports go to the run's folder in the home, and the warnings and the
    journal say so either way (before: only the removed dir's end said it)."""
    trigger = env.tmp / "fail-now"
    result = env.tmp / "resE" / "e14"
    env.start_daemon()
    command = f"while [ ! -e {trigger} ]; do sleep 0.05; done; echo boom; exit 3"
    run_id = env.submit(env.blueprint("gone", command=command, result=str(result), ajetd="gpus: 0"))
    wait_for(lambda: env.record(run_id).get("started_at"), what="the run to start")
    if how == "removed":
        shutil.rmtree(result)
    else:
        replace_by_file(result, env.tmp / "e14.moved")
    trigger.touch()
    status = env.wait_done(run_id)
    home = env.home / "runs" / run_id
    folder = result if how == "removed" else home  # made again where nothing stands
    assert (folder / "trials.md").exists()
    said = [w for w in status["warnings"] if "log folder vanished" in w]
    where = "made again" if how == "removed" else str(home)
    assert said and where in said[0], status["warnings"]
    assert "log folder vanished" in (home / "events.jsonl").read_text()


def _deep(root: Path, size: int) -> Path:
    """A folder under `root` whose path is about `size` bytes long (100-byte names)."""
    return root.joinpath(*["d" * 99] * ((size - len(str(root))) // 100))


@pytest.mark.parametrize("where", ["result", "home"])
def test_a_path_of_kilobytes_launches(env: Env, where: str) -> None:
    """Walk88 F4: a result dir of ~1.3 KB (lint allows 4095 B a path) or a home of ~1.6 KB
    made every launch fail `tmux if-shell: command too long`: the log writer's script named
    each path many times, quoted and escaped, in the launch's one tmux call (16 KiB at
    most). It names each once now: a result dir of 3.9 KB, a home of 2.9 KB run."""
    if where == "home":
        env.home = _deep(env.tmp / "h", 2900)
        env.home.mkdir(parents=True, mode=0o700)
        env.vars["AJETD_HOME"] = str(env.home)
    result = _deep(env.tmp / "r", 3900) if where == "result" else env.tmp / "results" / "short"
    env.start_daemon()
    run_id = env.submit(env.blueprint("deep", result=str(result), command="echo from-deep"))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    assert "from-deep" in (result / "logs" / "trial-1.log").read_text()
    assert env.status(run_id)["reports_dir"] == str(result)
