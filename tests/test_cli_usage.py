"""The command line's contract on bad input (README: "Unknown run ids and usage errors exit
2"): a bad option value, a home that is a file, a FIFO or a device given as a file, a command
that needs a terminal without one, a run with no output; each says what is wrong in one line,
never with a Python traceback, and never blocks.

Option values are checked in-process (click's runner: fast); what goes through the console
script's entry point (its error lines) runs as a real `ajetd` process.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from ajetd.adapters.regular import NotRegularError
from ajetd.adapters.store import Home
from ajetd.cli.main import daemon, main
from ajetd.core.model import Run, State, Status
from ajetd.hosts.fs import LOCAL
from conftest import Env


def no_traceback(text: str) -> None:
    assert "Traceback" not in text, text


@pytest.mark.parametrize(
    "args",
    [
        ["--log-level", "LOUD"],
        ["--backoff-scale", "-1"],
        ["--backoff-scale", "0"],
        ["--liveness", "0"],
        ["--grace-int", "-5"],
        ["--grace-term", "-1"],
        ["--hook-timeout", "-1"],
        ["--gpu-period", "0"],
        ["--gpu-young-period", "0"],
        ["--hang-auto", "-3"],
    ],
)
def test_bad_daemon_option_values_are_usage_errors(args: list[str], tmp_path: Path) -> None:
    out = CliRunner().invoke(main, ["daemon", *args], env={"AJETD_HOME": str(tmp_path)})
    assert out.exit_code == 2, out.output
    assert f"Invalid value for '{args[0]}'" in out.output
    no_traceback(out.output)
    assert not list(tmp_path.iterdir())  # refused before anything started


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in group.commands.items():
        yield (*path, name)
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


def _command(path: tuple[str, ...]) -> click.Command:
    command: click.Command = main
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e308"])
def test_no_number_option_takes_what_is_no_number(value: str, tmp_path: Path) -> None:
    """click's FloatRange lets nan through (every comparison with it is false) and inf: `ajetd
    daemon --liveness nan` (or inf, or 1e308) started and died in its first tick with a
    traceback (its sleep could not take it), `wait RUN --timeout nan` waited for ever. Every
    float option of every command refuses them, before anything starts."""
    floats = [
        (path, param)
        for path in _commands(main)
        for param in _command(path).params
        if isinstance(param.type, click.types.FloatParamType)
    ]
    assert len(floats) >= 14, floats  # the daemon's 9, wait/stop/shutdown, campaign's
    for path, param in floats:
        opt = param.opts[0]
        if value == "1e308" and getattr(param.type, "max", None) is None:
            continue  # a metric's target may be any number
        args = list(path)
        if path[0] in ("wait", "stop") or path[1:] in (("add",), ("set",), ("stop",), ("wait",)):
            args.append("c-abcdef" if path[0] == "campaign" else "abc123")
        out = CliRunner().invoke(main, [*args, opt, value], env={"AJETD_HOME": str(tmp_path)})
        assert out.exit_code == 2, (path, opt, out.output)
        assert f"Invalid value for '{opt}'" in out.output, (path, opt, out.output)
        no_traceback(out.output)
        assert not list(tmp_path.iterdir())  # refused before anything started


def test_log_level_takes_any_case_and_timeouts_are_not_negative() -> None:
    level = next(p for p in daemon.params if p.name == "log_level")
    assert level.type.convert("warning", None, None) == "WARNING"
    out = CliRunner().invoke(main, ["wait", "abc123", "--timeout", "-1"])
    assert out.exit_code == 2 and "Invalid value for '--timeout'" in out.output


def test_a_home_that_is_a_file_is_named_by_every_command(env: Env) -> None:
    env.home.write_text("not a folder\n")
    blueprint = env.tmp / "bp.md"
    blueprint.write_text("## [exp_purpose]\nx\n")
    for args in (("status",), ("status", "--json"), ("submit", str(blueprint)), ("shutdown",)):
        got = env.cli(*args)
        assert got.returncode == 1, (args, got.stderr)
        assert got.stderr == f"ajetd: AJETD_HOME {env.home} is not a folder\n", args
    env.vars["AJETD_HOME"] = str(env.home / "below")
    got = env.cli("daemon", "--detach")
    assert got.returncode == 1
    assert f"AJETD_HOME {env.home}/below is not a folder: {env.home} is not a folder" in got.stderr
    no_traceback(got.stderr)


def test_a_file_too_large_for_a_blueprint_is_refused_by_submit_never_copied(env: Env) -> None:
    """`submit` read the whole file into memory and copied it into the inbox (2 GiB of it),
    where the daemon then rejected it; it is refused at once, as `lint` and the daemon do."""
    huge = env.tmp / "huge.md"
    with open(huge, "wb") as handle:
        handle.truncate(2 * 1024**3)  # sparse: nothing is written
    for args in (("submit", str(huge)), ("submit", "--", str(huge))):  # fast path, full CLI
        got = env.cli(*args, timeout=30)
        assert got.returncode == 2, (args, got.stderr)
        assert (
            f"{huge}: larger than 1024 KiB" in got.stderr and "nothing was submitted" in got.stderr
        )
        no_traceback(got.stderr)
    assert not (env.home / "inbox").exists() or not list((env.home / "inbox").iterdir())
    exact = env.tmp / "exact.md"
    exact.write_bytes(b"x" * (1024 * 1024))  # at the limit: submitted (the daemon judges it)
    assert env.cli("submit", str(exact)).returncode == 0


def test_fifos_and_devices_are_refused_never_read(env: Env) -> None:
    fifo = env.tmp / "f.md"
    os.mkfifo(fifo)
    log = env.tmp / "ok.log"
    log.write_text("all fine\n")
    for args in (
        ("submit", str(fifo)),
        ("lint", str(fifo)),
        ("diagnose", str(log), "--kinds", str(fifo)),
    ):
        got = env.cli(*args, timeout=30)  # a FIFO nobody writes: an open that blocks fails here
        assert got.returncode == 2, (args, got.stderr)
        assert f"{fifo}: not a regular file (a FIFO)" in got.stderr, args
        no_traceback(got.stderr)
    got = env.cli("diagnose", "/dev/zero", timeout=30)  # it never ends: refused, not read
    assert got.returncode == 2
    assert got.stderr == "ajetd: /dev/zero: not a regular file (a character device)\n"
    assert not (env.home / "inbox").exists() or not list((env.home / "inbox").iterdir())
    folder = env.tmp / "camp"
    folder.mkdir()
    (folder / "campaign.yaml").write_text("name: c\nbase: b.md\n")
    os.mkfifo(folder / "notes.txt")  # copying it into the inbox would block
    got = env.cli("campaign", str(folder), timeout=30)
    assert got.returncode == 2
    assert f"{folder}/notes.txt: not a regular file (a FIFO)" in got.stderr


def _record(env: Env, run_id: str, **fields: Any) -> None:
    """A run on record, written as the daemon would."""
    home = Home(env.home)
    home.ensure()
    home.run_dir(run_id).mkdir(parents=True)
    home.save_run(Run(run_id=run_id, source="bp.md", submitted_at=time.time(), **fields))


def test_logs_of_a_rejected_run_says_why_and_fails(env: Env) -> None:
    reason = "blueprint: exp_codebase_dir missing"
    _record(env, "rej001", state=State.DONE, status=Status.REJECTED, reason=reason)
    got = env.cli("logs", "rej001")
    assert got.returncode == 1 and got.stdout == ""
    assert f"run rej001 was rejected: {reason}; no trial ran" in got.stderr


def test_logs_whose_files_are_gone_say_so_and_fail(env: Env) -> None:
    """A run whose result dir was removed: `ajetd logs` printed nothing and exited 0, which
    reads as "the program printed nothing". Each trial whose log is gone is named."""
    from ajetd.core.model import Trial

    result = env.tmp / "gone"
    (result / "logs").mkdir(parents=True)
    (result / "logs" / "trial-1.log").write_text("first trial's output\n")
    trials = (
        Trial(number=1, command="x", session="s", started_at=1.0, ended_at=2.0),
        Trial(number=2, command="x", session="s", started_at=3.0, ended_at=4.0),
    )
    _record(
        env, "gon001", state=State.DONE, status=Status.FAILED, result_dir=str(result), trials=trials
    )
    got = env.cli("logs", "gon001")
    assert got.returncode == 1 and got.stdout == "first trial's output\n"
    assert f"trial 2's log {result / 'logs' / 'trial-2.log'} is not there" in got.stderr
    assert "trial 1's" not in got.stderr


def test_a_run_before_its_first_trial_shows_the_limit_and_command_it_names(env: Env) -> None:
    """A blueprint waiting in the inbox reads as `queued` with the time limit and command it
    names, and a rejected run keeps them (README): the human view said only `time not
    started` and `status --json` had `command: null`."""
    bp = env.blueprint("waits", max_time="45m")
    run_id = env.cli("submit", str(bp)).stdout.strip()  # no daemon: it waits in the inbox
    shown = env.cli("status", run_id).stdout
    assert "not started (limit 45m)" in shown, shown
    assert "python -m fakejet.launcher" in shown and str(env.codebase) in shown, shown
    data = json.loads(env.cli("status", run_id, "--json").stdout)
    assert data["state"] == "queued" and data["max_time_s"] == 2700
    assert data["command"].startswith("python -m fakejet.launcher"), data
    _record(
        env,
        "rej002",
        state=State.DONE,
        status=Status.REJECTED,
        reason="exp_venv_exe: missing",
        max_time_s=600.0,
        codebase_dir="/code",
        launch_command="python train.py",
    )
    shown = env.cli("status", "rej002").stdout
    assert "not started (limit 10m)" in shown and "python train.py" in shown, shown
    assert json.loads(env.cli("status", "rej002", "--json").stdout)["command"] == "python train.py"


def test_attach_without_a_terminal_points_to_logs(env: Env) -> None:
    _record(env, "att001", session="ajetd-att001", state=State.RUNNING, started_at=time.time())
    vars_ = {k: v for k, v in env.vars.items() if k != "TMUX"}
    out = CliRunner().invoke(main, ["attach", "att001"], env={**vars_, "TMUX": None})
    assert out.exit_code == 2, out.output
    assert "attach needs a terminal" in out.output and "ajetd logs att001" in out.output


def test_preflight_reads_a_config_only_from_a_regular_file(tmp_path: Path) -> None:
    """A FIFO swapped in for the YAML after its isfile check is refused, not waited on."""
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularError, match="not a regular file \\(a FIFO\\)"):
        LOCAL.read_text(str(fifo))


def test_list_filters_given_with_one_run_are_refused_not_ignored(env: Env) -> None:
    """`--all`, `--state`, `--since` and `--campaign` choose the runs of the list; `ajetd status
    RUN` shows one run whatever they say, so `status RUN --state running` printed a failed
    run, exit 0, to a script that asked whether it runs. Given with a RUN (a run's id or a
    campaign's) and no `--watch` (whose list they do choose), they are a usage error."""
    _record(env, "fil001", state=State.DONE, status=Status.FAILED, reason="exit 1")
    for extra in (["--state", "running"], ["--all"], ["--since", "1h"], ["--campaign", "c"]):
        for target in ("fil001", "c-abcdef"):
            for json_flag in ([], ["--json"]):
                got = env.cli("status", target, *extra, *json_flag)
                assert got.returncode == 2, (target, extra, got.stdout)
                assert got.stdout == "", (target, extra)
                assert f"{extra[0]} chooses the runs of the list" in got.stderr, got.stderr
                no_traceback(got.stderr)
    assert env.cli("status", "fil001").returncode == 0
    assert env.cli("status", "--state", "failed", "--json").returncode == 0


def test_an_argument_is_shown_short_in_its_error(env: Env) -> None:
    """What a user typed is echoed in the error that names it, but a 100 KB argument (a
    variable holding a log where an id was meant) was echoed whole, 100 KB of stderr.
    An unknown run, campaign, state or number is shown as its first characters and its
    length."""
    huge = "a" * 100_000
    for args in (
        ("status", huge),
        ("wait", huge),
        ("logs", huge),
        ("campaign", "status", huge),
        ("status", "--state", huge),
        ("status", "--campaign", huge),
        ("wait", "abc123", "--timeout", "n" * 100_000),
    ):
        got = env.cli(*args)
        assert got.returncode == 2, args
        assert len(got.stderr) < 1000, (args, got.stderr[:300])
        assert "(100000 characters)" in got.stderr, (args, got.stderr[:300])
        no_traceback(got.stderr)


def test_a_file_name_that_is_not_utf8_is_shown_escaped_never_a_traceback(env: Env) -> None:
    """A file name's bytes that are not UTF-8 reach Python as lone surrogates, which the
    stdout of a UTF-8 locale (en_US.UTF-8: errors 'strict', as PYTHONIOENCODING sets here)
    refuses: `ajetd lint caf$'\\xe9'.md` and `ajetd diagnose` of it died with a
    UnicodeEncodeError traceback, and stderr showed the byte as `\\udce9`. Every line now
    shows it as `\\xe9`, as status shows such names."""
    env.vars["PYTHONIOENCODING"] = "utf-8:strict"
    name = os.fsdecode(b"caf\xe9.md")
    good = env.blueprint("good")
    (env.tmp / name).write_bytes(good.read_bytes())
    fifo = env.tmp / os.fsdecode(b"f\xe9.md")
    os.mkfifo(fifo)
    for args, code, stream in (
        (("lint", name), 0, "stdout"),
        (("lint", "--json", name), 0, "stdout"),
        (("diagnose", name), 0, "stdout"),
        (("submit", str(fifo)), 2, "stderr"),
        (("lint", str(fifo)), 2, "stderr"),
    ):
        got = subprocess.run(
            [sys.executable, "-m", "ajetd", *args],
            cwd=env.tmp,
            env=env.vars,
            capture_output=True,
            check=False,
        )
        no_traceback(got.stderr.decode())
        assert got.returncode == code, (args, got.stderr)
        if "--json" not in args:
            assert b"\\xe9" in getattr(got, stream), (args, got)


def test_a_state_is_taken_in_any_case_as_the_table_shows_it(env: Env) -> None:
    """`ajetd status` shows a run needing attention as `ATTENTION!`; `--state ATTENTION!` (or
    `FAILED`, `Failed`) was refused as no state, where `--log-level` takes any case."""
    _record(env, "cas001", state=State.DONE, status=Status.FAILED, reason="exit 1")
    for given in ("FAILED", "Failed", " failed "):
        got = env.cli("status", "--state", given, "--json")
        assert got.returncode == 0, (given, got.stderr)
        assert [r["run_id"] for r in json.loads(got.stdout)] == ["cas001"], given
    got = env.cli("status", "--state", "ATTENTION!", "--json")
    assert got.returncode == 0 and json.loads(got.stdout) == [], got.stderr
    assert env.cli("status", "--state", "fail").returncode == 2


def test_wait_help_names_every_exit_code(env: Env) -> None:
    """Walk 30, 6: `wait --help` left out 130 (Ctrl-C), which the README lists."""
    text = " ".join(env.cli("wait", "--help").stdout.split())
    for code in ("0 succeeded", "1 failed", "2 needs attention", "124 timeout", "130 Ctrl-C"):
        assert code in text, (code, text)


def test_a_wait_that_times_out_on_an_ended_run_says_it_ended() -> None:
    """Walk 30, 6: with a full home, `wait --timeout` of a run that had ended but whose
    reports were held back said `still done (wait timed out)`."""
    from ajetd.views.records import wait_line

    run = Run(run_id="k3x9az", source="bp.md", submitted_at=0.0, state=State.DONE)
    run = Run(**{**run.__dict__, "status": Status.SUCCEEDED, "reports_pending": True})
    line = wait_line(run, 124)
    assert line.startswith("run k3x9az ended succeeded, but its reports are not written yet")
    assert "still done" not in line


def test_status_help_names_every_state_its_filter_takes() -> None:
    """Walk 91, F11: `--state` took `done` but its help did not name it; `--campaign` said
    "(its id)" though a campaign's name is taken too."""
    from ajetd.views.listing import STATES

    text = " ".join(CliRunner().invoke(main, ["status", "--help"]).output.split())
    listed = text.split("this status:", 1)[1].split(".", 1)[0]
    assert set(STATES) <= set(re.findall(r"[a-z_]+", listed)), listed
    assert "this campaign (its id or its name)" in text


def test_campaign_add_help_says_what_more_overrides_are_with_an_example() -> None:
    """Gap (session 34): `campaign add --help` showed MORE_OVERRIDES in its usage line with
    no word on what they are. The help says so and gives an example, and the example's
    words parse as the overrides it says they are."""
    import shlex

    from ajetd.cli.campaign import add_cmd

    got = CliRunner().invoke(main, ["campaign", "add", "--help"])
    assert got.exit_code == 0, got.output
    text = " ".join(got.output.split())
    assert "MORE_OVERRIDES are further K=V overrides after `--overrides`" in text, text
    example = got.output.split("Example", 1)[1].split("\n", 1)[1].split("Options:", 1)[0]
    words = shlex.split(example.replace("\\\n", " "))
    assert words[:3] == ["ajetd", "campaign", "add"], words
    ctx = add_cmd.make_context("add", words[3:])
    assert ctx.params["overrides"] == ("actor.optim.lr=1e-6",), ctx.params
    assert ctx.params["more_overrides"] == ("trainer.total_epochs=2",), ctx.params


def test_a_blueprint_that_cannot_be_read_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """walk98 F17: `submit` of a colleague's 0600 blueprint printed a traceback (exit 1). The
    refusal is injected (root reads any file): a usage error naming it, nothing submitted."""
    import ajetd.cli.submit as submitting

    blueprint = tmp_path / "theirs.md"
    blueprint.write_text("# theirs\n")

    def refused(path: Path) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(submitting, "open_regular", refused)
    monkeypatch.setenv("AJETD_HOME", str(tmp_path / "home"))
    with pytest.raises(submitting.UnreadableError) as raised:
        submitting.submit(blueprint)
    assert str(raised.value) == (
        f"{blueprint}: cannot be read (Permission denied); nothing was submitted"
    )
    assert not (tmp_path / "home" / "inbox").exists() or not any(
        (tmp_path / "home" / "inbox").iterdir()
    )
