"""The filesystem where a run runs, and the questions ajetd asks it about the run's config.

A run's codebase, venv and config live where the run runs: on this machine (`LOCAL`) or on
its SSH host (`sshcmd.RemoteFs`, one call over the shared connection per question). Every
reading and writing of them goes through an `Fs`, so a config fix is written on the host that
runs it, not at the same path on this machine (where it may not exist, or be another file).
"""

from __future__ import annotations

import enum
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml

from ajetd.adapters.regular import TooLargeError, read_bounded
from ajetd.adapters.store import write_atomic
from ajetd.core import pathglob
from ajetd.core.errors import AjetdError
from ajetd.core.limits import CONFIG_MAX_BYTES, CONFIG_MAX_DEPTH, CONFIG_MAX_VALUES
from ajetd.core.textfile import utf8_problem
from ajetd.core.workdir import workdir
from ajetd.core.yamlpart import ConfigDumper, ConfigLoader, describe, shape_problem


class Fs(Protocol):
    """Where the codebase, venv and YAML live: this machine, or a remote host (`ssh`)."""

    def expand(self, path: str) -> str: ...
    def isdir(self, path: str) -> bool: ...
    def isfile(self, path: str) -> bool: ...
    def exists(self, path: str) -> bool: ...
    def matches(self, pattern: str) -> bool:
        """Whether a path matches the glob `pattern` (absolute; `core.pathglob`)."""
        ...

    def fresh(self, pattern: str, since: float) -> bool:
        """Whether a path (or a glob's match) is there and was written at or after `since`
        (a folder: it or an entry up to two levels down; `FRESH_SCANNED` entries at most)."""
        ...

    def executable(self, path: str) -> bool: ...
    def realpath(self, path: str) -> str: ...
    def read_text(self, path: str, limit: int = CONFIG_MAX_BYTES) -> str:
        """The file's text; TooLargeError past `limit` bytes (never read whole)."""
        ...

    def size(self, path: str) -> int | None: ...
    def write_text(self, path: str, text: str) -> None:
        """Replace `path` whole (written beside it, renamed into place); OSError if it cannot."""
        ...


class LocalFs:
    def expand(self, path: str) -> str:
        return os.path.expanduser(path)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)

    def isfile(self, path: str) -> bool:
        return os.path.isfile(path)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def matches(self, pattern: str) -> bool:
        return pathglob.first_match(pattern, _entries, os.path.exists) is not None

    def fresh(self, pattern: str, since: float) -> bool:
        def written(path: str) -> bool:
            return _newest(path, since)

        if pathglob.is_glob(pattern):
            return pathglob.first_match(pattern, _entries, written) is not None
        return written(pattern)

    def executable(self, path: str) -> bool:
        return os.access(path, os.X_OK)

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)

    def read_text(self, path: str, limit: int = CONFIG_MAX_BYTES) -> str:
        """The file's text; a FIFO or a device swapped in is refused (NotRegularError), one
        grown past `limit` since its size was asked (TooLargeError) too."""
        return config_text(read_bounded(Path(path), limit))

    def size(self, path: str) -> int | None:
        """The regular file's size; None where there is none (nothing, a FIFO, a folder), as
        on a host (`RemoteFs.size`)."""
        try:
            found = os.stat(path)
        except OSError:
            return None
        return found.st_size if stat.S_ISREG(found.st_mode) else None

    def write_text(self, path: str, text: str) -> None:
        write_atomic(Path(path), text)


def _entries(folder: str) -> Iterator[tuple[str, bool, bool]]:
    """A folder's entries as `pathglob.first_match` takes them, read lazily (a glob that
    matches early reads no more); none where it cannot be read."""
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    yield entry.name, entry.is_dir(follow_symlinks=False), entry.is_symlink()
                except OSError:  # gone meanwhile
                    continue
    except OSError:
        return


FRESH_SCANNED = 10_000  # entries of an output folder looked at for a new one, at most


def _newest(path: str, since: float) -> bool:
    """Whether `path`, or (a folder) an entry of it up to two levels down, was modified at or
    after `since`: a checkpoint folder rewritten in place keeps the folder's own time."""
    budget = [FRESH_SCANNED]

    def walk(here: str, depth: int) -> bool:
        try:
            info = os.stat(here)
        except OSError:
            return False
        if info.st_mtime >= since:
            return True
        if depth >= 2 or not stat.S_ISDIR(info.st_mode):
            return False
        for name, is_dir, is_link in _entries(here):
            budget[0] -= 1
            if budget[0] < 0:
                return False
            if walk(os.path.join(here, name), depth + 1 if is_dir and not is_link else 2):
                return True
        return False

    return walk(path, 0)


LOCAL = LocalFs()
# libyaml's safe loader and dumper where PyYAML has them (its wheels do): a run's config is
# read and its fixed copy written in the daemon's one loop, and a 4 MiB config took 25 s to
# read and 11 s to write in pure Python, 5.3 s and 3.9 s in C (docs/benchmarks.md)
SAFE_DUMPER: type[Any] = ConfigDumper  # numbers back as written, as OmegaConf reads them


class NotUtf8Error(ValueError):
    """A config (or another file the program reads too) that is not UTF-8 text; its message
    says why in words (`textfile.utf8_problem`)."""


def config_text(raw: bytes) -> str:
    """A file's bytes that the program reads too (its config) as text: UTF-8, else
    NotUtf8Error saying why (`UTF-16 text ...: save it as UTF-8`). Never decoded as its mark
    says, as a blueprint is: the program would then fail on a file ajetd passed."""
    problem = utf8_problem(raw)
    if problem is not None:
        raise NotUtf8Error(f"{problem}; the program reads it too")
    return raw.decode("utf-8-sig")


def read_config(path: str, fs: Fs, where: str = "") -> dict[str, Any] | str:
    """The YAML config at `path` as a mapping, or why it cannot be had (`where`: on which
    host, for the message)."""
    text = ""
    try:
        size = fs.size(path)
        if size is not None and size > CONFIG_MAX_BYTES:  # read whole, parsed whole: bounded
            return f"{path} is {size} bytes, more than a config's {CONFIG_MAX_BYTES} (not read)"
        text = fs.read_text(path)
        too_big = shape_problem(text, CONFIG_MAX_DEPTH, CONFIG_MAX_VALUES)
        if too_big is not None:
            return f"{path} is not valid YAML: {too_big}"
        config = yaml.load(text, Loader=ConfigLoader)  # noqa: S506 - a SafeLoader
    except OSError as exc:
        return f"cannot read {path}{where}: {exc.strerror or exc}"
    except AjetdError as exc:  # the SSH host's file system did not answer; a FIFO swapped in
        return f"cannot read {path}{where}: {exc}"
    except TooLargeError as exc:  # grown past the bound since its size was asked
        return f"{path} is {exc}"
    except NotUtf8Error as exc:
        return f"{path}{where} is {exc}"
    except Exception as exc:
        # PyYAML raises more than YAMLError: ValueError for a date such as 2020-02-30,
        # IndexError for `!!int ''`, UnicodeDecodeError for bytes no text; whatever it
        # raises is this file's problem, said once (lint and the daemon alike)
        return f"{path} is {describe(exc, text, CONFIG_MAX_DEPTH)}"
    if not isinstance(config, dict):
        return f"{path} is not a YAML mapping"
    return config


MAX_INHERITANCE = 8  # `defaults:` levels followed (NeMo-RL's recipes use one or two)


def read_inherited(
    path: str, fs: Fs, depth: int = 0, config: dict[str, Any] | None = None
) -> dict[str, Any] | str:
    """A NeMo-RL config as NeMo-RL loads it (`load_config_with_inheritance`): each file its
    `defaults:` names (one path or a list, from the folder of the file that names it) read
    the same way, merged in order, and the file's own keys over them; `defaults` itself
    dropped. A recipe sets only what differs from its parent: read alone, the keys a fix
    lowers were not there. Or why it cannot be had (a parent unreadable, too deep a chain).
    `config`: the file's content as it will be (its overrides set), read from `path` where
    None."""
    read = read_config(path, fs) if config is None else dict(config)
    if isinstance(read, str) or "defaults" not in read:
        return read
    config = read
    parents = config.pop("defaults")
    if isinstance(parents, str):
        parents = [parents]
    if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
        return f"{path}: defaults is not a path or a list of paths"
    if depth >= MAX_INHERITANCE:
        return f"{path}: defaults nested more than {MAX_INHERITANCE} levels deep"
    merged: dict[str, Any] = {}
    for parent in parents:
        got = read_inherited(os.path.join(os.path.dirname(path), parent), fs, depth + 1)
        if isinstance(got, str):
            return got
        merged = _merged(merged, got)
    return _merged(merged, config)


MAX_DEFAULTS = 32  # items of one Hydra `defaults:` list read (AgentJet's have three or four)
# a config name as a defaults item names it: folders and a name, none starting with a dot
# (no `..`, no hidden file), no `@package`, no `optional`/`override` (not read: said so)
_CONFIG_NAME = re.compile(
    r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}(?:/[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}){0,7}"
)


def read_composed(
    path: str, codebase: str, fs: Fs, config: dict[str, Any] | None = None
) -> dict[str, Any] | str:
    """An AgentJet config as its launcher reads it (Hydra's composition): each config its
    `defaults:` names, found in the config's own folder and then the `hydra.searchpath`
    folders (`file://ajet/default_config`, from the codebase, where the launcher runs),
    merged in the list's order, the file's own keys where `_self_` stands (at the end where
    it is absent, as Hydra 1.1+ puts it). A key only a default sets (`ajet.rollout.
    gpu_memory_utilization` 0.85 in ajet_default.yaml) is read with its value: read alone,
    the file lacked it and no fix could lower it. Bounded: only files under `codebase`
    (symlinks resolved), MAX_INHERITANCE levels, MAX_DEFAULTS items a list; or why it cannot
    be had (read_inherited's style). `config`: the file's content as it will be (a fixed
    copy not yet written beside it), read from `path` where None."""
    if config is None:
        read = read_config(path, fs)
        if isinstance(read, str):
            return read
        config = read
    folders = [os.path.dirname(path), *_search_path(config, codebase)]
    return _composed(config, path, folders, codebase, fs, 0)


def _search_path(config: dict[str, Any], codebase: str) -> list[str]:
    """The primary config's `hydra.searchpath` folders (`file://` ones, a relative one from
    `codebase`; `pkg://` ones are Python packages, not read)."""
    hydra = config.get("hydra")
    entries = hydra.get("searchpath") if isinstance(hydra, dict) else None
    if not isinstance(entries, list):
        return []
    return [
        os.path.normpath(os.path.join(codebase, e.removeprefix("file://")))
        for e in entries[:MAX_DEFAULTS]
        if isinstance(e, str) and e.startswith("file://")
    ]


def _composed(
    config: dict[str, Any], path: str, folders: list[str], codebase: str, fs: Fs, depth: int
) -> dict[str, Any] | str:
    if "defaults" not in config:
        return config
    own = dict(config)
    items = own.pop("defaults")
    if not isinstance(items, list) or len(items) > MAX_DEFAULTS:
        return f"{path}: defaults is not a list of at most {MAX_DEFAULTS} config names"
    if depth >= MAX_INHERITANCE:
        return f"{path}: defaults nested more than {MAX_INHERITANCE} levels deep"
    merged: dict[str, Any] = {}
    if "_self_" not in items:
        items = [*items, "_self_"]
    for item in items:
        if item == "_self_":
            merged = _merged(merged, own)
            continue
        if not isinstance(item, str) or not _CONFIG_NAME.fullmatch(item):
            return f"{path}: defaults item {item!r} is not a config name ajetd reads"
        found, why = _found(item, folders, codebase, fs)
        if found is None:
            return f"{path}: defaults item {item}: {why}"
        got = read_config(found, fs)
        if isinstance(got, str):
            return got
        got = _composed(got, found, folders, codebase, fs, depth + 1)
        if isinstance(got, str):
            return got
        merged = _merged(merged, got)
    return merged


def _found(name: str, folders: list[str], codebase: str, fs: Fs) -> tuple[str | None, str]:
    """The file a defaults item names: `<name>.yaml` in the first folder holding it, inside
    `codebase` once its links are resolved; or None and why there is none."""
    base = fs.realpath(codebase)
    for folder in folders:
        candidate = os.path.join(folder, f"{name}.yaml")
        if not fs.isfile(candidate):
            continue
        real = fs.realpath(candidate)
        if os.path.commonpath([real, base]) != base:
            return None, f"{candidate} lies outside exp_codebase_dir {codebase} (not read)"
        return candidate, ""
    return None, f"no {name}.yaml in {', '.join(folders) or 'no folder'}"


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`, mappings merged key by key (as OmegaConf merges)."""
    out = dict(base)
    for key, value in over.items():
        below = out.get(key)
        if isinstance(below, dict) and isinstance(value, dict):
            out[key] = _merged(below, value)
        else:
            out[key] = value
    return out


class Names(enum.Enum):
    """What a command's config flag (`--conf`, `--config`) names, beside the run's config."""

    NOTHING = "no flag"  # the command passes none
    SAME = "the same file"
    OTHER = "another file"
    UNKNOWN = "cannot tell"  # a shell variable in it, or a `cd` before a relative one


@dataclass(frozen=True)
class Named:
    names: Names
    path: str | None = None  # the file the flag names, from the codebase (SAME, OTHER)


def config_named(
    named: str | None,
    command: str,
    codebase: str,
    config_path: str,
    fs: Fs,
    env: Mapping[str, str] | None = None,
) -> Named:
    """Whether the config flag's value `named` in `command` (which runs in `codebase`, with
    `env` on top of the trial's: its CDPATH, `workdir`) is the file `config_path`. The one
    answer for every question that depends on it: a config that is not what runs is refused
    (preflight), yaml_overrides and fixes reach what runs only through a copy the flag is
    moved to (configcopy), and neither may guess."""
    if named is None:
        return Named(Names.NOTHING)
    expanded = fs.expand(named)
    # a relative path from the folder the program runs in: the codebase, or where a leading
    # literal `cd` takes it (walk93 F2); an unknown one (`cd $DIR`) moves a relative path only
    folder = workdir(command, env).folder(codebase, fs.expand, fs.isdir)
    if "$" in named or (folder is None and not os.path.isabs(expanded)):
        return Named(Names.UNKNOWN)
    path = os.path.normpath(os.path.join(folder or codebase, expanded))
    same = fs.realpath(path) == fs.realpath(config_path)
    return Named(Names.SAME if same else Names.OTHER, path)
