"""What a run's program writes into its own result dir at the names ajetd writes there, and
the output ajetd quotes in its reports: nothing the program wrote is lost or mistaken for
ajetd's, and no output breaks the reports' Markdown. Real daemon, real tmux, real files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from ajetd.adapters import programfiles
from conftest import Env, wait_for

FENCE_BREAKER = "printf 'before\\n```\\n# not a heading\\n````\\nafter\\n'"


def _fenced_text(markdown: str) -> list[str]:
    """Every line inside a fenced block, as a CommonMark parser reads the document."""
    tokens = MarkdownIt("commonmark").parse(markdown)
    return [line for t in tokens if t.type == "fence" for line in t.content.splitlines()]


def test_output_with_backtick_fences_stays_quoted(daemon_env: Env) -> None:
    """The blind walk: a plain ``` line in the output closed results.md's ```text block and
    the rest rendered as Markdown (a heading here). Now the fence is longer than any run of
    backticks in what it quotes, in results.md and trials.md alike."""
    env = daemon_env
    blueprint = env.blueprint("fence", command=f"{FENCE_BREAKER}; exit 1")
    run_id = env.submit(blueprint)
    assert env.wait_done(run_id)["status"] == "failed"
    result = env.tmp / "results" / "fence"
    for name in ("results.md", "trials.md"):
        quoted = _fenced_text((result / name).read_text())
        for line in ("before", "```", "# not a heading", "````", "after"):
            assert line in quoted, (name, line, quoted)


OWN = {
    "results.md": "MY OWN RESULTS\n",
    "trials.md": "my own trials\n",
    "run.json": '{"mine": true}\n',
    "config-used.yaml": "mine: true\n",
    "finish.flag": '{"run_id": "mine", "status": "succeeded"}\n',
    "curves.png": "not ajetd's picture\n",
}


def _writes_own_files(result: Path) -> str:
    """A launch command that writes each of OWN into its result dir, then fails."""
    own = result.parent / f"{result.name}-own"
    own.mkdir()
    for name, text in OWN.items():
        (own / name).write_text(text)
    return f'cp {own}/* "$AJETD_RESULT_DIR"/ && exit 1'


def test_the_programs_own_reports_are_kept_aside_never_overwritten(daemon_env: Env) -> None:
    """The blind walk's HIGH: a program that wrote results.md and finish.flag in its result
    dir lost both to ajetd's reports, and nothing said so. Now each of the program's files at
    ajetd's names is kept as `<stem>.program<suffix>`, ajetd's reports (finish.flag: its own,
    naming the run) are where the README says, and the journal, `status` and results.md say
    what was moved."""
    env = daemon_env
    result = env.tmp / "results" / "own"
    run_id = env.submit(env.blueprint("own", result=str(result), command=_writes_own_files(result)))
    status = env.wait_done(run_id)
    assert status["status"] == "failed"
    for name, text in OWN.items():
        stem, _, suffix = name.partition(".")
        assert (result / f"{stem}.program.{suffix}").read_text() == text, name
    flag = json.loads((result / "finish.flag").read_text())
    assert flag["run_id"] == run_id and flag["status"] == "failed"
    assert json.loads((result / "run.json").read_text())["run_id"] == run_id
    assert (result / "results.md").read_text().startswith(f"# Results of run {run_id}")
    said = [w for w in status["warnings"] if "results.md as results.program.md" in w]
    assert said and "finish.flag as finish.program.flag" in said[0], status["warnings"]
    assert said[0] in (result / "results.md").read_text()
    assert said[0] in (env.home / "runs" / run_id / "events.jsonl").read_text()
    wait = env.cli("wait", run_id, "--json")
    assert wait.returncode == 1 and json.loads(wait.stdout)["status"] == "failed"


def test_the_programs_file_at_a_later_trials_log_name_is_kept_aside(daemon_env: Env) -> None:
    """Before: a program that wrote `logs/trial-2.log` (one stage writing the next one's
    name, or results copied in from an older run) had trial 2's output appended to its file,
    the two mixed in the log `ajetd logs` reads. The file is moved aside as
    `trial-2.program.log` before trial 2 starts, and the run's warnings and journal say so."""
    env = daemon_env
    result = env.tmp / "results" / "ownlog"
    first = 'echo first; l="$AJETD_RESULT_DIR/logs"; mkdir -p "$l"; echo theirs > "$l/trial-2.log"'
    stages = "gpus: 0\nstages: [{name: a}, {name: b, command: 'echo second'}]"
    run_id = env.submit(env.blueprint("ownlog", result=str(result), command=first, ajetd=stages))
    status = env.wait_done(run_id)
    assert (status["status"], status["trials"]) == ("succeeded", 2), status
    logs = result / "logs"
    assert (logs / "trial-2.program.log").read_text() == "theirs\n"
    ours = (logs / "trial-2.log").read_text()
    assert "theirs" not in ours and "second" in ours, ours
    said = [w for w in status["warnings"] if "kept as trial-2.program.log" in w]
    assert said and said[0].startswith("the program wrote trial-2.log in "), status["warnings"]
    assert not [w for w in status["warnings"] if "does not begin" in w]  # both logs ajetd's
    assert said[0] in (env.home / "runs" / run_id / "events.jsonl").read_text()


def test_a_program_writing_over_its_running_trials_log_is_said(daemon_env: Env) -> None:
    """Before: a program that wrote its own `logs/trial-1.log` while trial 1 ran truncated
    ajetd's log (its banner and first lines lost) and nothing said so. Its writer appends and
    cannot keep the program from the name; at the trial's end the log no longer begins with
    ajetd's banner, and the run's warnings and journal say what happened."""
    env = daemon_env
    result = env.tmp / "results" / "overwritten"
    mine = 'echo before; echo mine > "$AJETD_RESULT_DIR/logs/trial-1.log"; echo after'
    run_id = env.submit(env.blueprint("overwritten", result=str(result), command=mine))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    log = result / "logs" / "trial-1.log"
    assert log.read_text().startswith("mine\n")  # as the program left it, never rewritten
    said = [w for w in status["warnings"] if w.startswith(f"{log} does not begin with ajetd")]
    assert said and "wrote over it while the trial ran" in said[0], status["warnings"]
    assert said[0] in (env.home / "runs" / run_id / "events.jsonl").read_text()


def test_a_restart_halfway_through_the_reports_keeps_ajetds_own(env: Env) -> None:
    """A daemon killed after renaming results.md into place, before finish.flag: the restarted
    daemon writes the reports again and moves nothing of its own aside (the pass is made once),
    and the program's finish.flag, kept aside, is never taken for ajetd's."""
    env.start_daemon()
    result = env.tmp / "results" / "again"
    run_id = env.submit(
        env.blueprint("again", result=str(result), command=_writes_own_files(result))
    )
    env.wait_done(run_id)
    env.daemons[-1].terminate()
    env.daemons[-1].wait(timeout=20)
    (result / "finish.flag").unlink()  # as a daemon killed before its last rename leaves it
    state = env.home / "runs" / run_id / "state.json"
    record = json.loads(state.read_text())
    state.write_text(json.dumps({**record, "reports_pending": True}))
    env.start_daemon()
    env.wait_done(run_id)
    assert json.loads((result / "finish.flag").read_text())["run_id"] == run_id
    names = sorted(p.name for p in result.iterdir())
    assert [n for n in names if ".program" in n] == sorted(
        f"{n.partition('.')[0]}.program.{n.partition('.')[2]}" for n in OWN
    )


@pytest.mark.pictures
def test_the_programs_picture_is_never_drawn_over(daemon_env: Env) -> None:
    """A program that writes its own curves.png: ajetd's drawings (mid-run and final) never
    replace it; at the end it is kept as curves.program.png and ajetd's picture, which says
    whose it is in its PNG, takes the name."""
    env = daemon_env
    result = env.tmp / "results" / "pic"
    mine = env.tmp / "mine.png"
    mine.write_bytes(b"\x89PNG the program's own picture")
    config = env.config("pic")
    command = (
        f'cp {mine} "$AJETD_RESULT_DIR/curves.png" && python -m fakejet.launcher --conf {config}'
    )
    run_id = env.submit(env.blueprint("pic", result=str(result), config=config, command=command))
    assert env.wait_done(run_id, timeout=90)["status"] == "succeeded"
    assert (result / "curves.program.png").read_bytes() == mine.read_bytes()
    assert programfiles.drawn_by(result / "curves.png", run_id)
    said = "wrote curves.png in its result dir"
    assert said in (result / "results.md").read_text()
    assert "the program's own is kept as curves.program.png" in (result / "results.md").read_text()


def test_diag_never_makes_a_removed_result_dir_again(daemon_env: Env) -> None:
    """The blind walk: `rm -rf r93; ajetd diag <id>` made r93/diag/ again. Now the snapshot
    goes to the run's folder in the home, and `saved` says so."""
    env = daemon_env
    result = env.tmp / "results" / "gone"
    run_id = env.submit(env.blueprint("gone", result=str(result), command="exit 1"))
    env.wait_done(run_id)
    shutil.rmtree(result)
    out = env.cli("diag", run_id, "--json")
    assert out.returncode == 0, out.stderr
    saved = json.loads(out.stdout)["saved"]
    assert not result.exists()
    assert saved and Path(saved).parent == env.home / "runs" / run_id / "diag", saved


def test_reports_dir_names_where_this_runs_reports_are(daemon_env: Env) -> None:
    """The blind walk: a blueprint rejected because its result dir was a live run's reported
    that dir, and an agent read the other run's finish.flag. `reports_dir` names where this
    run's reports are: the result dir for an ended run, null for that rejection."""
    env = daemon_env
    result = env.tmp / "results" / "shared"
    live = env.submit(env.blueprint("live", result=str(result), command="sleep 30"))
    wait_for(lambda: env.record(live).get("state") == "running", what="the live run")
    other = env.submit(env.blueprint("other", result=str(result), command="exit 0"))
    rejected = env.wait_done(other)
    assert rejected["status"] == "rejected" and rejected["reports_dir"] is None, rejected
    env.cli("stop", live)
    ended = env.wait_done(live)
    assert ended["reports_dir"] == str(result)
    assert json.loads((result / "finish.flag").read_text())["run_id"] == live


def test_the_note_of_what_was_kept_aside_names_each_file_once() -> None:
    """walk92 F9: one file read "its own are kept as finish.flag as finish.program.flag"."""
    folder = Path("/r")
    one = programfiles.moved_note(folder, [("finish.flag", "finish.program.flag")])
    assert one == (
        "the program wrote finish.flag in its result dir /r, a name ajetd writes its reports "
        "under: the program's own is kept as finish.program.flag"
    )
    two = programfiles.moved_note(
        folder, [("finish.flag", "finish.program.flag"), ("results.md", "results.program.md")]
    )
    assert two.endswith(
        "the program's own are kept, finish.flag as finish.program.flag and results.md as "
        "results.program.md"
    ), two
