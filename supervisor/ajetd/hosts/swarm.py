"""AgentJet swarm servers: one `ajet_swarm_<port>` tmux session per port, shared by runs.

Swarm mode splits an experiment in two: a long-lived server that holds the model and trains,
and the blueprint's command as a client that rolls out episodes against it. Runs naming the
same port share one server. ajetd starts it (or finds one already answering: that one is
someone else's and is only used, never restarted or stopped), waits for `GET /health` to answer
`{"status": "ok"}` without ever blocking the loop, and lets a client go only against a healthy
server. A server that dies is a finding on each run using it; it is started again before those
clients are relaunched. A server ajetd started is stopped once no run has used it for `keep`.

The server runs like a trial: the same generated script (venv, environment, exact exit code,
a `hup` marker), in its own folder under the daemon's home, its output in `server-N.log`.

A swarm client is not a `Host`: it runs here, in its pane, like any local trial (the same
script, signals, files and clean-up). What swarm adds is a gate before the client starts
(its server answering /health) and one more cause of its death (the server's), both asked by
the daemon's launch and observe steps. A client on an SSH host or in Slurm would keep its own
host and pass the same gate.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ajetd.adapters import procs
from ajetd.adapters.environ import keep_environ
from ajetd.adapters.store import mark, open_owner, write_atomic
from ajetd.adapters.tmux import Pane, Tmux, find_pane
from ajetd.adapters.trialfiles import read_exit
from ajetd.core import jsontext, placement
from ajetd.core.errors import TmuxError
from ajetd.core.finding import Finding
from ajetd.core.hostspecs import SwarmSpec
from ajetd.core.model import Run
from ajetd.core.policy import describe_exit
from ajetd.core.trialscript import TrialSpec, render_trial_script
from ajetd.diagnosis.live import diagnose_file
from ajetd.diagnosis.scan import log_tail

log = logging.getLogger(__name__)
HEALTH_TIMEOUT_S = 0.5  # one probe; a refused connection answers at once
MAX_STARTS = 4  # server starts per port before ajetd gives up on it (the first included)
SERVER_DIED = "swarm_server_died"


def healthy(port: int) -> bool:
    """Whether `GET http://127.0.0.1:<port>/health` answers `{"status": "ok"}` (no proxy).
    urllib is imported here, not with the module: it brings ssl, http and email, 3 MiB of the
    daemon's memory that runs without a swarm server never need."""
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1 is local
    try:
        with opener.open(f"http://127.0.0.1:{port}/health", timeout=HEALTH_TIMEOUT_S) as got:
            body = jsontext.loads(got.read(4096))
    except (OSError, ValueError, urllib.error.URLError):
        return False
    return isinstance(body, dict) and body.get("status") == "ok"


def session_name(port: int) -> str:
    return f"ajet_swarm_{port}"


def died_finding(port: int, why: str, server_log: Path, root: Finding | None) -> Finding:
    """The finding a run gets when its server died; the server's own root cause as evidence."""
    evidence = f"the swarm server on port {port} {why}"
    if root is not None:
        evidence += f"; its log ({server_log}) shows {root.kind} at line {root.line}: "
        evidence += root.evidence
    return Finding(
        SERVER_DIED,
        "retryable",
        0,
        evidence,
        "The swarm server this client trains against exited.",
        "ajetd starts the server again, waits for /health, then relaunches the client.",
    )


@dataclass(frozen=True)
class Ready:
    pass


# A client waits (the server starts, or answers no more) or can never start now (its server
# failed): the same answers as placement's for GPUs.
Wait = placement.Wait
Fail = placement.Never
Gate = Ready | Wait | Fail


@dataclass
class Server:
    """What ajetd knows of one port's server."""

    port: int
    owned: bool  # started (or adopted from its session name) by ajetd
    starts: int = 0
    deadline: float | None = None  # /health must answer by then (None: it answers)
    answered: bool = False  # answered /health since its last start: a death is restarted
    reported: int = 0  # the start whose death was reported to its clients
    pane_pid: int | None = None
    keep_s: float = 600.0
    idle_since: float | None = None


class SwarmServers:
    """Every swarm server of this daemon, keyed by port."""

    def __init__(self, root: Path, tmux: Tmux, probe: Callable[[int], bool] = healthy) -> None:
        self.root = root
        self.tmux = tmux
        self.probe = probe
        self.servers: dict[int, Server] = {}

    def folder(self, port: int) -> Path:
        return self.root / str(port)

    def files(self, port: int, start: int) -> dict[str, Path]:
        folder = self.folder(port)
        return {k: folder / f"server-{start}.{k}" for k in ("sh", "go", "exit", "hup", "log")}

    # -- before a client starts ---------------------------------------------------------------
    def gate(self, spec: SwarmSpec, run: Run, env: dict[str, str], now: float) -> Gate:
        """Whether `run`'s client may start now; starts or restarts the server as needed."""
        port = spec.port
        server = self.servers.get(port)
        pane = self._pane(port)
        if server is None:
            if pane is None and self.probe(port):
                self.servers[port] = Server(port, owned=False, answered=True)
                log.info("swarm: a server not started by ajetd answers on port %d; using it", port)
                return Ready()
            server = self.servers[port] = Server(port, owned=True)
            if pane is not None:  # left by an earlier daemon: adopt it
                server.starts = self._last_start(port)
                server.pane_pid, server.deadline = pane.pid, now + spec.health_timeout_s
        server.idle_since, server.keep_s = None, spec.keep_s
        if not server.owned:
            return Ready() if self.probe(port) else self._external_gone(port)
        if pane is not None and not pane.dead:
            return self._alive(spec, server, now)
        if server.starts and not server.answered:
            del self.servers[port]
            return Fail(
                f"the swarm server on port {port} {self._death(port, server.starts)} before "
                f"answering /health{self._tail_note(port, server.starts)}"
            )
        if server.starts >= MAX_STARTS:
            del self.servers[port]
            return Fail(
                f"the swarm server on port {port} died {server.starts} times; not restarted"
            )
        return self._start(spec, server, run, env, now, pane)

    def _alive(self, spec: SwarmSpec, server: Server, now: float) -> Gate:
        """The server's process runs: ready once it answers; a failure past the deadline."""
        if self.probe(spec.port):
            server.answered, server.deadline = True, None
            return Ready()
        if server.deadline is None:  # it answered before: give it the same time again
            server.deadline = now + spec.health_timeout_s
        if now < server.deadline:
            return Wait(self._waiting(spec))
        self.stop(spec.port)
        del self.servers[spec.port]
        return Fail(
            f"the swarm server on port {spec.port} did not answer /health within "
            f"{spec.health_timeout_s:.0f} s{self._tail_note(spec.port, server.starts)}"
        )

    def _waiting(self, spec: SwarmSpec) -> str:
        return (
            f"waiting for the swarm server on port {spec.port} (session "
            f"{session_name(spec.port)}) to answer /health (up to "
            f"{spec.health_timeout_s:.0f} s)"
        )

    def _external_gone(self, port: int) -> Gate:
        del self.servers[port]  # the next gate starts one of ajetd's own
        return Wait(f"the swarm server on port {port} (not ajetd's) stopped answering /health")

    def _start(
        self,
        spec: SwarmSpec,
        server: Server,
        run: Run,
        env: dict[str, str],
        now: float,
        pane: Pane | None,
    ) -> Gate:
        server.starts += 1
        server.answered = False
        f = self.files(spec.port, server.starts)
        self.folder(spec.port).mkdir(exist_ok=True, mode=0o700)
        script = TrialSpec(
            run_id=f"swarm_{spec.port}",
            trial=server.starts,
            command=spec.command,
            codebase_dir=run.codebase_dir,
            venv_dir=run.venv_dir,
            result_dir=str(self.folder(spec.port)),
            go_file=str(f["go"]),
            exit_file=str(f["exit"]),
            hup_file=str(f["hup"]),
            env=tuple(sorted(env.items())),
        )
        try:
            environ = keep_environ(f["sh"].with_suffix(".environ"), again=True)
            script = replace(script, env_file=environ)
            write_atomic(f["sh"], render_trial_script(script), 0o700)
            if pane is not None:
                pane = self.tmux.respawn(pane.pane_id, str(f["sh"]))
            else:
                pane = self.tmux.new_session(
                    session_name(spec.port), run.codebase_dir, str(f["sh"]), window="swarm"
                )
            self.tmux.keep_dead_pane(pane.pane_id)
            open_owner(f["log"]).close()  # tmux's `cat >>` would make it with tmux's umask
            self.tmux.pipe_to_file(pane.pane_id, str(f["log"]))
            mark(f["go"])
        except (TmuxError, OSError) as exc:
            del self.servers[spec.port]
            return Fail(f"the swarm server on port {spec.port} could not be started: {exc}")
        server.pane_pid, server.deadline = pane.pid, now + spec.health_timeout_s
        what = "started" if server.starts == 1 else f"started again (start {server.starts})"
        log.info("swarm: server on port %d %s: %s", spec.port, what, spec.command)
        return Wait(self._waiting(spec))

    # -- while clients run ---------------------------------------------------------------------
    def check(self, panes: list[Pane]) -> dict[int, str]:
        """Servers of ajetd's that answered and have died since: port -> how it ended
        (each death is reported once)."""
        died: dict[int, str] = {}
        for port, server in self.servers.items():
            if not server.owned or not server.answered or server.reported == server.starts:
                continue
            pane = find_pane(panes, self.files(port, server.starts)["sh"])
            if pane is None or pane.dead:
                server.reported = server.starts
                died[port] = self._death(port, server.starts)
        return died

    def died_finding(self, port: int, why: str) -> Finding:
        server = self.servers.get(port)
        log_file = self.files(port, server.starts if server else 1)["log"]
        found = diagnose_file(log_file)
        return died_finding(port, why, log_file, found[0] if found else None)

    # -- after the last client -----------------------------------------------------------------
    def housekeep(self, in_use: set[int], now: float) -> None:
        """Stop servers of ajetd's that no active run (`in_use`: their ports) has needed for
        their `keep` time, and forget the others' records."""
        for port, server in list(self.servers.items()):
            if port in in_use:
                server.idle_since = None
                continue
            if server.idle_since is None:
                server.idle_since = now
            if now - server.idle_since >= server.keep_s:
                if server.owned:
                    log.info(
                        "swarm: port %d unused for %.0f s; stopping its server", port, server.keep_s
                    )
                    self.stop(port)
                del self.servers[port]

    def stop(self, port: int) -> None:
        """End the server's process tree and close its session."""
        server = self.servers.get(port)
        procs.reap_run(f"swarm_{port}", server.pane_pid if server else None)
        try:
            self.tmux.kill_session(session_name(port))
        except TmuxError as exc:
            log.warning("swarm: could not close session %s: %s", session_name(port), exc)

    # -- helpers -------------------------------------------------------------------------------
    def _pane(self, port: int) -> Pane | None:
        try:
            panes = [p for p in self.tmux.panes() if p.session == session_name(port)]
        except TmuxError:
            return None
        return panes[0] if panes else None

    def _last_start(self, port: int) -> int:
        starts = [int(p.stem.split("-")[1]) for p in self.folder(port).glob("server-*.sh")]
        return max(starts, default=0)

    def _death(self, port: int, start: int) -> str:
        f = self.files(port, start)
        parsed = read_exit(f["exit"])
        if parsed is not None:
            return describe_exit(parsed[0]).replace("the program ", "", 1)
        return "vanished (its tmux session or process is gone)"

    def _tail_note(self, port: int, start: int) -> str:
        lines = [line for line in log_tail(self.files(port, start)["log"], 5) if line.strip()]
        if not lines:
            return ""
        return "; its last output: " + " | ".join(shlex.quote(x)[:200] for x in lines[-3:])
