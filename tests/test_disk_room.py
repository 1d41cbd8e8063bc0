"""Room made on a full disk is used at once, and no line says the disk is full beside the
room there is (walk92 F8: the held writes waited 73 s, 50 s of them with room, while
`status` said "No space left on device (2.0 MiB free)"). The daemon's loop on a fake clock,
on a real full disk (a small tmpfs: CI runs as root)."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

from ajetd.adapters import diskfull
from ajetd.core.unsaved import ROOM_BACK
from ajetd.views.listing import daemon_lines
from conftest import Env, fill
from loopkit import Loop


def _said(lines: list[str]) -> list[str]:
    """`status`'s daemon lines for these `disk` lines, as text."""
    return ["".join(text for text, _ in line) for line in daemon_lines(True, {"disk": lines}, 400)]


def test_held_writes_go_within_seconds_of_room_and_no_line_says_full_beside_it(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    tmpfs(env.home, "3m")
    loop = Loop(env, backoff_scale=1.0)  # the real schedule: 1 s, 2 s, 4 s ... a minute
    try:
        d = loop.daemon
        run_id = loop.submit(env.blueprint("room", command="sleep 1000", ajetd="gpus: 0"))
        loop.started(run_id)
        filler = fill(env.home)
        journal = d.home.run_dir(run_id) / "events.jsonl"
        for n in range(1000):  # the journal's last page takes a few lines first
            d.home.append_event(run_id, loop.clock(), f"a line the full home holds ({n})")
            if d.held.holding(journal):
                break
        assert d.held.holding(journal), "not held"
        loop.run_for(40)  # tries at 1, 2, 4, 8, 16 s: the next one about 32 s away
        known = d.troubles.full[d.home.root]
        assert known.retry_at - loop.clock() > 10, known
        full = d.troubles.lines(d.held.count())
        [shown] = _said(full)
        assert shown.startswith("daemon: DISK FULL: cannot write to $AJETD_HOME"), shown
        assert "No space left on device (" in shown and "retrying" in shown, shown
        assert loop.wake_at - loop.clock() <= diskfull.ROOM_CHECK_S  # it looks again soon

        filler.unlink()  # room again, far from the backoff's next try
        [back] = d.troubles.lines(d.held.count())
        assert back.startswith(ROOM_BACK) and "No space left on device" in back, back
        assert "free now: its held writes are tried again within 2 s" in back, back
        [shown] = _said([back])
        assert "DISK FULL:" not in shown, shown
        removed_at = loop.clock()
        loop.sleep()  # the daemon's next wake, with nothing else happening
        assert loop.clock() - removed_at <= diskfull.ROOM_CHECK_S
        assert not d.held.files and not d.held.lines
        assert d.home.root not in d.troubles.full
        assert f"a line the full home holds ({n})".encode() in journal.read_bytes()
        assert not d.troubles.lines(d.held.count())
    finally:
        loop.close()


def test_a_disk_with_space_but_no_inode_says_so_and_an_inode_freed_is_room(
    tmp_path: Path, tmpfs: Callable[[Path, str], Path]
) -> None:
    """ENOSPC with space left: every inode taken. The line says so (not a bare "2.9 MiB free"
    beside "No space left"), and a freed inode is room again."""
    folder = tmpfs(tmp_path / "few", "3m,nr_inodes=200")
    made: list[Path] = []
    try:
        while True:
            path = folder / f"f{len(made)}"
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
            made.append(path)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
        refused = exc
    clock = [1000.0]
    troubles = diskfull.Troubles(lambda: clock[0])
    troubles.hit(folder, refused, "$AJETD_HOME")
    assert diskfull.room(folder) == 0
    said = troubles.line(folder)
    assert said.startswith("cannot write to $AJETD_HOME") and "free, but no inode)" in said, said
    assert troubles.blocked(folder)
    made.pop().unlink()
    assert troubles.room_back(folder) and not troubles.blocked(folder)
    assert troubles.line(folder).startswith(ROOM_BACK)


def test_a_retry_that_fails_again_with_that_room_waits_for_its_backoff(
    tmp_path: Path, tmpfs: Callable[[Path, str], Path]
) -> None:
    """Room back, tried, refused again (the writes need more than is free): the room then is
    the new mark, so the folder waits for its backoff (no retry at every tick), and its line
    says the free space is too little for what it holds."""
    folder = tmpfs(tmp_path / "small", "1m")
    filler = fill(folder)
    clock = [1000.0]
    troubles = diskfull.Troubles(lambda: clock[0])
    troubles.hit(folder, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), "the result dir")
    with open(filler, "r+b") as handle:  # 256 KiB freed: more than the mark, not enough
        handle.truncate(os.path.getsize(filler) - 256 * 1024)
    assert not troubles.blocked(folder)
    troubles.hit(folder, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), "the result dir")
    assert troubles.blocked(folder)
    said = troubles.line(folder)
    assert "No space left on device (" in said and "too little for the writes it held" in said
    clock[0] += 2.0
    assert not troubles.blocked(folder)  # its backoff's time
