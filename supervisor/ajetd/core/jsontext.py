"""JSON read back from a file or an answer ajetd does not control alone: the records in
$AJETD_HOME a person may edit or a crash may cut (a run's state.json, daemon.json, a
campaign's record, control requests, journals), a result dir's finish.flag, a swarm server's
health answer. Pure.

`json.loads` raises RecursionError, not ValueError, on a document nested deeper than Python's
recursion limit (a 200 KB file of `[`), so every reader's `except ValueError` let it through:
`ajetd status` died with a traceback, the daemon with it where it read a campaign's record at
its start. Here such a document is a ValueError like any other text that is no JSON.
"""

from __future__ import annotations

import json
from typing import Any


def loads(text: str | bytes) -> Any:
    """`json.loads(text)`; ValueError (as for any text that is no JSON) where it is nested
    too deep for the decoder."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deep to be read") from None
