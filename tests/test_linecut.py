"""A line cut to its bound stays readable (walk92 F9: a crash row's why was cut mid-word,
`... reserved by PyTorch bu…`, its `(cuda_oom:` never closed): at a word boundary near the
bound, `…`, and what the kept part opened closed; over arbitrary text (hypothesis)."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from ajetd.core.campaignrecord import REASON_MAX
from ajetd.core.errors import one_line
from ajetd.core.linecut import ELLIPSIS, WORD_BACK, cut
from ajetd.core.markdown import table_cell

WALK = (
    "the program exited with code 1 (cuda_oom: torch.OutOfMemoryError: CUDA out of memory. "
    "Tried to allocate 13.91 GiB. GPU 0 has a total capacity of 79.19 GiB of which 3.5 GiB "
    "is free. Of the allocated memory 60.1 GiB is allocated by PyTorch, and 6.77 GiB is "
    "reserved by PyTorch but unallocated); no fix allowed ([ajetd] allow_fixes): the run ends"
)
_PAIRS = {")": "(", "]": "[", "}": "{"}


def _open_left(text: str) -> list[str]:
    """What `text` opens and leaves open (an independent reading: brackets, and backticks as
    code spans, in which brackets are text)."""
    stack: list[str] = []
    code = False
    for char in text:
        if char == "`":
            code = not code
            if code:
                stack.append("`")
            else:
                stack.pop()
        elif code:
            continue
        elif char in "([{":
            stack.append(char)
        elif char in _PAIRS and stack and stack[-1] == _PAIRS[char]:
            stack.pop()
    return stack


def test_the_walks_crash_reason_is_cut_at_a_word_and_closed() -> None:
    why = one_line(WALK, REASON_MAX)
    assert len(why) <= REASON_MAX and why.endswith(ELLIPSIS + ")"), why
    kept = why[: -len(ELLIPSIS + ")")]
    assert WALK.startswith(kept) and WALK[len(kept)] == " ", why
    assert not _open_left(why)


_TEXT = st.text(st.sampled_from([*"ab (){}[]`:;,\t", "é", "中"]), max_size=400)


@example("(" * 50 + "x" * 300, 20)
@example("`a (b` " * 40, 30)
@example("word" * 100, 50)
@given(_TEXT | st.text(max_size=400), st.integers(1, 320))
def test_a_cut_is_bounded_a_prefix_at_a_word_and_leaves_nothing_open(text: str, limit: int) -> None:
    line = " ".join(text.split("\n"))
    said = cut(line, limit)
    assert len(said) <= limit and "\n" not in said
    if len(line) <= limit:
        assert said == line
        return
    kept, mark, closers = said.rpartition(ELLIPSIS)
    if not mark:  # not even the ellipsis and a closer fit: the ellipsis alone
        assert said == ELLIPSIS[:limit]
        return
    assert line.startswith(kept), (line, said)
    assert not _open_left(said), said  # every bracket and code span it opened is closed
    assert set(closers) <= set(")]}`"), closers
    after = line[len(kept) :]
    at_word = after[:1] in (" ", "\t", ",", ";", ":")
    assert at_word or not any(c in " \t" for c in line[max(0, len(kept) - WORD_BACK) : len(kept)])


@given(st.text(max_size=300), st.integers(1, 200))
def test_a_table_cell_is_cut_as_a_line_is(text: str, limit: int) -> None:
    cell = table_cell(text, limit)
    bare = cell.replace("\\|", "|").replace("&lt;", "<").replace("&amp;", "&")
    assert len(bare) <= limit
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    assert bare == cut(flat, limit)
