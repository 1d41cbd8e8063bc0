"""walk86 F14: `logs/trial-N.log` holds the terminal's stream byte for byte (each `\\n` the
program printed is `\\r\\n` there, `\\r` progress redraws kept: README, `ajetd logs`); every
reader of it reads lines as the program printed them and as a person saw them: the
diagnosis (evidence and line number), the reports' output excerpts, `ajetd logs`, `status`,
`diag`. Real daemon, real tmux, a program that redraws a progress bar and then crashes."""

from __future__ import annotations

import json

from conftest import Env

PROGRAM = r"""import sys
print("step:1 - loss:0.5", flush=True)
for p in (10, 50, 100):
    sys.stdout.write(f"\rtraining {p}%")
    sys.stdout.flush()
print()
print("Traceback (most recent call last):")
print('  File "train.py", line 9, in <module>')
print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
sys.exit(1)
"""


def test_every_reader_of_a_log_reads_crlf_and_redraws_as_printed(daemon_env: Env) -> None:
    env = daemon_env
    (env.codebase / "crlf.py").write_text(PROGRAM)
    bp = env.blueprint("crlf", command="python crlf.py", ajetd="gpus: 0\nmax_trials: 1")
    run_id = env.submit(bp)
    status = env.wait_done(run_id)
    assert status["status"] == "failed" and status["exit_code"] == 1, status
    result = env.tmp / "results" / "crlf"
    raw = (result / "logs" / "trial-1.log").read_bytes()
    assert b"step:1 - loss:0.5\r\n" in raw and b"\rtraining 50%" in raw  # byte for byte
    # the diagnosis: the evidence as printed, the line number the log's own
    [root, *_] = status["diagnosis"]
    assert root["kind"] == "cuda_oom", root
    assert (
        root["evidence"] == "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    )
    lines = raw.split(b"\n")
    assert b"OutOfMemoryError" in lines[root["line"] - 1], (root, lines)
    # `ajetd logs`: the program's own line ends; a redraw kept for a terminal to show
    logs = env.cli("logs", run_id)
    assert "\r\n" not in logs.stdout and "step:1 - loss:0.5\n" in logs.stdout
    # the reports and the snapshots: lines as a person saw them, no `\r` at all
    for name in ("results.md", "trials.md"):
        text = (result / name).read_text()
        assert "\r" not in text, (name, text)
    tail = (result / "results.md").read_text().split("## Last 50 lines of output")[1]
    assert "\ntraining 100%\n" in tail and "training 50%" not in tail, tail
    shown = env.cli("status", run_id).stdout
    assert "\r" not in shown, shown
    said = env.cli("status", run_id, "--json").stdout
    assert "\\r" not in said and "\r" not in json.dumps(json.loads(said)), said
    diag = env.cli("diag", run_id)
    assert diag.returncode == 0, diag.stderr
    assert "\r" not in diag.stdout and "training 100%" in diag.stdout, diag.stdout
