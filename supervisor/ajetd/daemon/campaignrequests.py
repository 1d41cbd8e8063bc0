"""The requests a live campaign takes (`ajetd campaign add / set / stop`): each checked as if
the user had written it into campaign.yaml, then applied to the campaign's record; the answer
says what was done or why not.

The campaign runner (`ajetd.daemon.campaigns`) applies each request once and saves the answer
with the change, so a request seen again is answered from the record, never applied twice.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ajetd.adapters.campaigngit import git
from ajetd.adapters.store import OWNER_FILE, Home, write_atomic
from ajetd.core import campaignrules as cr
from ajetd.core import campaignspec as cs
from ajetd.core.campaignrecord import (
    CampaignState,
    closed_problem,
    name_taken,
    not_launched,
    progress_of,
    rule_holding,
)
from ajetd.hosts.campaignfolder import check_entry, check_rules


def apply(
    home: Home,
    folder: Path,
    state: CampaignState,
    load: Callable[[], cs.CampaignSpec],
    request: dict[str, Any],
    now: float,
) -> dict[str, Any]:
    """The answer to one request; the change it asks for made on `state` (`load` reads the
    campaign's spec as it stands, only for a request that needs it)."""
    op = request.get("op")
    if op == "stop":
        return _stop(home, state, now)
    closed = closed_problem(state)
    if closed:
        return {"ok": False, "error": closed}
    if state.stopping:
        return {"ok": False, "error": f"campaign {state.campaign_id} is stopping"}
    if op == "add":
        return _add(folder, state, load(), request, now)
    if op == "set":
        return _set(folder, state, load(), request.get("stop"), bool(request.get("continue")), now)
    return {"ok": False, "error": f"unknown request {op!r}"}


def _continue(state: CampaignState, spec: cs.CampaignSpec, now: float, room: bool) -> None:
    """`--continue`: one more round of the default rule, where it is what stops the campaign,
    now or once what is planned ran; `room` (an `add`): as many as the experiment added needs
    to run (one, unless campaign.yaml gave more experiments than a round)."""
    if progress_of(state, spec, now, ahead=True).needs_decision:
        state.rounds += 1
    while room and progress_of(state, spec, now, ahead=True).needs_decision:
        state.rounds += 1  # ends: each round raises the default rule's count by three


def _add(
    folder: Path,
    state: CampaignState,
    spec: cs.CampaignSpec,
    request: dict[str, Any],
    now: float,
) -> dict[str, Any]:
    """`ajetd campaign add`: one more experiment, validated as a campaign.yaml entry."""
    raw = request.get("entry")
    if not isinstance(raw, dict):
        return {"ok": False, "error": "the request holds no experiment"}
    name = str(raw.get("name") or "")
    # the name first (before it goes into a file name), and before `--continue` changes where
    # the campaign stands: a planned experiment's name is answered with what holds it back
    problem = cs.name_problem(name) or name_taken(state, spec, name, now)
    if problem:
        return {"ok": False, "error": problem}
    rounds = state.rounds
    if request.get("continue"):
        _continue(state, spec, now, room=True)
    # judged on what will have been attempted once the planned ones ran: experiments launch
    # in order while no rule is met, so one past a rule met then would never run
    prog = progress_of(state, spec, now, ahead=True)
    if prog.met and raw.get("smoke") is True and not not_launched(state, spec):
        # a smoke run counts against no count rule: with nothing planned before it to hold
        # it back, only the deadline and the target do
        smoke = cs.Experiment(name=name, description="", smoke=True)
        held = rule_holding(state, spec, now, smoke)
        prog = cr.Progress(bool(held), held)
    if prog.met:
        state.rounds = rounds
        hint = "" if prog.needs_decision else " (raise it with `ajetd campaign set`)"
        return {"ok": False, "error": f"campaign {state.campaign_id}: {prog.text}{hint}"}
    index = len(cs.planned(spec))
    files: dict[str, str] = {}
    for key in ("patch", "blueprint"):
        text = request.get(f"{key}_text")
        if isinstance(text, str):
            files[key] = cs.added_file(index, name, key)
            raw = {**raw, key: files[key]}
    if any((folder / f).exists() for f in files.values()):
        state.rounds = rounds
        return {"ok": False, "error": f"{sorted(files.values())} already in the folder"}
    try:
        text = request.get("blueprint_text")
        patch = request.get("patch_text")
        check_entry(
            folder,
            state,
            raw,
            now,
            files.values(),
            text if isinstance(text, str) else None,
            patch if isinstance(patch, str) else None,
        )
    except cs.CampaignError as exc:
        state.rounds = rounds
        return {"ok": False, "error": "; ".join(exc.problems)}
    start = str(raw.get("from") or "")
    if start and state.repo:
        code, _ = git(state.repo, "rev-parse", "--verify", "-q", f"{start}^{{commit}}")
        if code != 0:
            state.rounds = rounds
            return {"ok": False, "error": f"from {start!r}: no such branch or commit"}
    for key, file_name in files.items():
        write_atomic(folder / file_name, str(request[f"{key}_text"]), OWNER_FILE)
    state.added.append(raw)
    state.revision += 1
    state.done = False  # a needs_decision campaign goes on
    return {
        "ok": True,
        "index": index,
        "name": name,
        "message": f"experiment {index} ({name}) added to campaign {state.campaign_id}",
    }


def _set(
    folder: Path, state: CampaignState, spec: cs.CampaignSpec, given: Any, go_on: bool, now: float
) -> dict[str, Any]:
    """`ajetd campaign set`: the stop rules `given` changed live (a deadline counts from now),
    and with `go_on` (`--continue`) one more round of the default rule."""
    rules = given or {}
    if not isinstance(rules, dict):
        return {"ok": False, "error": "the request holds no stop rules"}
    try:
        rules, changed = check_rules(folder, state, rules, now)
    except cs.CampaignError as exc:
        return {"ok": False, "error": "; ".join(exc.problems)}
    if go_on:
        _continue(state, spec, now, room=False)
    state.stop_set.update(rules)
    state.revision += 1
    state.done = False  # re-evaluated at once: goes on if no rule is met any more
    return {"ok": True, "message": progress_of(state, changed, now).text}


def _stop(home: Home, state: CampaignState, now: float) -> dict[str, Any]:
    """`ajetd campaign stop`: its running experiments are stopped cleanly, rows written; when
    is kept (the first stop's time: a second one changes nothing), as its status says it."""
    if state.done and state.status != "needs_decision":  # that one ends as stopped
        return {
            "ok": True,
            "message": f"campaign {state.campaign_id} already ended ({state.status})",
        }
    if not state.stopping:
        state.stopping, state.stop_asked_at = True, now
    running = [e for e in state.experiments if e.run_id and not e.recorded]
    for exp in running:
        home.ask_stop(exp.run_id, "campaign stop\n")
    return {
        "ok": True,
        "message": f"stopping campaign {state.campaign_id} ({len(running)} running experiment(s))",
    }
