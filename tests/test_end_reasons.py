"""Why a run ended, told by its real cause, in its reason and its reports. A trial ajetd
stopped keeps its diagnosis in trials.md and results.md, and a time limit's reason says the
run sat at a prompt (walk91 F2: `status RUN` listed `waiting_for_input`, yet trials.md had no
diagnosis and the reason said only that no validation record was written); a failure no fix
answers ends for that, not for the retry budget (walk91 F4). Real tmux, real processes, the
loop driven in-process on a fake clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from ajetd.core.finding import WAITING_FOR_INPUT, Finding
from ajetd.core.model import Run, Trial
from ajetd.views import report
from conftest import Env
from loopkit import Loop


def _at_prompt(env: Env, loop: Loop, name: str, prompt: str, max_time: str) -> str:
    """A run whose program sits at `prompt`, seen by the loop; its id."""
    config = env.config(name, prompt=prompt, steps=400)
    run_id = loop.submit(env.blueprint(name, config=config, max_time=max_time, ajetd="gpus: 0"))
    loop.started(run_id)

    def waiting() -> bool:
        trial = loop.run(run_id).trial
        return trial is not None and any(f.kind == WAITING_FOR_INPUT for f in trial.live_findings)

    loop.until(waiting, "the prompt to be seen")
    return run_id


def _reports(loop: Loop, run_id: str) -> tuple[str, str]:
    result = Path(loop.run(run_id).result_dir)
    return (result / "trials.md").read_text(), (result / "results.md").read_text()


def test_a_time_limit_at_a_prompt_says_so_and_keeps_the_diagnosis(env: Env, loop: Loop) -> None:
    run_id = _at_prompt(env, loop, "tlask", "Password: ", "2m")
    loop.reach(loop.t0(run_id) + 120)
    flag = loop.until_done(run_id)
    assert flag["status"] == "time_limit", flag
    said = "stopped at exp_max_time (2m) while waiting for input at a prompt: `Password:` (line "
    assert flag["reason"].startswith(said), flag["reason"]
    assert "; no output since " in flag["reason"], flag["reason"]
    assert flag["reason"].endswith("no validation record was written: no metrics, its log kept")
    trials, results = _reports(loop, run_id)
    assert "Diagnosis of its output while it ran (root cause first):" in trials, trials
    assert "- `waiting_for_input` (" in trials, trials
    assert f"- what went wrong: {flag['reason']}" in trials, trials
    why = results.split("## Why it ended", 1)[1].split("##", 1)[0]
    assert f"time_limit: {flag['reason']}" in why, why


def test_a_stopped_runs_reports_keep_what_it_was_doing(env: Env, loop: Loop) -> None:
    run_id = _at_prompt(env, loop, "stask", "Continue? [y/N]: ", "2h")
    env.cli("stop", "--no-wait", run_id)  # filed for the loop to take
    flag = loop.until_done(run_id)
    assert flag["status"] == "stopped", flag
    trials, results = _reports(loop, run_id)
    assert "Diagnosis of its output while it ran (root cause first):" in trials, trials
    assert "- `waiting_for_input` (" in trials and "`Continue? [y/N]:`" in trials, trials
    why = results.split("## Why it ended", 1)[1].split("\n## ", 1)[0]
    assert "stopped: stopped by `ajetd stop`" in why, why
    assert "Its last trial's diagnosis, root cause first (trials.md has it whole): " in why, why
    assert "`waiting_for_input` (line " in why and "`Continue? [y/N]:`" in why, why


LOST = Finding("gpu_lost", "fatal", 0, "GPU 0 fell off the bus", "A GPU was lost.", "Reboot.")
OOM = Finding("cuda_oom", "science", 7, "CUDA out of memory", "Out of memory.", "Lower it.")


@pytest.mark.parametrize(
    ("findings", "live", "head"),
    [
        ((), (LOST,), "Diagnosis of its output while it ran (root cause first):"),
        ((OOM,), (LOST,), "Diagnosis (root cause first):"),  # its end's, where it read one
        ((), (), None),
    ],
)
def test_trials_md_shows_what_status_shows(
    findings: tuple[Finding, ...], live: tuple[Finding, ...], head: str | None
) -> None:
    """trials.md, `status` and `diag` show one diagnosis (`Trial.diagnosis`): the end's, else
    what was seen while it ran (a GPU lost under a run then stopped: walk91 F2's glost)."""
    trial = Trial(1, "c", "s", 1.0, 2.0, 130, findings=findings, live_findings=live)
    run = Run(run_id="abc123", source="bp.md", submitted_at=0.0, trials=(trial,))
    text = report.render_trials(run, report.ReportContext(host="h"))
    assert trial.diagnosis == (findings or live)
    if head is None:
        assert "Diagnosis" not in text, text
        return
    assert head in text, text
    assert f"- `{trial.diagnosis[0].kind}` (" in text, text


def test_one_trial_and_no_fix_allowed_ends_for_no_fix_not_the_budget(env: Env, loop: Loop) -> None:
    """walk91 F4, through the loop: `max_trials: 1` and a cuda_oom with no allow_fixes ends
    saying no fix is allowed, in the reason and trials.md, as the default budget does."""
    config = env.config("mt1", crash_at=2, exit_code=1)
    bp = env.blueprint("mt1", config=config, ajetd="gpus: 0\nmax_trials: 1")
    run_id = loop.submit(bp)
    flag = loop.until_done(run_id)
    assert flag["status"] == "failed", flag
    assert "cuda_oom: no science fix allowed" in flag["reason"], flag["reason"]
    assert "budget" not in flag["reason"], flag["reason"]
    trials, _ = _reports(loop, run_id)
    assert "no fix allowed ([ajetd] allow_fixes): the run ends" in trials, trials
    assert "fix budget spent" not in trials, trials
