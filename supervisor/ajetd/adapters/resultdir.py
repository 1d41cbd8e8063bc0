"""Checks of a result dir on this machine: can a new run's results go there, is it shared
with much else, is its disk full, does it hold what ajetd writes, is a live run or ajetd's own
home there.

Split from `hosts.preflight` so that the checks of a folder need the standard library and
ajetd's own adapters alone: they run where nothing else of a run is looked at (the daemon's
admission, `ajetd lint`, a rebuild after a restart), and in a test as another user than the
one who installed ajetd's dependencies.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Collection, Mapping
from pathlib import Path

from ajetd.adapters import diskfull
from ajetd.adapters.reach import NEVER_THROUGH, Unreachable, path_problem
from ajetd.adapters.regular import NotRegularError, read_small
from ajetd.adapters.samefile import one_file_as
from ajetd.core import jsontext, resultfiles
from ajetd.core.naming import RUN_ID

FLAG = resultfiles.FINISH_FLAG


def earlier_rejection(result_dir: Path) -> str | None:
    """The run id of a rejection report that is all `result_dir` holds of earlier runs.

    Such a report only says a blueprint was invalid; a fixed blueprint may use the same dir,
    and the report is moved aside (never deleted) rather than blocking it.
    """
    try:
        flag = jsontext.loads(read_small(result_dir / FLAG))
    except (OSError, ValueError, NotRegularError):
        return None
    if not isinstance(flag, dict) or flag.get("status") != "rejected":
        return None
    try:
        with os.scandir(result_dir / resultfiles.LOGS) as entries:
            if any(resultfiles.is_trial_log(e.name) for e in entries):
                return None  # a run's output: no rejection's alone
    except FileNotFoundError:
        pass
    except OSError:  # a logs/ that is no folder, or cannot be read: not a rejection's alone
        return None
    run_id = str(flag.get("run_id") or "")
    return run_id if RUN_ID.match(run_id) else None


def unexpanded(path: str) -> str:
    """A hint for `$HOME/x`, `${DATA}/x`: a blueprint's paths are taken as written."""
    if path.startswith("$"):
        return " (variables such as $HOME are not expanded: write the path in full, or ~/...)"
    return ""


def in_use(result_dir: str, busy_dirs: Collection[str]) -> bool:
    """Whether `result_dir` is a live run's result dir, however it is spelt (`x/.`, `x//`,
    a symlink to it, a bind mount of it: `samefile.one_file_as`): that run alone writes there."""
    same = one_file_as(result_dir)  # resolved once, not per busy folder
    return any(same(busy) for busy in busy_dirs if busy)


def in_use_problem(result_dir: str, live: Mapping[str, str]) -> str | None:
    """Why `result_dir` is refused where a live run (`live`: each one's result dir and id)
    writes there: naming that run and what to do; None where none does."""
    for busy, run_id in live.items():
        if in_use(result_dir, [busy]):
            return (
                f"exp_result_dir: {result_dir} is in use by live run {run_id} (two runs never "
                "share one: choose another result dir, or submit this once that run ended: "
                f"`ajetd wait {run_id}`)"
            )
    return None


def in_home(result_dir: str, home: Path) -> bool:
    """Whether `result_dir` is ajetd's home or lies in it, however it is spelt (a symlink)."""
    real, root = os.path.realpath(result_dir), os.path.realpath(home)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def placement_problem(result_dir: str, live: Mapping[str, str], home: Path) -> str | None:
    """Why `result_dir` is refused for where it lies rather than what it holds: a live run
    writes there (`in_use_problem`), or it is in ajetd's own home, whose inbox takes any
    `.md` dropped there as a blueprint (a run's results.md and trials.md were taken as two
    more, and moved out of its result dir) and whose `runs/` holds the records. None where
    neither."""
    if in_home(result_dir, home):
        return (
            f"exp_result_dir: {result_dir} lies in $AJETD_HOME {home}, ajetd's own folder (its "
            "inbox takes any .md as a blueprint, its runs/ holds the records): choose a result "
            "dir outside it"
        )
    return in_use_problem(result_dir, live)


def placed_first(
    result_dir: str, problems: list[str], live: Mapping[str, str], home: Path
) -> list[str]:
    """`problems` with the result dir's placement problem (`placement_problem`) first, where
    there is one, in place of what the check of its files said: a live run's dir holds that
    run's files, and "in use by live run X" says why better than the list of them. Looked at
    even where the blueprint did not resolve (a dir holding files does not)."""
    shared = placement_problem(result_dir, live, home) if os.path.isabs(result_dir) else None
    if shared is None:
        return problems
    return [shared, *(p for p in problems if not p.startswith("exp_result_dir:"))]


def result_dir_problem(
    result_dir: str, own: Collection[str] = (), also: Collection[str] = ()
) -> str | None:
    """Why `result_dir` cannot receive a new run's results, or None if it can: it cannot be
    reached or made (`path_problem`), or it already holds what ajetd would write there
    (`earlier_files`; `also`: what this run adds, its NeMo-RL dirs; `own`: the run's own files
    from its first admission, where it is admitted again)."""
    path = Path(result_dir)
    if not path.is_absolute():
        return f"exp_result_dir: {result_dir} is not an absolute path{unexpanded(result_dir)}"
    if os.path.realpath(result_dir) == "/":  # results.md, logs/ and finish.flag in the root
        return "exp_result_dir: / is the filesystem's root: give the run a folder of its own"
    try:
        reached = path_problem(path)
        if isinstance(reached, Unreachable):
            hint = NEVER_THROUGH if reached.dangling else ""
            return f"exp_result_dir: {reached.text}{hint}"
        if reached is not None:  # the first part of it that is not there, made by ajetd
            parent = reached.parent
            if not os.access(parent, os.W_OK | os.X_OK):
                return (
                    f"exp_result_dir: cannot create {result_dir} ({parent} is not a writable "
                    "directory)"
                )
            return None
        if not path.is_dir():
            return f"exp_result_dir: {result_dir} exists and is not a directory"
        if not os.access(path, os.W_OK | os.X_OK):
            return f"exp_result_dir: {result_dir} is not writable"
        return holds_problem(result_dir, earlier_files(path, own, also))
    except OSError as exc:  # what the checks above did not foresee: said, never raised
        return f"exp_result_dir: {result_dir} cannot be checked: {exc.strerror or exc}"


# the filesystem's own folders (FHS): a run's results.md, logs/ and finish.flag among the
# system's files, where a typo or a copy-paste left `exp_result_dir: /opt` or `/var`
_SYSTEM_FOLDERS = frozenset(
    {
        *("/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/media", "/mnt", "/opt", "/proc"),
        *("/run", "/sbin", "/srv", "/sys", "/usr", "/usr/bin", "/usr/local", "/var"),
    }
)


# where a Python keeps what pip installs, by the kind of Python it is: the folder above the
# python's bin/ is a venv (`pyvenv.cfg`), a conda environment (`conda-meta/`), or a Python
# installed on its own (pyenv's, a built one: its standard library in `lib/python3.N/`); each
# is rewritten by pip and rebuilt whole, results.md and logs/ with it
_VENV = "the run's venv, which pip and uv rewrite (and `rm -rf` to rebuild it)"
_CONDA = "the run's conda environment, which conda and pip rewrite (and `conda env remove` deletes)"
_INSTALLED = (
    "the run's Python installation (the folder above its bin/, which holds its lib/python3.N), "
    "which pip rewrites and a reinstall replaces"
)
_MINORS = range(6, 30)  # python3.6 .. python3.29: a few stats, never a listing of lib/


def _python_home(above: str) -> str:
    """What the folder above a python's `bin/` is (`_VENV`, `_CONDA`, `_INSTALLED`), or ""
    where it is none of them, or the system's own (`/usr`: said as a system folder)."""
    if above in _SYSTEM_FOLDERS or above == "/":
        return ""
    if os.path.isfile(os.path.join(above, "pyvenv.cfg")):
        return _VENV
    if os.path.isdir(os.path.join(above, "conda-meta")):
        return _CONDA
    lib = os.path.join(above, "lib")
    if any(os.path.isfile(os.path.join(lib, f"python3.{n}", "os.py")) for n in _MINORS):
        return _INSTALLED
    return ""


def _venv_folders(venv_exe: str) -> tuple[str, str, str]:
    """The folder of the python a run uses (`bin/`), the environment it belongs to (the folder
    above, where `_python_home` says what it is; "" else) and what it is; real paths, the
    python itself not followed (a venv's is a link to the system's)."""
    if not venv_exe or not os.path.isabs(venv_exe):
        return "", "", ""
    bin_dir = os.path.realpath(os.path.dirname(venv_exe))
    above = os.path.dirname(bin_dir)
    what = _python_home(above)
    return bin_dir, above if what else "", what


def _below(real: str, folder: str) -> bool:
    """Whether the real path `real` lies below `folder` (a real path; "": nothing is)."""
    return bool(folder) and real.startswith(folder.rstrip("/") + "/")


def _shared_what(real: str, code: str, venv_exe: str) -> str | None:
    """What else the result dir `real` (a real path) is, where that is not a run's own."""
    shared = dict.fromkeys(("/tmp", "/var/tmp", "/dev/shm"), "a folder every program shares")  # noqa: S108 - names compared, nothing made there
    shared |= {"/home": "the folder of every user's home"}
    shared[os.path.realpath(os.path.expanduser("~"))] = "your home folder"
    bin_dir, venv, venv_is = _venv_folders(venv_exe)
    if real in shared:
        return shared[real]
    if real in _SYSTEM_FOLDERS:
        return "a folder of the system's own"
    if code and real == code:
        return (
            "the codebase itself: its git tree, which runs record as their provenance, is "
            "then dirty with them"
        )
    if _below(real, code):
        return (
            "inside the codebase: unless git ignores it, they make the tree the next run "
            "records as its provenance dirty"
        )
    if bin_dir and real == bin_dir:
        return "the folder of the run's python (exp_venv_exe), on the PATH of every run of it"
    if venv and (real == venv or _below(real, venv)):
        return f"inside {venv_is}"
    try:
        mode = os.stat(real).st_mode
    except OSError:  # not there yet: ajetd makes it, a folder of its own
        return None
    if mode & 0o1002 == 0o1002:  # world-writable and sticky, as /tmp is (a /scratch)
        return "a folder every user writes into (world-writable, sticky, as /tmp is)"
    return None


def shared_result_dir(result_dir: str, codebase: str, venv_exe: str = "") -> list[str]:
    """A warning where the result dir is a folder shared with much else (`/tmp`, a folder
    every user writes into, the home, a system folder), the codebase, or the run's venv or
    its `bin/` (`codebase`, `venv_exe`: "" where they are on another machine): ajetd writes
    results.md, trials.md, run.json, logs/ and finish.flag there, among what else is in it,
    and in the codebase they make the git tree it records as the run's provenance dirty
    (walk 86; walk97 F12: the venv's `bin/`, a system folder). A folder holding what ajetd
    would write is refused (`result_dir_problem`), never written over."""
    real = os.path.realpath(result_dir)
    code = os.path.realpath(codebase) if codebase else ""
    what = _shared_what(real, code, venv_exe)
    if what is None:
        return []
    return [
        f"exp_result_dir: {result_dir} is {what}; ajetd writes results.md, trials.md, run.json, "
        "logs/ and finish.flag there: give the run a folder of its own (e.g. /data/results/<name>)"
    ]


def full_disk(result_dir: str) -> list[str]:
    """A warning where the result dir's disk (of the folder it will be made in, where it is
    not there yet) is full: the daemon would admit the run, its output would be lost while
    the disk stays full (only its reports are held until there is room)."""
    missing = path_problem(Path(result_dir))  # (no problem: the caller asked first)
    folder = missing.parent if isinstance(missing, Path) else Path(result_dir)
    free = diskfull.free_bytes(folder)
    if free is None or free >= diskfull.FULL_BELOW_BYTES:
        return []
    return [
        f"exp_result_dir: {result_dir} is on a full disk ({diskfull.free_space(folder)} free "
        f"in {folder}): what the run prints while it stays full is lost from its log (its "
        "reports wait until there is room); free space, or choose a result dir on another disk"
    ]


MAX_NAMED = 5  # trial logs named in a refusal (the rest counted as `...`)


def earlier_files(path: Path, own: Collection[str] = (), also: Collection[str] = ()) -> list[str]:
    """What the existing folder `path` holds of the files ajetd writes into a new run's
    result dir (`resultfiles`: the reports, provenance.diff, the pictures, `logs/trial-N.log`,
    and `also`), however it is there (a file, a folder, a link, a dangling one), except `own`
    and an earlier rejection's report, which admission moves aside (`move_rejection_aside`).
    finish.flag named first."""
    skip = set(own)
    if earlier_rejection(path) is not None:
        skip.update(resultfiles.REPORTS)
    names = [n for n in (*resultfiles.WRITTEN, *also) if n not in skip]
    found = sorted((n for n in names if os.path.lexists(path / n)), key=lambda n: n != FLAG)
    logs = path / resultfiles.LOGS
    if os.path.islink(logs) or (os.path.lexists(logs) and not logs.is_dir()):
        found.append(f"{resultfiles.LOGS} (not a folder of its own: ajetd makes it)")
    elif logs.is_dir():
        with os.scandir(logs) as entries:  # bounded: a few named, one more says "..."
            named = (e.name for e in entries if resultfiles.is_trial_log(e.name))
            trial_logs = list(itertools.islice(named, MAX_NAMED + 1))
        shown = [f"{resultfiles.LOGS}/{n}" for n in sorted(trial_logs)[:MAX_NAMED]]
        found += shown + (["..."] if len(trial_logs) > MAX_NAMED else [])
    return found


def holds_problem(result_dir: str, found: list[str]) -> str | None:
    """The refusal of a result dir that holds `found`, of what ajetd would write, or None."""
    if not found:
        return None
    return (
        f"exp_result_dir: {result_dir} already holds {', '.join(found)}, which ajetd writes "
        "for a run itself (an earlier run's, or yours): ajetd never overwrites or appends to "
        "a file it did not write for this run; choose another exp_result_dir, or move them "
        "out of it"
    )


def val_file_problem(val_path: str, key: str) -> str | None:
    """Why the run's program could not write its val file `val_path` (the config's `key`)
    here, or None: an existing file not writable, a folder in its place, or the folder it is
    to be made in not writable (a read-only or another user's checkout: AgentJet's relative
    `./saved_val_result/x.md` lands in the codebase). The program would fail at its first
    validation, after loading its model; lint said nothing (walk98 F15)."""
    path = Path(val_path)
    if not path.is_absolute():
        return None
    try:
        reached = path_problem(path)
        if isinstance(reached, Unreachable):
            why = reached.text
        elif reached is not None:  # made by the program: the folder it is made in
            parent = reached.parent
            if os.access(parent, os.W_OK | os.X_OK):
                return None
            why = f"{parent} is not writable by this user"
        elif path.is_dir():
            why = "it is a folder"
        elif os.access(path, os.W_OK):
            return None
        else:
            why = "it is not writable by this user"
    except OSError as exc:  # what the checks above did not foresee: said, never raised
        why = f"it cannot be checked: {exc.strerror or exc}"
    return (
        f"exp_yaml_path: {key}: the val file {val_path} cannot be written ({why}): the "
        "program would fail at its first validation; point it at a file you may write, e.g. "
        f'`[ajetd] yaml_overrides: ["{key}=<your result dir>/val_results.md"]`'
    )
