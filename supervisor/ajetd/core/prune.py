"""Which ended runs `ajetd prune` may remove from the home, and why the others stay. Pure.

A run's folder (`runs/<id>/`: its record, journal, blueprint copies, ajetd's own logs) may go
only once nothing will ever read or write it again: it ended long enough ago, its reports and
finish.flag are written, its on_finish hook has fired, its tmux session is closed (the daemon
closes it after `keep_session`, and saves the record once more when it does: a folder removed
before that would come back as a record alone), and no campaign counts it among its
experiments (`campaign status` reads them). The result dir is the user's and never touched.
"""

from __future__ import annotations

from collections.abc import Mapping

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
