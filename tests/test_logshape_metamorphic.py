"""The same failure printed in a different dress names the same root cause (a metamorphic check
over the corpus: `bench/logshapes.py` holds the transformations and prints the figures on every
excerpt; here, a sample of them, so that the suite stays quick).

Each transformation is one that real output shows (a pty's `\\r\\n`, tqdm redrawing its bar
before lines, colour codes, a prefix before every line from a logger, Ray, torchrun, srun,
Docker Compose, kubectl, the journal; a container runtime's log file, Docker's JSON records or
the CRI format, a long line in parts; a hard wrap at a terminal's width; healthy training
output around the excerpt or another worker's interleaved with it; tabs, trailing blanks,
bytes that are not UTF-8). What is held:
the first kind of a transformed excerpt is the bare excerpt's, but for the exceptions named
below, each for a reason that is the transformation's, not the reader's.
"""

from __future__ import annotations

import time
from functools import cache
from pathlib import Path

import pytest

from ajetd.core.termtext import ANSI_BYTES, DRESS_BYTES, strip_dress
from ajetd.diagnosis.stream import StreamDiagnoser, diagnose_chunks
from conftest import bench_module

LOGSHAPES = bench_module("logshapes")
EVERY = 4  # a quarter of the corpus for each transformation (the bench reads all of it)
EVERY_EMBEDDED = 50  # 5,000 or 10,000 lines of healthy output each: a 50th
# Exceptions (corpus path -> why): the transformation loses what the reading needs
LOST: dict[str, dict[str, str]] = {
    # the transcoding turns the Chinese `已杀死` (Killed) the excerpt ends with into `???`
    "latin1": {"host_oom/dreamerv3-203.log": "cp1252 has no Chinese: the text is gone"},
    # an exception whose message is on the next line(s) (`ValueError:` then the message,
    # `... is not` then `equal to ...`), another worker's line printed between them: nothing
    # tells which line goes on with which (the bare interleaving has no marks; under Ray's
    # marks a reader could follow one worker's lines, which `shape.continued` does not)
    "interleave": {
        "config_error/nemorl-1112.log": "message on the next line, another's line between",
        "config_error/starcoder-77.log": "message wrapped over lines, another's between",
    },
    "interleave_ray": {
        "config_error/nemorl-1112.log": "message on the next line, another worker's between",
        "config_error/starcoder-77.log": "message wrapped over lines, another worker's between",
    },
}
# Transformations the reader undoes only in part; a floor, not all (see bench/logshapes.py and
# `core.hardwrap`): a terminal's hard wrap splits a line anywhere, a phrase or an exception's
# class in two, and only the log's shape says the width (a line exactly as wide as the widest,
# several of them): the first wrapped line of a short excerpt, before any other shows the
# width, stays in pieces; nor does a line that ends there (its next one of its own) show it: a
# short log's two lines as wide by chance joined a segfault's line to the error before it
# (at 120 columns, 4 of 1091 excerpts whose width only such lines showed stay in pieces).
# Bare, on every excerpt, before `hardwrap`: wrap80 86.6 %, wrap200 98.9 %; after: see
# docs/benchmarks.md
WRAPPED_FLOOR = {
    "wrap80": 0.95,
    "wrap100": 0.96,
    "wrap120": 0.96,
    "wrap200": 0.99,
    "wrap80_indent": 0.93,
    "wrap120_indent": 0.96,
}
HELD = [name for name in LOGSHAPES.TRANSFORMS if name not in WRAPPED_FLOOR]


@cache
def _paths(every: int) -> tuple[Path, ...]:
    return tuple(LOGSHAPES.excerpts(every))


@cache
def _bare(path: Path) -> str:
    return str(LOGSHAPES.top1(LOGSHAPES.body(path)))


@cache
def _open_at_end(path: Path) -> bool:
    return bool(LOGSHAPES.open_at_end(LOGSHAPES.body(path)))


def _changed(name: str, every: int) -> dict[str, tuple[str, str]]:
    """The sampled excerpts whose first kind the transformation changes (path -> before,
    after), those open at the end left out where it adds lines after them."""
    change = LOGSHAPES.TRANSFORMS[name]
    out = {}
    for path in _paths(every):
        if name in LOGSHAPES.AFTER and _open_at_end(path):
            continue
        now = LOGSHAPES.top1(change(LOGSHAPES.body(path)))
        if now != _bare(path):
            out[str(path.relative_to(LOGSHAPES.CORPUS))] = (_bare(path), now)
    return out


@pytest.mark.parametrize("name", HELD)
def test_a_dress_real_output_shows_keeps_the_root_cause(name: str) -> None:
    every = EVERY_EMBEDDED if name.startswith("embed") else EVERY
    changed = _changed(name, every)
    unexplained = {k: v for k, v in changed.items() if k not in LOST.get(name, {})}
    assert not unexplained, unexplained


@pytest.mark.parametrize("name", sorted(WRAPPED_FLOOR))
def test_hard_wrapped_lines_keep_the_root_cause_above_a_floor(name: str) -> None:
    paths = _paths(EVERY)
    changed = _changed(name, EVERY)
    assert 1 - len(changed) / len(paths) >= WRAPPED_FLOOR[name], changed


@pytest.mark.parametrize("name", [name for name in HELD if not name.startswith("embed")])
def test_a_dress_makes_no_healthy_output_a_failure(name: str) -> None:
    """Each transformation on the benign corpus (every other excerpt): no fatal or science
    finding, as bare (`bench/benign.py`); a container runtime's records too. Not the hard
    wrap: a warning's level cut from the rest of its line (`libibverbs: Warning: couldn't load
    driver ...`) leaves a line that reads as the failure it warns of where the excerpt's first
    wrapped line is that warning (no line before it shows the width)."""
    paths = sorted(LOGSHAPES.BENIGN.glob("*.log"))[::2]
    assert LOGSHAPES.false_findings(name, paths) == {}


def test_the_healthy_text_says_nothing_and_some_excerpts_are_open_at_the_end() -> None:
    """The text put around excerpts is healthy (no finding in 10,000 lines of it), and the
    excerpts left out where lines are added after them are few: a paste cut inside a traceback
    (read so only because the output ends there)."""
    assert not LOGSHAPES.diagnose_chunks([LOGSHAPES._healthy_run(2 * LOGSHAPES.EMBED_LINES)])
    paths = _paths(EVERY)
    open_ = [p for p in paths if _open_at_end(p)]
    assert len(open_) <= 0.05 * len(paths), open_


def test_each_transformation_changes_the_bytes() -> None:
    """No transformation is the identity on an excerpt with a traceback and a character
    outside ASCII (a check of the check)."""
    data = LOGSHAPES.body(LOGSHAPES.CORPUS / "cuda_oom" / "aria-24.log") + "✗ café\n".encode()
    for name, change in LOGSHAPES.TRANSFORMS.items():
        assert change(data) != data, name


# The classes the reader was changed for, each on its own (the figures above hold them over
# the corpus; these say which rule does it).


@pytest.mark.parametrize(
    ("dressed", "bare"),
    [
        ("2025-01-03 12:00:01.123 | ERROR    | trainer:run:42 - KeyError: 'x'", "KeyError: 'x'"),
        ("2025-01-03 12:00:01.123 | SUCCESS  | __main__:<module>:7 - done", "done"),
        ("trainer-1  | KeyError: 'x'", "KeyError: 'x'"),
        ('trainer_1  |   File "x.py", line 1, in f', '  File "x.py", line 1, in f'),
        ("[pod/trainer-0/main] KeyError: 'x'", "KeyError: 'x'"),
        ("Jan 03 12:00:01 gpu-node-7 python3[48213]: KeyError: 'x'", "KeyError: 'x'"),
    ],
)
def test_more_dress_is_stripped(dressed: str, bare: str) -> None:
    assert strip_dress(dressed) == bare


@pytest.mark.parametrize(
    "text",
    [
        "loss | 0.5",  # a table's row: no replica number
        "step-1 |",  # nothing after the bar but a blank is still a dress... of nothing
        "x:y:12 -> z",
        "Jan 03 is a date",
    ],
)
def test_text_that_is_no_dress_stays(text: str) -> None:
    stripped = strip_dress(text)
    assert stripped == text or (text == "step-1 |" and stripped == "")


def test_the_new_dress_and_colour_codes_are_stripped_in_linear_time() -> None:
    """64 KiB lines made of a dress's own parts, and of colour codes that never end: each read
    in well under a second of this process's CPU time."""
    units = ["a:b:1 -", "a-1 ", "a-1  |", "[pod/a/", "[pod/a/b]", "Jan 03 12:00:01 h ", "a:" * 3]
    hostile = [(unit * (65536 // len(unit) + 1))[:65536] for unit in units]
    codes = [
        b"\x1b[" + b"0" * 65536,
        b"\x1b]" * 32768,
        b"\x1b[1;" * 16384,
        b"\x1b]0;" + b"a" * 65536,
    ]
    start = time.process_time()
    for line in hostile:
        strip_dress(line)
        DRESS_BYTES.sub(b"", line.encode())
    for block in codes:
        ANSI_BYTES.sub(b"", block + b"\n" + block)
    assert time.process_time() - start < 1.0


def _first(text: bytes) -> tuple[str, str] | None:
    found = diagnose_chunks([text])
    return (found[0].kind, found[0].evidence) if found else None


def test_colour_codes_inside_a_phrase_do_not_hide_its_words() -> None:
    """Rich colours levels and numbers in the middle of a line: the trigger words are looked
    for in the output without its codes."""
    text = (
        b"(WorkerDict pid=\x1b[1;36m804460\x1b[0m) LLVM \x1b[1;31mERROR\x1b[0m: Failed to compute\n"
    )
    assert _first(text) == ("cuda_error", "LLVM ERROR: Failed to compute")


@pytest.mark.parametrize(
    "other",
    [
        b"INFO:Total number of training events: 76860",
        b"wandb: Syncing run exp-3",
        b"step:40 - actor/pg_loss:0.012 - actor/grad_norm:0.8",
        b"WARNING: the learning rate is low",
    ],
)
def test_another_process_line_in_the_middle_of_a_traceback_does_not_end_it(other: bytes) -> None:
    text = (
        b"Traceback (most recent call last):\n"
        b'  File "train.py", line 3, in <module>\n' + other + b"\n"
        b"    trainer = Trainer(cfg)\n"
        b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    assert [f.kind for f in diagnose_chunks([text])] == ["cuda_oom"]


@pytest.mark.parametrize(
    "end",
    [b"socket.timeout: timed out", b"KeyError: 'x'", b"_queue.Empty", b"MyError", b"Killed"],
)
def test_an_exception_line_still_ends_a_traceback(end: bytes) -> None:
    text = b'Traceback (most recent call last):\n  File "a.py", line 1, in f\n' + end + b"\n"
    stream = StreamDiagnoser()
    stream.feed(text)
    assert not stream.diagnoser.in_traceback


def test_one_line_of_another_process_inside_a_headerless_paste_does_not_end_it() -> None:
    """A paste from the frames down (no header), another worker's line between them: read on
    to the exception line; two lines not its own in a row end it (a stack printed and gone on
    from says nothing)."""
    frames = (
        b'  File "registry.py", line 140, in get\n'
        b"(WorkerDict pid=2) step:3 - loss:0.5\n"
        b"    reward_cls = cls._registry[reward_fn_id]\n"
        b"KeyError: 'summarization_with_hint'\n"
    )
    assert [f.kind for f in diagnose_chunks([frames])] == ["config_error"]
    deeper = (  # (its first frame unindented, the next indented, a line not its own before each)
        b'File "model.py", line 75, in get_llm\n'
        b"INFO:Total number of training events: 76860\n"
        b"    base_class = AutoModel._model_mapping[type(config)]\n"
        b"Detected CUDA files, patching ldflags\n"
        b'  File "auto_factory.py", line 771, in __getitem__\n'
        b"[2023-07-13 14:51:33,751] [WARNING] [runner.py:191] Unable to find hostfile\n"
        b"    model_type = self._reverse_config_mapping[key.__name__]\n"
        b"Detected CUDA files, patching ldflags\n"
        b"KeyError: 'Qwen2RMConfig'\n"
    )
    assert [f.kind for f in diagnose_chunks([deeper])] == ["config_error"]
    printed = (
        b'  File "loop.py", line 12, in step\n'
        b"    log_stack()\n"
        b"step 3 loss 0.5\n"
        b"step 4 loss 0.4\n"
        b"KeyError is a class name we print\n"
    )
    assert diagnose_chunks([printed]) == []


def test_blanks_after_an_exception_line_leave_it_one() -> None:
    text = b'  File "a.py", line 1, in f\n    assert isinstance(w, DTensor)  \t \nAssertionError  \t \n'
    assert _first(text) == ("unknown_traceback", "AssertionError")


def test_a_wrapped_message_after_a_progress_bar_is_read_whole() -> None:
    """tqdm's bar left on the line the exception was printed after: the message's second line,
    without the bar, is still its own."""
    text = (
        b"\r 17%|##        | 17/100 [00:17<01:40, 1.02it/s]AssertionError: Check batch related "
        b"parameters. train_batch_size is not\nequal to micro_batch_per_gpu * gradient_acc_step "
        b"* world_size 64 != 4 * 8 * 1\n"
    )
    assert [f.kind for f in diagnose_chunks([text])][:1] == ["config_error"]
