"""A full disk names the file or folder it refused, whatever call refused it: `write()`,
`fsync()`, `pwrite()` take a descriptor, so their ENOSPC names nothing unless the write helper
says which file it was writing (`store.named`). Real full tmpfs mounts."""

from __future__ import annotations

import errno
import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from ajetd.adapters.store import (
    Home,
    append_bytes,
    write_all_atomic,
    write_atomic,
    write_in_place,
    write_json,
    write_new,
)
from ajetd.core.gpuuse import RunGpu
from ajetd.pictures import drawing
from conftest import Env, campaign_folder, fill, wait_for

Mount = Callable[[Path, str], Path]
BIG = b"x" * (256 << 10)  # more than the full disk has left, whatever its rounding


def test_every_write_helper_names_its_file_on_a_full_disk(tmp_path: Path, tmpfs: Mount) -> None:
    """Before: write_new and append_bytes raised '[Errno 28] No space left on device' with no
    file (and write_all_atomic where the sync refused), so the CLI said `ajetd: No space left
    on device` and a status line had nothing to name; write_in_place wrote what fitted of a
    daemon.json grown past its blocks and said nothing (one short pwrite)."""
    disk = tmpfs(tmp_path / "disk", "1m")
    journal = disk / "events.jsonl"
    journal.write_bytes(b"{}\n")
    daemon_json = disk / "daemon.json"
    daemon_json.write_bytes(b"{}".ljust(4096))
    fill(disk)
    writes: list[tuple[Path, Callable[[], object]]] = [
        (disk / "a.json", lambda: write_atomic(disk / "a.json", BIG)),
        (disk / "b.json", lambda: write_json(disk / "b.json", {"x": BIG.decode()})),
        (disk / "c.md", lambda: write_all_atomic([(disk / "c.md", BIG, 0o644)])),
        (disk / "diag.md", lambda: write_new(disk / "diag.md", BIG)),
        (journal, lambda: append_bytes(journal, BIG)),
        (daemon_json, lambda: write_in_place(daemon_json, BIG)),  # larger than its blocks
    ]
    for path, write in writes:
        with pytest.raises(OSError) as refused:
            write()
        assert refused.value.errno == errno.ENOSPC, (path, refused.value)
        assert refused.value.filename == str(path), (path, refused.value)
    assert sorted(p.name for p in disk.iterdir()) == ["daemon.json", "events.jsonl", "filler"]


def test_a_gpu_sample_on_a_full_home_is_logged_naming_its_file(
    tmp_path: Path, tmpfs: Mount, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: the sample's write raised an unnamed ENOSPC into the daemon's loop."""
    home = Home(tmpfs(tmp_path / "home", "1m"))
    home.run_dir("r1").mkdir(parents=True)
    drawing.gpu_file(home, "r1").write_bytes(b"")
    fill(home.root)
    with caplog.at_level(logging.WARNING):
        drawing.record_gpus(home, "r1", 1.0, [RunGpu(0, 50.0, 1000.0)])
    assert f"{drawing.gpu_file(home, 'r1')}: No space left on device" in caplog.text


def test_diag_on_a_full_result_dir_says_which_file_it_could_not_write(
    env: Env, tmpfs: Mount
) -> None:
    """Before: 'not saved: the result dir is not writable', true of no full disk."""
    result = tmpfs(env.tmp / "results" / "full", "2m")
    env.start_daemon()
    run_id = env.submit(env.blueprint("full", result=str(result)))
    env.wait_done(run_id)
    fill(result)
    out = env.cli("diag", run_id)
    assert out.returncode == 0, out.stderr
    said = out.stdout.strip().splitlines()[-1]
    assert said.startswith(f"not saved: {result}/diag/diag-"), said
    assert said.endswith(".md: No space left on device"), said


def test_a_campaign_submitted_to_a_full_home_says_the_disk_is_full(env: Env, tmpfs: Mount) -> None:
    """Before: `ajetd campaign FOLDER` said `cannot copy the campaign folder into ...:
    [('f/base.md', '.../.c-x.tmp/base.md', "[Errno 28] No space left on device: ..."), ...]`,
    shutil.copytree's gathered errors as text, where `ajetd submit` says `No space left on
    device (0 B free)`. Nothing is left in the inbox."""
    tmpfs(env.home, "1m")
    assert env.cli("status").returncode == 0  # the home's folders made
    folder = campaign_folder(env, "full", env.tmp / "campaign-results")
    fill(env.home)
    out = env.cli("campaign", str(folder))
    assert out.returncode == 1, out
    assert out.stdout == ""
    said = out.stderr.strip()
    assert said == (
        f"ajetd: cannot copy the campaign folder {folder} into {env.home / 'inbox'}: "
        "No space left on device (0 B free); nothing was submitted"
    ), said
    assert list((env.home / "inbox").iterdir()) == []


def test_an_inbox_on_another_file_system_is_the_daemons_problem_not_a_silent_queue(
    env: Env, tmpfs: Mount
) -> None:
    """walk87 F5: the inbox its own mount (a shared drop folder): a claim is a rename into
    runs/, which cannot cross file systems. Before, every blueprint read as plainly queued
    for ever (EXDEV only in the daemon's log); now `submit`, `status` and `status RUN` say
    the daemon takes none, and why."""
    assert env.cli("status").returncode == 0  # the home's folders made
    tmpfs(env.home / "inbox", "1m")
    env.start_daemon()
    wait_for(
        lambda: (
            "another file system"
            in str(json.loads((env.home / "daemon.json").read_text()).get("problems"))
        ),
        what="the daemon to name its problem",
    )
    out = env.cli("submit", str(env.blueprint("x1", ajetd="gpus: 0")))
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.strip()
    assert "NOT TAKING BLUEPRINTS" in out.stderr and "another file system" in out.stderr
    shown = env.cli("status", run_id, "--json")
    reason = json.loads(shown.stdout)["reason"]
    assert "not taking blueprints" in reason and "another file system" in reason, reason
    assert "another file system" in env.cli("status").stdout
    assert "Invalid cross-device link" not in env.daemon_log()
