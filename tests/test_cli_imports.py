"""The client commands start fast: `submit`, `status` and `wait` import only what they use.

Checked by the import set (`python -X importtime`), not by timing: what a command imports is
stable, its start-up time on a shared 2-core machine is not. The figures are in
docs/benchmarks.md (`bench/peers.py`).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from ajetd.adapters.store import Home
from ajetd.core.model import Run, State, Status
from conftest import PYTHON, Env

# What only the daemon needs: tmux and process handling, file watching, GPUs, YAML, the
# diagnosis catalogue and the daemon's own modules.
HEAVY = (
    "libtmux",
    "watchdog",
    "psutil",
    "pynvml",
    "yaml",
    "ahocorasick_rs",
    "ajetd.daemon.loop",
    "ajetd.adapters.tmux",
    "ajetd.adapters.procs",
    "ajetd.daemon.trials",
    "ajetd.diagnosis.findings",
    "ajetd.diagnosis.stream",
    "ajetd.diagnosis.catalogue",
    "ajetd.daemon.admission",
    "ajetd.core.policy",
    "ajetd.core.options",  # the [ajetd] options' parser: 20 ms of imports
    "ajetd.core.trialscript",  # trial scripts written and read back (a damaged record's rebuild)
)


def imported(env: Env, *args: str) -> set[str]:
    """The modules `ajetd ARGS` imports, as `-X importtime` lists them."""
    out = subprocess.run(
        [PYTHON, "-X", "importtime", "-m", "ajetd", *args],
        env=env.vars,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # 3: `campaign wait` of a campaign completed with no best
    assert out.returncode in (0, 1, 3), out.stderr[-2000:]
    return {
        line.rsplit("|", 1)[1].strip()
        for line in out.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.fixture
def ended_run(env: Env) -> str:
    """A finished run on record, written as the daemon would."""
    home = Home(env.home)
    home.ensure()
    now = time.time()
    run = Run(
        run_id="imp001",
        source="bp.md",
        submitted_at=now,
        purpose="imports",
        state=State.DONE,
        status=Status.SUCCEEDED,
        ended_at=now,
    )
    home.run_dir(run.run_id).mkdir(parents=True)
    home.save_run(run)
    return run.run_id


def test_client_commands_import_nothing_heavy(env: Env, ended_run: str, tmp_path: Path) -> None:
    blueprint = tmp_path / "bp.md"
    blueprint.write_text("## [exp_purpose]\nx\n")
    for args in (
        ("submit", str(blueprint)),
        ("status",),
        ("status", "--json"),
        ("status", ended_run),
        ("wait", ended_run),
        ("wait", ended_run, "--json"),
    ):
        modules = imported(env, *args)
        assert "ajetd.adapters.store" in modules, args  # the listing is real
        assert heavy_in(modules) == [], (args, heavy_in(modules))


def test_submit_reads_no_run_records(env: Env, tmp_path: Path) -> None:
    """`ajetd submit FILE`, what scripts and agents call most, only writes into the inbox:
    no command-line library and no run record (the records' dataclasses were a third of its
    start-up: 124 -> 78 ms p50 on the 2-core VM, docs/benchmarks.md)."""
    blueprint = tmp_path / "bp.md"
    blueprint.write_text("## [exp_purpose]\nx\n")
    modules = imported(env, "submit", str(blueprint))
    assert "ajetd.cli.submit" in modules
    record = ("click", "ajetd.core.model", "ajetd.adapters.runrecords", "ajetd.core.blueprint")
    assert sorted(m for m in record if m in modules) == []
    # nor the option parsers (durations' patterns, difflib), for the record store's `show`:
    # 20 -> 9 ms of its own imports with them gone, and `secrets`/`tempfile`'s (hmac, random)
    parsers = ("ajetd.core.values", "ajetd.core.durations", "difflib")
    assert sorted(m for m in parsers if m in modules) == []


def test_the_import_check_sees_heavy_modules(env: Env) -> None:
    """The check above would notice: a daemon-side command's imports show up in it."""
    assert "psutil" in heavy_in(imported(env, "gpus", "--json"))
