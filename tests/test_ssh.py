"""Runs on a remote host, end to end against a real OpenSSH server on localhost: the session
stays local and follows the remote trial; exit codes, logs, val results, the time limit and
`ajetd stop` reach across; a dropped connection is `ssh_lost` and training goes on."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.adapters.regular import TooLargeError
from ajetd.hosts import copyback, sshcmd, sshstream
from ajetd.hosts.fs import LOCAL
from conftest import (
    Env,
    Sshd,
    git,
    marked_processes,
    rebuilt_after_a_cut,
    ssh_masters,
    wait_for,
)


@pytest.fixture
def remote(env: Env, sshd: Sshd) -> Iterator[Env]:
    env.start_daemon()
    yield env
    for run_dir in (env.home / "runs").glob("*"):  # the runs' folders on the "host"
        shutil.rmtree(Path.home() / ".ajetd-remote" / run_dir.name, ignore_errors=True)
        shutil.rmtree(
            Path(os.path.expanduser("~" + sshd.user)) / ".ajetd-remote" / run_dir.name,
            ignore_errors=True,
        )


def _ssh_run(env: Env, sshd: Sshd, name: str, extra: str = "", **fake: object) -> str:
    config = env.config(name, **fake)
    return env.submit(env.blueprint(name, config=config, ajetd=sshd.ajetd_part() + "\n" + extra))


def test_remote_run_succeeds_with_log_metrics_and_exit_code(remote: Env, sshd: Sshd) -> None:
    env = remote
    run_id = _ssh_run(env, sshd, "ok")
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded" and status["exit_code"] == 0, status
    assert status["metrics"]["global_steps"] == 4  # read over the connection
    log = (env.tmp / "results" / "ok" / "logs" / "trial-1.log").read_text()
    assert "Training finished." in log and f"run={run_id}" in log
    assert "tty=False" in log  # detached on the host: output goes to a file there
    assert env.launches() == [f"{run_id} 1"]
    events = (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert f"trial 1 started on {sshd.user}@127.0.0.1" in events
    base = Path(os.path.expanduser("~" + sshd.user)) / ".ajetd-remote"  # ajetd's own there
    modes = {p.name: p.stat().st_mode & 0o777 for p in (base, base / run_id)}
    assert modes == {".ajetd-remote": 0o700, run_id: 0o700}, modes


def test_remote_crash_gives_its_exact_code_and_diagnosis(remote: Env, sshd: Sshd) -> None:
    env = remote
    run_id = _ssh_run(env, sshd, "crash", "max_trials: 1", crash_at=2, exit_code=3)
    status = env.wait_done(run_id)
    assert status["status"] == "failed" and status["exit_code"] == 3
    assert status["diagnosis"][0]["kind"] == "cuda_oom"


def test_time_limit_ends_the_remote_tree(remote: Env, sshd: Sshd) -> None:
    env = remote
    run_id = _ssh_run(env, sshd, "limit", forever=True, orphan=True)
    bp = env.tmp / "limit.md"
    assert bp.exists()
    wait_for(lambda: env.record(run_id).get("state") == "running", what="the remote run")
    wait_for(lambda: len(marked_processes(run_id)) >= 2, what="the remote program and its orphan")
    table = env.cli("gpus").stdout
    assert f"{sshd.user}@127.0.0.1: no nvidia-smi there" in table
    env.cli("stop", run_id, "--no-wait")
    status = env.wait_done(run_id, timeout=60)
    assert status["status"] == "stopped" and status["exit_code"] == 130, status
    wait_for(
        lambda: (
            not [p for p in marked_processes(run_id) if "sshfollow" not in " ".join(p.cmdline())]
        ),
        what="no process of the run left on the host",
    )


def test_a_dropped_connection_is_ssh_lost_and_training_goes_on(remote: Env, sshd: Sshd) -> None:
    env = remote
    run_id = _ssh_run(env, sshd, "drop", forever=True, step_time=0.1)
    log = env.tmp / "results" / "drop" / "logs" / "trial-1.log"
    wait_for(lambda: log.exists() and "step:3 " in log.read_text(), what="remote output")
    pid = int(re.findall(r"TaskRunner pid=(\d+)", log.read_text())[0])
    masters = ssh_masters(sshd.port)
    assert masters, "no shared ssh connection found"
    for master in masters:
        master.kill()
    wait_for(
        lambda: any(f["kind"] == "ssh_lost" for f in env.status(run_id)["diagnosis"]),
        what="the ssh_lost finding",
    )
    size = len(log.read_text())
    wait_for(lambda: len(log.read_text()) > size + 200, what="output after reattaching")
    assert psutil.pid_exists(pid)  # the same training process, never relaunched
    assert env.launches() == [f"{run_id} 1"]
    assert env.record(run_id)["state"] == "running"
    events = env.home / "runs" / run_id / "events.jsonl"
    wait_for(lambda: "reconnected to" in events.read_text(), what="the reconnection event")
    assert "ssh connection to" in events.read_text()
    env.cli("stop", run_id)
    assert env.wait_done(run_id, timeout=60)["status"] == "stopped"


def _gone(pids: list[int]) -> bool:
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return False
    return True


def test_the_daemons_shared_connection_closes_at_its_shutdown(remote: Env, sshd: Sshd) -> None:
    """Walk 91, F10: `ssh: /tmp/ajetd-ssh-0/... [mux]` and its sshd session outlived
    `ajetd shutdown` by minutes (ControlPersist 600 s). The daemon now stops its shared
    connections as it exits: one with no session left ends at once; a live run's follower
    keeps its stream (no `ssh_lost`: its output goes on) and the connection that carries it."""
    env = remote
    done = _ssh_run(env, sshd, "brief")
    assert env.wait_done(done)["status"] == "succeeded"
    live = _ssh_run(env, sshd, "goes_on", forever=True, step_time=0.1)
    log = env.tmp / "results" / "goes_on" / "logs" / "trial-1.log"
    wait_for(lambda: log.exists() and "step:3 " in log.read_text(), what="remote output")
    masters = [p.pid for p in ssh_masters(sshd.port)]
    assert masters, "no shared ssh connection found"
    assert env.cli("shutdown").returncode == 0
    size = len(log.read_text())
    wait_for(lambda: len(log.read_text()) > size + 200, what="output after the shutdown")
    assert "ssh connection to" not in log.read_text()[size:]  # the follower's stream went on
    assert not ssh_masters(sshd.port)  # no connection takes new sessions
    env.start_daemon()
    assert "ssh_lost" not in [f["kind"] for f in env.status(live).get("diagnosis") or []]
    env.cli("stop", live)
    assert env.wait_done(live, timeout=60)["status"] == "stopped"
    assert env.cli("shutdown").returncode == 0
    wait_for(lambda: _gone(masters) and not ssh_masters(sshd.port), timeout=20, what="no ssh left")


def test_lint_checks_paths_on_the_host(env: Env, sshd: Sshd) -> None:
    bp = env.blueprint("lint", ajetd=sshd.ajetd_part())
    text = bp.read_text().replace(str(env.codebase), "/nonexistent/codebase", 1)
    bp.write_text(text)
    out = env.cli("lint", str(bp))
    assert out.returncode == 2
    assert f"/nonexistent/codebase does not exist on {sshd.user}@127.0.0.1" in out.stderr
    closed = env.blueprint("closed", ajetd=sshd.ajetd_part().replace(str(sshd.port), "1", 1))
    out = env.cli("lint", str(closed))
    assert out.returncode == 2 and "ssh: ssh to" in out.stderr and "port 1 failed" in out.stderr


def test_pull_copies_back_without_overwriting(tmp_path: Path, sshd: Sshd) -> None:
    spec = sshd.spec()
    there = tmp_path / "there"
    (there / "saved_experiments" / "ckpt").mkdir(parents=True)
    (there / "saved_experiments" / "ckpt" / "model.bin").write_text("weights")
    (there / "notes.txt").write_text("remote notes")
    here = tmp_path / "here"
    here.mkdir()
    (here / "notes.txt").write_text("local notes")
    assert sshcmd.pull(spec, str(there), ["saved_experiments/", "notes.txt"], here) == ""
    assert (here / "saved_experiments" / "ckpt" / "model.bin").read_text() == "weights"
    assert (here / "notes.txt").read_text() == "local notes"
    assert sshcmd.same_dir(spec, there, "x1") and sshcmd.read_from(
        spec, str(there / "notes.txt"), 7, 1 << 20
    ) == (12, b"notes")


def test_provenance_is_read_where_the_run_runs(tmp_path: Path, sshd: Sshd) -> None:
    """An SSH run's codebase git state is read on its host (here the same folder, so both
    reads agree); a host that does not answer gives a note instead."""
    from ajetd.adapters.store import Home
    from ajetd.hosts.local import LocalHost
    from ajetd.hosts.ssh import SshHost

    spec = sshd.spec()
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print('hi')\n")
    git(code, "init", "-q")
    git(code, "add", ".")
    git(code, "commit", "-qm", "first")
    (code / "train.py").write_text("print('changed')\n")
    home = Home(tmp_path / "home")
    here, diff_here = LocalHost(home).provenance(str(code))
    there, diff_there = SshHost(home, spec, (), "x1").provenance(str(code))
    assert here.git and there == here and diff_there == diff_here and b"changed" in diff_here
    closed = SshHost(home, replace(spec, port=1), (), "x1").provenance(str(code))
    assert closed[0].note.startswith("not read over SSH: ") and closed[1] == b""


def test_config_fixes_are_written_on_the_host_that_alone_has_the_codebase(
    env: Env, sshd_apart: tuple[Sshd, Path]
) -> None:
    """The codebase and config exist only on the host (a folder this machine sees empty):
    the copy with admission's fixes (execute_test) and the restart fixes (a smaller micro
    batch after each out of memory) are written there and run there."""
    server, apart = sshd_apart
    spec = server.spec()
    code = apart / env.tmp.name  # this test's own folder there
    config = env.config("apart", oom_above_micro_batch=2)
    data = yaml.safe_load((env.codebase / config).read_text())
    data["ajet"]["execute_test"] = True  # fixed at admission, in the copy
    data["actor_rollout_ref"] = {"actor": {"ppo_micro_batch_size_per_gpu": 8}}
    (env.codebase / config).write_text(yaml.safe_dump(data))
    q = shlex.quote
    made = sshcmd.run(
        spec, f"mkdir -p {q(str(code))} && cp -r {q(str(env.codebase))}/. {q(str(code))}"
    )
    assert made.returncode == 0, made.stderr
    assert not code.exists()  # only the host has it
    allow = "allow_fixes: {ppo_micro_batch_size_per_gpu: {min: 1}}"
    bp = env.blueprint("apart", config=config, ajetd=server.ajetd_part() + "\n" + allow)
    bp.write_text(bp.read_text().replace(str(env.codebase), str(code)))
    env.start_daemon()
    run_id = env.submit(bp)
    try:
        status = env.wait_done(run_id, timeout=60)
        assert status["status"] == "succeeded" and status["trials"] == 3, status  # 8 → 4 → 2
        results = (env.tmp / "results" / "apart" / "results.md").read_text()
        first = code / "configs" / f"apart.ajetd-{run_id}.yaml"
        assert f"launched with the fixed copy {first}" in results
        last = code / "configs" / f"apart.ajetd-{run_id}-t3.yaml"

        def there(path: Path) -> Any:
            shown = sshcmd.run(spec, f"cat {q(str(path))}")
            assert shown.returncode == 0, shown.stderr
            return yaml.safe_load(shown.stdout)

        assert there(first)["ajet"]["execute_test"] is False
        assert there(last)["actor_rollout_ref"]["actor"]["ppo_micro_batch_size_per_gpu"] == 2
        log = (env.tmp / "results" / "apart" / "logs" / "trial-3.log").read_text()
        assert f"conf=configs/apart.ajetd-{run_id}-t3.yaml" in log
        assert not code.exists()  # nothing was written at that path here
    finally:
        sshcmd.run(spec, f'rm -rf {q(str(code))} "$HOME"/.ajetd-remote/{q(run_id)}')


def test_a_file_written_on_the_host_replaces_whole_and_never_follows_a_link(
    tmp_path: Path, sshd: Sshd
) -> None:
    fs = sshcmd.RemoteFs(sshd.spec())
    target, elsewhere = tmp_path / "copy.yaml", tmp_path / "elsewhere.yaml"
    elsewhere.write_text("theirs\n")
    target.symlink_to(elsewhere)
    fs.write_text(str(target), "ajet: {execute_test: false}\n")
    assert not target.is_symlink() and target.read_text() == "ajet: {execute_test: false}\n"
    assert elsewhere.read_text() == "theirs\n"
    assert oct(target.stat().st_mode & 0o777) == oct(0o644)
    with pytest.raises(OSError, match=r"cannot write .*/missing/copy.yaml on "):
        fs.write_text(str(tmp_path / "missing" / "copy.yaml"), "x\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.yaml", "elsewhere.yaml"]


def test_a_remote_run_with_a_damaged_record_is_rebuilt_and_reached_there(
    remote: Env, sshd: Sshd
) -> None:
    """Its record cut while the daemon was down: the remote folder and the program's facts are
    read back from the scripts ajetd kept (`trial-1.remote.sh`, as sent; `trial-1.sh`, the
    follower's pane), so the run is supervised again where it runs: its output still comes,
    its metrics are read over the connection, `ajetd stop` reaches the program on the host,
    and nothing is launched twice."""
    env = remote
    run_id = _ssh_run(env, sshd, "sshdmg", forever=True, step_time=0.1)
    log = env.tmp / "results" / "sshdmg" / "logs" / "trial-1.log"
    wait_for(lambda: log.exists() and "step:3 " in log.read_text(), what="remote output")
    kept = ("remote_dir", "session", "codebase_dir", "venv_dir", "result_dir", "val_path")
    rebuilt_after_a_cut(env, run_id, kept)
    size = len(log.read_text())
    wait_for(lambda: len(log.read_text()) > size + 200, what="output after the rebuild")
    wait_for(lambda: env.record(run_id).get("history"), what="its validations, read there")
    env.cli("stop", run_id, "--no-wait")
    status = env.wait_done(run_id, timeout=60)
    assert status["status"] == "stopped" and status["exit_code"] == 130, status
    assert status["metrics"]["global_steps"] >= 2 and "rebuilt" in status["reason"]
    wait_for(
        lambda: (
            not [p for p in marked_processes(run_id) if "sshfollow" not in " ".join(p.cmdline())]
        ),
        what="no process of the run left on the host",
    )
    assert env.launches() == [f"{run_id} 1"]  # never launched again


def _sent_script(words: list[str]) -> str:
    """The script an ssh command line carries (`sshcmd.remote_command`: base64), or ""."""
    import base64

    found = re.search(r"printf %s ([A-Za-z0-9+/=]+) \| base64 -d", words[-1] if words else "")
    return base64.b64decode(found.group(1)).decode() if found else ""


def test_a_write_cut_short_on_its_way_to_the_host_leaves_no_file_there(
    tmp_path: Path, sshd: Sshd
) -> None:
    """The ssh that carries a file dies on the way (the daemon kills it at its timeout; a
    dropped connection): the host's shell then reads the end of its input early, and the cut
    text was renamed into place as if whole. Nothing is put in place, nothing left beside."""
    import threading

    fs = sshcmd.RemoteFs(sshd.spec())
    target = tmp_path / "copy.yaml"
    failed: list[BaseException] = []

    def write() -> None:
        try:
            fs.write_text(str(target), "a: " + "x" * (100 << 20) + "\n")
        except (OSError, sshcmd.SshError) as exc:  # the host's refusal; an ssh killed (-9)
            failed.append(exc)

    writer = threading.Thread(target=write)
    writer.start()

    def arriving() -> bool:
        for entry in os.scandir(tmp_path):
            try:
                if entry.name.startswith(".copy.yaml.") and entry.stat().st_size:
                    return True
            except FileNotFoundError:
                continue
        return False

    wait_for(arriving, what="the text to reach the host")
    carrying = [
        p
        for p in psutil.Process().children(recursive=True)
        if p.name() == "ssh" and "cat >" in _sent_script(p.cmdline())
    ]
    assert len(carrying) == 1
    carrying[0].kill()
    writer.join(timeout=60)
    assert failed and ("cannot write" in str(failed[0]) or "ended by signal 9" in str(failed[0]))
    wait_for(lambda: not list(tmp_path.iterdir()), what="the host's shell to clean up")
    assert not target.exists()


def test_a_host_that_stops_answering_before_the_fixed_copy_rejects_saying_so(
    env: Env, sshd: Sshd
) -> None:
    """The host answered the blueprint's checks, then not the write of the fixed copy (its
    connection gone in between): the run is rejected quoting ssh, told to submit again once
    the host answers, not to make a folder writable that ajetd never reached."""
    import time

    from ajetd.adapters.store import Home
    from ajetd.core.model import Status
    from ajetd.daemon import admission
    from ajetd.hosts.ssh import SshHost

    config = env.config("gone")
    data = yaml.safe_load((env.codebase / config).read_text())
    data["ajet"]["execute_test"] = True  # a fix: the copy must be written
    (env.codebase / config).write_text(yaml.safe_dump(data))
    bp = env.blueprint("gone", config=config, ajetd=sshd.ajetd_part())
    home = Home(env.home)
    folder = home.run_dir("gone01")
    folder.mkdir(parents=True)
    claimed = folder / "blueprint.md"
    claimed.write_text(bp.read_text())
    dead = replace(sshd.spec(), port=1)  # where the host's answers stop
    run, options = admission.admit(
        home,
        "gone01",
        claimed,
        "gone.md",
        time.time(),
        {},
        {},
        lambda run_id, _: SshHost(home, dead, (), run_id),
    )
    assert run.status is Status.REJECTED and options is None
    assert "ssh to " in run.reason and "port 1 failed" in run.reason, run.reason
    assert "make that folder writable" not in run.reason, run.reason
    assert "submit it again once" in run.reason and "execute_test" in run.reason, run.reason


def _sshd_again(folder: Path) -> subprocess.Popen[bytes]:
    """The test's own sshd (`conftest._sshd` made it in `folder`) started again: its host
    answers once more."""
    binary = shutil.which("sshd") or "/usr/sbin/sshd"
    return subprocess.Popen(
        [binary, "-D", "-e", "-f", str(folder / "sshd_config")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _end_own_sshd(env: Env, restarted: list[Any], servers: Iterator[Any]) -> None:
    """End a test's own sshd: the copies it started again, then the first (its generator's
    clean-up), and the run folders the runs left on the host side."""
    for server in restarted:
        server.terminate()
        server.wait(timeout=10)
    next(servers, None)
    for run_dir in (env.home / "runs").glob("*"):
        shutil.rmtree(Path.home() / ".ajetd-remote" / run_dir.name, ignore_errors=True)


def _queued_remote_run_damaged_while_its_host_is_down(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stopped: bool
) -> tuple[str, dict[str, Any]]:
    """An SSH run admitted and queued (`stopped`: `ajetd stop` filed for it meanwhile), its
    record then cut while the daemon was down; at the next start its host does not answer,
    and later does again. The run's id and its finish.flag."""
    from conftest import _sshd
    from loopkit import KillAfter, Killed, Loop

    folder = tmp_path / "own-sshd"
    folder.mkdir()
    servers = _sshd(folder, [])
    own = next(servers)
    restarted: list[Any] = []
    kill = KillAfter(monkeypatch, "state.json")  # admitted and queued: its record's first save
    first = Loop(env)
    bp = env.blueprint("later", config=env.config("later"), ajetd=own.ajetd_part())
    try:
        with pytest.raises(Killed):
            try:
                first.submit(bp)
            finally:
                first.close()
        kill.disarm()
        run_id = kill.run_id("later")
        state = env.home / "runs" / run_id / "state.json"
        assert json.loads(state.read_text())["state"] == "queued"
        if stopped:  # no daemon: the request waits in control/ for the next one
            assert env.cli("stop", run_id, "--no-wait").returncode == 1
        state.write_bytes(state.read_bytes()[:120])
        next(servers, None)  # the host stops answering, its shared connections too
        for master in ssh_masters(own.port):
            master.kill()
        second = Loop(env, liveness_s=0.2)
        try:
            second.turn()
            assert run_id not in second.daemon.runs  # not rejected: it waits for its host
            assert not (env.tmp / "results" / "later" / "finish.flag").exists()
            second.turn()  # its stop request, if any, is taken (or kept) meanwhile
            restarted.append(_sshd_again(folder))
            second.until(lambda: run_id in second.daemon.runs, "the run admitted again")
            return run_id, second.until_done(run_id)
        finally:
            second.close()
    finally:
        _end_own_sshd(env, restarted, servers)


def test_the_hosts_files_are_read_only_when_regular(tmp_path: Path, sshd: Sshd) -> None:
    """A FIFO at a config's or a val file's path on the host (the daemon reads the config at
    a restart fix, the val file's size at a launch): refused at once, as here, not read until
    ssh's 30 s timeout with the daemon's loop held."""
    import time

    fs = sshcmd.RemoteFs(sshd.spec())
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    began = time.monotonic()
    with pytest.raises(OSError, match="not a regular file"):
        fs.read_text(str(fifo))
    assert fs.size(str(fifo)) is None
    assert time.monotonic() - began < 10
    (tmp_path / "real.yaml").write_text("ajet: {}\n")
    assert fs.read_text(str(tmp_path / "real.yaml")) == "ajet: {}\n"
    huge = tmp_path / "huge.yaml"  # 3 GiB of nothing: at most the bound + 1 byte travel
    with open(huge, "wb"):
        pass
    os.truncate(huge, 3 << 30)
    with pytest.raises(TooLargeError, match=r"larger than the 4\.0 MiB"):
        fs.read_text(str(huge))
    assert fs.size(str(tmp_path / "real.yaml")) == 9


def test_a_stages_glob_is_matched_on_the_host(tmp_path: Path, sshd: Sshd) -> None:
    """walk86 F32 on an SSH host: bash's own expansion there, the literal parts quoted (a
    `$(...)` in a folder's name is a name, never run)."""
    fs = sshcmd.RemoteFs(sshd.spec())
    odd = tmp_path / "a b $(touch pwned)"
    (odd / "saved" / "ckpt_6").mkdir(parents=True)
    assert fs.matches(f"{odd}/saved/ckpt_*") and fs.matches(f"{odd}/saved/ckpt_[0-9]")
    assert not fs.matches(f"{odd}/saved/step_*")
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


def test_a_stage_output_is_fresh_on_the_host_as_here(tmp_path: Path, sshd: Sshd) -> None:
    """walk89 F4 on an SSH host: an output there unchanged since before the stage began is an
    earlier run's, one written since (or a file rewritten inside its folder) the stage's, as
    `LocalFs.fresh` says here; `since` allows the host's clock `CLOCK_SLACK_S` behind."""
    fs = sshcmd.RemoteFs(sshd.spec())
    folder = tmp_path / "a b $(touch pwned)" / "ckpt"
    folder.mkdir(parents=True)
    (folder / "final.pt").write_text("weights")
    for path in (folder, folder / "final.pt"):
        os.utime(path, (1_793_491_200, 1_793_491_200))  # 2026-11-01
    since = time.time() - 10
    for check in (fs, LOCAL):
        assert not check.fresh(f"{folder}/final.pt", since)
        assert not check.fresh(str(folder), since) and not check.fresh(f"{folder}/fin*", since)
        assert not check.fresh(f"{folder}/absent.pt", since)
    (folder / "final.pt").write_text("new weights")
    os.utime(folder, (1_793_491_200, 1_793_491_200))
    for check in (fs, LOCAL):
        assert check.fresh(f"{folder}/final.pt", since) and check.fresh(str(folder), since)
        assert check.fresh(f"{folder.parent}/ck*", since)
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


def test_a_queued_remote_run_damaged_while_its_host_does_not_answer_waits_for_the_host(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Admitting it again from its stored blueprint checks it on its host: it is not rejected
    (an end, for good) for an outage, but waits, named, and is admitted again once the host
    answers; then launched once."""
    run_id, flag = _queued_remote_run_damaged_while_its_host_is_down(
        env, tmp_path, monkeypatch, stopped=False
    )
    assert (flag["status"], flag["trials"]) == ("succeeded", 1), flag
    assert env.launches() == [f"{run_id} 1"]  # once


def test_a_stop_filed_for_a_run_waiting_to_be_admitted_again_is_kept_and_taken(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ajetd stop` filed while no daemon ran: the request waits with the run (it has no
    record meanwhile) and stops it once admitted again, before any launch."""
    _, flag = _queued_remote_run_damaged_while_its_host_is_down(
        env, tmp_path, monkeypatch, stopped=True
    )
    assert (flag["status"], flag["trials"]) == ("stopped", 0), flag
    assert env.launches() == []  # never launched


def test_a_full_folder_on_the_host_waits_as_a_local_one_and_goes_on_once_it_has_room(
    env: Env, sshd_apart: tuple[Sshd, Path]
) -> None:
    """The config folder only the host has is full when admission writes its fixed copy
    there: the run waits, `ajetd status` names the folder on that host (as it names a full
    folder here), and once the host's disk has room the run is admitted and runs (before:
    rejected, 'does not take it: cannot write ...', as if the folder refused writes)."""
    server, apart = sshd_apart
    spec = server.spec()
    code = apart / env.tmp.name
    config = env.config("hostfull")
    data = yaml.safe_load((env.codebase / config).read_text())
    data["ajet"]["execute_test"] = True  # fixed at admission, in a copy beside it
    (env.codebase / config).write_text(yaml.safe_dump(data))
    q = shlex.quote
    made = sshcmd.run(
        spec, f"mkdir -p {q(str(code))} && cp -r {q(str(env.codebase))}/. {q(str(code))}"
    )
    assert made.returncode == 0, made.stderr
    filler = code / "filler"
    sshcmd.run(spec, f"head -c 64M /dev/zero > {q(str(filler))}")  # 32 MiB: full
    bp = env.blueprint("hostfull", config=config, ajetd=server.ajetd_part())
    bp.write_text(bp.read_text().replace(str(env.codebase), str(code)))
    env.start_daemon()
    run_id = env.submit(bp)
    try:
        folder = f"{spec.target}:{code}/configs"
        line = (
            f"cannot write to a folder run {run_id} needs {folder}: No space left on device "
            "(on another machine)"
        )
        wait_for(lambda: line in env.cli("status").stdout, what="status to name the folder")
        assert env.status(run_id)["state"] == "queued"
        wait_for(
            lambda: "retrying" in env.cli("status").stdout and not env.record(run_id),
            what="it to be tried again, not rejected",
        )
        assert sshcmd.run(spec, f"rm -f {q(str(filler))}").returncode == 0
        status = env.wait_done(run_id, timeout=60)
        assert status["status"] == "succeeded", status
        assert "DISK FULL" not in env.cli("status").stdout
    finally:
        sshcmd.run(spec, f'rm -rf {q(str(code))} "$HOME"/.ajetd-remote/{q(run_id)}')


def test_a_launch_into_a_full_home_on_the_host_waits_for_room_then_runs(
    env: Env, tmp_path: Path
) -> None:
    """The host's disk under ~/.ajetd-remote is full (a tmpfs there, in its own sshd's mount
    namespace) when a trial's script is sent: the run waits, status names the run's folder on
    that host, and the trial starts once there is room (before: 'launch failed: could not
    start trial 1 on ...: cat: write error', the run failed)."""
    from conftest import _sshd

    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a mount namespace needs root and unshare (util-linux)")
    base = Path.home() / ".ajetd-remote"
    base.mkdir(mode=0o700, exist_ok=True)
    mount = 'mount -t tmpfs -o size=1m,mode=0700 ajetd-full "$0" && exec "$@"'
    wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, str(base)]
    folder = tmp_path / "own-sshd"
    folder.mkdir()
    servers = _sshd(folder, wrap)
    own = next(servers)
    spec = own.spec()
    try:
        assert sshcmd.run(spec, "head -c 8M /dev/zero > ~/.ajetd-remote/filler").returncode != 0
        env.start_daemon()
        bp = env.blueprint("homefull", config=env.config("homefull"), ajetd=own.ajetd_part())
        run_id = env.submit(bp)
        there = f"{spec.target}:{base}/{run_id}"
        line = f"cannot write to a folder run {run_id} needs {there}: No space left on device"
        wait_for(lambda: line in env.cli("status").stdout, what="status to name the folder")
        assert env.record(run_id).get("status") is None  # not failed: waiting
        assert sshcmd.run(spec, "rm -f ~/.ajetd-remote/filler").returncode == 0
        status = env.wait_done(run_id, timeout=60)
        assert status["status"] == "succeeded" and status["trials"] == 1, status
        assert "DISK FULL" not in env.cli("status").stdout
    finally:
        next(servers, None)


def test_an_ssh_run_damaged_before_its_first_trial_reached_the_host_is_admitted_again(
    env: Env, sshd: Sshd, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon died right after it wrote trial 1's program script here
    (`trial-1.remote.sh`, before its pane's script and before sending it to the host), the
    record was then cut. Nothing reached the host, which says so: the run is admitted again
    whole, as a local one that never went is (its admission's warnings, fixes and
    relaunches), and launched once (before: the remote script counted as a trial let go, the
    folder could not be rebuilt without the pane's script, and the run stayed named DAMAGED:
    never supervised, never run)."""
    from ajetd.core.rebuilt import READMITTED
    from loopkit import Loop, cut_before_it_went

    bp = env.blueprint("sshearly", config=env.config("sshearly"), ajetd=sshd.ajetd_part())
    run_id = cut_before_it_went(env, monkeypatch, "trial-1.remote.sh", bp)
    second = Loop(env)
    try:
        run = second.until(lambda: second.daemon.runs.get(run_id), f"run {run_id} again")
        assert [w for w in run.warnings if w.startswith(READMITTED)], run.warnings
        flag = second.until_done(run_id)
        assert (flag["status"], flag["trials"]) == ("succeeded", 1), flag
        assert "rebuilt" not in flag["reason"]
        assert [line for line in env.launches() if line.startswith(run_id)] == [f"{run_id} 1"]
    finally:
        second.close()
        shutil.rmtree(Path.home() / ".ajetd-remote" / run_id, ignore_errors=True)


def test_the_hosts_answers_are_this_machines_and_each_path_is_asked_once(
    tmp_path: Path, sshd: Sshd, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sshd is this machine, so a RemoteFs must say what LocalFs says of every kind of
    path (folder, file, empty file, FIFO, link, dangling link, nothing, odd names), asking
    the host once per path for all of it; a write through it forgets what it learned."""
    from ajetd.hosts.fs import LOCAL

    names = ["dir", "file", "empty", "fifo", "link", "dangling", "absent", "sp ace'q\"", "t\tab"]
    names += ["a\n@@ajetd-facts 1 1 1 1 5\nz", "trail\n", "-n"]  # a path can print anything
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("ajet: {}\n")
    (tmp_path / "file").chmod(0o755)
    (tmp_path / "empty").write_text("")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "sp ace'q\"").write_text("x")
    (tmp_path / "t\tab").mkdir()
    (tmp_path / "a\n@@ajetd-facts 1 1 1 1 5\nz").mkdir()
    (tmp_path / "trail\n").write_text("xyz")
    (tmp_path / "-n").write_text("x")
    calls: list[str] = []
    real_run = sshcmd.run
    monkeypatch.setattr(
        sshcmd,
        "run",
        lambda spec, script, **kw: (calls.append(script), real_run(spec, script, **kw))[1],
    )
    fs = sshcmd.RemoteFs(sshd.spec())
    for name in names:
        path = str(tmp_path / name)
        asked = len(calls)
        for question in ("isdir", "isfile", "exists", "executable", "size", "realpath"):
            for _ in range(2):
                theirs, ours = getattr(fs, question)(path), getattr(LOCAL, question)(path)
                assert theirs == ours, (name, question, theirs, ours)
        assert len(calls) - asked == 1, (name, calls[asked:])
    fs.write_text(str(tmp_path / "file"), "ajet: {x: 1}\n")
    assert fs.size(str(tmp_path / "file")) == len("ajet: {x: 1}\n")  # asked again


def _whole_run_on(env: Env, own: Sshd, name: str) -> tuple[str, str]:
    """A blueprint for `own`'s host linted, submitted and run to success on it (the val file
    read over it); the run's id and its trial's log here."""
    bp = env.blueprint(name, config=env.config(name), ajetd=own.ajetd_part())
    out = env.cli("lint", str(bp))
    assert out.returncode == 0, out.stdout + out.stderr
    env.start_daemon()
    run_id = env.submit(bp)
    status = env.wait_done(run_id)
    assert (status["status"], status["exit_code"]) == ("succeeded", 0), status
    assert status["metrics"]["global_steps"] == 4
    return run_id, (env.tmp / "results" / name / "logs" / "trial-1.log").read_text()


@pytest.mark.parametrize(
    "rc",
    [
        "echo 'Welcome to the cluster'\n",
        "echo\n",
        "printf 'no newline at the end'\n",
        "trap 'echo bye' EXIT\n",  # after every answer
        "echo 'Lmod: loaded modules' >&2\n",  # a module system's notes, on stderr
        "head -c 1200000 /dev/zero | tr '\\0' x; echo\n",  # over a megabyte before
        "sleep 987 &\n",  # a job that holds the session's output open (LINGER_S)
        "head -c 1100000 /dev/zero | tr '\\0' y >&2\n",  # over a megabyte on stderr
        "trap 'exit 7' EXIT\n",  # an EXIT trap that sets the exit status
    ],
    ids=[
        "words",
        "a blank line",
        "no newline",
        "an EXIT trap",
        "stderr",
        "1.2 MB",
        "a job",
        "1.1 MB on stderr",
        "an EXIT trap's status",
    ],
)
def test_a_host_whose_shell_prints_before_every_command_works_as_any(
    env: Env, tmp_path: Path, rc: str
) -> None:
    """A ~/.bashrc that prints for shells that are not interactive puts its words before
    every answer ajetd reads (a size, an exit code, a tar archive, the trial's log, whose
    bytes the follower counts to resume): each command prints a random mark first and what
    came before it is dropped, so such a host works as any other (it was refused, and one
    whose rc began to print once a run was admitted shifted every answer). The host's
    ~/.bashrc is a file of the test's (mounted over it where the sshd runs)."""
    servers = _own_sshd(tmp_path, rc + "export FROM_RC=yes\n")  # what it exports: reached
    own = next(servers)
    try:
        spec = own.spec()
        there = tmp_path / "there"
        (there / "ckpt").mkdir(parents=True)
        (there / "ckpt" / "model.bin").write_bytes(bytes(range(256)) * 64)
        (there / "notes.txt").write_text("remote notes")
        here = tmp_path / "here"
        assert sshcmd.pull(spec, str(there), ["ckpt/", "notes.txt"], here) == ""
        assert (here / "ckpt" / "model.bin").read_bytes() == bytes(range(256)) * 64
        assert sshcmd.read_from(spec, str(there / "notes.txt"), 7, 1 << 20) == (12, b"notes")
        assert sshcmd.RemoteFs(spec).size(str(there / "notes.txt")) == 12
        assert sshcmd.remote_dir(spec, "abc123") == f"{Path.home()}/.ajetd-remote/abc123"
        assert sshcmd.run(spec, 'printf %s "$FROM_RC"').stdout == b"yes"
        said = sshcmd.run(spec, "echo out; echo 'mv: No space left on device' >&2; exit 4")
        assert (said.stdout, said.stderr, said.returncode) == (
            b"out\n",
            b"mv: No space left on device\n",
            4,
        )

        _, log = _whole_run_on(env, own, "chatty")
        assert "Training finished." in log
        for words in ("Welcome", "no newline at the end", "bye", "Lmod", "xxxx", "yyyy"):
            assert words not in log, words
    finally:
        next(servers, None)
        for proc in psutil.process_iter(["cmdline"]):  # the rc's jobs
            if proc.info["cmdline"] == ["sleep", "987"]:
                proc.kill()


def test_a_commands_own_255_is_its_answer_and_only_ssh_without_an_end_mark_fails(
    sshd: Sshd,
) -> None:
    """ssh exits 255 when it fails, and so does a command's `exit 255` (nvidia-smi's unknown
    error, a scheduler's client): the end mark with its status says which. Every 255 was read
    as ssh's failure (SshError: the host 'does not answer'); now a command that ended with it
    answered, with its status and its own words, and a connection that never came still
    fails as ssh's."""
    done = sshcmd.run(sshd.spec(), "echo 'no such queue' >&2; exit 255")
    assert (done.returncode, done.stdout, done.stderr) == (255, b"", b"no such queue\n")
    with socket.socket() as s:  # a port nothing listens on: ssh's own 255, no mark
        s.bind(("127.0.0.1", 0))
        closed = replace(sshd.spec(), port=s.getsockname()[1])
    with pytest.raises(sshcmd.SshError, match=r"failed: .*Connection refused"):
        sshcmd.run(closed, "exit 255")


def test_a_remote_program_that_exits_255_failed_by_its_own_code(remote: Env, sshd: Sshd) -> None:
    """A trial whose program ends with 255 on the host is that program's failure, exit code
    255, never a lost connection."""
    env = remote
    run_id = _ssh_run(env, sshd, "c255", "max_trials: 1", crash_at=2, exit_code=255)
    status = env.wait_done(run_id)
    assert (status["status"], status["exit_code"]) == ("failed", 255), status
    assert "ssh_lost" not in [f["kind"] for f in status["diagnosis"]], status["diagnosis"]
    events = (env.home / "runs" / run_id / "events.jsonl").read_text()
    assert "ssh connection to" not in events


NVIDIA_FAILED = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
    "that the latest NVIDIA driver is installed and running."
)


def test_a_hosts_failing_nvidia_smi_is_said_never_read_as_no_gpus(env: Env, tmp_path: Path) -> None:
    """nvidia-smi there, failing (exit 9: NVIDIA's words when the driver is not loaded; 255,
    its unknown error): it was read as 'no nvidia-smi' (9) or 'the host does not answer'
    (255), and its GPUs as none. Now its code and its last line are said, by `gpus()`, by
    `ajetd gpus` and to a queued run that waits for its GPUs; a run asking for none runs; one
    not there (127) is still no nvidia-smi."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    said = shlex.quote(NVIDIA_FAILED)
    smi.write_text(f"#!/bin/sh\necho {said}\nexit $(cat {tmp_path / 'code'})\n")
    smi.chmod(0o755)
    servers = _own_sshd(tmp_path, f'export PATH="{bin_dir}:$PATH"\n')
    own = next(servers)
    try:
        spec = own.spec()
        for code in (255, 9):
            (tmp_path / "code").write_text(f"{code}\n")
            said = f"failed \\(exit {code}\\): {re.escape(NVIDIA_FAILED)}$"
            with pytest.raises(sshcmd.NvidiaSmiError, match=said):
                sshcmd.gpus(spec)
        env.start_daemon()
        waits = env.submit(
            env.blueprint("needs", config=env.config("needs"), ajetd=own.ajetd_part() + "\ngpus: 1")
        )
        reason = f"nvidia-smi on {spec.target} failed (exit 9): {NVIDIA_FAILED}"
        wait_for(lambda: reason in (env.record(waits).get("reason") or ""), what="the reason")
        assert env.record(waits)["state"] == "queued"
        assert f"{spec.target}: {reason}" in env.cli("gpus").stdout
        runs = env.submit(
            env.blueprint("none", config=env.config("none"), ajetd=own.ajetd_part() + "\ngpus: 0")
        )
        assert env.wait_done(runs)["status"] == "succeeded"
        env.cli("stop", waits)
        assert env.wait_done(waits)["status"] == "stopped"
        smi.unlink()  # not there: no nvidia-smi, as before
        assert sshcmd.gpus(spec) is None
    finally:
        next(servers, None)


@settings(max_examples=300, deadline=None)
@given(
    preamble=st.binary(max_size=300),
    body=st.binary(max_size=300),
    trailer=st.binary(max_size=100),
    cuts=st.lists(st.integers(min_value=0, max_value=800), max_size=8),
)
def test_a_commands_answer_is_what_lies_between_its_marks_however_it_comes(
    preamble: bytes, body: bytes, trailer: bytes, cuts: list[int]
) -> None:
    """What the rc printed, the mark's line, the command's bytes (the mark among them: its
    own), the end mark, what an rc's EXIT trap or job printed after: read in chunks cut
    anywhere, the command's bytes come out whole, and nothing else."""
    mark = sshcmd.new_mark()
    own = body + mark.encode() + b"\n" + body
    data = (
        preamble.replace(mark.encode(), b"")
        + f"{mark}\n".encode()
        + own
        + f"{mark}-end 0\n".encode()
        + trailer
    )
    reader = sshstream.Answer(mark)
    edges = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    out = b"".join(reader.feed(data[a:b]) for a, b in itertools.pairwise(edges))
    assert out + reader.end() == own and reader.ended
    assert reader.code == 0  # the status its end mark carries, whatever came after


def test_an_answer_without_its_marks_keeps_what_it_can_tell_is_the_commands() -> None:
    """No mark: the command's bash never ran, nothing of it to keep, however much came (only
    what could be the mark's start is held). No end mark (a dropped connection): what came
    after the mark is the command's, also what could have been the end mark's start."""
    mark = sshcmd.new_mark()
    assert sshstream.answer(b"bash: not found\n", mark) == b""
    reader = sshstream.Answer(mark)
    for _ in range(64):
        assert reader.feed(b"x" * 65536) == b""  # 4 MiB of preamble
    assert len(reader._held) < len(mark) + 1
    assert reader.feed(f"{mark}\nlog line\n".encode()) == b"log line\n"  # at once, whole
    assert reader.feed(b"more\n@@ajetd") == b"more\n"  # what could start the end mark waits
    assert reader.end() == b"@@ajetd" and not reader.ended


def test_a_host_that_stops_answering_mid_check_is_a_problem_not_an_exception(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host answers the first call, then not (a dropped link, a garbled answer): the
    check says so as a problem, never 'the checks stopped: SshError' in lint or 'internal
    error while admitting' in the daemon."""
    from ajetd.core.blueprint import parse_blueprint
    from ajetd.hosts.preflight import check_blueprint

    calls: list[str] = []

    def flaky(spec: object, script: str, **_: object) -> subprocess.CompletedProcess[bytes]:
        calls.append(script)
        if len(calls) == 1:  # the first call (`true`): answered
            return subprocess.CompletedProcess([], 0, b"", b"")
        raise sshcmd.SshError("ssh to root@10.9.9.9 port 22 failed: Connection reset by peer")

    monkeypatch.setattr(sshcmd, "run", flaky)
    part = "ssh: {host: 10.9.9.9, port: 22, user: root}"
    text = env.blueprint("mid", config="/remote/code/c.yaml", ajetd=part).read_text()
    bp = parse_blueprint(text.replace(str(env.codebase), "/remote/code"))
    resolved, problems = check_blueprint(bp)
    assert resolved is None, problems
    assert problems == ["ssh: ssh to root@10.9.9.9 port 22 failed: Connection reset by peer"]


# quotes, backslashes, `$`, `!`, a tab, a newline: each shell reads them its own way
_AWKWARD = (
    "printf '%s\\n' \"a\\\\b\" 'it'\"'\"'s' \"\\$HOME=x\" '!!' \"tab\tx\"\n"
    'echo "two \\\\\\\\ \\\\n"\n'
    "exit 3"
)


def test_a_host_whose_login_shell_is_not_bash_runs_ajetds_commands_as_bash_would(
    env: Env, tmp_path: Path, sshd_shell: tuple[Sshd, str]
) -> None:
    """sshd hands ajetd's command to the user's login shell, which reads it before bash runs
    it: fish read a `\\\\` inside single quotes as one backslash, and tcsh refused the command
    whole (a newline inside quotes). The command is now one line every shell reads the same
    (`sshcmd.remote_command`): for sh, zsh, fish and tcsh, what a script prints and its exit
    code are bash's own, files travel whole both ways, and a run succeeds end to end."""
    own, shell = sshd_shell
    spec = own.spec()
    local = subprocess.run(["bash", "-c", _AWKWARD], capture_output=True, check=False)
    there = sshcmd.run(spec, _AWKWARD)
    assert (there.stdout, there.returncode) == (local.stdout, 3), (shell, there)
    assert sshcmd.run(spec, 'printf %s "$0 $BASH_VERSION" | wc -w').stdout.strip() == b"2"

    fs = sshcmd.RemoteFs(spec)
    text = "key: 'a\\\\b' # $HOME `x` \"q\" !!\n" * 50
    fs.write_text(str(tmp_path / "conf.yaml"), text)
    assert (tmp_path / "conf.yaml").read_text() == text
    assert fs.read_text(str(tmp_path / "conf.yaml")) == text
    (tmp_path / "far" / "ckpt").mkdir(parents=True)
    (tmp_path / "far" / "ckpt" / "w.bin").write_bytes(bytes(range(256)) * 16)
    assert sshcmd.pull(spec, str(tmp_path / "far"), ["ckpt/"], tmp_path / "here") == ""
    assert (tmp_path / "here" / "ckpt" / "w.bin").read_bytes() == bytes(range(256)) * 16

    if shell not in ("fish", "tcsh"):  # the two that broke; a whole run for each of them
        return
    run_id, log = _whole_run_on(env, own, shell)
    assert "Training finished." in log
    shutil.rmtree(Path.home() / ".ajetd-remote" / run_id, ignore_errors=True)


def _own_sshd(tmp_path: Path, rc: str) -> Iterator[Sshd]:
    """An sshd whose logins read `rc` as ~/.bashrc (mounted over it where the sshd runs)."""
    from conftest import _sshd

    real_rc = Path.home() / ".bashrc"
    if os.geteuid() != 0 or not shutil.which("unshare") or not real_rc.is_file():
        pytest.skip("a mount namespace needs root, unshare (util-linux) and a ~/.bashrc")
    (tmp_path / "bashrc").write_text(rc)
    bind = 'mount --bind "$0" "$1" && shift && exec "$@"'
    wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c", bind]
    folder = tmp_path / "own-sshd"
    folder.mkdir()
    yield from _sshd(folder, [*wrap, str(tmp_path / "bashrc"), str(real_rc)])


def test_a_host_that_does_not_run_the_command_is_an_error_never_a_success(
    tmp_path: Path,
) -> None:
    """An rc that ends the shell (`exec true`; a host without base64 fails the same way):
    no mark came, so nothing the command was to say is there. It was read as exit 0 and an
    empty answer: `same_dir` said the host shares the folder, `read_from` an empty file."""
    for own in _own_sshd(tmp_path, "exec true\n"):
        with pytest.raises(sshcmd.SshError, match="did not run ajetd's command"):
            sshcmd.run(own.spec(), "echo hi; exit 3")
        with pytest.raises(sshcmd.SshError):
            sshcmd.same_dir(own.spec(), tmp_path / "nowhere", "abc123")


def test_a_full_local_temporary_folder_costs_no_answer(
    sshd: Sshd, tmp_path: Path, tmpfs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/tmp full here (Ray's spill files, compiler caches): a call's stdin and stderr went
    through temporary files, so every remote error was lost and a write's ENOSPC was read as
    the home's. The streams are pipes: stdout, stderr, stdin and the status arrive whole."""
    full = tmpfs(tmp_path / "full", "64k")
    with contextlib.suppress(OSError):
        (full / "filler").write_bytes(b"x" * (1 << 20))
    sockets = sshcmd.control_dir()  # the shared connections' sockets stay where they are
    monkeypatch.setattr(sshcmd, "control_dir", lambda: sockets)
    monkeypatch.setattr(tempfile, "tempdir", str(full))
    done = sshcmd.run(
        sshd.spec(),
        "cat; echo 'cat: write error: No space left on device' >&2; exit 1",
        stdin=b"given\n",
    )
    assert (done.stdout, done.returncode) == (b"given\n", 1)
    assert done.stderr == b"cat: write error: No space left on device\n"
    fs = sshcmd.RemoteFs(sshd.spec())
    fs.write_text(str(tmp_path / "conf.yaml"), "a: 1\n" * 1000)
    assert (tmp_path / "conf.yaml").read_text() == "a: 1\n" * 1000


def test_a_call_works_with_descriptors_past_1024_open(sshd: Sshd) -> None:
    """select() refuses a descriptor past 1023 (a daemon with many runs' files open); the
    streams are read through `selectors`."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip("this machine allows fewer than 1200 open files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    held = [os.open("/dev/null", os.O_RDONLY) for _ in range(1100)]
    try:
        assert sshcmd.run(sshd.spec(), "echo far; exit 5").stdout == b"far\n"
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_ctrl_c_in_a_remote_runs_pane_reaches_the_trial_and_loses_no_connection(
    sshd: Sshd, tmp_path: Path
) -> None:
    """Ctrl-C in the pane goes to its whole foreground group: the follower passes it to the
    remote trial, and its ssh, in the same group, died of it (exit 255): a false `ssh_lost`.
    The stream's ssh has a session of its own."""
    import sys

    spec = sshd.spec()
    rdir = str(tmp_path / "rdir")
    script = (
        "trap 'echo got-INT' INT\n"
        "for i in $(seq 60); do echo step $i; sleep 0.1; done\n"
        "printf '0 1\\n' > trial-1.exit\n"
    )
    sshcmd.launch(spec, rdir, 1, script, str(tmp_path / "res"))
    lost, shown = tmp_path / "lost", tmp_path / "pane"
    follower = subprocess.Popen(
        [
            *(sys.executable, "-m", "ajetd.hosts.sshfollow", "--spec", sshcmd.spec_json(spec)),
            *("--rdir", rdir, "--trial", "1", "--run-id", "abc123", "--lost", str(lost)),
        ],
        stdout=shown.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    wait_for(lambda: b"step 5" in shown.read_bytes(), what="the follower to show steps")
    os.killpg(follower.pid, signal.SIGINT)  # as the pane's Ctrl-C does
    assert follower.wait(timeout=60) == 0, shown.read_bytes()
    out = shown.read_bytes()
    assert b"got-INT" in out and b"step 60" in out, out
    assert not lost.exists() and b"lost" not in out, out


def test_a_job_that_holds_only_stderr_open_costs_a_linger_not_the_jobs_life() -> None:
    """Once stdout's end mark (the command's status) has come, stderr's end mark is awaited
    `LINGER_S` more, no longer: a job the rc left with the session's stderr alone (stdout
    elsewhere) kept every call until the job ended. Local bash stands in for the login shell."""
    mark = sshcmd.new_mark()
    shell = f"(sleep 30 >/dev/null &) ; {sshcmd.remote_command('echo hi; exit 6', mark)}"
    began = time.monotonic()
    with subprocess.Popen(
        ["bash", "-c", shell], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        parts: list[bytes] = []
        got = sshstream.exchange(proc, mark, parts.append, deadline=time.monotonic() + 20)
    assert (b"".join(parts), got.code, got.ended) == (b"hi\n", 6, True)
    assert time.monotonic() - began < 10 * sshstream.LINGER_S


def test_a_killed_ssh_is_an_error_not_an_empty_answer(sshd: Sshd) -> None:
    """SIGKILL (the OOM killer, kill -9) ends ssh before the command's status came: it was a
    normal answer, `read_from` an empty file."""
    spec = sshd.spec()
    killer = threading.Timer(1.0, _kill_ssh_running, args=("sleep 4; echo 12345",))
    killer.start()
    try:
        with pytest.raises(sshcmd.SshError, match="ended by signal 9"):
            sshcmd.run(spec, "sleep 4; echo 12345 1")
    finally:
        killer.cancel()


def _kill_ssh_running(script_part: str) -> None:
    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if proc.name() == "ssh" and script_part in _sent_script(proc.cmdline()):
                proc.kill()


def test_a_hang_up_of_the_pane_ends_the_followers_ssh_and_a_gone_folder_is_no_lost_link(
    sshd: Sshd, tmp_path: Path
) -> None:
    """The follower's ssh has a session of its own (a Ctrl-C is the follower's to pass on),
    so a hang-up of the pane (its session killed) no longer reached it: it stayed, reading a
    remote stream no one showed. The follower ends it. And a trial folder gone on the host
    was read as a lost connection, retried for ever with a false `ssh_lost`."""
    import sys

    spec = sshd.spec()
    rdir = str(tmp_path / "rdir")
    sshcmd.launch(
        spec,
        rdir,
        1,
        "for i in $(seq 300); do echo step $i; sleep 0.1; done\n",
        str(tmp_path / "r"),
    )
    shown, lost = tmp_path / "pane", tmp_path / "lost"

    def follower(folder: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [
                *(sys.executable, "-m", "ajetd.hosts.sshfollow", "--spec", sshcmd.spec_json(spec)),
                *("--rdir", folder, "--trial", "1", "--run-id", "abc123", "--lost", str(lost)),
            ],
            stdout=shown.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    first = follower(rdir)
    wait_for(lambda: b"step 3" in shown.read_bytes(), what="the follower to show steps")
    ssh = [p for p in psutil.Process(first.pid).children() if p.name() == "ssh"]
    assert len(ssh) == 1
    os.killpg(first.pid, signal.SIGHUP)  # as tmux does when the session is killed
    assert first.wait(timeout=30) == 128 + signal.SIGHUP
    wait_for(
        lambda: not ssh[0].is_running() or ssh[0].status() == psutil.STATUS_ZOMBIE,
        what="its ssh to end",
    )

    gone = follower(str(tmp_path / "no-such-folder"))
    assert gone.wait(timeout=60) == 255
    assert b"is gone on" in shown.read_bytes() and not lost.exists()


def test_a_copy_back_that_stalls_ends_at_its_deadline_as_a_host_that_does_not_answer(
    tmp_path: Path, tmpfs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host answers ssh's keepalives but its tar stops sending mid-archive (a hung mount):
    the copy back had no deadline, and the daemon, which waits for it in its loop, hung with
    every run. It now ends at a deadline proportional to the size (a floor under it, here
    2 s), raising SshError as a host that does not answer; a run's end says so in its events
    and goes on. The host's tar is a script of the test's (first on PATH in its rc) that
    sends 10 KiB of the archive and then nothing; the result dir is a tmpfs mounted here
    after the sshd started, so the host does not share it (the copy back is due)."""
    from ajetd.adapters.store import Home
    from ajetd.core.model import Run
    from ajetd.hosts.ssh import SshHost

    bin_dir = _host_tar(tmp_path, '{tar} "$@" | head -c 10240; exec sleep 654')
    monkeypatch.setattr(sshcmd, "PULL_FLOOR_S", 2.0)
    big = 10 * 2**30  # 10 GiB: 5120 s at the least rate, the floor below it
    assert sshcmd.pull_deadline_s(big) == big / sshcmd.PULL_MIN_RATE == 5120.0
    assert sshcmd.pull_deadline_s(0) == 2.0
    there = tmp_path / "there"
    (there / "ckpt").mkdir(parents=True)
    (there / "ckpt" / "w.bin").write_bytes(os.urandom(1 << 20))
    servers = _own_sshd(tmp_path, f'export PATH="{bin_dir}:$PATH"\n')
    own = next(servers)
    try:
        spec = own.spec()
        here = tmpfs(tmp_path / "here", "64m")
        outcome: list[object] = []

        def copy_back() -> None:
            try:
                outcome.append(sshcmd.pull(spec, str(there), ["ckpt/"], here / "pulled"))
            except sshcmd.SshError as exc:
                outcome.append(exc)

        began = time.monotonic()
        worker = threading.Thread(target=copy_back, daemon=True)
        worker.start()
        worker.join(timeout=60)  # the test's own deadline: before, it never ended
        assert not worker.is_alive(), "the copy back never ended"
        assert time.monotonic() - began < 30
        said = str(outcome[0])
        assert isinstance(outcome[0], sshcmd.SshError), outcome
        assert f"ssh to {spec.target}: no answer within 2 s while copying back ckpt/" in said
        assert "(1.0 MiB there); what came is kept" in said

        home = Home(tmp_path / "home")
        home.ensure()
        run = Run(
            "abc123",
            "stall.md",
            time.time(),
            result_dir=str(here / "result"),
            codebase_dir=str(there),
            remote_dir=str(tmp_path / "rdir"),
        )
        run_dir = home.run_dir(run.run_id)
        run_dir.mkdir()
        host = SshHost(home, spec, ("ckpt/",), run.run_id)
        ender = threading.Thread(target=host.end, args=(run, time.time(), True), daemon=True)
        ender.start()
        ender.join(timeout=60)
        assert not ender.is_alive(), "the run's end never came back"
        assert copyback.due(run_dir)  # filed for a child: the run's end does not wait for it
        said = copyback.copy(copyback.read_job(run_dir))  # here: the floor patched to 2 s
        assert said.startswith(f"cleanup on {spec.target} failed: ssh to {spec.target}: no answer")
    finally:
        next(servers, None)
        for proc in psutil.process_iter(["cmdline"]):  # the stalled tars' sleeps there
            if proc.info["cmdline"] == ["sleep", "654"]:
                proc.kill()


def _host_tar(tmp_path: Path, on_create: str) -> Path:
    """A folder holding a `tar` that runs `on_create` (`{tar}`: the real one) when asked to
    make an archive (`-cf`: a copy back's sending side), else is the real tar."""
    real_tar = shutil.which("tar")
    assert real_tar
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    said = on_create.format(tar=real_tar)
    (bin_dir / "tar").write_text(
        f'#!/bin/sh\nif [ "$1" = -cf ]; then {said}; fi\nexec {real_tar} "$@"\n'
    )
    (bin_dir / "tar").chmod(0o755)
    return bin_dir


def _sshd_whose_tar_waits(tmp_path: Path, letgo: Path) -> Iterator[Sshd]:
    """An sshd whose logins find a `tar` that sends no archive until `letgo` exists (a copy
    back of hours, held as long as a test needs)."""
    bin_dir = _host_tar(tmp_path, f"while [ ! -e {letgo} ]; do sleep 0.05; done")
    return _own_sshd(tmp_path, f'export PATH="{bin_dir}:$PATH"\n')


def test_a_long_copy_back_runs_beside_the_loop_and_finish_flag_waits_for_it(
    env: Env, tmp_path: Path, tmpfs: Any
) -> None:
    """A remote run's result dir is copied back at its end; the host's tar holds the archive
    until the test lets it go (a copy of hours of checkpoints). Before, the copy ran in the
    daemon's loop: every other run went unsupervised meanwhile (here a local run's end was not
    recorded until the copy's deadline). Now a child copies: the remote run's end is recorded
    at once, the local run ends and is reported meanwhile, and the remote run's finish.flag
    comes only once its files are here."""
    letgo = tmp_path / "let-tar-go"
    servers = _sshd_whose_tar_waits(tmp_path, letgo)
    own = next(servers)
    try:
        here = tmpfs(tmp_path / "here", "16m")  # after the sshd: the host does not see it
        far = here / "far"
        made = f"mkdir -p {far} && echo weights > {far}/made-there.txt"
        env.start_daemon()
        remote_id = env.submit(
            env.blueprint("far", result=str(far), command=made, ajetd=own.ajetd_part())
        )
        wait_for(lambda: env.record(remote_id).get("state") == "done", 60, what="its end")
        assert env.record(remote_id)["reports_pending"] is True
        trigger = env.tmp / "end-near"
        near = env.blueprint(
            "near", command=f"while [ ! -e {trigger} ]; do sleep 0.05; done", ajetd="gpus: 0"
        )
        near_id = env.submit(near)
        wait_for(lambda: env.record(near_id).get("started_at"), 30, what="the local run")
        trigger.touch()
        near_flag = env.tmp / "results" / "near" / "finish.flag"
        wait_for(near_flag.exists, 30, what="the local run's finish.flag during the copy")
        assert not (far / "finish.flag").exists() and not (far / "made-there.txt").exists()
        waited = env.cli("wait", remote_id, "--timeout", "0.5")
        assert waited.returncode == 124, waited.stdout  # the copy back is not done
        letgo.touch()
        assert env.wait_done(remote_id, 60)["status"] == "succeeded"
        assert (far / "finish.flag").exists()
        assert (far / "made-there.txt").read_text() == "weights\n"
        events = (env.home / "runs" / remote_id / "events.jsonl").read_text()
        assert f"copying back from {own.spec().target}" in events
        assert f"copied back from {own.spec().target}: the remote result dir" in events
        assert not list((env.home / "runs" / remote_id).glob("copyback.*"))
    finally:
        letgo.touch()
        next(servers, None)


@pytest.mark.parametrize("child_killed", [False, True])
def test_a_copy_back_outlives_a_killed_daemon_and_one_killed_with_it_is_begun_again(
    env: Env, tmp_path: Path, tmpfs: Any, child_killed: bool
) -> None:
    """The daemon is killed (-9) while a remote run's copy back is under way; the next one
    finds the job: a child still copying holds its lock and is waited for; one killed too is
    begun again (tar keeps what came). Either way the files come, then finish.flag, and the
    journal says the copy once."""
    letgo = tmp_path / "let-tar-go"
    servers = _sshd_whose_tar_waits(tmp_path, letgo)
    own = next(servers)
    try:
        here = tmpfs(tmp_path / "here", "16m")
        far = here / "far"
        made = f"mkdir -p {far} && echo weights > {far}/made-there.txt"
        daemon = env.start_daemon()
        run_id = env.submit(
            env.blueprint("far", result=str(far), command=made, ajetd=own.ajetd_part())
        )
        job = str(env.home / "runs" / run_id / "copyback.json")

        def children() -> list[psutil.Process]:
            return [
                p
                for p in psutil.process_iter(["cmdline"])
                if "ajetd.hosts.copyback" in (p.info["cmdline"] or []) and job in p.info["cmdline"]
            ]

        wait_for(children, 60, what="the copy back's child")
        daemon.kill()
        daemon.wait(timeout=20)
        if child_killed:
            for child in children():
                child.kill()
            wait_for(lambda: not children(), what="the child gone")
        env.start_daemon()
        if child_killed:
            wait_for(children, 30, what="a child begun again")
        letgo.touch()
        assert env.wait_done(run_id, 60)["status"] == "succeeded"
        assert (far / "finish.flag").exists()
        assert (far / "made-there.txt").read_text() == "weights\n"
        events = (env.home / "runs" / run_id / "events.jsonl").read_text()
        assert events.count(f"copied back from {own.spec().target}") == 1, events
    finally:
        letgo.touch()
        next(servers, None)


def test_a_stop_its_host_did_not_take_is_sent_once_the_host_answers(
    env: Env, tmp_path: Path
) -> None:
    """walk87 F8: the host stops answering, then a stop is asked: no signal is counted as
    sent (status says the host did not answer), and once the host answers again the stop
    goes, SIGINT first with its whole grace: the program ends `stopped` (it ran on for ever,
    `stopping`, after SIGINT, SIGTERM and SIGKILL were journalled as sent to nothing)."""
    from ajetd.core.policy import UNSENT_RETRY_S
    from ajetd.views.records import shown_reason
    from conftest import _sshd
    from loopkit import Loop

    folder = tmp_path / "own-sshd"
    folder.mkdir()
    servers = _sshd(folder, [])
    own = next(servers)
    restarted: list[subprocess.Popen[bytes]] = []
    loop = Loop(env, liveness_s=0.5)
    config = env.config("unsent", forever=True, step_time=0.1)
    try:
        run_id = loop.submit(env.blueprint("unsent", config=config, ajetd=own.ajetd_part()))
        loop.started(run_id)
        loop.until(lambda: len(marked_processes(run_id)) >= 1, "the remote program")
        next(servers, None)  # the host stops answering, its shared connections too
        for master in ssh_masters(own.port):
            master.kill()
        (env.home / "control" / f"{run_id}.stop").write_text("")
        loop.until(
            lambda: any(e.startswith("SIGINT not sent") for _, e in loop.events(run_id)),
            "the stop's SIGINT to find no host",
        )
        loop.run_for(30)  # past both graces: nothing is counted as sent meanwhile
        run = loop.run(run_id)
        assert run.state.value == "stopping" and run.signals_sent == (), run.signals_sent
        assert "did not answer" in shown_reason(run) and "no signal sent" in shown_reason(run)
        restarted.append(_sshd_again(folder))
        loop.run_for(UNSENT_RETRY_S)
        flag = loop.until_done(run_id)
        assert flag["status"] == "stopped", flag
        sent = [e for _, e in loop.events(run_id) if e.startswith("sent SIG")]
        assert sent[0].startswith("sent SIGINT") and "late" in sent[0], sent
    finally:
        loop.close()
        _end_own_sshd(env, restarted, servers)
