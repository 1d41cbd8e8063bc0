"""The daemon loop in this process, on a clock the test moves: time rules without waiting.

`Loop(env)` (the `loop` fixture in conftest; `Loop(env, clock, **config)` takes a clock and
`DaemonConfig` fields, then call `close()`; a second one on the same home is a restart) builds `Daemon(cfg, clock=FakeClock())` on the test's home and private
tmux socket, starts its file watcher as `serve` does, and drives it pass by pass with
`Daemon.turn`, the body of `serve`'s loop. Real things happen in real time (a trial starts,
prints, exits, its exit file wakes the loop): wait for them with `until`, which never moves the
clock. Time rules (time limits, grace periods, deep checks, hang windows, plateaus) are reached
with `run_until` / `run_for` / `sleep`, which move the clock exactly as far as the daemon would sleep when
nothing happens. A test:

    def test_time_limit(env: Env, loop: Loop) -> None:
      bp = env.blueprint("t", command="sleep 1000", max_time="2m", ajetd="gpus: 0")
      run_id = loop.submit(bp)
      loop.started(run_id)
      t0 = loop.t0(run_id)                     # when its trial started (fake time)
      loop.run_until(t0 + 119.9)               # nothing due yet
      loop.reach(t0 + 120)                     # the daemon wakes for it by itself
      assert loop.on_time(run_id, "stopping: time_limit", t0 + 120)
      flag = loop.until_done(run_id)           # the trial exits in real time

Keep the clock behind real time until a run's trial has started: ajetd tells a run's processes
from older ones by the kernel's (real) start times, compared with the run's start.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from ajetd.adapters.store import OWNER_FILE, write_atomic
from ajetd.core.model import Run, State
from ajetd.core.naming import new_run_id
from ajetd.core.policy import Timing
from ajetd.daemon.loop import Daemon, DaemonConfig
from conftest import Env, wait_for

# The daemon never sleeps less than this (`Daemon._sleep_for`, a guard against spinning): a
# pass that falls just before a moment is followed by one this much after it.
SHORTEST_SLEEP_S = 0.005
REAL_WAIT_S = 20.0  # the longest a test waits for one real event (a start, an exit)


class FakeClock:
    """The daemon's injected clock: it stands still until the test moves it."""

    def __init__(self, start: float | None = None) -> None:
        self.now = time.time() if start is None else start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


class Loop:
    """A `Daemon` on `env`'s home and tmux socket, on a `FakeClock`, driven like `serve`."""

    def __init__(self, env: Env, clock: FakeClock | None = None, **config: Any) -> None:
        config.setdefault("timing", Timing())
        self.env = env
        self.clock = clock or FakeClock()
        self.daemon = Daemon(
            DaemonConfig(home=env.home, tmux_socket=env.socket, **config), clock=self.clock
        )
        d = self.daemon
        d.home.ensure()
        d.reconcile(self.clock())
        d.watcher.start(d.home.inbox, d.home.control, (d.home.swarm,))
        self.wake_at = self.clock()  # when the daemon wakes by itself, as its last pass said

    def close(self) -> None:
        """Stop the watcher (the runs go on in tmux; the env fixture ends them)."""
        self.daemon.watcher.stop()

    # -- driving the loop -----------------------------------------------------------------------
    def turn(self, woken: bool = True) -> None:
        """One pass at the clock's now (`woken`: as after an event)."""
        self.wake_at = self.clock() + self.daemon.turn(woken)

    def sleep(self) -> None:
        """The daemon's sleep with nothing happening: the clock moves to its next wake-up and
        it makes that pass (a real event that came meanwhile is taken first, the clock still)."""
        if self.daemon.wake.is_set():
            self.daemon.wake.clear()
            self.turn(True)
            return
        self.clock.now = max(self.clock(), self.wake_at)
        self.turn(False)

    def run_until(self, at: float, each: Callable[[], None] | None = None) -> None:
        """Every pass the daemon makes until fake moment `at` (`each` after every pass); the
        clock then stands at `at`, past the last pass."""
        while self.wake_at <= at or self.daemon.wake.is_set():
            self.sleep()
            if each is not None:
                each()
        self.clock.now = max(self.clock(), at)

    def reach(self, moment: float) -> None:
        """`run_until` the daemon has met `moment` (its pass at it, or one its shortest sleep
        later when the pass before fell just short of it)."""
        self.run_until(moment + SHORTEST_SLEEP_S)

    def run_for(self, seconds: float, each: Callable[[], None] | None = None) -> None:
        """`run_until` the next `seconds` of fake time."""
        self.run_until(self.clock() + seconds, each)

    def until(self, cond: Callable[[], Any], what: str, timeout: float = REAL_WAIT_S) -> Any:
        """Passes until `cond` holds, for real events (a start, an exit). Meanwhile the clock
        runs as real time does, no faster: what the daemon only notices by polling (a pane that
        died without its exit file) is noticed, and nothing of the test's time rules passes."""
        fake, real = self.clock(), time.monotonic()

        def once() -> Any:
            self.daemon.wake.wait(0.05)  # an exit file or an inbox file wakes it at once
            self.daemon.wake.clear()
            self.clock.now = max(self.clock(), fake + time.monotonic() - real)
            self.turn(True)
            return cond()

        return cond() or wait_for(once, timeout, what)

    def light_until(
        self,
        cond: Callable[[], Any],
        what: str,
        timeout: float = REAL_WAIT_S,
        then: Callable[[], None] | None = None,
    ) -> Any:
        """Light passes only (`Daemon.turn(False)`, the clock held short of the daemon's next
        full tick, an event that woke it left for later) until `cond` holds: what the light
        tick alone does with output and records that come in real time. `then`: done after
        the full tick that comes first (the next is a liveness period away), before them."""
        self.turn(True)
        if then is not None:
            then()

        def once() -> Any:
            self.clock.advance(0.0001)
            assert self.clock() < self.daemon.next_full_at, "a full tick came due"
            self.daemon.turn(False)
            return cond()

        return cond() or wait_for(once, timeout, what)

    # -- runs -----------------------------------------------------------------------------------
    def submit(self, blueprint: Path) -> str:
        """The blueprint into the inbox as `ajetd submit` puts it; admitted by the next pass."""
        inbox = self.daemon.home.inbox
        run_id = new_run_id(lambda i: self.daemon.home.run_dir(i).exists(), os.urandom)
        write_atomic(inbox / f"{run_id}__{blueprint.stem}.md", blueprint.read_bytes(), OWNER_FILE)
        self.until(lambda: run_id in self.daemon.runs, f"run {run_id} to be admitted")
        return run_id

    def run(self, run_id: str) -> Run:
        return self.daemon.runs[run_id]

    def started(self, run_id: str) -> float:
        """Wait until the run's current trial runs, its banner line reached the log and its
        script forked the program (a stop sent from then on reaches the program: one sent
        just before, the script takes and the program is never started), and a pass has seen
        it; that pass's fake moment (the trial's silence counts from there)."""

        def going() -> bool:
            run = self.daemon.runs.get(run_id)
            trial = run.trial if run is not None else None
            if run is None or trial is None or trial.started_at is None:
                return False
            log = Path(run.result_dir) / "logs" / f"trial-{trial.number}.log"
            text = log.read_text(errors="replace") if log.exists() else ""
            banner = text.find(f"trial {trial.number}:")  # the whole line: tmux may split it
            if banner < 0 or "\n" not in text[banner:]:
                return False
            return "exited with code" in text[banner:] or _forked(trial.pane_pid)

        self.until(going, f"run {run_id} to start")
        self.turn(True)  # the line may have landed just after the last pass looked
        return self.clock()

    def until_done(self, run_id: str) -> dict[str, Any]:
        """Wait until the run ended and its reports are written; its finish.flag."""

        def done() -> bool:
            run = self.daemon.runs[run_id]
            return run.state is State.DONE and not run.reports_pending

        try:
            self.until(done, f"run {run_id} to end")
        except AssertionError as exc:
            run = self.run(run_id)
            seen = f"{run.state.value}, signals {run.signals_sent}, events {self.events(run_id)}"
            raise AssertionError(f"{exc} (it is {seen})") from None
        flag = Path(self.run(run_id).result_dir) / "finish.flag"
        return dict(json.loads(flag.read_text()))

    def events(self, run_id: str) -> list[tuple[float, str]]:
        """The run's journal: (fake time, text)."""
        return self.daemon.home.events(run_id)

    def event_at(self, run_id: str, prefix: str) -> float | None:
        """When the first event starting with `prefix` was journaled (fake time), or None."""
        return next((at for at, text in self.events(run_id) if text.startswith(prefix)), None)

    def on_time(self, run_id: str, prefix: str, moment: float) -> bool:
        """The run's first event starting with `prefix` was journaled at `moment`, or as late
        as the daemon's shortest sleep after it."""
        at = self.event_at(run_id, prefix)
        return at is not None and moment <= at <= moment + SHORTEST_SLEEP_S

    def t0(self, run_id: str) -> float:
        """When the run's current trial started (fake time)."""
        trial = self.run(run_id).trial
        assert trial is not None and trial.started_at is not None
        return trial.started_at

    def deep_check_due(self, run_id: str) -> float | None:
        """When the run's next deep check is due, as `status` reads it from daemon.json."""
        info = json.loads((self.env.home / "daemon.json").read_text())
        due = info.get("deep_checks", {}).get(run_id)
        return None if due is None else float(due)


class Killed(BaseException):
    """The daemon's death (`kill -9`) right after a file landed: no guard catches it."""


class KillAfter:
    """Make a `Loop`'s daemon die right after a file named `after` lands (renamed into place,
    or a go file made in place); `written` lists every file that landed, in order. `disarm()`
    for the next daemon, which takes over."""

    def __init__(self, monkeypatch: Any, after: str) -> None:
        from ajetd.daemon import trials

        self.after, self.armed, self.written = after, True, []
        real_replace, real_mark = Path.replace, trials.mark

        def replace(path: Path, target: Any) -> Any:
            out = real_replace(path, target)
            self.landed(target)
            return out

        def mark(path: Path, mode: int = 0o600) -> None:
            real_mark(path, mode)
            self.landed(path)

        monkeypatch.setattr(Path, "replace", replace)
        monkeypatch.setattr(trials, "mark", mark)

    def landed(self, target: Path | str) -> None:
        self.written.append(str(target))
        if self.armed and Path(target).name == self.after:
            raise Killed(str(target))

    def disarm(self) -> None:
        self.armed = False

    def run_id(self, stem: str) -> str:
        """The id of the run whose blueprint `stem.md` was claimed."""
        return Path(next(p for p in self.written if p.endswith(f"__{stem}.md"))).name[:6]


def cut_before_it_went(env: Env, monkeypatch: Any, after: str, blueprint: Path) -> str:
    """A daemon (a `Loop`) that dies right after `after` lands while it admits and prepares
    `blueprint`'s run, whose record is then cut short (as a crash mid-write does); the run's
    id, for the next daemon to take up."""
    kill = KillAfter(monkeypatch, after)
    first = Loop(env)
    try:
        with contextlib.suppress(Killed):  # its death, the moment `after` landed
            first.submit(blueprint)
            first.turn()
    finally:
        first.close()
    assert any(Path(p).name == after for p in kill.written), f"the daemon wrote no {after}"
    kill.disarm()
    run_id = kill.run_id(blueprint.stem)
    state = env.home / "runs" / run_id / "state.json"
    state.write_bytes(state.read_bytes()[:120])
    return run_id


def _forked(pid: int | None) -> bool:
    """Whether the trial script `pid` has a child (its program), or has ended."""
    if pid is None:
        return True
    try:
        return bool(psutil.Process(pid).children())
    except psutil.Error:
        return True
