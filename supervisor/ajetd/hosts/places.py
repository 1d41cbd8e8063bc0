"""Which host a run's trials get, from its blueprint's options; and the one periodic question
for all the live runs of each place. A new place is one module and one line here."""

from __future__ import annotations

from ajetd.adapters.store import Home
from ajetd.core.model import Run
from ajetd.core.options import Options
from ajetd.hosts.base import Host, Poller
from ajetd.hosts.local import LocalHost
from ajetd.hosts.slurmjob import SlurmHost, SlurmPoller
from ajetd.hosts.ssh import SshHost


class Places:
    def __init__(self, home: Home, liveness_s: float) -> None:
        self.home = home
        self.slurm = SlurmPoller(home, liveness_s)

    def host_for(self, run_id: str, options: Options) -> Host:
        if options.ssh is not None:
            return SshHost(self.home, options.ssh, options.pull, run_id)
        if options.slurm is not None:
            return SlurmHost(self.home, options.slurm, self.slurm)
        return LocalHost(self.home)

    def poll(self, live: list[tuple[Run, Host]], now: float) -> list[Run]:
        """Each place's poller asked once, about its started live runs; the changed records."""
        groups: dict[int, tuple[Poller, list[Run]]] = {}
        for run, host in live:
            if host.poller is not None:
                groups.setdefault(id(host.poller), (host.poller, []))[1].append(run)
        return [r for poller, runs in groups.values() for r in poller.poll(runs, now)]
