"""A program waiting at a prompt (walk 86, F28): read from its unfinished last line at a
pause, never from a complete line, and gone once its output goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from ajetd.diagnosis.live import LiveScans
from ajetd.diagnosis.prompt import waiting_prompt

ASKED = (
    "wandb: Enter your choice: ",
    "\x1b[34m\x1b[1mwandb\x1b[0m: Enter your choice: ",
    "wandb: Paste an API key from your profile and hit enter, or press ctrl+c to quit: ",
    "Username for 'https://github.com': ",
    "Password for 'https://user@github.com': ",
    "Are you sure you want to continue connecting (yes/no/[fingerprint])? ",
    "Do you want to continue? [Y/n] ",
    "Proceed ([y]/n)? ",
    "root@node1's password: ",
    "Enter passphrase for key '/root/.ssh/id_rsa': ",
    "Enter your token (input will not be visible): ",
    "(TaskRunner pid=77) Password:",
)
NOT_ASKED = (
    "Epoch 1:  50%|#####     | 5/10 [00:01<00:01, loss=0.3]",
    "step:12 - actor/loss:0.25 ",
    "setting the pad token to the eos token",
    "Processed 5000 tokens",
    "x" * 100_000 + " waiting",
    "Loading checkpoint shards: ",
)


@pytest.mark.parametrize("line", ASKED)
def test_each_prompt_shape_is_a_program_waiting(line: str) -> None:
    found = waiting_prompt(line.encode(), 7)
    assert found is not None and found.kind == "waiting_for_input" and found.line == 7
    wandb = line.endswith(("choice: ", "to quit: "))
    assert ("WANDB_MODE=offline" in found.fix) is wandb
    assert "WANDB_API_KEY" not in found.fix or wandb


@pytest.mark.parametrize("line", NOT_ASKED)
def test_an_unfinished_line_that_asks_nothing_is_not(line: str) -> None:
    assert waiting_prompt(line.encode(), 1) is None


def test_read_at_a_pause_first_and_gone_once_output_goes_on(tmp_path: Path) -> None:
    log = tmp_path / "trial-1.log"
    log.write_bytes(b"step:0\r\nwandb: (1) Create a W&B account\r\nwandb: Enter your choice: ")
    scans, key = LiveScans(), ("r1", 1)
    scans.scan(key, log, 1.0)
    seen = scans.paused(key, log.stat().st_size)
    assert seen is not None and seen.findings[0].kind == "waiting_for_input"
    assert seen.findings[0].line == 3 and "waiting_for_input" in seen.unsure
    with open(log, "ab") as out:  # answered: the answer echoed, then the program goes on
        out.write(b"3\r\nwandb: W&B disabled.\r\nstep:1\r\n")
    after = scans.scan(key, log, 2.0)
    assert after is not None and "waiting_for_input" not in [f.kind for f in after.findings]
    assert "waiting_for_input" in after.replaced
