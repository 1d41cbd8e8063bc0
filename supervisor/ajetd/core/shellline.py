"""A launch command as one line that, pasted into bash, runs what the trial ran. Pure.

A trial runs its command as `bash -o pipefail -c COMMAND` (`trialscript.SHELL`), and a
blueprint's command may be several lines (seed 002's `LOG_DIR=...` / `mkdir -p "$LOG_DIR"` /
`uv run ...`). One TSV cell (the campaign ledger's `command`) holds no line break, and joining
the lines with spaces made another command (walk92 F5: `mkdir` run with LOG_DIR in its
environment, the training never); joining them with `; ` is no better in general (a line
ending in `\\`, `&&` or `|`, a `# comment`, `then`, a quoted string over two lines, a here
document). So a command that is one line of printable characters is kept as it is, and any
other is written `bash -o pipefail -c $'...'`: bash's ANSI-C quoting holds every character
exactly (a line break as `\\n`), on one line, and pasted it runs the same script the same way.
"""

from __future__ import annotations

import re

from ajetd.core.markdown import as_code_span, fence

RUN_AS = "bash -o pipefail -c "  # how the trial ran it (`trialscript.SHELL`)
# what a TSV cell or one line cannot hold as it is: C0 controls (tab, line breaks), DEL, C1
# controls (a terminal's CSI `\x9b`; U+0085, a line break to `str.splitlines`) and the
# Unicode line and paragraph separators (review92 #6: a ledger row read as three)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_QUOTED = re.compile(r"[\\'\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(command: str) -> bool:
    """The command is a single line of printable characters (kept as it is)."""
    return _CONTROL.search(command) is None


def ansi_c(text: str) -> str:
    """`text` as one bash `$'...'` word, every character exactly: a backslash and a quote
    escaped, a line break `\\n`, a tab `\\t`, a carriage return `\\r`, another control
    character `\\xHH` (always two digits, so a hex digit after it is its own); the rest as
    it is (bash reads UTF-8 there as it is). A NUL cannot be in a bash string: none can have
    run."""

    def escape(found: re.Match[str]) -> str:
        char = found.group()  # a character past ASCII as its UTF-8 bytes, whatever the locale
        return _ESCAPES.get(char) or "".join(f"\\x{b:02x}" for b in char.encode())

    return "$'" + _QUOTED.sub(escape, text) + "'"


def pasteable(command: str) -> str:
    """The command as one line that runs what the trial ran: itself where it is one line of
    printable characters, else `bash -o pipefail -c $'...'` (module docstring)."""
    return command if one_line(command) else RUN_AS + ansi_c(command)


_BLOCK_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # all but tab and line feed


def markdown_item(label: str, command: str) -> list[str]:
    """A report's list item naming a command (results.md's `command run`, trials.md's
    `command`), in Markdown that renders it exactly: one line as a code span; several lines
    as a fenced `sh` block in the item, each line as written (a viewer joined a code span's
    lines into one: walk92 F5); with another control character (a carriage return, an ESC,
    which a viewer would act on or show otherwise), the `pasteable` line in a code span."""
    if one_line(command):
        return [f"- {label}: {as_code_span(command)}"]
    if _BLOCK_CONTROL.search(command) is None:
        return [f"- {label}:", *("  " + line for line in fence(command.split("\n"), "sh"))]
    return [f"- {label}: {as_code_span(pasteable(command))}"]
