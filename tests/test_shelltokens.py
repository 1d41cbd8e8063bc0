"""One reading of a launch command's words (`core.shelltokens`) for every reader: `tokens`
(workdir, redirect, program) and `words` (shellenv's assignments, NeMo-RL's overrides and
what follows its script) agree on commands built from known words, each quoted as bash
reads it back; and the cases the readers that had their own shlex got wrong."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from ajetd.core import shelltokens
from ajetd.core.shellenv import command_env
from ajetd.frameworks import nemorl

# a word written bare: `#` only inside it (bash's comment starts only where a word would);
# never all digits (`2 >` reads as a redirection's descriptor), never `run_*.py`
BARE = st.text(alphabet="abcxyz019_./+=#%:,@", min_size=1, max_size=8).filter(
    lambda w: w[0] not in "#=" and not w.isdigit()
)


def as_read(value: str) -> str:
    """The word `shelltokens` gives for a quoted argument `value`: the value, but one made of
    operator characters only (`';'`, `'&&'`) written quoted, so that no reader takes the
    argument for the operator (a `cd` after `'&'` was read as a move)."""
    return f"'{value}'" if value and set(value) <= set(";&|()<>") else value


# any text, quoted (shlex.quote: what bash reads back as that word), line breaks and all;
# not starting with what nemorl's readers take for a flag, a redirection or a comment
QUOTED = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r"), max_size=10
).filter(lambda w: w[:1] not in ("-", "<", ">", "#") and not w.endswith(".py"))
WORD = st.one_of(BARE.map(lambda w: (w, w)), QUOTED.map(lambda w: (shlex.quote(w), w)))
NAME = st.sampled_from(["K", "WANDB_API_KEY", "_x1"])
OPERATOR = st.sampled_from(["&&", "||", "|", ";", "&", "|&"])
COMMENT = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\\\u2028\u2029\x85"),
    max_size=12,
)
SCRIPT = ["python", "examples/run_grpo.py", "--config", "c.yaml"]


@dataclass
class Command:
    """A command as written, and what each reader should make of it."""

    text: str = ""
    words: list[str] = field(default_factory=list)  # as `shelltokens.words` gives them
    tokens: list[str] = field(default_factory=list)  # as `shelltokens.tokens`, less the last `;`
    env: dict[str, str] = field(default_factory=dict)  # as `command_env` gives it
    hydra: list[str] | None = None  # the arguments after the first run_*.py, once seen
    follows: bool = False  # something follows that script's arguments

    def add(self, written: str, word: str, token: str | None = "") -> None:
        """`written` and a blank; `word` the word it is, `token` what `tokens` reads (the
        word unless told; None: nothing, a comment)."""
        self.text += written + " "
        self.words.append(word)
        self.tokens += [] if token is None else [token or word]
        if self.hydra is not None and not self.follows:
            self.follows = word in shelltokens.OPERATORS or word == "\n" or "\n" in word
            self.follows = self.follows or word.startswith("#")
            if not self.follows and word != "--config" and self.words[-2:-1] != ["--config"]:
                self.hydra.append(word)


@st.composite
def commands(draw: st.DrawFn) -> Command:
    """Lines of simple commands joined by operators, each line perhaps ending in a comment;
    a simple command: `export K=V...`, or `env -i K=V... PROGRAM ARGS`, or `K=V... PROGRAM
    ARGS`, the program perhaps NeMo-RL's script."""
    out = Command()
    lines = draw(st.integers(1, 3))
    for line in range(lines):
        for n in range(draw(st.integers(1, 3))):
            if n:
                out.add(*(2 * [draw(OPERATOR)]))
            form = draw(st.sampled_from(["export", "env", "plain"]))
            if form != "plain":
                out.add(form, form)
            if form == "env":
                out.add("-i", "-i")
            for _ in range(draw(st.integers(0 if form != "export" else 1, 2))):
                name, (written, value) = draw(NAME), draw(WORD)
                out.add(f"{name}={written}", f"{name}={value}")
                out.env[name] = value
            if form == "export":
                continue
            if draw(st.booleans()) and out.hydra is None:
                for word in SCRIPT:
                    out.add(word, word)
                out.hydra = []
            else:
                out.add("tee", "tee")
            for written, word in draw(st.lists(WORD, max_size=3)):
                out.add(written, as_read(word))
        if draw(st.booleans()):
            comment = "#" + draw(COMMENT)
            out.text += comment
            out.add("", comment.strip(), None)
            out.text = out.text[:-1]
        if line < lines - 1:
            out.text += "\n"
            out.add("", "\n", ";")
            out.text = out.text[:-1]
    return out


@settings(max_examples=200, deadline=None)
@given(commands())
def test_every_reader_takes_the_words_bash_would(command: Command) -> None:
    words = shelltokens.words(command.text)
    assert words == command.words, command.text
    lexed = shelltokens.tokens(command.text)
    assert lexed is not None
    assert lexed.words == [*command.tokens, ";"], command.text
    assert command_env(command.text) == command.env, command.text
    assert nemorl.hydra_arguments(command.text) == (command.hydra or []), command.text
    assert nemorl.overridable(command.text) == (
        command.hydra is not None and not command.follows
    ), command.text


def test_the_cases_a_reader_of_its_own_got_wrong() -> None:
    """Each a class the two shlex copies (shellenv's, nemorl's) read otherwise than bash."""
    # `#` inside a word is no comment; a comment's apostrophe no open quote
    assert shelltokens.words("echo a#b $# c") == ["echo", "a#b", "$#", "c"]
    script = "python examples/run_grpo.py --config c.yaml"
    assert nemorl.hydra_arguments(f"{script} a=1 # it's the smoke run") == ["a=1"]
    assert not nemorl.overridable(f"{script} # it's the smoke run")
    # a run of punctuation is its operators: `);` ends the subshell and the command
    assert not nemorl.overridable(f"( {script} ); echo done")
    assert command_env("( cd x ); K=v run") == {"K": "v"}
    # `|&` and an operator ending a line end a simple command
    assert command_env("a |& K=v b") == {"K": "v"}
    assert command_env("python x.py &&\nK=v b") == {"K": "v"}
    # a here document's lines are input, not commands; `$( ... )` is one word
    assert command_env("cat > notes <<EOF\nK=v\nEOF\nrun") == {}
    assert command_env("echo $(cat k) K=v") == {}
    assert nemorl.overridable(f"{script} a=$(cat k)")
