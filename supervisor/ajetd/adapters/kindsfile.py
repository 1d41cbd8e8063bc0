"""Reading the user's failure-kind files (`$AJETD_HOME/kinds.yaml`, `--kinds FILE`): bounded in
size, parsed by the bounded YAML loader of `[ajetd]`, validated by `ajetd.core.userkinds`.
"""

from __future__ import annotations

from pathlib import Path

from ajetd.adapters.regular import NotRegularError, TooLargeError, read_bounded
from ajetd.core import yamlpart
from ajetd.core.textfile import decode_text, undecodable
from ajetd.core.userkinds import UserKind, parse_kinds

MAX_FILE_BYTES = 256 * 1024


def load_kinds_file(path: Path) -> tuple[tuple[UserKind, ...], list[str]]:
    """The kinds a YAML file defines, and the problems found (a missing file: none, no
    problems)."""
    try:
        raw = read_bounded(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        return (), []
    except NotRegularError as exc:
        return (), [str(exc)]
    except TooLargeError as exc:  # never read
        return (), [f"{path}: {exc}"]
    except OSError as exc:
        return (), [f"{path}: cannot read: {exc.strerror}"]
    wrong = undecodable(raw)  # a GBK or Latin-1 pattern would match nothing, unsaid
    if wrong is not None:
        return (), [f"{path}: {wrong}"]
    try:  # the bounded loader of `[ajetd]`: no aliases or tags, depth and size bounded
        data = yamlpart.load(decode_text(raw), max_chars=MAX_FILE_BYTES)  # UTF-16 reads too
    except yamlpart.YamlError as exc:
        return (), [f"{path}: {exc}"]
    problems: list[str] = []
    kinds = parse_kinds(data, problems)
    return kinds, [f"{path}: {p}" for p in problems]


def home_kinds(home: Path) -> tuple[tuple[UserKind, ...], list[str]]:
    """`$AJETD_HOME/kinds.yaml`: its kinds (none when it has problems) and its problems."""
    kinds, problems = load_kinds_file(home / "kinds.yaml")
    return (() if problems else kinds), problems
