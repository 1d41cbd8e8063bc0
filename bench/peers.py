"""ajetd beside supervisord and task-spooler: the same workload for each, one after another.

Each system runs identical programs (`prog.sh`: its first statement writes the time, then it
prints a line every 5 s until SIGUSR1, when its last statement writes the time and it exits 0):

1. submit -> program's first statement, for `ajetd submit`, `mv` into ajetd's inbox,
   `supervisorctl start`, `tsp CMD` (one at a time: nothing else is starting meanwhile);
2. the supervisor's CPU with 50 live programs over a window (ajetd: the daemon with its
   children, its tmux server and the server's `pipe-pane` helpers; supervisord: its own
   process; task-spooler: its server and its per-job runner processes) and RSS at 50 and 100;
3. program exit -> recorded, one end at a time (ajetd: `done` in state.json and
   `finish.flag`; supervisord: its `exited:` log line; both as an inotify observer sees them
   appear, see observe.py; task-spooler: the time its `TS_ONFINISH` hook starts, which its job
   runner calls once the end is recorded);
4. CPU to record 50 ends that come at once (until every end is recorded, plus a second).

A peer that is not installed is skipped with a message (`pip install supervisor`,
`apt-get install task-spooler`). The window is short so that the whole comparison takes a few
minutes on a 2-core machine; CPU figures scale with it.
Usage: python bench/peers.py [WINDOW_S] [--only ajetd,supervisord,tsp]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil
from common import PYTHON, Bench, wait
from observe import Observer

from ajetd.adapters.endwatch import IN_CLOSE_WRITE, IN_MODIFY, IN_MOVED_TO

LIVE = 50  # programs live during the CPU window
MORE = 50  # started after it, for RSS at 100
SERIAL_ENDS = 20  # ends measured one at a time
BULK_ENDS = 50  # ends that come at once
MV_DROPS = 5  # blueprints `mv`ed into ajetd's inbox (measured apart, they end at once)

PROG = r"""#!/bin/bash
d=$1; n=$2
date +%s.%N > "$d/start-$n"
echo $$ > "$d/pid-$n"
trap 'kill $! 2>/dev/null; date +%s.%N > "$d/exit-$n"; exit 0' USR1
while :; do echo "$n: a line every 5 s"; sleep 5 & wait $!; done
"""


def tool(name: str) -> str | None:
    """A peer's real executable (not a pyenv shim, which adds its own start-up)."""
    for folder in (Path(sys.executable).parent, Path(sys.base_prefix) / "bin"):
        if (folder / name).exists():
            return str(folder / name)
    found = shutil.which(name)
    if found and "shims" in found:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            real = subprocess.run(
                ["pyenv", "which", name], capture_output=True, text=True, check=False
            )
            if real.returncode == 0:
                return real.stdout.strip()
    return found


def read_time(path: Path) -> float | None:
    try:
        return float(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text())
    except (OSError, ValueError):  # not there yet, or half written
        return None


def ran_s(pid: int) -> float | None:
    """A live process's CPU seconds, all its threads, as the scheduler counts them
    (`/proc/<pid>/task/*/schedstat`, nanoseconds); None where it cannot be read."""
    total = 0
    try:
        for task in os.scandir(f"/proc/{pid}/task"):
            with open(f"{task.path}/schedstat") as stat:
                total += int(stat.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total / 1e9


def own_cpu(procs: list[psutil.Process], children: bool = False) -> float:
    """The processes' CPU seconds, each one's own from the scheduler (`ran_s`), with the
    children it reaped (`cpu_times`) where `children`. A process's own `cpu_times` is sampled
    at the timer's ticks on this kernel: one that wakes for a fraction of a millisecond at a
    time is rarely running at a tick, and 20 log writers that ran 25 ms in 40 s by `schedstat`
    showed 0.000 s (2026-12-02): ajetd's 50 writers were left out of its figure, and
    supervisord's own short wakes too. Both peers are counted this way."""
    total = 0.0
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            t = proc.cpu_times()
            ran = ran_s(proc.pid)
            total += t.user + t.system if ran is None else ran
            if children:
                total += t.children_user + t.children_system
    return total


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ms(samples: list[float]) -> str:
    if not samples:
        return "n/a"
    return (
        f"p50 {statistics.median(samples) * 1000:.1f} ms, p90 {pct(samples, 0.9) * 1000:.1f} ms "
        f"(n={len(samples)})"
    )


class Peer:
    """One system under test; subclasses start, end and account for its programs."""

    name = ""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.marks = work / "marks"
        self.marks.mkdir(parents=True)
        self.prog = work / "prog.sh"
        self.prog.write_text(PROG)
        self.prog.chmod(0o755)
        self.count = 0
        self.figures: dict[str, object] = {}

    def argv(self, n: str) -> list[str]:
        return ["/bin/bash", str(self.prog), str(self.marks), n]

    # what each system provides
    def start(self, n: str) -> float:  # returns the time just before the submit command
        raise NotImplementedError

    def recorded(self, n: str) -> dict[str, float] | None:
        raise NotImplementedError

    def supervisor(self) -> list[tuple[psutil.Process, bool]]:  # (process, count children)
        raise NotImplementedError

    def rss(self) -> float:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # the same steps for every system
    def new(self) -> str:
        self.count += 1
        return f"p{self.count}"

    def first_statement(self, n: str) -> float:
        return float(wait(lambda: read_time(self.marks / f"start-{n}"), 60))  # type: ignore[arg-type]

    def end(self, n: str) -> None:
        # the program writes its pid just after its first statement's time: a loaded machine
        # can end it between the two (seen 2026-12-02 at load 10, after the `mv` drops)
        pid = int(wait(lambda: read_pid(self.marks / f"pid-{n}"), 30))  # type: ignore[arg-type]
        os.kill(pid, signal.SIGUSR1)

    def cpu(self) -> float:
        return sum(own_cpu([p], kids) for p, kids in self.supervisor())

    def run(self, window: float) -> None:
        print(f"== {self.name}", flush=True)
        started: list[str] = []
        latencies = []
        for _ in range(LIVE):
            n = self.new()
            t0 = self.start(n)
            latencies.append(self.first_statement(n) - t0)
            started.append(n)
        self.figures["submit"] = latencies
        print(f"   submit -> first statement: {ms(latencies)}", flush=True)
        self.window(window)
        for _ in range(MORE):
            n = self.new()
            self.start(n)
            started.append(n)
        for n in started:
            self.first_statement(n)
        time.sleep(2)
        self.figures["rss100"] = self.rss()
        print(f"   RSS at {len(started)} programs: {self.rss() / 2**20:.1f} MiB", flush=True)
        self.serial_ends(started[:SERIAL_ENDS])
        self.bulk_ends(started[SERIAL_ENDS : SERIAL_ENDS + BULK_ENDS])
        for n in started[SERIAL_ENDS + BULK_ENDS :]:
            self.end(n)

    def parts(self) -> dict[str, float]:
        """CPU seconds so far by part of the supervisor (one part for most systems)."""
        return {"all": self.cpu()}

    def window(self, seconds: float) -> None:
        time.sleep(2)  # the last start's own work is not the window's
        c0, t0, rss = self.cpu(), time.monotonic(), []
        p0 = self.parts()
        while time.monotonic() - t0 < seconds:
            rss.append(self.rss())
            time.sleep(1)
        used, elapsed = self.cpu() - c0, time.monotonic() - t0
        p1 = self.parts()
        if len(p1) > 1:
            split = ", ".join(f"{k} {p1[k] - p0.get(k, 0.0):.2f} s" for k in p1)
            print(f"   CPU by part: {split}", flush=True)
        self.figures["cpu50"] = used / elapsed * 120  # per 120 s, the window
        self.figures["rss50"] = max(rss)
        print(
            f"   CPU, {LIVE} live programs, {elapsed:.0f} s: {used:.2f} s "
            f"({used / elapsed * 100:.2f} % of a core; {used / elapsed * 120:.2f} s per 120 s); "
            f"RSS max {max(rss) / 2**20:.1f} MiB",
            flush=True,
        )

    def serial_ends(self, names: list[str]) -> None:
        lat: dict[str, list[float]] = {}
        for n in names:
            self.end(n)
            exited = float(wait(lambda n=n: read_time(self.marks / f"exit-{n}"), 30))  # type: ignore[misc, arg-type]
            got = wait(lambda n=n: self.recorded(n), 30, 0.001)
            assert isinstance(got, dict)
            for what, at in got.items():
                lat.setdefault(what, []).append(at - exited)
        self.figures["exit"] = lat
        for what, samples in lat.items():
            print(f"   exit -> {what}: {ms(samples)}", flush=True)

    def bulk_ends(self, names: list[str]) -> None:
        c0, t0 = self.cpu(), time.monotonic()
        self.track_ends()
        for n in names:
            self.end(n)
        wait(lambda: all(self.recorded(n) for n in names), 120, 0.05)
        time.sleep(1)
        used = self.cpu() + self.ended_cpu() - c0
        rate = self.figures["cpu50"] / 120  # type: ignore[operator]
        idle = rate * (time.monotonic() - t0)
        self.figures["cpu_ends"] = used
        print(
            f"   CPU to record {len(names)} ends at once: {used:.2f} s "
            f"({used / len(names) * 1000:.1f} ms per end; the quiet rate would be {idle:.2f} s)",
            flush=True,
        )

    def track_ends(self) -> None:
        """Helpers that exit with their program take their CPU with them: noted first."""

    def ended_cpu(self) -> float:
        return 0.0


class Ajetd(Peer):
    name = "ajetd"

    def __init__(self, work: Path, route: str = "submit") -> None:
        super().__init__(work)
        self.bench = Bench()
        self.exe = tool("ajetd") or "ajetd"
        self.route = route
        self.run_ids: dict[str, str] = {}
        self.results: dict[str, Path] = {}
        self.outbox = work / "outbox"
        self.outbox.mkdir()
        self.helpers: dict[int, tuple[psutil.Process, float]] = {}
        self.tmux_pid = 0  # the daemon starts its server with the first run
        self.folders: dict[str, str] = {}  # run folder or result folder -> program
        self.seen: dict[str, dict[str, float]] = {}
        self.observer = Observer(
            ("state.json", "finish.flag", ".exit"), IN_CLOSE_WRITE | IN_MOVED_TO, self.saw
        )

    def saw(self, path: str, when: float) -> None:
        """The observer's thread: a record renamed into a watched folder."""
        folder, name = os.path.split(path)
        n = self.folders.get(folder)
        if n is None:
            return
        if name == "finish.flag":
            self.seen.setdefault(n, {}).setdefault("finish.flag", when)
        elif name.endswith(".exit"):  # the trial script's record, the daemon's wake-up
            self.seen.setdefault(n, {}).setdefault("exit file (trial script)", when)
        elif name == "state.json":
            with contextlib.suppress(OSError, ValueError):
                if json.loads(Path(path).read_text())["state"] == "done":
                    self.seen.setdefault(n, {}).setdefault("done in state.json", when)

    def end(self, n: str) -> None:
        """Watch where the end's records will appear, then end the program."""
        if n in self.run_ids:  # one `mv`ed into the inbox is only ended, not timed
            for folder in (self.bench.home / "runs" / self.run_ids[n], self.results[n]):
                self.folders[str(folder)] = n
                self.observer.watch(folder)
        super().end(n)

    def blueprint(self, n: str) -> str:
        text = self.bench.blueprint(" ".join(self.argv(n)), "2h")
        self.results[n] = self.bench.tmp / "results" / str(self.bench.n)
        return text

    def start(self, n: str) -> float:
        text = self.blueprint(n)
        path = self.outbox / f"{n}.md"
        path.write_text(text)
        if self.route == "mv":
            t0 = time.time()
            os.rename(path, self.bench.home / "inbox" / f"{n}.md")
            return t0
        t0 = time.time()
        out = subprocess.run(
            [self.exe, "submit", str(path)],
            env=self.bench.env,
            capture_output=True,
            text=True,
            check=True,
        )
        self.run_ids[n] = out.stdout.strip()
        return t0

    def recorded(self, n: str) -> dict[str, float] | None:
        got = dict(self.seen.get(n, {}))
        if "done in state.json" not in got or "finish.flag" not in got:
            return None
        # the record first (the side-by-side table takes the first), the step before it last
        order = ("done in state.json", "finish.flag", "exit file (trial script)")
        return {k: got[k] for k in order if k in got}

    def tmux_server(self) -> psutil.Process | None:
        if not self.tmux_pid:
            out = subprocess.run(
                ["tmux", "-L", self.bench.socket, "display", "-p", "#{pid}"],
                env=self.bench.env,
                capture_output=True,
                text=True,
                check=False,
            )
            self.tmux_pid = int(out.stdout.strip() or 0) if out.returncode == 0 else 0
        try:
            return psutil.Process(self.tmux_pid) if self.tmux_pid else None
        except psutil.Error:
            return None

    def pipe_helpers(self) -> list[psutil.Process]:
        """The tmux server's children that are not panes: `pipe-pane`'s `cat >> log`."""
        server = self.tmux_server()
        if server is None:
            return []
        out = subprocess.run(
            ["tmux", "-L", self.bench.socket, "list-panes", "-a", "-F", "#{pane_pid}"],
            env=self.bench.env,
            capture_output=True,
            text=True,
            check=False,
        )
        panes = {int(p) for p in out.stdout.split()}
        found = []
        with contextlib.suppress(psutil.Error):
            for child in server.children():
                if child.pid not in panes:
                    found.append(child)
                    found.extend(child.children(recursive=True))
        return found

    def supervisor(self) -> list[tuple[psutil.Process, bool]]:
        procs: list[tuple[psutil.Process, bool]] = [(psutil.Process(self.bench.daemon.pid), True)]
        server = self.tmux_server()
        if server is not None:
            procs.append((server, False))
        # with the children they reaped: the writer's `sleep 1` each second (see `parts`)
        procs += [(p, True) for p in self.pipe_helpers()]
        return procs

    def parts(self) -> dict[str, float]:
        server = self.tmux_server()
        return {
            "daemon": own_cpu([psutil.Process(self.bench.daemon.pid)], True),
            "tmux server": own_cpu([server]) if server else 0.0,
            # the pipe writer (`tmux.pipe_writer`) starts a `sleep 1` a second per run: its CPU
            # is in the writer's reaped children's times, not in its own
            "pipe-pane helpers": own_cpu(self.pipe_helpers(), True),
        }

    def track_ends(self) -> None:
        self.helpers = {p.pid: (p, own_cpu([p])) for p in self.pipe_helpers()}

    def ended_cpu(self) -> float:
        """Helpers that exited during the ends: the CPU they had when last seen."""
        return sum(cpu for pid, (p, cpu) in self.helpers.items() if not psutil.pid_exists(pid))

    def rss(self) -> float:
        return float(psutil.Process(self.bench.daemon.pid).memory_info().rss)

    def tmux_rss(self) -> float:
        server = self.tmux_server()
        return float(server.memory_info().rss) if server else 0.0

    def run(self, window: float) -> None:
        super().run(window)
        self.figures["tmux_rss100"] = self.tmux_rss()
        print(f"   (tmux server RSS {self.tmux_rss() / 2**20:.1f} MiB)", flush=True)
        self.route = "mv"
        names = []
        t0s = []
        for _ in range(MV_DROPS):
            n = self.new()
            t0s.append(self.start(n))
            names.append(n)
            time.sleep(0.3)
        lat = [self.first_statement(n) - t0 for n, t0 in zip(names, t0s, strict=True)]
        self.figures["mv"] = lat
        print(f"   mv into the inbox -> first statement: {ms(lat)}", flush=True)
        for n in names:
            self.end(n)

    def close(self) -> None:
        self.observer.close()
        self.bench.close()


class Supervisord(Peer):
    name = "supervisord"
    TOTAL = LIVE + MORE

    def __init__(self, work: Path) -> None:
        super().__init__(work)
        self.ctl = tool("supervisorctl")
        exe = tool("supervisord")
        if exe is None or self.ctl is None:
            raise FileNotFoundError("supervisord not installed (pip install supervisor)")
        (work / "log").mkdir()  # its own folder: the observer wakes for this file only
        self.log = work / "log" / "supervisord.log"
        self.conf = work / "supervisord.conf"
        sections = [
            f"[unix_http_server]\nfile={work}/sv.sock\n",
            f"[supervisord]\nlogfile={self.log}\npidfile={work}/sv.pid\nnodaemon=true\n"
            "loglevel=info\n",
            "[rpcinterface:supervisor]\nsupervisor.rpcinterface_factory = "
            "supervisor.rpcinterface:make_main_rpcinterface\n",
            f"[supervisorctl]\nserverurl=unix://{work}/sv.sock\n",
        ]
        for i in range(1, self.TOTAL + 1):
            n = f"p{i}"
            sections.append(
                f"[program:{n}]\ncommand={' '.join(self.argv(n))}\nautostart=false\n"
                f"autorestart=false\nstartsecs=0\nstdout_logfile={work}/{n}.log\n"
                "redirect_stderr=true\n"
            )
        self.conf.write_text("\n".join(sections))
        self.proc = subprocess.Popen(
            [exe, "-c", str(self.conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait((work / "sv.sock").exists, 30)
        self.ended: dict[str, float] = {}
        self.offset = 0
        self.observer = Observer(("supervisord.log",), IN_MODIFY, self.saw)
        self.observer.watch(self.log.parent)

    def start(self, n: str) -> float:
        t0 = time.time()
        subprocess.run(
            [self.ctl, "-c", str(self.conf), "start", n], capture_output=True, check=False
        )
        return t0

    def saw(self, _: str, when: float) -> None:
        """The observer's thread: lines added to the log."""
        with open(self.log, "rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        cut = data.rfind(b"\n") + 1
        self.offset += cut
        for line in data[:cut].decode().splitlines():
            m = re.match(r"\S+ \S+,\d+ INFO exited: (\S+) ", line)
            if m:
                self.ended.setdefault(m[1], when)

    def recorded(self, n: str) -> dict[str, float] | None:
        return {"its log line": self.ended[n]} if n in self.ended else None

    def supervisor(self) -> list[tuple[psutil.Process, bool]]:
        return [(psutil.Process(self.proc.pid), False)]

    def rss(self) -> float:
        return float(psutil.Process(self.proc.pid).memory_info().rss)

    def close(self) -> None:
        self.observer.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)


class TaskSpooler(Peer):
    name = "task-spooler"

    def __init__(self, work: Path) -> None:
        super().__init__(work)
        self.exe = shutil.which("tsp") or shutil.which("ts")
        if self.exe is None:
            raise FileNotFoundError("task-spooler not installed (apt-get install task-spooler)")
        hook = work / "onfinish.sh"
        hook.write_text(f'#!/bin/sh\ndate +%s.%N > {self.marks}/finished-"$1"\n')
        hook.chmod(0o755)
        self.env = {
            **os.environ,
            "TS_SOCKET": str(work / "ts.sock"),
            "TMPDIR": str(work),
            "TS_ONFINISH": str(hook),
            "TS_MAXCONN": "1000",
            "TS_MAXFINISHED": "1000",
            "TS_SLOTS": str(LIVE + MORE + MV_DROPS),
        }
        self.ts(["-S", str(LIVE + MORE + MV_DROPS)])
        self.jobs: dict[str, str] = {}
        self.server_pid = 0
        self.runners: dict[int, tuple[psutil.Process, float]] = {}

    def ts(self, args: list[str]) -> str:
        assert self.exe is not None
        out = subprocess.run(
            [self.exe, *args], env=self.env, capture_output=True, text=True, check=False
        )
        return out.stdout.strip()

    def start(self, n: str) -> float:
        t0 = time.time()
        self.jobs[n] = self.ts(self.argv(n))
        return t0

    def recorded(self, n: str) -> dict[str, float] | None:
        at = read_time(self.marks / f"finished-{self.jobs[n]}")
        return None if at is None else {"its record (TS_ONFINISH)": at}

    def mine(self) -> list[psutil.Process]:
        """The server and the job runners: `tsp` processes on this socket."""
        found = []
        for proc in psutil.process_iter(["name"]):
            with contextlib.suppress(psutil.Error):
                if (
                    proc.info["name"] in ("tsp", "ts")
                    and proc.environ().get("TS_SOCKET") == self.env["TS_SOCKET"]
                ):
                    found.append(proc)
        return found

    def supervisor(self) -> list[tuple[psutil.Process, bool]]:
        return [(p, False) for p in self.mine()]

    def track_ends(self) -> None:
        self.runners = {p.pid: (p, own_cpu([p])) for p in self.mine()}

    def ended_cpu(self) -> float:
        return sum(cpu for pid, (p, cpu) in self.runners.items() if not psutil.pid_exists(pid))

    def rss(self) -> float:
        server = min(self.mine(), key=lambda p: p.create_time())
        return float(server.memory_info().rss)

    def rss_all(self) -> float:
        return float(sum(p.memory_info().rss for p in self.mine()))

    def run(self, window: float) -> None:
        super().run(window)
        self.figures["rss_all"] = self.rss_all()

    def close(self) -> None:
        self.ts(["-K"])


def table(peers: list[Peer]) -> None:
    def med(p: Peer, key: str, sub: str | None = None) -> float | None:
        got = p.figures.get(key)
        if isinstance(got, dict):
            got = got.get(sub) if sub else next(iter(got.values()), None)
        return statistics.median(got) if isinstance(got, list) and got else None

    by = {p.name: p for p in peers}
    a = by.get("ajetd")
    print("\n== side by side (p50; CPU per 120 s)")
    rows = [
        ("exit -> recorded (ms)", lambda p: med(p, "exit", None), 1000),
        ("submit -> first statement (ms)", lambda p: med(p, "submit"), 1000),
        ("CPU, 50 live, per 120 s (s)", lambda p: p.figures.get("cpu50"), 1),
        ("RSS at 50 (MiB)", lambda p: p.figures.get("rss50"), 1 / 2**20),
        ("RSS at 100 (MiB)", lambda p: p.figures.get("rss100"), 1 / 2**20),
        ("CPU to record 50 ends (s)", lambda p: p.figures.get("cpu_ends"), 1),
    ]
    names = [p.name for p in peers]
    print(" | ".join(["figure", *names]))
    for label, get, scale in rows:
        cells = []
        for p in peers:
            v = get(p)
            cell = "n/a" if v is None else f"{float(v) * scale:.2f}"  # type: ignore[arg-type]
            if a is not None and p is not a and v and get(a) is not None:
                cell += f" (ajetd x{float(get(a)) / float(v):.2f})"  # type: ignore[arg-type]
            cells.append(cell)
        print(" | ".join([label, *cells]))
    if a is not None:
        flag = med(a, "exit", "finish.flag")
        print(f"ajetd exit -> finish.flag p50: {flag * 1000:.1f} ms" if flag else "")
        mv = med(a, "mv")
        print(f"ajetd mv -> first statement p50: {mv * 1000:.1f} ms" if mv else "")
        print(f"ajetd tmux server RSS at 100: {a.figures['tmux_rss100'] / 2**20:.1f} MiB")  # type: ignore[operator]


def python_start() -> str:
    """The interpreter's own start-up here, which `ajetd submit` and `supervisorctl start`
    both pay: `python -c pass` with its site (what a console script runs) and without
    (`-S`): a site's `.pth` files can cost tens of ms (this VM's sandbox adds one that imports
    certifi: 25-35 ms), and the submit figures are read against it."""
    got = []
    for flags in ([], ["-S"]):
        took = []
        for _ in range(15):
            t0 = time.perf_counter()
            subprocess.run([PYTHON, *flags, "-c", "pass"], check=True)
            took.append(time.perf_counter() - t0)
        got.append(statistics.median(took) * 1000)
    return f"python -c pass p50 {got[0]:.1f} ms ({got[1]:.1f} ms with -S: no site)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("window", type=float, nargs="?", default=60.0)
    parser.add_argument("--only", default="ajetd,supervisord,tsp")
    parser.add_argument("--small", action="store_true", help="a smoke test: 5 programs")
    args = parser.parse_args()
    if args.small:
        global LIVE, MORE, SERIAL_ENDS, BULK_ENDS
        LIVE, MORE, SERIAL_ENDS, BULK_ENDS = 5, 5, 3, 5
    print(
        f"peers.py: {psutil.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, python {PYTHON}",
        flush=True,
    )
    print(f"   start-up: {python_start()}", flush=True)
    makers: dict[str, Callable[[Path], Peer]] = {
        "ajetd": Ajetd,
        "supervisord": Supervisord,
        "tsp": TaskSpooler,
    }
    done: list[Peer] = []
    for key in args.only.split(","):
        work = Path(tempfile.mkdtemp(prefix=f"peers-{key}-"))
        try:
            peer = makers[key](work)
        except FileNotFoundError as exc:
            print(f"== {key}: skipped: {exc}", flush=True)
            continue
        try:
            peer.run(args.window)
            done.append(peer)
        finally:
            peer.close()
            shutil.rmtree(work, ignore_errors=True)
        print(f"   (load now {os.getloadavg()[0]:.2f})", flush=True)
    table(done)


if __name__ == "__main__":
    main()
