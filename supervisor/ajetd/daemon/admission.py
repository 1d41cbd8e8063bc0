"""Admission of a claimed blueprint: an accepted, queued run, or a rejected one with its report.

Every blueprint ends in one of the two; a rejected one is set aside with a note, and where its
result dir can be written it gets results.md and a `rejected` finish.flag (DESIGN §3).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ajetd.adapters import diskfull, git, inbox
from ajetd.adapters.launchsize import admitted_launch_problem
from ajetd.adapters.regular import NotRegularError
from ajetd.adapters.resultdir import in_home, in_use, placed_first, result_dir_problem
from ajetd.adapters.store import Home, expanded, json_text, write_atomic
from ajetd.core import cutshort, model, resultfiles
from ajetd.core.blueprint import (
    MAX_BYTES,
    Asked,
    Blueprint,
    asked,
    decode_blueprint,
    encoding_problem,
    extract_parts,
    parse_blueprint,
)
from ajetd.core.errors import AjetdError, BlueprintError
from ajetd.core.journal import REJECTED
from ajetd.core.model import Run
from ajetd.core.onefile import Writer
from ajetd.core.options import Options
from ajetd.core.runparts import Provenance
from ajetd.core.timefmt import iso
from ajetd.daemon import ending
from ajetd.frameworks import framework, nemorl
from ajetd.hosts.base import Host
from ajetd.hosts.configcopy import refusal, repoint, write_copy
from ajetd.hosts.fs import Fs, Names
from ajetd.hosts.preflight import Resolved, check_blueprint, nemo_launch
from ajetd.views import report

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Records:
    """The daemon's run records, for what admission changes of another run's (an earlier
    rejection's whose report it moves aside): `get` its record as the daemon holds it (None:
    read from the home), `keep` the new one in the daemon's memory, where a stale copy would
    be saved over it at its next change (its on_finish hook's)."""

    get: Callable[[str], Run | None] = lambda _run_id: None
    keep: Callable[[Run], None] = lambda _run: None


NO_RECORDS = Records()


def admit(
    home: Home,
    run_id: str,
    claimed: Path,
    source: str,
    now: float,
    busy_dirs: Mapping[str, str],
    val_writers: Mapping[str, Writer],
    host_for: Callable[[str, Options], Host],
    again: tuple[float, str] | None = None,
    full_seen: float | None = None,
    records: Records = NO_RECORDS,
    claim_dir: Callable[[str], str | None] = lambda _dir: None,
) -> tuple[Run, Options | None]:
    """Validate a claimed blueprint; return the saved run and, if accepted, its options.

    `busy_dirs` are the result dirs of live runs, with their ids: two runs never share one, nor
    a val file (`val_writers`: each live run's val file, its id and whether it runs here);
    `host_for`: where a run with these options runs (its codebase's git state is read there).
    `again`: a run admitted a second time (its record was damaged before its first trial): when
    it was submitted first, and the warning it carries. `full_seen`: when the daemon last saw
    `$AJETD_HOME` full (a file cut short then is said to have been). `records`: the daemon's
    records, which an earlier rejection whose report is moved aside is kept in (else read from
    the home). `claim_dir`: the result dir claimed for this run where every daemon on the
    machine sees it (`daemon.claimkeeper`), or why another daemon's run holds it.
    """
    run = Run(run_id=run_id, source=source, submitted_at=now)
    if again is not None:
        run = replace(run, submitted_at=again[0], warnings=(again[1],))
    read = _read(home, run, claimed, now, busy_dirs, again is None, full_seen, records)
    if isinstance(read, Run):
        return read, None
    text, bp, got = read
    # admitted again: the provenance.diff in its result dir is its first admission's
    own = (resultfiles.PROVENANCE_DIFF,) if again is not None else ()
    resolved, problems = check_blueprint(bp, val_writers, own)
    target = resolved.result_dir if resolved is not None else bp.result_dir
    problems = placed_first(target, problems, busy_dirs, home.root)
    if resolved is not None:  # paths too long for tmux together: refused, never tried
        dirs = (resolved.codebase_dir, resolved.result_dir)
        problems += [p for p in [admitted_launch_problem(home, run_id, *dirs, bp.options)] if p]
    if resolved is None or problems:
        return _reject(home, run, claimed, text, problems, now, bp, busy_dirs, got, records), None
    if bp.options.ssh is None:  # this machine's: another daemon here may have taken it meanwhile
        theirs = claim_dir(resolved.result_dir)
        if theirs is not None:  # its report is not written there: the dir is the other run's
            busy = {**busy_dirs, resolved.result_dir: ""}
            return _reject(home, run, claimed, text, [theirs], now, bp, busy, got, records), None
    host = host_for(run_id, bp.options)
    try:
        run = _accepted(run, bp, resolved, host.fs)
    except (OSError, AjetdError) as exc:  # the fixed copy of the config not written
        why = refusal(exc, resolved.yaml_path, resolved.review.changes)
        if why is None:
            raise  # not the blueprint's fault: admitted again once there is room
        return _reject(home, run, claimed, text, [why], now, bp, busy_dirs, got, records), None
    moved = _rejection_aside(home, Path(run.result_dir), run_id, now, records)
    if moved is not None:
        home.append_event(run_id, now, f"earlier rejection report moved to {moved}")
    Path(run.result_dir, resultfiles.LOGS).mkdir(parents=True, exist_ok=True)
    run = replace(run, provenance=_provenance(run, host, text))
    home.keep_submitted(run_id, text)  # what the reports show; its sha256 is the provenance's
    home.save_run(run)
    log.info("run %s: accepted %s (%s)", run_id, source, bp.purpose.splitlines()[0][:60])
    return run, bp.options


def moved_aside(run: Run, names_dir: Callable[[str], bool], moved: Path, real: str) -> Run:
    """The rejected run's record once its report is moved into `moved`: each of its fields
    that names the dir the report was in (`names_dir`: however spelt, through a link too),
    result_dir, result_real (`real`, where its links lead) and reports_dir, names `moved`, so
    no reader of `status`, `wait` or state.json is pointed at the next run's finish.flag
    there (walk92 F2: `reports_dir` stayed). Its other paths (codebase, venv) are not in it."""

    def follow(path: str, to: str) -> str:
        return to if path and names_dir(path) else path

    return replace(
        run,
        result_dir=follow(run.result_dir, str(moved)),
        result_real=follow(run.result_real, real),
        reports_dir=follow(run.reports_dir, str(moved)),
    )


def _rejection_aside(
    home: Home, result_dir: Path, by: str, now: float, records: Records
) -> Path | None:
    """Move an earlier rejection's report in `result_dir` into `rejected-<id>/` (`ending`),
    its record pointed there first: a daemon killed between the two leaves it pointing at a
    folder not made yet, never at the next run's reports. The run.json moved with it is
    written again from the new record (it names its folder too). Returns where it went."""
    found = ending.rejection_aside(result_dir)
    if found is None:
        return None
    earlier, moved = found
    pointed = _point_at(home, earlier, moved, by, now, records)
    ending.move_rejection_aside(result_dir, moved)
    if pointed is not None and (moved / resultfiles.RUN_RECORD).is_file():
        try:
            write_atomic(moved / resultfiles.RUN_RECORD, json_text(report.run_record(pointed)))
        except OSError as exc:  # its record, which status reads, points there already
            log.warning("run %s: its run.json in %s not written again: %s", earlier, moved, exc)
    return moved


def _point_at(
    home: Home, earlier: str, moved: Path, by: str, now: float, records: Records
) -> Run | None:
    """The earlier rejected run whose report is moved into `moved` points there: the
    fields of its record that name its report's folder (`moved_aside`), saved and kept in
    the daemon's memory (`records`), and its journal. A record that cannot be read or
    written is left as it is (said in the log); None then, and where nothing named it. The
    record as it points there (already, where a daemon was killed before the move)."""
    real = os.path.realpath(moved.parent)
    try:
        old = records.get(earlier) or home.load_run(earlier)
        named = lambda path: os.path.realpath(path) == real  # noqa: E731
        new = moved_aside(old, named, moved, os.path.join(real, moved.name))
        if new == old:  # pointed there already (a daemon killed before the move) or not its
            return old if str(moved) in (old.result_dir, old.reports_dir) else None
        home.save_run(new)
        records.keep(new)
        said = f"its rejection report moved to {moved}: run {by} took {moved.parent}"
        home.append_event(earlier, now, said)
    except (AjetdError, OSError) as exc:
        log.warning(
            "run %s: its record does not say its report moved to %s: %s", earlier, moved, exc
        )
        return None
    return new


def _read(
    home: Home,
    run: Run,
    claimed: Path,
    now: float,
    busy: Collection[str],
    whole_check: bool = True,
    full_seen: float | None = None,
    records: Records = NO_RECORDS,
) -> tuple[str, Blueprint, inbox.Read] | Run:
    """The claimed blueprint's text and parts, and what was read, or the run rejected with
    the reason. A file that may not be whole is never admitted (walk92 F1: a `cp` cut short
    by a full home was admitted with its `[ajetd]` options lost): one still being written
    when read, or whose bytes look cut short (`cutshort`; `whole_check`: not for a run
    admitted again, judged whole once). A rejection for missing parts says where the file's
    last line has no newline, so a cut is not read as the author's mistake alone."""
    try:
        got = inbox.read_regular(claimed, MAX_BYTES + 1)
    except NotRegularError as exc:  # swapped for a link or a FIFO after the scan: not read
        return _reject(home, run, claimed, "", [str(exc)], now, None, busy, None, records)
    raw = got.raw
    try:
        text = decode_blueprint(raw)
    except BlueprintError as exc:  # too large: its parts are read from what fits (the file
        text = decode_blueprint(raw[:MAX_BYTES])  # itself is kept whole: `inbox.set_aside`)
        return _reject(home, run, claimed, text, exc.problems, now, None, busy, got, records)
    unsure = got.unsure() if whole_check else None
    cut = cutshort.cut_sign(raw) if whole_check else None
    if unsure or cut:
        said = f"blueprint: {unsure or cut}"
        if cut and full_seen is not None and full_seen >= got.at - 1:
            said += (
                f"; $AJETD_HOME's file system was full at {iso(full_seen)}, after this file "
                f"was last written ({iso(got.at)})"
            )
        if unsure:
            said += "; once its writer is done, copy it into the inbox again"
        return _reject(home, run, claimed, text, [said], now, None, busy, got, records)
    encoding = encoding_problem(raw)
    if encoding is not None:
        return _reject(home, run, claimed, text, [encoding], now, None, busy, got, records)
    try:
        return text, parse_blueprint(text), got
    except BlueprintError as exc:
        problems = list(exc.problems)
        if cutshort.unended(raw):
            problems.append(
                "its last line has no newline: if the file was cut short (a copy that ran out "
                f"of room or was stopped), {cutshort.COPY_AGAIN}"
            )
        return _reject(home, run, claimed, text, problems, now, None, busy, got, records)


def _accepted(run: Run, bp: Blueprint, resolved: Resolved, fs: Callable[[], Fs]) -> Run:
    """The accepted run's record: what it launches (with the config fixes, written where it
    runs (`fs`, asked only when there are fixes), and for NeMo-RL the overrides it needs),
    where, and how its metrics are read."""
    command, changes = bp.launch_command, resolved.changes_made  # a warning lists the rest
    warnings = list(resolved.review.warnings)
    config_path = resolved.yaml_path
    config = resolved.config  # as the run reads it: the copy's, where --conf points at it
    if resolved.review.patches and resolved.copy_reaches:  # else no copy is written
        command, config_path, note = _patched_copy(
            resolved, command, bp.options.env, run.run_id, fs()
        )
        changes.append(note)
        if config_path != resolved.yaml_path:  # its yaml_overrides too (n_gpus_per_node=2)
            config = resolved.runs_with
    nemo = nemorl.is_nemo_launch(command)
    if nemo:
        command, notes = nemo_launch(bp, resolved.result_dir, command)
        changes += notes
    run = replace(
        run,
        purpose=bp.purpose,
        result_dir=resolved.result_dir,
        result_real=os.path.realpath(resolved.result_dir),
        max_time_s=bp.max_time_s,
        codebase_dir=resolved.codebase_dir,
        venv_dir=resolved.venv_dir,
        venv_exe=resolved.venv_exe,
        launch_command=command,
        blueprint_command=bp.launch_command,
        val_path=resolved.val_path,
        val_offset=resolved.val_size,  # count only validation lines written during this run
        keep_session_s=bp.options.keep_session_s,
        warnings=(*run.warnings, *warnings),  # each once (Run keeps its warnings unique)
        config_changes=tuple(changes),
        config_path=config_path,
        yaml_gpus=resolved.gpu_count,
        kind="nemo_rl" if nemo else "agentjet",
        metric=framework.run_metric(bp.options.plateau, config, command),
    )
    if nemo:  # its metrics come from its output, not from a val file
        run = replace(run, val_path=None, val_offset=0)
    return run


def _provenance(run: Run, host: Host, text: str) -> Provenance:
    """The codebase's git state now, where the run runs; a dirty tree's diff goes to
    `provenance.diff` in the result dir."""
    found, diff = host.provenance(run.codebase_dir)
    if diff:
        write_atomic(Path(run.result_dir) / resultfiles.PROVENANCE_DIFF, diff)
    return replace(found, blueprint_sha256=git.blueprint_hash(text))


def _patched_copy(
    resolved: Resolved, command: str, env: Mapping[str, str], run_id: str, fs: Fs
) -> tuple[str, str, str]:
    """Write the preflight's fixed config beside the original and point `--conf` at it.
    Returns the command, the config that will run, and a line for results.md. `env`: the
    blueprint's, which the command runs with (its CDPATH: `repoint`)."""
    copy = write_copy(resolved.yaml_path, resolved.runs_with, run_id, fs)
    moved = repoint(command, resolved.codebase_dir, resolved.yaml_path, copy, fs, env)
    if isinstance(moved, Names):
        return (
            command,
            resolved.yaml_path,
            f"config fixes written to {copy}, but the command's --conf does not name "
            f"exp_yaml_path ({moved.value}), so the command was left as it is",
        )
    return moved, copy, f"launched with the fixed copy {copy}"


def _said(bp: Blueprint) -> Asked:
    """A parsed blueprint's own reading of what `asked` reads from the parts of one that
    could not be parsed."""
    return Asked(bp.purpose, bp.result_dir, bp.max_time_s, bp.codebase_dir, bp.launch_command)


def _reject(
    home: Home,
    run: Run,
    claimed: Path,
    text: str,
    problems: list[str],
    now: float,
    bp: Blueprint | None,
    busy: Collection[str],
    got: inbox.Read | None = None,
    records: Records = NO_RECORDS,
) -> Run:
    if got is not None and not got.unsure() and inbox.changed_since(claimed, got):
        problems = [
            *problems,
            f"the file changed after ajetd read it ({len(got.raw)} bytes): it was still being "
            "written, so what was judged may be incomplete",
        ]
    reason = "; ".join(problems)
    said = _said(bp) if bp is not None else asked(extract_parts(text))
    result_dir = expanded(said.result_dir)
    # `reports_pending` on record until the reports are written (or found impossible): `ajetd
    # wait` and `stop` trust the record, so they neither race the flag nor wait for one that
    # a refused result dir (an earlier run's results, a live run's) will never get.
    writable = (
        bool(result_dir)
        and not in_use(result_dir, busy)
        and not in_home(result_dir, home.root)
        and result_dir_problem(result_dir) is None
    )
    shown = replace(run, purpose=said.purpose, result_dir=result_dir, max_time_s=said.max_time_s)
    shown = replace(shown, codebase_dir=said.codebase_dir, launch_command=said.command)
    run = model.reject(shown, reason, now)
    run = replace(run, reports_pending=writable)
    home.save_run(run)
    try:
        inbox.set_aside(home, run.run_id, run.source, claimed, text, reason, got)
    except OSError as exc:  # a copy for the user to fix; never a reason to leave no report
        if diskfull.is_full(exc):
            raise
        log.warning("run %s: its blueprint not kept in %s: %s", run.run_id, home.rejected, exc)
    home.append_event(run.run_id, now, f"{REJECTED}{reason}")
    log.warning("run %s: rejected %s: %s", run.run_id, run.source, reason)
    if not writable:
        return run
    run = replace(run, reports_pending=False, reports_dir=result_dir)
    try:
        _rejection_aside(home, Path(result_dir), run.run_id, now, records)
        ending.write_reports(home, run)
    except OSError as exc:
        log.warning("run %s: cannot write to %s: %s", run.run_id, result_dir, exc)
        run = replace(run, reports_dir="")
    home.save_run(run)
    return run
