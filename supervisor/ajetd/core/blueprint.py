"""Parse `blueprint.md` (seed 001's eight parts) into a `Blueprint`; pure, no filesystem.

People write blueprints in many ways: headings (`## [exp_purpose]`, `## 实验目的`), bullets
(`- [exp_purpose] 实验目的：...`), bold labels (`**exp_purpose**: ...`), values inline, on the
following lines, in backticks or fenced blocks. The scanner finds label lines, collects each
part's raw text up to the next label or heading, then cleans it per part.

The promise: any text gives either a `Blueprint` or a `BlueprintError` listing every problem
found (each naming its part, and its key within `[ajetd]`), never another exception, and in
time linear in its length (a 1 MiB blueprint in tens of milliseconds: `bench/fuzz.py`). A part
given twice is an error naming both lines; a path that Linux could not take (control
characters, NUL, a name over 255 bytes) is refused by its part's name.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from ajetd.core.durations import parse_duration
from ajetd.core.errors import AjetdError, BlueprintError
from ajetd.core.markdown import FENCE as _FENCE
from ajetd.core.markdown import blank_comments, closing_fence, code_span, fenced_body
from ajetd.core.options import Options, parse_options
from ajetd.core.values import control_character, path_problem

MAX_BYTES = MAX_CHARS = 1024 * 1024  # the daemon reads at most 1 MiB of a blueprint; lint too
MAX_COMMAND_CHARS = 64 * 1024  # Linux takes at most 128 KiB in one argument
PATH_PARTS = ("exp_codebase_dir", "exp_venv_exe", "exp_yaml_path", "exp_result_dir")

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
_BY_NAME: dict[str, tuple[str, bool]] = {}
for _alias, _part, _structured_only in reversed(_ALIASES):
    _BY_NAME[re.sub(r"[\s\-]+", "_", _alias.strip().strip("*_`").strip()).lower()] = (
        _part,
        _structured_only,
    )
_NON_ASCII_LABELS = {
    part: tuple(sorted((lab.lower() for lab in labels if not lab.isascii()), key=len, reverse=True))
    for part, labels in LABELS.items()
}
_PREFIX = re.compile(
    r"^\s{0,3}(?:(?P<heading>#{1,6})\s*(?:\d{1,2}[.)]\s*)?|(?P<bullet>[-*+]|\d{1,2}[.)])\s+)?"
)
_BRACKET = re.compile(r"\[\s*([^\]\n]{1,40}?)\s*\]")
_PAREN = re.compile(r"\s*(?:\([^)\n]{0,200}\)|（[^）\n]{0,200}）)")
_COLON = re.compile(r"\s*(?:(?:\*\*|__)\s*)?[:：]")
_SPACE = re.compile(r"\s*")
_WORD_CHAR = re.compile(r"[A-Za-z0-9_]")
_HEADING = re.compile(r"\s{0,3}#{1,6}\s")
# Line breaks as str.splitlines() sees them, made plain "\n" so that one split agrees.
_BREAK_CHARS = "\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_BREAKS = re.compile(rf"\r\n?|[{_BREAK_CHARS}]")
_LABEL_START = "|".join(
    sorted({re.escape(alias) for alias, _, _ in _ALIASES} | {r"\["}, key=len, reverse=True)
)
# A line that may be a fence, a heading or a label (what _match_label may accept starts so).
_INTERESTING = re.compile(
    r"\n(?:[^\S\n]*(?:`{3}|~{3})|[^\S\n]{0,3}(?:#|(?:(?:[-*+]|\d{1,2}[.)])[^\S\n]+)?"
    rf"(?:\*\*|__)?(?:{_LABEL_START})))"
)
MAX_TWICE = 20


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
    found = _BY_NAME.get(name)
    if found is None or (found[1] and not structured):
        return None
    return found[0]


def _strip_label_words(part: str, tail: str) -> str:
    """Drop a label's own words after the key: `**`, its Chinese label, `（一段文本）`.

    One pass with a position (no copies of the rest of the line per step): a line of ten
    thousand `**` costs ten thousand steps, not their square."""
    labels = _NON_ASCII_LABELS[part]
    pos = 0
    while True:
        space = _SPACE.match(tail, pos)
        at = space.end() if space else pos
        changed = False
        for marker in ("**", "__"):
            if tail.startswith(marker, at):
                at, changed = at + 2, True
        for label in labels:
            if tail[at : at + len(label)].lower() == label:
                at, changed = at + len(label), True
                break
        paren = _PAREN.match(tail, at)
        if paren:
            at, changed = paren.end(), True
        if not changed:
            return tail[pos:]
        pos = at


def extract_parts(text: str) -> dict[str, str]:
    """Return each labelled part's raw text (first occurrence wins), uncleaned."""
    return scan_parts(text)[0]


def _lines_and_lowered(text: str) -> tuple[list[str], str]:
    """The text's lines (lines[n] is line n, from 1), its HTML comments blanked and its odd
    line breaks made plain, and the same text lowered for the case-free search (only its line
    breaks are counted: a character whose lower case is longer moves positions, never line
    numbers)."""
    text = "\n" + blank_comments(text)
    if any(mark in text for mark in _BREAK_CHARS):  # rare: spare the whole-text pass
        text = _BREAKS.sub("\n", text)
    return text.split("\n"), text.lower()


def scan_parts(text: str) -> tuple[dict[str, str], list[str]]:
    """Each labelled part's raw text, and a problem for each part given twice (naming both
    lines; the first is kept).

    HTML comments are blanked first: they do not show when the Markdown is rendered, so they
    are never part of a value. Inside the notes, a `- notes:` bullet is text of the notes.
    One pattern finds the lines that may matter (fences, headings, lines that start like a
    label); the lines between them are taken whole, so plain text costs no Python per line.
    """
    lines, lowered = _lines_and_lowered(text)
    parts: dict[str, list[str]] = {}
    lines_of: dict[str, int] = {}
    twice: list[str] = []
    current: list[str] | None = None
    number, pos, previous = 0, 0, 0
    while (found := _INTERESTING.search(lowered, pos)) is not None:
        number += lowered.count("\n", pos, found.start() + 1)
        pos = found.start() + 1
        if current is not None:
            current += lines[previous + 1 : number]
        previous = number
        line = lines[number]
        fence_match = _FENCE.match(line)
        if fence_match:  # a fenced block is text as it stands, to its closing fence
            close = closing_fence(lowered, found.end(), fence_match.group(1))
            end = len(lines) - 1 if close is None else number + lowered.count("\n", pos, close + 1)
            if current is not None:
                current += lines[number : end + 1]
            number = previous = end
            pos = len(lowered) if close is None else close + 1
            continue
        label = _match_label(line)
        if label is not None and label.part in parts:
            if label.part == "exp_notes" and current is parts["exp_notes"]:
                current.append(line)
                continue
            twice.append(
                f"{label.part}: given twice (lines {lines_of[label.part]} and {number}); keep one"
            )
            current = None
            if len(twice) >= MAX_TWICE:
                twice.append(f"blueprint: stopped reading at line {number} (too many repeats)")
                return _joined(parts), twice
            continue
        if label is not None:
            current = parts[label.part] = []
            lines_of[label.part] = number
            if label.inline is not None:
                current.append(label.inline)
            continue
        if _HEADING.match(line):  # an unrelated heading ends the part
            current = None
            continue
        if current is not None:
            current.append(line)
    if current is not None:
        current += lines[previous + 1 :]
    return _joined(parts), twice


def _joined(parts: dict[str, list[str]]) -> dict[str, str]:
    return {part: "\n".join(lines).strip() for part, lines in parts.items()}


def clean_value(raw: str) -> str:
    """A single value (a path, a command): fenced body, else first backtick span, else line."""
    fenced = fenced_body(raw)
    if fenced is not None:
        return fenced
    span = code_span(raw)
    if span is not None:
        return span
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


def usable_path(part: str, raw: str) -> str:
    """The part's path, or "" where Linux could not take it (for a rejected blueprint's
    report: a NUL or an over-long name must not reach the filesystem there either)."""
    path = clean_path(raw)
    return "" if path_problem(part, path) else path


def clean_text(raw: str) -> str:
    """Prose (purpose, notes): kept as written, outer blank lines and a lone fence removed."""
    fenced = fenced_body(raw)
    if fenced is not None and raw.lstrip().startswith(("```", "~~~")):
        return fenced
    whole = re.fullmatch(r"\s*(`+)([^`]+)\1\s*", raw)
    if whole:
        return whole.group(2).strip()
    return raw.strip()


# Longest first: UTF-32 LE's mark begins with UTF-16 LE's.
_MARKS = {  # byte order mark -> codec
    codecs.BOM_UTF32_LE: "utf-32",
    codecs.BOM_UTF32_BE: "utf-32",
    codecs.BOM_UTF8: "utf-8-sig",
    codecs.BOM_UTF16_LE: "utf-16",
    codecs.BOM_UTF16_BE: "utf-16",
}
_SNIFF_BYTES = 4096


def decode_blueprint(raw: bytes) -> str:
    """A blueprint file's bytes (read at most MAX_BYTES + 1 of them) as text.

    UTF-8 unless the file says otherwise: editors on Windows save "Unicode" text as UTF-16
    with a byte-order mark (and PowerShell's `>` does too), and a UTF-8 mark is common; read as
    UTF-8, such a file would lose every part to NUL bytes. Without a mark, text whose every
    other byte is NUL is UTF-16 too. Bytes that do not decode are read as U+FFFD (refused where
    a path or the command holds one). Every reader of a blueprint (intake, lint, a restart, the
    reports) decodes through here, so a file reads the same everywhere.
    """
    if len(raw) > MAX_BYTES:
        raise BlueprintError(
            [f"blueprint: larger than {MAX_BYTES // 1024} KiB; is this the right file?"]
        )
    for mark, codec in _MARKS.items():
        if raw.startswith(mark):
            return raw.decode(codec, errors="replace")
    head = raw[:_SNIFF_BYTES]
    half = len(head) // 2
    if half >= 8:
        even, odd = head[0::2].count(0), head[1::2].count(0)
        if odd >= half * 0.4 and even == 0:
            return raw[: len(raw) // 2 * 2].decode("utf-16-le", errors="replace")
        if even >= half * 0.4 and odd == 0:
            return raw[: len(raw) // 2 * 2].decode("utf-16-be", errors="replace")
    return raw.decode("utf-8", errors="replace")


def parse_blueprint_bytes(raw: bytes) -> Blueprint:
    """Parse a blueprint file's bytes (read at most MAX_BYTES + 1 of them); see
    decode_blueprint for how they become text."""
    return parse_blueprint(decode_blueprint(raw))


def parse_blueprint(text: str) -> Blueprint:
    """Parse a blueprint's text; raise BlueprintError naming every problem at once."""
    if len(text) > MAX_CHARS:
        raise BlueprintError(
            [f"blueprint: larger than {MAX_CHARS // 1024} KiB; is this the right file?"]
        )
    raw, problems = scan_parts(text)
    problems += [
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
        problems.extend(f"[ajetd]: {p}" for p in exc.all_problems)
    command = clean_value(raw.get("exp_launch_command", ""))
    if raw.get("exp_launch_command", "").strip() and not command:
        problems.append("exp_launch_command: empty command")
    bad = control_character(command, allowed="\t\n")
    if bad:
        problems.append(f"exp_launch_command: holds {bad}")
    if len(command) > MAX_COMMAND_CHARS:
        problems.append(
            f"exp_launch_command: {len(command)} characters long (at most {MAX_COMMAND_CHARS}: "
            "put a long command in a script and run that)"
        )
    paths = {part: clean_path(raw.get(part, "")) for part in PATH_PARTS}
    problems += [p for p in (path_problem(part, path) for part, path in paths.items()) if p]
    if problems:
        raise BlueprintError(problems)
    return Blueprint(
        purpose=clean_text(raw["exp_purpose"]),
        codebase_dir=paths["exp_codebase_dir"],
        venv_exe=paths["exp_venv_exe"],
        yaml_path=paths["exp_yaml_path"],
        launch_command=command,
        result_dir=paths["exp_result_dir"],
        max_time_s=max_time_s,
        max_time_text=clean_text(raw["exp_max_time"]),
        notes=clean_text(raw.get("exp_notes", "")),
        options=options,
    )
