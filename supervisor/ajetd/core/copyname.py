"""How ajetd names its copies of a run's config, and the config a copy was made from; pure.

Apart from `frameworks.agentjet` (which makes the copies) so that `ajetd prune`, a client
command, can tell a copy of ajetd's without importing the YAML reader (tests/test_cli_imports.py).
"""

from __future__ import annotations

import os

COPY_TAG = ".ajetd-"  # ajetd's copies of a config are named `<stem>.ajetd-<tag><suffix>`


def original_of(path: str) -> str:
    """The config a copy of ajetd's was made from (`x.ajetd-abc123-t3.yaml` -> `x.yaml`), or
    `path` itself where it is no copy."""
    folder, name = os.path.split(path)
    stem, suffix = os.path.splitext(name)
    if COPY_TAG not in stem:
        return path
    return os.path.join(folder, stem.split(COPY_TAG)[0] + suffix)
