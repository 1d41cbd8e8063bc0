"""agents/CAMPAIGN.md's commands, run as written, in order, against a real daemon: the skill
an agent follows cannot drift from what ajetd does."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from test_campaign_live import CONFIG, committed_baseline

from conftest import Env

ROOT = Path(__file__).parent.parent


def test_campaign_skill_commands_run(daemon_env: Env) -> None:
    env = daemon_env
    committed_baseline(env)
    base = env.blueprint(
        "skill-base",
        config=CONFIG,
        command=f"python examples/run_grpo.py --config {CONFIG}",
        ajetd="max_trials: 1",
    )
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "agents" / "CAMPAIGN.md").read_text(), re.S)
    assert len(blocks) == 4
    work = env.tmp / "agent"
    work.mkdir()
    ledger_dir = env.tmp / "campaigns" / "skill"
    out = subprocess.run(
        ["bash", "-c", "set -eo pipefail\n" + "\n".join(blocks)],
        cwd=work,
        env={
            **env.vars,
            "REPO": str(env.codebase),
            "BASE_BLUEPRINT": str(base),
            "CAMPAIGN_DIR": str(ledger_dir),
            "FILE": CONFIG,
            # `ajetd` as installed next to this Python (a venv need not be activated)
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.vars.get('PATH', '')}",
        },
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert re.search(r"^campaign c-[a-z0-9]{6}$", text, re.M)
    assert re.search(r"stop condition not yet met: 1/3 attempted, 1h5\dm remaining", text)
    assert "best baseline 0.38 on autoresearch/my-campaign/baseline at " in text
    assert "experiment 1: wait exit 0" in text
    assert "1 more-steps keep 0.42 autoresearch/my-campaign/more-steps " in text
    assert "stop condition not yet met: 2/3 attempted" in text
    assert "stopped" in text and "more-steps" in text
    ledger = (ledger_dir / "ledger.tsv").read_text().splitlines()
    assert [line.split("\t")[13] for line in ledger[1:]] == ["keep", "keep"]
