"""Which tmux server a name or a path reaches, from this process: the socket's whole path
as tmux finds it, and the words a person types to reach it. Split from `adapters.tmux` so
that `ajetd status`, a client command, imports no more than this (no trial script, no
subprocess)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping


def socket_from_env() -> str | None:
    return os.environ.get("AJETD_TMUX_SOCKET") or None


def server_path(socket_name: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The socket of the server `tmux [-L socket_name]` reaches from a process whose
    environment is `environ` (this one's by default), as tmux 3.3a finds it (`make_label`):
    `$TMUX_TMPDIR` with its links resolved where it is set, not empty and there (relative:
    from the current folder), else `/tmp` (resolved too), then `tmux-UID/NAME`. The server is
    this whole path, not only its `-L` name: a daemon restarted with another TMUX_TMPDIR found
    no session of a live run and called it lost (walk98 F4). `tests/test_tmux_server.py`
    holds it to tmux's own `#{socket_path}`."""
    environ = os.environ if environ is None else environ
    folder = "/tmp"  # noqa: S108 - tmux's own default (_PATH_TMP)
    for candidate in (environ.get("TMUX_TMPDIR"), folder):
        if candidate:  # an empty one is skipped, as one that is not there
            with contextlib.suppress(OSError):
                folder = os.path.realpath(candidate, strict=True)
                break
    return os.path.join(folder, f"tmux-{os.getuid()}", socket_name or "default")


def server_words(socket_name: str | None, path: str | None) -> tuple[str, ...]:
    """The words of a tmux command line, shown to a person, that reach the server at `path`
    (a run's recorded socket) from this process: `-L NAME` (none for the default one) where
    its TMUX_TMPDIR leads there or no path is known, else `-S PATH`."""
    path = usable_path(path)
    if path and not same_socket(path, server_path(socket_name)):
        return ("-S", path)
    return ("-L", socket_name) if socket_name else ()


def usable_path(path: str | None) -> str | None:
    """A recorded socket path that can name a file (absolute, no NUL: a record's field may
    hold anything, and realpath or tmux would raise on it), else None: reached by name."""
    return path if path and path.startswith("/") and "\0" not in path else None


def same_socket(one: str, other: str) -> bool:
    """Whether two socket paths name one server (their links resolved; no file need be
    there: a server not running has none)."""
    return os.path.realpath(one) == os.path.realpath(other)
