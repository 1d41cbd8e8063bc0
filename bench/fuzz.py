"""Fuzz the blueprint parser: mutated blueprints must give a Blueprint or a BlueprintError, fast.

The corpus is blueprints/TEMPLATE.md, blueprints/examples/*.md and blueprints written in the
test suite's styles (headings, bullets, bold labels, Chinese labels). Each case applies one to
three mutations: byte flips, insertions and deletions, YAML tricks in `[ajetd]` (aliases and
anchors, explicit tags, deep nesting, bad timestamps), huge numbers, negative and exponent
durations, control characters (NUL, CR, ESC, U+2028) in paths, long runs (digits, `<!--`,
backticks, brackets, fences), repeated parts. The bytes are decoded as the daemon does
(`decode_blueprint`: UTF-8 unless a byte-order mark or NULs say UTF-16/32, errors replaced) and
parsed; an accepted one is then used as the daemon first uses it (durations printed, paths
looked at, Slurm options built), read-only.

Prints the crash count (exceptions other than BlueprintError, by type), the slowest case and
its time, and the p50/p99 parse times; also the time for 1 MiB blueprints of several shapes.

    python bench/fuzz.py [--cases 10000] [--seed 1]
"""

from __future__ import annotations

import argparse
import collections
import random
import signal
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ajetd.adapters import resultdir
from ajetd.core.blueprint import MAX_BYTES, Blueprint, decode_blueprint, parse_blueprint
from ajetd.core.durations import format_duration
from ajetd.core.errors import BlueprintError
from ajetd.hosts import slurm

ROOT = Path(__file__).resolve().parent.parent
PARTS = {
    "exp_purpose": ("实验目的", "Math top-k ablation: k=4 instead of k=8"),
    "exp_codebase_dir": ("主实验代码路径", "/mnt/data/agentjet"),
    "exp_venv_exe": ("python虚拟环境路径", "/mnt/data/agentjet/.venv/bin/python"),
    "exp_yaml_path": ("实验配置文件路径", "tests/bench/benchmark_math/benchmark_math.yaml"),
    "exp_launch_command": ("执行训练的命令", "python -m ajet.launcher --conf x/y.yaml"),
    "exp_result_dir": ("结果数据存储路径", "/mnt/data/results/exp01"),
    "exp_max_time": ("运行时间", "2h"),
}
AJETD = (
    "gpus: [0, 1]\nenv: {NCCL_DEBUG: WARN}\nmax_trials: 2\nkeep_session: 30m\n"
    "hang: {window: 20m, action: stop}\nplateau: {metric: mean_reward, patience: 3}\n"
    "slurm: {partition: debug, nodes: 1, cpus_per_task: 2, mem: 64G, time: 10m}\n"
)
STYLES: tuple[Callable[[str, str, str], str], ...] = (
    lambda k, zh, v: f"## [{k}]\n{v}\n",
    lambda k, zh, v: f"## {zh}\n{v}\n",
    lambda k, zh, v: f"### [{k}] {zh}\n\n`{v}`\n",
    lambda k, zh, v: f"- [{k}] {zh}（说明文字）： {v}",
    lambda k, zh, v: f"**{k}**: {v}",
    lambda k, zh, v: f"{k}: {v}",
    lambda k, zh, v: f"## [{k}]\n```\n{v}\n```\n",
)
YAML_TRICKS = (
    "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\ngpus: [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
    "max_trials: !!int ''\n",
    "keep_session: !!timestamp 2020-13-45\n",
    "x: 2001-12-14t21:59:43.10-05:00x\n",
    "when: 2020-02-30\n",
    "gpus: !!python/object/apply:os.system ['true']\n",
    "env: !!set {a, b}\n",
    "gpus: &x 1\nmax_trials: *x\n",
    "? [a, b]\n: c\n",
    "? {a: b}\n: c\n",
    "gpus: " + "[" * 3000 + "]" * 3000 + "\n",
    "env: " + "{a: " * 2000 + "b" + "}" * 2000 + "\n",
    "max_trials: " + "9" * 5000 + "\n",
    "slurm: {nodes: " + "9" * 400 + "}\n",
    "keep_session: .inf\n",
    "keep_session: .nan\n",
    "keep_session: -1\n",
    "hang: {window: 1e400 hours}\n",
    "slurm: {time: 10m, mem: 500M}\n",
    "slurm: {time: '1-12:00', mem: 1.5T}\n",
    "slurm: {time: " + "9" * 300 + "}\n",
    "gpus: 0\ngpus: 1\n",
    "env: {A: 1, A: 2}\n",
    "!!binary aGVsbG8=\n",
    "--- a\n--- b\n",
    "%YAML 1.1\n---\ngpus: 0\n",
    "gpus: 0x10\n",
    "max_trials: 0b11\n",
    "max_trials: 1_000\n",
    "max_trials: 190:20:30\n",
    "plateau: {after: 1e999}\n",
    "plateau: {min_delta: .nan}\n",
    "allow_fixes: {lr: {min: .inf}}\n",
    "swarm: {port: " + "1" * 50 + "}\n",
    "stages: [{name: a}, {name: b, command: x, requires: ['\\0']}]\n",
    "pull: ['a\\nb']\n",
)
DURATIONS = (
    "-5 min",
    "-1:00:00",
    "1e3s",
    "1e400 hours",
    "9" * 400,
    "9" * 400 + " hours",
    "0",
    "0.0000001 s",
    "99999 days",
    "inf",
    "NaN hours",
    "1" * 30000,
    "1:99:99",
    "２ 小时",
    "1h" * 5000,
    "0.5" * 3000 + "h",
)
CONTROL = ("\x00", "\r", "\x1b[31m", "\u2028", "\x85", "\x0b", "\x7f", "\ufeff", "\n")
RUNS = (
    "0123456789",
    "<!--",
    "-->",
    "`",
    "``",
    "[",
    "]",
    "**",
    "#",
    " ",
    "\t",
    "(",
    "（",
    "- ",
    "> ",
    ">",
    "\\",
    "\\\n",
    "```\n",
    "~~~\n",
    "## [exp_purpose]\n",
    "[exp_max_time]: 1h\n",
    "a" * 7 + ":",
    "\\",
    "'",
    '"',
)
RUN_LENGTHS = (10, 100, 1000, 5000, 20000)


def corpus() -> list[str]:
    texts = [(ROOT / "blueprints" / "TEMPLATE.md").read_text()]
    texts += [p.read_text() for p in sorted((ROOT / "blueprints" / "examples").glob("*.md"))]
    for style in STYLES:
        body = "\n".join(style(k, zh, v) for k, (zh, v) in PARTS.items())
        texts.append(f"# Blueprint\n\n{body}\n\n## [ajetd]\n```yaml\n{AJETD}```\n")
    return texts


def _pos(rng: random.Random, data: bytes) -> int:
    return rng.randrange(len(data) + 1)


def _insert(rng: random.Random, data: bytes, piece: str) -> bytes:
    at = _pos(rng, data)
    return data[:at] + piece.encode() + data[at:]


def _after(data: bytes, marker: bytes, piece: str) -> bytes:
    at = data.find(marker)
    if at < 0:
        return data + b"\n## [ajetd]\n" + piece.encode()
    end = data.find(b"\n", at)
    end = len(data) if end < 0 else end + 1
    return data[:end] + piece.encode() + data[end:]


def _yaml_spot(data: bytes) -> bytes:
    return b"```yaml\n" if b"```yaml\n" in data else b"[ajetd]"


def _delete(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    at = rng.randrange(len(data))
    return data[:at] + data[at + rng.randrange(1, 64) :]


def _set(data: bytes, at: int, value: int) -> bytes:
    return data[:at] + bytes([value]) + data[at + 1 :]


def _in_value(rng: random.Random, data: bytes, piece: str) -> bytes:
    marker = rng.choice((b"/mnt/data/results", b"/mnt/data/agentjet", b"{{RESULT_DIR}}", b"/"))
    at = data.find(marker)
    if at < 0:
        return _insert(rng, data, piece)
    at += rng.randrange(len(marker) + 1)
    return data[:at] + piece.encode() + data[at:]


def _dup_line(rng: random.Random, data: bytes) -> bytes:
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    lines.insert(i, lines[i])
    return b"\n".join(lines)


def _swap(rng: random.Random, data: bytes) -> bytes:
    lines = data.split(b"\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


MUTATIONS: dict[str, Callable[[random.Random, bytes], bytes]] = {
    "flip": lambda r, d: (
        d if not d else _set(d, r.randrange(len(d)), d[r.randrange(len(d))] ^ (1 << r.randrange(8)))
    ),
    "insert_byte": lambda r, d: _insert(r, d, chr(r.randrange(256))),
    "delete": _delete,
    "yaml_trick": lambda r, d: _after(d, _yaml_spot(d), r.choice(YAML_TRICKS)),
    "duration": lambda r, d: _after(d, b"exp_max_time", r.choice(DURATIONS) + "\n"),
    "control_in_path": lambda r, d: _in_value(r, d, r.choice(CONTROL)),
    "long_name": lambda r, d: _in_value(r, d, "/" + "n" * r.choice((255, 256, 5000)) + "/x"),
    "control": lambda r, d: _insert(r, d, r.choice(CONTROL)),
    "long_run": lambda r, d: _insert(r, d, r.choice(RUNS) * r.choice(RUN_LENGTHS)),
    "duplicate_line": _dup_line,
    "repeat_part": lambda r, d: d + b"\n## [exp_max_time]\n3h\n",
    "huge_number": lambda r, d: _insert(r, d, "9" * r.choice((20, 400, 5000))),
    "swap_lines": _swap,
}


def use(bp: Blueprint) -> None:
    """What the daemon does first with an accepted blueprint, without side effects: print its
    durations, look at its paths, build its Slurm options. A value the parser let through that
    breaks these is a crash too."""
    for seconds in (bp.max_time_s, bp.options.keep_session_s, bp.options.hang_window_s or 0):
        format_duration(seconds)
    for path in (bp.codebase_dir, bp.venv_exe, bp.result_dir):
        Path(path).expanduser().exists()
    resultdir.result_dir_problem(bp.result_dir)
    if bp.options.slurm is not None:
        slurm.allocation(bp.options.slurm, bp.max_time_s, "ajet_x_t1")


class Stalled(BaseException):
    """A case ran past the per-case limit (raised from SIGALRM; regex matching is
    interruptible)."""


def _alarm(signum: int, frame: object) -> None:
    raise Stalled


def parse_once(text: str, limit_s: float) -> tuple[float, str | None]:
    """Seconds taken, and the crash (a non-project exception, or `Stalled`) if any."""
    start = time.perf_counter()
    crash = None
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        use(parse_blueprint(text))
    except BlueprintError:
        pass
    except Stalled:
        crash = f"Stalled: more than {limit_s:g} s (stopped there)"
    except Exception as exc:  # counting them is the point
        crash = f"{type(exc).__name__}: {str(exc)[:100]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return time.perf_counter() - start, crash


def mib_shapes() -> dict[str, str]:
    """1 MiB blueprints of the shapes that once took long."""
    base = corpus()[0]
    mib = 1 << 20
    fill = mib - len(base.encode()) - 64
    return {
        "long purpose": base.replace("Math top-k", "x " * (fill // 2) + "Math", 1),
        "many lines": base + ("- a bullet: text\n" * (fill // 17)),
        "digits in exp_max_time": base.replace("2 小时，", "9" * fill + " ", 1),
        "unclosed <!--": base + "<!--" * (fill // 4),
        "backticks": base + "`" * fill,
        "label lines": base + "## [exp_purpose]\n" * (fill // 17),
        "quoted label lines": base + "> - [exp_notes]: x\n" * (fill // 19),
        "quote marks": base + ">" * fill,
        "lines like a spelt key": base + "- **Exp-Purpose-Of-This-Run-x** y\n" * (fill // 35),
        "a JSON object's members": "{\n" + '  "exp_notes": "a, b",\n' * (fill // 24) + "}\n",
        "continued lines": base.replace("--autokill", "--autokill \\\n" * (fill // 13), 1),
        "an unclosed bracket before blanks": base + "## [" + " " * fill + "x\n",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limit", type=float, default=2.0, help="seconds per case before a stall")
    parser.add_argument("--no-mib", action="store_true", help="skip the 1 MiB shapes")
    args = parser.parse_args()
    signal.signal(signal.SIGALRM, _alarm)
    rng = random.Random(args.seed)
    seeds = [t.encode() for t in corpus()]
    times: list[float] = []
    crashes: collections.Counter[str] = collections.Counter()
    slowest = (0.0, "", 0)
    example: dict[str, str] = {}
    for case in range(args.cases):
        data = rng.choice(seeds)
        names = [rng.choice(list(MUTATIONS)) for _ in range(rng.randint(1, 3))]
        for name in names:
            data = MUTATIONS[name](rng, data)
        seconds, crash = parse_once(decode_blueprint(data[:MAX_BYTES]), args.limit)
        times.append(seconds)
        if crash:
            kind = crash.split(":")[0]
            crashes[kind] += 1
            example.setdefault(kind, f"case {case} ({'+'.join(names)}): {crash}")
        if seconds > slowest[0]:
            slowest = (seconds, "+".join(names), len(data))
    ordered = sorted(times)
    total = sum(crashes.values())
    print(f"cases: {args.cases} (seed {args.seed})")
    print(
        f"crashes (non-BlueprintError, stalls included): {total} ({100 * total / args.cases:.1f} %)"
    )
    for kind, count in crashes.most_common():
        print(f"  {kind}: {count}   e.g. {example[kind]}")
    print(f"slowest: {slowest[0] * 1000:.1f} ms ({slowest[1]}, {slowest[2]} bytes)")
    print(f"p50: {statistics.median(ordered) * 1000:.2f} ms")
    print(f"p99: {ordered[int(len(ordered) * 0.99) - 1] * 1000:.2f} ms")
    for shape, text in ({} if args.no_mib else mib_shapes()).items():
        seconds, crash = parse_once(text, args.limit * 5)
        print(f"1 MiB {shape}: {seconds * 1000:.1f} ms{' CRASH ' + crash if crash else ''}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
