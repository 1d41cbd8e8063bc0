"""The README walked as a new user and a coding agent walk it: each command, flag and example
as written, and the neighbours a user tries next, against a real daemon and real tmux.

Each test here stands for a place where ajetd did not do what the README says.
"""

from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path

import pytest

from conftest import Env, wait_for


def _running(env: Env, name: str, ajetd: str = "gpus: 0") -> str:
    """A live run that prints a line now and then and lasts longer than any test."""
    bp = env.blueprint(
        name,
        command="python -c 'import time\nwhile True: print(\"step\", flush=True); time.sleep(1)'",
        ajetd=ajetd,
    )
    run_id = env.submit(bp)
    wait_for(lambda: env.record(run_id).get("state") == "running", what="the run to start")
    return run_id


def test_diag_never_overwrites_an_earlier_snapshot(daemon_env: Env) -> None:
    """`ajetd diag RUN` saves its snapshot as `diag/diag-<time>.md`; two taken within one
    second (a person's diag, then an agent's diag --json) used to share the name, the second
    replacing the first. Each is kept: a name already taken gets `-2`, `-3`, ..."""
    env = daemon_env
    run_id = _running(env, "diagtwice")
    folder = env.tmp / "results" / "diagtwice" / "diag"
    folder.mkdir(parents=True, exist_ok=True)
    now = time.time()
    taken = {  # every name the snapshot could take within the next half minute, taken
        folder / f"diag-{time.strftime('%Y%m%dT%H%M%S', time.localtime(now + s))}.md"
        for s in range(-1, 30)
    }
    for path in taken:
        path.write_text("an earlier snapshot\n")
    out = env.cli("diag", run_id, "--json")
    assert out.returncode == 0, out.stderr
    saved = json.loads(out.stdout)["saved"]
    assert saved is not None and Path(saved) not in taken
    assert Path(saved).read_text().startswith(f"# Diagnostic snapshot of run {run_id}")
    assert all(path.read_text() == "an earlier snapshot\n" for path in taken)
    again = env.cli("diag", run_id)
    assert again.returncode == 0, again.stderr
    assert len(list(folder.iterdir())) == len(taken) + 2


def test_submit_keeps_the_file_name_it_was_given(daemon_env: Env) -> None:
    """The status object's `blueprint` is "the file name it was submitted as", and a file
    copied into the inbox keeps its name (odd bytes shown escaped, `caf\\xe9.md`); `ajetd
    submit` turned every space, bracket and odd byte into `_` (`my bp (v2).md` was
    `my_bp__v2_.md`), so the same file read differently by the way it came in. A name
    holding a newline still keeps the id `submit` printed (shown escaped)."""
    env = daemon_env
    folder = env.tmp / "my blueprints"
    folder.mkdir()
    names = {
        "my bp (v2).md": "my bp (v2).md",
        "café+ünï.md": "café+ünï.md",
        b"caf\xe9.md": "caf\\xe9.md",
        "two\nlines.md": "two\\nlines.md",
    }
    for n, (name, shown) in enumerate(names.items()):
        path = folder / (os.fsdecode(name) if isinstance(name, bytes) else name)
        bp = env.blueprint(f"name{n}", command="true", ajetd="gpus: 0")
        path.write_bytes(bp.read_bytes())
        run_id = env.submit(path)
        status = env.wait_done(run_id)
        assert (status["run_id"], status["blueprint"]) == (run_id, shown)
        assert status["status"] == "succeeded", status["reason"]


def test_an_empty_blueprint_is_named_empty(daemon_env: Env) -> None:
    """`ajetd submit -` reads standard input; given none (a here-document that failed, `cat
    missing.md | ajetd submit -`) the run was rejected with seven lines `exp_purpose: missing
    (write it as ...)`, as if the parts were misspelt. It says the blueprint is empty, and
    where its parts are shown; `lint` of an empty file says the same."""
    env = daemon_env
    out = env.cli("submit", "-", stdin="")
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.strip()
    done = env.cli("wait", run_id, "--json", "--timeout", "30")
    assert done.returncode == 1, done.stderr
    status = json.loads(done.stdout)
    assert status["status"] == "rejected"
    assert status["reason"].startswith("blueprint: empty"), status["reason"]
    assert "missing" not in status["reason"] and "TEMPLATE.md" in status["reason"]
    blank = env.tmp / "blank.md"
    blank.write_text("\n  \n")
    lint = env.cli("lint", str(blank), "--json")
    assert lint.returncode == 2
    assert [p.split(":")[0] for p in json.loads(lint.stdout)["problems"]] == ["blueprint"]


def test_an_unknown_run_id_says_where_the_runs_are(daemon_env: Env) -> None:
    """`status`, `wait`, `stop`, `logs`, `attach` and `diag` of an id the home does not hold
    exit 2 naming the id and the home; they said nothing of what to do (a mistyped id, or a
    shell whose AJETD_HOME is not the daemon's: the usual cause when an agent's id is not
    found). Each says how to list the runs and that AJETD_HOME chooses the home; so does
    `status --campaign` of a campaign it does not hold."""
    env = daemon_env
    for args in (("status",), ("wait",), ("stop",), ("logs",), ("attach",), ("diag",)):
        for run_id in ("zz99zz", "ZZ99"):
            out = env.cli(*args, run_id, "--json") if args[0] in {"status", "wait"} else None
            out = out or env.cli(*args, run_id)
            assert out.returncode == 2 and out.stdout == "", (args, out.stdout)
            assert f"no run '{run_id}'" in out.stderr, out.stderr
            assert "ajetd status --all" in out.stderr and "AJETD_HOME" in out.stderr, out.stderr
    out = env.cli("status", "--campaign", "nope")
    assert out.returncode == 2 and "no campaign 'nope'" in out.stderr
    assert "ajetd campaign list" in out.stderr, out.stderr


def test_a_bare_path_followed_by_words_is_said_as_it_is_read(daemon_env: Env) -> None:
    """README: "a bare path ends at its first space, the words after it being a note"; one
    whose next word goes on with a `/` is refused. `/data/my runs` was read as `/data/my`
    without a word: the run wrote its results into another folder than the one meant, and
    nothing said so. It still runs (the note may be meant), but `lint` and the run's
    warnings say which path was read and what was taken as a note; a note that reads as one,
    `(NFS)`, is not doubted."""
    env = daemon_env
    meant = env.tmp / "results" / "my runs"
    bp = env.blueprint("spaced", result=str(meant), command="true", ajetd="gpus: 0")
    lint = env.cli("lint", str(bp), "--json")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    found = json.loads(lint.stdout)["blueprint"]
    assert found["result_dir"] == str(env.tmp / "results" / "my")
    said = [w for w in found["warnings"] if w.startswith("exp_result_dir:")]
    assert len(said) == 1 and f"read as {env.tmp / 'results' / 'my'}" in said[0], said
    assert "'runs'" in said[0] and "backticks" in said[0]
    status = env.wait_done(env.submit(bp))
    assert status["status"] == "succeeded", status["reason"]
    assert said[0] in status["warnings"], status["warnings"]

    noted = env.blueprint("noted", result=f"{env.tmp / 'results' / 'nfs'} (NFS)", command="true")
    lint = env.cli("lint", str(noted), "--json")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert not [w for w in json.loads(lint.stdout)["blueprint"]["warnings"] if "note" in w]


def test_a_misspelt_stop_rule_names_the_rules(daemon_env: Env) -> None:
    """`campaign.yaml`'s `stop: {max_experiment: 3}` (one letter short) was refused with
    `stop: unknown rule 'max_experiment'` alone, where a misspelt key of the file or of an
    experiment lists the known ones: it names the four rules too."""
    env = daemon_env
    folder = env.tmp / "typo campaign"
    folder.mkdir()
    (folder / "base.md").write_text(env.blueprint("typo-base", command="true").read_text())
    (folder / "campaign.yaml").write_text(
        "name: typo\nmetric: mean_reward\nbase: base.md\n"
        f"result_dir: {env.tmp / 'typo-ledger'}\nstop: {{max_experiment: 3}}\n"
    )
    out = env.cli("campaign", str(folder))
    assert out.returncode == 2 and out.stdout == "", out.stdout
    assert "stop: unknown rule 'max_experiment' (known: max_experiments, deadline, " in out.stderr


def test_logs_of_a_queued_run_says_it_has_no_output_yet(env: Env) -> None:
    """`ajetd logs RUN` of a run still queued (waiting for a GPU here) printed nothing at all
    and exited 0: an agent could not tell an empty log from a run not started. It says on
    stderr that no trial has started yet, why it waits, and that `-f` waits for it (exit 0:
    nothing is wrong); stdout stays the output, empty."""
    env.fake_gpus(1)
    env.start_daemon()
    _running(env, "holder", ajetd="gpus: 1")
    queued = env.submit(env.blueprint("waiter", ajetd="gpus: 1"))
    wait_for(  # queued at admission, its reason saved by the launch step after it
        lambda: (
            env.record(queued).get("state") == "queued"
            and "waiting for 1 GPU" in (env.record(queued).get("reason") or "")
        ),
        what="the second to queue, waiting for the GPU",
    )
    out = env.cli("logs", queued)
    assert out.returncode == 0 and out.stdout == "", out.stdout
    assert f"run {queued} is queued" in out.stderr and "waiting for 1 GPU" in out.stderr
    assert f"ajetd logs {queued} -f" in out.stderr, out.stderr


def test_a_result_dir_in_use_names_the_run_that_uses_it(daemon_env: Env) -> None:
    """The same blueprint submitted twice while the first runs: the second was rejected with
    `exp_result_dir: X is in use by a live run`, naming neither the run nor what to do
    (`lint` named the run). The rejection names the live run and says to choose another
    result dir or wait for that run, as lint does, in one wording."""
    env = daemon_env
    first = _running(env, "twice")
    bp = env.tmp / "twice.md"
    second = env.submit(bp)
    done = env.cli("wait", second, "--json", "--timeout", "30")
    assert done.returncode == 1, done.stderr
    reason = json.loads(done.stdout)["reason"]
    assert f"is in use by live run {first}" in reason, reason
    assert "another result dir" in reason and f"ajetd wait {first}" in reason, reason
    lint = env.cli("lint", str(bp))
    assert lint.returncode == 2 and reason in lint.stderr, lint.stderr


def test_stop_that_times_out_says_the_stop_goes_on(daemon_env: Env) -> None:
    """README: `stop` waits S seconds, then `exit 124, the stop goes on`. It said only `run X
    is still stopping after 0s` (a --timeout under a second shown as 0s), which reads as a
    stop that failed: it says the stop goes on and how to wait for its end."""
    env = daemon_env
    bp = env.blueprint(
        "deaf",
        command="python -c 'import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        'while True: print("step", flush=True); time.sleep(1)\'',
        ajetd="gpus: 0",
    )
    run_id = env.submit(bp)
    log = env.tmp / "results" / "deaf" / "logs" / "trial-1.log"

    # its first step: SIGINT ignored from then on (a stop that came while python was still
    # starting ended it at once, exit 0: the test raced the program's own start)
    def stepped() -> bool:  # a line "step" of its own, not the banner's command text
        return log.exists() and "step" in log.read_text().split()

    wait_for(stepped, what="the program's first step")
    out = env.cli("stop", run_id, "--timeout", "0.3")
    assert out.returncode == 124, out.stderr
    assert f"run {run_id} is still stopping after 0.3s" in out.stderr, out.stderr
    assert "the stop goes on" in out.stderr and f"ajetd wait {run_id}" in out.stderr
    assert env.cli("wait", run_id, "--timeout", "30").returncode == 1  # stopped


def test_a_misspelt_part_label_is_named_with_its_line(daemon_env: Env) -> None:
    """A misspelt `[ajetd]` key is named (`unknown key 'max_trail'; did you mean ...`), but a
    misspelt part label (`## [exp_purpse]`, `- [exp_results_dir] ...: /x`) left only
    `exp_purpose: missing (write it as ...)`, though the part is there, a letter off: the
    rejection (and lint) name the line that holds the near miss."""
    env = daemon_env
    bp = env.blueprint("misspelt", command="true", ajetd="gpus: 0")
    text = bp.read_text().replace("[exp_result_dir]", "[exp_results_dir]")
    bp.write_text(text.replace("[exp_purpose]", "[exp_purpse]"))
    lines = bp.read_text().splitlines()
    at = {
        word: 1 + next(i for i, line in enumerate(lines) if word in line)
        for word in ("[exp_purpse]", "[exp_results_dir]")
    }
    lint = env.cli("lint", str(bp), "--json")
    assert lint.returncode == 2
    problems = json.loads(lint.stdout)["problems"]
    assert problems == [
        "exp_purpose: missing (write it as `## [exp_purpose]` or `- [exp_purpose] ...: value`);"
        f" line {at['[exp_purpse]']} has [exp_purpse]: is that it, misspelt?",
        "exp_result_dir: missing (write it as `## [exp_result_dir]` or `- [exp_result_dir] "
        f"...: value`); line {at['[exp_results_dir]']} has [exp_results_dir]: is that it, "
        "misspelt?",
    ], problems
    done = env.cli("wait", env.submit(bp), "--json", "--timeout", "30")
    assert done.returncode == 1
    assert json.loads(done.stdout)["reason"] == "; ".join(problems)


def test_a_request_to_a_stopped_campaign_says_what_is_left_to_do(daemon_env: Env) -> None:
    """`ajetd campaign set` (or `add`) on a campaign ended by `campaign stop` was refused with
    `campaign c-x stopped: stopped by ...` alone, which does not say the campaign cannot go
    on: the refusal says it takes nothing more and how to start another."""
    env = daemon_env
    folder = env.tmp / "halted"
    folder.mkdir()
    base = env.blueprint("halted-base", command="true", ajetd="gpus: 0\nmax_trials: 1")
    (folder / "base.md").write_text(base.read_text())
    (folder / "campaign.yaml").write_text(  # waits for experiments once its baseline ended
        f"name: halted\nmetric: mean_reward\nbase: base.md\nresult_dir: {env.tmp / 'ledger'}\n"
        "stop: {max_experiments: 5}\n"
    )
    out = env.cli("campaign", str(folder))
    assert out.returncode == 0, out.stderr
    cid = out.stdout.strip()
    stop = env.cli("campaign", "stop", cid, "--timeout", "60")
    assert stop.returncode == 0 and f"campaign {cid} stopped" in stop.stdout, stop.stdout
    for args in (
        ("set", cid, "--max-experiments", "5"),
        ("add", cid, "--name", "n", "--description", "d"),
    ):
        refused = env.cli("campaign", *args)
        assert refused.returncode == 2 and refused.stdout == "", refused.stdout
        assert f"campaign {cid} stopped" in refused.stderr, refused.stderr
        assert "takes no more" in refused.stderr and "ajetd campaign FOLDER" in refused.stderr


def test_a_damaged_record_says_what_to_do_on_every_command(daemon_env: Env) -> None:
    """README: `status <id>` / `wait <id>` on a damaged record exit 1 naming the file; `ajetd
    status` says `restore the file, or move the folder out of runs/`, but `wait`, `stop`,
    `logs` and `diag` said only `corrupt run record ...: <the JSON error>`. Each now says
    what to do, as the listing does."""
    env = daemon_env
    run_id = env.submit(env.blueprint("torn", command="true", ajetd="gpus: 0"))
    env.wait_done(run_id)
    (env.home / "runs" / run_id / "state.json").write_text('{"run_id": "tor')
    for args in (("status", "--json"), ("wait",), ("stop",), ("logs",), ("diag",)):
        out = env.cli(args[0], run_id, *args[1:])
        assert out.returncode == 1 and out.stdout == "", (args, out.stdout)
        assert "corrupt run record" in out.stderr and "state.json" in out.stderr, out.stderr
        assert "restore the file, or move the folder out of runs/" in out.stderr, out.stderr


def test_a_run_whose_session_was_the_last_one_on_a_server_kept_up_is_lost(
    daemon_env: Env,
) -> None:
    """README: `lost` is "the session vanished outside ajetd's control; seen within seconds".
    A tmux server set to stay up without sessions (`exit-empty off`, a tmux.conf setting)
    answers `list-panes -a` with "no current target" once its last session is gone; ajetd took
    that for a tmux that did not answer, logged it every liveness period, and showed the run
    `running` (with its attach line) until its time limit. No session is no pane: it is lost."""
    env = daemon_env
    run_id = _running(env, "lastone")
    session = wait_for(lambda: env.record(run_id).get("session"), what="its session's name")
    wait_for(lambda: session in env.tmux("list-sessions").stdout, what="its session")
    assert env.tmux("set", "-g", "exit-empty", "off").returncode == 0
    assert env.tmux("kill-session", "-t", f"={session}").returncode == 0
    assert env.tmux("list-sessions").stdout == ""  # the server is up, with no session
    wait_for(lambda: env.record(run_id).get("status") == "lost", 30, "the run to be lost")
    assert "tmux did not answer" not in env.daemon_log()


def test_a_snapshot_name_is_claimed_where_the_file_system_has_no_hard_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`store.write_new` (diag's snapshots) links its file in under a free name; a result dir
    on a file system without hard links (vfat, some FUSE and SMB mounts: `link` fails with
    EPERM) still gets each snapshot, whole, never over another."""
    from ajetd.adapters import store

    def no_links(src: object, dst: object) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(store.os, "link", no_links)
    first = store.write_new(tmp_path / "diag-1.md", "first\n")
    second = store.write_new(tmp_path / "diag-1.md", "second\n")
    assert (first.name, second.name) == ("diag-1.md", "diag-1-2.md")
    assert (first.read_text(), second.read_text()) == ("first\n", "second\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["diag-1-2.md", "diag-1.md"]


def test_status_of_one_run_shows_its_warnings(daemon_env: Env) -> None:
    """README: a doubted blueprint (a swarm client without `[ajetd] swarm`, a bare path read
    only to its first space, `--autokill` removed) "gets a warning from `lint` and in
    `status`"; `status RUN --json` held them under `warnings`, but `ajetd status RUN`, what a
    person reads, showed none. Each is a `warning` line there."""
    env = daemon_env
    bp = env.blueprint("warned", result=str(env.tmp / "results" / "my runs"), ajetd="gpus: 0")
    status = env.wait_done(env.submit(bp))
    assert status["status"] == "succeeded", status["reason"]
    assert len(status["warnings"]) == 2, status["warnings"]  # --autokill, and the bare path
    out = env.cli("status", status["run_id"])
    assert out.returncode == 0, out.stderr
    shown = " ".join(out.stdout.split())
    for warning in status["warnings"]:
        assert f"warning {' '.join(warning.split())[:40]}" in shown, (warning, out.stdout)


def test_a_blueprint_given_to_campaign_points_to_submit(env: Env) -> None:
    """`ajetd campaign blueprint.md` (a blueprint where a campaign folder goes) answered
    `Directory 'blueprint.md' is a file` under a usage line for `ajetd campaign submit`, a
    command the README never names. It says a campaign is a folder and that a blueprint
    is submitted with `ajetd submit`."""
    bp = env.blueprint("notacampaign", ajetd="gpus: 0")
    out = env.cli("campaign", str(bp))
    assert out.returncode == 2 and out.stdout == ""
    assert f"{bp} is not a folder" in out.stderr, out.stderr
    assert "campaign.yaml" in out.stderr and f"ajetd submit {bp}" in out.stderr, out.stderr
