"""`[ajetd] on_finish` / `on_attention`: the user's commands, run with the run's JSON on stdin.

The command is the user's on purpose (like the launch command), so it goes to `bash -c` as
written. Hooks never block the loop: each runs detached, its output appended to the run's
`hooks.log`, and finished ones are reaped at the next tick.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


@dataclass
class Hooks:
    _running: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def fire(self, run_dir: Path, name: str, command: str, payload: dict[str, Any]) -> None:
        """Start `command` for hook `name`; a failure to start is logged, never raised."""
        if not command:
            return
        out = run_dir / "hooks.log"
        try:
            with open(out, "ab") as sink:
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
        self._running.append(proc)

    def reap(self) -> None:
        """Collect hooks that ended (no zombies)."""
        self._running = [p for p in self._running if p.poll() is None]
