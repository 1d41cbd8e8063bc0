"""A launch command that moves first (`cd sub && python -m ajet.launcher --conf ...`): its
relative paths, the `--conf` it is given and the val file its config names, are the program's,
from the folder it runs in (walk93 F2: ajetd watched the codebase's val file, read none of
the run's records, and once took another run's). A leading literal `cd` is followed
(`core.workdir`); one ajetd cannot follow (`cd "$DIR"`) is said, and nothing is guessed: the
config's copy gives the run a val file of its own, or none is read. The parser over hostile
and generated commands; lint and real runs on real tmux and fakejet, the loop in-process."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.core.workdir import Workdir, workdir
from conftest import Env
from loopkit import Loop

# (a name of digits alone before a redirection, `cd 0 >x`, reads as `cd 0>x` off the words:
# unknown, never a wrong folder; tested below)
_NAMES = st.text(st.sampled_from("abcXYZ019_.- ~é"), min_size=1, max_size=12).filter(
    lambda n: (
        n.strip() and not n.startswith(("-", "~")) and n not in {".", ".."} and not n.isdigit()
    )
)
_JOINS = st.sampled_from([" && ", "; ", "\n", " || exit 1; ", " >/dev/null && "])
_SETUP = st.sampled_from(["", "source .venv/bin/activate && ", "export A=1; ", "X=1 Y=2; "])


@settings(max_examples=200, deadline=None)
@given(
    setup=_SETUP, names=st.lists(_NAMES, min_size=1, max_size=3), join=_JOINS, push=st.booleans()
)
def test_leading_literal_moves_are_followed_in_order(
    setup: str, names: list[str], join: str, push: bool
) -> None:
    verb = "pushd" if push else "cd"
    moves = "".join(f"{verb} {shlex.quote(n)}{join}" for n in names)
    command = f"{setup}{moves}python -m ajet.launcher --conf ./c.yaml"
    assert workdir(command) == Workdir(steps=tuple(names)), command


@settings(max_examples=200, deadline=None)
@given(
    head=st.sampled_from(["", "source x && "]),
    move=st.sampled_from(
        [
            "cd $DIR",
            'cd "$DIR"',
            "cd ${DIR}/x",
            "cd `pwd`/x",
            "cd -",
            "cd",
            "popd",
            "cd sub &",
            "cd x*",
        ]
    ),
    tail=st.sampled_from([" && python t.py", "; python t.py", "\npython t.py"]),
)
def test_a_move_that_cannot_be_read_off_the_command_is_unknown(
    head: str, move: str, tail: str
) -> None:
    found = workdir(f"{head}{move}{tail}")
    assert found.steps == () and found.unknown, found
    assert found.folder("/code", lambda p: p) is None


def test_moves_that_are_not_before_the_program_leave_it_unknown_or_where_it_is() -> None:
    assert workdir("python t.py --conf ./c.yaml") == Workdir()
    assert workdir("(cd sub; python t.py)").steps == ("sub",)
    for command in (
        "pip install -e . && cd sub && python t.py",  # which of the two writes the file?
        "bash -c 'cd sub && python t.py'",  # a move inside a string the shell runs
        "python t.py; cd ..",
        'cd sub && python "open quote',
        "echo x | cd sub; python t.py",
        "cd 0 >/dev/null && python t.py",
    ):
        assert workdir(command).unknown, command
    assert workdir("cd ~/proj && python t.py").folder("/code", lambda p: p.replace("~", "/h")) == (
        "/h/proj"
    )
    assert workdir("cd a && cd ../b && python t").folder("/code", lambda p: p) == "/code/b"


# words a program is given that name a move without making one: arguments, quoted text,
# comments (walk93 review: `--note 'cd fix'`, `--tag cd`, `echo cd`, `# cd not needed` made
# the folder unknown and the val file went unread)
_ARGS = st.one_of(
    st.sampled_from(["cd", "pushd", "popd", "cd fix", "--tag", "cd;", "x && cd y", "(cd a)"]),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12),
).map(shlex.quote)
_PROGRAMS = st.sampled_from(
    [
        "python -m ajet.launcher",
        "echo",
        "export A=1",
        "X=cd python",
        "ls",
        "python t.py",
        "echo $(cd x; pwd)",
    ]
)
_COMMENT = st.text(st.characters(codec="utf-8", exclude_characters="\n\r\\\x00"), max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(
        st.tuples(_PROGRAMS, st.lists(_ARGS, max_size=3), st.none() | _COMMENT),
        min_size=1,
        max_size=4,
    ),
    joins=st.lists(st.sampled_from([" && ", "; ", " | ", " || ", "\n", " & "]), min_size=3),
)
def test_a_command_that_names_no_move_in_command_position_runs_where_it_starts(
    parts: list[tuple[str, list[str], str | None]], joins: list[str]
) -> None:
    command = ""
    for i, (program, args, comment) in enumerate(parts):
        line = " ".join([program, *args])
        if comment is not None:
            line += f"  # {comment}\n"  # a comment ends its line
        command += line + (joins[i % len(joins)] if i < len(parts) - 1 else "")
    assert workdir(command) == Workdir(), command


@settings(max_examples=300, deadline=None)
@given(
    before=st.sampled_from(["", "python t.py --note 'cd fix'; ", "source x && ", "echo cd; "]),
    move=st.sampled_from(
        ['cd "$DIR"', "cd ${DIR}/x", "cd -", "popd", "pushd  $(pwd)/x", "bash -c 'cd sub'"]
    ),
    tail=st.sampled_from([" && python t.py", "; python t.py  # cd", "\npython t.py --tag cd"]),
)
def test_a_move_not_followed_is_said_as_written(before: str, move: str, tail: str) -> None:
    command = f"{before}{move}{tail}"
    found = workdir(command)
    assert found.unknown.rstrip("…") in command and found.unknown.startswith(move[:4]), (
        command,
        found,
    )


def test_the_review_s_commands_read_where_they_start() -> None:
    for command in (
        "python -m ajet.launcher --conf configs/x.yaml --note 'cd fix'",
        "python -m ajet.launcher --conf /abs/configs/x.yaml --tag cd",
        "echo cd && python x",
        "python x  # cd not needed",
        "python x --note 'two\nlines: cd y'",
    ):
        assert workdir(command) == Workdir(), command
    for command in (
        "bash -c 'cd sub && python t.py'",
        'sh -ec "cd sub; python t"',
        "eval cd sub",
        # a shell a wrapper runs: its script's moves are the program's too
        "env A=1 bash -c 'cd sub && python t.py'",
        "timeout 5h sh -c 'cd x; python t.py'",
        "sudo -E bash -lc 'cd y && python t.py'",
    ):
        assert workdir(command).unknown == command, command
    assert workdir("nohup python x --tag cd") == Workdir()


def _sub_config(env: Env) -> str:
    """sub/configs/sub.yaml, its val file `./saved_val_result/sub.md` (from where it runs)."""
    conf = env.config("sub", steps=4)
    target = env.codebase / "sub" / "configs"
    target.mkdir(parents=True)
    (target / "sub.yaml").write_text((env.codebase / conf).read_text())
    (env.codebase / conf).unlink()
    return "sub/configs/sub.yaml"


def _lint(env: Env, name: str, command: str, config: str, ajetd: str = "gpus: 0") -> dict:  # type: ignore[type-arg]
    bp = env.blueprint(name, config=config, command=command, ajetd=ajetd)
    return dict(json.loads(env.cli("lint", str(bp), "--json").stdout))


RUN = "PYTHONPATH=.. python -m fakejet.launcher --autokill --conf"


def test_a_run_that_cds_first_is_read_from_where_it_writes(env: Env, loop: Loop) -> None:
    config = _sub_config(env)
    # the codebase's own file at that name: another run's, never this one's
    decoy = env.codebase / "saved_val_result" / "sub.md"
    decoy.parent.mkdir(exist_ok=True)
    decoy.write_text("{'global_steps': 99, 'mean_reward': 0.99}\n")
    command = f"cd sub && {RUN} configs/sub.yaml"
    said = _lint(env, "cdsub", command, config)
    written = env.codebase / "sub" / "saved_val_result" / "sub.md"
    assert said["ok"] and said["blueprint"]["val_path"] == str(written), said
    bp = env.blueprint("cdsub", config=config, command=command, ajetd="gpus: 0")
    run_id = loop.submit(bp)
    with decoy.open("a") as out:  # appended while the run lives: not its record
        out.write("{'global_steps': 98, 'mean_reward': 0.98}\n")
    flag = loop.until_done(run_id)
    run = loop.run(run_id)
    assert flag["status"] == "succeeded" and run.val_path == str(written), flag
    steps = [h["global_steps"] for h in run.history]
    assert steps and 98 not in steps and 99 not in steps, steps
    assert len(steps) == len(written.read_text().splitlines())


def test_a_move_ajetd_cannot_follow_gets_a_val_file_of_its_own_or_a_warning(
    env: Env, loop: Loop
) -> None:
    config = _sub_config(env)
    absolute = env.codebase / config
    options = "gpus: 0\nenv: {SUBDIR: sub}"
    command = f'cd "$SUBDIR" && {RUN} {absolute}'
    said = _lint(env, "blind", command, config, options)
    result = env.tmp / "results" / "blind"
    seen = said["blueprint"]
    assert said["ok"] and seen["val_path"] == str(result / "val_results.md"), said
    changed = [c for c in seen["config_changes"] if "val_print_to_markdown_file_path" in c]
    assert len(changed) == 1 and 'cd "$SUBDIR"' in changed[0] and "cannot tell" in changed[0]
    bp = env.blueprint("blind", config=config, command=command, ajetd=options)
    run_id = loop.submit(bp)
    flag = loop.until_done(run_id)
    run = loop.run(run_id)
    assert flag["status"] == "succeeded", flag
    assert run.history and run.val_path == str(result / "val_results.md")
    copy = yaml.safe_load(open(run.config_path))  # noqa: SIM115 - read once, closed by gc
    assert copy["ajet"]["trainer_common"]["val_print_to_markdown_file_path"] == run.val_path
    # a relative --conf too: no copy reaches the program, so no file is watched, and it says so
    said = _lint(env, "blind2", f'cd "$SUBDIR" && {RUN} configs/sub.yaml', config, options)
    assert said["blueprint"]["val_path"] is None, said
    warned = [w for w in said["blueprint"]["warnings"] if "not read" in w]
    assert len(warned) == 1 and 'cd "$SUBDIR"' in warned[0], said["blueprint"]["warnings"]


def test_hostile_commands_are_read_in_linear_time() -> None:
    """100 KB of operators, of open groups, of `eval`s or of quotes open across lines: each
    read in well under a second (a run of `)` split into operators was quadratic: 0.3 s at
    10 KB)."""
    for command in (
        ")" * 100_000 + " cd x",
        "x ( " * 25_000 + "cd y",
        "eval " * 20_000 + "cd x",
        "'a\n" * 30_000,
        "bash -c " * 12_000 + "cd",
    ):
        began = time.monotonic()
        workdir(command)
        assert time.monotonic() - began < 5.0, command[:20]


# --- CDPATH: bash looks a `cd name` up in it first --------------------------------------------

_TREE = ("code/sub", "code/only", "alt/sub", "alt/far", "other/far", "code/alt/sub")


def _bash_folder(command: str, code: Path, env: dict[str, str]) -> str | None:
    """Where bash runs the command's program (`pwd`, its last line of output), with `env` on
    top of an environment without CDPATH; None where it stopped first."""
    base = {k: v for k, v in os.environ.items() if k != "CDPATH"}
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=code,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    lines = done.stdout.splitlines()
    return lines[-1] if done.returncode == 0 and lines else None


def _tree(root: Path) -> Path:
    for folder in _TREE:
        (root / folder).mkdir(parents=True, exist_ok=True)
    return root / "code"


@settings(max_examples=120, deadline=None)
@given(
    cdpath=st.lists(st.sampled_from(["", ".", "ALT", "OTHER", "alt", "../alt", "NONE"]), max_size=3)
    .map(":".join)
    .filter(bool),
    where=st.sampled_from(["env", "export", "assign", "prefix", "unset"]),
    target=st.sampled_from(["sub", "far", "only", "./sub", "missing", "alt/sub"]),
    then=st.sampled_from(["", " && cd sub"]),
)
def test_cdpath_is_followed_as_bash_follows_it_or_the_folder_is_unknown(
    tmp_path_factory: pytest.TempPathFactory, cdpath: str, where: str, target: str, then: str
) -> None:
    """A `cd name` with CDPATH set (the blueprint's `env:`, or the command's own `export`,
    assignment, `CDPATH=... cd`, `unset`): the folder ajetd reads is the one bash runs the
    program in, checked against bash itself (a folder bash cannot reach: its cd fails)."""
    root = tmp_path_factory.mktemp("cdpath")
    code = _tree(root)
    value = cdpath.replace("ALT", str(root / "alt")).replace("OTHER", str(root / "other"))
    value = value.replace("NONE", str(root / "none"))
    env = {"CDPATH": value} if where in {"env", "unset"} else {}
    head = {
        "env": "",
        "export": f"export CDPATH={shlex.quote(value)}; ",
        "assign": f"CDPATH={shlex.quote(value)}; ",
        "prefix": f"CDPATH={shlex.quote(value)} ",
        "unset": "unset CDPATH && ",
    }[where]
    command = f"{head}cd {target}{then} && pwd"
    found = workdir(command, env).folder(str(code), lambda p: p, os.path.isdir)
    ran = _bash_folder(command, code, env)
    if ran is None:  # bash stopped at a cd to a folder that is not there
        return
    assert found == ran, (command, env, found, ran)


def test_a_cdpath_that_cannot_be_read_off_the_command_makes_the_folder_unknown() -> None:
    for command in (
        "CDPATH=$HOME/x; cd sub && python t.py",
        "export CDPATH=~/x && cd sub && python t.py",
        "CDPATH=$X cd sub && python t.py",
    ):
        found = workdir(command)
        assert found.unknown or found.folder("/code", lambda p: p, lambda p: True) is None, command
    # a path bash does not look up is followed as before, whatever CDPATH is
    assert workdir("CDPATH=$X; cd ./sub && cd /abs && python t.py").steps == ("./sub", "/abs")
    # where the folders cannot be looked at, a looked-up step is unknown, not guessed
    assert workdir("cd sub && python t.py", {"CDPATH": "/alt"}).folder("/code", str) is None
    assert workdir("cd sub && python t.py", {"CDPATH": ""}).folder("/code", str) == "/code/sub"


def test_the_trial_s_command_gets_no_cdpath_but_the_blueprint_s(tmp_path: Path) -> None:
    """The trial's script unsets a CDPATH it inherited (the daemon's shell, an SSH host's
    rc files) before it exports the blueprint's: the command's `cd sub` goes where ajetd read
    it going, run by the script itself."""
    from ajetd.core.trialscript import TrialSpec, render_trial_script

    code = _tree(tmp_path)
    out = tmp_path / "where"
    for env, expected in (((), code / "sub"), ((("CDPATH", str(tmp_path / "alt")),), None)):
        spec = TrialSpec(
            run_id="aaaaaa",
            trial=1,
            command=f"cd sub >/dev/null && pwd > {shlex.quote(str(out))}",
            codebase_dir=str(code),
            venv_dir=str(tmp_path / "venv"),
            result_dir=str(tmp_path),
            go_file=str(tmp_path / "go"),
            exit_file=str(tmp_path / "exit"),
            hup_file=str(tmp_path / "hup"),
            env=env,
        )
        (tmp_path / "go").touch()
        script = tmp_path / "trial.sh"
        script.write_text(render_trial_script(spec))
        inherited = {**os.environ, "CDPATH": str(tmp_path / "other") + ":" + str(tmp_path / "alt")}
        subprocess.run(["bash", str(script)], env=inherited, timeout=30, check=False)
        read = workdir(spec.command, dict(env)).folder(str(code), str, os.path.isdir)
        assert out.read_text().strip() == read == str(expected or tmp_path / "alt" / "sub")
