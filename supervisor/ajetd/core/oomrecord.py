"""What the kernel records of its OOM kills, read from its own text; pure.

Two records say that the kernel's OOM killer killed a process (`adapters.oomwatch` reads them,
bounded; this module only parses what it read):
- the OOM kill counter of a memory cgroup: the `oom_kill N` line of cgroup v2's
  `memory.events` (counted over the cgroup and every cgroup below it) or of cgroup v1's
  `memory.oom_control` (the cgroup's own: the adapter sums it over the folders below);
- the kernel log (`/dev/kmsg`'s records, or `dmesg`'s lines): `oom-kill:constraint=...,
  task_memcg=/x,task=python,pid=N,uid=0` and `Out of memory: Killed process N (python) ...`
  (`Memory cgroup out of memory: Killed process N ...` where a cgroup's limit was reached).

Which cgroup a process is in (`/proc/PID/cgroup`) and where each hierarchy is mounted
(`/proc/self/mountinfo`) are parsed here too, so the adapter finds the counter's file.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass

LINE_KEPT = 300  # characters of a kernel line a finding quotes
KILLS_KEPT = 64  # the kernel log's last OOM kills kept (one trial's window needs a few)


@dataclass(frozen=True)
class KernelKill:
    """One OOM kill as the kernel log tells it: when (seconds since boot, the log's own
    stamp), which process, the memory cgroup it was in ("" where no line said) and the line
    that says it (cut)."""

    at: float
    pid: int
    task: str
    memcg: str
    text: str


@dataclass(frozen=True)
class OomLook:
    """What ajetd could see of OOM kills around one trial (`adapters.oomwatch.look`).

    `elsewhere`: the place the program ran when it is not this machine (an SSH host, a Slurm
    node), whose OOM killer ajetd cannot see ("" here). `cgroup`: the memory cgroup the
    trial's processes were in, as the kernel names it ("" not known); `rise`: how many more
    OOM kills its counter showed at the end than at the trial's start (None: not read at one
    of them). `kernel_log`: whether the kernel log was read, `unread` why not; `kills`: its
    OOM kills (the last KILLS_KEPT), stamped in seconds since boot; `boot_at`: when this
    machine booted, in the wall time trials are recorded in (`at` + `boot_at`: when)."""

    elsewhere: str = ""
    cgroup: str = ""
    rise: int | None = None
    kernel_log: bool = False
    unread: str = ""
    kills: tuple[KernelKill, ...] = ()
    boot_at: float = 0.0


def oom_kill_count(text: str) -> int | None:
    """The `oom_kill N` line's N (memory.events, memory.oom_control); None where none."""
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2 and words[0] == "oom_kill" and words[1].isdigit():
            return int(words[1][:19])
    return None


@dataclass(frozen=True)
class Membership:
    """A process's memory cgroup (`/proc/PID/cgroup`): its path in the hierarchy, and whether
    that is cgroup v1's memory hierarchy (else the v2 unified one)."""

    path: str
    v1: bool


def memory_cgroup(text: str) -> Membership | None:
    """The memory cgroup a `/proc/PID/cgroup` text names: the v1 `memory` controller's line
    where there is one (a hybrid host's memory is v1's), else the v2 `0::` line. None where
    neither is there, or the path is no plain absolute one (`..`: outside its namespace)."""
    v2 = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        number, controllers, path = parts
        if "memory" in controllers.split(","):
            return _membership(path, True)
        if number == "0" and controllers == "":
            v2 = path
    return _membership(v2, False) if v2 is not None else None


def _membership(path: str, v1: bool) -> Membership | None:
    if not path.startswith("/") or ".." in path.split("/") or "\0" in path:
        return None
    return Membership(posixpath.normpath(path), v1)


@dataclass(frozen=True)
class Mount:
    """A cgroup hierarchy's mount (`/proc/self/mountinfo`): the hierarchy's path at the mount's
    root, and where it is mounted."""

    root: str
    point: str
    v1_memory: bool  # cgroup v1 with the memory controller (else cgroup2)


def cgroup_mounts(text: str) -> list[Mount]:
    """The cgroup2 mounts and the cgroup v1 memory mounts a mountinfo text lists."""
    found = []
    for line in text.splitlines():
        left, dash, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not dash or len(fields) < 5 or len(tail) < 3:
            continue
        fstype, options = tail[0], tail[2].split(",")
        if fstype == "cgroup2" or (fstype == "cgroup" and "memory" in options):
            root, point = _unescape(fields[3]), _unescape(fields[4])
            found.append(Mount(root, point, fstype == "cgroup"))
    return found


def _unescape(field: str) -> str:
    """A mountinfo field as the path it is (`\\040` a space, as the kernel escapes it)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def cgroup_folder(member: Membership, mounts: Iterable[Mount]) -> str | None:
    """Where the files of `member`'s cgroup are on this machine: below the mount of its
    hierarchy whose root holds it. None where no mount does."""
    for mount in mounts:
        if mount.v1_memory != member.v1:
            continue
        root = mount.root.rstrip("/")
        if member.path != mount.root and not member.path.startswith(root + "/"):
            continue
        rest = member.path[len(root) :].lstrip("/")
        return posixpath.join(mount.point, rest) if rest else mount.point
    return None


# one record of /dev/kmsg (`6,1234,5678901,-;text`: its stamp in microseconds since boot) or
# one line of dmesg (`[ 5678.901234] text`)
_KMSG = re.compile(r"(\d{1,5}),(\d{1,20}),(\d{1,20}),[^;]{0,40};")
_DMESG = re.compile(r"\[\s{0,12}(\d{1,12})\.(\d{1,9})\]\s?")
_KILLED_PROCESS = re.compile(r"\bKilled process (\d{1,10}) \(([^)\n]{0,64})\)")
OOM_WORDS = ("oom-kill:", "Killed process ")  # what a kernel line of an OOM kill holds


def kernel_kills(records: Iterable[str]) -> tuple[KernelKill, ...]:
    """The OOM kills a kernel log's records tell (each record or line as /dev/kmsg or dmesg
    gives it), one per process killed, its last KILLS_KEPT: the `Killed process` line, with
    the cgroup the `oom-kill:` line before it names."""
    kills: dict[tuple[int, int], KernelKill] = {}  # (pid, second) -> the kill
    memcg: dict[int, str] = {}
    for record in records:
        stamped = _stamped(record)
        if stamped is None:
            continue
        at, text = stamped
        if "oom-kill:" in text:
            fields = _oom_kill_fields(text)
            said = fields.get("pid", "")
            if said.isdigit():
                memcg[int(said[:10])] = fields.get("task_memcg", "")
            continue
        match = _KILLED_PROCESS.search(text)
        if match is None:
            continue
        pid = int(match.group(1))
        kill = KernelKill(at, pid, match.group(2), memcg.pop(pid, ""), text[:LINE_KEPT])
        kills[(pid, int(at))] = kill
        if len(kills) > KILLS_KEPT:
            kills.pop(next(iter(kills)))
    return tuple(kills.values())


def _stamped(record: str) -> tuple[float, str] | None:
    """A record's stamp (seconds since boot) and first line of text; None for no record."""
    kmsg = _KMSG.match(record)
    if kmsg is not None:
        text = record[kmsg.end() :].split("\n", 1)[0]
        return int(kmsg.group(3)[:15]) / 1e6, text
    dmesg = _DMESG.match(record)
    if dmesg is not None:
        fraction = dmesg.group(2)
        at = int(dmesg.group(1)) + int(fraction) / 10 ** len(fraction)
        return at, record[dmesg.end() :].split("\n", 1)[0]
    return None


def _oom_kill_fields(text: str) -> dict[str, str]:
    """The `key=value` fields of the kernel's `oom-kill:` line."""
    _, _, rest = text.partition("oom-kill:")
    fields = {}
    for part in rest[:2000].split(","):
        key, eq, value = part.partition("=")
        if eq:
            fields[key.strip()] = value.strip()
    return fields
