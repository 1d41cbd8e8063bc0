"""User-defined failure kinds: `$AJETD_HOME/kinds.yaml`, `[ajetd] kinds:`, `--kinds FILE`.

A user kind names a failure ajetd's catalogue does not know (a site's own launcher message, a
library's error) with its patterns, severity, explanation, fix and optionally a remedy ajetd
already has (a plain relaunch, an environment variable, proxychains). User kinds are tried
before the built-in ones.

Patterns are user input matched against every line of every log, so they must never stall the
daemon: they are RE2 expressions (`google-re2`), whose matching is linear in the line's length
whatever the pattern (no backtracking, no back-references), and their number and length are
bounded. Matching is case-insensitive and never crosses a line. Parsing is pure; problems are
collected as messages naming the kind, like the blueprint's other keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import re2

from ajetd.core import yamlpart
from ajetd.diagnosis.shape import DRESS_SOURCE

MAX_KINDS = 64
MAX_PATTERNS = 32  # per kind
MAX_PATTERN_CHARS = 500
MAX_TEXT_CHARS = 2000  # explanation, fix
MAX_FILE_BYTES = 256 * 1024
SEVERITIES = ("fatal", "retryable", "science")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FIELDS = ("name", "patterns", "severity", "explanation", "fix", "remedy")
REMEDY_WORDS = ("relaunch", "proxychains")
_INNER_ANCHOR = re.compile(r"(?<![\[\\])[\^$]")  # not `[^...]`, not `\^` or `\$`


def _options() -> Any:
    options = re2.Options()
    options.case_sensitive = False
    options.never_nl = True
    options.log_errors = False
    options.max_mem = 8 << 20  # a pattern whose program would be larger is refused
    return options


_RE2_OPTIONS = _options()


@dataclass(frozen=True)
class UserKind:
    """One user-defined kind. `remedy`: "" (none), "relaunch", "proxychains" or
    "env:NAME=VALUE" (relaunch once with that variable set)."""

    name: str
    severity: str
    explanation: str
    fix: str
    patterns: tuple[str, ...]
    remedy: str = ""


class KindSet:
    """Compiled user kinds, tried in order; `match` is linear-time in the line's length."""

    def __init__(self, kinds: tuple[UserKind, ...] = ()) -> None:
        self.kinds = kinds
        self._compiled = [(k, [re2.compile(p, _RE2_OPTIONS) for p in k.patterns]) for k in kinds]
        either = "|".join(f"(?:{_in_dress(p)})" for k in kinds for p in k.patterns)
        self._any = re2.compile(f"(?m){either}", _RE2_OPTIONS) if either else None
        # an anchor elsewhere than at a pattern's ends: undress the lines before searching
        self.anchored = any(_INNER_ANCHOR.search(p[1:-1]) for k in kinds for p in k.patterns)

    def __bool__(self) -> bool:
        return bool(self.kinds)

    def match(self, line: str) -> UserKind | None:
        """The first user kind one of whose patterns occurs in `line`."""
        for kind, patterns in self._compiled:
            if any(p.search(line) for p in patterns):
                return kind
        return None

    def line_starts(self, text: str) -> Iterator[int]:
        """Offsets of the lines of `text` in which some pattern may match (one pass)."""
        pattern = self._any
        if pattern is None:
            return
        last = -1
        for found in pattern.finditer(text):
            start = text.rfind("\n", 0, found.start()) + 1
            if start != last:
                last = start
                yield start

    def __add__(self, other: KindSet) -> KindSet:
        """Both sets, this one's kinds first (a name given twice keeps its first definition)."""
        names = {k.name for k in self.kinds}
        return KindSet((*self.kinds, *(k for k in other.kinds if k.name not in names)))


def _in_dress(pattern: str) -> str:
    """A pattern for finding, in raw lines, where `pattern` may match the undressed line: an
    anchor at its start may follow the line's dress (a Ray or vLLM prefix, a timestamp), one at
    its end may precede Ray's `[repeated Nx across cluster]` or a `\\r`."""
    if pattern.startswith("^"):
        pattern = f"^(?:{DRESS_SOURCE})*(?:{pattern[1:]})"
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = f"(?:{pattern[:-1]})(?:\\s*\\[repeated \\d+x across cluster\\])?\\s*$"
    return pattern


def _text(kind: str, key: str, value: Any, problems: list[str]) -> str:
    if not isinstance(value, str) or not value.strip():
        problems.append(f"kinds: {kind}: {key} must be a non-empty string")
        return ""
    if len(value) > MAX_TEXT_CHARS:
        problems.append(f"kinds: {kind}: {key} is longer than {MAX_TEXT_CHARS} characters")
    return value.strip()


def _patterns(kind: str, value: Any, problems: list[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        problems.append(f"kinds: {kind}: patterns must be a non-empty list of expressions")
        return ()
    if len(value) > MAX_PATTERNS:
        problems.append(f"kinds: {kind}: more than {MAX_PATTERNS} patterns")
        return ()
    good: list[str] = []
    for pattern in value:
        if not isinstance(pattern, str) or not pattern:
            problems.append(f"kinds: {kind}: pattern {pattern!r} is not a non-empty string")
        elif len(pattern) > MAX_PATTERN_CHARS:
            problems.append(
                f"kinds: {kind}: a pattern is longer than {MAX_PATTERN_CHARS} characters"
            )
        else:
            try:
                compiled = re2.compile(pattern, _RE2_OPTIONS)
            except re2.error as exc:
                why = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
                problems.append(f"kinds: {kind}: bad pattern {pattern!r}: {why} (RE2 syntax)")
                continue
            if compiled.search(""):
                problems.append(f"kinds: {kind}: pattern {pattern!r} matches every line")
                continue
            good.append(pattern)
    return tuple(good)


def _remedy(kind: str, value: Any, problems: list[str]) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, str) and value in REMEDY_WORDS:
        return value
    if isinstance(value, dict) and set(map(str, value)) == {"env"}:
        env = value["env"]
        if isinstance(env, dict) and len(env) == 1:
            ((name, val),) = env.items()
            if isinstance(name, str) and _ENV_NAME.match(name) and isinstance(val, (str, int)):
                return f"env:{name}={val}"
    problems.append(
        f"kinds: {kind}: remedy must be relaunch, proxychains or {{env: {{NAME: value}}}}, "
        f"got {value!r}"
    )
    return ""


def parse_kinds(data: Any, problems: list[str]) -> tuple[UserKind, ...]:
    """Validate user kinds (a YAML list, or a mapping whose `kinds:` holds it); every problem
    is appended to `problems`, naming the kind."""
    if data is None:
        return ()
    if isinstance(data, dict) and set(map(str, data)) == {"kinds"}:
        data = data["kinds"]
    if not isinstance(data, list) or not all(isinstance(k, dict) for k in data):
        problems.append("kinds: expected a list of {name, patterns, severity, explanation, fix}")
        return ()
    if len(data) > MAX_KINDS:
        problems.append(f"kinds: more than {MAX_KINDS} kinds")
        return ()
    kinds: list[UserKind] = []
    for i, raw in enumerate(data, 1):
        name = raw.get("name")
        label = str(name) if isinstance(name, str) and name else f"#{i}"
        before = len(problems)
        if not isinstance(name, str) or not _NAME.match(name):
            problems.append(f"kinds: {label}: name must match [a-z][a-z0-9_]*")
        unknown = sorted(set(map(str, raw)) - set(_FIELDS))
        if unknown:
            problems.append(
                f"kinds: {label}: unknown key {unknown[0]!r} (known: {', '.join(_FIELDS)})"
            )
        severity = raw.get("severity")
        if severity not in SEVERITIES:
            problems.append(
                f"kinds: {label}: severity must be fatal, retryable or science, got {severity!r}"
            )
        patterns = _patterns(label, raw.get("patterns"), problems)
        explanation = _text(label, "explanation", raw.get("explanation"), problems)
        fix = _text(label, "fix", raw.get("fix"), problems)
        remedy = _remedy(label, raw.get("remedy"), problems)
        if len(problems) == before:
            kinds.append(UserKind(label, str(severity), explanation, fix, patterns, remedy))
    if len({k.name for k in kinds}) != len(kinds):
        problems.append("kinds: two kinds have the same name")
    return tuple(kinds)


def load_kinds_file(path: Path) -> tuple[tuple[UserKind, ...], list[str]]:
    """The kinds a YAML file defines, and the problems found (a missing file: none, no
    problems)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return (), []
    except OSError as exc:
        return (), [f"{path}: cannot read: {exc.strerror}"]
    if len(raw) > MAX_FILE_BYTES:
        return (), [f"{path}: larger than {MAX_FILE_BYTES // 1024} KiB"]
    try:  # the bounded loader of `[ajetd]`: no aliases or tags, depth and size bounded
        data = yamlpart.load(raw.decode("utf-8", errors="replace"), max_chars=MAX_FILE_BYTES)
    except yamlpart.YamlError as exc:
        return (), [f"{path}: {exc}"]
    problems: list[str] = []
    kinds = parse_kinds(data, problems)
    return kinds, [f"{path}: {p}" for p in problems]


def home_kinds(home: Path) -> tuple[tuple[UserKind, ...], list[str]]:
    """`$AJETD_HOME/kinds.yaml`: its kinds (none when it has problems) and its problems."""
    kinds, problems = load_kinds_file(home / "kinds.yaml")
    return (() if problems else kinds), problems
