"""A file ajetd reads whole from its home or a result dir is read with a bound: one that is too
large (a disk filled by a runaway program, a mistake, a hostile file) is named as damaged with
its size and the limit, never read into memory, and never a crash (real CLI processes, a real
daemon; the files are sparse, so several GiB cost no disk).

Before: `ajetd status` over a 1 GiB sparse runs/<id>/state.json read it whole, 2.1 GiB of
memory at its peak and 49 s, before it said the record was corrupt ("Expecting value"); a
larger one on a smaller machine was a MemoryError. The daemon did the same at its start.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from ajetd.adapters.regular import TooLargeError, load_record, read_bounded
from conftest import PYTHON, Env, wait_for

SPARSE = 3 << 30  # 3 GiB of nothing, on disk as a hole
PEAK_KIB = 200 << 10  # a CLI or a daemon that read such a file would pass this by far


def _sparse(path: Path, size: int = SPARSE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb"):
        pass
    os.truncate(path, size)
    return path


# The CLI's own peak, read in it as it exits (`VmHWM` of the memory it ran in): the peak the
# kernel reports to a waiting parent (`ru_maxrss`) counts what the process held before its
# exec too, a copy of the parent, and an xdist worker that had run many tests is 290 MiB.
_PEAK_AT_EXIT = """
import atexit, os, runpy, sys
out = sys.argv[1]
def said():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            open(out, "w").write(line.split()[1])
atexit.register(said)
quit_now = os._exit
def exit_saying(code):  # the CLI may end without atexit (os._exit)
    said()
    quit_now(code)
os._exit = exit_saying
sys.argv = ["ajetd", *sys.argv[2:]]
runpy.run_module("ajetd", run_name="__main__", alter_sys=True)
"""


def _cli(env: Env, *args: str) -> tuple[int, str, int]:
    """`ajetd ARGS` run for real: its exit code, what it said, and its peak memory (KiB)."""
    peak_file = env.tmp / "peak"
    peak_file.unlink(missing_ok=True)
    done = subprocess.run(
        [PYTHON, "-c", _PEAK_AT_EXIT, str(peak_file), *args],
        env=env.vars,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=60,
        check=False,
    )
    text = done.stdout.decode(errors="replace")
    assert "Traceback" not in text and "MemoryError" not in text, (args, text[-2000:])
    return done.returncode, text, int(peak_file.read_text())


def _peak_kib(pid: int) -> int:
    """A live process's peak resident memory (VmHWM), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


TOO_LARGE = f"{SPARSE} bytes (3.0 GiB), more than the 64.0 MiB such a file may hold: not read"


def test_a_huge_run_record_is_named_never_read_by_status_or_the_daemon(env: Env) -> None:
    record = _sparse(env.home / "runs" / "abc123" / "state.json")
    _sparse(env.home / "daemon.json")
    for args in (["status"], ["status", "--json"], ["status", "abc123"], ["logs", "abc123"]):
        code, said, peak = _cli(env, *args)
        assert f"corrupt run record {record}: {TOO_LARGE}" in said, (args, said)
        assert peak < PEAK_KIB, (args, peak)
        assert code in (0, 1), (args, code, said)
    (env.home / "daemon.json").unlink()
    daemon = env.start_daemon()
    wait_for(lambda: TOO_LARGE in env.daemon_log() or daemon.poll() is not None, what="named")
    assert daemon.poll() is None, env.daemon_log()[-2000:]
    assert f"corrupt run record {record}: {TOO_LARGE}" in env.daemon_log()
    assert _peak_kib(daemon.pid) < PEAK_KIB
    assert record.stat().st_size == SPARSE  # kept as it was, for a person
    code, said, _ = _cli(env, "status")  # the daemon's own daemon.json names it too
    assert code == 0 and f"corrupt run record {record}" in said, said


def test_a_huge_campaign_record_is_named_by_the_cli_and_the_daemon(env: Env) -> None:
    record = _sparse(env.home / "campaigns" / "c-abc123" / "state.json")
    for args in (["campaign", "list"], ["campaign", "status", "c-abc123"]):
        code, said, peak = _cli(env, *args)
        assert f"campaign record {record} unreadable: {TOO_LARGE}" in said, (args, said)
        assert peak < PEAK_KIB, (args, peak)
        assert code in (0, 1), (args, code, said)
    code, said, peak = _cli(env, "status")  # left out of the campaigns it shows
    assert code == 0 and peak < PEAK_KIB, said
    daemon = env.start_daemon()
    said = f"campaign record {record} unreadable, campaign left alone: {TOO_LARGE}"
    wait_for(lambda: said in env.daemon_log() or daemon.poll() is not None, what="the record")
    assert daemon.poll() is None, env.daemon_log()[-2000:]
    assert _peak_kib(daemon.pid) < PEAK_KIB
    assert record.stat().st_size == SPARSE


def test_a_huge_answer_to_a_campaign_request_is_named_and_kept(env: Env) -> None:
    from ajetd.adapters.control import answer_file, await_answer
    from ajetd.adapters.store import Home
    from ajetd.core.errors import StoreError

    home = Home(env.home)
    answer = _sparse(answer_file(home, "c-abc123", "1-abcdef"))
    with pytest.raises(StoreError, match=re.escape(f"answer {answer} is unreadable: {TOO_LARGE}")):
        await_answer(home, "c-abc123", "1-abcdef", 5.0)
    assert answer.stat().st_size == SPARSE


def test_a_file_read_whole_is_refused_past_its_bound_before_any_read(tmp_path: Path) -> None:
    path = _sparse(tmp_path / "f", 1025)
    with pytest.raises(TooLargeError, match=r"^1025 bytes \(1\.0 KiB\), more than the 1\.0 KiB"):
        read_bounded(path, 1024)
    os.truncate(path, 1024)
    assert read_bounded(path, 1024) == b"\0" * 1024
    path.write_text('{"a": 1}')
    assert load_record(path) == {"a": 1}
    os.mkfifo(tmp_path / "fifo")  # nobody writes it: refused, never waited on
    with pytest.raises(ValueError, match="not a regular file"):
        load_record(tmp_path / "fifo")


def test_a_huge_journal_is_named_and_its_run_never_taken_for_one_that_never_started(
    env: Env,
) -> None:
    """A run folder without its record (a claim cut short is admitted again) whose journal is
    too large to tell whether the run ended: named, left out, never admitted again."""
    folder = env.home / "runs" / "abc123"
    journal = _sparse(folder / "events.jsonl")
    (folder / "blueprint.md").write_bytes(env.blueprint("j").read_bytes())
    said = f"its journal {journal} cannot be read ({TOO_LARGE})"
    code, out, peak = _cli(env, "status")
    assert code == 0 and said in out and peak < PEAK_KIB, (out, peak)
    daemon = env.start_daemon()
    wait_for(lambda: said in env.daemon_log() or daemon.poll() is not None, what="named")
    assert daemon.poll() is None, env.daemon_log()[-2000:]
    assert _peak_kib(daemon.pid) < PEAK_KIB
    assert not (folder / "state.json").exists() and journal.stat().st_size == SPARSE


def test_small_files_read_whole_are_refused_past_their_bound_never_read(tmp_path: Path) -> None:
    """An exit file, a run's source name, the daemon's lock, kinds.yaml, a run's GPU samples:
    each, larger than such a file is, reads as damaged (as one cut short or garbled does), and
    costs no memory: it is never read."""
    import resource

    from ajetd.adapters.kindsfile import home_kinds
    from ajetd.adapters.store import Home
    from ajetd.adapters.trialfiles import read_exit
    from ajetd.cli.daemonctl import lock_holder
    from ajetd.daemon.rebuild import _source
    from ajetd.pictures.runcurves import gpu_series

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert read_exit(_sparse(tmp_path / "trial-1.exit")) is None
    assert _source(_sparse(tmp_path / "run" / "source-name").parent) == "blueprint.md"
    assert gpu_series(_sparse(tmp_path / "gpus.jsonl")) == {}
    kinds = _sparse(tmp_path / "home" / "kinds.yaml")
    assert home_kinds(kinds.parent) == (
        (),
        [f"{kinds}: {TOO_LARGE.replace('64.0 MiB', '256.0 KiB')}"],
    )
    home = Home(tmp_path / "home")
    home.ensure()
    _sparse(home.lock_file)
    assert lock_holder(home) is None
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 << 10


def test_a_config_grown_past_its_bound_after_its_size_was_asked_is_never_read(
    tmp_path: Path,
) -> None:
    """`read_config` asks a config's size first; the read itself is bounded too (a file that
    grew in between, or another swapped in)."""
    from ajetd.core.limits import CONFIG_MAX_BYTES
    from ajetd.hosts.fs import LOCAL

    path = _sparse(tmp_path / "config.yaml")
    with pytest.raises(TooLargeError, match=f"^{SPARSE} bytes"):
        LOCAL.read_text(str(path))
    os.truncate(path, CONFIG_MAX_BYTES)
    assert len(LOCAL.read_text(str(path))) == CONFIG_MAX_BYTES


def test_a_live_runs_huge_journal_is_named_in_its_report_and_never_read(env: Env) -> None:
    """The daemon's loop (in this process) ends a run whose journal became huge while it ran:
    its results.md says the journal was not read and why; the loop's memory stays flat."""
    import resource

    from loopkit import Loop

    loop = Loop(env)
    try:
        bp = env.blueprint("j", command="sleep 1000", max_time="1m", ajetd="gpus: 0")
        run_id = loop.submit(bp)
        loop.started(run_id)
        journal = env.home / "runs" / run_id / "events.jsonl"
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        os.truncate(journal, SPARSE)  # appended to from here on, never read
        loop.reach(loop.t0(run_id) + 60)  # its time limit: stopped, its reports written
        loop.until_done(run_id)
        results = (Path(loop.run(run_id).result_dir) / "results.md").read_text()
        said = rf"its journal {re.escape(str(journal))} not read: \d+ bytes \(3\.0 GiB\), more"
        assert re.search(said, results), results
        assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 << 10
    finally:
        loop.close()
