"""`python -m ajet.launcher --conf X.yaml [--autokill] [--skip-check-avail-gpu]`: the fake
launcher (fakejet.launcher), with AgentJet's own check before it: without `--autokill`,
`--kill` or `--skip-check-avail-gpu`, every GPU of the machine (the `AJETD_FAKE_GPUS` file,
as nvidia-smi lists them all, whatever CUDA_VISIBLE_DEVICES says) must be 95 % free, else
it raises AgentJet's RuntimeError (ajet/launcher.py, ajet/utils/launch_utils.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import yaml
from fakejet.launcher import main

CHECK = """Traceback (most recent call last):
  File "/root/agentjet/ajet/launcher.py", line 301, in <module>
    main()
  File "/root/agentjet/ajet/launcher.py", line 180, in main
    check_avail_gpu(min_free_ratio=0.95)
  File "/root/agentjet/ajet/utils/launch_utils.py", line 140, in check_avail_gpu
    raise RuntimeError(
RuntimeError: GPU memory check failed: all GPUs must have >= 95% free. Violations: {details}"""


def _violations() -> list[str]:
    """Each GPU under 95 % free, as check_avail_gpu names it (the GPUs: the config's
    `fakejet.fake_gpu.file`, else `AJETD_FAKE_GPUS`)."""
    conf = sys.argv[sys.argv.index("--conf") + 1] if "--conf" in sys.argv else ""
    fake = (yaml.safe_load(Path(conf).read_text()) or {}).get("fakejet", {}) if conf else {}
    listed = (fake.get("fake_gpu") or {}).get("file") or os.environ.get("AJETD_FAKE_GPUS")
    if not listed:
        return []
    found = []
    for gpu in json.loads(Path(listed).read_text())["gpus"]:
        free = 1 - gpu["memory_used_mib"] / gpu["memory_total_mib"]
        if free < 0.95:
            found.append(f"GPU {gpu['index']} ({gpu['name']}): free_ratio={free:.3f} < 0.950")
    return found


if __name__ == "__main__":
    skip = "--skip-check-avail-gpu" in sys.argv
    if skip:
        sys.argv.remove("--skip-check-avail-gpu")
    elif not {"--autokill", "--kill"} & set(sys.argv) and _violations():
        print(CHECK.format(details="; ".join(_violations())), flush=True)
        sys.exit(1)
    sys.exit(main())
