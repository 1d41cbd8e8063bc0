"""User-defined failure kinds as the user writes them (`$AJETD_HOME/kinds.yaml`,
`[ajetd] kinds:`, `--kinds FILE`): the `UserKind` record and its validation; pure.

A user kind names a failure ajetd's catalogue does not know (a site's own launcher message, a
library's error) with its patterns, severity, explanation, fix and optionally a remedy ajetd
already has (a plain relaunch, an environment variable, proxychains). User kinds are tried
before the built-in ones (matching: `ajetd.diagnosis.kindset`; the files are read by
`ajetd.adapters.kindsfile`).

Patterns are user input matched against every line of every log, so they must never stall the
daemon: they are RE2 expressions (`google-re2`), whose matching is linear in the line's length
whatever the pattern (no backtracking, no back-references), and their number and length are
bounded. Matching is case-insensitive and never crosses a line. Problems are collected as
messages naming the kind, like the blueprint's other keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import re2

from ajetd.core.envnames import env_name_problem
from ajetd.core.kindnames import BUILTIN_NAMES
from ajetd.core.values import unknown_keys

MAX_KINDS = 64
MAX_PATTERNS = 32  # per kind
MAX_PATTERN_CHARS = 500
MAX_TEXT_CHARS = 2000  # explanation, fix
SEVERITIES = ("fatal", "retryable", "science")
_NAME = re.compile(r"^[a-z][a-z0-9_]*\Z")
_FIELDS = ("name", "patterns", "severity", "explanation", "fix", "remedy")
REMEDY_WORDS = ("relaunch", "proxychains")


def _options() -> Any:
    options = re2.Options()
    options.case_sensitive = False
    options.never_nl = True
    options.log_errors = False
    options.max_mem = 8 << 20  # a pattern whose program would be larger is refused
    return options


RE2_OPTIONS = _options()


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
                compiled = re2.compile(pattern, RE2_OPTIONS)
            except re2.error as exc:
                why = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
                problems.append(f"kinds: {kind}: bad pattern {pattern!r}: {why} (RE2 syntax)")
                continue
            if compiled.search(""):
                problems.append(f"kinds: {kind}: pattern {pattern!r} matches every line")
                continue
            good.append(pattern)
    return tuple(good)


def _remedy(kind: str, value: Any, problems: list[str], admitted: bool = False) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, str) and value in REMEDY_WORDS:
        return value
    if isinstance(value, dict) and set(map(str, value)) == {"env"}:
        env = value["env"]
        if isinstance(env, dict) and len(env) == 1:
            ((name, val),) = env.items()
            if env_name_problem(name, admitted) and isinstance(val, (str, int)):
                why = env_name_problem(name, admitted)
                problems.append(f"kinds: {kind}: remedy env: {why}")
                return ""
            if isinstance(val, (str, int)):
                return f"env:{name}={val}"
    problems.append(
        f"kinds: {kind}: remedy must be relaunch, proxychains or {{env: {{NAME: value}}}}, "
        f"got {value!r}"
    )
    return ""


def parse_kinds(data: Any, problems: list[str], admitted: bool = False) -> tuple[UserKind, ...]:
    """Validate user kinds (a YAML list, or a mapping whose `kinds:` holds it); every problem
    is appended to `problems`, naming the kind (`admitted`: see `options.parse_options`)."""
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
        elif name in BUILTIN_NAMES and not admitted:
            problems.append(
                f"kinds: {label}: {name} is one of ajetd's built-in kinds; a user kind names "
                "a failure the catalogue does not know, and a built-in's severity, remedy and "
                "fixes are not replaced: choose another name"
            )
        unknown_keys(f"kinds: {label}", raw, _FIELDS, problems)
        severity = raw.get("severity")
        if severity not in SEVERITIES:
            problems.append(
                f"kinds: {label}: severity must be fatal, retryable or science, got {severity!r}"
            )
        patterns = _patterns(label, raw.get("patterns"), problems)
        explanation = _text(label, "explanation", raw.get("explanation"), problems)
        fix = _text(label, "fix", raw.get("fix"), problems)
        remedy = _remedy(label, raw.get("remedy"), problems, admitted)
        if len(problems) == before:
            kinds.append(UserKind(label, str(severity), explanation, fix, patterns, remedy))
    if len({k.name for k in kinds}) != len(kinds):
        problems.append("kinds: two kinds have the same name")
    return tuple(kinds)
