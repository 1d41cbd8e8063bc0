"""A blueprint written as YAML front matter (`---`, `exp_…: …` lines, `---`): the front
matter's end is its closing line. The last key took in the closing `---` and all the text
after it (walk 90, F7): the purpose read `Purpose placed last\\n---\\n\\nSome notes here.`, a
time limit `1 week\\n---` was refused, a bare `7200` refused rather than warned, and a
command last was warned of "`---` after the command". Whatever key is last and whatever
follows, each value is read as written."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ajetd.core.blueprint import parse_blueprint
from ajetd.core.blueprintscan import scan_parts
from ajetd.core.errors import BlueprintError
from conftest import Env

VALUES = {
    "exp_purpose": "Purpose placed last",
    "exp_codebase_dir": "/tmp/code",
    "exp_venv_exe": "/usr/bin/python3",
    "exp_yaml_path": "cfg.yaml",
    "exp_launch_command": "python train.py 3",
    "exp_result_dir": "/tmp/res/fm",
    "exp_max_time": "10 minutes",
}
AFTER = (  # what follows the front matter
    "",
    "\n",
    "\nSome notes here.\n",
    "Some notes here.\n---\nmore: prose\n",  # no blank line, another rule, a colon
    "\n# Notes\nNothing else.\n",
    "\n---\n\n***\n",
    "\n```bash\npython other.py\n```\n",
)


def _front(order: list[str], closing: str, after: str, values: dict[str, str]) -> str:
    body = "".join(f"{key}: {values[key]}\n" for key in order)
    return f"---\n{body}{closing}\n{after}"


@given(
    order=st.permutations(list(VALUES)),
    closing=st.sampled_from(("---", "...", "---  ")),
    after=st.sampled_from(AFTER),
)
def test_every_value_is_read_whatever_key_is_last_and_whatever_follows(
    order: list[str], closing: str, after: str
) -> None:
    bp = parse_blueprint(_front(order, closing, after, VALUES))
    assert (bp.purpose, bp.codebase_dir, bp.venv_exe, bp.yaml_path) == (
        "Purpose placed last",
        "/tmp/code",
        "/usr/bin/python3",
        "cfg.yaml",
    )
    assert (bp.launch_command, bp.result_dir, bp.max_time_s) == (
        "python train.py 3",
        "/tmp/res/fm",
        600.0,
    )
    assert bp.max_time_text == "10 minutes"
    assert not any("---" in w or "note" in w for w in bp.warnings), bp.warnings


@given(order=st.permutations(list(VALUES)), after=st.sampled_from(AFTER))
def test_a_bare_number_last_is_warned_not_refused(order: list[str], after: str) -> None:
    bp = parse_blueprint(_front(order, "---", after, {**VALUES, "exp_max_time": "7200"}))
    assert bp.max_time_s == 7200 * 3600.0
    assert any(w.startswith("exp_max_time: 7200 is a bare number") for w in bp.warnings)


def test_a_refused_value_last_is_quoted_without_the_closing_line() -> None:
    order = [k for k in VALUES if k != "exp_max_time"] + ["exp_max_time"]
    text = _front(order, "---", "\nSome notes here.\n", {**VALUES, "exp_max_time": "soon"})
    with pytest.raises(BlueprintError) as refused:
        parse_blueprint(text)
    problems = refused.value.problems  # the one problem names the value, nothing after it
    assert len(problems) == 1 and "soon" in problems[0], problems
    assert "---" not in problems[0] and "notes" not in problems[0], problems


def test_parts_after_the_front_matter_are_read_and_prose_there_is_no_value() -> None:
    order = [k for k in VALUES if k != "exp_purpose"] + ["exp_purpose"]
    text = _front(order, "---", "\nIntro prose.\n\n## [exp_notes]\nA note.\n", VALUES)
    parts = scan_parts(text)[0]
    assert parts["exp_purpose"] == "Purpose placed last"
    assert parts["exp_notes"] == "A note."


def test_an_ajetd_mapping_in_the_front_matter_keeps_its_indentation() -> None:
    """`ajetd:` with its options indented under it, as YAML front matter nests them: the
    first key lost its indentation and the YAML was refused."""
    text = _front(list(VALUES), "ajetd:\n  gpus: 0\n  max_trials: 1\n---", "\nText.\n", VALUES)
    options = parse_blueprint(text).options
    assert (options.gpus, options.max_trials) == ("0", 1)


def test_a_rule_that_closes_a_part_is_not_its_value() -> None:
    """The same class in a blueprint of headings: a `---` between sections was the command's
    'note' and the end of the time limit's text."""
    parts = "".join(
        f"## [{key}]\n{value}\n\n{rule}\n\n"
        for (key, value), rule in zip(
            VALUES.items(), ("---", "***", "___", "- - -") * 2, strict=False
        )
    )
    bp = parse_blueprint(parts)
    assert (bp.purpose, bp.launch_command, bp.max_time_text) == (
        "Purpose placed last",
        "python train.py 3",
        "10 minutes",
    )
    assert bp.warnings == (), bp.warnings


def test_text_that_only_begins_with_a_rule_is_no_front_matter() -> None:
    """An opening `---` with no closing line: the text is read as before, to its end."""
    parts = scan_parts("---\nexp_purpose: a\nstill the purpose\n")[0]
    assert parts["exp_purpose"] == "a\nstill the purpose"


def test_lint_reads_the_walkers_front_matter(env: Env) -> None:
    """Through `ajetd lint`: fm2.md/fm3.md's shape, the purpose or the command last."""
    config = env.config("fm")
    for last in ("exp_purpose", "exp_launch_command", "exp_max_time"):
        values = {
            **VALUES,
            "exp_codebase_dir": str(env.codebase),
            "exp_yaml_path": config,
            "exp_launch_command": f"python -m fakejet.launcher --conf {config}",
            "exp_result_dir": str(env.tmp / "results" / f"fm-{last}"),
        }
        order = [k for k in VALUES if k != last] + [last]
        path = env.tmp / "fm.md"
        path.write_text(_front(order, "---", "\nSome notes here.\n", values))
        out = env.cli("lint", str(path), "--json")
        data = json.loads(out.stdout)
        assert out.returncode == 0, data["problems"]
        shown = data["blueprint"]
        assert shown["purpose"] == "Purpose placed last" and shown["max_time_s"] == 600.0
        assert shown["launch_command"] == values["exp_launch_command"]
        assert not any("---" in w for w in shown["warnings"]), shown["warnings"]


def test_a_misspelt_key_in_the_front_matter_is_pointed_at() -> None:
    """A missing part's hint looked only at headings, bullets and bold labels: a front
    matter's `exp_purpse:` (or `EXP_PURPSE:`) line went unnamed."""
    for spelt in ("exp_purpse", "EXP_PURPSE"):
        order = [k for k in VALUES if k != "exp_purpose"]
        text = _front(order, f"{spelt}: x\n---", "", VALUES)
        with pytest.raises(BlueprintError) as refused:
            parse_blueprint(text)
        assert refused.value.problems == [
            "exp_purpose: missing (write it as `## [exp_purpose]` or `- [exp_purpose] ...: "
            f"value`); line 8 has [{spelt}]: is that it, misspelt?"
        ]
