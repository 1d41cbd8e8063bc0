"""The documentation's commands, run as written: README walkthrough, agents/SKILL.md, TEMPLATE."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import click
import pytest

from ajetd.core.blueprint import parse_blueprint
from conftest import PYTHON, Env, cli_commands

ROOT = Path(__file__).parent.parent


def _bash_blocks(path: Path) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", path.read_text(), re.DOTALL)


def test_template_is_a_valid_blueprint() -> None:
    bp = parse_blueprint((ROOT / "blueprints" / "TEMPLATE.md").read_text())
    assert bp.max_time_s == 7200 and bp.launch_command.startswith("python -m ajet.launcher")
    assert bp.options.env == {"NCCL_DEBUG": "WARN"} and bp.options.keep_session_s == 3600


def test_readme_first_lines_are_the_two_commands() -> None:
    first = _bash_blocks(ROOT / "README.md")[0]
    assert "pip install . && ajetd daemon" in first
    assert "python3 -m pytest -q" in first
    assert "python3 -m pytest -q" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.pictures
def test_readme_walkthrough_runs(env: Env) -> None:
    block = _bash_blocks(ROOT / "README.md")[1]
    demo_home, demo_result = env.tmp / "demo-home", env.tmp / "demo-result"
    script = (
        block.replace("pip install -e .\n", "")  # installed already
        .replace("/tmp/ajetd-demo-result", str(demo_result))
        .replace("/tmp/ajetd-demo", str(demo_home))
        .replace("/tmp/smoke.md", str(env.tmp / "smoke.md"))
        .replace('ajetd attach "$RUN"', "true  # attach: see test_attach_gives_a_real_client")
    )
    assert "ajetd daemon --detach" in script
    try:
        out = _bash(f"set -e\ncd {ROOT}\n{script}", env, ROOT)
    finally:
        subprocess.run(
            [PYTHON, "-m", "ajetd", "shutdown"],
            env={**env.vars, "AJETD_HOME": str(demo_home)},
            capture_output=True,
            check=False,
        )
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads((demo_result / "finish.flag").read_text())["status"] == "succeeded"
    assert "## Validation metrics" in out.stdout and "![validation metrics by step]" in out.stdout
    assert (demo_result / "curves.png").exists()


def _bash(script: str, env: Env, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`bash -c script` with this Python's `ajetd` first on PATH (as an installed one is)."""
    path = f"{Path(PYTHON).parent}:{env.vars.get('PATH', '')}"
    return subprocess.run(
        ["bash", "-c", script],
        cwd=cwd,
        env={**env.vars, "PATH": path},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_skill_command_block_runs(env: Env) -> None:
    """Every bash block of agents/SKILL.md, in order, as one script against the daemon it
    starts itself; every yaml block is a valid `[ajetd]` part."""
    skill = ROOT / "agents" / "SKILL.md"
    for block in re.findall(r"```yaml\n(.*?)```", skill.read_text(), re.DOTALL):
        parse_blueprint(env.blueprint("yaml", ajetd=block).read_text())  # raises if invalid
    blocks = _bash_blocks(skill)
    opened = re.findall(r"^```(\w+)$", skill.read_text(), re.MULTILINE)
    assert set(opened) == {"bash", "yaml"} and opened.count("bash") == len(blocks) >= 4
    result = env.tmp / "results" / "skill"
    blueprint = env.blueprint("skill", result=str(result), ajetd="gpus: 0")
    (env.tmp / "blueprint.md").write_text(blueprint.read_text())
    script = "set -e\n" + "\n".join(blocks)
    try:
        out = _bash(script, env, env.tmp)
    finally:
        env.cli("shutdown")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ajetd daemon started: pid" in out.stdout
    assert "wait exit 0" in out.stdout
    assert '"status": "succeeded"' in out.stdout  # finish.flag
    assert "## Why it ended" in out.stdout and "| step |" in out.stdout
    assert "## Trial 1" in out.stdout and "no known failure found" in out.stdout
    assert "SUCCEEDED" in out.stdout and "already ended" in out.stdout
    assert "stopped; runs go on in tmux" in out.stdout
    assert json.loads((env.tmp / "outcome.json").read_text())["result_dir"] == str(result)


def test_the_templates_run_modes_parse_once_uncommented() -> None:
    text = (ROOT / "blueprints" / "TEMPLATE.md").read_text()
    for key in ("swarm", "ssh", "slurm"):
        line = next(x for x in text.splitlines() if x.startswith(f"# {key}: "))
        options = parse_blueprint(text.replace(line, line[2:])).options
        assert getattr(options, key) is not None, key
    stages = [x for x in text.splitlines() if x.startswith(("# stages:", "#   - {name"))]
    uncommented = text
    for line in stages:
        uncommented = uncommented.replace(line, line[2:])
    assert [s.name for s in parse_blueprint(uncommented).options.stages] == ["train", "eval"]


def _synopses() -> list[str]:
    """README's command table, one synopsis each (`ajetd campaign list [--json]` / `stop ID`
    is two: `ajetd campaign list [--json]` and `ajetd campaign stop ID`)."""
    found = []
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.startswith("| `ajetd "):
            forms = line.split(" | ")[0].removeprefix("| `").removesuffix("`").split("` / `")
            head = forms[0].split()
            parent = " ".join(head[:2]) if head[1] == "campaign" else "ajetd"
            found += [f if f.startswith("ajetd ") else f"{parent} {f}" for f in forms]
    return found


def test_readme_table_names_every_option_a_program_relies_on() -> None:
    """A blind program learns a command's machine-facing options from README's table: every
    `--json`, `--timeout` and `--no-wait` a command takes is in its synopsis, and no synopsis
    offers one the command refuses (an agent reading `wait RUN [--timeout S]` never learnt
    `--json`)."""
    synopses = _synopses()
    machine = ("--json", "--timeout", "--no-wait")
    wrong = []
    for name, command in cli_commands():
        mine = [f for f in synopses if f == name or f.startswith(name + " ")]
        if not mine or isinstance(command, click.Group):
            continue
        takes = {o for p in command.params if isinstance(p, click.Option) for o in p.opts}
        shown = {o for o in machine if any(re.search(re.escape(o) + r"\b", f) for f in mine)}
        wrong += [f"{name}: {o} not in README" for o in machine if o in takes - shown]
        wrong += [f"{name}: README offers {o}" for o in shown - takes]
    assert not wrong, wrong


def test_readme_says_what_each_json_prints() -> None:
    """Each row of README's command table that offers `--json` says what it prints (or where
    its fields are listed): `lint --json`, `campaign list --json`, `campaign add --json` and
    `campaign wait --json` did not."""
    silent = [
        line.split(" | ")[0]
        for line in (ROOT / "README.md").read_text().splitlines()
        if line.startswith("| `ajetd ")
        and "--json" in line.split(" | ")[0]
        and "--json" not in line.split(" | ", 1)[1]
    ]
    assert not silent, silent
