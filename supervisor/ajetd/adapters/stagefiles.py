"""A pipeline's stage outputs gathered at the run's end for its reports
(`ajetd.core.stageresult`): small files read to be copied into `<result_dir>/stages/<stage>/`
(bounded, each and all together), folders and large files named; outputs on an SSH host are
named where they lie there (its `pull:` copies files back)."""

from __future__ import annotations

import glob
import itertools
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from ajetd.core.model import Run
from ajetd.core.options import Options
from ajetd.core.pathglob import is_glob
from ajetd.core.resultfiles import STAGES
from ajetd.core.stageresult import StageOutput, StageResult, json_values, result_lines

FILE_MAX_BYTES = 16 << 20  # an output copied beside the reports, at most
TOTAL_MAX_BYTES = 64 << 20  # all of a run's stage outputs copied, at most
JSON_READ_MAX_BYTES = 1 << 20  # a JSON output read for its numbers, at most
MATCHES_MAX = 20  # paths of one glob output gathered, at most


def _folder_name(stage: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", stage)[:64].lstrip(".") or "stage"


def _matches(codebase: str, pattern: str) -> list[str]:
    path = os.path.join(os.path.expanduser(codebase), pattern)
    if not is_glob(pattern):
        return [path] if os.path.lexists(path) else []
    return sorted(itertools.islice(glob.iglob(path), MATCHES_MAX))


def gather(
    run: Run, options: Options, result_dir: Path, tails: Mapping[int, Sequence[str]]
) -> tuple[list[tuple[Path, bytes]], tuple[StageResult, ...]]:
    """The files to write under `result_dir/stages/` and what each stage left, for the stages
    that ran (`tails`: each trial's last lines of output)."""
    files: list[tuple[Path, bytes]] = []
    results: list[StageResult] = []
    budget = TOTAL_MAX_BYTES
    for stage in options.stages:
        ran = [t for t in run.trials if t.stage == stage.name and t.started_at is not None]
        if not ran:
            continue
        last = ran[-1]
        printed = result_lines(tails.get(last.number, ()))
        outputs: list[StageOutput] = []
        for pattern in stage.outputs:
            if run.remote_dir:
                outputs.append(StageOutput(stage.name, pattern, note="on the SSH host"))
                continue
            if last.exit_code != 0:
                note = f"not copied: the stage's last trial exited with code {last.exit_code}"
                outputs.append(StageOutput(stage.name, pattern, note=note))
                continue
            found = _matches(run.codebase_dir, pattern)
            if not found:
                outputs.append(StageOutput(stage.name, pattern, note="not there at the run's end"))
            for path in found:
                out, data = _one(run, stage.name, path, result_dir, budget)
                outputs.append(out)
                if data is not None:
                    budget -= len(data)
                    files.append((result_dir / out.copied_as, data))
        results.append(StageResult(stage.name, tuple(outputs), printed))
    return files, tuple(results)


def _one(
    run: Run, stage: str, path: str, result_dir: Path, budget: int
) -> tuple[StageOutput, bytes | None]:
    """One output path: read to be copied (a regular file within the bounds), or why not."""
    codebase = os.path.expanduser(run.codebase_dir)
    relative = os.path.relpath(path, codebase)
    if relative.startswith(".."):
        relative = os.path.basename(path)
    shown = os.path.relpath(path, codebase) if not relative.startswith("..") else path
    if os.path.isdir(path):
        return StageOutput(stage, shown, note="a folder: named, not copied"), None
    try:
        size = os.path.getsize(path)
        if not os.path.isfile(path):
            return StageOutput(stage, shown, note="not a regular file: not copied"), None
        if size > min(FILE_MAX_BYTES, budget):
            return StageOutput(stage, shown, note=f"{size} bytes: too large to copy"), None
        with open(path, "rb") as handle:
            data = handle.read(FILE_MAX_BYTES + 1)
    except OSError as exc:
        return StageOutput(stage, shown, note=f"not copied: {exc.strerror or exc}"), None
    values: tuple[tuple[str, float], ...] = ()
    if path.endswith(".json") and len(data) <= JSON_READ_MAX_BYTES:
        values = json_values(data.decode(errors="replace"))
    copied = f"{STAGES}/{_folder_name(stage)}/{relative}"
    return StageOutput(stage, shown, copied_as=copied, values=values), data
