"""The exact script a trial runs as its tmux pane's own process; pure text rendering.

Why a script and not keystrokes: keys sent to a fresh shell before it is ready are lost. The
script is the pane's process from the start and waits for a `go` file, so the daemon can set
`remain-on-exit` and arm `pipe-pane` before the program prints its first byte. It traps INT and
TERM (handlers, not ignores, so the program itself still gets default dispositions) so that a
user's Ctrl-C or ajetd's stop signals end the program while the script survives to record the
exact exit status. SIGHUP (the session or server killed behind ajetd's back) writes a `hup`
marker instead of an exit file: no exit is recorded, which is how a `lost` run is told from a
failed one, and the marker wakes the daemon at once. The program keeps the user's umask; the
files the script writes itself (exit, hup, sigint) are ajetd's own and owner-only (`umask 077`
once the program is started or ended, never before).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from ajetd.core import resultfiles
from ajetd.core.model import Run
from ajetd.core.redirect import followed

# How every line ajetd itself prints into a trial's output begins (the script's banner and exit
# line, the SSH and Slurm followers' notes): never the program's, so never diagnosed.
OWN_LINE_PREFIX = "[ajetd] "
EXIT_OPTION = "@ajetd_exit"  # a pane option: the exit line when the exit file cannot be written
STOP_CODE = "stop_code"  # the script's note of an INT (130) or TERM (143) taken before the program


@dataclass(frozen=True)
class MetricSource:
    """How a run reads its metrics (`Run.kind`, `metric`, `val_path`, `val_offset`): from its
    output (NeMo-RL) or from its val file, counted from a byte on (AgentJet)."""

    kind: str = ""
    metric: str = ""
    val_file: str = ""
    val_offset: int = 0


@dataclass(frozen=True)
class TrialSpec:
    """Everything a trial's script needs; all paths absolute."""

    run_id: str
    trial: int
    command: str  # the user's launch command, run by bash as written (on purpose; `SHELL`)
    codebase_dir: str
    venv_dir: str
    result_dir: str
    go_file: str
    exit_file: str
    hup_file: str
    env: tuple[tuple[str, str], ...] = ()
    prefix: tuple[str, ...] = ()  # argv put before `bash -c COMMAND` (e.g. proxychains4 -q)
    # A Slurm batch job: INT and TERM reach only this script (`--signal=B:`, `scancel
    # --batch`), so it passes them on to the program's own process group.
    forward_signals: bool = False
    # A FIFO the daemon writes to once the go file is there: the script blocks on it (bash's
    # `read -t`, no process started) instead of polling, and goes at once. Empty: polling.
    wake_fifo: str = ""
    # exp_venv_exe itself: where the venv's `bin/python` is not this file (a system or conda
    # python, `/usr/bin/python3`), a bare `python`/`python3` is made to run it (_venv_python)
    venv_exe: str = ""
    # how the run reads its metrics, kept in the script as plain shell variables (never
    # exported, so the program sees nothing) for a rebuild to read back as the run had it
    metrics: MetricSource = MetricSource()
    # the spare of the trial's log (`trialfiles.spare_log`): at its end the script asks the
    # log's writer to check its folder now, through the FIFOs `writer_fifos` names
    log_spare: str = ""
    # the daemon's environment (`environ_file_bytes`) the pane's script starts from, all it
    # inherited from the tmux server cleared first (`_daemon_environ`); empty: the script
    # keeps what it inherits (an SSH host's login, a Slurm job's: the job's own)
    env_file: str = ""


PIPES = ".pipes"  # the run folder's sub-folder of FIFOs (`pipe_path`)


def pipe_path(beside: str, name: str) -> str:
    """Where a trial's FIFO named `name` lives: in the `.pipes` folder beside `beside` (a file
    of the run's folder), never among the run's files, where `cat runs/<id>/*`, `head *` or a
    script reading every file of a run blocked on it for ever (walk87 F14)."""
    return os.path.join(os.path.dirname(beside), PIPES, name)


def writer_fifos(spare: str) -> tuple[str, str]:
    """The FIFOs of a trial's spare log (in `PIPES`) through which its end asks the log's
    writer (`tmux.pipe_writer`) to check now that the log's folder is still there, and it
    answers once it has (moved the output where it was not: `moved_note`)."""
    name = os.path.basename(spare)
    return pipe_path(spare, f"{name}.check"), pipe_path(spare, f"{name}.checked")


WRITER_ANSWER_S = 1  # the longest a trial's end waits for its log's writer to answer


def take_stale_answer(fd: int) -> str:
    """bash that takes one waiting answer from the answer FIFO open on `fd`, if there is one
    (bounded: the writer and a trial's end may both reach for the same one): the writer
    before it answers (one at most waits), a trial's end before it asks."""
    return f"read -r -t 0 -u {fd} && read -r -t 0.1 -u {fd} _"


WRITER_ASK = "check"  # the line that asks it (any other line in its wait pipe is cat's error)


def _ask_writer(spec: TrialSpec) -> list[str]:
    """Ask the log's writer to check its folder once the exit file is written, before the
    exit line (`writer_ask_lines`); a trial without the FIFOs asks nothing."""
    return writer_ask_lines(spec.log_spare) if spec.log_spare else []


def writer_ask_lines(spare: str) -> list[str]:
    """The trial script's lines that ask its log's writer to check its folder now and wait
    for its answer. Unasked it checks every CHECK_EVERY_S (60 s), and a trial ending
    meanwhile had its end read, its metrics and reports written, from a log that a removed
    or replaced result dir no longer reached (the output then still in the writer's old
    file, the reports written through a link put in the dir's place). The FIFOs are opened
    read-write, so nothing blocks where the writer is gone; an answer not come in
    WRITER_ANSWER_S (a writer of an older ajetd) is not waited for."""
    ask, answer = (shlex.quote(f) for f in writer_fifos(spare))
    return [
        f"if [ -p {ask} ] && [ -p {answer} ] && exec 8<> {answer}; then",
        # an answer to the daemon's ask that nobody took (the writer keeps one at most) is
        # taken first: read as this one's, the exit file came before the writer had looked
        # (bounded: the writer may take it back itself in between)
        f"  {take_stale_answer(8)}",
        f"  {{ echo {WRITER_ASK} 1<> {ask}; read -r -t {WRITER_ANSWER_S} -u 8 _; }} 2>/dev/null",
        "  exec 8<&-",
        "fi",
    ]


RELEASE_WAIT_S = 10  # the longest a pane's script stays after its exit line, unreleased
RELEASE = b"bye\n"  # what the daemon writes into the wake FIFO to release it (any line does)


def _hold_open(spec: TrialSpec) -> list[str]:
    """Before the exit line: the wake FIFO opened again (read-write: never blocks), so that
    the script can stay until the daemon has that line in the log (`_held`). Opened before
    the line is printed, the daemon's release (written once it sees the line) always finds
    it open. Only in a tmux pane (`$TMUX_PANE`), with a FIFO (a script elsewhere, a Slurm
    job's or an SSH host's, has nobody to release it); a HUP from here on (the session
    closed) only ends the wait: the exit is on record, no `hup` marker after it."""
    if not spec.wake_fifo:
        return []
    wake = shlex.quote(spec.wake_fifo)
    return [
        "held=",
        f'if [ -n "$TMUX_PANE" ] && [ -p {wake} ] && exec 3<> {wake}; then',
        """  held=1; trap 'exit "$rc"' HUP""",
        "fi 2>/dev/null",
    ]


def _held() -> list[str]:
    """After the exit line: stay (bash's `read -t`, no process) until the daemon releases
    the script (`trials.release_script`, once that line is in the log) or RELEASE_WAIT_S
    pass. tmux 3.3a drops what the pane printed last when its process ends first: at the
    child's exit it closes the pane at once where its pty reads empty (FIONREAD), and the
    kernel moves a pty's output to that read side later, in a worker; under load a
    program's last kilobytes (and this line) were not there yet, and were lost to the log
    and to the pane's history (4 trial ends in 50 at load 12 here). Kept alive, the pane is
    read to its end: the line, and all before it, reach tmux and the log."""
    return ['[ -n "$held" ] && read -r -t ' + f"{RELEASE_WAIT_S} -u 3 _"]


def _venv_python(spec: TrialSpec) -> list[str]:
    """Lines that make a bare `python` (and `python3`) the blueprint's python when the venv's
    `bin/python` is another file or none (`-ef`: the same file, links followed; a test, no
    process): links to it in `bin/` beside the go file, first on PATH. A venv's own python
    passes the test, so a venv is used exactly as `source bin/activate` leaves it."""
    if not spec.venv_exe:
        return []
    q = shlex.quote
    shim = '"${go%/*}/bin"'
    return [
        f"venv_exe={q(spec.venv_exe)}",
        'if ! [ "$VIRTUAL_ENV/bin/python" -ef "$venv_exe" ]; then',
        f'  mkdir -m 700 -p -- {shim} && ln -sfn -- "$venv_exe" {shim}/python &&',
        f'    ln -sfn -- "$venv_exe" {shim}/python3 && export PATH={shim}":$PATH"',
        "fi",
    ]


# What a pane's script keeps of its own environment, never the daemon's: tmux's (the pane and
# server it runs in, its terminal type) and what bash sets itself (its folder, its level).
PANE_OWN = frozenset({"TMUX", "TMUX_PANE", "TERM", "PWD", "OLDPWD", "SHLVL", "_"})
_CLEAN = "--ajetd-env"  # the script's first argument once it runs in the daemon's environment


def environ_file_bytes(environ: Mapping[bytes, bytes]) -> bytes:
    """An environment as a trial's script loads it (`TrialSpec.env_file`): each variable's
    `NAME=VALUE`, NUL-terminated (any value, newlines and all, survives), but `PANE_OWN`."""
    own = {name.encode() for name in PANE_OWN}
    return b"".join(
        name + b"=" + value + b"\0" for name, value in sorted(environ.items()) if name not in own
    )


def _daemon_environ(spec: TrialSpec) -> list[str]:
    """Lines that put the script in the daemon's environment (DESIGN §3), not the tmux
    server's: a pane inherits the global environment of whoever started the server (days ago,
    another shell: a stale PYTHONPATH importing another checkout, an old conda PATH, no
    WANDB_API_KEY the daemon has; walk98 F11). The script starts itself again with `exec -c`
    (bash's own: an empty environment, no process between) and tmux's TMUX, TMUX_PANE and TERM
    as arguments, then exports each variable of the env file. An exported function
    (`BASH_FUNC_module%%`, Lmod's) is defined and exported again; a name bash cannot export
    (`A.B`) is left out. A file it cannot read: the script says so in the log and keeps the
    environment it has (the run is never lost to it)."""
    if not spec.env_file:
        return []
    said = (
        f"{OWN_LINE_PREFIX}cannot read the environment file %s: "
        "the trial keeps the environment tmux gave it\\n"
    )
    drop = "'%%'"
    return [
        f"ajetd_env={shlex.quote(spec.env_file)}",
        f'if [ "${{1-}}" != {_CLEAN} ]; then',
        '  if [ -r "$ajetd_env" ] && [ -f "$ajetd_env" ]; then',
        f'    exec -c "$BASH" "$0" {_CLEAN} "${{TMUX-}}" "${{TMUX_PANE-}}" "${{TERM-}}"',
        "  fi",
        f'  printf {shlex.quote(said)} "$ajetd_env"',
        "else",
        '  [ -n "$2" ] && export TMUX="$2"',
        '  [ -n "$3" ] && export TMUX_PANE="$3"',
        '  [ -n "$4" ] && export TERM="$4"',
        "  while IFS= read -r -d '' ajetd_kv; do",
        '    case "$ajetd_kv" in',
        "      BASH_FUNC_*%%=*)",
        "        ajetd_fn=${ajetd_kv%%=*}; ajetd_fn=${ajetd_fn#BASH_FUNC_}",
        f"        ajetd_fn=${{ajetd_fn%{drop}}}",
        "        [[ $ajetd_fn =~ ^[A-Za-z_][A-Za-z0-9_.:-]*$ ]] &&",
        '          eval "$ajetd_fn ${ajetd_kv#*=}" && export -f -- "$ajetd_fn" ;;',
        '      *) export -- "$ajetd_kv" ;;',
        "    esac 2>/dev/null",
        '  done < "$ajetd_env"',
        "  unset ajetd_kv ajetd_fn",
        "  set --",
        "fi",
    ]


def render_trial_script(spec: TrialSpec) -> str:
    """Return the bash script for one trial. Every value but the command is shell-quoted."""
    q = shlex.quote
    exports = [
        f"export VIRTUAL_ENV={q(spec.venv_dir)}",
        'export PATH="$VIRTUAL_ENV/bin:$PATH"',
        *_venv_python(spec),
        # a folder with no pyvenv.cfg is no venv (a system python's /usr, a conda env): its
        # bin stays first on PATH (as `conda activate` puts it), but VIRTUAL_ENV would make
        # uv and other tools take /usr for the active venv (and install into it)
        '[ -f "$VIRTUAL_ENV/pyvenv.cfg" ] || unset VIRTUAL_ENV',
        "unset PYTHONHOME",
        # where a `cd name` of the command goes is read off the blueprint (`core.workdir`):
        # a CDPATH inherited from the daemon's or a host's shell would send it elsewhere
        # unseen; the blueprint's `env:` sets one below where it is meant
        "unset CDPATH",
        f"export AJETD_RUN_ID={q(spec.run_id)}",
        f"export AJETD_RESULT_DIR={q(spec.result_dir)}",
        f"export AJETD_TRIAL={spec.trial}",
        "export PYTHONUNBUFFERED=1",
    ]
    exports += [f"export {name}={q(value)}" for name, value in spec.env]
    banner = f"{OWN_LINE_PREFIX}run {spec.run_id} trial {spec.trial}: {spec.command}"
    return "\n".join(
        [
            "#!/usr/bin/env bash",
            f"# ajetd: run {spec.run_id}, trial {spec.trial}. Generated; the pane's own process.",
            *_daemon_environ(spec),
            f"hup_file={q(spec.hup_file)}",
            f"go={q(spec.go_file)}",
            f"exit_file={q(spec.exit_file)}",
            # INT and TERM before the program runs are kept, and it is then never started:
            # a stop sent as the trial starts (its banner is in the log, the program not yet
            # forked) was caught here and lost, and the program ran on until the SIGTERM 30 s
            # later; `:` would do for the rest, the program gets its own dispositions. (Between
            # the check below and bash's fork of the program a signal is still caught here:
            # the SIGTERM of the stop's grace ends that program; the Slurm path passes it on.)
            f"{STOP_CODE}=",
            f"trap '{STOP_CODE}=130{_slurm_warning(spec)}' INT",
            f"trap '{STOP_CODE}=143' TERM",
            # the time without starting a process (bash 5's clock; `date` before), "." always
            "now() { t=${EPOCHREALTIME:-$(date +%s.%N)}; t=${t/,/.}; }",
            """trap 'umask 077; now; printf "%s\\n" "$t" > "$hup_file"; exit 129' HUP""",
            *_metric_lines(spec.metrics),
            *_wait_for_go(spec),
            *exports,
            f"printf '%s\\n' {q(banner)}",
            f"if cd -- {q(spec.codebase_dir)}; then",
            f'  if [ -n "${STOP_CODE}" ]; then rc=${STOP_CODE}; else',
            *("  " + line for line in _run_lines(spec)),
            "  fi",
            "else",
            "  rc=126",
            "fi",
            # the program ran with the user's umask; what the script writes is ajetd's own
            "umask 077",
            'now; ended="$rc $t"',
            # one write by bash itself, no process: the record is complete once its newline
            # is there (`exitfile.parse_exit_file`), and its close wakes the daemon. Before the exit
            # line, not after it: that line wakes tmux and the log's writer, which took the
            # CPU the daemon's wake-up needed (about a millisecond on two cores), and where
            # the pane's output is behind (a flooding program) its printf waits for tmux to
            # read: the end waited with it. What reads the log for the end waits for that
            # line (`await_output`, bounded)
            '{ printf \'%s\\n\' "$ended" > "$exit_file"; } 2>/dev/null ||',
            # a full disk: the status goes to tmux's memory instead (the pane's own option);
            # the empty or cut file is removed first, so no reader waits on it
            f'  {{ rm -f "$exit_file"; tmux set-option -p -t "$TMUX_PANE" {EXIT_OPTION} '
            '"$ended"; } 2>/dev/null',
            # the writer asked to check its folder after the exit file, before the exit line:
            # whatever reads the end's log waits for that line (`await_output`), and the
            # record of a clean exit reads none, so it waits for no round trip to the writer
            *_ask_writer(spec),
            *_hold_open(spec),
            f"printf '{OWN_LINE_PREFIX}trial %s exited with code %s\\n' {spec.trial} " + '"$rc"',
            *_held(),
            'exit "$rc"',
            "",
        ]
    )


_OWN = "ajetd_"  # the script's variables that say how the run reads its metrics


def _metric_lines(source: MetricSource) -> list[str]:
    """`ajetd_kind=...` and the rest, each field that has a value."""
    given = ((name, value) for name, value in asdict(source).items() if value not in ("", 0))
    return [f"{_OWN}{name}={shlex.quote(str(value))}" for name, value in given]


def _metric_source(own: dict[str, str]) -> MetricSource:
    """What `_metric_lines` wrote, read back (nothing: a script of an older ajetd)."""
    offset = own.get("val_offset", "")
    return MetricSource(
        own.get("kind", ""),
        own.get("metric", ""),
        own.get("val_file", ""),
        int(offset) if offset.isdigit() and len(offset) <= 18 else 0,
    )


def _wait_for_go(spec: TrialSpec) -> list[str]:
    """Wait for the go file: woken through the FIFO where there is one (a check a second
    besides, should a wake-up be missed), else by polling, fast at first."""
    if spec.wake_fifo:
        return [
            f"exec 3<> {shlex.quote(spec.wake_fifo)}",
            'until [ -e "$go" ]; do read -r -t 1 -u 3 _; done',
            "exec 3<&-",
        ]
    return [
        "n=0",
        'until [ -e "$go" ]; do',
        '  if [ "$n" -lt 600 ]; then sleep 0.02; else sleep 1; fi; n=$((n + 1))',
        "done",
    ]


def _slurm_warning(spec: TrialSpec) -> str:
    """A Slurm batch job's INT is Slurm's warning before its time limit unless ajetd sent it:
    noted beside the exit file (`Host.signalled`), also when it comes before the program."""
    if not spec.forward_signals:
        return ""
    return '; (umask 077; date +%s > "$exit_file.sigint")'


# How the command is run: `pipefail`, so that a pipeline's status is its program's and not
# its last filter's: `python train.py 2>&1 | tee train.log`, the usual way to keep a log,
# reported a traceback's exit 1 as tee's 0, `succeeded` (walk 86). The rightmost failure
# wins, so a program killed by a `| head` that stopped reading says so (141, SIGPIPE).
SHELL = ("bash", "-o", "pipefail", "-c")


def _run_lines(spec: TrialSpec) -> list[str]:
    command = followed(spec.command)[0]  # `> run.log 2>&1` reaches the terminal too (F5)
    run = " ".join(shlex.quote(w) for w in (*spec.prefix, *SHELL, command))
    if not spec.forward_signals:
        return [f"  {run}", "  rc=$?"]
    # job control gives the program its own group, with SIGINT not ignored (a background job
    # of a non-interactive shell would ignore it); `wait` returns early on each passed signal
    return [
        "  set -m",
        f"  {run} &",
        "  child=$!",
        # the INT is Slurm's warning before its time limit unless ajetd sent it: noted
        '  trap \'umask 077; date +%s > "$exit_file.sigint"; '
        """kill -INT -- "-$child" 2>/dev/null' INT""",
        """  trap 'kill -TERM -- "-$child" 2>/dev/null' TERM""",
        # a signal that came after the check for one and before these traps: passed on
        f'  case "${STOP_CODE}" in 130) kill -INT -- "-$child" ;; 143) kill -TERM -- "-$child" ;;'
        " esac 2>/dev/null",
        "  rc=",
        '  while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done',
        # bash 5.2's last `wait` answers -1 (status lost) when a passed signal lands in it:
        # the loop's last wait, which reaped the program, holds its status then
        '  wait "$child"; w=$?',
        '  if [ -z "$rc" ] || { [ "$w" -ge 0 ] && [ "$w" -le 255 ]; }; then rc=$w; fi',
    ]


@dataclass(frozen=True)
class ScriptFacts:
    """What a trial's script says of its trial (`read_trial_script`): the values it was
    rendered with, as the program got them."""

    run_id: str
    trial: int
    command: str
    codebase_dir: str
    venv_dir: str
    result_dir: str
    env: dict[str, str]  # every `export NAME=value` with a literal value
    metrics: MetricSource = MetricSource()
    go_file: str = ""  # the file it waits for (an SSH trial's: in the run's folder there)


_HEADER = re.compile(r"^# ajetd: run (?P<run_id>[a-z0-9]+), trial (?P<trial>\d{1,6})\.", re.M)


def read_trial_script(text: str) -> ScriptFacts | None:
    """The facts a script `render_trial_script` wrote holds (its header, exports, banner and
    `cd`), read back as bash would unquote them; None for any other text, or one cut short.
    How a run whose record was damaged is rebuilt from its folder."""
    header = _HEADER.search(text)
    if header is None:
        return None
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True  # words as bash splits them; `;`, `&&` their own
        words = list(lexer)
    except ValueError:  # an open quote: cut short
        return None
    env: dict[str, str] = {}
    own: dict[str, str] = {}
    command = codebase = go = None
    banner = f"{OWN_LINE_PREFIX}run {header['run_id']} trial {header['trial']}: "
    for before, word, after in zip(words, words[1:], [*words[2:], ""], strict=False):
        if before == "export" and "=" in word and "$" not in word:
            name, _, value = word.partition("=")
            env[name] = value
        elif before == "printf" and word == "%s\\n" and after.startswith(banner):
            command = command if command is not None else after[len(banner) :]
        elif before == "cd" and word == "--" and codebase is None:
            codebase = after
        elif command is None and go is None and before != "export" and word.startswith("go="):
            go = word.removeprefix("go=")
        elif command is None and before != "export" and word.startswith(_OWN) and "=" in word:
            name, _, value = word.partition("=")  # ajetd's own lines, before the command's
            own.setdefault(name.removeprefix(_OWN), value)
    venv, result = env.get("VIRTUAL_ENV"), env.get("AJETD_RESULT_DIR")
    if command is None or codebase is None or venv is None or result is None:
        return None
    return ScriptFacts(
        header["run_id"],
        int(header["trial"]),
        command,
        codebase,
        venv,
        result,
        env,
        _metric_source(own),
        go or "",
    )


def exit_line(trial: int) -> bytes:
    """How the line the script prints just after it writes the exit file begins: once it is
    in the log, so is everything the program printed."""
    return f"{OWN_LINE_PREFIX}trial {trial} exited with code ".encode()


# a line of ajetd's that marks one trial of a run in its pane: its banner or its exit line
_TRIAL_MARK = re.compile(
    rf"^{re.escape(OWN_LINE_PREFIX)}(?:run \S+ )?trial (\d+)(?::| exited with code )",
    re.MULTILINE,
)


def trial_rows(text: str, run_id: str, trial: int) -> str:
    """What of a pane's `text` is trial `trial`'s own: a relaunch reuses the pane, whose
    scrollback keeps the trials before. What follows its banner; where the banner is not
    there (scrolled off the rows read, or never printed: an SSH host that did not answer, a
    Slurm job not submitted), what follows the last line that marks another trial (its
    banner, its exit line): never an earlier trial's output."""
    start = text.rfind(f"{OWN_LINE_PREFIX}run {run_id} trial {trial}:")
    if start >= 0:
        return text[start:]
    cut = 0
    for mark in _TRIAL_MARK.finditer(text):
        if int(mark.group(1)) != trial:
            end = text.find("\n", mark.end())
            cut = len(text) if end < 0 else end + 1
    return text[cut:]


def trial_log(run: Run, number: int) -> Path:
    """Trial `number`'s full output, in the run's result dir."""
    return Path(run.result_dir) / resultfiles.LOGS / resultfiles.trial_log(number)
