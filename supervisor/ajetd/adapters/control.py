"""How `ajetd campaign add/set/stop` reach the daemon, and how campaign ids are told apart.

The CLI never changes a campaign itself: it files one request, a JSON file renamed whole into
`$AJETD_HOME/control/` (the folder the daemon watches, so it wakes at once), named
`<campaign_id>.campaign-<request_id>.json`. The daemon alone applies requests, in the order
of their ids, records each one's answer in the campaign's `state.json` together with the
change (one atomic write), then writes the answer to `campaigns/<id>/answers/<request_id>.json`
and removes the request. A request found again after a restart is answered from the record,
never applied twice; one filed while no daemon runs waits for the next. The CLI reads the
answer (the index of an added experiment, or the reason it was refused).

Ids: a run id is six lowercase letters and digits (`k3x9az`); a campaign id is `c-` and six
(`c-k3x9az`), so the two never collide and every command can tell which it was given.
Campaign commands also take the campaign's `name` when exactly one campaign has it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import time
from pathlib import Path
from typing import Any

from ajetd.adapters.regular import NotRegularError, TooLargeError, load_record
from ajetd.adapters.store import OWNER_DIR, OWNER_FILE, Home, write_atomic
from ajetd.core.errors import StoreError
from ajetd.core.naming import new_run_id, random_word

CAMPAIGN_ID = re.compile(r"^c-[a-z0-9]{6}\Z")
LEGACY_ID = re.compile(r"^[a-z0-9]{6}\Z")  # campaigns made before ids had their `c-`
REQUEST = re.compile(
    r"^(?P<cid>[a-z0-9-]{6,8})\.campaign-(?P<req>[0-9]{19,20}-[a-z0-9]{6})\.json\Z"
)
MAX_REQUEST_BYTES = 16 * 1024 * 1024  # a patch or blueprint travels inside the request
SUFFIX = ".campaign"


def is_campaign_id(text: str) -> bool:
    return bool(CAMPAIGN_ID.match(text))


def new_campaign_id(home: Home) -> str:
    """`c-` and six letters and digits, not used by any campaign (claimed or in the inbox)."""

    def taken(candidate: str) -> bool:
        cid = f"c-{candidate}"
        return (home.root / "campaigns" / cid).exists() or any(home.inbox.glob(f"{cid}__*"))

    return "c-" + new_run_id(taken, os.urandom)


def campaign_dir(home: Home, cid: str) -> Path:
    return home.root / "campaigns" / cid


def file_request(home: Home, cid: str, payload: dict[str, Any]) -> str:
    """Rename one request into the control folder whole; its id (time-ordered)."""
    req_id = f"{time.time_ns():020d}-{random_word(os.urandom)}"
    data = json.dumps(payload, ensure_ascii=False)
    write_atomic(home.control / f"{cid}.campaign-{req_id}.json", data, OWNER_FILE)
    return req_id


def control_problem(home: Home) -> str:
    """Why requests may not be taken from the control folder now ('' when it is safe)."""
    try:
        info = home.control.stat()
    except OSError as exc:
        return f"{home.control}: {exc.strerror}"
    if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"{home.control} is not this user's alone (uid {info.st_uid}, mode "
            f"{stat.S_IMODE(info.st_mode):o}); campaign requests wait until it is: chmod 700"
        )
    return ""


def pending_requests(home: Home) -> dict[str, list[tuple[str, Path]]]:
    """Requests waiting in the control folder, per campaign, oldest first: plain files of this
    user only (never a link, never another user's file), none while the folder is unsafe."""
    found: dict[str, list[tuple[str, Path]]] = {}
    if control_problem(home):
        return found
    with contextlib.suppress(OSError):
        for entry in sorted(home.control.iterdir()):
            match = REQUEST.match(entry.name)
            if not match:
                continue
            info = entry.lstat()
            if stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid():
                found.setdefault(match["cid"], []).append((match["req"], entry))
    return found


def read_request(path: Path) -> dict[str, Any]:
    """The request's JSON object; ValueError or TypeError saying why it is unusable."""
    data = load_record(path, MAX_REQUEST_BYTES)
    if not isinstance(data, dict):
        raise TypeError("request is not a JSON object")
    return data


def answer_file(home: Home, cid: str, req_id: str) -> Path:
    return campaign_dir(home, cid) / "answers" / f"{req_id}.json"


def write_answer(home: Home, cid: str, req_id: str, answer: dict[str, Any]) -> None:
    folder = campaign_dir(home, cid) / "answers"
    folder.mkdir(mode=OWNER_DIR, exist_ok=True)
    write_atomic(answer_file(home, cid, req_id), json.dumps(answer, ensure_ascii=False), 0o600)


def await_answer(home: Home, cid: str, req_id: str, timeout: float) -> dict[str, Any] | None:
    """The daemon's answer (and the file removed), or None at `timeout`. One that is no answer
    the daemon wrote (larger than any record is, never read; not a regular file) is a
    StoreError naming it, and is left where it is."""
    path = answer_file(home, cid, req_id)
    deadline = time.monotonic() + timeout
    while True:
        try:
            answer = load_record(path)
        except FileNotFoundError:
            answer = None
        except (TooLargeError, NotRegularError) as exc:
            raise StoreError(f"the daemon's answer {path} is unreadable: {exc}") from exc
        except ValueError:  # not JSON (yet)
            answer = None
        if answer is not None:
            if not isinstance(answer, dict):
                raise StoreError(f"the daemon's answer {path} is unreadable: not a JSON object")
            path.unlink(missing_ok=True)
            return answer
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


def named_campaigns(home: Home, text: str) -> list[str]:
    """The ids of the campaigns that `text` names (its id, or every campaign of that name),
    claimed or still in the inbox: one is the campaign, none or several are refused by the
    caller with these ids (`campaignread.resolve_or_fail`). `text` is what a user typed: it
    goes into a path only once it has an id's form, and is compared with names, never globbed
    (`*` named whichever campaign waited in the inbox; 300 characters failed as a file
    name)."""
    root = home.root / "campaigns"
    is_id = CAMPAIGN_ID.match(text) or LEGACY_ID.match(text)
    if is_id and ((root / text).is_dir() or any(home.inbox.glob(f"{text}__*{SUFFIX}"))):
        return [text]
    named: list[str] = []
    with contextlib.suppress(OSError):
        for state_file in root.glob("*/state.json"):
            with contextlib.suppress(OSError, ValueError, AttributeError):  # named by `list`
                if load_record(state_file).get("name") == text:
                    named.append(state_file.parent.name)
    with contextlib.suppress(OSError):
        for entry in home.inbox.iterdir():
            cid, sep, rest = entry.name.partition("__")
            if sep and rest == f"{text}{SUFFIX}":
                named.append(cid)
    return sorted(set(named))
