"""How much of a user's blueprint and config ajetd reads, in a module light enough for
`ajetd submit`'s fast path (`ajetd.cli.entry` must not load the parser to know the limit the
parser keeps)."""

from __future__ import annotations

BLUEPRINT_MAX_BYTES = 1024 * 1024  # the daemon, `lint` and `submit` read at most 1 MiB
# A run's purpose as its record keeps it (status, `status --json`, run.json, results.md, a
# campaign's lines): its first this many characters; the whole text stays in the stored
# blueprint. A 240 KB purpose added 240 KB to every `status --json` (walk97 F12).
PURPOSE_KEPT_CHARS = 2000
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
# turning; a NeMo-RL log this far behind is read on at once, not at its next deep check).
VAL_TICK_BYTES = 16 << 20
# At most this much is read when a trial ends (the run's final read, a relaunch's): what is
# left past it is not read, and the run's warnings say so (a run printing 28 GB an hour, read
# to its end, held every other run's end for a minute). Live reads keep a NeMo-RL log within a
# tick's read or two of its end, so an end reads little; the bound is for a reader left far
# behind (a 256 MiB line in a val file is passed over at disk speed, its records after it kept).
END_READ_BYTES = 512 << 20
# Records kept in a run's history (its record, curves, results.md); later ones update its
# latest metrics but are not kept (noted once). A real run validates far fewer times.
VAL_RECORDS_MAX = 10_000

# A file ajetd reads whole from its home or a result dir (a run's or a campaign's record,
# daemon.json, a campaign's answer, a journal) is read only up to its bound: one larger is no
# file ajetd wrote (a disk filled by a runaway program, a mistake, a hostile file) and is
# named as damaged, never read into memory (`adapters.regular.read_bounded`). A run's record
# holds its history (at most VAL_RECORDS_MAX validation records: a real one's 10,000 records
# of 20 metrics come to about 9 MiB), so its bound is generous.
RECORD_MAX_BYTES = 64 << 20
# A run's journal (events.jsonl) is read a line at a time; one larger than this (a real one
# holds a few lines a trial) is named by its readers, never read.
JOURNAL_MAX_BYTES = 64 << 20
# A small file ajetd or a trial's script writes (an exit file, a result dir's finish.flag,
# a run's source-name, the daemon's lock file, a Slurm job id).
SMALL_FILE_MAX_BYTES = 1 << 20


def size_text(size: float) -> str:
    """A size for people ("0 B", "3.1 MiB", "2048.0 GiB")."""
    for unit in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"
