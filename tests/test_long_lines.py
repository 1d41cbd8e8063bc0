"""A failure at the end of a line of any length is read (walk 91, F3).

A program that prints a progress bar or a huge message without a newline, then dies, puts its
error at the end of a line that may be hundreds of KiB long. Reading is bounded (a line is
kept as its first and last `KEPT_HEAD`/`KEPT_TAIL` bytes, `text.seen_bytes`), and before,
what was kept was only the first 64 KiB: `ajetd diagnose` said "no known failure found" for a
70 KB line ending in `torch.OutOfMemoryError`, and a live run with a 114 KB one failed as
`unknown_traceback` with no fix tried. Now the end is read, offline, by the daemon's reader fed
in pieces cut anywhere, and by `ajetd diagnose`, with the same findings.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.core.finding import Finding
from ajetd.diagnosis.live import LiveScans, diagnose_file
from ajetd.diagnosis.stream import diagnose_chunks
from ajetd.diagnosis.text import CUT_MARK, KEPT_HEAD, KEPT_TAIL, MAX_LINE_BYTES, seen_bytes
from conftest import Env

OOM = b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
FILLERS = [b"x", b"step 7 loss 0.5 ", b"\xe2\x96\x88", b"=", b"\x1b[32m#\x1b[0m", b"ab\xffcd"]


def _sig(findings: list[Finding]) -> list[tuple[str, int, int, str]]:
    return [(f.kind, f.line, f.count, f.evidence) for f in findings]


def _pieces(data: bytes, rng: random.Random, count: int) -> list[bytes]:
    cuts = sorted(rng.sample(range(1, len(data)), min(count, len(data) - 1)))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


# a long line built cheaply: runs of a few kinds of bytes (hostile ones too: `\r`, invalid UTF-8)
_RUNS = st.lists(
    st.tuples(
        st.sampled_from([b"x", b"\r", b"\xff", b"ab ", b"\r\r", b"\xe2\x96"]),
        st.integers(0, 30_000),
    ),
    max_size=8,
).map(lambda runs: b"".join(part * count for part, count in runs))


@settings(max_examples=200)
@given(a=_RUNS, b=_RUNS)
def test_what_is_kept_of_a_line_is_the_same_however_it_came(a: bytes, b: bytes) -> None:
    """The live reader keeps `seen_bytes` of a line still arriving and adds what comes next:
    that must keep what the whole line keeps, bounded."""
    assert seen_bytes(seen_bytes(a) + b) == seen_bytes(a + b)
    assert len(seen_bytes(a + b)) <= KEPT_HEAD + len(CUT_MARK) + KEPT_TAIL


@settings(max_examples=25)
@given(
    before=st.integers(0, 400_000),
    filler=st.sampled_from(FILLERS),
    after=st.sampled_from([b"", b" (see above)", b"\r"]),
    pty=st.booleans(),
    seed=st.integers(0, 2**32),
)
def test_a_failure_after_any_amount_of_text_on_its_line_is_found(
    before: int, filler: bytes, after: bytes, pty: bool, seed: int
) -> None:
    """Offline and by a reader fed the output in pieces cut anywhere: the same findings,
    root cause the failure at the line's end."""
    text = (filler * (before // len(filler)))[:before]
    data = b"step 1\n" + text + b" " + OOM + after + b"\nstep 2\n"
    if pty:
        data = data.replace(b"\n", b"\r\n")
    whole = diagnose_chunks([data])
    assert [f.kind for f in whole] == ["cuda_oom"], (before, whole)
    assert whole[0].line == 2
    rng = random.Random(seed)
    for count in (2, 7, 60):
        assert _sig(diagnose_chunks(_pieces(data, rng, count))) == _sig(whole), count


def test_the_start_of_a_long_line_is_read_too() -> None:
    """An exception line whose message runs on for hundreds of KiB keeps its class."""
    data = b"KeyError: 'model' " + b"y" * 300_000 + b"\n"
    assert [f.kind for f in diagnose_chunks([data])] == ["unknown_traceback"]
    assert [f.kind for f in diagnose_chunks(_pieces(data, random.Random(1), 9))] == [
        "unknown_traceback"
    ]


def test_no_word_is_read_across_the_cut() -> None:
    """What is dropped from the middle of a long line leaves a mark: a kind's words split by
    the cut are not joined."""
    head = b"a" * (KEPT_HEAD - len(b"CUDA out of")) + b"CUDA out of"
    data = head + b"z" * 100_000 + b" memory" + b"b" * (KEPT_TAIL - len(b" memory")) + b"\n"
    assert len(data) > MAX_LINE_BYTES
    assert diagnose_chunks([data]) == []
    assert diagnose_chunks(_pieces(data, random.Random(2), 30)) == []


def test_the_daemons_reader_finds_it_in_a_growing_log(tmp_path: Path) -> None:
    """`LiveScans` on a log that grows in pieces (a 114 KB line ending in the OOM, through a
    pty), as a running trial's; then the ended trial's diagnosis of the file."""
    data = (b"start\n" + b"#" * 114_000 + b" " + OOM + b"\n").replace(b"\n", b"\r\n")
    log, live, key = tmp_path / "trial-1.log", LiveScans(), ("r", 1)
    log.write_bytes(b"")
    shown: tuple[Finding, ...] = ()
    for piece in _pieces(data, random.Random(3), 25):
        with open(log, "ab") as handle:
            handle.write(piece)
        for seen in (live.scan(key, log, 0.0), live.paused(key, log.stat().st_size)):
            shown = seen.findings if seen is not None else shown
    assert [f.kind for f in shown] == ["cuda_oom"]
    assert [f.kind for f in live.finish(key, log) or []] == ["cuda_oom"]
    assert [f.kind for f in diagnose_file(log)] == ["cuda_oom"]


def test_diagnose_reads_the_end_of_a_long_line(env: Env, tmp_path: Path) -> None:
    log = tmp_path / "long.log"
    log.write_bytes(b"x" * 70_000 + b" " + OOM + b"\n")
    out = env.cli("diagnose", str(log))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("cuda_oom [fatal]") or "cuda_oom" in out.stdout, out.stdout


def test_a_run_whose_oom_ends_a_long_line_gets_its_fix(daemon_env: Env) -> None:
    """Walk 91, F3 live: a 114 KB line ending in the OOM failed the run as
    `unknown_traceback`, no fix tried. Now its fix is applied, as for any OOM."""
    env = daemon_env
    config = env.config("longl", oom_above_micro_batch=2, oom_after_bar=114_000)
    path = env.codebase / config
    data = yaml.safe_load(path.read_text())
    data["actor_rollout_ref"] = {"actor": {"ppo_micro_batch_size_per_gpu": 4}}
    path.write_text(yaml.safe_dump(data))
    allow = "allow_fixes: {ppo_micro_batch_size_per_gpu: {min: 1}}"
    run_id = env.submit(env.blueprint("longl", config=config, ajetd=allow))
    done = env.wait_done(run_id)
    assert done["status"] == "succeeded" and done["trials"] == 2, done
    assert [f["kind"] for f in done["fixes_applied"]] == ["cuda_oom"]


def test_a_failed_runs_reason_quotes_the_message_that_ended_a_long_line(env: Env) -> None:
    """Walk97 F8 live: a program prints a long line of `y` without a newline, the CUDA OOM at
    its end, and exits 1. The run's reason (finish.flag, status, `ajetd wait`'s line) quoted
    its finding's evidence cut a second time from its start: `cuda_oom: yyyy… yyyy…`, the
    message itself gone. Now the reason holds the message."""
    message = "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB"
    command = f"echo step:1; head -c 2000000 /dev/zero | tr '\\0' y; echo ' {message}'; exit 1"
    env.start_daemon("--liveness", "0.5")
    run_id = env.submit(env.blueprint("bigline", command=command, ajetd="gpus: 0"))
    done = env.wait_done(run_id)
    assert done["status"] == "failed", done
    assert done["diagnosis"][0]["kind"] == "cuda_oom", done["diagnosis"]
    assert "(cuda_oom: " in done["reason"], done
    assert "… RuntimeError: CUDA out of memory. Tried to allocate" in done["reason"], done
    flag = json.loads((Path(done["result_dir"]) / "finish.flag").read_text())
    assert message in flag["reason"], flag
    waited = env.cli("wait", run_id)
    assert "CUDA out of memory" in waited.stdout + waited.stderr, waited
