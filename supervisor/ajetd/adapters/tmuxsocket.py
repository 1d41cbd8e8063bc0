"""Which tmux server a name or a path reaches, from this process: the socket's whole path
as tmux finds it, and the words a person types to reach it. Split from `adapters.tmux` so
that `ajetd status`, a client command, imports no more than this (no trial script, no
subprocess)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping

from ajetd.core.errors import AjetdError

SOCKET_ENV = "AJETD_TMUX_SOCKET"
# the most bytes of a socket's path: AF_UNIX's sun_path holds 108, its NUL one of them; tmux
# cannot make or reach a server whose path is longer ("File name too long")
SUN_PATH_MAX = 107


class SocketSettingError(AjetdError):
    """AJETD_TMUX_SOCKET (or TMUX_TMPDIR) names no server tmux can make (`socket_problem`)."""


def socket_from_env() -> str | None:
    """AJETD_TMUX_SOCKET, the `tmux -L` name of ajetd's server (None: tmux's default one);
    SocketSettingError where no server could be made by it (`socket_problem`)."""
    name = os.environ.get(SOCKET_ENV) or None
    problem = socket_problem(name)
    if problem is not None:
        raise SocketSettingError(problem)
    return name


def socket_note(environ: Mapping[str, str] | None = None) -> str | None:
    """What a client command (`lint`, `status`, `submit`) says of this environment's setting,
    or None where a daemon started in it could use it."""
    environ = os.environ if environ is None else environ
    problem = socket_problem(environ.get(SOCKET_ENV) or None, environ)
    return None if problem is None else f"{problem}; a daemon started so refuses to start"


def socket_problem(name: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """Why `tmux -L name` (None: no -L), from a process whose environment is `environ`,
    reaches no server tmux could make, or None. A path (`/tmp/mysock`, as `tmux -S` takes
    it) is not a name: tmux puts it under its folder (`/tmp/tmux-1001//tmp/mysock`), cannot
    make that, says `error creating` and exits 0, and every run was then `lost` unstarted
    (walk98 F18). `.` and `..` name folders. A socket path over SUN_PATH_MAX bytes cannot
    be made or reached: the name's fault or TMUX_TMPDIR's, whichever is said.

    A path is refused, not taken as `-S`: the daemon's server is its -L name, which each
    run records (`Run.tmux_socket`), the start check compares (`Daemon._same_tmux_server`)
    and `status` shows as the `tmux -L NAME attach` to type; a path would be a third way to
    name a server in each of them. TMUX_TMPDIR chooses the socket's folder instead."""
    environ = os.environ if environ is None else environ
    folder = os.path.dirname(server_path(None, environ))  # tmux's `tmux-UID` folder
    if name is not None and ("/" in name or name in (".", "..")):
        base = os.path.basename(name.rstrip("/"))
        like = base if base not in ("", ".", "..") else "ajetd"
        what = "a path" if "/" in name else "a folder"
        return (
            f"{SOCKET_ENV}={name!r} is {what}; it must be a name, as `tmux -L` takes it "
            f"(no `/`, not . or ..), e.g. {SOCKET_ENV}={like}: tmux then makes the socket "
            f"{os.path.join(folder, like)} (TMUX_TMPDIR chooses its folder)"
        )
    path = server_path(name, environ)
    size = len(path.encode(errors="surrogateescape"))
    if size <= SUN_PATH_MAX:
        return None
    room = SUN_PATH_MAX - len(folder.encode(errors="surrogateescape")) - 1
    if name is not None and room >= 1:
        return (
            f"{SOCKET_ENV}={name!r} makes tmux's socket {path}, {size} bytes, longer than "
            f"the {SUN_PATH_MAX} a socket's path can have: choose a name of at most {room} "
            "bytes"
        )
    said = f"{SOCKET_ENV}={name!r}" if name is not None else f"{SOCKET_ENV} unset"
    return (
        f"TMUX_TMPDIR={environ.get('TMUX_TMPDIR', '')!r} (with {said}) makes tmux's socket "
        f"{path}, {size} bytes, longer than the {SUN_PATH_MAX} a socket's path can have: "
        "choose a shorter TMUX_TMPDIR, or unset it (tmux then uses /tmp)"
    )


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
