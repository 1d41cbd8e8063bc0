"""Other daemons' claims on this machine (`core.claims`), as the commands that only look show
them: `ajetd gpus` (who holds each GPU) and `ajetd lint` (a result dir another daemon's run
holds, GPUs it would wait for). Read only (`claimfiles.look`): no claim is taken, renewed or
removed here. Whether a claim is live, whose it is and what it stops are `core.claims`' own
functions, the ones the daemons judge with; a folder that cannot be read is one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ajetd.adapters import claimfiles
from ajetd.adapters.claimfiles import ClaimError
from ajetd.core import claims, placement
from ajetd.core.timefmt import iso

if TYPE_CHECKING:
    from ajetd.adapters.store import Home
    from ajetd.core.gpuuse import GpuSample


class GpuClaims(NamedTuple):
    """Each GPU's claims by other daemons: in words (`said`) and as values (`shown`), and the
    lines on claims that could not be read (`notes`)."""

    said: dict[int, list[str]]
    shown: dict[int, list[dict[str, Any]]]
    notes: list[str]


def _me(home: Home) -> claims.Claimant:
    """This home's daemon, as the claims it would judge name it (no run)."""
    return claimfiles.claimant(str(home.root), "")


def _machine_claims(kind: str) -> tuple[list[claims.Seen], list[str]]:
    """The claims of `kind` in the machine's folder, and the line saying why none could be
    read (the folder is not safe, not readable, its lock held past `LOCK_WAIT_S`)."""
    folder = claimfiles.machine_folder()
    try:
        return claimfiles.look(folder, kind, machine=True), []
    except ClaimError as exc:
        return [], [f"other daemons' claims not read: {exc}"]


def _unread(seen: Sequence[claims.Seen], folder: str) -> list[str]:
    """A line for each claim whose content could not be read (damaged, a file planted with a
    claim's name): judged by its name and owner alone, as the daemons judge it."""
    return [
        f"{folder}/{s.name}: {s.unread}; judged by its name and owner alone"
        for s in seen
        if s.claim is None and s.unread
    ]


def gpu_claims(home: Home, samples: Sequence[GpuSample]) -> GpuClaims:
    """This machine's GPUs (`samples`) that other daemons' runs claim, live or stale, as
    `ajetd gpus` shows them."""
    found, notes = _machine_claims(claims.GPUS)
    me = _me(home)
    keys = [(g.index, claims.gpu_key(g.index, g.uuid)) for g in samples]
    said: dict[int, list[str]] = {}
    shown: dict[int, list[dict[str, Any]]] = {}
    for seen, held in claims.gpus_claimed(found, keys, me):
        words = claims.said(seen, me, claimfiles.proc_of, iso)
        value = claims.shown(seen, me, claimfiles.proc_of, iso)
        for index in held:
            said.setdefault(index, []).append(words)
            shown.setdefault(index, []).append(value)
    theirs = [s for s in found if claims.elsewhere(s, me)]
    return GpuClaims(said, shown, notes + _unread(theirs, claimfiles.machine_folder()))


def result_dir_taken(home: Home, result_dir: str) -> tuple[str | None, list[str]]:
    """Why admission would refuse `result_dir` for the live claim of another daemon's run in
    it (`claims.judge`, then `claims.result_dir_taken`, as `claimkeeper.result_dir`), or
    None; and the lines on claims there that could not be read. This home's own runs are
    `placed_first`'s (admission's check before the claim)."""
    try:
        found = claimfiles.look(result_dir, claims.RESULT_DIR)
    except ClaimError as exc:
        return None, [f"other daemons' claims of the result dir not read: {exc}"]
    me = _me(home)
    verdict = claims.judge(
        found, me, claims.RESULT_DIR, lambda s: claims.elsewhere(s, me), claimfiles.proc_of
    )  # its `remove` is the daemon's to do, never a command's
    theirs = [s for s in found if claims.elsewhere(s, me)]
    return claims.result_dir_taken(result_dir, verdict.others, me), _unread(theirs, result_dir)


def val_writers(home: Home) -> tuple[dict[str, str], list[str]]:
    """The val files other daemons' live runs write -> who, as admission adds them to its
    `val_writers` (`claimkeeper.val_writers`); and the lines on claims not read."""
    found, notes = _machine_claims(claims.VAL_FILE)
    return claims.val_writers(found, _me(home), claimfiles.proc_of), notes


def gpus_wait(home: Home, gpus: str, samples: Sequence[GpuSample]) -> tuple[str | None, list[str]]:
    """Why a run asking `gpus` (the `[ajetd] gpus` option) would wait for GPUs other
    daemons' live runs claim, as the daemon's placement decides it (`placement.plan` with
    `claims.gpus_held`), or None; GPUs busy with other processes are not judged here (they
    change from one moment to the next). And the lines on claims that could not be read."""
    if gpus == "0" or not samples:
        return None, []
    found, notes = _machine_claims(claims.GPUS)
    me = _me(home)
    keys = [(g.index, claims.gpu_key(g.index, g.uuid)) for g in samples]
    held = claims.gpus_held(found, keys, me.uid, me.home, claimfiles.proc_of)
    if not held:
        return None, notes
    ask = placement.Ask("", gpus)
    decision = placement.plan([ask], samples, held, frozenset(), float("inf"))[""]
    if not isinstance(decision, placement.Wait):
        return None, notes
    return f"gpus: the run would wait: {decision.reason}", notes
