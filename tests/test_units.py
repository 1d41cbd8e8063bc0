"""Small pure pieces: names, the trial script, log text, reports."""

from __future__ import annotations

import re
import signal
import subprocess
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.adapters.store import write_all_atomic
from ajetd.core import model
from ajetd.core.blueprint import clean_value
from ajetd.core.exitfile import parse_exit_file, parse_exit_note
from ajetd.core.model import Run, Status, Trial
from ajetd.core.naming import (
    MAX_SESSION,
    RUN_ID,
    experiment_purpose,
    run_names,
    session_base,
    unique_session,
)
from ajetd.core.shellwords import (
    ASSIGNMENT,
    SKIP_GPU_CHECK,
    program_word,
    protect_autokill,
    runs_ajet_launcher,
)
from ajetd.core.trialscript import TrialSpec, render_trial_script
from ajetd.diagnosis.text import clean_line, tail_lines
from ajetd.views import report
from conftest import wait_for


def test_session_names() -> None:
    assert (
        session_base("Math top-k ablation, k=4", ("bp",), "abc123")
        == "ajet_math_top_k_ablation_k_4"
    )
    assert session_base("数学实验", ("my-exp",), "abc123") == "ajet_my_exp"
    assert session_base("数学实验", ("实验",), "abc123") == "ajet_abc123"
    assert session_base("AJET math", ("x",), "abc123") == "ajet_math"
    # accents are taken off, not turned into word breaks; full-width letters are read
    assert session_base("café ünïcode", ("x",), "abc123") == "ajet_cafe_unicode"
    assert session_base("ＧＲＰＯ ｑｗｅｎ", ("x",), "abc123") == "ajet_grpo_qwen"
    long = session_base(" ".join(["word"] * 40), ("x",), "abc123")
    assert len(long) <= MAX_SESSION - 3 and long.startswith("ajet_word_word")
    assert unique_session("ajet_x", {"ajet_x", "ajet_x_2"}) == "ajet_x_3"
    # a campaign experiment's name survives the cut: the base's and campaign's words go first
    base = "campaign base: math GRPO on Qwen2.5 7B, the quick recipe"
    names = [
        session_base(experiment_purpose(base, "quick", i, name, "a long hypothesis"), ("x",), "id")
        for i, name in enumerate(["lr-3e-6", "kl_0.01", "no-validation", "AJET"], 1)
    ]
    assert names == [
        "ajet_campaign_base_math_grpo_on_qwen2_lr_3e_6",
        "ajet_campaign_base_math_grpo_on_qwen2_kl_0_01",
        "ajet_campaign_base_math_grpo_on_no_validation",
        "ajet_campaign_base_math_grpo_on_qwen2_5_7b",  # no word of its own: as any run
    ]
    short = session_base(experiment_purpose("数学", "quick", 2, "a", ""), ("x",), "id")
    assert short == "ajet_quick_a"  # no ASCII word in the base: the campaign's name
    huge = session_base(experiment_purpose("math", "c", 1, "x" * 64, ""), ("x",), "id")
    assert huge == "ajet_" + "x" * 40  # a name too long alone is cut as any word
    mimic = session_base("math (campaign not a name, experiment 1 x)", ("x",), "id")
    assert mimic == "ajet_math_campaign_not_a_name_experiment_1_x"  # not the campaign form
    assert unique_session("ajet_x", set()) == "ajet_x"
    # no ASCII word in the purpose: the file name, unless it names no experiment (README's
    # `blueprint.md`, `submit -`'s `stdin.md`), then the result dir's name, then the config's
    names = run_names("blueprint.md", "/data/results/gsm8k-lr3e-6/", "/c/math_grpo.yaml")
    assert session_base("数学实验", names, "abc123") == "ajet_gsm8k_lr3e_6"
    names = run_names("stdin.md", "/data/数学/results", "/c/math_grpo.yaml")
    assert session_base("数学实验", names, "abc123") == "ajet_math_grpo"
    assert session_base("数学实验", run_names("blueprint.md", "/r/结果", ""), "abc123") == (
        "ajet_abc123"
    )
    assert session_base("数学实验", run_names("lr-sweep.md", "/r/x", ""), "k") == "ajet_lr_sweep"


def test_autokill_is_removed_as_a_whole_word() -> None:
    assert protect_autokill("python -m ajet.launcher --conf a.yaml --autokill") == (
        "python -m ajet.launcher --conf a.yaml",
        True,
    )
    assert protect_autokill("x --autokill-later") == ("x --autokill-later", False)
    # the rest of the command is left byte for byte: a word on its own continued line leaves
    # a continuation bash still reads (it ended the command with a lone `\`), and spaces
    # inside quotes are the program's arguments (they were squeezed to one)
    multi = "python -m ajet.launcher \\\n    --conf a.yaml \\\n    --autokill"
    assert protect_autokill(multi) == ("python -m ajet.launcher \\\n    --conf a.yaml \\\n", True)
    middle = "python -m ajet.launcher \\\n  --autokill \\\n  --conf a.yaml"
    assert protect_autokill(middle) == ("python -m ajet.launcher \\\n \\\n  --conf a.yaml", True)
    quoted = 'python -m ajet.launcher --conf a.yaml --note "two  spaces" --autokill'
    assert protect_autokill(quoted) == (quoted.removesuffix(" --autokill"), True)
    assert protect_autokill("x --autokill=1") == ("x --autokill=1", False)  # not the flag
    # wherever bash still passes the flag: before a continuation, inside a quoted command,
    # before a redirection, after a parenthesis
    for command, left in (
        (
            "ajet --conf a.yaml --autokill\\\n  --backbone verl",
            "ajet --conf a.yaml\\\n  --backbone verl",
        ),
        ('bash -c "ajet --conf a.yaml --autokill"', 'bash -c "ajet --conf a.yaml"'),
        ("sh -c 'ajet --conf a.yaml --autokill'", "sh -c 'ajet --conf a.yaml'"),
        ("ajet --autokill>log.txt 2>&1", "ajet>log.txt 2>&1"),
        ("(ajet --conf a.yaml --autokill)", "(ajet --conf a.yaml)"),
        ("(--autokill ajet)", "( ajet)"),
    ):
        assert protect_autokill(command) == (left, True), command
    for word in ("x--autokill", "---autokill", "--autokillx", "--autokill_x"):
        assert protect_autokill(f"ajet {word}") == (f"ajet {word}", False), word


def _script(tmp_path: Path, command: str, **fields: Any) -> Path:
    """A trial's script in `tmp_path` (its go, exit and hup files there too), as rendered."""
    spec = TrialSpec(
        run_id="abc123",
        trial=fields.pop("trial", 1),
        command=command,
        codebase_dir=str(tmp_path),
        venv_dir=fields.pop("venv_dir", str(tmp_path / "venv")),
        result_dir=str(tmp_path / "r"),
        go_file=str(tmp_path / "go"),
        exit_file=str(tmp_path / "exit"),
        hup_file=str(tmp_path / "hup"),
        **fields,
    )
    script = tmp_path / "t.sh"
    script.write_text(render_trial_script(spec))
    return script


Start = Callable[[Path], "subprocess.Popen[str]"]


@pytest.fixture
def started() -> Iterator[Start]:
    """Starts trial scripts; each is killed at the test's end however it ended (a failed wait
    left one polling for its go file for good, with its traps ignoring TERM and INT)."""
    procs: list[subprocess.Popen[str]] = []

    def start(script: Path) -> subprocess.Popen[str]:
        proc = subprocess.Popen(["bash", str(script)], stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_trial_script_waits_for_go_and_records_exit(tmp_path: Path, started: Start) -> None:
    script = _script(
        tmp_path,
        'echo "$AJETD_RUN_ID $AJETD_TRIAL $MY_VAR"; exit 7',
        trial=2,
        venv_dir=str(tmp_path / "v e n v"),
        env=(("MY_VAR", "it's $HOME; rm -rf /"),),
    )
    proc = started(script)
    (tmp_path / "go").touch()
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 7
    assert "abc123 2 it's $HOME; rm -rf /" in out
    parsed = parse_exit_file((tmp_path / "exit").read_text())
    assert parsed is not None and parsed[0] == 7 and parsed[1] is not None


@pytest.mark.parametrize(("name", "code"), [("INT", 130), ("TERM", 143)])
def test_a_stop_signal_taken_before_the_program_starts_keeps_it_from_starting(
    tmp_path: Path, name: str, code: int, started: Start
) -> None:
    """ajetd sends its stop once the trial's banner is in the log; a signal that came before
    the program was forked was caught by the script and lost (the program ran on until the
    SIGTERM 30 s later; a CI run's stop test timed out on it). Taken before the program, the
    signal is kept and the program never starts: the trial ends with the signal's code."""
    script = _script(tmp_path, f"touch {tmp_path / 'ran'}")
    proc = started(script)
    # the script waits for its go file with its traps set: the same handlers as after its banner
    # (any child: the loop's `sleep`, or its fork not yet exec'd, under load most of a turn)
    wait_for(lambda: _children(proc.pid), 10, "the script to wait for its go file")
    proc.send_signal(getattr(signal, f"SIG{name}"))
    (tmp_path / "go").touch()
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == code, out
    assert not (tmp_path / "ran").exists()
    assert f"exited with code {code}" in out
    assert parse_exit_file((tmp_path / "exit").read_text()) is not None


def _forwarding_spec(tmp_path: Path, command: str, prefix: tuple[str, ...] = ()) -> Path:
    return _script(tmp_path, command, forward_signals=True, prefix=prefix)


def test_a_slurm_jobs_int_before_its_program_is_noted_as_slurms_warning(
    tmp_path: Path, started: Start
) -> None:
    """A Slurm batch job's INT is Slurm's warning before its time limit unless ajetd sent it,
    noted beside the exit file (`Host.signalled`); one that came before the program started
    ended the trial with no note, and the run read as failed instead of at its time limit."""
    script = _forwarding_spec(tmp_path, f"touch {tmp_path / 'ran'}")
    proc = started(script)
    # (any child: the loop's `sleep`, or its fork not yet exec'd, under load most of a turn)
    wait_for(lambda: _children(proc.pid), 10, "the script to wait for its go file")
    proc.send_signal(signal.SIGINT)
    (tmp_path / "go").touch()
    proc.communicate(timeout=20)
    assert proc.returncode == 130
    assert not (tmp_path / "ran").exists()
    assert (tmp_path / "exit.sigint").exists()


def test_a_slurm_jobs_signal_as_its_program_starts_is_passed_on(tmp_path: Path) -> None:
    """On the Slurm path the program runs in its own process group and the script passes INT
    and TERM on; one that reached the script after its check for a stop and before its traps
    that pass them on was kept and never passed on (the program ran to its end). Here the
    program's first process sends it, as the program starts: whichever trap takes it, the
    program is interrupted."""
    prefix = ("sh", "-c", 'kill -INT "$PPID"; exec "$@"', "sh")
    script = _forwarding_spec(tmp_path, f"sleep 5; touch {tmp_path / 'ran'}", prefix)
    (tmp_path / "go").touch()
    done = subprocess.run(
        ["bash", str(script)], check=False, capture_output=True, text=True, timeout=20
    )
    assert done.returncode == 130, done.stdout + done.stderr
    assert not (tmp_path / "ran").exists()
    assert (tmp_path / "exit.sigint").exists()


def _children(pid: int) -> list[str]:
    try:
        return [child.name() for child in psutil.Process(pid).children()]
    except psutil.Error:
        return []


def test_exit_file_parsing() -> None:
    assert parse_exit_file("") is None
    assert parse_exit_file("x 1\n") is None
    assert parse_exit_file("130 1700000000.5\n") == (130, 1700000000.5)
    # the script writes the line straight into the file: caught before its newline, it is
    # not an end yet (a reader waits for the close), whatever it holds so far
    assert parse_exit_file("130 1700000000.5") is None
    assert parse_exit_file("1") is None
    # the pane's exit note (a full disk) is a whole tmux option value, without a newline
    assert parse_exit_note("130 1700000000.5") == (130, 1700000000.5)
    assert parse_exit_note("") is None


@pytest.mark.parametrize("code", ["-1", "256", "99999999999999999999", "1" + "0" * 30])
def test_an_exit_file_with_a_code_no_exit_has_is_garbled(code: str) -> None:
    """A program (or a person) may write the exit file; a code no exit status has is garbled,
    as text is: kept, 10**30 as the run's exit code made its record unreadable (a stored
    integer is at most 2**63: model.stored_as_declared)."""
    assert parse_exit_file(f"{code} 1700000000.5\n") is None
    assert parse_exit_note(f"{code} 1700000000.5") is None


def test_log_lines_are_cleaned() -> None:
    assert clean_line("\x1b[32mgreen\x1b[0m\r\n") == "green"
    assert clean_line("10%|█ \r50%|███ \r") == "50%|███ "
    assert tail_lines(b"a\nb\xff\nc\n\n", 2) == ["b\ufffd", "c"]


def test_finish_flag_and_results() -> None:
    run = Run(
        run_id="abc123",
        source="bp.md",
        submitted_at=0.0,
        purpose="p",
        result_dir="/r",
        max_time_s=60,
    )
    run = model.trial_started(model.add_trial(run, Trial(1, "cmd", "ajet_p")), 10.0)
    run = model.trial_ended(run, 0, 20.0)
    run = model.finish(run, Status.SUCCEEDED, "ok", 0, 20.0)
    flag = report.finish_flag(run)
    assert flag == {
        "run_id": "abc123",
        "status": "succeeded",
        "reason": "ok",
        "exit_code": 0,
        "trials": 1,
        "started_at": "1970-01-01T00:00:10Z",
        "ended_at": "1970-01-01T00:00:20Z",
        "metrics": {},
        "best": None,
        "fixes_applied": [],  # what each fix between trials changed (walk88 F6): none here
    }
    history = ({"global_steps": 1, "val_loss": 0.9}, {"global_steps": 2, "val_loss": 0.5})
    history += ({"global_steps": 3, "val_loss": 0.7},)
    flag = report.finish_flag(replace(run, history=history, metrics=history[-1], metric="val_loss"))
    assert flag["metrics"] == {"global_steps": 3, "val_loss": 0.7}  # the last record
    best = {"metric": "val_loss", "value": 0.5, "step": 2, "trial": 1}
    assert flag["best"] == best  # a loss: the lowest
    text = report.render_results(run, report.ReportContext(host="h", log_tail=["bye"]))
    assert "**Status: succeeded**" in text and "bye" in text
    assert report.sparkline([0.0, 0.5, 1.0]) == "▁▄█"


def test_attach_switches_inside_same_server_and_nests_elsewhere(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from ajetd.adapters.tmux import Tmux

    tmux = Tmux("sock")
    monkeypatch.setenv("TMUX", f"{tmux.socket_path()},123,0")
    argv, env = tmux.attach("ajet_x")
    assert argv == ["tmux", "-L", "sock", "switch-client", "-t", "=ajet_x"]
    monkeypatch.setenv("TMUX", "/tmp/tmux-0/other,1,0")
    argv, env = tmux.attach("ajet_x")
    assert argv[-3:] == ["attach-session", "-t", "=ajet_x"] and "TMUX" not in env


_SESSION = re.compile(r"ajet(_[a-z0-9]+)+")


@given(
    st.text(max_size=300),
    st.lists(st.text(max_size=80), max_size=3),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=6, max_size=6),
)
@settings(max_examples=300, deadline=None)
def test_a_session_name_is_always_safe_and_short(
    purpose: str, names: list[str], run_id: str
) -> None:
    """Whatever the purpose, the names and their scripts, a session name is `ajet_` and words
    of `[a-z0-9]` joined by `_`, with room for a `_N`; one with no word anywhere is the run's."""
    assert RUN_ID.match(run_id)
    name = session_base(purpose, names, run_id)
    assert _SESSION.fullmatch(name) and len(name) <= MAX_SESSION - 3, name
    texts = [unicodedata.normalize("NFKD", text) for text in [purpose, *names]]
    if not any(re.search(r"[A-Za-z0-9]", text) for text in texts):
        assert name == f"ajet_{run_id}"


def test_files_written_together_are_whole_and_leave_nothing_on_failure(tmp_path: Path) -> None:
    """`write_all_atomic` (the reports): each file whole with its mode, replaced in one
    rename; when one cannot be written, no temporary file is left behind."""
    (tmp_path / "a.md").write_text("old\n")
    write_all_atomic([(tmp_path / "a.md", "new\n", 0o644), (tmp_path / "b.json", b"{}\n", 0o600)])
    assert (tmp_path / "a.md").read_text() == "new\n"
    assert (tmp_path / "b.json").read_bytes() == b"{}\n"
    assert (tmp_path / "b.json").stat().st_mode & 0o777 == 0o600
    with pytest.raises(OSError):
        write_all_atomic([(tmp_path / "c.md", "c\n", 0o644), (tmp_path / "no" / "d", "d", 0o644)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.md", "b.json"]


def test_random_words_use_the_whole_alphabet_evenly() -> None:
    """Run ids and the temporary files' names come from `random_word` (the kernel's random
    bytes, the bytes past the last multiple of 36 drawn again): every character of the
    alphabet, each about as often as the others, and nothing else."""
    import os
    from collections import Counter

    from ajetd.core.naming import RUN_ID, new_run_id, random_word

    counts = Counter("".join(random_word(os.urandom) for _ in range(6000)))
    assert set(counts) == set("abcdefghijklmnopqrstuvwxyz0123456789")
    assert max(counts.values()) < 1.3 * 1000 and min(counts.values()) > 0.7 * 1000
    assert all(len(random_word(os.urandom, n)) == n for n in (0, 1, 6, 8, 300))
    ids = {new_run_id(lambda _: False, os.urandom) for _ in range(200)}
    assert all(RUN_ID.match(i) and not i.isdigit() for i in ids)


def test_a_write_never_follows_a_link_planted_at_its_temporary_name(tmp_path: Path) -> None:
    """`write_atomic` makes its temporary file with `O_EXCL | O_NOFOLLOW` under a fresh
    random name (as `tempfile.mkstemp` did): a link planted beside the target is not written
    through, and nothing temporary is left."""
    from ajetd.adapters.store import temp_of, write_atomic

    victim = tmp_path / "victim"
    victim.write_text("untouched")
    for i in range(50):  # links at names a temporary file could have; none is taken
        (tmp_path / f".state.json.{i:08d}.tmp").symlink_to(victim)
    write_atomic(tmp_path / "state.json", "{}\n", 0o600)
    assert victim.read_text() == "untouched"
    assert (tmp_path / "state.json").read_text() == "{}\n"
    assert (tmp_path / "state.json").stat().st_mode & 0o777 == 0o600
    left = [p.name for p in tmp_path.iterdir() if temp_of(p.name, "state.json")]
    assert len(left) == 50 and all((tmp_path / n).is_symlink() for n in left)


def test_each_validation_record_is_its_trials() -> None:
    """`record_trials`: the last trial whose records begin at or before each one; a trial
    that wrote none gives its rows to none; a run of several trials recorded before trials
    kept where theirs begin says it cannot tell (None), one of a single trial says its."""
    from dataclasses import replace as changed

    from ajetd.core.model import Run, Trial, record_trials

    history = tuple({"global_steps": s} for s in (2, 4, 2, 2, 4))
    trials = (
        Trial(1, "c", "s", started_at=1.0, first_record=0),
        Trial(2, "c", "s", started_at=2.0, first_record=2),  # failed before validating
        Trial(3, "c", "s", started_at=3.0, first_record=2),
        Trial(4, "c", "s"),  # not started: none of its
    )
    run = Run("r1", "bp.md", 0.0, history=history, trials=trials)
    assert record_trials(run) == [1, 1, 3, 3, 3]
    old = changed(run, trials=tuple(changed(t, first_record=None) for t in trials))
    assert record_trials(old) == [None] * 5
    assert record_trials(changed(old, trials=old.trials[:1])) == [1] * 5


def test_agentjets_kill_switch_is_removed_with_its_value_like_autokill() -> None:
    """`--kill X` is what `--autokill` expands to in AgentJet's launcher (walk 86): dropped
    under protect with its value however it is spelt (quoted, `=`, an argparse prefix, on a
    continued line); a longer word is not it."""
    for command, left in (
        (
            'python -m ajet.launcher --conf c.yaml --kill "ray|vllm|python"',
            "python -m ajet.launcher --conf c.yaml",
        ),
        ("ajet --kill=python --conf a.yaml", "ajet --conf a.yaml"),
        ("ajet --kil 'ray|python' --conf a.yaml", "ajet --conf a.yaml"),
        ("ajet --ki python; echo x", "ajet; echo x"),
        ("ajet --kill \\\n  python --conf a.yaml", "ajet --conf a.yaml"),
        ("ajet --autokill --kill vllm", "ajet"),
    ):
        assert protect_autokill(command) == (left, True), command
    for command in ("ajet --killer 3", "ajet --kiss x", "ajet x--kill y", "ajet --kill"):
        assert protect_autokill(command) == (command, False), command


def test_a_command_ending_in_a_quoted_argument_keeps_its_quote() -> None:
    """Only a value that is one quoted string loses its quotes (walk 86: `--kill "a|b"` lost
    its closing quote, and bash read an unclosed string)."""
    assert clean_value('python t.py --kill "ray|vllm"') == 'python t.py --kill "ray|vllm"'
    assert clean_value("'python t.py'") == "python t.py"
    assert clean_value('"python" t.py "x"') == '"python" t.py "x"'


def test_a_logs_tail_cuts_long_lines_and_reads_back_past_a_huge_one(tmp_path: Path) -> None:
    """Walk 86, F15: results.md's "Last 50 lines" held one unmarked 261,837-character line
    (the end of a 5 MiB one) and only the 7 lines after it."""
    from ajetd.diagnosis.scan import SHOWN_LINE_CHARS, log_tail

    log = tmp_path / "trial-1.log"
    before = b"".join(b"line %d\n" % i for i in range(100))
    log.write_bytes(before + b"X" * (5 << 20) + b"\n" + b"after\n" * 7)
    tail = log_tail(log, 50)
    assert len(tail) == 50 and tail[-1] == "after" and tail[0] == "line 58"
    assert tail[-8] == "X" * SHOWN_LINE_CHARS + " … (5,242,880 characters, cut)"
    huge = tmp_path / "huge.log"
    huge.write_bytes(b"Y" * (20 << 20) + b"\nend\n")  # its start beyond what is read back
    first, last = log_tail(huge, 50)
    assert first.startswith("… (a line of more than 8,388,608 bytes: its end) Y")
    assert len(first) < SHOWN_LINE_CHARS + 100 and last == "end"


def test_ajetds_own_config_copies_leave_a_tree_clean() -> None:
    """walk 89: every run with a preflight fix read `(dirty)`, its only news ajetd's own
    `<stem>.ajetd-<tag>.yaml` beside the user's config (this run's or an earlier one's)."""
    from ajetd.adapters import git

    head = b"commit=abc\nbranch=main\ntoplevel=/code\n"
    own = b'status=?? configs/x.ajetd-k3x9az.yaml\nstatus=?? "configs/my x.ajetd-c-01.yml"\n'
    prov, _ = git.parse(0, head + own + b"\n--ajetd-diff--\n")
    assert prov.git and not prov.dirty and prov.untracked == () and prov.changed == 0
    mine = b"status=?? scratch.txt\nstatus= M train.py\nstatus=?? configs/x.ajetd.yaml\n"
    prov, _ = git.parse(0, head + own + mine + b"\n--ajetd-diff--\n")
    assert prov.dirty and prov.changed == 1
    assert prov.untracked == ("scratch.txt", "configs/x.ajetd.yaml")


def test_the_gpu_check_skip_takes_the_first_dropped_switchs_place() -> None:
    """Walk 89, F3: where ajetd drops `--autokill` it may put AgentJet's
    `--skip-check-avail-gpu` where the switch stood (one, however many switches went), the
    rest of the command byte for byte; only AgentJet's launcher is such a command."""
    command = "python -m ajet.launcher --autokill --conf a.yaml --kill python >log"
    got = protect_autokill(command, SKIP_GPU_CHECK)
    assert got == ("python -m ajet.launcher --skip-check-avail-gpu --conf a.yaml >log", True)
    last = "python -m ajet.launcher \\\n    --conf a.yaml \\\n    --autokill"
    assert protect_autokill(last, SKIP_GPU_CHECK)[0] == last.replace(
        "    --autokill", " " + SKIP_GPU_CHECK
    )
    assert protect_autokill("ajet --conf a.yaml", SKIP_GPU_CHECK) == ("ajet --conf a.yaml", False)
    for runs in (
        "python -m ajet.launcher --conf a",
        "ajet --conf a",
        "cd x && /v/bin/ajet --conf a",
        "python ajet/launcher.py --conf a",
    ):
        assert runs_ajet_launcher(runs), runs
    for other in (
        "python -m fakejet.launcher --conf ajet.yaml",
        "python train_ajet.py",
        "ajet-x --conf a",
    ):
        assert not runs_ajet_launcher(other), other


@pytest.mark.parametrize(
    ("words", "program"),
    [
        (["CUDA_VISIBLE_DEVICES=0", "A_1=x", "python", "-m", "ajet.launcher"], "python"),
        (["python", "X=1"], "python"),  # an argument, not an assignment
        (["A=1"], ""),
        ([], ""),
        (["1A=x", "python"], "1A=x"),  # no name: bash runs a program `1A=x`
        (["-X=1", "python"], "-X=1"),
        (["./run.sh", "B=2"], "./run.sh"),
    ],
)
def test_a_command_s_program_is_its_first_word_that_is_no_assignment(
    words: list[str], program: str
) -> None:
    assert program_word(words) == program


def test_one_module_defines_what_a_shell_assignment_looks_like() -> None:
    """The launch command's program is read past its `NAME=value` words by the working folder's
    reader, AgentJet's launcher test and the missing-program check: each kept its own copy of
    the pattern, which could drift apart; now `core.shellwords.ASSIGNMENT` alone."""
    source = Path(__file__).resolve().parents[1] / "supervisor" / "ajetd"
    shape = re.compile(r"re\.compile\(r?[\"']\[A-Za-z_\]\[A-Za-z0-9_\]\*=")
    defining = sorted(
        str(path.relative_to(source))
        for path in source.rglob("*.py")
        if shape.search(path.read_text(encoding="utf-8"))
    )
    assert defining == ["core/shellwords.py"]
    assert ASSIGNMENT.match("NCCL_DEBUG=INFO") and not ASSIGNMENT.match("--x=1")
