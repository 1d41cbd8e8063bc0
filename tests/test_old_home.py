"""A home written by an older ajetd (tests/data/homes/v1, made by its `make_home.py` with the
ajetd of commit 4190b39): the daemon of this version takes it up. Its records load into this
version's types, its live run is re-adopted and ends normally, its ended runs read as they did
(`status --json`) and their reports are rendered again byte for byte (but for the two
fields each finding of the status object gained when every JSON was given one finding shape,
and its `tmux_socket`).

The live run is made alive again as its old daemon had it: the test starts the trial's own
script (the record's) in a tmux session of the record's name on a private socket; the script
waits for its go file, which the test writes only once the new daemon has taken the run up, so
the run is seen alive, not ended, whatever the machine's load.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ajetd.adapters.store import Home
from ajetd.adapters.tmux import Tmux
from ajetd.core.finding import Finding
from ajetd.core.model import CONFIG_CHANGED, State
from ajetd.core.runparts import GpuTrack, NemoRead, Provenance, SlurmJob
from ajetd.daemon import ending
from conftest import PYTHON, Env, wait_for

V1 = Path(__file__).parent / "data" / "homes" / "v1"
META = json.loads((V1 / "meta.json").read_text())
RUNS: dict[str, str] = META["runs"]
LIVE = RUNS["live"]
TIME_KEYS = ("_at", "idle_from")


# the best value of each old run's metric in its history (its step), which the status object,
# run.json and finish.flag hold since, beside `metrics` (the last record)
BEST = {
    "failed": {"metric": "mean_reward", "value": 0.4632496716177947, "step": 2, "trial": 1},
    "slurm_nemo": {"metric": "accuracy", "value": 0.42, "step": 6, "trial": 1},
}


def _with_best(text: str, name: str) -> str:
    """An old JSON object as this version writes it: the same bytes, with `best` after
    `metrics`."""
    data = json.loads(text)
    assert json.dumps(data, indent=2, ensure_ascii=False) + "\n" == text and "best" not in data
    keys = list(data)
    at = keys.index("metrics") + 1
    data = {k: data[k] for k in keys[:at]} | {"best": BEST[name]} | {k: data[k] for k in keys[at:]}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _with_fixes_applied(text: str) -> str:
    """An old JSON object as this version writes it: the same bytes, with `fixes_applied`
    (what each fix changed, walk88 F6) after `diagnosis` in the status object and run.json,
    last in finish.flag; `[]`: the old runs had no fix."""
    data = json.loads(text)
    assert json.dumps(data, indent=2, ensure_ascii=False) + "\n" == text
    assert "fixes_applied" not in data and not data.get("fixes")
    keys = list(data)
    at = keys.index("diagnosis") + 1 if "diagnosis" in keys else len(keys)
    data = {k: data[k] for k in keys[:at]} | {"fixes_applied": []} | {k: data[k] for k in keys[at:]}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _with_stages(text: str) -> str:
    """An old status object (or run.json) as this version writes it: the same bytes, with
    `stages` (a pipeline's stages and what each left, session 34) after `fixes_applied`;
    null: the old runs had no stages. finish.flag has no such field."""
    data = json.loads(text)
    assert "stages" not in data and "fixes_applied" in data
    keys = list(data)
    at = keys.index("fixes_applied") + 1
    data = {k: data[k] for k in keys[:at]} | {"stages": None} | {k: data[k] for k in keys[at:]}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _after(data: dict[str, Any], key: str, new: str, value: Any) -> dict[str, Any]:
    """`data` with `new` (a field the object gained since) right after `key`, as printed."""
    keys = list(data)
    at = keys.index(key) + 1
    return {k: data[k] for k in keys[:at]} | {new: value} | {k: data[k] for k in keys[at:]}


def _with_unrecorded_exit(text: str) -> str:
    """An old status object (or run.json) as this version writes it: the same bytes, with
    `unrecorded_exit` (a live run's exit no daemon recorded yet) after `exit_code`; null: the
    old runs ended, their exits recorded. finish.flag has no such field."""
    data = json.loads(text)
    assert "unrecorded_exit" not in data
    data = _after(data, "exit_code", "unrecorded_exit", None)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _findings_now(text: str, changes: Sequence[str] = ()) -> str:
    """An old status object (or run.json) as this version prints it: the same bytes, but
    for each finding of `diagnosis`, which now holds every field a finding has in any JSON
    (`count`, and `remedy`, null for a kind without one; `certainty`, null for one read from
    the output as it says), as `diag --json` and `diagnose --json` print it. The old findings were each seen once, of catalogue kinds. And
    `tmux_socket` after `session`, which the object gained later: null, the old record does
    not name its tmux server (nor, `tmux_socket_path` after it, its socket's path);
    `reports_dir` after `result_dir`, null likewise (the old record
    does not say where its reports went); `reports_pending` after `status`, false (its
    reports were written, as the object says since). And `warnings` followed by each change admission made to the
    config (run.json's `config_changes`, else the record's `changes`), which they hold since
    (README: what was changed or doubted at admission)."""
    data = json.loads(text)
    assert json.dumps(data, indent=2, ensure_ascii=False) + "\n" == text  # nothing else moves
    changes = data.get("config_changes", changes)
    data["warnings"] = [*data["warnings"], *(f"{CONFIG_CHANGED}{c}" for c in changes)]
    for finding in data["diagnosis"]:
        assert "count" not in finding and "remedy" not in finding
        finding.update(count=1, remedy=None, certainty=None)
    assert "tmux_socket" not in data
    data = _after(data, "session", "tmux_socket", None)
    data = _after(data, "tmux_socket", "tmux_socket_path", None)
    data = _after(data, "result_dir", "reports_dir", None)
    assert "reports_pending" not in data
    data = _after(data, "status", "reports_pending", False)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _place(src: Path, dst: Path, env: Env) -> None:
    """A fixture file where the test's world has it, placeholders replaced."""
    venv = str(Path(PYTHON).parent.parent)
    text = src.read_bytes()
    for mark, value in ((b"@TMP@", str(env.tmp)), (b"@VENV@", venv)):
        text = text.replace(mark, value.encode())
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(text)


def _shift(value: Any, by: float, key: str = "") -> Any:
    """Every time in a record moved by `by` seconds (the live run: as if it began just now)."""
    if isinstance(value, dict):
        return {k: _shift(v, by, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_shift(v, by, key) for v in value]
    if isinstance(value, float) and key.endswith(TIME_KEYS):
        return value + by
    return value


def _old_home(env: Env) -> None:
    for folder in ("ajetd-home", "results", "codebase"):
        for path in sorted((V1 / folder).rglob("*")):
            if path.is_file():
                _place(path, env.tmp / folder / path.relative_to(V1 / folder), env)
    for path in env.home.rglob("*"):
        path.chmod(0o700 if path.is_dir() else 0o600)
    env.home.chmod(0o700)
    env.fake_gpus(2)


def _revive(env: Env) -> None:
    """The live run's pane, as its daemon had started it; its record names the new pane."""
    state = env.home / "runs" / LIVE / "state.json"
    record = _shift(json.loads(state.read_text()), time.time() - 5 - META["snapshot_at"])
    run_dir = env.home / "runs" / LIVE
    os.mkfifo(run_dir / "trial-1.wake", 0o600)
    log = Path(record["result_dir"]) / "logs" / "trial-1.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    tmux = Tmux(env.socket)
    pane = tmux.new_session(
        record["session"], record["codebase_dir"], str(run_dir / "trial-1.sh"), str(log)
    )
    record["trials"][-1]["pane_pid"] = pane.pid
    state.write_text(json.dumps(record, indent=2))


def test_an_old_home_is_taken_up(env: Env) -> None:
    _old_home(env)
    old_status = {
        name: (V1 / "expected" / f"{name}.status.json").read_text()
        for name in RUNS
        if name != "live"
    }
    _revive(env)
    home = Home(env.home)
    loaded = {run.run_id: run for run in home.load_runs()}
    assert sorted(loaded) == sorted(RUNS.values())  # no old record dropped as unreadable
    failed = loaded[RUNS["failed"]]
    assert failed.trials[0].findings and all(
        isinstance(f, Finding)
        for f in (*failed.trials[0].findings, *failed.trials[0].live_findings)
    )
    assert failed.trials[0].findings[0].kind == "cuda_oom"
    [track] = failed.gpu_stats.gpus  # the old per-index dicts, now typed
    assert isinstance(track, GpuTrack) and track.index == 0 and track.mem_peak == 30000.0
    nemo = loaded[RUNS["slurm_nemo"]]
    assert isinstance(nemo.slurm, SlurmJob) and nemo.slurm.job_id and nemo.slurm.nodes
    assert isinstance(nemo.nemo, NemoRead) and nemo.nemo.step == nemo.nemo.max_steps == 6
    assert nemo.nemo.trial == 1 and nemo.nemo.offset > 0
    for run in loaded.values():
        assert isinstance(run.provenance, Provenance) and run.provenance.git
        assert run.provenance.dirty and run.provenance.blueprint_sha256
        assert (
            run.to_json()["provenance"]
            == json.loads((env.home / "runs" / run.run_id / "state.json").read_text())["provenance"]
        )  # written back as it was read

    env.start_daemon("--gpu-young-period", "0.2", "--gpu-period", "0.2")
    wait_for(lambda: f"run {LIVE}: watching again" in env.daemon_log(), what="the live run adopted")
    status = env.status(LIVE)
    assert status["state"] == "running" and status["gpus"] == [1], status
    assert not (env.home / "runs" / LIVE / "trial-1.exit").exists()  # alive when taken up
    (env.home / "runs" / LIVE / "trial-1.go").write_text("go\n")  # its program may now go on
    with open(env.home / "runs" / LIVE / "trial-1.wake", "w") as wake:
        wake.write("\n")
    done = env.wait_done(LIVE, timeout=60)
    assert done["status"] == "succeeded" and done["trials"] == 1, done
    assert done["metrics"]["global_steps"] == 8
    assert env.launches() == [f"{LIVE} 1"]  # taken up, never launched again
    assert json.loads((env.tmp / "results" / "live" / "finish.flag").read_text())["status"] == (
        "succeeded"
    )
    for name, text in old_status.items():  # what users and programs read, as before
        out = env.cli("status", RUNS[name], "--json")
        assert out.returncode == 0, out.stderr
        changes = env.record(RUNS[name]).get("config_changes", [])
        now = _with_best(_findings_now(text.replace("@TMP@", str(env.tmp)), changes), name)
        now = _with_unrecorded_exit(_with_stages(_with_fixes_applied(now)))
        assert out.stdout == now, name


def _with_trial_column(results: str, trial: int) -> str:
    """An old results.md with its validation table's `trial` column (added since: which
    trial wrote each row), for a run of one trial: every row is its."""
    head, _, table = results.partition("\n## Validation metrics\n\n")
    rows, blank, rest = table.partition("\n\n")
    lines = rows.split("\n")
    lines[0] = "| trial " + lines[0]
    lines[1] = "|---:" + lines[1]
    lines[2:] = [f"| {trial} " + line for line in lines[2:]]
    return head + "\n## Validation metrics\n\n" + "\n".join(lines) + blank + rest


def _with_every_metric(text: str) -> str:
    """The NeMo-RL run's table as this version writes it: its other metrics (the same in each
    record of the fixture) beside accuracy, which it showed alone; a count as an integer."""
    rows = {
        "| trial | step | accuracy |": "| trial | step | accuracy | average_response_length "
        "| samples_processed |",
        "|---:|---:|---:|": "|---:|---:|---:|---:|---:|",
    }
    lines = []
    for line in text.split("\n"):
        row = line.startswith("| 1 | ") and line.count("|") == 4
        lines.append(rows.get(line, line + " 231.4000 | 256 |" if row else line))
    return "\n".join(lines)


def _with_validation_settings(text: str) -> str:
    """The AgentJet run's table as this version writes it: seed 001's val attributes that are
    no metric (`pass_n`, `total_tasks`, the same in each record of the fixture) said under
    it (walk 89, F20), where they were left out in silence."""
    line = "Validation settings (no metric, so no column): pass_n 4, total_tasks 1319.\n\n"
    table_end = text.index("\n\n", text.index("| trial | step |")) + 2
    return text[:table_end] + line + text[table_end:]


def test_old_reports_render_the_same(env: Env) -> None:
    """results.md, trials.md, run.json and finish.flag of the old ended runs, written again
    by this version from the old records: the same bytes (results.md with the validation
    table's trial column, added since)."""
    _old_home(env)
    home = Home(env.home)
    for name in ("failed", "slurm_nemo"):
        run = home.load_run(RUNS[name])
        assert run.state is State.DONE
        folder = Path(run.result_dir)
        old = {f: (folder / f).read_text() for f in ("results.md", "trials.md", "run.json")}
        old["run.json"] = _with_fixes_applied(_with_best(_findings_now(old["run.json"]), name))
        old["run.json"] = _with_unrecorded_exit(_with_stages(old["run.json"]))
        old["finish.flag"] = _with_best((folder / "finish.flag").read_text(), name)
        old["finish.flag"] = _with_fixes_applied(old["finish.flag"])
        old["results.md"] = old["results.md"].replace("@HOST@", socket.gethostname())
        old["results.md"] = _with_trial_column(old["results.md"], run.trials[0].number)
        if name == "slurm_nemo":  # every metric is a column since walk 82 (L2): NeMo-RL's two
            old["results.md"] = _with_every_metric(old["results.md"])
            # where its records come from, since walk92 F9 (it said none was named)
            old["results.md"] = old["results.md"].replace(
                "- validation results file: (none named in the YAML)",
                "- validation records: read from the program's output (NeMo-RL prints them; "
                "it writes no validation results file)",
            )
        else:
            old["results.md"] = _with_validation_settings(old["results.md"])
        scratch = env.tmp / "again" / name
        shutil.copytree(folder, scratch)
        pictures = [p for p in ("curves.png", "gpus.png") if f"]({p})" in old["results.md"]]
        # the fixture's blueprint had its paths put in (`_place`): the sha256 it was admitted
        # with is the placed text's, or the reports say it was edited after admission
        assert run.provenance is not None
        admitted = run.provenance.blueprint_sha256
        placed = hashlib.sha256(home.blueprint_text(run.run_id).encode()).hexdigest()
        old = {f: text.replace(admitted, placed) for f, text in old.items()}
        run = replace(run, provenance=replace(run.provenance, blueprint_sha256=placed))
        ending.write_reports(
            home,
            replace(run, result_dir=str(scratch), result_real=str(scratch.resolve())),
            (pictures, ""),
        )
        for file, text in old.items():
            again = (scratch / file).read_text().replace(str(scratch), str(folder))
            assert again == text, (name, file)


def test_reports_that_fail_on_the_way_leave_no_finish_flag(env: Env) -> None:
    """The reports and finish.flag are synced together, then renamed flag last: where one
    report cannot be put in place (here run.json is a folder), the flag is not written and
    no temporary file is left; `publish_reports` holds them, naming the folder."""
    _old_home(env)
    home = Home(env.home)
    run = home.load_run(RUNS["failed"])
    scratch = env.tmp / "refuses"
    scratch.mkdir()
    there = replace(run, result_dir=str(scratch), result_real=str(scratch.resolve()))
    ending.program_files_aside(home, there, 1.0)  # as the run's end does, before any report
    (scratch / "run.json" / "inside").mkdir(parents=True)
    with pytest.raises(OSError):
        ending.write_reports(home, there, ([], ""))
    assert sorted(p.name for p in scratch.iterdir()) == ["results.md", "run.json", "trials.md"]
    again = ending.publish_reports(home, there, 1.0, ([], ""))
    assert again.attention and again.attention.startswith(ending.REPORTS_HELD)
    assert str(scratch) in again.attention and not (scratch / "finish.flag").exists()
