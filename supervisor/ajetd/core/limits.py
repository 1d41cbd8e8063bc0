"""How much of a user's blueprint and config ajetd reads, in a module light enough for
`ajetd submit`'s fast path (`ajetd.cli.entry` must not load the parser to know the limit the
parser keeps)."""

from __future__ import annotations

BLUEPRINT_MAX_BYTES = 1024 * 1024  # the daemon, `lint` and `submit` read at most 1 MiB
CONFIG_MAX_BYTES = 16 << 20  # a run's YAML config: larger than this is no config, not read
