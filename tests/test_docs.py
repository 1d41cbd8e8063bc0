"""The documentation's commands, run as written: README walkthrough, agents/SKILL.md, TEMPLATE."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from ajetd.blueprint import parse_blueprint
from conftest import Env, wait_for

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


def test_readme_walkthrough_runs(env: Env) -> None:
    block = _bash_blocks(ROOT / "README.md")[1]
    demo_home, demo_result = env.tmp / "demo-home", env.tmp / "demo-result"
    script = (
        block.replace("pip install -e .\n", "")  # installed already
        .replace("/tmp/ajetd-demo-result", str(demo_result))
        .replace("/tmp/ajetd-demo", str(demo_home))
        .replace("/tmp/smoke.md", str(env.tmp / "smoke.md"))
        .replace("ajetd daemon &", "ajetd daemon & DAEMON=$!")
        .replace('ajetd attach "$RUN"', "true  # attach: see test_attach_gives_a_real_client")
    )
    script = f"set -e\ncd {ROOT}\n{script}\nkill $DAEMON; wait $DAEMON || true\n"
    out = subprocess.run(
        ["bash", "-c", script],
        env=env.vars,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads((demo_result / "finish.flag").read_text())["status"] == "succeeded"
    assert "## Validation metrics" in out.stdout


def test_skill_commands_run(daemon_env: Env) -> None:
    env = daemon_env
    result = env.tmp / "results" / "skill"
    (env.tmp / "blueprint.md").write_text(env.blueprint("skill", result=str(result)).read_text())
    script = "set -e\n" + _bash_blocks(ROOT / "agents" / "SKILL.md")[0]
    out = subprocess.run(
        ["bash", "-c", script],
        cwd=env.tmp,
        env={**env.vars, "RESULT_DIR": str(result)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "wait exit 0" in out.stdout
    assert '"status": "succeeded"' in out.stdout
    wait_for((result / "results.md").exists)


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
