"""GPU probing, placement, attribution and the GPU-aware rules, without a GPU: NVML behind a
recorded fake module, the `AJETD_FAKE_GPUS` file backend, and the pure planners."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ajetd.adapters.nvml import (
    FakeGpuError,
    FakeProbe,
    NvmlProbe,
    open_probe,
)
from ajetd.core import gpuuse, placement
from ajetd.core.finding import Finding
from ajetd.core.gpuuse import GpuProcess, GpuSample, RunGpu
from ajetd.core.model import Run, State, Trial
from ajetd.core.options import Options
from ajetd.core.policy import Attention, Observation, Timing, decide
from ajetd.core.remedy import Relaunch, choose
from ajetd.core.runparts import GpuStats
from conftest import python_says

GIB = 1024.0


def gpu(index: int, used: float = 0.0, util: float = 0.0, procs: Any = (), lost: bool = False):
    processes = tuple(GpuProcess(pid, mem) for pid, mem in procs)
    return GpuSample(
        index, "H100", f"GPU-{index}", util, used, 80 * GIB, processes=processes, lost=lost
    )


# -- placement -------------------------------------------------------------------------------
def test_counts_lists_all_and_cpu_only_are_placed_disjointly() -> None:
    gpus = [gpu(i) for i in range(4)]
    asks = [
        placement.Ask("a", "2"),
        placement.Ask("b", "[3,1]"),
        placement.Ask("c", "0"),
        placement.Ask("d", "1"),
    ]
    out = placement.plan(asks, gpus, {}, frozenset())
    assert out["a"] == placement.Place((0, 1))
    assert isinstance(out["b"], placement.Wait) and "GPU 1 is held by run a" in out["b"].reason
    assert out["c"] == placement.Place(())  # CPU only never waits
    assert out["d"] == placement.Place((2,))  # b's list reserves only 1 and 3; 2 is free


def test_a_large_request_is_not_starved_by_later_small_ones() -> None:
    gpus = [gpu(i) for i in range(4)]
    held = {"old": (0, 1)}
    asks = [placement.Ask("big", "all"), placement.Ask("small", "1")]
    out = placement.plan(asks, gpus, held, frozenset())
    assert isinstance(out["big"], placement.Wait)
    assert isinstance(out["small"], placement.Wait)  # 2 and 3 are reserved for `big`
    assert "GPU 2 is reserved for run big, earlier in the queue" in out["small"].reason
    assert out["big"] == placement.Wait(out["big"].reason, (2, 3))  # kept free for it
    assert out["small"].reserves == ()


def test_foreign_memory_and_lost_gpus_are_not_free() -> None:
    gpus = [gpu(0, used=40 * GIB, procs=[(999, 40 * GIB)]), gpu(1, lost=True), gpu(2)]
    out = placement.plan([placement.Ask("a", "all")], gpus, {}, frozenset())
    reason = out["a"].reason  # type: ignore[union-attr]
    assert "GPU 0 has 40.0 GiB of 80 GiB used by other processes (pids 999)" in reason
    assert "GPU 1 is lost" in reason
    # a run's own processes are not foreign; a little foreign memory is under the threshold
    gpus = [gpu(0, used=41 * GIB, procs=[(7, 40 * GIB), (999, 1 * GIB)])]
    assert placement.plan([placement.Ask("a", "1")], gpus, {}, frozenset({7}))["a"] == (
        placement.Place((0,))
    )


def test_requests_that_can_never_be_met_say_why() -> None:
    gpus = [gpu(0), gpu(1)]
    out = placement.plan(
        [placement.Ask("a", "4"), placement.Ask("b", "[1,5]"), placement.Ask("c", "all", None, 8)],
        gpus,
        {},
        frozenset(),
    )
    assert "more GPUs than this machine has (2 visible)" in out["a"].reason  # type: ignore[union-attr]
    assert "names GPU 5" in out["b"].reason  # type: ignore[union-attr]
    assert "n_gpus_per_node x nnodes = 8, but the run gets 2" in out["c"].reason  # type: ignore[union-attr]
    # without any GPU, `all` leaves CUDA_VISIBLE_DEVICES alone; a count cannot be met
    none = placement.plan([placement.Ask("a", "all"), placement.Ask("b", "1")], [], {}, frozenset())
    assert none["a"] == placement.Place(None) and isinstance(none["b"], placement.Never)


def test_a_count_s_relaunch_takes_a_free_gpu_a_list_s_waits_for_its_own() -> None:
    """walk92 F6: a `gpus: 1` run's relaunch after vllm_memory waited for its old GPU, held by
    an outside process, while another sat free. A count takes any suitable free GPU (its own
    first, while free); a list stays pinned to the GPUs it names, and waits for them."""
    gpus = [gpu(0, used=30 * GIB, procs=[(999, 30 * GIB)]), gpu(1)]
    out = placement.plan([placement.Ask("a", "1", held=(0,))], gpus, {"a": (0,)}, frozenset())
    assert out["a"] == placement.Place((1,))
    out = placement.plan([placement.Ask("a", "[0]", held=(0,))], gpus, {"a": (0,)}, frozenset())
    assert isinstance(out["a"], placement.Wait) and "GPU 0 has 30.0 GiB" in out["a"].reason
    gpus[0] = gpu(0)
    out = placement.plan([placement.Ask("a", "1", held=(1,))], gpus, {"a": (1,)}, frozenset())
    assert out["a"] == placement.Place((1,))  # its own GPU, free: it stays there
    out = placement.plan([placement.Ask("a", "[0]", held=(0,))], gpus, {"a": (0,)}, frozenset())
    assert out["a"] == placement.Place((0,))


_STATE = st.sampled_from(["free", "foreign", "lost", "other run"])


@given(
    states=st.lists(_STATE, min_size=1, max_size=6),
    count=st.integers(1, 6),
    held=st.sets(st.integers(0, 5), max_size=3),
    listed=st.booleans(),
)
def test_a_relaunch_waits_only_when_too_few_suitable_gpus_are_free(
    states: list[str], count: int, held: set[int], listed: bool
) -> None:
    """Alone in the queue, a count request is placed exactly when `count` GPUs are free (no
    other process over the threshold, not lost, not another run's), on its held ones first;
    a list request (its held GPUs named) exactly when every one it names is free."""
    gpus = [
        gpu(i, used=40 * GIB, procs=[(900 + i, 40 * GIB)])
        if s == "foreign"
        else gpu(i, lost=s == "lost")
        for i, s in enumerate(states)
    ]
    free = {i for i, s in enumerate(states) if s == "free"}
    held_seen = tuple(sorted(i for i in held if i < len(states)))
    others = {"b": tuple(i for i, s in enumerate(states) if s == "other run")}
    if listed and held_seen:
        ask = placement.Ask("a", "[" + ",".join(map(str, held_seen)) + "]", held_seen)
    else:
        ask = placement.Ask("a", str(count), held_seen or None)
    out = placement.plan([ask], gpus, {k: v for k, v in others.items() if v}, frozenset())["a"]
    if listed and held_seen:
        assert isinstance(out, placement.Place) == (set(held_seen) <= free), out
        return
    if count > len(states):
        assert isinstance(out, placement.Never)
        return
    assert isinstance(out, placement.Place) == (len(free) >= count), out
    if isinstance(out, placement.Place):
        assert out.gpus is not None and set(out.gpus) <= free and len(out.gpus) == count
        kept = free & set(held_seen)
        assert set(out.gpus) >= set(sorted(kept)[:count])  # its own first, while free
    else:
        assert isinstance(out, placement.Wait) and "waiting for" in out.reason


def test_a_relaunch_s_wait_says_its_time_limit_bounds_it() -> None:
    """A relaunch that must wait says until when at most: its time limit goes on counting
    and ends it then (walk92 F6: the wait had no end in sight); a queued run is charged
    nothing while it waits, so its reason says no bound."""
    from ajetd.core import model

    run = _running(1000.0)
    waiting = model.bounded_wait(replace(run, state=State.RESTARTING), "waiting for 1 GPU(s)")
    assert waiting.startswith("waiting for 1 GPU(s); it waits at most until its time limit")
    assert "(exp_max_time 24h) falls at 1970-01-01T22:53:20Z" in waiting and waiting.endswith(
        "then ends time_limit"
    )
    assert model.wait_cause(waiting) == "waiting for 1 GPU(s)"
    queued = replace(run, state=State.QUEUED, started_at=None, trials=())
    assert model.bounded_wait(queued, "waiting for 1 GPU(s)") == "waiting for 1 GPU(s)"


# -- attribution and summaries ----------------------------------------------------------------
def test_stats_fold_mean_peak_and_idle_stretches() -> None:
    stats = GpuStats()
    for t, util in [(0, 90), (60, 80), (120, 0), (200, 0), (300, 70), (400, 0)]:
        stats = gpuuse.fold(stats, [RunGpu(0, util, 60 * GIB)], 1000.0 + t)
    [rec] = stats.gpus
    assert rec.n == 6 and rec.util_peak == 90 and rec.mem_peak == 60 * GIB
    assert rec.idle == ((1120.0, 1300.0),)
    assert stats.to_json()["0"]["idle"] == [[1120.0, 1300.0]]  # state.json's shape
    assert GpuStats.from_json(stats.to_json()) == stats
    text = gpuuse.summary(stats, ended_at=1500.0)
    assert "| 0 | 6 | 40 % | 90 % | 60.0 GiB | 60.0 GiB |" in text
    assert "GPU 0 idle (≤ 5 %) for 3m" in text and "for 1m40s" in text
    assert gpuuse.short(stats) == "0:0% 60.0G"
    assert gpuuse.busy([RunGpu(0, 30, 0)]) and not gpuuse.busy([RunGpu(0, 2, 0)])


# -- NVML behind a recorded fake module -------------------------------------------------------
class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value


class RecordedNvml:
    """Answers NVML calls from a recording: per GPU, a dict of call -> value (an int error
    code raises NVMLError with it), as nvidia-ml-py's objects would carry them."""

    NVMLError = NVMLError

    def __init__(self, gpus: list[dict[str, Any]], events: list[tuple[int, int]]) -> None:
        self.gpus, self.events = gpus, list(events)

    def _get(self, handle: int, call: str) -> Any:
        value = self.gpus[handle].get(call)
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            raise NVMLError(-value)
        return value

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802 (NVML's names)
        return len(self.gpus)

    def nvmlSystemGetDriverVersion(self) -> str:  # noqa: N802
        return "550.54"

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:  # noqa: N802
        return i

    def nvmlEventSetCreate(self) -> str:  # noqa: N802
        return "set"

    def nvmlDeviceRegisterEvents(self, h: int, kind: int, s: str) -> None:  # noqa: N802
        assert kind == 8

    def nvmlEventSetWait_v2(self, s: str, timeout: int) -> Any:  # noqa: N802
        if not self.events:
            raise NVMLError(10)  # NVML_ERROR_TIMEOUT
        index, xid = self.events.pop(0)
        return SimpleNamespace(device=index, eventData=xid)

    def nvmlDeviceGetIndex(self, h: int) -> int:  # noqa: N802
        return h

    def nvmlDeviceGetName(self, h: int) -> Any:  # noqa: N802
        return self._get(h, "name")

    def nvmlDeviceGetUUID(self, h: int) -> Any:  # noqa: N802
        return self._get(h, "uuid")

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:  # noqa: N802
        value = self._get(h, "util")
        return None if value is None else SimpleNamespace(gpu=value, memory=0)

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:  # noqa: N802
        used, total = self._get(h, "mem")
        return SimpleNamespace(used=used * 2**20, total=total * 2**20, free=0)

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> Any:  # noqa: N802
        return self._get(h, "temp")

    def nvmlDeviceGetPowerUsage(self, h: int) -> Any:  # noqa: N802
        return self._get(h, "power_mw")

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> Any:  # noqa: N802
        return [SimpleNamespace(pid=p, usedGpuMemory=m) for p, m in self._get(h, "procs") or []]


def test_nvml_probe_reads_every_figure_and_survives_errors() -> None:
    recording = [
        {
            "name": b"NVIDIA H200",
            "uuid": "GPU-aa",
            "util": 87,
            "mem": (70000, 143771),
            "temp": 61,
            "power_mw": 512000,
            "procs": [(4242, 69000 * 2**20), (4243, None)],
        },
        {
            "name": "NVIDIA H200",
            "uuid": "GPU-bb",
            "util": -3,
            "mem": (0, 143771),
            "temp": -3,
            "power_mw": -3,
            "procs": -3,
        },  # NVML_ERROR_NOT_SUPPORTED on most calls
        {"name": -15, "util": -15, "mem": (0, 1), "procs": []},  # GPU_IS_LOST
    ]
    probe = NvmlProbe(RecordedNvml(recording, [(2, 79), (0, 48)]))
    assert probe.description == "3 GPU(s) via NVML, driver 550.54"
    first, second, third = probe.sample()
    assert (first.name, first.utilization, first.temperature_c, first.power_w) == (
        "NVIDIA H200",
        87.0,
        61.0,
        512.0,
    )
    assert first.memory_used_mib == 70000 and first.memory_total_mib == 143771
    assert first.processes == (GpuProcess(4242, 69000.0), GpuProcess(4243, None))
    assert second.utilization is None and second.processes == () and not second.lost
    assert third.lost
    assert probe.xid_events() == [(2, 79), (0, 48)] and probe.xid_events() == []


def test_real_nvml_where_a_gpu_exists() -> None:
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pytest.skip("no NVML driver on this machine")
    probe = NvmlProbe(pynvml)
    samples = probe.sample()
    assert samples and all(s.memory_total_mib for s in samples)
    assert [s.index for s in samples] == list(range(len(samples)))
    probe.xid_events()


def test_nvidia_smi_csv_as_samples() -> None:
    from ajetd.adapters.nvml import parse_nvidia_smi

    gpus_csv = (
        "0, NVIDIA H100 80GB HBM3, GPU-5d8c, 98, 70123, 81559, 64, 512.43\n"
        "1, NVIDIA H100 80GB HBM3, GPU-77ab, [N/A], 0, 81559, [Not Supported], [N/A]\n"
        "2, [Unknown Error], [GPU is lost], [GPU is lost], [GPU is lost], [GPU is lost], "
        "[GPU is lost], [GPU is lost]\n"
    )
    apps_csv = "GPU-5d8c, 4242, 70000\nGPU-5d8c, 4243, [N/A]\n"
    first, second, third = parse_nvidia_smi(gpus_csv, apps_csv)
    assert (first.index, first.utilization, first.memory_used_mib, first.power_w) == (
        0,
        98.0,
        70123.0,
        512.43,
    )
    assert first.processes == (GpuProcess(4242, 70000.0), GpuProcess(4243, None))
    assert second.utilization is None and second.temperature_c is None and not second.lost
    assert third.lost and third.memory_total_mib is None


# -- the fake backend ---------------------------------------------------------------------------
def test_fake_file_timeline_reload_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "gpus.json"
    now = [0.0]
    doc = {
        "gpus": [
            {
                "index": 0,
                "name": "H100",
                "memory_total_mib": 81920,
                "memory_used_mib": 0,
                "utilization": 0,
            }
        ],
        "samples": [
            {"after_s": 30, "gpus": [{"index": 0, "utilization": 95, "memory_used_mib": 60000}]}
        ],
        "xid": [{"index": 0, "xid": 13}],
    }
    path.write_text(json.dumps(doc))
    probe = FakeProbe(path, clock=lambda: now[0])
    assert probe.description.startswith("1 fake GPU(s)")
    assert probe.sample()[0].utilization == 0
    now[0] = 31.0
    assert probe.sample()[0].utilization == 95
    assert probe.xid_events() == [(0, 13)] and probe.xid_events() == []
    doc["gpus"][0]["lost"] = True  # type: ignore[index]
    doc["samples"] = []
    path.write_text(json.dumps(doc) + " ")  # a new size: re-read
    assert probe.sample()[0].lost
    path.write_text("{not json")
    assert probe.sample()[0].lost  # unreadable now: the last good sample stays
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"gpus": [{"name": "no index"}]}))
    with pytest.raises(FakeGpuError, match="integer `index`"):
        FakeProbe(bad)


def test_open_probe_prefers_the_fake_and_names_a_bad_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"gpus": [{"index": 0}, {"index": 1}]}))
    monkeypatch.setenv("AJETD_FAKE_GPUS", str(path))
    assert len(open_probe().sample()) == 2
    monkeypatch.setenv("AJETD_FAKE_GPUS", str(tmp_path / "missing.json"))
    with pytest.raises(FakeGpuError, match="AJETD_FAKE_GPUS="):
        open_probe()


# -- rules that look at GPUs ----------------------------------------------------------------------
def _running(now: float) -> Run:
    trial = Trial(number=1, command="x", session="s", started_at=now - 5000)
    return Run(
        "r1",
        "b.md",
        now - 5000,
        state=State.RUNNING,
        trials=(trial,),
        started_at=now - 5000,
        max_time_s=86400,
    )


def test_a_silent_run_whose_gpus_work_is_not_hung() -> None:
    now = 100_000.0
    run, opts, timing = _running(now), Options(hang_window_s=600.0), Timing()
    busy = Observation(now=now, last_output_at=now - 3000, gpu_busy_at=now - 10)
    assert not [a for a in decide(run, busy, timing, opts) if isinstance(a, Attention)]
    idle = Observation(now=now, last_output_at=now - 3000, gpu_busy_at=now - 900)
    [flag] = [a for a in decide(run, idle, timing, opts) if isinstance(a, Attention)]
    assert flag.reason is not None and "GPUs idle" in flag.reason


def test_vllm_memory_waits_for_foreign_memory_to_drain() -> None:
    run = _running(1000.0)
    finding = Finding("vllm_memory", "retryable", 0, "", "", "lower it")
    taken = "GPU 0 has 60.0 GiB of 80 GiB used by other processes (pids 999)"
    choice = choose(run, [finding], 3, None, 1000.0, gpus_taken=taken)
    assert isinstance(choice, Relaunch) and choice.fix == "wait_gpu_drain"
    assert "drains" in choice.why and "pids 999" in choice.why
    # no foreign memory: the science fix path, refused here since the blueprint allows none
    assert not isinstance(choose(run, [finding], 3, None, 1000.0), Relaunch)


@given(
    visible=st.integers(0, 4),
    asked=st.one_of(
        st.sampled_from(["all", "0"]),
        st.integers(1, 6).map(str),
        st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True).map(
            lambda ids: "[" + ",".join(map(str, ids)) + "]"
        ),
    ),
    yaml_gpus=st.one_of(st.none(), st.integers(0, 6)),
)
def test_never_is_what_plan_decides_as_never(
    visible: int, asked: str, yaml_gpus: int | None
) -> None:
    """`placement.never` (what `ajetd lint` says) and `plan`'s `Never` are one rule: for a run
    alone on idle GPUs, one says why exactly when the other refuses, with the same words."""
    ask = placement.Ask("r1", asked, None, yaml_gpus)
    decided = placement.plan([ask], [gpu(i) for i in range(visible)], {}, frozenset())["r1"]
    reason = placement.never(ask, list(range(visible)))
    if isinstance(decided, placement.Never):
        assert reason == decided.reason
    else:
        assert reason is None and isinstance(decided, placement.Place)


def test_a_host_without_nvml_says_so_without_importing_pynvml() -> None:
    """Where the driver's library does not load, the probe is "no GPU" in pynvml's own words,
    and pynvml's module (1.9 MiB of the daemon's memory) is never imported (issue 15)."""
    code = (
        "import sys\n"
        "from ajetd.adapters import nvml\n"
        "nvml.NVML_LIBRARY = 'libnvidia-ml-not-here.so.1'\n"
        "print(nvml.open_probe().description)\n"
        "print('pynvml' in sys.modules)\n"
    )
    assert python_says(code) == ["no GPU (NVML Shared Library Not Found)", "False"]


def test_a_run_blocked_by_a_foreign_process_reserves_nothing() -> None:
    """walk87 F7: `gpus: all` (or a count, or a list naming it) blocked by another program's
    memory on GPU 1 reserved the free GPU 0 for as long as that program lived: every later
    run waited too. Only ajetd's own runs (which end) justify a reservation."""
    gpus = [gpu(0), gpu(1, used=40 * GIB, procs=[(999, 40 * GIB)])]
    asks = [
        placement.Ask("all", "all"),
        placement.Ask("two", "2"),
        placement.Ask("listed", "[0,1]"),
        placement.Ask("one", "1"),
        placement.Ask("on1", "[1]"),
    ]
    out = placement.plan(asks, gpus, {}, frozenset(), commands={999: "python serve.py"})
    for run_id in ("all", "two", "listed", "on1"):
        decision = out[run_id]
        assert isinstance(decision, placement.Wait), run_id
        assert (
            "GPU 1 has 40.0 GiB of 80 GiB used by other processes (pids 999 python serve.py)"
            in (decision.reason)
        )
    assert placement.NO_RESERVATION in out["all"].reason  # type: ignore[union-attr]
    assert out["one"] == placement.Place((0,))
    # blocked only by an ajetd run (which ends), the large request still reserves the rest
    held = placement.plan(asks[:1] + asks[3:4], [gpu(0), gpu(1), gpu(2)], {"r": (1,)}, frozenset())
    assert isinstance(held["one"], placement.Wait)
    assert "GPU 0 is reserved for run all, earlier in the queue" in held["one"].reason
    assert placement.NO_RESERVATION not in held["all"].reason  # type: ignore[union-attr]
