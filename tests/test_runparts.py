"""The typed parts of a run record read any older or odd state.json without failing, and
write the shape state.json always had."""

from __future__ import annotations

from typing import Any

import pytest

from ajetd.core.finding import Finding
from ajetd.core.model import Run
from ajetd.core.runparts import (
    GpuStats,
    GpuTrack,
    NemoBlock,
    NemoRead,
    Provenance,
    SlurmJob,
)

ODD: list[Any] = [None, {}, [], "x", 3, {"unknown": 1}, {"job_id": None, "n": "7", "idle": 5}]


@pytest.mark.parametrize("data", ODD)
def test_odd_or_missing_parts_read_as_defaults(data: Any) -> None:
    assert SlurmJob.from_json(data) == SlurmJob()
    assert NemoRead.from_json(data) == NemoRead()
    assert GpuStats.from_json(data) == GpuStats()
    assert Provenance.from_json(data) in (None, Provenance())
    assert Finding.from_json(data if isinstance(data, dict) else {}).count == 1


def test_what_older_records_hold_reads_back() -> None:
    slurm = SlurmJob.from_json({"job_id": 17, "state": "RUNNING", "reason": "None", "x": 1})
    assert slurm == SlurmJob(job_id="17", state="RUNNING", reason="None")
    nemo = NemoRead.from_json(  # before the trial number was kept, with a block still open
        {"offset": 9, "step": 2, "max_steps": 6, "block": {"prefix": "", "accuracy": 0.3}}
    )
    assert nemo == NemoRead(None, 9, 2, 6, NemoBlock("", (("accuracy", 0.3),)), None)
    gpu = GpuStats.from_json({"1": {"n": 2, "util_peak": 80, "idle": [[1.0, 2.0], [3]]}})
    assert gpu.gpus == (GpuTrack(1, n=2, util_peak=80.0, idle=((1.0, 2.0),)),)
    assert Provenance.from_json({"git": False}) == Provenance()
    assert Provenance.from_json({}) is None


def test_parts_write_the_shapes_state_json_had() -> None:
    assert SlurmJob().to_json() == {} and NemoRead().to_json() == {}
    assert GpuStats().to_json() == {}
    assert Provenance(note="not git", blueprint_sha256="ab").to_json() == {
        "git": False,
        "note": "not git",
        "blueprint_sha256": "ab",
    }
    prov = Provenance(True, "", "c0", "main", "/code", True, 1, ("new.py",), "ab")
    assert list(prov.to_json()) == [
        "git",
        "commit",
        "branch",
        "toplevel",
        "dirty",
        "changed",
        "untracked",
        "blueprint_sha256",
    ]
    assert Provenance.from_json(prov.to_json()) == prov
    job = SlurmJob("5", "COMPLETED", "n1", "None", 1, "n2")
    assert SlurmJob.from_json(job.to_json()) == job
    block = NemoRead(1, 10, 3, 6, NemoBlock("val/", (("val/accuracy", 0.5),)), "logs")
    assert block.to_json()["block"] == {"prefix": "val/", "val/accuracy": 0.5}
    assert NemoRead.from_json(block.to_json()) == block


def test_a_record_without_the_newer_keys_loads() -> None:
    old = {"run_id": "abc123", "source": "bp.md", "submitted_at": 1.0, "state": "queued"}
    run = Run.from_json({**old, "a_key_from_a_later_version": True})
    assert run.slurm == SlurmJob() and run.nemo == NemoRead() and run.provenance is None
    assert Run.from_json(run.to_json()) == run
