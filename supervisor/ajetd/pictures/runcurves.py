"""`python -m ajetd.pictures.runcurves SPEC.json`: a run's curves.png and gpus.png, beside
results.md.

Run as a child process (`ajetd.pictures.drawing` starts it), so matplotlib is never imported
into the daemon or the CLI, and a plot that fails or hangs cannot fail or hold up a run. The
spec (written by drawing.spec) holds everything: the validation history, the trials' ends and
fixes, the GPU samples file and where to write. Pictures are written whole (a temporary file
renamed over the old one), so a reader never sees half a PNG.

curves.png: one panel per validation metric, by step (the first MAX_PANELS, the judging
metric first; the rest named under the axis); each trial's records in their own
colour (a relaunch that restarts its step count would otherwise draw back over the first),
a dashed line where a trial began, labelled with the fix it brought, and the best point
starred (the lowest for a loss). gpus.png: utilisation and memory of each GPU over minutes.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ajetd.adapters import programfiles
from ajetd.adapters.regular import NotRegularError, load_record, read_small
from ajetd.adapters.store import temporary
from ajetd.core.resultfiles import PICTURES
from ajetd.frameworks.valresults import step_of

MAX_PANELS = 6
MAX_GPU_LOG_BYTES = 16 * 1024 * 1024  # samples are appended while the file is smaller


def stepped(history: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """The history with a step (`global_steps`) each, and whether those are the records' own:
    where none names one (AgentJet's old layout), each is numbered in file order instead (1,
    2, ...), the axis saying so: such records were drawn as no point at all."""
    if any(step_of(r) is not None for r in history):
        return history, True
    return [{**r, "global_steps": n} for n, r in enumerate(history, 1)], False


def segments(history: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The history cut where the step stops growing: one piece per launch that wrote it."""
    pieces: list[list[dict[str, Any]]] = []
    last: float | None = None
    for record in history:
        step = step_of(record)
        if step is None:
            continue
        if last is None or step <= last:
            pieces.append([])
        pieces[-1].append(record)
        last = step
    return pieces


# fonts with CJK glyphs (Debian: fonts-noto-cjk, fonts-wqy-zenhei, fonts-wqy-microhei,
# fonts-arphic-uming, fonts-droid-fallback), tried after matplotlib's own for a glyph it lacks
CJK_FONTS = (
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Source Han Sans SC",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "AR PL UMing CN",
    "Droid Sans Fallback",
)
NO_FONT = "its purpose, in results.md, has characters no font here can draw"


def drawable_title(title: str, covers: Callable[[str], bool]) -> str:
    """`title` where every character has a glyph (`covers`), else the run's name with a
    note: a purpose in a script no installed font has (Chinese without a CJK font) was drawn
    as empty boxes."""
    if all(c.isspace() or covers(c) for c in title):
        return title
    return f"{title.split(':', 1)[0]} ({NO_FONT})"


def _fonts(title: str) -> Callable[[str], bool]:
    """Put the CJK fonts this machine has after matplotlib's own (it falls back glyph by
    glyph) and say which characters the chain draws. Only for a title that is not ASCII:
    an ASCII one costs nothing more."""
    from matplotlib import font_manager, ft2font, rcParams

    if title.isascii():
        return lambda _c: True
    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)  # a font's weights
    have = {f.name for f in font_manager.fontManager.ttflist}
    extra = [n for n in CJK_FONTS if n in have]
    if not extra:  # matplotlib's font list is cached: a font installed since is not in it
        extra = _fontconfig_cjk(font_manager)
    chain = [*rcParams["font.sans-serif"][:1], *extra]
    rcParams["font.family"] = chain
    faces = []
    for name in chain:
        try:
            path = font_manager.findfont(
                font_manager.FontProperties(family=name), fallback_to_default=False
            )
            faces.append(ft2font.FT2Font(path))
        except (ValueError, RuntimeError, OSError):
            continue
    return lambda c: any(face.get_char_index(ord(c)) for face in faces)


def _fontconfig_cjk(font_manager: Any) -> list[str]:
    """A Chinese font fontconfig knows (`fc-list :lang=zh`), added to matplotlib's list for
    this drawing: its family name, or none."""
    try:
        listed = subprocess.run(
            ["fc-list", ":lang=zh", "file"], check=False, capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    for line in listed.splitlines()[:50]:
        path = line.strip().rstrip(":")
        try:
            font_manager.fontManager.addfont(path)
            return [font_manager.FontProperties(fname=path).get_name()]
        except (OSError, RuntimeError, ValueError):
            continue
    return []


def _save(fig: Any, spec: dict[str, Any], out: Path) -> None:
    """Title, layout, and the PNG written whole (a temporary file renamed over the old)."""
    fig.suptitle(str(spec.get("title") or "")[:120], fontsize=9)
    fig.tight_layout()
    fd, tmp = temporary(out)  # a new name (never a file or a link found there)
    try:
        with os.fdopen(fd, "wb") as handle:
            tag = {programfiles.PNG_KEY: programfiles.png_tag(str(spec.get("run_id") or ""))}
            fig.savefig(handle, format="png", metadata=tag)  # ajetd's: `drawn_by` knows it
        os.chmod(tmp, 0o644)
        Path(tmp).replace(out)
    except BaseException:  # a full result dir: no temporary file left behind, for good
        Path(tmp).unlink(missing_ok=True)
        raise


def draw_curves(spec: dict[str, Any], out: Path) -> bool:
    """curves.png; False when there is no metric to draw."""
    import matplotlib.pyplot as plt

    history: list[dict[str, Any]] = list(spec.get("history") or [])
    keys = [
        k
        for k in spec.get("keys") or []
        if any(isinstance(r.get(k), (int, float)) for r in history)
    ]
    keys = keys[:MAX_PANELS]
    if not keys:
        return False
    history, own_steps = stepped(history)
    pieces = segments(history)
    labels = list(spec.get("segment_labels") or [])
    fig, axes = plt.subplots(
        len(keys), 1, figsize=(9, 2.6 * len(keys) + 0.6), dpi=100, squeeze=False
    )
    try:
        for ax, key in zip((a[0] for a in axes), keys, strict=False):
            best: tuple[float, float] | None = None
            lower = "loss" in key
            for n, piece in enumerate(pieces):
                xs = [
                    float(r["global_steps"]) for r in piece if isinstance(r.get(key), (int, float))
                ]
                ys = [float(r[key]) for r in piece if isinstance(r.get(key), (int, float))]
                if not xs:
                    continue
                label = labels[n] if n < len(labels) else f"part {n + 1}"
                ax.plot(xs, ys, marker=".", label=label)
                if n:
                    ax.axvline(xs[0], color="gray", linestyle="--", linewidth=1)
                for x, y in zip(xs, ys, strict=True):
                    if best is None or (y < best[1] if lower else y > best[1]):
                        best = (x, y)
            if best is not None:
                ax.scatter(
                    [best[0]],
                    [best[1]],
                    marker="*",
                    s=180,
                    color="gold",
                    edgecolors="black",
                    zorder=5,
                    label=f"best {best[1]:.4g} "
                    + (f"(step {best[0]:g})" if own_steps else f"(validation {best[0]:g})"),
                )
            ax.set_ylabel(key, fontsize=8)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="best")
        more = str(spec.get("more") or "")[:300]  # the metrics with no panel, named
        axes[-1][0].set_xlabel(
            ("step (global_steps)" if own_steps else "validation, in file order (steps unknown)")
            + (f"\n{more} (results.md)" if more else "")
        )
        _save(fig, spec, out)
    finally:
        plt.close(fig)
    return True


def gpu_series(path: Path) -> dict[int, list[tuple[float, float | None, float | None]]]:
    """Per GPU index: (at, utilisation %, memory MiB) from the samples file, in order."""
    series: dict[int, list[tuple[float, float | None, float | None]]] = {}
    try:  # a sample past the bound's last: at most one line more; a larger file is none
        lines = read_small(path, MAX_GPU_LOG_BYTES + (1 << 20)).splitlines()
    except (OSError, ValueError, NotRegularError):
        return series
    for line in lines:
        try:
            sample = json.loads(line)
            for g in sample["gpus"]:
                series.setdefault(int(g["index"]), []).append(
                    (float(sample["at"]), g.get("util"), g.get("mem"))
                )
        except (ValueError, KeyError, TypeError):
            continue
    return series


def draw_gpus(spec: dict[str, Any], out: Path) -> bool:
    """gpus.png; False when the run has no GPU samples."""
    series = gpu_series(Path(str(spec.get("gpu_file") or "")))
    if not series:
        return False
    import matplotlib.pyplot as plt

    start = float(spec.get("started_at") or min(s[0][0] for s in series.values()))
    fig, (util_ax, mem_ax) = plt.subplots(2, 1, figsize=(9, 5.6), dpi=100, sharex=True)
    try:
        for index, points in sorted(series.items()):
            xs = [(at - start) / 60 for at, _, _ in points]
            util_ax.plot(
                xs,
                [u if u is not None else float("nan") for _, u, _ in points],
                label=f"GPU {index}",
            )
            mem_ax.plot(
                xs,
                [m / 1024 if m is not None else float("nan") for _, _, m in points],
                label=f"GPU {index}",
            )
        for at in spec.get("trial_starts") or []:
            for ax in (util_ax, mem_ax):
                ax.axvline((float(at) - start) / 60, color="gray", linestyle="--", linewidth=1)
        util_ax.set_ylabel("utilisation %")
        util_ax.set_ylim(0, 105)
        mem_ax.set_ylabel("memory GiB (the run's)")
        mem_ax.set_xlabel("minutes since the first trial started")
        for ax in (util_ax, mem_ax):
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="best")
        _save(fig, spec, out)
    finally:
        plt.close(fig)
    return True


def _ours(spec: dict[str, Any], out: Path) -> bool:
    """A picture may be drawn at `out`: nothing is there, or ajetd's own drawing of this run;
    never over the program's file of the same name (moved aside at the run's end,
    `programfiles`, before the final drawing)."""
    return not os.path.lexists(out) or programfiles.drawn_by(out, str(spec.get("run_id") or ""))


# tests only: the child waits, before it draws, until this path exists (a plotter that hangs,
# or one held until the test lets it go: `FinalDrawings`' timeout and queue, driven for real)
TEST_WAIT_ENV = "AJETD_TEST_PLOT_WAIT"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m ajetd.pictures.runcurves SPEC.json", file=sys.stderr)
        return 2
    held = os.environ.get(TEST_WAIT_ENV)
    while held and not os.path.exists(held):
        time.sleep(0.05)
    spec = load_record(Path(argv[0]))  # written by drawing.spec: larger is none, never read
    import matplotlib

    matplotlib.use("Agg")
    title = str(spec.get("title") or "")[:120]
    spec["title"] = drawable_title(title, _fonts(title))
    out = Path(spec["result_dir"])
    drawn = []
    curves, gpus = PICTURES
    if _ours(spec, out / curves) and draw_curves(spec, out / curves):
        drawn.append(curves)
    if _ours(spec, out / gpus) and draw_gpus(spec, out / gpus):
        drawn.append(gpus)
    print(json.dumps({"drawn": drawn, "title": spec["title"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
