"""Kill the daemon (`kill -9`) at random moments while runs start, fail, are fixed, stop and end,
start it again each time, and check afterwards that nothing was lost or done twice.

Runs of five kinds are submitted (some while the daemon is down): a clean success, an NCCL
error that a relaunch with NVLS off fixes (two trials), a fatal import error (one trial), a
program that runs past its time limit, and a program stopped with `ajetd stop` (sent at a random
moment, the daemon up or down). Meanwhile the daemon is killed with SIGKILL every KILL_EVERY
seconds or so (random) and started again after a random pause. Then it is left alone until
every run has ended, and for every run:
- `state.json` says `done` with the outcome its kind must have;
- `finish.flag` holds one JSON object whose run id, status, exit code and trial count are the
  record's; `results.md` and `trials.md` are there;
- the program was launched exactly once per trial the record counts (`launches.log`), never
  twice for a trial and never for a trial the record does not know;
- `ajetd status --json` lists it once;
- no process of it is left.
The daemon's logs are searched for tracebacks. With `--full-disk` (root: it mounts two small
tmpfs), the home and the result dirs are each on a 24 MiB disk that is filled to its last byte
now and then (as often as the kills) and emptied 0.3-4 s later. Prints each violation and a summary; exit 1 if
any. Usage: python bench/chaos.py [--runs 24] [--seconds 60] [--kill-every 2.5] [--seed 1] [--full-disk]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from test_daemon_e2e import NCCL  # noqa: E402 - a real NCCL error a relaunch fixes

from conftest import FAKEJET, Env, fill, marked_processes  # noqa: E402 - the tests' world

EXPECTED = {
    "ok": ("succeeded", 1),
    "nccl_fix": ("succeeded", 2),
    "fatal": ("failed", 1),
    "time_limit": ("time_limit", 1),
    "stop": ("stopped", 1),
}


def make_env() -> Env:
    tmp = Path(tempfile.mkdtemp(prefix="ajetd-chaos-"))
    codebase = tmp / "codebase"
    shutil.copytree(
        FAKEJET, codebase, ignore=shutil.ignore_patterns("__pycache__", "saved_*", "launches.log")
    )
    (tmp / "results").mkdir()
    variables = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    socket = f"ajetd-chaos-{uuid.uuid4().hex[:8]}"
    variables.update(AJETD_HOME=str(tmp / "home"), AJETD_TMUX_SOCKET=socket, HOME=str(tmp))
    return Env(tmp=tmp, home=tmp / "home", socket=socket, codebase=codebase, vars=variables)


def mount(path: Path, size: str) -> Path:
    """A small tmpfs at `path` (root only), owner-only as ajetd's home must be."""
    path.mkdir(parents=True, exist_ok=True)
    cmd = ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)]
    subprocess.run(cmd, check=True)
    return path


def blueprint(env: Env, name: str, kind: str, rng: random.Random) -> Path:
    steps = rng.randint(4, 30)
    step_time = rng.choice((0.02, 0.1, 0.2))
    fake: dict[str, Any] = {"steps": steps, "step_time": step_time}
    max_time = "10m"
    if kind == "nccl_fix":
        fake["fail"] = {"text": NCCL, "unless_env": {"NCCL_NVLS_ENABLE": 0}}
    elif kind == "fatal":
        fake["fail"] = {
            "text": "ModuleNotFoundError: No module named 'vllm'",
            "unless_env": {"N": 1},
        }
    elif kind in ("time_limit", "stop"):
        fake["forever"] = True
        max_time = f"{rng.randint(3, 12)}s" if kind == "time_limit" else "10m"
    config = env.config(name, **fake)
    return env.blueprint(name, config=config, max_time=max_time, purpose=f"chaos {name}")


class Chaos:
    """The submissions, stop requests and kills of one seeded run."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args, self.rng, self.env = args, random.Random(args.seed), make_env()
        self.kinds = {f"r{i}": self.rng.choice(list(EXPECTED)) for i in range(args.runs)}
        at = sorted((self.rng.uniform(0, args.seconds * 0.7), name) for name in self.kinds)
        self.submit_at, self.stop_at = at, list[tuple[float, str]]()
        self.ids: dict[str, str] = {}
        self.kills, self.restart_at, self.next_kill = 0, 0.0, 0.0
        self.daemon: subprocess.Popen[bytes] | None = None
        self.disks: list[Path] = []  # small tmpfs mounts that fill and empty (--full-disk)
        self.fillers: list[tuple[float, Path]] = []  # (when it goes, the filler file)
        self.next_fill, self.fills = 0.0, 0
        if args.full_disk:
            for name in ("home", "results"):
                self.disks.append(mount(self.env.tmp / name, "24m"))

    def fill_or_empty(self) -> None:
        """Now and then fill one of the disks to its last byte; empty it a while later."""
        now = time.monotonic()
        for due, filler in [f for f in self.fillers if f[0] <= now]:
            filler.unlink()
            self.fillers.remove((due, filler))
        if self.disks and not self.fillers and now >= self.next_fill:
            disk = self.rng.choice(self.disks)
            self.fillers.append((now + self.rng.uniform(0.3, 4.0), fill(disk)))
            self.fills += 1
            self.next_fill = now + self.rng.expovariate(1 / self.args.kill_every)

    def empty_all(self) -> None:
        for _, filler in self.fillers:
            filler.unlink()
        self.fillers.clear()

    def submit(self, name: str, now: float) -> None:
        out = self.env.cli("submit", str(blueprint(self.env, name, self.kinds[name], self.rng)))
        if out.returncode != 0:  # a full home refuses it whole: submitted again a bit later
            assert "No space left" in out.stderr, out.stderr
            self.submit_at.insert(0, (now + 0.5, name))
            self.submit_at.sort()
            return
        self.ids[name] = out.stdout.strip()
        if self.kinds[name] == "stop":
            self.stop_at.append((now + self.rng.uniform(0.5, 8), name))
            self.stop_at.sort()

    def stop(self, name: str, now: float = 0.0) -> None:
        out = self.env.cli("stop", "--no-wait", self.ids[name])
        if "No space left" in out.stderr:  # refused whole, as it says: asked again a bit later
            self.stop_at.append((now + 0.5, name))
            self.stop_at.sort()
        elif out.returncode != 0:
            print(f"  stop {name} ({self.ids[name]}): exit {out.returncode}: {out.stderr.strip()}")

    def kill_or_restart(self) -> None:
        if self.daemon is not None and time.monotonic() >= self.next_kill:
            self.daemon.send_signal(signal.SIGKILL)
            self.daemon.wait()
            self.kills += 1
            self.daemon = None
            self.restart_at = time.monotonic() + self.rng.choice((0.0, 0.0, 0.2, 1.0, 3.0))
        if self.daemon is None and time.monotonic() >= self.restart_at:
            self.daemon = self.env.start_daemon()
            self.next_kill = time.monotonic() + self.rng.expovariate(1 / self.args.kill_every)

    def play(self) -> int:
        counts = dict(Counter(self.kinds.values()))
        print(f"chaos.py: {self.args.runs} runs {counts}, seed {self.args.seed}, {self.env.tmp}")
        start = time.monotonic()
        while (now := time.monotonic() - start) < self.args.seconds:
            while self.submit_at and self.submit_at[0][0] <= now:
                self.submit(self.submit_at.pop(0)[1], now)
            while self.stop_at and self.stop_at[0][0] <= now:
                self.stop(self.stop_at.pop(0)[1], now)
            self.kill_or_restart()
            self.fill_or_empty()
            time.sleep(0.05)
        self.empty_all()
        if self.daemon is None:
            self.daemon = self.env.start_daemon()
        while self.submit_at:  # what the window did not reach, now
            self.submit(self.submit_at.pop(0)[1], 0.0)
        while self.stop_at:  # the disks are empty now: each is taken
            self.stop(self.stop_at.pop(0)[1])
        if self.disks:
            print(f"chaos.py: {self.fills} times a disk was filled")
        return check(self.env, self.kinds, self.ids, self.kills)

    def close(self) -> None:
        for proc in self.env.daemons:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)
        self.env.tmux("kill-server")
        for disk in self.disks:
            subprocess.run(["umount", "-l", str(disk)], check=False)
        for leftover in psutil.process_iter():
            try:
                if leftover.environ().get("AJETD_RESULT_DIR", "").startswith(str(self.env.tmp)):
                    leftover.kill()
            except psutil.Error:
                continue


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=24)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the kills go on")
    parser.add_argument("--kill-every", type=float, default=2.5, help="mean seconds between kills")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--full-disk", action="store_true", help="the home and result dirs on small tmpfs mounts"
    )
    chaos = Chaos(parser.parse_args())
    try:
        return chaos.play()
    finally:
        chaos.close()


def check(env: Env, kinds: dict[str, str], ids: dict[str, str], kills: int) -> int:
    problems: list[str] = []
    deadline = time.monotonic() + 180
    pending = dict(ids)
    while pending and time.monotonic() < deadline:
        for name, run_id in list(pending.items()):
            record = env.record(run_id)
            if record.get("state") == "done" and not record.get("reports_pending"):
                pending.pop(name)
        time.sleep(0.2)
    for name, run_id in pending.items():
        record = env.record(run_id)
        brief = {k: record.get(k) for k in ("state", "status", "reason", "attention", "stop_cause")}
        problems.append(
            f"{name} ({kinds[name]}, {run_id}): not ended: {brief if record else 'no record'}"
        )
    listed = Counter(r["run_id"] for r in json.loads(env.cli("status", "--all", "--json").stdout))
    launches = Counter(env.launches())
    for name, run_id in ids.items():
        if name in pending:
            continue
        want_status, want_trials = EXPECTED[kinds[name]]
        record = env.record(run_id)
        where = f"{name} ({kinds[name]}, {run_id})"
        early = kinds[name] == "stop" and not record.get("trials")  # stopped before it began
        # a failure that met a full result dir is not retried (disk_full is fatal: README)
        full = record.get("status") == "failed" and "(disk_full)" in record.get("reason", "")
        if full:
            print(f"  {where}: failed as its disk was full at its end (as designed)")
        elif record.get("status") != want_status or (
            len(record["trials"]) != want_trials and not early
        ):
            problems.append(
                f"{where}: status {record.get('status')} trials {len(record.get('trials', []))}"
                f" (want {want_status}, {want_trials}); reason: {record.get('reason')}"
            )
        result = Path(record["result_dir"])
        try:
            flag = json.loads((result / "finish.flag").read_text())
        except (OSError, ValueError) as exc:
            problems.append(f"{where}: finish.flag: {exc}")
            flag = {}
        for key, want in (
            ("run_id", run_id),
            ("status", record.get("status")),
            ("exit_code", record.get("exit_code")),
            ("trials", len(record.get("trials", []))),
        ):
            if flag and flag.get(key) != want:
                problems.append(f"{where}: finish.flag {key} {flag.get(key)!r}, record {want!r}")
        for report in ("results.md", "trials.md"):
            if not (result / report).is_file():
                problems.append(f"{where}: no {report}")
        trials = len(record.get("trials", []))
        mine = {k: c for k, c in launches.items() if k.split()[0] == run_id}
        want = {f"{run_id} {t}": 1 for t in range(1, trials + 1)}
        if mine != want:
            problems.append(f"{where}: launches {mine}, record has {trials} trial(s)")
        if listed[run_id] != 1:
            problems.append(f"{where}: listed {listed[run_id]} times by status --json")
        left = marked_processes(run_id)
        if left:
            problems.append(f"{where}: {len(left)} process(es) left: {[p.pid for p in left]}")
    tracebacks = env.daemon_log().count("Traceback (most recent call last)")
    if tracebacks:
        problems.append(f"daemon logs: {tracebacks} traceback(s)")
    for line in problems:
        print("  VIOLATION", line)
    print(f"chaos.py: {len(ids)} runs, {kills} kills -9, {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
