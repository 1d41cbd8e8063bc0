"""The only module that imports pynvml (from nvidia-ml-py). Without a driver: "no GPU".

Issue 2 needs only a probe that says what is visible; per-run attribution and placement build
on `GpuProbe`. NVML numbers GPUs by PCI bus; runs get CUDA_DEVICE_ORDER=PCI_BUS_ID so the
indices shown here are the ones CUDA uses.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GpuSample:
    index: int
    name: str
    uuid: str
    utilization: float | None  # percent
    memory_used_mib: float | None
    memory_total_mib: float | None


class GpuProbe(Protocol):
    description: str

    def sample(self) -> list[GpuSample]: ...


class NoGpu:
    """No NVML: every sample is empty."""

    def __init__(self, why: str) -> None:
        self.description = f"no GPU ({why})"

    def sample(self) -> list[GpuSample]:
        return []


class NvmlProbe:
    """NVML through nvidia-ml-py; each call's failure costs only that figure."""

    def __init__(self, nvml: Any) -> None:
        self._nvml = nvml
        count = nvml.nvmlDeviceGetCount()
        self.description = f"{count} GPU(s) via NVML, driver {nvml.nvmlSystemGetDriverVersion()}"

    def _read(self, fn: str, *args: Any) -> Any:
        try:
            return getattr(self._nvml, fn)(*args)
        except self._nvml.NVMLError:
            return None

    def sample(self) -> list[GpuSample]:
        out = []
        count = self._read("nvmlDeviceGetCount") or 0
        for index in range(count):
            handle = self._read("nvmlDeviceGetHandleByIndex", index)
            if handle is None:
                continue
            util = self._read("nvmlDeviceGetUtilizationRates", handle)
            mem = self._read("nvmlDeviceGetMemoryInfo", handle)
            out.append(
                GpuSample(
                    index=index,
                    name=str(self._read("nvmlDeviceGetName", handle) or "?"),
                    uuid=str(self._read("nvmlDeviceGetUUID", handle) or ""),
                    utilization=float(util.gpu) if util is not None else None,
                    memory_used_mib=mem.used / 2**20 if mem is not None else None,
                    memory_total_mib=mem.total / 2**20 if mem is not None else None,
                )
            )
        return out


def open_probe() -> GpuProbe:
    """NVML when a driver answers, else `NoGpu` saying why (logged once by the caller)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return NvmlProbe(pynvml)
    except Exception as exc:
        return NoGpu(str(exc) or type(exc).__name__)
