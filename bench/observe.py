"""When a supervisor's record appears, as an observer woken by the kernel sees it.

Why not the record's mtime: on this machine's kernel (6.18, HZ=250) a file's times are often
the coarse clock's, which moves in 4 ms steps; a record written 3 ms after the program's last
statement could carry a time before it (peers.py read 0.0 ms p50 for supervisord's log line and,
once, for ajetd's `done`, and ajetd's `done` and `finish.flag` came exact multiples of 4 ms
apart). Here a thread waits on inotify for the folders holding the records and stamps each
event with `time.time()` as it wakes: the same observer, with the same wake-up cost (tens of
microseconds), for every system, on the same clock as the program's `date +%s.%N`.
"""

from __future__ import annotations

import selectors
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ajetd.adapters.endwatch import EndWatch


class Observer:
    """Calls `seen(path, when)` from its own thread for each watched file event."""

    def __init__(self, names: tuple[str, ...], events: int, seen: Callable[[str, float], None]):
        self._watch = EndWatch(names, events)
        self._seen = seen
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._watch.fd, selectors.EVENT_READ)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="observer", daemon=True)
        self._thread.start()

    def watch(self, folder: Path) -> None:
        self._watch.watch(folder)

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self._selector.select(0.2):
                continue
            when = time.time()
            for path in self._watch.read():
                self._seen(path, when)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._selector.close()
        self._watch.close()
