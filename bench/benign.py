"""False findings of `ajetd diagnose` on real HEALTHY output (the benign corpus).

Usage: python bench/benign.py [--json] [--live]

The corpus is `tests/data/benign/<name>.log`: what programs printed in runs that had not failed
at that point (vLLM's and SGLang's start-up, NCCL's INFO lines, Ray's, verl's and NeMo-RL's
training output, argument dumps, warnings, retries, exceptions a program logged and went on
from), the first line naming the public source (bench/heldout/benign94-queries.md says how
each was chosen). Any finding there is a false one; a fatal or science one is the costly kind:
on a run that exited 0 it adds the warning "its output shows KIND: it may not have finished its
work" (`daemon.ending.FATAL_SHOWN`), and on a run that failed for another reason it can name
the wrong root cause and so the wrong relaunch decision.

Printed: how many excerpts get a finding at all, how many a fatal or science one, and for each
finding its kind, severity and the line that triggered it. `--live`: also read each excerpt
as a running trial's would be at a pause after every line (`StreamDiagnoser.peek`, what
`LiveScans.paused` shows), and count a kind seen at any pause.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

from ajetd.core.finding import Finding
from ajetd.diagnosis.stream import StreamDiagnoser, diagnose_chunks

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "tests" / "data" / "benign"
FATAL_SHOWN = ("fatal", "science")  # as daemon.ending.FATAL_SHOWN: what warns on an exit 0


SOURCE = re.compile(r"^# source: (\S+?)(?:#\d+| \S+)")


def excerpts() -> list[Path]:
    return sorted(CORPUS.glob("*.log"))


def source(path: Path) -> str:
    """The repository an excerpt was taken from (its first line names it), lower case."""
    match = SOURCE.match(path.open(encoding="utf-8", errors="replace").readline())
    return match.group(1).lower() if match else "?"


def body(path: Path) -> bytes:
    """The excerpt without its source line (that line is not part of the program's output)."""
    data = path.read_bytes()
    return data[data.find(b"\n") + 1 :]


def findings(path: Path) -> list[Finding]:
    """What `ajetd diagnose` says of the excerpt."""
    return diagnose_chunks([body(path)])


def live_kinds(path: Path) -> dict[str, Finding]:
    """Each kind a running trial's reader shows at some pause, the output having paused after
    each of its lines (the first finding of each kind)."""
    stream, seen = StreamDiagnoser(), {}
    for line in body(path).splitlines(keepends=True):
        stream.feed(line)
        for found in stream.peek():
            seen.setdefault(found.kind, found)
    for found in stream.close():
        seen.setdefault(found.kind, found)
    return seen


def severe(found: list[Finding]) -> list[Finding]:
    return [f for f in found if f.severity in FATAL_SHOWN]


def main(args: list[str]) -> None:
    paths = excerpts()
    rows = [(p, findings(p)) for p in paths]
    live = {p: live_kinds(p) for p in paths} if "--live" in args else {}
    any_hit = [(p, f) for p, f in rows if f]
    fatal_hit = [(p, severe(f)) for p, f in rows if severe(f)]
    kinds = Counter(f.kind for _, found in rows for f in found)
    sources = Counter(source(p) for p in paths)
    if "--json" in args:
        report = {
            "excerpts": len(paths),
            "with_any_finding": len(any_hit),
            "with_fatal_or_science": len(fatal_hit),
            "kinds": dict(sorted(kinds.items())),
            "findings": {
                p.name: [[f.kind, f.severity, f.line, f.evidence] for f in found]
                for p, found in any_hit
            },
        }
        if live:
            report["live_with_fatal_or_science"] = sum(
                1 for seen in live.values() if severe(list(seen.values()))
            )
            report["live_findings"] = {p.name: sorted(seen) for p, seen in live.items() if seen}
        print(json.dumps(report, indent=2))
        return
    print(f"benign excerpts: {len(paths)} from {len(sources)} repositories")
    print(f"with any finding: {len(any_hit)}/{len(paths)}")
    print(f"with a fatal or science finding: {len(fatal_hit)}/{len(paths)}")
    if kinds:
        print("kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    for path, found in any_hit:
        for f in found:
            print(f"  {path.name}:{f.line + 1} {f.kind} ({f.severity}) {f.evidence[:160]!r}")
    if live:
        at_pause = [(p, seen) for p, seen in live.items() if severe(list(seen.values()))]
        print(f"\nlive (a pause after every line): fatal or science at some pause: {len(at_pause)}")
        for path, seen in at_pause:
            for f in severe(list(seen.values())):
                print(f"  {path.name}:{f.line + 1} {f.kind} ({f.severity}) {f.evidence[:160]!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
