"""Live reading equals offline reading, on every excerpt of the corpus of real failure logs.

`ajetd diagnose FILE` reads a whole log; the daemon reads a running trial's log as tmux's
`pipe-pane` appends to it: through a pty (every `\\n` is `\\r\\n`), in pieces cut anywhere (a
line, a wrapped message or a traceback split across reads and ticks), sometimes paused in the
middle of a line, with colours and progress bars. Whatever the cut, the findings must be
those of the whole file; the dresses a terminal adds must not change the root cause.
"""

from __future__ import annotations

import random
from functools import cache
from pathlib import Path

import pytest
import yaml
from ahocorasick_rs import BytesAhoCorasick, MatchKind
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.core.finding import Finding
from ajetd.diagnosis.catalogue import SHAPE_WORDS, TRIGGERS
from ajetd.diagnosis.live import LiveScans
from ajetd.diagnosis.stream import StreamDiagnoser, _after_redraws, diagnose_chunks
from conftest import Env, wait_for

CORPUS = Path(__file__).parent / "data" / "corpus"
FILES = sorted(CORPUS.glob("*/*.log"))


def _body(path: Path) -> bytes:
    data = path.read_bytes()
    return data[data.find(b"\n") + 1 :]


@cache
def _offline() -> dict[Path, tuple[bytes, list[tuple[str, int, int, str]]]]:
    """Each excerpt's bytes and its findings read whole, as `ajetd diagnose` reads them."""
    return {p: (_body(p), _sig(diagnose_chunks([_body(p)]))) for p in FILES}


def _sig(findings: list[Finding], counts: bool = True) -> list[tuple[str, int, int, str]]:
    return [(f.kind, f.line, f.count if counts else 0, f.evidence) for f in findings]


def _first(findings: list[Finding]) -> str | None:
    return findings[0].kind if findings else None


def _pieces(data: bytes, rng: random.Random, count: int) -> list[bytes]:
    cuts = sorted(rng.sample(range(1, len(data)), min(count, len(data) - 1)))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


def _through_a_pty(data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32), cuts=st.sampled_from([1, 3, 12, 60, 400]), pty=st.booleans())
def test_every_excerpt_read_in_pieces_gives_the_findings_of_the_whole_file(
    seed: int, cuts: int, pty: bool
) -> None:
    rng = random.Random(seed)
    differ = []
    for path, (body, whole) in _offline().items():
        data = _through_a_pty(body) if pty else body
        if _sig(diagnose_chunks(_pieces(data, rng, cuts))) != whole:
            differ.append(path.relative_to(CORPUS))
    assert not differ, differ


def _coloured(body: bytes) -> bytes:
    return b"\n".join(
        b"\x1b[1;31m" + line + b"\x1b[0m" if line else line for line in body.split(b"\n")
    )


def _redrawn(body: bytes) -> bytes:
    """A progress bar drawn and redrawn with `\\r` before each line (the line is what stays)."""
    return b"\n".join(
        b"Loading 10%\rLoading 99%\r" + line if line else line for line in body.split(b"\n")
    )


DRESSES = {
    "colour codes around every line": _coloured,
    "a progress bar redrawn before every line": _redrawn,
    "a last line without its newline": lambda body: body.rstrip(b"\n"),
    "the script's exit line glued to a last line without its newline": lambda body: (
        body.rstrip(b"\n") + b"[ajetd] trial 1 exited with code 1\n"
    ),
    "a line longer than a reader keeps, first": lambda body: b"x" * 70_000 + b"\n" + body,
    "a progress bar redrawn 6000 times, first": lambda body: (
        b"\r".join(b"step %d loss: 0.5" % i for i in range(6000)) + b"\r\n" + body
    ),
}


@settings(max_examples=2, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_a_terminals_dress_does_not_change_the_root_cause(seed: int) -> None:
    rng = random.Random(seed)
    differ = []
    for path, (body, whole) in _offline().items():
        for name, dress in DRESSES.items():
            data = _through_a_pty(dress(body))
            found = diagnose_chunks(_pieces(data, rng, 20))
            if _first(found) != (whole[0][0] if whole else None):
                differ.append(f"{path.relative_to(CORPUS)}: {name}: {_first(found)}")
    assert not differ, differ


def test_pieces_longer_than_a_line_keeps_are_read_as_the_whole_line_is() -> None:
    error = b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB "
    line = error + b"y" * 70_000 + b"\n"
    bar = b"\r".join(b"step %d loss: 0.5" % i for i in range(6000))
    redrawn = bar + b"\rRuntimeError: CUDA error: an illegal memory access was encountered\n"
    for data, kind in ((line, "cuda_oom"), (redrawn, "cuda_error")):
        assert _first(diagnose_chunks([data])) == kind
        for cut in (100, 50_000, 68_000, len(data) - 3):
            assert _first(diagnose_chunks([data[:cut], data[cut:]])) == kind


def test_ajetds_own_line_glued_to_a_line_without_its_newline_is_not_the_programs() -> None:
    """The script's exit line after a last line printed without its newline, a Slurm
    follower's note in the middle of a line: the program's text before it is read alone."""
    for own in (b"trial 1 exited with code 1", b"could not pass SIGINT on to job 7: timed out"):
        text = b"step 3\r\nKeyError: 'model'[ajetd] " + own + b"\r\n"
        found = diagnose_chunks([text])
        assert [(f.kind, f.line, f.evidence) for f in found] == [
            ("unknown_traceback", 2, "KeyError: 'model'")
        ]


def test_a_message_wrapped_in_two_is_one_whichever_read_brings_its_second_line() -> None:
    text = (
        b"[rank0]: AssertionError: local_world_size (8) must be less than or equal to the "
        b"number\r\n[rank0]: of visible devices (0).\r\n"
    )
    whole = _sig(diagnose_chunks([text]))
    assert whole[0][3].endswith("number of visible devices (0).")
    for cut in range(1, len(text)):
        assert _sig(diagnose_chunks([text[:cut], text[cut:]])) == whole, cut


def test_a_message_on_the_line_after_its_class_is_one_whichever_read_brings_it() -> None:
    # NVIDIA-NeMo/RL#1112: `ValueError: ` alone, its message on the next line; a reader of the
    # running output holds the first line until the next comes, at every cut, through a pty
    text = _through_a_pty(_body(CORPUS / "config_error" / "nemorl-1112.log"))
    whole = _sig(diagnose_chunks([text]))
    assert [kind for kind, *_ in whole] == ["config_error"]
    for cut in range(1, len(text)):
        assert _sig(diagnose_chunks([text[:cut], text[cut:]])) == whole, cut


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32), pty=st.booleans())
def test_a_pause_anywhere_reads_as_diagnose_of_the_output_so_far(seed: int, pty: bool) -> None:
    """Where a running program stops printing (mid-line, mid-traceback, after a wrapped
    message's first line), a look at the stream equals the offline reading of what was printed,
    and the stream reads on unchanged."""
    rng = random.Random(seed)
    differ = []
    for path, (body, whole) in _offline().items():
        data = _through_a_pty(body) if pty else body
        stream, done = StreamDiagnoser(), 0
        for cut in sorted(rng.sample(range(1, len(data) + 1), min(3, len(data)))):
            stream.feed(data[done:cut])
            done = cut
            if _sig(stream.peek()) != _sig(diagnose_chunks([data[:cut]])):
                differ.append(f"{path.relative_to(CORPUS)} at byte {cut}")
        stream.feed(data[done:])
        if _sig(stream.close()) != whole:
            differ.append(f"{path.relative_to(CORPUS)}: read on after a look")
    assert not differ, differ


def test_a_running_trials_log_shows_what_diagnose_says_when_it_pauses(tmp_path: Path) -> None:
    """The daemon's reader (`LiveScans`) on a log growing in pieces: after each pause the
    findings it shows are `diagnose` of the log so far, root cause first; at the end, the
    whole file's."""
    rng = random.Random(12)
    differ = []
    for number, (path, (body, whole)) in enumerate(_offline().items()):
        data, key, live = _through_a_pty(body), ("r", number), LiveScans()
        log = tmp_path / f"{number}.log"
        log.write_bytes(b"")
        shown: tuple[Finding, ...] = ()
        for piece in _pieces(data, rng, 4):
            with open(log, "ab") as handle:
                handle.write(piece)
            for seen in (live.scan(key, log, 0.0), live.paused(key, log.stat().st_size)):
                shown = seen.findings if seen is not None else shown
            offline = diagnose_chunks([log.read_bytes()])  # the counts are not kept current
            if _sig(list(shown), counts=False) != _sig(offline, counts=False):
                differ.append(f"{path.relative_to(CORPUS)}: shown {[f.kind for f in shown]}")
        if _sig(live.finish(key, log) or []) != whole:
            differ.append(f"{path.relative_to(CORPUS)}: at its end")
    assert not differ, differ


def test_a_trials_reader_is_let_go_once_the_next_trial_is_read(tmp_path: Path) -> None:
    """A trial that ended without a failure to diagnose (exit 0, a hang stopped, a stop) has
    no `finish`: its reader (up to a line still arriving, a held line and 4096 quiet lines)
    goes when the run's next trial is read, not when the run ends."""
    live = LiveScans()
    for number in (1, 2, 3):
        log = tmp_path / f"trial-{number}.log"
        log.write_bytes(b"step 1\nstill going")
        live.scan(("r", number), log, 0.0)
    live.scan(("other", 1), log, 0.0)
    assert [live.started(("r", n)) for n in (1, 2, 3)] == [False, False, True]
    assert live.started(("other", 1))


def test_a_program_line_holding_ajetds_prefix_keeps_its_own_text() -> None:
    """Only ajetd's line glued at the end of a line is cut off, not the program's own text
    that happens to hold `[ajetd] ` (a blueprint's directive it quotes)."""
    text = (
        b"ValueError: [ajetd] gpus: 0 refused: No space left on device"
        b"[ajetd] trial 1 exited with code 1\n"
    )
    found = diagnose_chunks([text])
    assert [(f.kind, f.evidence) for f in found] == [
        ("disk_full", "ValueError: [ajetd] gpus: 0 refused: No space left on device")
    ]


def test_a_kind_read_only_from_a_line_that_may_go_on_is_said_to_be_unsure(tmp_path: Path) -> None:
    """A complete exception line that stops mid-sentence is read as it stands while its next
    line is awaited: the kind it alone gives is as provisional as one read at a pause (the
    next line may make it another), and said so; a kind read before it is not."""
    log = tmp_path / "trial-1.log"
    log.write_bytes(
        b"OSError: [Errno 28] No space left on device\n"
        b"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB on device number\n"
    )
    seen = LiveScans().scan(("r", 1), log, 0.0)
    assert seen is not None
    assert [f.kind for f in seen.findings] == ["disk_full", "cuda_oom"]
    assert seen.unsure == frozenset({"cuda_oom"})


@given(st.binary(max_size=64).map(lambda b: bytes(b"ab\r\n"[c % 4] for c in b)))
def test_redraws_are_read_line_by_line_as_a_person_sees_them(block: bytes) -> None:
    """The user kinds' view of `\\r` redraws visits only the lines that hold one; it must equal
    the rule stated per line: each line is the text after its last `\\r`, trailing ones
    dropped."""
    per_line = b"\n".join(
        line.rstrip(b"\r").rsplit(b"\r", 1)[-1] if b"\r" in line else line
        for line in block.split(b"\n")
    )
    assert _after_redraws(block) == per_line


# the trigger words' lines as the rule states them, found by the default (NFA) automaton: for
# each line, the words on it, a number word only where no digit touches it
_WORDS = (*TRIGGERS, *SHAPE_WORDS)
_NFA = BytesAhoCorasick(list(_WORDS), matchkind=MatchKind.Standard)


def _lines_by_the_rule(block: bytes) -> list[tuple[int, int, frozenset[bytes]]]:
    lines: dict[int, tuple[int, set[bytes]]] = {}
    for index, pos, stop in _NFA.find_matches_as_indexes(block.lower(), overlapping=True):
        word = _WORDS[index]
        touched = (pos and block[pos - 1 : pos].isdigit()) or block[stop : stop + 1].isdigit()
        if word.isdigit() and touched:
            continue
        start = block.rfind(b"\n", 0, pos) + 1
        lines.setdefault(start, (block.find(b"\n", pos), set()))[1].add(word)
    return [(start, end, frozenset(words)) for start, (end, words) in sorted(lines.items())]


_HOSTILE = st.lists(
    st.one_of(
        st.sampled_from([*TRIGGERS[:40], b"401", b"403", b"\n", b"\r", b" ", b"7", b"12", b":"]),
        st.binary(max_size=6),
    ),
    max_size=40,
).map(lambda parts: b"".join(parts) + b"\n")


def _corpus_excerpt(seed: int) -> bytes:
    rng = random.Random(seed)
    data = _corpus()[rng.randrange(len(_corpus()))]
    at = rng.randrange(len(data) + 1)
    return data[at : at + rng.randrange(8000)] + b"\n"


@cache
def _corpus() -> list[bytes]:
    return [path.read_bytes() for path in FILES]


@settings(max_examples=300)
@given(st.one_of(_HOSTILE, st.integers(0, 10**6).map(_corpus_excerpt)))
def test_the_trigger_lines_are_those_the_rule_names(block: bytes) -> None:
    """The scan's search (a DFA, the words of a line kept as indexes with an 'all digit-blind'
    flag) must find exactly the lines and words that the rule names, found by the default
    automaton: hostile bytes (number words beside digits, words split by \\r, bytes that are
    not UTF-8) and corpus excerpts cut anywhere."""
    assert StreamDiagnoser()._trigger_lines(block) == _lines_by_the_rule(block)


NET_WRAPPED = """(TaskRunner pid=4242, ip=10.3.7.21) Traceback (most recent call last):
(TaskRunner pid=4242, ip=10.3.7.21)   File "/root/agentjet/ajet/task_reader/hf_reader.py", line 41, in __init__
(TaskRunner pid=4242, ip=10.3.7.21)     ds = datasets.load_dataset("openai/gsm8k", "main")
(TaskRunner pid=4242, ip=10.3.7.21) ConnectionError: Couldn't reach 'openai/gsm8k' on the Hub (ProxyError)
ray.exceptions.RayTaskError(ConnectionError): ray::TaskRunner.run() (pid=4242, ip=10.3.7.21, \
actor_id=77aa, repr=<ajet.backbone.main_verl.TaskRunner object at 0x7f11>)"""


def test_a_ray_wrapper_after_its_root_cause_is_read_as_what_it_wraps(daemon_env: Env) -> None:
    """Walk 89, F15: the driver's `RayTaskError(ConnectionError)` after the worker's network
    error was listed as a second finding, `unknown_traceback`, "an exception ajetd does not
    recognise", in the run's trials.md, though `ajetd diagnose` reads it as the network
    error's wrapper: the run's own diagnosis reads wrappers as what they wrap too."""
    env = daemon_env
    fail = {"text": NET_WRAPPED, "at_step": 2, "unless_env": {"AJETD_TEST_NEVER": "1"}}
    run_id = env.submit(env.blueprint("net", config=env.config("net", fail=fail)))
    status = env.wait_done(run_id)
    assert status["status"] == "failed", status
    assert [f["kind"] for f in status["diagnosis"]] == ["network"], status["diagnosis"]
    trials = (env.tmp / "results" / "net" / "trials.md").read_text()
    assert "unknown_traceback" not in trials, trials


@pytest.mark.parametrize("kind", ["agentjet", "old_agentjet", "nemo_rl"])
def test_records_are_read_while_the_run_prints_not_at_the_next_full_look(
    env: Env, kind: str
) -> None:
    """Walk 89, F13: on the seed's deep-check schedule (30 s ... 16 min, as a user's daemon
    runs) a new record was read only at the run's next full look: 18 s late for AgentJet, 28 s
    for NeMo-RL, and for NeMo-RL up to the 16-minute deep check on a long run; the plateau
    stop came as late. The light tick that reads new output now reads the metrics too where
    their source moved (NeMo-RL's output: at most every 5 s). The program holds until the
    record is seen (15 s allowed: the old lag was longer, the new one is about 1.5 s). An
    AgentJet that writes no val file and prints its records (`old_agentjet`) is read as
    NeMo-RL's output is."""
    env.start_daemon("--backoff-scale", "1")
    hold = env.tmp / f"{kind}-may-end"
    if kind == "agentjet":
        config = env.config("seen", steps=2, hold_until=str(hold))
        run_id = env.submit(env.blueprint("seen", config=config))
    elif kind == "old_agentjet":
        config = env.config("seen", steps=2, hold_until=str(hold), old_agentjet=True)
        run_id = env.submit(env.blueprint("seen", config=config))
    else:
        command = (
            "python examples/run_grpo.py --config examples/configs/grpo_fake.yaml "
            "grpo.max_num_steps=40 grpo.val_period=2"
        )
        config = "examples/configs/grpo_fake.yaml"
        path = env.codebase / config
        data = yaml.safe_load(path.read_text())
        data.setdefault("fake", {})["step_time"] = 0.4  # prints on for 16 s
        path.write_text(yaml.safe_dump(data))
        run_id = env.submit(env.blueprint("seen", config=config, command=command))
    seen = wait_for(
        lambda: env.status(run_id).get("metrics") or None, timeout=15, what="a first record"
    )
    assert env.status(run_id)["state"] == "running", seen  # read while it runs
    hold.touch()
    env.cli("stop", run_id)
