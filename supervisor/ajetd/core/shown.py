"""How a value a user gave is shown in a message: elided, never raising. A leaf module (no
imports of ajetd's) so that the record store, which `ajetd submit` loads, does not load the
option parsers (`values`: durations' patterns, difflib) for one function."""

from __future__ import annotations

from typing import Any, TypeVar

SHOW_CHARS = 60


_W = TypeVar("_W", bound="_Written")


class _Written:
    """A YAML number remembering the text it was written as (`written`), which `str()` and
    `show` give; the number itself is its other base's (int or float), pickled and copied
    with its text."""

    written: str

    def __new__(cls: type[_W], value: float, written: str) -> _W:
        number: Any = super()  # the number's type, next in the subclass's MRO
        made: _W = number.__new__(cls, value)
        made.written = written
        return made

    def __str__(self) -> str:
        return self.written

    def __reduce__(self) -> tuple[type[_Written], tuple[Any, ...]]:
        number: Any = super()
        return type(self), (*number.__getnewargs__(), self.written)


class WrittenInt(_Written, int):
    """An integer YAML read from text that is not how the integer prints (`0x10`, `1_000`,
    `010`, `1:30`, `+5`): the number, and `written`, the text as the user wrote it, which
    `str()` and `show` give (`values` refuses the forms that are no decimal, quoting it).
    Made by `yamlpart`'s loader; its dumper writes it back as written."""


class WrittenFloat(_Written, float):
    """A float YAML read from text that is not how the float prints: `1.0e+400` (inf),
    `1.0e-400` (0.0), `.inf`, `0.10`, `1_000.5`; as `WrittenInt`."""


def written(value: Any) -> str | None:
    """The text a YAML number was written as, where it differs from how it prints; else None."""
    return value.written if isinstance(value, _Written) else None


def show(value: Any) -> str:
    """A short rendering of a value for a message: strings cut to 60 characters, numbers of
    more than 18 digits by their digit count, collections by their kind and size; a YAML
    number as it was written (`1.0e+400`, not `inf`; `0x10`, not `16`)."""
    text = written(value)
    if text is not None:
        return (
            text
            if len(text) <= SHOW_CHARS
            else f"{text[: SHOW_CHARS - 20]}… ({len(text)} characters)"
        )
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
