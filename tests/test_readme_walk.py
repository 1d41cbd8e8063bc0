"""The README walked as a new user and a coding agent walk it: each command, flag and example
as written, and the neighbours a user tries next, against a real daemon and real tmux.

Each test here stands for a place where ajetd did not do what the README says.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from conftest import Env, wait_for


def _running(env: Env, name: str) -> str:
    """A live run that prints a line now and then and lasts longer than any test."""
    bp = env.blueprint(
        name,
        command="python -c 'import time\nwhile True: print(\"step\", flush=True); time.sleep(1)'",
        ajetd="gpus: 0",
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
