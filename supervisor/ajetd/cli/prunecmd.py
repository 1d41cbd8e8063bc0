"""`ajetd prune`: remove the folders of runs that ended long ago from the home.

Without it `runs/` (and `rejected/`) grew for ever, and the obvious `rm -rf runs/<id>` left a
run's tmux session open for good where its keep time had not run out, or brought the folder
back as a record alone when the daemon closed that session (walk 88, F10). The decisions are
`core.prune.kept_because` and, for `rejected/`, `core.prune.rejected_to_prune`; only what they
allow is removed, each run folder renamed aside before it is deleted (`Home.remove_run`). The
result dirs are the user's: never touched.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Iterable

import click

from ajetd.adapters.store import Home
from ajetd.cli.common import echo_json, json_option, open_home
from ajetd.core.errors import AjetdError
from ajetd.core.model import Run
from ajetd.core.prune import (
    CopyFile,
    RejectedFile,
    config_copies,
    copies_folder,
    kept_because,
    rejected_to_prune,
)

DEFAULT_AGE = "30d"


def _campaign_runs(home: Home) -> dict[str, str]:
    """Every run a campaign counts as an experiment (run id: campaign id). A campaign record
    that cannot be read stops the prune: which runs it holds cannot be told."""
    from ajetd.hosts.campaignfolder import load_state

    found: dict[str, str] = {}
    root = home.root / "campaigns"
    if not root.is_dir():
        return found
    for folder in sorted(root.iterdir()):
        state_file = folder / "state.json"
        if not state_file.exists():
            continue
        try:
            state = load_state(state_file)
        except (OSError, ValueError, TypeError) as exc:
            raise click.ClickException(
                f"campaign record {state_file} unreadable ({exc}): which runs it holds "
                "cannot be told, so nothing was pruned"
            ) from exc
        for exp in state.experiments:
            if exp.run_id:
                found[exp.run_id] = state.campaign_id
    return found


def _rejected_files(home: Home) -> list[RejectedFile]:
    """What `rejected/` holds (a refused blueprint, its `.why.txt`), as `lstat` saw each: no
    link followed. An entry gone meanwhile is left out."""
    found: list[RejectedFile] = []
    if not home.rejected.is_dir():
        return found
    for path in sorted(home.rejected.iterdir()):
        try:
            info = path.lstat()
        except OSError:
            continue
        found.append(RejectedFile(path.name, info.st_mtime, stat.S_ISREG(info.st_mode)))
    return found


def _copies(run: Run, others: Iterable[Run]) -> list[str]:
    """The paths of `run`'s config copies that go with its folder (`core.prune.config_copies`
    judges each entry beside its config, as `lstat` sees it), less any another run still
    names (a blueprint that took a copy as its exp_yaml_path, or runs it)."""
    where = copies_folder(run)
    if where is None:
        return []
    folder = where[0]
    files = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                files.append(CopyFile(entry.name, stat.S_ISREG(st.st_mode), st.st_uid, st.st_mtime))
    except OSError:  # the codebase moved or went: nothing of it is removed
        return []
    named = " ".join(f"{o.config_path} {o.launch_command}" for o in others)
    return [
        os.path.join(folder, name)
        for name in config_copies(run, files, os.getuid())
        if name not in named
    ]


def _prune_runs(
    home: Home, now: float, age: float, campaign_of: dict[str, str], dry_run: bool
) -> tuple[list[str], dict[str, str], dict[str, str], list[str]]:
    """Remove (`dry_run`: only name) the runs `kept_because` allows, each with its config
    copies (`_copies`): the runs removed, those kept (why), what failed (why), the copies."""
    removed: list[str] = []
    kept: dict[str, str] = {}
    failed: dict[str, str] = {}
    copies_removed: list[str] = []
    runs = list(home.load_runs())
    for run in runs:
        why = kept_because(run, now, age, campaign_of)
        if why is not None:
            kept[run.run_id] = why
            continue
        copies = _copies(run, (r for r in runs if r.run_id != run.run_id))
        if not dry_run:
            try:
                home.remove_run(run.run_id)
            except OSError as exc:
                failed[run.run_id] = exc.strerror or str(exc)
                continue
        removed.append(run.run_id)
        for path in copies:  # after its folder: a copy is never removed while its run stays
            if not dry_run:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    failed[path] = exc.strerror or str(exc)
                    continue
            copies_removed.append(path)
    return removed, kept, failed, copies_removed


@click.command()
@click.option(
    "--older-than",
    "older_than",
    default=DEFAULT_AGE,
    show_default=True,
    metavar="DURATION",
    help="Only runs that ended at least this long ago (30d, 12h, 90m; a bare number is days).",
)
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
@json_option
def prune(older_than: str, dry_run: bool, as_json: bool) -> None:
    """Remove the folders of runs that ended long ago from $AJETD_HOME/runs/ (and old
    rejected blueprints). A run is kept while anything may still read or write it: not
    ended, reports or on_finish still due, its tmux session still kept, or an experiment of
    a campaign. Result dirs are never touched; a removed run's config copies beside the
    user's config go with it (only ajetd's, unchanged since the run). Exit 0; 1 where a
    folder could not be removed."""
    from ajetd.core.durations import parse_duration

    try:
        age = parse_duration(older_than, bare_unit_s=86400.0, whole=True, zero_ok=True)
    except AjetdError as exc:
        raise click.BadParameter(str(exc), param_hint="--older-than") from exc
    home = open_home()
    now = time.time()
    campaign_of = _campaign_runs(home)
    if not dry_run:
        home.remove_pruned()
    removed, kept, failed, copies_removed = _prune_runs(home, now, age, campaign_of, dry_run)
    rejected_removed: list[str] = []
    for name in rejected_to_prune(_rejected_files(home), now, age):
        path = home.rejected / name
        if not dry_run:
            try:
                path.unlink()
            except OSError as exc:
                failed[str(path)] = exc.strerror or str(exc)
                continue
        rejected_removed.append(path.name)
    if as_json:
        echo_json(
            {
                "dry_run": dry_run,
                "removed": removed,
                "kept": kept,
                "failed": failed,
                "rejected_removed": rejected_removed,
                "copies_removed": copies_removed,
            }
        )
    else:
        verb = "would remove" if dry_run else "removed"
        click.echo(
            f"{verb} {len(removed)} run folder(s) and {len(rejected_removed)} rejected "
            f"file(s) older than {older_than}; kept {len(kept)} run(s)"
        )
        for run_id in removed:
            click.echo(f"  {verb}: {run_id}")
        for copy in copies_removed:
            click.echo(f"  {verb} its config copy: {copy}")
        for run_id, why in kept.items():
            if not why.startswith("ended ") and not why.startswith("not ended"):
                click.echo(f"  kept {run_id}: {why}")
        for what, why in failed.items():
            click.echo(f"  could not remove {what}: {why}", err=True)
    sys.exit(1 if failed else 0)
