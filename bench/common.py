"""Shared set-up for the benchmarks: a private home, tmux socket, daemon and blueprints."""

from __future__ import annotations

import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psutil

import ajetd

PYTHON = sys.executable

# Every Python program a benchmark starts (the daemon, `ajetd submit`, supervisorctl) runs from
# its bytecode, as an installed one does (pip compiles at install): where the environment says
# PYTHONDONTWRITEBYTECODE (this project's development shells do), an editable install would
# compile each of its modules at every start (4-11 ms more for `ajetd submit` on the 2-core VM).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
compileall.compile_dir(str(Path(ajetd.__file__).parent), quiet=1)


def wait(cond: Callable[[], object], timeout: float = 60.0, step: float = 0.002) -> object:
    """Poll `cond` until it gives something true (returned) or the deadline passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(step)
    raise TimeoutError("benchmark condition not met")


# e.g. AJETD_BENCH_PY_ARGS="-m cProfile -o /tmp/daemon.prof": the daemon under a profiler (it
# writes the profile when the bench stops it), to see where a figure's time goes
PROFILE = os.environ.get("AJETD_BENCH_PY_ARGS", "").split()


class Bench:
    def __init__(self, *daemon_args: str, extra_env: dict[str, str] | None = None) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="ajetd-bench-"))
        self.home = self.tmp / "home"
        self.codebase = self.tmp / "codebase"
        (self.codebase / "configs").mkdir(parents=True)
        (self.codebase / "configs" / "c.yaml").write_text("ajet: {trainer_common: {}}\n")
        self.socket = f"ajetd-bench-{uuid.uuid4().hex[:8]}"
        self.env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        self.env.update(AJETD_HOME=str(self.home), AJETD_TMUX_SOCKET=self.socket)
        self.env.update(extra_env or {})
        self.daemon = subprocess.Popen(
            [PYTHON, *PROFILE, "-m", "ajetd", "daemon", "--log-level", "WARNING", *daemon_args],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=open(self.tmp / "daemon.log", "w"),  # noqa: SIM115
        )
        self.wait((self.home / "daemon.json").exists, 30)
        self.n = 0

    wait = staticmethod(wait)  # the module's wait, also as bench.wait

    def blueprint(self, command: str, max_time: str = "1h") -> str:
        self.n += 1
        return (
            f"## [exp_purpose]\nbench {self.n}\n## [exp_codebase_dir]\n{self.codebase}\n"
            f"## [exp_venv_exe]\n{PYTHON}\n## [exp_yaml_path]\nconfigs/c.yaml\n"
            f"## [exp_launch_command]\n`{command}`\n"
            f"## [exp_result_dir]\n{self.tmp / 'results' / str(self.n)}\n"
            f"## [exp_max_time]\n{max_time}\n## [ajetd]\nkeep_session: 0s\n"
        )

    def drop(self, text: str) -> tuple[str, float]:
        """Rename a blueprint into the inbox atomically; return its name and the drop time."""
        name = f"b{self.n}.md"
        tmp = self.home / "inbox" / f".{name}"
        tmp.write_text(text)
        t0 = time.time()
        tmp.rename(self.home / "inbox" / name)
        return name, t0

    def runs(self) -> list[dict]:  # type: ignore[type-arg]
        out = []
        for state in (self.home / "runs").glob("*/state.json"):
            try:
                out.append(json.loads(state.read_text()))
            except ValueError:
                continue
        return out

    def done_run(self, timeout: float) -> dict:  # type: ignore[type-arg]
        """The record of the latest blueprint's run once it has ended."""
        purpose = f"bench {self.n}"
        return self.wait(  # type: ignore[no-any-return]
            lambda: next(
                (r for r in self.runs() if r["purpose"] == purpose and r["state"] == "done"), None
            ),
            timeout,
        )

    def close(self) -> None:
        """Stop the daemon, the runs' tmux server, and whatever the runs left (a run's processes
        outlive the daemon by design, so a benchmark must end them itself)."""
        self.daemon.terminate()
        self.daemon.wait(timeout=30)
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, check=False)
        mine = str(self.tmp)
        for proc in psutil.process_iter():
            try:
                if proc.environ().get("AJETD_RESULT_DIR", "").startswith(mine):
                    proc.kill()
            except psutil.Error:
                continue


def summary(name: str, samples: list[float]) -> str:
    samples = sorted(samples)
    p99 = samples[min(len(samples) - 1, round(0.99 * (len(samples) - 1)))]
    return (
        f"{name}: n={len(samples)} p50={statistics.median(samples) * 1000:.1f} ms "
        f"p99={p99 * 1000:.1f} ms max={samples[-1] * 1000:.1f} ms"
    )
