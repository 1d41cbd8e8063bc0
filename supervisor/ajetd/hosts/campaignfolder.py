"""A campaign's folder (`campaign.yaml` and its blueprints): read and checked, submitted into
the inbox whole, and, for one copied in by hand, whether the copy has settled; and a
campaign's record read back from its `state.json`.

`ajetd campaign FOLDER` (the CLI) and the daemon's campaign runner read a folder the same way
here, so a folder the CLI accepted is one the daemon can start.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ajetd.adapters import campaigngit, writers
from ajetd.adapters.control import SUFFIX, new_campaign_id
from ajetd.adapters.diskfull import free_space, is_full
from ajetd.adapters.inbox import OPEN_HOLD_S, SETTLE_S
from ajetd.adapters.nvml import never_here
from ajetd.adapters.reach import NEVER_THROUGH, Unreachable, path_problem
from ajetd.adapters.regular import NotRegularError, kind_of, load_record, open_regular
from ajetd.adapters.store import OWNER_DIR, OWNER_FILE, Home
from ajetd.core import campaignspec as cs
from ajetd.core import cutshort, resultfiles, shelltokens, yamlpart
from ajetd.core.blueprint import (
    MAX_BYTES,
    Blueprint,
    decode_blueprint,
    encoding_problem,
    parse_blueprint,
)
from ajetd.core.campaignblueprint import in_yaml_copy, override_problems
from ajetd.core.campaignrecord import CampaignState, ExpState, check_stored, name_taken
from ajetd.core.durations import format_duration, parse_duration
from ajetd.core.errors import AjetdError, BlueprintError, DurationError
from ajetd.core.naming import safe_name
from ajetd.core.options import gpus_option
from ajetd.core.textfile import decode_text
from ajetd.core.timefmt import iso
from ajetd.frameworks import nemorl


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
    text = _read_text(folder / "campaign.yaml")
    if added or stop:
        text = cs.merged(text, added or [], stop or {})
    return cs.parse_campaign(text, files)


def load_folder(
    folder: Path,
    added: list[dict[str, Any]] | None = None,
    stop: dict[str, Any] | None = None,
    extra_files: frozenset[str] = frozenset(),
    *,
    admitted: bool,
) -> tuple[cs.CampaignSpec, Blueprint, str]:
    """The spec (with what was added and set live), its base blueprint (parsed), and the
    base's text; CampaignError if unusable. `admitted`: the folder of a campaign already
    taken up, whose base is read as an admitted run's copy is (`parse_blueprint`): a rule
    about what may be admitted that a later ajetd added (an option-like line outside the
    `[ajetd]` fence, `core.looseoptions`) refuses a folder where it comes in (submitted,
    started: `check_blueprints`), never a running campaign read again after an upgrade."""
    spec = read_spec(folder, added, stop, extra_files)
    try:
        base_text = read_blueprint(folder / spec.base, admitted)
        base = parse_blueprint(base_text, admitted=admitted)
    except AjetdError as exc:
        raise cs.CampaignError([f"base blueprint {spec.base}: {exc}"]) from exc
    return spec, base, base_text


def check_blueprints(
    folder: Path, spec: cs.CampaignSpec, given: Mapping[str, str] | None = None
) -> None:
    """CampaignError naming every problem of the blueprints that come in, read as any new
    blueprint is (no rule excepted): the base and each experiment's own blueprint in the
    folder (`given` None: a folder submitted or started), or only those `given` (an `add`'s,
    by the name it will have in the folder: not written there yet). A campaign taken up
    reads them again as admitted copies (`load_folder`), so each rule holds where they come
    in, and an upgrade never stops a campaign that runs."""
    texts = dict(given or {})
    if given is None:
        names = [spec.base, *(e.blueprint for e in cs.planned(spec) if e.blueprint)]
        for name in dict.fromkeys(names):
            try:
                texts[name] = read_blueprint(folder / name)
            except (AjetdError, OSError) as exc:
                raise cs.CampaignError([f"blueprint {name}: {exc}"]) from exc
    problems = []
    for name, text in texts.items():
        try:
            parse_blueprint(text)
        except AjetdError as exc:
            problems.append(f"{'base ' if name == spec.base else ''}blueprint {name}: {exc}")
    if problems:
        raise cs.CampaignError(problems)


def check_overrides(spec: cs.CampaignSpec, base: Blueprint, names: Collection[str] = ()) -> None:
    """Refuse experiments whose overrides cannot reach what the base runs (`names`: only
    those; all where empty). Checked where experiments come in (the folder submitted, the
    campaign's start, `campaign add`), not each time a running campaign's folder is read
    again: a campaign taken up by an earlier version goes on with the experiments it has."""
    problems = override_problems(spec, base, frozenset(names))
    problems += _hydra_problems(spec, base, frozenset(names))
    if problems:
        raise cs.CampaignError(problems)


def _hydra_problems(spec: cs.CampaignSpec, base: Blueprint, names: frozenset[str]) -> list[str]:
    """The experiments' overrides NeMo-RL's Hydra would refuse at once on the base's config
    (a key it lacks: `grpo.max_num_step=6`; Hydra's own fix said, `+key=`), taken after the
    base command's own as Hydra takes them (walk97b F4: each was a crash row, an attempt)."""
    from ajetd.hosts.preflight import base_config

    command = base.launch_command
    wanted = [
        (i, e)
        for i, e in enumerate(spec.experiments, 1)  # numbered as parse_campaign names them
        if e.overrides and not e.blueprint and (not names or e.name in names)
    ]
    if not wanted or not nemorl.is_nemo_launch(command):
        return []
    config = base_config(base)
    if config is None:
        return []
    own = nemorl.hydra_arguments(command)
    before = len(nemorl.override_problems(config, own))  # the base's: said by its own lint
    return [
        f"experiments[{i}] ({e.name}): {problem}"
        for i, e in wanted
        for problem in nemorl.override_problems(config, [*own, *e.overrides])[before:]
    ]


def check_metric(spec: cs.CampaignSpec, base: Blueprint) -> None:
    """CampaignError where the base's program is not known to write the campaign's metric
    (NeMo-RL's `val:accuracy`, whose records name it `accuracy`; `mean_reward` or `val_loss`
    on GRPO): every experiment would end with no value of it, a crash row, and no best
    (walk97b F1). Checked as lint checks a plateau rule's metric (`unwritten_metric`), for
    NeMo-RL (whose records ajetd reads from what it prints) and AgentJet's launcher; a program
    of its own writing its own val file may name its keys as it likes."""
    from ajetd.frameworks.framework import unwritten_metric
    from ajetd.hosts.preflight import base_config

    command = base.launch_command
    if not (nemorl.is_nemo_launch(command) or in_yaml_copy(command)):
        return
    found = unwritten_metric(spec.metric, base_config(base), command)
    if found is None:
        return
    named = "" if spec.metric_named else " (campaign.yaml names no metric: this is the default)"
    own = f"; the base's own is {found.own!r} (checkpointing.metric_name)" if found.own else ""
    raise cs.CampaignError(
        [
            f"metric: {found.said(spec.metric, own)}{named}: no experiment's run would record "
            "a value of it, so none could be judged or kept; name one it writes"
        ]
    )


def inside(path: str, codebase: str) -> str | None:
    """`path` relative to the codebase where it is an absolute path inside it (its folder's
    links resolved, as the run's checks resolve them; the file's own name kept, as the
    command names it), else None: a relative one is the codebase's wherever it runs."""
    expanded = os.path.expanduser(path)
    if not os.path.isabs(expanded):
        return None
    folder, name = os.path.split(os.path.normpath(expanded))
    real = os.path.join(os.path.realpath(folder), name)
    relative = os.path.relpath(real, os.path.realpath(codebase))
    return None if relative == ".." or relative.startswith("../") else relative


def into_worktree(codebase: str, worktree: str) -> Callable[[str], str]:
    """A path of the base blueprint as an experiment in `worktree` (the codebase's copy)
    reads it: one inside the codebase, given absolute, is the worktree's file (the patched
    one); any other as it is."""

    def moved(path: str) -> str:
        relative = inside(path, codebase)
        if relative is None:
            return path
        return worktree if relative == "." else os.path.join(worktree, relative)

    return moved


def check_paths(spec: cs.CampaignSpec, base: Blueprint) -> None:
    """CampaignError for base paths every experiment would be refused or misled by:
    exp_yaml_path outside exp_codebase_dir (each run is refused for it, each crash counted
    against max_experiments); with branch_prefix, a word of the command (or of a stage's)
    naming a file of the codebase by its absolute path, which in each experiment's worktree
    would still be the baseline checkout's file (its patch unseen, the row judged as if it
    ran). Said by `ajetd campaign FOLDER` at once, and at the daemon's start."""
    problems = []
    codebase = os.path.expanduser(base.codebase_dir)
    yaml_path = os.path.join(codebase, os.path.expanduser(base.yaml_path))
    if os.path.isabs(codebase) and inside(yaml_path, codebase) is None:
        problems.append(
            f"exp_yaml_path: {base.yaml_path} lies outside exp_codebase_dir {base.codebase_dir}"
            ": every experiment would be refused for it; give a config inside the codebase"
        )
    if spec.branch_prefix and os.path.isabs(codebase):
        commands = [base.launch_command, *(s.command for s in base.options.stages)]
        for word in dict.fromkeys(w for c in commands for w in shelltokens.words(c) or []):
            path = word.partition("=")[2] if word.startswith("-") else word
            if path and path[0] in "/~" and inside(path, codebase) is not None:
                problems.append(
                    f"exp_launch_command names {path} by its absolute path, inside "
                    f"exp_codebase_dir {base.codebase_dir}: each experiment runs in its own "
                    "worktree (branch_prefix), where that path is still the baseline "
                    "checkout's; write it relative to exp_codebase_dir (the command runs there)"
                )
    if problems:
        raise cs.CampaignError(problems)


def worktree_of(spec: cs.CampaignSpec, name: str) -> Path:
    """Where an experiment's worktree goes (with `branch_prefix`)."""
    return Path(spec.result_dir) / "worktrees" / name


def check_repo(spec: cs.CampaignSpec, base: Blueprint) -> None:
    """CampaignError for what the daemon would refuse of a campaign with `branch_prefix`
    from the repository as it is now: no repository, uncommitted changes (the whole campaign,
    as the daemon's start does), an experiment whose branch or worktree exists (that one, a
    crash row): `ajetd campaign FOLDER` says it at once, exit 2, and submits nothing (walk
    82, L6: it printed an id, and the campaign was refused a moment later)."""
    if not spec.branch_prefix:
        return
    top, _, refusal = campaigngit.baseline(base.codebase_dir)
    if refusal:
        raise cs.CampaignError([refusal])
    problems = []
    for index, exp in enumerate(cs.planned(spec)):
        there = campaigngit.taken(
            top, f"{spec.branch_prefix}/{exp.name}", worktree_of(spec, exp.name)
        )
        if there:
            problems.append(f"experiment {index} ({exp.name}): {there}")
    if problems:
        raise cs.CampaignError(problems)


def branches_needed(experiments: Collection[cs.Experiment]) -> str:
    """What of `experiments` needs a branch ("a patch", "`from`"), "" where nothing does."""
    return " and ".join(
        what
        for what, needed in (
            ("a patch", any(e.patch for e in experiments)),
            ("`from`", any(e.start for e in experiments)),
        )
        if needed
    )


def default_branches_problem(needed: str, prefix_note: str) -> str:
    """Why `needed` cannot be had (`prefix_note`: why there are no branches)."""
    return f"experiments: {needed} needs a branch: {prefix_note}"


def check_default_branches(spec: cs.CampaignSpec, base: Blueprint) -> None:
    """CampaignError where experiments need branches (a patch, `from`), campaign.yaml gives
    no branch_prefix, and the codebase cannot take the default one (no repository, changes
    not committed): the daemon would run them without one, the patch not applied."""
    needed = branches_needed(spec.experiments)
    if spec.branch_prefix or not spec.branches or not needed:
        return
    _, _, refusal = campaigngit.baseline(base.codebase_dir)
    if refusal:
        why = f"campaign.yaml gives no branch_prefix, and the default cannot be used: {refusal}"
        raise cs.CampaignError([default_branches_problem(needed, why)])


def check_entry(
    folder: Path,
    state: CampaignState,
    raw: dict[str, Any],
    now: float,
    files: Collection[str] = (),
    blueprint_text: str | None = None,
    patch_text: str | None = None,
) -> None:
    """CampaignError when `raw`, added live, is not a valid campaign.yaml entry for this
    campaign (its base, what was added and set before; `files`: the patch or blueprint it
    brings, by the names they will have in the folder; `blueprint_text`: that blueprint's
    text, checked as a new blueprint): as the daemon applies an `add`, and as `ajetd
    campaign add` checks it before filing, so the CLI refuses at once what the daemon would."""
    taken = name_taken(state, read_spec(folder, state.added, state.stop_set), raw.get("name"), now)
    if taken:  # said with the campaign's index, not as a position in a merged campaign.yaml
        raise cs.CampaignError([taken])
    spec, base, _ = load_folder(
        folder, [*state.added, raw], state.stop_set, frozenset(files), admitted=True
    )
    added = spec.experiments[-1]  # the one added: last
    problem = None if patch_text is None else cs.patch_problem(added.patch, patch_text)
    if problem:
        raise cs.CampaignError([problem])
    if blueprint_text is not None and added.blueprint:
        check_blueprints(folder, spec, {added.blueprint: blueprint_text})
    check_overrides(spec, base, [added.name])
    needed = branches_needed([added])
    if needed and not (spec.branch_prefix or state.branch_prefix) and state.git_note:
        # the default prefix could not be used at its start (`git_note` says why); before
        # its start nothing is known yet, and the daemon checks again as it applies the add
        raise cs.CampaignError([default_branches_problem(needed, state.git_note)])
    spec = replace(spec, branch_prefix=spec.branch_prefix or state.branch_prefix)
    if spec.branch_prefix and state.repo:
        branch = f"{spec.branch_prefix}/{added.name}"
        there = campaigngit.taken(state.repo, branch, worktree_of(spec, added.name))
        if there:
            raise cs.CampaignError(
                [f"experiment {len(cs.planned(spec)) - 1} ({added.name}): {there}"]
            )


def check_rules(
    folder: Path, state: CampaignState, given: dict[str, Any], now: float
) -> tuple[dict[str, Any], cs.CampaignSpec]:
    """(the rules to store, the spec with them) for stop rules set live (a deadline counts
    from now, stored from the start); CampaignError when they are not valid in campaign.yaml:
    as the daemon applies a `set`, and as `ajetd campaign set` checks it before filing."""
    rules = dict(given)
    bare = cs.bare_durations(rules)
    if bare:
        raise cs.CampaignError(bare)
    if "deadline" in rules:
        try:
            seconds = parse_duration(str(rules["deadline"]))
        except DurationError as exc:
            raise cs.CampaignError([f"deadline: {exc}"]) from exc
        rules["deadline"] = f"{int(now - state.started_at + seconds)}s"
    changed, _, _ = load_folder(folder, state.added, {**state.stop_set, **rules}, admitted=True)
    return rules, changed


def read_blueprint(path: Path, admitted: bool = False) -> str:
    """A blueprint of the folder (the base, an experiment's own), read as every blueprint is
    (`decode_blueprint`: at most 1 MiB; a UTF-16 file saved on Windows reads right) and only
    if it is a regular file (a FIFO would block the reader); AjetdError naming what is wrong
    (bytes in no encoding it reads: `encoding_problem`, as lint and admission say it; not
    for `admitted`, a campaign already taken up: an upgrade never stops one that runs)."""
    with open_regular(path) as handle:
        raw = handle.read(MAX_BYTES + 1)
    text = decode_blueprint(raw)
    problem = None if admitted else encoding_problem(raw)
    if problem is not None:
        raise BlueprintError([f"{path.name}: {problem}"])
    return text


def _read_text(path: Path) -> str:
    """campaign.yaml, read only if it is a regular file, at most its limit, as UTF-8 (or as
    its byte-order mark says: a UTF-16 file saved on Windows reads right, `core.textfile`);
    CampaignError naming what is wrong (never a traceback, never unbounded)."""
    limit = cs.CAMPAIGN_MAX_CHARS * 4  # UTF-8 bytes; the YAML reader then counts characters
    try:
        with open_regular(path) as handle:
            raw = handle.read(limit + 1)
    except NotRegularError as exc:
        raise cs.CampaignError([str(exc)]) from exc
    if len(raw) > limit:
        raise cs.CampaignError([f"{path.name}: larger than {limit // 1024} KiB"])
    try:
        return decode_text(raw, errors="strict")
    except UnicodeDecodeError as exc:
        where = f"{exc.reason} at byte {exc.start}"
        raise cs.CampaignError([f"{path.name}: not UTF-8 text ({where})"]) from exc


def _odd_files(folder: Path) -> list[str]:
    """The folder's entries that are neither regular files nor folders, links followed
    (copying a FIFO would block, a device would never end; a broken link cannot be copied)."""
    return [
        f"{path}: not a regular file "
        f"({kind_of(path.stat().st_mode) if path.exists() else 'a broken symbolic link'})"
        for path in sorted(folder.rglob("*"))
        if not (path.is_dir() or path.is_file())
    ]


# A folder copied in by hand that does not read as a whole campaign yet (its base not there,
# campaign.yaml not parsing, a file cut short) is held this long after its last change, as
# a copy in steps may be (walk92 F4: `cp campaign.yaml`, then `cp base.md` three seconds
# later, was refused for the base still to come); then taken as it is, and refused saying so.
FOLDER_WAIT_S = 60.0
HOLD_POLL_S = 1.0  # how often a held folder is looked at: the inbox's watch sees not inside


def check_units(folder: Path) -> None:
    """CampaignError for campaign.yaml's stop durations given as bare numbers
    (`cs.bare_durations`), where a campaign comes in."""
    try:
        data = yamlpart.load(_read_text(folder / "campaign.yaml"), max_chars=cs.CAMPAIGN_MAX_CHARS)
    except yamlpart.YamlError:  # said by parse_campaign
        return
    stop = data.get("stop") if isinstance(data, dict) else None
    problems = cs.bare_durations(stop) if isinstance(stop, dict) else []
    if problems:
        raise cs.CampaignError(problems)


def check_patches(folder: Path, spec: cs.CampaignSpec) -> None:
    """CampaignError naming each patch of campaign.yaml's experiments that holds no change
    (`patch_problem`): each would be a crash row, counted as an attempt."""
    problems = []
    for i, exp in enumerate(spec.experiments, 1):
        if not exp.patch:
            continue
        try:
            with open_regular(folder / exp.patch) as handle:
                raw = handle.read(MAX_BYTES + 1)
        except (OSError, NotRegularError):  # said by the folder's own checks
            continue
        problem = cs.patch_problem(exp.patch, raw.decode("utf-8", "replace"))
        if problem:
            problems.append(f"experiments[{i}] ({exp.name}): {problem}")
    if problems:
        raise cs.CampaignError(problems)


def check_whole(folder: Path, spec: cs.CampaignSpec) -> None:
    """CampaignError naming each of the folder's files that looks cut short (`cutshort`: a
    copy cut off by a full disk), campaign.yaml and the blueprints and patches it names: a
    base cut before its `[ajetd]` part would run every experiment on the default options."""
    named = [e.blueprint for e in spec.experiments] + [e.patch for e in spec.experiments]
    problems = []
    for name in dict.fromkeys(n for n in ["campaign.yaml", spec.base, *named] if n):
        try:
            with open_regular(folder / name) as handle:
                raw = handle.read(MAX_BYTES + 1)
        except (OSError, NotRegularError):  # said by the folder's own checks
            continue
        sign = cutshort.cut_sign(raw) if len(raw) <= MAX_BYTES else None
        if sign:
            problems.append(f"{name}: {sign}")
    if problems:
        raise cs.CampaignError(problems)


def name_in(folder: Path) -> str:
    """The name the folder's campaign.yaml gives, where it can be read ("": not)."""
    try:
        return cs.name_said(_read_text(folder / "campaign.yaml"))
    except (cs.CampaignError, OSError):
        return ""


def settles_at(entry: Path, now: float) -> float | None:
    """A folder copied into the inbox by hand: None once it can be taken (its campaign.yaml
    there, and nothing in it changed for SETTLE_S by ctime, which `cp -a` and rsync cannot
    set back as they do mtimes); else when to look at it again: the inbox's watch sees nothing
    inside folders, so the daemon wakes itself for a copy under way. Infinity: not (or not
    readably) a campaign folder, and quiet; looked at again only when something else wakes."""
    try:
        if not (entry / "campaign.yaml").is_file():
            at = entry.lstat().st_ctime + SETTLE_S
            return at if at > now else math.inf
        at = last_change(entry) + SETTLE_S
    except (OSError, ValueError):
        return math.inf
    return at if at > now else None


def last_change(entry: Path) -> float:
    """The latest ctime of the folder and of everything in it."""
    return max(p.lstat().st_ctime for p in [entry, *entry.rglob("*")])


@dataclass(frozen=True)
class Hold:
    """Why a settled folder copied in by hand is not taken yet (`line`, for `status`) and
    when to look again; or, once the wait is over, why it is taken only to be refused
    (`refuse`), or what its refusal must add (`note`)."""

    line: str = ""
    again: float = math.inf
    refuse: str = ""
    note: str = ""


def hold(entry: Path, now: float) -> Hold | None:
    """A settled campaign folder copied in by hand (`settles_at` said None): None when it
    can be taken, whole (nothing in it open for writing, and it reads as a campaign: its
    campaign.yaml parses, the files it names are there, none cut short); else a `Hold`. A
    file still open for writing is waited for while it changes, up to OPEN_HOLD_S unchanged
    (then the folder is taken and refused: it may be incomplete); a folder that does not read
    whole, up to FOLDER_WAIT_S after its last change (then taken, its refusal saying it was
    waited for): a copy in steps is taken whole, a broken folder still gets its answer."""
    shown = f"{entry.parent.name}/{entry.name}"
    try:
        changed = last_change(entry)
        files = [p for p in sorted(entry.rglob("*")) if p.is_file() and not p.is_symlink()]
    except (OSError, ValueError):
        return None  # taken, and said by the campaign's checks
    writing = [p for p in files if writers.open_for_writing(p)]
    if writing:
        inside = safe_name(str(writing[0].relative_to(entry)))
        bound = changed + OPEN_HOLD_S
        if now >= bound:
            return Hold(
                refuse=f"{inside} in the folder was still open for writing by a process, "
                f"unchanged for {format_duration(OPEN_HOLD_S)}: the folder may be incomplete, "
                "so the campaign was not started; once the copy is done, copy it in again"
            )
        return Hold(
            f"{shown} is held: {inside} in it is still open for writing by a process "
            f"(unchanged since {iso(changed)}): taken once it is closed; refused if it is "
            f"still open and unchanged at {iso(bound)}",
            min(now + HOLD_POLL_S, bound),
        )
    try:
        spec, _, _ = load_folder(entry, admitted=False)
        check_whole(entry, spec)
    except (AjetdError, OSError) as exc:  # a CampaignError, or what reading it met
        bound = changed + FOLDER_WAIT_S
        waited = (
            f"the folder was held while it did not read as a whole campaign, and taken as it "
            f"was once unchanged for {format_duration(FOLDER_WAIT_S)}: it may have been copied "
            "in part"
        )
        if now >= bound:
            return Hold(note=waited)
        problems = exc.problems if isinstance(exc, cs.CampaignError) else [str(exc)]
        return Hold(
            f"{shown} is held: it does not read as a whole campaign yet ({problems[0]}): "
            f"taken once it does (a copy still under way), or as it is, to be refused, "
            f"if it is still so and unchanged at {iso(bound)}",
            min(now + HOLD_POLL_S, bound),
        )
    return None


def check_gpus(spec: cs.CampaignSpec, base: Blueprint) -> None:
    """CampaignError where every experiment asks for GPUs this machine can never give (the
    campaign's `gpus:`, else the base blueprint's): each would crash at its launch, and the
    whole budget was spent in seconds (walk87 F11). Runs on an SSH host or through Slurm are
    placed on other machines and are not judged here."""
    if base.options.ssh is not None or base.options.slurm is not None:
        return
    gpus = base.options.gpus
    if spec.gpus is not None:
        problems: list[str] = []
        gpus = gpus_option(spec.gpus, problems)
        if problems:  # said by the campaign's own checks
            return
    reason = never_here(gpus, None)
    if reason is not None:
        where = "campaign.yaml's gpus" if spec.gpus is not None else "the base blueprint's gpus"
        raise cs.CampaignError([f"{where}: {reason}: every experiment would fail at its launch"])


def check_result_dir(result_dir: Path) -> None:
    """CampaignError when a new campaign cannot use `result_dir`: one that cannot be had (a
    symbolic link loop, a link to nothing, a part that is a file: `reach.path_problem`), or
    that holds what a campaign writes there (another campaign's ledger, report or picture:
    its rows mixed with theirs, its campaign.md overwritten; nothing is ever overwritten, as
    for a run's result dir)."""
    try:
        reached = path_problem(result_dir)
        earlier = (
            []
            if reached is not None
            else [
                name for name in resultfiles.CAMPAIGN_WRITTEN if os.path.lexists(result_dir / name)
            ]
        )
    except OSError as exc:
        raise cs.CampaignError(
            [f"result_dir: {result_dir} cannot be checked: {exc.strerror}"]
        ) from exc
    if isinstance(reached, Unreachable):
        hint = NEVER_THROUGH if reached.dangling else ""
        raise cs.CampaignError([f"result_dir: {reached.text}{hint}"])
    if earlier:
        raise cs.CampaignError(
            [
                f"result_dir: {result_dir} already holds {', '.join(earlier)} of an earlier "
                "campaign; ajetd never overwrites results (choose a new result_dir, or move "
                "them out of it)"
            ]
        )


def check_folder(folder: Path) -> cs.CampaignSpec:
    """Every check a campaign folder meets where it is submitted (`ajetd campaign FOLDER`,
    `ajetd lint FOLDER`): its spec, or CampaignError naming what is wrong."""
    odd = _odd_files(folder)
    if odd:
        raise cs.CampaignError(odd)
    spec, base, _ = load_folder(folder, admitted=False)
    check_units(folder)
    check_whole(folder, spec)
    check_patches(folder, spec)
    check_blueprints(folder, spec)
    check_overrides(spec, base)
    check_metric(spec, base)
    check_paths(spec, base)
    check_gpus(spec, base)
    check_result_dir(Path(spec.result_dir))
    check_repo(spec, base)
    check_default_branches(spec, base)
    return spec


def submit_folder(home: Home, folder: Path) -> str:
    """`ajetd campaign FOLDER`: checked, then copied into the inbox atomically; its id."""
    spec = check_folder(folder)
    home.ensure()
    campaign_id = new_campaign_id(home)
    tmp = home.inbox / f".{campaign_id}.tmp"
    try:
        copy_folder(folder, tmp)
        make_owner_only(tmp)
        tmp.rename(home.inbox / f"{campaign_id}__{spec.name}{SUFFIX}")
    except OSError as exc:  # a full or read-only home: said, and no half copy left behind
        shutil.rmtree(tmp, ignore_errors=True)
        # a full disk is the inbox's (a copy's ENOSPC names its source file too); an error
        # naming one file alone, outside the copy, is that file of the user's folder
        source = exc.filename2 is None and not str(exc.filename or tmp).startswith(str(tmp))
        which = f"{exc.filename}: " if source and not is_full(exc) else ""
        raise AjetdError(
            f"cannot copy the campaign folder {folder} into {home.inbox}: {which}"
            f"{exc.strerror or exc} ({free_space(home.inbox)} free); nothing was submitted"
        ) from exc
    return campaign_id


def copy_folder(source: Path, target: Path) -> None:
    """`source` copied to a new `target`, links followed (as `_odd_files` judged it), stopping
    at the first error and raising it as it came: its errno and file kept, so a full disk is
    said as one (`shutil.copytree` gathers every file's error into one `shutil.Error` of
    their texts, which has no errno and read as a list of tuples)."""
    target.mkdir()
    for entry in sorted(source.iterdir()):
        if entry.is_dir():
            copy_folder(entry, target / entry.name)
        else:
            shutil.copy2(entry, target / entry.name)


def make_owner_only(folder: Path) -> None:
    """A campaign folder taken into the home keeps no mode of the user's copy: its folders
    700, its files 600, as the rest of the home; links are left as they are, never followed."""
    for top, dirs, files in os.walk(folder):
        os.chmod(top, OWNER_DIR)
        for name in files:
            path = os.path.join(top, name)
            if not os.path.islink(path):
                os.chmod(path, OWNER_FILE)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(top, d))]


def load_state(path: Path) -> CampaignState:
    """A campaign's record, from its `state.json` (ValueError where it is damaged: larger
    than any record is among them, never read)."""
    data = load_record(path)
    if not isinstance(data, dict):
        raise TypeError("not a JSON object")
    check_stored(data)
    data["experiments"] = [ExpState(**e) for e in data.get("experiments", [])]
    return CampaignState(**data)
