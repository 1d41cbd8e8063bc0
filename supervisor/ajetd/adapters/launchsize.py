"""A launch's one tmux call, its parts and its size, known before any launch: `start_trial`
gives `session_parts` to `Tmux.new_session`; admission and `ajetd lint` measure the same call
(`launch_problem`), so a blueprint whose paths make it too long for tmux is refused before a
trial, never failed at its launch (walk98 F2). Here, not in the daemon: the CLI's lint
imports no daemon internals."""

from __future__ import annotations

import os

from ajetd.adapters.store import Home
from ajetd.adapters.tmux import TMUX_CALL_MAX, Tmux, call_size, too_long
from ajetd.adapters.trialpaths import RunPaths, paths
from ajetd.core.model import Run
from ajetd.core.naming import MAX_SESSION, window_name
from ajetd.core.options import Options

SessionParts = tuple[str, str, str, str, str, str, "str | None"]


def session_parts(run: Run, p: RunPaths, session: str, number: int) -> SessionParts:
    """What `Tmux.new_session` is given to make trial `number`'s session (`start_trial`),
    and what `launch_problem` measures the same call by (`Tmux.session_args`)."""
    real = run.result_real or None
    return (
        session,
        run.codebase_dir,
        str(p.script),
        str(p.log),
        window_name(number),
        str(p.spare),
        real,
    )


def launch_problem(home: Home, run: Run, options: Options) -> str | None:
    """Why the run could never be launched, known before it is: its launch's one tmux call
    (`start_trial`: the session, its script and the log's writer) would pass tmux's limit on
    a message (`TMUX_CALL_MAX`), which the paths of the home, the codebase and the result dir
    make it where they are long together (each may be up to 4 KB: walk98 F2, `lint` said ok
    and the run failed at its launch). The call is built as the launch builds it, for the
    run's last trial (the most digits) and the longest session name; `run` needs its id,
    codebase and result dir (and where that leads). None where it fits."""
    last = options.max_trials + len(options.stages)
    p = paths(home, run, last)
    size = call_size(Tmux.session_args(*session_parts(run, p, "x" * MAX_SESSION, last)))
    if size <= TMUX_CALL_MAX:
        return None
    named = (
        ("the home ($AJETD_HOME)", str(home.root)),
        ("the codebase (exp_codebase_dir)", run.codebase_dir),
        ("the result dir (exp_result_dir)", run.result_dir),
    )
    said = [f"{what} {_elided(path)} ({len(path.encode())} bytes)" for what, path in named]
    return f"its launch's {too_long(size, 'of ' + ', '.join(said[:-1]) + ' and ' + said[-1])}"


def admitted_launch_problem(
    home: Home, run_id: str, codebase_dir: str, result_dir: str, options: Options
) -> str | None:
    """`launch_problem` of a blueprint about to be admitted (or linted: `run_id` any id of
    the length a run's has), its paths resolved (`preflight.Resolved`), its record made as
    admission makes it (`admission._accepted`: the result dir and where it leads)."""
    run = Run(
        run_id=run_id,
        source="",
        submitted_at=0.0,
        codebase_dir=codebase_dir,
        result_dir=result_dir,
        result_real=os.path.realpath(result_dir),
    )
    return launch_problem(home, run, options)


def _elided(path: str, keep: int = 40) -> str:
    """A long path shown by its two ends (its whole length is said beside it)."""
    return path if len(path) <= 2 * keep + 3 else f"{path[:keep]}...{path[-keep:]}"
