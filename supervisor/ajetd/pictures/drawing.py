"""A run's pictures (curves.png, gpus.png): what to draw, and the child process that draws.

matplotlib is slow to import and has no place in the daemon: every picture is drawn by `python
-m ajetd.pictures.runcurves` in a child process. While a run lives, a deep check that finds news
starts one without waiting for it (at most one per run at a time, and not more often than
LIVE_EVERY_S), so a person can open the curves mid-run. When the run ends, the final pictures
are drawn once its data is final and before results.md and finish.flag are written, by a child
the loop does not wait for (`FinalDrawings`: at most MAX_FINAL at a time, each given at most
FINAL_TIMEOUT_S): the reports follow once it ended. Waiting for it in the loop (1-2 s each)
held every other run unsupervised while ends came in a burst: 40 ends at once made a time
limit enforced two minutes late (walk 85). A plot that fails or times out is logged and
results.md says so, the mid-run pictures it should have replaced are removed (they show an
older best), and the run's outcome is never touched.

`AJETD_PICTURES=off` in the daemon's environment draws none of them (nor a campaign's
progress.png): no child is started and results.md links no picture. It is the test suite's
setting (a matplotlib child costs ~1.2 s of CPU, the most a short test run's end costs); the
tests that look at pictures draw them (tests/test_plots.py end to end).

GPU samples for gpus.png are appended to `runs/<id>/gpus.jsonl` by the daemon at each GPU
sample (bounded by MAX_GPU_LOG_BYTES).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ajetd.adapters.diskfull import FULL_BELOW_BYTES, free_bytes, says_full
from ajetd.adapters.store import OWNER_FILE, Home, open_owner, write_json
from ajetd.adapters.trialfiles import report_dir
from ajetd.core import resultfiles
from ajetd.core.gpuuse import RunGpu
from ajetd.core.model import Run
from ajetd.core.options import Options
from ajetd.diagnosis.scan import tail_bytes
from ajetd.frameworks.valresults import metric_series, more_note, shown_keys
from ajetd.pictures.runcurves import MAX_GPU_LOG_BYTES, MAX_PANELS, segments, stepped

log = logging.getLogger(__name__)
FINAL_TIMEOUT_S = 60.0
MAX_FINAL = 2  # final drawings at once: each child imports matplotlib (~70 MiB, ~1 s of CPU)
LIVE_EVERY_S = 30.0
PICTURES = resultfiles.PICTURES
_LIVE: dict[str, subprocess.Popen[bytes]] = {}  # run id -> the mid-run drawing, if any
OFF_ENV = "AJETD_PICTURES"  # `off`: no pictures drawn


def wanted() -> bool:
    """Whether pictures are drawn at all (`AJETD_PICTURES=off`: none)."""
    return os.environ.get(OFF_ENV, "").strip().lower() != "off"


def gpu_file(home: Home, run_id: str) -> Path:
    return home.run_dir(run_id) / "gpus.jsonl"


def record_gpus(home: Home, run_id: str, now: float, seen: Sequence[RunGpu]) -> None:
    """Append one GPU sample of a run (index, utilisation, the run's memory) for gpus.png."""
    line = {
        "at": now,
        "gpus": [{"index": g.index, "util": g.utilization, "mem": g.memory_mib} for g in seen],
    }
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW
    path = gpu_file(home, run_id)
    try:
        fd = os.open(path, flags, OWNER_FILE)
    except OSError as exc:
        log.warning("run %s: cannot record GPU samples in %s: %s", run_id, path, exc.strerror)
        return
    try:
        if os.fstat(fd).st_size < MAX_GPU_LOG_BYTES:
            os.write(fd, (json.dumps(line) + "\n").encode())
    except OSError as exc:  # a full home: this sample is missing from gpus.png, no more
        log.warning("run %s: GPU sample not recorded in %s: %s", run_id, path, exc.strerror)
    finally:
        os.close(fd)


def segment_labels(run: Run) -> list[str]:
    """A name per piece of the history: `trial N` (with the fix it brought) where the pieces
    and the trials that wrote records match one to one, else `part N`."""
    pieces = len(segments(stepped(list(run.history))[0]))
    trials = [t for t in run.trials if t.started_at is not None]
    if pieces != len(trials):
        return [f"part {n + 1}" for n in range(pieces)]
    labels = []
    for n, trial in enumerate(trials):
        fix = run.fixes[n - 1] if 0 < n <= len(run.fixes) else ""
        labels.append(f"trial {trial.number}" + (f" (after fix {fix})" if fix else ""))
    return labels


def spec(home: Home, run: Run) -> dict[str, Any]:
    """Everything runplot needs, as JSON."""
    history = run.history  # every metric with a value, the judging one first
    keys = [k for k in shown_keys(history, run.metric) if metric_series(history, k)]
    purpose = (run.purpose or "").splitlines()[0][:80] if run.purpose else ""
    return {
        "run_id": run.run_id,  # in each picture's PNG: `programfiles.drawn_by`
        "result_dir": str(report_dir(home, run)),  # never through a link put in its path
        "title": f"run {run.run_id}: {purpose}",
        "keys": keys[:MAX_PANELS],
        "more": more_note(keys[MAX_PANELS:]),
        "history": list(run.history),
        "segment_labels": segment_labels(run),
        "trial_starts": [t.started_at for t in run.trials[1:] if t.started_at is not None],
        "started_at": run.started_at,
        "gpu_file": str(gpu_file(home, run.run_id)),
    }


def _argv(spec_file: Path) -> list[str]:
    return [sys.executable, "-m", "ajetd.pictures.runcurves", str(spec_file)]


def _env() -> dict[str, str]:
    return {**os.environ, "MPLBACKEND": "Agg"}


def _has_data(home: Home, run: Run) -> bool:
    return bool(run.history) or gpu_file(home, run.run_id).exists()


def draw_final(home: Home, run: Run, timeout: float = FINAL_TIMEOUT_S) -> tuple[list[str], str]:
    """Draw the ended run's pictures and wait for them: (pictures drawn, what went wrong).
    The same child and outcome as the daemon's `FinalDrawings`, waited for here by a caller
    outside its loop (reports written again, a rejection's, tests)."""
    finals = FinalDrawings(limit=1, timeout=timeout)
    finals.start(run.run_id)  # an older mid-run drawing must not land last
    if not final_due(home, run):
        finals.forget(run.run_id)
        return [], ""
    drawn = finals.outcome(home, run)  # the child started (or why it could not be)
    final = finals.runs.get(run.run_id)
    if drawn is None and final is not None and final.proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            final.proc.wait(timeout)
        drawn = finals.outcome(home, run)  # its outcome, or ended as past `timeout`
    assert drawn is not None
    return drawn


def final_due(home: Home, run: Run) -> bool:
    """Whether the ended run has final pictures to draw (a result dir, pictures wanted, data)."""
    return bool(run.result_dir) and wanted() and _has_data(home, run)


@dataclass
class _Final:
    """One ended run's final drawing: queued (no child yet) or drawing since `started`."""

    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    out: Path | None = None  # the child's stdout: its last line lists what it drew
    options: Options | None = None  # the run's options as the daemon held them, for the reports
    # its reports wait for a full (or unwritable) folder: not looked at until that folder's
    # retry is due (`park`), so no quick wake-up is due for it
    parked: bool = False

    def running(self) -> bool:
        """Its child is drawing now (started, not ended)."""
        return self.proc is not None and self.proc.poll() is None


class FinalDrawings:
    """The ended runs' final pictures, each drawn by a child the loop never waits for; the
    reports and finish.flag come once it ended (`outcome`), so a burst of ends holds no
    other run's supervision. At most `limit` children draw at once (each imports
    matplotlib); the others wait their turn in the order they ended."""

    def __init__(
        self,
        limit: int = MAX_FINAL,
        timeout: float = FINAL_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit, self.timeout, self.clock = limit, timeout, clock
        self.runs: dict[str, _Final] = {}  # run id -> its drawing, in the order they ended

    def pending(self) -> bool:
        """The loop should look again soon: a child draws (its end brings the reports), or a
        drawing waits to be started (queued, its reports' folder not known to refuse). One
        parked for a full folder, or whose child ended while its folder refuses the reports,
        wakes nothing: it is taken up when that folder's retry is due (it woke the loop every
        DRAW_POLL_S for as long as the disk stayed full)."""
        return any(f.running() or (f.proc is None and not f.parked) for f in self.runs.values())

    def park(self, run_id: str) -> None:
        """The run's reports wait for a folder that refuses writes: its drawing, queued or
        ended, is not looked for until `outcome` is asked again."""
        final = self.runs.get(run_id)
        if final is not None:
            final.parked = True

    def holds(self, run_id: str) -> bool:
        return run_id in self.runs

    def start(self, run_id: str, options: Options | None = None) -> None:
        """Queue the ended run's final drawing; a mid-run one still going is ended first (it
        must not land last, over the final pictures). `options`: kept for its reports."""
        live = _LIVE.pop(run_id, None)
        if live is not None and live.poll() is None:
            live.kill()
            live.wait()
        self.runs.setdefault(run_id, _Final(options=options))

    def options(self, run_id: str) -> Options | None:
        """The run's options given to `start` (None: not held, or none given)."""
        final = self.runs.get(run_id)
        return final.options if final is not None else None

    def outcome(self, home: Home, run: Run) -> tuple[list[str], str] | None:
        """The run's final drawing's outcome (pictures drawn, what went wrong) once it ended,
        else None (queued or drawing: started here when its turn has come, from the record
        as it is now). A child past `timeout` is killed and said to be."""
        final = self.runs.get(run.run_id)
        if final is None:
            return None
        final.parked = False
        if final.proc is None:  # a child that ended holds no place (its reports may wait)
            drawing = sum(1 for f in self.runs.values() if f.running())
            first = [r for r, f in self.runs.items() if f.proc is None][: self.limit - drawing]
            if run.run_id not in first:
                return None
            failed = self._spawn(home, run, final)
            if failed is not None:
                del self.runs[run.run_id]
                log.error("run %s: pictures not drawn: %s", run.run_id, failed)
                drawn, note = _found(home, run)
                return drawn, failed + note
            return None
        assert final.proc is not None
        if final.proc.poll() is None:
            if self.clock() - final.started < self.timeout:
                return None
            final.proc.kill()
            final.proc.wait()
            problem = f"drawing took longer than {self.timeout:.0f}s and was ended"
        else:
            problem = _said(final.proc.returncode, home, run.run_id)
        del self.runs[run.run_id]
        if not problem and final.out is not None:
            with contextlib.suppress(ValueError, IndexError, KeyError, TypeError, OSError):
                last = tail_bytes(final.out, 65536).decode(errors="replace").splitlines()[-1]
                return list(json.loads(last)["drawn"]), ""
            problem = "the plotter said nothing usable"
        log.error("run %s: pictures not drawn: %s", run.run_id, problem)
        drawn, note = _found(home, run)
        return drawn, problem + note

    def _spawn(self, home: Home, run: Run, final: _Final) -> str | None:
        """Start the child; what went wrong where it could not be started, else None."""
        folder = home.run_dir(run.run_id)
        spec_file, out, errors_file = (folder / n for n in _FINAL_FILES)
        try:
            write_json(spec_file, spec(home, run), OWNER_FILE)
            with (
                open_owner(out, truncate=True) as stdout,
                open_owner(errors_file, truncate=True) as stderr,
            ):
                final.proc = subprocess.Popen(
                    _argv(spec_file),
                    stdin=subprocess.DEVNULL,
                    stdout=stdout,
                    stderr=stderr,
                    env=_env(),
                )
        except OSError as exc:
            return f"the plotter could not run: {exc}"
        final.started, final.out = self.clock(), out
        return None

    def forget(self, run_id: str) -> None:
        """Stop drawing for a run whose reports no longer wait (its record went away)."""
        final = self.runs.pop(run_id, None)
        if final is not None and final.proc is not None and final.proc.poll() is None:
            final.proc.kill()
            final.proc.wait()


# the final drawing's spec, its stdout (what it drew) and stderr, in the run's folder
_FINAL_FILES = ("plot-spec.json", "plot-final.out", "plot-final.log")


def _said(code: int, home: Home, run_id: str) -> str:
    """What went wrong in a child that exited `code` ("" for 0): its stderr's last line."""
    if code == 0:
        return ""
    errors = home.run_dir(run_id) / _FINAL_FILES[2]
    tail = tail_bytes(errors, 8000).decode(errors="replace").strip().splitlines()[-1:] or [""]
    return f"the plotter exited with code {code}: {tail[0][-300:]}"


def _found(home: Home, run: Run) -> tuple[list[str], str]:
    """After a failed final drawing: the pictures in the run's report folder it drew before it
    failed, and what the reports add to the problem. Those from before the run ended were
    drawn mid-run and show an older state (a best that is not the best): removed, so nothing
    shows them as its last (a full result dir left a stale curves.png linked beside "Pictures
    not drawn", walk 30)."""
    folder, ended = report_dir(home, run), run.ended_at or 0.0
    drawn, removed, note = [], [], ""
    for name in PICTURES:
        try:
            if (folder / name).stat().st_mtime >= ended:
                drawn.append(name)
                continue
            (folder / name).unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:  # kept, but linked by nothing: the reports say so
            log.warning("stale %s not removed: %s", folder / name, exc)
            note += f"; the mid-run {name} in the result dir shows an older state"
            continue
        removed.append(name)
    if removed:
        note += f"; the mid-run {' and '.join(removed)}, which showed an older state, were removed"
    return drawn, note


class LivePlots:
    """Mid-run drawings, started from deep checks and never waited for."""

    def __init__(self, every_s: float = LIVE_EVERY_S) -> None:
        self.every_s = every_s
        self.started: dict[str, float] = {}
        self.records: dict[str, int] = {}  # validation records at the last drawing
        self.failed: dict[str, float] = {}  # when the plotter last could not start (a full home)
        self.undrawn: set[str] = set()  # runs whose last drawing met a full result dir
        self.errors: dict[str, Path] = {}  # run id -> its drawing's stderr (plot.log)

    def request(self, home: Home, run: Run, now: float) -> None:
        if not wanted():
            return
        running = _LIVE.get(run.run_id)
        if running is not None and running.poll() is None:
            return
        if now - self.failed.get(run.run_id, float("-inf")) < self.every_s:
            return  # it could not start: tried again at the drawing pace, not every tick
        first_curves = bool(run.history) and not self.records.get(run.run_id)
        if not first_curves and now - self.started.get(run.run_id, float("-inf")) < self.every_s:
            return  # the first validation record is drawn at once, later ones at this pace
        folder = report_dir(home, run) if run.result_dir else None
        if folder is None or not folder.is_dir() or not _has_data(home, run):
            return
        if run.run_id in self.undrawn and (free_bytes(folder) or 0) < FULL_BELOW_BYTES:
            return  # still full: a child would fail again; the next deep check looks again
        spec_file = home.run_dir(run.run_id) / "plot-spec-live.json"
        try:
            write_json(spec_file, spec(home, run), OWNER_FILE)
            errors_file = home.run_dir(run.run_id) / "plot.log"
            with open_owner(errors_file, truncate=True) as errors:
                _LIVE[run.run_id] = subprocess.Popen(
                    _argv(spec_file),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=errors,
                    env=_env(),
                )
        except OSError as exc:
            log.warning("run %s: cannot start the plotter: %s", run.run_id, exc)
            self.failed[run.run_id] = now
            return
        self.failed.pop(run.run_id, None)
        self.undrawn.discard(run.run_id)
        self.errors[run.run_id] = errors_file
        self.started[run.run_id] = now
        self.records[run.run_id] = len(run.history)

    def forget(self, run_id: str) -> None:
        """The run ended (its final pictures are drawn by draw_final)."""
        self.started.pop(run_id, None)
        self.records.pop(run_id, None)
        self.failed.pop(run_id, None)
        self.undrawn.discard(run_id)
        self.errors.pop(run_id, None)

    def reap(self) -> None:
        """Collect the finished drawings. One that failed on a full disk (its result dir's)
        is not counted as drawn: the next deep check draws again at once where there is room
        by then (`request`), not LIVE_EVERY_S after it at the soonest (a deep check's backoff
        reaches 16 min: the curves stayed missing that long)."""
        for run_id, proc in list(_LIVE.items()):
            if proc.poll() is None:
                continue
            del _LIVE[run_id]
            errors = self.errors.pop(run_id, None)
            said = tail_bytes(errors, 8000).decode(errors="replace") if errors else ""
            if proc.returncode != 0 and says_full(said):
                self.started.pop(run_id, None)
                self.records.pop(run_id, None)
                self.undrawn.add(run_id)
                log.warning(
                    "run %s: mid-run pictures not drawn (exit %s); see runs/%s/plot.log",
                    run_id,
                    proc.returncode,
                    run_id,
                )
