"""Two live runs never share a val file, nor a result dir, however the path is spelt: a
codebase reached through a symlink (walk93 F1: both runs appended to one file and each took
the other's validations as its own), a bind mount of it, a `..`, a hard link. Compared as the
kernel resolves them (`samefile`): at lint, at admission, and in the queue. Real files, real
mounts (the tests run as root; skipped where a bind mount cannot be made), real tmux and
fakejet trials, the loop driven in-process."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.adapters import samefile
from ajetd.adapters.samefile import file_key, one_file, one_file_as
from ajetd.core import placement
from ajetd.core.model import Run, State, Trial
from ajetd.core.onefile import Writer, spelt
from ajetd.hosts.preflight import Sharer, val_writer
from conftest import Env
from loopkit import Loop

SHARED = "./saved_val_result/shared.md"


@pytest.fixture
def bind(tmp_path: Path) -> Iterator[Path]:
    """`tmp/codebind`, to be bound onto a folder by the test (`_bound`); unmounted after."""
    target = tmp_path / "codebind"
    target.mkdir()
    yield target
    subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)


def _bound(folder: Path, at: Path) -> Path:
    done = subprocess.run(
        ["mount", "--bind", str(folder), str(at)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"no bind mount here: {done.stderr.strip()}")
    return at


def test_spellings_of_one_file_are_one_file_and_two_files_are_two(tmp_path: Path) -> None:
    real = tmp_path / "code"
    (real / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    (tmp_path / "other").mkdir()
    made = real / "made.md"
    made.write_text("x\n")
    os.link(made, real / "hard.md")
    spelt = {  # a file there, and files not there yet (a val file before its first validation)
        str(made): [
            str(tmp_path / "link" / "made.md"),
            str(real / "sub" / ".." / "made.md"),
            f"{real}//./made.md",
            str(real / "hard.md"),
        ],
        str(real / "later" / "v.md"): [
            str(tmp_path / "link" / "later" / "v.md"),
            str(tmp_path / "link" / "sub" / ".." / "later" / "v.md"),
        ],
    }
    for path, others in spelt.items():
        for other in others:
            assert file_key(other) == file_key(path), other
            assert one_file(other, path) is not None, other
    assert (
        one_file(str(real / "later" / "v.md"), str(tmp_path / "other" / "later" / "v.md")) is None
    )
    assert one_file(str(made), str(real / "made.MD")) is None  # Linux's disks keep case
    assert one_file(str(made), "") is None
    assert one_file(str(tmp_path / "link" / "made.md"), str(made)) == str(made)


def _shared_config(env: Env, name: str) -> str:
    """configs/<name>.yaml writing the val file SHARED (relative to the codebase)."""
    conf = env.config(name, steps=4)
    data = yaml.safe_load((env.codebase / conf).read_text())
    data["ajet"]["trainer_common"]["val_print_to_markdown_file_path"] = SHARED
    (env.codebase / conf).write_text(yaml.safe_dump(data))
    return conf


def _through(env: Env, blueprint: Path, codebase: Path) -> Path:
    """The blueprint with its exp_codebase_dir spelt `codebase`."""
    blueprint.write_text(blueprint.read_text().replace(str(env.codebase), str(codebase)))
    return blueprint


def _lint(env: Env, blueprint: Path) -> dict[str, object]:
    out = env.cli("lint", str(blueprint), "--json")
    return dict(json.loads(out.stdout))


def test_a_codebase_through_a_link_or_a_mount_shares_no_val_file_with_a_live_run(
    env: Env, loop: Loop, bind: Path
) -> None:
    first_conf = env.config("shared", forever=True, step_time=0.05)  # writes SHARED until stopped
    first = loop.submit(env.blueprint("shared", config=first_conf, ajetd="gpus: 0"))
    val_file = env.codebase / SHARED
    loop.until(lambda: val_file.exists() and val_file.stat().st_size, "a first validation")
    real = os.path.realpath(val_file)
    link = env.tmp / "codelink"
    link.symlink_to(env.codebase)

    # with --conf: its copy of the config gives it a file of its own, at lint as at admission
    conf = _shared_config(env, "linked")
    linked = _through(env, env.blueprint("linked", config=conf, ajetd="gpus: 0"), link)
    result = env.tmp / "results" / "linked"
    said = _lint(env, linked)
    seen = said["blueprint"]
    assert isinstance(seen, dict) and seen["val_path"] == str(result / "val_results.md"), said
    moved = [c for c in seen["config_changes"] if "val_print_to_markdown_file_path" in c]
    assert len(moved) == 1 and f"live run {first}" in moved[0] and real in moved[0], moved
    second = loop.submit(linked)
    assert loop.run(second).val_path == str(result / "val_results.md")
    flag = loop.until_done(second)
    assert flag["status"] == "succeeded"
    assert [h["global_steps"] for h in loop.run(second).history] == [2, 4]
    assert any(real in c for c in loop.run(second).config_changes)

    # without --conf (a script runs the config): it waits for the first run, naming it and
    # the one file both names are
    mounted = _bound(env.codebase, bind)
    conf = _shared_config(env, "mounted")
    (env.codebase / "mounted.sh").write_text(f"exec python -m fakejet.launcher --conf {conf}\n")
    bp = env.blueprint("mounted", config=conf, command="bash mounted.sh", ajetd="gpus: 0")
    bp = _through(env, bp, mounted)
    said = _lint(env, bp)
    warned = [w for w in said["blueprint"]["warnings"] if f"live run {first}" in w]  # type: ignore[index]
    assert len(warned) == 1 and real in warned[0] and "waits in the queue" in warned[0], said
    third = loop.submit(bp)
    loop.run_for(10)
    run = loop.run(third)
    assert run.state is State.QUEUED and not run.trials, run
    assert f"waiting for run {first} to end: it writes the same val file" in run.reason
    assert real in run.reason and str(mounted) in run.reason, run.reason

    # a result dir through a mount of a live run's: refused, naming that run
    (env.tmp / "resbind").mkdir()
    alias = _bound(env.tmp / "results", env.tmp / "resbind")
    try:
        bp = env.blueprint("alias", result=str(alias / "shared"), ajetd="gpus: 0")
        said = _lint(env, bp)
        assert said["ok"] is False
        assert any(f"in use by live run {first}" in p for p in said["problems"]), said  # type: ignore[attr-defined]
    finally:
        subprocess.run(["umount", "-l", str(alias)], capture_output=True, check=False)

    env.cli("stop", first, "--no-wait")
    loop.until_done(first)
    flag = loop.until_done(third)  # its turn came: its own lines only
    assert flag["status"] == "succeeded"
    assert [h["global_steps"] for h in loop.run(third).history] == [2, 4]


def test_a_val_file_that_becomes_a_live_run_s_after_admission_is_not_read_as_this_run_s(
    env: Env, loop: Loop
) -> None:
    """Admission and the queue compare the files as they are then; a folder swapped for a
    link to another live run's since gives the run that began later none of its records."""
    first_conf = env.config("shared", forever=True, step_time=0.05)
    first = loop.submit(env.blueprint("shared", config=first_conf, ajetd="gpus: 0"))
    val_file = env.codebase / SHARED
    loop.until(lambda: val_file.exists() and val_file.stat().st_size, "a first validation")
    own = env.tmp / "own"
    own.mkdir()
    conf = env.config("later", forever=True, step_time=0.05)
    data = yaml.safe_load((env.codebase / conf).read_text())
    data["ajet"]["trainer_common"]["val_print_to_markdown_file_path"] = str(own / "shared.md")
    (env.codebase / conf).write_text(yaml.safe_dump(data))
    later = loop.submit(env.blueprint("later", config=conf, ajetd="gpus: 0"))
    loop.started(later)
    loop.until(lambda: loop.run(later).history, "the later run's own first record")
    own.rename(env.tmp / "own.was")
    own.symlink_to(val_file.parent)  # its path now names the first run's file
    real = os.path.realpath(val_file)
    loop.until(lambda: loop.run(later).val_path is None, "the later run to stop reading it")
    run = loop.run(later)
    said = [w for w in run.warnings if f"written by live run {first} too" in w]
    assert len(said) == 1 and real in said[0] and str(own / "shared.md") in said[0], run.warnings
    kept = len(run.history)
    loop.run_for(5)
    assert len(loop.run(later).history) == kept  # none of the first run's records taken
    assert loop.run(first).val_path == str(val_file) and loop.run(first).history
    for run_id in (first, later):
        env.cli("stop", run_id, "--no-wait")
    for run_id in (first, later):
        loop.until_done(run_id)


@settings(max_examples=300, deadline=None)
@given(path=st.text(max_size=40), other=st.text(max_size=40))
def test_file_key_and_one_file_never_raise_on_any_text(path: str, other: str) -> None:
    """A path the system cannot take (a NUL: ValueError from os.stat and realpath; a lone
    surrogate) names no file: keyed as written, never an exception out of the sharing check."""
    key = file_key(path)
    assert key == file_key(path)
    if "\x00" in path:
        assert key == ("path", path)
    assert one_file(path, path) is not None or not path
    one_file(path, other)


def test_paths_of_runs_on_another_machine_are_compared_as_written(tmp_path: Path) -> None:
    """An SSH run's val file is a path on its host: resolved on this machine it would name a
    file here (a link here to this run's folder made the two one file, or a file here the
    other's). Only two runs here are compared by real path (`core.onefile.same_file`), at the
    queue, at each read and at admission; a run elsewhere is compared as written."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    mine, theirs = str(tmp_path / "real" / "v.md"), str(tmp_path / "link" / "v.md")
    first = Run(run_id="aaaaaa", source="x", submitted_at=1.0, val_path=theirs)
    later = Run(run_id="bbbbbb", source="x", submitted_at=2.0, val_path=mine)
    live = [first, later]

    def on(*where: str) -> Callable[[Run], bool]:
        return lambda run: run.run_id in where

    both_here = placement.val_file_wait(later, live, one_file_as, on("aaaaaa", "bbbbbb"))
    assert both_here is not None and f"both are {os.path.realpath(mine)}" in both_here
    assert theirs in both_here and mine in both_here
    for here in (on("bbbbbb"), on("aaaaaa"), on()):  # one of them, or both, elsewhere
        assert placement.val_file_wait(later, live, one_file_as, here) is None
    same = Run(run_id="bbbbbb", source="x", submitted_at=2.0, val_path=theirs)
    assert placement.val_file_wait(same, [first, same], one_file_as, on()) is not None
    # at each read: the later run's records are not taken where both run here, only there
    started = [
        replace(r, trials=(Trial(1, "python t", "s", started_at=r.submitted_at),)) for r in live
    ]
    assert placement.val_file_owner(started[1], started, one_file_as, on("aaaaaa", "bbbbbb"))
    assert placement.val_file_owner(started[1], started, one_file_as, on("aaaaaa")) is None
    # at admission: a writer elsewhere is compared as written, as a new run elsewhere is
    assert val_writer(mine, {theirs: Writer("aaaaaa", here=True)}) is not None
    assert val_writer(mine, {theirs: Writer("aaaaaa", here=False)}) is None
    assert val_writer(mine, {theirs: Writer("aaaaaa")}, local=False) is None
    assert val_writer(theirs, {theirs: Writer("aaaaaa", here=False)}) is not None


@settings(max_examples=200, deadline=None)
@given(
    path=st.text(max_size=20),
    run_id=st.text(max_size=6),
    theirs=st.text(max_size=20),
    real=st.text(max_size=20),
)
def test_one_wording_names_a_shared_file(path: str, run_id: str, theirs: str, real: str) -> None:
    """Lint, admission, the queue and the read name a shared file alike (`onefile.spelt`):
    the path alone where all spellings are one, else both spellings and the real path."""
    said = spelt(path, run_id, theirs, real)
    if path == theirs == real:
        assert said == path
    else:
        assert said == f"{path} (run {run_id} names it {theirs}; both are {real})"
    assert Sharer(run_id, theirs, real).said(path) == said


def test_each_path_is_resolved_once_per_comparison_with_all_live_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's val file compared with every live run's, at each read (`val_file_owner`), in
    the queue (`val_file_wait`) and at admission (`val_writer`), and a result dir with every
    busy one (`in_use`): the run's own path is resolved once per call, not once per other
    run (it was: 2 stats and a realpath each, times the live runs, at every read)."""
    from ajetd.adapters.resultdir import in_use

    looked: list[str] = []
    real_key = samefile.file_key
    monkeypatch.setattr(samefile, "file_key", lambda path: looked.append(path) or real_key(path))
    mine = str(tmp_path / "mine" / "v.md")
    others = [str(tmp_path / f"other{i}" / "v.md") for i in range(20)]
    runs = [
        Run(
            run_id=f"r{i:05d}",
            source="x",
            submitted_at=float(i),
            val_path=path,
            trials=(Trial(1, "python t", "s", started_at=float(i)),),
        )
        for i, path in enumerate([*others, mine])
    ]
    assert placement.val_file_owner(runs[-1], runs, one_file_as) is None
    assert looked.count(mine) == 1 and sorted(set(looked) - {mine}) == sorted(others)
    looked.clear()
    queued = replace(runs[-1], trials=())
    assert placement.val_file_wait(queued, [*runs[:-1], queued], one_file_as) is None
    assert looked.count(mine) == 1
    looked.clear()
    assert val_writer(mine, {path: Writer(f"r{i:05d}") for i, path in enumerate(others)}) is None
    assert looked.count(mine) == 1
    looked.clear()
    assert not in_use(mine, others)
    assert looked.count(mine) == 1
    # and a spelling of the same file among them is still found, by its real path
    (tmp_path / "mine").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "mine")
    alias = str(tmp_path / "link" / "v.md")
    compare = one_file_as(mine)
    assert [compare(p) for p in (*others, alias, mine)] == [None] * 20 + [mine, mine]
