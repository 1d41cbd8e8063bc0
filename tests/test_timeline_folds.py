"""results.md's timeline says what happened, not each read (walk93 F3: 125 of a run's 431
lines were `validation: N record(s)`, one a read). The journal gets a validation line for the
first records and each new best only (`records.validation_news`); the timeline folds any kind
of line that comes again and again to its first and last, and is bounded
(`timeline.folded`). Pure parts over generated journals; a real run on real tmux and fakejet,
the loop in-process."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.core.model import Run
from ajetd.views.records import validation_news
from ajetd.views.timeline import FOLD_AFTER, MAX_LINES, folded, kind_of
from conftest import Env
from loopkit import Loop

JOURNAL = "/home/runs/abc/events.jsonl"


def test_a_counter_is_folded_and_what_happened_stays() -> None:
    events = [(0.0, "blueprint x.md claimed"), (1.0, "trial 1 started in tmux session ajet_x")]
    events += [(2.0 + i, f"validation: {i + 1} record(s)") for i in range(125)]
    events += [(130.0, "stopping: time_limit"), (131.0, "sent SIGINT"), (140.0, "run ended: ok")]
    lines = folded(events, JOURNAL)
    assert len(lines) == 7, lines
    said = [line for line in lines if "validation:" in line]
    assert said[0].endswith("validation: 1 record(s)")
    assert "validation: 125 record(s) (the last of 125 such lines since" in said[1]
    assert f"the 123 between are in {JOURNAL}" in said[1]
    for text in ("claimed", "trial 1 started", "stopping: time_limit", "SIGINT", "run ended"):
        assert sum(text in line for line in lines) == 1, text
    # a kind seen FOLD_AFTER times is shown each time (three relaunches are three lines)
    few = [(float(i), f"trial {i} started") for i in range(1, FOLD_AFTER + 1)]
    assert len(folded(few, JOURNAL)) == FOLD_AFTER


_TEXTS = st.sampled_from(
    [
        "validation: {n} record(s)",
        "waiting for {n} GPU(s): GPU 0 is held by run abc",
        "seen while running: nccl_timeout (line {n})",
        "trial {n} started",
        "stopping: plateau",
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    picks=st.lists(st.tuples(_TEXTS, st.integers(0, 10**6)), max_size=400),
    unique=st.integers(0, 300),
)
def test_the_timeline_is_bounded_in_order_and_loses_no_kind(
    picks: list[tuple[str, int]], unique: int
) -> None:
    events = [(float(i), text.format(n=n)) for i, (text, n) in enumerate(picks)]
    events += [
        (1e6 + i, f"finding kind_{chr(97 + i % 26)}{'x' * (i // 26)}") for i in range(unique)
    ]
    lines = folded(events, JOURNAL)
    assert len(lines) <= MAX_LINES + 1
    kinds = {kind_of(text) for _, text in events}
    cut = [line for line in lines if line.startswith("- …")]
    if not cut:  # every kind is there, first and last of each
        shown = {kind_of(line.split(": ", 1)[1].split(" (the last of")[0]) for line in lines}
        assert kinds <= shown
    else:
        assert len(cut) == 1 and f"more line(s), each in {JOURNAL}" in cut[0]
        assert len(lines) == MAX_LINES + 1
    stamps = [line.split(": ", 1)[0] for line in lines if not line.startswith("- …")]
    assert stamps == sorted(stamps)


def _run(*rewards: float) -> Run:
    history = tuple({"global_steps": 2 * i, "mean_reward": r} for i, r in enumerate(rewards))
    return Run(run_id="abc123", source="x.md", submitted_at=0.0, history=history)


def test_the_journal_says_the_first_records_and_each_new_best_only() -> None:
    none = _run()
    assert validation_news(none, none) is None
    first = _run(0.2, 0.3)
    assert validation_news(none, first) == (
        "validation: 2 record(s), the first; best mean_reward 0.3000 (step 2)"
    )
    assert validation_news(first, _run(0.2, 0.3, 0.1)) is None  # no new best: no line
    assert validation_news(first, _run(0.2, 0.3, 0.3)) is None  # equal: the first holds it
    assert validation_news(first, _run(0.2, 0.3, 0.1, 0.5)) == (
        "validation: 4 record(s): new best mean_reward 0.5000 (step 6)"
    )
    plain = replace(_run(), history=({"global_steps": 0},))  # no metric: the first line only
    assert validation_news(none, plain) == "validation: 1 record(s), the first"


def test_a_long_run_s_timeline_is_not_a_read_log(env: Env, loop: Loop) -> None:
    conf = env.config("long", steps=60, step_time=0.02)
    path = env.codebase / conf
    data = yaml.safe_load(path.read_text())
    data["fakejet"]["rewards"] = [round(0.01 * i, 2) for i in range(31)]  # a new best each time
    path.write_text(yaml.safe_dump(data))
    run_id = loop.submit(env.blueprint("long", config=conf, ajetd="gpus: 0"))
    flag = loop.until_done(run_id)
    assert flag["status"] == "succeeded"
    records = len(loop.run(run_id).history)
    assert records >= 30
    journal = [text for _, text in loop.events(run_id) if text.startswith("validation:")]
    assert journal and journal[0].startswith("validation: ") and ", the first" in journal[0]
    assert all(": new best mean_reward" in text for text in journal[1:]), journal
    text = (env.tmp / "results" / "long" / "results.md").read_text()
    timeline = text.split("## Timeline", 1)[1].split("\n## ", 1)[0]
    said = [line for line in timeline.splitlines() if "validation:" in line]
    bests = len(journal) - 1  # the first line, then the new bests: their first and last
    assert len(said) == 1 + (bests if bests <= FOLD_AFTER else 2), (journal, said)
    assert "run ended: succeeded" in timeline and "trial 1 started" in timeline


_EVENT_LINES = st.sampled_from(
    [
        "trial {n} started in tmux session ajet_x",
        "trial {n} ended: exit code {k}",
        "trial {n} failed; relaunched with a fix: batch size {k}",
        "stopping: time_limit (after {k} s)",
        "sent SIGINT ({k})",
        "attention: no output for {k} s",
        "run ended: failed: exit code {k}",
    ]
)
_REPEATED = st.sampled_from(
    ["validation: {k} record(s)", "waiting for GPU(s): {k} free of {n}", "cuda_oom: step {k}"]
)


@settings(max_examples=200, deadline=None)
@given(
    journal=st.lists(
        st.tuples(st.booleans(), _EVENT_LINES | _REPEATED, st.integers(0, 200), st.integers(1, 9)),
        max_size=150,
    )
)
def test_what_happened_is_never_folded_only_what_repeats(
    journal: list[tuple[bool, str, int, int]],
) -> None:
    """Lines alike but for their numbers are folded only where they repeat (a read, a wait, a
    finding): a trial's start or end, a fix, a relaunch, a stop, a signal, attention and the
    end each show, though `trial 2 ended: exit code 137` and `trial 3 ended: exit code 1`
    differ only in numbers (walk93 review)."""
    events = [(float(i), form.format(n=n, k=k)) for i, (_, form, k, n) in enumerate(journal)]
    lines = folded(events, JOURNAL)
    happened = [text for _, text in events if any(w in text for w in _WHAT_HAPPENED)]
    shown = [line.split(": ", 1)[1] for line in lines]
    if len(lines) <= MAX_LINES:
        assert [t for t in shown if any(w in t for w in _WHAT_HAPPENED)] == happened
    kinds = Counter(kind_of(text) for _, text in events if text not in happened)
    for kind, count in kinds.items():
        said = [t for t in shown if kind_of(t.split(" (the last of ")[0]) == kind]
        assert len(said) <= (count if count <= FOLD_AFTER else 2) or len(lines) > MAX_LINES


_WHAT_HAPPENED = ("trial ", "stopping", "SIGINT", "attention", "run ended")


def test_trial_ends_that_differ_in_numbers_are_two_events() -> None:
    events = [(float(i), f"trial {i} ended: exit code {137 if i % 2 else 1}") for i in range(8)]
    events += [(10.0 + i, f"validation: {i} record(s)") for i in range(8)]
    lines = folded(events, JOURNAL)
    assert sum("ended: exit code" in line for line in lines) == 8, lines
    assert sum("validation:" in line for line in lines) == 2, lines
