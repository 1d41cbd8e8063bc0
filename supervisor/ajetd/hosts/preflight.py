"""Checks of a parsed blueprint against the place it will run: the filesystem here or on its
SSH host, the Slurm partitions; read-only, one message per problem.

Used by `ajetd lint` and by the daemon before a run is accepted, so both say the same thing.
It is in `hosts` because it asks each place (`LocalFs`, `sshcmd.RemoteFs`, `slurm`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ajetd.adapters.reach import Unreachable, path_problem
from ajetd.adapters.regular import NotRegularError, read_small
from ajetd.adapters.resultdir import (
    full_disk,
    holds_problem,
    result_dir_problem,
    shared_result_dir,
    unexpanded,
    val_file_problem,
)
from ajetd.adapters.samefile import one_file_as
from ajetd.core import fixdomain, launchshape, onefile, resultfiles
from ajetd.core.blueprint import Blueprint
from ajetd.core.errors import AjetdError
from ajetd.core.redirect import redirect_warnings
from ajetd.core.shellenv import launch_env
from ajetd.core.workdir import Workdir, workdir
from ajetd.frameworks import gpuask, nemorl
from ajetd.frameworks.agentjet import (
    ConfigReview,
    apply_patches,
    conf_argument,
    override_patches,
    resolve_interpolations,
    review,
)
from ajetd.frameworks.framework import unwritten_metric
from ajetd.hosts import slurm
from ajetd.hosts.configcopy import copy_refused, refusal
from ajetd.hosts.fs import (
    LOCAL,
    Fs,
    Names,
    config_named,
    read_composed,
    read_config,
    read_inherited,
)
from ajetd.hosts.program import missing_program
from ajetd.hosts.sshcmd import RemoteFs, SshError


@dataclass(frozen=True)
class Resolved:
    """A blueprint's paths made absolute, plus what the YAML says that ajetd needs."""

    codebase_dir: str
    venv_exe: str
    venv_dir: str
    yaml_path: str
    result_dir: str
    val_path: str | None
    config: dict[str, Any] = field(default_factory=dict)
    review: ConfigReview = field(default_factory=ConfigReview)
    val_size: int = 0  # the val file's size now: only lines written after it are this run's
    # `config` with every patch of `review` (the fixed copy's content; `config` where none)
    runs_with: dict[str, Any] = field(default_factory=dict)
    # whether a fixed copy reaches what runs: the command's --conf names exp_yaml_path, as
    # far as ajetd can tell (no --conf, a shell variable in it, a cd before it: it does not)
    copy_reaches: bool = True
    # the GPUs its config asks for, as its framework composes it (`gpuask.gpu_count`): kept
    # in the run's record, where placement checks a `gpus: all` run against what it gets
    gpu_count: int | None = None

    @property
    def changes_made(self) -> list[str]:
        """The review's changes as made: in the copy that runs, so none where --conf cannot
        be pointed at one (a warning lists them as what the config would need). The one
        answer for lint, admission's record (status's warnings) and results.md."""
        return list(self.review.changes) if self.copy_reaches else []

    @property
    def config_run(self) -> dict[str, Any]:
        """The config as the run reads it: the fixed copy's where --conf reaches one."""
        return self.runs_with if self.review.patches and self.copy_reaches else self.config


def _abs(path: str, fs: Fs = LOCAL) -> str:
    return os.path.normpath(fs.expand(path))


def _inside(path: str, folder: str, fs: Fs) -> bool:
    real, base = fs.realpath(path), fs.realpath(folder)
    return os.path.commonpath([real, base]) == base


def _val_value(config: Any) -> str | None:
    """The config's val file path as AgentJet opens it (interpolations resolved), or None."""
    try:
        value = config["ajet"]["trainer_common"]["val_print_to_markdown_file_path"]
    except (KeyError, TypeError):
        return None
    if not isinstance(value, str) or not value.strip():
        return None
    if "${" in value and isinstance(config, Mapping):  # as Hydra resolves it (walk86 F12)
        value = resolve_interpolations(value, config, os.environ) or value
    return value.strip()


def _val_path(config: Any, folder: str | None) -> str | None:
    """The val file, from `folder`, where the program runs (`workdir`; None: not known, and
    a relative path then names no file ajetd can watch: None)."""
    value = _val_value(config)
    if value is None or (folder is None and not os.path.isabs(value)):
        return None
    # `~` as written: AgentJet opens the path as it is (Python expands no `~`), so a `~/v.md`
    # is a folder `~` under its working dir; ajetd read `$HOME/v.md` (walk86 F12)
    return os.path.normpath(os.path.join(folder or "/", value))


def _val_unplaced(
    found: ConfigReview,
    config: Any,
    moved: Workdir,
    result_dir: str,
    reaches: bool,
    runs_with: dict[str, Any],
) -> tuple[str | None, dict[str, Any]]:
    """The val file of a run whose command moves where ajetd cannot tell (`cd $DIR`) and
    whose config names it relative to that folder: the copy of the config (where --conf
    reaches it) gives the run `val_results.md` in its result dir; without one, no file is
    watched, and a warning says why (ajetd never guesses the folder: the codebase's file
    would be another's, walk93 F2). (None, runs_with) where the path is no relative one."""
    value = _val_value(config)
    if value is None or os.path.isabs(value):
        return None, runs_with
    if not reaches:
        found.warnings.append(
            f"ajet.trainer_common.val_print_to_markdown_file_path {value} is relative to the "
            f"folder the program runs in, which the command's `{moved.said()}` moves to where "
            "ajetd cannot tell: its validation records are not read (no metrics, no plateau "
            "rule); give the path in full, or `cd` to a folder written out"
        )
        return None, runs_with
    target = os.path.join(result_dir, resultfiles.VAL_FILE)
    found.patches[VAL_KEY] = target
    found.changes.append(
        f"ajet.trainer_common.val_print_to_markdown_file_path: {value} → {target} (relative "
        f"to the folder the program runs in, which the command's `{moved.said()}` moves to "
        "where ajetd cannot tell)"
    )
    return target, apply_patches(runs_with, {VAL_KEY: target})


def _logged_in() -> frozenset[str]:
    """Loggers with a stored login (`swanlab login`, `wandb login`): they need no key in env."""
    home = Path.home()
    found = set()
    if (home / ".swanlab" / ".netrc").exists():
        found.add("swanlab")
    try:
        if "api.wandb.ai" in read_small(home / ".netrc"):
            found.add("wandb")
    except (OSError, ValueError, NotRegularError):  # larger than any .netrc: never read
        pass
    return frozenset(found)


_SETS_GPUS = re.compile(r"(?:^|[\s;&|(])(?:export[ \t]+)?CUDA_VISIBLE_DEVICES=")


def _own_placement(command: str) -> list[str]:
    """A command that sets CUDA_VISIBLE_DEVICES itself overrides the GPUs ajetd placed the run
    on (another run may hold them): said, not refused (the user may mean it)."""
    if not _SETS_GPUS.search(command):
        return []
    return [
        "the command sets CUDA_VISIBLE_DEVICES itself, overriding the GPUs ajetd gives the "
        "run (other runs may hold them); say which GPUs with `[ajetd] gpus: [0, 1]` instead"
    ]


def unreachable(path: str, fs: Fs) -> str:
    """`" (why)"` where the path on this machine cannot be had for a reason that "does not
    exist" would hide (`path_problem`: a loop, a link to nothing, a part that is a file, a
    folder not to be looked into); "" elsewhere, or on an SSH host."""
    if fs is not LOCAL or not os.path.isabs(path):
        return ""
    try:
        found = path_problem(Path(path))
    except OSError:
        return ""
    return f" ({found.text})" if isinstance(found, Unreachable) else ""


def remote_fs(bp: Blueprint) -> Fs | str:
    """The blueprint's filesystem: this machine's, or its SSH host's once it answers (else
    the problem, naming the host)."""
    if bp.options.ssh is None:
        return LOCAL
    try:
        return RemoteFs(bp.options.ssh)
    except SshError as exc:
        return f"ssh: {exc}"


def _load_yaml(yaml_path: str, codebase: str, fs: Fs, where: str, problems: list[str]) -> Any:
    """The config as a mapping, or None with the reason added to `problems`."""
    if not os.path.isabs(codebase) or not fs.isdir(codebase):
        return None
    if not _inside(yaml_path, codebase, fs):
        problems.append(f"exp_yaml_path: {yaml_path} lies outside exp_codebase_dir {codebase}")
        return None
    if not fs.isfile(yaml_path):
        problems.append(
            f"exp_yaml_path: {yaml_path} does not exist{where}{unreachable(yaml_path, fs)}"
        )
        return None
    config = read_config(yaml_path, fs, where)
    if isinstance(config, str):
        problems.append(f"exp_yaml_path: {config}")
        return None
    return config


def base_config(bp: Blueprint) -> Mapping[str, Any] | None:
    """The config `bp`'s exp_yaml_path names, read as its checks read it (NeMo-RL's
    `defaults:` resolved; on its SSH host), or None where it cannot be read (its own checks
    say why): what a campaign's metric and overrides are checked against."""
    fs = remote_fs(bp)
    if isinstance(fs, str):
        return None
    try:
        codebase = _abs(bp.codebase_dir, fs)
        yaml_path = _abs(os.path.join(codebase, fs.expand(bp.yaml_path)), fs)
        config = _load_yaml(yaml_path, codebase, fs, "", [])
        if isinstance(config, Mapping) and nemorl.is_nemo_launch(bp.launch_command):
            config = read_inherited(yaml_path, fs)  # as NeMo-RL composes it
    except SshError:  # the host stopped answering: its own checks say so
        return None
    return config if isinstance(config, Mapping) else None


def _codebase_and_venv(bp: Blueprint, fs: Fs, where: str, problems: list[str]) -> tuple[str, str]:
    """The codebase dir and the venv's python, resolved (`where`: on which host) and checked."""
    codebase = _abs(bp.codebase_dir, fs)
    if not os.path.isabs(codebase):
        problems.append(
            f"exp_codebase_dir: {bp.codebase_dir} is not an absolute path"
            + unexpanded(bp.codebase_dir)
        )
    elif not fs.isdir(codebase):
        problems.append(
            f"exp_codebase_dir: {codebase} does not exist{where} or is not a directory"
            + unreachable(codebase, fs)
        )
    venv_exe = _abs(bp.venv_exe, fs)
    if fs.isdir(venv_exe) and fs.isfile(os.path.join(venv_exe, "bin", "python")):
        venv_exe = os.path.join(venv_exe, "bin", "python")  # the venv folder itself was given
    elif os.path.basename(venv_exe) == "activate" and fs.isfile(venv_exe):
        python = os.path.join(os.path.dirname(venv_exe), "python")  # its activate script
        venv_exe = python if fs.isfile(python) else venv_exe
    if not os.path.isabs(venv_exe):
        problems.append(
            f"exp_venv_exe: {bp.venv_exe} is not an absolute path{unexpanded(bp.venv_exe)}"
        )
    elif not fs.exists(venv_exe):
        problems.append(
            f"exp_venv_exe: {venv_exe} does not exist{where}{unreachable(venv_exe, fs)}"
        )
    elif fs.isdir(venv_exe) or not fs.executable(venv_exe):
        problems.append(f"exp_venv_exe: {venv_exe} is not an executable file")
    return codebase, venv_exe


VAL_KEY = ("ajet", "trainer_common", "val_print_to_markdown_file_path")


@dataclass(frozen=True)
class Sharer:
    """A live run that writes the val file a new run would write."""

    run_id: str
    path: str  # the val file as that run names it
    real: str  # the file both paths name, as the kernel resolves it

    def said(self, val_path: str) -> str:
        """The file named for the messages (`onefile.spelt`): both spellings and the real
        path where they differ (a symlinked codebase, a `..`: walk93 F1)."""
        return onefile.spelt(val_path, self.run_id, self.path, self.real)


def val_writer(
    val_path: str, writers: Mapping[str, onefile.Writer], local: bool = True
) -> Sharer | None:
    """The live run (`writers`: each live run's val file, its id and whether it runs here)
    that writes the file `val_path` names, however either is spelt (`samefile.one_file_as`: a
    symlink, a `..`, a bind mount, a case-blind disk); None where none does. `local`: the file
    is on this machine; where either is another's (an SSH host's), compared as written
    (`onefile.same_file`)."""
    compare = onefile.same_file(val_path, one_file_as)  # val_path resolved once
    for path, writer in writers.items():
        real = compare(path, local and writer.here)
        if real is not None:
            return Sharer(writer.run_id, path, real)
    return None


def _own_val_file(
    found: ConfigReview, val_path: str, result_dir: str, reaches: bool, sharer: Sharer
) -> str:
    """The val file this run writes when `val_path` is written by live run `sharer` too.

    AgentJet appends every validation to one file; two runs on one file at once would each
    read the other's results as their own (and stop on each other's plateau). The copy of the
    config points this run at its own file in its result dir; without `--conf` there is no
    copy, and the run keeps the file and waits in the queue until no earlier run writes it
    (`placement.val_file_wait`): not invalid, only not yet (a warning says so).
    """
    target = os.path.join(result_dir, "val_results.md")
    if not reaches:
        found.warnings.append(
            f"ajet.trainer_common.val_print_to_markdown_file_path {sharer.said(val_path)} is "
            f"written by live run {sharer.run_id}, and the command's --conf cannot be pointed "
            "at a copy that gives this run a file of its own: it waits in the queue until "
            "that run ends"
        )
        return val_path
    found.patches[VAL_KEY] = target
    found.changes.append(
        f"ajet.trainer_common.val_print_to_markdown_file_path: {val_path} → {target} "
        f"(live run {sharer.run_id} writes {sharer.said(val_path)}; each run reads only its "
        "own results)"
    )
    return target


def _other_config(
    bp: Blueprint, codebase: str, yaml_path: str, config: Any, fs: Fs, where: str
) -> str | None:
    """The config flag of the program, AgentJet's `--conf` (exp_yaml_path is an `ajet:`
    config) or NeMo-RL's `--config` (a `run_*.py` launch), naming a file that does not exist
    where the command runs (it would fail at once: `FileNotFoundError`), or another file than
    exp_yaml_path (ajetd would check, fix and read the results of a config that does not
    run). Only where it can tell: no `cd` moves the command elsewhere, no shell variable in
    it; `fs` is where it runs (this machine, or the SSH host: `where` names it)."""
    command = bp.launch_command
    if nemorl.is_nemo_launch(command):
        flag, named = "--config", conf_argument(command, "--config")
    elif isinstance(config, Mapping) and "ajet" in config:
        flag, named = "--conf", conf_argument(command)
    else:
        return None
    answer = config_named(named, command, codebase, yaml_path, fs, bp.options.env)
    if answer.names is not Names.OTHER or answer.path is None:
        return None
    moved = workdir(command, bp.options.env)
    runs_in = f"exp_codebase_dir {codebase}"
    if moved.steps:
        runs_in = f"{moved.folder(codebase, fs.expand, fs.isdir)} (`{moved.said()}` from {runs_in})"
    if not fs.isfile(answer.path):
        return (
            f"exp_launch_command: {flag} {named} names {answer.path}, which does not exist"
            f"{where} (the command runs in {runs_in}; exp_yaml_path is "
            f"{bp.yaml_path}): the program would stop at once; name the config from "
            "the folder it runs in"
        )
    return (
        f"exp_launch_command: {flag} {named} is not exp_yaml_path ({bp.yaml_path}): it names "
        f"{answer.path}{where} (the command runs in {runs_in}), exp_yaml_path {yaml_path}; "
        "ajetd would check and fix that config and read its validation results while the "
        "command runs another; name the same file in both, from the folder the program runs in"
    )


def nemo_launch(bp: Blueprint, result_dir: str, command: str = "") -> tuple[str, list[str]]:
    """A NeMo-RL command (`command`, else the blueprint's) with the overrides a supervised
    run needs, and each as the change noted: admission runs and records them, `ajetd lint`
    lists them. As it is, with none, where ajetd adds none (not NeMo-RL; a compound line:
    `nemorl.compound_warnings` says so)."""
    command = command or bp.launch_command
    if not nemorl.is_nemo_launch(command) or not nemorl.overridable(command):
        return command, []
    env = launch_env(os.environ, bp.options.env, bp.launch_command)
    command, notes = nemorl.launch_overrides(command, result_dir, env)
    return command, [f"NeMo-RL override {n}" for n in notes]


def _serverless_client(bp: Blueprint, config: Any) -> list[str]:
    """A swarm client (its YAML enables swarm mode) for which ajetd starts no server: seed
    001 starts the server first. Not the server itself (`ajet-swarm`, `--swarm-server`)."""
    ajet = config.get("ajet") if isinstance(config, Mapping) else None
    if not isinstance(ajet, Mapping) or ajet.get("enable_swarm_mode") is not True:
        return []
    command = bp.launch_command
    if bp.options.swarm is not None or "ajet-swarm" in command or "--swarm-server" in command:
        return []
    return [
        "ajet.enable_swarm_mode is True: a swarm client, whose server must run first (seed "
        "001); ajetd starts none without `[ajetd] swarm: {port: ...}`, with which it starts "
        "`ajet-swarm start` first (or uses a server already answering on that port)"
    ]


def _fix_floors(bp: Blueprint, config: Any) -> list[str]:
    """An `allow_fixes` min at or above what the config holds for its key (`min: 16` on a
    micro batch size of 8): no fix of that key can ever be made (walk91 F1)."""
    if not isinstance(config, Mapping) or not bp.options.allow_fixes:
        return []
    from ajetd.core import remedy  # here: its imports (the options, RE2) only where needed

    return [
        warning
        for key, (low, _high) in bp.options.allow_fixes.items()
        for warning in fixdomain.current_warnings(
            key, low, [float(v) for _p, v in remedy.held(config, key)]
        )
    ]


def _hydra_overrides(command: str, yaml_path: str, fs: Fs) -> list[str]:
    """The command's Hydra overrides NeMo-RL would refuse at once (a key its config, its
    `defaults:` merged, lacks; a word with no `=`: `nemorl.override_problems`), as a run
    that fails in a second (walk97b F4)."""
    config = read_inherited(yaml_path, fs)
    if isinstance(config, str):  # said by the config's own checks
        return []
    found = nemorl.override_problems(config, nemorl.hydra_arguments(command))
    return [f"exp_launch_command: {problem}" for problem in found]


def _plateau_metric(bp: Blueprint, config: Any) -> list[str]:
    """A plateau metric the framework is not known to write (`mean_rewad`): the rule would
    never act (`framework.unwritten_metric`, which a campaign's metric is checked by too)."""
    rule = bp.options.plateau
    if rule is None or not rule.named:  # the default follows the run's own
        return []
    found = unwritten_metric(
        rule.metric, config if isinstance(config, Mapping) else None, bp.launch_command
    )
    if found is None:
        return []
    own = f"; without `metric:` the rule judges the run's own, {found.own!r}" if found.own else ""
    said = found.said(rule.metric, own)
    return [
        f"plateau.metric: {said}; if the program writes it, the rule reads it, else the rule "
        "never acts"
    ]


def _overridden(
    bp: Blueprint, codebase: str, yaml_path: str, config: dict[str, Any], fs: Fs, said: bool
) -> tuple[ConfigReview, dict[str, Any]]:
    """The blueprint's `yaml_overrides` as patches of the config's copy, or the problems:
    they reach what runs only where `--conf` names exp_yaml_path (the copy takes its place;
    `said`: a --conf naming another file was refused already); and the config with them."""
    found, overridden = override_patches(config, bp.options.yaml_overrides)
    conf = conf_argument(bp.launch_command)
    named = config_named(conf, bp.launch_command, codebase, yaml_path, fs, bp.options.env).names
    if named is Names.NOTHING:
        found.problems.append(
            "yaml_overrides: the launch command passes no --conf, so the copy of "
            "exp_yaml_path they are set in cannot reach what runs"
        )
    elif named is Names.UNKNOWN:
        found.problems.append(
            f"yaml_overrides: ajetd cannot tell which file --conf {conf} is (a shell variable "
            "in it, or a cd in the command), so it cannot point it at the copy they are set "
            "in; name exp_yaml_path's file from exp_codebase_dir in --conf"
        )
    elif named is Names.OTHER and not said:
        found.problems.append(
            f"yaml_overrides: --conf {conf} is not exp_yaml_path "
            f"({bp.yaml_path}), so the copy of it they are set in would not be what runs"
        )
    return found, overridden


def _with_overrides(overrides: ConfigReview, found: ConfigReview) -> ConfigReview:
    """The review of the overridden config, after the overrides themselves: one copy holds
    both, the review's fix last where both set a key (it was made on the overridden config)."""
    return ConfigReview(
        problems=[*overrides.problems, *found.problems],
        warnings=[*overrides.warnings, *found.warnings],
        patches={**overrides.patches, **found.patches},
        changes=[*overrides.changes, *found.changes],
    )


def _val_file(
    bp: Blueprint,
    found: ConfigReview,
    val_path: str | None,
    result_dir: str,
    reaches: bool,
    val_writers: Mapping[str, onefile.Writer] | None,
    runs_with: dict[str, Any],
    theirs: str | None,
    local: bool = True,
) -> tuple[str | None, dict[str, Any], str | None]:
    """The val file the run writes (the config's, or one ajetd gives it in its result dir),
    the config that runs (pointing at it), and a refusal where ajetd would give it one that
    is there already (appended to, its old lines read as this run's validations); `theirs`:
    the val file the config names itself."""
    chosen = os.path.join(result_dir, resultfiles.VAL_FILE)  # where ajetd puts one
    if bp.options.swarm is not None and conf_argument(bp.launch_command) is None:
        # a swarm client that reads no --conf writes its own file (AgentJet's tutorial
        # client: `<RESULT_DIR>/val_results.md`)
        val_path = chosen
    sharer = val_writer(val_path, val_writers or {}, local) if val_path else None
    if val_path and sharer:
        moved = _own_val_file(found, val_path, result_dir, reaches, sharer)
        if moved != val_path:  # the copy that runs points at it too, not only the review's
            runs_with = apply_patches(runs_with, {VAL_KEY: moved})
        val_path = moved
    # ajetd's choice (a config fix, a live run's file, a swarm client), not the config's own
    there = val_path == chosen and theirs != chosen and os.path.lexists(chosen)
    return val_path, runs_with, holds_problem(result_dir, [resultfiles.VAL_FILE] if there else [])


def _program_val_file(
    bp: Blueprint,
    found: ConfigReview,
    dirs: tuple[str, str],
    fs: Fs,
    reaches: bool,
    val_writers: Mapping[str, onefile.Writer] | None,
    configs: tuple[dict[str, Any], dict[str, Any]],
) -> tuple[str | None, dict[str, Any], str | None]:
    """`_val_file`'s answer for the val file as the program opens it: relative to the folder
    it runs in (`workdir`: the codebase, or where a leading literal `cd` takes it), or, where
    the command moves where ajetd cannot tell, `_val_unplaced`'s. `dirs`: the codebase and
    the result dir; `configs`: the config that runs (the copy's content) and the config
    overridden (the original's, where --conf does not reach the copy)."""
    codebase, result_dir = dirs
    runs_with, overridden = configs
    moved = workdir(bp.launch_command, bp.options.env)
    folder = moved.folder(codebase, fs.expand, fs.isdir)
    val_path = _val_path(runs_with if reaches else overridden, folder)
    theirs = _val_path(overridden, folder)
    if folder is None and val_path is None:
        val_path, runs_with = _val_unplaced(
            found, runs_with if reaches else overridden, moved, result_dir, reaches, runs_with
        )
    return _val_file(
        bp, found, val_path, result_dir, reaches, val_writers, runs_with, theirs, fs is LOCAL
    )


def _detaching_scripts(command: str, codebase: str, fs: Fs, env: Mapping[str, str]) -> list[str]:
    """A problem for each script the command runs (`bash scripts/bg.sh`) that leaves its
    program running and returns (`launchshape.detached`): lint saw only the command line,
    and the run 'succeeded' in 0 s with its training ended as a leftover (walk 86). A script
    that cannot be read, or is larger than a launch script is, is not judged."""
    problems = []
    folder = workdir(command, env).folder(codebase, fs.expand, fs.isdir) or codebase
    for script in launchshape.script_paths(command):
        path = os.path.join(folder, fs.expand(script))
        try:
            text = fs.read_text(path, limit=launchshape.MAX_SCRIPT_CHARS)
        except (OSError, ValueError, AjetdError):  # not there (the command may make it)
            continue
        problem = launchshape.detached_problem(text, script)
        problems.extend([problem] if problem else [])
    return problems


def check_blueprint(
    bp: Blueprint,
    val_writers: Mapping[str, onefile.Writer] | None = None,
    own: Collection[str] = (),
) -> tuple[Resolved | None, list[str]]:
    """Resolve and check every path; return the resolution (None if unusable) and problems.

    `val_writers`: the val files live runs write, each with the run's id and whether it runs
    here (`onefile.Writer`; a run that would share one is given its own, or waits for it: see
    _own_val_file); `own`: the files in its result dir that are the run's own
    (`result_dir_problem`)."""
    fs = remote_fs(bp)
    if isinstance(fs, str):
        return None, [fs]
    try:
        return _checked(bp, fs, val_writers, own)
    except SshError as exc:  # the host stopped answering (or answered garbled) mid-check
        return None, [f"ssh: {exc}"]


def _nemo_review(bp: Blueprint, config: Mapping[str, Any], found: ConfigReview) -> ConfigReview:
    """What AgentJet's review checks of its config, checked of a NeMo-RL run's (its
    validation period), the command's overrides counted; added to `found`, returned."""
    if nemorl.is_nemo_launch(bp.launch_command):
        found.warnings.extend(nemorl.validation_review(config, bp.launch_command))
    return found


def composed(bp: Blueprint, yaml_path: str, codebase: str, config: dict[str, Any], fs: Fs) -> Any:
    """`config` (the file's content as the run will read it: the overrides set) with what its
    `defaults:` bring, as its framework composes it: NeMo-RL's inheritance for a NeMo-RL
    launch, AgentJet's Hydra composition else (a recipe inheriting `cluster:` from
    grpo_math_1B.yaml, an AgentJet config taking `n_gpus_per_node` from ajet_default.yaml);
    `config` itself where it names none or they cannot be read (the review says why)."""
    if "defaults" not in config:
        return config
    if nemorl.is_nemo_launch(bp.launch_command):
        got = read_inherited(yaml_path, fs, config=config)
    else:
        got = read_composed(yaml_path, codebase, fs, config)
    return config if isinstance(got, str) else got


def _gpu_review(bp: Blueprint, config: Any, found: ConfigReview) -> tuple[ConfigReview, int | None]:
    """The config's GPU count against `[ajetd] gpus`, the same check for every framework
    (`gpuask`): a problem added to `found` where they differ; and the count, for the record."""
    ask = gpuask.gpu_ask(config, bp.launch_command)
    problem = gpuask.gpu_problem(ask, bp.options.gpus)
    found.problems.extend([problem] if problem else [])
    return found, gpuask.gpu_count(config, bp.launch_command)


def _slurm_problems(bp: Blueprint) -> list[str]:
    """What the cluster cannot give a Slurm run: its partition's limits and its largest
    node (a request no node holds stays PENDING for ever, walk87 F10)."""
    if bp.options.slurm is None:
        return []
    try:
        parts, sizes = slurm.partitions(), slurm.node_sizes()
    except AjetdError as exc:
        return [f"slurm: cannot ask the cluster: {exc}"]
    return slurm.check(bp.options.slurm, parts, bp.max_time_s, sizes)


def _command_warnings(bp: Blueprint, fs: Fs, codebase: str, venv_exe: str) -> list[str]:
    """What admission would say of the launch command, said here too (lint shows it)."""
    said = [
        *_own_placement(bp.launch_command),
        *nemorl.compound_warnings(bp.launch_command),
        *redirect_warnings(bp.launch_command),
    ]
    if fs is LOCAL and bp.options.slurm is None:  # a host's or a node's PATH is not this one's
        path = os.environ.get("PATH", "")
        missing = missing_program(bp.launch_command, codebase, venv_exe, path)
        said.extend([missing] if missing else [])
    return said


def _run_problems(
    bp: Blueprint, where: tuple[str, str, str], config: Any, own: Collection[str], fs: Fs
) -> list[str]:
    """What refuses the run besides its config's review (`where`: its codebase, config and
    result dir): Slurm's asks, the result dir, scripts that detach, NeMo-RL overrides Hydra
    would refuse at once."""
    codebase, yaml_path, result_dir = where
    problems = list(_slurm_problems(bp))
    nemo = (resultfiles.NEMO_RL,) if nemorl.writes_own_dirs(bp.launch_command) else ()
    problems.extend(p for p in [result_dir_problem(result_dir, own, nemo)] if p)
    problems.extend(_detaching_scripts(bp.launch_command, codebase, fs, bp.options.env))
    if isinstance(config, dict) and nemorl.is_nemo_launch(bp.launch_command):
        problems.extend(_hydra_overrides(bp.launch_command, yaml_path, fs))
    return problems


def _checked(
    bp: Blueprint, fs: Fs, val_writers: Mapping[str, onefile.Writer] | None, own: Collection[str]
) -> tuple[Resolved | None, list[str]]:
    problems: list[str] = []
    where = f" on {bp.options.ssh.target}" if bp.options.ssh else ""
    codebase, venv_exe = _codebase_and_venv(bp, fs, where, problems)
    yaml_path = _abs(os.path.join(codebase, fs.expand(bp.yaml_path)), fs)
    config = _load_yaml(yaml_path, codebase, fs, where, problems)
    other = None if config is None else _other_config(bp, codebase, yaml_path, config, fs, where)
    problems.extend([other] if other else [])
    result_dir = _abs(bp.result_dir)
    problems.extend(_run_problems(bp, (codebase, yaml_path, result_dir), config, own, fs))
    found = ConfigReview()
    fixes: dict[tuple[str, ...], Any] = {}
    overridden: dict[str, Any] = {}
    gpu_count = None
    if isinstance(config, dict):
        overrides, overridden = ConfigReview(), config
        if bp.options.yaml_overrides:
            said = other is not None
            overrides, overridden = _overridden(bp, codebase, yaml_path, config, fs, said)
        found = review(
            overridden,
            command=bp.launch_command,
            result_dir=result_dir,
            env=launch_env(os.environ, bp.options.env, bp.launch_command),
            exists=fs.exists,
            logged_in=_logged_in(),
        )
        fixes = found.patches
        whole = composed(bp, yaml_path, codebase, overridden, fs)
        found = _nemo_review(bp, whole, _with_overrides(overrides, found))
        found, gpu_count = _gpu_review(bp, whole, found)
        problems.extend(found.problems)
    if problems:
        return None, problems
    found.warnings.extend(full_disk(result_dir))
    local = fs is LOCAL
    shared = shared_result_dir(result_dir, codebase if local else "", venv_exe if local else "")
    found.warnings.extend(shared)
    # the copy's content, made here once (admission writes it, and reads its GPUs): the
    # overrides, then the review's fixes, which were made on the overridden config
    runs_with = apply_patches(overridden, fixes)
    found.warnings.extend(bp.warnings)
    found.warnings.extend(_command_warnings(bp, fs, codebase, venv_exe))
    found.warnings.extend(_serverless_client(bp, runs_with))
    found.warnings.extend(_plateau_metric(bp, runs_with))
    found.warnings.extend(_fix_floors(bp, runs_with))
    # the config as the program reads it: the copy only where its --conf can point at it (a
    # wrapper script, a `--conf ./$CONF`, reads the original, and its val file is the original's)
    conf = conf_argument(bp.launch_command)
    named = config_named(conf, bp.launch_command, codebase, yaml_path, fs, bp.options.env).names
    reaches = named is Names.SAME
    if found.patches and named is Names.UNKNOWN:
        found.warnings.append(
            f"ajetd cannot tell which file --conf {conf} is (a shell variable in it, or a cd "
            "in the command), so its fixes to the config are not applied (it runs as it is): "
            + "; ".join(found.changes)
        )
    if found.patches and reaches and fs is LOCAL:  # the copy admission writes (walk97 F5)
        exc = copy_refused(yaml_path)
        why = None if exc is None else refusal(exc, yaml_path, found.changes)
        if why is not None:
            return None, [why]
    val_path, runs_with, earlier = _program_val_file(
        bp, found, (codebase, result_dir), fs, reaches, val_writers, (runs_with, overridden)
    )
    if earlier is not None:
        return None, [earlier]
    here = local and bp.options.slurm is None  # where the program writes it: this machine
    unwritable = val_file_problem(val_path, ".".join(VAL_KEY)) if val_path and here else None
    if unwritable is not None:
        return None, [unwritable]
    resolved = Resolved(
        codebase_dir=codebase,
        venv_exe=venv_exe,
        venv_dir=os.path.dirname(os.path.dirname(venv_exe)),
        yaml_path=yaml_path,
        result_dir=result_dir,
        val_path=val_path,
        val_size=(fs.size(val_path) or 0) if val_path else 0,
        config=config,
        review=found,
        runs_with=runs_with,
        copy_reaches=reaches,
        gpu_count=gpu_count,
    )
    return resolved, []
