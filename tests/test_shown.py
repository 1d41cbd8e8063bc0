"""A YAML number written otherwise than it prints (`core.shown`'s `WrittenInt` and
`WrittenFloat`, one implementation): the number to compute with, its text to show, both kept
through pickling, copying and a YAML round trip."""

from __future__ import annotations

import copy
import math
import pickle

import pytest

from ajetd.core import yamlpart
from ajetd.core.shown import WrittenFloat, WrittenInt, show, written


@pytest.mark.parametrize(
    ("text", "kind", "number"),
    [
        ("0x10", WrittenInt, 16),
        ("1_000", WrittenInt, 1000),
        ("+5", WrittenInt, 5),
        ("1.0e+400", WrittenFloat, math.inf),
        ("0.10", WrittenFloat, 0.1),
        ("1_000.5", WrittenFloat, 1000.5),
    ],
)
def test_a_number_keeps_its_text_through_pickle_copy_and_yaml(
    text: str, kind: type[int | float], number: float
) -> None:
    value = yamlpart.load(f"k: {text}\n")["k"]
    assert type(value) is kind and value == number
    assert isinstance(value, int if kind is WrittenInt else float)
    assert str(value) == text and show(value) == text and written(value) == text
    pickled = [pickle.dumps(value, p) for p in range(pickle.HIGHEST_PROTOCOL + 1)]
    again = [pickle.loads(data) for data in pickled]  # noqa: S301 - our own bytes
    for other in [*again, copy.copy(value), copy.deepcopy(value)]:
        assert type(other) is kind and other == value and written(other) == text
    assert yamlpart.dump({"k": value}) == f"k: {text}\n"


def test_a_number_as_it_prints_is_no_written_one() -> None:
    assert yamlpart.load("k: 16\n")["k"].__class__ is int
    assert written(16) is None and written(0.1) is None and written("0x10") is None
    assert show(WrittenInt(16, "0x" + "1" * 70)).endswith("(72 characters)")
