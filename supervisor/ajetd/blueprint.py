"""Parse `blueprint.md` (seed 001's eight parts) into a `Blueprint`; pure, no filesystem.

People write blueprints in many ways: headings (`## [exp_purpose]`, `## 实验目的`), bullets
(`- [exp_purpose] 实验目的：...`), bold labels (`**exp_purpose**: ...`), values inline, on the
following lines, in backticks or fenced blocks. The scanner finds label lines, collects each
part's raw text up to the next label or heading, then cleans it per part. Any text gives either
a `Blueprint` or a `BlueprintError` listing every problem found, never another exception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ajetd.durations import parse_duration
from ajetd.errors import AjetdError, BlueprintError
from ajetd.options import Options, parse_options

REQUIRED = (
    "exp_purpose",
    "exp_codebase_dir",
    "exp_venv_exe",
    "exp_yaml_path",
    "exp_launch_command",
    "exp_result_dir",
    "exp_max_time",
)
# Canonical part -> labels people use for it (compared case-insensitively, longest first).
LABELS: dict[str, tuple[str, ...]] = {
    "exp_purpose": ("exp_purpose", "实验目的"),
    "exp_codebase_dir": ("exp_codebase_dir", "主实验代码路径", "实验代码路径"),
    "exp_venv_exe": ("exp_venv_exe", "python虚拟环境路径", "虚拟环境路径"),
    "exp_yaml_path": ("exp_yaml_path", "实验配置文件路径", "配置文件路径"),
    "exp_launch_command": ("exp_launch_command", "执行训练的命令", "训练命令"),
    "exp_result_dir": ("exp_result_dir", "结果数据存储路径", "结果存储路径"),
    "exp_max_time": ("exp_max_time", "运行时间不超过", "运行时间", "最长运行时间"),
    "exp_notes": (
        "exp_notes",
        "exp_other",
        "exp_other_info",
        "other_notes",
        "其他实验相关信息",
        "其他实验信息",
    ),
    "ajetd": ("ajetd",),
}
# Labels accepted only in a structured position (heading, bullet, bold, brackets), never on a
# plain line, where an English word would too often be prose.
_STRUCTURED_ONLY: dict[str, tuple[str, ...]] = {"exp_notes": ("other notes", "other", "notes")}

_ALIASES: list[tuple[str, str, bool]] = sorted(
    [(label.lower(), part, False) for part, labels in LABELS.items() for label in labels]
    + [(label, part, True) for part, labels in _STRUCTURED_ONLY.items() for label in labels],
    key=lambda item: len(item[0]),
    reverse=True,
)
_PREFIX = re.compile(
    r"^\s{0,3}(?:(?P<heading>#{1,6})\s*(?:\d{1,2}[.)]\s*)?|(?P<bullet>[-*+]|\d{1,2}[.)])\s+)?"
)
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_BRACKET = re.compile(r"\[\s*([^\]\n]{1,40}?)\s*\]")
_PAREN = re.compile(r"^\s*(?:\([^)\n]*\)|（[^）\n]*）)")
_COLON = re.compile(r"^\s*(?:\*\*|__)?\s*[:：]")
_WORD_CHAR = re.compile(r"[A-Za-z0-9_]")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


@dataclass(frozen=True)
class Blueprint:
    """An accepted blueprint: every required part present and well-formed (paths unchecked)."""

    purpose: str
    codebase_dir: str
    venv_exe: str
    yaml_path: str
    launch_command: str
    result_dir: str
    max_time_s: float
    max_time_text: str
    notes: str
    options: Options


@dataclass(frozen=True)
class _Label:
    part: str
    inline: str | None  # text after the label on the same line (None: nothing there)


def _normalise(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip().strip("*_`").strip()).lower()


def _match_label(line: str) -> _Label | None:
    """Recognise a label line; return its part and the text after the label, else None."""
    prefix = _PREFIX.match(line)
    assert prefix is not None  # the pattern matches the empty string
    structured = bool(prefix.group("heading") or prefix.group("bullet"))
    rest = line[prefix.end() :]
    bold = rest.startswith(("**", "__"))
    if bold:
        rest = rest[2:]
    bracket = _BRACKET.match(rest)
    part: str | None = None
    if bracket:
        part = _lookup(_normalise(bracket.group(1)), structured=True)
        tail = rest[bracket.end() :]
        bracketed = part is not None
    else:
        bracketed = False
        lowered = rest.lower()
        for alias, candidate, structured_only in _ALIASES:
            if not lowered.startswith(alias):
                continue
            if structured_only and not (structured or bold):
                continue
            after = rest[len(alias) : len(alias) + 1]
            if alias.isascii() and after and _WORD_CHAR.match(after):
                continue
            part, tail = candidate, rest[len(alias) :]
            break
    if part is None:
        return None
    tail = _strip_label_words(part, tail)
    colon = _COLON.match(tail)
    if colon:
        value = tail[colon.end() :].strip()
        if value.startswith(("**", "__")):
            value = value[2:].strip()
        return _Label(part, value or None)
    tail = tail.strip()
    if tail.endswith(("**", "__")):
        tail = tail[:-2].strip()
    if not tail:
        return _Label(part, None)
    # Without a colon, a value may follow only a bracketed key or a heading.
    if bracketed or prefix.group("heading"):
        return _Label(part, tail)
    return None


def _lookup(name: str, *, structured: bool) -> str | None:
    for alias, part, structured_only in _ALIASES:
        if _normalise(alias) == name and (structured or not structured_only):
            return part
    return None


def _strip_label_words(part: str, tail: str) -> str:
    """Drop a label's own words after the key: `**`, its Chinese label, `（一段文本）`."""
    labels = sorted((lab for lab in LABELS[part]), key=len, reverse=True)
    changed = True
    while changed:
        changed = False
        stripped = tail.lstrip()
        for marker in ("**", "__"):
            if stripped.startswith(marker):
                stripped, changed = stripped[2:], True
        for label in labels:
            if stripped.lower().startswith(label.lower()) and not label.isascii():
                stripped, changed = stripped[len(label) :], True
                break
        paren = _PAREN.match(stripped)
        if paren:
            stripped, changed = stripped[paren.end() :], True
        if changed:
            tail = stripped
    return tail


def extract_parts(text: str) -> dict[str, str]:
    """Return each labelled part's raw text (first occurrence wins), uncleaned.

    HTML comments are dropped first: they do not show when the Markdown is rendered, so they
    are never part of what the author wrote as a value.
    """
    text = _COMMENT.sub("", text)
    parts: dict[str, list[str]] = {}
    current: list[str] | None = None
    fence: str | None = None
    for line in text.splitlines():
        fence_match = _FENCE.match(line)
        if fence is not None:
            if fence_match and _closes(fence_match.group(1), fence):
                fence = None
            if current is not None:
                current.append(line)
            continue
        if fence_match:
            fence = fence_match.group(1)
            if current is not None:
                current.append(line)
            continue
        label = _match_label(line)
        if label is not None:
            current = [] if label.part not in parts else None
            if current is not None:
                parts[label.part] = current
                if label.inline is not None:
                    current.append(label.inline)
            continue
        if re.match(r"^\s{0,3}#{1,6}\s", line):  # an unrelated heading ends the part
            current = None
            continue
        if current is not None:
            current.append(line)
    return {part: "\n".join(lines).strip() for part, lines in parts.items()}


def _closes(candidate: str, opening: str) -> bool:
    """A fence closes with the same character, at least as long as the opening one."""
    return candidate[0] == opening[0] and len(candidate) >= len(opening)


def _fenced_body(raw: str) -> str | None:
    lines = raw.splitlines()
    for i, line in enumerate(lines):
        opening = _FENCE.match(line)
        if not opening:
            continue
        marker = opening.group(1)
        body: list[str] = []
        for inner in lines[i + 1 :]:
            closing = _FENCE.match(inner)
            if closing and _closes(closing.group(1), marker):
                break
            body.append(inner)
        return "\n".join(body).strip()
    return None


def clean_value(raw: str) -> str:
    """A single value (a path, a command): fenced body, else first backtick span, else line."""
    fenced = _fenced_body(raw)
    if fenced is not None:
        return fenced
    ticks = re.search(r"(`+)(.+?)\1", raw, re.DOTALL)
    if ticks:
        return ticks.group(2).strip()
    for line in raw.splitlines():
        text = re.sub(r"^\s*(?:[-*+]|>)\s+", "", line).strip()
        if text:
            return text.strip("\"'")
    return ""


def clean_path(raw: str) -> str:
    """A path: the value's first token, unless backticks or a fence say exactly what it is."""
    value = clean_value(raw)
    if "`" in raw:
        return value.strip("\"'")
    token = value.split()[0] if value.split() else ""
    return token.strip("\"'").rstrip("，,。;；")


def clean_text(raw: str) -> str:
    """Prose (purpose, notes): kept as written, outer blank lines and a lone fence removed."""
    fenced = _fenced_body(raw)
    if fenced is not None and raw.lstrip().startswith(("```", "~~~")):
        return fenced
    whole = re.fullmatch(r"\s*(`+)([^`]+)\1\s*", raw)
    if whole:
        return whole.group(2).strip()
    return raw.strip()


def parse_blueprint(text: str) -> Blueprint:
    """Parse a blueprint's text; raise BlueprintError naming every problem at once."""
    raw = extract_parts(text)
    problems = [
        f"{part}: missing (write it as `## [{part}]` or `- [{part}] ...: value`)"
        for part in REQUIRED
        if not raw.get(part, "").strip()
    ]
    max_time_s = 0.0
    if raw.get("exp_max_time", "").strip():
        try:
            max_time_s = parse_duration(clean_text(raw["exp_max_time"]).replace("`", " "))
        except AjetdError as exc:
            problems.append(f"exp_max_time: {exc}")
    options = Options()
    try:
        options = parse_options(raw.get("ajetd", ""))
    except BlueprintError as exc:
        problems.extend(f"[ajetd]: {p}" for p in exc.problems)
    command = clean_value(raw.get("exp_launch_command", ""))
    if raw.get("exp_launch_command", "").strip() and not command:
        problems.append("exp_launch_command: empty command")
    if problems:
        raise BlueprintError(problems)
    return Blueprint(
        purpose=clean_text(raw["exp_purpose"]),
        codebase_dir=clean_path(raw["exp_codebase_dir"]),
        venv_exe=clean_path(raw["exp_venv_exe"]),
        yaml_path=clean_path(raw["exp_yaml_path"]),
        launch_command=command,
        result_dir=clean_path(raw["exp_result_dir"]),
        max_time_s=max_time_s,
        max_time_text=clean_text(raw["exp_max_time"]),
        notes=clean_text(raw.get("exp_notes", "")),
        options=options,
    )
