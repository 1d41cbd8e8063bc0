"""A run's FIFOs (`runs/<id>/.pipes/`, `trialscript.PIPES`) removed once nothing can use them.

Each trial has three: its wake-up (`trial-N.wake`, read by its script until it is let go) and
the two through which its end asks its log's writer to check the log's folder
(`trialscript.writer_fifos`: `trial-N.log.check`, `.checked`, held open by that writer, the
`pipe-pane` bash, from its start to its exit). A writer outlives its trial: tmux closes a
pane's pipe only when the pane is respawned for the next trial or its session is killed, and a
writer about to exit opens the ask FIFO again by name (`exec 6<> "$f"`, which would make a
plain file where the FIFO was removed). So a trial's FIFOs go only when no process has any of
them open for reading: an open for writing that does not block (`O_NONBLOCK`) fails with
ENXIO exactly then, and nothing opens them anew once that is so (its script has ended, its
writer is gone). Left, they made `cat runs/<id>/.pipes/*` block for ever (walk87 F14).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import stat
from pathlib import Path

from ajetd.core.trialscript import PIPES

log = logging.getLogger(__name__)
_TRIAL = re.compile(r"trial-(\d{1,9})\.")  # the trial a FIFO belongs to, from its name


def _in_use(path: Path) -> bool:
    """Whether a process has this FIFO open for reading (a file that is no FIFO, or gone, is
    none of these pipes: not in use, never removed here)."""
    try:
        if not stat.S_ISFIFO(os.lstat(path).st_mode):
            return False
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    except OSError as exc:
        return exc.errno != errno.ENXIO  # ENXIO: no reader; anything else: assume one
    os.close(fd)
    return True


def remove_idle(run_dir: Path, live_trial: int | None) -> bool:
    """Remove the FIFOs of the run's trials (all but `live_trial`'s, whose script and writer
    use them) that no process holds open any more, and the folder once empty. True when
    nothing is left to remove later: only `live_trial`'s, or none."""
    pipes = run_dir / PIPES
    try:
        names = os.listdir(pipes)
    except FileNotFoundError:
        return True
    except OSError as exc:
        log.warning("%s not read: %s", pipes, exc)
        return True
    trials: dict[int, list[Path]] = {}
    for name in names:
        match = _TRIAL.match(name)
        if match is not None and int(match.group(1)) != live_trial:
            trials.setdefault(int(match.group(1)), []).append(pipes / name)
    left = False
    for paths in trials.values():
        if any(_in_use(p) for p in paths):
            left = True  # its writer lives on (a dead pane's session still kept)
            continue
        for path in paths:
            with contextlib.suppress(OSError):
                if stat.S_ISFIFO(os.lstat(path).st_mode):
                    path.unlink()
    with contextlib.suppress(OSError):  # not empty: the live trial's, or another's file
        pipes.rmdir()
    return not left
