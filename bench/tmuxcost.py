"""What a printed line costs the tmux server, under the options ajetd sets and could set.

N panes on a private tmux server (`-f /dev/null`: no user configuration) each print a line
every PERIOD seconds (faster than the 5 s of the other benchmarks, for resolution); the
server's CPU over a window is read from `/proc/<pid>/schedstat` (nanoseconds, not the 10 ms
ticks of `cpu_times`), and so are its wake-ups (voluntary context switches) and the `pipe-pane`
helpers' CPU. Each variant is a fresh server; variants are interleaved across repetitions so
that the shared machine's load drifts over all of them alike.

With `--together`, the variants' servers run side by side in each window (the same load for
each: the fairest comparison on a shared machine).
With `--spread`, each server's panes start one period apart in all, so that their lines come
one at a time (as in bench/peers.py, where the programs are submitted one after another),
not together: each line then wakes the server on its own, and each wake-up `poll`s every
pane's terminal (tmux's libevent loop runs on `poll`), so a line costs more the more panes
there are.
Usage: python bench/tmuxcost.py [--panes 50] [--period 0.5] [--window 20] [--reps 3]
                                [--variants base,nopipe,...] [--together] [--spread]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

LINE = "p{n}: a line every 5 s, step 123 loss 0.4567 reward 0.1234"


@dataclass(frozen=True)
class Variant:
    """One way to set up the server and its panes."""

    name: str
    what: str
    server: tuple[tuple[str, ...], ...] = ()  # `set -g`/`setw -g` commands before any session
    session: tuple[tuple[str, ...], ...] = ()  # commands after each new-session (on its pane)
    pipe: str = "-O"  # pipe-pane flag; "" = no pipe-pane
    size: tuple[int, int] = (220, 50)
    named: bool = False  # new-session -n: a window name given turns automatic-rename off
    background_sleep: bool | str = False  # `sleep P & wait $!`, as bench/peers.py's programs
    start_env: tuple[tuple[str, str], ...] = ()  # the environment of the call that starts it


def _g(*opts: str) -> tuple[str, ...]:
    return ("set-option", "-g", *opts)


def _w(*opts: str) -> tuple[str, ...]:
    return ("set-option", "-wg", *opts)


VARIANTS = {
    v.name: v
    for v in (
        Variant("base", "as ajetd: 220x50, remain-on-exit, pipe-pane to cat >> log"),
        Variant("nopipe", "no pipe-pane", pipe=""),
        Variant("pipe-o", "pipe-pane -o (open only if none)", pipe="-o"),
        Variant("hist0", "history-limit 0", server=(_g("history-limit", "0"),)),
        Variant("hist100", "history-limit 100", server=(_g("history-limit", "100"),)),
        Variant("hist50k", "history-limit 50000", server=(_g("history-limit", "50000"),)),
        Variant("small", "pane 80x24", size=(80, 24)),
        Variant("tiny", "pane 20x2", size=(20, 2)),
        Variant("nostatus", "status off", server=(_g("status", "off"),)),
        Variant(
            "noalerts",
            "monitor-activity/bell/silence and visual-* off",
            server=(
                _w("monitor-activity", "off"),
                _w("monitor-bell", "off"),
                _w("monitor-silence", "0"),
                _g("visual-activity", "off"),
                _g("visual-bell", "off"),
                _g("visual-silence", "off"),
                _g("bell-action", "none"),
                _g("activity-action", "none"),
                _g("silence-action", "none"),
            ),
        ),
        Variant("norename", "automatic-rename off", server=(_w("automatic-rename", "off"),)),
        Variant("noallowrename", "allow-rename off", server=(_w("allow-rename", "off"),)),
        Variant("escape0", "escape-time 0", server=(_g("escape-time", "0"),)),
        Variant("focus", "focus-events on", server=(_g("focus-events", "on"),)),
        Variant("aggr", "aggressive-resize on", server=(_w("aggressive-resize", "on"),)),
        Variant("named", "new-session -n NAME (automatic-rename off for that window)", named=True),
        Variant("named-nopipe", "-n NAME and no pipe-pane", named=True, pipe=""),
        Variant(
            "precise",
            "as named, the server started with EVENT_PRECISE_TIMER=1 (as ajetd starts it)",
            named=True,
            start_env=(("EVENT_PRECISE_TIMER", "1"),),
        ),
        Variant("bg", "as base, `sleep & wait` (peers.py's program)", background_sleep=True),
        Variant("bg-named", "as named, `sleep & wait`", named=True, background_sleep=True),
        Variant("bg-trap", "as bg, with a USR1 trap", background_sleep="trap"),
        Variant(
            "all",
            "history-limit 100, status off, alerts off, automatic-rename off, 80x24",
            server=(
                _g("history-limit", "100"),
                _g("status", "off"),
                _w("monitor-bell", "off"),
                _w("automatic-rename", "off"),
            ),
            size=(80, 24),
        ),
    )
}


@dataclass
class Sample:
    server_ns: int
    wakes: int
    helpers_ns: int
    lines: int


@dataclass
class Result:
    variant: Variant
    samples: list[Sample] = field(default_factory=list)


def schedstat(pid: int) -> int:
    """CPU time of a process's main thread in ns (tmux is single-threaded)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def wakes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    return 0


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()]


class Server:
    def __init__(
        self, variant: Variant, panes: int, period: float, work: Path, spread: bool = False
    ) -> None:
        self.socket = f"tmuxcost-{uuid.uuid4().hex[:8]}"
        self.env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        self.work = work
        first: list[str] = ["-f", "/dev/null", "new-session", "-d", "-s", "keep", "sleep 1d"]
        for cmd in variant.server:
            first += [";", *cmd]
        self.tmux(*first, env={**self.env, **dict(variant.start_env)})
        self.pid = int(self.tmux("display", "-p", "#{pid}").strip())
        self.logs = []
        t0 = time.monotonic()
        for n in range(panes):
            if spread:  # one pane every period/N s: its lines come alone, as in peers.py
                time.sleep(max(0.0, t0 + n * period / panes - time.monotonic()))
            log = work / f"p{n}.log"
            self.logs.append(log)
            text = shlex.quote(LINE.format(n=n))
            pause = f"sleep {period} & wait $!" if variant.background_sleep else f"sleep {period}"
            if variant.background_sleep == "trap":  # peers.py's program, its USR1 trap too
                pause = f"trap 'exit 0' USR1; {pause}"
            loop = f"while :; do echo {text}; {pause}; done"
            prog = f"exec bash -c {shlex.quote(loop)}"
            argv = ["new-session", "-d", "-s", f"p{n}", "-x", str(variant.size[0])]
            argv += ["-y", str(variant.size[1]), *(("-n", "run") if variant.named else ())]
            argv += [prog, ";", "set-option", "-p"]
            argv += ["remain-on-exit", "on"]
            if variant.pipe:
                argv += [";", "pipe-pane", variant.pipe, f"cat >> {shlex.quote(str(log))}"]
            for cmd in variant.session:
                argv += [";", *cmd]
            self.tmux(*argv)
        self.panes = {int(p) for p in self.tmux("list-panes", "-a", "-F", "#{pane_pid}").split()}

    def tmux(self, *args: str, env: dict[str, str] | None = None) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, *args],
            env=self.env if env is None else env,
            capture_output=True,
            text=True,
            check=True,
            stdin=subprocess.DEVNULL,
        )
        return out.stdout

    def helpers(self) -> list[int]:
        found = []
        for child in children(self.pid):
            if child not in self.panes:
                found.append(child)
                found += children(child)
        return found

    def read(self) -> tuple[int, int, int]:
        return schedstat(self.pid), wakes(self.pid), sum(schedstat(p) for p in self.helpers())

    def close(self) -> None:
        subprocess.run(
            ["tmux", "-L", self.socket, "kill-server"],
            env=self.env,
            capture_output=True,
            check=False,
        )
        folder = os.environ.get("TMUX_TMPDIR") or "/tmp"  # tmux's own default
        Path(folder, f"tmux-{os.getuid()}", self.socket).unlink(missing_ok=True)  # left behind


def measure(
    variants: list[Variant], panes: int, period: float, window: float, spread: bool = False
) -> list[Sample]:
    """The variants' servers side by side over one window: the same load for each."""
    work = Path(tempfile.mkdtemp(prefix="tmuxcost-"))
    servers: list[Server] = []
    try:
        for i, variant in enumerate(variants):
            (work / str(i)).mkdir()
            servers.append(Server(variant, panes, period, work / str(i), spread))
        time.sleep(2)
        before = [server.read() for server in servers]
        time.sleep(window)
        after = [server.read() for server in servers]
    finally:
        for server in servers:
            server.close()
        shutil.rmtree(work, ignore_errors=True)
    lines = round(panes * window / period)
    return [
        Sample(s1 - s0, w1 - w0, h1 - h0, lines)
        for (s0, w0, h0), (s1, w1, h1) in zip(before, after, strict=True)
    ]


def report(rep: int, v: Variant, got: Sample) -> None:
    print(
        f"  rep {rep + 1} {v.name}: {got.server_ns / got.lines / 1000:.1f} us/line, "
        f"{got.wakes / got.lines:.2f} wakes/line, helpers "
        f"{got.helpers_ns / got.lines / 1000:.1f} us/line (load {os.getloadavg()[0]:.2f})",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--panes", type=int, default=50)
    parser.add_argument("--period", type=float, default=0.5)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument(
        "--together", action="store_true", help="all variants' servers in the same window"
    )
    parser.add_argument(
        "--spread",
        action="store_true",
        help="start each server's panes one period apart in all (as bench/peers.py's submits "
        "come): each line comes alone, and each wakes the server on its own",
    )
    args = parser.parse_args()
    chosen = [VARIANTS[v] for v in args.variants.split(",")]
    version = subprocess.run(["tmux", "-V"], capture_output=True, text=True, check=False)
    print(
        f"tmuxcost: {args.panes} panes, a line every {args.period} s, {args.window:.0f} s "
        f"windows, {args.reps} reps; load {os.getloadavg()[0]:.2f}; "
        f"{version.stdout.strip()}",
        flush=True,
    )
    results = {v.name: Result(v) for v in chosen}
    for rep in range(args.reps):
        groups = [chosen] if args.together else [[v] for v in chosen]
        for group in groups:
            got_all = measure(group, args.panes, args.period, args.window, args.spread)
            for v, got in zip(group, got_all, strict=True):
                results[v.name].samples.append(got)
                report(rep, v, got)
    print("\nvariant | server us/line (median, range) | wakes/line | helpers us/line | what")
    for r in results.values():
        per = [s.server_ns / s.lines / 1000 for s in r.samples]
        wk = statistics.median(s.wakes / s.lines for s in r.samples)
        hp = statistics.median(s.helpers_ns / s.lines / 1000 for s in r.samples)
        print(
            f"{r.variant.name} | {statistics.median(per):.1f} ({min(per):.1f}-{max(per):.1f}) | "
            f"{wk:.2f} | {hp:.1f} | {r.variant.what}"
        )


if __name__ == "__main__":
    main()
