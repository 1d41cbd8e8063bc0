"""`python -m ajetd` is the same program as the `ajetd` console script."""

from ajetd.cli.entry import entry

entry()
