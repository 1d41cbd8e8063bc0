"""How much of a user's blueprint and config ajetd reads, in a module light enough for
`ajetd submit`'s fast path (`ajetd.cli.entry` must not load the parser to know the limit the
parser keeps)."""

from __future__ import annotations

BLUEPRINT_MAX_BYTES = 1024 * 1024  # the daemon, `lint` and `submit` read at most 1 MiB
# A run's YAML config: larger than this is no config, not read. Real ones are tens of KB
# (the fixtures' largest: 24 KB); one is parsed in the daemon's one loop, a 4 MiB one in
# about 5 s with libyaml (docs/benchmarks.md), so the bound is also the longest such pause.
CONFIG_MAX_BYTES = 4 << 20
# ...and nested at most this deep (real ones: under 10). libyaml builds a document by
# recursion in C, which PyYAML 6.0.3's wheel does not bound: a 200 KB config of `[` or
# `- - -` killed the process (SIGSEGV); a shallower one deeper than Python's recursion
# limit raised RecursionError in whatever walked it later. So the depth is read first.
CONFIG_MAX_DEPTH = 100
# ...and of at most this many values, an alias counted as what it names: a merge key
# (`<<: [*a, *a]`) copies them, so 492 bytes of merges built 723 MB in 66 s. A 4 MiB config
# of small mappings holds about 400,000 values.
CONFIG_MAX_VALUES = 2_000_000

# A file a run's program writes and the daemon reads as it grows (its val file, a NeMo-RL
# run's output) is read in pieces of VAL_PIECE_BYTES, never whole: a program that writes
# gigabytes, or one line without end, must not take the daemon's memory with it.
VAL_PIECE_BYTES = 1 << 20
# A line longer than this is no validation record: skipped (with a note), never held whole.
VAL_LINE_MAX_BYTES = 64 << 10
# A NeMo-RL run's output line: longer, as a progress bar redrawn with \r for a whole step is one
# line whose last part may hold the `Step N/M` its reader looks for.
LOG_LINE_MAX_BYTES = 512 << 10
# At most this much is read at one deep check (the rest at the next ones, so the loop keeps
# turning); a run's final read reads on to the end, piece by piece.
VAL_TICK_BYTES = 16 << 20
# Records kept in a run's history (its record, curves, results.md); later ones update its
# latest metrics but are not kept (noted once). A real run validates far fewer times.
VAL_RECORDS_MAX = 10_000
