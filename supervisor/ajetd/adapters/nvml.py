"""What the GPUs are doing: the only module that imports pynvml (from nvidia-ml-py).

Three backends behind one small interface: NVML where a driver answers, a recorded fake
(`AJETD_FAKE_GPUS=<file.json>`, also a documented way to try placement on a machine without
GPUs), and `NoGpu` ("no GPU", said once, everything else works). NVML numbers GPUs by PCI bus;
runs get `CUDA_DEVICE_ORDER=PCI_BUS_ID`, so the indices here are the ones CUDA uses. Every NVML
call fails alone: a figure the driver will not give is None, not a crash; a GPU that falls off
the bus is sampled as `lost`.
"""

from __future__ import annotations

import ctypes
import logging
import os
import time
from pathlib import Path
from typing import Any, Protocol

from ajetd.adapters.regular import load_record
from ajetd.core.errors import AjetdError
from ajetd.core.gpuuse import GpuProcess, GpuSample

log = logging.getLogger(__name__)
FAKE_ENV = "AJETD_FAKE_GPUS"
_GPU_IS_LOST = 15  # NVML_ERROR_GPU_IS_LOST
_XID_CRITICAL = 0x0000000000000008  # nvmlEventTypeXidCriticalError
# The driver's library, as pynvml loads it on Linux, and pynvml's words where it is not there.
# pynvml's module (its ctypes structures: 1.9 MiB of the daemon's memory, which it kept for
# nothing) is imported only where the library loads (issue 15: RSS at 100 quiet runs).
NVML_LIBRARY = "libnvidia-ml.so.1"
NO_LIBRARY = "NVML Shared Library Not Found"


class GpuProbe(Protocol):
    description: str

    def sample(self) -> list[GpuSample]: ...

    def xid_events(self) -> list[tuple[int, int]]:
        """Xid errors since the last call: (GPU index, Xid)."""
        ...


class NoGpu:
    """No NVML: every sample is empty."""

    def __init__(self, why: str) -> None:
        self.description = f"no GPU ({why})"

    def sample(self) -> list[GpuSample]:
        return []

    def xid_events(self) -> list[tuple[int, int]]:
        return []


class NvmlProbe:
    """NVML through nvidia-ml-py; each call's failure costs only that figure."""

    def __init__(self, nvml: Any) -> None:
        self._nvml = nvml
        count = nvml.nvmlDeviceGetCount()
        self.description = f"{count} GPU(s) via NVML, driver {nvml.nvmlSystemGetDriverVersion()}"
        self._events = self._read("nvmlEventSetCreate")
        for index in range(count):
            handle = self._read("nvmlDeviceGetHandleByIndex", index)
            if handle is not None and self._events is not None:
                self._read("nvmlDeviceRegisterEvents", handle, _XID_CRITICAL, self._events)

    def _read(self, fn: str, *args: Any) -> Any:
        try:
            return getattr(self._nvml, fn)(*args)
        except self._nvml.NVMLError as exc:
            if getattr(exc, "value", None) == _GPU_IS_LOST:
                raise _GpuLostError from exc
            return None

    def sample(self) -> list[GpuSample]:
        out = []
        try:
            count = self._read("nvmlDeviceGetCount") or 0
        except _GpuLostError:
            count = 0
        for index in range(count):
            try:
                sample = self._sample(index)
            except _GpuLostError:
                sample = GpuSample(index, "?", "", None, None, None, lost=True)
            if sample is not None:
                out.append(sample)
        return out

    def _sample(self, index: int) -> GpuSample | None:
        handle = self._read("nvmlDeviceGetHandleByIndex", index)
        if handle is None:
            return None
        util = self._read("nvmlDeviceGetUtilizationRates", handle)
        mem = self._read("nvmlDeviceGetMemoryInfo", handle)
        temp = self._read("nvmlDeviceGetTemperature", handle, 0)  # NVML_TEMPERATURE_GPU
        power = self._read("nvmlDeviceGetPowerUsage", handle)  # milliwatts
        procs = self._read("nvmlDeviceGetComputeRunningProcesses", handle) or []
        return GpuSample(
            index=index,
            name=_text(self._read("nvmlDeviceGetName", handle)) or "?",
            uuid=_text(self._read("nvmlDeviceGetUUID", handle)),
            utilization=float(util.gpu) if util is not None else None,
            memory_used_mib=mem.used / 2**20 if mem is not None else None,
            memory_total_mib=mem.total / 2**20 if mem is not None else None,
            temperature_c=float(temp) if temp is not None else None,
            power_w=power / 1000.0 if power is not None else None,
            processes=tuple(
                GpuProcess(
                    int(p.pid),
                    p.usedGpuMemory / 2**20 if isinstance(p.usedGpuMemory, int) else None,
                )
                for p in procs
            ),
        )

    def xid_events(self) -> list[tuple[int, int]]:
        if self._events is None:
            return []
        found = []
        for _ in range(64):  # bounded: a storm of events never stalls the loop
            try:
                data = self._nvml.nvmlEventSetWait_v2(self._events, 0)
            except self._nvml.NVMLError:
                break  # NVML_ERROR_TIMEOUT: nothing (more) pending
            index = self._read("nvmlDeviceGetIndex", data.device)
            found.append((int(index) if index is not None else -1, int(data.eventData)))
        return found


class _GpuLostError(Exception):
    """NVML says the GPU fell off the bus."""


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return "" if value is None else str(value)


class FakeGpuError(AjetdError, ValueError):
    """The fake GPU file is not what the documented format says."""


class FakeProbe:
    """GPUs described by a JSON file (`AJETD_FAKE_GPUS`), re-read whenever it changes.

    `{"gpus": [{"index": 0, "name": "H100", "memory_total_mib": 81920, "memory_used_mib": 0,
    "utilization": 0, "temperature_c": 40, "power_w": 70, "lost": false,
    "processes": [{"pid": 123, "memory_mib": 1000}]}, ...],
    "samples": [{"after_s": 30, "gpus": [...]}, ...], "xid": [{"index": 0, "xid": 79}]}`:
    `gpus` holds from the start, each of `samples` from `after_s` seconds after the probe
    opened (a recording over time); `xid` events are reported once each.
    """

    def __init__(self, path: Path, clock: Any = time.monotonic) -> None:
        self.path = path
        self._clock = clock
        self._opened = clock()
        self._stamp: tuple[float, int] | None = None
        self._timeline: list[tuple[float, list[GpuSample]]] = []
        self._xids: list[tuple[int, int]] = []
        self._xids_told = 0
        self._load()  # a bad file at start is an error the daemon reports and exits on
        count = len(self._timeline[0][1])
        self.description = f"{count} fake GPU(s) from {path} ({FAKE_ENV})"

    def _load(self) -> None:
        stat = self.path.stat()
        stamp = (stat.st_mtime, stat.st_size)
        if stamp == self._stamp:
            return
        data = load_record(self.path)  # larger than any such file: a ValueError, never read
        if not isinstance(data, dict) or not isinstance(data.get("gpus"), list):
            raise FakeGpuError(f'{self.path}: expected {{"gpus": [...]}}')
        timeline = [(0.0, [_fake_gpu(g, self.path) for g in data["gpus"]])]
        for entry in data.get("samples", []):
            if not isinstance(entry, dict) or not isinstance(entry.get("gpus"), list):
                raise FakeGpuError(f'{self.path}: each sample is {{"after_s": N, "gpus": [...]}}')
            after = float(entry.get("after_s", 0))
            timeline.append((after, [_fake_gpu(g, self.path) for g in entry["gpus"]]))
        xids = [(int(x["index"]), int(x["xid"])) for x in data.get("xid", [])]
        self._timeline = sorted(timeline, key=lambda t: t[0])
        self._xids, self._stamp = xids, stamp

    def _refresh(self) -> None:
        try:
            self._load()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("fake GPUs: %s unreadable, keeping the last sample: %s", self.path, exc)

    def sample(self) -> list[GpuSample]:
        self._refresh()
        elapsed = self._clock() - self._opened
        current = self._timeline[0][1]
        for after, gpus in self._timeline:
            if after <= elapsed:
                current = gpus
        return list(current)

    def xid_events(self) -> list[tuple[int, int]]:
        self._refresh()
        new = self._xids[self._xids_told :]
        self._xids_told = len(self._xids)
        return new


def _fake_gpu(entry: Any, path: Path) -> GpuSample:
    if not isinstance(entry, dict) or not isinstance(entry.get("index"), int):
        raise FakeGpuError(f"{path}: each GPU needs an integer `index`, got {entry!r}")

    def number(key: str, default: float | None = None) -> float | None:
        value = entry.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FakeGpuError(f"{path}: GPU {entry['index']}: {key} must be a number")
        return float(value)

    processes = tuple(
        GpuProcess(int(p["pid"]), None if p.get("memory_mib") is None else float(p["memory_mib"]))
        for p in entry.get("processes", [])
    )
    return GpuSample(
        index=entry["index"],
        name=str(entry.get("name", "fake GPU")),
        uuid=str(entry.get("uuid", f"GPU-fake-{entry['index']}")),
        utilization=number("utilization", 0.0),
        memory_used_mib=number("memory_used_mib", 0.0),
        memory_total_mib=number("memory_total_mib", 81920.0),
        temperature_c=number("temperature_c"),
        power_w=number("power_w"),
        processes=processes,
        lost=bool(entry.get("lost", False)),
    )


SMI_GPU_FIELDS = (
    "index,name,uuid,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw"
)
SMI_APP_FIELDS = "gpu_uuid,pid,used_memory"


def parse_nvidia_smi(gpus_csv: str, apps_csv: str = "") -> list[GpuSample]:
    """`nvidia-smi --query-gpu=SMI_GPU_FIELDS --format=csv,noheader,nounits` (and the
    compute apps) as samples; `[N/A]`, `[Not Supported]` and unparsable figures are None, and
    a GPU that fell off the bus (`Unable to determine ...`, `[GPU is lost]`) is `lost`."""

    def num(text: str) -> float | None:
        try:
            return float(text)
        except ValueError:
            return None

    apps: dict[str, list[GpuProcess]] = {}
    for line in apps_csv.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == 3 and cells[1].isdigit():
            apps.setdefault(cells[0], []).append(GpuProcess(int(cells[1]), num(cells[2])))
    out = []
    for line in gpus_csv.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 8 or not cells[0].isdigit():
            continue
        index, name, uuid, util, used, total, temp, power = cells
        out.append(
            GpuSample(
                index=int(index),
                name=name,
                uuid=uuid,
                utilization=num(util),
                memory_used_mib=num(used),
                memory_total_mib=num(total),
                temperature_c=num(temp),
                power_w=num(power),
                processes=tuple(apps.get(uuid, ())),
                lost="lost" in line.lower() or "unable to determine" in line.lower(),
            )
        )
    return out


def open_probe() -> GpuProbe:
    """The fake when `AJETD_FAKE_GPUS` names a file (errors raise: the user asked for it),
    else NVML when a driver answers, else `NoGpu` saying why."""
    fake = os.environ.get(FAKE_ENV)
    if fake:
        try:
            return FakeProbe(Path(fake).expanduser())
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise FakeGpuError(f"{FAKE_ENV}={fake}: {exc}") from exc
    try:  # the library pynvml loads (on Linux), looked for before its module is imported
        ctypes.CDLL(NVML_LIBRARY)
    except OSError:
        return NoGpu(NO_LIBRARY)
    try:
        import pynvml

        pynvml.nvmlInit()
        return NvmlProbe(pynvml)
    except Exception as exc:
        return NoGpu(str(exc) or type(exc).__name__)


def never_here(
    gpus: str, yaml_gpus: int | None, yaml_keys: str = "n_gpus_per_node x nnodes"
) -> str | None:
    """Why a run asking `gpus` (the `[ajetd] gpus` option's text; `yaml_gpus`: the GPU count
    its config asks for, in `yaml_keys`) can never start on this machine, with the GPUs it shows now
    (`placement.never`); None where it can. `ajetd lint` says it of a blueprint, `ajetd
    campaign FOLDER` of a campaign's `gpus:` (walk87 F11: accepted, each experiment then
    crashed at its launch, the budget spent in seconds)."""
    from ajetd.core import placement

    if gpus == "0":
        return None
    try:
        probe = open_probe()
    except AjetdError as exc:  # AJETD_FAKE_GPUS names a file that is not a fake
        return f"gpus: cannot see this machine's GPUs: {exc}"
    reason = placement.never(
        placement.Ask("check", gpus, None, yaml_gpus, yaml_keys), [g.index for g in probe.sample()]
    )
    if reason is None:
        return None
    return f"{reason} ({probe.description})" if isinstance(probe, NoGpu) else reason
