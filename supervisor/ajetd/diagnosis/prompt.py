"""A program waiting at an interactive prompt for an answer nobody will type; pure.

ajetd gives every trial a terminal (a tmux pane), so a program that asks (wandb's login menu
without WANDB_API_KEY, `[y/N]`, `Password:`, git's `Username for '...':`, ssh's `(yes/no)?`)
waits there forever: its output stops on an unfinished line that ends in the question. It is
read only from the output's unfinished last line once output has paused (`live`), never from a
complete line: a prompt answered (the answer echoed, then a newline) is no longer waiting.
"""

from __future__ import annotations

import re

from ajetd.core.finding import WAITING_FOR_INPUT, Finding
from ajetd.diagnosis.text import decode_line

READ_CHARS = 400  # of the line's end: a prompt is short (user input: bounded)
# a question that names what it wants, ended by its colon (or question mark)
_ASKED = (
    r"enter your choice"
    r"|hit enter,? or press ctrl\+c to quit"
    r"|\b(?:password|passphrase|username)(?: for [^:']{0,200}(?:'[^']{1,200}')?)?"
    r"|'s password"
    r"|\b(?:api key|token)(?: \(input will not be visible\))?"
)
# a choice offered in brackets, with or without its colon or question mark
_CHOICE = r"\((?:yes/no|y/n|\[y\]/n)[^)]{0,20}\)|\[(?:y/n|yes/no)\]|\b(?:continue|proceed)\?"
_PROMPT = re.compile(rf"(?:(?:{_ASKED})\s{{0,4}}[:?]|(?:{_CHOICE})\s{{0,4}}[:?]?)$", re.IGNORECASE)
WANDB_FIX = (
    "wandb asks for a login because it has no API key: set WANDB_MODE=offline in [ajetd] env "
    "(its logs stay in ./wandb; `wandb sync` uploads them later), or give WANDB_API_KEY in the "
    "environment the daemon starts from; ajetd types nothing into a program's prompt"
)
FIX = (
    "make the program run unattended (its own flag such as --yes, an environment variable, "
    "credentials set beforehand, or stdin from /dev/null); or `ajetd attach` and answer it "
    "once. ajetd gives every trial a terminal but types nothing into it"
)


def waiting_prompt(partial: bytes, line: int) -> Finding | None:
    """The finding for output that stopped on `partial` (its unfinished last line, numbered
    `line`) when that line ends in a question a person must answer; None otherwise."""
    text = decode_line(partial[-4 * READ_CHARS :]).rstrip()[-READ_CHARS:]
    if not text or _PROMPT.search(text) is None:
        return None
    wandb = text.lower().startswith("wandb:")
    return Finding(
        WAITING_FOR_INPUT,
        "warning",
        line,
        text,
        "The program waits at a prompt for an answer typed at its terminal; nobody will type "
        "it, so it can never go on.",
        WANDB_FIX if wandb else FIX,
    )
