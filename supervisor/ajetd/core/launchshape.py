"""The launch command's shape, where it decides what ajetd can know of the program: a command
(or the script it runs) that leaves its program running and returns at once, one whose exit
status is another command's, a pipe that filters or stops reading the program's output. Pure.

Why: ajetd records the command's exit status as the program's and ends what a trial leaves
running once its command returns. `nohup python train.py > log 2>&1 &` and seed 001's own
`tmux new-session -d ... ; tmux send-keys ... Enter` returned at once, 'succeeded' in 0 s, and
the training was ended as a leftover (walk 86); `python train.py; echo finished` and `... ||
true` reported a crash as success. Read as bash splits words (`shlex`, operators their own
tokens), one line at a time, so a script's statements are known by line; a text that does not
parse (an open quote) is not judged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

MAX_SCRIPT_CHARS = 64 * 1024  # a launch script read for its shape: more is not looked at
DETACHED_WITHIN_S = 60.0  # a command that returned sooner, leaving processes: it detached them
_SEPARATORS = {";", "&", ";;", "\n"}
_ALWAYS_OK = {"echo", "printf", "true", ":", "sleep", "date", "ls", "touch", "sync", "wait"}


@dataclass(frozen=True)
class Statement:
    """One top-level statement: its words (operators `&&`, `||`, `|` among them), the
    operator that ended it (`;`, `&`, a line's end: "\\n"), its line (from 1)."""

    words: tuple[str, ...]
    end: str
    line: int
    source: str = ""  # as written, where its line holds it alone (continuations joined)

    def shown(self) -> str:
        """The statement as the user wrote it where its line holds it alone (the words joined
        respace operators: `2>&1` read back `2 >& 1`, which bash reads otherwise: walk98 F3)."""
        text = self.source or " ".join(self.words) + (" &" if self.end == "&" else "")
        return text if len(text) <= 80 else text[:79] + "…"


def statements(text: str) -> list[Statement] | None:
    """The text's top-level statements in order (a `\\` continuation joins lines; words inside
    `( )` or `{ }` belong to the statement around them; a here document's lines are input, no
    statements), or None where a line does not parse. Operators are split as bash splits
    them (`core.shelltokens`): `(python t.py); echo done` was one statement, `);` no `)`."""
    import shlex  # here: `ajetd status` reads inbox blueprints without it

    from ajetd.core.shelltokens import ends_heredoc, heredocs, split_operators

    found: list[Statement] = []
    lines = text.replace("\\\n", " ").split("\n")
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        try:
            words = [w for token in lexer for w in split_operators(token)]
        except ValueError:  # an open quote: a string across lines, or none at all
            return None
        current: list[str] = []
        depth = 0
        before = len(found)
        for word in words:
            depth += {"(": 1, ")": -1, "{": 1, "}": -1}.get(word, 0)
            if depth == 0 and word in _SEPARATORS:
                if current:
                    found.append(Statement(tuple(current), word, number))
                current = []
            else:
                current.append(word)
        if current:
            found.append(Statement(tuple(current), "\n", number))
        if len(found) == before + 1:  # the line is this statement: quoted as written
            found[-1] = replace(found[-1], source=line.strip())
        for delimiter in heredocs(words):
            while number < len(lines) and not ends_heredoc(lines[number], delimiter):
                number += 1
            number += 1
    return found


def _program(words: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """The program a simple command runs and its arguments, past `VAR=x`, `nohup`, `exec`,
    `time`, `env`, `setsid`, `sudo`, a group's `(` or `{` and `!` (as bash reads them: walk97
    F7) (its name only: `/usr/bin/tmux` is tmux)."""
    at = 0
    while at < len(words) and (
        ("=" in words[at] and not words[at].startswith(("-", "=")))
        or words[at] in _WRAPPERS
        or words[at] in ("(", "{", "!")
    ):
        at += 1
    if at >= len(words):
        return "", ()
    return words[at].rsplit("/", 1)[-1], words[at + 1 :]


_WRAPPERS = {"nohup", "exec", "time", "env", "setsid", "sudo", "command", "builtin"}


def _detaches(words: tuple[str, ...]) -> str | None:
    """How a statement starts its program detached from the command: a tmux session or window
    started `-d` (seed 001's habit), `screen -dm`, `daemonize`; None where it does not."""
    program, args = _program(words)
    if program == "tmux" and {"new-session", "new", "new-window", "neww"} & set(args):
        return "starts its own tmux session"
    if program == "screen" and any(a in ("-dm", "-dmS", "-d") for a in args):
        return "starts its own screen session"
    if program in ("daemonize", "start-stop-daemon"):
        return f"daemonizes it ({program})"
    return None


def detached(text: str) -> tuple[Statement, str] | None:
    """Where `text` (a command, or a script it runs) leaves its program running and returns:
    a statement put in the background (`&`, `& disown`) or one that starts a tmux or screen
    session detached, with nothing after it but commands that only say or wait a moment
    (`echo started`, `sleep 1`, `tmux send-keys`). The statement, and how; None where it
    does not (`cmd & wait`, `tensorboard ... & python train.py`), or the text does not
    parse."""
    for statement in reversed(statements(text) or []):
        if statement.end == "&":
            return statement, "puts its program in the background (`&`)"
        how = _detaches(statement.words)
        if how is not None:
            return statement, how
        program, _ = _program(statement.words)
        if program == "wait":  # what was put in the background is waited for
            return None
        if program not in ("tmux", "screen", "disown", *_ALWAYS_OK):
            return None
    return None


def masked_status(text: str) -> str | None:
    """Why the command's exit status would not be its program's: its last statement is one
    that always succeeds (`; echo finished`, `; sleep 5`) after others (with no `set -e`), or
    ends in `|| true` (`|| :`, `|| echo ...`, `|| exit 0`). None where it is the program's."""
    said = statements(text)
    if not said:
        return None
    last = said[-1]
    errexit = any(
        _program(s.words)[0] == "set" and any(a.startswith("-") and "e" in a for a in s.words[1:])
        for s in said[:-1]
    )
    if "||" in last.words:
        rest = last.words[len(last.words) - last.words[::-1].index("||") :]
        program, args = _program(rest)
        if program in _ALWAYS_OK or (program == "exit" and args in ((), ("0",))):
            return (
                f"exp_launch_command: ends in `|| {' '.join(rest)}`: a crash of the program "
                "is then a success (exit 0), and ajetd neither diagnoses nor relaunches it"
            )
    program, args = _program(last.words)
    ok = program in _ALWAYS_OK - {"wait"} or (program == "wait" and not args)  # `wait`: 0
    if len(said) > 1 and not errexit and (ok or program == "exit") and last.end != "&":
        return (
            f"exp_launch_command: its last command is `{last.shown()}`, so the trial's exit "
            "status is that command's, not the program's: a crash reads as a success; end "
            "with the program (or put `set -e` first)"
        )
    return None


def filtered_pipe(text: str) -> str | None:
    """A pipe that changes what ajetd reads of the program: into `head` (which stops reading:
    the program is then killed by SIGPIPE, exit 141) or `grep` (lines it drops never reach
    the trial's log or its diagnosis, and its exit 1 when none matched fails the run)."""
    for statement in statements(text) or []:
        words = statement.words
        for at, word in enumerate(words[:-1]):
            if word not in ("|", "|&"):
                continue
            program, _ = _program(words[at + 1 :])
            if program == "head":
                return (
                    "exp_launch_command: pipes into head, which stops reading after its lines:"
                    " the program is then killed (SIGPIPE, exit 141) and the run fails"
                )
            if program in ("grep", "egrep", "fgrep", "rg"):
                return (
                    f"exp_launch_command: pipes the program's output through {program}: lines "
                    "it drops never reach the trial's log (nor its diagnosis), and its exit 1 "
                    "(no line matched) fails the run; filter a copy (`| tee log`) instead"
                )
    return None


def detached_problem(text: str, script: str = "") -> str | None:
    """The problem lint and admission give a command (`script` empty) or the script it runs
    (its path) that detaches its program (`detached`)."""
    found = detached(text)
    if found is None:
        return None
    statement, how = found
    where = (
        f"exp_launch_command runs {script}, whose line {statement.line} (`{statement.shown()}`)"
        if script
        else f"exp_launch_command: `{statement.shown()}`"
    )
    return (
        f"{where} {how} and returns at once: the trial would end as it starts, and ajetd ends "
        "what a trial leaves running; run the program in the foreground (no `&`, nohup, tmux "
        "or screen: ajetd runs it in a tmux session of its own, `ajetd attach RUN`)"
    )


def script_paths(command: str) -> list[str]:
    """The scripts a command runs, as written (relative to where it runs): `bash x.sh`,
    `sh x.sh`, `source x.sh`, `. x.sh`, `./x.sh`, `scripts/x.sh`; at most 4."""
    found: list[str] = []
    for statement in statements(command) or []:
        for at, word in enumerate(statement.words):
            before = statement.words[at - 1] if at else ""
            first = at == 0 or before in ("&&", "||", "|", "(", "{", *_WRAPPERS)
            if word.startswith("-") or word in ("&&", "||", "|"):
                continue
            if (before in ("bash", "sh", "source", ".") and word.endswith((".sh", ".bash"))) or (
                first and word.endswith(".sh") and "/" in word
            ):
                found.append(word)
    return found[:4]


def detached_end(lasted_s: float, records: int, left: list[tuple[int, str]]) -> str | None:
    """The reason a trial whose command exited 0 fails, or None where it does not: it returned
    within DETACHED_WITHIN_S, no validation record was read, and processes it started were
    still running (`left`: pid, command line): its program was detached, and ajetd ends
    them as the trial's leftovers. A training that ran for a while, or wrote records, and
    left a straggler (a Ray worker, wandb's service) still succeeds."""
    if not left or records or lasted_s > DETACHED_WITHIN_S:
        return None
    pid, line = left[0]
    more = f" and {len(left) - 1} more" if len(left) > 1 else ""
    return (
        f"the command exited 0 after {lasted_s:.0f}s but left `{line}` (pid {pid}){more} "
        "running: it put its program in the background (`&`, nohup, setsid, a tmux or screen "
        "session of its own), and ajetd ended it with the trial's leftovers; run the program "
        "in the foreground (ajetd keeps it in a tmux session of its own)"
    )


_TRACEBACK = "Traceback (most recent call last):"
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]{0,100}(?:Error|Exception|Exit|Interrupt))\b(?::.*)?$")
TAIL_LINES_AFTER = 5  # lines a program may print after its traceback for it still to end there


def ended_in_traceback(tail: str, own_prefix: str) -> str | None:
    """The exception line where the end of a trial's output (`tail`, its last few KiB) is a
    Python traceback, or None: a command that exited 0 then hid the program's crash (a pipe
    without pipefail in a script it runs, `|| true`, a wrapper), and 'nothing went wrong'
    was shown beside a traceback (walk 86). Lines of ajetd's own (`own_prefix`) and blank
    ones do not count as output after it."""
    start = tail.rfind(_TRACEBACK)
    if start < 0:
        return None
    lines = [
        line.rstrip("\r")
        for line in tail[start:].split("\n")[1:]
        if line.strip() and not line.startswith(own_prefix)
    ]
    for at, line in enumerate(lines):
        found = _EXCEPTION.match(line)
        if found is not None and len(lines) - at - 1 <= TAIL_LINES_AFTER:
            return line if len(line) <= 160 else line[:159] + "…"
    return None
