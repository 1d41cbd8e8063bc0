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

from ajetd.adapters.diskfull import FULL_BELOW_BYTES, free_bytes, says_full
from ajetd.adapters.store import open_owner
from ajetd.diagnosis.scan import tail_bytes
from ajetd.pictures.drawing import wanted

log = logging.getLogger(__name__)


class Plotter:
    """Draws progress.png in a child process, one at a time per campaign, never waiting for
    it: the daemon's loop goes on, and a failed plot is logged, never the campaign's failure."""

    def __init__(self) -> None:
        # campaign id -> its drawing, the drawing's stderr, and what it draws (as `due`)
        self.running: dict[str, tuple[subprocess.Popen[bytes], Path, tuple[Path, Path]]] = {}
        self.due: dict[str, tuple[Path, Path]] = {}  # campaign id -> (plot.json, png)
        self.undrawn: dict[str, tuple[Path, Path]] = {}  # as `due`: met a full disk

    def request(self, campaign_id: str, source: Path, png: Path) -> None:
        if not wanted():  # AJETD_PICTURES=off
            return
        self.due[campaign_id] = (source, png)
        self._start()

    def reap(self) -> None:
        """Collect the finished drawings; one that failed on a full disk is drawn again once
        its folder has room (looked at here, one `statvfs` a pass while it waits), not only
        at the campaign's next ledger row."""
        for campaign_id, (_, png) in list(self.undrawn.items()):
            if (free_bytes(png.parent) or 0) >= FULL_BELOW_BYTES:
                self.due.setdefault(campaign_id, self.undrawn.pop(campaign_id))
        for campaign_id, (proc, errors, drawn) in list(self.running.items()):
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
                if says_full(said) and campaign_id not in self.due:
                    self.undrawn[campaign_id] = drawn
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
            self.running[campaign_id] = (proc, errors, (source, png))
