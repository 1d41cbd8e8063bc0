"""A launch command that sends its output to a file (`python train.py > run.log 2>&1`, as seed
002 tells agents to write it): ajetd reads the trial's terminal, so such a run showed no
NeMo-RL metric, no diagnosis and no output at all to the hang rule (walk86 F5). Where the
command ends with such a redirect to one file, it runs as `... 2>&1 | tee -i FILE`: the file
is written as before and the output also reaches the terminal (`tee -i`: a stop's SIGINT is
the program's to handle, tee reads on until it ends; `pipefail` keeps the program's status).
Any other redirect of the output is warned of. Pure.
"""

from __future__ import annotations

import re
import shlex

# a shell word tee can take as written: quoted text without command substitution, or plain
# characters (a variable such as $LOG_DIR expands the same for tee as for the redirect)
_WORD = r"""(?:"[^"`\\$]*(?:\$\{?\w{1,64}\}?[^"`\\$]*){0,8}"|'[^']*'|[\w./@%+=:,${}~-]{1,4096})"""
# plain arguments after the redirect (bash passes them to the command all the same): NeMo-RL
# overrides ajetd appends to the command, `++logger.log_dir=...`
_ARGS = r"(?P<args>(?:\s+[^\s;&|<>()'\"`$\\#]{1,4096}){0,64})"
_TAIL = re.compile(
    r"(?P<head>.*\S)\s+(?:"
    rf"(?P<both>&>>?|>&)\s*(?P<file1>{_WORD})"
    rf"|(?P<out>1?>>?)\s*(?P<file2>{_WORD})(?:\s+2>&1)?"
    rf"){_ARGS}\s*",
    re.S,
)
_REDIRECT = {">", ">>", "&>", "&>>", ">&", "1>", "1>>", "2>", "2>>", ">|"}


def followed(command: str) -> tuple[str, str | None]:
    """The command as ajetd runs it, and the file its output goes to where it was rewritten
    to reach the terminal too (None: run as written)."""
    found = _TAIL.fullmatch(command.rstrip())
    if found is None:
        return command, None
    target = found.group("file1") or found.group("file2")
    if target.strip("\"'").startswith("/dev/") or target.endswith(("&", "|", ";")):
        return command, None  # /dev/null, a tty: nothing to follow
    append = (found.group("both") or found.group("out") or "").endswith(">>")
    head = found.group("head")
    if head.rstrip().endswith(("&&", "||", "|", ";", "&", "2>&1", "\\")):
        return command, None  # `2>&1 > F` keeps stderr apart; a dangling operator: as is
    tee = "tee -i -a" if append else "tee -i"
    return f"{head}{found.group('args')} 2>&1 | {tee} {target}", target


def redirect_warnings(command: str) -> list[str]:
    """What lint and admission say of a command whose output goes to a file: the rewrite
    `followed` makes, or that ajetd cannot see what is redirected elsewhere."""
    target = followed(command)[1]
    if target is not None:
        return [
            f"exp_launch_command sends its output to {target}: ajetd runs it as `... 2>&1 | "
            f"tee -i {target}`, so {target} is written as before and the output also reaches "
            "the trial's log (metrics, diagnosis and the hang rule read it there)"
        ]
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return []
    if not any(w in _REDIRECT or re.fullmatch(r"[12]?>>?|&>>?", w) for w in words):
        return []
    return [
        "exp_launch_command redirects output to a file (`>`): ajetd reads only what reaches "
        "the terminal, so what goes to that file gets no diagnosis, no NeMo-RL metric and "
        "counts as silence to the hang rule; end the command with `> FILE 2>&1` (ajetd then "
        "follows FILE) or `2>&1 | tee FILE`"
    ]
