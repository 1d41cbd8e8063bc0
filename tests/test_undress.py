"""A log file's wrapping taken off (`core.undress`): a container runtime's records and a hard
wrap at a terminal's width read as the lines the program printed; a pure function, the same
however the output is cut into reads, in bounded memory and linear time."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.core.containerlog import record
from ajetd.core.hardwrap import MAX_JOINED_BYTES, MAX_PIECES, HardWrap
from ajetd.core.undress import Undress, undress
from ajetd.diagnosis.stream import diagnose_chunks

HERE = Path(__file__).parent


def _bench() -> Any:
    path = HERE.parent / "bench" / "logshapes.py"
    spec = importlib.util.spec_from_file_location("bench_logshapes_undress", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


LOGSHAPES = _bench()
CONTAINER = ("docker_json", "docker_json_parts", "cri", "cri_parts")
_TEXT_LINE = st.text(st.characters(codec="utf-8", blacklist_characters="\n"), max_size=120)


def _log(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def _in_pieces(data: bytes, cuts: list[int]) -> bytes:
    """`undress` of `data` fed in pieces cut at `cuts`, complete lines at a time."""
    undresser, out, partial = Undress(), [], b""
    for piece in (data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)):
        partial += piece
        cut = partial.rfind(b"\n") + 1
        out.append(undresser.feed(partial[:cut])[0])
        partial = partial[cut:]
    out.append(undresser.flush()[0])
    return b"".join(out)


@given(st.lists(_TEXT_LINE, max_size=30), st.sampled_from(CONTAINER))
def test_a_container_runtimes_records_are_the_lines_they_hold(lines: list[str], dress: str) -> None:
    """Docker's JSON records and CRI's, a line in one record or in parts: exactly the text
    (but for carriage returns, which `\\r` redraws read anyway, and lines a hard wrap may
    join: none of these is wider than 120, and lines of the dress are many)."""
    log = _log(lines)
    assert undress(LOGSHAPES.TRANSFORMS[dress](log)) == log or _wrapped_like(log)


def _wrapped_like(log: bytes) -> bool:
    """Whether `undress` reads `log` itself as hard-wrapped (then its records are too)."""
    return undress(log) != log


@settings(max_examples=60)
@given(
    st.lists(_TEXT_LINE, min_size=1, max_size=30),
    st.sampled_from(CONTAINER),
    st.lists(st.integers(1, 10_000), max_size=6),
)
def test_the_same_lines_however_the_output_is_cut(
    lines: list[str], dress: str, at: list[int]
) -> None:
    data = LOGSHAPES.TRANSFORMS[dress](_log(lines))
    cuts = sorted({c % len(data) for c in at} - {0})
    assert _in_pieces(data, cuts) == undress(data)


_WORD = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12)
_PROSE = st.lists(_WORD, min_size=1, max_size=40).map(" ".join)


def _wrap(log: list[str], width: int, indent: str) -> bytes:
    out = []
    for line in log:
        pieces = [line[:width]]
        more = width - len(indent)
        pieces += [indent + line[i : i + more] for i in range(width, len(line), more)]
        out.extend(pieces)
    return _log(out)


@settings(max_examples=150)
@given(
    st.lists(_PROSE, max_size=25),
    st.sampled_from([60, 80, 100, 120, 200]),
    st.sampled_from(["", "  ", "    "]),
    st.lists(st.integers(1, 100_000), max_size=5),
)
def test_a_hard_wrapped_log_is_read_as_the_lines_it_was(
    lines: list[str], width: int, indent: str, at: list[int]
) -> None:
    """Lines of prose cut at a width (a continuation indent or none): the lines they were,
    however the output is cut into reads, once the width is shown (a first line long enough
    for three different pieces); lines exactly as wide as the width are no pieces, and are
    left out here (nothing tells them from one)."""
    letters = str.maketrans("0123456789", "ghijklmnop")  # (numbers are no difference)
    first = "".join(f"{i:03d}w".translate(letters) for i in range(3 * width // 4 + 1))
    log = [first] + [line for line in lines if len(line) % (width - len(indent)) != 0]
    log = [line for line in log if len(line) != width]
    data = _wrap(log, width, indent)
    assert undress(data) == _log(log)
    cuts = sorted({c % len(data) for c in at} - {0})
    assert _in_pieces(data, cuts) == _log(log)


def test_a_logs_own_lines_are_no_pieces() -> None:
    """Lines as wide as each other in a log never wrapped: a table's rows padded to a width,
    a box Rich drew, progress reports alike but for their numbers, a frame and its source,
    an exception's line after another line, two lines as wide by chance: left as they are."""
    rows = [
        f"| step {i:4d} | loss {i / 7:8.4f} | lr 1e-4 | tokens {i * 4096:10d} |" for i in range(9)
    ]
    box = ["╭" + "─" * 70 + "╮", *("│ " + f"line {i}".ljust(68) + " │" for i in range(5))]
    reports = [
        f"Loading checkpoint shards: {i * 10:3d}% Completed | {i}/10 [00:0{i}<00:00]"
        for i in range(10)
    ]
    frames = [
        '  File "/usr/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1736, in f',
        "    return self._call_impl(*args, **kwargs)",
        '  File "/usr/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1747, in g',
        "    return forward_call(*args, **kwargs)",
    ]
    # two lines as wide by chance, the first followed by a line of its own: it ended there,
    # so it shows no width, and the second's next (the shell's line) is no piece of it
    chance = [
        "Exception ignored in: <function X.__del__ at 0x7f3144f34280>",
        "Traceback (most recent call last):",
        "<unprintable RuntimeError object>",
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "Segmentation fault (core dumped)",
    ]
    assert len(chance[0]) == len(chance[3]) == 60
    for log in (rows, box, reports, frames, chance):
        assert undress(_log(log)) == _log(log), log


def test_a_finding_in_a_wrapped_log_names_the_raw_line_it_begins_on() -> None:
    message = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.14 GiB of which 1.23 GiB is free. Including non-PyTorch memory, "
        "this process has 77.9 GiB memory in use."
    )
    log = [
        "step 1 loss 0.5",
        "Traceback (most recent call last):",
        '  File "t.py", line 3, in <module>',
        message,
    ]
    found = diagnose_chunks([_wrap(log, 80, "")])
    assert [(f.kind, f.line, f.evidence) for f in found] == [("cuda_oom", 4, message)]
    parts = LOGSHAPES.TRANSFORMS["cri_parts"](_log(["a", *log, "b"]))
    found = diagnose_chunks([parts[:100], parts[100:]])
    assert [(f.kind, f.line) for f in found] == [("cuda_oom", 1 + 1 + 1 + 1 + 1)]


def test_records_that_are_not_a_runtimes_are_text() -> None:
    assert record(b'{"log": 1, "stream": "stderr", "time": "t"}') is None
    assert record(b'{"msg": "KeyError", "level": "error"}') is None
    assert record(b'{"log": "x\\n", "stream": "stdin", "time": "t"}') is None
    assert record(b"2024-05-01T12:00:00.123456789Z stdout X text") is None
    assert record(b"2024-05-01 12:00:00 stdout F text") is None
    assert record(b'{"log":"a\\nb\\n","stream":"stdout","time":"t"}') == (b"a b", True)
    assert record(b"2024-05-01T12:00:00.1Z stderr P half") == (b"half", False)
    assert record(b"2024-05-01T12:00:00Z stdout F") == (b"", True)
    assert record(b"2024-05-01T12:00:00+02:00 stdout F:x a") == (b"a", True)
    assert record(b"{" + b"[" * 100_000) is None


def test_memory_is_bounded_and_time_linear() -> None:
    """A line of 4 MiB cut at 80 and one in 100,000 CRI parts: each kept to a bound, read in
    well under a second of this process's CPU time each."""
    prose = ("abcdefghij klmnop qrstuv wxyz0123 456789 " * 110_000)[:4_000_000]
    wrapped = _wrap(["x" * 79 + "0", "x" * 79 + "1", prose], 80, "")
    parts = (
        b"".join(
            b"2024-05-01T12:00:00Z stderr P %s\n" % prose[i : i + 40].encode()
            for i in range(0, 4_000_000, 40)
        )
        + b"2024-05-01T12:00:00Z stderr F end\n"
    )
    for data in (wrapped, parts):
        start = time.process_time()
        lines = undress(data).split(b"\n")
        assert time.process_time() - start < 2.0
        assert max(map(len, lines)) <= max(MAX_JOINED_BYTES + 80, 64 * 1024 + 16)
    wrap = HardWrap()
    wrap.feed(wrapped[: wrapped.index(b"\n", 80 * 200) + 1])
    assert wrap.held() <= MAX_PIECES


def test_undress_reads_a_corpus_excerpt_in_json_as_bare() -> None:
    data = LOGSHAPES.body(LOGSHAPES.CORPUS / "cuda_oom" / "aria-24.log")
    bare = diagnose_chunks([data])
    for dress in CONTAINER:
        found = diagnose_chunks([LOGSHAPES.TRANSFORMS[dress](data)])
        assert [(f.kind, f.evidence) for f in found] == [(f.kind, f.evidence) for f in bare]
    json.loads(LOGSHAPES.TRANSFORMS["docker_json"](data).split(b"\n")[0])
