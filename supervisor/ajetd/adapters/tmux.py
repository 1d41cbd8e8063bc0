"""The only module that talks to tmux; every call goes through `Tmux._run`.

One choke point gives every call a timeout (libtmux's calls have none, DESIGN §5), strips
`$TMUX` so a daemon started inside tmux still drives the right server, honours
`AJETD_TMUX_SOCKET`, and turns failures into `TmuxError` (with `gone` set when the server or
session is simply not there). The tmux binary is found on PATH; libtmux is not used (it cost the
daemon 5 MiB of memory and 40 ms of start-up for a version string).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ajetd.adapters.tmuxsocket import server_path, usable_path
from ajetd.core.errors import TmuxError
from ajetd.core.stopnote import STOP_OPTION
from ajetd.core.tmuxoptions import SERVER_ENDED, SERVER_OPTIONS, SESSION_OPTIONS
from ajetd.core.trialscript import (
    EXIT_OPTION,
    PIPES,
    WRITER_ASK,
    take_stale_answer,
)

# Put into a trial's log where its writer lost output (a full disk), once room came back.
MISSING_OUTPUT = "[ajetd] output is missing here: this log could not be written (a full disk?)"
VANISHED_NOTE = "[ajetd] this log's folder vanished (removed, moved or replaced) at"
# ...and where the log's file alone vanished, its folder still the one it was in (a user who
# deleted `logs/trial-1.log` to free room was told its folder vanished: walk97 F12)
FILE_VANISHED_NOTE = "[ajetd] this log's file vanished (removed or moved; its folder stood) at"


def moved_note(spare: str) -> str:
    """Where `pipe_writer` says, one line each time, that the log's folder (or its file alone)
    vanished: `<ISO time> log` (made again) or `<ISO time> spare` (the output goes on in
    `spare`), then `folder` or `file` (the folder it was in stood: only the file vanished;
    an older writer wrote nothing there: read as `folder`)."""
    return f"{spare}.moved"


def hold_note(spare: str) -> str:
    """While this file is there, `pipe_writer` starts no new write after one failed (its
    backlog waits in tmux, nothing more of it dropped): an ended run's reports, held by a full
    result dir, get the room a user frees first (`lostoutput.hold_writer`)."""
    return f"{spare}.hold"


CHECK_EVERY_S = 60  # how often the log writer checks its file still has its name, unasked
CHECK_UNASKED_S = 5  # the same where it cannot be asked (no FIFO beside the spare)
SCRIPT_OPTION = "@ajetd_script"  # a pane option: the script its process runs (`find_pane`)
_HASHES = re.compile(r"#+\[|#")


def literal(text: str, times: bool = False) -> str:
    """`text` as one argument that tmux gives back exactly as written where it expands it
    (`new-session -c`, `-s` and `-n`, `rename-window`; with `times`, `pipe-pane`'s command,
    which strftime reads first): each `#` doubled, as `##` is tmux's `#` (a path holding
    `#{session_name}`, `#S` or `##` was read as tmux's formats: the log went to a file named
    after the session, the pane started in the server's folder); a run of `#`s before `[`
    kept, which tmux keeps as it is (its style syntax: `##[` stays `##[`); with `times`, each
    `%` doubled (`%Y` was the year); and a last `;` as `\\;`, where tmux would end its
    command (a folder named `x;` failed the launch). As tmux 3.3a reads them
    (`tests/test_odd_paths.py`)."""
    text = _HASHES.sub(lambda m: m.group() if m.group().endswith("[") else "##", text)
    if times:
        text = text.replace("%", "%%")
    return f"{text[:-1]}\\;" if text.endswith(";") else text


# bash's positional parameters of `pipe_writer`'s script, named, and what is found from them
# as Python finds it: the result dir's folders from the log's path (`Path(path).parents[0..2]`,
# and the dir's name after a `/`), `REAL` given as `=` where it is the result dir itself, the
# spare's `moved_note` and `writer_fifos`, or where there is no spare (`""`), /dev/null and
# FIFOs that are not there (tests/test_log_writer.py holds the two to each other)
WRITER_ARGS = (
    "LOG=$1 SPARE=$2 REAL=$3; LOGS=${LOG%/*}; DIR=${LOGS%/*}; ABOVE=${DIR%/*};"
    ' ABOVE=${ABOVE:-/}; NAME=/${DIR##*/}; [ "$REAL" = = ] && REAL=$DIR\n'
    'if [ -n "$SPARE" ]; then OTHER=$SPARE; NOTE=$SPARE.moved; HOLD=$SPARE.hold;'
    f' ASK=${{SPARE%/*}}/{PIPES}/${{SPARE##*/}}.check; ANSWER=$ASK"ed"\n'
    "else OTHER=/dev/null; NOTE=/dev/null; HOLD=/dev/null/none; ASK=/dev/null/none;"
    " ANSWER=/dev/null/none; fi"
)


def pipe_writer(path: str, spare: str | None, real: str | None = None) -> str:
    """The command tmux runs for `pipe-pane` (bash, the pane's output on its stdin).

    `cat` appends the output to `path`; where a write fails (the log's disk is full: the
    program may fill its own result dir) it is started again a second later with a line
    saying output is missing, so the rest of the run still reaches the log once there is room.
    When asked, and every CHECK_EVERY_S, the loop checks that `path` still names the file
    `cat` writes (held on fd 5): a result dir removed (`rm -rf`), moved or replaced mid-run left
    `cat` writing into a file no name reached, all of the trial's output lost. Then the
    log's folders are made again, owner-only (`mkdir -m 700`, one level each, never `-p`),
    where nothing is in their place; where
    something else is (a file, a link, another user's folder: never written through) or they
    cannot be made, the output goes on in `spare` (the daemon's own folder) instead. The old
    file's text (read through /dev/fd/5: still open) is copied to the new one first,
    then a line saying when the folder vanished, and `<time> log|spare` is appended to
    `moved_note(spare)` for the daemon to report. tmux expands `%` and `#` in a pipe-pane
    command (strftime, formats): `_pipe` hands it over `literal`. Where not even the spare can
    be opened, the output is read and dropped a second at a time (the pipe is still read, so
    its end is seen and the loop ends with the pane). At the pane's end `cat` reads
    end-of-file, exits 0, and the loop ends.

    The wait is bash's own `read -t` on the trial's ask FIFO (`writer_fifos`, fd 6), not
    `sleep 1`: sh has no sleep of its own, and a `sleep` process a second for each live run
    was 3,000 process starts a minute at 50 runs (0.8 ms of CPU each here: 2.4 s a minute;
    issue 15's quiet runs). Unasked, the check comes every CHECK_EVERY_S (60 s): each wake
    of a bash costs about 0.17 ms of CPU here, 0.11 s a minute at 50 runs when it came every
    5 s. The daemon asks at once where it misses the log (its path gone or another file:
    `Observe.ask_writer_if_moved`), and a trial's end asks before its exit file: output
    written meanwhile is not lost (it is in the file `cat` still holds, copied to the new
    one). The wait ends the moment `cat` does: while it runs, its stderr is the FIFO's only
    write end that stays open (fd 6 is opened read-only for it), so its exit is an end of
    file there; a writer outlived its pane by up to a check period before. A write that
    fails ends the wait too: `cat`'s error message goes into the FIFO, so it is started again
    a second later (the pane's output waits in the pipe and tmux meanwhile; a program that
    freed its disk within seconds had its lines written after all, or not, by the phase of
    the check). An answer nobody took (a daemon's ask) is taken back before the next, so its
    FIFO never fills. Without the FIFOs (a home on a file system without them) the wait is on
    a pipe nobody writes and the check comes every CHECK_UNASKED_S (5 s), as before."""
    # the paths once each, as bash's positional parameters (`WRITER_ARGS`): written into the
    # script wherever used, quoted and escaped for tmux, a result dir of 1.3 KB made the
    # launch's one tmux message pass tmux's 16 KiB, and every launch failed (walk88 F4)
    same_dir = real == str(Path(path).parents[1])  # most often: no link in its path
    given = (path, spare or "", "=" if same_dir else real or "")
    log, logs, folder, above, name = '"$LOG"', '"$LOGS"', '"$DIR"', '"$ABOVE"', '"$NAME"'
    other, note, ask, answer = '"$OTHER"', '"$NOTE"', '"$ASK"', '"$ANSWER"'
    safe = '[ -d "$d" ] && [ ! -L "$d" ] && [ -O "$d" ] || return 1'
    script = (
        f"{WRITER_ARGS}\n"
        f"out={log}; exec 3<&0\n"
        f"if [ -p {ask} ] && [ -p {answer} ]; then exec 6<> {ask} 7<> {answer}; f={ask};"
        f" every={CHECK_EVERY_S}\n"
        f"else exec 6<> <(:) 7> /dev/null; f=; every={CHECK_UNASKED_S}; fi\n"
        # a line in fd 6 ends the wait: `check` (WRITER_ASK) asks for a check, any other is
        # cat's error (a failed write: `cat` is started again a second later); its end of
        # file is cat's exit (`run`: cat holds the FIFO's only lasting write end)
        'pause() { read -r -t "$1" -u 6 l; r=$?; [ "$r" -gt 128 ] && return 1\n'
        f'  [ "$r" = 0 ] || return 0; [ "$l" = {WRITER_ASK} ] || return 0; asked=1; return 1; }}\n'
        # one answer at most waits in its FIFO: an answer nobody read is taken back first
        f'said() {{ [ -n "$asked" ] || return 0; {take_stale_answer(7)}\n'
        "  echo >&7; asked=; }\n"
        # cat's errors into fd 6; with the FIFO, fd 6 is opened anew read-only and cat given
        # the only write end that stays open, so its exit ends the wait (end of file) at once
        # and the check can wait `every` seconds (the daemon asks when it misses the log)
        'run() { if [ -n "$f" ]; then exec 9<> "$f" 6< "$f"; cat <&3 >&5 2>&9 8<&- 9<&- & c=$!\n'
        "  exec 9<&-; else cat <&3 >&5 2>&6 8<&- & c=$!; fi; }\n"
        'waits() { [ -z "$f" ] || exec 6<> "$f"; }\n'
        f"{_same(folder, above, name, bool(real))}\n"
        f"usable() {{ same || return 1; for d in {folder} {logs}; do\n"
        f'  if [ ! -e "$d" ] && [ ! -L "$d" ]; then mkdir -m 700 "$d" || return 1; fi\n'
        f"  {safe}\n"
        f"done; [ ! -L {log} ] && : >> {log}; }}\n"
        # fd 8 holds the log's folder as it was (`held`): where it still stands at that name, the
        # log's file alone vanished (`v=file`), else its folder did
        f"held() {{ {{ exec 8< {logs}; }} 2>/dev/null || exec 8< /dev/null; }}\n"
        "moved() {\n"
        f"  v=folder; [ -d {logs} ] && [ {logs} -ef /dev/fd/8 ] && v=file\n"
        f"  if usable; then out={log}; w=log; held; elif : >> {other}; then out={other}; w=spare;"
        " else out=; exec 4<&-; return 1; fi\n"
        '  [ -n "$1" ] && cat <&4 >> "$out"; exec 4<&-; t=$(date -u -Iseconds)\n'
        f'  n="{VANISHED_NOTE}"; [ "$v" = file ] && n="{FILE_VANISHED_NOTE}"\n'
        '  { echo; echo "$n $t; the output goes on here"; } >> "$out"\n'
        f'  echo "$t $w $v" >> {note}\n'
        "}\n"
        'gone() { ! [ "$out" -ef /dev/fd/5 ] ||\n'
        f'  {{ [ -n "$asked" ] && [ "$out" = {log} ] && ! same; }}; }}\n'
        "held; same || moved\n"
        "while :; do\n"
        '  if [ -n "$out" ] && command exec 5>> "$out"; then\n'
        "    run\n"
        '    while kill -0 "$c" && ! gone; do said; pause "$every" && break; done\n'
        '    if gone; then exec 4< /dev/fd/5; kill "$c"; wait "$c"; rc=$?; exec 5>&-; waits\n'
        '      moved old; said; [ "$rc" = 0 ] && exit 0; continue; fi\n'
        '    wait "$c"; rc=$?; exec 5>&-; waits; said; [ "$rc" = 0 ] && exit 0\n'
        # held (`hold_note`): no new write, so nothing more dropped, while the run's reports
        # wait for the room a user frees; looked at again when asked, or every 5 s
        '    pause 1; while [ -e "$HOLD" ]; do pause 5; said; done\n'
        f"    printf '\\n{MISSING_OUTPUT}\\n' >> \"$out\"\n"
        "  elif ! moved; then said; timeout 1 cat <&3 > /dev/null && exit 0; fi\n"
        "done"
    )
    words = " ".join(shlex.quote(w) for w in given)
    return f"exec bash -c {shlex.quote(script)} ajetd-log-writer {words} 2>/dev/null"


def _same(folder: str, above: str, name: str, real: bool) -> str:
    """The writer's `same`: the result dir (`folder`, quoted) still leads where it led when
    the run was admitted (`$REAL`: `Run.result_real`; `real`: whether there is one), its
    links resolved as Python's `os.path.realpath` resolves them (a folder not there: its
    parent's path and its name): bash's own `cd -P`, no process, then back to `/` (a writer
    never keeps a folder busy). Asked where the log is opened anew (at the start, after a
    move) and when the writer is asked to check (`writer_fifos`), never at its 5 s checks."""
    if not real:
        return "same() { :; }"
    return (
        f"same() {{ r=; if [ -e {folder} ]; then cd -P -- {folder} && r=$PWD;\n"
        f"  elif cd -P -- {above}; then r=${{PWD%/}}{name}; fi\n"
        '  cd /; [ "$r" = "$REAL" ]; }'
    )


TMUX_MESSAGE_MAX = 16384  # tmux's MAX_IMSGSIZE: one message from a client to its server
# the most bytes a call's words (a NUL after each) may take: the message also holds imsg's
# 16-byte header and the count of words (an int). tmux 3.3a says `command too long` only past
# 16380; from 16365 to 16380 its client says `failed to send command` (imsg_compose refuses)
TMUX_CALL_MAX = TMUX_MESSAGE_MAX - 16 - 4
_UNSENT = ("command too long", "failed to send command")


def call_size(args: tuple[str, ...]) -> int:
    """The bytes a tmux call's words (what follows tmux's own options) take in its message."""
    return sum(len(a.encode(errors="surrogateescape")) + 1 for a in args)


def too_long(size: int, paths: str = "") -> str:
    """What is wrong with a launch whose one tmux call takes `size` bytes (`call_size`);
    `paths`: the paths it names, as said to the user (else only what they are)."""
    paths = paths or "of the home, the codebase and the result dir it names"
    return (
        f"command too long: {size} bytes in one tmux call, {size - TMUX_CALL_MAX} over "
        f"tmux's limit of {TMUX_CALL_MAX} (MAX_IMSGSIZE); the paths {paths} are too long "
        "together: choose shorter ones"
    )


_GONE_MARKERS = (
    "no server running",
    "error connecting to",
    "can't find session",
    "can't find pane",
    "can't find window",
    "no such file or directory",
    "server exited",
)
# a server with no session left (`exit-empty off`, or one exiting after its last session)
# answers `list-panes -a` so: it has no pane, so each run's is gone
_NO_TARGET = "no current target"
# what a tmux client says where the server it starts cannot make its socket (a folder not
# there, a path too long), exiting 0 all the same (tmux 3.3a): no session was made
_NOT_MADE = "error creating "
NOT_MADE_WHY = "the tmux server could not make its socket, so no session was made"
# libevent's switch to the precise monotonic clock, read once where its event loop is made: in
# the tmux client that starts a server (the server keeps its loop). See `Tmux.new_session`.
PRECISE_TIMER = "EVENT_PRECISE_TIMER"


@dataclass(frozen=True)
class Pane:
    """A pane as tmux lists it."""

    session: str
    pane_id: str
    pid: int
    dead: bool
    dead_status: int | None
    start_command: str
    exit_note: str = ""  # the trial script's exit line, set on the pane when the disk was full
    stop_note: str = ""  # the stop the daemon began, set on the pane when the home was full
    script: str = ""  # the script its process runs, as the daemon set it (SCRIPT_OPTION)
    # its output is piped (`pipe-pane`) to a command: false where none is, or the one there
    # ended (the trial's log writer killed while its program runs)
    piped: bool = True
    # (`Tmux.new_session` only) its server's exit-unattached is on: a server ajetd did not
    # start, which ends, with every session on it, when its last client detaches
    exits_unattached: bool = False


def find_pane(panes: list[Pane], script: Path) -> Pane | None:
    """The pane whose own process is this trial's script (names can be reused; paths not):
    as the pane's option names it; a pane without one (made by an ajetd before it) by its
    command, which tmux lists escaped (a home holding `"`, `$` or `\\` was never found)."""
    for pane in panes:
        if pane.script == str(script) or (not pane.script and str(script) in pane.start_command):
            return pane
    return None


PANES_FORMAT = "\t".join(
    (
        "#{session_name}",
        "#{pane_id}",
        "#{pane_pid}",
        "#{pane_dead}",
        "#{pane_dead_status}",
        f"#{{{EXIT_OPTION}}}",
        f"#{{{STOP_OPTION}}}",
        f"#{{{SCRIPT_OPTION}}}",
        "#{pane_pipe}",
        "#{pane_start_command}",
    )
)


def parse_panes(out: str) -> list[Pane]:
    """`list-panes -F PANES_FORMAT`'s lines as panes (a line cut short is skipped). An answer
    of which no line is in the format raises TmuxError (not `gone`): read as no panes, every
    run would look gone and its program be ended (walk98 F1: tabs printed as `_`)."""
    panes = []
    unread = ""
    for line in out.splitlines():
        fields = line.split("\t", 9)
        if len(fields) != 10:
            unread = unread or line
            continue
        session, pane_id, pid, dead, status, note, stop, script, piped, start = fields
        panes.append(
            Pane(
                session=session,
                pane_id=pane_id,
                pid=int(pid) if pid.isdigit() else 0,
                dead=dead == "1",
                dead_status=int(status) if status.lstrip("-").isdigit() else None,
                start_command=start,
                exit_note=note,
                stop_note=stop,
                script=script,
                piped=piped == "1",
            )
        )
    if unread and not panes:
        raise TmuxError(
            f"list-panes: no line of its answer is in the asked format (the first: "
            f"{unread[:80]!r}); which runs' panes are there is not known"
        )
    return panes


class PanesAsked:
    """A `list-panes` under way (`Tmux.panes_soon`)."""

    def __init__(self, proc: subprocess.Popen[str], timeout: float) -> None:
        self._proc, self._timeout = proc, timeout

    def panes(self) -> list[Pane]:
        """Its answer, as `Tmux.panes_or_empty` gives it: no pane where no server (or no
        session) is; TmuxError where tmux failed otherwise or did not answer in time."""
        try:
            out, err = self._proc.communicate(timeout=self._timeout)
        except subprocess.TimeoutExpired as exc:
            self._proc.kill()
            self._proc.communicate()
            raise TmuxError("tmux list-panes timed out", silent=True) from exc
        if self._proc.returncode == 0:
            return parse_panes(out)
        failed = failure(("list-panes",), self._proc.returncode, err)
        if failed.gone or _NO_TARGET in str(failed):  # as `panes_or_empty`
            return []
        raise failed


def failure(args: tuple[str, ...], returncode: int, stderr: str) -> TmuxError:
    """The error of a tmux command (`args`) that exited `returncode` saying `stderr`, with
    whether it says its server or target is gone (`TmuxError.gone`)."""
    message = stderr.strip() or f"exit {returncode}"
    if message in _UNSENT and call_size(args) > TMUX_CALL_MAX:  # said of no command: the cause
        message = too_long(call_size(args))
    if _NOT_MADE in message:  # its server could not make its socket: no server, not one gone
        return TmuxError(f"tmux {args[0]}: {message}: {NOT_MADE_WHY}")
    gone = any(marker in message.lower() for marker in _GONE_MARKERS)
    return TmuxError(f"tmux {args[0]}: {message}", gone=gone)


def _bash(script: str) -> str:
    """The command a pane runs: `bash <script>` as the pane's own process."""
    return f"exec bash {shlex.quote(script)}"


class Tmux:
    """A tmux server: the user's default one, `tmux -L <socket>`, or, where `path` is given
    (a run's recorded socket: `Run.tmux_path`), `tmux -S <path>`, which reaches it whatever
    this process's TMUX_TMPDIR."""

    def __init__(
        self, socket_name: str | None = None, timeout: float = 10.0, path: str | None = None
    ) -> None:
        self.socket_name = socket_name
        self.timeout = timeout
        self.path = usable_path(path)

    @staticmethod
    def version() -> str:
        """The tmux binary's version as `tmux -V` says it (`3.3a`), for the daemon's log."""
        try:
            out = subprocess.run(
                ["tmux", "-V"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise TmuxError(f"cannot run tmux: {exc}") from exc
        return out.stdout.strip().removeprefix("tmux ") or "unknown"

    def argv(self, *args: str, utf8: bool = True) -> list[str]:
        """`tmux -u [-L socket] ARGS`. `-u`: the client is UTF-8 whatever the locale; without
        it, under `LC_ALL=C` or `POSIX` (cron, CI, `ssh host 'LC_ALL=C ...'`), tmux prints
        each tab of a `-F` format as `_` (`utf8_sanitize`), no pane line parsed, and every
        run looked gone: its healthy program was ended and the run recorded lost (walk98 F1).
        `utf8=False` for a person's terminal (`attach`), whose locale tmux should follow."""
        base = ["tmux", "-u"] if utf8 else ["tmux"]
        if self.path is not None:
            return [*base, "-S", self.path, *args]
        return [*base, *(("-L", self.socket_name) if self.socket_name is not None else ()), *args]

    @staticmethod
    def _env() -> dict[str, str]:
        """This process's environment without the variables that would make tmux think it
        runs inside one of its panes."""
        return {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}

    def _run(self, *args: str, env: dict[str, str] | None = None) -> str:
        try:
            proc = subprocess.run(
                self.argv(*args),
                capture_output=True,
                text=True,
                timeout=self.timeout,
                env=self._env() if env is None else env,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            message = f"tmux {args[0]} timed out after {self.timeout:.0f}s"
            raise TmuxError(message, silent=True) from exc
        except OSError as exc:
            raise TmuxError(f"cannot run tmux: {exc}") from exc
        # a server this call starts that cannot make its socket: tmux exits 0 all the same,
        # and a launch read as made a session that never was (walk98 F18: every run `lost`)
        if proc.returncode != 0 or _NOT_MADE in proc.stderr:
            raise failure(args, proc.returncode, proc.stderr)
        return proc.stdout

    def session_names(self) -> set[str]:
        """Every session on the server (empty when no server runs)."""
        try:
            out = self._run("list-sessions", "-F", "#{session_name}")
        except TmuxError as exc:
            if exc.gone:
                return set()
            raise
        return {line for line in out.splitlines() if line}

    def panes(self) -> list[Pane]:
        """Every pane on the server; raises TmuxError(gone=True) when no server runs."""
        try:
            out = self._run("list-panes", "-a", "-F", PANES_FORMAT)
        except TmuxError as exc:
            # A server that holds no session (`exit-empty off`, or one exiting after its last
            # session) answers "no current target": it has no pane, so each run's is gone.
            if _NO_TARGET in str(exc):
                return []
            raise
        return parse_panes(out)

    def panes_soon(self) -> PanesAsked:
        """`panes_or_empty`, started and not waited for: its answer is read with
        `PanesAsked.panes`. A trial's end asks it once its record is saved and reads it after
        the leftover search, which the tmux client's 3-6 ms then overlap."""
        try:
            proc = subprocess.Popen(
                self.argv("list-panes", "-a", "-F", PANES_FORMAT),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=self._env(),
            )
        except OSError as exc:
            raise TmuxError(f"cannot run tmux: {exc}") from exc
        return PanesAsked(proc, self.timeout)

    def panes_or_empty(self) -> list[Pane]:
        """Every pane, or none when no server runs (other failures still raise)."""
        try:
            return self.panes()
        except TmuxError as exc:
            if exc.gone:
                return []
            raise

    def new_session(
        self,
        name: str,
        cwd: str,
        script: str,
        log: str | None = None,
        window: str = "run",
        spare: str | None = None,
        real: str | None = None,
    ) -> Pane:
        """A detached session whose only pane runs `bash <script>` as its own process; with
        `log`, armed in the same tmux call (one process, not three): `remain-on-exit` set and
        the output piped to `log` (`keep_dead_pane`, `pipe_to_file`).

        The window is named (`window`), which turns tmux's `automatic-rename` off for this
        window only: renaming a window after its running command makes the server look the
        command up after each output, a fifth of its CPU for a run printing a line every few
        seconds (`bench/tmuxcost.py`). The user's other windows keep their own settings.

        A server this call starts keeps time with the precise monotonic clock
        (`_precise_start`): a third fewer wake-ups for every line a run prints."""
        env, first = self._precise_start()
        args = self.session_args(name, cwd, script, log, window, spare, real, first)
        out = self._run(*args, env=env)
        pane_id, pid, exits = [*out.strip().split("\t"), "", ""][:3]
        pid_n = int(pid) if pid.isdigit() else 0
        command = _bash(script)
        return Pane(name, pane_id, pid_n, False, None, command, exits_unattached=exits == "1")

    @classmethod
    def session_args(
        cls,
        name: str,
        cwd: str,
        script: str,
        log: str | None = None,
        window: str = "run",
        spare: str | None = None,
        real: str | None = None,
        first: tuple[str, ...] | None = None,
    ) -> tuple[str, ...]:
        """The words of `new_session`'s one tmux call (`first`: `_precise_start`'s leading
        commands; None: the most there can be). What a launch sends tmux, for its size to be
        known before any launch (`launchsize.launch_problem`)."""
        command = _bash(script)
        fmt = "#{pane_id}\t#{pane_pid}\t#{exit-unattached}"
        arm = (
            (";", *cls._keep_dead(), ";", *cls._pipe(log, spare, real=real)) if log else ()
        )  # commands after new-session act on its new pane (and session)
        kept = [w for name, value in SESSION_OPTIONS for w in (";", "set-option", name, value)]
        arm = (";", *cls._script_option(script), *kept, *arm)
        first = (*cls._server_options(), *(cls._forget_precise() if first is None else first))
        return (
            *first,
            "new-session",
            "-d",
            "-P",
            "-F",
            fmt,
            "-s",
            literal(name),
            "-n",
            literal(window),
            "-c",
            literal(cwd),
            "-x",
            "220",
            "-y",
            "50",
            command,
            *arm,
        )

    @staticmethod
    def _server_options() -> tuple[str, ...]:
        """`SERVER_OPTIONS` set where the call starts the server (`_precise_start`'s test: a
        server with no session is one this call started, or one left empty)."""
        said = " ; ".join(f"set-option -s {name} {value}" for name, value in SERVER_OPTIONS)
        return ("if-shell", "-F", "#{session_name}", "", said, ";")

    def gone_why(self) -> str:
        """What this server says of a session of ajetd's that vanished: the server itself gone,
        or a global option that destroys sessions (a session made by an ajetd before
        `SESSION_OPTIONS`, or one set on by hand); "" where nothing is known."""
        try:
            out = self._run("show-options", "-g", "destroy-unattached")
        except TmuxError as exc:
            if exc.gone or _NO_TARGET in str(exc):
                return f"the tmux server (socket {self.socket_path()}) {SERVER_ENDED}"
            return ""
        if out.split()[-1:] not in ([], ["off"]):
            return (
                "the tmux server's destroy-unattached is on (a tmux.conf's `set -g "
                "destroy-unattached on`?), which destroys a session when its last client "
                "detaches; ajetd sets it off on each session it makes"
            )
        return ""

    def respawn(self, pane_id: str, script: str, window: str | None = None) -> Pane:
        """Run `bash <script>` in an existing (dead) pane: same session, same attached users;
        with `window`, its window is renamed in the same call (automatic-rename stays off)."""
        command = _bash(script)
        forget = (  # the last trial's notes
            *("set-option", "-p", "-u", "-t", pane_id, EXIT_OPTION, ";"),
            *("set-option", "-p", "-u", "-t", pane_id, STOP_OPTION),
        )
        rename = (";", "rename-window", "-t", pane_id, literal(window)) if window else ()
        named = (";", *self._script_option(script, "-t", pane_id))
        self._run(*forget, *rename, *named, ";", "respawn-pane", "-k", "-t", pane_id, command)
        out = self._run("display-message", "-p", "-t", pane_id, "#{pane_pid}")
        pid = out.strip()
        return Pane("", pane_id, int(pid) if pid.isdigit() else 0, False, None, command)

    @classmethod
    def _precise_start(cls) -> tuple[dict[str, str], tuple[str, ...]]:
        """The environment and leading commands of a call that may start the server.

        tmux's event loop (libevent, made in the client that starts the server, which the
        server keeps) reads its timers from the coarse monotonic clock, 4 ms steps on a 250 Hz
        kernel, unless `EVENT_PRECISE_TIMER` is set: then a timer that is due 10 ms after a
        line is printed (tmux arms one at every cursor move) fires in one `poll`, where the
        coarse clock makes the server wake a second time 2 ms later to find it due. Each wake
        polls every pane's terminal, so that is a third of the server's wake-ups for each
        printed line (`bench/tmuxcost.py`, variant `precise`). The variable is put in the
        client's environment only, and taken out of the server's global environment (the
        copy the panes get) before the first session is made: `if-shell -F` finds no session
        only on a server that has none, which is one this call started (or one left empty),
        so a running server's environment is never touched. A server already running keeps
        its clock; a user who sets the variable themselves keeps it everywhere."""
        env = cls._env()
        if PRECISE_TIMER in env:
            return env, ()
        env[PRECISE_TIMER] = "1"
        return env, cls._forget_precise()

    @staticmethod
    def _forget_precise() -> tuple[str, ...]:
        """`_precise_start`'s leading commands where it sets the variable."""
        forget = ("if-shell", "-F", "#{session_name}", "", f"set-environment -g -u {PRECISE_TIMER}")
        return (*forget, ";")

    @staticmethod
    def _script_option(script: str, *target: str) -> tuple[str, ...]:
        """The pane's script kept on it (`find_pane`): an option's value is never expanded."""
        return ("set-option", "-p", *target, SCRIPT_OPTION, script)

    @staticmethod
    def _keep_dead(*target: str) -> tuple[str, ...]:
        return ("set-option", "-p", *target, "remain-on-exit", "on")

    @staticmethod
    def _pipe(
        path: str, spare: str | None, *target: str, real: str | None = None
    ) -> tuple[str, ...]:
        """The pane's output appended to `path` (`pipe_writer`'s loop)."""
        return ("pipe-pane", *target, literal(pipe_writer(path, spare, real), times=True))

    def note_stop(self, pane_id: str, note: str) -> None:
        """Keep a stop's note (`core.stopnote`) on the pane, in the tmux server's memory."""
        self._run("set-option", "-p", "-t", pane_id, STOP_OPTION, note)

    def keep_dead_pane(self, pane_id: str) -> None:
        """Set remain-on-exit before the program can end, so its status can be read."""
        self._run(*self._keep_dead("-t", pane_id))

    def pipe_to_file(
        self, pane_id: str, path: str, spare: str | None = None, real: str | None = None
    ) -> None:
        """Append everything the pane prints to `path`, whatever the history limit (where
        its folder vanishes and cannot be made again safely, or leads elsewhere than `real`:
        to `spare`; `pipe_writer`)."""
        self._run(*self._pipe(path, spare, "-t", pane_id, real=real))

    def kill_session(self, name: str) -> None:
        try:
            self._run("kill-session", "-t", f"={name}")
        except TmuxError as exc:
            if not exc.gone:
                raise

    def kill_session_soon(self, name: str) -> subprocess.Popen[bytes]:
        """`kill-session`, started and not waited for: the caller reaps it. A tmux client
        takes 3-6 ms here, which a trial end that comes meanwhile would wait for; whether it
        found the session (gone already) is of no interest to the caller."""
        try:
            return subprocess.Popen(
                self.argv("kill-session", "-t", f"={name}"),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=self._env(),
            )
        except OSError as exc:
            raise TmuxError(f"cannot run tmux: {exc}") from exc

    def history(self, pane_id: str, rows: int = 2000) -> str:
        """What the pane kept of its last output: its last `rows` rows of scrollback and
        screen, rows that tmux wrapped joined again. Bounded by `rows` times the pane's width
        whatever the server's `history-limit` (a user's may keep millions of lines)."""
        return self._run("capture-pane", "-p", "-J", "-S", f"-{rows}", "-t", pane_id)

    def capture(self, pane_id: str) -> str:
        """What the pane shows now (its visible screen, as text)."""
        return self._run("capture-pane", "-p", "-t", pane_id)

    def socket_path(self) -> str:
        """Where this server's socket lives (as tmux computes it, without asking it)."""
        return self.path if self.path is not None else server_path(self.socket_name)

    def attach(self, name: str) -> tuple[list[str], dict[str, str]]:
        """argv and environment that put the user's terminal on session `name`.

        Inside a client of this same server, switch that client (nesting a server in itself
        is unusable); inside another tmux, nest a client by clearing $TMUX as tmux asks.
        """
        env = dict(os.environ)
        inside = env.get("TMUX", "").split(",")[0]
        if inside and os.path.realpath(inside) == os.path.realpath(self.socket_path()):
            return self.argv("switch-client", "-t", f"={name}", utf8=False), env
        env.pop("TMUX", None)
        return self.argv("attach-session", "-t", f"={name}", utf8=False), env
