"""`python -m ajetd` is the same program as the `ajetd` console script."""

from ajetd.fastcli import entry

entry()
