"""The blueprint parser stays linear on hostile lines: every line that may be a label (a
heading, a bullet, bold, a bracket) goes through the scan's patterns, so a line of a few
kilobytes built from their pieces must parse in milliseconds. `bench/fuzz.py --seed 36` found
`[` then 20 KB of blanks taking 4.3 s (the bracket's `\\s*(.{1,40}?)\\s*`); this checks the
class, every label prefix with every piece, not that one line."""

from __future__ import annotations

import contextlib
import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.core.blueprint import parse_blueprint
from ajetd.core.blueprintscan import _BRACKET
from ajetd.core.errors import BlueprintError

BASE = (Path(__file__).parent.parent / "blueprints" / "TEMPLATE.md").read_text()
PREFIXES = ["", "## ", "- ", "**", "`", "[", "## [", "- **[", "【", "1. "]
PIECES = [
    " ",
    "\t",
    "[ ",
    "【 ",
    "( ",
    "（ ",
    "**",
    "`",
    "exp ",
    ": ",
    "- ",
    "# ",
    "9",
    "<!--",
    "'",
]
LONG = 20_000


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_label_like_line_of_any_piece_parses_in_linear_time(prefix: str) -> None:
    slow = []
    for piece in PIECES:
        for end in ("", "x", "]", "ajetd]"):
            line = prefix + (piece * (LONG // len(piece) + 1))[:LONG] + end
            start = time.process_time()  # this process's CPU: a loaded VM does not fail it
            with contextlib.suppress(BlueprintError):
                parse_blueprint(BASE + "\n" + line + "\n")
            took = time.process_time() - start
            if took > 0.5:
                slow.append(f"{prefix!r} + {piece!r} * n + {end!r}: {took:.1f} s")
    assert not slow, slow


# the bracket pattern before the fix: the reference for what a bracketed label is
_OLD_BRACKET = re.compile(r"[\[【]\s*([^\]】\n]{1,40}?)\s*[\]】]")


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="[]【】 \tab_-:", max_size=60))
def test_the_bracket_reads_a_label_as_it_did(text: str) -> None:
    """The same name in brackets as before, where the old pattern found one that is not
    blank (a blank one is no part's name either way)."""
    old, new = _OLD_BRACKET.match(text), _BRACKET.match(text)
    if old is None or not old.group(1).strip():
        assert new is None or new.group(1).strip() == new.group(1)
        if new is not None:
            assert old is not None
        return
    assert new is not None and new.group(1) == old.group(1).strip()
    assert new.end() == old.end()
