"""A waiting inbox file the kernel cannot judge (NFS, CIFS, FUSE: `writers` says "not known
here") is not opened again at each scan while it is unchanged (`core.writerasks`): on NFS an
open and a close are round trips to the server, and every scan opened every waiting file.
The rule on an injected clock; the scan on a real ramfs (local, but not in `LEASES_TELL`, so
its answer is "not known", as NFS's), its opens counted by the kernel (inotify's IN_OPEN)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from inotifykit import IN_OPEN, Events

from ajetd.adapters import inbox
from ajetd.adapters.store import Home
from ajetd.core.writerasks import REASK_S, Asked, Stamp, kept_answer

_STAMP = Stamp(dev=1, ino=2, size=3, mtime_ns=4, ctime_ns=5)


def test_a_not_known_answer_holds_while_the_file_is_unchanged_and_for_reask_s() -> None:
    last = Asked(_STAMP, None, 100.0)
    assert kept_answer(last, _STAMP, 100.0) is last
    assert kept_answer(last, _STAMP, 100.0 + REASK_S - 0.001) is last
    assert kept_answer(last, _STAMP, 100.0 + REASK_S) is None  # asked again, at the bound
    assert kept_answer(last, _STAMP, 99.0) is None  # a clock gone back: asked again
    assert kept_answer(None, _STAMP, 100.0) is None


@given(
    st.sampled_from(Stamp._fields),
    st.integers(-(2**40), 2**40).filter(bool),
    st.sampled_from([True, False, None]),
    st.floats(0, 2 * REASK_S),
)
def test_any_change_a_stat_shows_or_a_yes_or_no_asks_the_kernel_again(
    field: str, delta: int, answer: bool | None, later: float
) -> None:
    """A changed device, inode, size, mtime or ctime (a write, a rename, a chmod, a chown) is
    asked again; so is any yes or no (a writer closes or opens it without changing it)."""
    last = Asked(_STAMP, answer, 50.0)
    changed = _STAMP._replace(**{field: getattr(_STAMP, field) + delta})
    assert kept_answer(last, changed, 50.0 + later) is None
    kept = kept_answer(last, _STAMP, 50.0 + later)
    assert (kept is last) == (answer is None and later < REASK_S)


@pytest.fixture
def ram_home(tmp_path: Path) -> Iterator[Home]:
    if os.geteuid() != 0:
        pytest.skip("mounting a ramfs needs root (CI runs as root)")
    folder = tmp_path / "ram"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "ramfs", "ramfs", str(folder)], check=False).returncode:
        pytest.skip("cannot mount a ramfs here")
    try:
        home = Home(folder / "home")
        home.ensure()
        yield home
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_an_unchanged_waiting_file_is_not_opened_again_a_changed_one_is(ram_home: Home) -> None:
    home = ram_home
    names = [f"w{i}.md" for i in range(5)]
    for name in names:
        (home.inbox / name).write_text("# x\n")
    changed = max((home.inbox / n).stat().st_ctime for n in names)
    asked: dict[str, Asked] = {}
    with Events(home.inbox, IN_OPEN) as opens:  # opens counted by the kernel
        now = changed + 0.2  # all still settling: they wait
        first = inbox.scan(home, set(), now, asked)
        assert not first.found and sorted(opens.names()) == names  # asked once each
        assert set(asked) == set(names) and all(a.answer is None for a in asked.values())
        again = inbox.scan(home, set(), now + 0.1, asked)
        assert not again.found and opens.names() == []  # unchanged: none opened again
        with open(home.inbox / "w1.md", "a") as more:  # one grows; one is renamed away
            more.write("more\n")
        os.rename(home.inbox / "w2.md", home.root / "w2")
        opens.names()  # (the append's own open)
        inbox.scan(home, set(), now + 0.2, asked)
        assert opens.names() == ["w1.md"]  # only the changed one
        assert "w2.md" not in asked  # gone from the inbox: forgotten
        inbox.scan(home, set(), now + 0.2 + REASK_S, asked)  # at the bound: all asked again
        assert sorted(opens.names()) == sorted(set(names) - {"w2.md"})
        settled = inbox.scan(home, set(), now + 2 + REASK_S, asked)  # taken as before
        assert len(settled.found) == 4
        assert inbox.scan(home, set(), now + 0.3).found == []  # no memory: as before
