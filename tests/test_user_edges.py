"""What a user meets at the edges, driven as a user drives ajetd (the CLI, a real daemon, real
files): `wait` and `stop` on runs that can never get a finish.flag, campaign folders copied in
by hand, two campaigns given one result_dir, a home whose file system turns read-only.

Each test here stands for a defect found by driving the contract blind (DESIGN §3).
"""

from __future__ import annotations

import json
import math
import os
import pwd
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import Env, campaign_folder, in_process, wait_for


def test_wait_and_stop_trust_the_record_not_a_flag_that_never_comes(daemon_env: Env) -> None:
    """A run rejected because its result dir holds an earlier run's results gets no
    finish.flag there (nothing is overwritten): `wait` returns at once with 1 instead of
    awaiting a flag for 30 s, and `diag` saves its snapshot in the home, not in that dir. A
    rejection whose dir takes its reports has them on disk the moment `wait` returns."""
    env = daemon_env
    taken = env.tmp / "results" / "taken"
    taken.mkdir()
    earlier = '{"run_id": "aaaaaa", "status": "succeeded"}\n'
    (taken / "finish.flag").write_text(earlier)
    run_id = env.submit(env.blueprint("again", result=str(taken), ajetd="gpus: 0"))
    done = env.cli("wait", run_id, "--timeout", "10", timeout=20)  # it used to take 30 s
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "already holds finish.flag" in done.stdout
    assert (taken / "finish.flag").read_text() == earlier
    assert env.cli("stop", run_id, "--timeout", "5").returncode == 0  # already ended: says so
    snap = json.loads(env.cli("diag", run_id, "--json").stdout)  # never in another run's dir
    assert Path(snap["saved"]).parent == env.home / "runs" / run_id / "diag"
    assert sorted(p.name for p in taken.iterdir()) == ["finish.flag"]

    fresh = env.tmp / "results" / "fresh"
    run_id = env.submit(env.blueprint("bad", result=str(fresh), max_time="forever"))
    done = env.cli("wait", run_id, "--timeout", "10")
    assert done.returncode == 1, (done.stdout, done.stderr)
    flag = json.loads((fresh / "finish.flag").read_text())
    assert (flag["run_id"], flag["status"]) == (run_id, "rejected")


def test_wait_without_a_daemon_says_so_and_still_waits(env: Env) -> None:
    run_id = env.submit(env.blueprint("nodaemon", ajetd="gpus: 0"))
    done = env.cli("wait", run_id, "--timeout", "0.3")
    assert done.returncode == 124
    assert "no daemon is running" in done.stderr and "ajetd daemon --detach" in done.stderr


def test_a_campaign_folder_copied_in_by_hand_wakes_the_daemon_once_quiet(env: Env) -> None:
    """The inbox's watch sees a folder appear, not the files copied into it: the daemon wakes
    itself when the folder has been quiet for a second (its own sleep here is 60 s), first
    for a folder that has no campaign.yaml yet, then for one whose copy is still fresh."""
    daemon = in_process(env, liveness=60)
    folder = campaign_folder(env, "byhand", env.tmp / "campaigns" / "byhand")
    target = env.home / "inbox" / "byhand"
    target.mkdir()  # the copy has begun: nothing in it yet
    daemon.tick(time.time())
    assert daemon._sleep_for(time.time(), True) <= 1.05
    for item in folder.iterdir():
        shutil.copy2(item, target / item.name)  # mtimes set back, as `cp -a` does
    daemon.tick(time.time())
    assert not daemon.campaigns.states  # still fresh: not taken yet
    assert daemon._sleep_for(time.time(), True) <= 1.05

    def taken() -> bool:
        daemon.tick(time.time())
        return bool(daemon.campaigns.states)

    wait_for(taken, 10, "the quiet folder to be claimed")
    assert daemon.campaigns.settle_at == math.inf  # no settle wake left behind


def test_two_campaigns_never_share_a_result_dir(daemon_env: Env) -> None:
    """A second campaign given the result_dir of an earlier one would add its rows to that
    ledger and overwrite its campaign.md: `ajetd campaign` refuses it (exit 2, naming the
    file), and a folder dropped into the inbox by hand is refused by the daemon."""
    env = daemon_env
    shared = env.tmp / "campaigns" / "shared"
    first = env.cli("campaign", str(campaign_folder(env, "first", shared)))
    assert first.returncode == 0, first.stderr
    cid = first.stdout.strip()
    wait = env.cli("campaign", "wait", cid, "--timeout", "30")
    assert wait.returncode == 3, (wait.stdout, wait.stderr)  # completed, no best: no record
    ledger = (shared / "ledger.tsv").read_text()
    report = (shared / "campaign.md").read_text()

    second = env.cli("campaign", str(campaign_folder(env, "second", shared)))
    assert second.returncode == 2
    assert f"{shared} already holds ledger.tsv, campaign.md" in second.stderr

    shutil.copytree(campaign_folder(env, "third", shared), env.home / "inbox" / "third")

    def refused() -> dict[str, str] | None:
        rows = json.loads(env.cli("campaign", "list", "--json").stdout)
        return next((r for r in rows if r["name"] == "third" and r["status"]), None)

    row = wait_for(refused, 15, "the hand-dropped campaign to be refused")
    assert row["status"] == "refused" and "already holds ledger.tsv" in row["reason"]
    assert (shared / "ledger.tsv").read_text() == ledger
    assert (shared / "campaign.md").read_text() == report


@pytest.fixture
def read_only_home(env: Env) -> Iterator[Path]:
    """The env's home on a small tmpfs, bind-mounted over itself so that the test can turn
    that view read-only while the daemon keeps its open files (as a file system remounted
    read-only for new writes)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    env.home.mkdir(mode=0o700)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(env.home)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    yield env.home
    for _ in range(2):
        subprocess.run(["umount", "-l", str(env.home)], check=False)


def test_a_read_only_home_is_said_and_no_command_throws_a_traceback(
    env: Env, read_only_home: Path
) -> None:
    env.start_daemon()
    home = str(read_only_home)
    subprocess.run(["mount", "--bind", home, home], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", home], check=True)
    shown = env.cli("status")
    assert shown.returncode == 0
    assert f"DISK FULL: cannot write to $AJETD_HOME {home}: Read-only file system" in shown.stdout
    as_json = env.cli("status", "--json")
    assert json.loads(as_json.stdout) == [] and "Read-only file system" in as_json.stderr
    folder = campaign_folder(env, "ro", env.tmp / "campaigns" / "ro")
    for args in (("campaign", str(folder)), ("submit", str(env.blueprint("ro")))):
        done = env.cli(*args)
        assert done.returncode == 1, (args, done.stderr)
        assert "Read-only file system" in done.stderr and "Traceback" not in done.stderr
    subprocess.run(["umount", home], check=True)
    assert not list((read_only_home / "inbox").iterdir())  # no half copy left behind
    wait_for(lambda: "DISK FULL" not in env.cli("status").stdout, 30, "the home writable again")


def test_control_characters_in_prose_are_shown_escaped(daemon_env: Env) -> None:
    """A purpose holding terminal escape sequences is shown escaped, not obeyed: `lint`,
    `status RUN` and results.md (the blueprint as submitted included) carry `\\x1b`, never
    the ESC byte itself."""
    env = daemon_env
    bp = env.blueprint("escapes", purpose="evil \x1b[2J\x1b]0;pwned\x07 end", ajetd="gpus: 0")
    escaped = "evil \\x1b[2J\\x1b]0;pwned\\x07 end"
    shown = env.cli("lint", str(bp))
    assert shown.returncode == 0, shown.stderr
    run_id = env.submit(bp)
    assert env.cli("wait", run_id, "--timeout", "30").returncode == 0
    results = (env.tmp / "results" / "escapes" / "results.md").read_text()
    for text in (shown.stdout, env.cli("status", run_id).stdout, results):
        assert "\x1b" not in text and "\x07" not in text
        assert escaped in text
    assert env.status(run_id)["purpose"] == escaped


def test_a_campaign_folder_is_read_as_blueprints_are_and_refused_by_name(env: Env) -> None:
    """A campaign.yaml that is not UTF-8 is refused naming the file and the byte (exit 2,
    no traceback); a base blueprint saved as UTF-16 on Windows is read as every blueprint is."""
    folder = campaign_folder(env, "bytes", env.tmp / "campaigns" / "bytes")
    good = (folder / "campaign.yaml").read_bytes()
    (folder / "campaign.yaml").write_bytes(good.replace(b"name: bytes", b"name: bytes\xff"))
    done = env.cli("campaign", str(folder))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "campaign.yaml: not UTF-8 text (invalid start byte at byte 11)" in done.stderr
    (folder / "campaign.yaml").write_bytes(good)
    (folder / "base.md").write_bytes((folder / "base.md").read_text().encode("utf-16"))
    done = env.cli("campaign", str(folder))
    assert done.returncode == 0, done.stderr


def test_every_text_file_saved_as_utf16_reads_or_is_refused_in_words(env: Env) -> None:
    """Before: only a blueprint was read as its byte-order mark says. A config saved as
    UTF-16 was `not valid YAML: 'utf-8' codec can't decode byte 0xff ...`, a kinds file
    `unacceptable character #x0000`, a campaign.yaml `not UTF-8 text (invalid start byte at
    byte 0)`, and a UTF-16 log gave `ajetd diagnose` nothing to find. What ajetd alone reads
    is decoded as a blueprint is; the config, which the program reads too, is refused
    saying to save it as UTF-8."""
    wide = "\ufeff".encode("utf-16")[:2]  # the mark a Windows editor writes
    config = env.codebase / env.config("wide")
    config.write_bytes(config.read_text().encode("utf-16"))
    linted = env.cli("lint", str(env.blueprint("wide", config="configs/wide.yaml")))
    assert linted.returncode == 2, linted.stdout
    assert f"{config} is UTF-16 text (as Windows editors save it): save it as UTF-8" in (
        linted.stderr
    )
    log = env.tmp / "wide.log"
    log.write_bytes("step 1\ntorch.OutOfMemoryError: CUDA out of memory\n".encode("utf-16"))
    kinds = env.tmp / "kinds.yaml"
    kinds.write_bytes("kinds: []\n".encode("utf-16"))
    assert log.read_bytes().startswith(wide) and kinds.read_bytes().startswith(wide)
    found = env.cli("diagnose", str(log), "--kinds", str(kinds), "--json")
    assert found.returncode == 0, found.stderr
    assert [(f["kind"], f["line"]) for f in json.loads(found.stdout)] == [("cuda_oom", 2)]
    folder = campaign_folder(env, "wide", env.tmp / "campaigns" / "wide")
    spec = folder / "campaign.yaml"
    spec.write_bytes(spec.read_text().encode("utf-16"))
    done = env.cli("campaign", str(folder))
    assert done.returncode == 0, done.stderr


def test_an_agentjet_config_with_odd_sections_is_refused_by_name_or_fixed(env: Env) -> None:
    """A section ajetd must fix inside that is not a mapping is named (it was an internal
    TypeError in lint and a rejection "internal error while admitting"); an empty one is
    made in the fixed copy."""
    from ajetd.frameworks.agentjet import apply_patches

    config = env.codebase / "configs" / "odd.yaml"
    config.write_text("ajet:\n  trainer_common: 5\nfakejet: {steps: 2, step_time: 0.01}\n")
    bp = env.blueprint("odd", config="configs/odd.yaml", ajetd="gpus: 0")
    done = env.cli("lint", str(bp))
    assert done.returncode == 2 and "TypeError" not in done.stdout + done.stderr
    assert "exp_yaml_path: ajet.trainer_common must be a mapping, not 5" in done.stderr
    config.write_text("ajet:\n  trainer_common:\n    logger: 5\n")
    assert env.cli("lint", str(bp)).returncode == 0
    empty = {"ajet": {"trainer_common": None}}
    fixed = apply_patches(empty, {("ajet", "trainer_common", "val_before_train"): True})
    assert fixed == {"ajet": {"trainer_common": {"val_before_train": True}}}


def test_a_bare_path_with_a_space_is_refused_not_cut_at_the_space(env: Env) -> None:
    """`/data/my runs/x` written bare was read as `/data/my` and the results went there; it
    is now refused naming the fix, while backticks or quotes bound the path and a note after
    a path (`/data/out (NFS)`) is still a note."""
    bp = env.blueprint("spaced", ajetd="gpus: 0")
    text = bp.read_text()
    wanted = str(env.tmp / "results" / "my runs" / "x")
    line = next(x for x in text.splitlines() if x.startswith("- [exp_result_dir]"))

    def lint(value: str) -> dict[str, Any]:
        bp.write_text(text.replace(line, f"- [exp_result_dir] 结果数据存储路径: {value}"))
        return dict(json.loads(env.cli("lint", str(bp), "--json").stdout))

    refused = lint(wanted)
    assert not refused["ok"]
    assert refused["problems"] == [
        f"exp_result_dir: {wanted!r} holds a space, so only {env.tmp / 'results' / 'my'} "
        "would be read; put the whole path in backticks or quotes"
    ]
    assert lint(f"`{wanted}`")["blueprint"]["result_dir"] == wanted
    assert lint(f'"{wanted}"')["blueprint"]["result_dir"] == wanted
    noted = lint(f"{env.tmp / 'results' / 'out'} (NFS share)")
    assert noted["blueprint"]["result_dir"] == str(env.tmp / "results" / "out")


def test_a_venv_given_as_the_line_that_activates_it_is_that_venv(daemon_env: Env) -> None:
    """`source .venv/bin/activate` (or the activate script's path) names the venv as people
    write it after the seed: the trial runs in that venv, not a rejection of `source`."""
    env = daemon_env
    venv = env.tmp / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / "bin" / "activate").write_text("# made by the test\n")
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")  # what makes a folder a venv
    for i, given in enumerate((f"source {venv}/bin/activate", f"{venv}/bin/activate")):
        bp = env.blueprint(f"activate{i}", command="echo VE=$VIRTUAL_ENV", ajetd="gpus: 0")
        text = bp.read_text().replace(str(sys.executable), given)
        bp.write_text(text)
        run_id = env.submit(bp)
        done = env.cli("wait", run_id, "--timeout", "30")
        assert done.returncode == 0, done.stdout
        assert f"VE={venv}" in env.cli("logs", run_id).stdout


def test_a_result_dir_inside_the_home_is_refused(daemon_env: Env) -> None:
    """`$AJETD_HOME` is ajetd's own folder. A blueprint whose result dir was its inbox got its
    run's results.md and trials.md taken as two more blueprints (two runs rejected with every
    part missing, the reports moved out of the result dir into rejected/); one under `runs/`
    mixed reports with records. A result dir in the home (however spelt: a symlink to it) is
    refused by lint and by the daemon, and nothing is written there."""
    env = daemon_env
    link = env.tmp / "to-home"
    link.symlink_to(env.home)
    for name, result in (
        ("inbox", env.home / "inbox"),
        ("records", env.home / "runs" / "mine"),
        ("linked", link / "out"),
        ("itself", env.home),
    ):
        bp = env.blueprint(name, result=str(result), ajetd="gpus: 0")
        linted = env.cli("lint", str(bp))
        assert linted.returncode == 2, (name, linted.stdout)
        assert f"lies in $AJETD_HOME {env.home}" in linted.stderr, linted.stderr
        run_id = env.submit(bp)
        done = env.wait_done(run_id)
        assert done["status"] == "rejected" and "lies in $AJETD_HOME" in done["reason"], done
        assert not (result / "finish.flag").exists() and not (result / "results.md").exists()
    runs = json.loads(env.cli("status", "--json").stdout)
    assert len(runs) == 4, [(r["blueprint"], r["reason"]) for r in runs]  # nothing else taken
    assert not env.launches()


def test_a_fix_made_on_the_overridden_config_is_what_the_copy_holds(env: Env) -> None:
    """yaml_overrides set `ajet.execute_test`, then the whole `ajet` section with it true;
    the review (of the overridden config) fixes execute_test to false. The copy that runs
    holds the fix: before, the patches were merged into one mapping where the fix took the
    place of the first override, so the later section override put `true` back, while
    results.md said it was fixed. The copy is now the overridden config made once by the
    preflight, with the review's fixes on it (admission no longer applies the patches again)."""
    config = env.config("edge")
    section = (
        "ajet={execute_test: true, trainer_common: {test_freq: 2, val_before_train: true, "
        "logger: console, val_print_to_markdown_file_path: ./saved_val_result/edge.md}}"
    )
    overrides = f"yaml_overrides: ['ajet.execute_test=true', '{section}']"
    env.start_daemon()
    run_id = env.submit(env.blueprint("edge", config=config, ajetd=f"gpus: 0\n{overrides}"))
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    copy = env.codebase / "configs" / f"edge.ajetd-{run_id}.yaml"
    ajet = yaml.safe_load(copy.read_text())["ajet"]
    assert ajet["execute_test"] is False, ajet
    assert ajet["trainer_common"]["val_print_to_markdown_file_path"] == "./saved_val_result/edge.md"


def test_a_stop_waiting_for_the_daemon_is_shown_where_stop_says_it_is(env: Env) -> None:
    """`ajetd stop` with no daemon files the request and says the run stops when one starts
    (Ctrl-C while it waits: 'the stop request stands (`ajetd status RUN` to see it)'), but
    `status RUN` did not show it: a queued run read 'waiting in the inbox', a running one
    'running', as if nothing had been asked. Its reason says so until the daemon acts."""
    run_id = env.submit(env.blueprint("halt", config=env.config("halt", forever=True)))
    asked = env.cli("stop", run_id, "--json")
    assert asked.returncode == 1 and "stops when one starts" in asked.stderr
    said = "a stop is requested (`ajetd stop`) and waits for the daemon"
    assert json.loads(asked.stdout)["reason"].startswith(said), asked.stdout
    assert env.status(run_id)["reason"].startswith(said)
    assert said in env.cli("status", run_id).stdout
    listed = json.loads(env.cli("status", "--json").stdout)
    assert [r["reason"][: len(said)] for r in listed] == [said]
    env.start_daemon()
    done = env.wait_done(run_id)
    assert done["status"] == "stopped" and said not in done["reason"], done


def test_runs_whose_purpose_has_no_latin_word_get_names_that_tell_them_apart(
    daemon_env: Env,
) -> None:
    """Walk 81, L4: a purpose in Chinese alone, in a file named `blueprint.md` (as README
    says to drop it), gave every such run the session `ajet_blueprint`. The name now comes
    from the result dir's name (each run's own), else the config's, else the run id."""
    env = daemon_env
    runs = []
    for lr in ("1e-6", "3e-6"):
        path = env.blueprint(f"gsm8k-lr{lr}", purpose="数学推理实验", result=None)
        folder = env.tmp / f"folder-{lr}"
        folder.mkdir()
        runs.append(env.submit(path.rename(folder / "blueprint.md")))
    # `submit -` (stdin.md) with a result dir named in Chinese alone: the config's name
    text = env.blueprint(
        "qwen-math", purpose="数学推理实验", result=str(env.tmp / "results" / "结果")
    )
    out = env.cli("submit", "-", stdin=text.read_text())
    assert out.returncode == 0, out.stderr
    runs.append(out.stdout.strip())
    sessions = [env.wait_done(run_id)["session"] for run_id in runs]
    assert sessions == ["ajet_gsm8k_lr1e_6", "ajet_gsm8k_lr3e_6", "ajet_qwen_math"], sessions


def test_a_wide_file_is_read_whole_across_its_chunks_and_named_in_words() -> None:
    """`utf8_chunks` decodes a UTF-16 file cut into chunks at odd bytes (a character split
    between two reads; the first chunk, as `diagnose` reads it, long enough to tell) whole; `utf8_problem` says what a file the program reads is."""
    from ajetd.core.textfile import utf8_chunks, utf8_problem

    text = "第 line one\n" * 2000  # without a mark, UTF-16 is told by its NUL bytes
    for codec in ("utf-16", "utf-16-be", "utf-32", "utf-8", "utf-8-sig"):
        raw = text.encode(codec)
        chunks = [raw[i : i + 4097] for i in range(0, len(raw), 4097)]  # odd: cut a character
        assert b"".join(utf8_chunks(chunks)).decode("utf-8-sig") == text, codec
    assert utf8_problem(text.encode("utf-16")) == (
        "UTF-16 text (as Windows editors save it): save it as UTF-8"
    )
    assert utf8_problem(text.encode("utf-32")).startswith("UTF-32 text")  # type: ignore[union-attr]
    assert utf8_problem(b"ok\xff") == "not UTF-8 text (invalid start byte at byte 2)"
    assert utf8_problem(text.encode("utf-8-sig")) is None
    assert list(utf8_chunks([])) == [b""]


def test_a_compressed_or_piped_log_is_diagnosed_as_the_text_it_holds(env: Env) -> None:
    """Walk 86, F13: `ajetd diagnose x.log.gz` said `no known failure found` (it read the
    compressed bytes as text); `cat x.log | ajetd diagnose -` was a usage error, and `...
    /dev/stdin` refused as a FIFO. Now each is read as its text; a compression not read here,
    or a stream cut short, is said in words, never `no known failure found`."""
    import bz2
    import gzip
    import lzma

    text = b"step 1\r\n" * 3000 + b"torch.OutOfMemoryError: CUDA out of memory\n"
    for name, packed in (
        ("x.log.gz", gzip.compress(text)),
        ("x.log.bz2", bz2.compress(text)),
        ("x.log.xz", lzma.compress(text)),
        ("two.log.gz", gzip.compress(text[:9000]) + gzip.compress(text[9000:])),  # `cat a b`
    ):
        path = env.tmp / name
        path.write_bytes(packed)
        found = env.cli("diagnose", str(path), "--json")
        assert found.returncode == 0, (name, found.stderr)
        assert [(f["kind"], f["line"]) for f in json.loads(found.stdout)] == [("cuda_oom", 3001)]
    piped = subprocess.run(
        f"cat {env.tmp / 'x.log.gz'} | {sys.executable} -m ajetd diagnose - && "
        f"gzip -dc {env.tmp / 'x.log.gz'} | {sys.executable} -m ajetd diagnose /dev/stdin",
        shell=True,
        env=env.vars,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.count("cuda_oom [science] line 3001") == 2, piped.stdout
    cut = env.tmp / "cut.log.gz"
    cut.write_bytes(gzip.compress(text)[:-12])  # its end lost
    zst = env.tmp / "x.log.zst"
    zst.write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 64)
    for path, said in ((cut, "gzip-compressed, but it cannot be read"), (zst, "zstd-compressed")):
        got = env.cli("diagnose", str(path))
        assert got.returncode == 1 and f"ajetd: {path}: {said}" in got.stderr, got.stderr
        assert "no known failure found" not in got.stdout


OTHER_UID = 65534  # nobody


def test_another_users_home_is_refused_by_every_command_naming_its_owner(env: Env) -> None:
    """Walk88 F7: root's `sudo -E ajetd submit` into a user's home printed a run id (exit 0)
    that the user's daemon never takes (it takes only its own user's files), and `wait`
    waited for ever; the other way round `shutdown` said no daemon runs while one did, and
    `wait RUN` called the record damaged, advising to move the folder out of runs/. Every
    command says whose home it is, exit 1, and changes nothing there."""
    if os.getuid() != 0:
        pytest.skip("needs root to give the home to another user")
    env.start_daemon()
    run_id = env.submit(env.blueprint("mine", command="echo mine"))
    env.wait_done(run_id)
    env.cli("shutdown")
    os.chown(env.home, OTHER_UID, OTHER_UID)
    before = sorted(p.name for p in env.home.rglob("*"))
    blueprint = env.blueprint("theirs", command="echo theirs")
    for args in (
        ("submit", str(blueprint)),  # the fast path
        ("submit", "-"),
        ("status",),
        ("wait", run_id),
        ("logs", run_id),
        ("stop", run_id),
        ("shutdown",),
        ("daemon", "--detach"),
        ("campaign", "list"),
    ):
        out = env.cli(*args, stdin=blueprint.read_text() if "-" in args else None)
        assert out.returncode == 1 and not out.stdout, (args, out.stdout, out.stderr)
        assert out.stderr == (
            f"ajetd: AJETD_HOME {env.home} belongs to {pwd.getpwuid(OTHER_UID).pw_name} "
            f"(uid {OTHER_UID}) and you are "
            "root (uid 0): a home is one user's (its daemon takes only its own user's files): "
            "point AJETD_HOME at your own home, or run ajetd as its owner\n"
        ), (args, out.stderr)
    assert sorted(p.name for p in env.home.rglob("*")) == before  # nothing written there
    os.chown(env.home, 0, 0)
    assert env.cli("status").returncode == 0
