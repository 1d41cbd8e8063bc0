"""Parse `blueprint.md` (seed 001's eight parts) into a `Blueprint`; pure, no filesystem.

People write blueprints in many ways: headings (`## [exp_purpose]`, `## 实验目的`), bullets
(`- [exp_purpose] 实验目的：...`), bold labels (`**exp_purpose**: ...`), values inline, on the
following lines, in backticks or fenced blocks. The scanner (`ajetd.core.blueprintscan`) finds
label lines and collects each part's raw text up to the next label or heading; this module
cleans it per part and checks it.

The promise: any text gives either a `Blueprint` or a `BlueprintError` listing every problem
found (each naming its part, and its key within `[ajetd]`), never another exception, and in
time linear in its length (a 1 MiB blueprint in tens of milliseconds: `bench/fuzz.py`). A part
given twice is an error naming both lines; a path that Linux could not take (control
characters, NUL, a name over 255 bytes) is refused by its part's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ajetd.core import launchshape
from ajetd.core.blueprintscan import scan_parts
from ajetd.core.durations import admitted_duration, parse_duration
from ajetd.core.errors import AjetdError, BlueprintError
from ajetd.core.limits import BLUEPRINT_MAX_BYTES, PURPOSE_KEPT_CHARS
from ajetd.core.markdown import code_span, fenced_body, fenced_openings
from ajetd.core.shellwords import autokill_note, odd_space
from ajetd.core.textfile import decode_text, undecodable
from ajetd.core.values import control_character, path_problem

if TYPE_CHECKING:  # imported where options are parsed: a client that only shows what a
    from ajetd.core.options import Options  # waiting blueprint asked does not load them

MAX_BYTES = MAX_CHARS = BLUEPRINT_MAX_BYTES  # the daemon reads at most 1 MiB; lint too
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
    warnings: tuple[str, ...] = ()  # what was read but may not be what was meant


def extract_parts(text: str) -> dict[str, str]:
    """Return each labelled part's raw text (first occurrence wins), uncleaned."""
    return scan_parts(text)[0]


def clean_value(raw: str) -> str:
    """A single value (a path, a command): fenced body, else first backtick span, else line."""
    marked = _marked_value(raw)
    if marked is not None:
        return marked
    for line in raw.splitlines():
        text = _MARKS.sub("", line).strip()
        if text:
            return _unwrapped(text)
    return ""


def _marked_value(raw: str) -> str | None:
    """The value Markdown marks out: a fenced block's body, else the first code span."""
    fenced = fenced_body(raw)
    return fenced if fenced is not None else code_span(raw)


_MARKS = re.compile(r"^\s*(?:[-*+]|>)\s+")  # a bullet's or a quote's mark before a value
# A line that starts the way a launch command's lines do (a program people launch training
# with, a shell builtin, a path, a variable's assignment): after the command, one of these is
# more command; any other line is taken for a note
_COMMAND_LIKE = re.compile(
    r"(?:python[\d.]*|uv|bash|sh|source|\.|cd|export|env|torchrun|deepspeed|accelerate|ray|"
    r"srun|sbatch|mpirun|ajet|conda|pip[\d.]*|proxychains[\d]*|nohup|exec|CUDA_[A-Z_]+=\S*|"
    r"[A-Za-z_][A-Za-z0-9_]{0,60}=\S*)(?:\s|$)|\.{0,2}/\S"
)


def command_value(raw: str) -> tuple[str, list[str]]:
    """The launch command (`clean_value`), and the lines of the part after it that are not
    part of it. Written on lines of its own (no fence, no code span), a command continues
    where a line ends in a backslash, as the shell reads it: only the first line was taken,
    so `python -m x \\` ran with its arguments lost (and its last backslash joined the
    trial script's next line). Any other line after it is returned for the caller to name:
    a second command written on the next line never ran, and the first alone 'succeeded'."""
    marked = _marked_value(raw)
    if marked is not None:  # one scan of each: `clean_value`'s would be a second
        return marked, []
    lines = [line.rstrip() for line in raw.splitlines() if line.strip()]
    if not lines:
        return "", []
    taken = 1
    while taken < len(lines) and _continued(lines[taken - 1]):
        taken += 1
    # the first line without its bullet's mark; the lines it continues to as written (a
    # `> out.log` there is the command's redirection, not a quote)
    command = "\n".join([_MARKS.sub("", lines[0]).strip(), *lines[1:taken]])
    return _unwrapped(command.strip()), [_MARKS.sub("", line) for line in lines[taken:]]


def _continued(line: str) -> bool:
    """The line ends in an odd run of backslashes: the shell reads on to the next line."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _after_command(rest: list[str]) -> tuple[str | None, str | None]:
    """A problem for lines after the command that look like more of it (a second command:
    refused, it would not run), or a warning for any other text there (kept out of it)."""
    if not rest:
        return None, None
    more = [line.strip() for line in rest if _COMMAND_LIKE.match(line.strip())]
    first = more[0] if more else rest[0].strip()
    shown = first if len(first) <= 60 else first[:59] + "…"
    if more:
        return (
            f"exp_launch_command: the line `{shown}` follows the command and would not run "
            "(only the first line is the command, or lines joined by a trailing `\\`): put a "
            "command of several lines in a fenced block (```bash ... ```), a note under "
            "exp_notes",
            None,
        )
    return None, (
        f"exp_launch_command: `{shown}` after the command is read as a note, not run "
        "(a note goes under exp_notes)"
    )


def _unwrapped(text: str) -> str:
    """A value written as one quoted string (`"/data/my runs"`) without its quotes; any
    other text as it is: a command that ends in a quoted argument (`--kill "ray|vllm"`)
    lost its closing quote, and bash then read an unclosed string (walk 86)."""
    if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'" and text[0] not in text[1:-1]:
        return text[1:-1]
    return text


def clean_path(raw: str) -> str:
    """A path: the value's first token (words after it are a note), unless backticks, a
    fence or quotes say exactly what it is."""
    value = clean_value(raw)
    if "`" in raw or _quoted(raw):
        return value.strip("\"'")
    token = value.split()[0] if value.split() else ""
    return token.strip("\"'").rstrip("，,。;；")


_SOURCE = re.compile(r"(?:source|\.)\s+(\S.*)")


_PROMPT = re.compile(r"^([ \t]*)\$[ \t]+", re.MULTILINE)


def unprompted(command: str) -> str:
    """A command copied from a terminal with its prompt (`$ python train.py`): without the
    `$ ` (bash would look for a program named `$` and exit 127)."""
    return _PROMPT.sub(r"\1", command) if command.lstrip().startswith("$") else command


def unsourced(raw: str) -> str:
    """The venv as people also write it, the line that activates it (`source
    .venv/bin/activate`, `. venv/bin/activate`): the script's path (the venv is found from
    it); any other value as it is."""
    match = _SOURCE.fullmatch(clean_value(raw))
    return match.group(1) if match else raw


def _quoted(raw: str) -> bool:
    """The value's line is one quoted string (`"/data/my runs"`): the quotes bound it."""
    for line in raw.splitlines():
        text = re.sub(r"^\s*(?:[-*+]|>)\s+", "", line).strip()
        if text:
            return len(text) > 1 and text[0] == text[-1] and text[0] in "\"'"
    return False


def spaced_path(part: str, raw: str) -> str | None:
    """A path written bare whose next word goes on with a `/` (`/data/my runs/x`) holds a
    space: read as its first word it would name another folder, so it is refused, not
    misread (a note after a path, `/data/out (NFS)`, is still allowed)."""
    value = clean_value(raw)
    words = value.split()
    if "`" in raw or _quoted(raw) or len(words) < 2 or "/" not in words[1]:
        return None
    shown = value if len(value) <= 120 else value[:119] + "…"
    return (
        f"{part}: {shown!r} holds a space, so only {words[0]} would be read; put the whole "
        "path in backticks or quotes"
    )


def trailing_note(part: str, raw: str) -> str | None:
    """A bare path followed by words that read as more of a name (`/data/my runs`), not as
    a note (`/data/out (NFS)`): said, since the run writes to the first word's folder and
    the user may have meant the whole (spaced_path refuses one whose next word has a `/`)."""
    value = clean_value(raw)
    if "`" in raw or _quoted(raw) or len(value.split(maxsplit=1)) < 2:
        return None
    rest = value.split(maxsplit=1)[1]
    if not (rest[0].isalnum() or rest[0] in "._~"):
        return None
    shown = rest if len(rest) <= 60 else rest[:59] + "…"
    return (
        f"{part}: read as {clean_path(raw)}; the words after it ({shown!r}) are taken as a "
        "note: a path holding a space goes in backticks or quotes"
    )


def usable_path(part: str, raw: str) -> str:
    """The part's path, or "" where Linux could not take it (for a rejected blueprint's
    report: a NUL or an over-long name must not reach the filesystem there either)."""
    path = clean_path(raw)
    return "" if path_problem(part, path) else path


@dataclass(frozen=True)
class Asked:
    """What a blueprint says of itself where it cannot be taken (refused, or not admitted
    yet): each part that can be read, `None`/"" for one that cannot."""

    purpose: str
    result_dir: str  # as written (`store.expanded` spells it as intake does)
    max_time_s: float | None
    codebase_dir: str
    command: str


def asked(parts: dict[str, str]) -> Asked:
    """What a blueprint that was refused (or is waiting in the inbox) asked for, where its
    parts can be read, so that the run's status and results.md still say them."""
    try:
        max_time_s: float | None = parse_duration(
            clean_text(parts.get("exp_max_time", "")), markdown=True
        )
    except AjetdError:
        max_time_s = None
    command = command_value(parts.get("exp_launch_command", ""))[0]
    if control_character(command, allowed="\t\n") or len(command) > MAX_COMMAND_CHARS:
        command = ""
    return Asked(
        purpose=kept_purpose(clean_text(parts.get("exp_purpose", ""))),
        result_dir=usable_path("exp_result_dir", parts.get("exp_result_dir", "")),
        max_time_s=max_time_s,
        codebase_dir=usable_path("exp_codebase_dir", parts.get("exp_codebase_dir", "")),
        command=command,
    )


# Control characters other than tab and newline: shown escaped in prose, so that a purpose
# holding ESC sequences cannot move the cursor or retitle the terminal of whoever reads
# `ajetd status RUN`, `lint` or results.md (as file names are shown escaped).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


_EXAMPLE = re.compile(
    r"(例如|比如|举例|e\.g\.|eg|for example)(?:[:：,，][ \t]*|[ \t]+)", re.IGNORECASE
)


def _example_word(command: str) -> str | None:
    """A command that begins with the seed's own "例如" ("e.g."): copied with its wording,
    it ran `例如` as a program and exited 127 (walk 86); refused, naming the word."""
    found = _EXAMPLE.match(command)
    if found is None:
        return None
    return (
        f'exp_launch_command: begins with {found.group(1)!r} ("for example"), the template\'s '
        f"wording: write the command alone ({command[found.end() :][:60]!r})"
    )


def _blocks(part: str, raw: dict[str, str]) -> str | None:
    """A part read from one fenced block that holds several: only the first was read, so a
    step-by-step launch (`source .../activate` in one block, the training in the next) ran
    the first step alone and 'succeeded', and a second `[ajetd]` block's stop rule was
    ignored (walk 86). Refused, naming each block by its first line: which blocks make the
    one command (and whether one is only sample output) is the writer's to say."""
    firsts = fenced_openings(raw.get(part, ""), most=4)
    if len(firsts) < 2:
        return None
    shown = "; ".join(
        f"{n}: {(f if len(f) <= 50 else f[:49] + '…')!r}" for n, f in enumerate(firsts, 1)
    )
    what = "command (its lines run in order)" if part != "ajetd" else "YAML mapping"
    label = f"[{part}]" if part == "ajetd" else part
    more = "+" if len(firsts) >= 4 else ""
    return (
        f"{label}: {len(firsts)}{more} code blocks ({shown}); only one is read: put the whole "
        f"{what} in one block"
    )


def _notes(*notes: str | None) -> tuple[str, ...]:
    return tuple(n for n in notes if n)


def clean_text(raw: str) -> str:
    """Prose (purpose, notes): kept as written, outer blank lines and a lone fence removed,
    control characters (but tab and newline) escaped, as `\\x1b`."""
    fenced = fenced_body(raw)
    if fenced is not None and raw.lstrip().startswith(("```", "~~~")):
        text = fenced
    elif whole := re.fullmatch(r"\s*(`+)([^`]+)\1\s*", raw):
        text = whole.group(2).strip()
    else:
        text = raw.strip()
    return visible(text)


def kept_purpose(text: str) -> str:
    """A purpose (`clean_text`) as a run keeps it: whole where it has at most
    PURPOSE_KEPT_CHARS characters, else its start cut at a word, then how many characters
    were left off and where the whole text is. Every reader of a run's purpose (status and
    its JSON, run.json, results.md, a campaign's lines, a refused run's record) shows this."""
    if len(text) <= PURPOSE_KEPT_CHARS:
        return text
    kept = text[:PURPOSE_KEPT_CHARS]
    at = max(kept.rfind(" "), kept.rfind("\n"))
    if at > PURPOSE_KEPT_CHARS // 2:
        kept = kept[:at]
    kept = kept.rstrip()
    left = len(text) - len(kept)
    return f"{kept} … ({left} more characters: the whole purpose is in the blueprint)"


def purpose_note(text: str) -> str | None:
    """Lint's and admission's warning for a purpose that is kept cut (`kept_purpose`)."""
    if len(text) <= PURPOSE_KEPT_CHARS:
        return None
    return (
        f"exp_purpose: {len(text)} characters long: the run's record, status, run.json and "
        f"results.md keep its first {PURPOSE_KEPT_CHARS} or fewer (cut at a word, saying how "
        "much is left off); the whole text stays in the run's stored blueprint "
        "(`runs/<id>/blueprint.md` in ajetd's home, quoted in results.md)"
    )


def visible(text: str) -> str:
    """`text` with its control characters (but tab and newline) escaped, as `\\x1b`."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def decode_blueprint(raw: bytes) -> str:
    """A blueprint file's bytes (read at most MAX_BYTES + 1 of them) as text.

    UTF-8 unless the file says otherwise: editors on Windows save "Unicode" text as UTF-16
    with a byte-order mark (and PowerShell's `>` does too), and a UTF-8 mark is common; read as
    UTF-8, such a file would lose every part to NUL bytes. Without a mark, text whose every
    other byte is NUL is UTF-16 too (`core.textfile`). Bytes that do not decode are read as
    U+FFFD here; a file as it comes with any is refused (`encoding_problem`). Every reader of
    a blueprint (intake, lint, a restart, the reports) decodes through here, so a file reads
    the same everywhere.
    """
    if len(raw) > MAX_BYTES:
        raise BlueprintError(
            [f"blueprint: larger than {MAX_BYTES // 1024} KiB; is this the right file?"]
        )
    return decode_text(raw)


def encoding_problem(raw: bytes) -> str | None:
    """Why a blueprint file's bytes are not text ajetd reads (UTF-8, or UTF-16/32 with a
    byte-order mark), naming the first bad byte's line and column and the encoding it looks
    like (`textfile.undecodable`); None where they are. Said in lint, at admission and for a
    campaign's blueprints alike: a GBK or Latin-1 file was read with U+FFFD in place of its
    bytes, admitted with a garbled purpose (walk97 F4). Only a file as it comes: an admitted
    run's stored copy was written as UTF-8 and is read as it is."""
    said = undecodable(raw[:MAX_BYTES])
    return None if said is None else f"blueprint: {said}"


def parse_blueprint_bytes(raw: bytes) -> Blueprint:
    """Parse a blueprint file's bytes (read at most MAX_BYTES + 1 of them); see
    decode_blueprint for how they become text, and `encoding_problem` for bytes refused."""
    text = decode_blueprint(raw)
    problem = encoding_problem(raw)
    if problem is not None:
        raise BlueprintError([problem])
    return parse_blueprint(text)


# A line that names a part the way a blueprint does (`## [x]`, `- [x] ...`, `**x**:`, `## x`,
# or a front matter's `exp_x: ...`): where a part is missing, a label of this shape a few
# letters off its name is pointed at.
_LABEL_LIKE = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*|[-*+][ \t]+)?(?:\[[ \t]*([A-Za-z_][A-Za-z0-9_]{0,40})[ \t]*\]"
    r"|\*\*([A-Za-z_][A-Za-z0-9_]{0,40})\*\*)"
    r"|^[ \t]*#{1,6}[ \t]*([A-Za-z_][A-Za-z0-9_]{0,40})[ \t]*$"
    rf"|^[ \t]*(?!(?i:{'|'.join(REQUIRED)})[ \t]*[:：])((?i:exp)[A-Za-z0-9_]{{0,37}})[ \t]*[:：]",
    re.MULTILINE,
)


def near_misses(text: str, missing: list[str]) -> dict[str, tuple[int, str]]:
    """For each missing part, the first line (1-based) whose label is that part's name
    misspelt (`[exp_purpse]`, `[exp_results_dir]`), and the label; none where no label is
    that close. Read only where a part is missing: the error path."""
    import difflib

    labels: list[tuple[int, str]] = []
    line, counted = 1, 0
    for found in _LABEL_LIKE.finditer(text):
        word = next(group for group in found.groups() if group)
        if word.lower() not in REQUIRED:
            line += text.count("\n", counted, found.start())
            counted = found.start()
            labels.append((line, word))
            if len(labels) >= 200:
                break
    near: dict[str, tuple[int, str]] = {}
    for part in missing:
        close = difflib.get_close_matches(part, [w.lower() for _, w in labels], n=1, cutoff=0.8)
        if close:
            near[part] = next((n, w) for n, w in labels if w.lower() == close[0])
    return near


def _options(part: str, first_line: int, admitted: bool, problems: list[str]) -> Options:
    """The `[ajetd]` part's options (the defaults where refused), its problems added to
    `problems`, each prefixed `[ajetd]: `; an option-like line outside its fenced block is
    one (`looseoptions`), except in an admitted run's copy: a rule added since."""
    from ajetd.core.looseoptions import loose_options
    from ajetd.core.options import KNOWN_KEYS, Options, parse_options

    options = Options()
    try:
        options = parse_options(part, admitted)
    except BlueprintError as exc:
        problems.extend(f"[ajetd]: {p}" for p in exc.all_problems)
    if not admitted:
        problems.extend(f"[ajetd]: {p}" for p in loose_options(part, KNOWN_KEYS, first_line))
    return options


def parse_blueprint(text: str, admitted: bool = False) -> Blueprint:
    """Parse a blueprint's text; raise BlueprintError naming every problem at once.
    `admitted`: an admitted run's stored copy, read again (a rule about what may be admitted
    that a later ajetd added is not applied to it: `options.parse_options`)."""
    if len(text) > MAX_CHARS:
        raise BlueprintError(
            [f"blueprint: larger than {MAX_CHARS // 1024} KiB; is this the right file?"]
        )
    if not text.strip():  # `ajetd submit -` given no input, a save that wrote nothing
        raise BlueprintError(
            [
                "blueprint: empty (no text at all); it needs the parts "
                f"{', '.join(REQUIRED)}: blueprints/TEMPLATE.md shows them"
            ]
        )
    raw, problems, first_lines = scan_parts(text)
    missing = [part for part in REQUIRED if not raw.get(part, "").strip()]
    odd = text.count("\ufffd") + text.count("\x00")  # bytes that did not decode, NULs
    if odd and len(missing) == len(REQUIRED):  # no part at all: not "7 parts missing"
        raise BlueprintError(
            [
                f"blueprint: not UTF-8 text ({odd} character(s) are bytes that do not decode "
                "or NULs; a binary file?); is this the right file? Save it as UTF-8 (UTF-16 "
                "with a byte-order mark is read too)"
            ]
        )
    near = near_misses(text, missing) if missing else {}
    problems += [
        f"{part}: missing (write it as `## [{part}]` or `- [{part}] ...: value`)"
        + (
            f"; line {near[part][0]} has [{near[part][1]}]: is that it, misspelt?"
            if part in near
            else ""
        )
        for part in missing
    ]
    max_time_s = 0.0
    max_time_given = clean_text(raw.get("exp_max_time", ""))
    if max_time_given.strip():
        try:
            max_time_s = parse_duration(max_time_given, markdown=True)
        except AjetdError as exc:
            # a refusal added since an admitted copy was taken is not applied to it
            kept = admitted_duration(max_time_given, markdown=True) if admitted else None
            if kept is None:
                problems.append(f"exp_max_time: {exc}")
            else:
                max_time_s = kept
    elif "exp_max_time" not in missing:  # an empty fenced block: no limit would be no run
        problems.append("exp_max_time: empty (write a duration: 2h, 90m, 1h30m)")
    from ajetd.core.options import bare_number_note, never_notes  # 20 ms: see the top

    options = _options(raw.get("ajetd", ""), first_lines.get("ajetd", 1), admitted, problems)
    problems += [p for p in (_blocks("exp_launch_command", raw), _blocks("ajetd", raw)) if p]
    command, after = command_value(raw.get("exp_launch_command", ""))
    command = unprompted(command)
    more, prose = _after_command(after)
    if not admitted:  # a rule added since an admitted run's copy was taken: not applied to it
        problems += _notes(more)
    if raw.get("exp_launch_command", "").strip() and not command:
        problems.append("exp_launch_command: empty command")
    bad = control_character(command, allowed="\t\n")
    if bad:
        problems.append(f"exp_launch_command: holds {bad}")
    problems += _notes(
        odd_space(command), launchshape.detached_problem(command), _example_word(command)
    )
    if len(command) > MAX_COMMAND_CHARS:
        problems.append(
            f"exp_launch_command: {len(command)} characters long (at most {MAX_COMMAND_CHARS}: "
            "put a long command in a script and run that)"
        )
    texts = {part: raw.get(part, "") for part in PATH_PARTS}
    texts["exp_venv_exe"] = unsourced(texts["exp_venv_exe"])
    paths = {part: clean_path(text) for part, text in texts.items()}
    problems += [p for p in (path_problem(part, path) for part, path in paths.items()) if p]
    problems += [p for p in (spaced_path(part, text) for part, text in texts.items()) if p]
    if problems:
        raise BlueprintError(problems)
    return Blueprint(
        purpose=kept_purpose(clean_text(raw["exp_purpose"])),
        codebase_dir=paths["exp_codebase_dir"],
        venv_exe=paths["exp_venv_exe"],
        yaml_path=paths["exp_yaml_path"],
        launch_command=command,
        result_dir=paths["exp_result_dir"],
        max_time_s=max_time_s,
        max_time_text=clean_text(raw["exp_max_time"]),
        notes=clean_text(raw.get("exp_notes", "")),
        options=options,
        warnings=(
            *(w for w in (trailing_note(p, t) for p, t in texts.items()) if w),
            *_notes(bare_number_note("exp_max_time", max_time_given, max_time_s)),
            *_notes(purpose_note(clean_text(raw["exp_purpose"]))),
            *_notes(
                prose,
                autokill_note(command, options.autokill),
                launchshape.masked_status(command),
                launchshape.filtered_pipe(command),
            ),
            *options.notes,
            *never_notes(options, max_time_s),
        ),
    )
