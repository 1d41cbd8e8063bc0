"""Findings from output: which failure kinds appear, where, root cause first; pure.

Each line is read under its dress (`logshape.strip_dress`: Ray, vLLM, torch.distributed,
timestamps, shell traces) and given the first kind that matches it: the user's kinds first,
then the catalogue's. An exception line (`SomethingError: ...`, recognised by its shape, with
or without a `Traceback` header above it) that no kind explains becomes `unknown_traceback`, and
so do a C++ assertion that failed (glog's and absl's `Check failed: ...`, which aborts) and an
OSError's text that a program logged at error level (`... encountered an error: [Errno 5]
Input/output error`).
A wrapping exception (`RayTaskError(Inner)`, `ActorDiedError` raised by a creation task,
torchrun's `ChildFailedError`) is classified by what it wraps, and ranked after it.

A traceback the output ends inside (the log, or the paste of it, cut before its exception
line) says that an exception ended the program without saying which: at the end of the stream
it is `unknown_traceback`, unless a kind was already read in its frames, or unless it was cut
while a module was being imported (its last source line an `import`, or its last frame
importlib's own): an exception raised while importing is the import's failure, `import_error`.
A paste that begins inside a traceback (its frames, `File "...", line N, in f`, without the
`Traceback` header above them) is read as one, up to an exception line; a line that is not one
ends it saying nothing (a stack a program printed and went on from: logging's `stack_info`,
`traceback.print_stack`).

Ordering (the root cause first): the first specific failure; then echoes (a dead Ray actor, a
dead vLLM engine); then an exception no kind explains; then what wrappers said about
themselves; then notices (a failure logged as a warning, a retry reported, the shell's
complaint about a command inside the program's output: `wrapped`). A frame's source lines
are code, never findings, and so are the lines of a traceback Rich drew in a box (its exception
line, under the box, is read as any). Within a rank, the earlier line first. A kind that
names another's cause
(`Kind.explains`: vLLM's advice to lower its budget, printed below the out of memory it caught)
makes that other kind its echo, wherever either was found (where `Kind.explains_only` is given,
only the lines of it that this matches: a refusal explains a connection that dropped, not a
host that could not be reached; where `Kind.explains_from` is given, only the explaining kind's
lines that it matches name the cause: a GPU refused altogether explains the dtype it refused, any
other CUDA error does not).

Reading raw output, in chunks cut anywhere: `stream`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import re2

from ajetd.core.finding import Finding
from ajetd.core.linecut import cut_around, cut_middle
from ajetd.core.termtext import strip_dress
from ajetd.core.trialscript import OWN_LINE_PREFIX
from ajetd.core.userkinds import RE2_OPTIONS, UserKind
from ajetd.diagnosis.catalogue import BY_NAME, UNKNOWN, Kind, Severity
from ajetd.diagnosis.kindset import KindSet
from ajetd.diagnosis.shape import (
    BENIGN,
    EXCEPTION_LINE,
    TRACEBACK_END,
    glued_lines,
    logged_as_warning,
)
from ajetd.diagnosis.wrapped import (
    ECHO,
    NOTED,
    RESOLVED,
    SPECIFIC,
    UNEXPLAINED,
    WRAPPER,
    classify,
    exception_kind,
    line_kind,
    names_only_what_it_wraps,
)

# An echo that says its cause was printed above it (vLLM's `RuntimeError: Engine core
# initialization failed. See root cause above. Failed core proc(s): {}`, `EngineDeadError:
# EngineCore encountered an issue. See stack trace (above) for the root cause.`): an exception
# no kind explains read before it is that cause and ranks first (SkyRL#1343: the engine core's
# `AssertionError: The env var, __RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR, is not permitted ...`);
# one read after it is not what it points to (a traceback the paste cut after its header:
# LMCache#2306, vllm#27194), and alone the echo is still the finding.
_DEFERS_TO_ABOVE = re.compile(
    r"\bsee (?:the )?root cause above\b"
    r"|\bsee (?:the )?stack ?trace \(?above\)? for the root cause\b",
    re.IGNORECASE,
)

EVIDENCE_CHARS = 300
EVIDENCE_END_CHARS = 200  # of a longer line, its end: where an error printed after a bar is
# what a kind's pattern matched starts within this many characters of the evidence: a reason
# quoting the evidence's first 200 (`policy.root_cause`) quotes the message itself
EVIDENCE_MATCH_BY = 140
EVIDENCE_HEAD_CHARS = 80  # of a line cut around its match, its start kept before it
_PROBE = 24  # characters of the match looked for in the evidence


def _evidence(text: str, kind: Kind | UserKind | None = None) -> str:
    """A line as a finding's evidence: at most EVIDENCE_CHARS of it, what `kind`'s pattern
    matched in its first EVIDENCE_MATCH_BY characters. A longer line shows its start and its
    last EVIDENCE_END_CHARS or fewer, since a program that printed a progress bar or a long
    message without a newline put the error it died of at the line's end; each cut at a word,
    brackets and code spans closed (`linecut.cut_middle`: `… reserved by PyTorch bu …
    ocation` was cut mid-word). Where that puts the match later than EVIDENCE_MATCH_BY, or
    leaves it out (a message amid a long line), the evidence is the line's start to
    EVIDENCE_HEAD_CHARS, then the line from shortly before the match (`linecut.cut_around`):
    `[launcher] ['python', …] exits with return code = -9` (walk97 F8: the reason re-cut a
    long line's evidence from its start and showed `cuda_oom: yyyy… yyyy…`)."""
    line = text.strip()
    shown = cut_middle(line, EVIDENCE_CHARS, EVIDENCE_END_CHARS)
    at = _matched_at(kind, line) if kind is not None and len(line) > EVIDENCE_MATCH_BY else None
    if at is None or _shows(shown, line, at):
        return shown
    around = cut_around(line, at, EVIDENCE_CHARS, EVIDENCE_HEAD_CHARS)
    return around if _shows(around, line, at) else cut_around(line, at, EVIDENCE_CHARS)


def _shows(evidence: str, line: str, at: int) -> bool:
    """Whether `evidence` holds the start of what matched at `at` in `line` early enough."""
    return 0 <= evidence.find(line[at : at + _PROBE]) <= EVIDENCE_MATCH_BY


def _matched_at(kind: Kind | UserKind, line: str) -> int | None:
    """Where the first of `kind`'s patterns that matches `line` matched (None: none gives a
    place: a pattern matched on the undressed line, or one that says only whether)."""
    for pattern in kind.patterns:
        found = (
            re2.search(pattern, line, RE2_OPTIONS)
            if isinstance(pattern, str)
            else pattern.search(line)
        )
        start = getattr(found, "start", None)
        if callable(start):
            return int(start())
    return None


_TRACEBACK = "Traceback (most recent call last):"
# A frame as a Python traceback prints it (faulthandler's `line N in f` has no comma: not one).
_FRAME = re.compile(r'^\s*File "[^"]*", line \d+, in \S')
# A traceback's frame running an import: importlib's own frames, or a source line that imports.
_IMPORT_FRAME = re.compile(
    r'^\s*File "(?:<frozen importlib\._bootstrap(?:_external)?>|[^"]*[/\\]importlib[/\\]'
    r'__init__\.py)", line \d+, in \w'
)
_IMPORT_SOURCE = re.compile(r"^\s*(?:from\s+[\w.]+\s+import\s+\S|import\s+[\w.]+)")
_CARETS = re.compile(r"^\s*[\^~]+\s*$")
# c10's report of where a C++ exception was raised, the second part of its message
# (`Exception raised from OperationSetup at .../compiler_depend.ts:131 (most recent call
# first):`, then `frame #0: c10::Error::Error(...)`): its first part, the message, is the line
# above it, whether Python printed it as an exception line (`RuntimeError: ...`), C++ as
# `what():  ...` or a logger on its own (torch_npu's `[E329 ... compiler_depend.ts:422] setup
# failed!`, ms-swift#3726). Where no line of the MAX_C10_MESSAGE_LINES above it was read as a
# failure, the report is an exception no kind explains; unless its message was logged below
# error level, just above it (c10d's store at a peer's exit: `[W1102 00:39:34.733 TCPStore.cpp:
# 125] [c10d] recvValue failed on SocketImpl(...)`, NeMo#15019): a warning's report.
_C10_REPORT = re.compile(
    r"^Exception raised from \S{1,300} at \S{1,500}:\d{1,7} \(most recent call first\):"
)
MAX_C10_MESSAGE_LINES = 8
_GLOG_BELOW_ERROR = re.compile(r"^\[?[IW]\d{4} \d\d:\d\d:\d\d")  # glog's and c10's level letter
# A traceback as Rich renders it (`RichHandler(rich_tracebacks=True)`, NeMo-RL's logger): a box
# `╭──── Traceback (most recent call last) ────╮`, its frames (`│ /path/x.py:12 in f │`) and
# their source (`│   11 │   code │`, `│ ❱ 12 │   code │`), locals in boxes inside it, then
# `╰────╯` and, unboxed, the exception line. The box's lines are code, never findings; a code
# or frame line of such a box is one also where its header is not shown (a paste of its part).
_RICH_HEADER = re.compile(r"^╭─+ ?Traceback \(most recent call last\) ?─+╮")
_BOX_EDGES = ("│", "╭", "╰")
_RICH_BOXED = re.compile(r"^│\s{0,8}(?:❱\s{0,4})?\d{1,7}\s{0,4}│|^│ \S[^│]{0,1000}:\d+ in \S")
# A frame's source line raising an exception with its message (`raise ValueError("No available
# memory for the cache blocks. "`): a traceback cut before its exception line still says there
# what ended the program; the statement's lines are read together, at most this many characters.
_RAISE = re.compile(r"raise [A-Za-z_][\w.]*\(")
MAX_RAISE_CHARS = 2000
# A C++ CHECK that failed (it aborts the program): Ray's `file.cc:69:  Check failed: ...`, and
# glog's and absl's `F1201 12:34:56.789 123 file.cc:12] Check failed: ...` once their dress is
# stripped (`shape.strip_dress`), which leaves the words at the line's start.
_CHECK_FAILED = re.compile(
    r"^(?:[\w./\-]+\.(?:cc|cpp|cxx|h|hpp):\d+:\s+Check failed\b|Check failed: )"
)
# An OSError's own text (`[Errno 5] Input/output error`) that a program logged after the word
# error, its exception's name not said (Megatron's checkpoint writer: `Local process 0
# encountered an error: [Errno 5] Input/output error`): the exception that ended the save, read
# as one where no kind explains it. A line logged at a lower level than error is not (a retry,
# a cache it could not write, a note of what happened before).
_LOGGED_OS_ERROR = re.compile(r"error: \[Errno \d{1,5}\] [A-Za-z]", re.IGNORECASE)
# A notebook's traceback (IPython, Jupyter): a rule of dashes, then the exception's class and,
# at the right, `Traceback (most recent call last)`, then its frames (`<ipython-input-12-...> in
# <module>`, `----> 1 trainer.train()`, `File ~/x.py:638, in f(self)`) and last the exception
# line. A paste cut before that line (ray#14352) still says there which exception it was.
_NOTEBOOK_HEADER = re.compile(r"^(\S{1,300})\s{2,200}Traceback \(most recent call last\)$")
_NOTEBOOK_TAIL = "(most recent call last)"
_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
# Python's report of an exception it could not raise and so ignored (`sys.unraisablehook`: a
# `__del__`, a callback, a thread at shutdown: `Exception ignored in: <function
# StorageWeakRef.__del__ ...>`, `Exception ignored on calling ctypes callback function`), above
# the traceback it prints: the program goes on. Not `Exception ignored in thread started by:`
# (`_thread.start_new_thread`): that thread is over, and a training loop run in one ends so.
_EXCEPTION_IGNORED = re.compile(r"^Exception ignored\b(?! in thread started by\b)")
# Severities a line the program went on from (`Diagnoser._record`'s `warned`) cannot have: it
# named no failure that ended the program nor one only the experiment's change helps.
_WARNED_DOWN = (Severity.FATAL, Severity.SCIENCE)
MAX_TRACEBACK_LINES = 2000  # a traceback never ended (cut off, or not one) stops being followed
# A frame inside an experiment logger's own package: an exception raised there that no more
# specific kind explains (a file it cannot write, an unexplained error) is the logger's failure.
_LOGGER_FRAME = re.compile(
    r'^\s*File "[^"]*[/\\](?:site|dist)-packages[/\\]'
    r"(?:wandb|swanlab|mlflow|tensorboard|tensorboardX|torch[/\\]utils[/\\]tensorboard)[/\\]"
)
_LOGGER_CAN_EXPLAIN = frozenset({UNKNOWN.name, "missing_file"})
# A source line that looks a name up in a registry or a mapping of names (Transformers'
# `CONFIG_MAPPING[config_dict["model_type"]]`, `AutoModel._model_mapping[type(config)]`, a
# framework's `cls._registry[reward_fn_id]`, `REWARD_MANAGER_REGISTRY[name]`): a KeyError it
# raises, through the mapping's own `__getitem__` frames, says that the config names a model
# type or component this install has no entry for (Transformers too old for the model, a reward
# function not registered), a setting to change, not a bug to read the frames of.
_NAME_LOOKUP = re.compile(r"\b\w{0,60}(?:registry|registries|mapping)\w{0,60}\s{0,4}\[", re.I)
# The same of a source line that reads a field of one data record by its name (TRL's DPO
# tokenizer: `prompt = features["prompt"]`, an SFT formatter's `lambda x: x[dataset_text_field]`,
# a collator's `feature["prompt"]`, a record taken from the data by position then read by its
# key's name: `train_dataset[0][INPUT_IDS_PROMPT_KEY]`, mlx-examples' `self._data[idx][self._key]`):
# a KeyError it raises says that the run's dataset has no such column, its data or the column
# named in its config to change (the trainer's format not the data's), not a bug to read the
# frames of.
_RECORD_LOOKUP = re2.compile(  # (RE2: linear on a line of any length, whatever it repeats)
    r"\b(?:features?|examples?|samples?|batch|rows?|records?|items?|elements?|instances?|datum"
    r"|data_?points?|entry|ex|x|doc|conversations?|messages?)\s{0,4}\[\s{0,4}"
    r"(?:[\"'][^\"'\[\]]{1,80}[\"']|[A-Za-z_]\w{0,60})\s{0,4}\]"
    r"|\b\w{0,30}(?:data|dataset|dset|records|rows|samples|examples)\w{0,20}\s{0,4}"
    r"\[[^\[\]]{1,30}\]\s{0,4}\[\s{0,4}(?:[\"'][^\"'\[\]]{1,80}[\"']|[A-Za-z_][\w.]{0,60})\s{0,4}\]",
    RE2_OPTIONS,
)
_GETITEM_FRAME = re.compile(r'^\s*File "[^"]*", line \d+, in __getitem__\s*$')
_KEY_ERROR = re.compile(r"^(?:builtins\.)?KeyError: \S")
# A source line that indexes a list of devices at a position the settings computed (slime's
# rollout placing its engines: `base_gpu_id = int(reordered_gpu_ids[gpu_index])`, a rank's
# `visible_devices[local_rank]`): an IndexError it raises says that the layout the settings ask
# for (GPUs per engine, engines, ranks) reaches past the devices the run was given, a setting
# to change (slime's own validation, added after such reports, says so in a ValueError).
_DEVICE_LOOKUP = re.compile(r"\b\w{0,60}(?:gpu|device)\w{0,60}\s{0,4}\[", re.I)
_INDEX_ERROR = re.compile(r"^(?:builtins\.)?IndexError: \S")
_NAME_NOT_FOUND = BY_NAME["config_error"]
# A comment of Python source that a report quotes outside a traceback's frames (pytest's failure
# report prints the failing function's source, comments included, above its `E` lines:
# `#    - private and gated repos if user is not authenticated`, swarms#228; a notebook's context
# lines number them: `953     # bitsandbytes loads the weights ...`): code, never a finding.
# Indented, or after a line number; not `#0 0x7f... in raise ()` (gdb's and glibc's frames) nor
# a banner of hashes.
_CODE_COMMENT = re.compile(r"^(?:\s{1,40}(?:\d{1,6}\s{1,12})?|\d{1,6}\s{1,12})#(?=\s|[A-Za-z_])")
_LEVEL = r"^\W{0,3}(?:\([^)]*\)\s*)?\[?"  # where a logged line's level begins
_BELOW_ERROR = re.compile(_LEVEL + r"(?:WARN(?:ING)?|INFO|DEBUG|NOTICE)\b")  # (`_LOGGED_OS_ERROR`)


@dataclass
class Diagnoser:
    """Feed it numbered lines in order (in as many calls as you like); ask for findings."""

    user: KindSet = field(default_factory=KindSet)
    _first: dict[str, Finding] = field(default_factory=dict)
    _rank: dict[str, int] = field(default_factory=dict)
    _at: dict[str, int] = field(default_factory=dict)  # where each kind was first seen: its order
    _wrapper_said: set[str] = field(default_factory=set)  # kinds whose evidence is a wrapper's
    # line (`names_only_what_it_wraps`), until their cause's own line is read
    _counts: dict[str, int] = field(default_factory=dict)
    _in_traceback: bool = False
    _in_box: bool = False  # the open traceback is Rich's, inside its box (`_RICH_HEADER`)
    _traceback_known: bool = False
    _traceback_lines: int = 0
    _traceback_indent: int = 0  # a traceback printed indented (pip's subprocess output) ends
    # with an exception line indented as much as its header
    _in_logger: bool = False  # the traceback's last frame is in an experiment logger's package
    _traceback_at: int = 0  # the line of the open traceback's header, and its text
    _traceback_header: str = ""
    _importing: tuple[int, str] | None = None  # the open traceback's last frame imports: where
    _headerless: bool = False  # the open traceback began with a frame (its header not shown)
    _stray: str | None = None  # a line no frame's in the open headerless traceback, the last
    # read: the traceback's end, or another process's line printed in the middle of it (the
    # next line says which: `_one_line`)
    _looking_up: bool = False  # the traceback's last frames look a name up (`_NAME_LOOKUP`)
    _in_getitem: bool = False  # its last frame is a mapping's `__getitem__`
    _indexing_devices: bool = False  # its last frame indexes a list of devices (`_DEVICE_LOOKUP`)
    _frame_indent: int = -1  # the last frame's indentation: lines deeper are its source (code)
    _raising: tuple[int, str] | None = None  # the last frame's source raises: where, and what
    _marked: bool = False  # the open traceback's frames showed position markers (`_CARETS`)
    _found_at: int = -MAX_C10_MESSAGE_LINES - 1  # the last line recorded as a finding
    _previous: tuple[int, str] = (-1, "")  # the last line read, as given
    _notebook: tuple[int, str, str, int] | None = None  # a notebook's traceback header with no
    # exception line below it yet (`_NOTEBOOK_HEADER`): where, its text, the class it names and
    # how many lines had a kind when it was read
    _changes: int = 0  # kinds found or ranked higher: what a live reader shows has changed
    _warned: set[str] = field(default_factory=set)  # the catalogue's kinds read so far only
    # from lines the program logged at warning level (`shape.logged_as_warning`): it went on
    _ignored: bool = False  # the open traceback is one Python reports as ignored
    _explained: dict[str, re.Pattern[str] | None] = field(default_factory=dict)  # kinds a
    # specific kind found names the cause of (`Kind.explains`), echoes of it where their line
    # matches the pattern given (`Kind.explains_only`; None: every line)

    @property
    def in_traceback(self) -> bool:
        return self._in_traceback

    @property
    def awaits_end(self) -> bool:
        """Whether what was read may say more once the output ends (`end`): a traceback not
        ended, or a notebook's traceback header with no exception line below it yet."""
        return self._in_traceback or self._notebook is not None

    @property
    def changes(self) -> int:
        """How many times the findings' kinds or order have changed (not their counts)."""
        return self._changes

    def fork(self) -> Diagnoser:
        """A copy that reads on without changing this one (a look at where it stands)."""
        return replace(
            self,
            _first=dict(self._first),
            _rank=dict(self._rank),
            _at=dict(self._at),
            _wrapper_said=set(self._wrapper_said),
            _warned=set(self._warned),
            _counts=dict(self._counts),
            _explained=dict(self._explained),
        )

    def feed(self, lines: Iterable[tuple[int, str]]) -> None:
        for number, text in lines:
            self.line(number, text)

    def _record(
        self, kind: Kind | UserKind, number: int, text: str, rank: int, warned: bool = False
    ) -> None:
        """Note a line of `kind`. `warned`: the program went on after it (it logged it at
        warning level, or Python reported the exception ignored): a fatal or science kind of
        the catalogue read only from such lines is a warning (severity `warning`: no exit 0 is
        doubted for it, `daemon.ending`; a failed run's remedy is still its kind's), until a
        line not said so shows it too."""
        if kind is not UNKNOWN and rank < WRAPPER and self._rank.get(UNKNOWN.name) == WRAPPER:
            self._told_after()
        self._counts[kind.name] = self._counts.get(kind.name, 0) + 1
        self._found_at = max(self._found_at, number)
        if isinstance(kind, Kind):
            if (
                kind.consequence
                and rank == ECHO
                and self._rank.get(UNKNOWN.name) == UNEXPLAINED
                and _DEFERS_TO_ABOVE.search(text)
            ):
                rank = WRAPPER  # the exception it points to was printed above it
            if self._is_explained(kind.name, text):
                rank = max(rank, ECHO)  # a kind found names its cause
            elif kind.explains and rank == SPECIFIC and _names_causes(kind, text):
                self._explain(kind)
        if kind.name not in self._first:
            evidence = _evidence(text, kind)
            if isinstance(kind, UserKind):
                severity, remedy = kind.severity, kind.remedy
            else:
                severity, remedy = kind.severity.value, ""
                if warned and kind.severity in _WARNED_DOWN:
                    severity = Severity.WARNING.value
                    self._warned.add(kind.name)
            self._first[kind.name] = Finding(
                kind.name, severity, number, evidence, kind.explanation, kind.fix, 1, remedy
            )
            self._rank[kind.name] = rank
            self._at[kind.name] = number
            if names_only_what_it_wraps(text):
                self._wrapper_said.add(kind.name)
            self._changes += 1
            return
        if kind.name in self._warned and not warned and isinstance(kind, Kind):
            self._warned.discard(kind.name)  # a line not logged as a warning shows it too
            self._first[kind.name] = replace(self._first[kind.name], severity=kind.severity.value)
            self._changes += 1
        if kind.name in self._wrapper_said and not names_only_what_it_wraps(text):
            # the cause's own line, with what it said (the memory it asked for, the key it
            # missed), is the evidence; the finding keeps its place among the others
            self._wrapper_said.discard(kind.name)
            self._first[kind.name] = replace(
                self._first[kind.name], line=number, evidence=_evidence(text, kind)
            )
            self._changes += 1
        if rank < self._rank[kind.name]:
            if self._rank[kind.name] == WRAPPER:  # announced first, the failure itself now
                evidence = _evidence(text, kind)
                self._first[kind.name] = replace(
                    self._first[kind.name], line=number, evidence=evidence
                )
                self._at[kind.name] = number
            self._rank[kind.name] = rank  # seen first as an echo, later as a cause
            self._changes += 1

    def _resolved(self, name: str) -> None:
        """A line said the failure of kind `name` is over: its finding goes where it was only
        retries reported (a notice), never where the failure itself was seen."""
        if self._rank.get(name) != NOTED:
            return
        for found in (self._first, self._rank, self._counts, self._at):
            found.pop(name, None)
        self._wrapper_said.discard(name)
        self._warned.discard(name)
        self._changes += 1

    def _told_after(self) -> None:
        """A failure a wrapper announced (Ray's `Exception raised in creation task`, an
        ActorDiedError or ChildFailedError that names no kind), found now: the announcement,
        an exception no kind explains only while its cause was not seen, defers to it."""
        for found in (self._first, self._rank, self._counts):
            del found[UNKNOWN.name]
        self._changes += 1

    def _is_explained(self, name: str, text: str) -> bool:
        """Whether a specific kind found names the cause of this line of kind `name`."""
        if name not in self._explained:
            return False
        only = self._explained[name]
        return only is None or only.search(text) is not None

    def _explain(self, kind: Kind) -> None:
        """A specific kind found names the cause of those it explains: those found before it,
        as the cause printed above the advice that names it, rank as its echoes from now on
        (where `Kind.explains_only` is given, those whose first line it matches)."""
        for name in kind.explains:
            self._explained[name] = kind.explains_only
            found = self._first.get(name)
            if found is None or self._rank[name] >= ECHO:
                continue
            if self._is_explained(name, found.evidence):
                self._rank[name] = ECHO
                self._changes += 1

    def _kind(
        self, body: str, words: frozenset[bytes] | None
    ) -> tuple[Kind | UserKind | None, int]:
        """The kind of one undressed line and its rank; None when it says nothing."""
        if self.user:
            mine = self.user.match(body)
            if mine is not None:
                return mine, SPECIFIC
        shape = EXCEPTION_LINE.match(body.lstrip())
        if shape is None:
            kind, rank = line_kind(body, words)
            if rank == RESOLVED:  # said nothing itself; takes back its kind's retries
                if kind is not None:
                    self._resolved(kind.name)
                return None, SPECIFIC
            if kind is None and _CHECK_FAILED.match(body.lstrip()):
                return UNKNOWN, UNEXPLAINED  # an abort no kind explains
            return kind, rank
        own = body.lstrip()
        kind, fallback = exception_kind(own, shape, words)
        if kind is None:
            if BENIGN.match(own) or (self._in_traceback and self._traceback_known):
                return None, fallback
            return UNKNOWN, max(fallback, UNEXPLAINED)
        return kind, fallback

    def _raised_by_logger(self, kind: Kind | UserKind | None, stripped: str) -> bool:
        """Whether this line ends a traceback whose last frame is an experiment logger's own
        code, with an exception no more specific kind explains."""
        if not (self._in_traceback and self._in_logger):
            return False
        if kind is not None and kind.name not in _LOGGER_CAN_EXPLAIN:
            return False
        return bool(EXCEPTION_LINE.match(stripped) or TRACEBACK_END.match(stripped))

    @staticmethod
    def _logged_os_error(stripped: str, text: str) -> bool:
        """Whether this line, no exception line itself, logs an OSError's text at error level
        (`_LOGGED_OS_ERROR`)."""
        return (
            _LOGGED_OS_ERROR.search(stripped) is not None
            and EXCEPTION_LINE.match(stripped) is None
            and _BELOW_ERROR.match(text) is None
        )

    def _name_not_found(self, kind: Kind | UserKind | None, stripped: str) -> bool:
        """Whether this line is the exception of a look-up the settings decide, where no kind
        explains it: a KeyError that a name's look-up in a registry or mapping raised
        (`_NAME_LOOKUP`) or a data record's field's (`_RECORD_LOOKUP`), an IndexError that a
        position's in a list of devices raised (`_DEVICE_LOOKUP`)."""
        if not self._in_traceback or kind not in (None, UNKNOWN):
            return False
        if self._looking_up and _KEY_ERROR.match(stripped) is not None:
            return True
        return self._indexing_devices and _INDEX_ERROR.match(stripped) is not None

    def line(self, number: int, text: str, words: frozenset[bytes] | None = None) -> bool:
        """Take one cleaned line; lines must come in order, but need not all come. `words`:
        the trigger words the caller already found in it. False when the line said nothing:
        no kind, and no traceback begun, continued or ended by it. A line ajetd itself printed
        (its banner with the launch command, its exit line, a follower's note) says nothing.
        A paste that lost its newlines (`shape.glued_lines`) is read as its lines, each."""
        parts = glued_lines(strip_dress(text)) if "pid=" in text else None
        if parts is None:
            return self._line(number, text, words)
        said = False
        for part in parts:  # every one is read, whatever the one before it said
            said = self._line(number, part, None) or said
        return said

    def _line(self, number: int, text: str, words: frozenset[bytes] | None) -> bool:
        """`line` for one line."""
        if text.startswith(OWN_LINE_PREFIX):
            return False
        glued = text.rfind(OWN_LINE_PREFIX)  # a line without its newline, then one of ajetd's
        if glued > 0:  # (the exit line, a follower's note: the last on the line, never holding
            text = text[:glued]  # the prefix; the program's own text may quote it)
        quoted = "#" in text and not self._in_traceback and _CODE_COMMENT.match(strip_dress(text))
        said = False if quoted else self._one_line(number, text, words)  # (a comment: nothing)
        self._previous = (number, text)
        return said

    def _c10_report(self, number: int, body: str, stripped: str) -> bool:
        """Read c10's report of where a C++ exception was raised (`_C10_REPORT`), outside a
        traceback: an exception no kind explains, where no line just above it said its message
        was a failure or a warning. False when the line is no such report."""
        if self._in_traceback or not stripped.startswith("Exception raised from "):
            return False
        if _C10_REPORT.match(stripped) is None:
            return False
        if number - self._found_at <= MAX_C10_MESSAGE_LINES:
            return True  # its message was read
        at, above = self._previous
        if number - at <= 2:  # (a blank line between them, in a paste)
            above = strip_dress(above).strip()
            if _GLOG_BELOW_ERROR.match(above) or _BELOW_ERROR.match(above):
                return True
        self._record(UNKNOWN, number, body, UNEXPLAINED)
        return True

    def _one_line(self, number: int, text: str, words: frozenset[bytes] | None) -> bool:
        """`_line` for a line of the program's own (`text`: without ajetd's), but for noting
        what it read."""
        body = strip_dress(text)
        stripped, indent = body.strip(), len(body) - len(body.lstrip())
        if stripped[:1] in _BOX_EDGES and self._rich_box(number, body, indent, stripped):
            return self._in_traceback
        if self._notebook_header(number, body, stripped) or self._reports_ignored(stripped):
            return True
        if stripped.endswith(_TRACEBACK):
            known = False
            if stripped != _TRACEBACK:  # `EngineCore hit an exception: Traceback (...):`
                kind, rank = self._kind(body, words)
                if kind is not None:
                    known = kind is not UNKNOWN
                    self._record(kind, number, body, rank)
            self._open(number, body, known, indent if stripped == _TRACEBACK else 0, False)
            self._ignored = stripped == _TRACEBACK and self._after_ignored(number)
            return True
        if self._c10_report(number, body, stripped):
            return True  # (read for where it is, never remembered as saying nothing)
        if _FRAME.match(body):
            self._at_frame(number, body, indent)
        if self._in_traceback and (indent > self._traceback_indent or not stripped):
            code = self._frame(number, body, stripped)
            kind = None if code else classify(body, words)  # the traceback goes on
            if kind is not None:
                self._traceback_known = True
                rank = NOTED if self._ignored else ECHO if kind.consequence else SPECIFIC
                self._record(kind, number, body, rank, self._ignored)
            self._traceback_lines += 1
            if self._traceback_lines > MAX_TRACEBACK_LINES:
                self._in_traceback = False
            return True
        if (
            self._in_traceback
            and self._ignored
            and self._ignored_line(number, body, stripped, words)
        ):
            return True
        kind, rank = self._kind(body, words)
        if kind is None and self._logged_os_error(stripped, text):
            kind, rank = UNKNOWN, UNEXPLAINED
        if self._raised_by_logger(kind, stripped):
            kind, rank = BY_NAME["logger_error"], SPECIFIC
        elif self._name_not_found(kind, stripped):
            kind, rank = _NAME_NOT_FOUND, SPECIFIC
        if kind is not None:
            warned = logged_as_warning(text)  # (a retry, a fallback): not what ended the run
            # where an exception no kind explains did (after it, as a retry reported)
            rank = NOTED if rank == SPECIFIC and warned else rank
            self._record(kind, number, body, rank, warned)
        if not self._in_traceback:
            return kind is not None
        if self._headerless and (ended := self._stray_line(body, stripped, kind)) is not None:
            return ended
        self._traceback_lines += 1
        if kind is not None:
            self._traceback_known = True
        if stripped.startswith(_CHAINED) or not TRACEBACK_END.match(stripped):
            # a separator, or another process's line printed in the middle: it goes on
            if self._traceback_lines > MAX_TRACEBACK_LINES:
                self._in_traceback = False
            return True
        # the first unindented line shaped like `module.Class: message` is the exception
        self._in_traceback = False
        if kind is None and not self._traceback_known and not BENIGN.match(stripped):
            self._record(UNKNOWN, number, body, UNEXPLAINED)
        return True

    def _reports_ignored(self, stripped: str) -> bool:
        """Whether this line, outside a traceback, is Python's report that it ignored an
        exception (`_EXCEPTION_IGNORED`): read, never remembered as quiet, as the traceback
        below it is known by it."""
        return not self._in_traceback and _EXCEPTION_IGNORED.match(stripped) is not None

    def _after_ignored(self, number: int) -> bool:
        """Whether the line just above a traceback's header is Python's report that it
        ignored the exception (`_EXCEPTION_IGNORED`)."""
        at, above = self._previous
        return number - at <= 1 and _EXCEPTION_IGNORED.match(strip_dress(above).strip()) is not None

    def _ignored_line(
        self, number: int, body: str, stripped: str, words: frozenset[bytes] | None
    ) -> bool:
        """An unindented line of a traceback Python reports as ignored (`sys.unraisablehook`:
        `Exception ignored in: <function X.__del__ ...>`, then the traceback): the program went
        on, so what it names is a notice (a DeepSpeed op whose build failed shows only there:
        `'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'`, LMFlow#471) and an
        exception no kind explains is none at all; its exception line ends it. Any other line
        (`step 5`, `Segmentation fault`: another rank's, printed in the middle) ends it too and
        is not its: False, read as any line outside a traceback (an exception line after it
        is no longer taken for the ignored one's). True: read."""
        chained = stripped.startswith(_CHAINED)  # (an exception's class by its name: not
        # `step:12 - actor/pg_loss:nan`, which `TRACEBACK_END` takes for one)
        if not chained and EXCEPTION_LINE.match(stripped) is None:
            self._in_traceback = self._ignored = False
            return False
        kind, _ = self._kind(body, words)
        if kind is not None and kind is not UNKNOWN:
            self._traceback_known = True
            self._record(kind, number, body, NOTED, True)
        self._traceback_lines += 1
        if not chained or self._traceback_lines > MAX_TRACEBACK_LINES:
            self._in_traceback = self._ignored = False
        return True

    def _notebook_header(self, number: int, body: str, stripped: str) -> bool:
        """Note a notebook's traceback header (`_NOTEBOOK_HEADER`) until an exception line
        follows it; True when this line is one."""
        if self._notebook is not None and EXCEPTION_LINE.match(stripped):
            self._notebook = None  # its exception line: read as any
        if not stripped.endswith(_NOTEBOOK_TAIL):
            return False
        notebook = _NOTEBOOK_HEADER.match(stripped)
        if notebook is None or EXCEPTION_LINE.match(notebook[1]) is None:
            return False
        self._notebook = (number, body, notebook[1], sum(self._counts.values()))
        return True

    def _stray_line(self, body: str, stripped: str, kind: Kind | UserKind | None) -> bool | None:
        """A line of a headerless traceback, unindented (`kind`: what it named): None when it
        is the traceback's own (a frame, even one that lost its indentation; an exception
        line; a line that named a kind); else whether it said something. A line that is not
        its own ends it only when the next one does not go on with it: another process's line
        printed in the middle of a paste (another worker's, another rank's) is not its end, and
        the end is read at the next line (`_headerless_ended`; at the output's end, `end`)."""
        if kind is not None or EXCEPTION_LINE.match(stripped) or _FRAME.match(body):
            self._stray = None
            return None
        stray, self._stray = self._stray, stripped
        if stray is None:
            return True
        self._stray = None
        return self._headerless_ended(stray)

    def _headerless_ended(self, stripped: str) -> bool:
        """Frames without a header, then a line that is no exception's: a stack a program
        printed and went on from (logging's stack_info, traceback.print_stack, asyncio's
        `Coroutine created at`), not a paste of a traceback's lower part; unless the last
        frame's source raises: no stack printed to go on from ends in a raise statement, so
        that is a traceback whose exception line was lost from the paste (the message alone
        below it, SwanLab#1014), and the statement names what ended the program. True when
        the line said that."""
        self._in_traceback = False
        if self._traceback_known:
            return False
        if self._raising is None:
            if not self._marked:
                return False
            # frames whose source Python marked with carets (`~~~~^^^^`, 3.11 and later):
            # it marks the position that raised only in an exception's traceback, never in a
            # stack printed to go on from (`traceback.print_stack`, logging's `stack_info`:
            # no positions), so the exception line was lost from the paste (agent-lightning#218:
            # the frames, then the server's log lines)
            self._record(UNKNOWN, self._traceback_at, self._traceback_header, UNEXPLAINED)
            return True
        at, said = self._raising
        self._raised(at, f"{said} {stripped}"[:MAX_RAISE_CHARS], UNKNOWN)
        return True

    def _rich_box(self, number: int, body: str, indent: int, stripped: str) -> bool:
        """Read a line of a Rich traceback's box (`_RICH_HEADER`): its header opens a traceback,
        which its exception line, after the box, ends; the lines inside are code. False when
        the line is not one."""
        if _RICH_HEADER.match(stripped):
            self._open(number, body, False, indent, False)
            self._in_box = True
            return True
        if stripped[0] == "╰":
            was, self._in_box = self._in_box, False
            return was
        if not (self._in_box or _RICH_BOXED.match(stripped)):
            return False
        if self._in_traceback:
            self._traceback_lines += 1
            if self._traceback_lines > MAX_TRACEBACK_LINES:
                self._in_traceback = self._in_box = False
        return True

    def _at_frame(self, number: int, body: str, indent: int) -> None:
        """A frame's line: outside a traceback, one pasted from below its header begins it;
        inside, a new frame (even one printed unindented) ends the last one's device look-up."""
        if not self._in_traceback:
            self._open(number, body, False, max(indent - 1, 0), True)
        else:
            self._indexing_devices = False

    def _open(self, number: int, body: str, known: bool, indent: int, headerless: bool) -> None:
        """A traceback begins at this line (its header, or its first frame when the header is
        not shown); `indent`: deeper lines go on with it."""
        self._in_traceback, self._traceback_known, self._traceback_lines = True, known, 0
        self._in_box = self._ignored = False
        self._traceback_at, self._traceback_header = number, body
        self._in_logger, self._importing, self._headerless = False, None, headerless
        self._stray = None
        self._looking_up = self._in_getitem = self._indexing_devices = False
        self._raising, self._frame_indent = None, -1
        self._marked = False
        self._traceback_indent = indent

    def _frame(self, number: int, body: str, stripped: str) -> bool:
        """Note what a line inside a traceback says of its last frame: an experiment logger's
        code, an import running, a statement raising. True when the line is the frame's
        source (all a frame's lines down to the next frame: a statement may span several)."""
        if stripped:
            self._stray = None  # the traceback went on past a line not its own (`_stray_line`)
        if stripped.startswith("File "):
            self._frame_indent, self._raising = len(body) - len(body.lstrip()), None
            self._in_logger = bool(_LOGGER_FRAME.match(body))
            if _IMPORT_FRAME.match(body):
                self._importing = (number, body)
            self._in_getitem = _GETITEM_FRAME.match(body) is not None
            self._indexing_devices = False
            # a look-up goes on into the mapping's own `__getitem__`, and ends with any other
            self._looking_up = self._looking_up and self._in_getitem
            return False
        source = (
            self._frame_indent >= 0
            and len(body) - len(body.lstrip()) > self._frame_indent
            and EXCEPTION_LINE.match(stripped) is None  # (an exception printed in the frames)
        )
        if not source:
            self._frame_indent = -1  # (a line as indented as the frame ends its source)
        if _CARETS.match(stripped):
            self._marked = True
        elif stripped:  # the frame's source line
            self._importing = (number, body) if _IMPORT_SOURCE.match(body) else None
            if "[" in body and (_NAME_LOOKUP.search(body) or _RECORD_LOOKUP.search(body)):
                self._looking_up = True
            if "[" in body:
                self._indexing_devices = _DEVICE_LOOKUP.search(body) is not None
            if source and self._raising is not None:  # a raise statement that goes on
                at, said = self._raising
                self._raising = at, f"{said} {stripped}"[:MAX_RAISE_CHARS]
            elif source and _RAISE.match(stripped):
                self._raising = number, stripped
        return source

    def end(self) -> None:
        """The output has ended: a traceback still open (cut before its exception line) and
        unexplained by its frames is an exception no kind explains, or an import's failure
        when it was cut while importing. A headerless one whose last line is not its own
        ended at that line (`_headerless_ended`)."""
        if self._in_traceback and self._stray is not None:
            stray, self._stray = self._stray, None
            self._headerless_ended(stray)
        if self._in_traceback and not self._traceback_known:
            raised = None if self._raising is None else classify(self._raising[1])
            if raised is not None and self._raising is not None:  # the statement names it
                self._raised(*self._raising, None)
            elif self._importing is not None:
                self._record(BY_NAME["import_error"], *self._importing, SPECIFIC)
            elif not (self._headerless and UNKNOWN.name in self._first):  # (a line before it,
                # `Exception raised in creation task`, already said more than a frame can)
                self._record(UNKNOWN, self._traceback_at, self._traceback_header, UNEXPLAINED)
        self._in_traceback = self._in_box = False
        if self._notebook is not None:
            at, header, cls, seen = self._notebook
            if sum(self._counts.values()) == seen:  # nothing read below it: its class says
                kind, rank = self._kind(cls, None)
                self._record(kind or UNKNOWN, at, header, rank if kind else UNEXPLAINED)
            self._notebook = None

    def _raised(self, number: int, statement: str, otherwise: Kind | None) -> None:
        """Record what a frame's raise statement says ended the program (a traceback whose
        exception line is not there): the kind its words name, else `otherwise`."""
        kind = classify(statement) or otherwise
        if kind is not None:
            rank = ECHO if kind.consequence else SPECIFIC
            self._record(kind, number, statement, UNEXPLAINED if kind is UNKNOWN else rank)

    def kinds(self) -> frozenset[str]:
        """The kinds seen so far (without building their findings)."""
        return frozenset(self._first)

    def findings(self) -> list[Finding]:
        """Every kind seen, root cause first, each with how many lines showed it."""
        found = [replace_count(f, self._counts[f.kind]) for f in self._first.values()]
        return sorted(found, key=lambda f: (self._rank[f.kind], self._at[f.kind]))


def _names_causes(kind: Kind, text: str) -> bool:
    """Whether this line of `kind` names the causes of the kinds it explains
    (`Kind.explains_from`)."""
    return kind.explains_from is None or kind.explains_from.search(text) is not None


def replace_count(finding: Finding, count: int) -> Finding:
    return replace(finding, count=count)
