"""This daemon's claims that other daemons on the machine see (`core.claims`): its runs' result
dirs (a claim in the dir itself), val files and GPUs (in the machine's claims folder), made
when a run takes them, found again by a restarted daemon, removed once the run ended."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

from ajetd.adapters import claimfiles
from ajetd.adapters.claimfiles import EVERYONE_READS, OWNER_ONLY, ClaimError
from ajetd.adapters.samefile import one_file_as
from ajetd.core import claims
from ajetd.core.claims import GPUS, RESULT_DIR, VAL_FILE, Claim, Seen

log = logging.getLogger(__name__)
PAUSE_S = 60.0  # the machine's claims folder let be after its lock was held too long


class ClaimKeeper:
    def __init__(self, home: Path) -> None:
        self.home = str(home)
        self.held: dict[tuple[str, str], tuple[str, str, tuple[str, ...]]] = {}
        self.said: set[str] = set()  # problems logged once
        self.paused_until = float("-inf")  # the machine's folder let be until then (`_machine`)

    def _warn(self, what: str, exc: Exception) -> None:
        line = f"{what}: {exc}"
        if line not in self.said:
            self.said.add(line)
            log.warning("claims: %s (other daemons on this machine do not see it)", line)

    def _machine(self) -> str | None:
        """The machine's claims folder, None where it cannot be used, or while its lock was
        held past `LOCK_WAIT_S` by another process lately (`PAUSE_S`): a user holding it
        would otherwise stall this daemon's every tick."""
        if time.monotonic() < self.paused_until:
            return None
        folder = claimfiles.machine_folder()
        try:
            claimfiles.ensure_machine_folder(folder)
        except ClaimError as exc:
            self._warn("the machine's claims folder cannot be used", exc)
            return None
        return folder

    def _failed(self, folder: str, exc: Exception) -> None:
        """A claim in `folder` not made or read: the machine's folder is let be a while."""
        if folder == claimfiles.machine_folder():
            self.paused_until = time.monotonic() + PAUSE_S

    def _take(
        self,
        folder: str,
        run_id: str,
        kind: str,
        what: tuple[str, ...],
        clash: Callable[[Seen], bool],
        mode: int,
    ) -> Seen | None:
        """`claimfiles.take` for run `run_id`, kept in `held`; the other's live claim that
        stops it, or None (made, or not made for a folder that cannot be used: logged)."""
        if self.held.get((run_id, kind)) == (
            folder,
            claims.file_name(kind, self._me(run_id)),
            what,
        ):
            return None  # held already: no other can have taken it since
        me = self._me(run_id)
        claim = Claim(kind, me, what)
        try:
            other = claimfiles.take(folder, claim, clash, mode)
        except (ClaimError, OSError) as exc:
            self._warn(f"run {run_id}'s {kind} claim in {folder} not made", exc)
            self._failed(folder, exc)
            return None
        if other is None:
            old = self.held.get((run_id, kind))
            if old is not None and old[0] != folder:
                self._drop(old[0], old[1])
            self.held[(run_id, kind)] = (folder, claim.name(), what)
        return other

    def _me(self, run_id: str) -> claims.Claimant:
        return claimfiles.claimant(self.home, run_id)

    def result_dir(self, run_id: str, result_dir: str) -> str | None:
        """Claim `result_dir` for run `run_id` (made if need be); the refusal naming the
        other daemon's run that holds it, or None."""
        try:
            os.makedirs(result_dir, exist_ok=True)
        except OSError as exc:
            self._warn(f"{result_dir} not made", exc)
            return None
        what = (os.path.realpath(result_dir),)
        other = self._take(result_dir, run_id, RESULT_DIR, what, lambda _s: True, OWNER_ONLY)
        return claims.result_dir_taken(result_dir, [other] if other else [], self._me(run_id))

    def val_file(self, run_id: str, val_path: str) -> str | None:
        """Claim the val file `val_path` for run `run_id`; the other daemon's run that
        writes it (as `claims.holder` names it), or None."""
        folder = self._machine()
        if folder is None:
            return None
        same, me = one_file_as(val_path), self._me(run_id)

        def clash(seen: Seen) -> bool:  # this daemon's own runs: `placement.val_file_wait`
            claim = seen.claim
            if claim is None or claim.kind != VAL_FILE or not claims.elsewhere(seen, me):
                return False
            return same(claim.what[0]) is not None

        what = (os.path.realpath(val_path),)
        other = self._take(folder, run_id, VAL_FILE, what, clash, EVERYONE_READS)
        return None if other is None else claims.holder(other, self._me(run_id))

    def val_writers(self) -> dict[str, str]:
        """The val files other daemons' live runs write -> who (`claims.holder`)."""
        return claims.val_writers(self._others(VAL_FILE), self._me(""), claimfiles.proc_of)

    def _others(self, kind: str) -> list[Seen]:
        """Live claims of `kind` of other daemons' runs in the machine's folder."""
        folder = self._machine()
        if folder is None:
            return []
        try:
            found = claimfiles.others(folder, kind)
        except (ClaimError, OSError) as exc:
            self._warn(f"the claims in {folder} not read", exc)
            self._failed(folder, exc)
            return []
        return claims.theirs(found, self._me(""), claimfiles.proc_of)

    def gpus(self, run_id: str, keys: Sequence[str]) -> str | None:
        """Claim the GPUs `keys` (`claims.gpu_key`) for run `run_id`; the other daemon's run
        that holds one of them, or None."""
        folder = self._machine()
        if folder is None or not keys:
            return None
        wanted, me = set(keys), self._me(run_id)

        def clash(seen: Seen) -> bool:  # this daemon's own runs: its placement keeps them apart
            claim = seen.claim
            if claim is None or claim.kind != GPUS or not claims.elsewhere(seen, me):
                return False
            return bool(wanted & set(claim.what))

        other = self._take(folder, run_id, GPUS, tuple(keys), clash, EVERYONE_READS)
        return None if other is None else claims.holder(other, self._me(run_id))

    def gpus_held(self, keys: Sequence[tuple[int, str]]) -> dict[str, tuple[int, ...]]:
        """This machine's GPUs (index, key) that other daemons' live runs hold, by holder."""
        if not keys:
            return {}
        me = self._me("")
        return claims.gpus_held(self._others(GPUS), keys, me.uid, me.home, claimfiles.proc_of)

    def sweep(self, live: Collection[str]) -> None:
        """Remove the claims of runs no longer live (ended, rejected, moved on)."""
        for key, (folder, name, _what) in list(self.held.items()):
            if key[0] not in live:
                del self.held[key]
                self._drop(folder, name)

    def _drop(self, folder: str, name: str) -> None:
        try:
            claimfiles.release(folder, name)
        except (ClaimError, OSError) as exc:
            self._warn(f"the claim {name} in {folder} not removed", exc)
