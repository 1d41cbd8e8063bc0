"""A launch command's words and operators as bash splits them, for the readers that judge
it (`workdir`: the folder its program runs in; `hosts.program`: whether that program is
there; `redirect`: where its output goes; `shellenv`: what it sets in its environment;
`frameworks.nemorl`: what follows its program's arguments). Pure.

Quotes, `\\` continuations and comments as bash reads them (`shlex`; a `#` starts a comment
only where a word would start: `a#b` and `$#` are words), operators their own tokens (`&&(`
is two), a line's end a `;` (`words`: a line break), a quote open across lines read on (at most
_QUOTED_LINES lines), `$( ... )` one word, and a here document's lines (`<<EOF` to `EOF`)
none: they are input, not commands (walk97 F6: a setup `cat > notes.md <<EOF` whose text
held `>` was read as commands). None where the text does not parse.
"""

from __future__ import annotations

import io
import itertools
import re
import shlex
from dataclasses import dataclass

OPERATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", ";;", "|&"})


@dataclass(frozen=True)
class Lexed:
    """The command's words and operators (a line's end as `;`), and where each ends in the
    command as written (at most one blank past it), to quote a simple command as written."""

    words: list[str]
    ends: list[int]

    def written(self, command: str, at: int, end: int) -> str:
        """The words `at`..`end` as the command writes them (up to 60 characters)."""
        start = self.ends[at - 1] if at else 0
        text = command[start : self.ends[end - 1]].strip()
        return text if len(text) <= 60 else text[:59] + "…"


# bash's operators, longest first: shlex gives a run of punctuation (`&&(`, `);`) as one word
_SPLIT = re.compile(r"&&|\|\||;;|\|&|&>>|>>|<<<|<<|>\||<>|[<>]&|&>|.", re.S)


def tokens(command: str) -> Lexed | None:
    """The command's words and operators, a line's end as `;`; None where it does not parse.
    `$( ... )` (and a function's `()`) is one word: what runs inside is not the program's shell."""
    return _read(command, as_words=False)


def words(command: str) -> list[str] | None:
    """The command's words and operators as `tokens` reads them, but a line break a `\n` of its
    own (one between two lines that hold words) and a comment one word (`# ...` as written):
    for the readers that say what follows a program's arguments (words appended to the line go
    into a comment, or to the last line's command). None where it does not parse."""
    lexed = _read(command, as_words=True)
    return None if lexed is None else lexed.words


def _read(command: str, *, as_words: bool) -> Lexed | None:
    """`tokens` (a `;` after each line) or, `as_words`, `words` (a `\n` between lines that
    hold words, comments kept)."""
    words: list[str] = []
    ends: list[int] = []
    offset = 0
    lines = command.replace("\\\n", "  ").split("\n")  # same length: offsets hold
    at = 0
    while at < len(lines):
        # a quote open at a line's end goes on to the next (at most _QUOTED_LINES lines)
        for more in range(min(_QUOTED_LINES, len(lines) - at)):
            chunk = "\n".join(lines[at : at + more + 1])
            lexed = _line(chunk, offset, as_words)
            if lexed is not None:
                break
        if lexed is None:
            return None
        if not as_words:
            words += [*lexed[0], ";"]
            ends += [*lexed[1], offset + len(chunk)]
        elif lexed[0]:
            words += ["\n", *lexed[0]] if words else lexed[0]
            ends += [offset - 1, *lexed[1]] if ends else lexed[1]  # `\n`: the line before's end
        offset += len(chunk) + 1
        at += more + 1
        for delimiter in heredocs(lexed[0]):  # its lines are input: passed over, unread
            while at < len(lines) and not ends_heredoc(lines[at], delimiter):
                offset += len(lines[at]) + 1
                at += 1
            offset += len(lines[at]) + 1 if at < len(lines) else 0
            at += 1
    return _substitutions_joined(Lexed(words, ends))


def heredocs(words: list[str]) -> list[str]:
    """The delimiters of the here documents a line opens (`<<EOF`, `<< 'EOF'`, `<<-EOF`), in
    order; a `-` first: its closing line may be indented with tabs."""
    return [words[n + 1] for n, word in enumerate(words[:-1]) if word == "<<" and words[n + 1]]


def ends_heredoc(line: str, delimiter: str) -> bool:
    """Whether `line` closes the here document `delimiter` opened (`heredocs`)."""
    if delimiter.startswith("-") and len(delimiter) > 1:
        return line.lstrip("\t") == delimiter[1:]
    return line == delimiter


_QUOTED_LINES = 64


def split_operators(token: str) -> list[str]:
    """A shlex token as bash's words and operators: a run of punctuation (`);`, `&&(`,
    `2>&1`'s `>&`) split into its operators, longest first; any other token as it is."""
    return _SPLIT.findall(token) if token and set(token) <= _PUNCTUATION else [token]


class _Lexer(shlex.shlex):
    """shlex reading `#` as bash does: a comment only where a word would start (shlex ends a
    word at it: `a#b` read as `a`, `$#` as `$`)."""

    @property
    def commenters(self) -> str:
        between = getattr(self, "state", " ") == " "  # shlex's state: between words
        return self._commenters if between else ""

    @commenters.setter
    def commenters(self, value: str) -> None:
        self._commenters = value


def _line(line: str, offset: int, comments: bool) -> tuple[list[str], list[int]] | None:
    """One line's words and operators, and where each ends (`comments`: a comment the last
    word); None at an open quote."""
    words: list[str] = []
    ends: list[int] = []
    stream = io.StringIO(line)
    lexer = _Lexer(stream, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        for token in lexer:
            end = offset + stream.tell() - len(getattr(lexer, "_pushback_chars", ()))
            if token and set(token) <= _PUNCTUATION and _as_written(line, end - offset, token):
                ops = _SPLIT.findall(token)
                words += ops
                start = end - len(token)  # each operator's end, from the run's start
                ends += list(itertools.accumulate((len(op) for op in ops), initial=start))[1:]
            else:  # a quoted operator stays quoted: a word equal to none of them
                words.append(f"'{token}'" if token and set(token) <= _PUNCTUATION else token)
                ends.append(end)
    except ValueError:  # an open quote
        return None
    comment = line[ends[-1] - offset if ends else 0 :].strip()  # all else the lexer gave
    if comments and comment:
        words.append(comment)
        ends.append(offset + len(line.rstrip()))
    return words, ends


_PUNCTUATION = frozenset(";&|()<>")


def _as_written(line: str, end: int, token: str) -> bool:
    """Whether `token`, ending at `end` of `line`, stands there unquoted: an operator. A quoted
    or escaped one (`'&'`, `"|"`, `\\&`) is a word, an argument the program gets, never a
    command's end (a `cd` after `'&'` was read as a move)."""
    if end > 0 and line[end - 1 : end].isspace():  # the lexer took the space that ended it
        end -= 1
    start = end - len(token)
    return line[start:end] == token and (start == 0 or line[start - 1] != "\\")


# words after which a `(` opens a subshell still: reserved words, `time` (`{ (cd x; y); }`,
# `! (...)`, `time (...)`, `then (...)` were read as a function named `{`)
_GROUP_BEFORE = frozenset({"{", "!", "time", "if", "then", "else", "elif", "do", "while", "until"})


def _opens_group(words: list[str]) -> bool:
    """Whether a `(` after `words` opens a subshell (an operator or `_GROUP_BEFORE` before
    it, `time -p` too), not a `$(` or a function's `()`."""
    last = words[-1]
    timed = last == "-p" and len(words) > 1 and words[-2] == "time"
    return last in OPERATORS or last == "\n" or last in _GROUP_BEFORE or timed


def _substitutions_joined(lexed: Lexed) -> Lexed:
    """A `(` right after a word (`$(`, `f()`) opens no subshell the program runs in: it and
    what it holds, to its `)`, join the word before it; after an operator or a reserved word
    it opens a subshell (`_opens_group`)."""
    words: list[str] = []
    ends: list[int] = []
    at = 0
    while at < len(lexed.words):
        word = lexed.words[at]
        if word == "(" and words and not _opens_group(words):
            depth, close = 0, at
            while close < len(lexed.words):
                depth += {"(": 1, ")": -1}.get(lexed.words[close], 0)
                if depth == 0:
                    break
                close += 1
            close = min(close, len(lexed.words) - 1)
            words[-1] += " ".join(lexed.words[at : close + 1])
            ends[-1] = lexed.ends[close]
            at = close + 1
            continue
        words.append(word)
        ends.append(lexed.ends[at])
        at += 1
    return Lexed(words, ends)


def simple(tokens: list[str], at: int) -> tuple[list[str], int]:
    """The words of the simple command at `at`, and where the operator after it is."""
    end = at
    while end < len(tokens) and tokens[end] not in OPERATORS:
        end += 1
    return tokens[at:end], end
