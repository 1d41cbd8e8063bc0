"""A run's YAML config is user input too (lint, admission and a config fix read it): whatever
its bytes, `check_blueprint` gives a resolution or a problem naming the file, never an
exception or a dead process, quickly.

The regression: PyYAML 6.0.3's wheel (CI's Python has it) builds a document by recursion in
C with no bound, so a 200 KB config of `[` killed the process with SIGSEGV, and a 3,000-deep
one raised RecursionError in whatever walked it later ("lint: the checks stopped"). PyYAML
6.0.4's libyaml stops at 1,000 levels itself, which is why a fresh venv did not see it.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ajetd.core import yamlpart
from ajetd.core.blueprint import parse_blueprint
from ajetd.core.limits import CONFIG_MAX_DEPTH, CONFIG_MAX_VALUES
from ajetd.frameworks.agentjet import MAX_KEY_PARTS
from ajetd.hosts.fs import LOCAL, SAFE_DUMPER, read_config
from ajetd.hosts.preflight import check_blueprint
from conftest import Env

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from fuzz import YAML_TRICKS  # the fuzz script's corpus

DEEP = 200_000  # deep enough to overflow the C stack where building is unbounded
NESTINGS = {
    "flow sequences": "x: " + "[" * DEEP + "]" * DEEP + "\n",
    "flow mappings": "x: " + "{a: " * DEEP + "b" + "}" * DEEP + "\n",
    "compact block sequences": "x:\n" + "- " * DEEP + "a\n",
    "complex keys": "? " * DEEP + "a\n",
    "indented mappings": "".join(" " * i + f"k{i}:\n" for i in range(CONFIG_MAX_DEPTH + 1))
    + " " * (CONFIG_MAX_DEPTH + 1)
    + "v\n",
}


@pytest.mark.parametrize("body", list(NESTINGS.values()), ids=list(NESTINGS))
def test_a_config_nested_too_deep_is_named_with_its_line(tmp_path: Path, body: str) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(body)
    said = read_config(str(path), LOCAL)
    assert isinstance(said, str), type(said)
    assert said.startswith(f"{path} is not valid YAML: nested more than {CONFIG_MAX_DEPTH}")
    assert "(line " in said


def test_a_config_at_the_depth_bound_is_read(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    depth = CONFIG_MAX_DEPTH - 1  # the top mapping is one level
    path.write_text("x: " + "[" * depth + "1" + "]" * depth + "\n")
    config = read_config(str(path), LOCAL)
    assert isinstance(config, dict)


def _merge_bomb(levels: int) -> str:
    """Anchors that each merge the one before 9 times: 492 bytes (8 levels) built 723 MB in
    66 s, each level 9 times more."""
    lines = ["a0: &a0 {x0: 1, y0: 2, z0: 3, w0: 4, v0: 5, u0: 6, t0: 7, s0: 8, r0: 9}"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} {{<<: [{', '.join([f'*a{i - 1}'] * 9)}]}}")
    return "\n".join(lines) + "\n"


def _merge_chain(levels: int) -> str:
    """Each anchor merges the one before: quadratic (143 KB took 11.8 s)."""
    lines = ["a0: &a0 {x0: 1}"]
    lines += [f"a{i}: &a{i} {{<<: *a{i - 1}, x{i}: 1}}" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "body",
    [
        _merge_bomb(8),
        _merge_chain(6000),
        "a: &a [" + "x, " * 1000 + "x]\nb: [" + "*a, " * 3000 + "*a]\n",
    ],
    ids=["merge bomb", "merge chain", "aliases"],
)
def test_a_config_whose_aliases_stand_for_too_much_is_refused_quickly(
    tmp_path: Path, body: str
) -> None:
    path = tmp_path / "merge.yaml"
    path.write_text(body)
    started = time.monotonic()
    said = read_config(str(path), LOCAL)
    assert time.monotonic() - started < 5
    assert isinstance(said, str), type(said)
    assert f"more than {CONFIG_MAX_VALUES} values, aliases counted as what they name" in said


def test_a_config_with_anchors_and_merge_keys_is_read_as_yaml_means_it(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("base: &b {lr: 1.0e-6, steps: 3}\nrun: {<<: *b, steps: 5}\nlist: [*b, *b]\n")
    config = read_config(str(path), LOCAL)
    assert isinstance(config, dict)
    assert config["run"] == {"lr": 1e-6, "steps": 5} and config["list"] == [config["base"]] * 2


def test_a_config_is_read_as_omegaconf_reads_it(tmp_path: Path) -> None:
    """`1e-6` a float (YAML 1.1 wants a dot: PyYAML alone reads text), a date text, a key
    given twice refused with both lines, as Hydra and NeMo-RL's OmegaConf.load do."""
    path = tmp_path / "lr.yaml"
    path.write_text("optim: {lr: 1e-6, wd: 3e-05, eps: -1E+3, day: 2024-01-01, ok: 1.0e-6}\n")
    config = read_config(str(path), LOCAL)
    assert isinstance(config, dict)
    assert config["optim"] == {
        "lr": 1e-6,
        "wd": 3e-5,
        "eps": -1000.0,
        "day": "2024-01-01",
        "ok": 1e-6,
    }
    assert str(config["optim"]["lr"]) == "1e-6"  # as written, for messages and the copy
    path.write_text("optim:\n  lr: 1e-6\n  lr: 2e-6\n")
    said = read_config(str(path), LOCAL)
    assert isinstance(said, str) and "key 'lr' given twice (lines 2 and 3)" in said, said


def _checked(env: Env, body: bytes) -> list[str]:
    """What lint would say of a good blueprint whose config holds `body`."""
    config = env.codebase / "hostile.yaml"
    config.write_bytes(body)
    bp = parse_blueprint(env.blueprint("hostile", config=str(config)).read_text())
    started = time.monotonic()
    resolved, problems = check_blueprint(bp)
    assert time.monotonic() - started < 10, body[:80]
    assert (resolved is None) == bool(problems), problems
    return problems


HOSTILE = [
    *(trick.encode() for trick in YAML_TRICKS),
    *(body.encode() for body in NESTINGS.values()),
    b"a: \xff\xfe\n",  # no UTF-8
    b"a:\n\tb: 1\n",  # a tab indents
    b"- just\n- a list\n",
    b"ajet: [1, 2]\n",  # the sections ajetd reads, of the wrong shape
    b"ajet: {trainer_common: 3, rollout: [x]}\n",
    b"ajet: {trainer_common: {val_print_to_markdown_file_path: [1]}}\n",
]


@pytest.mark.parametrize("body", HOSTILE, ids=range(len(HOSTILE)))
def test_a_hostile_config_gives_a_problem_or_a_resolution(env: Env, body: bytes) -> None:
    for problem in _checked(env, body):
        assert "Traceback" not in problem and len(problem) < 2000, problem


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(alphabet="[]{}-?:,&*!|># \n'\"\tax1.~", max_size=400))
def test_any_yaml_shaped_text_gives_a_problem_or_a_resolution(env: Env, body: str) -> None:
    for problem in _checked(env, body.encode()):
        assert "Traceback" not in problem, problem


# The val file's path is a path the daemon asks the file system about (its size at admission):
# one holding a NUL raised ValueError ("embedded null byte") there, so lint said 'the checks
# stopped' and the daemon rejected the run with 'internal error while admitting'. A path no
# file could have is refused by its key, as the blueprint's own paths are (values.path_problem).
UNUSABLE_VAL_PATHS = {
    "NUL": "./saved\x00/val.md",
    "escape": "./saved/\x1b[2Jval.md",
    "too long": "./" + "a" * 5000 + "/val.md",
    "name too long": "./saved/" + "a" * 300 + ".md",
}


@pytest.mark.parametrize("val", list(UNUSABLE_VAL_PATHS.values()), ids=list(UNUSABLE_VAL_PATHS))
@pytest.mark.parametrize("given", ["in the config", "in yaml_overrides"])
def test_a_val_path_no_file_could_have_is_named(env: Env, val: str, given: str) -> None:
    key = "ajet.trainer_common.val_print_to_markdown_file_path"
    config = env.codebase / "configs" / "val.yaml"
    written = val if given == "in the config" else "./saved/val.md"
    config.write_text(
        yaml.safe_dump({"ajet": {"trainer_common": {"val_print_to_markdown_file_path": written}}})
    )
    override = key + "=" + json.dumps(val)  # YAML's escapes: the text itself holds none
    ajetd = "" if given == "in the config" else f"yaml_overrides: [{json.dumps(override)}]"
    bp = parse_blueprint(env.blueprint("val", config=str(config), ajetd=ajetd).read_text())
    resolved, problems = check_blueprint(bp)
    assert resolved is None
    assert [p for p in problems if p.startswith(f"exp_yaml_path: {key}: the path ")], problems


@pytest.mark.parametrize("count", ["-3", "10" * 15, "1" + "0" * 300])
def test_a_gpu_count_no_run_is_given_is_named(env: Env, count: str) -> None:
    """n_gpus_per_node × nnodes is kept in the run's record (placement reads it); a count of
    31 digits was kept there with `gpus: all`, and the record could not be read back."""
    problems = _checked(
        env, f"ajet:\n  trainer_common:\n    n_gpus_per_node: {count}\n    nnodes: 1\n".encode()
    )
    assert [p for p in problems if "n_gpus_per_node × nnodes = " in p], problems


@pytest.mark.parametrize("parts", [MAX_KEY_PARTS + 1, 150, 20_000])
def test_an_override_key_deeper_than_a_config_is_named(env: Env, parts: int) -> None:
    """A yaml_overrides key of 20,000 parts raised RecursionError where the copy was made
    ('lint: the checks stopped'); one of 150 made a copy deeper than a config ajetd reads."""
    key = ".".join(["a"] * parts)
    out = env.cli("lint", str(env.blueprint("deepkey", ajetd=f'yaml_overrides: ["{key}=1"]')))
    said = out.stdout + out.stderr
    assert f"the key has {parts} parts, at most {MAX_KEY_PARTS}" in said, said[-2000:]
    assert "checks stopped" not in said


def test_the_deepest_override_makes_a_copy_that_reads_back(env: Env, tmp_path: Path) -> None:
    value = "[" * (yamlpart.MAX_DEPTH - 1) + "1" + "]" * (yamlpart.MAX_DEPTH - 1)
    override = ".".join(["a"] * MAX_KEY_PARTS) + "=" + value
    bp = parse_blueprint(
        env.blueprint("deepest", ajetd=f"yaml_overrides: [{override!r}]").read_text()
    )
    resolved, problems = check_blueprint(bp)
    assert resolved is not None, problems
    copy = tmp_path / "copy.yaml"
    copy.write_text(yaml.dump(dict(resolved.runs_with), Dumper=SAFE_DUMPER))
    assert isinstance(read_config(str(copy), LOCAL), dict)
