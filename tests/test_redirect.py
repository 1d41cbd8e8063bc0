"""A launch command whose output goes to a file (`> run.log 2>&1`, as seed 002 tells agents to
write it) runs as `... 2>&1 | tee -i run.log`: the file is written as before, and the output
reaches the trial's log, so metrics, diagnosis and the hang rule see it (walk86 F5: a NeMo-RL
run "wrote no validation record", an OOM was "no known failure")."""

from __future__ import annotations

import json
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.core.redirect import followed, redirect_warnings
from conftest import Env
from loopkit import Loop

FOLLOWED = {
    "python x.py > run.log 2>&1": ("python x.py 2>&1 | tee -i run.log", "run.log"),
    'uv run x.py > "$LOG_DIR/run.log" 2>&1': (
        'uv run x.py 2>&1 | tee -i "$LOG_DIR/run.log"',
        '"$LOG_DIR/run.log"',
    ),
    "cd a && python x.py &> t.log": ("cd a && python x.py 2>&1 | tee -i t.log", "t.log"),
    "python x.py >> t.log": ("python x.py 2>&1 | tee -i -a t.log", "t.log"),
    "python x.py 1>t.log 2>&1": ("python x.py 2>&1 | tee -i t.log", "t.log"),
    # NeMo-RL overrides ajetd appends after the user's redirect
    "python run_grpo.py > run.log 2>&1 ++logger.log_dir=/r/l": (
        "python run_grpo.py ++logger.log_dir=/r/l 2>&1 | tee -i run.log",
        "run.log",
    ),
}
AS_WRITTEN = (
    "python x.py > /dev/null 2>&1",  # nothing to follow
    "python x.py > a.log 2>&1; echo done",  # not the command's end
    "python x.py 2>&1 > f.log",  # stderr kept apart on purpose
    'python -c "print(1) > x"',  # quoted: no redirect
    "python x.py",
    "python x.py | tee y.log",
    "python x.py >&2",  # a duplication: it ran `| tee -i 2`, writing a file named 2
    "echo started > marker\npython x.py",  # the redirect is echo's: the program's output
    # was sent into `marker` by the rewrite, which read the next line as echo's arguments
)


@pytest.mark.parametrize("command", list(FOLLOWED), ids=list(FOLLOWED))
def test_a_trailing_redirect_to_a_file_is_followed(command: str) -> None:
    assert followed(command) == FOLLOWED[command]
    assert "ajetd runs it as" in redirect_warnings(command)[0]


@pytest.mark.parametrize("command", AS_WRITTEN)
def test_other_commands_run_as_written(command: str) -> None:
    assert followed(command) == (command, None)


def test_a_redirect_not_followed_is_warned_of() -> None:
    assert "ajetd reads only what reaches" in redirect_warnings("python x.py > a.log; echo done")[0]
    assert redirect_warnings("python x.py | tee y.log") == []


# what may come before the program: setup and reports with redirects of their own, a here
# document whose text holds `>` (walk97 F6: each made the program's output "go to a file")
SETUP = st.sampled_from(
    [
        "echo started > /tmp/marker",
        "nvidia-smi > smi.txt",
        "cat > notes.md <<EOF\nlr > 1e-3 2> x\nEOF",
        "cat <<-'END' > cfg.txt\n\ta > b\n\tEND",
        "mkdir -p logs",
        "export A=1",
        "date >> started.txt",
        "(cd sub && make > build.log 2>&1)",
    ]
)
JOIN = st.sampled_from([" && ", "; ", "\n"])
PROGRAM = st.sampled_from(["python t.py --x 1", "uv run t.py", "(cd sub && python t.py)"])
# ends that keep the program's output on the terminal
KEPT = st.sampled_from(
    [
        "",
        " 2>&1",
        " 2>&1 | tee /tmp/x.log",
        " |& tee x.log",
        " | tee -a x.log",
        " >&2",
        " < in.txt",
        " 2>&1 | tee x.log > /dev/stdout",
        ' --msg "a > b"',
        " 3> fd3.txt",
    ]
)
# ends that send it (or its errors) elsewhere, and what the warning names
LOST = st.sampled_from(
    [
        (" 2> err.log", "2> err.log"),
        (" 2>/dev/null", "2> /dev/null"),
        (" &> /dev/null", "&> /dev/null"),
        (" 2> e.log | tee out.log", "2> e.log"),
        (" | tee x.log > /dev/null", "> /dev/null"),
        (" > a.log; echo done", "> a.log"),
    ]
)


def _joined(before: list[tuple[str, str]]) -> str:
    """The setup commands, each ended by its join (a line's end after a here document, whose
    closing line must stand alone)."""
    return "".join(a + ("\n" if "<<" in a else j) for a, j in before)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(SETUP, JOIN), max_size=3), PROGRAM, KEPT)
def test_no_warning_where_the_programs_output_reaches_the_terminal(
    before: list[tuple[str, str]], program: str, end: str
) -> None:
    command = _joined(before) + program + end
    assert redirect_warnings(command) == [], command


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(SETUP, JOIN), max_size=3), PROGRAM, LOST)
def test_a_redirect_of_the_programs_own_output_is_warned_of_by_name(
    before: list[tuple[str, str]], program: str, lost: tuple[str, str]
) -> None:
    command = _joined(before) + program + lost[0]
    said = redirect_warnings(command)
    assert len(said) == 1 and f"(`{lost[1]}`)" in said[0], (command, said)
    assert ("discards" in said[0]) == lost[1].endswith("/dev/null")


def test_an_exec_redirect_before_the_program_is_the_programs() -> None:
    assert "(`> run.log`)" in redirect_warnings("exec > run.log 2>&1\npython t.py")[0]
    assert "tee -i -a t.log" in redirect_warnings("python t.py >> t.log 2>&1")[0]


@pytest.mark.parametrize("command", [*list(FOLLOWED)[:1], "printf 'a\\nb\\n' >> t.log"])
def test_the_rewrite_writes_the_file_as_the_redirect_did(tmp_path: object, command: str) -> None:
    """The same bytes in the file, the program's status kept (pipefail), output on stdout."""
    cwd = str(tmp_path)
    script = "printf 'a\\nb\\n'; exit 3" if "x.py" in command else command
    run = followed(command.replace("python x.py", f"bash -c {json.dumps(script)}"))[0]
    got = subprocess.run(
        ["bash", "-o", "pipefail", "-c", run], cwd=cwd, capture_output=True, text=True, check=False
    )
    name = "run.log" if "run.log" in command else "t.log"
    assert (tmp_path / name).read_text() == "a\nb\n"  # type: ignore[operator]
    assert got.stdout == "a\nb\n" and got.returncode == (3 if "x.py" in command else 0)


def test_an_oom_sent_to_a_file_is_diagnosed_and_the_file_kept(env: Env, loop: Loop) -> None:
    config = env.config("redir", crash_at=1)
    command = f"python -m fakejet.launcher --conf {config} --autokill > train.log 2>&1"
    bp = env.blueprint("redir", config=config, command=command, ajetd="gpus: 0\nmax_trials: 1")
    run_id = loop.submit(bp)
    assert any("sends its output to train.log" in w for w in loop.run(run_id).warnings)
    flag = loop.until_done(run_id)
    assert flag["status"] == "failed" and "cuda_oom" in flag["reason"], flag
    assert "torch.OutOfMemoryError" in (env.codebase / "train.log").read_text()


def test_nemo_rl_metrics_sent_to_a_file_are_read(env: Env, loop: Loop) -> None:
    command = (
        "python examples/run_grpo.py --config examples/configs/grpo_fake.yaml "
        "grpo.max_num_steps=4 grpo.val_period=2 > run.log 2>&1"
    )
    bp = env.blueprint("nemo", config="examples/configs/grpo_fake.yaml", command=command)
    flag = loop.until_done(loop.submit(bp))
    assert flag["status"] == "succeeded" and flag["metrics"]["accuracy"] == 0.38, flag
    assert "Validation Results" in (env.codebase / "run.log").read_text()
