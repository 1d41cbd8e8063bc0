"""Real HEALTHY output gets no fatal finding (the benign corpus), and the classes of line that
made a healthy log look failed stay read as what they are.

Each excerpt is `tests/data/benign/<name>.log`: what a program printed while nothing had failed
(or the part of a failed run's output before its failure, the first line says so), the first
line naming its public source (bench/heldout/benign94-queries.md: how each was chosen, blind).
A fatal or science finding there would make ajetd doubt a run that exited 0 ("its output shows
KIND: it may not have finished its work", `daemon.ending`) or name a wrong root cause.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_diagnosis import CORPUS as PHRASINGS

from ajetd.core.finding import Finding
from ajetd.core.termtext import strip_dress
from ajetd.daemon.ending import FATAL_SHOWN
from ajetd.diagnosis.catalogue import BY_NAME, Severity
from ajetd.diagnosis.shape import EXCEPTION_LINE, continued
from ajetd.diagnosis.stream import StreamDiagnoser, diagnose_chunks, diagnose_text

BENIGN = Path(__file__).parent / "data" / "benign"
FILES = sorted(BENIGN.glob("*.log"))
HEADER = re.compile(
    r"^# source: (?P<repo>[\w.-]+/[\w.-]+)(?:#(?P<number>\d+))? (?:\S.* )?"
    r"https://github\.com/(?P=repo)/\S+(?: — .+)?$"
)


def _header(path: Path) -> re.Match[str]:
    match = HEADER.match(path.read_text(errors="replace").split("\n", 1)[0])
    assert match, f"{path.name}: first line must be `# source: owner/repo#N <url>[ — note]`"
    return match


def _body(path: Path) -> bytes:
    data = path.read_bytes()
    return data[data.find(b"\n") + 1 :]


def _severe(findings: list[Finding]) -> list[tuple[str, str, int, str]]:
    return [(f.kind, f.severity, f.line, f.evidence) for f in findings if f.severity in FATAL_SHOWN]


def test_every_excerpt_names_its_source() -> None:
    for path in FILES:
        _header(path)
        assert _body(path).strip(), f"{path}: no excerpt under the source line"


def test_the_benign_corpus_is_large_and_varied_enough() -> None:
    repos = Counter(_header(p)["repo"].lower() for p in FILES)
    assert len(FILES) >= 60 and len(repos) >= 6, repos
    for stack in ("vllm-project/vllm", "verl-project/verl", "sgl-project/sglang", "nvidia/nccl"):
        assert repos[stack] >= 5, repos
    for stack in (
        "ray-project/ray",
        "nvidia-nemo/rl",
        "deepspeedai/deepspeed",
        "modelscope/agentjet",
    ):
        assert repos[stack] >= 1, repos


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_healthy_output_gets_no_fatal_finding(path: Path) -> None:
    """Read whole (`ajetd diagnose`, a trial's end) and as a running trial's reader shows it at
    a pause after every line (`StreamDiagnoser.peek`, what `LiveScans.paused` reads)."""
    body = _body(path)
    assert _severe(diagnose_chunks([body])) == []
    stream = StreamDiagnoser()
    for line in body.splitlines(keepends=True):
        stream.feed(line)
        assert _severe(stream.peek()) == [], line
    assert _severe(stream.close()) == []


# -- the classes fixed ---------------------------------------------------------------------

# each fatal or science kind's phrasings that name it alone (test_diagnosis's corpus)
_SEVERE_LINES = [
    (kind, text)
    for kind, texts in PHRASINGS.items()
    if BY_NAME[kind].severity in (Severity.FATAL, Severity.SCIENCE)
    for text in texts
    if "\n" not in text and [f.kind for f in diagnose_text(text)] == [kind]
]
# what programs print before a warning: vLLM's and logging's levels, a library's own name
# (`wandb: WARNING`, `libibverbs: Warning:`), Ray's dress. Not Python's `warnings` format
# (`x.py:83: UserWarning: ...`) nor a logger's name then its level (`__main__ - WARNING - `):
# programs warn so of the failure they go on to (ray#46733's `UserWarning: Ray Client
# connection timed out`, olmocr#267's endless wait for its vLLM server), so they stay failures.
_WARNING_DRESSES = [
    "WARNING 07-27 12:00:01 [config.py:380] ",
    "WARNING:root:",
    "[2024-01-26 08:48:31,543] torch._dynamo.convert_frame: [WARNING] ",
    "(WorkerDict pid=59715) WARNING 03-04 17:15:40 config.py:380] ",
]


@st.composite
def _warned(draw: st.DrawFn) -> tuple[str, str]:
    kind, text = draw(st.sampled_from(_SEVERE_LINES))
    if draw(st.booleans()):
        dress = draw(st.sampled_from(_WARNING_DRESSES))
    else:  # a program's own name, lower case (never an exception's class)
        name = draw(st.from_regex(r"[a-z][a-z0-9_.-]{0,20}", fullmatch=True))
        dress = f"{name}: " + draw(st.sampled_from(["Warning: ", "WARNING ", "WARNING: "]))
    return kind, dress + text


@settings(max_examples=300, deadline=None)
@given(_warned(), st.integers(min_value=0, max_value=3))
def test_a_failure_logged_as_a_warning_is_a_warning(case: tuple[str, str], before: int) -> None:
    """A line of a fatal or science kind that the program logged at warning level (it went on)
    is read as that kind (where its words are still read under the dress: a pattern anchored at
    the line's start is not) with severity `warning`, never fatal or science; once a line not
    logged so shows the kind, the finding has the kind's own severity (the failure itself)."""
    kind, line = case
    healthy = "".join(f"step:{i} - loss:0.5\n" for i in range(before))
    found = diagnose_text(healthy + line + "\n")
    assert _severe(found) == [], line
    assert {f.severity for f in found} <= {Severity.WARNING.value}, line
    plain = next(t for k, t in _SEVERE_LINES if k == kind)
    then = {f.kind: f.severity for f in diagnose_text(healthy + line + "\n" + plain + "\n")}
    assert then[kind] == BY_NAME[kind].severity.value, line


def test_a_kind_named_in_an_ignored_exception_is_kept_as_a_notice() -> None:
    """A DeepSpeed op that failed to build shows in LMFlow#471 only in the `__del__` Python
    ignored (`'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'`): still the finding,
    as a warning; after a failure of another kind it comes last."""
    ignored = _block(
        _IGNORED_IN[0], "AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'"
    )
    assert [(f.kind, f.severity) for f in diagnose_text(ignored)] == [("build_error", "warning")]
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert [f.kind for f in diagnose_text(ignored + oom)] == ["cuda_oom", "build_error"]


def test_libibverbs_warnings_are_no_missing_library() -> None:
    """libibverbs probes every provider it knows and says so of each one absent (byteps#313);
    the program goes on: a warning, not an import that failed."""
    path = BENIGN / "libibverbs-byteps-313.log"
    found = diagnose_chunks([_body(path)])
    assert [(f.kind, f.severity) for f in found] == [("import_error", "warning")]
    assert (
        diagnose_text(
            "ImportError: libibverbs.so.1: cannot open shared object file: No such file or directory\n"
        )[0].severity
        == Severity.FATAL.value
    )


_EXCEPTIONS = [
    "AttributeError: 'NoneType' object has no attribute '_free_weak_ref'",
    "AttributeError: 'NoneType' object has no attribute 'python_exit_status'",
    "TypeError: 'NoneType' object is not callable",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "ImportError: sys.meta_path is None, Python is likely shutting down",
    "OSError: [Errno 9] Bad file descriptor",
]
_IGNORED_IN = [
    "Exception ignored in: <function StorageWeakRef.__del__ at 0x7f3144f34280>",
    "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f0e61afc760>",
    "Exception ignored on calling ctypes callback function: <function f at 0x7f3c>",
    "Exception ignored in sys.unraisablehook: <built-in function unraisablehook>",
]


def _block(ignored: str | None, exception: str) -> str:
    head = f"{ignored}\n" if ignored is not None else ""
    return (
        f"{head}Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.8/site-packages/torch/multiprocessing/reductions.py", '
        "line 36, in __del__\n"
        '  File "/opt/conda/lib/python3.8/site-packages/torch/storage.py", line 520, in '
        "_free_weak_ref\n"
        f"{exception}\n"
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_IGNORED_IN), st.sampled_from(_EXCEPTIONS)),
        min_size=1,
        max_size=4,
    ),
    st.sampled_from(["", "(WorkerDict pid=1) ", "[rank0]: "]),
)
def test_an_exception_python_ignored_is_a_notice(blocks: list[tuple[str, str]], dress: str) -> None:
    """Python's `Exception ignored in: ...` and the traceback it prints under it (a `__del__`,
    a callback, at shutdown: sys.unraisablehook): the program goes on, so however often it
    repeats, an exception no kind explains there is no finding, and a kind named there a
    warning (never fatal or science); the same traceback without that line is a finding."""
    text = "".join(_block(i, e) for i, e in blocks)
    dressed = "".join(dress + line + "\n" for line in text.splitlines())
    found = diagnose_text(dressed)
    assert "unknown_traceback" not in {f.kind for f in found}
    assert _severe(found) == []
    alone = _block(None, blocks[0][1])
    assert diagnose_text(alone) != []
    if not diagnose_text(blocks[0][1]):  # an exception no kind explains: nothing at all
        assert diagnose_text(_block(blocks[0][0], blocks[0][1])) == []


def test_a_traceback_after_an_ignored_one_is_read() -> None:
    """Only the traceback right under Python's report is ignored: the next one, and a failure
    after it, are read as ever."""
    ignored = _block(_IGNORED_IN[0], _EXCEPTIONS[0])
    failed = _block(None, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert [f.kind for f in diagnose_text(ignored + failed)] == ["cuda_oom"]
    assert [f.kind for f in diagnose_text(ignored + "step 3 loss nan\n")] == ["nan_loss"]


@settings(max_examples=1000, deadline=None)
@given(
    st.sampled_from(_IGNORED_IN),
    st.sampled_from(_EXCEPTIONS),
    st.integers(min_value=0, max_value=5),
    st.sampled_from(["", "step 5\n", "<unprintable RuntimeError object>\n"]),
    st.sampled_from(_SEVERE_LINES),
)
def test_a_failure_after_an_ignored_traceback_keeps_its_severity(
    ignored: str, exception: str, cut: int, between: str, failure: tuple[str, str]
) -> None:
    """Only an ignored traceback's own lines are ignored: its first unindented line that is no
    exception line of it (another rank's `step 5`, printed in the middle) ends it, so a failure
    line after any part of one (cut anywhere) has the severity it has alone, unless it is that
    traceback's own exception line (an exception's class by name, right under its frames)."""
    kind, line = failure
    if strip_dress(line)[:1].isspace():
        return  # an indented line under an open traceback is its own (a frame's, its message's)
    lines = _block(ignored, exception).splitlines(keepends=True)
    prefix = "".join(lines[: min(cut, len(lines))]) + between
    still_open = 2 <= cut < len(lines) and not between
    if still_open and EXCEPTION_LINE.match(strip_dress(line).strip()):
        return  # that traceback's own exception line: a notice (the classes above)
    if cut >= len(lines) and not between and continued(exception, line) is not None:
        return  # read as its exception's message wrapped onto a second line (`continued`)
    alone = {f.kind: f.severity for f in diagnose_text(line + "\n")}
    after = {f.kind: f.severity for f in diagnose_text(prefix + line + "\n")}
    assert after.get(kind) == alone[kind], (prefix, line)


def test_an_ignored_traceback_ends_at_a_line_not_its_own() -> None:
    """Interleaved ranks: a line not of the ignored traceback ends it; the failure after it is
    read as ever (a CUDA out of memory first, the batch size tried, not a segfault's end)."""
    text = (
        "Exception ignored in: <function X.__del__ at 0x7f3144f34280>\n"
        "Traceback (most recent call last):\n"
        '  File "x.py", line 3, in __del__\n'
        "<unprintable RuntimeError object>\n"
        "step 5\n"
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "Segmentation fault (core dumped)\n"
    )
    assert [(f.kind, f.severity) for f in diagnose_text(text)][:2] == [
        ("cuda_oom", "science"),
        ("segfault", "fatal"),
    ]


def test_an_exception_ignored_in_a_thread_started_by_is_a_failure() -> None:
    """`Exception ignored in thread started by: <function main>` (`_thread`): that thread died;
    a training loop run in one ends so, its failure read as ever."""
    text = _block(
        "Exception ignored in thread started by: <function main at 0x7f3c>",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    )
    assert [(f.kind, f.severity) for f in diagnose_text(text)] == [("cuda_oom", "science")]
    assert [f.kind for f in diagnose_text(_block(_IGNORED_IN[0], "ValueError: x"))] == []
    assert [
        f.kind
        for f in diagnose_text(
            _block(
                "Exception ignored in thread started by: <function main at 0x7f3c>", "ValueError: x"
            )
        )
    ] == ["unknown_traceback"]


def test_a_warning_keeps_its_kind() -> None:
    """The kind a warning-level line names is still found (a notice: its place is after any
    failure), with severity `warning`."""
    for dress in _WARNING_DRESSES:
        line = dress + "Failed to import from vllm._C with ModuleNotFoundError('No module named x')"
        assert [(f.kind, f.severity) for f in diagnose_text(line)] == [
            ("import_error", Severity.WARNING.value)
        ], dress


def test_python_warnings_format_is_still_a_failure() -> None:
    """ray#46733: `worker.py:253: UserWarning: Ray Client connection timed out`, then the
    traceback of the connection that failed: the warning names the root cause."""
    path = Path(__file__).parent / "data" / "corpus" / "ray_cluster" / "ray-46733.log"
    found = diagnose_chunks([_body(path)])
    assert (found[0].kind, found[0].severity) == ("ray_cluster", "retryable")


def test_a_wait_logged_after_a_loggers_name_is_still_the_failure() -> None:
    """olmocr#267: `__main__ - WARNING - Attempt 287: Please wait for vllm server to become
    ready...`, then the traceback of its cancellation: the wait names the root cause."""
    path = Path(__file__).parent / "data" / "corpus" / "connection_refused" / "olmocr-267.log"
    assert diagnose_chunks([_body(path)])[0].kind == "connection_refused"
