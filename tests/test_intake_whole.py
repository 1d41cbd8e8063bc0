"""Nothing dropped into the inbox is taken before it is whole (walk92 F1, F3, F4): a file its
writer still holds open is held until closed, one cut short by a full home is refused saying
so, a campaign folder copied in steps is taken once it reads whole, and what the user finds
in rejected/ is described truly.

Real daemons, real writers (a shell whose first command closes its copy of the descriptor
while the next one still writes, paused on a FIFO the test opens), a real full tmpfs home.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ajetd.adapters import inbox, writers
from ajetd.core.cutshort import PAGE_BYTES, cut_sign, unended
from ajetd.daemon.loop import Daemon
from ajetd.hosts.campaignfolder import FOLDER_WAIT_S
from conftest import Env, campaign_folder, fill, in_process, wait_for


def _daemon(env: Env) -> Daemon:
    """A daemon driven pass by pass (`tick`) with the times the test gives it."""
    return in_process(env, liveness=60)


def _listed(env: Env, words: str) -> str | None:
    """The `ajetd status` line holding `words`, once the daemon publishes it."""
    out = env.cli("status").stdout
    return next((line for line in out.splitlines() if words in line), None)


@pytest.fixture
def gate(env: Env) -> Iterator[Path]:
    """A FIFO a writer waits on (`read < gate`) until the test opens it; opened at the end
    whatever happened, so that no writer is left behind."""
    path = env.tmp / "gate"
    os.mkfifo(path)
    yield path
    _open(path)


def _open(gate: Path) -> None:
    """Let the writer waiting on `gate` go on (a writer already gone: nothing to do)."""
    try:
        fd = os.open(gate, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # no reader (ENXIO): the writer is not waiting
        return
    try:
        os.write(fd, b"go\n")
    finally:
        os.close(fd)


def _paused_writer(src: Path, target: Path, gate: Path, first: int) -> subprocess.Popen[bytes]:
    """walk92 F3's writer: the first `first` bytes of `src` by `head` (which closes its copy
    of the descriptor when it ends), then, once the gate opens, the rest, by `tail`, through
    the descriptor the shell still holds."""
    script = '(head -c "$1" "$2"; read -r _ < "$3"; tail -c "+$(($1 + 1))" "$2") > "$4"'
    return subprocess.Popen(
        ["bash", "-c", script, "_", str(first), str(src), str(gate), str(target)]
    )


def test_a_file_its_writer_holds_open_is_taken_once_closed_whole(env: Env, gate: Path) -> None:
    """F3: `(head -c 200 f; pause; tail -c +201 f) > inbox/half.md` was judged on its first
    200 bytes (its parts missing) and rejected, though the file came whole 4 s later. It is
    held while the shell holds it open, named in `status` as held, and taken once closed:
    admitted with its options, its stored text the whole file."""
    env.start_daemon()
    src = env.blueprint("half", command="true", ajetd="gpus: 0\nmax_trials: 1")
    target = env.home / "inbox" / "half.md"
    writer = _paused_writer(src, target, gate, 200)
    line = wait_for(lambda: _listed(env, "is still open for writing"), what="the file held")
    assert "half.md" in line and "taken once its writer closes it" in line, line
    assert target.stat().st_size == 200
    assert not any((env.home / "runs").iterdir()), "taken while its writer still wrote it"
    _open(gate)
    assert writer.wait(timeout=20) == 0
    runs = wait_for(lambda: json.loads(env.cli("status", "--json").stdout), what="the run")
    run_id = runs[0]["run_id"]
    status = env.wait_done(run_id)
    assert status["status"] == "succeeded", status
    stored = env.home / "runs" / run_id / "blueprint.submitted.md"
    assert stored.read_text() == src.read_text()
    assert not list((env.home / "rejected").glob("*"))
    assert _listed(env, "is still open for writing") is None


def test_a_file_cut_short_by_a_full_home_is_refused_saying_so(
    env: Env, tmpfs: Callable[[Path, str], Path]
) -> None:
    """F1: `cp` of a 9 KB blueprint into a full home's inbox wrote its first pages and failed
    ("No space left on device"); once there was room, the cut file was admitted with default
    options (its `[ajetd]` part was in the lost rest). It is rejected, the reason saying it
    looks cut short and why (its size, its unended last line, the home full then); nothing
    is launched, and the kept copy is what was read."""
    tmpfs(env.home, "2m")
    env.start_daemon()
    src = env.blueprint("trunc", command="true", ajetd="gpus: 0\nmax_trials: 1")
    head, ajetd = src.read_text().split("\n## [ajetd]")
    notes = "".join(f"- note {i}: what this run is for, and why, at length\n" for i in range(240))
    src.write_text(f"{head}\n## notes\n{notes}\n## [ajetd]{ajetd}")
    assert src.stat().st_size > 3 * PAGE_BYTES
    filler = fill(env.home)
    os.truncate(filler, filler.stat().st_size - 2 * PAGE_BYTES)  # two pages free
    copied = subprocess.run(
        ["cp", str(src), str(env.home / "inbox" / "trunc.md")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert copied.returncode == 1 and "No space left on device" in copied.stderr
    # the daemon meets the full home taking the file (its claim writes first), as in the walk
    wait_for(lambda: _listed(env, "No space left on device"), what="the home seen full")
    filler.unlink()
    runs = wait_for(lambda: json.loads(env.cli("status", "--json").stdout), what="the run")
    run_id = runs[0]["run_id"]
    status = env.wait_done(run_id)
    reason = status["reason"]
    assert status["status"] == "rejected", status
    assert "it looks cut short: its last line has no newline and it is " in reason, reason
    assert f"a multiple of {PAGE_BYTES}" in reason and "copy the whole file in again" in reason
    assert "$AJETD_HOME's file system was full at" in reason, reason
    assert env.launches() == []
    note = (env.home / "rejected" / f"{run_id}__trunc.why.txt").read_text()
    assert reason in note and "byte for byte: what ajetd read" in note, note
    kept = (env.home / "rejected" / f"{run_id}__trunc.md").read_bytes()
    assert len(kept) % PAGE_BYTES == 0 and src.read_bytes().startswith(kept)
    linted = env.cli("lint", str(env.home / "rejected" / f"{run_id}__trunc.md"))
    assert linted.returncode == 2 and "it looks cut short" in linted.stderr, linted.stderr


def test_a_campaign_folder_copied_in_two_steps_is_taken_whole(daemon_env: Env) -> None:
    """F4: `mkdir inbox/c; cp campaign.yaml inbox/c/; sleep 3; cp base.md inbox/c/` was taken
    a second after the first copy and refused for its base "not in the folder", with no name.
    It is held while it does not read whole (`status` says why), and taken once the base
    comes: the campaign runs, under its name."""
    env = daemon_env
    folder = campaign_folder(env, "steps", env.tmp / "campaigns" / "steps")
    target = env.home / "inbox" / "steps"
    target.mkdir()
    (target / "campaign.yaml").write_bytes((folder / "campaign.yaml").read_bytes())
    line = wait_for(lambda: _listed(env, "does not read as a whole campaign"), what="held")
    assert "steps is held" in line and "base.md is not in the folder" in line, line
    assert target.is_dir() and not list((env.home / "campaigns").glob("c-*"))
    (target / "base.md").write_bytes((folder / "base.md").read_bytes())
    wait_for(lambda: not target.exists(), what="the folder taken")
    listed = env.cli("campaign", "list", "--json")
    campaigns = json.loads(listed.stdout)
    assert [c["name"] for c in campaigns] == ["steps"], campaigns
    done = env.cli("campaign", "wait", campaigns[0]["campaign_id"], "--timeout", "60")
    # 3: completed, no best (its base, `true`, writes no validation record)
    assert done.returncode == 3, (done.stdout, done.stderr)


def test_a_folder_that_never_reads_whole_is_refused_after_its_wait_with_its_name(
    env: Env,
) -> None:
    """A folder whose base never comes is held FOLDER_WAIT_S after its last change, then
    taken and refused: the reason says why and that it was waited for, and the refused
    campaign shows the name its campaign.yaml gives (F4: none was shown)."""
    daemon = _daemon(env)
    folder = campaign_folder(env, "nobase", env.tmp / "campaigns" / "nobase")
    target = env.home / "inbox" / "nobase"
    target.mkdir()
    (target / "campaign.yaml").write_bytes((folder / "campaign.yaml").read_bytes())
    changed = (target / "campaign.yaml").stat().st_ctime
    daemon.tick(changed + 2)
    assert not daemon.campaigns.states and target.is_dir()
    assert any("nobase is held" in line for line in daemon.campaigns.held)
    assert daemon.campaigns.settle_at <= changed + 3  # looked at again within a second
    daemon.tick(changed + FOLDER_WAIT_S + 1)
    (state,) = daemon.campaigns.states.values()
    assert (state.status, state.name) == ("refused", "nobase"), state
    assert "base: the base blueprint base.md is not in the folder" in state.reason
    assert "held while it did not read as a whole campaign" in state.reason, state.reason
    assert not daemon.campaigns.held
    shown = env.cli("campaign", "status", state.campaign_id).stdout
    assert f"campaign {state.campaign_id} (nobase)" in shown, shown


def test_a_campaign_file_still_open_for_writing_holds_its_folder(env: Env) -> None:
    """A file of the folder still open for writing (a slow copy) holds the whole folder,
    however quiet; past OPEN_HOLD_S unchanged, the folder is refused saying so."""
    daemon = _daemon(env)
    folder = campaign_folder(env, "slowcp", env.tmp / "campaigns" / "slowcp")
    target = env.home / "inbox" / "slowcp"
    target.mkdir()
    for item in folder.iterdir():
        (target / item.name).write_bytes(item.read_bytes())
    with open(target / "base.md", "ab") as still:  # a writer that has not closed it yet
        changed = max(p.stat().st_ctime for p in [target, *target.iterdir()])
        daemon.tick(changed + 2)
        assert not daemon.campaigns.states
        assert any("base.md in it is still open for writing" in h for h in daemon.campaigns.held)
        daemon.tick(changed + inbox.OPEN_HOLD_S + 1)
        still.write(b"")
    (state,) = daemon.campaigns.states.values()
    assert (state.status, state.name) == ("refused", "slowcp"), state
    assert "base.md in the folder was still open for writing" in state.reason, state.reason


def test_a_file_still_open_past_the_bound_is_put_aside_unread_saying_so(env: Env) -> None:
    """A writer that never closes (`exec 3> inbox/x.md`) holds its file OPEN_HOLD_S
    unchanged: then it is put aside in rejected/, unread, the note saying it may be
    incomplete and that its writer's later writes go on into the kept copy."""
    daemon = _daemon(env)
    bp = env.blueprint("stuck", ajetd="gpus: 0").read_bytes()
    path = env.home / "inbox" / "stuck.md"
    with open(path, "wb") as writer:
        writer.write(bp[:100])
        writer.flush()
        changed = path.stat().st_ctime
        daemon.tick(changed + 0.5)
        assert not daemon.refused  # its first second: a copy under way says nothing
        assert daemon.settle_at is not None and daemon.settle_at <= changed + 1
        daemon.tick(changed + 5)
        assert path.exists() and not daemon.runs
        (line,) = daemon.refused
        assert "stuck.md is still open for writing by a process" in line, line
        daemon.tick(changed + inbox.OPEN_HOLD_S + 1)
        assert not path.exists() and not daemon.runs
        writer.write(bp[100:])
    (kept,) = (env.home / "rejected").glob("*__stuck.md")
    assert kept.read_bytes() == bp  # the writer's later writes went on into it
    note = kept.with_name(kept.name[: -len(".md")] + ".why.txt").read_text()
    assert "was still open for writing by a process" in note, note
    assert "it may be incomplete, so ajetd did not read it" in note


def test_a_file_closed_is_taken_at_once_and_one_held_open_wakes_the_loop(env: Env) -> None:
    """A file no process holds open for writing is whole (`cp` closed it, or it came while
    no daemon ran): taken at the first pass, with no second's settling; one still open is
    held, and the loop wakes itself to name it (its own sleep here is 60 s)."""
    daemon = _daemon(env)
    bp = env.blueprint("closed", ajetd="gpus: 0")
    (env.home / "inbox" / "closed.md").write_bytes(bp.read_bytes())
    daemon.tick(time.time())
    assert len(daemon.runs) == 1
    with open(env.home / "inbox" / "open.md", "wb") as writer:
        writer.write(bp.read_bytes())
        writer.flush()
        daemon.tick(time.time())
        assert len(daemon.runs) == 1
        assert daemon._sleep_for(time.time(), True) <= 1.05
    daemon.tick(time.time())
    assert len(daemon.runs) == 2


def test_the_rejected_copys_note_says_when_the_file_changed_after_it_was_read(
    tmp_path: Path,
) -> None:
    """The note beside a kept rejected file says "byte for byte" only of what was read: a
    file written to after the read (F3's writer, where no lease could say it was still
    open) is said to be the file as it is now, with how much was read."""
    path = tmp_path / "bp.md"
    path.write_bytes(b"first part\n")
    got = inbox.read_regular(path, 1 << 20)
    assert got.raw == b"first part\n" and got.writing is False and not got.changed
    assert inbox.kept_note("k.md", path, got) == (
        "k.md is the file as it came, byte for byte: what ajetd read"
    )
    with open(path, "ab") as writer:
        writer.write(b"the rest, written after\n")
        writer.flush()
        note = inbox.kept_note("k.md", path, got)
        assert "a process still held it open for writing" in note, note
    note = inbox.kept_note("k.md", path, got)
    assert note.startswith("k.md is the file as it is now (35 bytes), not what ajetd judged")
    assert "it read 11 bytes of it" in note and "byte for byte" not in note
    assert inbox.changed_since(path, got)
    with open(path, "ab") as writer:  # read while a process holds it open for writing
        during = inbox.read_regular(path, 1 << 20)
    assert during.writing is True
    assert during.unsure() == (
        "it was still open for writing by a process when ajetd read it (35 bytes read): it "
        "may be incomplete"
    )


def test_the_kernel_says_which_files_are_open_for_writing(tmp_path: Path) -> None:
    """`writers.open_for_writing`: a writer of another process counts, a reader does not;
    a link is never followed."""
    path = tmp_path / "f.md"
    path.write_text("x\n")
    assert writers.open_for_writing(path) is False
    with open(path) as _reader:
        assert writers.open_for_writing(path) is False
    held = subprocess.Popen(
        ["bash", "-c", 'exec 3>>"$1"; echo ready; read -r _', "_", str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert held.stdout is not None and held.stdout.readline() == b"ready\n"
    assert writers.open_for_writing(path) is True
    held.communicate(b"\n", timeout=10)
    assert writers.open_for_writing(path) is False
    (tmp_path / "link.md").symlink_to(path)
    assert writers.open_for_writing(tmp_path / "link.md") is None


# -- the signs of a cut (pure) ----------------------------------------------------------------
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=300)


@given(_TEXT)
def test_a_text_whose_last_line_is_ended_never_looks_cut(text: str) -> None:
    for end in ("\n", "\r\n", "\r"):
        assert cut_sign((text + end).encode()) is None
        assert not unended((text + end).encode())


@given(st.integers(1, 3), st.binary(min_size=1, max_size=1), st.binary(max_size=2000))
def test_a_whole_number_of_pages_without_a_newline_looks_cut(
    pages: int, last: bytes, start: bytes
) -> None:
    if last in (b"\n", b"\r", b"\x00"):
        last = b"y"
    size = pages * PAGE_BYTES
    raw = (start + b"x" * size)[: size - 1] + last
    sign = cut_sign(raw)
    assert sign is not None and f"it is {size} bytes, a multiple of" in sign


@given(_TEXT, st.characters(min_codepoint=0x80, blacklist_categories=("Cs",)))
def test_a_character_cut_in_the_middle_looks_cut(text: str, last: str) -> None:
    raw = (text + last).encode()
    width = len(last.encode())
    for keep in range(1, width):
        assert cut_sign(raw[: len(raw) - width + keep]) is not None
    if len(raw) % PAGE_BYTES:
        assert cut_sign(raw) is None  # whole: its last character is all there


@pytest.mark.parametrize(
    ("text", "encoding"),
    [("résumé of the run, café", "cp1252"), ("运行测试中", "gbk"), ("é", "cp1252")],
)
def test_a_file_in_another_encoding_is_not_said_to_end_mid_character(
    text: str, encoding: str
) -> None:
    """A GBK or cp1252 file's last byte may look like a UTF-8 lead byte: it is not UTF-8 up to
    an unfinished last character, so no cut is read into it (review92 #3); a lone `é` (one
    byte, a UTF-8 character's first byte as well) cannot be told from a cut and is said to
    be one, with how to make it acceptable."""
    raw = text.encode(encoding)
    sign = cut_sign(raw)
    if len(text) > 1:
        assert sign is None, sign
    else:
        assert sign is not None and "end it with a newline" in sign


def test_a_rejection_for_missing_parts_of_an_unended_file_says_it_may_be_cut(env: Env) -> None:
    """A file cut at any other byte (an `scp` killed part way) has no shape to tell it by: its
    rejection for the parts it lacks says that its last line has no newline, so a cut is not
    read as the author's mistake alone."""
    daemon = _daemon(env)
    text = env.blueprint("cutmid", ajetd="gpus: 0").read_text()
    (env.home / "inbox" / "cutmid.md").write_text(text[: text.index("[exp_launch_command]") + 9])
    daemon.tick(time.time())
    (run,) = daemon.runs.values()
    assert run.status is not None and run.status.value == "rejected", run
    assert "exp_launch_command: missing" in run.reason, run.reason
    assert "its last line has no newline: if the file was cut short" in run.reason
    assert "copy the whole file in again" in run.reason


def test_where_leases_say_nothing_a_file_settles_as_before(tmp_path: Path) -> None:
    """On a file system whose leases are not the kernel's generic ones (NFSv4 and CIFS refuse
    every lease without a delegation, whoever writes: every file would look open), the
    answer is "not known" and a file is taken once renamed in or closed (`ready`), or a second
    after its last change. ramfs stands in here: local, but not in `LEASES_TELL`."""
    if os.geteuid() != 0:
        pytest.skip("mounting a ramfs needs root (CI runs as root)")
    home_dir = tmp_path / "ram"
    home_dir.mkdir()
    mounted = subprocess.run(["mount", "-t", "ramfs", "ramfs", str(home_dir)], check=False)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a ramfs here")
    try:
        from ajetd.adapters.store import Home

        home = Home(home_dir / "home")
        home.ensure()
        path = home.inbox / "x.md"
        with open(path, "wb") as writer:
            writer.write(b"# x\n")
            writer.flush()
            assert writers.fs_type(path.stat().st_dev) == "ramfs"
            fd = os.open(path, os.O_RDONLY)
            try:  # by the mount's id too (btrfs: its st_dev is no mount's, review92 #2)
                assert writers.fd_fs_type(fd) == "ramfs"
            finally:
                os.close(fd)
            assert writers.open_for_writing(path) is None
            changed = path.stat().st_ctime
            early = inbox.scan(home, set(), changed + 0.5)
            assert not early.found and early.settle_at == changed + inbox.SETTLE_S
            assert [c.path for c in inbox.scan(home, {"x.md"}, changed + 0.5).found] == [path]
            assert [c.path for c in inbox.scan(home, set(), changed + 1.5).found] == [path]
    finally:
        subprocess.run(["umount", "-l", str(home_dir)], check=False)
