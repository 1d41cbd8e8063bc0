"""The launch command's shape, pure (`ajetd.core.launchshape`): what detaches a program, what
hides its exit status; checked as lint uses it in test_launch_status.py."""

from __future__ import annotations

import pytest

from ajetd.core.launchshape import (
    detached,
    detached_end,
    detached_problem,
    ended_in_traceback,
    masked_status,
    script_paths,
    statements,
)


@pytest.mark.parametrize(
    "command",
    [
        "nohup python t.py > bg.log 2>&1 &",
        "python t.py & disown",
        "python t.py & echo started; sleep 1",
        "tmux new -d -s x 'python t.py'",
        "tmux -L o new-session -d -s x\ntmux -L o send-keys -t x 'python t.py' Enter",
        "screen -dmS x python t.py",
        "nohup sleep 9 & sleep 0.3; true &",
    ],
)
def test_what_detaches_its_program(command: str) -> None:
    assert detached(command) is not None


@pytest.mark.parametrize(
    "command",
    [
        "python t.py",
        "python t.py & wait",
        "python t.py & wait $!",
        "tensorboard --logdir x & python t.py",
        "echo '&' && python t.py",
        "python t.py 2>&1 | tee log",
        "bash -c 'python t.py &'",  # inside a string: not seen (the end says it)
        "python t.py 'open quote",
    ],
)
def test_what_does_not(command: str) -> None:
    assert detached(command) is None


def test_statements_know_their_lines_and_continuations() -> None:
    said = statements("a \\\n b; c &\n# note\nd")
    assert said is not None
    assert [(s.words, s.end, s.line) for s in said] == [
        (("a", "b"), ";", 1),
        (("c",), "&", 1),
        (("d",), "\n", 3),
    ]


def test_masked_status_and_script_paths() -> None:
    assert masked_status("python t.py || exit 0") is not None
    assert masked_status("python t.py & wait") is not None  # `wait` with no pid answers 0
    assert masked_status("python t.py || python t.py --resume") is None
    assert masked_status("python t.py & wait $!") is None
    assert script_paths("cd x && bash run.sh; ./scripts/go.sh --x; source env.sh") == [
        "run.sh",
        "./scripts/go.sh",
        "env.sh",
    ]


def test_a_success_is_failed_only_when_quick_recordless_and_leaving_processes() -> None:
    left = [(42, "python train.py")]
    assert "left `python train.py` (pid 42)" in (detached_end(0.4, 0, left) or "")
    assert detached_end(0.4, 0, []) is None
    assert detached_end(0.4, 3, left) is None  # it wrote records: a straggler
    assert detached_end(3600, 0, left) is None  # it ran: a Ray worker left behind


def test_a_traceback_at_the_end_of_the_output_is_found() -> None:
    tb = "Traceback (most recent call last):\n  File \"t.py\", line 1\nKeyError: 'answer'\n"
    assert ended_in_traceback("step 1\n" + tb + "[ajetd] trial 1 exited", "[ajetd] ") == (
        "KeyError: 'answer'"
    )
    assert ended_in_traceback(tb + "finished\ndone\n", "[ajetd] ") == "KeyError: 'answer'"
    assert ended_in_traceback(tb + "step\n" * 20, "[ajetd] ") is None  # it went on after it
    assert ended_in_traceback("all good\n", "[ajetd] ") is None


@pytest.mark.parametrize(
    "command",
    [
        "python -m fakejet.launcher --conf configs/mid.yaml > amp.log 2>&1 &",
        "nohup python train.py &>log &",
        "cd sub && python train.py 2>&1 | tee -a out.log >/dev/null &",
        "python  train.py   --note 'a  b' &",
    ],
)
def test_a_refused_command_is_quoted_as_written(command: str) -> None:
    """walk98 F3: the words joined read `2>&1` back as `2 >& 1`, which bash reads otherwise
    (`2` an argument): a reader copying the quote back ran another command."""
    problem = detached_problem(command)
    assert problem is not None and f"`{command}`" in problem, problem
