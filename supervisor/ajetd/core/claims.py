"""Claims that every ajetd daemon on this machine sees: a result dir, a val file, GPUs. Pure.

Why: what one daemon holds lives in its memory and its own home; another daemon on the same
machine (a second `AJETD_HOME` of one user, another user's) saw none of it, so two runs were
let into one result dir (walk98 F10: one run's reports overwritten by the other's, both
`succeeded`), appended to one val file (F9: each reported the other's validations), and were
placed on one GPU (F6: each saw it free until the other's program allocated memory).

A claim is a small file whose name says the kind, the run and the daemon that holds it (its
pid and its start time, so a later process given the same pid is not taken for it), and whose
content says the rest (the home, the user, what is claimed). The file's owner is the uid the
daemon must run as. A claim is live only while a process of that uid with that pid and that
start time runs: a planted file naming someone else's process, a claim of a daemon that died,
count for nothing (`live`). The files themselves are `adapters.claimfiles`'.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

PREFIX = ".ajetd-claim."
RESULT_DIR, VAL_FILE, GPUS = "result_dir", "val_file", "gpus"
KINDS = (RESULT_DIR, VAL_FILE, GPUS)
MAX_BYTES = 8192  # a claim's content read at most (a few paths or GPU keys)
MAX_WHAT = 64  # things one claim names at most (GPUs of a node)

# pid -> (the uid it runs as, its start in clock ticks since boot), None once it has ended
Proc = Callable[[int], "tuple[int, int] | None"]


@dataclass(frozen=True)
class Claimant:
    """The daemon that claims, and for which of its runs."""

    home: str  # its $AJETD_HOME, resolved
    run_id: str
    user: str
    uid: int
    pid: int
    pid_start: int


@dataclass(frozen=True)
class Claim:
    kind: str
    by: Claimant
    what: tuple[str, ...]  # the path claimed, or the GPUs' keys (`gpu_key`)

    def name(self) -> str:
        return file_name(self.kind, self.by)

    def text(self) -> str:
        by = self.by
        return json.dumps(
            {
                "kind": self.kind,
                "home": by.home,
                "run_id": by.run_id,
                "user": by.user,
                "uid": by.uid,
                "pid": by.pid,
                "pid_start": by.pid_start,
                "what": list(self.what),
            }
        )


class Seen(NamedTuple):
    """A claim file as found: its name, its owner, its content (None where it cannot be read:
    another user's, owner-only; or damaged), when it was written (`made`, epoch seconds: the
    claim taken, or taken again by a restarted daemon) and why its content is None
    (`unread`, "" where it was read)."""

    name: str
    file_uid: int
    claim: Claim | None
    made: float = 0.0
    unread: str = ""


def file_name(kind: str, by: Claimant) -> str:
    return f"{PREFIX}{kind}.{by.run_id}.{by.pid}.{by.pid_start}"


def name_parts(name: str) -> tuple[str, str, int, int] | None:
    """(kind, run id, pid, pid start) of a claim file's name; None where it is none."""
    if not name.startswith(PREFIX) or len(name) > 200:
        return None
    parts = name[len(PREFIX) :].split(".")
    if len(parts) != 4 or parts[0] not in KINDS:
        return None
    kind, run_id, pid, start = parts
    if not (run_id.isalnum() and pid.isdigit() and start.isdigit()):
        return None
    return kind, run_id, int(pid), int(start)


def parse(text: str) -> Claim | None:
    """A claim's content, or None where it is not one (a damaged or foreign file)."""
    try:
        doc = json.loads(text[:MAX_BYTES])
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    what = doc.get("what")
    strings = ("kind", "home", "run_id", "user")
    numbers = ("uid", "pid", "pid_start")
    if not all(isinstance(doc.get(k), str) for k in strings):
        return None
    if not all(type(doc.get(k)) is int for k in numbers):
        return None
    if not isinstance(what, list) or len(what) > MAX_WHAT:
        return None
    if not all(isinstance(w, str) for w in what) or doc["kind"] not in KINDS:
        return None
    by = Claimant(doc["home"], doc["run_id"], doc["user"], doc["uid"], doc["pid"], doc["pid_start"])
    return Claim(doc["kind"], by, tuple(what))


def live(seen: Seen, proc: Proc) -> bool:
    """Whether the daemon that made `seen` runs: the process its name gives (pid and start
    time) runs as the file's owner, and its content (where it can be read) says the same."""
    parts = name_parts(seen.name)
    if parts is None:
        return False
    _kind, run_id, pid, start = parts
    if proc(pid) != (seen.file_uid, start):
        return False
    claim = seen.claim
    if claim is None:
        return True
    by = claim.by
    return (by.uid, by.pid, by.pid_start, by.run_id) == (seen.file_uid, pid, start, run_id)


def own(seen: Seen, me: Claimant, kind: str) -> bool:
    """Whether `seen` is `me`'s run's claim of `kind` (made by this daemon, or by the one
    before it in the same home: a daemon restarted finds its runs' claims)."""
    claim = seen.claim
    return (
        claim is not None
        and claim.kind == kind
        and seen.file_uid == me.uid
        and (claim.by.home, claim.by.run_id) == (me.home, me.run_id)
    )


class Verdict(NamedTuple):
    """What a claim finds: the live claims of others that stop it, and the files this daemon
    may remove first (its own runs' older claims of the kind, and its uid's claims of
    daemons that ended)."""

    others: list[Seen]
    remove: list[str]


def judge(
    found: Iterable[Seen],
    me: Claimant,
    kind: str,
    clashes: Callable[[Seen], bool],
    proc: Proc,
) -> Verdict:
    """The claim of `kind` by `me` against the claims `found` in its place; `clashes`:
    whether a live claim of another stops it (the same result dir, file or GPU)."""
    others, remove = [], []
    mine = file_name(kind, me)
    for seen in found:
        if seen.name == mine:
            continue
        if own(seen, me, kind):
            remove.append(seen.name)
        elif not live(seen, proc):
            if seen.file_uid == me.uid:  # another user's is theirs to remove (a sticky folder)
                remove.append(seen.name)
        elif clashes(seen):
            others.append(seen)
    return Verdict(others, remove)


def holder(seen: Seen, me: Claimant) -> str:
    """The run that holds `seen`, as a message names it: its id, its daemon's home and user,
    and its daemon's pid."""
    parts = name_parts(seen.name)
    pid = parts[2] if parts else "?"
    claim = seen.claim
    if claim is None:
        run_id = parts[1] if parts else "?"
        return f"run {run_id} of another ajetd daemon (pid {pid}, uid {seen.file_uid})"
    by = claim.by
    if by.home == me.home and by.uid == me.uid:  # one daemon per home: this one
        return f"run {by.run_id}"
    user = "" if by.uid == me.uid else f", user {by.user}"
    return f"run {by.run_id} of another ajetd daemon ($AJETD_HOME {by.home}{user}, pid {pid})"


def elsewhere(seen: Seen, me: Claimant) -> bool:
    """Whether `seen` is another daemon's (not one of this home's runs: its daemon places
    those itself)."""
    claim = seen.claim
    return claim is None or claim.by.home != me.home or seen.file_uid != me.uid


def theirs(found: Iterable[Seen], me: Claimant, proc: Proc) -> list[Seen]:
    """The live claims in `found` of other daemons' runs (not `me`'s home's)."""
    return [s for s in found if live(s, proc) and elsewhere(s, me)]


def val_writers(found: Iterable[Seen], me: Claimant, proc: Proc) -> dict[str, str]:
    """The val files other daemons' live runs write (`found`: val file claims) -> who
    (`holder`, without its leading `run `): admission's `val_writers`, and lint's."""
    out: dict[str, str] = {}
    for seen in theirs(found, me, proc):
        if seen.claim is not None and seen.claim.kind == VAL_FILE and seen.claim.what:
            out[seen.claim.what[0]] = holder(seen, me).removeprefix("run ")
    return out


def gpu_key(index: int, uuid: str) -> str:
    """A GPU as claims name it: its UUID where the driver gives one (the same GPU whatever
    its index in CUDA_VISIBLE_DEVICES order), else its index."""
    return uuid if uuid else f"index:{index}"


def gpus_claimed(
    found: Iterable[Seen], keys: Sequence[tuple[int, str]], me: Claimant
) -> list[tuple[Seen, tuple[int, ...]]]:
    """The GPU claims of other daemons (not `me`'s home's) in `found` that name GPUs of this
    machine (`keys`: index and key), each with the indices it names; live or not (`live`)."""
    index = {key: i for i, key in keys}
    out = []
    for seen in found:
        claim = seen.claim
        if claim is None or claim.kind != GPUS or not elsewhere(seen, me):
            continue
        held = tuple(sorted(index[k] for k in claim.what if k in index))
        if held:
            out.append((seen, held))
    return out


def gpus_held(
    found: Iterable[Seen], keys: Sequence[tuple[int, str]], me_uid: int, home: str, proc: Proc
) -> dict[str, tuple[int, ...]]:
    """The GPUs (`keys`: this machine's, index and key) that live claims of other daemons
    hold, by holder (as `holder` names it) -> indices: for placement, as runs of its own."""
    me = Claimant(home, "", "", me_uid, 0, 0)
    return {
        holder(seen, me).removeprefix("run "): held
        for seen, held in gpus_claimed(found, keys, me)
        if live(seen, proc)
    }


def result_dir_taken(result_dir: str, others: Sequence[Seen], me: Claimant) -> str | None:
    """Why `result_dir` is refused to `me`'s run: the first of the live claims of others that
    `judge` found in it (admission's refusal, and `ajetd lint`'s problem); None where none."""
    if not others:
        return None
    return (
        f"exp_result_dir: {result_dir} is claimed by {holder(others[0], me)}"
        " (two runs never share one: choose another result dir, or submit this once that "
        "run ended)"
    )


def shown(
    seen: Seen, me: Claimant, proc: Proc, when: Callable[[float], str | None]
) -> dict[str, Any]:
    """A claim as the commands that only look show it (`ajetd gpus --json`): whose (as far
    as its name and content tell), since when (`when`: epoch -> text), whether it is live
    (`live`: a stale one counts for nothing and is the daemons' to clear), and `holder`'s
    words for it."""
    parts = name_parts(seen.name)
    claim = seen.claim
    by = claim.by if claim is not None else None
    return {
        "kind": claim.kind if claim is not None else (parts[0] if parts else None),
        "run_id": by.run_id if by is not None else (parts[1] if parts else None),
        "home": by.home if by is not None else None,
        "user": by.user if by is not None else None,
        "uid": seen.file_uid,
        "pid": parts[2] if parts else None,
        "since": when(seen.made) if seen.made else None,
        "live": live(seen, proc),
        "what": list(claim.what) if claim is not None else None,
        "holder": holder(seen, me),
        "unread": seen.unread or None,
    }


def said(seen: Seen, me: Claimant, proc: Proc, when: Callable[[float], str | None]) -> str:
    """`shown` in words, for `ajetd gpus`: `claimed by run X of another ajetd daemon (...)
    since T`, or that the claim is stale."""
    since = when(seen.made) if seen.made else None
    at = f" since {since}" if since else ""
    if live(seen, proc):
        return f"claimed by {holder(seen, me)}{at}"
    return f"stale claim of {holder(seen, me)}{at} (its daemon ended: not counted)"
