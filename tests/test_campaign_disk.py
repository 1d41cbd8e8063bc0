"""A campaign whose result dir fills up: its ledger rows whole and once, campaign.md written
once there is room (also after the campaign ended), its reason never a Python errno. Real daemon,
real tmux, a real full disk (a small tmpfs: the tests run as root, as CI does)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import Env, fill, wait_for


def _campaign(env: Env, name: str, result_dir: Path, experiments: list[str]) -> Path:
    """A campaign folder whose experiments each wait for the file `go` and then exit 0."""
    go = env.tmp / "go"
    folder = env.tmp / f"{name}-folder"
    folder.mkdir()
    command = f"while [ ! -e {go} ]; do sleep 0.05; done"
    base = env.blueprint(f"{name}-base", command=command, ajetd="gpus: 0\nmax_trials: 1")
    (folder / "base.md").write_text(base.read_text())
    listed = "".join(f"  - {e}\n" for e in experiments)
    (folder / "campaign.yaml").write_text(
        f"name: {name}\nmetric: mean_reward\ndirection: max\nbase: base.md\n"
        f"result_dir: {result_dir}\nbaseline: false\n"
        f"stop: {{max_experiments: {len(experiments)}}}\nexperiments:\n{listed}"
    )
    return folder


def _status(env: Env, cid: str) -> dict[str, Any]:
    shown = env.cli("campaign", "status", cid, "--json")
    return dict(json.loads(shown.stdout)) if shown.returncode == 0 else {}


def _rows(ledger: Path) -> list[list[str]]:
    return [line.split("\t") for line in ledger.read_text().split("\n")[1:] if line]


def test_a_ledger_row_the_full_result_dir_cuts_is_written_whole_once(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """A row longer than what the ledger's last page has left met the full disk in its
    middle: a cut row (all its tab fields, its description cut) stayed in the ledger, and once
    there was room the row came again whole (walk88 F1). Now a row is all or nothing: none
    while the disk is full (the campaign says why in `status`, never an errno), once after."""
    disk = tmpfs(env.tmp / "small", "512k")
    result = disk / "camp"
    words = "word " * 1200  # a row of ~6 KB: more than a page, so the disk cuts it
    spec = [f"{{name: e{i}, description: 'e{i} {words}'}}" for i in range(2)]
    env.start_daemon("--liveness", "0.5")
    made = env.cli("campaign", str(_campaign(env, "torn", result, spec)))
    assert made.returncode == 0, made.stderr
    cid = made.stdout.strip()
    ledger = result / "ledger.tsv"
    wait_for(lambda: _status(env, cid).get("running"), 30, "the first experiment to run")
    header = ledger.read_bytes()
    filler = fill(disk)
    (env.tmp / "go").touch()
    said = f"cannot write to the result dir of campaign {cid}"
    wait_for(lambda: said in env.cli("status").stdout, 30, "status to say the result dir is full")
    assert ledger.read_bytes() == header  # no cut row
    shown = _status(env, cid)
    assert "Errno" not in json.dumps(shown), shown
    filler.unlink()
    wait_for(lambda: _status(env, cid).get("state") == "done", 60, "the campaign to end")
    rows = _rows(ledger)
    assert [r[0] for r in rows] == ["0", "1"], [r[0] for r in rows]
    assert all(len(r) == 15 and f"e{i} {words.strip()}" in r[-1] for i, r in enumerate(rows))
    assert ledger.read_bytes().endswith(b"\n")


def test_campaign_md_refused_by_a_full_disk_is_written_once_there_is_room(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """The campaign ends while its result dir is full: its row fits in the ledger's last page,
    campaign.md (a new file) does not. Its reason became `error: [Errno 28] ...` for good and
    campaign.md kept its first state (`running`), since an ended campaign was never looked at
    again (walk88 F2). Now the reason stays the campaign's own, status names the full folder,
    and campaign.md is written as soon as there is room."""
    disk = tmpfs(env.tmp / "small", "256k")
    result = disk / "camp"
    env.start_daemon("--liveness", "0.5")
    made = env.cli("campaign", str(_campaign(env, "stale", result, ["{name: e0}"])))
    assert made.returncode == 0, made.stderr
    cid = made.stdout.strip()
    report = result / "campaign.md"
    wait_for(lambda: _status(env, cid).get("running"), 30, "the experiment to run")
    wait_for(report.exists, 30, "the first campaign.md")
    filler = fill(disk)
    (env.tmp / "go").touch()
    wait_for(lambda: _status(env, cid).get("state") == "done", 60, "the campaign to end")
    assert len(_rows(result / "ledger.tsv")) == 1
    said = f"cannot write to the result dir of campaign {cid}"
    wait_for(lambda: said in env.cli("status").stdout, 30, "status to say the result dir is full")
    shown = _status(env, cid)
    assert "Errno" not in json.dumps(shown) and "Errno" not in env.cli("status").stdout, shown
    assert "state: running" in report.read_text()  # the disk had no room for more
    filler.unlink()
    wait_for(lambda: "state: running" not in report.read_text(), 30, "campaign.md written again")
    assert "- state: done" in report.read_text()
    wait_for(lambda: said not in env.cli("status").stdout, 30, "the full line to go")


def test_a_row_is_appended_whole_once_after_a_cut_line(tmp_path: Path) -> None:
    """A last line a crash left cut (its row not on record) is removed before the row comes
    again; a row the ledger already ends with (a daemon killed before saving it wrote it) is
    not written twice."""
    from ajetd.adapters.store import append_row

    ledger = tmp_path / "ledger.tsv"
    ledger.write_bytes(b"index\tstatus\n0\tkeep\n1\tdis")
    append_row(ledger, b"1\tdiscard\n")
    append_row(ledger, b"1\tdiscard\n")
    assert ledger.read_bytes() == b"index\tstatus\n0\tkeep\n1\tdiscard\n"
