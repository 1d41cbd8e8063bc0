"""The only module that touches processes (psutil, signals).

A run's processes are the trial script's descendants plus anything that carries the run's
`AJETD_RUN_ID` in its environment: Ray and vLLM daemonise and leave the tree, but keep the
environment they were started with. Only the current user's processes are ever signalled.

Finding them is one pass over `/proc` that reads each process's `stat` (parent, start time,
session) and skips every process started before the run began: it cannot carry the run's id.
Of the rest, those in a session that cannot be the run's (`foreign_sessions`) are skipped too;
only the others, this user's, have their environment read. That pass costs a few milliseconds
where reading every process's environment through psutil cost ~185 ms of CPU at each trial end.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Iterable, Iterator, Mapping

import psutil

log = logging.getLogger(__name__)

SIGNALS = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "KILL": signal.SIGKILL}
START_SLACK_S = 2.0  # /proc/stat's boot time is whole seconds: look a little further back
PROC = "/proc"


def _ticks_since_boot(at: float) -> float:
    """An epoch time as /proc/<pid>/stat's start time counts it (clock ticks since boot)."""
    return (at - psutil.boot_time()) * os.sysconf("SC_CLK_TCK")


def _fields(pid: str) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the name (state first); None once it is gone."""
    try:  # os.open: a third of open()'s cost, and this runs for every process
        fd = os.open(f"{PROC}/{pid}/stat", os.O_RDONLY)
        try:
            data = os.read(fd, 1024)
        finally:
            os.close(fd)
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].split(None, 20)  # the name may hold spaces, ")"


def _live_fields(pid: str) -> list[bytes] | None:
    """`_fields` of a live process; None once it is gone or a zombie (it has ended; only its
    parent's wait is missing, no signal can end it)."""
    fields = _fields(pid)
    return None if fields is None or fields[:1] in ([b"Z"], [b"X"]) else fields


def _stat(pid: str) -> tuple[int, int, int] | None:
    """(parent pid, start time in ticks since boot, session id) of a live process; None once
    it has ended."""
    fields = _live_fields(pid)
    try:
        return None if fields is None else (int(fields[1]), int(fields[19]), int(fields[3]))
    except (IndexError, ValueError):
        return None


def running_script(script: str) -> list[int]:
    """This user's processes running `script` as a program's argument (`bash <script>`: a
    trial's pane process, waiting for its go file or running it, on any tmux server)."""
    want, me, found = os.fsencode(script), os.getuid(), []
    with contextlib.suppress(OSError):
        for name in os.listdir(PROC):
            if not name.isdigit():
                continue
            try:
                if os.stat(f"{PROC}/{name}").st_uid != me:
                    continue
                with open(f"{PROC}/{name}/cmdline", "rb") as handle:
                    args = handle.read(65536).split(b"\0")
            except OSError:
                continue
            if want in args[1:]:
                found.append(int(name))
    return found


def on_its_terminal(pid: int | None, script: str) -> bool:
    """Whether the live process `pid` (None: any of this user's, `running_script`) runs
    `script` as a program's argument and still has its terminal: a trial's pane process, on
    a pane whether or not the tmux server ajetd asks lists it (another server's: another
    TMUX_TMPDIR, a socket removed). One whose session was killed by hand lost its terminal
    (`lost_terminal`): its pane is gone, whatever it waits for."""
    if pid is None:
        return any(not lost_terminal(found) for found in running_script(script))
    if _live_fields(str(pid)) is None or lost_terminal(pid):
        return False
    try:
        with open(f"{PROC}/{pid}/cmdline", "rb") as handle:
            args = handle.read(65536).split(b"\0")
    except OSError:
        return False
    return os.fsencode(script) in args[1:]


def lost_terminal(pid: int) -> bool:
    """True when a live process has no controlling terminal any more: its tmux pane was
    closed (the session killed by hand) while it lives on, waiting for a quiet child that
    the hangup never reached. A pane's process always starts on the pane's terminal."""
    fields = _fields(str(pid))
    try:
        return fields is not None and int(fields[4]) == 0
    except (IndexError, ValueError):
        return False


def pane_process(pid: int) -> tuple[int, bool] | None:
    """A pane process's start time (`started`) and whether it lost its terminal
    (`lost_terminal`) from one read of its `stat` (the liveness check reads every pane's
    each period); None once it has ended or is a zombie."""
    fields = _live_fields(str(pid))
    try:
        return None if fields is None else (int(fields[19]), int(fields[4]) == 0)
    except (IndexError, ValueError):
        return None


def started(pid: int) -> int | None:
    """When a process started (clock ticks since boot), to tell it from a later process
    given the same pid; None once it has ended."""
    got = _stat(str(pid))
    return None if got is None else got[1]


def _floor(since: float | None) -> float:
    """`since` in /proc's start times, a little earlier (`START_SLACK_S`); -1 for None: every
    process started after it."""
    return -1.0 if since is None else _ticks_since_boot(since - START_SLACK_S)


def _young(floor: float) -> Iterator[tuple[int, int, int, int]]:
    """(pid, parent pid, start, session) of every process started at or after `floor`
    (`_floor`)."""
    try:
        names = os.listdir(PROC)
    except OSError:
        return
    for name in names:
        if not name.isdigit():
            continue
        got = _stat(name)
        if got is not None and got[1] >= floor:
            yield int(name), *got


def _carries(pid: int, marker: bytes, me: int) -> bool:
    """The process is this user's and was started with `marker` (`AJETD_RUN_ID=<id>`)."""
    try:
        if os.stat(f"{PROC}/{pid}").st_uid != me:
            return False
        with open(f"{PROC}/{pid}/environ", "rb") as handle:
            env = handle.read()
    except OSError:
        return False
    return env.startswith(marker) or b"\0" + marker in env


def run_pids(
    run_id: str,
    root_pid: int | None,
    since: float | None = None,
    others: Mapping[int, int] | None = None,
) -> list[int]:
    """The run's live processes, the trial script itself excluded: descendants of `root_pid`
    and this user's processes started with its `AJETD_RUN_ID`, among those started after
    `since` (when the run began; None looks at every process). `others`: other trials' pane
    processes (pid: start time), each the leader of its own session. A process in a session
    that cannot be the run's (theirs, their tmux server's, one begun before the run:
    `foreign_sessions`) is not the run's, so its environment is not read: with many runs,
    most processes are theirs or their server's."""
    found, below = _run_tree(run_id, root_pid, since, others)
    return sorted(found | below)


def _run_tree(
    run_id: str,
    root_pid: int | None,
    since: float | None,
    others: Mapping[int, int] | None,
) -> tuple[set[int], set[int]]:
    """`run_pids`'s one pass over /proc, in two parts: the processes that carry the run's
    id and the descendants of `root_pid` (itself excluded), which may overlap."""
    floor = _floor(since)
    young = {pid: (parent, start, sid) for pid, parent, start, sid in _young(floor)}
    theirs = foreign_sessions(young, others or {}, floor)
    me, own = os.getuid(), os.getpid()
    marker = f"AJETD_RUN_ID={run_id}\0".encode()
    found = {
        pid
        for pid, (_, _, sid) in young.items()
        if pid != own and sid not in theirs and _carries(pid, marker, me)
    }
    found.discard(root_pid or 0)
    below: set[int] = set()
    if root_pid:
        children: dict[int, list[int]] = {}
        for pid, (parent, _, _) in young.items():
            children.setdefault(parent, []).append(pid)
        todo = list(children.get(root_pid, ()))
        while todo:
            pid = todo.pop()
            if pid not in below and pid != root_pid:
                below.add(pid)
                todo.extend(children.get(pid, ()))
    return found, below


def foreign_sessions(
    young: Mapping[int, tuple[int, int, int]], panes: Mapping[int, int], floor: float
) -> set[int]:
    """The sessions among `young`'s (pid: (parent, start, session), the processes started
    since the run began) whose processes cannot be the run's: their environment is not read.

    A process's session is its parent's, or one it leads (`setsid`): it never joins one. So
    every process of the run is in a session its pane process or another of its processes
    began, and a session begun by a process that is not the run's holds none of the run's. A
    session's id stays taken while any process is in it, so a live process whose pid is that
    id is the one that began it. Such sessions (by their live leader):
    - another trial's pane session, its leader named in `panes` (pid: start time, as tmux
      listed it) and still that process, not a later one given its pid;
    - their tmux server's (the parent of those pane processes, leading a session of its own:
      the server's `pipe-pane` helpers, a `cat` and its `sh` for every pane, are in it);
    - one begun by a process started before the run began (`floor`, `_floor`): a login shell,
      another program's service.
    A process in one of them that does carry the run's id was given it by hand (`env`,
    `tmux set-environment`), not by the run: the run's own processes inherit it."""
    seen = {sid for _, _, sid in young.values()}
    stats = {sid: young.get(sid) or _stat(str(sid)) for sid in seen}  # their leaders, if live
    theirs = {sid for sid in seen & panes.keys() if _began(stats[sid], sid) == panes[sid]}
    pane = next((stats[sid] for sid in theirs), None)  # one: all are the server's children
    server = pane[0] if pane else 0
    if server in seen and _began(stats[server], server) is not None:
        theirs.add(server)
    for sid in seen - theirs - young.keys():  # led by a process not started since (or gone)
        began = _began(stats[sid], sid)
        if began is not None and began < floor:
            theirs.add(sid)
    return theirs


def _began(stat: tuple[int, int, int] | None, sid: int) -> int | None:
    """When the live process whose `stat` this is started, where it leads session `sid`."""
    return stat[1] if stat is not None and stat[2] == sid else None


def owners(pids: Iterable[int]) -> dict[int, str]:
    """For GPU processes: the `AJETD_RUN_ID` each was started with (run id, or `swarm_<port>`
    for a swarm server); processes of other users, or outside ajetd, are left out."""
    found = {}
    for pid in pids:
        try:
            run_id = psutil.Process(pid).environ().get("AJETD_RUN_ID")
        except psutil.Error:
            continue
        if run_id:
            found[pid] = run_id
    return found


def run_processes(
    run_id: str,
    root_pid: int | None,
    since: float | None = None,
    others: Mapping[int, int] | None = None,
) -> list[psutil.Process]:
    """The run's live processes (`run_pids`) as psutil handles, which guard against a pid
    being reused before they are signalled."""
    found = []
    for pid in run_pids(run_id, root_pid, since, others):
        with contextlib.suppress(psutil.Error):
            found.append(psutil.Process(pid))
    return found


def snapshot(run_id: str, root_pid: int | None) -> list[dict[str, object]]:
    """The run's processes with CPU (over 0.2 s) and RSS, for `ajetd diag`; touches nothing."""
    found = run_processes(run_id, root_pid)
    if root_pid:
        with contextlib.suppress(psutil.Error):
            found.insert(0, psutil.Process(root_pid))
    for proc in found:
        with contextlib.suppress(psutil.Error):
            proc.cpu_percent(None)
    psutil.cpu_percent(0.2)
    rows: list[dict[str, object]] = []
    for proc in found:
        try:
            with proc.oneshot():
                rows.append(
                    {
                        "pid": proc.pid,
                        "ppid": proc.ppid(),
                        "cpu_percent": proc.cpu_percent(None),
                        "rss_mib": round(proc.memory_info().rss / 2**20, 1),
                        "status": proc.status(),
                        "command": " ".join(proc.cmdline())[:160] or proc.name(),
                    }
                )
        except psutil.Error:
            continue
    return rows


def signal_run(run_id: str, root_pid: int | None, name: str, since: float | None = None) -> int:
    """Send INT, TERM or KILL to the run's processes; return how many were signalled.

    INT goes to the pane's foreground process group first, exactly as Ctrl-C would, then to
    any run process outside it. The trial script traps INT and TERM and survives to record the
    exit status.
    """
    sig = SIGNALS[name]
    count = 0
    group = None
    if root_pid and sig == signal.SIGINT:
        with contextlib.suppress(OSError):
            group = os.getpgid(root_pid)
            os.killpg(group, sig)
            count += 1
    for proc in run_processes(run_id, root_pid, since):
        try:
            if group is not None and os.getpgid(proc.pid) == group:
                continue
            proc.send_signal(sig)
            count += 1
        except (psutil.Error, OSError):
            continue
    return count


def port_holder(port: int, run_id: str) -> str | None:
    """Who listens on `port`, when it is not a process of this run: `port 10086 is held by pid
    123 (python serve.py)`; None when free, held by this run, or not visible to this user."""
    try:
        connections = psutil.net_connections(kind="inet")
    except (psutil.Error, OSError):
        return None
    for conn in connections:
        if conn.status != psutil.CONN_LISTEN or not conn.laddr or conn.laddr.port != port:
            continue
        if conn.pid is None:
            return f"port {port} is held by a process of another user"
        try:
            proc = psutil.Process(conn.pid)
            if proc.environ().get("AJETD_RUN_ID") == run_id:
                return None
            command = " ".join(proc.cmdline())[:120]
        except psutil.Error:
            command = "?"
        return f"port {port} is held by pid {conn.pid} ({command})"
    return None


def live_commands(
    run_id: str,
    root_pid: int | None,
    since: float | None = None,
    others: Mapping[int, int] | None = None,
) -> list[tuple[int, str]]:
    """The run's live processes (`run_pids`) that are no longer below `root_pid` (the trial's
    pane process), with their command lines (`shown_cmdline`), nothing signalled: what its
    command left running detached (reparented away: `nohup ... &`, a tmux server of its
    own). A process still below the pane is the trial's own, not yet ended. One pass over
    /proc: the pane's descendants come from the same `stat` reads (psutil's `children`
    would read every process's again, milliseconds before the end's record)."""
    found, below = _run_tree(run_id, root_pid, since, others)
    left = []
    for pid in sorted(found - below):
        with contextlib.suppress(psutil.Error):
            left.append(psutil.Process(pid))
    return [(p.pid, shown_cmdline(p)) for p in left]


def reap_run(
    run_id: str,
    root_pid: int | None,
    since: float | None = None,
    grace_s: float = 2.0,
    others: Mapping[int, int] | None = None,
) -> list[tuple[int, str]]:
    """After a trial ended: TERM what is left of the run (started after `since`; `others`:
    other trials' pane processes, as `run_pids` takes them), KILL it after `grace_s`. A
    process that has ended counts as gone even while it waits, a zombie, for its parent (or
    init) to collect it. Returns each one ended, with its command line (`shown_cmdline`), so
    that the run can say what it ended (a program put in the background by its command)."""
    left = run_processes(run_id, root_pid, since, others)
    ended = [(p.pid, shown_cmdline(p)) for p in left]
    for proc in left:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    alive = _wait_gone(left, grace_s)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    if left:
        log.info("run %s: ended %d leftover process(es)", run_id, len(left))
    return ended


CMDLINE_SHOWN = 160  # characters of a leftover's command line said in the journal


def commands(pids: Iterable[int]) -> dict[int, str]:
    """The command lines of these processes (`shown_cmdline`), to name another user's or
    program's process on a GPU; one gone, or not visible, is left out."""
    found = {}
    for pid in pids:
        try:
            found[pid] = shown_cmdline(psutil.Process(pid))
        except psutil.Error:
            continue
    return found


def shown_cmdline(proc: psutil.Process) -> str:
    """A process's command line on one line, cut to CMDLINE_SHOWN characters; its name where
    the command line cannot be read (gone, or not ours)."""
    try:
        line = " ".join(proc.cmdline()) or proc.name()
    except psutil.Error:
        return f"pid {proc.pid}"
    line = " ".join(line.split())
    return line if len(line) <= CMDLINE_SHOWN else line[: CMDLINE_SHOWN - 1] + "…"


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Those of `procs` still running after up to `timeout` seconds (checked every 10 ms)."""
    deadline = time.monotonic() + timeout
    alive = [p for p in procs if _running(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.01)
        alive = [p for p in alive if _running(p)]
    return alive
