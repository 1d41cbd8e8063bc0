"""A campaign's folder (`campaign.yaml` and its blueprints): read and checked, submitted into
the inbox whole, and, for one copied in by hand, whether the copy has settled; and a
campaign's record read back from its `state.json`.

`ajetd campaign FOLDER` (the CLI) and the daemon's campaign runner read a folder the same way
here, so a folder the CLI accepted is one the daemon can start.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ajetd.adapters.control import SUFFIX, new_campaign_id
from ajetd.adapters.inbox import SETTLE_S
from ajetd.adapters.store import Home
from ajetd.core import campaignspec as cs
from ajetd.core.blueprint import Blueprint, parse_blueprint
from ajetd.core.campaignrecord import CampaignState, ExpState
from ajetd.core.errors import AjetdError


def read_spec(
    folder: Path,
    added: list[dict[str, Any]] | None = None,
    stop: dict[str, Any] | None = None,
    extra_files: frozenset[str] = frozenset(),
) -> cs.CampaignSpec:
    """campaign.yaml with what was added and set live, validated; CampaignError if unusable."""
    files = {p.name for p in folder.iterdir() if p.is_file()} | extra_files
    if "campaign.yaml" not in files:
        raise cs.CampaignError([f"{folder}: no campaign.yaml"])
    text = (folder / "campaign.yaml").read_text()
    if added or stop:
        text = cs.merged(text, added or [], stop or {})
    return cs.parse_campaign(text, files)


def load_folder(
    folder: Path,
    added: list[dict[str, Any]] | None = None,
    stop: dict[str, Any] | None = None,
    extra_files: frozenset[str] = frozenset(),
) -> tuple[cs.CampaignSpec, Blueprint, str]:
    """The spec (with what was added and set live), its base blueprint (parsed), and the
    base's text; CampaignError if unusable."""
    spec = read_spec(folder, added, stop, extra_files)
    base_text = (folder / spec.base).read_text()
    try:
        return spec, parse_blueprint(base_text), base_text
    except AjetdError as exc:
        raise cs.CampaignError([f"base blueprint {spec.base}: {exc}"]) from exc


def settled(folder: Path, now: float) -> bool:
    """Nothing in the folder changed for SETTLE_S: a copy into the inbox is complete."""
    try:
        newest = max(p.stat().st_mtime for p in [folder, *folder.rglob("*")])
    except (OSError, ValueError):
        return False
    return now - newest >= SETTLE_S


def submit_folder(home: Home, folder: Path) -> str:
    """`ajetd campaign FOLDER`: checked, then copied into the inbox atomically; its id."""
    spec, _, _ = load_folder(folder)
    home.ensure()
    campaign_id = new_campaign_id(home)
    tmp = home.inbox / f".{campaign_id}.tmp"
    shutil.copytree(folder, tmp)
    tmp.rename(home.inbox / f"{campaign_id}__{spec.name}{SUFFIX}")
    return campaign_id


def load_state(path: Path) -> CampaignState:
    """A campaign's record, from its `state.json`."""
    data = json.loads(path.read_text())
    data["experiments"] = [ExpState(**e) for e in data.get("experiments", [])]
    return CampaignState(**data)
