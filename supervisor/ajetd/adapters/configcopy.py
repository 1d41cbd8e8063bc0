"""Fixed copies of a run's config beside the original, and the command pointed at them.

Beside the original, so `defaults:` lists and Hydra search paths resolve as before; named after
the run (and trial) so nothing is ever overwritten; the user's own file is never edited.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ajetd.adapters.store import write_atomic
from ajetd.frameworks.agentjet import (
    COPY_TAG,
    apply_patches,
    conf_argument,
    conf_path,
    original_of,
    point_conf_at,
)


def write_copy(
    original: Path, config: Mapping[str, Any], patches: Mapping[tuple[str, ...], Any], tag: str
) -> Path:
    """Write `config` with `patches` applied as `<stem>.ajetd-<tag><suffix>` beside `original`."""
    base = Path(original_of(str(original)))
    copy = base.with_name(f"{base.stem}{COPY_TAG}{tag}{base.suffix}")
    patched = apply_patches(config, patches)
    write_atomic(copy, yaml.safe_dump(patched, sort_keys=False, allow_unicode=True))
    return copy


def repoint(command: str, codebase: str, current: str, copy: Path) -> str | None:
    """`command` with its `--conf` moved from `current` to `copy`; None if `--conf` is not
    `current` (then the copy cannot reach what runs)."""
    conf = conf_argument(command)
    named = conf_path(command, codebase)
    if conf is None or named is None or os.path.realpath(named) != os.path.realpath(current):
        return None
    return point_conf_at(command, os.path.join(os.path.dirname(conf), copy.name))
