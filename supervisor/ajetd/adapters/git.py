"""Where a run's code came from: git commit, branch, dirty state and the uncommitted diff.

Collected once, when the run is admitted (what launches is the codebase as it is then), by one
bash script run here or on the run's SSH host; `parse` is pure. A dirty tree's diff (tracked
changes against HEAD, binary-safe) is saved as `provenance.diff` in the result dir; untracked
files are listed, not copied. A codebase that is not a git repository is recorded as such.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import subprocess
from collections.abc import Callable

from ajetd.core.runparts import Provenance

Runner = Callable[[str], "tuple[int, bytes]"]  # a bash script -> (exit code, stdout)
_NOT_GIT = 4
_NO_GIT = 5  # no git program where the script ran
_DIFF = b"\n--ajetd-diff--\n"
_OWN_COPY = re.compile(r"\.ajetd-[A-Za-z0-9_-]{1,60}\.[A-Za-z0-9]{1,10}\"?$")


def script(codebase: str) -> str:
    q = shlex.quote(codebase)
    return (
        f"cd {q} || exit 3\n"
        f"command -v git >/dev/null 2>&1 || exit {_NO_GIT}\n"
        # git's own words where it will not say (no repository, or one it refuses to read:
        # another user's, `safe.directory`), the first lines only
        "why=$(git rev-parse --is-inside-work-tree 2>&1 >/dev/null) || "
        f"{{ printf '%s\\n' \"$why\" | head -n 4 | cut -c 1-300; exit {_NOT_GIT}; }}\n"
        'echo "commit=$(git rev-parse HEAD 2>/dev/null)"\n'
        'echo "branch=$(git rev-parse --abbrev-ref HEAD 2>/dev/null)"\n'
        'echo "toplevel=$(git rev-parse --show-toplevel 2>/dev/null)"\n'
        "git status --porcelain=v1 --untracked-files=normal 2>/dev/null | sed 's/^/status=/'\n"
        "printf '\\n--ajetd-diff--\\n'\n"
        "git diff HEAD --binary 2>/dev/null\n"
    )


def local_runner(text: str) -> tuple[int, bytes]:
    done = subprocess.run(["bash", "-c", text], capture_output=True, timeout=60, check=False)
    return done.returncode, done.stdout


def parse(code: int, out: bytes) -> tuple[Provenance, bytes]:
    """The provenance record and the diff bytes (empty when clean or not git)."""
    if code == _NOT_GIT:
        return Provenance(note=_not_read(out.decode(errors="replace"))), b""
    if code == _NO_GIT:
        return Provenance(note="git information could not be read: no git program on the PATH"), b""
    if code != 0:
        return Provenance(note=f"git information could not be read (exit {code})"), b""
    head, _, diff = out.partition(_DIFF)
    fields: dict[str, str] = {}
    status: list[str] = []
    for line in head.decode(errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key == "status":
            status.append(value)
        elif key:
            fields[key] = value
    # ajetd's own copies of a config (`<stem>.ajetd-<tag><suffix>`, this run's or another's,
    # written beside the user's file) are no change to the code: a tree whose only news they
    # are is clean (walk 89: every AgentJet run with a preflight fix read `(dirty)`)
    status = [s for s in status if not (s.startswith("??") and _OWN_COPY.search(s))]
    untracked = [s[3:] for s in status if s.startswith("??")]
    return Provenance(
        git=True,
        commit=fields.get("commit", "") or "(no commit yet)",
        branch=fields.get("branch", ""),
        toplevel=fields.get("toplevel", ""),
        dirty=bool(status),
        changed=len(status) - len(untracked),
        untracked=tuple(untracked[:50]),
    ), diff


def _not_read(said: str) -> str:
    """The note for a codebase git would not read, from what git said (`said`): not a
    repository, or one it refuses (another user's: `safe.directory`, whose fix it names;
    walk98 F5: a team's shared checkout was recorded as no repository, its commit and
    uncommitted change lost from the record)."""
    first = next((line.strip() for line in said.splitlines() if line.strip()), "")
    if not first or "not a git repository" in first:
        return "the codebase is not a git repository"
    if "dubious ownership" in first:
        folder = first.partition(" at ")[2].strip().strip("'")
        return (
            f"git information could not be read: git refuses a repository another user owns "
            f"({first.removeprefix('fatal: ')}); to have it recorded, run as the daemon's user: "
            f"git config --global --add safe.directory {shlex.quote(folder or '<the codebase>')}"
        )
    return f"git information could not be read: {first.removeprefix('fatal: ')}"


def collect(codebase: str, runner: Runner = local_runner) -> tuple[Provenance, bytes]:
    try:
        code, out = runner(script(codebase))
    except (OSError, subprocess.SubprocessError) as exc:
        return Provenance(note=f"git information could not be read: {exc}"), b""
    return parse(code, out)


def blueprint_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
