"""`python -m ajetd.pictures.progress PLOT.json OUT.png`: a campaign's progress.png.

Run as a child process by the daemon (`ajetd.pictures.campaigndrawing.Plotter`), so
matplotlib is never imported into the daemon or the CLI and a plot that fails or is slow never
holds up the loop. Every experiment's metric in order, its ledger status told by marker and
colour (a crash or a run without a metric sits on the bottom edge), the running best of the
kept experiments as a step line, and the baseline as a dashed reference line. The picture is
written whole (a temporary file renamed over the old one).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from ajetd.adapters.regular import load_record

STYLES = {  # status -> (marker, colour, label)
    "keep": ("o", "tab:green", "keep"),
    "discard": ("x", "tab:gray", "discard"),
    "crash": ("X", "tab:red", "crash (no metric: at the bottom)"),
    "smoke": ("s", "tab:blue", "smoke (pipeline check)"),
    "stopped": ("v", "tab:orange", "stopped"),
}


def running_best(points: list[dict[str, Any]], maximise: bool) -> tuple[list[int], list[float]]:
    """(index, best so far) after each kept experiment: the step line."""
    xs: list[int] = []
    ys: list[float] = []
    best: float | None = None
    for point in points:
        value = point.get("value")
        if point.get("status") != "keep" or not isinstance(value, (int, float)):
            continue
        if best is None or (value > best if maximise else value < best):
            best = float(value)
        xs.append(int(point["index"]))
        ys.append(best)
    if xs and points:
        xs.append(int(points[-1]["index"]))
        ys.append(ys[-1])
    return xs, ys


def _marks(ax: Any, points: list[dict[str, Any]]) -> None:
    """Each experiment's mark, by its ledger status; one without a metric on the bottom edge."""
    for status, (marker, colour, label) in STYLES.items():
        mine = [p for p in points if p.get("status") == status]
        if not mine:
            continue
        valued = [p for p in mine if isinstance(p.get("value"), (int, float))]
        if valued:
            ax.scatter(
                [p["index"] for p in valued],
                [p["value"] for p in valued],
                marker=marker,
                color=colour,
                s=60,
                label=label,
                zorder=3,
            )
        bare = [p for p in mine if not isinstance(p.get("value"), (int, float))]
        if bare:  # no metric: on the bottom edge, so the attempt still shows
            ax.scatter(
                [p["index"] for p in bare],
                [0.02] * len(bare),
                marker=marker,
                color=colour,
                s=60,
                label=None if valued else label,
                transform=ax.get_xaxis_transform(),
                clip_on=False,
                zorder=3,
            )


def _save(fig: Any, out: Path) -> None:
    """The picture written whole: a temporary file renamed over the old one."""
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=".progress.", suffix=".png")
    try:
        with os.fdopen(fd, "wb") as handle:
            fig.savefig(handle, format="png")
        os.chmod(tmp, 0o644)
        Path(tmp).replace(out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def draw(data: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points: list[dict[str, Any]] = list(data.get("points") or [])
    metric = str(data.get("metric") or "metric")
    fig, ax = plt.subplots(figsize=(9, 4.8), dpi=100)
    try:
        _marks(ax, points)
        xs, ys = running_best(points, bool(data.get("maximise", True)))
        if xs:
            ax.step(xs, ys, where="post", color="tab:green", alpha=0.6, label="best so far")
        baseline = data.get("baseline")
        if isinstance(baseline, (int, float)):
            ax.axhline(baseline, color="black", linestyle="--", linewidth=1, label="baseline")
        ax.set_xlabel("experiment (ledger index)")
        ax.set_ylabel(metric)
        ax.set_title(str(data.get("title") or "campaign")[:120], fontsize=9)
        ax.grid(alpha=0.3)
        if points:  # each experiment's index and name under its mark
            ax.set_xticks(
                [int(p["index"]) for p in points],
                [f"{p['index']}\n{str(p.get('name', ''))[:14]}" for p in points],
                fontsize=7 if len(points) > 12 else 8,
                rotation=90 if len(points) > 20 else 0,
            )
        ax.legend(fontsize=8, loc="best")
        fig.tight_layout()
        _save(fig, out)
    finally:
        plt.close(fig)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m ajetd.pictures.progress PLOT.json OUT.png", file=sys.stderr)
        return 2
    data = load_record(Path(argv[0]))  # written by campaigndrawing: larger is none, not read
    draw(data, Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
