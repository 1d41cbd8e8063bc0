"""`ajetd campaign ...`: submit a campaign folder, and run seed 002's loop on a live one.

`ajetd campaign FOLDER` submits (as before); `add`, `set`, `stop` file requests the daemon
applies (campaignreq); `status`, `list`, `wait` read the campaign's state file. A folder whose
name is one of the subcommands is submitted as `ajetd campaign ./NAME`.

Exit codes: 0 ok; 1 failure (no daemon to answer, a stopped or refused campaign); 2 usage
error, unknown campaign, or a request the daemon refused (the reason on stderr). `wait` as
`ajetd wait`: 0 completed (a stop rule met) with a best, 3 completed with none (no
experiment kept), 1 stopped/refused, 2 needs a decision or waits
for an `add` (with `--next` / `--after`: no such row will come), 124 its own timeout; with
`--next` / `--after`, the row's status: 0 keep/discard/smoke, 1 crash/stopped.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ajetd.cli.campaignread import read_campaign, resolve_or_fail, status_data, wait_campaign
from ajetd.cli.common import (
    DAEMON_ENDED,
    NOT_NEGATIVE,
    POLL_S,
    Number,
    echo_json,
    interruptible,
    open_home,
)
from ajetd.core.shown import show

if TYPE_CHECKING:
    from collections.abc import Callable

    from ajetd.adapters.store import Home
    from ajetd.core.campaignrecord import CampaignState

MAX_FILE_BYTES = 8 * 1024 * 1024  # a patch or a blueprint sent with `add`


class _CampaignGroup(click.Group):
    """`ajetd campaign FOLDER` is `ajetd campaign submit FOLDER`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["submit", *args]
        return super().parse_args(ctx, args)


def _request(home: Home, campaign_id: str, payload: dict[str, Any], timeout: float) -> Any:
    """File a request, wait for the daemon's answer; exit 2 when refused, 1 with no answer."""
    from ajetd.adapters.control import await_answer, file_request

    home.ensure()
    req_id = file_request(home, campaign_id, payload)
    running = home.daemon_running()
    answer = await_answer(home, campaign_id, req_id, timeout if running else 0.5)
    if answer is None:
        why = "no daemon is running" if not running else f"no answer within {timeout:.0f}s"
        click.echo(
            f"ajetd: {why} on {home.root}; the request waits in {home.control} and is applied "
            "when the daemon takes it (check with `ajetd campaign status`)",
            err=True,
        )
        sys.exit(1)
    if not answer.get("ok"):
        click.echo(f"ajetd: refused: {answer.get('error')}", err=True)
        sys.exit(2)
    return answer


def _refuse_now(home: Home, cid: str, check: Callable[[Path, CampaignState], None]) -> None:
    """What the daemon would surely refuse, refused here at once without it (exit 2, the
    reason on stderr, no request filed): a campaign ended for good, an experiment or stop
    rules its campaign.yaml would not take (`check`, the daemon's own). What depends on the
    moment the daemon applies it (a stop rule met, a `--from` branch an earlier `add` makes)
    is left to the daemon."""
    from ajetd.core import campaignspec as cs
    from ajetd.core.campaignrecord import closed_problem

    _, state, folder = read_campaign(home, cid, with_spec=False)
    problem = closed_problem(state)
    if problem is None:
        try:
            check(Path(folder), state)
        except cs.CampaignError as exc:
            problem = "; ".join(exc.problems)
        except OSError:  # the folder unreadable here: the daemon says why
            problem = None
    if problem:
        click.echo(f"ajetd: refused: {problem}", err=True)
        sys.exit(2)


def _read_file(path: Path | None, blueprint: bool = False) -> str | None:
    """A file `campaign add` sends the daemon, as text: a `--blueprint` decoded as every
    blueprint is (a UTF-16 file saved on Windows reads right), a `--patch` (git applies it)
    only as UTF-8, else a usage error saying why in words (`core.textfile`)."""
    if path is None:
        return None
    from ajetd.adapters.regular import open_regular
    from ajetd.core.textfile import decode_text, utf8_problem

    with open_regular(path) as handle:  # a FIFO or a device: refused (exit 2), never read
        raw = handle.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES:
        raise click.UsageError(f"{path}: larger than {MAX_FILE_BYTES // 2**20} MiB")
    if blueprint:  # refused as lint and admission refuse it (`encoding_problem`)
        from ajetd.core.blueprint import encoding_problem

        said = encoding_problem(raw)
        if said is not None:
            raise click.UsageError(f"{path}: {said}")
        return decode_text(raw)
    problem = utf8_problem(raw)
    if problem is not None:
        raise click.UsageError(f"{path}: {problem}")
    return raw.decode("utf-8-sig")


@click.group(cls=_CampaignGroup, context_settings={"help_option_names": ["-h", "--help"]})
def campaign() -> None:
    """Research campaigns (seed 002): `ajetd campaign FOLDER` submits one (prints its id);
    the subcommands run the loop on a live one. Campaign ids are `c-` and six letters and
    digits; run ids are the six alone."""


@campaign.command("submit")
@click.argument("folder", type=click.Path(exists=True, path_type=Path))
def submit_cmd(folder: Path) -> None:
    """Submit a campaign folder (campaign.yaml + base blueprint); print its id."""
    from ajetd.core.campaignspec import CampaignError
    from ajetd.hosts.campaignfolder import submit_folder

    if not folder.is_dir():  # a blueprint given where its campaign's folder goes
        import shlex

        raise click.UsageError(
            f"{folder} is not a folder: a campaign is a folder holding campaign.yaml and its "
            f"base blueprint; a blueprint alone is submitted with "
            f"`ajetd submit {shlex.quote(str(folder))}`"
        )
    home = open_home()
    try:  # a folder with problems exits 2; a home that cannot take it, 1 (ajetd.cli.main)
        campaign_id = submit_folder(home, folder)
    except CampaignError as exc:
        problems = getattr(exc, "problems", [str(exc)])
        click.echo(f"{folder}: {len(problems)} problem(s):", err=True)
        for problem in problems:
            click.echo(f"  - {problem}", err=True)
        sys.exit(2)
    click.echo(campaign_id)
    if not home.daemon_running():
        click.echo(f"ajetd: no daemon is running on {home.root}; it waits in the inbox", err=True)


@campaign.command("add")
@click.argument("campaign_id")
@click.argument("more_overrides", nargs=-1)
@click.option("--name", required=True, help="The experiment's name (letters, digits, . _ -).")
@click.option("--description", required=True, help="The hypothesis, in a sentence.")
@click.option(
    "--overrides",
    multiple=True,
    help="K=V appended to the launch command; repeat it or list several after it.",
)
@click.option(
    "--patch",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A patch committed on its branch as the hypothesis commit (needs branches).",
)
@click.option("--from", "start", default="", help="The branch or commit it starts from.")
@click.option(
    "--blueprint",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Its own blueprint instead of the campaign's base.",
)
@click.option("--smoke", is_flag=True, help="A pipeline check: counts against no stop rule.")
@click.option(
    "--continue",
    "go_on",
    is_flag=True,
    help="Go on past the default stop rule (three more experiments).",
)
@click.option("--timeout", type=NOT_NEGATIVE, default=60.0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the daemon's answer as JSON.")
def add_cmd(
    campaign_id: str,
    more_overrides: tuple[str, ...],
    name: str,
    description: str,
    overrides: tuple[str, ...],
    patch: Path | None,
    start: str,
    blueprint: Path | None,
    smoke: bool,
    go_on: bool,
    timeout: float,
    as_json: bool,
) -> None:
    """Append one experiment to a live campaign (validated as a campaign.yaml entry); print
    its index.

    MORE_OVERRIDES are further K=V overrides after `--overrides`, the same as repeating it:
    each is appended to the launch command, as a campaign.yaml entry's `overrides` are.

    \b
    Example (two overrides: the first given to --overrides, the second after it):
      ajetd campaign add c-4kq2m1 --name lr1e-6 \\
        --description "a lower lr learns steadier" \\
        --overrides actor.optim.lr=1e-6 trainer.total_epochs=2
    """
    from ajetd.core import campaignspec as cs

    if more_overrides and not overrides:
        raise click.UsageError(
            f"unexpected argument {show(more_overrides[0])} (overrides follow --overrides)"
        )
    problem = cs.name_problem(name)
    if problem:  # refused here: no request is filed
        raise click.BadParameter(problem, param_hint="--name")
    for override in (*overrides, *more_overrides):
        problem = cs.override_problem(override)
        if problem:
            raise click.BadParameter(problem, param_hint="--overrides")
    home = open_home()
    cid = resolve_or_fail(home, campaign_id)
    entry = cs.entry(name, description, [*overrides, *more_overrides], "", start, "", smoke)
    payload: dict[str, Any] = {"op": "add", "entry": entry, "continue": go_on}
    files = {}
    for key, path in (("patch", patch), ("blueprint", blueprint)):
        text = _read_file(path, blueprint=key == "blueprint")
        problem = cs.patch_problem(str(path), text) if key == "patch" and text is not None else None
        if problem:  # refused here: no request is filed, no attempt spent
            raise click.BadParameter(problem, param_hint="--patch")
        if text is not None:
            payload[f"{key}_text"] = text
            files[key] = cs.added_file(0, name, key)  # as the daemon names it (any index)

    def check(folder: Path, state: CampaignState) -> None:
        from ajetd.cli.campaignread import pending_of
        from ajetd.hosts.campaignfolder import check_entry

        for filed in pending_of(home, cid):  # filed while no daemon ran: it is applied once
            if filed["op"] == "add" and filed["name"] == name:
                raise cs.CampaignError(
                    [
                        f"an add of {name!r} was filed at {filed['filed_at']} and waits for the "
                        "daemon (`ajetd campaign status` shows it as pending); it is applied "
                        "once when the daemon takes it"
                    ]
                )

        text, patched = payload.get("blueprint_text"), payload.get("patch_text")
        check_entry(folder, state, {**entry, **files}, time.time(), files.values(), text, patched)

    _refuse_now(home, cid, check)
    answer = _request(home, cid, payload, timeout)
    if as_json:
        echo_json(answer)
    else:
        click.echo(answer["index"])


@campaign.command("set")
@click.argument("campaign_id")
@click.option("--max-experiments", type=int, default=None, help="Attempts in all (baseline too).")
@click.option("--deadline", default=None, help="A duration from now (10h, 90m).")
@click.option("--per-experiment-timeout", default=None, help="Each experiment's time limit.")
@click.option("--target-metric", type=Number(), default=None, help="Stop once the best reaches it.")
@click.option("--continue", "go_on", is_flag=True, help="Another round of the default rule.")
@click.option("--timeout", type=NOT_NEGATIVE, default=60.0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the daemon's answer as JSON.")
def set_cmd(
    campaign_id: str,
    max_experiments: int | None,
    deadline: str | None,
    per_experiment_timeout: str | None,
    target_metric: float | None,
    go_on: bool,
    timeout: float,
    as_json: bool,
) -> None:
    """Set stop rules of a live campaign (a needs_decision or completed one goes on if no rule
    is met any more); print where it stands."""
    stop = {
        key: value
        for key, value in (
            ("max_experiments", max_experiments),
            ("deadline", deadline),
            ("per_experiment_timeout", per_experiment_timeout),
            ("target_metric", target_metric),
        )
        if value is not None
    }
    if not stop and not go_on:
        raise click.UsageError("nothing to set: give a stop rule or --continue")
    home = open_home()
    cid = resolve_or_fail(home, campaign_id)

    def check(folder: Path, state: CampaignState) -> None:
        from ajetd.hosts.campaignfolder import check_rules

        check_rules(folder, state, stop, time.time())

    _refuse_now(home, cid, check)
    answer = _request(home, cid, {"op": "set", "stop": stop, "continue": go_on}, timeout)
    if as_json:
        echo_json(answer)
    else:
        click.echo(answer.get("message", ""))


def stop_campaign(text: str, no_wait: bool, timeout: float, as_json: bool) -> None:
    """`ajetd campaign stop` (also `ajetd stop CAMPAIGN_ID`); --json: the campaign's status
    object (`campaign status --json`) as it stands when it returns."""
    home = open_home()
    cid = resolve_or_fail(home, text)
    answer = _request(home, cid, {"op": "stop"}, 60.0)

    def say(line: str) -> None:
        if as_json:
            echo_json(status_data(home, cid)[0])
        elif line:
            click.echo(line)

    if no_wait:
        say(answer.get("message", ""))
        return
    deadline = time.monotonic() + timeout
    while True:
        _, state, _ = read_campaign(home, cid, with_spec=False)
        if state.done:
            say(f"campaign {cid} {state.status}: {state.reason}")
            return
        if not home.daemon_running():  # nothing goes on until the next (walk87 F15)
            click.echo(
                f"ajetd: {DAEMON_ENDED} on {home.root}; the campaign stops when one starts",
                err=True,
            )
            say("")
            sys.exit(1)
        if time.monotonic() >= deadline:
            click.echo(
                f"campaign {cid} is still stopping after {timeout:g}s; the stop goes on "
                f"(`ajetd campaign wait {cid}` blocks until it ended)",
                err=True,
            )
            say("")
            sys.exit(124)
        time.sleep(POLL_S)


@campaign.command("stop")
@click.argument("campaign_id")
@click.option("--no-wait", is_flag=True, help="Return once the daemon took the request.")
@click.option("--timeout", type=NOT_NEGATIVE, default=120.0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for programs.")
@interruptible("the stop request stands (`ajetd campaign status ID` to see it)")
def stop_cmd(campaign_id: str, no_wait: bool, timeout: float, as_json: bool) -> None:
    """End a campaign: running experiments stopped cleanly, their rows written; --json: its
    status object (`campaign status --json`) as it stands when this returns."""
    stop_campaign(campaign_id, no_wait, timeout, as_json)


def show_status(text: str, as_json: bool) -> None:
    """`ajetd campaign status` (also `ajetd status CAMPAIGN_ID`)."""
    home = open_home()
    data, view = status_data(home, resolve_or_fail(home, text))
    if data.get("status") is None:  # not ended: the daemon's own trouble, where it leaves it unrun
        from ajetd.views.listing import daemon_lines

        for line in daemon_lines(home.daemon_running(), home.daemon_info(), 10**4, time.time()):
            said = "".join(part for part, _ in line)
            if said.startswith("daemon: "):
                click.echo(said, err=True)
    if as_json:
        echo_json(data)
    else:
        click.echo(view)


@campaign.command("status")
@click.argument("campaign_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for programs.")
def status_cmd(campaign_id: str, as_json: bool) -> None:
    """Where a campaign stands: goal, stop rules, best so far, running experiments, ledger."""
    show_status(campaign_id, as_json)


@campaign.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for programs.")
def list_cmd(as_json: bool) -> None:
    """Every campaign, claimed or still in the inbox: the oldest first, as they began (the
    ones still in the inbox after them, as they were submitted)."""
    from ajetd.adapters.control import SUFFIX
    from ajetd.views.campaign import summary_json

    home = open_home()
    ids = sorted(p.parent.name for p in (home.root / "campaigns").glob("*/state.json"))
    inbox = sorted(home.inbox.glob(f"*__*{SUFFIX}"), key=_submitted_at)
    ids += [p.name.partition("__")[0] for p in inbox]
    found = []
    for cid in ids:
        try:
            found.append(summary_json(status_data(home, cid)[0]))
        except click.ClickException as exc:  # one bad record hides no other campaign
            click.echo(f"ajetd: {exc.message}", err=True)
    claimed = [item for item in found if item.get("started_at") is not None]
    claimed.sort(key=lambda item: str(item["started_at"]))  # ISO in UTC; ties keep id order
    found = claimed + [item for item in found if item.get("started_at") is None]
    if as_json:
        echo_json(found)
        return
    if not found:
        click.echo("no campaigns")
    for item in found:
        phase = item["state"] + (f" ({item['status']})" if item["status"] else "")
        click.echo(f"{item['campaign_id']}  {item['name']:<20} {phase:<24} {item['progress']}")


def _submitted_at(path: Path) -> float:
    """When a campaign folder was put in the inbox (its time; 0 where it went meanwhile)."""
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


@campaign.command("wait")
@click.argument("campaign_id")
@click.option(
    "--after",
    type=click.IntRange(min=-1),
    default=None,
    metavar="INDEX",
    help="The row of the next experiment after INDEX (-1: from the first), at once if written.",
)
@click.option("--next", "next_one", is_flag=True, help="Until the next experiment ends.")
@click.option(
    "--timeout", type=NOT_NEGATIVE, default=None, help="Give up after S seconds (exit 124)."
)
@click.option("--json", "as_json", is_flag=True, help="The ended row (or the campaign) as JSON.")
@interruptible("the campaign goes on (`ajetd campaign status ID` to see it)")
def wait_cmd(
    campaign_id: str, after: int | None, next_one: bool, timeout: float | None, as_json: bool
) -> None:
    """Block until the campaign ends (0 completed with a best, 3 completed with none, 1
    stopped/refused, 2 needs a decision or waits for an `add`, 124 timeout); with --after
    INDEX until the row of the experiment after INDEX is written (every row once, in
    ledger order: pass the last index you got), with --next until an experiment in flight
    ends (0 keep/discard/smoke, 1 crash/stopped, 2 no such row will come: nothing in flight
    or planned)."""
    if after is not None and next_one:
        raise click.UsageError("--after and --next exclude each other (--after INDEX: every row)")
    wait_campaign(campaign_id, next_one, timeout, as_json, after)
