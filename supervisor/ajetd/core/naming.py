"""Run ids, tmux session names (DESIGN §3: short, unique, `[a-z0-9_]`) and window names."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Collection, Sequence
from pathlib import PurePosixPath

RUN_ID = re.compile(r"^[a-z0-9]{6}\Z")
SUBMITTED = re.compile(r"^(?P<run_id>[a-z0-9]{6})__(?P<stem>.+)\.(?i:md|markdown)\Z")
MAX_SESSION = 48
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


STEM_BYTES = 160  # a stem in a name ajetd makes (`ID__stem.why.txt`, its temp) fits NAME_MAX


def fit_stem(stem: str, limit: int = STEM_BYTES) -> str:
    """`stem` cut to `limit` UTF-8 bytes at a character boundary (`…` marks the cut): a user's
    255-byte file name must still fit once ajetd puts its run id and suffixes around it."""
    if len(stem.encode("utf-8", errors="surrogateescape")) <= limit:
        return stem
    cut = stem.encode("utf-8", errors="surrogateescape")[: limit - 3]
    return cut.decode("utf-8", errors="ignore") + "…"


def safe_name(name: str) -> str:
    """A file name as it may be shown and stored: bytes that are not UTF-8 as `\\xNN`,
    control characters escaped, so no name breaks a log line, a record or a terminal (nor
    `SUBMITTED`, whose stem holds no newline)."""
    raw = name.encode("utf-8", errors="surrogateescape")  # the name's bytes, as Linux has them
    text = raw.decode("utf-8", errors="backslashreplace")
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


Draw = Callable[[int], bytes]  # n random bytes: `os.urandom`, given by the caller (an effect)


def random_word(draw: Draw, length: int = 6) -> str:
    """`length` characters of `_ALPHABET`, each uniform, from `draw`'s bytes (the kernel's:
    `os.urandom`, as `secrets.choice` draws them; `secrets` itself costs `ajetd submit` 4 ms
    of imports: hmac, hashlib). A byte over the last whole multiple of 36 is drawn again, so
    no character is likelier than another."""
    limit = 256 - 256 % len(_ALPHABET)
    chars: list[str] = []
    while len(chars) < length:
        chars += (_ALPHABET[b % len(_ALPHABET)] for b in draw(length) if b < limit)
    return "".join(chars[:length])


def new_run_id(taken: Callable[[str], bool], draw: Draw) -> str:
    """A fresh six-character id for which `taken` is False."""
    while True:
        candidate = random_word(draw)
        if not candidate.isdigit() and not taken(candidate):
            return candidate


def _words(text: str) -> list[str]:
    """The ASCII words of `text`, accents taken off first (`café ünïcode` -> `cafe`,
    `unicode`, not `caf`, `n`, `code`); letters with no ASCII form split words."""
    bare = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return re.findall(r"[a-z0-9]+", bare.lower())


_EXPERIMENT = re.compile(
    r" \(campaign (?P<campaign>[A-Za-z0-9._-]{1,64}), experiment \d{1,9} "
    r"(?P<name>[A-Za-z0-9._-]{1,64})[:)]"
)


def experiment_purpose(base: str, campaign: str, index: int, name: str, description: str) -> str:
    """A campaign experiment's purpose: the base blueprint's, then which campaign and
    experiment (`session_base` finds the experiment's name in it)."""
    purpose = f"{base} (campaign {campaign}, experiment {index} {name}"
    return purpose + (f": {description})" if description else ")")


# Words that name no experiment: ajetd's own names for a blueprint (`blueprint.md` as README
# says to drop it, `stdin.md` for `submit -`) and the usual names of folders and files
# (`/data/exp/results`, `config.yaml`). A name of these words alone is passed over.
_GENERIC = frozenset(
    {"blueprint", "stdin", "md", "result", "results", "output", "outputs", "out", "run", "runs"}
    | {"exp", "experiment", "config", "conf", "yaml", "base", "template", "train"}
)


def run_names(source: str, result_dir: str, config: str) -> tuple[str, str, str]:
    """Where a run's session name is looked for when its purpose has no ASCII word, in order:
    the blueprint's file name, its result dir's name (its own: no two runs share one), its
    config's (the user's file, not ajetd's copy: the caller passes `original_of`). Not its
    codebase's, which every run of that codebase shares: the run id says more."""
    return (PurePosixPath(source).stem, PurePosixPath(result_dir).name, PurePosixPath(config).stem)


SESSION_PREFIX = "ajet_"  # every run's tmux session name begins so (`session_base`)


# A control character as `blueprint.visible` escapes it in a purpose (`\x1b`), with the
# terminal sequence it opens (CSI `\x1b[31m`, OSC `\x1b]0;title\x07`): no words of the purpose
# (walk93 F4: `ajet_evil_x1b_0_pwned_x07title_x1b_31mred_x1b`). Bounded: a sequence is looked
# for over at most 200 characters, so no text makes the match slow.
_ESCAPED = re.compile(
    r"\\x1b\[[0-?]{0,200}[ -/]{0,20}[@-~]"
    r"|\\x1b\][^\n]{0,200}?(?:\\x07|\\x1b\\)"
    r"|\\x[0-9a-f]{2}"
)
_NAMED_FROM = 4096  # a purpose's first characters give its session name (which holds 40)


def cleaned(purpose: str) -> str:
    """The purpose's text as words are read from it: its escaped control characters and the
    terminal sequences they open left out."""
    return _ESCAPED.sub(" ", purpose[:_NAMED_FROM])


def session_base(purpose: str, names: Sequence[str], run_id: str) -> str:
    """`ajet_<slug>` from the purpose's ASCII words, else from the first of `names`
    (`run_names`) with a word that is not generic (`blueprint`, `results`), else the run id.
    A campaign experiment's (`experiment_purpose`) ends with the experiment's name, which is
    kept: the base's and the campaign's words are cut first, so its sessions differ by what
    each tries."""
    tail: list[str] = []
    purpose = cleaned(purpose)
    found = _EXPERIMENT.search(purpose)
    if found:
        tail = [w for w in _words(found["name"]) if w != "ajet"]
        purpose = f"{purpose[: found.start()]} {found['campaign']}"
    words = [w for w in _words(purpose) if w != "ajet"]
    if not words and not tail:
        named = ([w for w in _words(name) if w != "ajet"] for name in names)
        words = next((w for w in named if not _GENERIC.issuperset(w)), [run_id])
    end = "".join("_" + w for w in tail)
    if len("ajet" + end) > MAX_SESSION - 3:  # the name alone is too long: cut as any words
        words, end = tail, ""
    name = "ajet"
    for word in words:
        if len(name) + 1 + len(word) + len(end) > MAX_SESSION - 3:  # room for a `_N` suffix
            break
        name += "_" + word
    if name == "ajet" and not end:  # the first word alone is too long
        name = SESSION_PREFIX + words[0][: MAX_SESSION - 8]
    return name + end


def unique_session(base: str, taken: Collection[str]) -> str:
    """`base`, or `base_2`, `base_3`, ... : the first name not in `taken`."""
    if base not in taken:
        return base
    n = 2
    while f"{base}_{n}" in taken:
        n += 1
    return f"{base}_{n}"


def window_name(trial: int) -> str:
    """The name of a run's tmux window while trial `trial` runs in it. A named window is not
    renamed after its running command (tmux's `automatic-rename`), which costs the server a
    look-up after every output."""
    return f"trial-{trial}"
