"""A campaign's progress.png: the child process that draws it (`python -m
ajetd.pictures.progress`), started without waiting, one at a time per campaign.

The daemon's loop goes on while it draws, and a failed plot is logged, never the campaign's
failure (as `ajetd.pictures.drawing` does for a run's pictures).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from ajetd.adapters.store import open_owner
from ajetd.diagnosis.scan import tail_bytes
from ajetd.pictures.drawing import wanted

log = logging.getLogger(__name__)


class Plotter:
    """Draws progress.png in a child process, one at a time per campaign, never waiting for
    it: the daemon's loop goes on, and a failed plot is logged, never the campaign's failure."""

    def __init__(self) -> None:
        self.running: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
        self.due: dict[str, tuple[Path, Path]] = {}  # campaign id -> (plot.json, png)

    def request(self, campaign_id: str, source: Path, png: Path) -> None:
        if not wanted():  # AJETD_PICTURES=off
            return
        self.due[campaign_id] = (source, png)
        self._start()

    def reap(self) -> None:
        for campaign_id, (proc, errors) in list(self.running.items()):
            if proc.poll() is None:
                continue
            del self.running[campaign_id]
            if proc.returncode != 0:
                said = tail_bytes(errors, 8000).decode(errors="replace")  # never all of it
                tail = said[-2000:].strip() or "(it said nothing, or what it said is unreadable)"
                log.warning(
                    "campaign %s: progress.png not drawn (exit %s): %s",
                    campaign_id,
                    proc.returncode,
                    tail,
                )
        self._start()

    def _start(self) -> None:
        for campaign_id in [c for c in self.due if c not in self.running]:
            source, png = self.due.pop(campaign_id)
            errors = source.with_name("plot.log")
            try:
                with open_owner(errors, truncate=True) as out:
                    proc = subprocess.Popen(
                        [sys.executable, "-m", "ajetd.pictures.progress", str(source), str(png)],
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        env={**os.environ, "MPLBACKEND": "Agg"},
                    )
            except OSError as exc:
                log.warning("campaign %s: cannot start the plotter: %s", campaign_id, exc)
                continue
            self.running[campaign_id] = (proc, errors)
