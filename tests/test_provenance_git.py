"""What a run's record says of its codebase's git state where git will not say it: a
repository another user owns (a team's shared checkout, git >= 2.35.2 refuses it without
`safe.directory`), no git program, no repository. walk98 F5: the first two were recorded as
"the codebase is not a git repository", a false statement in the record a researcher reads
to reproduce the run; now git's own reason and its fix are said."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ajetd.adapters import git


def _repo(path: Path) -> Path:
    path.mkdir()
    (path / "train.py").write_text("print(1)\n")
    who = ["-c", "user.name=t", "-c", "user.email=t@t"]
    for argv in (["init", "-q"], ["add", "."], [*who, "commit", "-qm", "one"]):
        subprocess.run(["git", *argv], cwd=path, check=True, capture_output=True)
    return path


@pytest.fixture
def no_global_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A git with no global or system config: no `safe.directory = *` of this machine's."""
    empty = tmp_path / "gitconfig"
    empty.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.mark.usefixtures("no_global_git")
def test_a_repository_another_user_owns_is_said_with_its_fix(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "shared")
    other = 65534 if os.geteuid() == 0 else None  # nobody
    if other is None:
        pytest.skip("making a repository another user owns needs root")
    for root, dirs, files in os.walk(repo):
        for name in (*dirs, *files):
            os.lchown(os.path.join(root, name), other, -1)
    os.lchown(repo, other, -1)
    prov, diff = git.collect(str(repo))
    assert not prov.git and diff == b""
    assert "not a git repository" not in prov.note, prov.note
    assert "dubious ownership" in prov.note and "another user owns" in prov.note
    assert f"git config --global --add safe.directory {repo}" in prov.note, prov.note


@pytest.mark.usefixtures("no_global_git")
def test_no_repository_and_no_git_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert git.collect(str(plain))[0].note == "the codebase is not a git repository"
    repo = _repo(tmp_path / "repo")
    assert git.collect(str(repo))[0].git
    bare = tmp_path / "bin"  # bash and what the script needs, git not among them
    bare.mkdir()
    for tool in ("bash", "head", "cut", "sed", "printf"):
        found = shutil.which(tool)
        if found:
            (bare / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(bare))
    note = git.collect(str(repo))[0].note
    assert note == "git information could not be read: no git program on the PATH", note


def test_what_git_said_is_bounded() -> None:
    """A reason of any length is one short line in the record."""
    prov, _ = git.parse(4, b"fatal: " + b"x" * 300 + b"\n" * 3)
    assert prov.note.startswith("git information could not be read: xxx") and len(prov.note) < 400
