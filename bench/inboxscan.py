"""One inbox scan's cost with many waiting files the kernel cannot judge (as on NFS, CIFS,
FUSE), each scan in this process (`inbox.scan`, as the daemon calls it), the files kept
waiting by a clock inside their settling second.

The inbox is on a ramfs (local, but not in `writers.LEASES_TELL`: its answer is "not known",
as NFS's). Measured: a scan's time and the files it opens (counted by the kernel, inotify's
IN_OPEN), with the answers kept between scans (`core.writerasks`) and without (each scan
asks again, as before). On ramfs an open costs microseconds; on NFS each one is a round trip
to the server (an OPEN and a CLOSE, 0.1 to 1 ms on a LAN): the opens count is what NFS pays.
Needs root (the mount). Usage: python bench/inboxscan.py [FILES] [SCANS]
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import summary

from ajetd.adapters import inbox
from ajetd.adapters.store import Home
from ajetd.core.writerasks import Asked

IN_OPEN, IN_NONBLOCK = 0x20, 0o4000


def _opens(fd: int) -> int:
    """Files opened since the last call (the folder's own opens, by its scan, not counted)."""
    count = 0
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return count
        at = 0
        while at < len(data):
            size = int.from_bytes(data[at + 12 : at + 16], sys.byteorder)
            count += bool(data[at + 16 : at + 16 + size].rstrip(b"\0"))
            at += 16 + size


def main(files: int, scans: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="ajetd-inboxscan-"))
    subprocess.run(["mount", "-t", "ramfs", "ramfs", str(folder)], check=True)
    try:
        home = Home(folder / "home")
        home.ensure()
        for i in range(files):
            (home.inbox / f"b{i:05d}.md").write_text("# a blueprint still settling\n")
        waiting = max(p.stat().st_ctime for p in home.inbox.iterdir()) + 0.1
        libc = ctypes.CDLL(None, use_errno=True)
        watch = libc.inotify_init1(IN_NONBLOCK)
        libc.inotify_add_watch(watch, str(home.inbox).encode(), IN_OPEN)
        for kept in (False, True):
            asked: dict[str, Asked] | None = {} if kept else None
            samples, opened = [], []
            for _ in range(scans):
                t0 = time.perf_counter()
                found = inbox.scan(home, set(), waiting, asked)
                samples.append(time.perf_counter() - t0)
                opened.append(_opens(watch))
                assert not found.found  # all still waiting
            said = "answers kept " if kept else "asked each scan"
            print(summary(f"{said} {files} waiting files, one scan", samples[1:]))
            print(f"  files opened: first scan {opened[0]}, each later scan {max(opened[1:])}")
        os.close(watch)
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
        os.rmdir(folder)


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 1000,
        int(sys.argv[2]) if len(sys.argv) > 2 else 30,
    )
