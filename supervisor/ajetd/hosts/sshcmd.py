"""Runs on a remote GPU host over SSH: the only module that builds `ssh` command lines.

The run's tmux session stays local (`ajet_<slug>`, attachable as usual) and its pane runs a
follower (`ajetd.hosts.sshfollow`) that streams the remote output. The program itself runs on the
host detached from any connection (`setsid nohup`, in the codebase with the venv, from the
same generated trial script as a local trial), writing its output and exact exit code into
`~/.ajetd-remote/<run_id>/` there, so training survives a dropped connection and the follower
simply reattaches. Every call shares one connection per host (ControlMaster), so a deep check
or a signal does not open a new one. Nothing is pasted into a remote shell unquoted except the
blueprint's own launch command, which runs as the user wrote it, inside the trial script.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ajetd.adapters import diskfull
from ajetd.adapters.nvml import SMI_APP_FIELDS, SMI_GPU_FIELDS, parse_nvidia_smi
from ajetd.adapters.regular import TooLargeError
from ajetd.adapters.store import mark
from ajetd.core import pathglob
from ajetd.core.errors import AjetdError
from ajetd.core.gpuuse import GpuSample
from ajetd.core.hostspecs import REMOTE_BASE, SshSpec
from ajetd.core.limits import CONFIG_MAX_BYTES, size_text
from ajetd.hosts.fs import config_text
from ajetd.hosts.sshstream import exchange

PULL_TIMEOUT_S = 600.0  # a copy back's end, once its archive has come
# A copy back's deadline: ssh's keepalives (ServerAliveInterval x CountMax, 15 s) end it when
# the host or the network goes silent, but not when the host answers them and its tar sends
# nothing (a hung NFS mount, a disk in D state, a stopped tar); the daemon waits for the copy
# in its loop, so every run would wait with it, for ever. Proportional to the size, so a big
# checkpoint on a slow link is never cut: PULL_MIN_RATE is far below any link a GPU host is
# on (16 Mbit/s); PULL_FLOOR_S for what a small copy spends on more than bytes (ssh's
# connection, tar's start on a cold file system, du's own walk).
PULL_FLOOR_S = 300.0
PULL_MIN_RATE = 2 * 1024 * 1024  # bytes a second
SSH_TIMEOUT_S = 30.0
# How long a shared connection stays open after its last session (a deep check, a command):
# a live remote run's follower keeps a session on it all along, so this is what is left after
# the run, or after `ajetd gpus`, `lint`; the daemon stops its own at its shutdown
# (`stop_connections`)
CONTROL_PERSIST_S = 60
CONTROL_STOP_TIMEOUT_S = 5.0
_CONNECTED: set[SshSpec] = set()  # the hosts this process reached (`stop_connections`)
VANISHED = 3  # the stream's code: the remote trial ended without an exit status
GONE = 4  # the stream's code: the trial's folder on the host is not there


class SshError(AjetdError):
    """An SSH call failed; the message says which host and what ssh printed."""


def control_dir() -> Path:
    """Where connection-sharing sockets live: short (a socket path is at most ~104 bytes)
    and owner-only."""
    path = Path(tempfile.gettempdir()) / f"ajetd-ssh-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    if path.stat().st_uid != os.getuid() or path.stat().st_mode & 0o077:
        raise SshError(f"{path} is not owner-only; refusing to keep SSH sockets there")
    return path


def argv(spec: SshSpec) -> list[str]:
    """`ssh` with batch mode (never a password prompt), keepalives and connection sharing."""
    _CONNECTED.add(spec)
    return _options(spec)


def _options(spec: SshSpec) -> list[str]:
    """`argv` without noting the host as reached."""
    out = [
        "ssh",
        "-o",
        "BatchMode=yes",
        "-o",
        "ServerAliveInterval=5",
        "-o",
        "ServerAliveCountMax=3",
        "-o",
        "ConnectTimeout=10",
        "-o",
        "ControlMaster=auto",
        "-o",
        f"ControlPath={control_dir()}/%C",
        "-o",
        f"ControlPersist={CONTROL_PERSIST_S}",
        "-p",
        str(spec.port),
    ]
    if spec.identity_file:
        out += ["-i", os.path.expanduser(spec.identity_file)]
    for key, value in spec.options:
        out += ["-o", f"{key}={value}"]
    # ssh's notices ("Warning: Permanently added ... to the list of known hosts" at a host's
    # first connection) are not failures: what ajetd quotes of its stderr (a copy back's
    # notes, an error) is ssh's errors only. After the user's options: ssh takes the first
    # value given, so a LogLevel of theirs wins.
    out += ["-o", "LogLevel=ERROR"]
    return [*out, spec.target]


def stop_connections() -> list[str]:
    """Ask the shared connection to each host this process reached to take no new session
    (`ssh -O stop`): it closes once the sessions on it end, at once where none is left, not
    CONTROL_PERSIST_S later (a daemon's at its shutdown). A live run's follower keeps its
    stream (a session ended would read as a lost connection) and opens its own next time.
    The hosts whose connection could not be asked, with ssh's words (none open: nothing)."""
    failed = []
    for spec in sorted(_CONNECTED, key=lambda s: (s.target, s.port)):
        command = [*_options(spec)[:-1], "-O", "stop", spec.target]
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=CONTROL_STOP_TIMEOUT_S,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            failed.append(f"{spec.target}: {exc}")
            continue
        said = done.stderr.strip()
        if done.returncode != 0 and "No such file or directory" not in said:
            failed.append(f"{spec.target}: {said or f'ssh exited {done.returncode}'}")
    _CONNECTED.clear()
    return failed


def remote_command(script: str, mark: str = "") -> str:
    """The one string sshd hands to the login shell: bash running `script`. With a `mark`
    (`new_mark`): the login shell is replaced by bash (`exec`), which runs the user's
    ~/.bashrc as bash does for a command ssh brings (also where the login shell is sh or
    zsh, which would not: what it exports, a conda or CUDA PATH, reaches the trial), prints
    the mark on stdout and stderr, runs `script` in a subshell (its own `exit` and traps stay
    there), then prints the end mark with its status: what came before the one (the rc's
    words) and after the other (its EXIT trap's) is not the command's (`Answer`).

    The login shell reads the string first, and shells quote differently: fish reads `\\`
    inside single quotes as one backslash, tcsh refuses a newline there. So the script travels
    as base64 (letters, digits, `+/=`), inside one line of words every shell reads the same:
    `exec bash -c '<bash decodes and runs it>'`."""
    inner = script
    if mark:
        inner = (
            f"printf '%s\\n' {mark}; printf '%s\\n' {mark} >&2\n"
            f"(\n{script}\n)\n"
            f"rc=$?; printf '%s %s\\n' {mark}-end \"$rc\"\n"
            f'printf \'%s %s\\n\' {mark}-end "$rc" >&2; exit "$rc"'
        )
    payload = base64.b64encode(inner.encode()).decode("ascii")
    # a host without base64 (or whose decoding failed) exits 127 saying so, never runs half
    return f"exec bash -c 's=$(printf %s {payload} | base64 -d) || exit 127; eval \"$s\"'"


# Where what ajetd's own command printed begins and ends. The login shell runs the user's
# ~/.bashrc for every command ssh brings, and an rc that prints (a welcome, a blank line) puts
# its words before every answer: a size, an exit code, a tar archive, the trial's log, whose
# bytes the follower counts to resume after a reconnection; one that sets an EXIT trap or
# leaves a job behind prints after it. Each command prints a mark of its own first and an end
# mark last (`remote_command`); only what lies between is the command's.


def new_mark() -> str:
    """A mark no rc prints by chance (random for each command; hex never holds `@`, so the
    mark cannot overlap itself)."""
    return f"@@ajetd-{secrets.token_hex(8)}"


def run(
    spec: SshSpec, script: str, stdin: bytes | None = None, timeout: float = SSH_TIMEOUT_S
) -> subprocess.CompletedProcess[bytes]:
    """Run a bash script on the host; raise SshError when ssh itself fails (code 255 with no
    end mark: a command's own `exit 255` is its answer) or the host's shell did not run it.
    Its stdout and stderr are the script's own: what the host's rc printed around them is
    dropped, and a job it left running does not hold the call
    (`sshstream.exchange`)."""
    mark = new_mark()
    command = [*argv(spec), remote_command(script, mark)]
    parts: list[bytes] = []
    try:
        with subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        ) as proc:
            got = exchange(proc, mark, parts.append, stdin or b"", time.monotonic() + timeout)
    except TimeoutError as exc:  # (before OSError: it is one)
        raise SshError(f"ssh to {spec.target}: no answer within {timeout:.0f} s") from exc
    except OSError as exc:
        raise SshError(f"ssh: cannot run it: {exc.strerror}") from exc
    said = got.stderr.decode(errors="replace").strip().splitlines()
    last = said[-1][-500:] if said else "?"
    # ssh exits 255 when it fails (no connection, a connection lost), and so may the
    # command: its end mark says which. With the mark, 255 is the command's own status, an
    # answer as any other; without it, ssh's.
    if got.code == 255 and not got.ended:
        raise SshError(f"ssh to {spec.target} port {spec.port} failed: {last}")
    if got.code < 0 and not got.ended:  # ssh killed (SIGKILL) before the command's status
        raise SshError(
            f"ssh to {spec.target}: ended by signal {-got.code} before the command's end"
        )
    if not got.begun:  # ssh ended as such with no mark: the host's shell did not run it
        raise SshError(
            f"ssh to {spec.target}: the host's login shell did not run ajetd's command "
            f"(exit {got.code}: {last}); it needs bash and base64 there"
        )
    return subprocess.CompletedProcess(command, got.code, b"".join(parts), got.stderr)


def remote_dir(spec: SshSpec, run_id: str) -> str:
    """`$HOME/.ajetd-remote/<run_id>` on the host, as an absolute path."""
    home = run(spec, 'printf "%s" "$HOME"').stdout.decode().strip()
    if not home.startswith("/"):
        raise SshError(f"ssh to {spec.target}: the remote $HOME is {home!r}, not a path")
    return f"{home}/{REMOTE_BASE}/{run_id}"


def launch(spec: SshSpec, rdir: str, trial: int, script: str, result_dir: str) -> int:
    """Start trial `trial`'s script on the host, detached; return its pid there. A full disk
    there raises `diskfull.RemoteFullError` naming the run's folder there: the launch waits
    for room, as a launch into a full home here does, instead of failing the run."""
    q = shlex.quote
    n = trial
    sent = script.encode()
    c = "LC_ALL=C "  # the C library's words for a full disk; the program keeps its own locale
    started = run(
        spec,
        # ~/.ajetd-remote is ajetd's own: owner-only (an older one made so); results: the user's
        f"(umask 077 && {c}mkdir -p {q(rdir)} && chmod 700 {q(os.path.dirname(rdir))} {q(rdir)})"
        f" && {c}mkdir -p {q(result_dir)} && cd {q(rdir)} || exit 1\n"
        f"if [ -e trial-{n}.pid ]; then cat trial-{n}.pid; exit 0; fi\n"
        f"{c}cat > trial-{n}.sh && chmod 700 trial-{n}.sh && {c}: > trial-{n}.log && "
        f"touch trial-{n}.go || exit 1\n"
        # all of it, or no launch: an rc that reads stdin takes the script's first line
        f'[ "$(wc -c < trial-{n}.sh)" -eq {len(sent)} ] || '
        f'{{ echo "trial-{n}.sh arrived cut short (its first bytes read by the login shell?)" >&2;'
        f" rm -f trial-{n}.sh trial-{n}.go; exit 1; }}\n"
        # `setsid -f`, not `&`: a background job of a non-interactive shell has SIGINT
        # ignored, and neither bash nor Python would then let Ctrl-C stop the program
        f"setsid -f bash -c 'echo $$ > trial-{n}.pid.tmp && mv trial-{n}.pid.tmp trial-{n}.pid "
        f"&& exec bash trial-{n}.sh' > trial-{n}.log 2>&1 < /dev/null\n"
        f"for i in $(seq 100); do [ -e trial-{n}.pid ] && break; sleep 0.05; done\n"
        f"cat trial-{n}.pid\n",
        stdin=sent,
    )
    text = started.stdout.decode().strip()
    if started.returncode != 0 or not text.isdigit():
        err = started.stderr.decode(errors="replace").strip()
        full = diskfull.remote_full(err, f"{rdir}/trial-{n}.sh", spec.target)
        if full is not None:
            raise full
        raise SshError(f"could not start trial {n} on {spec.target}: {err or text or '?'}")
    return int(text)


def stream_script(rdir: str, trial: int, offset: int) -> str:
    """Print the trial's output from byte `offset` on until it ends; exit 0 when its exit
    file is complete, VANISHED when its process is gone without one."""
    q, n = shlex.quote, trial
    # the script writes its exit line straight into the file: complete once the line has its
    # newline, which is when `read` (a shell builtin, no process) succeeds
    complete = f"read -r _ 2>/dev/null < trial-{n}.exit"
    return (
        f"cd {q(rdir)} || exit {GONE}\n"
        f"tail -c +{offset + 1} -F trial-{n}.log 2>/dev/null & t=$!\n"
        f"pid=$(cat trial-{n}.pid)\n"
        f"until {complete}; do\n"
        '  if ! kill -0 "$pid" 2>/dev/null; then\n'
        f"    sleep 0.5; {complete} || {{ kill $t; exit {VANISHED}; }}\n"
        "  fi\n"
        "  sleep 0.2\n"
        "done\n"
        "sleep 0.3; kill $t 2>/dev/null; exit 0\n"
    )


def finish_script(rdir: str, trial: int, offset: int) -> str:
    """The output after byte `offset` that the stream may have missed, after a line with
    the exit file's content."""
    q, n = shlex.quote, trial
    return (
        f"cd {q(rdir)} || exit {GONE}\n"
        f'printf "%s\\n" "$(cat trial-{n}.exit 2>/dev/null)"\n'
        f"tail -c +{offset + 1} trial-{n}.log\n"
    )


# The run's processes on the host: its AJETD_RUN_ID and AJETD_REMOTE=1 (the second keeps this
# machine's follower out when "remote" is this machine, as in the tests).
REMOTE_MARK = ("AJETD_REMOTE", "1")
_MARKED = (
    "for f in /proc/[0-9]*/environ; do p=${{f#/proc/}}; p=${{p%/environ}}; "
    '[ "$p" = "$$" ] && continue; '
    'grep -qzx -F {marker} "$f" 2>/dev/null && grep -qzx -F AJETD_REMOTE=1 "$f" 2>/dev/null '
    '&& echo "$p"; done'
)


def signal(spec: SshSpec, rdir: str, trial: int, run_id: str, name: str) -> int:
    """INT, TERM or KILL to the remote trial: INT and TERM to its process group (as Ctrl-C
    would) and to every process that carries its AJETD_RUN_ID; KILL spares the trial script,
    which records the exit status. Returns how many processes were signalled."""
    q = shlex.quote
    marker = q(f"AJETD_RUN_ID={run_id}")
    script = (
        f"cd {q(rdir)} 2>/dev/null || exit 0\n"
        f"pg=$(cat trial-{trial}.pid 2>/dev/null); n=0\n"
        f'[ -n "$pg" ] && [ {q(name)} != KILL ] && kill -{name} -- "-$pg" 2>/dev/null && n=1\n'
        f"for p in $({_MARKED.format(marker=marker)}); do\n"
        '  [ "$p" = "$pg" ] && continue\n'
        f'  kill -{name} "$p" 2>/dev/null && n=$((n + 1))\n'
        "done\n"
        'echo "$n"\n'
    )
    out = run(spec, script).stdout.decode().strip()
    return int(out) if out.isdigit() else 0


def processes(spec: SshSpec, run_id: str) -> str:
    """`ps` lines of the run's processes on the host (for `ajetd diag`)."""
    marker = shlex.quote(f"AJETD_RUN_ID={run_id}")
    script = (
        f"pids=$({_MARKED.format(marker=marker)} | paste -sd, -)\n"
        '[ -z "$pids" ] && exit 0\n'
        'ps -o pid,ppid,pcpu,rss,stat,args -p "$pids"\n'
    )
    return run(spec, script).stdout.decode(errors="replace")


def reap(spec: SshSpec, run_id: str, grace_s: float = 2.0) -> int:
    """After a trial ended: TERM what is left of the run on the host, KILL it after
    `grace_s`; returns how many were left."""
    marker = shlex.quote(f"AJETD_RUN_ID={run_id}")
    script = (
        f"left=$({_MARKED.format(marker=marker)})\n"
        '[ -z "$left" ] && { echo 0; exit 0; }\n'
        "kill -TERM $left 2>/dev/null; sleep " + f"{grace_s:g}\n"
        "kill -KILL $left 2>/dev/null\n"
        'echo "$left" | wc -l\n'
    )
    out = run(spec, script, timeout=SSH_TIMEOUT_S + grace_s).stdout.decode().strip()
    return int(out) if out.isdigit() else 0


def read_from(spec: SshSpec, path: str, offset: int, limit: int) -> tuple[int, bytes] | None:
    """The remote file's size and at most `limit` of its bytes after `offset` (from its start
    if it shrank): `head -c` cuts it there, so no more crosses the connection or is held
    here, however large the file; None when it does not exist."""
    q = shlex.quote(path)
    done = run(
        spec,
        f'[ -f {q} ] || exit 7\nsize=$(wc -c < {q}); echo "$size"\n'
        f'if [ "$size" -ge {offset} ]; then tail -c +{offset + 1} {q}; else cat {q}; fi'
        f" | head -c {int(limit)}\n",
    )
    if done.returncode == 7:
        return None
    head, _, body = done.stdout.partition(b"\n")
    return (int(head) if head.strip().isdigit() else len(body)), body


def same_dir(spec: SshSpec, local_dir: Path, run_id: str) -> bool:
    """Whether `local_dir` is the same folder on the host (a shared filesystem): a marker
    written here is looked for there."""
    marker = local_dir / f".ajetd-shared-{run_id}"
    local_dir.mkdir(parents=True, exist_ok=True)
    mark(marker)  # being there is all it says: no write that a full disk could refuse
    try:
        return run(spec, f"test -e {shlex.quote(str(marker))}").returncode == 0
    finally:
        marker.unlink(missing_ok=True)


def pull(spec: SshSpec, base: str, paths: list[str], into: Path) -> str:
    """Copy remote `paths` (relative to `base`) into `into` with tar over the shared
    connection, never over a file that is already here; returns what tar said (empty when all
    went well). A copy that has not ended within `pull_deadline_s` of its size is ended,
    and raises SshError as a host that does not answer (what came is kept)."""
    if not paths:
        return ""
    names = " ".join(shlex.quote(p) for p in paths)
    into.mkdir(parents=True, exist_ok=True)
    size = _size_there(spec, base, names)
    limit = pull_deadline_s(size)
    mark = new_mark()
    script = f"cd {shlex.quote(base)} && tar -cf - -- {names}"
    # tar's stderr into a file, read at the end: a pipe left unread while the archive flows
    # would hold it once it had said 64 KiB (a note for each of many files)
    with (
        tempfile.TemporaryFile() as tar_said,
        subprocess.Popen(
            [*argv(spec), remote_command(script, mark)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as sender,
        subprocess.Popen(
            ["tar", "--skip-old-files", "-xf", "-", "-C", str(into)],
            stdin=subprocess.PIPE,
            stderr=tar_said,
        ) as untar,
    ):
        # the archive alone: what the host's rc printed before or after it is not tar's
        assert untar.stdin is not None
        ssh_said = b""
        stalled = False
        try:
            got = exchange(sender, mark, untar.stdin.write, deadline=time.monotonic() + limit)
            ssh_said = got.stderr if got.begun else got.stderr or b"the host did not run tar"
        except TimeoutError:  # (before BrokenPipeError's OSError kin) ssh ended by exchange
            stalled = True
        except BrokenPipeError:  # tar stopped reading (a broken archive): it says why, and
            sender.kill()  # nothing reads the rest: ssh would wait on its pipe for ever
        finally:
            with contextlib.suppress(BrokenPipeError):
                untar.stdin.close()
        late = ""
        for proc in (sender, untar):
            try:
                proc.wait(timeout=PULL_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                late = f"copying back took over {PULL_TIMEOUT_S:.0f} s and was ended"
        tar_said.seek(0)
        said = ssh_said[-64 * 1024 :] + tar_said.read(64 * 1024)
    if stalled:
        raise SshError(
            f"ssh to {spec.target}: no answer within {limit:.0f} s while copying back "
            f"{names} from {base} ({size_text(size)} there); what came is kept"
        )
    return "\n".join(t for t in (said.decode(errors="replace").strip(), late) if t)


class NvidiaSmiError(AjetdError):
    """The host has `nvidia-smi`, and it failed (a driver not loaded, NVML unable to talk to
    it, no device): its GPUs cannot be read, which is not the same as having none."""


NO_SMI = 127  # the shell's code for a command not found: this host has no nvidia-smi


def pull_deadline_s(size: int) -> float:
    """How long copying back `size` bytes may take (PULL_FLOOR_S, PULL_MIN_RATE)."""
    return max(PULL_FLOOR_S, size / PULL_MIN_RATE)


def _size_there(spec: SshSpec, base: str, names: str) -> int:
    """The bytes `names` (quoted, relative to `base`) take on the host, as `du` counts them
    (0 where it cannot: the copy then gets the floor's time, and tar says what is missing)."""
    done = run(
        spec,
        f"cd {shlex.quote(base)} && du -sk -- {names} 2>/dev/null | "
        "awk '{s += $1} END {print s + 0}'",
        timeout=PULL_FLOOR_S,
    )
    text = done.stdout.decode(errors="replace").strip()
    return int(text) * 1024 if text.isdigit() else 0


def gpus(spec: SshSpec) -> list[GpuSample] | None:
    """The host's GPUs from `nvidia-smi` over the shared connection; None when it has no
    `nvidia-smi`. One that is there and fails (exit 9: it cannot talk to the driver; 255, an
    unknown error) raises NvidiaSmiError with its code and last line: those GPUs are not
    seen, never read as none."""
    done = run(
        spec,
        f"command -v nvidia-smi >/dev/null || exit {NO_SMI}\n"
        # `|| exit`: with nvidia-smi's own status, its words unmixed with the apps' query's
        f"nvidia-smi --query-gpu={SMI_GPU_FIELDS} --format=csv,noheader,nounits || exit\n"
        "echo '--apps--'\n"
        f"nvidia-smi --query-compute-apps={SMI_APP_FIELDS} --format=csv,noheader,nounits\n",
    )
    if done.returncode == NO_SMI:
        return None
    if done.returncode != 0:
        # NVIDIA's message ("NVIDIA-SMI has failed because it couldn't communicate with the
        # NVIDIA driver...") comes on stdout; where stderr says something, that is the error
        said = [*_lines(done.stdout), *_lines(done.stderr)]
        last = said[-1][:300] if said else "it said nothing"
        raise NvidiaSmiError(f"nvidia-smi on {spec.target} failed (exit {done.returncode}): {last}")
    gpus_csv, _, apps_csv = done.stdout.decode(errors="replace").partition("--apps--")
    return parse_nvidia_smi(gpus_csv, apps_csv)


def _lines(data: bytes) -> list[str]:
    """The lines of a command's output that say something (the last 64 KiB of it)."""
    text = data[-64 * 1024 :].decode(errors="replace")
    return [line.strip() for line in text.splitlines() if line.strip()]


@dataclass(frozen=True)
class _Facts:
    """What one call learns of a path on the host."""

    exists: bool
    isdir: bool
    isfile: bool
    executable: bool
    size: int | None  # a regular file's
    realpath: str


# One call for every question about a path: the checks asked them one call each (25 calls for
# one remote run's admission and launch, each running the user's ~/.bashrc there: 0.2 s a
# call with `pyenv init` in it on the test machine, a round trip each on a real network).
_FACTS_SCRIPT = (
    'p=$1; e=0; d=0; f=0; x=0; s=-; [ -e "$p" ] && e=1; [ -d "$p" ] && d=1\n'
    '[ -f "$p" ] && f=1 && s=$(wc -c < "$p" 2>/dev/null || echo -); [ -x "$p" ] && x=1\n'
    'printf "\\n@@%s %s %s %s %s %s\\n" "$2" $e $d $f $x "${s:--}"; realpath -m -- "$p"'
)


CLOCK_SLACK_S = 120.0  # how far an SSH host's clock may be behind this one's for `fresh`


class RemoteFs:
    """The host's filesystem for the blueprint checks over the shared connection; raises
    SshError at once when the host does not answer. Each path is asked about once (all of
    its facts in one call) for the life of this object, which callers keep for one check or
    one action: a write through it forgets what it learned."""

    def __init__(self, spec: SshSpec) -> None:
        self.spec = spec
        self._known: dict[str, _Facts] = {}
        run(spec, "true")  # a host that does not answer is said at once

    def _facts(self, path: str) -> _Facts:
        known = self._known.get(path)
        if known is None:
            mark = f"\n@@{secrets.token_hex(8)} "  # no path can hold it: the answer's start
            script = f"set -- {shlex.quote(path)} {mark[3:-1]}\n{_FACTS_SCRIPT}"
            out = run(self.spec, script).stdout.decode(errors="surrogateescape")
            head, _, real = out.partition(mark)[2].partition("\n")
            words = head.split(" ")
            if mark not in out or len(words) != 5:
                said = out[-200:]
                raise SshError(f"ssh to {self.spec.target}: no answer about {path}: {said!r}")
            real = real.removesuffix("\n")  # realpath's own newline; a path may end in one
            exists, isdir, isfile, executable = (word == "1" for word in words[:4])
            size = int(words[4]) if words[4].isdigit() else None
            known = _Facts(exists, isdir, isfile, executable, size, real or path)
            self._known[path] = known
        return known

    def expand(self, path: str) -> str:
        return path  # `~` would be this machine's home: remote paths must be absolute

    def isdir(self, path: str) -> bool:
        return self._facts(path).isdir

    def isfile(self, path: str) -> bool:
        return self._facts(path).isfile

    def exists(self, path: str) -> bool:
        return self._facts(path).exists

    def executable(self, path: str) -> bool:
        return self._facts(path).executable

    def matches(self, pattern: str) -> bool:
        """Whether a path matches the glob there: bash's own expansion (its literal parts
        quoted, `pathglob.shell_form`)."""
        script = f"shopt -s nullglob; set -- {pathglob.shell_form(pattern)}; [ $# -gt 0 ]"
        return run(self.spec, script).returncode == 0

    def fresh(self, pattern: str, since: float) -> bool:
        """Whether a path matching `pattern` there was written at or after `since` (less
        `CLOCK_SLACK_S`: the host's clock is not this machine's), by GNU find."""
        form = pathglob.shell_form(pattern) if pathglob.is_glob(pattern) else shlex.quote(pattern)
        after = int(since - CLOCK_SLACK_S)
        script = (
            f'shopt -s nullglob; set -- {form}; for f; do find "$f" -maxdepth 2 '
            f"-newermt @{after} -print -quit 2>/dev/null | grep -q . && exit 0; done; exit 1"
        )
        return run(self.spec, script).returncode == 0

    def realpath(self, path: str) -> str:
        return self._facts(path).realpath

    def read_text(self, path: str, limit: int = CONFIG_MAX_BYTES) -> str:
        """The file's text; one that is not a regular file there (a FIFO would hold `cat`
        until ssh's timeout) is refused, as `LocalFs.read_text` refuses it here, and one
        larger than `limit` is a TooLargeError: at most `limit` + 1 bytes travel."""
        q = shlex.quote(path)
        done = run(self.spec, f"[ ! -e {q} ] || [ -f {q} ] || exit 9\nhead -c {limit + 1} {q}")
        if done.returncode == 9:
            raise OSError(f"{path}: not a regular file")
        if done.returncode != 0:
            raise OSError(done.stderr.decode(errors="replace").strip() or "cannot read it")
        if len(done.stdout) > limit:
            raise TooLargeError(  # its size is not known: the rest never came
                f"larger than the {size_text(limit)} such a file may hold: not read"
            )
        return config_text(done.stdout)

    def size(self, path: str) -> int | None:
        """The regular file's size; None where there is none (nothing, a FIFO, a folder)."""
        return self._facts(path).size

    def write_text(self, path: str, text: str) -> None:
        """As `store.write_atomic` does here: a temporary file beside `path`, synced, renamed
        over it (a link at `path` is replaced, not followed); none is left behind on an error.
        Renamed only once all of `text` is there: an ssh that dies on the way (killed at its
        timeout, a dropped connection) ends the host's input early, not the script."""
        q = shlex.quote
        folder, name = os.path.split(path)
        data = text.encode("utf-8")
        script = (
            "export LC_ALL=C\n"  # the C library's words for a full disk (diskfull.remote_full)
            f"set -e; t=$(mktemp {q(os.path.join(folder or '.', '.' + name + '.XXXXXX'))})\n"
            "trap 'rm -f \"$t\"' EXIT\n"
            f'cat > "$t"; n=$(wc -c < "$t"); w={len(data)}\n'
            '[ $n -eq $w ] || { echo "cut short: $n of $w bytes" >&2; exit 1; }\n'
            'chmod 644 "$t"; sync "$t" 2>/dev/null || :\n'
            f'mv -f "$t" {q(path)}; trap - EXIT\n'
        )
        self._known.clear()
        done = run(self.spec, script, stdin=data)
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace")
            full = diskfull.remote_full(said, path, self.spec.target)
            if full is not None:  # waited for, as a full folder here is
                raise full
            why = said.strip().splitlines()
            raise OSError(f"cannot write {path} on {self.spec.target}: {why[-1] if why else '?'}")


def spec_json(spec: SshSpec) -> str:
    """The spec as the follower takes it on its command line."""
    return json.dumps(
        {
            "host": spec.host,
            "user": spec.user,
            "port": spec.port,
            "identity_file": spec.identity_file,
            "options": [list(pair) for pair in spec.options],
        }
    )


def spec_from_json(text: str) -> SshSpec:
    data = json.loads(text)
    return SshSpec(
        data["host"],
        data["user"],
        int(data["port"]),
        data["identity_file"],
        tuple((str(k), str(v)) for k, v in data["options"]),
    )
