"""Root-cause accuracy of `ajetd diagnose` on the corpus of real failure logs.

Usage: python bench/diagnosis.py [--json] [--only LIST | --new-since LIST] [--per-excerpt]

The corpus is `tests/data/corpus/<kind>/<name>.log`: the folder is the expected root cause
(the true one, set by reading the thread, not by what ajetd says), the first line names the
public source. Top-1: the first finding's kind equals the folder.

Held out, one repository at a time (leave-one-repository-out): for each source repository R,
its excerpts are diagnosed by the catalogue as it would stand had its patterns been written
without R's excerpts. A pattern's provenance is decided by rule, not by memory:
- a pattern that was in the catalogue before the corpus existed (`heldout/patterns-before-
  corpus.tsv`, the catalogue at 9f68d3c) was written from no excerpt: always kept;
- any other pattern of kind K was written from the corpus; its support is the set of
  repositories with an excerpt labelled K in which it matches a line. A pattern whose only
  support is R could only have been written from R's excerpts: it is removed while R is held
  out. One that matches another repository's excerpt of its kind could have been written from
  that one, so it stays (the optimistic side of the rule: a writer would have had to see it).
The structural reading (dress, exception-line shapes, wrappers, ranks) and the kinds' order
are shared by all and not removed: they were written against the whole corpus, so the figure
is an upper bound in that respect (see docs/benchmarks.md).

Held out one excerpt at a time (`--per-excerpt`, leave-one-excerpt-out): the same rule with
each excerpt in place of a repository, so a pattern that matches only that excerpt among those
of its kind is removed while it is read. A log in words no other excerpt shows is what a user's
unseen log mostly is (freezes 10 to 20: each blind batch's misses were a known kind in new
words far more often than a kind the catalogue lacks), so this figure says how the catalogue
reads a wording it was not written from, apart from which repository printed it.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from ajetd.core.termtext import strip_dress
from ajetd.diagnosis import catalogue
from ajetd.diagnosis.shape import EXCEPTION_LINE
from ajetd.diagnosis.stream import diagnose_chunks
from ajetd.diagnosis.text import decode_line

try:  # the held-out-in-time figures run this on trees that predate wrapped-message reading
    from ajetd.diagnosis.shape import continued
except ImportError:  # pragma: no cover - only under an older tree

    def continued(text: str, following: str) -> str | None:
        return None


HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "tests" / "data" / "corpus"
BEFORE_CORPUS = HERE / "heldout" / "patterns-before-corpus.tsv"
SOURCE = re.compile(r"^# source: (\S+?)#(\d+) (\S+)\s*$")
MAJOR = 5  # repositories with fewer excerpts are reported together
Row = tuple[Path, str, str]  # an excerpt: its path, its true kind, its source repository


def short(repo: str) -> str:
    """A repository's name for tables, as its owner spells it but lower case."""
    return repo.lower()


def _listed(args: list[str], flag: str) -> set[str] | None:
    """The corpus paths (`tests/data/corpus/<kind>/<name>.log`) a list file after `flag` names."""
    if flag not in args:
        return None
    listing = Path(args[args.index(flag) + 1]).read_text().split()
    return {str(Path(line)) for line in listing}


def corpus(args: tuple[str, ...] | list[str] = ()) -> list[Row]:
    """Each excerpt: its path, expected kind and source repository. `--only LIST`: only the
    excerpts a list names; `--new-since LIST`: only those it does not (a held-out batch: what
    arrived after the patterns were frozen)."""
    only, seen = _listed(list(args), "--only"), _listed(list(args), "--new-since")
    out = []
    for path in sorted(CORPUS.glob("*/*.log")):
        name = str(path.relative_to(CORPUS.parent.parent.parent))
        if (only is not None and name not in only) or (seen is not None and name in seen):
            continue
        first = path.open(encoding="utf-8", errors="replace").readline()
        match = SOURCE.match(first)
        repo = short(match.group(1)) if match else "?"
        out.append((path, path.parent.name, repo))
    return out


def _body(path: Path) -> bytes:
    """The excerpt without its source line (that line is not part of the program's output)."""
    data = path.read_bytes()
    return data[data.find(b"\n") + 1 :]


def first_kind(path: Path) -> str:
    """The root cause ajetd names."""
    findings = diagnose_chunks([_body(path)])
    return findings[0].kind if findings else "(none)"


def _readings(path: Path) -> list[str]:
    """Each line of an excerpt as the diagnosis reads it: undressed, for a wrapper such as
    `RayTaskError(Inner): msg` also as `Inner: msg`, and for an exception message wrapped over
    two lines also as the two read together."""
    out = []
    lines = [decode_line(raw) for raw in _body(path).split(b"\n")]
    for at, line in enumerate(lines):
        body = strip_dress(line)
        out.append(body)
        joined = continued(line, lines[at + 1]) if at + 1 < len(lines) else None
        if joined is not None:
            out.append(strip_dress(joined))
        shape = EXCEPTION_LINE.match(body.lstrip())
        if shape is not None and shape.group("inner"):
            out.append(f"{shape.group('inner')}: {body.lstrip()[shape.end() :]}")
    return out


def support(rows: list[Row], by_excerpt: bool = False) -> dict[tuple[str, str], set[str]]:
    """For each pattern written from the corpus, (kind, pattern) -> the repositories with an
    excerpt of that kind in which it matches a line (`by_excerpt`: the excerpts' paths)."""
    before = {
        tuple(line.split("\t", 1))
        for line in BEFORE_CORPUS.read_text().splitlines()
        if "\t" in line
    }
    out: dict[tuple[str, str], set[str]] = {
        (k.name, p.pattern): set()
        for k in catalogue.CATALOGUE
        for p in k.patterns
        if (k.name, p.pattern) not in before
    }
    for path, kind, repo in rows:
        if kind not in catalogue.BY_NAME:
            continue
        lines = _readings(path)
        for pattern in catalogue.BY_NAME[kind].patterns:
            key = (kind, pattern.pattern)
            if key in out and any(pattern.search(line) for line in lines):
                out[key].add(str(path) if by_excerpt else repo)
    return out


def written_only_from(
    supported: dict[tuple[str, str], set[str]],
) -> dict[str, set[tuple[str, str]]]:
    """repository -> the patterns whose only support is that repository."""
    out: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for key, repos in supported.items():
        if len(repos) == 1:
            out[next(iter(repos))].add(key)
    return out


@contextmanager
def catalogue_without(drop: set[tuple[str, str]]) -> Iterator[None]:
    """The catalogue with the patterns `drop` names removed, for the duration (kinds keep their
    order, so the trigger-word index stays valid; a kind may be left with no pattern)."""
    whole = catalogue.CATALOGUE
    kinds = {name for name, _ in drop}  # (only their kinds remade: most excerpts drop none)
    catalogue.CATALOGUE = tuple(
        replace(k, patterns=tuple(p for p in k.patterns if (k.name, p.pattern) not in drop))
        if k.name in kinds
        else k
        for k in whole
    )
    try:
        yield
    finally:
        catalogue.CATALOGUE = whole


def held_out(rows: list[Row]) -> tuple[list[str], dict[str, int]]:
    """Each excerpt's first kind with its own repository held out, in `rows` order, and how
    many patterns each repository alone supports."""
    only_from = written_only_from(support(corpus()))
    named = []
    for path, _, repo in rows:
        with catalogue_without(only_from.get(repo, set())):
            named.append(first_kind(path))
    return named, {repo: len(keys) for repo, keys in only_from.items()}


def per_excerpt(rows: list[Row]) -> list[str]:
    """Each excerpt's first kind with the patterns only it supports removed (leave-one-excerpt-
    out), in `rows` order. Support is counted over the whole corpus, as `held_out` does."""
    only_from = written_only_from(support(corpus(), by_excerpt=True))
    named = []
    for path, _, _ in rows:
        with catalogue_without(only_from.get(str(path), set())):
            named.append(first_kind(path))
    return named


def pct(hit: int, total: int) -> str:
    return f"{100 * hit / total:.1f} % ({hit}/{total})" if total else "n/a"


def main(args: list[str]) -> None:
    excerpts = corpus(args)
    rows = [(p, kind, repo, first_kind(p)) for p, kind, repo in excerpts]
    held_named, alone = held_out(excerpts)
    sizes = Counter(repo for _, _, repo, _ in rows)
    others = sum(1 for n in sizes.values() if n < MAJOR)

    def group(repo: str) -> str:
        return repo if sizes[repo] >= MAJOR else f"other ({others} repositories)"

    per_kind: dict[str, Counter[bool]] = defaultdict(Counter)
    per_repo: dict[str, Counter[bool]] = defaultdict(Counter)
    held: dict[str, Counter[bool]] = defaultdict(Counter)
    held_misses = []
    for (path, kind, repo, got), held_got in zip(rows, held_named, strict=True):
        per_kind[kind][got == kind] += 1
        per_repo[group(repo)][got == kind] += 1
        held[group(repo)][held_got == kind] += 1
        held["all excerpts, each held out with its repository"][held_got == kind] += 1
        if held_got != kind:
            held_misses.append((str(path.relative_to(CORPUS)), repo, kind, held_got))
    hits = sum(got == kind for _, kind, _, got in rows)
    misses = [(str(p.relative_to(CORPUS)), kind, got) for p, kind, _, got in rows if got != kind]
    table = sorted(per_repo.items(), key=lambda rc: -sum(rc[1].values()))
    if "--json" in args:
        report = {
            "overall": [hits, len(rows)],
            "per_kind": {k: [c[True], c[True] + c[False]] for k, c in sorted(per_kind.items())},
            "per_repo": {r: [c[True], c[True] + c[False]] for r, c in sorted(per_repo.items())},
            "held_out": {r: [c[True], c[True] + c[False]] for r, c in sorted(held.items())},
            "patterns_only_from": dict(sorted(alone.items())),
            "misses": misses,
            "held_out_misses": held_misses,
        }
        print(json.dumps(report, indent=2))
        return
    print(f"top-1 root cause: {pct(hits, len(rows))} over {len(sizes)} repositories")
    print("\n| kind | top-1 |\n|---|---|")
    for kind, c in sorted(per_kind.items()):
        print(f"| {kind} | {pct(c[True], c[True] + c[False])} |")
    print("\n| repository | top-1 | held out (patterns only it supports removed) | removed |")
    print("|---|---|---|---|")
    for repo, c in table:
        h = held[repo]
        gone = (
            alone.get(repo, 0)
            if repo in sizes
            else sum(n for r, n in alone.items() if sizes[r] < MAJOR)
        )
        total = h[True] + h[False]
        print(f"| {repo} | {pct(c[True], c[True] + c[False])} | {pct(h[True], total)} | {gone} |")
    h = held["all excerpts, each held out with its repository"]
    print(
        f"| all excerpts, each held out with its repository | | {pct(h[True], sum(h.values()))} | |"
    )
    print(f"\nmisses ({len(misses)}): expected -> named")
    for name, kind, got in misses:
        print(f"  {name}: {kind} -> {got}")
    print(f"\nheld-out misses ({len(held_misses)}): expected -> named with its repository held out")
    for name, repo, kind, got in held_misses:
        print(f"  {name} ({repo}): {kind} -> {got}")
    if "--per-excerpt" in args:
        alone_named = per_excerpt(excerpts)
        alone_hits = sum(
            got == kind for (_, kind, _), got in zip(excerpts, alone_named, strict=True)
        )
        print(f"\nheld out one excerpt at a time: {pct(alone_hits, len(excerpts))}")
        for (path, kind, _), got in zip(excerpts, alone_named, strict=True):
            if got != kind:
                print(f"  {path.relative_to(CORPUS)}: {kind} -> {got}")


if __name__ == "__main__":
    main(sys.argv[1:])
