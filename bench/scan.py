"""Diagnosis scanning throughput and peak memory on a synthetic log with realistic noise.

Usage: python bench/scan.py [MEGABYTES] [--user-kinds] [--tracebacks]
(issue 3's target: >= 100 MB/s on one core, flat memory; `--user-kinds` adds three user-defined
kinds, as `$AJETD_HOME/kinds.yaml` would, to measure their one extra RE2 pass per chunk;
`--tracebacks`: a log that is all tracebacks, as a reward function that fails on each sample
and logs it with its stack prints, where every line is read, not only those with trigger words)
"""

from __future__ import annotations

import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from ajetd.core.userkinds import parse_kinds
from ajetd.diagnosis.kindset import KindSet
from ajetd.diagnosis.scan import read_chunks
from ajetd.diagnosis.stream import diagnose_chunks

USER_KINDS = [
    {"name": name, "patterns": patterns, "severity": "retryable", "explanation": "e", "fix": "f"}
    for name, patterns in (
        ("quota_hit", [r"QuotaExceeded: project \w+", r"over quota"]),
        ("bad_shard", [r"^ShardError: shard \d+ is corrupt$"]),
        ("site_launcher", [r"\[site-launch\] (fatal|abort)", r"lease (expired|revoked)"]),
    )
]

NOISE = [
    "(TaskRunner pid=4242) step:{i} - actor/pg_loss:0.0123 - actor/grad_norm:0.88 - critic/score/mean:0.61 - response_length/mean:512.3 - timing_s/gen:12.1",
    "\rTraining Progress:  45%|\u2588\u2588\u2588\u2588\u258c     | {i}/1000 [10:00<12:13, 13.3s/it]",
    "(VllmGenerationWorker pid=331005, ip=10.0.0.2) INFO 09-03 11:03:37 [metrics.py:455] Avg prompt throughput: 1520.3 tokens/s, Running: 64 reqs [repeated 7x across cluster]",
    "\x1b[36m(WorkerDict pid=231421)\x1b[0m [rank1]: NCCL INFO Channel 00/24 : 0 1 2 3",
    "wandb: Syncing run exp-{i}",
    "Saving checkpoint to /ckpt/global_step_{i} ...",
]


def make_log(path: Path, megabytes: int) -> None:
    rng = random.Random(0)
    target = megabytes * 1024 * 1024
    with open(path, "w") as handle:
        size, i = 0, 0
        while size < target:
            line = rng.choice(NOISE).format(i=i) + "\n"
            if i % 200_000 == 199_999:
                line += "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
            handle.write(line)
            size += len(line)
            i += 1


FRAMES = [
    (
        "/opt/venv/lib/python3.11/site-packages/verl/workers/reward_manager/naive.py",
        "compute",
        "score = self.compute_score(data_source, response, ground_truth)",
    ),
    (
        "/work/agent/reward/math_verify.py",
        "compute_score",
        "parsed = parse_answer(solution_str.strip())",
    ),
    (
        "/work/agent/reward/math_verify.py",
        "parse_answer",
        "return sympy.sympify(text, evaluate=False)",
    ),
    (
        "/opt/venv/lib/python3.11/site-packages/sympy/core/sympify.py",
        "sympify",
        "expr = parse_expr(a, local_dict=locals, transformations=transformations)",
    ),
]


def make_traceback_log(path: Path, megabytes: int) -> None:
    """Tracebacks one after another, each preceded by the logger's line."""
    target = megabytes * 1024 * 1024
    with open(path, "w") as handle:
        size, i = 0, 0
        while size < target:
            frames = "".join(
                f'  File "{file}", line {100 + n + i % 7}, in {fn}\n    {source}\n'
                for n, (file, fn, source) in enumerate(FRAMES * 3)
            )
            block = (
                f"(TaskRunner pid=4242) WARNING reward failed for sample {i}:\n"
                f"Traceback (most recent call last):\n{frames}"
                f"SympifyError: Sympify of expression 'could not parse {i}' failed\n"
            )
            handle.write(block)
            size += len(block)
            i += 1


def main(megabytes: int, user: KindSet, tracebacks: bool = False) -> None:
    path = Path(tempfile.mkdtemp()) / "synthetic.log"
    (make_traceback_log if tracebacks else make_log)(path, megabytes)
    size = path.stat().st_size
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start, cpu = time.perf_counter(), time.process_time()
    findings = diagnose_chunks(read_chunks(str(path)), user)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        f"scan{' of tracebacks' if tracebacks else ''}{' with user kinds' if user else ''}: {size / 2**20:.0f} MiB in {elapsed:.1f} s = {size / 2**20 / elapsed:.1f} MiB/s "
        f"({size / 2**20 / cpu:.1f} MiB/s of this process's CPU time: the figure that does not "
        f"depend on what else the machine runs); "
        f"peak RSS {peak / 1024:.0f} MiB (before scan {before / 1024:.0f} MiB); "
        f"findings: {[(f.kind, f.count) for f in findings]}"
    )
    path.unlink()


if __name__ == "__main__":
    sizes = [int(a) for a in sys.argv[1:] if a.isdigit()]
    kinds = KindSet(parse_kinds(USER_KINDS, [])) if "--user-kinds" in sys.argv else KindSet()
    main(sizes[0] if sizes else 200, kinds, "--tracebacks" in sys.argv)
