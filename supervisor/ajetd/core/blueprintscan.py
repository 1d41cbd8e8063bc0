"""Finding a blueprint's parts in its text: the labels people use for each part (headings,
bullets, bold labels, in English or Chinese), and one scan that collects each part's raw text
up to the next label or heading. Pure.

Linear in the text's length: one pattern finds the lines that may matter (fences, headings,
lines that start like a label); the lines between them are taken whole. `ajetd.core.blueprint`
cleans each part's raw text and checks it.
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass

from ajetd.core.markdown import FENCE as _FENCE
from ajetd.core.markdown import blank_comments, closes, closing_fence

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
# `[exp_purpose]`, or in full-width brackets as a Chinese IME types them, `【exp_purpose】`.
# The name starts and ends with a non-blank: `\s*(.{1,40}?)\s*` tried each split of a run of
# blanks against each length, cubic on an unclosed `[` before 20 KB of blanks (4.3 s, fuzz).
_BRACKET = re.compile(r"[\[【][^\S\n]*([^\]】\s](?:[^\]】\n]{0,38}[^\]】\s])?)[^\S\n]*[\]】]")
_PAREN = re.compile(r"\s*(?:\([^)\n]{0,200}\)|（[^）\n]{0,200}）)")
_COLON = re.compile(r"\s*(?:(?:\*\*|__)\s*)?[:：]")
_SPACE = re.compile(r"\s*")
_WORD_CHAR = re.compile(r"[A-Za-z0-9_]")
_HEADING = re.compile(r"\s{0,3}#{1,6}\s")
# Line breaks as str.splitlines() sees them, made plain "\n" so that one split agrees.
_BREAK_CHARS = "\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_BREAKS = re.compile(rf"\r\n?|[{_BREAK_CHARS}]")
_LABEL_START = "|".join(
    sorted({re.escape(alias) for alias, _, _ in _ALIASES} | {r"\[", "【"}, key=len, reverse=True)
)
_LABEL_START += "|exp"  # a key spelt otherwise: `exp-purpose`, `Exp Purpose`, `expPurpose`
# A key spelt with dashes, spaces or in camel case, in a structured position (`- **Exp
# Purpose**:`, `## exp-codebase-dir`): up to five words, each tried, longest first
_SPELT = re.compile(r"[A-Za-z][A-Za-z0-9]{0,20}(?:[ _\-][A-Za-z0-9]{1,20}){0,4}")
_WORD_GAP = re.compile(r"[ _\-]")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# A line that may be a fence, a heading or a label (what _match_label may accept starts so).
_INTERESTING = re.compile(
    r"\n(?:[^\S\n]*(?:`{3}|~{3})|[^\S\n]{0,3}(?:#|(?:(?:[-*+]|\d{1,2}[.)])[^\S\n]+)?"
    rf"(?:\*\*|__)?`?(?:{_LABEL_START})))"
)
MAX_TWICE = 20


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
    code = rest.startswith("`")  # a key in a code span, `exp_purpose`: as agents write it
    if code:
        rest = rest[1:]
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
        if part is None and (structured or bold or code):
            part, tail = _spelt(rest)
    if part is None:
        return None
    if code and tail.startswith("`"):
        tail = tail[1:]
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
        return _Label(part, _free_label_dropped(part, tail))
    return None


def _spelt(rest: str) -> tuple[str | None, str]:
    """A part's key spelt with dashes or spaces for its underscores, or in camel case, at
    the start of `rest` (`Exp Purpose: ...`, `exp-codebase-dir: ...`, `expMaxTime: ...`): its
    part and the text after the key, or (None, rest). The longest run of words that is a
    key wins; a word run on into letters is no key (`exp-purpose-ish`). Every such key
    begins with `exp`: any other start costs one match."""
    found = _SPELT.match(rest)
    if found is None or found.group()[:3].lower() != "exp":
        return None, rest
    ends, keys, start = [], [], 0
    for gap in [*_WORD_GAP.finditer(found.group()), None]:
        end = found.end() if gap is None else gap.start()
        keys.append(_CAMEL.sub("_", rest[start:end]).lower())
        ends.append(end)
        start = end + 1
    for n in range(len(keys), 0, -1):
        if n < len(keys) and not rest[ends[n - 1]].isspace():
            continue  # run on by `-` or `_` into another word: another name
        known = _BY_NAME.get("_".join(keys[:n]))
        if known is not None and known[0] != "ajetd":
            return known[0], rest[ends[n - 1] :]
    return None, rest


# A label of the writer's own before a value (`说明：/data/code`, `路径: /data/code`): up to 30
# characters, none of a path's, a command's quoting or an assignment's, then a colon (a full-
# width one, or an ASCII one and a space); not starting with a digit (`2:00` is a time)
_FREE_LABEL = re.compile(
    r"([^\d\s/\\=`'\"$:：][^/\\=`'\"$:：\n]{0,29}?)[ \t]*(?:：|:(?=[ \t]))[ \t]*"
)
_PROSE = ("exp_purpose", "exp_notes", "ajetd")
_EXAMPLE = ("例如", "比如", "举例")  # "for example": the template's wording, not a label


def _free_label_dropped(part: str, tail: str) -> str:
    """`tail` without a label of the writer's own before the value, as the seed's own labels
    are dropped (walk 86: `- [exp_codebase_dir] 说明：/data/code` was read as the path
    `说明：/data/code`). Prose keeps it; in the launch command only a label holding other
    than ASCII (`命令：`) is one: `echo a: b` is a command."""
    found = _FREE_LABEL.match(tail.strip())
    if found is None or part in _PROSE or not tail.strip()[found.end() :]:
        return tail
    if part == "exp_launch_command" and (found.group(1).isascii() or found.group(1) in _EXAMPLE):
        return tail  # `例如：python ...` is refused by the blueprint's check, not read as a label
    return tail.strip()[found.end() :]


def _lookup(name: str, *, structured: bool) -> str | None:
    found = _BY_NAME.get(name)
    if found is None or (found[1] and not structured):
        return None
    return found[0]


# the part's key after another label of it (`## 实验目的 [exp_purpose]`, `` `exp_purpose` ``,
# bare `exp_purpose`): a key's characters, bounded, ended where no key character follows
_KEY_WORD = re.compile(r"`?([A-Za-z][A-Za-z0-9_\-]{0,40})`?(?![A-Za-z0-9_\-])")


def _own_key(part: str, tail: str, at: int) -> int | None:
    """Where the part's own key written at `at` in `tail` ends (in brackets, a code span or
    bare), or None where none is: a label that names its part twice, the Chinese label
    first (walk97 F11: `## 实验目的 [exp_purpose]` read the purpose as `[exp_purpose] ...`,
    `- 实验目的 exp_purpose: x` was 'missing'). A word that is only a label in a structured
    position (`notes`) counts only in brackets or a code span: bare, it is prose."""
    bracket = _BRACKET.match(tail, at)
    if bracket:
        found = _lookup(_normalise(bracket.group(1)), structured=True)
        return bracket.end() if found == part else None
    word = _KEY_WORD.match(tail, at)
    if word is None:
        return None
    coded = word.group().startswith("`") and word.group().endswith("`")
    found = _lookup(_normalise(word.group(1)), structured=coded)
    return word.end() if found == part else None


def _strip_label_words(part: str, tail: str) -> str:
    """Drop a label's own words after the key: `**`, its Chinese label, `（一段文本）`, and
    the key again after the Chinese label (`_own_key`).

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
        key = _own_key(part, tail, at)
        if key is not None:
            at, changed = key, True
        paren = _PAREN.match(tail, at)
        if paren:
            at, changed = paren.end(), True
        if not changed:
            return tail[pos:]
        pos = at


_ROW = re.compile(r"^[ \t]{0,3}\|(.{1,4000})$", re.MULTILINE)  # a table's row (bounded)
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def _table_rows(text: str) -> str:
    """A Markdown table of parts (`| exp_purpose | value |`, a common way to write a spec)
    with each row that names a part as its first cell made a bullet, `- [exp_purpose]:
    value` (its last cell that is not empty), on the same line: line numbers stay true.
    Other rows (the header, `|---|`, any other table) are left as they are. Every part was
    'missing' with no hint, and no finish.flag was written anywhere (walk 86)."""
    if "|" not in text:
        return text

    def row(found: re.Match[str]) -> str:
        cells = [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(found.group(1))]
        cells = [c for c in cells if c]
        if len(cells) < 2:
            return found.group()
        key = _normalise(cells[0].strip("[]【】"))
        part = _lookup(key, structured=True)
        if part is None:
            return found.group()
        return f"- [{part}]: {cells[-1]}"

    return _ROW.sub(row, text)


_QUOTED = re.compile(r"(?:[ \t]{0,3}>[ \t]?)+")  # a line's block-quote marks, `> `, `> > `


def _unquoted(text: str) -> str:
    """A blueprint written in a block quote (`> **exp_purpose**: ...`, as copied from an
    e-mail or an issue) read as if it were not: each line's `>` marks are taken off, on the
    same line (line numbers stay true), except inside a fenced block begun outside any quote,
    whose lines are the command's as they stand. Only where a quoted line is a part's label:
    elsewhere a line that starts with `>` is the text's own (a command's `> out.log` on a
    line of its own). Every part was 'missing' (walk 86, F7)."""
    if ">" not in text:
        return text
    lines = text.split("\n")
    quoted_labels = False
    fence: str | None = None  # the opening of an unquoted fenced block we are in
    for n, line in enumerate(lines):
        opening = _FENCE.match(line)
        if fence is not None:
            if opening and closes(opening.group(1), fence) and not line[opening.end() :].strip():
                fence = None
            continue
        if opening:
            fence = opening.group(1)
            continue
        quoted = _QUOTED.match(line)
        if quoted:
            lines[n] = line[quoted.end() :]
            quoted_labels = quoted_labels or _match_label(lines[n]) is not None
    return "\n".join(lines) if quoted_labels else text


# A JSON object's member line naming a part: `  "exp_purpose": "text",` (bounded)
_JSON_MEMBER = re.compile(
    r'^[ \t]{0,40}"([A-Za-z_][A-Za-z0-9_ -]{0,40})"[ \t]*:[ \t]*(.{0,8000}?)[ \t]*,?[ \t]*$', re.M
)


def _json_members(text: str) -> str:
    """A blueprint written as a JSON object (`{"exp_purpose": "...", ...}`, as a program or an
    agent may write it): each member line that names a part made a bullet, `- [exp_purpose]:
    value` (a string value decoded as JSON decodes it, `\\n` in a command a line break kept
    as `\\n` would not be: such a command is written in a fence instead), on the same line.
    Only where the text starts as a JSON object; other lines are left as they are."""
    if not text.lstrip().startswith("{"):
        return text

    def member(found: re.Match[str]) -> str:
        part = _lookup(_normalise(found.group(1)), structured=True)
        if part is None:
            return found.group()
        value = found.group(2)
        if value.startswith('"'):
            try:
                decoded = json.loads(value)
            except ValueError:
                return found.group()
            if not isinstance(decoded, str) or "\n" in decoded:
                return found.group()
            value = decoded
        return f"- [{part}]: {value}"

    return _JSON_MEMBER.sub(member, text)


# YAML front matter (Jekyll's, Hugo's, an agent's): the text's first line `---`, then
# `key: value` lines, then a closing `---` (or YAML's `...`) on a line of its own
_FRONT_OPENING = re.compile(r"\n---[ \t]*\n")
_FRONT_CLOSING = re.compile(r"\n(?:---|\.\.\.)[ \t]*(?=\n|$)")


def _front_matter_closed(text: str) -> str:
    """`text` (with a line break put before it) where it begins with YAML front matter, its
    closing line made a heading of no name, as long (positions and line numbers stay true):
    it ends the part before it, as an unrelated heading does. The last key's value took in
    the closing `---` and all the prose after it, so a purpose read `... ---  Some notes`, a
    time limit `1 week ---` was refused, a bare `7200` refused, not warned (walk 90, F7)."""
    if not _FRONT_OPENING.match(text):
        return text
    closing = _FRONT_CLOSING.search(text, 4)
    if closing is None:  # an opening `---` alone: a rule, the text read as it stands
        return text
    start, end = closing.start() + 1, closing.end()
    return text[:start] + "#" + " " * (end - start - 1) + text[end:]


def _lines_and_lowered(text: str) -> tuple[list[str], str]:
    """The text's lines (lines[n] is line n, from 1), its HTML comments blanked and its odd
    line breaks made plain, and the same text lowered for the case-free search (only its line
    breaks are counted: a character whose lower case is longer moves positions, never line
    numbers)."""
    text = "\n" + _json_members(_table_rows(_unquoted(blank_comments(text))))
    if any(mark in text for mark in _BREAK_CHARS):  # rare: spare the whole-text pass
        text = _BREAKS.sub("\n", text)
    text = _front_matter_closed(text)
    return text.split("\n"), text.lower()


def scan_parts(text: str) -> tuple[dict[str, str], list[str], dict[str, int]]:
    """Each labelled part's raw text, a problem for each part given twice (naming both
    lines; the first is kept), and the line (from 1) of each part's text's first line.

    HTML comments are blanked first: they do not show when the Markdown is rendered, so they
    are never part of a value. Inside the notes, a `- notes:` bullet is text of the notes.
    One pattern finds the lines that may matter (fences, headings, lines that start like a
    label); the lines between them are taken whole, so plain text costs no Python per line.
    """
    lines, lowered = _lines_and_lowered(text)
    parts: dict[str, list[str]] = {}
    lines_of: dict[str, int] = {}
    starts: dict[str, int] = {}  # the line of each part's first line (the label's, or next)
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
                joined, first_lines = _joined(parts, starts)
                return joined, twice, first_lines
            continue
        if label is not None:
            current = parts[label.part] = []
            lines_of[label.part] = number
            starts[label.part] = number if label.inline is not None else number + 1
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
    joined, first_lines = _joined(parts, starts)
    return joined, twice, first_lines


_UNDERLINE = re.compile(r"[ \t]{0,3}(?:=+|-+)[ \t]*")  # a setext heading's underline
_DEFINITION = re.compile(r"[ \t]{0,3}:[ \t]+")  # a definition list's `: value`
# a thematic break (`---`, `***`, `___`, `- - -`): a rule between sections, drawn as a line
_BREAK = re.compile(r"[ \t]{0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})")


def _joined(
    parts: dict[str, list[str]], starts: dict[str, int]
) -> tuple[dict[str, str], dict[str, int]]:
    """Each part's lines as one text, and the line of its text's first line (from `starts`,
    where its lines begin). Where the label was a setext heading (`exp_purpose` over a line
    of `-` or `=`) or a definition list's term (`**exp_purpose**` over `: value`), the
    underline or the `: ` is the label's, not the value's (the command was `-----`). A rule
    (`---`) that closes the part is the document's, not the value's: a command followed by
    one was warned of "`---` after the command", a time limit `2h ---` refused. The
    `[ajetd]` part's YAML keeps its lines' indentation relative to one another (under a
    bullet or a front matter's `ajetd:`, its first key lost its own and the YAML was
    refused)."""
    joined, first_lines = {}, {}
    for part, given in parts.items():
        lines, dropped = given, 0
        last = len(lines)
        while last and (not lines[last - 1].strip() or _BREAK.fullmatch(lines[last - 1])):
            last -= 1
        lines = lines[:last]
        first = next((n for n, line in enumerate(lines) if line.strip()), None)
        if first is not None and _UNDERLINE.fullmatch(lines[first]):
            lines, dropped = lines[first + 1 :], first + 1
            first = next((n for n, line in enumerate(lines) if line.strip()), None)
        if first is not None and (found := _DEFINITION.match(lines[first])):
            lines = [*lines[:first], lines[first][found.end() :], *lines[first + 1 :]]
        text = "\n".join(lines)
        if part == "ajetd" and first is not None and lines[first][:1] in (" ", "\t"):
            text = textwrap.dedent(text)  # only where its first line is indented: 1 MiB costs
        joined[part] = text.strip()
        first_lines[part] = starts.get(part, 1) + dropped + (first or 0)
    return joined, first_lines
