"""The console script's entry point. `ajetd submit FILE`, what scripts and agents call most,
runs here without loading click or any other command (python's own start-up is then most of
its time), as does `ajetd submit -` (standard input); everything else, and any submit with
options or a file that is not there, goes to the full command line (`ajetd.cli.main`), which
also gives the usage errors."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def entry() -> None:
    args = sys.argv[1:]
    given = args[1] if len(args) == 2 else ""
    if args[:1] == ["submit"] and (
        given == "-" or (given[:1] not in ("", "-") and os.path.isfile(given))
    ):
        from ajetd.adapters.regular import NotRegularError
        from ajetd.cli.submit import submit
        from ajetd.core.errors import AjetdError

        try:
            run_id, warning = submit(Path(args[1]))
        except NotRegularError as exc:  # a usage error, as in the full command line
            print(f"ajetd: {exc}", file=sys.stderr)
            sys.exit(2)
        except AjetdError as exc:
            print(f"ajetd: {exc}", file=sys.stderr)
            sys.exit(1)
        print(run_id, flush=True)
        if warning:
            print(warning, file=sys.stderr)
        return
    from ajetd.cli.main import entry as full

    full()
