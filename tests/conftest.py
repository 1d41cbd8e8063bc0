"""Shared fixtures: real tmux on a private socket, a real daemon process, real files.

Nothing here sleeps to wait: `wait_for` polls a condition until a deadline.
"""

from __future__ import annotations

import compileall
import contextlib
import ctypes
import errno
import getpass
import importlib.util
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
import slurmcluster
import yaml
from hypothesis import settings
from slurmcluster import SlurmCluster

import ajetd
from ajetd.adapters import claimfiles
from ajetd.adapters.tmux import Tmux
from ajetd.core.hostspecs import SshSpec
from ajetd.core.policy import Timing
from ajetd.daemon.loop import Daemon, DaemonConfig
from ajetd.pictures import drawing

FAKEJET = Path(__file__).parent / "fakejet"
BENCH = Path(__file__).parent.parent / "bench"
PYTHON = sys.executable

# The commands the tests start see what a user's shell gives them, however pytest was started:
# pytest-xdist's workers (the suite runs in several, pyproject's addopts) set COLUMNS=80 and
# LINES=24, which would cut `ajetd status` to 80 columns where a pipe gets whole lines (a test
# that wants a width sets COLUMNS itself); a pytest started in the background by a shell
# without job control ignores SIGINT, and so would every command it starts (Ctrl-C tests).
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Property tests have no per-example deadline: hypothesis's default (200 ms of wall clock)
# measured the machine's load, not the code (test_unsaved's padding test took 245 ms at load
# 20 on the 2-core VM). Each test keeps its own example count; what bounds a parse's time is
# checked where it is promised, in CPU time.
#
# The suite's draws are the same on every run (derandomize: a seed from each test's source):
# a CI run is judged on the code, never on the luck of its draws (two CI runs were refused for
# latent cases a new draw happened on, `½h1h` and `env -i tee ';'`, each fixed with its example
# kept). New draws are looked for on purpose, where a failure can be read and fixed:
# `AJETD_HYPOTHESIS=explore python3 -m pytest -q` (a new random seed for every test).
settings.register_profile("ajetd", deadline=None, derandomize=True)
settings.register_profile("explore", deadline=None, derandomize=False)
settings.load_profile("explore" if os.environ.get("AJETD_HYPOTHESIS") == "explore" else "ajetd")


def pytest_configure(config: pytest.Config) -> None:
    """Compile ajetd's modules to bytecode once, before any test (in the run's first process,
    not again in each xdist worker), as pip does for an installed package. The shells here and
    CI's set PYTHONDONTWRITEBYTECODE, so the editable install never wrote its `__pycache__`
    and each of the ~2000 daemons and `ajetd` commands a run starts compiled every module it
    imports from source: a daemon's start took 0.73 s of CPU, 0.45 s from bytecode (bench/
    common.py does the same for the benchmarks). The environment the tests give their
    processes is unchanged; a module edited later is compiled at its import, as before."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        compileall.compile_dir(str(Path(ajetd.__file__).parent), quiet=1)


def interleaved(items: list[pytest.Item]) -> list[pytest.Item]:
    """The tests taken module by module in turn (the first of each module, then the second of
    each, ...), each module's in its own order. In file order the SSH tests, which mostly wait
    on ssh, came last and ran side by side, two cores half idle for minutes at the run's end,
    while other stretches ran only tests that compete for the CPU; in turn, the waiting
    overlaps the rest. The few modules of many small tests (the corpus, diagnosis, option
    values, log shapes) come last, so the workers end together."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    queues = list(modules.values())
    order: list[pytest.Item] = []
    for turn in range(max(map(len, queues), default=0)):
        order.extend(queue[turn] for queue in queues if turn < len(queue))
    return order


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a pytest-xdist worker under `--dist loadgroup`, the tests are `interleaved` (every
    worker the same order: the scheduler hands them out in it). Each test marked `xdist_group`
    must carry its group in its id (what the scheduler reads): where the pytest and xdist
    versions do not agree on that (pytest 9.2, xdist 3.8), the run fails at once rather than
    spread a group over the workers."""
    if not getattr(config.option, "loadgroup", False):  # set in the workers by xdist
        return
    items[:] = interleaved(items)
    lost = [i.nodeid for i in items if i.get_closest_marker("xdist_group") and "@" not in i.nodeid]
    if lost:
        raise pytest.UsageError(
            f"--dist loadgroup did not group {lost[0]} (and {len(lost) - 1} more): this "
            "pytest and pytest-xdist do not work together (pyproject's dev extra pins them)"
        )


def wait_for(cond: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    """Poll `cond` until it returns something truthy; fail the test at the deadline. Between
    two polls it pauses 20 ms, or as long as the last poll took when that was longer (an
    `ajetd` command run to look): polling takes at most half a core, never all of one, from
    the daemon it waits on and the tests beside it."""
    deadline = time.monotonic() + timeout
    while True:
        began = time.monotonic()
        value = cond()
        if value:
            return value
        now = time.monotonic()
        if now >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(min(max(0.02, now - began), deadline - now))


def replace_by_file(path: Path, aside: Path, text: str = "x\n") -> None:
    """Put a file holding `text` where `path` is, `path` itself moved to `aside`, in one step
    (renameat2's RENAME_EXCHANGE): no moment in which neither is there. Renamed aside, then
    written, a folder the live daemon makes again (a run's folder, the inbox, a result dir)
    was sometimes there again before the write, which met a folder (IsADirectoryError, CI
    2026-12-03)."""
    aside.write_text(text)
    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd, rename_exchange = -100, 2
    if libc.renameat2(at_fdcwd, bytes(path), at_fdcwd, bytes(aside), rename_exchange) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(path))


def printed(log: Path, line: str) -> bool:
    """Whether the program printed `line` into `log`, as a whole line of its own. Not `in` the
    text: a trial's banner (`[ajetd] run R trial N: <command>`) holds the command's words, so
    `"before" in text` was true before `echo before` ran, and a test that moved the result
    dir at that moment found the line on the far side of the move (CI, session 34)."""
    try:
        return line in log.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return False


def gated_script(script: Path, body: str) -> Path:
    """Write `script` to run `body` once its go file (returned) exists, as a trial script
    waits for its own: a script given to `Tmux.new_session` starts as the call makes its
    pane, and what it prints before the same call's `pipe-pane` is armed never reaches the
    log (a test waited 20 s for a line its script had printed at once). Touch the go file
    once `new_session` returned."""
    script.write_text(f'while [ ! -e "$0.go" ]; do sleep 0.02; done\n{body}')
    return script.with_name(script.name + ".go")


def in_process(env: Env, liveness: float = 0.2) -> Daemon:
    """A daemon in this process, on `env`'s home and tmux socket, driven pass by pass (its
    `tick`) by the test, with short grace periods and deep checks: its start's reading done."""
    cfg = DaemonConfig(
        home=env.home,
        tmux_socket=env.socket,
        backoff_scale=0.001,
        liveness_s=liveness,
        timing=Timing(grace_int_s=1, grace_term_s=1, hang_auto_s=600),
    )
    daemon = Daemon(cfg)
    daemon.home.ensure()
    daemon.reconcile(time.time())
    return daemon


def python_says(code: str) -> list[str]:
    """The lines a fresh interpreter prints running `code`: for what importing and running a
    module leaves in memory, which this test process (having imported everything) cannot
    show."""
    out = subprocess.run(
        [PYTHON, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return out.stdout.splitlines()


def rebuilt_after_a_cut(env: Env, run_id: str, kept: tuple[str, ...]) -> dict[str, Any]:
    """Stop the daemon, cut the live run's record short (as a crash mid-write does), start
    another and wait until it rebuilt the record; check that the rebuilt record has the `kept`
    fields as before and the trial's command, and return it."""
    before = env.record(run_id)
    env.daemons[-1].send_signal(signal.SIGTERM)
    env.daemons[-1].wait(timeout=20)
    state = env.home / "runs" / run_id / "state.json"
    state.write_bytes(state.read_bytes()[:120])
    env.start_daemon()
    wait_for(lambda: env.record(run_id).get("attention"), what="the record to be rebuilt")
    record = env.record(run_id)
    assert "rebuilt" in record["attention"] and record["state"] == "running", record
    assert {k: record[k] for k in kept} == {k: before[k] for k in kept}
    assert record["launch_command"] == before["trials"][0]["command"]  # the program's
    return record


def git(cwd: Path, *args: str) -> str:
    """A git command in `cwd` with a throw-away identity; its output."""
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@x", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def shared_paths(home: Path) -> list[str]:
    """Everything under the home that group or others may read, write or enter."""
    found = []
    for path in [home, *home.rglob("*")]:
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:
            continue  # a temp file renamed away meanwhile (the daemon still runs)
        if not stat.S_ISLNK(mode) and mode & 0o077:
            found.append(f"{path.relative_to(home)} {oct(mode & 0o777)}")
    return found


def marked_processes(run_id: str) -> list[psutil.Process]:
    """This machine's processes started with the run's AJETD_RUN_ID."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("AJETD_RUN_ID") == run_id:
                found.append(proc)
        except psutil.Error:
            continue
    return found


@dataclass
class Env:
    """One test's world: a home for ajetd, a tmux socket, a fake codebase."""

    tmp: Path
    home: Path
    socket: str
    codebase: Path
    vars: dict[str, str] = field(default_factory=dict)
    daemons: list[subprocess.Popen[bytes]] = field(default_factory=list)
    others: list[Env] = field(default_factory=list)  # `second_env`s: their tmux servers end too

    def cli(
        self, *args: str, timeout: float = 60.0, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`ajetd ARGS` as a user runs it; `stdin` its standard input (else none is given)."""
        return subprocess.run(
            [PYTHON, "-m", "ajetd", *args],
            input=stdin,
            env=self.vars,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def cli_started(self, *args: str) -> subprocess.Popen[str]:
        """`ajetd ARGS` started in the background, its output piped (a wait, a stop)."""
        return subprocess.Popen(
            [PYTHON, "-m", "ajetd", *args],
            env=self.vars,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args],
            env=self.vars,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )

    def start_daemon(self, *extra: str) -> subprocess.Popen[bytes]:
        log = open(self.tmp / f"daemon-{len(self.daemons)}.log", "ab")  # noqa: SIM115
        proc = subprocess.Popen(
            [
                PYTHON,
                "-m",
                "ajetd",
                "daemon",
                "--backoff-scale",
                "0.001",
                "--grace-int",
                "1",
                "--grace-term",
                "1",
                "--hang-auto",
                "600",
                *extra,
            ],
            env=self.vars,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.daemons.append(proc)
        wait_for(
            lambda: (self.home / "daemon.json").exists() or proc.poll() is not None,
            what="daemon start",
        )
        return proc

    def daemon_log(self) -> str:
        return "".join(p.read_text() for p in sorted(self.tmp.glob("daemon-*.log")))

    def fake_gpus(self, count: int, **extra: Any) -> Path:
        """An `AJETD_FAKE_GPUS` file of `count` idle H100s (fields in `extra` for each), used
        by the daemon and the CLI this Env starts; the fake launcher updates it as a driver
        would."""
        path = self.tmp / "gpus.json"
        gpus = [
            {
                "index": i,
                "name": "H100",
                "memory_total_mib": 81920,
                "memory_used_mib": 0,
                "utilization": 0,
                **extra,
            }
            for i in range(count)
        ]
        path.write_text(json.dumps({"gpus": gpus}))
        self.vars["AJETD_FAKE_GPUS"] = str(path)
        return path

    def config(self, name: str = "run", **fake: Any) -> str:
        """Write configs/<name>.yaml with `fakejet:` settings; return its relative path."""
        conf = {
            "ajet": {
                "execute_test": False,
                "trainer_common": {
                    "test_freq": 2,
                    "val_before_train": True,
                    "logger": "console",
                    "val_print_to_markdown_file_path": f"./saved_val_result/{name}.md",
                },
            },
            "fakejet": {"steps": 4, "step_time": 0.02, **fake},
        }
        path = self.codebase / "configs" / f"{name}.yaml"
        path.write_text(yaml.safe_dump(conf))
        return f"configs/{name}.yaml"

    def blueprint(
        self,
        name: str = "bp",
        *,
        config: str | None = None,
        max_time: str = "2m",
        purpose: str = "test run",
        result: str | None = None,
        ajetd: str = "",
        command: str | None = None,
        python: str = PYTHON,
    ) -> Path:
        config = config or self.config(name)
        result_dir = result or str(self.tmp / "results" / name)
        cmd = command or f"python -m fakejet.launcher --conf {config} --autokill"
        text = (
            f"# {name}\n\n"
            f"- [exp_purpose] 实验目的: {purpose}\n"
            f"- [exp_codebase_dir] 主实验代码路径: {self.codebase}\n"
            f"- [exp_venv_exe] python虚拟环境路径: {python}\n"
            f"- [exp_yaml_path] 实验配置文件路径: {config}\n"
            f"- [exp_launch_command] 执行训练的命令: `{cmd}`\n"
            f"- [exp_result_dir] 结果数据存储路径: {result_dir}\n"
            f"- [exp_max_time] 运行时间不超过 {max_time}\n"
        )
        if ajetd:
            text += f"\n## [ajetd]\n```yaml\n{ajetd}\n```\n"
        path = self.tmp / f"{name}.md"
        path.write_text(text)
        return path

    def submit(self, path: Path) -> str:
        out = self.cli("submit", str(path))
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    def status(self, run_id: str) -> dict[str, Any]:
        out = self.cli("status", run_id, "--json")
        assert out.returncode == 0, out.stderr
        return dict(json.loads(out.stdout))

    def record(self, run_id: str) -> dict[str, Any]:
        """The run's state file, read directly (cheaper than a CLI process in a poll loop)."""
        try:
            return dict(json.loads((self.home / "runs" / run_id / "state.json").read_text()))
        except (FileNotFoundError, ValueError):
            return {}

    def wait_done(self, run_id: str, timeout: float = 30.0) -> dict[str, Any]:
        def ended() -> bool:  # and its reports written (finish.flag comes after the record)
            record = self.record(run_id)
            return record.get("state") == "done" and not record.get("reports_pending")

        wait_for(ended, timeout, what=f"run {run_id} to end")
        return self.status(run_id)

    def launches(self) -> list[str]:
        path = self.codebase / "launches.log"
        return path.read_text().splitlines() if path.exists() else []


@pytest.fixture(scope="session")
def matplotlib_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One MPLCONFIGDIR for the pictures every test's daemon draws, its font list built once
    here. A test's HOME is its own tmp_path, so each test's first picture built matplotlib's
    font cache again (`fc-list` and a scan of the system's fonts: ~0.25 s of CPU, a second or
    more at load, in ~200 tests), which a user's lasting HOME does once. Nothing of ajetd's
    reads or writes it, and with the cache in place no picture writes there either."""
    folder = tmp_path_factory.getbasetemp() / "matplotlib"
    folder.mkdir(exist_ok=True)
    subprocess.run(
        [PYTHON, "-c", "import matplotlib.font_manager"],
        env={**os.environ, "MPLCONFIGDIR": str(folder)},
        capture_output=True,
        check=True,
        timeout=120,
    )
    return folder


@pytest.fixture
def env(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Env]:
    """A test's world. Its daemons draw no pictures (AJETD_PICTURES=off) unless the test is
    marked `pictures`: a run's end with data started a matplotlib child (~1.2 s of CPU, a third
    of test_daemon_e2e's), where most tests read the record, not the pictures. The marked
    tests (test_plots end to end, the campaign's progress.png, the files a run leaves, the
    home's modes with plot.log) draw them as a user's daemon does. The same holds for a
    daemon in this process (`loopkit.Loop`), which reads this process's environment: its
    run ends started a picture child too, and `until_done` waited for it (past its 20 s at
    load 30)."""
    home = tmp_path / "ajetd-home"
    socket = f"ajetd-test-{uuid.uuid4().hex[:10]}"
    codebase = tmp_path / "codebase"
    shutil.copytree(
        FAKEJET, codebase, ignore=shutil.ignore_patterns("__pycache__", "saved_*", "launches.log")
    )
    (tmp_path / "results").mkdir()
    private = ("TMUX", "TMUX_PANE", "WANDB_API_KEY", "SWANLAB_API_KEY")  # no test needs a key
    variables = {k: v for k, v in os.environ.items() if k not in private}
    variables.update(AJETD_HOME=str(home), AJETD_TMUX_SOCKET=socket, HOME=str(tmp_path))
    # the machine's claims (val files, GPUs) of this test's daemons alone: tests at once on
    # one machine, each with GPU 0 of its own fake, would each see the others' claims
    variables[claimfiles.DIR_ENV] = str(tmp_path / "machine-claims")
    monkeypatch.setenv(claimfiles.DIR_ENV, variables[claimfiles.DIR_ENV])  # in-process daemons'
    if request.node.get_closest_marker("pictures") is None:
        variables[drawing.OFF_ENV] = "off"
        monkeypatch.setenv(drawing.OFF_ENV, "off")
    else:
        variables.pop(drawing.OFF_ENV, None)
        variables["MPLCONFIGDIR"] = str(request.getfixturevalue("matplotlib_folder"))
    e = Env(tmp=tmp_path, home=home, socket=socket, codebase=codebase, vars=variables)
    yield e
    for proc in e.daemons:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    for world in (e, *e.others):
        world.tmux("kill-server")
        # a server ended otherwise than by kill-server (a test's own kill, a timeout) leaves
        # its socket file: thousands piled up in /tmp/tmux-UID (walk98 F16)
        with contextlib.suppress(OSError):
            os.unlink(Tmux(world.socket).socket_path())
    for leftover in psutil.process_iter():  # runs outlive the daemon by design: end them here
        try:
            if leftover.environ().get("AJETD_RESULT_DIR", "").startswith(str(tmp_path)):
                leftover.kill()
        except psutil.Error:
            continue


def second_env(env: Env, name: str = "second") -> Env:
    """Another daemon's world on the same machine as `env`'s: its own home and tmux socket
    (a second `AJETD_HOME` of one user), the same codebase, the same machine's claims folder
    and fake GPUs. Its daemons are ended with `env`'s."""
    tmp = env.tmp / name
    tmp.mkdir()
    socket = f"ajetd-test-{uuid.uuid4().hex[:10]}"
    variables = {**env.vars, "AJETD_HOME": str(tmp / "ajetd-home"), "AJETD_TMUX_SOCKET": socket}
    other = Env(tmp=tmp, home=tmp / "ajetd-home", socket=socket, codebase=env.codebase)
    other.vars, other.daemons = variables, env.daemons
    env.others.append(other)
    return other


@pytest.fixture
def loop(env: Env) -> Iterator[Any]:
    """The daemon in this process on a fake clock (tests/loopkit.py), driven by the test."""
    from loopkit import Loop

    kit = Loop(env)
    yield kit
    kit.close()


@pytest.fixture
def daemon_env(env: Env) -> Env:
    env.start_daemon()
    return env


@dataclass(frozen=True)
class Sshd:
    """An OpenSSH server on localhost for this test session, with a throw-away key."""

    port: int
    key: Path
    known_hosts: Path
    user: str

    def spec(self) -> SshSpec:
        """The `SshSpec` that reaches it (what the blueprint's `ajetd_part` parses to)."""
        return SshSpec(
            "127.0.0.1",
            self.user,
            self.port,
            str(self.key),
            (
                ("StrictHostKeyChecking", "accept-new"),
                ("UserKnownHostsFile", str(self.known_hosts)),
            ),
        )

    def ajetd_part(self) -> str:
        """The blueprint's `ssh:` key that reaches it."""
        return (
            f"ssh: {{host: 127.0.0.1, port: {self.port}, user: {self.user}, "
            f"identity_file: {self.key}, options: {{StrictHostKeyChecking: accept-new, "
            f"UserKnownHostsFile: {self.known_hosts}}}}}"
        )


def _without_rc() -> list[str]:
    """A prefix that starts the test sshd in a mount namespace of its own where the user's
    ~/.bashrc is empty: bash runs it for every command ssh brings (even `bash -c true`), and
    this machine's (and CI's) runs `pyenv init`: 0.2 s and ~400 processes a call, so the SSH
    tests spent half their time there and timed out when four ran at once. Mounts made later
    outside still reach the server (`slave`). [] where that needs what is not here."""
    rc = Path.home() / ".bashrc"
    if os.geteuid() != 0 or not shutil.which("unshare") or not rc.is_file() or rc.is_symlink():
        return []
    bind = 'mount --bind /dev/null "$0" && exec "$@"'
    return ["unshare", "--mount", "--propagation", "slave", "sh", "-c", bind, str(rc)]


def _sshd(tmp: Path, wrap: list[str]) -> Iterator[Sshd]:
    """An sshd on a free port of 127.0.0.1 with its own keys in `tmp`, started through
    `wrap` (a command that ends by running its arguments), stopped at the end."""
    binary = shutil.which("sshd") or "/usr/sbin/sshd"
    if not os.path.exists(binary):
        pytest.skip("no OpenSSH server here: apt-get install openssh-server (.ci/run does)")
    for name in ("host", "client"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / name)], check=True
        )
    (tmp / "authorized_keys").write_text((tmp / "client.pub").read_text())
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    user = getpass.getuser()
    config = tmp / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {tmp / 'host'}\n"
        f"PidFile {tmp / 'sshd.pid'}\nAuthorizedKeysFile {tmp / 'authorized_keys'}\n"
        "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
        f"AllowUsers {user}\nLogLevel ERROR\nMaxSessions 50\nMaxStartups 50\n"
    )
    if os.getuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    log = open(tmp / "sshd.log", "ab")  # noqa: SIM115
    server = subprocess.Popen(
        [*_without_rc(), *wrap, binary, "-D", "-e", "-f", str(config)], stderr=log, stdout=log
    )

    def up() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            return server.poll() is not None

    wait_for(up, what="sshd to listen")
    assert server.poll() is None, (tmp / "sshd.log").read_text()
    yield Sshd(port, tmp / "client", tmp / "known_hosts", user)
    server.terminate()
    server.wait(timeout=10)
    log.close()


def ssh_masters(port: int) -> list[psutil.Process]:
    """The shared SSH connections (ControlMaster processes, `ssh: <socket> [mux]`) to the test
    sshd on `port` only: each xdist worker has its own sshd, whose runs keep theirs."""
    from ajetd.hosts.sshcmd import control_dir

    found = []
    for proc in psutil.process_iter(["cmdline"]):
        words = proc.info["cmdline"] or []
        if not any(str(control_dir()) in word and "[mux]" in word for word in words):
            continue
        ask = getattr(proc, "net_connections", None) or proc.connections  # psutil < 6
        try:
            links = ask(kind="tcp")
        except psutil.Error:  # it ended meanwhile
            continue
        if any(link.raddr and link.raddr.port == port for link in links):
            found.append(proc)
    return found


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    yield from _sshd(tmp_path_factory.mktemp("sshd"), [])


@pytest.fixture(scope="session")
def sshd_apart(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sshd, Path]]:
    """An sshd whose logins see a folder this machine does not: `apart` is an empty folder
    here, and a tmpfs in the server's own mount namespace (what only the host has, as on
    another machine; needs root, as CI runs)."""
    tmp = tmp_path_factory.mktemp("sshd-apart")
    apart = tmp / "apart"
    apart.mkdir()
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a mount namespace needs root and unshare (util-linux)")
    mount = 'mount -t tmpfs -o size=32m,mode=0755 ajetd-apart "$0" && exec "$@"'
    wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, str(apart)]
    for found in _sshd(tmp, wrap):
        yield found, apart


LOGIN_SHELLS = ("sh", "zsh", "fish", "tcsh")  # besides bash: sshd hands them ajetd's command


@pytest.fixture(scope="session", params=LOGIN_SHELLS)
def sshd_shell(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Sshd, str]]:
    """An sshd whose user logs in to another shell than bash: its own /etc/passwd (bound over
    the real one in the server's mount namespace) names it, as `chsh` would; needs root."""
    shell = shutil.which(request.param)
    if shell is None:
        pytest.skip(f"no {request.param} here: apt-get install {request.param} (.ci/run does)")
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a mount namespace needs root and unshare (util-linux)")
    tmp = tmp_path_factory.mktemp(f"sshd-{request.param}")
    user = getpass.getuser()
    rows = Path("/etc/passwd").read_text().splitlines()
    mine = [":".join([*r.split(":")[:6], shell]) if r.split(":")[0] == user else r for r in rows]
    (tmp / "passwd").write_text("\n".join(mine) + "\n")
    bind = 'mount --bind "$0" /etc/passwd && exec "$@"'
    wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c", bind, str(tmp / "passwd")]
    for found in _sshd(tmp, wrap):
        yield found, request.param


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    why = slurmcluster.missing()
    if why:
        pytest.skip(why)
    cluster = slurmcluster.start(tmp_path_factory.mktemp("slurm"))
    yield cluster
    slurmcluster.stop(cluster)


def campaign_ledger(env: Env, name: str) -> list[dict[str, str]]:
    """The rows of the ledger of campaign `name` (under `<tmp>/campaigns/`), by column."""
    path = env.tmp / "campaigns" / name / "ledger.tsv"
    lines = path.read_text().splitlines() if path.exists() else []
    if not lines:
        return []
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]


def bench_module(name: str) -> Any:
    """bench/<name>.py as a module (bench/ is not a package), loaded once a session and
    registered as `bench_<name>`: the tests read the corpus and its figures through the
    benchmark's own code (`diagnosis.corpus`, `logshapes.excerpts` and `body`)."""
    known = sys.modules.get(f"bench_{name}")
    if known is not None:
        return known
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


FAKE_GRPO_CONFIG = "examples/configs/grpo_fake.yaml"  # the fake NeMo-RL's, in the codebase
FAKE_GRPO_COMMAND = (  # accuracy grows with the steps: two steps, one validation
    f"python examples/run_grpo.py --config {FAKE_GRPO_CONFIG} grpo.max_num_steps=2 "
    "grpo.val_period=2"
)
ACCURACY_MAX = "metric: accuracy\ndirection: max\n"


def campaign_folder_of(
    env: Env,
    name: str,
    head: str,
    tail: str = "",
    *,
    config: str | None = FAKE_GRPO_CONFIG,
    command: str = FAKE_GRPO_COMMAND,
    ajetd: str = "max_trials: 1",
    result_dir: Path | None = None,
    files: dict[str, str] | None = None,
) -> Path:
    """A campaign folder `<tmp>/<name>-folder`: base.md, a blueprint of `command` (the fake
    NeMo-RL's two steps unless told) on `config`; campaign.yaml, `name: <name>`, then `head`,
    `base: base.md`, `result_dir` (`<tmp>/campaigns/<name>` unless told), then `tail`; and
    `files` (name: text) beside them."""
    folder = env.tmp / f"{name}-folder"
    folder.mkdir()
    base = env.blueprint(f"{name}-base", config=config, command=command, ajetd=ajetd)
    (folder / "base.md").write_text(base.read_text())
    where = env.tmp / "campaigns" / name if result_dir is None else result_dir
    (folder / "campaign.yaml").write_text(
        f"name: {name}\n{head}base: base.md\nresult_dir: {where}\n{tail}"
    )
    for file, text in (files or {}).items():
        (folder / file).write_text(text)
    return folder


def campaign_folder(env: Env, name: str, result_dir: Path, max_experiments: int = 1) -> Path:
    """A campaign folder of quick baseline experiments (`true`, no GPU), the first of them the
    baseline, writing into `result_dir`."""
    return campaign_folder_of(
        env,
        name,
        "metric: mean_reward\ndirection: max\n",
        f"stop: {{max_experiments: {max_experiments}}}\n",
        config=None,
        command="true",
        ajetd="gpus: 0\nmax_trials: 1",
        result_dir=result_dir,
    )


# -- full disks: small tmpfs mounts (the tests run as root, as CI does) -----------------------
@pytest.fixture
def tmpfs() -> Iterator[Callable[[Path, str], Path]]:
    mounted: list[Path] = []

    def mount(path: Path, size: str) -> Path:
        if os.geteuid() != 0:
            pytest.skip("mounting a small tmpfs needs root (CI runs as root)")
        path.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(path)
        return path

    yield mount
    for path in reversed(mounted):
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(folder: Path) -> Path:
    """Fill the disk under `folder` to its last byte."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def cli_commands() -> list[tuple[str, Any]]:
    """Every `ajetd` command as (`ajetd campaign stop`, its click command), groups too."""
    import click

    from ajetd.cli.main import main

    def walk(group: click.Group, path: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
        for name, command in group.commands.items():
            yield " ".join(("ajetd", *path, name)), command
            if isinstance(command, click.Group):
                yield from walk(command, (*path, name))

    return list(walk(main, ()))
