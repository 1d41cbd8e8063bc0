"""The typed parts of a run record: its Slurm job, its NeMo-RL output reading, its GPU use,
and where its code came from; pure.

Each is a small frozen record. JSON only at the store's edge: `to_json` writes the shape
state.json has always had (run.json shows the provenance as it is), and `from_json` reads
any older record without failing: a key it lacks takes its default, a key it does not know
is ignored, a value of the wrong type reads as the default. A run from an older home must
still be taken up by a newer daemon.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

JsonObject = dict[str, Any]  # what json.loads gives for an object: the edge's own type


def _text(value: Any) -> str | None:
    """Stored text (a job id may have been stored as a number)."""
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


_READERS: dict[str, Callable[[Any], Any]] = {
    "str": _text,
    "str | None": _text,
    "int": _int,
    "int | None": _int,
    "float": _num,
    "float | None": _num,
    "bool": _flag,
}


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _plain(cls: type, data: Any) -> dict[str, Any]:
    """A record's plain fields (text, numbers, flags) read from stored JSON, each by its
    declared type; a field missing, or stored as another type, is left out (its default)."""
    got = _obj(data)
    out: dict[str, Any] = {}
    for f in fields(cls):
        read = _READERS.get(str(f.type))
        if read is None or f.name not in got:
            continue
        value = read(got[f.name])
        if value is not None or str(f.type).endswith("| None"):
            out[f.name] = value
    return out


@dataclass(frozen=True)
class SlurmJob:
    """The Slurm job of a run's current trial, as squeue and scontrol last told it.
    `final`: the trial whose end Slurm has told (told once); `exclude`: nodes a node failure
    took out, left out of later submissions. The time limit counts only while a job runs
    (walk87 F10: a job PENDING for ever was charged its limit and ended `time_limit`):
    `began_at` is when the current trial's job began running (Slurm's start time), and
    `waited_s` the time this run's jobs spent in Slurm's queue, that trial's wait included."""

    job_id: str = ""
    state: str = ""  # PENDING, RUNNING, COMPLETED, NODE_FAIL, ...
    nodes: str = ""
    reason: str = ""
    final: int | None = None
    exclude: str = ""
    began_at: float | None = None
    waited_s: float = 0.0
    never_ran: bool = False  # the `final` trial's job ended without ever running

    @property
    def waiting(self) -> bool:
        """The current trial's job has not begun running (submitted, or about to be)."""
        return self.state == "PENDING" and self.began_at is None

    def to_json(self) -> JsonObject:
        """Only what was ever told (a run never in Slurm stores `{}`, as before)."""
        data: JsonObject = {}
        for key in ("job_id", "state", "nodes", "reason"):
            if getattr(self, key):
                data[key] = getattr(self, key)
        if self.final is not None:
            data["final"] = self.final
        if self.exclude:
            data["exclude"] = self.exclude
        if self.began_at is not None:
            data["began_at"] = self.began_at
        if self.waited_s:
            data["waited_s"] = self.waited_s
        if self.never_ran:
            data["never_ran"] = True
        return data

    @classmethod
    def from_json(cls, data: Any) -> SlurmJob:
        return cls(**_plain(cls, data))


@dataclass(frozen=True)
class NemoBlock:
    """A NeMo-RL `Validation Results` block still open: its name prefix, the values read (text
    where printed as `nan`, `inf` or `-inf`), and the step of the last `Step N/M` header
    before it opened (None: a record older than it)."""

    prefix: str = ""
    values: tuple[tuple[str, float | str | None], ...] = ()
    step: int | None = None

    def to_json(self) -> JsonObject:
        # "@step" is no metric's key: a bullet's label begins with a letter
        at: JsonObject = {} if self.step is None else {"@step": self.step}
        return {"prefix": self.prefix, **at, **dict(self.values)}

    @classmethod
    def from_json(cls, data: Any) -> NemoBlock | None:
        if not isinstance(data, Mapping):
            return None
        values = tuple(
            (str(k), v if v in ("nan", "inf", "-inf") else _num(v))
            for k, v in data.items()
            if k not in ("prefix", "@step")
            and (v is None or v in ("nan", "inf", "-inf") or _num(v) is not None)
        )
        step = data.get("@step")
        at = step if isinstance(step, int) and not isinstance(step, bool) else None
        return cls(_text(data.get("prefix")) or "", values, at)


@dataclass(frozen=True)
class NemoRead:
    """How far a NeMo-RL run's output was read: the trial, the byte offset in its log, the
    step of the last `Step N/M` header (counted over the whole run: N counts within an epoch),
    its M, an open validation block, the log dir it announced, the last `Epoch E/N` header's E
    and the steps run before that epoch (None: not known yet, estimated at its first step)."""

    trial: int | None = None
    offset: int = 0
    step: int | None = None
    max_steps: int | None = None
    block: NemoBlock | None = None
    log_dir: str | None = None
    epoch: int | None = None
    epoch_base: int | None = None
    skipping: bool = False  # the offset lies inside a line too long to read (`core.lines`)

    def to_json(self) -> JsonObject:
        if self == NemoRead():
            return {}  # never read (an AgentJet run): `{}`, as before
        data: JsonObject = {
            "offset": self.offset,
            "step": self.step,
            "max_steps": self.max_steps,
            "block": None if self.block is None else self.block.to_json(),
            "log_dir": self.log_dir,
        }
        if self.skipping:  # (inside a line too long: rare, the older shape otherwise)
            data["skipping"] = True
        if self.epoch is not None:  # (a run without `Epoch` headers keeps the older shape)
            data.update(epoch=self.epoch, epoch_base=self.epoch_base)
        if self.trial is not None:
            data["trial"] = self.trial
        return data

    @classmethod
    def from_json(cls, data: Any) -> NemoRead:
        return cls(**_plain(cls, data), block=NemoBlock.from_json(_obj(data).get("block")))


@dataclass(frozen=True)
class OutBlock:
    """A validation print of an AgentJet run's output still being read (`ajetout`): a
    beast_logger table (`kind` "table": its title and its rows' lines so far, each its key's
    and value's pieces, or a rule between rows) or pprint's wrapped text (`kind` "text": the
    lines so far), and how many lines it has spanned (bounded: `ajetout.MAX_OPEN_LINES`)."""

    kind: str = "table"
    title: str = ""
    rows: tuple[tuple[str, str], ...] = ()
    text: str = ""
    lines: int = 0

    def to_json(self) -> JsonObject:
        return {
            "kind": self.kind,
            "title": self.title,
            "rows": [list(r) for r in self.rows],
            "text": self.text,
            "lines": self.lines,
        }

    @classmethod
    def from_json(cls, data: Any) -> OutBlock | None:
        if not isinstance(data, Mapping) or data.get("kind") not in ("table", "text"):
            return None
        rows = tuple(
            (r[0], r[1])
            for r in data.get("rows") or ()
            if isinstance(r, list) and len(r) == 2 and all(isinstance(c, str) for c in r)
        )
        return cls(**_plain(cls, data), rows=rows)


@dataclass(frozen=True)
class OutRead:
    """How far an AgentJet run's output was read for validation metrics (`ajetout`), read
    while its val file holds none: the trial, the byte offset in its log, whether that offset
    lies inside a line too long to read, the print still open, the shape of the last record
    read (which later prints of the same validation join), and whether the run's history
    holds records read here (`taken`: a val file's first record replaces them)."""

    trial: int | None = None
    offset: int = 0
    skipping: bool = False
    block: OutBlock | None = None
    last: str = ""
    taken: bool = False

    def to_json(self) -> JsonObject:
        if self == OutRead():
            return {}
        data: JsonObject = {
            "trial": self.trial,
            "offset": self.offset,
            "skipping": self.skipping,
            "last": self.last,
            "taken": self.taken,
        }
        if self.block is not None:
            data["block"] = self.block.to_json()
        return data

    @classmethod
    def from_json(cls, data: Any) -> OutRead:
        return cls(**_plain(cls, data), block=OutBlock.from_json(_obj(data).get("block")))


@dataclass(frozen=True)
class ValRead:
    """How far an AgentJet run's val file was read (`core.lines`): the byte after the last
    line taken (None: not yet, or a record older than this field: its history is read again
    from `Run.val_offset`), whether that byte lies inside a line too long to keep, and the
    `## Step` block still taking bullets (the last record of the history once it has one);
    how many lines read looked like a record (`{...`) and could not be read as one, and the
    first of them (bounded): they are named, never dropped in silence."""

    pos: int | None = None
    skipping: bool = False
    block: JsonObject | None = None
    unread: int = 0
    first_unread: str = ""

    def to_json(self) -> JsonObject:
        if self == ValRead():
            return {}
        return {
            "pos": self.pos,
            "skipping": self.skipping,
            "block": self.block,
            "unread": self.unread,
            "first_unread": self.first_unread,
        }

    @classmethod
    def from_json(cls, data: Any) -> ValRead:
        block = _obj(data).get("block")
        return cls(**_plain(cls, data), block=dict(block) if isinstance(block, Mapping) else None)


@dataclass(frozen=True)
class GpuTrack:
    """One GPU as one run used it, folded over every sample: counts, sums and peaks, the
    latest figures, and the stretches it sat idle (bounded)."""

    index: int
    n: int = 0
    util_sum: float = 0.0
    util_peak: float = 0.0
    mem_sum: float = 0.0
    mem_peak: float = 0.0
    first_at: float | None = None
    idle: tuple[tuple[float, float], ...] = ()
    idle_from: float | None = None  # idle since then, not yet busy again
    util_last: float | None = None
    mem_last: float | None = None
    last_at: float | None = None
    lost: bool = False

    def to_json(self) -> JsonObject:
        return {
            "n": self.n,
            "util_sum": self.util_sum,
            "util_peak": self.util_peak,
            "mem_sum": self.mem_sum,
            "mem_peak": self.mem_peak,
            "first_at": self.first_at,
            "idle": [list(pair) for pair in self.idle],
            "idle_from": self.idle_from,
            "util_last": self.util_last,
            "mem_last": self.mem_last,
            "last_at": self.last_at,
            "lost": self.lost,
        }

    @classmethod
    def from_json(cls, index: int, data: Any) -> GpuTrack:
        got = _obj(data)
        idle = []
        for pair in got.get("idle") or ():
            if isinstance(pair, list | tuple) and len(pair) == 2:
                start, end = _num(pair[0]), _num(pair[1])
                if start is not None and end is not None:
                    idle.append((start, end))
        plain = {k: v for k, v in _plain(cls, got).items() if k != "index"}
        return cls(index=index, idle=tuple(idle), **plain)


@dataclass(frozen=True)
class GpuStats:
    """A run's GPU use, one track per GPU it was seen on, by index."""

    gpus: tuple[GpuTrack, ...] = ()

    def __len__(self) -> int:
        """How many GPUs it was seen on (so an empty one reads as false, as `{}` did)."""
        return len(self.gpus)

    def to_json(self) -> JsonObject:
        """Per GPU index as a string (JSON keys), as state.json always had it."""
        return {str(g.index): g.to_json() for g in self.gpus}

    @classmethod
    def from_json(cls, data: Any) -> GpuStats:
        tracks = [
            GpuTrack.from_json(int(key), rec)
            for key, rec in _obj(data).items()
            if isinstance(key, str) and key.isdigit()
        ]
        return cls(tuple(sorted(tracks, key=lambda g: g.index)))


@dataclass(frozen=True)
class Provenance:
    """Where a run's code came from when it was admitted: its git state (or why there is
    none) and the hash of its blueprint."""

    git: bool = False
    note: str = ""  # why there is no git state
    commit: str = ""
    branch: str = ""
    toplevel: str = ""
    dirty: bool = False
    changed: int = 0  # tracked files changed against HEAD
    untracked: tuple[str, ...] = field(default=())
    blueprint_sha256: str = ""

    def to_json(self) -> JsonObject:
        """run.json's and state.json's shape: git's fields, or the note where there is none."""
        data: JsonObject = {"git": self.git}
        if self.git:
            data.update(
                commit=self.commit,
                branch=self.branch,
                toplevel=self.toplevel,
                dirty=self.dirty,
                changed=self.changed,
                untracked=list(self.untracked),
            )
        else:
            data["note"] = self.note
        if self.blueprint_sha256:
            data["blueprint_sha256"] = self.blueprint_sha256
        return data

    @classmethod
    def from_json(cls, data: Any) -> Provenance | None:
        """None for a record without one (`{}`: not collected)."""
        got = _obj(data)
        if not got:
            return None
        untracked = got.get("untracked")
        listed = tuple(str(u) for u in untracked) if isinstance(untracked, list) else ()
        return cls(**_plain(cls, got), untracked=listed)
