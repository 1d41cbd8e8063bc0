"""Which ended runs `ajetd prune` may remove from the home, and why the others stay. Pure.

A run's folder (`runs/<id>/`: its record, journal, blueprint copies, ajetd's own logs) may go
only once nothing will ever read or write it again: it ended long enough ago, its reports and
finish.flag are written, its on_finish hook has fired, its tmux session is closed (the daemon
closes it after `keep_session`, and saves the record once more when it does: a folder removed
before that would come back as a record alone), and no campaign counts it among its
experiments (`campaign status` reads them). The result dir is the user's and never touched.
The config copies ajetd wrote for the run beside the user's config (`X.ajetd-<id>.yaml`,
`-t<N>`) go with its folder (`config_copies`: only ajetd's, unchanged since the run).

A refused blueprint in `rejected/` and its note (`NAME.md`, `NAME.why.txt`) go together, once
the newer of the two is old enough: the note is written when the blueprint is put aside, while
the blueprint keeps the time the user's file had (it is linked or renamed there), so a file
written weeks before it was submitted was pruned at once, its note left alone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from ajetd.core.copyname import COPY_TAG, original_of
from ajetd.core.model import Run
from ajetd.core.timefmt import iso


def kept_because(
    run: Run, now: float, older_than_s: float, campaign_of: Mapping[str, str]
) -> str | None:
    """Why `run` stays (one line), or None where its folder may be removed."""
    if run.active or run.ended_at is None:
        return f"not ended ({run.state.value})"
    if run.ended_at > now - older_than_s:
        return f"ended {iso(run.ended_at)}, within the age kept"
    if run.run_id in campaign_of:
        return f"an experiment of campaign {campaign_of[run.run_id]} (its status reads it)"
    if run.reports_pending:
        return "its reports are not written yet (the daemon writes them)"
    if run.finish_hook_due:
        return "its on_finish hook has not fired yet (the daemon fires it)"
    if run.session and not run.session_closed:
        closes = iso(run.ended_at + run.keep_session_s)
        return (
            f"its tmux session {run.session} is still kept (the daemon closes it from "
            f"{closes}; or `tmux kill-session -t ={run.session}`, then the daemon records it)"
        )
    return None


NOTE_END = ".why.txt"
BLUEPRINT_END = ".md"


class RejectedFile(NamedTuple):
    """One entry of `rejected/` as `lstat` saw it."""

    name: str
    mtime: float
    regular: bool  # a regular file: not a link, a FIFO, a folder (kept as it came, never read)


def rejection_of(name: str) -> str:
    """The refused blueprint a file of `rejected/` belongs to: its name without `.why.txt` or
    `.md` (a stray file of another name is its own)."""
    for end in (NOTE_END, BLUEPRINT_END):
        if name.endswith(end) and len(name) > len(end):
            return name[: -len(end)]
    return name


def rejected_to_prune(files: Iterable[RejectedFile], now: float, older_than_s: float) -> list[str]:
    """The names in `rejected/` that `ajetd prune` removes, sorted: the files of each refused
    blueprint whose newest changed at least `older_than_s` before `now` (the age rule of a
    run's folder: ended at least that long ago), all of them or none; none where one is not a
    regular file (a link or a FIFO kept as it came: its note says what it is)."""
    groups: dict[str, list[RejectedFile]] = {}
    for entry in files:
        groups.setdefault(rejection_of(entry.name), []).append(entry)
    cutoff = now - older_than_s
    removed: list[str] = []
    for group in groups.values():
        if all(f.regular for f in group) and max(f.mtime for f in group) <= cutoff:
            removed += (f.name for f in group)
    return sorted(removed)


class CopyFile(NamedTuple):
    """A file beside a run's config as `lstat` saw it: `config_copies` judges whether it is a
    config copy ajetd wrote for that run, unchanged since."""

    name: str
    regular: bool  # a regular file: not a link, a FIFO, a folder
    uid: int  # its owner
    mtime: float


# ajetd's names for a run's config copies (`configcopy.write_copy`): `<stem>.ajetd-<run id>
# <suffix>` at admission, `...-t<N><suffix>` for a relaunch's fix; nothing else is one
_TRIAL_TAG = re.compile(r"(?:-t[0-9]{1,6})?")
COPY_SLACK_S = 5.0  # the copy is written a moment before the record says the run ended


def copies_folder(run: Run) -> tuple[str, str, str] | None:
    """Where `run`'s config copies lie, and the stem and suffix of their names: beside the
    user's config (`agentjet.original_of` of the config its last trial ran); None for a run
    on an SSH host (its copies are there), or with no config."""
    if run.remote_dir or not run.config_path or not os.path.isabs(run.config_path):
        return None
    folder, name = os.path.split(original_of(run.config_path))
    stem, suffix = os.path.splitext(name)
    return folder, stem, suffix


def config_copies(run: Run, files: Iterable[CopyFile], uid: int) -> list[str]:
    """The names among `files` (the folder `copies_folder` says) that are `run`'s config
    copies as ajetd wrote them, which `ajetd prune` removes with the run (walk97 F10: one
    copy per run, and per fixed relaunch, piled up in the user's codebase for ever; the
    result dir keeps the last one as `config-used.yaml`, results.md and trials.md each
    change). Only a file named as ajetd names this run's copies (its id in the name), a
    regular file (never a link: what it points at is not ajetd's), owned by this user and
    last written while the run lived (not changed since: a copy a person edited afterwards
    is theirs now). Anything else is never removed."""
    where = copies_folder(run)
    if where is None or run.ended_at is None:
        return []
    _, stem, suffix = where
    name_of = re.compile(
        re.escape(f"{stem}{COPY_TAG}{run.run_id}") + _TRIAL_TAG.pattern + re.escape(suffix)
    )
    begun = run.submitted_at - COPY_SLACK_S
    ended = run.ended_at + COPY_SLACK_S
    return [
        f.name
        for f in files
        if name_of.fullmatch(f.name) and f.regular and f.uid == uid and begun <= f.mtime <= ended
    ]
