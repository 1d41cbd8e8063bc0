"""A run's validation file is read in bounded pieces: however large the file the program
writes, or however long one of its lines, the daemon's memory stays bounded, every record
is read once and none is lost across pieces (real daemon, real files, real tmux)."""

from __future__ import annotations

import json
import textwrap
from functools import partial
from pathlib import Path

from ajetd.core.limits import VAL_LINE_MAX_BYTES, VAL_PIECE_BYTES, VAL_RECORDS_MAX
from ajetd.core.model import Run
from ajetd.core.trialscript import trial_log
from ajetd.daemon.trials import read_metrics
from ajetd.frameworks.valresults import parse_val_text
from ajetd.hosts import sshcmd
from ajetd.hosts.base import read_local
from conftest import Env, Sshd, wait_for

# A program that writes a val file the way a faulty one might: records, one giant line (a
# dump of a whole tensor, say), more records, each record written in two halves so that a
# piece may end in the middle of one.
BIGVAL = textwrap.dedent(
    """
    import os, sys, yaml
    conf = yaml.safe_load(open(sys.argv[sys.argv.index("--conf") + 1]))
    path = conf["ajet"]["trainer_common"]["val_print_to_markdown_file_path"]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    giant = int(sys.argv[sys.argv.index("--giant") + 1])
    with open(path, "a") as val:
        for step in range(1, 4):
            val.write("{'global_steps': %d, " % step)
            val.flush()
            val.write("'mean_reward': %s}\\n" % (step / 10))
        chunk = "x" * (1 << 20)
        for _ in range(giant >> 20):
            val.write(chunk)
        val.write("\\n")
        for step in range(4, 7):
            val.write("{'global_steps': %d, 'mean_reward': %s}\\n" % (step, step / 10))
    print("Training finished.", flush=True)
    """
)


def _peak_rss(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for {pid}")


def test_a_giant_val_line_does_not_grow_the_daemon_and_loses_no_record(env: Env) -> None:
    """Before: the daemon read the run's whole part of the val file at every deep check, so
    a 256 MiB line took it from ~60 MiB to over 700 MiB; now it reads pieces of
    VAL_PIECE_BYTES, skips the line over VAL_LINE_MAX_BYTES with a note, and keeps the six
    records on both sides of it."""
    (env.codebase / "bigval.py").write_text(BIGVAL)
    config = env.config("big")
    daemon = env.start_daemon()
    wait_for(lambda: env.cli("status").returncode == 0, what="the daemon to answer")
    before = _peak_rss(daemon.pid)
    giant = 256 << 20
    bp = env.blueprint(
        "big", config=config, command=f"python bigval.py --conf {config} --giant {giant}"
    )
    run_id = env.submit(bp)
    status = env.wait_done(run_id, timeout=120)
    grown = _peak_rss(daemon.pid) - before
    assert status["status"] == "succeeded", status
    record = env.record(run_id)
    steps = [r["global_steps"] for r in record["history"]]
    assert steps == [1, 2, 3, 4, 5, 6], steps
    assert grown < 64 << 20, (
        f"the daemon grew by {grown >> 20} MiB reading a {giant >> 20} MiB line"
    )
    said = " ".join(record["warnings"])
    assert "longer than" in said and "skipped" in said, record["warnings"]


def _text(records: int, step_every: int = 7) -> str:
    """A val file's text of both layouts, lines of many lengths (pieces cut them anywhere)."""
    out = []
    for i in range(records):
        if i % step_every == 0:
            out.append(f"## Step {i}\n- mean_reward: {i / 1000}\n- pass@1: {i % 100}%\n\n")
        else:
            pad = "'note': '" + "n" * (i * 37 % 900) + "', "
            out.append(f"{{'global_steps': {i}, {pad}'mean_reward': np.float64({i / 1000})}}\n")
    return "".join(out)


def _read_to_end(run: Run, budget: int | None) -> Run:
    """read_metrics as the deep checks call it until nothing is new, the record stored and
    read back between calls as the daemon does (state.json)."""
    while True:
        updated = read_metrics(run, read_local, budget, log_of=partial(trial_log, run))
        if updated is run:
            return run
        run = Run.from_json(json.loads(json.dumps(updated.to_json())))


def test_records_cut_by_pieces_are_each_read_once_and_long_lines_skipped(tmp_path: Path) -> None:
    """Several pieces of records of both layouts, a `## Step` block cut by a piece's end, a
    line over the cap amid them and one at the end still being written: the history is the
    records of the file whole, each once, whatever the budget per read."""
    val = tmp_path / "val.md"
    head, tail = _text(3000), _text(2000)
    giant = "{'blob': '" + "y" * (VAL_LINE_MAX_BYTES + 5) + "'}\n"
    val.write_text(head + giant + tail)
    assert val.stat().st_size > 2 * VAL_PIECE_BYTES
    expected = parse_val_text(head) + parse_val_text(tail)
    for budget in (VAL_PIECE_BYTES, None):
        run = Run("r1", "x.md", 0.0, val_path=str(val))
        run = _read_to_end(run, budget)
        assert list(run.history) == expected
        assert run.metrics == expected[-1]
        assert any("longer than 64 KiB" in w and f"byte {len(head)}" in w for w in run.warnings)
    with val.open("a") as handle:  # a record written in two halves, a read between them
        handle.write("{'global_steps': 9001, 'mean")
    run = _read_to_end(run, None)
    assert len(run.history) == len(expected)
    with val.open("a") as handle:
        handle.write("_reward': 0.9}\n" + "z" * (2 * VAL_PIECE_BYTES))  # a line without end
    run = _read_to_end(run, None)
    assert run.history[-1] == {"global_steps": 9001, "mean_reward": 0.9}
    assert run.val_read.skipping and run.val_read.pos == val.stat().st_size
    with val.open("a") as handle:
        handle.write("zz\n## Step 9002\n- mean_reward: 0.95\n")
    run = _read_to_end(run, None)
    assert run.history[-1] == {"global_steps": 9002, "mean_reward": 0.95}
    assert len(run.history) == len(expected) + 2
    with val.open("a") as handle:  # a later bullet of the open block updates it in place
        handle.write("- pass@1: 50%\n")
    run = _read_to_end(run, None)
    assert run.history[-1] == {"global_steps": 9002, "mean_reward": 0.95, "pass@1": 0.5}
    assert len(run.history) == len(expected) + 2
    assert len([w for w in run.warnings if "longer than" in w]) == 1  # noted once


def test_a_val_file_cut_short_is_read_again_from_its_start(tmp_path: Path) -> None:
    """Truncated or replaced by a shorter file: its records then are the history."""
    val = tmp_path / "val.md"
    val.write_text(_text(50))
    run = _read_to_end(Run("r1", "x.md", 0.0, val_path=str(val)), None)
    assert len(run.history) == 50
    val.write_text(_text(3))
    run = _read_to_end(run, None)
    assert list(run.history) == parse_val_text(_text(3))


def test_a_record_older_than_the_cursor_reads_its_history_anew(tmp_path: Path) -> None:
    """A state.json of an earlier version has a history and no `val_read`: its part of the
    file is read once again, its records not counted twice."""
    val = tmp_path / "val.md"
    val.write_text("{'x': 1}\n" + _text(10))
    old = Run("r1", "x.md", 0.0, val_path=str(val), val_offset=9)
    data = old.to_json()
    data["history"] = parse_val_text(_text(10))
    del data["val_read"]
    run = _read_to_end(Run.from_json(data), None)
    assert list(run.history) == parse_val_text(_text(10))


def test_more_records_than_are_kept_update_the_latest_metrics(tmp_path: Path) -> None:
    """Past VAL_RECORDS_MAX records, the history stops growing (noted once), the metrics are
    still the last record's."""
    val = tmp_path / "val.md"
    n = VAL_RECORDS_MAX + 10
    val.write_text("".join(f"{{'global_steps': {i}, 'mean_reward': {i}}}\n" for i in range(n)))
    run = _read_to_end(Run("r1", "x.md", 0.0, val_path=str(val)), VAL_PIECE_BYTES // 4)
    assert len(run.history) == VAL_RECORDS_MAX
    assert run.metrics == {"global_steps": n - 1, "mean_reward": n - 1}
    assert len([w for w in run.warnings if f"more than {VAL_RECORDS_MAX}" in w]) == 1


def test_a_remote_val_file_is_read_in_pieces_too(tmp_path: Path, sshd: Sshd) -> None:
    """Over SSH at most a piece crosses the connection per read (`head -c` there), and the
    records read are those read here."""
    spec = sshd.spec()
    val = tmp_path / "val.md"
    val.write_text(_text(2000) + "x" * (3 * VAL_PIECE_BYTES) + "\n" + _text(100))
    size, data = sshcmd.read_from(spec, str(val), 5, VAL_PIECE_BYTES) or (0, b"")
    assert size == val.stat().st_size and len(data) == VAL_PIECE_BYTES
    remote = Run("r1", "x.md", 0.0, val_path=str(val))
    local = _read_to_end(remote, None)

    def fetch(path: str, offset: int, limit: int) -> tuple[int, bytes] | None:
        return sshcmd.read_from(spec, path, offset, limit)

    logs = partial(trial_log, remote)
    while (updated := read_metrics(remote, fetch, None, log_of=logs)) is not remote:
        remote = updated
    assert remote.history == local.history and len(remote.history) == 2100
