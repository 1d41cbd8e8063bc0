"""Whether a file system keeps a replacing rename behind the new file's data (asked once).

A record replaced by `rename` is safe from a power loss only if the new file's data reaches
the disk no later than the rename: otherwise the name can survive pointing at an empty file.
`store.write_all_atomic` makes sure with an `fsync` before the rename (1-3 ms on this VM's
ext4, 10-30 ms under load), which is most of the time between a trial's exit and `done` in
its state.json. Some file systems give that order themselves:

- ext3/ext4 in `data=ordered` (the default) or `data=journal`, with `auto_da_alloc` (the
  default): a rename over an existing file starts the new file's writeback, and the journal
  commit that holds the rename holds back for its data (ext4(5), "auto_da_alloc"). A power
  loss leaves the old record or the new one, never an empty one.
- tmpfs and ramfs: nothing survives a power loss, and `fsync` does nothing there anyway.

Everywhere else (XFS, btrfs, NFS, FUSE, ext4 with `data=writeback` or `noauto_da_alloc`, a
device not found in the mount table) the `fsync` stays. Only the `done` record of a trial's
end is saved on this order (`Home.save_run(..., ordered=True)`); its next save, after
finish.flag, is synced as every other record is.
"""

from __future__ import annotations

import os
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")
_ORDERED_FS = {"ext3", "ext4"}
_NO_POWER_LOSS_FS = {"tmpfs", "ramfs"}  # memory: a power loss leaves nothing to order
_UNORDERED_OPTIONS = {"data=writeback", "noauto_da_alloc"}
_MAX_MOUNTINFO = 4 << 20  # a mount table larger than this is not read: the fsync stays


def orders_renames(fstype: str, super_options: str) -> bool:
    """Whether a file system of `fstype` mounted with `super_options` (mountinfo's last
    field) leaves the old file or the new one after a power loss, without an `fsync`."""
    if fstype in _NO_POWER_LOSS_FS:
        return True
    options = set(super_options.split(","))
    return fstype in _ORDERED_FS and not options & _UNORDERED_OPTIONS


def mount_of(mountinfo: str, major: int, minor: int) -> tuple[str, str] | None:
    """(file system type, super options) of the device `major:minor` in a mountinfo text
    (proc(5): fields, then `-`, then type, source, super options); None where it is absent.
    Bind mounts of one device share their super block, so any of its lines says the same."""
    device = f"{major}:{minor}"
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) < 10 or fields[2] != device or "-" not in fields[6:]:
            continue
        rest = fields[fields.index("-", 6) + 1 :]
        if len(rest) >= 3:
            return rest[0], rest[2]
    return None


def renames_ordered(folder: Path) -> bool:
    """Whether `folder`'s file system orders a replacing rename after the new file's data
    (`orders_renames`); False where that cannot be told (no /proc, the device not listed)."""
    try:
        device = os.stat(folder).st_dev
        with MOUNTINFO.open("r", encoding="utf-8", errors="replace") as handle:
            text = handle.read(_MAX_MOUNTINFO)
    except OSError:
        return False
    found = mount_of(text, os.major(device), os.minor(device))
    return found is not None and orders_renames(*found)
