"""finish.flag vouches for what is beside it: it is renamed into place only once the reports
are synced, renamed and their renames on disk (the folder synced), and once the run's leftover
processes are ended. A write that fails (a real full tmpfs) or a folder that cannot be synced
leaves no flag, and the leftovers are still ended."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from ajetd.adapters import store
from ajetd.adapters.store import Home, write_all_atomic
from ajetd.core.model import Run, State, Status, Trial
from ajetd.daemon import ending
from conftest import fill, wait_for

Mount = Callable[[Path, str], Path]
REPORTS = ("results.md", "trials.md", "run.json")
BIG = b"x" * (2 << 20)  # more than the small disk holds


def _files(
    folder: Path, flag: bytes = b"{}\n", first: bytes = b"# r\n"
) -> list[tuple[Path, str | bytes, int]]:
    data = [first, b"# t\n", b"{}\n"]
    return [
        *((folder / name, body, 0o644) for name, body in zip(REPORTS, data, strict=True)),
        (folder / "finish.flag", flag, 0o644),
    ]


def _spy(monkeypatch: pytest.MonkeyPatch, seen: list[tuple[str, str]]) -> None:
    """Note every `fsync` (the file or folder it syncs) and rename (its target), in order;
    each still done for real."""
    fsync, replace = os.fsync, Path.replace

    def synced(fd: int) -> None:
        fsync(fd)
        seen.append(("sync", os.readlink(f"/proc/self/fd/{fd}")))

    def renamed(self: Path, target: str | Path) -> Path:
        seen.append(("rename", Path(target).name))
        return replace(self, target)

    monkeypatch.setattr(store.os, "fsync", synced)
    monkeypatch.setattr(Path, "replace", renamed)


def test_the_flag_is_renamed_after_the_reports_renames_are_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, str]] = []
    _spy(monkeypatch, seen)
    write_all_atomic(_files(tmp_path))
    kinds = [kind for kind, _ in seen]
    first_rename = kinds.index("rename")
    assert kinds[:first_rename] == ["sync"] * 4  # every file's data before any rename
    assert seen[first_rename:] == [
        *(("rename", name) for name in REPORTS),
        ("sync", str(tmp_path)),  # the folder: the three renames on disk ...
        ("rename", "finish.flag"),  # ... before the flag's
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*REPORTS, "finish.flag"])


def test_one_file_is_not_followed_by_a_folder_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record saved alone (state.json at every change) waits for its own data only."""
    seen: list[tuple[str, str]] = []
    _spy(monkeypatch, seen)
    store.write_atomic(tmp_path / "state.json", "{}\n")
    assert [kind for kind, _ in seen] == ["sync", "rename"]


@pytest.mark.parametrize("refused", ["first", "flag"])
def test_a_full_disk_leaves_no_flag(tmp_path: Path, tmpfs: Mount, refused: str) -> None:
    """The disk refuses the first report, or only the flag (the last): nothing is renamed
    (renames come after every write) and no temporary file is left."""
    disk = tmpfs(tmp_path / "disk", "1m")
    files = _files(disk, flag=BIG) if refused == "flag" else _files(disk, first=BIG)
    with pytest.raises(OSError) as failed:
        write_all_atomic(files)
    assert failed.value.errno == errno.ENOSPC
    assert failed.value.filename == str(files[-1][0] if refused == "flag" else files[0][0])
    assert list(disk.iterdir()) == []


def test_a_folder_that_cannot_be_synced_leaves_no_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reports are renamed (each whole) but their renames are not known to be on disk: no
    flag, and the error names the folder (the reports stay pending; written again later)."""
    fsync = os.fsync

    def failing(fd: int) -> None:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            raise OSError(errno.EIO, "Input/output error")
        fsync(fd)

    monkeypatch.setattr(store.os, "fsync", failing)
    with pytest.raises(OSError) as failed:
        write_all_atomic(_files(tmp_path))
    assert failed.value.errno == errno.EIO and failed.value.filename == str(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(REPORTS)


def _leftover(run_id: str) -> subprocess.Popen[bytes]:
    """A detached process of the run (as Ray's raylet is), once it has exec'd."""
    argv = [sys.executable, "-c", "import time; time.sleep(60)"]
    env = {**os.environ, "AJETD_RUN_ID": run_id}
    proc = subprocess.Popen(argv, env=env, start_new_session=True)
    wait_for(lambda: psutil.Process(proc.pid).cmdline() == argv, what="the leftover's exec")
    return proc


def _ended_run(home: Home, run_id: str, result_dir: Path) -> Run:
    home.run_dir(run_id).mkdir(parents=True)
    began = time.time() - 1
    trial = Trial(1, "sleep 60", "s", started_at=began)
    run = Run(
        run_id,
        "b.md",
        began,
        state=State.RUNNING,
        result_dir=str(result_dir),
        started_at=began,
        trials=(trial,),
    )
    home.trial_file(run_id, 1, "exit").write_text(f"0 {time.time()}\n")
    return run


def _running(proc: subprocess.Popen[bytes]) -> bool:
    try:
        return psutil.Process(proc.pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_the_leftovers_are_ended_before_the_flag_appears(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Home(tmp_path / "home")
    result = tmp_path / "out"
    run = _ended_run(home, "order1", result)
    leftover = _leftover("order1")
    at_flag: list[bool] = []
    replace = Path.replace

    def renamed(self: Path, target: str | Path) -> Path:
        if Path(target).name == "finish.flag":
            at_flag.append(_running(leftover))
        return replace(self, target)

    monkeypatch.setattr(Path, "replace", renamed)
    try:
        end = ending.TrialEnd("exited 0", 0)
        done = ending.finish_run(home, run, Status.SUCCEEDED, end, time.time())
        assert at_flag == [False]  # renamed once, the leftover gone by then
        assert not done.reports_pending and (result / "finish.flag").exists()
    finally:
        if _running(leftover):
            os.killpg(leftover.pid, signal.SIGKILL)
        leftover.wait()


def test_a_full_result_dir_still_ends_the_leftovers(tmp_path: Path, tmpfs: Mount) -> None:
    """The reports wait for room (attention, pending), the flag is not written, and the run's
    leftovers are ended all the same."""
    disk = tmpfs(tmp_path / "disk", "1m")
    result = disk / "out"
    result.mkdir()
    home = Home(tmp_path / "home")
    run = _ended_run(home, "order2", result)
    leftover = _leftover("order2")
    try:
        fill(disk)
        end = ending.TrialEnd("exited 0", 0)
        done = ending.finish_run(home, run, Status.SUCCEEDED, end, time.time())
        assert done.reports_pending and done.attention and str(result) in done.attention
        assert not (result / "finish.flag").exists()
        assert not _running(leftover)  # ended (a zombie until this test waits for it)
    finally:
        if _running(leftover):
            os.killpg(leftover.pid, signal.SIGKILL)
        leftover.wait()
