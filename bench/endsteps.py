"""A trial's end, step by step: `bench/exitpath.py` with the daemon's end path timed from
inside (every step between the loop's wake-up and `finish.flag`, and the save after it).

The daemon runs under this file (`AJETD_BENCH_PY_ARGS`, see common.py), which wraps the
functions of the end path with clock reads before it starts the daemon; each end's steps are
written to a file as one JSON line (each step's start and end, in ms from the time the trial
script wrote its exit file). The bench then prints, per step, the p50 of its own time and of
when it ended. A probe only: the daemon's code is not changed.
With `AJETD_ENDSTEPS_AGED=1` each program is taken as older than a minute (`_detached`'s
one pass over /proc, made only at a success within its first minute, is skipped), as the
serial ends of `bench/peers.py` are: programs that lived through its CPU window.
Usage: python bench/endsteps.py [LIVE] [ENDS] [--gap S]   (exitpath.py's arguments)
"""

from __future__ import annotations

import functools
import json
import os
import runpy
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

OUT = "AJETD_ENDSTEPS_OUT"
_steps: list[tuple[str, float, float]] = []
_woken: list[float] = []


def _timed(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.time()
        try:
            return fn(*args, **kwargs)
        finally:
            _steps.append((label, t0, time.time()))

    return wrapper


def _probe() -> None:
    """In the daemon: wrap the end path's steps, then run `python -m ajetd ...` as asked."""
    from ajetd.adapters import procs, store
    from ajetd.core import launchshape
    from ajetd.daemon import act, ending, loop, observe
    from ajetd.pictures import drawing
    from ajetd.views import report

    out = Path(os.environ[OUT])
    if os.environ.get("AJETD_ENDSTEPS_AGED"):
        launchshape.DETACHED_WITHIN_S = 0.0  # type: ignore[misc]
    record_ends = loop.Daemon.record_ends

    def woken(self: Any, now: float) -> bool:
        if self.watcher.ends_waiting():
            _steps.clear()
            _woken[:] = [time.time()]
        return record_ends(self, now)

    loop.Daemon.record_ends = woken  # type: ignore[method-assign]
    for cls, name in (
        (observe.Observe, "observe"),
        (act.Act, "supervise"),
        (act.Act, "_deep_check"),
        (act.Act, "_store"),
        (act.Act, "_act"),
        (act.Act, "_keep"),
        (act.Act, "on_finish_due"),
        (store.Home, "save_run"),
        (store.Home, "append_event"),
        (store.Home, "blueprint_text"),
    ):
        setattr(cls, name, _timed(name, getattr(cls, name)))
    for module, name in (
        (ending, "end_trial"),
        (ending, "read_metrics"),
        (ending, "reap_leftovers"),
        (ending, "await_output"),
        (ending, "publish_reports"),
        (ending, "_flag_written"),
        (ending, "write_reports"),
        (ending, "_journal"),
        (ending, "log_tail"),
        (ending, "parse_blueprint"),
        (ending, "write_all_atomic"),
        (drawing, "draw_final"),
        (procs, "run_pids"),
        (procs, "_carries"),
        (procs, "foreign_sessions"),
        (procs, "_wait_gone"),
        (report, "render_results"),
        (report, "render_trials"),
        (store, "_sync_all"),
        (store, "_sync_folders"),
    ):
        if hasattr(module, name):  # an older tree may lack one
            setattr(module, name, _timed(name, getattr(module, name)))
    finish_run = ending.finish_run

    def finish(home: Any, run: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.time()
        ended = finish_run(home, run, *args, **kwargs)
        t1 = time.time()
        steps = [("finish_run", t0, t1), *_steps]
        _steps.clear()
        exit_at = ended.trial.ended_at if ended.trial else None

        def flush() -> None:
            base = exit_at or t0
            line = {
                "run": ended.run_id,
                "woken": (_woken[0] - base) * 1000 if _woken else None,
                "steps": [(s, (a - base) * 1000, (b - base) * 1000) for s, a, b in steps],
            }
            with out.open("a") as handle:
                handle.write(json.dumps(line) + "\n")

        flush()
        return ended

    ending.finish_run = finish  # type: ignore[assignment]
    sys.argv = sys.argv[2:]  # ["-m", "ajetd", ...] -> ["ajetd", ...]
    sys.argv[0] = "ajetd"
    runpy.run_module("ajetd", run_name="__main__", alter_sys=True)


def _report(path: Path, count: int) -> None:
    lines = path.read_text().splitlines()[:count]  # the timed ends, not the others' at close
    ends = [json.loads(line) for line in lines if line.strip()]
    print(f"{len(ends)} ends timed in the daemon (ms from the exit file's write; p50 (p90))")
    woken = [e["woken"] for e in ends if e["woken"] is not None]
    if woken:
        print(f"  {'loop woken (record_ends)':34} at {_p(woken)}")
    order: list[str] = []
    took: dict[str, list[float]] = {}
    done_at: dict[str, list[float]] = {}
    for end in ends:
        seen: dict[str, int] = {}
        for name, a, b in end["steps"]:
            seen[name] = seen.get(name, 0) + 1
            key = name if seen[name] == 1 else f"{name} #{seen[name]}"
            if key not in took:
                order.append(key)
            took.setdefault(key, []).append(b - a)
            done_at.setdefault(key, []).append(b)
    order.sort(key=lambda k: statistics.median(done_at[k]))
    for key in order:
        print(f"  {key:34} took {_p(took[key]):18} ended at {_p(done_at[key])}")


def _p(samples: list[float]) -> str:
    s = sorted(samples)
    return f"{statistics.median(s):.2f} ({s[int(0.9 * (len(s) - 1))]:.2f})"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "-m":
        _probe()
        return
    fd, name = tempfile.mkstemp(prefix="endsteps-", suffix=".jsonl")
    os.close(fd)
    os.environ[OUT] = name
    os.environ["AJETD_BENCH_PY_ARGS"] = str(Path(__file__).resolve())
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import exitpath

    try:
        exitpath.main()
        numbers = [a for a in sys.argv[1:] if a.isdigit()]
        _report(Path(name), int(numbers[1]) if len(numbers) > 1 else 20)
    finally:
        keep = os.environ.get("AJETD_ENDSTEPS_KEEP")  # the raw lines, for a closer look
        if keep:
            os.replace(name, keep)
        else:
            os.unlink(name)


if __name__ == "__main__":
    main()
