"""Fixed copies of a run's config beside the original, and the command pointed at them.

Beside the original, so `defaults:` lists and Hydra search paths resolve as before; named after
the run (and trial) so nothing is ever overwritten; the user's own file is never edited. Both
are done where the run runs (`fs`: this machine or its SSH host): the copy must be a file the
program can open.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from typing import Any

import yaml

from ajetd.adapters import diskfull
from ajetd.core.copyname import COPY_TAG, original_of
from ajetd.core.errors import AjetdError
from ajetd.frameworks import nemorl
from ajetd.frameworks.agentjet import conf_argument, point_conf_at
from ajetd.hosts.fs import SAFE_DUMPER, Fs, Names, config_named


def write_copy(original: str, patched: Mapping[str, Any], tag: str, fs: Fs) -> str:
    """Write `patched` (the config with its fixes, made by the caller: the preflight made it
    already at admission) as `<stem>.ajetd-<tag><suffix>` beside `original` (the user's file,
    also when `original` is an earlier copy of it); returns its path."""
    folder, name = os.path.split(original_of(original))
    stem, suffix = os.path.splitext(name)
    copy = os.path.join(folder, f"{stem}{COPY_TAG}{tag}{suffix}")
    text = yaml.dump(dict(patched), Dumper=SAFE_DUMPER, sort_keys=False, allow_unicode=True)
    fs.write_text(copy, text)
    return copy


def refused(exc: OSError | AjetdError, original: str) -> str | None:
    """Why no copy of `original` was written beside it, in words ("/x does not take it:
    Read-only file system"); None for a full disk, which is waited for (the write is tried
    again once there is room). A read-only folder (a shared checkout, a container's mount)
    stays read-only: refused now, not waited for."""
    if isinstance(exc, OSError) and diskfull.is_full(exc) and exc.errno != errno.EROFS:
        return None
    if not isinstance(exc, OSError):  # the host did not answer: its folder was not asked
        return f"{os.path.dirname(original)} could not be reached: {exc}"
    return f"{os.path.dirname(original)} does not take it: {exc.strerror or exc}"


def refusal_fix(exc: OSError | AjetdError) -> str:
    """What the user can do about `refused`'s reason: a folder that refuses writes is made
    writable; anything else (a host that stopped answering, its full disk) passes."""
    if isinstance(exc, OSError) and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return "make that folder writable"
    return "submit it again once it can be written there"


def refusal(exc: OSError | AjetdError, original: str, changes: list[str]) -> str | None:
    """The problem a run is refused for where the fixed copy of `original` cannot be written
    beside it (`refused`), with both ways out: the folder made writable, or the fixes made
    in the file by hand (`changes`); None for a full disk, which is waited for. Lint and
    admission say the same words."""
    said = refused(exc, original)
    if said is None:
        return None
    return (
        f"exp_yaml_path: ajetd makes its fixes of the config in a copy beside it, and {said}; "
        f"{refusal_fix(exc)}, or make the fixes in the file yourself: {'; '.join(changes)}"
    )


# a file system that makes no unnamed file (O_TMPFILE): the permission bits are asked instead
_NO_TMPFILE = (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL)


def copy_refused(original: str) -> OSError | None:
    """Why the folder of `original` (the user's file, also when `original` is a copy of it)
    would not take the fixed copy, found as the write would find it but leaving no file
    there: an unnamed file made in it (O_TMPFILE, gone when closed) meets a read-only file
    system, an immutable folder or one the daemon's user may not write; where the file system
    makes none, the permission bits (`os.access`). None where it would take it, or where the
    disk is full (admission waits for room). On this machine only: lint said ok for a copy
    admission could not write (walk97 F5)."""
    folder = os.path.dirname(original_of(original)) or "."
    try:
        handle = os.open(folder, getattr(os, "O_TMPFILE", 0) | os.O_WRONLY, 0o600)
    except OSError as exc:
        if diskfull.is_full(exc) and exc.errno != errno.EROFS:
            return None
        if exc.errno not in _NO_TMPFILE:
            return exc
        if os.access(folder, os.W_OK | os.X_OK):
            return None
        return OSError(errno.EACCES, os.strerror(errno.EACCES), folder)
    os.close(handle)
    return None


def repoint(
    command: str,
    codebase: str,
    current: str,
    copy: str,
    fs: Fs,
    env: Mapping[str, str],
    flag: str = "",
) -> str | Names:
    """`command` with its `--conf` moved from `current` to `copy`; or, where `--conf` is not
    `current` as far as ajetd can tell, what it names (the copy cannot reach what runs).
    `env`: what the command runs with on top of the trial's (its CDPATH: `config_named`)."""
    flag = flag or config_flag(command)  # the run's kind says which, where it is known
    conf = conf_argument(command, flag)
    names = config_named(conf, command, codebase, current, fs, env).names
    if conf is None or names is not Names.SAME:
        return names
    moved = os.path.join(os.path.dirname(conf), os.path.basename(copy))
    return point_conf_at(command, moved, flag)


def config_flag(command: str, kind: str = "") -> str:
    """The flag that names the program's config: NeMo-RL's `--config` for a NeMo-RL run
    (`kind`, the run's, where it is known; else a `run_*.py` launch), else AgentJet's
    `--conf`."""
    nemo = kind == "nemo_rl" if kind else nemorl.is_nemo_launch(command)
    return "--config" if nemo else "--conf"
