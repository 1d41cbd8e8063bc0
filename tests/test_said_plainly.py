"""What ajetd shows says one thing plainly (walk93 F4): lint shows each path as the run takes
it (`~/x` expanded); a campaign experiment named `baseline` is refused as a reserved name, not
with a character rule it meets; the ledger's `memory_gb` is a measurement or empty, never both
for one situation without a word; a run's tmux session is named from its purpose's words, not
from the escape text of control characters in it."""

from __future__ import annotations

import json
import string
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.core import campaignspec as cs
from ajetd.core import gpuuse
from ajetd.core.blueprint import visible
from ajetd.core.campaignrecord import ExpState, ledger_fields
from ajetd.core.model import Run, Trial
from ajetd.core.naming import session_base
from conftest import Env
from loopkit import Loop


def test_lint_shows_a_home_result_dir_as_the_run_takes_it(env: Env) -> None:
    bp = env.blueprint("tilde", result="~/tilde-res")
    home_dir = env.vars["HOME"]
    data = json.loads(env.cli("lint", str(bp), "--json").stdout)
    assert data["ok"], data["problems"]
    assert data["blueprint"]["result_dir"] == f"{home_dir}/tilde-res"
    text = env.cli("lint", str(bp)).stdout
    assert f"result_dir: {home_dir}/tilde-res" in text and "~/tilde-res" not in text
    # also where it is refused (not absolute after all: a relative one is shown as written)
    bp = env.blueprint("rel", result="rel-res")
    data = json.loads(env.cli("lint", str(bp), "--json").stdout)
    assert data["blueprint"]["result_dir"] == "rel-res"


def test_an_experiment_named_baseline_is_told_the_name_is_reserved() -> None:
    said = cs.name_problem("baseline")
    assert said is not None and "reserved for the campaign's own first row" in said
    assert "letters, digits" not in said
    said = cs.name_problem("two words")
    assert said is not None and "letters, digits, . _ - only" in said and "baseline" not in said
    assert cs.name_problem("baseline2") is None


def _ran(gpus: tuple[int, ...], samples: list[float | None]) -> Run:
    run = Run(run_id="k3x9az", source="b.md", submitted_at=0.0, started_at=1.0, ended_at=3.5)
    run = replace(run, gpu_ids=gpus, trials=(Trial(1, "python t.py", "ajet_x", 1.0, 3.5, 0),))
    stats = run.gpu_stats
    for at, mib in enumerate(samples):
        stats = gpuuse.fold(stats, [gpuuse.RunGpu(0, 0.0, mib)], float(at))
    return replace(run, gpu_stats=stats)


def test_memory_gb_is_measured_or_empty_and_an_empty_one_on_gpus_says_why() -> None:
    spec = cs.parse_campaign("name: c\nmetric: accuracy\nbase: b.md\nresult_dir: /r\n", {"b.md"})
    exp = ExpState(0, "baseline", "unchanged", run_id="k3x9az", recorded=True, status="keep")
    measured = ledger_fields(spec, exp, _ran((0,), [0.0]), "", "ajetd")
    assert measured["memory_gb"] == 0 and "memory_gb" not in measured["description"]
    held = ledger_fields(spec, exp, _ran((0,), [2048.0, 1024.0]), "", "ajetd")
    assert held["memory_gb"] == 2.0
    unsampled = ledger_fields(spec, exp, _ran((0,), []), "", "ajetd")
    assert unsampled["memory_gb"] is None
    assert (
        "memory_gb empty: it ended before its GPUs were first sampled" in (unsampled["description"])
    )
    cpu = ledger_fields(spec, exp, _ran((), []), "", "ajetd")
    assert cpu["memory_gb"] is None and "memory_gb" not in cpu["description"]


_WORDS = st.lists(
    st.text(string.ascii_lowercase[:23] + string.digits, min_size=1, max_size=8),
    min_size=1,
    max_size=5,
)
_CONTROLS = st.sampled_from(
    [
        "\x1b]0;PWNED\x07",
        "\x1b]2;T1TLE\x1b\\",
        "\x1b[31m",
        "\x1b[0m",
        "\x1b[2J",
        "\r",
        "\x07",
        "\x00",
        "\x9b",
    ]
)


@settings(max_examples=200, deadline=None)
@given(words=_WORDS, controls=st.lists(_CONTROLS, max_size=6), data=st.data())
def test_a_session_is_named_from_the_purpose_s_words_not_its_escapes(
    words: list[str], controls: list[str], data: st.DataObject
) -> None:
    plain = " ".join(words)
    places = sorted(data.draw(st.integers(0, len(plain))) for _ in controls)
    text, last = "", 0
    for at, control in zip(places, controls, strict=True):  # between the words' characters
        text, last = text + plain[last:at] + control, at
    text += plain[last:]
    mixed = session_base(visible(text), [], "k3x9az")
    # a control inside a word splits it, never adds to it; between words it is no word
    assert set(mixed.removeprefix("ajet_").replace("_", "")) <= set(plain.replace(" ", ""))
    if all(at == 0 or at == len(plain) or plain[at - 1 : at + 1].count(" ") for at in places):
        assert mixed == session_base(plain, [], "k3x9az"), text


def test_a_run_with_escapes_in_its_purpose_gets_a_session_of_its_words(
    env: Env, loop: Loop
) -> None:
    bp = env.blueprint("esc", ajetd="gpus: 0")
    purpose = "evil \x1b]0;PWNED\x07title \x1b[31mred\x1b[0m and\rCR overwrite\x1b[2J"
    bp.write_text(bp.read_text().replace("test run", purpose))
    run_id = loop.submit(bp)
    loop.started(run_id)
    assert loop.run(run_id).session == "ajet_evil_title_red_and_cr_overwrite"
    assert "ajet_evil_title_red_and_cr_overwrite" in env.tmux("ls").stdout
    assert loop.until_done(run_id)["status"] == "succeeded"
