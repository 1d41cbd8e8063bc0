"""An AgentJet run's validation metrics read from its output while its val file holds none
(`ajetout`): how one validation's several prints join into one record, that hostile lines
cost linear time and bounded memory, and, end to end with the real daemon, a fake AgentJet of
before 2026-03-30 (no val file: `fakejet.oldprint`) whose metrics reach `status --json`,
results.md and a plateau stop. The shapes themselves: tests/test_metric_shapes.py (`AJOUT`)."""

from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.core import model
from ajetd.core.model import Run, Trial
from ajetd.core.runparts import OutBlock, OutRead
from ajetd.core.trialscript import trial_log
from ajetd.daemon import trials
from ajetd.daemon.observe import METRICS_READ_S
from ajetd.daemon.trials import read_metrics
from ajetd.diagnosis.live import LiveScans
from ajetd.frameworks import ajetout
from conftest import Env, campaign_ledger, wait_for

RAY = "\x1b[36m(TaskRunner pid=7)\x1b[0m "
TABLE = """╭─────────────── main_val_dataset ───────────────╮
│ ┌──────────────────────┬─────────────────────┐ │
│ │ global_steps         │ {step}                   │ │
│ ├──────────────────────┼─────────────────────┤ │
│ │ num_all_success_     │ 256                 │ │
│ │ tasks                │                     │ │
│ ├──────────────────────┼─────────────────────┤ │
│ │ mean_reward          │ {reward}                 │ │
│ └──────────────────────┴─────────────────────┘ │
╰────────────────────────────────────────────────╯"""


def read(text: str) -> list[dict[str, Any]]:
    _state, found = ajetout.feed(OutRead(), text)
    return [dict(r) for r in ajetout.add_records((), found)]


def lines(text: str, prefix: str = RAY) -> str:
    return "".join(f"{prefix}{line}\n" for line in text.split("\n"))


def test_a_table_split_over_lines_is_one_record_its_cells_joined() -> None:
    got = read(lines(TABLE.format(step=4, reward=0.5)))
    assert got == [
        {
            "global_steps": 4,
            "num_all_success_tasks": 256,
            "mean_reward": 0.5,
            "target_dataset_name": "main_val_dataset",
        }
    ]


def test_a_table_without_rules_between_its_rows_has_a_row_a_line() -> None:
    """rich without `show_lines` (another beast_logger, another printer) draws no rule
    between rows: each line is a row, never one row of all its lines joined."""
    table = "\n".join(
        line
        for line in TABLE.format(step=4, reward=0.5).split("\n")
        if "├" not in line and "tasks  " not in line
    )
    got = read(lines(table))
    assert got == [
        {
            "global_steps": 4,
            "num_all_success_": 256,
            "mean_reward": 0.5,
            "target_dataset_name": "main_val_dataset",
        }
    ]


def test_each_table_is_a_validation_even_with_the_same_values() -> None:
    """A flat run prints the same values at every validation: each table is a record (the
    plateau rule counts them), never joined to the one before."""
    table = TABLE.replace("global_steps", "pass_n      ").format(step=4, reward=0.5)
    assert len(read(lines(table) * 3)) == 3


def test_a_step_line_gives_the_table_before_it_its_step() -> None:
    """AgentJet with `console`: the table (no step before 260e37a), then eval_dataset's own
    step line, then the step's line with the training metrics: one record, at that step."""
    table = TABLE.replace("global_steps", "pass_n      ").format(step=4, reward=0.5)
    text = lines(table) + lines("step:6 - pass_n:4 - mean_reward:0.5")
    text += lines("step:6 - actor/entropy:0.5 - mean_reward:0.5 - timing_s/step:3.0")
    got = read(text)
    assert len(got) == 1 and got[0]["global_steps"] == 6 and "actor/entropy" not in got[0]


def test_a_step_line_of_other_values_is_its_own_validation() -> None:
    table = TABLE.replace("global_steps", "pass_n      ").format(step=4, reward=0.5)
    got = read(lines(table) + lines("step:6 - mean_reward:0.7"))
    assert [r.get("global_steps") for r in got] == [None, 6]


def test_verl_prints_a_step_twice_and_the_final_dict_again_one_record_each() -> None:
    text = lines("step:5 - val-core/x/reward/mean@1:0.25")
    text += lines("step:5 - actor/loss:0.1 - val-core/x/reward/mean@1:0.25")
    text += lines("Final validation metrics: {'val-core/x/reward/mean@1': 0.25}")
    assert read(text) == [{"global_steps": 5, "val-core/x/reward/mean@1": 0.25}]


def test_a_training_step_line_is_no_record() -> None:
    text = lines("step:3 - actor/pg_loss:0.1 - critic/score/mean:0.4 - response_length/mean:12")
    text += lines("step:3 - global_step:3 - val_loss_scale:1.0")  # no validation key
    assert read(text) == []


def test_nan_and_inf_are_kept_as_their_text() -> None:
    got = read(lines("step:2 - val-core/x/acc/mean@1:nan - val-core/x/reward/mean@1:inf"))
    assert got == [
        {"global_steps": 2, "val-core/x/acc/mean@1": "nan", "val-core/x/reward/mean@1": "inf"}
    ]


def test_the_state_is_stored_and_read_back() -> None:
    text = lines(TABLE.format(step=4, reward=0.5))
    half = text[: text.index("mean_reward")]
    half = half[: half.rindex("\n") + 1]
    state, found = ajetout.feed(OutRead(trial=2, offset=9), half)
    assert not found and state.block is not None and state.block.rows
    again = OutRead.from_json(json.loads(json.dumps(state.to_json())))
    assert again == state
    assert OutRead.from_json({"block": {"kind": "x"}, "offset": "no"}) == OutRead()
    assert OutBlock.from_json({"kind": "table", "rows": [["a"], [1, 2], ["k", "v"]]}) == OutBlock(
        rows=(("k", "v"),)
    )


_PIECES = st.sampled_from(
    [
        "╭────── main_val_dataset ──────╮",
        "╭",
        "╰──────╯",
        "│ ┌─────┬─────┐ │",
        "│ ├─────┼─────┤ │",
        "│ │ mean_reward │ 0.5 │ │",
        "│ │ TGC@1 │ nan │ │",
        "│ │ mean_rew │ 0.25 │ │",
        "│ │ ard │ │ │",
        "│ │ a │ b │ c │ │",
        "│ │ task_pass_rate@1… │ 1 │ │",
        "step:3 - mean_reward:0.5 - val-core/a/b:np.float64(0.1)",
        "step:3 - mean_reward:0.5",
        "step:99999999999999 - val-core/a:1",
        "]step:4 - val-aux/x:np.int64(2) - val/test_score/y:True",
        "Initial validation metrics: {'mean_reward': 0.5, 'global_steps': 2}",
        "(\"Initial validation metrics: {'mean_reward': \"",
        " '0.5}')",
        " \"'TGC@1': 0.5}\")",
        "('Final validation metrics: {",
        "\"Final validation metrics: {'val-core/x': 1}\"",
        "(WorkerDict pid=3) kwargs: {'n': 4}",
        "",
    ]
)
_LINES = st.lists(
    st.tuples(
        st.one_of(_PIECES, st.text(alphabet="│┃╭╰├┼step:0123456789 -'\"(){}.@_ab…", max_size=60)),
        st.sampled_from(["", RAY, "2026-12-03T10:00:00Z ", "0: "]),
    ),
    max_size=60,
)


@settings(max_examples=400, deadline=None)
@given(_LINES, st.integers(min_value=0, max_value=60))
def test_any_lines_are_read_without_error_bounded_and_the_same_at_any_split(
    pieces: list[tuple[str, str]], cut: int
) -> None:
    """Whatever a program prints (pieces of the shapes, any text, behind any prefix): no
    error, the open block within its bounds, and the same records whichever line a read
    stops after (the daemon reads what is new at each check, its state stored between)."""
    text = [f"{prefix}{line}\n" for line, prefix in pieces]
    whole_state, found = ajetout.feed(OutRead(), "".join(text))
    whole = [dict(r) for r in ajetout.add_records((), found)]
    state, first = ajetout.feed(OutRead(), "".join(text[:cut]))
    state = OutRead.from_json(json.loads(json.dumps(state.to_json())))  # state.json between
    state, more = ajetout.feed(state, "".join(text[cut:]))
    assert [dict(r) for r in ajetout.add_records((), [*first, *more])] == whole
    assert state == whole_state
    block = state.block
    if block is not None:
        assert block.lines <= ajetout.MAX_OPEN_LINES and len(block.rows) <= ajetout.MAX_ROWS
        assert len(block.text) <= ajetout.MAX_TEXT
        assert all(len(c) <= ajetout.MAX_CELL for row in block.rows for c in row)


def test_hostile_lines_cost_linear_time() -> None:
    """A megabyte of box characters, of step lines' separators, of quotes, costs no more
    than reading it: every pattern is bounded or scanned once."""
    hostile = [
        "╭" + "─" * 1_000_000,
        "│" * 1_000_000,
        "│ │ " + "a" * 1_000_000 + " │ b │ │",
        "step:1 - " * 100_000,
        "step:1 - " + "val-core/a:" * 100_000,
        "step:1 - val-core/a:np.float64(" + "1" * 1_000_000,
        '("Initial validation metrics: {' + "'a': 1, " * 100_000,
        "Initial validation metrics: {" + "[" * 100_000,
        "]" * 1_000_000 + "step:2 - mean_reward:0.5",
    ]
    for line in hostile:
        started = time.process_time()
        state, _found = ajetout.feed(OutRead(), f"{RAY}╭── t ──╮\n{line}\n{line}\n")
        ajetout.feed(state, f"{line}\n")
        assert time.process_time() - started < 1.0, line[:20]


def test_the_val_file_wins_once_it_holds_a_record_and_the_output_is_read_no_more(
    tmp_path: Path,
) -> None:
    """`trials.read_metrics`: while the val file is missing or empty, the output's records
    are the run's (`out_read.taken`); the file's first record replaces them all, and later
    tables in the output are not read: one validation is never two records."""
    val = tmp_path / "val.md"
    run = Run("r1", "x.md", 0.0, val_path=str(val), result_dir=str(tmp_path))
    run = model.add_trial(run, Trial(number=1, command="c", session="s", started_at=1.0))
    log = trial_log(run, 1)
    log.parent.mkdir(parents=True)
    log.write_text(lines(TABLE.format(step=2, reward=0.5)))
    logs = partial(trial_log, run)
    run = read_metrics(run, log_of=logs)
    assert [h["global_steps"] for h in run.history] == [2] and run.out_read.taken
    assert run.metrics["mean_reward"] == 0.5
    val.write_text("")  # the file appears, empty: still the output's
    with log.open("a") as out:
        out.write(lines(TABLE.format(step=4, reward=0.6)))
    run = read_metrics(run, log_of=logs)
    assert [h["global_steps"] for h in run.history] == [2, 4] and run.out_read.taken
    val.write_text("{'global_steps': 4, 'mean_reward': 0.6}\n")
    with log.open("a") as out:
        out.write(lines(TABLE.format(step=6, reward=0.7)))
    run = read_metrics(run, log_of=logs)
    assert run.history == ({"global_steps": 4, "mean_reward": 0.6},), run.history
    assert not run.out_read.taken and run.metrics["mean_reward"] == 0.6
    again = read_metrics(run, log_of=logs)
    assert again.history == run.history  # the output's step 6: never read beside the file


def test_an_old_agentjets_printed_metrics_reach_status_results_and_a_plateau(
    daemon_env: Env,
) -> None:
    """End to end: an AgentJet of before 2026-03-30 writes no val file (the option is not
    its own; ajetd's copy names one all the same) and only prints its validations: with
    verl's console logger, each record at its step reaches `status --json` and results.md;
    a flat run's are enough for its plateau rule to stop it."""
    env = daemon_env
    config = env.config("oldc", old_agentjet="console", steps=4)
    run_id = env.submit(env.blueprint("oldc", config=config))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    assert status["metrics"]["global_steps"] == 4 and "mean_reward" in status["metrics"], status
    history = env.record(run_id)["history"]
    assert [h.get("global_steps") for h in history] == [0, 2, 4], history
    assert all(h["target dataset name"] == "main_val_dataset" and "TGC@1" in h for h in history)
    result = env.tmp / "results" / "oldc"
    results = (result / "results.md").read_text()
    assert "read from the program's output" in results and "| 4 |" in results, results
    assert not (env.codebase / "saved_val_result" / "oldc.md").exists()  # no file was written

    flat = env.config("oldflat", old_agentjet=True, forever=True, flat=True, step_time=0.05)
    rule = "plateau: {metric: mean_reward, patience: 2, min_delta: 0.001, after: 0.25}"
    run_id = env.submit(env.blueprint("oldflat", config=flat, max_time="8s", ajetd=rule))
    status = env.wait_done(run_id, timeout=30)
    assert status["status"] == "plateau", status
    assert "mean_reward has not improved" in status["reason"], status["reason"]


def test_a_file_and_the_same_validations_printed_are_counted_once(daemon_env: Env) -> None:
    """A newer AgentJet writes its val file and prints the table too: the file wins, each
    validation is one record (the file's), never the output's beside it."""
    env = daemon_env
    config = env.config("both", print_table=True, steps=6)
    run_id = env.submit(env.blueprint("both", config=config))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    history = env.record(run_id)["history"]
    assert [h["global_steps"] for h in history] == [2, 4, 6], history
    assert not any("TGC@1" in h for h in history), history  # the table's keys: not read
    results = (env.tmp / "results" / "both" / "results.md").read_text()
    assert "- validation results file:" in results


def test_a_campaign_of_old_agentjet_runs_compares_their_printed_metrics(daemon_env: Env) -> None:
    """seed 002's loop over an AgentJet that writes no val file: each experiment's row is
    judged by the metric its output printed (its tables; no step in them), keep or discard
    against the baseline's, as a val file's would be."""
    env = daemon_env
    folder = env.tmp / "oldcamp-folder"
    folder.mkdir()
    config = env.config("oldcamp-base", steps=6, old_agentjet=True, rewards=[0.3, 0.4, 0.45])
    command = f"python -m ajet.launcher --conf {config} --autokill"
    (folder / "base.md").write_text(
        env.blueprint("oldcamp-base", config=config, command=command).read_text()
    )
    spec = {
        "name": "oldcamp",
        "metric": "mean_reward",
        "base": "base.md",
        "result_dir": str(env.tmp / "campaigns" / "oldcamp"),
        "stop": {"max_experiments": 3},
        "experiments": [
            {
                "name": "better",
                "description": "a gain",
                "overrides": ["fakejet.rewards=[0.3, 0.4, 0.5]"],
            },
            {
                "name": "worse",
                "description": "a loss",
                "overrides": ["fakejet.rewards=[0.3, 0.35, 0.4]"],
            },
        ],
    }
    (folder / "campaign.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    out = env.cli("campaign", str(folder))
    assert out.returncode == 0, out.stderr
    wait_for(lambda: len(campaign_ledger(env, "oldcamp")) >= 3, timeout=90, what="three rows")
    rows = campaign_ledger(env, "oldcamp")
    assert [(r["index"], r["status"], r["metric_value"]) for r in rows] == [
        ("0", "keep", "0.45"),
        ("1", "keep", "0.5"),
        ("2", "discard", "0.4"),
    ], rows


def test_the_live_reading_notes_a_records_mark_even_cut_between_two_reads(
    tmp_path: Path,
) -> None:
    """What a quiet run's output is read for records off schedule rests on (`_output_moved`):
    the live reading notes where a mark of a record lies, from the bytes it reads anyway; a
    mark cut between two reads is noted, output without one is not."""
    log_file = tmp_path / "out.log"
    live = LiveScans(marks=ajetout.MARKS)
    key = ("r", 1)
    log_file.write_bytes(b"")
    live.scan(key, log_file, 0.0)
    assert live.holds_mark(key, 0) is False
    for piece in (b"step 1 loss 0.5\n", b"training step 2\nstep 3 - val-core/x/acc:0.5 st"):
        with log_file.open("ab") as out:
            out.write(piece)
        live.scan(key, log_file, 0.0)
    assert live.holds_mark(key, 0) is False  # `step 3`, no `step:`: no record can be there
    done = log_file.stat().st_size
    for piece in (b"ep", b":4 - val-core/x/acc:0.5\n"):  # `step:` cut after `st`, then `ep`
        with log_file.open("ab") as out:
            out.write(piece)
        live.scan(key, log_file, 0.0)
    assert live.holds_mark(key, 0) is True
    assert live.holds_mark(key, log_file.stat().st_size) is False  # read for records since
    assert live.holds_mark(("r", 2), 0) is None  # never read: not known
    assert LiveScans().holds_mark(key, done) is None
    assert live.read_to(key) == log_file.stat().st_size


def test_a_quiet_run_is_read_for_records_only_where_it_printed_one_and_once_when_due(
    env: Env, loop: Any, monkeypatch: Any
) -> None:
    """Issue 15: with every AgentJet run without a val file read for records as its output
    grew, 50 quiet runs cost five times the daemon's CPU (a read, a saved offset, a reset
    deep check each 5 s, and the light ticks polling a read held back). A run whose output
    holds no mark of a record (`ajetout.MARKS`) is not read for records by the light ticks;
    one that prints a record is read within them; a read held back (METRICS_READ_S after the
    last) is done once, when due, the loop waking for it, not on every tick before."""
    reads: list[float] = []
    real = trials.read_metrics

    def counted(run: Run, *args: Any, **kwargs: Any) -> Run:
        reads.append(loop.clock())
        return real(run, *args, **kwargs)

    monkeypatch.setattr(trials, "read_metrics", counted)
    first, second = env.tmp / "first", env.tmp / "second"
    # (`${s}:`: its banner shows the command, which must hold no mark)
    record = 'echo "${s}:%d - val-core/gsm8k/reward/mean@1:0.%d"'
    command = (
        f"s=step; i=0; while [ ! -e {first} ]; do i=$((i+1)); echo step $i; sleep 0.1; done; "
        f"{record % (1, 25)}; while [ ! -e {second} ]; do sleep 0.1; done; "
        f"{record % (2, 5)}; sleep 1000"
    )
    run_id = loop.submit(env.blueprint("quiet", command=command, ajetd="gpus: 0"))
    loop.started(run_id)
    slot = loop.daemon.slots[run_id]
    key = (run_id, 1)
    loop.light_until(lambda: slot.live.started(key), "its output's reading to begin")
    loop.run_for(METRICS_READ_S)  # (its first full look read what it may hold, before the
    n = len(reads)  # live reading began: the next is held back this long after it)
    at = slot.live.read_to(key) or 0
    loop.light_until(lambda: (slot.live.read_to(key) or 0) > at + 200, "its output to grow")
    assert len(reads) == n and slot.metrics_due_at is None  # it printed no record: no read
    assert slot.backoff is not None
    saved, step = env.record(run_id).get("out_read", {}), slot.backoff.step
    loop.reach(slot.backoff.next_at)  # its deep check: read, nothing new
    assert len(reads) == n + 1 and slot.backoff.step == step + 1  # its schedule goes on
    assert loop.run(run_id).out_read.offset > saved.get("offset", 0)  # read on, in memory:
    assert env.record(run_id).get("out_read", {}) == saved  # no synced write for it
    n += 1
    loop.run_for(METRICS_READ_S)  # (a read is held back this long after the last)
    assert len(reads) == n
    first.touch()
    loop.light_until(lambda: loop.run(run_id).history, "its first record")
    assert len(reads) == n + 1, reads
    second.touch()
    loop.light_until(lambda: slot.metrics_due_at is not None, "its second record, held back")
    due = slot.metrics_due_at
    assert due == reads[-1] + METRICS_READ_S and len(reads) == n + 1
    loop.run_until(due - 0.01)  # the passes before it: none reads it
    assert len(reads) == n + 1 and len(loop.run(run_id).history) == 1
    loop.reach(due)  # the loop wakes for it by itself
    assert len(reads) == n + 2 and len(loop.run(run_id).history) == 2, reads
    loop.run_for(3 * METRICS_READ_S)  # read: no more reads while its output is quiet
    assert len(reads) == n + 2 and slot.metrics_due_at is None, reads


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["st", "ep", ":", "step", "step:", "╭", "\n", "x", "metrics:"])),
    st.lists(st.integers(min_value=0, max_value=200), max_size=6),
)
def test_a_mark_is_noted_wherever_the_reads_cut_the_output(
    tmp_path_factory: Any, words: list[str], cuts: list[int]
) -> None:
    """Whatever the pieces the output comes in (a read cuts it anywhere, a character's bytes
    too), the live reading notes a mark exactly where the whole output holds one."""
    whole = ("validation " + "".join(words)).encode()
    log_file = tmp_path_factory.mktemp("marks") / "out.log"
    log_file.write_bytes(b"")
    live = LiveScans(marks=ajetout.MARKS)
    live.scan(("r", 1), log_file, 0.0)
    at = 0
    for cut in [*sorted({min(c, len(whole)) for c in cuts}), len(whole)]:
        with log_file.open("ab") as out:
            out.write(whole[at:cut])
        at = max(at, cut)
        live.scan(("r", 1), log_file, 0.0)
    assert live.holds_mark(("r", 1), 0) is any(m in whole for m in ajetout.MARKS)
