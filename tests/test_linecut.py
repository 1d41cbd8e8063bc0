"""A line cut to its bound stays readable (walk92 F9: a crash row's why was cut mid-word,
`... reserved by PyTorch bu…`, its `(cuda_oom:` never closed): at a word boundary near the
bound, `…`, and what the kept part opened closed; over arbitrary text (hypothesis)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from ajetd.core.campaignrecord import REASON_MAX
from ajetd.core.errors import one_line
from ajetd.core.linecut import ELLIPSIS, WORD_BACK, cut, cut_around, cut_middle
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


_OPENERS, _CLOSERS = set("([{`"), set(")]}`")
_MIRROR = str.maketrans("()[]{}", ")(][}{")


def _at_word_end(line: str, kept: str) -> bool:
    """`kept`, a prefix of `line`, ends where a word does (or no word boundary was near)."""
    after = line[len(kept) :]
    near = line[max(0, len(kept) - WORD_BACK) : len(kept)]
    return after[:1] in ("", " ", "\t", ",", ";", ":") or not any(c in " \t" for c in near)


def _at_word_start(line: str, tail: str) -> bool:
    """`tail`, a suffix of `line`, begins where a word does (or no word boundary was near
    after its start; or it is empty: no room for the end)."""
    before = line[: len(line) - len(tail)]
    return (
        not tail
        or before[-1:] in ("", " ", "\t", ",", ";", ":")
        or not any(c in " \t" for c in tail[:WORD_BACK])
    )


@example("(" * 50 + "x" * 300, 40, 500)
@example("a " + ")" * 300, 60, 500)
@example("`a (b` " * 60, 80, 500)
@example("word" * 100, 50, 600)
@given(
    st.text(st.sampled_from([*"ab (){}[]`:;,\t", "é", "中"]), max_size=500),
    st.integers(2, 320),
    st.integers(0, 1000),
)
def test_a_cut_keeping_both_ends_cuts_each_at_a_word_and_leaves_nothing_open(
    line: str, limit: int, share: int
) -> None:
    """A finding's evidence of a long line keeps its start and its end: each cut at a word
    (the walks' `… reserved by PyTorch bu … ocation`), nothing opened left open, nothing
    closed left unopened, bounded."""
    tail = max(1, (limit - 1) * share // 1000)  # less than the limit
    said = cut_middle(line, limit, tail)
    assert len(said) <= limit
    if len(line) <= limit:
        assert said == line
        return
    head, mark, rest = said.partition(ELLIPSIS)
    if mark:
        assert line.startswith(head) and _at_word_end(line, head), (line, said)
        closers, _, end = rest.partition(" ")
        assert set(closers) <= _CLOSERS, said
        assert not _open_left(head + mark + closers), said  # what the start opened: closed
    else:  # no room for the start: its end alone, after a space
        end = said.removeprefix(" ")
    assert not _open_left(end[::-1].translate(_MIRROR)), said  # what the end closes: opened
    # the end: what opens what it closes, then a suffix of the line from a word's start
    splits = [k for k in range(len(end) + 1) if set(end[:k]) <= _OPENERS]
    kept = [end[k:] for k in splits if line.endswith(end[k:]) and len(end[k:]) <= tail]
    assert kept, (line, said)
    assert any(_at_word_start(line, k) for k in kept), (line, said)


def test_a_findings_evidence_of_a_long_line_is_cut_at_words_in_every_reader(
    tmp_path: Path,
) -> None:
    """The evidence `ajetd diagnose` (text and --json) and the daemon's reader quote: the same,
    its start and end cut at words, brackets closed."""
    import json
    import subprocess
    import sys

    from ajetd.diagnosis.live import diagnose_file

    words = " ".join(f"allocation{i}(ok)" for i in range(60))
    line = f"RuntimeError: CUDA out of memory. {words} (tried to allocate 2.00 GiB; reserved)"
    log = tmp_path / "train.log"
    log.write_text(f"step 1\n{line}\n")
    evidence = diagnose_file(log)[0].evidence
    head, _, rest = evidence.partition(ELLIPSIS)
    assert line.startswith(head) and line[len(head)] == " ", evidence
    closers, _, end = rest.partition(" ")
    assert line.endswith(end) and line[-len(end) - 1] == " ", evidence
    assert not _open_left(evidence) and set(closers) <= _CLOSERS
    run = [sys.executable, "-m", "ajetd", "diagnose", str(log)]
    shown = subprocess.run([*run, "--json"], capture_output=True, text=True, check=False)
    assert evidence in [f["evidence"] for f in json.loads(shown.stdout)], shown
    text = subprocess.run(run, capture_output=True, text=True, check=False).stdout
    assert f"evidence: {evidence}" in text, text


@example("y" * 500 + " RuntimeError: CUDA out of memory.", 501, 300)
@example("(" * 50 + "x" * 300 + ") b", 320, 60)
@example("a) b] " * 80 + "tail", 300, 100)
@given(
    st.text(st.sampled_from([*"ab (){}[]`:;,\t", "é", "中"]), max_size=600),
    st.integers(0, 700),
    st.integers(2, 320),
)
def test_a_cut_around_a_place_keeps_it_near_the_start_at_words_and_leaves_nothing_open(
    line: str, at: int, limit: int
) -> None:
    """A finding's evidence of a line whose match lies far from its start keeps the match
    near the evidence's start (walk97 F8): bounded, `…` and a space where the start was left
    off, the rest the line from at most `at` on, brackets balanced both ways."""
    at = min(at, len(line))
    said = cut_around(line, at, limit)
    assert len(said) <= limit
    lead = ELLIPSIS + " "
    if not said.startswith(lead) or at <= WORD_BACK:
        return
    body = said[len(lead) :]
    assert not _open_left(body[::-1].translate(_MIRROR)), said  # what it closes: opened
    splits = [k for k in range(len(body) + 1) if set(body[:k]) <= _OPENERS]
    starts = [line.find(cut(body[k:].removesuffix(ELLIPSIS), len(body))) for k in splits]
    assert any(0 < start <= at for start in starts) or body.endswith(ELLIPSIS), (line, said)


def test_a_findings_evidence_and_reason_keep_a_message_that_ends_a_long_line() -> None:
    """Walk97 F8: a program printed 50 MB of `y` without a newline, then `RuntimeError: CUDA
    out of memory`: the evidence kept the line's start and end, and the reason, cut from the
    evidence's start (`policy.root_cause`), showed `cuda_oom: yyyy… yyyy…`. Whatever stands
    before the message on its line (a bar of any length without spaces, words, a message amid
    a longer line), the evidence holds the message within its first 140 characters and the
    reason quotes it."""
    from ajetd.core.policy import root_cause
    from ajetd.diagnosis.stream import diagnose_text

    message = "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB"
    for before in ("y" * 50_000, "y" * 150, "step 3 " * 40, "█" * 2_000, "x" * 290):
        for after in ("", " " + "w" * 400, " (see above) " + "z " * 300):
            found = diagnose_text(f"step:1\n{before} {message}{after}\n")
            assert [f.kind for f in found] == ["cuda_oom"], (before[:20], after[:20])
            evidence = found[0].evidence
            assert len(evidence) <= 300
            assert 0 <= evidence.find("CUDA out of memory") <= 140, evidence
            assert "CUDA out of memory. Tried to" in root_cause(found[0]), root_cause(found[0])
    # a line whose match is at its start keeps its start and end, as before
    start = diagnose_text(f"{message} " + "q " * 300 + "END\n")[0].evidence
    assert start.startswith(message[:30]) and start.endswith("END"), start
