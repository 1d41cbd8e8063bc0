"""A blueprint (or a campaign's, or a kinds file) in an encoding ajetd does not read (GBK, a
Chinese Windows editor's "ANSI" save; Latin-1, Windows-1252) is refused, in lint, at
admission and for a campaign alike, naming the first bad byte's line and column, the encoding
it looks like, and `save it as UTF-8`: it was read with U+FFFD for its bytes and admitted with
a garbled purpose, one run's session named `ajet_l` (walk97 F4). UTF-8 (a mark or none) and
UTF-16/32 with a byte-order mark read as before."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ajetd.core.blueprint import encoding_problem, parse_blueprint_bytes
from ajetd.core.errors import BlueprintError
from ajetd.core.textfile import undecodable
from conftest import Env, in_process

LINE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"))


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=8), st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-32"]))
def test_text_ajetd_reads_is_never_refused_for_its_encoding(lines: list[str], codec: str) -> None:
    assert undecodable("\n".join(lines).encode(codec)) is None


ASCII_LINE = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20)
WIDE = st.text(st.sampled_from("实验目的数学第二轮结果运行时间"), min_size=1, max_size=6)
WESTERN = st.text(st.sampled_from("éèàçüöñßÉ"), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(ASCII_LINE, max_size=6),
    ASCII_LINE,
    st.sampled_from([("gbk", WIDE, "GBK"), ("cp1252", WESTERN, "Windows-1252")]),
    st.data(),
)
def test_a_file_in_another_encoding_is_refused_at_its_first_bad_byte(
    before: list[str],
    head: str,
    encoding: tuple[str, st.SearchStrategy[str], str],
    data: st.DataObject,
) -> None:
    """Where the bytes are not UTF-8 (GBK's may be, by chance: `学` is UTF-8's `ѧ`), the line
    is the one of the first character that is not ASCII (every line before it is ASCII), the
    column within that character's run, and the encoding is named among those guessed."""
    codec, chars, name = encoding
    odd = data.draw(chars)
    text = "\n".join([*before, head + odd + " tail"]) + "\n"
    raw = text.encode(codec)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        assume(False)
    said = encoding_problem(raw)
    assert said is not None
    found = re.search(r"line (\d+), column (\d+) holds the byte", said)
    assert found is not None, said
    assert int(found[1]) == len(before) + 1, said
    assert len(head) + 1 <= int(found[2]) <= len(head) + len(odd), said
    assert "save it as UTF-8" in said and name in said, said
    with pytest.raises(BlueprintError, match="not UTF-8 text"):
        parse_blueprint_bytes(raw)


def _gbk_blueprint(env: Env) -> bytes:
    text = env.blueprint("gbk", purpose="数学实验 第二轮").read_text()
    return text.encode("gbk")


def test_lint_refuses_a_gbk_blueprint_saying_what_to_do(env: Env) -> None:
    path = env.tmp / "gbk.md"
    path.write_bytes(_gbk_blueprint(env))
    out = env.cli("lint", str(path))
    said = out.stdout + out.stderr
    assert out.returncode == 2, said
    assert "GBK" in said and "save it as UTF-8" in said and "实验目的" in said, said


def test_admission_refuses_a_latin1_blueprint_and_keeps_the_file(env: Env) -> None:
    raw = (
        env.blueprint("latin", purpose="caf\u00e9 latin1")
        .read_text()
        .encode("latin-1", errors="replace")
    )
    daemon = in_process(env, liveness=60)
    (env.home / "inbox" / "latin.md").write_bytes(raw)
    daemon.tick(time.time())
    (run,) = daemon.runs.values()
    assert run.status is not None and run.status.value == "rejected", run
    assert "not UTF-8 text" in run.reason and "Windows-1252" in run.reason, run.reason
    assert "save it as UTF-8" in run.reason
    (kept,) = (env.home / "rejected").glob(f"{run.run_id}__latin.md")
    assert kept.read_bytes() == raw


def test_a_campaigns_blueprint_and_a_kinds_file_are_refused_alike(env: Env) -> None:
    """The same class: every file only ajetd reads. A campaign's blueprint coming in is
    refused (one taken up before is read as it was: `admitted`), and a kinds file whose
    patterns would match nothing as garbled text names its bad byte too."""
    from ajetd.adapters.kindsfile import load_kinds_file
    from ajetd.core.errors import AjetdError
    from ajetd.hosts.campaignfolder import read_blueprint

    path = env.tmp / "exp.md"
    path.write_bytes(_gbk_blueprint(env))
    with pytest.raises(AjetdError, match=r"exp\.md: blueprint: not UTF-8 text"):
        read_blueprint(path)
    assert "\ufffd" in read_blueprint(path, admitted=True)
    kinds = env.tmp / "kinds.yaml"
    kinds.write_bytes("- name: 显存不足\n  pattern: '显存不足'\n".encode("gbk"))
    found, problems = load_kinds_file(kinds)
    assert found == () and "line 1, column 9" in problems[0] and "GBK" in problems[0], problems
