"""Root-cause accuracy of `ajetd diagnose` on the corpus of real failure logs.

Usage: python bench/diagnosis.py [--json] [--only LIST | --new-since LIST]

The corpus is `tests/data/corpus/<kind>/<name>.log`: the folder is the expected root cause
(the true one, set by reading the thread, not by what ajetd says), the first line names the
public source. Top-1: the first finding's kind equals the folder.

Held out: accuracy per source repository, over the excerpts of that repository whose kind's
patterns were written without looking at any excerpt from it (`PATTERNS_FROM` below records,
per kind, the repositories whose corpus excerpts were read while its patterns were written;
the structural reading is shared by all and was written against the whole corpus). The
"before" figure (the code as it was before the corpus existed) is held out on everything.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

from ajetd.diagnosis.findings import diagnose_chunks

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "corpus"
SOURCE = re.compile(r"^# source: (\S+?)#(\d+) (\S+)\s*$")
# Which repositories' excerpts informed each kind's patterns and trigger words (kept honest by
# hand as patterns are written; a kind absent here was written before the corpus existed).
PATTERNS_FROM: dict[str, set[str]] = {
    "host_oom": {
        "ray-project/ray",
        "verl-project/verl-omni",
        "allenai/OLMo",
        "deepspeedai/DeepSpeed",
        "danijar/dreamerv3",
    },
    "ray_cluster": {"ray-project/ray", "NVIDIA-NeMo/RL", "alibaba/ROLL", "verl-project/verl"},
    "import_error": {"ray-project/ray"},
    "insufficient_gpus": {
        "OpenRLHF/OpenRLHF",
        "ray-project/ray",
        "vllm-project/vllm-ascend",
        "gpustack/gpustack",
        "verl-project/verl",
    },
    "vllm_memory": {"vllm-project/vllm-ascend", "gpustack/gpustack", "sgl-project/sglang"},
    "port_in_use": {"NVIDIA-NeMo/RL"},
    "cuda_oom": {"THUDM/slime", "verl-project/verl"},
    "vllm_engine_dead": {"vllm-project/vllm"},
    "nccl_timeout": {"tatsu-lab/stanford_alpaca", "OpenRLHF/OpenRLHF"},
    "nan_loss": {
        "pytorch/pytorch",
        "bigscience-workshop/Megatron-DeepSpeed",
        "NVIDIA-NeMo/Megatron-Bridge",
        "alibaba/Pai-Megatron-Patch",
        "danijar/dreamer",
        "juliusfrost/dreamer-pytorch",
        "datawhalechina/self-llm",
    },
    "disk_full": {
        "TracecatHQ/tracecat",
        "hiyouga/LlamaFactory",
        "pytorch/pytorch",
        "mozilla/DeepSpeech",
    },
    "nccl_error": {
        "EleutherAI/gpt-neox",
        "tatsu-lab/stanford_alpaca",
        "bshall/hubert",
        "verl-project/verl",
        "OpenRLHF/OpenRLHF",
    },
    "config_error": {
        "ByteDance-Seed/Chain-of-Action",
        "NVIDIA-NeMo/RL",
        "verl-project/verl",
        "NVIDIA-AI-Blueprints/bring-llms-to-nim",
        "LIN-SHANG/InstructERC",
        "facebookresearch/fairchem",
        "ritzz-ai/GUI-R1",
    },
    "logger_error": {
        "SwanHubX/SwanLab",
        "aws-samples/eks-kubeflow-workshop",
        "mlflow/mlflow",
        "JWSoh/MZSR",
        "tensorflow/tensorboard",
        "wandb/wandb",
    },  # SwanLab: the rule that a warning-level line is an echo
    "missing_model": {"vllm-project/vllm", "oobabooga/textgen", "mistralai/mistral-finetune"},
    "build_error": {
        "ray-project/ray",
        "vllm-project/vllm",
        "NVIDIA-NeMo/Automodel",
        "NVIDIA-NeMo/RL",
    },
    "connection_refused": {
        "huggingface/open-r1",
        "huggingface/sentence-transformers",
        "NVIDIA-NeMo/RL",
        "samarth-robo/contactdb_prediction",
    },
    "network": {
        "instructlab/instructlab",
        "huggingface/sentence-transformers",
        "huggingface/datasets",
        "huggingface/trl",
        "vllm-project/vllm",
        "pytorch/pytorch",
    },
    "launch_error": {
        "NVIDIA-NeMo/RL",
        "NVIDIA/pyxis",
        "NVIDIA/cloudai",
        "verl-project/verl",
        "deepspeedai/DeepSpeed",
        "radical-cybertools/radical.pilot",
    },
    "segfault": {
        "NVIDIA-NeMo/RL",
        "ray-project/ray",
        "NVIDIA/Megatron-LM",
        "hkust-nlp/simpleRL-reason",
        "deepspeedai/DeepSpeedExamples",
    },
    "cuda_error": {
        "verl-project/verl",
        "vllm-project/vllm",
        "NVIDIA-NeMo/RL",
        "fzyzcjy/torch_memory_saver",
    },
    "ray_worker_died": {"verl-project/verl", "ray-project/ray"},
    "unknown_traceback": {"huggingface/trl"},
}


def short(repo: str) -> str:
    """A repository's name for tables, as its owner spells it but lower case."""
    return repo.lower()


def _listed(args: list[str], flag: str) -> set[str] | None:
    """The corpus paths (`tests/data/corpus/<kind>/<name>.log`) a list file after `flag` names."""
    if flag not in args:
        return None
    listing = Path(args[args.index(flag) + 1]).read_text().split()
    return {str(Path(line)) for line in listing}


def corpus(args: tuple[str, ...] | list[str] = ()) -> list[tuple[Path, str, str]]:
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
        repo = match.group(1) if match else "?"
        out.append((path, path.parent.name, repo))
    return out


def first_kind(path: Path) -> str:
    """The root cause ajetd names (the source line is not part of the program's output)."""
    data = path.read_bytes()
    body = data[data.find(b"\n") + 1 :]
    findings = diagnose_chunks([body])
    return findings[0].kind if findings else "(none)"


def pct(hit: int, total: int) -> str:
    return f"{100 * hit / total:.1f} % ({hit}/{total})" if total else "n/a"


MAJOR = 5  # repositories with fewer excerpts are reported together


def main(args: list[str]) -> None:
    rows = [(p, kind, repo, first_kind(p)) for p, kind, repo in corpus(args)]
    sizes = Counter(short(repo) for _, _, repo, _ in rows)
    others = sum(1 for n in sizes.values() if n < MAJOR)

    def group(repo: str) -> str:
        return short(repo) if sizes[short(repo)] >= MAJOR else f"other ({others} repositories)"

    per_kind: dict[str, Counter[bool]] = defaultdict(Counter)
    per_repo: dict[str, Counter[bool]] = defaultdict(Counter)
    held: dict[str, Counter[bool]] = defaultdict(Counter)
    for _, kind, repo, got in rows:
        ok = got == kind
        per_kind[kind][ok] += 1
        per_repo[group(repo)][ok] += 1
        if repo not in PATTERNS_FROM.get(kind, set()):
            held[group(repo)][ok] += 1
            held["all held-out excerpts"][ok] += 1
    hits = sum(got == kind for _, kind, _, got in rows)
    misses = [(str(p.relative_to(CORPUS)), kind, got) for p, kind, _, got in rows if got != kind]
    if "--json" in args:
        report = {
            "overall": [hits, len(rows)],
            "per_kind": {k: [c[True], c[True] + c[False]] for k, c in sorted(per_kind.items())},
            "per_repo": {r: [c[True], c[True] + c[False]] for r, c in sorted(per_repo.items())},
            "held_out": {r: [c[True], c[True] + c[False]] for r, c in sorted(held.items())},
            "misses": misses,
        }
        print(json.dumps(report, indent=2))
        return
    print(f"top-1 root cause: {pct(hits, len(rows))} over {len(sizes)} repositories")
    print("\n| kind | top-1 |\n|---|---|")
    for kind, c in sorted(per_kind.items()):
        print(f"| {kind} | {pct(c[True], c[True] + c[False])} |")
    print("\n| repository | top-1 (all its excerpts) | held out (kinds written without it) |")
    print("|---|---|---|")
    for repo, c in sorted(per_repo.items(), key=lambda rc: -sum(rc[1].values())):
        h = held[repo]
        print(
            f"| {repo} | {pct(c[True], c[True] + c[False])} | {pct(h[True], h[True] + h[False])} |"
        )
    h = held["all held-out excerpts"]
    print(f"| all held-out excerpts | | {pct(h[True], h[True] + h[False])} |")
    print(f"\nmisses ({len(misses)}): expected -> named")
    for name, kind, got in misses:
        print(f"  {name}: {kind} -> {got}")


if __name__ == "__main__":
    main(sys.argv[1:])
