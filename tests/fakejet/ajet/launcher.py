"""`python -m ajet.launcher --conf X.yaml [--autokill]`: the fake launcher (fakejet.launcher)."""

from __future__ import annotations

import sys

from fakejet.launcher import main

if __name__ == "__main__":
    sys.exit(main())
