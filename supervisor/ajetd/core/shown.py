"""How a value a user gave is shown in a message: elided, never raising. A leaf module (no
imports of ajetd's) so that the record store, which `ajetd submit` loads, does not load the
option parsers (`values`: durations' patterns, difflib) for one function."""

from __future__ import annotations

from typing import Any

SHOW_CHARS = 60


def show(value: Any) -> str:
    """A short rendering of a value for a message: strings cut to 60 characters, numbers of
    more than 18 digits by their digit count, collections by their kind and size."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        if value.bit_length() <= 60:
            return repr(value)
        return f"a number of about {int(value.bit_length() * 0.30103) + 1} digits"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        if len(value) <= SHOW_CHARS:
            return repr(value)
        return repr(value[: SHOW_CHARS - 20] + "…") + f" ({len(value)} characters)"
    if isinstance(value, dict):
        return f"a mapping of {len(value)} key(s)"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} item(s)"
    return f"a {type(value).__name__}"
