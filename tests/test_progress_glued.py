"""A line printed after a tqdm bar, on the bar's own line, is read as the line it is.

tqdm redraws its bar with `\\r` and prints no newline until it closes, so whatever a program
or its shell prints next while the bar is open lands after the bar's `]`: a shell's `Killed`
(the OOM killer, InternLandMark/LandMark#65), a rank's NCCL watchdog line (LlamaFactory#8261),
a bare exception line. Before, such a line gave no finding (the bar sat where its anchored
patterns and the exception-line shape expect the line to start). Whole text, the live
reader's chunks (the bar redrawn with `\\r`, split anywhere) and a property over bar shapes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.core.termtext import strip_dress
from ajetd.core.userkinds import parse_kinds
from ajetd.diagnosis.kindset import KindSet
from ajetd.diagnosis.stream import StreamDiagnoser, diagnose_chunks, diagnose_text

CORPUS = Path(__file__).parent / "data" / "corpus"

BARS = [
    "  31%|████████████████████▉                                  | 331/1063 [01:06<03:59,  3.06it/s]",
    "  1%|▏         | 24/1752 [01:08<1:22:56,  2.88s/it]",
    "Epoch 1:  45%|████▌     | 9/20 [00:10<00:12,  1.10s/it, loss=0.512, lr=1e-5]",
    "Training Progress: 100%|██████████| 1000/1000 [10:00<00:00, 1.67it/s]",
    "generating:   0%|          | 0/64 [00:00<?, ?it/s]",
    "  7%|" + "█" * 300 + "| 7/100 [00:01<00:13, 6.9it/s]",  # a very wide terminal
]
LINES = [
    ("Killed", "host_oom"),
    ("Segmentation fault (core dumped)", "segfault"),
    ("ValueError: the config's batch size is not a multiple of the world size", None),
    (
        "[rank5]:[E602 11:17:52.185053341 ProcessGroupNCCL.cpp:632] [Rank 5] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600000 "
        "milliseconds before timing out.",
        "nccl_timeout",
    ),
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.10 GiB of which 1.2 GiB is free.",
        "cuda_oom",
    ),
]


def _kinds(text: str) -> list[str]:
    return [f.kind for f in diagnose_text(text)]


@pytest.mark.parametrize("bar", BARS)
@pytest.mark.parametrize(("line", "kind"), LINES)
def test_a_line_after_a_bar_is_read_as_that_line(bar: str, line: str, kind: str | None) -> None:
    alone = _kinds(line + "\n")
    assert alone and (kind is None or alone[0] == kind), alone
    assert _kinds(bar + line + "\n") == alone
    assert strip_dress(bar + line) == strip_dress(line)


@pytest.mark.parametrize("bar", BARS)
def test_a_bar_redrawn_then_followed_live_in_any_chunks(bar: str) -> None:
    """The live reader: the bar redrawn a few times with `\\r`, then `Killed` on its line,
    fed in chunks cut anywhere."""
    data = ("\r" + bar) * 3 + "Killed\n"
    raw = data.encode()
    for cut in range(1, len(raw), max(1, len(raw) // 17)):
        reader = StreamDiagnoser()
        reader.feed(raw[:cut])
        reader.feed(raw[cut:])
        assert [f.kind for f in reader.close()] == ["host_oom"], cut


def test_the_real_excerpt_of_a_killed_bar_is_host_memory() -> None:
    data = (CORPUS / "host_oom" / "landmark-65.log").read_bytes()
    found = diagnose_chunks([data[data.find(b"\n") + 1 :]])
    assert found and found[0].kind == "host_oom" and found[0].evidence == "Killed", found


@pytest.mark.parametrize(
    "line",
    [
        "  31%|███▌      | 331/1063 [01:06<03:59,  3.06it/s]",  # a bar alone says nothing
        "| 50% | accuracy | [see table] |",  # a table row, no bar
        "score 45%|ok| done [x]",
    ],
)
def test_a_bar_alone_or_a_table_says_nothing(line: str) -> None:
    assert _kinds(line + "\n") == []


_BAR_TEXT = st.text(alphabet=" ▏▎▍▌▋▊▉█#=", max_size=120)


@settings(max_examples=200, deadline=None)
@given(
    desc=st.sampled_from(["", "Epoch 3: ", "train: ", "Rollout gen: "]),
    pct=st.integers(0, 100),
    bar=_BAR_TEXT,
    n=st.integers(0, 10**6),
    rate=st.sampled_from(["3.06it/s", "2.88s/it", "?it/s", "1.2MB/s", "3.06it/s, loss=0.5"]),
    which=st.sampled_from(LINES),
)
def test_any_bar_before_a_line_leaves_its_finding(
    desc: str, pct: int, bar: str, n: int, rate: str, which: tuple[str, str | None]
) -> None:
    line, _ = which
    shown = f"{desc}{pct:3d}%|{bar}| {n}/{n + 1} [00:01<00:02, {rate}]"
    assert _kinds(shown + line + "\n") == _kinds(line + "\n")


def test_a_users_anchored_kind_is_found_after_a_bar() -> None:
    """User kinds are compiled by RE2 with their `^` widened over the dress (`kindset`), the
    bar among it, there without its bound (RE2 is linear without one)."""
    kinds = parse_kinds(
        [
            {
                "name": "bad_shard",
                "patterns": [r"^ShardError: shard \d+ is corrupt$"],
                "severity": "fatal",
                "explanation": "A data shard is corrupt.",
                "fix": "Regenerate the shard.",
            }
        ],
        [],
    )
    user = KindSet(kinds)
    for bar in BARS:
        found = diagnose_text(bar + "ShardError: shard 12 is corrupt\n", user=user)
        assert [f.kind for f in found][:1] == ["bad_shard"], bar
