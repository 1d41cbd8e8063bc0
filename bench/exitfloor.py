"""The floor under exit -> recorded for a supervisor shaped like ajetd, beside supervisord's shape.

Issue 15 asks for ajetd's exit -> record within 2x supervisord's. The two are built
differently, and this measures what each shape costs with no supervisor logic at all, the
same program (`peers.PROG`: its last statement writes the time, then it exits) and the same
observer (`observe.Observer`, woken by inotify) for each:

- `parent pipe`: supervisord's shape. A Python parent reads the program's stdout; at its end
  (EOF: the program has exited) it appends one line to a log file, unsynced.
- `shell exit file`: the first step of ajetd's shape. A bash parent (the trial script in the
  tmux pane) runs the program, takes `$?` and the time, and writes them into an exit file with
  one `printf` (what `core.trialscript` does): the record ajetd's daemon wakes on.
- `shell + recorder`: ajetd's whole shape with nothing in it. Besides the bash parent, a
  Python recorder (the daemon's place) waits on inotify for the exit file, reads it, and
  renames an updated 1.4 KB JSON record into place (`done` in state.json, unsynced, as on
  ext4): the least any daemon woken by a file can do before its record is there.

The three are interleaved, one end at a time. Usage: python bench/exitfloor.py [ENDS]
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import PYTHON, wait
from observe import Observer
from peers import PROG, read_pid, read_time

from ajetd.adapters.endwatch import IN_CLOSE_WRITE, IN_MODIFY, IN_MOVED_TO

# The parent that reads the program's pipe and logs its end (supervisord's shape).
PIPE_PARENT = r"""
import subprocess, sys
prog, d, n, log = sys.argv[1:]
p = subprocess.Popen(["bash", prog, d, n], stdout=subprocess.PIPE)
while p.stdout.read1(65536):
    pass
code = p.wait()
with open(log, "a") as f:
    f.write(f"exited: {n} (exit status {code})\n")
"""

# The trial script's end, as `core.trialscript` writes it.
SHELL_PARENT = r"""now() { t=${EPOCHREALTIME:-$(date +%s.%N)}; t=${t/,/.}; }
bash "$1" "$2" "$3" > /dev/null
rc=$?
umask 077
now; ended="$rc $t"
{ printf '%s\n' "$ended" > "$4"; } 2>/dev/null
"""

# The least a daemon woken by the exit file can do before its record is there.
RECORDER = r"""
import json, os, select, sys
sys.path[:0] = [sys.argv[3]]
from ajetd.adapters.endwatch import EndWatch, IN_CLOSE_WRITE
folder, record = sys.argv[1:3]
watch = EndWatch((".exit",), IN_CLOSE_WRITE)
watch.watch(__import__("pathlib").Path(folder))
print("ready", flush=True)
while True:
    select.select([watch.fd], [], [])
    for path in watch.read():
        with open(path) as f:
            code, at = f.read().split()
        with open(record) as f:
            run = json.load(f)
        run.update(state="done", status="succeeded" if code == "0" else "failed",
                   exit_code=int(code), ended_at=float(at))
        tmp = record + ".tmp"
        with open(tmp, "w") as f:
            f.write(json.dumps(run, indent=2))
        os.replace(tmp, record)
        sys.exit(0)
"""

SHAPES = ("parent pipe", "shell exit file", "shell + recorder")
RECORD = {  # about the size of a run's state.json
    "run_id": "abc123",
    "state": "running",
    "purpose": "x" * 600,
    "trials": [{"number": 1, "command": "y" * 300, "started_at": 0.0}],
    "warnings": [],
}


def one_end(work: Path, shape: str, n: int, observer: Observer, seen: dict[str, float]) -> float:
    """The program's last statement -> the shape's record, as the observer saw it."""
    d = work / f"{n}"
    d.mkdir()
    prog = work / "prog.sh"
    children = []
    if shape == "parent pipe":
        log = d / "supervisor.log"
        log.touch()
        want = str(log)
        observer.watch(d)
        children.append(
            subprocess.Popen([PYTHON, "-c", PIPE_PARENT, str(prog), str(d), str(n), str(log)])
        )
    else:
        exit_file = d / "trial-1.exit"
        want = str(exit_file)
        if shape == "shell + recorder":
            record = d / "state.json"
            record.write_text(json.dumps(RECORD))
            want = str(record)
            src = str(Path(__file__).resolve().parents[1] / "supervisor")
            rec = subprocess.Popen(
                [PYTHON, "-c", RECORDER, str(d), str(record), src],
                stdout=subprocess.PIPE,
                text=True,
            )
            assert rec.stdout is not None
            rec.stdout.readline()  # its watch is in place
            children.append(rec)
        observer.watch(d)
        script = work / "shell.sh"
        children.append(
            subprocess.Popen(["bash", str(script), str(prog), str(d), str(n), str(exit_file)])
        )
    pid = wait(lambda: read_pid(d / f"pid-{n}"), 10)
    time.sleep(0.2)  # everything settled, every process asleep, as a program mid-run is
    os.kill(int(pid), signal.SIGUSR1)  # type: ignore[arg-type]
    at = float(wait(lambda: seen.get(want), 10))  # type: ignore[arg-type]
    for child in children:
        child.wait(timeout=10)
    exited = read_time(d / f"exit-{n}")
    assert exited is not None
    return at - exited


def main() -> None:
    ends = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    seen: dict[str, float] = {}

    def saw(path: str, when: float) -> None:
        seen.setdefault(path, when)

    observer = Observer(
        ("supervisor.log", ".exit", "state.json"), IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO, saw
    )
    lat: dict[str, list[float]] = {s: [] for s in SHAPES}
    with tempfile.TemporaryDirectory(prefix="exitfloor-") as tmp:
        work = Path(tmp)
        (work / "prog.sh").write_text(PROG)
        (work / "shell.sh").write_text(SHELL_PARENT)
        n = 0
        for _ in range(ends):
            for shape in SHAPES:
                n += 1
                lat[shape].append(one_end(work, shape, n, observer, seen))
    observer.close()
    print(f"{ends} ends each, interleaved; ms from the program's last statement (p50 (p90)):")
    base = statistics.median(lat["parent pipe"])
    for shape in SHAPES:
        s = sorted(lat[shape])
        p50, p90 = statistics.median(s), s[int(0.9 * (len(s) - 1))]
        print(f"  {shape:18} {p50 * 1000:6.2f} ({p90 * 1000:.2f}) ms   {p50 / base:.2f}x")
    print(f"  (load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
