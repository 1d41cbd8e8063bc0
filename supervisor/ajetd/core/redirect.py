"""A launch command that sends its output to a file (`python train.py > run.log 2>&1`, as seed
002 tells agents to write it): ajetd reads the trial's terminal, so such a run showed no
NeMo-RL metric, no diagnosis and no output at all to the hang rule (walk86 F5). Where the
command ends with such a redirect to one file, it runs as `... 2>&1 | tee -i FILE`: the file
is written as before and the output also reaches the terminal (`tee -i`: a stop's SIGINT is
the program's to handle, tee reads on until it ends; `pipefail` keeps the program's status).
Any other redirect of the program's own output is warned of (`program_redirect`); another
command's redirect, a duplication (`2>&1`) or a pipe into `tee` is not. Pure.
"""

from __future__ import annotations

import re

from ajetd.core.shelltokens import Lexed
from ajetd.core.shelltokens import tokens as lex
from ajetd.core.shellwords import ASSIGNMENT

# a shell word tee can take as written: quoted text without command substitution, or plain
# characters (a variable such as $LOG_DIR expands the same for tee as for the redirect)
_WORD = r"""(?:"[^"`\\$]*(?:\$\{?\w{1,64}\}?[^"`\\$]*){0,8}"|'[^']*'|[\w./@%+=:,${}~-]{1,4096})"""
# plain arguments after the redirect (bash passes them to the command all the same): NeMo-RL
# overrides ajetd appends to the command, `++logger.log_dir=...`. Blanks, never a line's end:
# `echo started > marker` then `python t.py` on the next line was read as one command, and
# the rewrite sent the program's output into `marker` (walk97 F6's class)
_ARGS = r"(?P<args>(?:[ \t]+[^\s;&|<>()'\"`$\\#]{1,4096}){0,64})"
_TAIL = re.compile(
    r"(?P<head>.*\S)[ \t]+(?:"
    rf"(?P<both>&>>?|>&)[ \t]*(?P<file1>{_WORD})"
    rf"|(?P<out>1?>>?)[ \t]*(?P<file2>{_WORD})(?:[ \t]+2>&1)?"
    rf"){_ARGS}\s*",
    re.S,
)


def followed(command: str) -> tuple[str, str | None]:
    """The command as ajetd runs it, and the file its output goes to where it was rewritten
    to reach the terminal too (None: run as written)."""
    found = _TAIL.fullmatch(command.rstrip())
    if found is None:
        return command, None
    target = found.group("file1") or found.group("file2")
    if target.strip("\"'").startswith("/dev/") or target.endswith(("&", "|", ";")):
        return command, None  # /dev/null, a tty: nothing to follow
    if found.group("both") == ">&" and (target.isdigit() or target == "-"):
        return command, None  # `>&2`: a duplication (it ran `| tee -i 2`, a file named 2)
    append = (found.group("both") or found.group("out") or "").endswith(">>")
    head = found.group("head")
    if head.rstrip().endswith(("&&", "||", "|", ";", "&", "2>&1", "\\")):
        return command, None  # `2>&1 > F` keeps stderr apart; a dangling operator: as is
    tee = "tee -i -a" if append else "tee -i"
    return f"{head}{found.group('args')} 2>&1 | {tee} {target}", target


def redirect_warnings(command: str) -> list[str]:
    """What lint and admission say of a command whose program's output goes to a file: the
    rewrite `followed` makes, or that ajetd cannot see what the program's redirect sends
    elsewhere (`program_redirect`)."""
    rewritten, target = followed(command)
    if target is not None:
        tee = rewritten[rewritten.rindex("| tee") + 2 : -len(target)].strip()
        return [
            f"exp_launch_command sends its output to {target}: ajetd runs it as `... 2>&1 | "
            f"{tee} {target}`, so {target} is written as before and the output also reaches "
            "the trial's log (metrics, diagnosis and the hang rule read it there)"
        ]
    found = program_redirect(command)
    if found is None:
        return []
    if found.endswith("/dev/null"):
        return [
            f"exp_launch_command discards the program's output (`{found}`): what goes there "
            "(a traceback, an error, a metric) never reaches the trial's log, so ajetd cannot "
            "diagnose a crash or read a metric from it; drop it, or send it to `| tee FILE`"
        ]
    return [
        f"exp_launch_command redirects the program's output to a file (`{found}`): ajetd reads "
        "only what reaches the terminal, so what goes to that file gets no diagnosis, no "
        "NeMo-RL metric and counts as silence to the hang rule; end the command with "
        "`> FILE 2>&1` (ajetd then follows FILE) or `2>&1 | tee FILE`"
    ]


# commands that prepare or report around the program, never the program itself: a redirect
# of theirs (`echo started > marker`, `nvidia-smi > smi.txt`, `cat > notes.md <<EOF`) is not
# the program's output (walk97 F6)
_AROUND = frozenset(
    {
        *("echo", "printf", "cat", "tee", "mkdir", "touch", "rm", "cp", "mv", "ln", "ls"),
        *("cd", "pushd", "popd", "export", "source", ".", "set", "unset", "true", ":"),
        *("sleep", "date", "wait", "pwd", "hostname", "which", "nvidia-smi", "module", "ml"),
        *("conda", "ulimit", "umask", "trap", "alias", "chmod", "df", "free", "env", "exec"),
    }
)
_OUT_OPS = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})
_PASSED = frozenset({"nohup", "exec", "command", "time", "!", "env", "stdbuf", "setsid"})
# what stays on the terminal: the streams themselves and the terminal
_TERMINAL = frozenset({"/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/1", "/dev/fd/2"})


def program_redirect(command: str) -> str | None:
    """The first redirect of the program's standard output or error to a file (or to
    /dev/null), as written (`2> err.log`, `> run.log`, `&>/dev/null`), in the pipeline that
    runs the program: the last one whose first command is not one that only prepares or
    reports (`_AROUND`), or an `exec > FILE` before it (all later output goes there); None
    where there is none. A duplication (`2>&1`, `>&2`), a pipe into `tee FILE`, another
    command's redirect in a list (`echo x > marker && python ...`), a here document
    (`<<EOF`), an input redirect and a quoted `>` are none (walk97 F6: each was warned of).
    Read as bash tokenizes it (`core.shelltokens`); a command that does not parse: None."""
    lexed = lex(command)
    if lexed is None:
        return None
    pipelines = _pipelines(lexed, command)
    if not pipelines:
        return None
    at = next(
        (n for n in range(len(pipelines) - 1, -1, -1) if _name(pipelines[n][0]) not in _AROUND),
        len(pipelines) - 1,
    )
    for before in pipelines[:at]:  # `exec > log 2>&1` sends all that follows there
        if len(before) == 1 and _name(before[0]) == "exec":
            found = _to_file(before[0])
            if found is not None:
                return found
    return next((f for f in map(_to_file, pipelines[at]) if f is not None), None)


# a redirection operator, an fd number written against it joined to it (`2>`, `3>>`)
_OPERATOR = re.compile(r"(\d{0,4})(>|>>|>\||&>|&>>|>&|<|<<|<<<|<>|<&)")


def _pipelines(lexed: Lexed, command: str) -> list[list[list[str]]]:
    """The command's pipelines (split at `;`, `&&`, `||`, `&`, a line's end), each a list of
    its simple commands (split at `|`, `|&`), each a list of words, an fd number written
    against the operator after it joined to it (`2>`: `2 >` is an argument and a `>`); a
    group's `(`, `)`, `{`, `}` passed over (a redirect after `)` is the group's last
    command's)."""
    pipelines: list[list[list[str]]] = []
    current: list[list[str]] = [[]]
    words, ends = lexed.words, lexed.ends
    for at, word in enumerate(words):
        if word in ("|", "|&"):
            current.append([])
        elif word in (";", "&&", "||", "&", ";;"):
            if any(current):
                pipelines.append([c for c in current if c])
            current = [[]]
        elif word in ("(", ")", "{", "}"):
            continue
        elif (
            current[-1]
            and current[-1][-1].isdigit()
            and _OPERATOR.fullmatch(word)
            and command[ends[at - 1] - 1 : ends[at - 1]].isdigit()  # no blank between
        ):
            current[-1][-1] += word
        else:
            current[-1].append(word)
    if any(current):
        pipelines.append([c for c in current if c])
    return pipelines


def _name(words: list[str]) -> str:
    """The name of the program a simple command runs (past assignments, `nohup`, `env`,
    `time`, redirections and options of these; its base name), "" where none; `exec` where
    an `exec` runs none (it only redirects)."""
    at, exec_seen = 0, False
    while at < len(words):
        word = words[at]
        if _OPERATOR.fullmatch(word):
            at += 2
        elif ASSIGNMENT.match(word) or word in _PASSED or (at and word.startswith("-")):
            exec_seen = exec_seen or word == "exec"
            at += 1
        else:
            return word.rsplit("/", 1)[-1]
    return "exec" if exec_seen else ""


def _to_file(words: list[str]) -> str | None:
    """The first redirect of fd 1 or 2 of this simple command to a file, as written; None
    where there is none (`_TERMINAL` is none; a duplication `2>&1` is none)."""
    for at, word in enumerate(words[:-1]):
        found = _OPERATOR.fullmatch(word)
        if found is None or found[2] not in _OUT_OPS or found[1] not in ("", "1", "2"):
            continue  # no redirect of the output ajetd reads (an input, `3>`)
        target = words[at + 1]
        if found[2] == ">&" and (target.isdigit() or target == "-"):
            continue  # `2>&1`, `>&2`: a duplication, no file
        if target not in _TERMINAL:
            return f"{word} {target}"
    return None
