"""The console script's entry point. `ajetd submit FILE`, what scripts and agents call most,
runs here without loading click or any other command (python's own start-up is then most of
its time), as does `ajetd submit -` (standard input); everything else, and any submit with
options or a file that is not there, goes to the full command line (`ajetd.cli.main`), which
also gives the usage errors.

Ctrl-C at any point of any command, also while python loads it (the first ~0.1 s) or while
`submit -` reads its standard input, is one line on stderr and exit 130, never a traceback
(walk88 F11): so this module imports nothing at its top that python has not loaded already,
and everything else happens under `entry`'s handler."""

from __future__ import annotations

import codecs
import io
import os
import sys

ESCAPE = "ajetd-escape"
INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command ended by Ctrl-C


def _escaped(exc: UnicodeError) -> tuple[str, int]:
    """What the output's encoding cannot take, written as `safe_name` shows a name: a file
    name's byte that is not UTF-8 (a lone surrogate in Python's text) as `\\xe9`, anything
    else escaped in ASCII."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    from ajetd.core.naming import safe_name

    chunk = exc.object[exc.start : exc.end]
    return safe_name(chunk).encode("ascii", "backslashreplace").decode("ascii"), exc.end


def escaped_output() -> None:
    """Every command's text output goes through `_escaped`. A name given on the command line
    that is not UTF-8 (`caf$'\\xe9'.md`) reaches Python as text holding a lone surrogate,
    which a UTF-8 locale's stdout refuses: `ajetd lint` and `ajetd diagnose` of such a file
    died with a UnicodeEncodeError traceback, and stderr showed it as `\\udce9`. (Output
    written as bytes, `ajetd logs`, is the program's own, untouched.)"""
    codecs.register_error(ESCAPE, _escaped)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors=ESCAPE)


def entry() -> None:
    """The console script and `python -m ajetd`: `_entry` under the Ctrl-C handler (a
    command's own handler, as `wait`'s, says first what goes on)."""
    try:
        _entry()
    except KeyboardInterrupt:
        interrupted("")


def interrupted(what: str) -> None:
    """Ctrl-C: one line (`what`: what it means, e.g. that nothing was submitted), exit 130."""
    print(f"ajetd: interrupted{'; ' if what else ''}{what}", file=sys.stderr, flush=True)
    sys.exit(INTERRUPTED)


def _entry() -> None:
    escaped_output()
    args = sys.argv[1:]
    given = args[1] if len(args) == 2 else ""
    if args[:1] == ["submit"] and (
        given == "-" or (given[:1] not in ("", "-") and os.path.isfile(given))
    ):
        from pathlib import Path

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
