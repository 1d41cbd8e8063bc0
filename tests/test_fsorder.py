"""A trial's `done` record is renamed in without its own `fsync` only where the file system
orders a replacing rename after the new file's data (ext3/ext4 `data=ordered` or `journal`
with `auto_da_alloc`; tmpfs, where nothing survives a power loss); everywhere else, and in
every other save, the record is synced before its rename. The record's next save, after
finish.flag, is synced."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_report_order import _ended_run

from ajetd.adapters import fsorder, store
from ajetd.adapters.store import Home
from ajetd.core.model import Run, State, Status
from ajetd.daemon import ending

Mount = Callable[[Path, str], Path]

# /proc/self/mountinfo as the kernel writes it (proc(5)): optional fields before the `-`
MOUNTINFO = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard,resv_strict
40 27 254:0 /srv/data /data rw,relatime shared:1 master:2 - ext4 /dev/vda rw,discard,resv_strict
41 27 8:17 / /scratch rw,noatime - xfs /dev/sdb1 rw,attr2,inode64,noquota
42 27 8:33 / /fast rw - ext4 /dev/sdc1 rw,data=writeback
43 27 8:49 / /old rw - ext4 /dev/sdd1 rw,noauto_da_alloc
44 27 0:50 / /run/user rw - tmpfs tmpfs rw,size=1024k
45 27 0:51 / /mnt/b rw - btrfs /dev/sde rw,space_cache=v2
"""


@pytest.mark.parametrize(
    ("device", "expected"),
    [
        ((254, 0), ("ext4", "rw,discard,resv_strict")),  # a bind mount's lines say the same
        ((8, 17), ("xfs", "rw,attr2,inode64,noquota")),
        ((0, 50), ("tmpfs", "rw,size=1024k")),
        ((9, 9), None),
    ],
)
def test_a_device_is_found_in_the_mount_table(
    device: tuple[int, int], expected: tuple[str, str] | None
) -> None:
    assert fsorder.mount_of(MOUNTINFO, *device) == expected


@pytest.mark.parametrize(
    ("fstype", "options", "ordered"),
    [
        ("ext4", "rw,discard,resv_strict", True),  # data=ordered and auto_da_alloc: defaults
        ("ext4", "rw,data=journal", True),
        ("ext3", "rw,data=ordered", True),
        ("ext4", "rw,data=writeback", False),
        ("ext4", "rw,noauto_da_alloc", False),
        ("xfs", "rw,attr2", False),
        ("btrfs", "rw,space_cache=v2", False),
        ("nfs4", "rw,vers=4.2", False),
        ("fuse.sshfs", "rw", False),
        ("tmpfs", "rw,size=1024k", True),
    ],
)
def test_which_file_systems_order_a_rename(fstype: str, options: str, ordered: bool) -> None:
    assert fsorder.orders_renames(fstype, options) is ordered


def test_a_garbled_mount_table_finds_nothing() -> None:
    assert fsorder.mount_of("254:0\n - ext4\n\x00 1 254:0 x\n", 254, 0) is None


def test_a_real_tmpfs_orders_and_a_missing_folder_does_not(tmp_path: Path, tmpfs: Mount) -> None:
    assert fsorder.renames_ordered(tmpfs(tmp_path / "disk", "1m"))
    assert not fsorder.renames_ordered(tmp_path / "nowhere")


def _spy(monkeypatch: pytest.MonkeyPatch, seen: list[tuple[str, str]]) -> None:
    """Every `fsync` (the file it syncs) and rename (its target), each still done for real."""
    fsync, replace = os.fsync, Path.replace

    def synced(fd: int) -> None:
        fsync(fd)
        seen.append(("sync", Path(os.readlink(f"/proc/self/fd/{fd}")).name))

    def renamed(self: Path, target: str | Path) -> Path:
        seen.append(("rename", Path(target).name))
        return replace(self, target)

    monkeypatch.setattr(store.os, "fsync", synced)
    monkeypatch.setattr(Path, "replace", renamed)


def _running(home: Home, run_id: str, result_dir: Path) -> Run:
    """A running run whose trial just wrote its exit file, its record on disk."""
    home.ensure()
    run = _ended_run(home, run_id, result_dir)
    home.save_run(run)
    return run


def _state_writes(seen: list[tuple[str, str]]) -> list[str]:
    """The state.json record's own syncs and renames, in order (its temporary file's sync
    is named by the temporary name, `.state.json.<random>.tmp`)."""
    return [
        kind for kind, name in seen if name == "state.json" or store.temp_of(name, "state.json")
    ]


def test_done_is_renamed_before_its_sync_where_the_order_holds(
    tmp_path: Path, tmpfs: Mount, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a file system that orders renames: `done` without a wait, the save after
    finish.flag synced; the run ends whole, its reports and flag written as always."""
    home = Home(tmpfs(tmp_path / "disk", "8m") / "home")
    result = tmp_path / "out"
    run = _running(home, "fsord1", result)
    assert home.renames_ordered()
    seen: list[tuple[str, str]] = []
    _spy(monkeypatch, seen)
    end = ending.TrialEnd("exited 0", 0)
    done = ending.finish_run(home, run, Status.SUCCEEDED, end, time.time())
    assert _state_writes(seen) == ["rename", "sync", "rename"]
    assert (result / "finish.flag").exists() and not done.reports_pending
    saved = home.load_run("fsord1")
    assert saved.state is State.DONE and not saved.reports_pending


def test_done_is_synced_first_where_the_order_is_not_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A home whose file system does not order renames (its mount table says XFS, say): the
    `done` record waits for its data as every record does."""
    home = Home(tmp_path / "home")
    result = tmp_path / "out"
    run = _running(home, "fsord2", result)
    monkeypatch.setattr(fsorder, "MOUNTINFO", tmp_path / "mountinfo")
    dev = os.stat(home.runs).st_dev
    line = f"27 1 {os.major(dev)}:{os.minor(dev)} / / rw - xfs /dev/sdb rw,attr2\n"
    (tmp_path / "mountinfo").write_text(line)
    assert not home.renames_ordered()
    seen: list[tuple[str, str]] = []
    _spy(monkeypatch, seen)
    end = ending.TrialEnd("exited 0", 0)
    ending.finish_run(home, run, Status.SUCCEEDED, end, time.time())
    assert _state_writes(seen) == ["sync", "rename", "sync", "rename"]
