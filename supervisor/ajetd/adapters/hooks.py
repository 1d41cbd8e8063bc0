"""`[ajetd] on_finish` / `on_attention`: the user's commands, run with the run's JSON on stdin
(and its id, status and result dir as AJETD_RUN_ID, AJETD_STATUS, AJETD_RESULT_DIR, for a
one-line hook that does not parse JSON).

The command is the user's on purpose (like the launch command), so it goes to `bash -c` as
written. Hooks never block the loop: each runs detached, its output appended to the run's
`hooks.log`; finished ones are reaped at the next tick, a failing one is logged (never
fatal), and one still running after the timeout is killed with its whole process group. Each
event fires its hooks once: the daemon's own (`ajetd daemon --on-finish/--on-attention`),
then the blueprint's.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ajetd.adapters.store import open_owner

log = logging.getLogger(__name__)


@dataclass
class _Running:
    proc: subprocess.Popen[bytes]
    name: str
    log_file: Path
    started: float


@dataclass
class Hooks:
    timeout_s: float = 60.0
    _running: list[_Running] = field(default_factory=list)

    def fire(self, run_dir: Path, name: str, command: str, payload: dict[str, Any]) -> None:
        """Start `command` for hook `name`; a failure to start is logged, never raised."""
        if not command:
            return
        out = run_dir / "hooks.log"
        try:
            with open_owner(out) as sink:
                sink.write(f"--- {name}: {command}\n".encode())
                sink.flush()
                proc = subprocess.Popen(  # noqa: S602 - the user's own hook command, on purpose
                    command,
                    shell=True,
                    executable="/bin/bash",
                    stdin=subprocess.PIPE,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    cwd=run_dir,
                    start_new_session=True,
                    env={
                        **os.environ,
                        "AJETD_RUN_ID": str(payload.get("run_id", "")),
                        "AJETD_STATUS": str(payload.get("status") or ""),
                        "AJETD_RESULT_DIR": str(payload.get("result_dir") or ""),
                        "AJETD_HOOK": name,
                    },
                )
        except OSError as exc:
            log.warning("hook %s could not start: %s", name, exc)
            return
        assert proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(payload, ensure_ascii=False).encode())
            proc.stdin.close()
        except OSError:
            pass  # the hook does not read its input: its choice
        self._running.append(_Running(proc, name, out, time.monotonic()))

    def reap(self) -> None:
        """Collect hooks that ended (no zombies); log failures; kill those past the timeout."""
        still = []
        for hook in self._running:
            code = hook.proc.poll()
            if code is None and time.monotonic() - hook.started < self.timeout_s:
                still.append(hook)
                continue
            if code is None:
                with contextlib.suppress(OSError):
                    os.killpg(hook.proc.pid, signal.SIGKILL)
                hook.proc.wait()
                note = f"timed out after {self.timeout_s:g} s: killed"
            elif code != 0:
                note = f"failed with exit code {code}"
            else:
                continue
            log.warning("hook %s (%s) %s", hook.name, hook.log_file, note)
            with contextlib.suppress(OSError), open(hook.log_file, "a") as sink:
                sink.write(f"--- {hook.name} {note}\n")
        self._running = still
