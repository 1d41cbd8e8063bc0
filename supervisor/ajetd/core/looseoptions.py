"""Options written in the `[ajetd]` part outside its fenced YAML block. Pure.

Where the part holds a fenced block, only the block is read (`options.load_yaml_part`): the
text around it is the writer's prose. A `max_trials: 1` put before the block, or a `hang:
{window: 10m, action: stop}` after it, was read by no one and the run went on with the
defaults (three trials, no stop on a hang) while lint said `ok` (walk 90, F1): the silent
loss that a second `[ajetd]` block is refused for. Such a line is found here and refused by
its line; prose that sets nothing (`Options for this run:`) stays allowed.

An option-like line starts as a key does (after a bullet's or a quote's mark, in backticks
or not) with a known key in any case, or its plural or singular (`gpu`, `Hangs`), or a name
with an underscore (YAML's, not prose's: `max_trial`); or it holds a known key as YAML
writes it further on, followed by a flow mapping or list (`hangs:  hang: {window: 10m}`) or
by one value ending the line (`... max_trials: 1`). Lines inside a fenced block are not
looked at (a second block is refused by itself). Found by two patterns over the text
outside the blocks, so prose costs no Python per line.
"""

from __future__ import annotations

import functools
import itertools
import re

from ajetd.core.markdown import fenced_blocks

MOST = 3  # lines named in full; the rest counted
_COUNTED = 100  # lines counted at most: "more than ..." past it
_BLOCKS = 4  # blocks skipped at most (more than one is refused by `blueprint._blocks`)


@functools.lru_cache(maxsize=4)
def _patterns(known: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The line that starts as a key (see the module's note), and a known key further on."""
    spelt = {k for key in known for k in (key, key + "s", key[:-1] if key.endswith("s") else key)}
    names = "|".join(sorted(map(re.escape, spelt), key=len, reverse=True))
    starts = re.compile(
        r"^(?=[^\n:：]*[:：])[ \t]*(?:(?:[-*+]|\d{1,2}[.)])[ \t]+)?(?:>[ \t]*)*`?"  # a colon first
        rf"(?=[A-Za-z])(?:(?i:{names})|[A-Za-z][A-Za-z0-9-]{{0,40}}_[A-Za-z0-9_-]{{0,40}})"
        r"`?[ \t]*(?::(?=[ \t]|$)|：)",
        re.MULTILINE,
    )
    keys = "|".join(sorted(map(re.escape, known), key=len, reverse=True))
    firsts = "".join(sorted({key[0] for key in known}))  # a cheap test first: 3x faster
    later = re.compile(
        rf"(?=[{firsts}])(?<![\w.-])(?:{keys}):[ \t]+(?:[{{\[]|\S+[ \t]*$)", re.MULTILINE
    )
    return starts, later


def loose_options(text: str, known: tuple[str, ...], first_line: int) -> list[str]:
    """The problems for the option-like lines of the `[ajetd]` part `text` outside its
    fenced blocks, each named by its line in the file (`first_line`: the line of the part's
    first); [] where it has no fenced block (then the whole part is the YAML) or none is
    option-like."""
    blocks = fenced_blocks(text, _BLOCKS)
    if not blocks:
        return []
    starts, later = _patterns(known)
    outside = [(0, blocks[0].start)]
    outside += [(a.end, b.start) for a, b in itertools.pairwise(blocks)]
    if len(blocks) < _BLOCKS:
        outside.append((blocks[-1].end, len(text)))
    found: set[int] = set()  # where each option-like line starts
    for begin, end in outside:
        for pattern in (starts, later):
            for match in pattern.finditer(text, begin, end):
                found.add(text.rfind("\n", 0, match.start()) + 1)
                if len(found) > _COUNTED:
                    break
    named = sorted(found)
    problems = []
    for start in named[:MOST]:
        stop = text.find("\n", start)
        line = text[start : stop if stop >= 0 else len(text)].strip()
        number = first_line + text.count("\n", 0, start)
        problems.append(
            f"line {number}, `{_cut(line)}`, is outside the part's fenced YAML block, where it "
            "would be ignored (only the block is read): move it into the block"
        )
    if len(named) > MOST:
        more = f"more than {_COUNTED - MOST}" if len(named) > _COUNTED else len(named) - MOST
        problems.append(f"{more} more option-like line(s) outside the fenced block")
    return problems


def _cut(line: str) -> str:
    return line if len(line) <= 60 else line[:59] + "…"
