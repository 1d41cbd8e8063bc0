"""The git a campaign asks for (seed 002, with `branch_prefix`): each experiment in its own
worktree on its own branch, its patch applied and committed as its hypothesis commit.

git is only ever asked to read or to add (a worktree, a branch, a commit), never to overwrite,
reset or stash: where going on would need anything else, the answer is why not, and what was
already made (a branch, a worktree) is kept for a person to look at.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path


def git(repo: str, *args: str) -> tuple[int, str]:
    """One git command, no shell; (exit code, stdout or stderr)."""
    done = subprocess.run(
        ["git", "-C", repo, *args], capture_output=True, text=True, timeout=120, check=False
    )
    return done.returncode, (done.stdout if done.returncode == 0 else done.stderr).strip()


def baseline(codebase: str) -> tuple[str, str, str]:
    """The repository holding `codebase` and its HEAD, which the experiments branch from:
    (top, head, "") or ("", "", why not: no repository, or uncommitted changes)."""
    code, top = git(codebase, "rev-parse", "--show-toplevel")
    if code != 0:
        return "", "", f"branch_prefix needs a git repository: {top}"
    _, dirty = git(top, "status", "--porcelain", "--untracked-files=no")
    if dirty:
        return (
            "",
            "",
            (
                f"{top} has uncommitted changes ({len(dirty.splitlines())} file(s)); the "
                "experiments branch from a commit and would not contain them. Commit or "
                "stash them yourself (ajetd never stashes or resets), then submit again"
            ),
        )
    _, head = git(top, "rev-parse", "HEAD")
    return top, head, ""


def taken(repo: str, branch: str, path: Path) -> str:
    """Why an experiment cannot have `branch` and its worktree at `path` ("" when it can):
    one of them exists, and git is never asked to overwrite. Checked where the experiment is
    made, and before: `ajetd campaign FOLDER` and `campaign add` refuse such a one at once."""
    code, _ = git(repo, "rev-parse", "--verify", "-q", f"refs/heads/{branch}")
    if code == 0 or os.path.lexists(path):
        return (
            f"branch {branch} or worktree {path} already exists; ajetd never "
            "overwrites: choose another name or branch_prefix"
        )
    return ""


@dataclass(frozen=True)
class Worktree:
    """What was made: the branch and the commit it starts from, then the hypothesis commit."""

    branch: str = ""
    parent: str = ""
    commit: str = ""


def hypothesis_worktree(
    repo: str, branch: str, path: Path, start: str, patch: Path | None, message: str
) -> tuple[Worktree, str]:
    """A new worktree at `path` on a new `branch` from `start`, with `patch` applied and one
    commit saying `message`: (what was made, "") or (what was made so far, why not)."""
    code, parent = git(repo, "rev-parse", "--verify", f"{start}^{{commit}}")
    if code != 0:
        return Worktree(), f"cannot start from {start!r}: {parent}"
    there = taken(repo, branch, path)
    if there:
        return Worktree(), there
    path.parent.mkdir(parents=True, exist_ok=True)
    code, out = git(repo, "worktree", "add", "-b", branch, str(path), parent)
    if code != 0:
        return Worktree(), f"git worktree add failed: {out}"
    made = Worktree(branch, parent)
    if patch is not None:
        code, out = git(str(path), "apply", "--index", str(patch))
        if code != 0:
            return made, f"patch {patch.name} does not apply on {parent[:12]}: {out}"
    code, out = git(str(path), *_identity(repo), "commit", "-q", "--allow-empty", "-m", message)
    if code != 0:
        return made, f"the hypothesis commit failed: {out}"
    return Worktree(branch, parent, git(str(path), "rev-parse", "HEAD")[1]), ""


def _identity(repo: str) -> list[str]:
    """An author for the hypothesis commit when the repository has none configured."""
    if git(repo, "config", "user.email")[0] == 0:
        return []
    return ["-c", "user.name=ajetd", "-c", "user.email=ajetd@localhost"]


def is_ancestor(repo: str, ancestor: str, commit: str) -> bool:
    """Whether `ancestor` is `commit` or one of its ancestors (`git merge-base
    --is-ancestor`: exit 0 yes, 1 no; anything else, such as an unknown commit, is no)."""
    return git(repo, "merge-base", "--is-ancestor", ancestor, commit)[0] == 0
