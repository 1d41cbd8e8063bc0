"""User-defined failure kinds: parsing, the `[ajetd] kinds:` key, linear-time matching."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ajetd.adapters.kindsfile import load_kinds_file
from ajetd.core.errors import BlueprintError
from ajetd.core.finding import WAITING_FOR_INPUT
from ajetd.core.kindnames import BUILTIN_NAMES, CATALOGUE_NAMES, OUTSIDE_NAMES
from ajetd.core.options import parse_options
from ajetd.core.userkinds import parse_kinds
from ajetd.diagnosis.kindset import KindSet
from ajetd.diagnosis.live import LiveScans
from ajetd.diagnosis.stream import StreamDiagnoser

GOOD = """
kinds:
  - name: quota_hit
    patterns: ['QuotaExceeded: project \\w+', 'over quota']
    severity: retryable
    explanation: The cluster's job quota was hit.
    fix: Wait for other jobs to end.
    remedy: relaunch
  - name: bad_shard
    patterns: ['shard \\d+ is corrupt']
    severity: fatal
    explanation: A data shard is corrupt.
    fix: Regenerate the shard.
    remedy: {env: {SKIP_BAD_SHARDS: "1"}}
"""


def test_a_good_file_parses_with_remedies(tmp_path: Path) -> None:
    path = tmp_path / "kinds.yaml"
    path.write_text(GOOD)
    kinds, problems = load_kinds_file(path)
    assert problems == []
    assert [(k.name, k.severity, k.remedy) for k in kinds] == [
        ("quota_hit", "retryable", "relaunch"),
        ("bad_shard", "fatal", "env:SKIP_BAD_SHARDS=1"),
    ]
    found = KindSet(kinds)
    assert found.match("sbatch: QuotaExceeded: project abc") is kinds[0]
    assert found.match("SHARD 12 IS CORRUPT") is kinds[1]
    assert found.match("all fine") is None


@pytest.mark.parametrize(
    ("entry", "needle"),
    [
        ("{name: Bad-Name, patterns: [x], severity: fatal, explanation: e, fix: f}", "name must"),
        (
            "{name: k1, patterns: ['(a'], severity: fatal, explanation: e, fix: f}",
            "k1: bad pattern",
        ),
        ("{name: k2, patterns: ['(a)\\1'], severity: fatal, explanation: e, fix: f}", "k2: bad"),
        ("{name: k3, patterns: ['x*'], severity: fatal, explanation: e, fix: f}", "every line"),
        ("{name: k4, patterns: [x], severity: sometimes, explanation: e, fix: f}", "k4: severity"),
        ("{name: k5, patterns: [x], severity: fatal, fix: f}", "k5: explanation"),
        (
            "{name: k6, patterns: [x], severity: fatal, explanation: e, fix: f, remedy: reboot}",
            "k6: remedy",
        ),
        ("{name: k7, patterns: [], severity: fatal, explanation: e, fix: f}", "k7: patterns"),
        (
            "{name: k8, patterns: [x], severity: fatal, explanation: e, fix: f, colour: red}",
            "k8: unknown key 'colour'",
        ),
        # a fix's environment is exported where the blueprint's is: the same names are kept
        (
            "{name: k9, patterns: [x], severity: retryable, explanation: e, fix: f, "
            "remedy: {env: {exit_file: x}}}",
            "k9: remedy env: exit_file is a name the trial's script keeps for itself",
        ),
        (
            "{name: k10, patterns: [x], severity: retryable, explanation: e, fix: f, "
            "remedy: {env: {AJETD_RUN_ID: x}}}",
            "k10: remedy env: AJETD_RUN_ID is set by ajetd",
        ),
        # placement replaces it: the fix's value was dropped while its event named it
        (
            "{name: k11, patterns: [x], severity: retryable, explanation: e, fix: f, "
            "remedy: {env: {CUDA_VISIBLE_DEVICES: '0'}}}",
            "k11: remedy env: CUDA_VISIBLE_DEVICES is set by ajetd from `gpus:`",
        ),
        (
            "{name: k12, patterns: [x], severity: retryable, explanation: e, fix: f, "
            'remedy: {env: {"exit_file\\n": x}}}',
            "k12: remedy env: 'exit_file\\n' is not a valid environment variable name",
        ),
    ],
)
def test_a_bad_kind_is_an_error_naming_it(entry: str, needle: str) -> None:
    with pytest.raises(BlueprintError) as info:
        parse_options(f"kinds:\n  - {entry}\n")
    assert any(needle in p for p in info.value.problems), info.value.problems


def test_bounds_on_count_and_length() -> None:
    problems: list[str] = []
    parse_kinds(
        [
            {
                "name": "k",
                "patterns": ["a" * 501],
                "severity": "fatal",
                "explanation": "e",
                "fix": "f",
            }
        ],
        problems,
    )
    assert "longer than 500" in problems[0]
    problems = []
    many = [
        {"name": f"k{i}", "patterns": ["a"], "severity": "fatal", "explanation": "e", "fix": "f"}
        for i in range(65)
    ]
    parse_kinds(many, problems)
    assert "more than 64 kinds" in problems[0]


def test_blueprint_kinds_key() -> None:
    options = parse_options(GOOD)
    assert [k.name for k in options.kinds] == ["quota_hit", "bad_shard"]
    assert parse_options("max_trials: 2").kinds == ()


def test_matching_stays_linear_on_a_catastrophic_pattern() -> None:
    """(a+)+$ backtracks exponentially in Python's re; RE2 answers at once."""
    problems: list[str] = []
    kinds = parse_kinds(
        [
            {
                "name": "evil",
                "patterns": ["(a+)+$"],
                "severity": "fatal",
                "explanation": "e",
                "fix": "f",
            }
        ],
        problems,
    )
    assert problems == []
    start = time.process_time()  # its CPU time, whatever runs beside it
    assert KindSet(kinds).match("a" * 50_000 + "!") is None
    assert time.process_time() - start < 1.0


def test_user_kinds_come_first_in_the_stream_under_any_dress(tmp_path: Path) -> None:
    """Anchored patterns match the worker's own text: Ray prefixes, ANSI colours and `\\r`
    redraws removed, wherever the chunks are cut; the live scan uses them too."""
    kinds = KindSet(parse_kinds(yaml_kinds(), []))
    text = (
        b"\x1b[36m(TaskRunner pid=7)\x1b[0m step 1\n"
        b"progress 10%\rprogress 20%\r(TaskRunner pid=7) QuotaExceeded: project abc\n"
        b"RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    for cut in range(1, len(text), 7):
        stream = StreamDiagnoser(user=kinds)
        stream.feed(text[:cut])
        stream.feed(text[cut:])
        found = stream.close()
        assert [(f.kind, f.line) for f in found] == [("quota_hit", 2), ("cuda_error", 3)]
    log = tmp_path / "trial.log"
    log.write_bytes(text)
    seen = LiveScans().scan(("run", 1), log, 0.0, kinds)
    assert seen is not None and [f.kind for f in seen.findings] == ["quota_hit", "cuda_error"]


def yaml_kinds() -> list[dict[str, object]]:
    return [
        {
            "name": "quota_hit",
            "patterns": [r"^QuotaExceeded: project \w+$"],
            "severity": "fatal",
            "explanation": "e",
            "fix": "f",
        }
    ]


def test_anchors_inside_and_at_the_end_of_a_pattern_see_the_undressed_line() -> None:
    kinds = KindSet(
        parse_kinds(
            [
                {
                    "name": "bad_shard",
                    "patterns": [r"(^|: )ShardError: shard \d+ is corrupt$"],
                    "severity": "fatal",
                    "explanation": "e",
                    "fix": "f",
                }
            ],
            [],
        )
    )
    assert kinds.anchored
    text = (
        b"(WorkerDict pid=3, ip=10.0.0.1) ShardError: shard 7 is corrupt "
        b"[repeated 3x across cluster]\r\n"
        b"[shard 9] ShardError: shard 9 is corrupt -- skipped\n"
    )
    found = StreamDiagnoser(user=kinds)
    found.feed(text)
    assert [(f.kind, f.line) for f in found.close()] == [("bad_shard", 1)]


def test_a_kinds_file_with_an_alias_bomb_is_refused_by_the_bounded_loader(tmp_path: Path) -> None:
    """kinds.yaml goes through the same bounded YAML loader as `[ajetd]`: no anchors."""
    from ajetd.adapters.kindsfile import load_kinds_file

    bomb = tmp_path / "kinds.yaml"
    rows = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    rows += [
        f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]" for p, n in zip("abcdefg", "bcdefgh", strict=True)
    ]
    bomb.write_text("\n".join(rows) + "\n")
    kinds, problems = load_kinds_file(bomb)
    assert kinds == () and len(problems) == 1 and "anchors" in problems[0], problems


@pytest.mark.parametrize("name", sorted(BUILTIN_NAMES))
def test_a_user_kind_named_like_a_built_in_is_refused(name: str) -> None:
    """walk91 F5: a user `cuda_oom` (retryable, or fatal with allow_fixes set) silently
    replaced the built-in: `diagnose` printed the user's severity under its name, and a run's
    allow_fixes were bypassed. Refused, naming the kind, for every built-in name; a stored
    blueprint read again keeps its kinds (a later ajetd's refusal takes no live run's options
    away)."""
    entry = f"{{name: {name}, patterns: [x], severity: retryable, explanation: e, fix: f}}"
    with pytest.raises(BlueprintError) as info:
        parse_options(f"kinds:\n  - {entry}\n")
    said = f"kinds: {name}: {name} is one of ajetd's built-in kinds"
    assert any(p.startswith(said) for p in info.value.problems), info.value.problems
    kept = parse_options(f"kinds:\n  - {entry}\n", admitted=True).kinds
    assert [k.name for k in kept] == [name]


def test_the_built_in_names_are_every_kind_ajetd_finds() -> None:
    """The names core refuses are the catalogue's and those found beside the output (kept as
    data in core, below the layers that define them: held equal here)."""
    from ajetd.daemon.gpuwatch import GPU_LOST
    from ajetd.diagnosis.catalogue import BY_NAME
    from ajetd.hosts import slurm
    from ajetd.hosts.ssh import SSH_LOST
    from ajetd.hosts.swarm import SERVER_DIED

    assert set(BY_NAME) == CATALOGUE_NAMES
    slurms = {kind for kind, _ in filter(None, slurm.FINAL_STATES.values())}
    outside = {WAITING_FOR_INPUT, GPU_LOST, SSH_LOST, SERVER_DIED} | slurms - CATALOGUE_NAMES
    assert outside == OUTSIDE_NAMES
