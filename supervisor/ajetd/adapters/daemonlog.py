"""The detached daemon's log, `$AJETD_HOME/daemon.log`, bounded in size: once a line would take
it past `max_bytes` it is renamed `daemon.log.1` (the older ones `.2`, ... up to `keep`, the
oldest dropped) and a new one begun. A daemon that runs for months wrote to one file for ever
(session 34's gaps: nothing rotated it, and `logrotate` was left to the user).

The daemon's stdout and stderr (a traceback, a warning printed outside `logging`) went to the
same file when `ajetd daemon --detach` started it; after each rotation they are pointed at the
new file too, so nothing goes on growing the renamed one. Each file is owner-only and opened
without following a symbolic link, as `daemonctl` opens the first.
"""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
import sys
from pathlib import Path

from ajetd.adapters.store import OWNER_FILE

MAX_BYTES = 16 << 20  # a daemon log file, at most (one line may pass it)
KEEP = 3  # rotated files kept beside it: daemon.log.1 ... daemon.log.3
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class OwnerRotatingHandler(logging.handlers.RotatingFileHandler):
    """The stdlib's rotating handler, its files owner-only and never opened through a link;
    after a rotation the process's stdout and stderr follow the new file (`follow_std`)."""

    def __init__(self, path: Path, max_bytes: int, keep: int, follow_std: bool) -> None:
        self.follow_std = follow_std
        super().__init__(path, maxBytes=max_bytes, backupCount=keep, encoding="utf-8")

    def _open(self) -> io.TextIOWrapper:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(self.baseFilename, flags, OWNER_FILE)
        return open(fd, "a", encoding="utf-8", errors="backslashreplace")

    def doRollover(self) -> None:  # noqa: N802 (the stdlib's name)
        super().doRollover()
        if self.follow_std and self.stream is not None:
            sys.stdout.flush()
            sys.stderr.flush()
            for std in (1, 2):
                os.dup2(self.stream.fileno(), std)


def log_to(path: Path, level: str, max_bytes: int = MAX_BYTES, keep: int = KEEP) -> None:
    """The root logger writes to `path`, rotated at `max_bytes`, `keep` older files kept; the
    process's stdout and stderr follow it across rotations where they are that file now."""
    try:
        same = os.path.samestat(os.fstat(2), os.stat(path))
    except OSError:
        same = False
    handler = OwnerRotatingHandler(path, max_bytes, keep, follow_std=same)
    handler.setFormatter(logging.Formatter(FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler])
