"""`ajetd lint`: every rejection reason with a specific message, and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ajetd.core.shellenv import launch_env
from conftest import PYTHON, Env


def _lint(env: Env, text: str) -> tuple[int, str]:
    path = env.tmp / "lint.md"
    path.write_text(text)
    out = env.cli("lint", str(path))
    return out.returncode, out.stdout + out.stderr


def test_good_blueprint_passes_with_summary(env: Env) -> None:
    code, out = _lint(env, env.blueprint("good").read_text())
    assert code == 0, out
    assert "ok" in out and "val_path" in out and "saved_val_result/good.md" in out
    data = json.loads(env.cli("lint", str(env.blueprint("good")), "--json").stdout)
    assert data["ok"] is True and data["blueprint"]["max_time_s"] == 120


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda e, t: t.replace("- [exp_result_dir]", "- [nothing]"), "exp_result_dir: missing"),
        (lambda e, t: t.replace(str(e.codebase), str(e.tmp / "nope"), 1), "exp_codebase_dir: "),
        (
            lambda e, t: t.replace("python虚拟环境路径: ", "python虚拟环境路径: /no/such"),
            "exp_venv_exe: /no/such",
        ),
        (lambda e, t: t.replace("configs/good.yaml", "configs/absent.yaml", 1), "does not exist"),
        (
            lambda e, t: t.replace(
                "实验配置文件路径: configs/good.yaml", "实验配置文件路径: /etc/hostname"
            ),
            "lies outside exp_codebase_dir",
        ),
        (
            lambda e, t: t.replace(
                "实验配置文件路径: configs/good.yaml", "实验配置文件路径: configs/bad.yaml"
            ),
            "is not valid YAML",
        ),
        (
            lambda e, t: t.replace(str(e.tmp / "results" / "good"), "/proc/1/nope"),
            "cannot create /proc/1/nope",
        ),
        (
            lambda e, t: t.replace(str(e.tmp / "results" / "good"), "relative/dir"),
            "not an absolute path",
        ),
        (
            lambda e, t: t.replace("运行时间不超过 2m", "运行时间不超过 a while"),
            "exp_max_time: no duration",
        ),
    ],
)
def test_each_problem_is_named(env: Env, mutate: object, needle: str) -> None:
    (env.codebase / "configs" / "bad.yaml").write_text("model: {{MODEL_PATH}}\n  bad: [\n")
    text = env.blueprint("good").read_text()
    assert callable(mutate)
    code, out = _lint(env, mutate(env, text))
    assert code == 2
    assert needle in out, out


def test_venv_not_executable(env: Env) -> None:
    fake = env.tmp / "python"
    fake.write_text("")
    os.chmod(fake, 0o644)
    text = (
        env.blueprint("good")
        .read_text()
        .replace("python虚拟环境路径: ", f"python虚拟环境路径: {fake}#")
    )
    text = "\n".join(
        ln if "exp_venv_exe" not in ln else f"- [exp_venv_exe] python虚拟环境路径: {fake}"
        for ln in text.splitlines()
    )
    code, out = _lint(env, text)
    assert code == 2 and "not an executable file" in out


def test_result_dir_with_earlier_flag(env: Env) -> None:
    result = env.tmp / "results" / "good"
    result.mkdir()
    (result / "finish.flag").write_text("{}")
    code, out = _lint(env, env.blueprint("good").read_text())
    assert code == 2 and "already holds finish.flag" in out


def test_real_agentjet_template_is_invalid_yaml(env: Env) -> None:
    """The deep_finance templates hold `{{MODEL_PATH}}` placeholders: not YAML until filled."""
    (env.codebase / "configs" / "tpl.yaml").write_text(
        "ajet:\n  model:\n    path: {{MODEL_PATH}}\n"
    )
    text = env.blueprint("good").read_text().replace("configs/good.yaml", "configs/tpl.yaml")
    code, out = _lint(env, text)
    assert code == 2 and "is not valid YAML" in out


def test_a_config_too_large_to_be_one_is_not_read(env: Env) -> None:
    """A YAML config is read whole and parsed whole: one larger than 16 MiB (a data file
    named by mistake) is refused unread, saying its size, by lint and the daemon alike."""
    from ajetd.core.limits import CONFIG_MAX_BYTES

    big = env.codebase / "configs" / "big.yaml"
    with big.open("w") as handle:
        handle.write("ajet: {}\n")
        handle.truncate(CONFIG_MAX_BYTES + 1)
    text = env.blueprint("good").read_text().replace("configs/good.yaml", "configs/big.yaml")
    code, out = _lint(env, text)
    assert code == 2 and f"{big} is {CONFIG_MAX_BYTES + 1} bytes, more than a config's" in out


def test_missing_file_is_a_usage_error(env: Env) -> None:
    assert env.cli("lint", str(env.tmp / "absent.md")).returncode == 2


def test_venv_folder_is_accepted_for_its_python(env: Env) -> None:
    venv = env.tmp / "v"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(PYTHON)
    text = "\n".join(
        ln if "exp_venv_exe" not in ln else f"- [exp_venv_exe] python虚拟环境路径: {venv}"
        for ln in env.blueprint("good").read_text().splitlines()
    )
    path = env.tmp / "v.md"
    path.write_text(text)
    data = json.loads(env.cli("lint", str(path), "--json").stdout)
    assert data["ok"] is True, data


@pytest.mark.parametrize(
    "body",
    # (a plain 2020-02-30 is text, as OmegaConf reads it: no timestamps; tagged, it is built)
    ["when: !!timestamp 2020-02-30\n", "x: " + "[" * 3000 + "]" * 3000 + "\n", "n: !!int ''\n"],
    ids=["bad date", "deep nesting", "empty int"],
)
def test_a_config_pyyaml_cannot_build_is_named(env: Env, body: str) -> None:
    """PyYAML raised ValueError / RecursionError here: a traceback from lint, "internal
    error" from the daemon."""
    config = env.codebase / "broken.yaml"
    config.write_text(body)
    code, out = _lint(env, env.blueprint("broken", config=str(config)).read_text())
    assert code == 2 and "Traceback" not in out, out
    assert f"exp_yaml_path: {config} is not valid YAML" in out, out


@pytest.mark.parametrize(
    ("prefix", "kept"),
    [
        ("SWANLAB_API_KEY=k123 ", True),  # bash's own `K=V command`
        ("export SWANLAB_API_KEY='k 1' && ", True),
        ("cd . ; env SWANLAB_API_KEY=k123 ", True),
        ("SWANLAB_MODE=offline ", True),  # swanlab's offline mode needs no key
        ("SWANLAB_API_KEY= ", False),  # set, but empty
        ("echo SWANLAB_API_KEY=k123 && ", False),  # an argument, not an assignment
        ("", False),
        # passed on from a shell that has none (the lint's environment has no SWANLAB_*):
        # the shell's expansion is empty, not the text `$SWANLAB_API_KEY`
        ("SWANLAB_API_KEY=$SWANLAB_API_KEY ", False),
        ("export SWANLAB_API_KEY=${SWANLAB_API_KEY} && ", False),
        ("SWANLAB_API_KEY=${SWANLAB_API_KEY:-} ", False),
        ("SWANLAB_API_KEY=$(cat /nonexistent) ", False),
    ],
)
def test_a_key_the_launch_command_sets_keeps_the_users_logger(
    env: Env, prefix: str, kept: bool
) -> None:
    """`SWANLAB_API_KEY=... python -m ajet.launcher ...` sets the key for the launcher: the
    preflight said 'SWANLAB_API_KEY is not set' and switched the user's logger to tensorboard."""
    config = env.config("keyed")
    path = env.codebase / config
    path.write_text(path.read_text().replace("logger: console", "logger: swanlab"))
    command = f"{prefix}python -m fakejet.launcher --conf {config}"
    for name in [k for k in env.vars if k.startswith("SWANLAB")]:
        del env.vars[name]
    out = env.cli("lint", str(env.blueprint("keyed", config=config, command=command)), "--json")
    data = json.loads(out.stdout)
    assert data["ok"] is True, data
    changes = " ".join(data["blueprint"].get("config_changes", []))
    assert ("logger: swanlab → tensorboard" not in changes) is kept, changes


def test_a_command_over_several_lines_is_shown_as_such(env: Env) -> None:
    """lint printed the first line of a multi-line command alone (here its comment), as if
    that were the command."""
    config = env.config("lines")
    bp = env.blueprint("lines", config=config, command="MULTI")
    command = f"# train\npython -m fakejet.launcher \\\n  --conf {config}"
    bp.write_text(
        bp.read_text().replace(
            "- [exp_launch_command] 执行训练的命令: `MULTI`\n",
            f"\n## [exp_launch_command]\n```bash\n{command}\n```\n\n## 其他实验相关信息\n",
        )
    )
    out = env.cli("lint", str(bp))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "  launch_command: # train (+2 more lines)\n" in out.stdout


@pytest.mark.parametrize(
    ("conf", "ok"),
    [
        ("configs/other.yaml", False),  # another config than exp_yaml_path runs
        ("./configs/named.yaml", True),  # the same file, spelt another way
        ("{codebase}/configs/named.yaml", True),
        ("configs/absent.yaml", False),  # no such file: the program would stop at once
    ],
)
def test_a_command_running_another_config_than_exp_yaml_path_is_refused(
    env: Env, conf: str, ok: bool
) -> None:
    """The preflight read exp_yaml_path's config (its val file, its logger) while the command
    ran another: the run 'succeeded' with no metrics, its validation in a file never read."""
    named, other = env.config("named"), env.config("other")
    conf = conf.format(codebase=env.codebase)
    for command in (
        f"python -m fakejet.launcher --conf {conf}",  # AgentJet's flag, an `ajet:` config
        f"uv run examples/run_grpo.py --config {conf}",  # NeMo-RL's
    ):
        out = env.cli("lint", str(env.blueprint("mismatch", config=named, command=command)))
        assert (out.returncode == 0) is ok, out.stdout + out.stderr
        flag = command.split()[-2]
        if not ok and "absent" in conf:
            path = env.codebase / conf
            assert (
                f"exp_launch_command: {flag} {conf} names {path}, which does not exist (the"
                in out.stderr
            )
        elif not ok:
            assert f"exp_launch_command: {flag} {other} is not exp_yaml_path" in out.stderr
    # another program's own --config is its business: ajetd reads no config of it
    mine = f"python train.py --config {other}"
    path = env.codebase / named
    path.write_text("model: {lr: 1}\n")
    out = env.cli("lint", str(env.blueprint("own", config=named, command=mine)))
    assert "is not exp_yaml_path" not in out.stdout + out.stderr
    # a leading literal `cd` is followed (walk93 F2): `--conf other.yaml` from configs/ is
    # configs/other.yaml, not exp_yaml_path; where it goes is not known (`cd $D`), not judged
    named, other = env.config("named"), env.config("other")  # AgentJet's again
    cd = f"cd configs && python -m fakejet.launcher --conf {other.split('/')[1]}"
    out = env.cli("lint", str(env.blueprint("cd", config=named, command=cd)))
    assert out.returncode == 2 and "is not exp_yaml_path" in out.stderr, out.stderr
    cd = f"cd configs && python -m fakejet.launcher --conf ./{named.split('/')[1]}"
    out = env.cli("lint", str(env.blueprint("cd", config=named, command=cd)))
    assert out.returncode == 0, out.stderr
    cd = f"cd $D && python -m fakejet.launcher --conf {other.split('/')[1]}"
    out = env.cli("lint", str(env.blueprint("cd", config=named, command=cd)))
    assert "is not exp_yaml_path" not in out.stderr
    # the same spelling on both sides, two files: the refusal names each as resolved, and
    # the `cd` that makes them two (was "--conf configs/x.yaml is not exp_yaml_path
    # (configs/x.yaml)")
    (env.codebase / "sub" / "configs").mkdir(parents=True)
    (env.codebase / "sub" / named).write_text((env.codebase / named).read_text())
    cd = f"cd sub && python -m fakejet.launcher --conf {named}"
    out = env.cli("lint", str(env.blueprint("cd", config=named, command=cd)))
    assert out.returncode == 2 and f"--conf {named} is not exp_yaml_path" in out.stderr
    said = " ".join(out.stderr.split())  # as the terminal wraps it: read as one line
    assert f"names {env.codebase / 'sub' / named} " in said, said
    assert f"exp_yaml_path {env.codebase / named};" in said, said
    assert f"runs in {env.codebase / 'sub'} (`cd sub` from exp_codebase_dir" in said, said


def test_a_swarm_client_without_its_server_is_warned(env: Env) -> None:
    """Seed 001: a swarm client needs its server started first. A YAML with
    `enable_swarm_mode: True` and no `[ajetd] swarm:` got no word: ajetd starts no server, and
    the client failed on a refused connection."""
    config = env.config("client")
    path = env.codebase / config
    path.write_text(path.read_text().replace("ajet:\n", "ajet:\n  enable_swarm_mode: true\n", 1))
    assert "enable_swarm_mode: true" in path.read_text()
    bp = env.blueprint("client", config=config, command="python agent_roll.py")
    data = json.loads(env.cli("lint", str(bp), "--json").stdout)
    warned = " ".join(data["blueprint"]["warnings"])
    assert data["ok"] and "enable_swarm_mode" in warned and "[ajetd] swarm" in warned
    with_server = env.blueprint(
        "client2", config=config, command="python agent_roll.py", ajetd="swarm: {port: 10123}"
    )
    warned = " ".join(
        json.loads(env.cli("lint", str(with_server), "--json").stdout)["blueprint"]["warnings"]
    )
    assert "enable_swarm_mode" not in warned
    server = env.blueprint("server", config=config, command=f"ajet-swarm start --conf {config}")
    warned = " ".join(
        json.loads(env.cli("lint", str(server), "--json").stdout)["blueprint"]["warnings"]
    )
    assert "enable_swarm_mode" not in warned  # the server itself
    # the config as it runs: its yaml_overrides turn swarm mode off, or on
    for name, ajetd, file_says, expected in (
        ("off", "yaml_overrides: [ajet.enable_swarm_mode=false]", config, False),
        ("on", "yaml_overrides: [ajet.enable_swarm_mode=true]", env.config("plain"), True),
    ):
        bp = env.blueprint(name, config=file_says, ajetd=ajetd)
        data = json.loads(env.cli("lint", str(bp), "--json").stdout)
        assert data["ok"], data
        assert ("enable_swarm_mode" in " ".join(data["blueprint"]["warnings"])) is expected, name


def test_a_key_passed_on_is_the_value_of_what_it_passes() -> None:
    """`K=$K` and `K=${K}` are the variable's value where it is set (here: the daemon's or
    `[ajetd] env:`), unset where it is not; an expansion ajetd cannot know leaves it as it
    was; a literal value is the value."""
    base = {"HOME": "/h", "KEY": "from-daemon"}
    assert launch_env(base, {}, "K=$KEY python x.py")["K"] == "from-daemon"
    assert launch_env(base, {"O": "opt"}, "export K=${O} && python x.py")["K"] == "opt"
    assert "K" not in launch_env(base, {}, "K=$NOPE python x.py")
    assert launch_env({"K": "old"}, {}, "K=$(cat key) python x.py")["K"] == "old"
    assert "K" not in launch_env(base, {}, "K=${KEY:-x} python x.py")
    # the words are read with their quotes removed: a quoted `$` reads as an expansion too
    assert launch_env(base, {}, "K='$literal' python x.py").get("K") is None


def test_yaml_overrides_are_checked_against_the_config_and_its_conf(env: Env) -> None:
    """`[ajetd] yaml_overrides` (a campaign's overrides for AgentJet's launcher come this way)
    are set in the config's copy: lint lists each change (the value before, in the file), and
    names what cannot be carried out: a section on the way that is a value, a section set to
    a value, a command whose --conf is not exp_yaml_path or that has none."""
    overrides = (
        "yaml_overrides: [ajet.trainer_common.test_freq=1, ajet.rollout.temperature=0.7, "
        "ajet.trainer_common.optim.lr=2e-6, 'ajet.trainer_common.logger=[console, tensorboard]']"
    )
    bp = env.blueprint("ov", ajetd=overrides)
    data = json.loads(env.cli("lint", str(bp), "--json").stdout)
    assert data["ok"] is True, data
    assert data["blueprint"]["config_changes"][:4] == [  # values as the copy writes them
        "ajet.trainer_common.test_freq: 2 → 1 (yaml_overrides)",
        "ajet.rollout.temperature: (not in the file) → 0.7 (yaml_overrides)",
        "ajet.trainer_common.optim.lr: (not in the file) → 2e-6 (yaml_overrides)",
        "ajet.trainer_common.logger: console → [console, tensorboard] (yaml_overrides)",
    ]
    assert "config change (in a copy beside the original): ajet.trainer_common.optim.lr" in (
        env.cli("lint", str(bp)).stdout
    )
    assert data["blueprint"]["config_verdict"] == "patched"
    for ajetd, command, needle in (
        (
            "yaml_overrides: [ajet.execute_test.x=1]",
            None,
            "yaml_overrides[1] 'ajet.execute_test.x=1': exp_yaml_path: ajet.execute_test "
            "must be a mapping, not False",
        ),
        (
            "yaml_overrides: [ajet.trainer_common=3]",
            None,
            "exp_yaml_path: ajet.trainer_common is a section; set one of its keys",
        ),
        (
            "yaml_overrides: [a=1]",
            "python -m ajet.launcher",
            "yaml_overrides: the launch command passes no --conf",
        ),
        (
            "yaml_overrides: [a=1]",
            "python -m ajet.launcher --conf $CONF",
            "yaml_overrides: ajetd cannot tell which file --conf $CONF is (a shell variable",
        ),
    ):
        path = env.blueprint("ov", ajetd=ajetd, command=command)
        out = env.cli("lint", str(path))
        assert out.returncode == 2 and needle in out.stdout + out.stderr, (needle, out)


@pytest.mark.parametrize(
    ("gpus_here", "asked", "needle"),
    [
        (0, "gpus: 1", "gpus: 1 asks for more GPUs than this machine has (0 visible)"),
        (2, "gpus: 4", "gpus: 4 asks for more GPUs than this machine has (2 visible)"),
        (2, "gpus: [1, 3]", "names GPU 3, which this machine does not have (visible: [0, 1])"),
    ],
)
def test_gpus_this_machine_cannot_give_are_named(
    env: Env, gpus_here: int, asked: str, needle: str
) -> None:
    """What the daemon would fail at launch (`placement.never`) lint says first, with the GPUs
    the same probe shows (the daemon's and the CLI's `AJETD_FAKE_GPUS` here)."""
    env.fake_gpus(gpus_here)
    code, out = _lint(env, env.blueprint("gpu", ajetd=asked).read_text())
    assert code == 2, out
    assert needle in out and "the daemon would fail this run" in out, out


def test_gpus_the_machine_has_pass(env: Env) -> None:
    env.fake_gpus(2)
    for asked in ("gpus: 2", "gpus: [1]", "gpus: all", "gpus: 0"):
        code, out = _lint(env, env.blueprint("gpu", ajetd=asked).read_text())
        assert code == 0, (asked, out)
    env.fake_gpus(0)  # no GPU: `all` and `0` leave CUDA_VISIBLE_DEVICES as it is
    for asked in ("gpus: all", "gpus: 0"):
        code, out = _lint(env, env.blueprint("gpu", ajetd=asked).read_text())
        assert code == 0, (asked, out)


def test_yaml_gpu_count_that_disagrees_with_the_machine_is_named(env: Env) -> None:
    """`gpus: all` on a 2-GPU machine gives the run 2; a YAML that asks 4 can never agree."""
    env.fake_gpus(2)
    config = env.config("four")
    path = env.codebase / config
    path.write_text(
        path.read_text().replace("trainer_common:", "trainer_common:\n    n_gpus_per_node: 4", 1)
    )
    code, out = _lint(env, env.blueprint("four", config=config, ajetd="gpus: all").read_text())
    assert code == 2, out
    assert "n_gpus_per_node x nnodes = 4, but the run gets 2 GPU(s)" in out, out


def test_a_quoted_conf_with_a_space_gets_its_fixes(daemon_env: Env) -> None:
    """A walk's `--conf "configs/my cfg.yaml"` was not seen: lint said both "the launch
    command passes no --conf" and "config change (in a copy ...)", and the run ran the
    original unchanged (a logger with no key). The flag's value is read as bash passes it."""
    env = daemon_env
    env.config("my cfg")
    config = env.codebase / "configs" / "my cfg.yaml"
    config.write_text(config.read_text().replace("logger: console", "logger: swanlab"))
    command = 'python -m fakejet.launcher --conf "configs/my cfg.yaml"'
    blueprint = env.blueprint("spaced", config="`configs/my cfg.yaml`", command=command)
    code, out = _lint(env, blueprint.read_text())
    assert code == 0, out
    assert "passes no --conf" not in out
    assert "logger: swanlab → tensorboard" in out
    run_id = env.submit(blueprint)
    assert env.wait_done(run_id)["status"] == "succeeded"
    used = (env.tmp / "results" / "spaced" / "config-used.yaml").read_text()
    assert "logger: tensorboard" in used
    shown = env.status(run_id)["command"]
    assert "--conf 'configs/my cfg.ajetd-" in shown, shown


def test_a_program_that_cannot_run_here_is_warned(env: Env) -> None:
    """A walk's `uv run examples/run_grpo.py ...` linted ok with no uv installed, and the run
    failed at once with 127. The command's first program is looked for in the venv's bin and
    on PATH, a path to a file beside the codebase is checked: a warning (the command may make
    it available itself; the daemon's PATH is checked again at admission)."""
    script = env.codebase / "train.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    cases = {
        "uv-not-here run train.py --conf configs/w.yaml": "uv-not-here is not in the venv",
        "FOO=1 ./missing.sh --conf configs/w.yaml": "./missing.sh does not exist",
        "./train.sh --conf configs/w.yaml": "./train.sh is not executable",
    }
    for command, said in cases.items():
        code, out = _lint(env, env.blueprint("w", command=command).read_text())
        assert code == 0 and said in out, (command, out)
    script.chmod(0o755)
    for command in (
        "./train.sh --conf configs/w.yaml",
        "python -m fakejet.launcher --conf configs/w.yaml",
        "source x/activate && uv-not-here run y",  # what follows `source` is the shell's
        "cd sub; tmux-not-here",
        "env FOO=1 python -m x",
        "exit 3",
        "$LAUNCHER --conf configs/w.yaml",
    ):
        code, out = _lint(env, env.blueprint("w", command=command).read_text())
        assert "exp_launch_command:" not in out, (command, out)


def test_a_binary_file_is_said_to_be_no_text_not_seven_parts_missing(env: Env) -> None:
    """A binary file (or one in an encoding that is not read) as a blueprint: one line saying
    it is not UTF-8 text, from `lint` and from intake's parser alike (walk 30, 4)."""
    from ajetd.core.blueprint import parse_blueprint_bytes
    from ajetd.core.errors import BlueprintError

    path = env.tmp / "bin.md"
    path.write_bytes(bytes(range(256)) * 8)
    out = env.cli("lint", str(path))
    said = out.stdout + out.stderr
    assert out.returncode != 0 and "not UTF-8 text" in said and "missing" not in said, said
    with pytest.raises(BlueprintError, match="not UTF-8 text"):
        parse_blueprint_bytes(path.read_bytes())


def test_a_val_file_the_program_cannot_write_is_named(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """walk98 F15: a read-only checkout (another user's, a mount) where AgentJet's relative
    val file lands: lint said ok, the program would fail at its first validation, after
    loading its model. Read-only here is a mount (root writes anywhere else)."""
    frozen = tmpfs(env.tmp / "frozen", "1m")
    (frozen / "made").mkdir()
    remounted = subprocess.run(
        ["mount", "-o", "remount,ro", str(frozen)], capture_output=True, text=True, check=False
    )
    if remounted.returncode != 0:
        pytest.skip(f"cannot remount read-only here: {remounted.stderr.strip()}")
    key = "ajet.trainer_common.val_print_to_markdown_file_path"
    for val in (frozen / "saved_val_result" / "x.md", frozen / "made" / "x.md"):
        ajetd = f'yaml_overrides: ["{key}={val}"]'
        code, out = _lint(env, env.blueprint("ro", ajetd=ajetd).read_text())
        assert code == 2, out
        assert f"{key}: the val file {val} cannot be written" in out, out
        assert f"{val.parent if val.parent.exists() else frozen} is not writable" in out, out
    ok = env.tmp / "mine" / "x.md"
    code, out = _lint(env, env.blueprint("rw", ajetd=f'yaml_overrides: ["{key}={ok}"]').read_text())
    assert code == 0, out
