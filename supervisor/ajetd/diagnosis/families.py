"""What a failure says when no kind's pattern reads it: its exception's class, and the family
of words in its message; pure.

The catalogue's patterns are each written from a wording seen in a real log. On logs it has
not seen, most misses are a known kind in new words (freezes 10 to 20 measured each batch
blind, before its rules: 55 to 91 %, `docs/benchmarks.md`). Read one excerpt at a time without
the patterns only that excerpt supports (`bench/diagnosis.py --per-excerpt`), 35 of the 874
excerpts lose their reading; many of them still say what failed in words that any program of
the stack uses for it:
- the exception's own class (the one inside a wrapper: `RayTaskError(OwnerDiedError)`): Ray's
  `OutOfDiskError`, `OwnerDiedError`, torch's `AcceleratorError`, NCCL's `DistBackendError`,
  `ModuleNotFoundError`, huggingface_hub's `RepositoryNotFoundError`, `ConnectionError`;
- a family of words in its message, whatever the class (`RuntimeError: Distributed package
  doesn't have NCCL built in`, `OSError: dlopen(...): Symbol not found: _getentropy`, `cuda
  runtime error (30)`, `No space left on device`, `Connection refused`, a connect that timed
  out);
- a setting refused in the words validation uses (`expected sglang or vllm`, `must be one of`,
  `is required ... when ... is set`, `is not equal to`, `cannot exceed`);
- a line that is no exception's but reports a failure at error level in NCCL's or CUDA's words
  (NCCL's `NCCL failure common.cu:921 'unhandled system error'`, `CUresult error`).
These are read only where no pattern read the line (`wrapped.exception_kind`,
`wrapped.line_kind`), so a kind's own wording always wins, and never for a line logged below
error level. Not families: the words of a message that a code bug also says (`is not
supported`, `unsupported`: SGLang's `Unsupported compute capability: 12.0` is a missing case,
unknown_traceback), a class that says no failure (Ray's `ActorUnavailableError`: the actor
may be back later), a class a kind is not the only cause of (`ObjectStoreFullError`,
`TimeoutError`, `OutOfMemoryError`: Ray's is the host's, torch's the GPU's; their patterns read
them by their message).

Each search is one bounded regular expression over a line already read: linear in its length.
"""

from __future__ import annotations

import re

from ajetd.diagnosis.catalogue import BY_NAME, Kind
from ajetd.diagnosis.shape import EXCEPTION_LINE, WRAPPERS

MAX_MESSAGE_CHARS = 2000  # of a message searched for its family's words (a line may be long)

# The exception's own class name (its last dotted part) -> the kind every such class names.
_CLASS_FAMILIES = re.compile(
    r"^(?:"
    r"(?P<nccl_error>\w{0,40}(?:Nccl|NCCL|Hccl|HCCL)\w{0,40}(?:Error|Exception)|DistBackendError)"
    r"|(?P<cuda_error>\w{0,40}(?:Cuda|CUDA|Cudnn|CUDNN|CuDNN|Cublas|CUBLAS|Accelerator)"
    r"\w{0,40}(?:Error|Exception))"
    r"|(?P<disk_full>\w{0,40}(?:OutOfDisk|DiskFull|NoSpaceLeft)\w{0,40})"
    r"|(?P<ray_worker_died>(?:Owner|Node|Worker|Actor)Died\w{0,20}|WorkerCrashed\w{0,20}"
    r"|ObjectLost\w{0,20}|RayActorError)"
    r"|(?P<vllm_engine_dead>\w{0,40}EngineDead\w{0,20})"
    r"|(?P<import_error>ModuleNotFoundError|ImportError)"
    r"|(?P<missing_model>(?:RepositoryNotFound|RevisionNotFound|EntryNotFound|HFValidation)Error)"
    r"|(?P<auth>GatedRepoError)"
    r"|(?P<missing_file>FileNotFoundError)"
    r"|(?P<connection_refused>ConnectionRefusedError)"
    r"|(?P<network>ConnectionError|ConnectionResetError|ConnectTimeout\w{0,10}|ReadTimeout\w{0,10}"
    r"|ProxyError|MaxRetryError|NameResolutionError|DistNetworkError"
    # huggingface_hub's: the Hub not reached and no copy cached (not an entry a repo lacks)
    r"|LocalEntryNotFoundError)"
    r"|(?P<host_oom>MemoryError)"
    r"|(?P<nan_loss>FloatingPointError)"
    r")$"
)

# Words of a failure's message -> its kind, in the order tried (the more specific first: NCCL's
# `unhandled cuda error` is NCCL's failure; a CUDA call out of memory is the GPU's memory).
_MESSAGE_FAMILIES = re.compile(
    r"(?P<cuda_oom>\b(?:cuda|gpu|device|curesult)\b[^\n]{0,80}?\bout of memory\b"
    r"|\bout of memory\b[^\n]{0,40}?\b(?:cuda|gpu)\b)"
    r"|(?P<nccl_error>\b(?:nccl|hccl)\b)"
    r"|(?P<cuda_error>\bcuda (?:error|failure)\b|\bcuda runtime error\b|\bcudaerror[a-z]\w{0,40}"
    r"|\bcuda_error_[a-z_]{1,40}|\bcuresult error\b|\bcublas_status_[a-z_]{1,40}"
    r"|\bcudnn_status_[a-z_]{1,40}|\bdevice-side assert|\billegal memory access\b)"
    r"|(?P<disk_full>\bno space left on device\b|\bdisk (?:is )?full\b|\bdisk quota exceeded\b"
    r"|\benospc\b)"
    r"|(?P<import_error>\bdlopen\b|\bundefined symbol\b|\bsymbol not found\b"
    r"|\bcannot open shared object file\b|\bno module named\b)"
    r"|(?P<connection_refused>\bconnection refused\b|\beconnrefused\b)"
    r"|(?P<network>\b(?:connect\w{0,4}|connection|request|handshake|socket)\b[^\n]{0,40}?"
    r"\btimed? ?out\b|\bname or service not known\b|\btemporary failure in name resolution\b"
    r"|\bnetwork is unreachable\b|\bcould(?:n't|n’t| not) (?:reach|resolve)\b)"
    r"|(?P<missing_file>\bno such file or directory\b)",
    re.IGNORECASE,
)

# A setting refused in the words validation uses: read in an exception's message only.
_REFUSED_SETTING = re.compile(
    r"\bexpected (?:one of\b|either\b|[\w.\-'\"`]{1,40} or [\w.\-'\"`]{1,40})"
    r"|\bmust (?:be (?:one of|either|set|specified|provided|in|less|greater|at (?:most|least)"
    r"|divisible|positive|non-negative)\b|not (?:be|exceed)\b)"
    r"|\b(?:is|are) required (?:when|if|for|with)\b"
    r"|\b(?:is )?not equal to\b"
    r"|\bcannot exceed\b"
    r"|\binvalid (?:value|choice|option|setting|config\w{0,12})\b",
    re.IGNORECASE,
)

# The words NCCL and CUDA print a failure with on a line of their own (no exception's shape).
_REPORTED = re.compile(
    r"(?P<nccl_error>\bnccl (?:error|failure)\b)"
    r"|(?P<cuda_error>\bcuda (?:error|failure)\b|\bcuresult error\b|\bcuda_error_[a-z_]{1,40})",
    re.IGNORECASE,
)
# Below error level: a line logged as information, a warning or for debugging says it went on.
_BELOW_ERROR = re.compile(
    r"^\W{0,3}(?:\([^)]{0,200}\)\s*)?\[?(?:WARN(?:ING)?|INFO|DEBUG|NOTICE)\b"
    r"|\bNCCL (?:INFO|WARN)\b"
)


def _kind(match: re.Match[str] | None) -> Kind | None:
    """The kind a family regex's match names (its group's name)."""
    return None if match is None or match.lastgroup is None else BY_NAME[match.lastgroup]


def message_family(message: str) -> Kind | None:
    """The kind an exception's message (its text alone, without its class) names by its
    words' family; None when none does."""
    return _kind(_MESSAGE_FAMILIES.search(message, 0, MAX_MESSAGE_CHARS))


def exception_family(text: str) -> Kind | None:
    """The kind an exception line (`text`: undressed, its wrapper already read as what it
    wraps) names by its message's words or its class, where no pattern read it; None when
    neither says."""
    shape = EXCEPTION_LINE.match(text)
    if shape is None:
        return None
    message = text[shape.end() : shape.end() + MAX_MESSAGE_CHARS]
    found = message_family(message)
    if found is not None:
        return found
    name = shape.group("name")
    if shape.group("inner") and WRAPPERS.match(name):
        name = shape.group("inner").rsplit(".", 1)[-1]
    found = _kind(_CLASS_FAMILIES.match(name))
    if found is not None:
        return found
    return BY_NAME["config_error"] if _REFUSED_SETTING.search(message) else None


# An exception printed after other text on its line, named with its module (`... the local disk
# utilization is over capacity. ray.exceptions.OutOfDiskError: Local disk is full`, ray#49173):
# a bare `Error:` in a sentence is prose, a qualified class with its message is the exception.
_QUALIFIED_INSIDE = re.compile(
    r"\s(?=(?:[a-z_][a-z0-9_]{0,40}\.){1,6}[A-Z]\w{0,60}(?:Error|Exception): )"
)


def reported_family(line: str) -> Kind | None:
    """The kind a line that is no exception's names when it reports a failure in NCCL's or
    CUDA's words, or prints an exception after other text (`_QUALIFIED_INSIDE`), at error level
    (not logged as information or a warning); None otherwise."""
    if _BELOW_ERROR.search(line) is not None:
        return None
    found = _kind(_REPORTED.search(line, 0, MAX_MESSAGE_CHARS))
    if found is not None:
        return found
    inside = _QUALIFIED_INSIDE.search(line, 0, MAX_MESSAGE_CHARS)
    return None if inside is None else exception_family(line[inside.end() :])
