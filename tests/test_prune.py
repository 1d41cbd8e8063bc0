"""`ajetd prune` removes the folders of runs that nothing will read or write again, beside a
running daemon, and keeps every other run saying why (walk 88, F10: `rm -rf runs/<id>` left a
kept session open for good, or brought the folder back as a record alone)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from ajetd.adapters.store import Home
from ajetd.core.model import Run, State, Status
from ajetd.core.prune import (
    CopyFile,
    RejectedFile,
    config_copies,
    kept_because,
    rejected_to_prune,
    rejection_of,
)
from conftest import Env, wait_for

DAY = 86400.0


def _ended(**changes: object) -> Run:
    now = time.time()
    fields: dict[str, object] = {
        "run_id": "abc123",
        "source": "x.md",
        "submitted_at": now - 3 * DAY,
        "state": State.DONE,
        "status": Status.SUCCEEDED,
        "ended_at": now - 2 * DAY,
        "session": "ajet_x",
        "session_closed": True,
    }
    fields.update(changes)
    return Run(**fields)  # type: ignore[arg-type]


def test_what_keeps_a_run_from_being_pruned() -> None:
    now = time.time()
    assert kept_because(_ended(), now, DAY, {}) is None
    assert "within the age kept" in str(kept_because(_ended(), now, 3 * DAY, {}))
    assert "campaign c-aaaaaa" in str(kept_because(_ended(), now, DAY, {"abc123": "c-aaaaaa"}))
    assert "reports" in str(kept_because(_ended(reports_pending=True), now, DAY, {}))
    assert "on_finish" in str(kept_because(_ended(finish_hook_due=True), now, DAY, {}))
    kept = str(kept_because(_ended(session_closed=False), now, DAY, {}))
    assert "tmux session ajet_x is still kept" in kept
    live = _ended(state=State.RUNNING, status=None, ended_at=None)
    assert "not ended" in str(kept_because(live, now, DAY, {}))


NOW = 1_800_000_000.0  # the clock, injected


def _file(name: str, age_s: float, regular: bool = True) -> RejectedFile:
    return RejectedFile(name, NOW - age_s, regular)


def test_a_refused_blueprint_is_as_old_as_its_newest_file() -> None:
    """The blueprint keeps its own time (linked or renamed into rejected/), the note is written
    when it is put aside: a file written 40 days before it was refused stays with its note."""
    pair = [_file("abc__x.md", 40 * DAY), _file("abc__x.why.txt", DAY)]
    assert rejected_to_prune(pair, NOW, 30 * DAY) == []
    assert rejected_to_prune(pair, NOW, DAY) == ["abc__x.md", "abc__x.why.txt"]
    assert rejected_to_prune(pair, NOW, DAY + 1) == []


def test_the_age_boundary_is_the_one_runs_have() -> None:
    """Removed once at least `older_than` old (a run: ended at least that long ago); `0`: all
    but what changed after now (a clock set back)."""
    assert kept_because(_ended(ended_at=NOW - DAY), NOW, DAY, {}) is None
    assert rejected_to_prune([_file("a.md", DAY), _file("a.why.txt", DAY)], NOW, DAY) == [
        "a.md",
        "a.why.txt",
    ]
    assert rejected_to_prune([_file("a.md", 0)], NOW, 0) == ["a.md"]
    assert rejected_to_prune([_file("a.md", -5)], NOW, 0) == []


def test_what_is_kept_as_it_came_keeps_its_note() -> None:
    """A link or a FIFO swapped in for a blueprint is kept in rejected/ as it came (never read
    nor followed); its note says what it is, so neither goes."""
    odd = [_file("r__x.md", 90 * DAY, regular=False), _file("r__x.why.txt", 90 * DAY)]
    assert rejected_to_prune(odd, NOW, DAY) == []
    assert rejected_to_prune([*odd, _file("stray", 90 * DAY)], NOW, DAY) == ["stray"]


_NAMES = st.sampled_from(["1700000000__a", "1700000000__a-2", "r1__b", "r2__c.md", "x"])
_ENDS = st.sampled_from([".md", ".why.txt", "", ".txt"])
_ENTRIES = st.lists(
    st.builds(
        RejectedFile,
        st.builds(str.__add__, _NAMES, _ENDS),
        st.floats(NOW - 100 * DAY, NOW + DAY),
        st.booleans(),
    ),
    unique_by=lambda f: f.name,
    max_size=12,
)


@given(_ENTRIES, st.floats(0, 60 * DAY))
def test_a_refused_blueprint_goes_whole_or_stays_whole(
    entries: list[RejectedFile], older_than_s: float
) -> None:
    removed = set(rejected_to_prune(entries, NOW, older_than_s))
    for entry in entries:
        group = [e for e in entries if rejection_of(e.name) == rejection_of(entry.name)]
        cutoff = NOW - older_than_s
        settled = all(e.regular and e.mtime <= cutoff for e in group)
        assert (entry.name in removed) == settled, (entry, group)


def test_prune_beside_a_running_daemon_removes_only_settled_runs(daemon_env: Env) -> None:
    env = daemon_env
    gone = env.submit(env.blueprint("gone", ajetd="gpus: 0\nkeep_session: 0"))
    kept = env.submit(env.blueprint("kept", ajetd="gpus: 0\nkeep_session: 1h"))
    end = env.tmp / "end-live"
    live = env.submit(
        env.blueprint("live", command=f"while [ ! -e {end} ]; do sleep 0.05; done", ajetd="gpus: 0")
    )
    for run_id in (gone, kept):
        env.wait_done(run_id)
    wait_for(lambda: env.record(gone).get("session_closed"), what="the session closed")
    bad = env.submit(env.blueprint("bad", max_time="whenever"))
    env.wait_done(bad)
    rejected = sorted(p.name for p in (env.home / "rejected").iterdir())
    assert rejected, "a rejected blueprint is kept in rejected/"
    old = time.time() - 2 * DAY
    for path in (env.home / "rejected").iterdir():
        os.utime(path, (old, old))

    dry = env.cli("prune", "--older-than", "0", "--dry-run", "--json")
    said = json.loads(dry.stdout)
    assert dry.returncode == 0 and sorted(said["removed"]) == sorted([gone, bad]), said
    assert (env.home / "runs" / gone).is_dir() and said["rejected_removed"] == rejected
    assert "still kept" in said["kept"][kept] and "not ended" in said["kept"][live]

    out = env.cli("prune", "--older-than", "0")
    assert out.returncode == 0, out.stderr
    assert "removed 2 run folder(s)" in out.stdout and f"kept {kept}: its tmux" in out.stdout
    assert not (env.home / "runs" / gone).exists() and not (env.home / "runs" / bad).exists()
    assert not list((env.home / "rejected").iterdir())
    assert (env.tmp / "results" / "gone" / "finish.flag").exists()  # the user's: untouched
    listed = {r["run_id"] for r in json.loads(env.cli("status", "--json").stdout)}
    assert listed == {kept, live}
    assert env.cli("status", gone).returncode != 0

    end.touch()  # the daemon goes on: the live run ends and a new run runs
    env.wait_done(live)
    again = env.submit(env.blueprint("again", ajetd="gpus: 0\nkeep_session: 0"))
    assert env.wait_done(again)["status"] == "succeeded"
    assert not (env.home / "runs" / gone).exists()  # nothing brought it back
    young = json.loads(env.cli("prune", "--json").stdout)  # the default age: 30 days
    assert young["removed"] == [] and "within the age kept" in young["kept"][again]


def test_prune_refuses_a_bad_age_and_says_a_campaign_it_cannot_read(env: Env) -> None:
    out = env.cli("prune", "--older-than", "soon")
    assert out.returncode == 2 and "--older-than" in out.stderr
    broken = env.home / "campaigns" / "c-aaaaaa"
    broken.mkdir(parents=True)
    (broken / "state.json").write_text("{not json")
    out = env.cli("prune", "--older-than", "0")
    assert out.returncode == 1 and "nothing was pruned" in out.stderr, out.stderr


def test_prune_keeps_a_fresh_refusal_of_an_old_file(env: Env) -> None:
    """rejected/ as the daemon leaves it for a blueprint written 40 days before it was refused
    today: `prune` (30 days) keeps both files; one whose note is old too goes whole."""
    Home(env.home).ensure()
    rejected = env.home / "rejected"
    old = time.time() - 40 * DAY
    for stem, note_time in (("fresh__x", None), ("stale__y", old)):
        (rejected / f"{stem}.md").write_text("# blueprint\n")
        os.utime(rejected / f"{stem}.md", (old, old))
        (rejected / f"{stem}.why.txt").write_text("refused\n")
        if note_time is not None:
            os.utime(rejected / f"{stem}.why.txt", (note_time, note_time))
    out = env.cli("prune", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["rejected_removed"] == ["stale__y.md", "stale__y.why.txt"]
    assert sorted(p.name for p in rejected.iterdir()) == ["fresh__x.md", "fresh__x.why.txt"]


def test_only_a_runs_own_config_copies_unchanged_since_are_its_copies() -> None:
    """Walk97 F10: the fixed config copies piled up in the user's codebase for ever. Those
    `prune` removes with a run are its own as ajetd wrote them: its id in ajetd's name, a
    regular file of this user, last written while the run lived; nothing else."""
    run = _ended(config_path="/code/configs/exp.ajetd-abc123-t2.yaml")
    during = run.ended_at - 60  # type: ignore[operator]
    uid = os.getuid()
    files = [
        CopyFile("exp.ajetd-abc123.yaml", True, uid, during),  # admission's copy
        CopyFile("exp.ajetd-abc123-t2.yaml", True, uid, during),  # a relaunch's fix
        CopyFile("exp.yaml", True, uid, during),  # the user's own
        CopyFile("exp.ajetd-zzz999.yaml", True, uid, during),  # another run's
        CopyFile("exp.ajetd-abc123.yaml.bak", True, uid, during),  # a person's name
        CopyFile("other.ajetd-abc123.yaml", True, uid, during),  # beside another config
        CopyFile("exp.ajetd-abc123-t3.yaml", False, uid, during),  # a link (or a FIFO)
        CopyFile("exp.ajetd-abc123-t4.yaml", True, uid + 1, during),  # another user's
        CopyFile("exp.ajetd-abc123-t5.yaml", True, uid, time.time()),  # edited since the end
        CopyFile("exp.ajetd-abc123-t6.yaml", True, uid, run.submitted_at - DAY),  # older
    ]
    assert config_copies(run, files, uid) == ["exp.ajetd-abc123.yaml", "exp.ajetd-abc123-t2.yaml"]
    assert config_copies(replace(run, remote_dir="/r/abc123"), files, uid) == []  # an SSH host's
    assert config_copies(replace(run, ended_at=None), files, uid) == []


def test_prune_removes_a_runs_config_copy_and_nothing_else(daemon_env: Env) -> None:
    """End to end: a run's copy (`X.ajetd-<id>.yaml` beside the user's config) goes with its
    folder, its content kept in the result dir as config-used.yaml; a link named like a copy,
    another run's copy a later run runs, and the user's config stay."""
    env = daemon_env
    ajetd = "gpus: 0\nkeep_session: 0\nyaml_overrides: [fakejet.steps=2]"
    config = env.config("exp")
    run_id = env.submit(env.blueprint("copied", config=config, ajetd=ajetd))
    assert env.wait_done(run_id)["status"] == "succeeded"
    wait_for(lambda: env.record(run_id).get("session_closed"), what="the session closed")
    folder = (env.codebase / config).parent
    copy = folder / f"exp.ajetd-{run_id}.yaml"
    assert copy.is_file(), sorted(p.name for p in folder.iterdir())
    used = env.tmp / "results" / "copied" / "config-used.yaml"
    assert used.read_bytes() == copy.read_bytes()
    victim = env.tmp / "victim.yaml"
    victim.write_text("mine: 1\n")
    link = folder / f"exp.ajetd-{run_id}-t7.yaml"
    link.symlink_to(victim)
    said = json.loads(env.cli("prune", "--older-than", "0", "--json").stdout)
    assert said["removed"] == [run_id] and said["copies_removed"] == [str(copy)], said
    assert not copy.exists() and used.is_file()  # the result dir keeps what it ran
    assert link.is_symlink() and victim.read_text() == "mine: 1\n"
    assert (env.codebase / config).is_file()
