"""Whether two runs' paths name one file, by the rule of where each runs, and how that file
is named in what ajetd says. Pure.

Why: two live runs must never write one val file (AgentJet appends every validation to it:
each would read the other's as its own). This machine resolves its own paths to the file they
name (`adapters.samefile.one_file`: a symlinked codebase, a `..`, a bind mount, walk93 F1); a
path on an SSH host names a file there, which resolving it here would get wrong (a file of this
machine, or none). So paths are compared by real path only where both runs run here, and as
written otherwise (walk93 review). The messages say both spellings and the real path where
they differ: one wording, at lint, admission, in the queue and at each read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

# a path's compare with other paths: the real path of the one file it and another name, or
# None where they name two; made once for a path, which it resolves once however many paths
# it is compared with (`adapters.samefile.one_file_as`)
Same = Callable[[str], Callable[[str], "str | None"]]


class Writer(NamedTuple):
    """A live run that writes a val file, and whether it runs on this machine."""

    run_id: str
    here: bool = True


def as_written(a: str) -> Callable[[str], str | None]:
    """`a`'s compare as written: `a` where another path is spelt alike, None where not; for
    paths this machine cannot resolve (an SSH host's), or where no resolver is given."""
    return lambda b: a if a == b else None


def same_file(a: str, same: Same) -> Callable[[str, bool], str | None]:
    """`a`'s compare with other paths, each given with whether both are this machine's: the
    real path of the one file `a` and it name, None where two; by `same` (this machine's
    resolver, made for `a` once, on first use) where both paths are this machine's, as
    written where either is another machine's."""
    here: list[Callable[[str], str | None]] = []

    def compare(b: str, both_here: bool) -> str | None:
        if not both_here:
            return a if a == b else None
        if not here:
            here.append(same(a))
        return here[0](b)

    return compare


def spelt(path: str, run_id: str, theirs: str, real: str) -> str:
    """`path` as the messages name it, where live run `run_id` names the same file `theirs`
    and both are `real`: the path alone where all three are one spelling, else all three."""
    if len(dict.fromkeys((path, theirs, real))) == 1:
        return path
    return f"{path} (run {run_id} names it {theirs}; both are {real})"
