"""The corpus of real failure logs (issue 12): its shape, and diagnosis on every excerpt.

Each excerpt is `tests/data/corpus/<kind>/<name>.log`: the folder is the true root cause, the
first line names the public thread it was taken from, the rest is what the program printed.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from ajetd.core.termtext import strip_dress
from ajetd.diagnosis import catalogue
from ajetd.diagnosis.catalogue import BY_NAME
from ajetd.diagnosis.shape import EXCEPTION_LINE
from ajetd.diagnosis.stream import diagnose_chunks
from ajetd.diagnosis.text import clean_line
from conftest import bench_module

CORPUS = Path(__file__).parent / "data" / "corpus"
FILES = sorted(CORPUS.glob("*/*.log"))
HEADER = re.compile(
    r"^# source: (?P<repo>[\w.-]+/[\w.-]+)#(?P<number>\d+) "
    r"https://github\.com/(?P=repo)/(?:issues|pull|discussions)/(?P=number)$"
)


def _repo(path: Path) -> str:
    match = HEADER.match(path.read_text(errors="replace").split("\n", 1)[0])
    assert match, f"{path.name}: first line must be `# source: owner/repo#N <url>`"
    return match.group("repo")


def _body(path: Path) -> bytes:
    data = path.read_bytes()
    return data[data.find(b"\n") + 1 :]


def test_every_excerpt_names_its_source_and_a_known_kind() -> None:
    for path in FILES:
        _repo(path)
        assert path.parent.name in BY_NAME, f"{path}: {path.parent.name} is not a kind"
        assert _body(path).strip(), f"{path}: no excerpt under the source line"


def test_the_corpus_is_large_and_varied_enough() -> None:
    repos = Counter(_repo(p).lower() for p in FILES)
    kinds = Counter(p.parent.name for p in FILES)
    assert len(FILES) >= 150
    assert len(repos) >= 6, repos
    assert min(kinds.values()) >= 5, kinds
    assert repos["nvidia-nemo/rl"] >= 40, repos
    assert sum(n for r, n in repos.items() if r.endswith(("/verl", "/agentjet"))) >= 40, repos
    # the repositories once measured on fewer than ten excerpts (issue 12's held-out target)
    for small in ("openrlhf/openrlhf", "deepspeedai/deepspeed", "vllm-project/vllm-ascend"):
        assert repos[small] >= 12, repos
    # after freeze 6's batch (bench/heldout/batch-freeze6.txt): 615 excerpts; after freeze 7's
    # (batch-freeze7.txt, aimed at Ascend's classes): 638, LlamaFactory one of the large ones
    assert len(FILES) >= 638
    # after freeze 8's (batch-freeze8.txt, taken as the failures came: verl and its neighbours)
    assert len(FILES) >= 663 and repos["verl-project/verl"] >= 74, repos
    assert repos["openrlhf/openrlhf"] >= 25 and repos["vllm-project/vllm-ascend"] >= 34, repos
    assert repos["hiyouga/llamafactory"] >= 17, repos
    # after freeze 9's (batch-freeze9.txt, aimed at the repositories at or near 85 % held out:
    # SGLang, NeMo speech, verl, NeMo-RL)
    assert len(FILES) >= 692 and repos["sgl-project/sglang"] >= 13, repos
    assert repos["nvidia-nemo/speech"] >= 9 and repos["verl-project/verl"] >= 79, repos
    # after freeze 10's (batch-freeze10.txt, taken as the failures came from the stack ajetd
    # supervises: vLLM, Ray, verl and their neighbours; batch-shapes-freeze10.txt after it)
    assert len(FILES) >= 721 and repos["ray-project/ray"] >= 44, repos
    assert repos["vllm-project/vllm"] >= 59 and repos["verl-project/verl"] >= 81, repos
    # after freeze 12's (batch-freeze12.txt, aimed at verl and NeMo-RL: two verl excerpts) and
    # batch-shapes-freeze12.txt (other repositories' excerpts of verl's and NeMo-RL's phrasings,
    # looked for after the blind figure)
    assert len(FILES) >= 729 and repos["verl-project/verl"] >= 83, repos
    assert repos["ray-project/ray"] >= 47 and repos["nvidia-nemo/rl"] >= 60, repos
    # after freeze 11's (batch-freeze11.txt, aimed at SGLang: its threads, slime's and AReaL's)
    assert len(FILES) >= 749 and repos["sgl-project/sglang"] >= 27, repos
    assert repos["thudm/slime"] >= 9, repos
    # after freeze 13's (batch-freeze13.txt) and 14's (batch-freeze14.txt, aimed at the
    # held-out repositories under 85 %: SGLang, slime, AReaL; batch-shapes-freeze14.txt after it)
    assert len(FILES) >= 778 and repos["sgl-project/sglang"] >= 45, repos
    # and the two KeyErrors of a model type Transformers has no entry for (looked for after)
    assert len(FILES) >= 780, len(FILES)
    assert repos["thudm/slime"] >= 12 and repos["areal-project/areal"] >= 6, repos
    # after freeze 15's (batch-freeze15.txt: the supervised stack's failure classes not queried
    # before, then SGLang, slime, AReaL)
    assert len(FILES) >= 800 and repos["ray-project/ray"] >= 54, repos
    assert repos["vllm-project/vllm"] >= 66 and repos["verl-project/verl"] >= 89, repos
    assert repos["sgl-project/sglang"] >= 47 and repos["thudm/slime"] >= 13, repos
    # after freeze 16's (batch-freeze16.txt: failure classes not queried before, in the
    # contract's kinds users hit most; then AReaL, slime, SGLang, vLLM)
    assert len(FILES) >= 818 and repos["vllm-project/vllm"] >= 75, repos
    assert repos["ray-project/ray"] >= 56 and repos["verl-project/verl"] >= 91, repos
    assert repos["sgl-project/sglang"] >= 49 and repos["thudm/slime"] >= 14, repos
    # after freeze 17's (batch-freeze17.txt: SGLang, slime, AReaL held out under 85 %)
    assert len(FILES) >= 825 and repos["sgl-project/sglang"] >= 54, repos
    assert repos["thudm/slime"] >= 15 and repos["areal-project/areal"] >= 7, repos
    # after freeze 18's (batch-freeze18.txt: the held-out misses' classes looked for in the
    # stack's other projects, then SGLang, slime, AReaL with new words)
    assert len(FILES) >= 835 and repos["sgl-project/sglang"] >= 57, repos
    assert repos["thudm/slime"] >= 16 and repos["vllm-project/vllm"] >= 76, repos
    # after freeze 19's (batch-freeze19.txt: slime's and AReaL's misses' classes looked for in
    # other words, none found; then a fresh batch taken as the failures came)
    assert len(FILES) >= 846 and repos["nvidia/nccl"] >= 6, repos
    assert repos["deepspeedai/deepspeed"] >= 13 and repos["pytorch/pytorch"] >= 10, repos
    # after freeze 20's (batch-freeze20.txt: DeepSpeed's tracker and its two held-out misses'
    # classes in other projects, AReaL's tracker once more)
    assert len(FILES) >= 858 and repos["deepspeedai/deepspeed"] >= 17, repos
    assert repos["vllm-project/vllm"] >= 77 and repos["areal-project/areal"] >= 8, repos
    # after freeze 20b's (batch-freeze20b.txt: vLLM's misses' words in the programs that run it)
    assert len(FILES) >= 862 and repos["vllm-project/vllm-omni"] >= 1, repos
    # after freeze 21's (batch-freeze21.txt: the stack's failures as they come, for the families)
    assert len(FILES) >= 874 and repos["huggingface/trl"] >= 8, repos
    # after freeze 22's (batch-freeze22.txt: a blind batch from projects the corpus held few of:
    # torchtitan, accelerate, Ray Train, TRL, Megatron, DeepSpeed and their neighbours)
    assert len(FILES) >= 907 and repos["huggingface/accelerate"] >= 2, repos
    assert repos["huggingface/trl"] >= 10 and repos["ray-project/ray"] >= 61, repos
    # after freeze 23's (batch-freeze23.txt: AReaL first, then lmdeploy, torchtune, Ray and
    # the stack's neighbours)
    assert len(FILES) >= 940 and repos["areal-project/areal"] >= 11, repos
    assert repos["internlm/lmdeploy"] >= 7 and repos["ray-project/ray"] >= 64, repos
    # after areal24's (batch-areal24.txt: AReaL's tracker, then its held-out misses' classes in
    # Ray, Ray Tune and the clients of SGLang and vLLM servers)
    assert len(FILES) >= 958 and repos["ray-project/ray"] >= 68, repos
    assert repos["vllm-project/vllm"] >= 81 and repos["allenai/olmocr"] >= 2, repos
    # after freeze 24's (batch-freeze24.txt: the stack ajetd supervises, as the failures came;
    # its trackers nearly exhausted, the class queries brought in neighbours)
    assert len(FILES) >= 988 and repos["ray-project/ray"] >= 73, repos
    assert repos["verl-project/verl"] >= 95 and repos["vllm-project/vllm"] >= 83, repos
    # after diag97's (batch-diag97.txt: the trackers and failure shapes the corpus held least:
    # TRL, LLaMA-Factory, ms-swift, NCCL over InfiniBand, the Hub's auth and network, dataset
    # schemas and columns, ports; then four of its classes in other projects, looked for after)
    assert len(FILES) >= 1028 and repos["huggingface/trl"] >= 14, repos
    assert repos["modelscope/ms-swift"] >= 12 and repos["nvidia/nccl"] >= 10, repos
    # and its B2 (batch-diag97b.txt: a second small blind batch after its rules)
    assert len(FILES) >= 1037 and repos["huggingface/trl"] >= 15, repos
    # after diag98's (batch-diag98.txt: the kinds the corpus held least, host memory, /dev/shm,
    # fp16's loss scaling, Slurm's refusals, and shapes no excerpt held: TensorFlow's OOM,
    # DataLoader workers killed, device maps refused by a distributed trainer)
    assert len(FILES) >= 1079 and repos["huggingface/trl"] >= 16, repos


@pytest.mark.parametrize(
    "freeze", sorted((Path(__file__).parent.parent / "bench" / "heldout").glob("batch-*.txt"))
)
def test_every_excerpt_a_held_out_batch_names_is_in_the_corpus(freeze: Path) -> None:
    root = Path(__file__).parent.parent
    missing = [name for name in freeze.read_text().split() if not (root / name).is_file()]
    assert not missing, missing


def test_top1_accuracy_is_at_least_95_percent() -> None:
    misses = []
    for path in FILES:
        findings = diagnose_chunks([_body(path)])
        named = findings[0].kind if findings else None
        if named != path.parent.name:
            misses.append(f"{path.relative_to(CORPUS)}: named {named}")
    assert len(misses) <= 0.05 * len(FILES), misses


def _has_exception_line(body: bytes) -> bool:
    lines = body.decode("utf-8", errors="replace").split("\n")
    return any(EXCEPTION_LINE.match(strip_dress(clean_line(x)).lstrip()) for x in lines)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_no_excerpt_with_an_exception_line_ends_without_a_finding(path: Path) -> None:
    body = _body(path)
    if _has_exception_line(body):
        assert diagnose_chunks([body]), "an exception line, yet no finding"


def test_a_pattern_only_one_repository_shows_is_removed_while_it_is_held_out() -> None:
    bench = bench_module("diagnosis")  # the held-out protocol
    rows = bench.corpus()
    support = bench.support(rows)
    before = {tuple(x.split("\t", 1)) for x in bench.BEFORE_CORPUS.read_text().splitlines()}
    assert before and not before & support.keys(), "patterns from before the corpus are kept"
    only = bench.written_only_from(support)
    verl = ("config_error", "reward function is not implemented for data_source")
    assert support[verl] == {"verl-project/verl"} and verl in only["verl-project/verl"]
    whole = catalogue.CATALOGUE
    with bench.catalogue_without(only["verl-project/verl"]):
        patterns = {p.pattern for p in catalogue.BY_NAME["config_error"].patterns}
        in_use = {
            p.pattern for k in catalogue.CATALOGUE for p in k.patterns if k.name == "config_error"
        }
        assert verl[1] in patterns and verl[1] not in in_use
    assert catalogue.CATALOGUE is whole


def test_held_out_one_repository_at_a_time_stays_at_least_90_percent() -> None:
    bench = bench_module("diagnosis")  # the held-out protocol
    rows = bench.corpus()
    named, _ = bench.held_out(rows)
    hits = sum(got == kind for (_, kind, _), got in zip(rows, named, strict=True))
    assert hits >= 0.90 * len(rows), f"held out: {hits}/{len(rows)}"


# Read without the pattern only it supports, by its exception's class or its words' family
# (`ajetd.diagnosis.families`): each lost its reading with its own pattern removed before them.
FAMILY_READ = (
    "config_error/areal-752.log",  # `expected sglang or vllm`
    "config_error/slime-1730.log",  # `is not equal to`
    "config_error/verl-1120.log",  # `cannot exceed`
    "cuda_error/torchmemorysaver-35.log",  # `CUresult error` on a line of its own
    "import_error/ray-6735.log",  # `dlopen(...): Symbol not found`
    "nccl_error/hubert-1.log",  # NCCL named in a RuntimeError
    "nccl_error/nccltests-15.log",  # `NCCL failure common.cu:921`
    "network/hfdatasets-759.log",  # `Couldn't reach`
    "disk_full/ray-49173.log",  # Ray's OutOfDiskError after other text on its line
)


def test_held_out_one_excerpt_at_a_time_stays_at_least_92_percent() -> None:
    """Leave-one-excerpt-out (`bench/diagnosis.py --per-excerpt`): 91.4 % (799/874) before the
    families, 92.7 % (810/874) with them and freeze 21's rules (docs/benchmarks.md, "Freeze 21")."""
    bench = bench_module("diagnosis")  # the held-out protocol
    rows = bench.corpus()
    named = bench.per_excerpt(rows)
    pairs = zip(rows, named, strict=True)
    right = {str(p.relative_to(CORPUS)) for (p, kind, _), got in pairs if got == kind}
    assert len(right) >= 0.92 * len(rows), f"held out one at a time: {len(right)}/{len(rows)}"
    assert set(FAMILY_READ) <= right, sorted(set(FAMILY_READ) - right)


# Repositories of twenty excerpts or more that are held out under 85 %, each with the number
# it is held out on at least: the target not met, said, and held where it stands. SGLang came to
# 27 excerpts with freeze 11 (13 before: not asserted), held out 19 of 27 after its rules: 3
# are chunks cut before their error line, 1 a label its thread does not explain (#7918), 1
# lacks the CUDA error its title names (#4673), 3 hold words only SGLang prints (a negative
# KV-cache budget, an architecture not supported, Triton's shared memory refusal), so no honest
# rule reaches 23 (docs/benchmarks.md, "Freeze 11"). Freeze 13's blind batch brought it to 34,
# held out 26 (its 7 new ones right), and 27 once an architecture refused was read in Megatron-
# Bridge's words too (NeMo-RL#1112): 29 would be 85 %. Freeze 14's blind batch brought it to
# 45, held out 36 (9 of its 11 new ones right), and 37 once Transformers' words for a model
# type it has no class for were read (ComfyUI_ExtraModels' log, looked for after, supports
# SGLang's): 39 would be 85 %. Freeze 15's blind batch brought it to 47, held out 39 (its 2 new
# ones right, blind): 40 would be 85 %. Freeze 16's brought it to 49, held out 40 (one of its
# 2 new ones right, blind; the other's rule, the CUDACHECK macro's words, only SGLang's
# excerpt shows): 42 would be 85 %. Freeze 17's brought it to 54, held out 45 (its 5 new ones
# right, blind): 46 would be 85 %. Freeze 18's brought it to 57, held out 50: two other
# projects' excerpts of the CUDACHECK macro's and of Triton's shared-memory refusal (looked for by
# their words: the optimistic support `docs/benchmarks.md` names) keep those patterns while SGLang
# is held out. It left the list. vLLM (85.5 %, 65 of 76, after freeze 18) came to 77 with freeze
# 20's blind batch, its new excerpt (vllm#4655: `The number of required GPUs exceeds the total`,
# cut there) read wrong blind and its rule, the wanted GPUs said to exceed what there is, shown
# by vLLM's excerpt alone: held out 65 of 77 (84.4 %), 66 would be 85 %. Freeze 20b looked for
# vLLM's misses' words in the programs that run vLLM: distilabel's and vLLM-Omni's excerpts show
# two of them (the wanted GPUs said to exceed; pydantic's indented `Value error, ...`), so vLLM
# is held out at 67 of 77 (87.0 %), only by that optimistic support (`docs/benchmarks.md`,
# "Freeze 20b"), and left the list. An entry must go once its repository reaches 85 %.
BELOW_TARGET: dict[str, int] = {}


def test_each_repository_of_twenty_excerpts_or_more_is_held_out_at_85_percent() -> None:
    """Issue 12's target for the repositories large enough to say it (vLLM-Ascend reached it
    after freeze 7: 70.4 % before it); the ones that have not (`BELOW_TARGET`) are held at the
    figure they were measured at, and must leave the list when they reach it."""
    bench = bench_module("diagnosis")  # the held-out protocol
    rows = bench.corpus()
    named, _ = bench.held_out(rows)
    per: dict[str, Counter[bool]] = {}
    for (_, kind, repo), got in zip(rows, named, strict=True):
        per.setdefault(repo, Counter())[got == kind] += 1
    low = {
        repo: f"{c[True]}/{c[True] + c[False]}"
        for repo, c in per.items()
        if c[True] + c[False] >= 20 and c[True] < 0.85 * (c[True] + c[False])
    }
    assert low.keys() == BELOW_TARGET.keys(), low
    fell = {repo: low[repo] for repo, floor in BELOW_TARGET.items() if per[repo][True] < floor}
    assert not fell, fell


@pytest.mark.parametrize(
    ("name", "repo"),
    [
        # exit statuses that name a signal
        ("host_oom/deepspeed-3232.log", "deepspeedai/deepspeed"),
        ("segfault/deepspeedexamples-626.log", "deepspeedai/deepspeedexamples"),
        # an OutOfMemoryError class in Ray's namespace is host memory
        ("host_oom/ray-3323.log", "ray-project/ray"),
        # build tools' summaries; a traceback through a build backend's frames
        ("build_error/ray-14475.log", "ray-project/ray"),
        ("build_error/vllm-29098.log", "vllm-project/vllm"),
        # a connect that timed out or failed; a Ray system component failing or unreachable
        ("network/pytorch-69197.log", "pytorch/pytorch"),
        ("network/vllm-6775.log", "vllm-project/vllm"),
        ("ray_cluster/ray-9239.log", "ray-project/ray"),
        ("ray_cluster/nemorl-309.log", "nvidia-nemo/rl"),
        ("ray_cluster/roll-147.log", "alibaba/roll"),
        # settings stated as constraints; NotImplementedError; an invalid model id
        ("config_error/verl-5821.log", "verl-project/verl"),
        ("config_error/nemorl-2482-2.log", "nvidia-nemo/rl"),
        ("missing_model/vllm-13510.log", "vllm-project/vllm"),
        # a failed write; vLLM's processes dying; a dead actor; GPUs that cannot be scheduled
        ("disk_full/pytorch-10577.log", "pytorch/pytorch"),
        ("vllm_engine_dead/vllm-46726.log", "vllm-project/vllm"),
        ("ray_worker_died/ray-18586.log", "ray-project/ray"),
        ("insufficient_gpus/gpustack-5509.log", "gpustack/gpustack"),
        # ssh itself failing (exit 255), however the command is quoted
        ("launch_error/deepspeed-4649.log", "deepspeedai/deepspeed"),
        # an RDMA completion with an error; a collective library call's error code
        ("nccl_error/openrlhf-621.log", "openrlhf/openrlhf"),
        ("nccl_error/vllmascend-486.log", "vllm-project/vllm-ascend"),
        # a device index or size checked against the device count (the second one wrapped)
        ("insufficient_gpus/openrlhf-866.log", "openrlhf/openrlhf"),
        ("insufficient_gpus/vllmascend-14628-2.log", "vllm-project/vllm-ascend"),
        # the allocator's out-of-memory message; an accelerator other than CUDA out of memory
        ("cuda_oom/vllmascend-19.log", "vllm-project/vllm-ascend"),
        ("cuda_oom/vllmascend-1617.log", "vllm-project/vllm-ascend"),
        # the linker's own failure
        ("build_error/deepspeed-5192.log", "deepspeedai/deepspeed"),
        # after freeze 5: a Ray system component that ended (crashed, terminated, its
        # connection closed) or the cluster named by its address; vLLM's engine core reporting
        # a failure; a device index rejected as invalid; a compiler quoted as the failed
        # command; a traceback the excerpt ends inside
        ("ray_cluster/ray-19695.log", "ray-project/ray"),
        ("ray_cluster/ray-4723.log", "ray-project/ray"),
        ("ray_cluster/ray-31119.log", "ray-project/ray"),
        ("ray_cluster/openrlhf-415.log", "openrlhf/openrlhf"),
        ("vllm_engine_dead/vllm-17276.log", "vllm-project/vllm"),
        ("insufficient_gpus/vllmascend-167.log", "vllm-project/vllm-ascend"),
        ("build_error/vllmascend-6242.log", "vllm-project/vllm-ascend"),
        ("unknown_traceback/lmmr1-49.log", "tidedra/lmm-r1"),
        ("unknown_traceback/segzero-105.log", "jia-lab-research/seg-zero"),
        # the accelerator runtime's advice to launch kernels synchronously (Ascend's, CUDA's)
        ("cuda_error/vllmascend-1007.log", "vllm-project/vllm-ascend"),
        ("cuda_error/vllmascend-6190.log", "vllm-project/vllm-ascend"),
        # after freeze 6: Ray's job server answering a server error; a library's own words for
        # a failed import; a RaySystemError read as the cause it carries; an actor's
        # constructor that raised; pytest's column and a RayTaskError naming no inner
        # exception; Hydra announcing the failure printed after it
        ("ray_cluster/openrlhf-737.log", "openrlhf/openrlhf"),
        ("ray_cluster/verl-768.log", "verl-project/verl"),
        ("import_error/vllmascend-166.log", "vllm-project/vllm-ascend"),
        ("import_error/ray-27015.log", "ray-project/ray"),
        ("unknown_traceback/nemorl-621.log", "nvidia-nemo/rl"),
        ("unknown_traceback/nemorl-1633.log", "nvidia-nemo/rl"),
        ("build_error/voteflow-2.log", "tudelft-iv/voteflow"),
        # a setting compared by name with what it is checked against
        ("config_error/openrlhf-346.log", "openrlhf/openrlhf"),
        ("config_error/verl-259.log", "verl-project/verl"),
        # after freeze 7 (Ascend NPUs): a call into the operator library that failed; an
        # operator whose kernel could not be launched; no kernel binary for an operator; a
        # compute unit of the NPU that faulted (the runtime's report, the unit's exception);
        # HCCL's error codes for a timed-out wait and for another failure; and, by the support
        # the batch gave them, a kernel launch that failed, HCCL's own timeout and vLLM's
        # negative KV-cache budget
        ("cuda_error/opensoraplan-360.log", "pku-yuangroup/open-sora-plan"),
        ("cuda_error/vllmomni-845.log", "vllm-project/vllm-omni"),
        ("cuda_error/vllmascend-8679.log", "vllm-project/vllm-ascend"),
        ("cuda_error/vllmascend-4859.log", "vllm-project/vllm-ascend"),
        ("cuda_error/vllmascend-6018.log", "vllm-project/vllm-ascend"),
        ("cuda_error/glmocr-232.log", "zai-org/glm-ocr"),
        ("cuda_error/ascendpytorch-66.log", "ascend/pytorch"),
        ("nccl_timeout/llamafactory-5071.log", "hiyouga/llamafactory"),
        ("nccl_timeout/vllmascend-1443.log", "vllm-project/vllm-ascend"),
        ("cuda_error/vllmascend-11720.log", "vllm-project/vllm-ascend"),
        ("nccl_timeout/vllmascend-16646.log", "vllm-project/vllm-ascend"),
        ("vllm_memory/vllmascend-9372.log", "vllm-project/vllm-ascend"),
        # after freeze 8 (taken as they came): PyTorch's AcceleratorError named alone by a Ray
        # wrapper; a Ray client that could not connect to the raylet's socket
        ("cuda_error/slime-1783.log", "thudm/slime"),
        ("ray_cluster/verl-158.log", "verl-project/verl"),
        # after freeze 9: the GPUs wanted and the GPUs there are, compared (NeMo-RL's words
        # support verl's); a traceback cut while importing (Megatron-LM, vLLM); a C++
        # assertion that failed
        ("insufficient_gpus/verl-5954.log", "verl-project/verl"),
        ("import_error/megatron-1476.log", "nvidia/megatron-lm"),
        ("import_error/vllm-21226.log", "vllm-project/vllm"),
        ("unknown_traceback/nemorl-1051.log", "nvidia-nemo/rl"),
        # after freeze 10: a node of the Ray cluster marked dead, its sentence holding the
        # node's IP address (verl's words, looked for after the blind batch, support Ray's)
        ("ray_cluster/ray-3446.log", "ray-project/ray"),
        ("ray_cluster/ray-46548.log", "ray-project/ray"),
        ("ray_cluster/verl-1632.log", "verl-project/verl"),
        # after freeze 12: a socket between ranks that timed out waiting for the peer (verl's
        # c10d store; LlamaFactory's HCCL socket supports it); uv refusing an undefined extra,
        # its name quoted either way (NeMo-RL's, SLEAP's); and, by the support the phrasings
        # looked for after the blind batch gave them (batch-shapes-freeze12.txt): Triton's LLVM
        # abort, ROCm's HIP error, a Ray worker's fatal CHECK in its task receiver, Ray's two
        # words for a port another component holds or no port left
        ("nccl_timeout/verl-668.log", "verl-project/verl"),
        ("build_error/nemorl-3547.log", "nvidia-nemo/rl"),
        ("cuda_error/verl-1633.log", "verl-project/verl"),
        ("cuda_error/verl-3163.log", "verl-project/verl"),
        ("ray_worker_died/verl-2380.log", "verl-project/verl"),
        ("port_in_use/nemorl-261.log", "nvidia-nemo/rl"),
        ("port_in_use/nemorl-951.log", "nvidia-nemo/rl"),
        # after freeze 11: an ignored import error whose error is a compiler's failed run (the
        # compiler's words support other repositories); a refusal after a dropped connection
        ("build_error/sglang-4253.log", "sgl-project/sglang"),
        ("connection_refused/sglang-25084.log", "sgl-project/sglang"),
        # after freeze 13: an architecture refused, in SGLang's words and in Megatron-Bridge's
        # (its message on the line after `ValueError:`), each supports the other
        ("config_error/sglang-5441.log", "sgl-project/sglang"),
        ("config_error/nemorl-1112.log", "nvidia-nemo/rl"),
        # after freeze 14: a model type Transformers has no class for, in its words, read in
        # SGLang's log and in ComfyUI_ExtraModels' (looked for after the blind batch)
        ("config_error/sglang-128.log", "sgl-project/sglang"),
        ("config_error/comfyextramodels-114.log", "city96/comfyui_extramodels"),
        # freeze 18: a component saying it does not support the setting asked (slime's GDN
        # shows it too); the CUDACHECK macro's words and Triton's refusal, shown by vLLM's and
        # by ktransformers' and Qwen3-Coder's excerpts (looked for by those words)
        ("config_error/llmd-2433.log", "llm-d/llm-d"),
        ("cuda_error/sglang-552.log", "sgl-project/sglang"),
        ("cuda_error/sglang-8513.log", "sgl-project/sglang"),
        # freeze 19: C++'s abort ranked after the `what()` that names its cause (five other
        # repositories print the pair); THC's words for a CUDA error (pytorch#2567's and
        # human-pose-estimation's excerpts show them too); a resume's notice that a checkpoint
        # does not exist yet is no failure (verl prints it at every start from scratch)
        ("cuda_error/3dgrut-191.log", "nv-tlabs/3dgrut"),
        ("cuda_error/maskrcnnbenchmark-238.log", "facebookresearch/maskrcnn-benchmark"),
        ("unknown_traceback/slime-178.log", "thudm/slime"),
        # freeze 20: a notebook's frames through torch's extension build, in either IPython
        # format (DeepSpeed's excerpts in IPython 7's, gpt-neo-fine-tuning-example's in 8's, one
        # pattern); pdsh's report of ssh's exit 255 (GPT-NeoX's excerpt shows it too). Each
        # other project's excerpt was looked for by the class's words: the optimistic support
        # docs/benchmarks.md names
        ("build_error/deepspeed-885.log", "deepspeedai/deepspeed"),
        ("build_error/deepspeed-1127.log", "deepspeedai/deepspeed"),
        ("build_error/gptneofinetuningexample-12.log", "dredwardhyde/gpt-neo-fine-tuning-example"),
        ("launch_error/deepspeed-5709.log", "deepspeedai/deepspeed"),
        # freeze 20b: vLLM's words in other programs' logs (looked for by them): the GPUs a run
        # wants said to exceed those there are (distilabel), pydantic's `Value error, ...` for a
        # refused engine setting, indented or not (vLLM-Omni)
        ("insufficient_gpus/vllm-4655.log", "vllm-project/vllm"),
        ("config_error/vllm-28857.log", "vllm-project/vllm"),
    ],
)
def test_shape_rules_name_an_excerpt_with_its_repository_held_out(name: str, repo: str) -> None:
    """Each shape rule, on an excerpt whose own phrasing only its repository shows: with that
    repository's patterns removed, the shape still names the root cause."""
    bench = bench_module("diagnosis")  # the held-out protocol
    path = CORPUS / name
    assert _repo(path).lower() == repo
    with bench.catalogue_without(_only_from().get(repo, set())):
        assert bench.first_kind(path) == path.parent.name


@cache
def _only_from() -> dict[str, set[tuple[str, str]]]:
    """repository -> the patterns only it supports (`bench/diagnosis.py`), once a worker."""
    bench = bench_module("diagnosis")
    return dict(bench.written_only_from(bench.support(bench.corpus())))
