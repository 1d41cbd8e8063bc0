"""How one undressed line is read: which kind it names and how it ranks among the findings; pure.

A line is given the first catalogue kind whose pattern matches it. An exception line that
wraps another is read as what it wraps: `RayTaskError(Inner): ...` as `Inner: ...`, Ray's
`RaySystemError: System error: <cause>` as its cause (Ray puts there the exception its own
machinery hit, a module a worker cannot import for instance), and only when the cause says
nothing as the wrapper itself. A line that announces a wrapped failure printed after it
(Hydra's `Error in call to target '...':`, torchrun's `ChildFailedError`, an `ActorDiedError`
raised by a creation task) ranks after what it wraps, so the wrapped cause comes first;
Hydra's only after a specific cause (an exception no kind explains, a `TypeError` for an
argument the target does not take, is the configuration's failure, which Hydra's line names).
A line that says the program ignores an error it caught (`Ignore import error when loading
...`) says nothing, unless the error it ignored is a build that failed (a compiler's command).

A line that only mentions a failure is read without the mention: a sentence of advice or
condition (`If out-of-memory error occurs ..., consider ...`, `... to avoid CUDA out of memory
errors`), an exception's name in prose (`FileNotFoundError in user sandbox`); one that reports
a failure as resolved says nothing, and takes back the notices of retries of its kind before
it (wandb's `Network error resolved after 0:00:12, resuming normal operation.` after its
`entering retry loop`); one that reports a retry, or the shell's complaint about a command
(`bash: foo: command not found`: the run's failure when its exit code is 127, `exitcodes`), is
a notice. A model's or an agent's text quoted in a line (`agent output: ...`, `assistant: ...`)
says nothing of the run.

Ranks, root cause first: a specific failure; an echo (a dead Ray actor, a dead vLLM engine);
an exception no kind explains; what a wrapper said about itself; a notice.
"""

from __future__ import annotations

import re

import re2

from ajetd.diagnosis.catalogue import UNKNOWN, Kind, candidates
from ajetd.diagnosis.exitcodes import SAID_BY_SHELL
from ajetd.diagnosis.families import exception_family, message_family, reported_family
from ajetd.diagnosis.shape import EXCEPTION_LINE, WRAPPERS

SPECIFIC, ECHO, UNEXPLAINED, WRAPPER, NOTED = 0, 1, 2, 3, 4
RESOLVED = 5  # not a finding: a line saying its kind's failure is over (takes back a retry)
# A line that reports a retry (`wandb: Network error (ConnectionError), entering retry loop.`,
# `failed to write summary, retrying`, `Retrying in 2.0 seconds...`): the program goes on, so
# what it names is the run's failure only when nothing else is (NOTED: after any exception).
_RETRYING = re.compile(
    r"\b(?:retrying|entering retry loop|will (?:be )?retr(?:y|ied)|retry(?:ing)? in \d"
    r"|(?:attempt|retry) \d+ ?(?:/|of) ?\d+)\b",
    re.IGNORECASE,
)
# A line that reports a failure as over (`wandb: Network error resolved after 0:00:12,
# resuming normal operation.`): no failure at all.
_RESOLVED = re.compile(
    r"\b(?:error|issue|problem|failure)s? (?:was |were |has been |have been |is )?resolved\b"
    r"|\bresuming normal operation\b|\brecovered (?:from|after)\b",
    re.IGNORECASE,
)
# An ActorDiedError whose cause (the creation task's exception) is printed with it.
_DIED_WITH_CAUSE = re.compile(r"error raised in its creation task|actor died because of an error")
# A wrapper that carries its cause in its own message: `RaySystemError: System error: <cause>`.
_CARRIED_CAUSE = re.compile(r"^(?:[\w.]+\.)?RaySystemError: System error: (?P<cause>\S.*)$")
# A line that announces a failure printed after it (Hydra instantiating a target that raised).
_ANNOUNCES_WRAPPED = re.compile(r"\s*Error in call to target '[^']*'")
# C++'s announcement that an exception nothing caught ends the process (`terminate called
# after throwing an instance of 'c10::Error'`, then on its next line `what():  CUDA error: unknown
# error`): the abort is the echo of the exception whose message `what()` prints after it, which
# names the cause (a CUDA error, NCCL's watchdog, an NCCL error: PyTorch, vLLM-Ascend, Megatron,
# DeepSpeed, Visual-RFT and 3dgrut print it so). A `what()` no kind explains leaves the abort as
# what is known. Searched, not matched: a progress bar without a newline may precede it.
_TERMINATE = re.compile(r"terminate called after throwing an instance of\b")
# ... and that message itself (`what():  [TM][ERROR] CUDA runtime error: out of memory
# .../allocator.h:233`, lmdeploy#2236): an exception's message, whose class C++ does not print,
# read by its words' family (`families.message_family`) where no pattern reads it, as an
# exception line's message is.
_WHAT = re.compile(r"^\s{0,8}what\(\):\s{1,8}(?=\S)")
# Ray announcing that an actor's constructor raised: the exception is printed after it (and
# when the paste stops before it, an exception no kind explains ended the actor).
_RAISED_IN_CREATION = re.compile(r"\s*Exception raised in creation task\b")
# A program saying that it ignores an error it caught and goes on (SGLang at every start with
# an older transformers: `Ignore import error when loading sglang.srt.models.mllama4. cannot
# import name 'Llama4Config' ...`): a notice, not a failure.
_IGNORED = re.compile(r"\s*Ignor(?:e|es|ed|ing) (?:an? |the )?[\w ]{0,20}?error\b", re.IGNORECASE)
# ... unless what it ignored is a build that failed: a compiler's run (Triton building its CUDA
# helpers with gcc: `Ignore import error when loading sglang.srt.models.deepseek_v2. Command
# '['/usr/bin/gcc', ...]' returned non-zero exit status 1.`) fails the same way for every module
# and kernel built after it, so the program goes on without what it needs.
_SAID_THOUGH_IGNORED = frozenset({"build_error"})

# Where a line turns to advice or a condition (vLLM at every start: `... This may lead to
# unexpected consequences ... If out-of-memory error occurs during cudagraph capture, consider
# decreasing `gpu_memory_utilization` ... You can also reduce the `max_num_seqs``; a launcher's
# `set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid CUDA out of memory errors`):
# a failure named in that sentence is one that may happen, not one that did. A line that is no
# exception's is read without those sentences (each up to its full stop): a failure reported
# before or after them is still read (NCCL's `To avoid data inconsistency, we are taking the
# entire process down.` and then, on the same line, `what(): NCCL error: ...`). Advice as such
# is not a mention: printed after a failure it names (PyTorch's `For debugging consider passing
# CUDA_LAUNCH_BLOCKING=1`, NeMo-RL's `GPU OOM ... Consider reducing gpu_memory_utilization`).
_ADVICE = (
    r"\b(?:if\b[^.;]{0,120}?\b(?:occurs?|happens?|arises?|persists?|is raised"
    r"|(?:you|it) (?:see|gets?|hits?|encounters?|runs? into))\b"
    r"|to (?:avoid|prevent)\b|in case of\b"
    r"|(?:you|we) (?:can|could|may|might) (?:also )?[a-z]"
    r"|(?:may|might|could) (?:lead|cause|result|happen|occur)\b)"
    r".{0,400}?(?:[.!?](?:\s|$)|$)"
)

# An exception's name in a sentence (`agent tool call failed: FileNotFoundError in user sandbox
# (task 17), reward 0`: an agent's tool reporting what its sandbox raised): a mention, not the
# exception, which is printed with its message or inside a wrapper (`FileNotFoundError: ...`,
# `RayTaskError(FileNotFoundError)`, `<class 'FileNotFoundError'>`, `... failed with
# OutOfMemoryError.`, a name ending the line). A line that is no exception's is read without
# such names, and without its advice.
# (in RE2: linear on a 64 KiB line of `if`s, where `re` took a second)
_NAMED_IN_PROSE = r"\b(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\s+[a-z]"
_MENTIONS = re2.compile(f"(?i:{_ADVICE})|{_NAMED_IN_PROSE}")
# A model's or an agent's text quoted in a log line (`agent output: I got a CUDA out of memory
# error? No, the API returned 401 Unauthorized.`, `assistant: ...`, `model response: ...`):
# what the model wrote, not what the program did, so it names no failure of the run. A bare
# `response:` or `output:` is not one: an HTTP client's or a subprocess's, which may be.
_QUOTED_OUTPUT = re.compile(
    r"\s*(?:(?:agent|assistant|model|llm|policy|actor)(?:'s)?[ _](?:output|response|reply"
    r"|completion|answer|generation|text)s?|assistant|user)\s{0,4}:",
    re.IGNORECASE,
)


# verl's metrics line of a step whose only values that are not finite are gradient norms,
# beside a loss that is (`step:40 - actor/pg_loss:0.012 - ... - actor/grad_norm:nan - ...`): an
# update the trainer skipped, not a run that diverged. verl's actors and critics clip the
# gradients, and where the norm is not finite print `WARN: grad_norm is not finite`, zero the
# gradients and skip the optimizer's step (`_optimizer_step` in its dp_actor, dp_critic and
# engines): the weights are unchanged and the run goes on. A loss that is NaN itself
# (`critic/vf_loss:nan`, verl#498) is still `nan_loss`, and so is another trainer's line: Hugging
# Face's Trainer steps the optimizer whatever the norm (`{'loss': 0.2051, 'grad_norm': nan, ...}`
# and then `'loss': 0.0`, ModernBERT#233, self-llm#362: the weights went NaN). Each value is read
# where its key and separator end it (bounded), so the line is read in one pass.
_VERL_STEP = re.compile(r"\bstep:\d+ - ")
_NON_FINITE = re.compile(r":[-+]?(?:nan|inf)\b", re.IGNORECASE)
_GRAD_NORM_KEY = re.compile(r"/grad_norm$")
_FINITE_LOSS = re.compile(r"_loss:[-+]?\d")


def skipped_update(line: str) -> bool:
    """Whether `line` is verl's metrics line of a step whose gradient norm was not finite while
    its loss was (`_VERL_STEP`'s comment): each non-finite value's key names a gradient norm,
    and a key ending in `_loss` has a number."""
    if _VERL_STEP.search(line) is None:
        return False
    found = False
    for value in _NON_FINITE.finditer(line):
        if _GRAD_NORM_KEY.search(line, max(0, value.start() - 60), value.start()) is None:
            return False
        found = True
    return found and _FINITE_LOSS.search(line) is not None


def _gate_exact(line: str) -> bool:
    """Whether a kind's shared RE2 search (`patterns.gate`) reads `line` as `re` would: ASCII,
    without the control characters `re`'s `\\s` counts as space and RE2's does not (vertical
    tab, the file, group, record and unit separators)."""
    return line.isascii() and _RE_ONLY_SPACE.search(line) is None


_RE_ONLY_SPACE = re.compile("[\x0b\x1c-\x1f]")


def classify(line: str, words: frozenset[bytes] | None = None) -> Kind | None:
    """The first catalogue kind whose pattern matches `line`, or None (`words`: its trigger
    words)."""
    for kind in candidates(line.lower(), words):
        shared, always = kind.gated
        gated = shared is not None and _gate_exact(line) and shared.search(line) is None
        tried = always if gated else kind.patterns
        for pattern in tried:
            if pattern.search(line):
                return kind
    return None


def unwrapped(body: str, match: re.Match[str]) -> tuple[str, int]:
    """The text to classify for an exception line (`match`: its `EXCEPTION_LINE` shape), and
    its rank if nothing more specific explains it: a wrapper is read as what it wraps."""
    name = match.group("name")
    if not WRAPPERS.match(name):
        return body, UNEXPLAINED
    inner = match.group("inner")
    if inner:  # RayTaskError(EngineDeadError): ... -> EngineDeadError: ...
        return f"{inner}: {body[match.end() :]}", UNEXPLAINED
    told_after = _DIED_WITH_CAUSE.search(body) or name.endswith(
        ("ChildFailedError", "ValidationError")
    )
    return body, WRAPPER if told_after else ECHO


def names_only_what_it_wraps(line: str) -> bool:
    """Whether `line` is a wrapper read as what it names in brackets (`ray.exceptions.
    RayTaskError(OutOfMemoryError): ray::TaskRunner.run() (pid=41233, ...)`): its own text
    says where the cause was raised, not what it said, which its cause's own line printed after
    it does (`torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB ...`)."""
    shape = EXCEPTION_LINE.match(line.lstrip())
    return (
        shape is not None
        and bool(shape.group("inner"))
        and bool(WRAPPERS.match(shape.group("name")))
    )


def exception_kind(
    own: str, match: re.Match[str], words: frozenset[bytes] | None
) -> tuple[Kind | None, int]:
    """The kind of an exception line (`own`: undressed, `match`: its shape) and its rank if
    nothing explains it; None when no kind does. A cause carried in the message is tried
    first, then the line as a whole."""
    carried = _CARRIED_CAUSE.match(own)
    if carried is not None:
        kind = classify(carried.group("cause"))
        if kind is not None:
            return kind, ECHO if kind.consequence else SPECIFIC
    text, fallback = unwrapped(own, match)
    kind = classify(text, words if text is own else None)
    if fallback == WRAPPER:  # what it wraps is printed after it
        return kind, fallback
    if kind is None:  # no kind's wording: its class's and its words' family (`families`)
        kind = exception_family(text)
        if kind is None:
            return None, fallback
    return kind, ECHO if kind.consequence or fallback == ECHO else SPECIFIC


def line_kind(body: str, words: frozenset[bytes] | None) -> tuple[Kind | None, int]:
    """The kind of a line that is not an exception line, and its rank; None when it says
    nothing."""
    if _QUOTED_OUTPUT.match(body):
        return None, SPECIFIC
    kind = classify(body, words)
    mentions = _MENTIONS.search(body) is not None
    if kind is not None and mentions:  # what it says itself
        kind = classify(_MENTIONS.sub(" ", body))
    if kind is None and not _RAISED_IN_CREATION.match(body):  # NCCL's or CUDA's own words
        kind = reported_family(_MENTIONS.sub(" ", body) if mentions else body)
    if kind is None and (what := _WHAT.match(body)) is not None:  # an uncaught C++ exception's
        kind = message_family(body[what.end() :])  # message
    if kind is None:
        return (UNKNOWN, WRAPPER) if _RAISED_IN_CREATION.match(body) else (None, SPECIFIC)
    if kind.name == "nan_loss" and skipped_update(body):  # an update skipped, not divergence
        return None, SPECIFIC
    if _IGNORED.match(body) and kind.name not in _SAID_THOUGH_IGNORED:
        return None, SPECIFIC
    if _ANNOUNCES_WRAPPED.match(body):  # a specific failure printed after it comes first; an
        return kind, ECHO  # exception no kind explains does not (a bad argument is the config's)
    if kind.name == "segfault" and _TERMINATE.search(body):  # what() names the cause after it
        return kind, ECHO
    if _RESOLVED.search(body):  # no failure: it takes back the retries of its kind before
        return kind, RESOLVED
    if _RETRYING.search(body) or kind.name in SAID_BY_SHELL:
        return kind, NOTED
    return kind, ECHO if kind.consequence else SPECIFIC
