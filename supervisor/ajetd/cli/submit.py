"""`ajetd submit`'s work, apart from any command-line library, so that the console script's
fast path (`ajetd.cli.entry`) and the full command line (`ajetd.cli.main`) do exactly the same."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ajetd.adapters.regular import NotRegularError, open_regular
from ajetd.adapters.store import OWNER_FILE, Home, default_home, write_atomic
from ajetd.cli.entry import interrupted
from ajetd.core.errors import AjetdError
from ajetd.core.limits import BLUEPRINT_MAX_BYTES
from ajetd.core.naming import fit_stem, new_run_id, safe_name


class TooLargeError(NotRegularError):
    """The file named cannot be a blueprint (as a FIFO cannot): a usage error, exit 2."""


class UnreadableError(NotRegularError):
    """The file named cannot be read (a permission, an I/O error): a usage error, exit 2."""


def submit(file: Path) -> tuple[str, str | None]:
    """Copy a blueprint (`-`: standard input, named `stdin.md`) into the inbox atomically: its
    run id, and a warning when no daemon runs to take it. A write that fails (a full disk) is
    an AjetdError saying so; a FIFO or a device given as the file is a NotRegularError, a file
    over the size a blueprint may have a TooLargeError (never read whole, nothing created)."""
    if str(file) == "-":  # standard input: an agent's here-document, a pipe
        try:
            data, stem = sys.stdin.buffer.read(BLUEPRINT_MAX_BYTES + 1), "stdin"
        except KeyboardInterrupt:  # Ctrl-C while a person types or pastes it
            interrupted("the blueprint was not read whole; nothing was submitted")
        shown = "standard input"
    else:
        try:
            with open_regular(file) as handle:
                data = handle.read(BLUEPRINT_MAX_BYTES + 1)
        except OSError as exc:  # one not to be read (a colleague's, `sudo cp`'s): a usage
            # error naming it, as click's own check says it (walk98 F17: a traceback)
            raise UnreadableError(
                f"{file}: cannot be read ({exc.strerror or exc}); nothing was submitted"
            ) from None
        stem, shown = file.stem, str(file)
    if len(data) > BLUEPRINT_MAX_BYTES:  # never read whole, never copied: a usage error
        raise TooLargeError(
            f"{shown}: larger than {BLUEPRINT_MAX_BYTES // 1024} KiB, the most a blueprint may "
            "be (is this the right file?); nothing was submitted"
        )
    home = Home(default_home())
    home.ensure()
    run_id = new_run_id(
        lambda i: home.run_dir(i).exists() or any(home.inbox.glob(f"{i}__*")), os.urandom
    )
    stem = fit_stem(safe_name(stem) or "blueprint")  # as the daemon shows a name copied in
    try:
        write_atomic(home.inbox / f"{run_id}__{stem}.md", data, OWNER_FILE)
    except OSError as exc:
        from ajetd.adapters.diskfull import free_space

        raise AjetdError(
            f"cannot write the blueprint into {home.inbox}: {exc.strerror or exc} "
            f"({free_space(home.inbox)} free); nothing was submitted"
        ) from exc
    if not home.daemon_running():
        from ajetd.adapters.tmuxsocket import socket_note

        setting = socket_note()  # why one started from this shell would not run (walk98 F18)
        return (
            run_id,
            f"ajetd: no daemon is running on {home.root}; the blueprint waits in the inbox"
            + (f"\najetd: {setting}" if setting else ""),
        )
    problems = home.daemon_info().get("problems")  # why it takes no blueprint (walk 30)
    said = [p for p in problems if isinstance(p, str)] if isinstance(problems, list) else []
    if not said:
        return run_id, None
    return run_id, "\n".join(
        f"ajetd: the daemon is NOT TAKING BLUEPRINTS: {p}; the blueprint waits in the inbox"
        for p in said
    )
