"""A one-node Slurm (munged, slurmctld, slurmd) on private ports under a folder: for the tests
and for `bench/slurm.py`. No slurmdbd, so the path without `sacct` is the one exercised."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class SlurmCluster:
    conf: Path
    node: str
    folder: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def run(self, *argv: str) -> str:
        env = {**os.environ, "SLURM_CONF": str(self.conf)}
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        return done.stdout + done.stderr


def missing() -> str:
    """Why no cluster can start here ("" when one can)."""
    if not all(shutil.which(b) for b in ("munged", "slurmctld", "slurmd", "sbatch")):
        return "no Slurm here: apt-get install slurm-wlm munge (.ci/run does)"
    if os.getuid() != 0:
        return "the test cluster's slurmd runs as root (as .ci/run does)"
    return ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(tmp: Path, cpus: int | None = None) -> SlurmCluster:
    for sub in ("state", "spool", "munge"):
        (tmp / sub).mkdir(mode=0o700, parents=True)
    (tmp / "munge.key").write_bytes(os.urandom(1024))
    (tmp / "munge.key").chmod(0o400)
    sock = tmp / "munge" / "munge.socket"
    subprocess.run(
        [
            "munged",
            f"--key-file={tmp / 'munge.key'}",
            f"--socket={sock}",
            "--force",
            f"--pid-file={tmp / 'munge' / 'munged.pid'}",
            f"--log-file={tmp / 'munge' / 'log'}",
            f"--seed-file={tmp / 'munge' / 'seed'}",
        ],
        check=True,
    )
    node = socket.gethostname()
    conf = tmp / "slurm.conf"
    conf.write_text(
        f"ClusterName=ajetdtest\nSlurmctldHost={node}\nSlurmctldPort={_free_port()}\n"
        f"SlurmdPort={_free_port()}\nAuthType=auth/munge\nAuthInfo=socket={sock}\n"
        f"CredType=cred/munge\nStateSaveLocation={tmp / 'state'}\n"
        f"SlurmdSpoolDir={tmp / 'spool'}\nSlurmctldPidFile={tmp / 'ctld.pid'}\n"
        f"SlurmdPidFile={tmp / 'd.pid'}\nSlurmctldLogFile={tmp / 'ctld.log'}\n"
        f"SlurmdLogFile={tmp / 'd.log'}\n"
        "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSchedulerType=sched/backfill\n"
        "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nSlurmUser=root\n"
        "MpiDefault=none\nReturnToService=2\nJobCompType=jobcomp/none\n"
        "AccountingStorageType=accounting_storage/none\nMinJobAge=600\nKillWait=5\n"
        "SchedulerParameters=bf_interval=1\n"
        f"NodeName={node} CPUs={cpus or os.cpu_count() or 2} RealMemory=1000 State=UNKNOWN\n"
        "PartitionName=debug Nodes=ALL Default=YES MaxTime=60 State=UP\n"
    )
    env = {**os.environ, "SLURM_CONF": str(conf)}
    cluster = SlurmCluster(conf, node, tmp)
    for binary in ("slurmctld", "slurmd"):
        cluster.procs.append(
            subprocess.Popen(
                [binary, "-D", "-f", str(conf)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    deadline = time.monotonic() + 30
    while "idle" not in cluster.run("sinfo", "-h", "-o", "%T"):
        if time.monotonic() > deadline:
            stop(cluster)
            raise RuntimeError("the Slurm node did not come up: " + (tmp / "ctld.log").read_text())
        time.sleep(0.2)
    return cluster


def stop(cluster: SlurmCluster) -> None:
    cluster.run("scancel", "--user", str(os.getuid()))
    for proc in cluster.procs:
        proc.terminate()
        proc.wait(timeout=20)
    pid_file = cluster.folder / "munge" / "munged.pid"
    pid = pid_file.read_text().strip() if pid_file.exists() else ""
    if pid.isdigit():
        os.kill(int(pid), signal.SIGTERM)
