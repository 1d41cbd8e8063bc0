"""Claims every ajetd daemon on the machine sees (walk98 F6, F9, F10): the pure judgement of
whose a claim is and whether it is live (`core.claims`), the files under their folder's lock
(`adapters.claimfiles`), and two real daemons (two homes, two tmux sockets) at once."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ajetd.adapters import claimfiles, procs
from ajetd.core import claims
from ajetd.core.claims import Claim, Claimant, Seen
from ajetd.daemon import claimkeeper
from ajetd.daemon.claimkeeper import ClaimKeeper
from conftest import Env, second_env, wait_for

ME = Claimant("/h/one", "aaaaaa", "root", 0, 100, 5000)


def _proc(table: dict[int, tuple[int, int]]) -> claims.Proc:
    return table.get


def _seen(by: Claimant, kind: str = claims.RESULT_DIR, uid: int | None = None) -> Seen:
    claim = Claim(kind, by, ("/r",))
    return Seen(claim.name(), by.uid if uid is None else uid, claim)


def test_a_claim_is_live_only_while_its_daemon_runs_as_its_files_owner() -> None:
    other = Claimant("/h/two", "bbbbbb", "walker", 1000, 200, 7000)
    seen = _seen(other)
    assert claims.live(seen, _proc({200: (1000, 7000)}))
    assert not claims.live(seen, _proc({}))  # the daemon ended
    assert not claims.live(seen, _proc({200: (1000, 7001)}))  # its pid given to another
    # a file planted by uid 1001 naming uid 1000's live daemon counts for nothing
    assert not claims.live(_seen(other, uid=1001), _proc({200: (1000, 7000)}))
    # a content that names another process than its file's name: not trusted
    lying = Seen(
        seen.name, 1000, Claim(claims.RESULT_DIR, Claimant("/h", "bbbbbb", "w", 1000, 9, 9), ())
    )
    assert not claims.live(lying, _proc({200: (1000, 7000)}))
    # another user's owner-only claim (unreadable) is judged by its name and owner
    assert claims.live(Seen(seen.name, 1000, None), _proc({200: (1000, 7000)}))


def test_judge_keeps_others_live_claims_and_clears_only_what_is_its_own() -> None:
    restarted = Claimant(ME.home, ME.run_id, "root", 0, 300, 9000)  # the same home and run
    old_own = _seen(ME)
    dead_mine = _seen(Claimant("/h/three", "cccccc", "root", 0, 400, 1))
    dead_theirs = _seen(Claimant("/h/four", "dddddd", "walker", 1000, 500, 1))
    live_theirs = _seen(Claimant("/h/five", "eeeeee", "walker", 1000, 600, 2))
    proc = _proc({600: (1000, 2), 300: (0, 9000)})
    found = [old_own, dead_mine, dead_theirs, live_theirs]
    verdict = claims.judge(found, restarted, claims.RESULT_DIR, lambda _s: True, proc)
    assert verdict.others == [live_theirs]
    assert sorted(verdict.remove) == sorted([old_own.name, dead_mine.name])  # never another's
    assert claims.judge(found, restarted, claims.RESULT_DIR, lambda _s: False, proc).others == []
    said = claims.holder(live_theirs, restarted)
    assert said == "run eeeeee of another ajetd daemon ($AJETD_HOME /h/five, user walker, pid 600)"


def test_parse_refuses_what_is_no_claim() -> None:
    good = Claim(claims.GPUS, ME, ("GPU-1",))
    assert claims.parse(good.text()) == good
    for text in ("", "[]", "{", json.dumps({**json.loads(good.text()), "pid": "1"})):
        assert claims.parse(text) is None
    assert claims.name_parts(good.name()) == (claims.GPUS, "aaaaaa", 100, 5000)
    assert claims.name_parts(".ajetd-claim.gpus.a/b.1.2") is None


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A live process standing for another daemon (its claims name it)."""
    proc = subprocess.Popen(["sleep", "600"])
    yield proc
    proc.kill()
    proc.wait()


def _other(proc: subprocess.Popen[bytes], run_id: str = "bbbbbb") -> Claimant:
    start = procs.started(proc.pid)
    assert start is not None
    return Claimant("/h/other", run_id, "root", os.getuid(), proc.pid, start)


def test_take_is_refused_while_the_other_daemon_lives_and_taken_once_it_ended(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    folder = str(tmp_path)
    theirs = Claim(claims.RESULT_DIR, _other(sleeper), (folder,))
    assert claimfiles.take(folder, theirs, lambda _s: True, claimfiles.OWNER_ONLY) is None
    assert stat.S_IMODE(os.stat(tmp_path / theirs.name()).st_mode) == 0o600
    mine = Claim(claims.RESULT_DIR, claimfiles.claimant(str(tmp_path / "home"), "aaaaaa"), ())
    stopped = claimfiles.take(folder, mine, lambda _s: True, claimfiles.OWNER_ONLY)
    assert stopped is not None and stopped.claim == theirs
    assert not (tmp_path / mine.name()).exists()
    sleeper.kill()
    sleeper.wait()
    assert claimfiles.take(folder, mine, lambda _s: True, claimfiles.OWNER_ONLY) is None
    assert (tmp_path / mine.name()).exists()
    assert not (tmp_path / theirs.name()).exists()  # a dead daemon's claim of this uid: cleared
    claimfiles.release(folder, mine.name())
    assert not list(tmp_path.iterdir())


def test_a_planted_link_or_a_foreign_owner_is_no_claim(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    folder = str(tmp_path)
    theirs = Claim(claims.VAL_FILE, _other(sleeper), ("/x",))
    target = tmp_path / "elsewhere"
    target.write_text(theirs.text())
    (tmp_path / theirs.name()).symlink_to(target)  # never followed
    with claimfiles.locked(folder) as fd:
        assert claimfiles.found(fd) == []
    (tmp_path / theirs.name()).unlink()
    planted = tmp_path / theirs.name()
    planted.write_text(theirs.text())
    os.chown(planted, 4242, 4242)  # another uid's file naming this uid's live process
    with claimfiles.locked(folder) as fd:
        [seen] = claimfiles.found(fd)
    assert not claims.live(seen, claimfiles.proc_of)


def test_the_machine_folder_must_be_a_sticky_folder(tmp_path: Path) -> None:
    made = tmp_path / "claims"
    claimfiles.ensure_machine_folder(str(made))
    assert stat.S_IMODE(made.stat().st_mode) == 0o1777
    link = tmp_path / "link"
    link.symlink_to(made)
    with pytest.raises(claimfiles.ClaimError, match="not a folder"):
        claimfiles.ensure_machine_folder(str(link))
    plain = tmp_path / "plain"
    plain.mkdir(mode=0o755)
    os.chown(plain, 4242, 4242)  # another user's, not sticky: they could remove any claim
    with pytest.raises(claimfiles.ClaimError, match="not a sticky world-writable folder"):
        claimfiles.ensure_machine_folder(str(plain))


# -- two real daemons ---------------------------------------------------------------------------


def _both_submit(a: Env, b: Env, bp_a: Path, bp_b: Path) -> tuple[str, str]:
    """Both blueprints submitted at the same moment, each to its own daemon."""
    started = [a.cli_started("submit", str(bp_a)), b.cli_started("submit", str(bp_b))]
    ids = []
    for proc in started:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        ids.append(out.strip())
    return ids[0], ids[1]


def test_two_daemons_given_one_result_dir_at_once_let_one_run_in(env: Env) -> None:
    other = second_env(env)
    env.start_daemon()
    other.start_daemon()
    shared = env.tmp / "results" / "same"
    bp_a = env.blueprint("a", config=env.config("a", steps=6), result=str(shared))
    bp_b = other.blueprint("b", config=env.config("b", steps=6), result=str(shared))
    run_a, run_b = _both_submit(env, other, bp_a, bp_b)
    end_a, end_b = env.wait_done(run_a), other.wait_done(run_b)
    ends = {run_a: (end_a, env, other), run_b: (end_b, other, env)}
    won = [r for r, (end, _w, _l) in ends.items() if end["status"] == "succeeded"]
    lost = [r for r, (end, _w, _l) in ends.items() if end["status"] == "rejected"]
    assert len(won) == 1 and len(lost) == 1, {r: e["status"] for r, (e, _w, _l) in ends.items()}
    loser_end, _loser_env, winner_env = ends[lost[0]]
    # refused by the claim, or, where the winner had already written into the dir before the
    # loser's daemon looked, by the files it holds (`result_dir_problem`): never both running
    claimed = (
        f"is claimed by run {won[0]} of another ajetd daemon ($AJETD_HOME "
        f"{os.path.realpath(winner_env.home)}"
    )
    reason = loser_end["reason"]
    assert claimed in reason or f"{shared} already holds " in reason, reason
    flag = json.loads((shared / "finish.flag").read_text())
    assert flag["run_id"] == won[0] and flag["status"] == "succeeded"
    log = (shared / "logs" / "trial-1.log").read_text()
    assert f"run {won[0]}" in log and f"run {lost[0]}" not in log
    assert lost[0] not in (shared / "results.md").read_text()
    wait_for(lambda: not list(shared.glob(".ajetd-claim.*")), what="the claim removed at its end")


def _shared_val(env: Env, name: str, rewards: list[float], **fake: object) -> str:
    """A config whose val file is `./saved_val_result/shared.md`, as the walk's valA/valB."""
    path = env.config(name, rewards=rewards, **fake)
    conf = yaml.safe_load((env.codebase / path).read_text())
    conf["ajet"]["trainer_common"]["val_print_to_markdown_file_path"] = (
        "./saved_val_result/shared.md"
    )
    (env.codebase / path).write_text(yaml.safe_dump(conf))
    return path


def test_a_val_file_another_daemons_run_writes_is_not_shared(env: Env) -> None:
    other = second_env(env)
    env.start_daemon()
    other.start_daemon()
    go = env.tmp / "a-may-end"
    conf_a = _shared_val(env, "va", [0.11, 0.12, 0.13], steps=4, hold_until=str(go))
    run_a = env.submit(env.blueprint("va", config=conf_a))
    wait_for(lambda: env.record(run_a).get("state") == "running", what="run A running")
    conf_b = _shared_val(env, "vb", [0.91, 0.95, 0.97], steps=4)
    run_b = other.submit(
        other.blueprint("vb", config=conf_b, result=str(env.tmp / "results" / "vb"))
    )
    end_b = other.wait_done(run_b)
    assert end_b["status"] == "succeeded"
    record_b = other.record(run_b)
    assert record_b["val_path"] == str(env.tmp / "results" / "vb" / "val_results.md")
    said = " ".join(record_b["config_changes"])
    assert f"live run {run_a} of another ajetd daemon ($AJETD_HOME" in said
    go.touch()
    end_a = env.wait_done(run_a)
    assert end_a["status"] == "succeeded"
    shared = (env.codebase / "saved_val_result" / "shared.md").read_text()
    assert "0.91" not in shared and "0.97" not in shared  # B's validations are B's alone
    flag = json.loads((env.tmp / "results" / "va" / "finish.flag").read_text())
    assert flag["best"]["value"] < 0.5  # A's own best, never B's 0.97


def test_two_daemons_at_once_never_write_one_val_file_together(env: Env) -> None:
    other = second_env(env)
    env.start_daemon()
    other.start_daemon()
    conf_a = _shared_val(env, "sa", [0.11, 0.12, 0.13], steps=4, step_time=0.2)
    conf_b = _shared_val(env, "sb", [0.91, 0.95, 0.97], steps=4, step_time=0.2)
    bp_b = other.blueprint("sb", config=conf_b, result=str(env.tmp / "results" / "sb"))
    run_a, run_b = _both_submit(env, other, env.blueprint("sa", config=conf_a), bp_b)
    end_a, end_b = env.wait_done(run_a, 60), other.wait_done(run_b, 60)
    assert end_a["status"] == end_b["status"] == "succeeded"
    flags = [
        json.loads((env.tmp / "results" / name / "finish.flag").read_text())
        for name in ("sa", "sb")
    ]
    assert flags[0]["best"]["value"] < 0.5 and flags[1]["best"]["value"] > 0.9  # each its own
    paths = {env.record(run_a)["val_path"], other.record(run_b)["val_path"]}
    if len(paths) == 1:  # both admitted before either claimed it: the later one waited
        events = "".join(
            (w.home / "runs" / r / "events.jsonl").read_text()
            for w, r in ((env, run_a), (other, run_b))
        )
        assert "of another ajetd daemon" in events and "writes the same val file" in events


def test_two_daemons_never_place_two_runs_on_one_gpu(env: Env) -> None:
    file = env.fake_gpus(1)
    other = second_env(env)
    other.vars["AJETD_FAKE_GPUS"] = str(file)
    for world in (env, other):
        world.start_daemon("--gpu-young-period", "0.2", "--gpu-period", "0.2")
    go = env.tmp / "gpu-may-end"
    runs = []
    for world, name in ((env, "ga"), (other, "gb")):
        gpu = {"file": str(file), "memory_mib": 60000}
        config = env.config(name, fake_gpu=gpu, steps=4, hold_until=str(go))
        runs.append(
            world.blueprint(
                name, config=config, ajetd="gpus: 1", result=str(env.tmp / "results" / name)
            )
        )
    run_a, run_b = _both_submit(env, other, *runs)
    records = {run_a: env.record, run_b: other.record}

    def one_running() -> bool:
        states = [str(read(r).get("state")) for r, read in records.items()]
        return sorted(states) == ["queued", "running"]

    wait_for(one_running, what="one run placed, the other queued")
    waiting = next(r for r, read in records.items() if read(r)["state"] == "queued")
    placed = next(r for r in records if r != waiting)
    wait_for(
        lambda: (
            f"held by run {placed} of another ajetd daemon"
            in records[waiting](waiting).get("reason", "")
        ),
        what="the queued run's reason naming the other daemon's run",
    )
    go.touch()
    ends = {r: (env if r == run_a else other).wait_done(r, 60) for r in records}
    assert all(end["status"] == "succeeded" for end in ends.values())
    assert records[run_a](run_a)["gpu_ids"] == records[run_b](run_b)["gpu_ids"] == [0]
    assert ends[waiting]["started_at"] >= ends[placed]["ended_at"]  # one after the other
    claims_left = list((env.tmp / "machine-claims").glob(".ajetd-claim.gpus.*"))
    assert claims_left == []


def test_a_restarted_daemon_takes_its_runs_claims_back(env: Env) -> None:
    file = env.fake_gpus(1)
    first = env.start_daemon("--gpu-young-period", "0.2", "--gpu-period", "0.2")
    go = env.tmp / "may-end"
    gpu = {"file": str(file), "memory_mib": 1000}
    config = _shared_val(env, "rs", [0.5], steps=4, hold_until=str(go), fake_gpu=gpu)
    run = env.submit(env.blueprint("rs", config=config, ajetd="gpus: 1"))
    wait_for(lambda: env.record(run).get("state") == "running", what="the run running")
    result, machine = env.tmp / "results" / "rs", env.tmp / "machine-claims"

    def claimed_by(pid: int) -> bool:
        names = [p.name for p in (*result.glob(".ajetd-claim.*"), *machine.glob(".ajetd-claim.*"))]
        kinds = sorted(n.split(".")[2] for n in names if n.split(".")[3:5] == [run, str(pid)])
        return kinds == ["gpus", "result_dir", "val_file"] and len(names) == 3

    wait_for(lambda: claimed_by(first.pid), what="the run's three claims")
    first.kill()  # no shutdown: its claims stay, naming a process that ended
    first.wait()
    second = env.start_daemon("--gpu-young-period", "0.2", "--gpu-period", "0.2")
    wait_for(lambda: claimed_by(second.pid), what="the claims made again by the new daemon")
    go.touch()
    assert env.wait_done(run)["status"] == "succeeded"
    wait_for(
        lambda: not [*result.glob(".ajetd-claim.*"), *machine.glob(".ajetd-claim.*")],
        what="the claims removed at the run's end",
    )


_AS_OTHER_USER = """
import json, os, sys
from ajetd.adapters import claimfiles
from ajetd.core import claims
folder, key = sys.argv[1], sys.argv[2]
claimfiles.ensure_machine_folder(folder)
out = {}
me = claimfiles.claimant(folder + "/home-nobody", "nnnnnn")
mine = claims.Claim(claims.GPUS, me, (key,))
def clash(seen):
    return seen.claim is not None and bool(set(seen.claim.what) & {key})
other = claimfiles.take(folder, mine, clash, claimfiles.EVERYONE_READS)
out["stopped_by"] = None if other is None else claims.holder(other, me)
try:
    for name in os.listdir(folder):
        if name != mine.name():
            os.unlink(os.path.join(folder, name))
    out["removed"] = True
except PermissionError:
    out["removed"] = False
free = claims.Claim(claims.GPUS, me, ("GPU-free",))
out["took_free"] = claimfiles.take(folder, free, lambda s: False, claimfiles.EVERYONE_READS) is None
print(json.dumps(out))
"""


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A folder another user can reach (pytest's own is root's, 0700)."""
    path = Path(tempfile.mkdtemp(prefix="ajetd-claims-test-", dir="/tmp"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path)


def test_another_user_sees_a_claim_and_cannot_remove_it(open_tmp: Path) -> None:
    """As another user (`setpriv`, where the tests run as root): the root-owned claim of a
    live daemon (this process) stops their claim of the same GPU, names its run, and cannot
    be removed by them (the sticky folder); a GPU no one holds is theirs."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user (setpriv)")
    folder = open_tmp / "claims"
    claimfiles.ensure_machine_folder(str(folder))
    held = Claim(claims.GPUS, claimfiles.claimant(str(open_tmp / "home"), "rrrrrr"), ("GPU-a",))
    assert claimfiles.take(str(folder), held, lambda _s: False, claimfiles.EVERYONE_READS) is None
    src = str(Path(claimfiles.__file__).parents[2])
    argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-S"]
    done = subprocess.run(
        [*argv, "-c", _AS_OTHER_USER, str(folder), "GPU-a"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": src},
    )
    if done.returncode != 0 and ("setpriv" in done.stderr or "ModuleNotFound" in done.stderr):
        pytest.skip(f"cannot run as nobody here: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["stopped_by"].startswith("run rrrrrr of another ajetd daemon ($AJETD_HOME")
    assert ", user root, pid" in got["stopped_by"]
    assert got["removed"] is False and (folder / held.name()).exists()
    assert got["took_free"] is True
    [theirs] = [p for p in folder.iterdir() if p.name != held.name()]
    assert theirs.stat().st_uid != 0 and stat.S_IMODE(theirs.stat().st_mode) == 0o644


def test_a_claims_folder_whose_lock_another_holds_is_let_be_a_while(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process (another user's) holding the machine folder's lock never stalls the daemon
    at each tick: the claim is not made (the daemon acts as before, seeing only its own
    runs), said once, and the folder is let be for `PAUSE_S`."""
    folder = tmp_path / "claims"
    monkeypatch.setenv(claimfiles.DIR_ENV, str(folder))
    monkeypatch.setattr(claimfiles, "LOCK_WAIT_S", 0.05)
    claimfiles.ensure_machine_folder(str(folder))
    keeper = ClaimKeeper(tmp_path / "home")
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert keeper.val_file("aaaaaa", str(tmp_path / "val.md")) is None
        assert keeper.held == {}
        assert keeper._machine() is None  # paused: no second wait
    finally:
        os.close(fd)
    monkeypatch.setattr(claimkeeper, "PAUSE_S", 0.0)
    keeper.paused_until = float("-inf")
    assert keeper.val_file("aaaaaa", str(tmp_path / "val.md")) is None
    assert [k[1] for k in keeper.held] == [claims.VAL_FILE]


# -- the commands that only look: `ajetd gpus`, `ajetd lint` --------------------------------------


def _claim_files(*folders: Path) -> dict[str, float]:
    """The claim files in `folders`, name -> mtime: what a command that only looks leaves."""
    return {
        str(p): p.stat().st_mtime_ns for f in folders for p in sorted(f.glob(claims.PREFIX + "*"))
    }


def test_gpus_and_lint_show_another_daemons_claims_and_leave_them_be(env: Env) -> None:
    """Two daemons, each with a run on one of two GPUs: `ajetd gpus` of the first names the
    second's run on its GPU (its home, its pid, since when), its own run as placed; `lint`
    of a blueprint pinned to that GPU warns that it would wait, and one with that run's result
    dir is refused as admission would. Once the second daemon is gone, its claim is shown
    stale and stops nothing. No command took, renewed or removed a claim."""
    file = env.fake_gpus(2)
    other = second_env(env)
    other.vars["AJETD_FAKE_GPUS"] = str(file)
    daemons = [
        w.start_daemon("--gpu-young-period", "0.2", "--gpu-period", "0.2") for w in (env, other)
    ]
    go = env.tmp / "may-end"
    runs = []
    for world, name, index in ((env, "mine", 1), (other, "theirs", 0)):
        gpu = {"file": str(file), "memory_mib": 1000}
        config = env.config(name, fake_gpu=gpu, steps=4, hold_until=str(go))
        result = str(env.tmp / "results" / name)
        bp = world.blueprint(name, config=config, ajetd=f"gpus: [{index}]", result=result)
        runs.append(world.submit(bp))
    mine, theirs = runs
    machine, their_dir = env.tmp / "machine-claims", env.tmp / "results" / "theirs"
    wait_for(
        lambda: (
            len(list(machine.glob(".ajetd-claim.gpus.*"))) == 2
            and list(their_dir.glob(".ajetd-claim.*"))
        ),
        what="both runs' GPU claims and the result dir's",
    )
    before = _claim_files(machine, their_dir)
    holder = (
        f"run {theirs} of another ajetd daemon ($AJETD_HOME {os.path.realpath(other.home)}, "
        f"pid {daemons[1].pid})"
    )

    out = env.cli("gpus")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    rows = {line.split()[0]: line for line in out.stdout.splitlines()[2:]}
    assert f"claimed by {holder} since 20" in rows["0"], out.stdout
    assert f"run {mine} (placed)" in rows["1"] and "claimed by" not in rows["1"], out.stdout
    doc = json.loads(env.cli("gpus", "--json").stdout)
    gpu0, gpu1 = sorted(doc["local"], key=lambda g: g["index"])
    [claim] = gpu0["claims"]
    assert claim["run_id"] == theirs and claim["live"] is True and claim["kind"] == "gpus"
    assert claim["home"] == os.path.realpath(other.home) and claim["pid"] == daemons[1].pid
    assert claim["since"].endswith("Z") and claim["what"] == ["GPU-fake-0"]
    assert gpu1["claims"] == []

    pinned = env.blueprint("pinned", config=env.config("pinned"), ajetd="gpus: [0]")
    out = env.cli("lint", str(pinned))
    assert out.returncode == 0, out.stderr
    assert (
        f"warning: gpus: the run would wait: waiting for 1 GPU(s): GPU 0 is held by {holder}"
        in (out.stdout)
    )
    same = env.blueprint("same", config=env.config("same"), result=str(their_dir))
    out = env.cli("lint", str(same), "--json")
    assert out.returncode == 2
    said = json.loads(out.stdout)["problems"]
    assert f"exp_result_dir: {their_dir} is claimed by {holder}" in " ".join(said), said
    conf = env.config("dup")  # the val file their run writes: admission moves this one's
    text = (
        (env.codebase / conf).read_text().replace("saved_val_result/dup", "saved_val_result/theirs")
    )
    (env.codebase / conf).write_text(text)
    doc = json.loads(env.cli("lint", str(env.blueprint("dup", config=conf)), "--json").stdout)
    assert doc["blueprint"]["val_path"] == str(env.tmp / "results" / "dup" / "val_results.md")
    assert f"live run {theirs} of another ajetd daemon" in " ".join(
        doc["blueprint"]["config_changes"]
    ), doc
    assert _claim_files(machine, their_dir) == before  # looked at, never touched

    daemons[1].kill()  # its claims stay, naming a process that ended
    daemons[1].wait()
    out = env.cli("gpus")
    [row0] = [line for line in out.stdout.splitlines() if line.startswith("0 ")]
    assert f"stale claim of {holder}" in row0 and "not counted" in row0, out.stdout
    assert json.loads(env.cli("gpus", "--json").stdout)["local"][0]["claims"][0]["live"] is False
    out = env.cli("lint", str(pinned))
    assert out.returncode == 0 and "would wait" not in out.stdout, out.stdout
    out = env.cli("lint", str(same), "--json")
    assert "is claimed by" not in " ".join(json.loads(out.stdout)["problems"])
    assert _claim_files(machine, their_dir) == before  # a stale claim is the daemons' to clear
    go.touch()
    assert env.wait_done(mine)["status"] == "succeeded"


def test_claims_that_cannot_be_read_are_one_line_never_a_traceback(
    env: Env, sleeper: subprocess.Popen[bytes]
) -> None:
    """The machine's claims folder a file, a folder no daemon would use (not sticky), a claim
    whose content is damaged: `gpus` and `lint` say it in one line and go on; a damaged claim
    naming a live daemon stops a result dir as the daemons judge it (by its name, its owner)."""
    env.fake_gpus(1)
    machine = env.tmp / "machine-claims"
    machine.write_text("not a folder")
    for args in (("gpus",), ("gpus", "--json")):
        out = env.cli(*args)
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
        assert out.stderr.count("\n") == 1 and "not a folder" in out.stderr, out.stderr
    machine.unlink()
    machine.mkdir(mode=0o755)
    out = env.cli("gpus")
    assert out.returncode == 0 and "not a sticky world-writable folder" in out.stderr
    machine.chmod(0o1777)
    by = _other(sleeper)
    damaged = machine / Claim(claims.GPUS, by, ("index:0",)).name()
    damaged.write_text('{"kind": "gpus", "what": [')
    out = env.cli("gpus", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["local"][0]["claims"] == []
    assert "not a claim (damaged content); judged by its name and owner alone" in out.stderr
    assert out.stderr.count("\n") == 1, out.stderr
    result = env.tmp / "results" / "dmg"
    result.mkdir(parents=True)
    (result / Claim(claims.RESULT_DIR, by, (str(result),)).name()).write_bytes(b"\xff{")
    out = env.cli("lint", str(env.blueprint("dmg", result=str(result))), "--json")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    doc = json.loads(out.stdout)
    held = (
        f"is claimed by run bbbbbb of another ajetd daemon (pid {sleeper.pid}, uid {os.getuid()})"
    )
    assert any(held in p for p in doc["problems"]), doc
    assert any("not a claim (damaged content)" in w for w in doc["blueprint"]["warnings"]), doc
    linked = env.tmp / "results" / "linked"
    linked.symlink_to(result)  # no daemon claims through a link: said, not a traceback
    out = env.cli("lint", str(env.blueprint("lnk", result=str(linked))), "--json")
    assert "Traceback" not in out.stderr, out.stderr
    said = json.loads(out.stdout)["blueprint"]["warnings"]
    assert f"other daemons' claims of the result dir not read: {linked} is a link" in " ".join(said)


_LOOK_AS_OTHER_USER = """
import json, sys, types
from ajetd.cli import claimsread
from ajetd.core.gpuuse import GpuSample
home = types.SimpleNamespace(root=sys.argv[1] + "/home-nobody")
gpus = claimsread.gpu_claims(home, [GpuSample(0, "H100", "", 0.0, 0.0, 1.0)])
print(json.dumps([gpus.notes, claimsread.result_dir_taken(home, sys.argv[1])]))
"""


def test_a_claims_folder_this_user_cannot_read_is_one_line(open_tmp: Path) -> None:
    """As another user (`setpriv`), the machine's claims folder and a result dir they may not
    read (root's, 1770): what `ajetd gpus` and `ajetd lint` show says so in one line each."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user (setpriv)")
    folder = open_tmp / "claims"
    folder.mkdir(mode=0o1770)
    folder.chmod(0o1770)
    src = str(Path(claimfiles.__file__).parents[2])
    argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-S"]
    done = subprocess.run(
        [*argv, "-c", _LOOK_AS_OTHER_USER, str(folder)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": src, claimfiles.DIR_ENV: str(folder)},
    )
    if done.returncode != 0 and ("setpriv" in done.stderr or "ModuleNotFound" in done.stderr):
        pytest.skip(f"cannot run as nobody here: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stderr
    [notes, (taken, dir_notes)] = json.loads(done.stdout)
    why = f"{folder}: cannot be opened: Permission denied"
    assert notes == [f"other daemons' claims not read: {why}"]
    assert taken is None and dir_notes == [
        f"other daemons' claims of the result dir not read: {why}"
    ]
