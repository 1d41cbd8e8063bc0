"""What a pipeline's stages left (seed 000: train, then eval), as the run's reports record it:
each stage's declared `outputs` copied into `<result_dir>/stages/<stage>/` where they are small
files, the numbers a JSON output holds, and the lines the stage printed that state a result
(`score=0.6100 (18.3/30)`). An eval's result went into no record: its JSON stayed in the
shared codebase, for the next run to overwrite, and its score was in the log tail only (walk89
F5). Pure: `ajetd.adapters.stagefiles` gathers them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ajetd.core.markdown import table_cell

JSON_VALUES_SHOWN = 20  # numbers of a JSON output named, at most
PRINTED_SHOWN = 5  # result lines of a stage's output quoted, at most
# a line stating a result: `score=0.61`, `accuracy: 0.42`, `pass@1 = 36.0%`, bounded
_RESULT = re.compile(
    r"\b(?:score|accuracy|acc|pass@\d{1,3}|pass_rate|mean_reward|reward|f1|exact_match|em)"
    r"\s{0,3}[=:]\s{0,3}[-+]?(?:\d{1,30}(?:\.\d{0,30})?|\.\d{1,30})",
    re.I,
)
LINE_SHOWN = 200  # characters of a result line quoted


@dataclass(frozen=True)
class StageOutput:
    """One declared output of a stage as the run's end found it."""

    stage: str
    path: str  # as the stage declares it (relative to the codebase), or a glob's match
    copied_as: str = ""  # relative to the result dir, where it was copied
    note: str = ""  # why not copied (a folder, too large, on the SSH host, gone)
    values: tuple[tuple[str, float], ...] = ()  # a JSON object's top-level numbers

    def to_json(self) -> dict[str, Any]:
        """As the status object's `stages[].outputs` hold it (`values` an object)."""
        return {
            "path": self.path,
            "copied_as": self.copied_as or None,
            "note": self.note or None,
            "values": dict(self.values),
        }

    @classmethod
    def from_json(cls, stage: str, data: Any) -> StageOutput | None:
        """A stored output (`to_json`); None for what is no such object (a damaged record)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("path"), str):
            return None
        values = data.get("values")
        numbers = tuple(
            (k, float(v))
            for k, v in (values.items() if isinstance(values, Mapping) else ())
            if isinstance(k, str)
            and isinstance(v, int | float)
            and not isinstance(v, bool)
            and math.isfinite(v)
        )
        return cls(
            stage,
            data["path"],
            _text(data.get("copied_as")),
            _text(data.get("note")),
            numbers[:JSON_VALUES_SHOWN],
        )


@dataclass(frozen=True)
class StageResult:
    """A stage that ran: its outputs and the lines of its last trial's output that state a
    result."""

    stage: str
    outputs: tuple[StageOutput, ...] = ()
    printed: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """As the run's record stores it: `stage`, `printed` and `outputs`."""
        return {
            "stage": self.stage,
            "printed": list(self.printed),
            "outputs": [o.to_json() for o in self.outputs],
        }

    @classmethod
    def from_json(cls, data: Any) -> StageResult | None:
        """A stored result (`to_json`); None for what is no such object (a damaged record)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("stage"), str):
            return None
        stage = data["stage"]
        printed = data.get("printed")
        outputs = data.get("outputs")
        read = (StageOutput.from_json(stage, o) for o in _items(outputs))
        return cls(
            stage,
            tuple(o for o in read if o is not None),
            tuple(str(x)[:LINE_SHOWN] for x in _items(printed) if isinstance(x, str)),
        )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _items(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def json_values(text: str) -> tuple[tuple[str, float], ...]:
    """The top-level numbers of a JSON object (`{"score": 0.61, "n": 30}`), at most
    JSON_VALUES_SHOWN; none for any other text."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return ()
    if not isinstance(data, dict):
        return ()
    found = [
        (str(k)[:80], float(v))
        for k, v in data.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    ]
    return tuple(found[:JSON_VALUES_SHOWN])


def result_lines(lines: Iterable[str]) -> tuple[str, ...]:
    """The last PRINTED_SHOWN lines that state a result (`_RESULT`), each cut."""
    found = [line.strip()[:LINE_SHOWN] for line in lines if _RESULT.search(line[:1000])]
    return tuple(found[-PRINTED_SHOWN:])


def section(results: Iterable[StageResult]) -> list[str]:
    """results.md's `## Stage results`: per stage, what it printed as its result and each
    output, where it was copied and the numbers it holds; [] for a run without stages."""
    shown = [r for r in results if r.outputs or r.printed]
    if not shown:
        return []
    lines = ["## Stage results", ""]
    for result in shown:
        lines.append(f"### Stage {result.stage}")
        lines.append("")
        for said in result.printed:
            lines.append(f"- printed: `{table_cell(said, LINE_SHOWN)}`")
        for out in result.outputs:
            where = f"copied to `{out.copied_as}`" if out.copied_as else out.note
            numbers = ", ".join(f"{k} {v:g}" for k, v in out.values)
            lines.append(f"- output `{out.path}`: {where}" + (f"; {numbers}" if numbers else ""))
        lines.append("")
    return lines
