"""`[ajetd]` options written outside the part's fenced YAML block (walk 90, F1): before it,
after it, or after prose on a line, they were read by no one, the run took the defaults
(three trials, no stop on a hang) and lint said `ok`. Refused by their line; prose that sets
nothing stays allowed; an admitted run's stored copy is still read."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ajetd.core.blueprint import parse_blueprint
from ajetd.core.errors import BlueprintError
from ajetd.core.looseoptions import loose_options
from ajetd.core.options import KNOWN_KEYS
from conftest import Env

PARTS = (
    "## [exp_purpose]\nedge test\n\n## [exp_codebase_dir]\n/tmp\n\n## [exp_venv_exe]\n"
    "/usr/bin/python3\n\n## [exp_yaml_path]\ncfg.yaml\n\n## [exp_launch_command]\n"
    "```bash\npython train.py\n```\n\n## [exp_result_dir]\n/tmp/r\n\n## [exp_max_time]\n10m\n\n"
)
AT = PARTS.count("\n") + 1  # the line of `## [ajetd]`
FENCE = "```yaml\ngpus: 0\n```"


def _problems(ajetd: str, admitted: bool = False) -> list[str]:
    try:
        parse_blueprint(PARTS + "## [ajetd]\n" + ajetd + "\n", admitted=admitted)
    except BlueprintError as exc:
        return exc.problems
    return []


@pytest.mark.parametrize(
    ("ajetd", "line", "shown"),
    [
        (f"{FENCE}\nmax_trials: 1", 4, "max_trials: 1"),  # after the block (f1.md)
        (f"max_trials: 1\n{FENCE}", 1, "max_trials: 1"),  # before it (f3.md)
        (  # after prose on its line (f4.md)
            f"Options for this run:\n{FENCE}\nAlso stop it if it hangs:  hang: {{window: 10m}}",
            5,
            "Also stop it if it hangs:  hang: {window: 10m}",
        ),
        (f"{FENCE}\n- hang: {{action: stop}}", 4, "- hang: {action: stop}"),  # a bullet
        (f"{FENCE}\n`plateau`: true", 4, "`plateau`: true"),  # a key in backticks
        (f"{FENCE}\nMAX_TRIALS: 1", 4, "MAX_TRIALS: 1"),  # any case
        (f"{FENCE}\nmax_trial: 1", 4, "max_trial: 1"),  # misspelt: near a key
        (f"{FENCE}\nretry_limit: 1", 4, "retry_limit: 1"),  # YAML's name, not prose's
        (f"{FENCE}\ngpus：1", 4, "gpus：1"),  # a full-width colon
        (f"{FENCE}\nenv:\n  A: b", 4, "env:"),  # a mapping under it
        (f"{FENCE}\nWe cap the retries, max_trials: 2", 4, "We cap the retries, max_trials: 2"),
    ],
)
def test_an_option_outside_the_fenced_block_is_refused_by_its_line(
    ajetd: str, line: int, shown: str
) -> None:
    problems = _problems(ajetd)
    assert problems == [
        f"[ajetd]: line {AT + line}, `{shown}`, is outside the part's fenced YAML block, where "
        "it would be ignored (only the block is read): move it into the block"
    ], problems


@pytest.mark.parametrize(
    "prose",
    [
        "Options for this run:",
        "Note: the run is CPU only.",
        "Remember: check the env: it needs CUDA 12.",
        "Settings below; see the README.",
        "说明：只用 CPU。",
        "These are the defaults, tuned for 2 GPUs: nothing else is needed.",
    ],
)
def test_prose_around_the_block_stays_allowed(prose: str) -> None:
    assert _problems(f"{prose}\n{FENCE}\n{prose}") == []


def test_lines_of_other_blocks_are_not_counted_twice() -> None:
    """A second block is refused by itself; its lines are not also 'outside' the first."""
    problems = _problems(f"{FENCE}\n```yaml\nmax_trials: 1\n```")
    assert len(problems) == 1 and "2 code blocks" in problems[0], problems


def test_many_loose_lines_are_named_three_then_counted() -> None:
    loose = "\n".join(f"max_trials: {n}" for n in range(1, 7))
    problems = _problems(f"{FENCE}\n{loose}")
    assert [p.split(",")[0] for p in problems[:3]] == [f"[ajetd]: line {AT + n}" for n in (4, 5, 6)]
    assert problems[3:] == ["[ajetd]: 3 more option-like line(s) outside the fenced block"]


def test_without_a_fence_the_whole_part_is_the_yaml() -> None:
    """No block: the part is read whole, so nothing in it is outside anything."""
    bp = parse_blueprint(PARTS + "## [ajetd]\ngpus: 0\nmax_trials: 1\n")
    assert (bp.options.gpus, bp.options.max_trials) == ("0", 1)
    assert loose_options("gpus: 0\nmax_trials: 1", KNOWN_KEYS, 1) == []


def test_an_admitted_copy_with_a_loose_option_is_still_read() -> None:
    """A rule this version added: a run an older ajetd admitted is read again at a restart
    and for its reports (`admitted=True`) as it was admitted (the block alone)."""
    text = PARTS + f"## [ajetd]\n{FENCE}\nmax_trials: 1\n"
    with pytest.raises(BlueprintError):
        parse_blueprint(text)
    bp = parse_blueprint(text, admitted=True)
    assert (bp.options.gpus, bp.options.max_trials) == ("0", 3)


def test_an_experiment_of_a_campaign_an_older_ajetd_took_carries_no_loose_line() -> None:
    """A campaign's base read again after the upgrade is an admitted copy: its experiment's
    blueprint is derived from it (not refused for the line), and carries the fenced block
    alone, so the line the older ajetd ignored is ignored still, and the experiment's own
    blueprint is one the rule admits."""
    from ajetd.core import campaignspec as cs
    from ajetd.core.campaignblueprint import experiment_blueprint

    base = PARTS + f"## [ajetd]\n{FENCE}\nmax_trials: 1\n"
    exp = cs.Experiment("next")
    spec = cs.CampaignSpec("c", "mean_reward", True, "base.md", "/tmp/c", (exp,))
    derived = experiment_blueprint(spec, exp, 1, base, "/tmp", 0.0)
    assert "max_trials" not in derived
    bp = parse_blueprint(derived)  # as the inbox reads it: every rule
    assert (bp.options.gpus, bp.options.max_trials) == ("0", 3)


_PROSE = st.text(
    st.characters(
        codec="utf-8", exclude_characters=":：`~\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    ),
    max_size=60,
)


@given(before=st.lists(_PROSE, max_size=3), after=st.lists(_PROSE, max_size=3))
def test_prose_without_a_colon_never_is_an_option(before: list[str], after: list[str]) -> None:
    """Whatever prose without a key's colon is around the block: no problem is made of it."""
    text = "\n".join([*before, FENCE, *after])
    assert loose_options(text, KNOWN_KEYS, 1) == []


@given(
    key=st.sampled_from(KNOWN_KEYS),
    where=st.sampled_from(("before", "after")),
    prose=st.lists(_PROSE, max_size=2),
)
def test_every_known_key_outside_the_block_is_named(key: str, where: str, prose: list[str]) -> None:
    loose = f"{key}: 1"
    lines = [*prose, FENCE, loose] if where == "after" else [loose, *prose, FENCE]
    text = "\n".join(lines)
    found = loose_options(text, KNOWN_KEYS, 10)
    number = 10 + text.split("\n").index(loose)
    assert found and found[0].startswith(f"line {number}, `{loose}`,"), found


def test_lint_refuses_the_walkers_blueprints(env: Env) -> None:
    """Through `ajetd lint`: f1.md's options after the block, f3.md's before it: exit 2,
    each line named, where lint said `ok` and the run went on with the defaults."""
    base = env.blueprint("loose").read_text()
    at = base.count("\n") + 2  # the blank line, then `## [ajetd]`
    for ajetd, line in (
        (f"{FENCE}\nmax_trials: 1\nhang: {{window: 10m, action: stop}}\n", 4),
        (f"max_trials: 1\n{FENCE}\n", 1),
    ):
        path = env.tmp / "loose.md"
        path.write_text(f"{base}\n## [ajetd]\n{ajetd}")
        out = env.cli("lint", str(path), "--json")
        data = json.loads(out.stdout)
        assert out.returncode == 2 and not data["ok"], data
        assert data["problems"][0].startswith(f"[ajetd]: line {at + line}, `max_trials: 1`,")
        text = env.cli("lint", str(path))
        assert "is outside the part's fenced YAML block" in text.stderr
