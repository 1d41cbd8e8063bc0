"""A new run's result dir: nothing ajetd would write there may be there already (refused at
admission and by `ajetd lint`, naming the files), and a result dir that cannot be had (a
symbolic link loop, a link to nothing, a part that is a file, a folder that may not be looked
into) is a problem named as such, never an internal error. Real daemon, real files and links,
real tmpfs mounts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from ajetd.adapters.reach import path_problem
from ajetd.adapters.resultdir import earlier_files, result_dir_problem
from ajetd.core import resultfiles
from conftest import Env, campaign_folder, fill, git

USER = "USER DATA {}\n"


def _lint(env: Env, blueprint: Path) -> tuple[int, str]:
    out = env.cli("lint", str(blueprint))
    return out.returncode, out.stdout + out.stderr


def _plant(result: Path, names: list[str]) -> dict[Path, str]:
    """The user's own files at `names` in `result`; what each holds."""
    kept = {}
    for name in names:
        path = result / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(USER.format(name))
        kept[path] = path.read_text()
    return kept


def test_every_file_ajetd_writes_is_refused_when_there_already(daemon_env: Env) -> None:
    """The blind walk's H3: run.json, curves.png, config-used.yaml, provenance.diff replaced,
    logs/trial-1.log appended to, and lint said ok. Now lint and admission refuse the dir,
    naming each file, and leave every one as it was (no rejection report written over them)."""
    env = daemon_env
    result = env.tmp / "results" / "pre"
    names = [*resultfiles.WRITTEN, "logs/trial-1.log"]
    names.remove(resultfiles.FINISH_FLAG)  # an earlier run's end: refused before too
    kept = _plant(result, names)
    blueprint = env.blueprint("pre", result=str(result))
    code, said = _lint(env, blueprint)
    assert code == 2, said
    for name in names:
        assert name in said, (name, said)
    assert "choose another exp_result_dir, or move them" in said
    run_id = env.submit(blueprint)
    status = env.wait_done(run_id)
    assert status["status"] == "rejected"
    assert f"{result} already holds results.md" in status["reason"]
    assert all(name in status["reason"] for name in names)
    assert {p: p.read_text() for p in kept} == kept  # nothing replaced, nothing appended
    assert sorted(p.name for p in result.iterdir()) == sorted({n.split("/")[0] for n in names})
    assert not env.launches()


@pytest.mark.parametrize("name", [*resultfiles.WRITTEN, "logs/trial-7.log"])
def test_each_name_alone_is_refused(tmp_path: Path, name: str) -> None:
    _plant(tmp_path, [name])
    problem = result_dir_problem(str(tmp_path))
    assert problem is not None and f"already holds {name}" in problem


def test_what_ajetd_does_not_write_is_left_to_the_user(tmp_path: Path) -> None:
    """Other files, other logs in logs/, and a folder of the user's are not ajetd's names."""
    _plant(tmp_path, ["notes.md", "logs/train.log", "data/run.json", "checkpoints/step1.pt"])
    assert result_dir_problem(str(tmp_path)) is None


def test_a_logs_that_is_no_folder_of_its_own_is_refused(tmp_path: Path) -> None:
    (tmp_path / "logs").write_text("a file")
    assert "logs (not a folder of its own" in str(result_dir_problem(str(tmp_path)))
    (tmp_path / "logs").unlink()
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    elsewhere.mkdir()
    (tmp_path / "logs").symlink_to(elsewhere)  # ajetd would write through an unexpected link
    assert "logs (not a folder of its own" in str(result_dir_problem(str(tmp_path)))


def test_a_dangling_link_at_a_name_counts_as_there(tmp_path: Path) -> None:
    (tmp_path / "run.json").symlink_to(tmp_path / "nowhere")
    assert "already holds run.json" in str(result_dir_problem(str(tmp_path)))


def test_many_trial_logs_are_named_in_part(tmp_path: Path) -> None:
    _plant(tmp_path, [f"logs/trial-{n}.log" for n in range(1, 40)])
    found = earlier_files(tmp_path)
    assert len(found) == 6 and found[-1] == "..."


def test_a_nemo_rl_run_refuses_an_earlier_nemo_rl_folder(env: Env, tmp_path: Path) -> None:
    """ajetd points a NeMo-RL run's log and checkpoint dirs at `nemo_rl/` in its result dir:
    another run's checkpoints there would make it resume from them."""
    result = env.tmp / "results" / "nemo"
    _plant(result, ["nemo_rl/checkpoints/step_10/x.pt"])
    command = "uv run examples/run_grpo.py --config configs/nemo.yaml"
    # the keys the command overrides are in it, as in every NeMo-RL config (Hydra refuses an
    # override of a key the config lacks, and so does lint)
    (env.codebase / "configs" / "nemo.yaml").write_text(
        "grpo: {max_num_steps: 2}\nlogger: {log_dir: logs}\ncheckpointing: {checkpoint_dir: c}\n"
    )
    nemo = env.blueprint("nemo", config="configs/nemo.yaml", command=command, result=str(result))
    code, said = _lint(env, nemo)
    assert code == 2 and "already holds nemo_rl" in said, said
    # where the command sets both dirs itself, ajetd writes none there
    own = f"{command} logger.log_dir=/tmp/l checkpointing.checkpoint_dir=/tmp/c"
    mine = env.blueprint("nemo", config="configs/nemo.yaml", command=own, result=str(result))
    assert _lint(env, mine)[0] == 0
    # an AgentJet run never writes there: its nemo_rl/ is the user's
    assert _lint(env, env.blueprint("aj", result=str(result)))[0] == 0


def test_a_val_file_ajetd_would_choose_in_the_result_dir_is_refused(env: Env) -> None:
    """A config without a val file gets `<result dir>/val_results.md` (a fix in the copy):
    one there already would be appended to, and its lines read as this run's."""
    config = env.config("noval")
    data = yaml.safe_load((env.codebase / config).read_text())
    del data["ajet"]["trainer_common"]["val_print_to_markdown_file_path"]
    (env.codebase / config).write_text(yaml.safe_dump(data))
    result = env.tmp / "results" / "noval"
    kept = _plant(result, ["val_results.md"])
    code, said = _lint(env, env.blueprint("noval", config=config, result=str(result)))
    assert code == 2 and f"{result} already holds val_results.md" in said, said
    assert {p: p.read_text() for p in kept} == kept
    # named by the config itself, the file is the user's choice: not refused
    data["ajet"]["trainer_common"]["val_print_to_markdown_file_path"] = str(
        result / "val_results.md"
    )
    (env.codebase / config).write_text(yaml.safe_dump(data))
    code, said = _lint(env, env.blueprint("noval", config=config, result=str(result)))
    assert code == 0, said


@pytest.mark.pictures
def test_every_file_a_finished_run_leaves_is_one_the_guard_knows(daemon_env: Env) -> None:
    """The list cannot drift from the writers: a run that wrote every file (a dirty git
    codebase: provenance.diff; validations: curves.png; its config: config-used.yaml) leaves
    nothing in its result dir that `earlier_files` would not name, and its dir is refused to
    the next run."""
    env = daemon_env
    git(env.codebase, "init", "-q", "-b", "main")
    git(env.codebase, "add", "-A")
    git(env.codebase, "commit", "-q", "-m", "base")
    launcher = env.codebase / "fakejet" / "launcher.py"
    launcher.write_text(launcher.read_text() + "\n# a tweak\n")
    result = env.tmp / "results" / "all"
    run_id = env.submit(env.blueprint("all", result=str(result)))
    assert env.wait_done(run_id, timeout=90)["status"] == "succeeded"  # its pictures drawn
    left = sorted(str(p.relative_to(result)) for p in result.rglob("*") if not p.is_dir())
    assert {"provenance.diff", "curves.png", "config-used.yaml", "run.json"} <= set(left), left
    found = earlier_files(result)
    assert sorted(found) == left, (found, left)
    code, said = _lint(env, env.blueprint("again", result=str(result)))
    assert code == 2 and "already holds finish.flag, results.md" in said


def test_a_rejection_report_is_moved_aside_whole(daemon_env: Env) -> None:
    """An earlier rejection's report (results.md, trials.md, run.json, finish.flag) is moved
    into rejected-<id>/, never a reason to refuse the fixed blueprint; nothing of it is left
    for the new run to replace."""
    env = daemon_env
    result = env.tmp / "results" / "fixme"
    first = env.submit(env.blueprint("fixme", result=str(result), max_time="whenever"))
    assert env.wait_done(first)["status"] == "rejected"
    report = sorted(p.name for p in result.iterdir())
    assert "run.json" in report, report
    second = env.submit(env.blueprint("fixme", result=str(result)))
    assert env.wait_done(second)["status"] == "succeeded"
    aside = result / f"rejected-{first}"
    assert sorted(p.name for p in aside.iterdir()) == report
    assert json.loads((aside / "run.json").read_text())["run_id"] == first
    events = (env.home / "runs" / first / "events.jsonl").read_text()
    assert f"its rejection report moved to {aside}: run {second} took {result}" in events
    _points_aside(env, first, result, aside)


def _points_aside(env: Env, run_id: str, left: Path, aside: Path) -> None:
    """Every view of the rejected run's record (state.json, `status --json`, `wait --json`,
    the run.json moved with its report) names the folder its report is in now, none the dir
    it left, which holds the next run's finish.flag (walk92 F2: `reports_dir` stayed)."""
    waited = env.cli("wait", run_id, "--json", "--timeout", "10")
    views = {
        "state.json": env.record(run_id),
        "status --json": env.status(run_id),
        "wait --json": json.loads(waited.stdout),
        "run.json": json.loads((aside / "run.json").read_text()),
    }
    real = os.path.realpath(left)
    for name, view in views.items():
        assert view["result_dir"] == view["reports_dir"] == str(aside), (name, view)
        named = [
            k
            for k, v in view.items()
            if isinstance(v, str) and v.rstrip("/") and os.path.realpath(v) == real
        ]
        assert not named, (name, named)  # no path field left naming the next run's dir
    assert json.loads((aside / "finish.flag").read_text())["run_id"] == run_id


def test_a_rejection_spelt_otherwise_follows_its_report_aside(daemon_env: Env) -> None:
    """The rejected run's result dir spelt through a link and with a trailing `/`, the next
    run's plainly, and the next run rejected too (its own report written where the first's
    was): the first's record follows its report all the same."""
    env = daemon_env
    result = env.tmp / "results" / "spelt"
    result.mkdir(parents=True)
    (env.tmp / "via").symlink_to(env.tmp / "results")
    first = env.submit(env.blueprint("spelt", result=f"{env.tmp}/via/spelt/", max_time="soon"))
    assert env.wait_done(first)["status"] == "rejected"
    assert (result / "finish.flag").is_file()
    second = env.submit(env.blueprint("spelt2", result=str(result), max_time="later"))
    assert env.wait_done(second)["status"] == "rejected"
    aside = result / f"rejected-{first}"
    assert json.loads((result / "finish.flag").read_text())["run_id"] == second
    _points_aside(env, first, result, aside)


def _links(res: Path) -> dict[str, tuple[Path, str]]:
    """Each way a result dir cannot be had: the path, and words the problem must hold."""
    (res / "loop2").symlink_to(res / "loop1")
    (res / "loop1").symlink_to(res / "loop2")
    (res / "dangle").symlink_to(res / "nonexist" / "deep")
    (res / "afile").write_text("a file")
    return {
        "loop": (res / "loop1", f"{res / 'loop1'} is a symbolic link loop"),
        "under a loop": (res / "loop1" / "sub", f"{res / 'loop1'} is a symbolic link loop"),
        "dangling": (
            res / "dangle",
            f"{res / 'dangle'} is a symbolic link to {res / 'nonexist' / 'deep'}, which does "
            "not exist: ajetd never creates what a link points to",
        ),
        "under a dangling link": (res / "dangle" / "sub", f"{res / 'dangle'} is a symbolic link"),
        "under a file": (res / "afile" / "sub", f"{res / 'afile'} is a file, not a folder"),
        "a file": (res / "afile", "exists and is not a directory"),
    }


def test_a_result_dir_that_cannot_be_had_is_a_problem_in_lint_and_admission(
    daemon_env: Env,
) -> None:
    """The blind walk's M1: a symlink loop was `internal error ... OSError: [Errno 40]` at
    admission (a dangling link `FileExistsError`), a traceback in daemon.log, and lint said
    ok. Each is now the same named problem in both, and the run keeps what it asked."""
    env = daemon_env
    cases = _links(env.tmp / "results")
    ids = {}
    for name, (path, needle) in cases.items():
        blueprint = env.blueprint(name.replace(" ", "_"), result=str(path))
        code, said = _lint(env, blueprint)
        assert code == 2 and f"exp_result_dir: {path}" in said and needle in said, (name, said)
        ids[name] = env.submit(blueprint)
    for name, run_id in ids.items():
        status = env.wait_done(run_id)
        assert status["status"] == "rejected", (name, status)
        assert cases[name][1] in status["reason"] and "internal error" not in status["reason"]
        assert status["result_dir"] == str(cases[name][0]) and status["purpose"] == "test run"
    assert "Traceback" not in env.daemon_log()
    assert not (env.tmp / "results" / "nonexist").exists()  # never made through the link


def test_a_link_to_a_real_folder_is_followed(tmp_path: Path) -> None:
    """A result dir named through a link to a folder that is there is the user's choice."""
    (tmp_path / "real").mkdir()
    (tmp_path / "named").symlink_to(tmp_path / "real")
    assert result_dir_problem(str(tmp_path / "named")) is None
    assert result_dir_problem(str(tmp_path / "named" / "new" / "deeper")) is None
    assert path_problem(tmp_path / "named" / "new" / "deeper") == tmp_path / "named" / "new"


def test_a_folder_that_may_not_be_looked_into() -> None:
    """EACCES: as a user who may not enter the folder above (root may enter any: the check
    runs as `nobody`, in a folder of /tmp that it may reach)."""
    top = Path(tempfile.mkdtemp(prefix="ajetd-eacces-", dir="/tmp"))
    try:
        os.chmod(top, 0o755)
        closed = top / "closed"
        closed.mkdir(mode=0o700)
        code = (
            "import sys; from ajetd.adapters.resultdir import result_dir_problem; "
            "print(result_dir_problem(sys.argv[1]))"
        )
        src = str(Path(resultfiles.__file__).parents[2])
        # -S: no site-packages, which the user who installed them may have kept from
        # `nobody` (the CI's umask): the check needs the standard library alone (below)
        argv = [sys.executable, "-S", "-c", code, str(closed / "inner" / "run")]
        if os.geteuid() == 0:
            argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *argv]
        else:
            os.chmod(closed, 0o000)
        done = subprocess.run(
            argv, capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": src}
        )
        if done.returncode != 0 and "setpriv" in done.stderr:
            pytest.skip(f"cannot run as nobody here: {done.stderr.strip()}")
        assert done.returncode == 0, done.stderr
        assert f"cannot look into {closed} (Permission denied)" in done.stdout, done.stdout
    finally:
        os.chmod(top / "closed", 0o700)
        shutil.rmtree(top)


def test_the_result_dir_check_needs_the_standard_library_alone() -> None:
    """`adapters.resultdir` runs without site-packages (`python -S`): the checks of a folder
    import nothing installed (no YAML reader, no re2), so they run as any user, where the
    rest of a run is not looked at (a rebuild, a placement check)."""
    src = str(Path(resultfiles.__file__).parents[2])
    code = (
        "import sys, ajetd.adapters.resultdir as r; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'yaml', 're2', 'psutil'}))"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": src},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_a_failed_picture_leaves_no_temporary_file(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The blind walk's L1: a full result dir kept a zero-byte .curves.png.tmp for good."""
    result = tmpfs(env.tmp / "full", "1m")
    fill(result)
    spec = env.tmp / "spec.json"
    history = [{"global_steps": n, "mean_reward": n / 10} for n in range(1, 6)]
    spec.write_text(
        json.dumps(
            {
                "result_dir": str(result),
                "title": "t",
                "keys": ["mean_reward"],
                "history": history,
                "segment_labels": [],
                "trial_starts": [],
                "started_at": 0,
                "gpu_file": str(env.tmp / "none.jsonl"),
            }
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "ajetd.pictures.runcurves", str(spec)],
        capture_output=True,
        text=True,
        check=False,
        env={**env.vars, "MPLBACKEND": "Agg"},
    )
    assert done.returncode != 0 and "No space left" in done.stderr, done.stderr
    assert sorted(p.name for p in result.iterdir()) == ["filler"]


def test_lint_warns_of_a_full_disk(env: Env, tmpfs: Callable[[Path, str], Path]) -> None:
    """The blind walk's L5: lint said ok, the daemon then held the run. A warning (not a
    problem: room may be made before the run starts) names the free space."""
    disk = tmpfs(env.tmp / "disk", "1m")
    fill(disk)
    blueprint = env.blueprint("full", result=str(disk / "res"))
    out = env.cli("lint", str(blueprint), "--json")
    data = json.loads(out.stdout)
    assert out.returncode == 0 and data["ok"], out
    warned = [w for w in data["blueprint"]["warnings"] if "full disk" in w]
    assert warned and f"(0 B free in {disk})" in warned[0], data
    assert "is on a full disk" in env.cli("lint", str(blueprint)).stdout


def test_the_other_user_paths_say_why_they_cannot_be_had(env: Env) -> None:
    """The codebase, the venv's python and the config: a loop, a link to nothing, a part that
    is a file are named as such, not only "does not exist"."""
    links = env.tmp / "links"
    links.mkdir()
    (links / "a").symlink_to(links / "b")
    (links / "b").symlink_to(links / "a")
    (links / "python").symlink_to(env.tmp / "gone" / "python")
    (env.codebase / "afile").write_text("a file")
    text = env.blueprint("paths").read_text()
    cases = {
        "exp_codebase_dir": (
            text.replace(str(env.codebase), str(links / "a"), 1),
            f"{links / 'a'} is a symbolic link loop",
        ),
        "exp_venv_exe": (
            text.replace(
                f"python虚拟环境路径: {sys.executable}", f"python虚拟环境路径: {links}/python"
            ),
            f"{links / 'python'} is a symbolic link to {env.tmp / 'gone' / 'python'}, which does "
            "not exist",
        ),
        "exp_yaml_path": (
            text.replace("configs/paths.yaml", "afile/paths.yaml"),
            f"{env.codebase / 'afile'} is a file, not a folder",
        ),
    }
    for part, (changed, needle) in cases.items():
        path = env.tmp / f"{part}.md"
        path.write_text(changed)
        code, said = _lint(env, path)
        assert code == 2 and f"{part}: " in said and needle in said, (part, said)


def test_a_campaign_result_dir_is_checked_the_same_way(env: Env) -> None:
    """A campaign's own files (progress.png too, replaced before) and a result_dir that cannot
    be had are refused by `ajetd campaign` (exit 2), with the same words."""
    res = env.tmp / "campaigns"
    res.mkdir()
    kept = _plant(res / "pic", [resultfiles.PROGRESS])
    cases = {**{k: v for k, v in _links(res).items() if k != "a file"}, "pic": (res / "pic", "")}
    for name, (path, needle) in cases.items():
        out = env.cli("campaign", str(campaign_folder(env, name.replace(" ", "_"), path)))
        assert out.returncode == 2, (name, out.stdout, out.stderr)
        assert f"result_dir: {path}" in out.stderr and needle in out.stderr, (name, out.stderr)
    assert "already holds progress.png" in out.stderr
    assert {p: p.read_text() for p in kept} == kept


def test_only_the_fields_naming_the_reports_folder_follow_it_aside() -> None:
    """`moved_aside`: result_dir, result_real and reports_dir, where they name the dir the
    report left (however spelt), name where it went; an empty one stays empty (a rejection
    whose report was not written has no reports_dir), and the codebase is not its to move."""
    from ajetd.core.model import Run
    from ajetd.daemon.admission import moved_aside

    left, moved = "/r/rej", Path("/r/rej/rejected-abc123")
    run = Run("abc123", "a.md", 0.0, result_dir="/r/rej/", reports_dir="/r/./rej")
    run = replace(run, codebase_dir="/r/rej", result_real="/r/rej")
    names = {"/r/rej", "/r/rej/", "/r/./rej"}.__contains__
    new = moved_aside(run, names, moved, "/real/rej/rejected-abc123")
    assert (new.result_dir, new.reports_dir) == (str(moved), str(moved))
    assert new.result_real == "/real/rej/rejected-abc123" and new.codebase_dir == left
    unwritten = moved_aside(replace(run, reports_dir=""), names, moved, "/x")
    assert unwritten.reports_dir == ""
