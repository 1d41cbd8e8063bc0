"""The daemon's environment, in a file a trial's pane starts from (DESIGN §3: a trial's
environment is the daemon's, never the tmux server's; `TrialSpec.env_file`, walk98 F11)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ajetd.adapters.store import write_atomic
from ajetd.core.trialscript import environ_file_bytes

ENVIRON = "environ"  # a run's file of the daemon's environment, as its panes start from it


def keep_environ(path: Path, *, again: bool = False) -> str:
    """`path`, holding the daemon's environment as a pane's script loads it. Owner-only (it
    holds the daemon's keys: never on a command line, which `ps` shows, nor in a tmux message,
    at most 16 KiB) and never written through a link put in its place (`write_atomic`).
    Written once, at a run's first trial: a run's later trials, also those a restarted daemon
    launches, keep it, so every trial of a run has one environment; `again`: written anew
    (a swarm server, whose folder outlives the daemon that started it)."""
    try:
        kept = not again and stat.S_ISREG(path.lstat().st_mode)
    except FileNotFoundError:
        kept = False
    if not kept:
        write_atomic(path, environ_file_bytes(os.environb), 0o600)
    return str(path)
