"""What vLLM's refusal to start says about the GPU, and what `gpu_memory_utilization` would
fit; pure.

vLLM checks at start that the memory free on its GPU covers the share of the total it is to
take, and refuses with the figures (vllm/v1/worker/gpu_worker.py; vLLM 0.8 to 0.10 name no
device, later ones do, `cuda:0`):

    ValueError: Free memory on device (7.34/79.11 GiB) on startup is less than desired GPU
    memory utilization (0.6, 47.47 GiB). Decrease GPU memory utilization or reduce GPU memory
    used by other processes.
    ValueError: Free memory on device cuda:0 (7.34/79.11 GiB) on startup is less than ...

What was not free was held by other processes when vLLM started. A utilisation that fits is
the free fraction of the total less a margin (`MARGIN`: the CUDA context, and memory that
moves between the check and the allocation); lowering by fixed steps instead asks for far
more than is free at every trial and burns them all.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_NUM = r"\d{1,7}(?:\.\d{1,6})?"
_REFUSAL = re.compile(
    rf"Free memory on device(?: [\w:.-]{{1,40}})? \((?P<free>{_NUM})/(?P<total>{_NUM}) GiB\)"
    rf"\s{{1,8}}on startup\s{{1,8}}is less than desired GPU memory utilization"
    rf"\s{{0,8}}\((?P<util>{_NUM}), (?P<asked>{_NUM}) GiB\)",
    re.IGNORECASE,
)
READ_CHARS = 4000  # of a finding's evidence, at most (user input: bounded)
MARGIN = 0.02  # of the GPU's total, kept free beside the utilisation that fits


@dataclass(frozen=True)
class Shortfall:
    """vLLM's figures at its refused start: GiB free and in total, the utilisation it was
    given and the GiB that asked for."""

    free_gib: float
    total_gib: float
    utilization: float
    asked_gib: float

    @property
    def held_gib(self) -> float:
        """What other processes held on the GPU when vLLM started."""
        return round(self.total_gib - self.free_gib, 2)

    def fitting(self) -> float:
        """The largest utilisation, in hundredths, that the free memory covers with the margin
        (0.0 when none does)."""
        if self.total_gib <= 0:
            return 0.0
        return max(0.0, math.floor((self.free_gib / self.total_gib - MARGIN) * 100) / 100)

    def said(self) -> str:
        """`other processes held 71.77 of 79.11 GiB on its GPU when vLLM started (7.34 GiB
        free); gpu_memory_utilization 0.6 asked 47.47 GiB`."""
        return (
            f"other processes held {self.held_gib:g} of {self.total_gib:g} GiB on its GPU when "
            f"vLLM started ({self.free_gib:g} GiB free); gpu_memory_utilization "
            f"{self.utilization:g} asked {self.asked_gib:g} GiB"
        )


def shortfall(text: str) -> Shortfall | None:
    """The figures of vLLM's refusal in `text` (a finding's evidence), if it holds them."""
    match = _REFUSAL.search(text[:READ_CHARS])
    if match is None:
        return None
    return Shortfall(
        float(match.group("free")),
        float(match.group("total")),
        float(match.group("util")),
        float(match.group("asked")),
    )
