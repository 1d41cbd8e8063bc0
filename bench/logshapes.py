"""Metamorphic check of the diagnosis: the same failure printed in a different dress names the
same root cause.

Usage: python bench/logshapes.py [--only T1,T2] [--every N] [--show] [--json] [--benign]

Each transformation below rewrites an excerpt of the corpus (`tests/data/corpus/<kind>/*.log`,
its source line dropped) as real output shows the same text: other line ends, a progress bar
redrawn before lines, colour codes, a prefix before every line (a logger's timestamp, Ray's
worker mark, torchrun's rank, srun's label, Docker Compose's service, a pod log's timestamp),
a container runtime's log file (Docker's JSON records, the CRI format; a line in parts), lines
hard-wrapped at a terminal's width (80, 100, 120, 200 columns; with a continuation indent), the excerpt inside thousands of lines of healthy
training output or interleaved with another worker's, tabs for indentation, trailing blanks,
bytes that are not UTF-8. For each, printed: how many excerpts keep the first kind the bare
excerpt gets (not the expected kind: an excerpt the diagnosis misses is a miss in any dress;
what is measured is that the dress changes nothing), and which change. `--every N`: every Nth
excerpt only; `--show`: each change with its kinds. `--benign`: instead, each transformation
applied to the benign corpus, and the fatal or science findings it makes there (a dress must
not make healthy output a failure; `bench/benign.py` reads it bare).

Healthy text is taken from the benign corpus (`tests/data/benign/`, real output of runs that
had not failed): the excerpts in which the diagnosis finds nothing, one after another.
Everything is deterministic (no randomness): a figure changes only with the code.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ajetd.core.termtext import DRESS, MAX_DRESS
from ajetd.diagnosis.stream import StreamDiagnoser, diagnose_chunks

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "tests" / "data" / "corpus"
BENIGN = HERE.parent / "tests" / "data" / "benign"
EMBED_LINES = 5000  # healthy lines before the excerpt, and again after it


def body(path: Path) -> bytes:
    """An excerpt without its source line (that line is not part of the program's output)."""
    data = path.read_bytes()
    return data[data.find(b"\n") + 1 :]


def top1(data: bytes) -> str:
    findings = diagnose_chunks([data])
    return findings[0].kind if findings else "(none)"


def open_at_end(data: bytes) -> bool:
    """Whether the reading of `data` is decided by where the output ends: a traceback cut
    before its exception line (a paste that stops there, read as an exception no kind explains
    or an import's failure only because nothing follows), a line that may be an exception
    message its next line goes on with. Output printed after such an excerpt makes another log
    (frames another process's lines end, a stack printed and gone on from): the first finding
    differs as the output ends there and as it goes on. So a transformation
    that adds lines after the excerpt's last (`AFTER`) is not expected to keep its kind."""
    stream = StreamDiagnoser()
    stream.feed(data if data.endswith(b"\n") else data + b"\n")
    going_on = stream.peek(ending=False)  # as read were more output to come
    ended = stream.close()
    return [f.kind for f in going_on[:1]] != [f.kind for f in ended[:1]]


def _lines(data: bytes) -> list[bytes]:
    """The lines of `data` without their newlines (a last line without one kept as it is)."""
    return data.split(b"\n")


def _per_line(change: Callable[[bytes], bytes]) -> Callable[[bytes], bytes]:
    def apply(data: bytes) -> bytes:
        lines = _lines(data)
        last = lines.pop() if lines and lines[-1] == b"" else None  # the final newline's
        out = [change(line) for line in lines]
        return b"\n".join(out + ([last] if last is not None else []))

    return apply


def _prefixed(prefix: bytes) -> Callable[[bytes], bytes]:
    return _per_line(lambda line: prefix + line)


# --- line ends and redraws -------------------------------------------------------------------

_BARS = [
    b"Training Progress:  %d%%|\xe2\x96\x88\xe2\x96\x88\xe2\x96\x8c       | %d/100 [00:%02d<01:40, 1.02it/s]"
    % (i, i, i)
    for i in range(1, 100)
]


def crlf(data: bytes) -> bytes:
    """A pty's line ends (`onlcr`): `\\r\\n`."""
    return data.replace(b"\n", b"\r\n")


def cr_bar_line(data: bytes) -> bytes:
    """A tqdm bar redrawn with `\\r` three times, then closed by its newline, before every
    fourth line (a bar on stderr between the program's lines)."""
    out = []
    for i, line in enumerate(_lines(data)):
        if i % 4 == 0 and i + 1 < len(_lines(data)):
            n = i % 97
            out.append(b"\r" + b"\r".join(_BARS[n : n + 3]))
        out.append(line)
    return b"\n".join(out)


def cr_bar_glued(data: bytes) -> bytes:
    """A tqdm bar left without its newline, the next line printed after it on the same line
    (stdout and stderr into one file), before every fourth non-empty line."""
    out = []
    for i, line in enumerate(_lines(data)):
        if i % 4 == 0 and line.strip():
            n = i % 97
            out.append(b"\r" + b"\r".join(_BARS[n : n + 2]) + line)
        else:
            out.append(line)
    return b"\n".join(out)


def cr_bar_cleared(data: bytes) -> bytes:
    """A tqdm bar (`leave=False`) drawn and cleared with `\\r` before every line."""
    return _per_line(lambda line: b"\r" + _BARS[7] + b"\r" + b" " * 60 + b"\r" + line)(data)


# --- colour ----------------------------------------------------------------------------------

_WORD = re.compile(rb"[A-Za-z_][\w.]*(?:Error|Exception)\b|\b(?:ERROR|WARNING|INFO|CRITICAL)\b")
_NUMBER = re.compile(rb"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
_QUOTED = re.compile(rb"'[^'\n]{1,80}'")


def ansi_line(data: bytes) -> bytes:
    """The whole line coloured (colorlog, a level's colour): a code at its start, a reset at
    its end."""
    return _per_line(lambda line: b"\x1b[31m" + line + b"\x1b[0m" if line else line)(data)


def ansi_words(data: bytes) -> bytes:
    """Rich's highlighter: numbers, quoted strings, exception classes and levels coloured in
    the middle of the line (`Tried to allocate \\x1b[1;36m2.00\\x1b[0m GiB`)."""

    def colour(line: bytes) -> bytes:
        line = _NUMBER.sub(lambda m: b"\x1b[1;36m" + m.group() + b"\x1b[0m", line)
        line = _QUOTED.sub(lambda m: b"\x1b[32m" + m.group() + b"\x1b[0m", line)
        return _WORD.sub(lambda m: b"\x1b[1;31m" + m.group() + b"\x1b[0m", line)

    return _per_line(colour)(data)


def loguru(data: bytes) -> bytes:
    """loguru's default format, coloured: time, level and place before every line."""
    return _prefixed(
        b"\x1b[32m2025-01-03 12:00:01.123\x1b[0m | \x1b[31m\x1b[1mERROR   \x1b[0m | "
        b"\x1b[36mtrainer\x1b[0m:\x1b[36mrun\x1b[0m:\x1b[36m42\x1b[0m - "
    )(data)


# --- prefixes --------------------------------------------------------------------------------


def _records(data: bytes) -> list[str]:
    """The lines of `data` as text (a final newline's empty line not one)."""
    lines = _lines(data)[:-1] if data.endswith(b"\n") or not data else _lines(data)
    return [line.decode("utf-8", errors="replace") for line in lines]


def _parts(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _docker(data: bytes, size: int) -> bytes:
    out = []
    for i, line in enumerate(_records(data)):
        parts = _parts(line, size)
        for j, part in enumerate(parts):
            text = part + ("\n" if j == len(parts) - 1 else "")
            record = {"log": text, "stream": "stderr", "time": f"2025-01-03T12:00:01.{i:09d}Z"}
            # Go's encoder: UTF-8 as it is, `<`, `>` and `&` escaped (none in the keys or time)
            out.append(
                json.dumps(record, ensure_ascii=False, separators=(",", ":"))
                .replace("<", "\\u003c")
                .replace(">", "\\u003e")
                .replace("&", "\\u0026")
                .encode()
            )
    return b"".join(record + b"\n" for record in out)


def docker_json(data: bytes) -> bytes:
    """Docker's json-file log driver (`/var/lib/docker/containers/<id>/<id>-json.log`): each
    line a JSON object, `{"log":"<text>\\n","stream":"stderr","time":"..."}`, as Go encodes it
    (docker/for-linux#1321, moby/moby#36777 show such records)."""
    return _docker(data, 16 * 1024)


def docker_json_parts(data: bytes) -> bytes:
    """As `docker_json`, each line cut into records of 40 characters, all but the last
    without the `\\n` (Docker cuts lines longer than 16 KiB so: the corpus has none that long)."""
    return _docker(data, 40)


def _cri(data: bytes, size: int) -> bytes:
    out = []
    lines = _lines(data)[:-1] if data.endswith(b"\n") or not data else _lines(data)
    for i, line in enumerate(lines):
        parts = [line[j : j + size] for j in range(0, len(line), size)] or [b""]
        for j, part in enumerate(parts):
            tag = b"F" if j == len(parts) - 1 else b"P"
            out.append(b"2025-01-03T12:00:01.%09dZ stderr %s %s" % (i, tag, part))
    return b"".join(record + b"\n" for record in out)


def cri(data: bytes) -> bytes:
    """The CRI format of containerd and CRI-O (a node's `/var/log/pods/.../0.log`): each line
    `<time> stderr F <text>` (kubernetes/kubernetes#44976, Loki's `cri` stage)."""
    return _cri(data, 16 * 1024)


def cri_parts(data: bytes) -> bytes:
    """As `cri`, each line cut into records of 40 bytes, tagged `P` but the last (`F`), as a
    runtime does with lines longer than its `max_container_log_line_size`."""
    return _cri(data, 40)


# --- wrapping --------------------------------------------------------------------------------


def _wrapped(width: int, indent: bytes = b"") -> Callable[[bytes], bytes]:
    """Each line longer than `width` characters cut into pieces `width` wide, those after the
    first led by `indent` (a continuation indent: the piece still `width` wide)."""
    more = width - len(indent)

    def wrap(data: bytes) -> bytes:
        out = []
        for line in _lines(data):
            text = line.decode("utf-8", errors="surrogateescape")
            if len(text) <= width:
                out.append(line)
                continue
            pieces = [text[:width]] + [
                indent.decode() + text[i : i + more] for i in range(width, len(text), more)
            ]
            out.extend(piece.encode("utf-8", errors="surrogateescape") for piece in pieces)
        return b"\n".join(out)

    return wrap


# --- healthy output around and between -------------------------------------------------------

_HEALTHY: list[bytes] = []


def healthy() -> list[bytes]:
    """Lines of real healthy output: the benign excerpts in which nothing is found."""
    if not _HEALTHY:
        for path in sorted(BENIGN.glob("*.log")):
            text = body(path)
            if not diagnose_chunks([text]):
                _HEALTHY.extend(line for line in text.rstrip(b"\n").split(b"\n"))
    return _HEALTHY


def _healthy_run(count: int, start: int = 0) -> bytes:
    lines = healthy()
    return b"".join(lines[(start + i) % len(lines)] + b"\n" for i in range(count))


def embedded_before(data: bytes) -> bytes:
    """The excerpt after EMBED_LINES lines of healthy output."""
    return _healthy_run(EMBED_LINES) + data


def embedded(data: bytes) -> bytes:
    """The excerpt with EMBED_LINES lines of healthy output before it and after it."""
    tail = data if data.endswith(b"\n") else data + b"\n"
    return _healthy_run(EMBED_LINES) + tail + _healthy_run(EMBED_LINES, EMBED_LINES)


def interleaved(data: bytes) -> bytes:
    """Each line of the excerpt followed by a line of another worker's healthy output."""
    lines = healthy()
    out = []
    for i, line in enumerate(_lines(data)):
        out.append(line)
        out.append(lines[(i * 7) % len(lines)])
    return b"\n".join(out)


def interleaved_ray(data: bytes) -> bytes:
    """As `interleaved`, each side under its own Ray worker's mark (what Ray prints)."""
    lines = healthy()
    out = []
    for i, line in enumerate(_lines(data)):
        out.append(b"(TaskRunner pid=4242) " + line)
        out.append(b"(WorkerDict pid=1717, ip=10.0.0.2) " + lines[(i * 7) % len(lines)])
    return b"\n".join(out)


# --- whitespace and bytes --------------------------------------------------------------------

_INDENT = re.compile(rb" +")


def _tabbed(line: bytes) -> bytes:
    text = line.decode("utf-8", errors="surrogateescape")
    at = 0
    for _ in range(MAX_DRESS):  # the indentation is the text's, under its dress
        match = DRESS.match(text, at)
        if match is None or match.end() == at:
            break
        at = match.end()
    start = len(text[:at].encode("utf-8", errors="surrogateescape"))
    indent = _INDENT.match(line, start)
    if indent is None:
        return line
    tabs = b"\t" * max(1, len(indent.group()) // 2)
    return line[:start] + tabs + line[indent.end() :]


def tabs(data: bytes) -> bytes:
    """Indentation in tabs, under the line's dress: each two spaces a tab (a paste through an
    editor, a logger's format with a tab)."""
    return _per_line(_tabbed)(data)


def trailing(data: bytes) -> bytes:
    """Blanks after every line's text."""
    return _per_line(lambda line: line + b"  \t ")(data)


def latin1(data: bytes) -> bytes:
    """The text in a legacy 8-bit encoding (a Windows console, cp1252): every character outside
    ASCII one byte (not valid UTF-8), `?` where it has none."""
    return data.decode("utf-8", errors="replace").encode("cp1252", errors="replace")


def stray_bytes(data: bytes) -> bytes:
    """A line of binary bytes (a program writing raw bytes, a UTF-8 character cut by a pipe's
    read) after every fifth line."""
    out = []
    for i, line in enumerate(_lines(data)):
        out.append(line)
        if i % 5 == 4:
            out.append(b"\xff\xfe\x00\x80\xc3 \xe2\x96 data")
    return b"\n".join(out)


TRANSFORMS: dict[str, Callable[[bytes], bytes]] = {
    "crlf": crlf,
    "cr_bar_line": cr_bar_line,
    "cr_bar_glued": cr_bar_glued,
    "cr_bar_cleared": cr_bar_cleared,
    "ansi_line": ansi_line,
    "ansi_words": ansi_words,
    "loguru": loguru,
    "iso_logging": _prefixed(b"2025-01-03 12:00:01,123 - INFO - "),
    "iso_t_z": _prefixed(b"2025-01-03T12:00:01.123456789Z "),
    "ray_worker": _prefixed(b"(TaskRunner pid=123, ip=10.0.0.1) "),
    "raylet": _prefixed(b"(raylet) "),
    "rank": _prefixed(b"[rank3]: "),
    "default": _prefixed(b"[default0]:"),
    "srun_label": _prefixed(b"0: "),
    "compose": _prefixed(b"trainer-1  | "),
    "kubectl_prefix": _prefixed(b"[pod/trainer-0/main] "),
    "journald": _prefixed(b"Jan 03 12:00:01 gpu-node-7 python3[48213]: "),
    "docker_json": docker_json,
    "docker_json_parts": docker_json_parts,
    "cri": cri,
    "cri_parts": cri_parts,
    "wrap80": _wrapped(80),
    "wrap100": _wrapped(100),
    "wrap120": _wrapped(120),
    "wrap200": _wrapped(200),
    "wrap80_indent": _wrapped(80, b"  "),
    "wrap120_indent": _wrapped(120, b"    "),
    "embed_before": embedded_before,
    "embed5000": embedded,
    "interleave": interleaved,
    "interleave_ray": interleaved_ray,
    "tabs": tabs,
    "trailing": trailing,
    "latin1": latin1,
    "stray_bytes": stray_bytes,
}


# Those that print lines after the excerpt's last: `open_at_end`
AFTER = frozenset({"embed5000", "interleave", "interleave_ray", "stray_bytes"})


def excerpts(every: int = 1) -> list[Path]:
    return sorted(CORPUS.glob("*/*.log"))[::every]


def measure(
    names: list[str], paths: list[Path]
) -> tuple[dict[str, str], dict[str, dict[str, str]], dict[str, float]]:
    """The first kind of each bare excerpt, of each transformed one (transformation -> path ->
    kind), and each transformation's seconds."""
    bare = {str(p): top1(body(p)) for p in paths}
    dressed: dict[str, dict[str, str]] = {}
    seconds: dict[str, float] = {}
    for name in names:
        change = TRANSFORMS[name]
        started = time.perf_counter()
        dressed[name] = {str(p): top1(change(body(p))) for p in paths}
        seconds[name] = time.perf_counter() - started
    return bare, dressed, seconds


FATAL_SHOWN = ("fatal", "science")  # as bench/benign.py: the costly false findings


def false_findings(name: str, paths: list[Path]) -> dict[str, str]:
    """Benign excerpt -> the first fatal or science finding the transformation makes there."""
    out = {}
    for path in paths:
        found = diagnose_chunks([TRANSFORMS[name](body(path))])
        costly = [f for f in found if f.severity in FATAL_SHOWN]
        if costly:
            out[path.name] = f"{costly[0].kind}: {costly[0].evidence[:120]}"
    return out


def main(args: list[str]) -> None:
    names = list(TRANSFORMS)
    if "--only" in args:
        names = args[args.index("--only") + 1].split(",")
    every = int(args[args.index("--every") + 1]) if "--every" in args else 1
    if "--benign" in args:
        benign = sorted(BENIGN.glob("*.log"))[::every]
        print(
            f"| transformation | benign excerpts with a fatal or science finding (of {len(benign)}) |"
        )
        print("|---|---|")
        found = {name: false_findings(name, benign) for name in names}
        for name, bad in found.items():
            print(f"| {name} | {len(bad)} |")
        for name, bad in found.items():
            for excerpt, finding in bad.items():
                print(f"  {name}: {excerpt}: {finding}")
        return
    paths = excerpts(every)
    bare, dressed, seconds = measure(names, paths)
    expected = {str(p): p.parent.name for p in paths}
    right = sum(bare[k] == expected[k] for k in bare)
    ending = {str(p) for p in paths if open_at_end(body(p))}
    report = {}
    for name in names:
        changed = {k: (bare[k], v) for k, v in dressed[name].items() if v != bare[k]}
        open_ = ending if name in AFTER else set()
        report[name] = {
            "kept": len(paths) - len(changed),
            "total": len(paths),
            # over the excerpts whose reading does not depend on where the output ends
            "kept_closed": len(paths) - len(open_) - len(set(changed) - open_),
            "closed": len(paths) - len(open_),
            "seconds": round(seconds[name], 1),
            "changed": {
                str(Path(k).relative_to(CORPUS)): (*v, k in open_)
                for k, v in sorted(changed.items())
            },
        }
    if "--json" in args:
        print(json.dumps({"bare_top1": [right, len(paths)], "transforms": report}, indent=2))
        return
    print(f"bare excerpts: top-1 {right}/{len(paths)} as expected; {len(ending)} open at the end")
    print(
        "\n| transformation | same top-1 as bare | of those not open at the end | seconds |"
        "\n|---|---|---|---|"
    )
    for name, row in report.items():
        kept, total = row["kept"], row["total"]
        closed = f"{row['kept_closed']}/{row['closed']}" if name in AFTER else ""
        print(
            f"| {name} | {100 * kept / total:.1f} % ({kept}/{total}) | {closed} | {row['seconds']} |"
        )
    for name, row in report.items():
        if row["changed"]:
            print(f"\n{name}: {len(row['changed'])} changed (bare -> dressed)")
            shown = row["changed"] if "--show" in args else dict(list(row["changed"].items())[:8])
            for path, (was, now, open_) in shown.items():
                print(f"  {path}: {was} -> {now}{'  (open at the end)' if open_ else ''}")


if __name__ == "__main__":
    main(sys.argv[1:])
