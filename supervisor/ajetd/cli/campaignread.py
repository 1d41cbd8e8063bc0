"""Reading a campaign for the commands (nothing here writes): which campaign the user means,
its spec, record and folder, `campaign status`'s data, and waiting until it, or its next
experiment, ends (`campaign wait`, `ajetd wait CAMPAIGN_ID`).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any, NoReturn

import click

from ajetd.cli.common import POLL_S, echo_json, open_home
from ajetd.core.shown import show

if TYPE_CHECKING:
    from ajetd.adapters.store import Home
    from ajetd.core import campaignspec as cs
    from ajetd.core.campaignrecord import CampaignState


def resolve_or_fail(home: Home, text: str, option: str | None = None) -> str:
    """The id of the one campaign `text` names (its id, or a name only one campaign has);
    a usage error (of `option`, where given) when none or several do, naming their ids:
    `campaign status NAME` and `status --campaign NAME` refuse alike, never pick one."""
    from ajetd.adapters.control import named_campaigns

    ids = named_campaigns(home, text)
    if len(ids) == 1:
        return ids[0]
    if ids:
        shown = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
        why = f"{len(ids)} campaigns are named {show(text)}: {shown}; give one by its id"
    else:
        why = (
            f"no campaign {show(text)} in {home.root} (campaign ids look like c-k3x9az, run "
            "ids like k3x9az; a name must be unique; see `ajetd campaign list`)"
        )
    if option is not None:
        raise click.BadParameter(why, param_hint=option)
    raise click.UsageError(why)


def read_campaign(
    home: Home, campaign_id: str, with_spec: bool = True
) -> tuple[cs.CampaignSpec | None, CampaignState, str]:
    """The spec (None when unreadable or not asked for), the state and the folder of a
    campaign; one still in the inbox reads as `submitted`."""
    from ajetd.adapters.control import SUFFIX, campaign_dir
    from ajetd.core import campaignspec as cs
    from ajetd.core.campaignrecord import CampaignState
    from ajetd.hosts.campaignfolder import load_state, read_spec
    from ajetd.views.listing import inbox_reason

    state_file = campaign_dir(home, campaign_id) / "state.json"
    claimed = campaign_dir(home, campaign_id) / "folder"
    found = [] if state_file.exists() else sorted(home.inbox.glob(f"{campaign_id}__*{SUFFIX}"))
    if state_file.exists():
        try:
            state = load_state(state_file)
        except (OSError, ValueError, TypeError) as exc:
            raise click.ClickException(f"campaign record {state_file} unreadable: {exc}") from exc
        folder = claimed
    elif found:
        folder = found[0]
        state = CampaignState(campaign_id, folder.stat().st_mtime, phase="submitted")
        state.reason = inbox_reason(home.daemon_running(), home.daemon_info())
    elif claimed.exists() or campaign_dir(home, campaign_id).exists():
        # taken from the inbox, its record not written yet (the daemon writes it once it
        # checked the folder and git; one killed meanwhile starts it at its next start)
        folder = claimed
        state = CampaignState(campaign_id, time.time(), phase="submitted")
        state.reason = "taken from the inbox, starting"
        if not home.daemon_running():
            state.reason += ": no daemon is running; the next one starts it"
    else:
        raise click.UsageError(f"campaign {campaign_id} is gone")
    spec = None
    if with_spec:
        try:
            spec = read_spec(folder, state.added, state.stop_set)
        except (cs.CampaignError, OSError):
            spec = None
    return spec, state, str(folder)


def _runs(home: Home, state: CampaignState) -> dict[str, Any]:
    from ajetd.core.errors import AjetdError

    runs = {}
    for exp in state.experiments:
        if exp.run_id and not exp.recorded:
            try:
                runs[exp.run_id] = home.load_run(exp.run_id)
            except AjetdError:
                continue
    return runs


def status_data(home: Home, campaign_id: str) -> tuple[dict[str, Any], str]:
    """(`campaign status --json`'s object, its text view)."""
    from ajetd.views.campaign import render_status, status_json

    spec, state, folder = read_campaign(home, campaign_id)
    data = status_json(spec, state, _runs(home, state), time.time(), folder)
    data["pending_requests"] = pending_of(home, campaign_id)
    return data, render_status(spec, state, data)


def pending_of(home: Home, campaign_id: str) -> list[dict[str, Any]]:
    """The requests filed for the campaign and not yet taken by the daemon (one filed while
    none ran: `add`, `set` and `stop` said "the request waits ... check with `ajetd campaign
    status`", which showed nothing of it, walk97b F7), oldest first: `op`, `name` (an add's),
    `stop` (a set's rules), `filed_at`, `request_id`. One that cannot be read is left to the
    daemon, which answers it."""
    from ajetd.adapters.control import pending_requests, read_request
    from ajetd.core.timefmt import iso

    found = []
    for req_id, path in pending_requests(home).get(campaign_id, []):
        try:
            request = read_request(path)
        except (OSError, ValueError, TypeError):  # gone meanwhile (taken), or unusable
            continue
        entry = request.get("entry")
        rules = request.get("stop")
        found.append(
            {
                "op": str(request.get("op")),
                "name": str(entry.get("name")) if isinstance(entry, dict) else None,
                "stop": rules if isinstance(rules, dict) else None,
                "filed_at": iso(int(req_id[:20]) / 1e9) if req_id[:20].isdigit() else None,
                "request_id": req_id,
            }
        )
    return found


def _in_flight(home: Home, cid: str, state: CampaignState) -> bool:
    """Some experiment runs, is planned and not yet launched, or an `add` waits for the
    daemon."""
    from ajetd.core import campaignspec as cs
    from ajetd.core.campaignrecord import progress_of

    if state.phase == "submitted" or any(not e.recorded for e in state.experiments):
        return True
    if any(home.control.glob(f"{cid}.campaign-*.json")):
        return True
    spec = read_campaign(home, cid)[0]
    if spec is None or state.done:
        return False
    # a stop rule the clock met (a deadline) since the daemon last wrote the record: its end
    # comes at the daemon's next pass, not a wait for the agent (walk 81, L9: exit 2 a second
    # before the campaign ended)
    return progress_of(state, spec, time.time()).met or (
        len(cs.planned(spec)) > len(state.experiments) and not state.stopping
    )


def _mark(state: CampaignState) -> tuple[Any, ...]:
    """What a request or an ended experiment changes in the record."""
    rows = tuple((e.index, e.recorded) for e in state.experiments)
    return state.revision, rows, state.phase, state.done, state.stopping, len(state.handled)


def settled(home: Home, cid: str) -> tuple[CampaignState, bool]:
    """(the campaign's record, whether anything is in flight), read so that the two agree: the
    record is read again after the look at the requests, and both taken only when nothing
    changed in between (an `add` the daemon applies meanwhile leaves neither the old record
    nor its request file behind)."""
    _, state, _ = read_campaign(home, cid, with_spec=False)
    while True:
        coming = _in_flight(home, cid, state)
        _, again, _ = read_campaign(home, cid, with_spec=False)
        if _mark(again) == _mark(state):
            return again, coming
        state = again


def awaits_agent(state: CampaignState, coming: bool) -> bool:
    """The campaign waits for an `ajetd campaign add` (or a `set`, or a `stop`): nothing runs,
    nothing is planned or filed, and no stop rule ended it."""
    return state.phase == "waiting" and not state.stopping and not state.done and not coming


def _row_exit(row: dict[str, Any], as_json: bool) -> NoReturn:
    from ajetd.views.campaign import ROW_EXIT, row_line

    if as_json:
        echo_json(row)
    else:
        click.echo(row_line(row))
    sys.exit(ROW_EXIT.get(row["status"], 1))


def _campaign_exit(home: Home, cid: str, code: int, line: str, as_json: bool) -> NoReturn:
    """`campaign wait`'s end without a row: its line, or with --json the campaign's status
    object as it stands, whatever the exit code (as `wait RUN --json` prints the run's)."""
    if as_json:
        echo_json(status_data(home, cid)[0])
    elif line:
        click.echo(line)
    sys.exit(code)


def _no_row(home: Home, cid: str, state: CampaignState, why: str, as_json: bool) -> NoReturn:
    """`--next` / `--after` with no row to come: exit 2, what it waits for on stderr."""
    from ajetd.core.campaignrecord import add_hint

    last = max((e.index for e in state.experiments if e.recorded), default=None)
    said = f"; the last row is {last}" if last is not None else ""
    if state.done:
        what = f"campaign {cid} {state.status}: {state.reason}"
    else:
        what = f"campaign {cid} waits for the agent: {add_hint(cid)}"
    click.echo(f"{what} ({why}{said})", err=True)
    _campaign_exit(home, cid, 2, "", as_json)


def wait_campaign(
    text: str, next_one: bool, timeout: float | None, as_json: bool, after: int | None = None
) -> NoReturn:
    """`ajetd campaign wait` (also `ajetd wait CAMPAIGN_ID`). Plain: until the campaign ends,
    or 2 at once while it waits for the agent (an `add`). `after`: the row of the experiment
    with the lowest index above it (every row exactly once, in ledger order, for a caller
    that passes the last index it got). `next_one`: the first row recorded after the call
    began; never one recorded before it."""
    from ajetd.core.campaignrecord import add_hint
    from ajetd.views.campaign import FOUND_NOTHING, row_json, wait_exit

    home = open_home()
    cid = resolve_or_fail(home, text)
    deadline = None if timeout is None else time.monotonic() + timeout
    _, state, _ = read_campaign(home, cid, with_spec=False)
    seen = {e.index for e in state.experiments if e.recorded}
    while True:
        state, coming = settled(home, cid)
        if after is not None:
            later = [e for e in state.experiments if e.index > after]
            if later:
                first = min(later, key=lambda e: e.index)
                if first.recorded:
                    _row_exit(row_json(first), as_json)
            elif state.done or awaits_agent(state, coming):
                _no_row(home, cid, state, f"no row after {after} will come", as_json)
        elif next_one:
            ended = [e for e in state.experiments if e.recorded and e.index not in seen]
            if ended:
                _row_exit(row_json(min(ended, key=lambda e: e.index)), as_json)
            if state.done or awaits_agent(state, coming):
                why = "no experiment in flight; `--after INDEX` returns rows already written"
                _no_row(home, cid, state, why, as_json)
        elif state.done:
            line = f"campaign {cid} {state.status}: {state.reason}"
            code = wait_exit(state)
            if code == FOUND_NOTHING:
                line += "; no experiment was kept: it found no best (exit 3)"
            _campaign_exit(home, cid, code, line, as_json)
        elif awaits_agent(state, coming):
            click.echo(f"campaign {cid} waits for the agent: {add_hint(cid)}", err=True)
            _campaign_exit(home, cid, 2, "", as_json)
        if deadline is not None and time.monotonic() >= deadline:
            click.echo(f"campaign {cid} {state.phase}: {state.progress}", err=True)
            _campaign_exit(home, cid, 124, "", as_json)
        time.sleep(POLL_S)
