"""What `ajetd diagnose` is given: a FIFO named on purpose is read as `-` is (walk 91, F7);
bytes that are not text are said to be so, never "no known failure found" (walk 91, F8)."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from ajetd.adapters.regular import NoWriterError, open_log
from conftest import PYTHON, Env

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"


def test_a_process_substitution_is_read_as_a_pipe(env: Env) -> None:
    """`ajetd diagnose <(zcat LOG)` was refused: "/dev/fd/63: not a regular file (a FIFO)"."""
    log = env.tmp / "crash.log"
    log.write_text("step 1\n" + OOM)
    got = subprocess.run(
        ["bash", "-c", f'"$0" -m ajetd diagnose <(cat {log})', PYTHON],
        env=env.vars,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout.startswith("cuda_oom [science] line 2"), got.stdout


def test_a_named_fifo_is_read_once_its_writer_comes(env: Env) -> None:
    fifo = env.tmp / "live.log"
    os.mkfifo(fifo)
    started = env.cli_started("diagnose", str(fifo))

    def write() -> None:
        time.sleep(0.5)  # the writer comes after the reader: it is waited for
        with open(fifo, "w") as handle:
            handle.write("step 1\n" + OOM)

    writer = threading.Thread(target=write)
    writer.start()
    out, err = started.communicate(timeout=60)
    writer.join()
    assert started.returncode == 0, err
    assert out.startswith("cuda_oom [science] line 2"), out


def test_a_fifo_nobody_writes_is_refused_after_a_bounded_wait(tmp_path: Path) -> None:
    fifo = tmp_path / "f.log"
    os.mkfifo(fifo)
    began = time.monotonic()
    with pytest.raises(NoWriterError, match=r"a FIFO no program wrote to in 0\.3 s"):
        open_log(fifo, writer_wait_s=0.3)
    assert time.monotonic() - began < 5
