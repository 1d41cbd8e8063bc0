"""What `ajetd lint` and a run's warnings tell about mistakes a user really made (a blind walk
through the README): a misspelt key gets the closest known one, and a warning is shown once
however often the run met it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from ajetd.adapters.store import Home
from ajetd.daemon import ending
from conftest import Env


def _lint(env: Env, ajetd: str, **kw: str) -> tuple[int, dict[str, object], str]:
    path = env.blueprint("lint", ajetd=ajetd, **kw)
    out = env.cli("lint", str(path), "--json")
    text = env.cli("lint", str(path))
    return out.returncode, json.loads(out.stdout), text.stdout + text.stderr


@pytest.mark.parametrize(
    ("ajetd", "needle"),
    [
        ("max_trial: 3", "unknown key 'max_trial'; did you mean 'max_trials'?"),
        ("plateu: true", "unknown key 'plateu'; did you mean 'plateau'?"),
        (
            "plateau: {metric: mean_reward, patince: 2}",
            "plateau: unknown key 'patince'; did you mean 'patience'?",
        ),
        ("hang: {windw: 10m}", "hang: unknown key 'windw'; did you mean 'window'?"),
        ("ssh: {hots: h}", "ssh: unknown key 'hots'; did you mean 'host'?"),
        ("allow_fixes: {lr: {mn: 1e-7}}", "allow_fixes.lr: unknown key 'mn'; did you mean 'min'?"),
        ("allow_fixes: {lrr: {min: 1e-7}}", "'lrr' is not a key ajetd can fix; did you mean 'lr'?"),
    ],
)
def test_an_unknown_key_names_the_closest_known_one(env: Env, ajetd: str, needle: str) -> None:
    code, data, text = _lint(env, ajetd)
    assert code == 2 and any(needle in p for p in data["problems"]), data  # type: ignore[attr-defined]
    assert needle in text


def test_an_unknown_key_like_no_known_one_gets_no_guess(env: Env) -> None:
    code, data, _ = _lint(env, "colour: red")
    [problem] = data["problems"]  # type: ignore[misc]
    assert code == 2 and "unknown key 'colour' (known: gpus," in problem
    assert "did you mean" not in problem


def test_a_warning_met_at_every_relaunch_is_shown_once(daemon_env: Env) -> None:
    """`--autokill` is removed at each of the three trials: one warning, in status --json and
    in results.md; a record stored by an older ajetd with it three times shows it once too."""
    env = daemon_env
    config = env.config("thrice", steps=1, hang=True)
    rule = "hang: {window: 1s, action: relaunch}\nmax_trials: 3"
    run_id = env.submit(env.blueprint("thrice", config=config, ajetd=rule))
    status = env.wait_done(run_id, timeout=60)
    assert status["trials"] == 3, status
    removed = "--autokill removed (autokill: protect)"
    assert status["warnings"].count(removed) == 1, status["warnings"]
    results = env.tmp / "results" / "thrice" / "results.md"
    assert results.read_text().count(removed) == 1
    state = env.home / "runs" / run_id / "state.json"
    record = json.loads(state.read_text())
    record["warnings"] = [removed, "a", removed, "a", removed]  # as an older ajetd stored it
    state.write_text(json.dumps(record))
    assert env.status(run_id)["warnings"] == [removed, "a"]
    home = Home(env.home)
    run = home.load_run(run_id)
    scratch = env.tmp / "again"
    scratch.mkdir()
    ending.write_reports(home, replace(run, result_dir=str(scratch)), ([], ""))
    assert (scratch / "results.md").read_text().count(removed) == 1
