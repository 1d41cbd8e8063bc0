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
import math
import re
from typing import Any


def loads(text: str | bytes) -> Any:
    """`json.loads(text)`; ValueError (as for any text that is no JSON) where it is nested
    too deep for the decoder. NaN, Infinity and a number past any float (1e999, an integer
    of more than 308 digits) are read as null: ajetd writes none of them, and such a number,
    as a time or a metric, raised OverflowError or ValueError where it was drawn or compared
    (`ajetd status`)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    # a float past any float (1e999, 1000...0.0) is read as inf: checked only where an exponent
    # of three digits or a run of 309 digits is written, since a hook on every float costs a
    # large record's reading a third
    floats = _finite if _LONG_EXPONENT.search(text) else None  # None: json's own float()
    try:
        return json.loads(text, parse_int=_int, parse_float=floats, parse_constant=_none)
    except RecursionError:
        raise ValueError("nested too deep to be read") from None


_LONG_EXPONENT = re.compile(r"[eE][+]?\d{3}|\d{309}")  # or 309 digits before a fraction


def _finite(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def _int(digits: str) -> int | None:
    return int(digits) if len(digits.lstrip("-")) <= 308 else None


def _none(_: str) -> None:
    return None
