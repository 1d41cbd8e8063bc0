"""What `ajetd diagnose` is given: a FIFO named on purpose is read as `-` is (walk 91, F7);
bytes that are not text are said to be so, never "no known failure found" (walk 91, F8)."""

from __future__ import annotations

import gzip
import os
import random
import subprocess
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ajetd.adapters.regular import NoWriterError, open_log
from ajetd.core.textfile import TextSniff
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


ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(8) + b"torch.OutOfMemoryError: CUDA out of memory\n" * 3


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (random.Random(7).randbytes(100_000), "are not text (NUL or control bytes, invalid UTF-8)"),
        (bytes(3_000_000), "100% of its 3,000,000 bytes are NUL bytes"),
        (ELF, "an ELF binary (a program, not its output)"),  # its messages are no output
        (gzip.compress(random.Random(8).randbytes(50_000)), "are not text"),
        (b"\x89PNG\r\n\x1a\n" + bytes(100), "a PNG image"),
    ],
    ids=["random", "nuls", "elf", "gzip-of-random", "png"],
)
def test_bytes_that_are_not_text_are_said_to_be_so(env: Env, data: bytes, said: str) -> None:
    """Walk 91, F8: random bytes, 50 MB of NULs and /usr/bin/ls each got "no known failure
    found", exit 0: nothing in them was read as a log. Now exit 1, what they are on stderr."""
    log = env.tmp / "given.log"
    log.write_bytes(data)
    for json_flag in ([], ["--json"]):
        got = env.cli("diagnose", str(log), *json_flag)
        assert got.returncode == 1, got.stdout
        assert got.stdout == ""
        assert got.stderr.startswith(f"ajetd: {log}: not a log: "), got.stderr
        assert said in got.stderr and "nothing in it was diagnosed" in got.stderr


def test_text_with_some_odd_bytes_is_read_as_text(env: Env) -> None:
    """A Latin-1 letter, a colour code, a backspace: a log; NULs left by a truncated file
    before its text: the findings of the text, and a warning that says what else is there."""
    plain = env.tmp / "plain.log"
    plain.write_bytes(b"caf\xe9 \x1b[32mok\x1b[0m\x08 step 1\n" * 50)
    got = env.cli("diagnose", str(plain))
    assert (got.returncode, got.stdout) == (0, f"{plain}: no known failure found\n"), got.stderr
    holed = env.tmp / "holed.log"
    holed.write_bytes(bytes(200_000) + b"step 1\n" + OOM.encode())
    got = env.cli("diagnose", str(holed))
    assert got.returncode == 0 and got.stdout.startswith("cuda_oom"), got.stderr
    assert "bytes are NUL bytes; the findings are those of its text" in got.stderr


@given(st.lists(st.text(st.characters(blacklist_categories=("Cc", "Cs"))), max_size=60))
def test_any_printable_text_is_text(lines: list[str]) -> None:
    sniff = TextSniff()
    for line in lines:
        sniff.add((line + "\r\n\t\x1b[0m").encode())
    assert sniff.why_not() is None


@given(st.integers(0, 2**32), st.integers(512, 20_000))
def test_random_bytes_are_not_text(seed: int, size: int) -> None:
    sniff = TextSniff()
    sniff.add(random.Random(seed).randbytes(size))
    assert sniff.why_not() is not None
