"""The shape of a log line: what decorates it, and whether it is an exception; pure.

Real failure logs are dressed: colour codes (their ESC byte often lost when pasted into an
issue), a Ray worker's lines carry `(Actor pid=N, ip=A)` (or `(raylet)`), vLLM's logger puts
`ERROR 07-27 23:31:27 [core.py:591] ` before each line of a traceback, torch.distributed
puts `[rank0]: `, srun `--label` puts `0: `, Python's logging and most launchers put a
timestamp and a level, `set -x` shell traces put `+ ` and pytest puts `E   `. Diagnosis
reads the text under all of these, so that a traceback keeps its indentation and an exception
line starts its line whatever dress it came in.

An exception line (`SomethingError: ...`, `Fatal Python error: ...`, `ray.exceptions.
RayTaskError(Inner): ...`) is recognised by its shape alone, so a log pasted from the error
line down (no `Traceback` header above it) still says what ended the program.
"""

from __future__ import annotations

import re

from ajetd.core.termtext import (  # shared with readers
    DRESS,
    MAX_DRESS,
    PROGRESS_BAR,
    RAY_WORKER,
    strip_dress,
)
from ajetd.diagnosis.text import MAX_LINE_BYTES, decode_line

# A paste that lost its newlines (an issue's text outside a code block): a Ray worker's lines
# run on in one, each after its mark (`... in _build_rollout (TaskRunner pid=132279) rollout =
# SGLangRollout( (TaskRunner pid=132279) File "...", line 301, in __init__ ...`, verl#2812).
_GLUED_MARK = re.compile(rf"\s{RAY_WORKER}\s")
MIN_GLUED = 2  # marks inside one line: fewer may be a message naming a worker, not a paste
MAX_GLUED = 500  # lines read out of one at most (the rest stays the last one's)


def glued_lines(body: str) -> list[str] | None:
    """The lines a paste that lost its newlines ran together (`_GLUED_MARK`), each without
    its mark; None when the line is one line."""
    if "pid=" not in body:
        return None
    marks = [m.span() for _, m in zip(range(MAX_GLUED), _GLUED_MARK.finditer(body), strict=False)]
    if len(marks) < MIN_GLUED:
        return None
    starts = [0, *(end for _, end in marks)]
    ends = [start for start, _ in marks] + [len(body)]
    return [body[a:b] for a, b in zip(starts, ends, strict=True)]


# `pkg.mod.SomeError: msg`, `KeyError: 'x'`, `ray.exceptions.RayTaskError(EngineDeadError): ...`
EXCEPTION_LINE = re.compile(
    r"^(?P<cls>(?:[A-Za-z_]\w*\.)*(?P<name>[A-Z]\w*?(?:Error|Exception|Exit|Interrupt|Fault|"
    r"Failure|Timeout|Killed)|Error|Exception|StopIteration|StopAsyncIteration))"
    r"(?:\((?P<inner>[\w.]+)\))?(?::|$)"
)
# Exception lines that end a program without being its fault.
BENIGN = re.compile(r"^(?:KeyboardInterrupt|SystemExit|GeneratorExit)\b")
# Exceptions that wrap another: their own kind is only that of what they wrap.
WRAPPERS = re.compile(
    r"^(?:[\w.]+\.)?(?:RayTaskError|RayActorError|ActorDiedError|ChildFailedError|"
    r"WorkerCrashedError|TaskError|ExceptionGroup|BaseExceptionGroup|ValidationError)$"
)
# The last line of a traceback: a (dotted) class name, maybe a message after `: ` (Python puts
# a blank after the colon). Not a line another process printed in the middle of the traceback
# (a worker's, a logger's: `INFO:Total number of training events: 76860`, `wandb: Syncing run`,
# `step:40 - loss:0.3`): a logging level is no class, and a class not named with its module is
# a builtin's or `__main__`'s, capitalised (a lower-case word before a colon is a program's
# name: `wandb:`, `libibverbs:`).
TRACEBACK_END = re.compile(
    r"^(?!(?:DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL|NOTICE|TRACE)\b)"
    r"(?:(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*|[A-Z]\w*)(?:\([\w.]*\))?(?:: |:$|$)"
)


# A line logged at warning level, at the start of its text or of any decoration under which
# its own text is (`shape.strip_dress`): `WARNING:root:`, `[WARNING]`, vLLM's `WARNING 07-27
# ...`, Ray's `(autoscaler +18s) Warning: ...`, a timestamp then `WARNING - `. Not PyTorch's
# c10 `[W socket.cpp:426]` (nor glog's `W1202 ...`): c10d logs at that level the failure it
# then raises without its cause (`The server socket has failed to bind to ... Address already
# in use`, then a DistNetworkError), so that line is the run's failure. Also a warning a program
# or library prints after its own name (`wandb: WARNING ...`, libibverbs' `libibverbs: Warning:
# couldn't load driver ...`: a lower-case name, never an exception's class). Not after a
# logger's name (`%(asctime)s - %(name)s - WARNING - ...`): olmocr logs its wait for the vLLM
# server that never comes up so (`__main__ - WARNING - Attempt 287: Please wait for vllm server
# to become ready...`, olmocr#267), nor Python's `warnings` format (`x.py:83: UserWarning: Ray
# Client connection timed out`, ray#46733): the program goes on, to the failure they announce.
_WARNED = re.compile(
    r"\W{0,3}(?:\([^)]{0,200}\)\s*)?(?:[a-z][a-z0-9_.-]{0,39}:\s{1,4})?"
    r"\[?(?:WARN(?:ING)?\b|Warning:)"
)


def logged_as_warning(line: str) -> bool:
    """Whether a line (dress included) was logged at warning level: the program went on."""
    at = 0
    for _ in range(MAX_DRESS + 1):
        if _WARNED.match(line, at):
            return True
        match = DRESS.match(line, at)
        if match is None or match.end() == at:
            return False
        at = match.end()
    return False


# A message wrapped over two lines (by the terminal, a log viewer or the reporter's paste): the
# exception line stops mid-sentence (a word, a number or a comma last) and the next line, in
# the same dress, goes on with a lower-case word, as prose does; `warnings.warn(`, a frame, a
# new exception or an indented line is never read as a continuation.
_STOPS_MID_SENTENCE = re.compile(r"[A-Za-z0-9,]$")
_GOES_ON = re.compile(r"^[a-z]+(?: |, |\. |\.?$|\))")
_DIGITS = str.maketrans("123456789", "000000000")
# A tqdm bar the line was printed after (`PROGRESS_BAR`): part of its dress, but not of the
# program's own, which the message's next line, printed after the bar's newline, does not carry
_BAR = re.compile(PROGRESS_BAR[1:])
MIN_WRAPPED_MESSAGE = 30  # characters after the class: a short message is not a wrapped one
# A message that begins with a newline (Megatron-Bridge's `raise ValueError(f"\n✗ Model
# architecture not supported ...")`): Python prints the class and its colon alone on a line and
# the message from the next one on, so that line, in the same dress, is read as the message;
# an indented line, a frame, a new exception or a traceback's own headers is not a message.
_NOT_A_MESSAGE = re.compile(r'^(?:\s|$|File "|Traceback \(|During handling |The above exception )')


def _dress_of(line: str) -> str:
    """The decorations before a line's own text (as `strip_dress` removes them)."""
    at = 0
    for _ in range(MAX_DRESS):
        match = DRESS.match(line, at)
        if match is None or match.end() == at:
            break
        at = match.end()
    return line[:at]


def _same_dress(dress: str) -> str:
    """What two lines of one message share of their dress: it without a progress bar and with
    its digits as zeros (a timestamp's second may change between them)."""
    if "%|" in dress:
        dress = _BAR.sub("", dress)
    return dress.translate(_DIGITS)


def _wrapped_dress(text: str) -> tuple[str, bool] | None:
    """The dress of `text` (one line as seen) when it may be the first line of an exception
    message in two, and whether its message is empty (all of it on the next line); None when
    it cannot be."""
    dress = _dress_of(text)
    body = text[len(dress) :].lstrip()
    shape = EXCEPTION_LINE.match(body)
    if shape is None:
        return None
    message = body[shape.end() :]
    if not message.strip():  # `ValueError:` and nothing after it: the message comes next
        return (dress, True) if body[shape.end() - 1 : shape.end()] == ":" else None
    if len(message) < MIN_WRAPPED_MESSAGE:
        return None
    return (dress, False) if _STOPS_MID_SENTENCE.search(body.rstrip()) else None


def may_go_on(raw: bytes) -> bool:
    """Whether a complete raw line may be an exception message that its next line goes on
    with (`continued` decides once that line is there): a reader of output still arriving
    waits for the next line before reading this one, as a reader of the whole output does."""
    end = raw.rstrip(b"\r")[-1:]
    if end in (b" ", b"\t"):  # blanks after the text: its last character counts
        end = raw.rstrip()[-1:]
    if not (end.isalnum() or end in (b",", b":", b" ")) or len(raw) > MAX_LINE_BYTES:
        return False  # `m`, the end of a colour code, passes on to the full test
    return _wrapped_dress(decode_line(raw)) is not None


def continued(text: str, following: str) -> str | None:
    """`text` (one line as seen, dress included) read together with the `following` line when
    the two are one exception message in two lines; None when they are not."""
    wrapped = _wrapped_dress(text)
    if wrapped is None:
        return None
    dress, empty = wrapped
    next_dress = _dress_of(following)
    rest = following[len(next_dress) :]
    if _same_dress(dress) != _same_dress(next_dress) or EXCEPTION_LINE.match(rest):
        return None
    if _NOT_A_MESSAGE.match(rest) if empty else not _GOES_ON.match(rest):
        return None
    return f"{text.rstrip()} {rest}"


def joined_with_next(block: bytes, end: int, text: str) -> tuple[str, int] | None:
    """The line of raw output `block` ending at `end` (`text`: as seen) read together with the
    next one when the two are one wrapped exception message, and where the next one ends;
    None otherwise (also when the next line is not in `block`)."""
    if end < 0 or end + 1 >= len(block) or not EXCEPTION_LINE.match(strip_dress(text).lstrip()):
        return None
    after = block.find(b"\n", end + 1)
    if after < 0:
        return None
    joined = continued(text, decode_line(block[end + 1 : after]))
    return None if joined is None else (joined[:MAX_LINE_BYTES], after)
