"""An experiment's blueprint (seed 002): the campaign's base blueprint with the experiment's
codebase (its worktree), its overrides (appended to the launch command; for an AgentJet run,
told by its `--conf`, whose launcher takes no key=value arguments, set in a copy of its YAML:
`yaml_overrides`), its own result dir under the campaign's, its time limit, and the
campaign's `gpus`. Pure: text in, text out.

Each experiment is an ordinary blueprint written into the inbox, so it is validated, placed,
supervised, fixed and reported like any run.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from ajetd.core import campaignspec as cs
from ajetd.core import shelltokens, yamlpart
from ajetd.core.blueprint import Blueprint, extract_parts, parse_blueprint
from ajetd.core.naming import experiment_purpose
from ajetd.core.options import load_yaml_part
from ajetd.core.shown import show
from ajetd.core.values import OptionError
from ajetd.frameworks import agentjet, nemorl


def in_yaml_copy(command: str) -> bool:
    """Whether an experiment's overrides are set in a copy of the base's YAML rather than
    appended to its command as `key=value`: for an AgentJet run, as its config flag tells it
    (`--conf`; NeMo-RL's launch takes `--config` and Hydra's `key=value` on its command line),
    whatever the program is named (a wrapper script, a renamed launcher: they were given
    `key=value` words that AgentJet's argparse refuses, exit 2); also for a command that runs
    AgentJet's launcher without `--conf` (`override_problems` says it has nothing to point)."""
    if nemorl.is_nemo_launch(command):
        return False
    return agentjet.conf_argument(command) is not None or agentjet.runs_launcher(command)


def unreached(command: str) -> str | None:
    """Why `key=value` words appended to the command would not reach the program it runs
    (None when they would). The shell gives words appended to a line to the line's last
    command: the program only where nothing but its arguments follows it. For NeMo-RL that
    program is `run_*.py` wherever it stands; for any other, the line must be one command
    (an operator before it would make the program another than the one that gets them).
    Refused, not guessed: `... | tee out.log` gave them to tee (a file named after the
    override), a `# comment` swallowed them, and the row was judged as if the program ran
    with them."""
    tokens = shelltokens.words(command)
    if tokens is None:
        return "its quotes do not close, so where its arguments end is not known"
    at = nemorl.script_at(tokens)
    if at is None and nemorl.is_nemo_launch(command):
        return (
            f"NeMo-RL's run_*.py is not a word of its own in the base's exp_launch_command "
            f"{show(command)} (inside quotes, as a COMMAND=... handed to ray.sub), so overrides "
            "appended to the line do not reach it; give the change as a patch"
        )
    following = nemorl.after_arguments(tokens, 0 if at is None else at)
    if following is None:
        return None
    what = "NeMo-RL's run_*.py" if at is not None else "the command"
    return (
        f"{show(following)} follows {what}'s arguments in the base's exp_launch_command "
        f"{show(command)}, and overrides are appended to the line's end, where the shell "
        "gives them to what comes last, not the program; end the line with the program and "
        "its arguments (ajetd keeps its output in the run's logs: no `| tee` is needed), or "
        "give the change as a patch"
    )


def override_problems(
    spec: cs.CampaignSpec, base: Blueprint, names: frozenset[str] = frozenset()
) -> list[str]:
    """Overrides that cannot be carried out for the base blueprint (`names`: only these
    experiments). Appended to the command, they must reach the program (`unreached`).
    AgentJet's launcher takes no `key=value` arguments, so an experiment's overrides for it
    are set in a copy of its YAML (`yaml_overrides`): each must be K=V (no `~K`), and the
    base's command must pass `--conf` for the copy to take its place."""
    copied = in_yaml_copy(base.launch_command)
    why = None if copied else unreached(base.launch_command)
    if not copied and why is None:
        return []
    problems = []
    for i, exp in enumerate(spec.experiments, 1):  # numbered as parse_campaign names them
        if not exp.overrides or exp.blueprint or (names and exp.name not in names):
            continue
        where = f"experiments[{i}] ({exp.name}): override"
        if why is not None:
            problems.append(f"{where} {exp.overrides[0]!r} would not reach the program: {why}")
            continue
        if agentjet.conf_argument(base.launch_command) is None:
            problems.append(
                f"{where} {exp.overrides[0]!r} is set in a copy of the base's exp_yaml_path "
                "(AgentJet's launcher takes no key=value arguments), and the base's command "
                "passes no --conf to point at that copy"
            )
        for override in exp.overrides:
            try:
                agentjet.parse_override(where, override)
            except OptionError as exc:
                problems.append(str(exc))
    return problems


def experiment_blueprint(
    spec: cs.CampaignSpec,
    exp: cs.Experiment,
    index: int,
    base_text: str,
    codebase: str,
    elapsed_s: float,
    moved: Callable[[str], str] = str,
) -> str:
    """The experiment's blueprint: the base's parts, its codebase (worktree), command with
    overrides, own result dir and time limit (the stricter of the base's and the campaign's
    per-experiment timeout, never past the deadline), and `gpus` from the campaign.

    `moved`: a path of the base's codebase as the experiment's (its worktree's file), for
    each path the base gives that may name one: exp_yaml_path and the `[ajetd]` paths read
    from the codebase (`stages` requires and outputs, `pull`). The venv is not moved (git
    holds none), nor is a path the command names (`paths_problems` refuses those)."""
    parts = extract_parts(base_text)
    # the base (or the experiment's own) as an admitted copy: checked as a new blueprint where
    # it came in; a rule added since never stops the campaign (only the fenced YAML of its
    # `[ajetd]` part is carried into the experiment's, so no line outside it reaches a run)
    base = parse_blueprint(base_text, admitted=True)
    limits = [base.max_time_s]
    if spec.per_experiment_s:
        limits.append(spec.per_experiment_s)
    if spec.deadline_s:
        limits.append(max(60.0, spec.deadline_s - elapsed_s))
    options = load_yaml_part(parts.get("ajetd", ""))
    command = base.launch_command
    if in_yaml_copy(command):  # set in a copy of its YAML (`yaml_overrides`)
        if exp.overrides:
            options["yaml_overrides"] = [*base.options.yaml_overrides, *exp.overrides]
    else:  # appended to the command (Hydra's key=value, as NeMo-RL takes them)
        command = " ".join([command, *(shlex.quote(o) for o in exp.overrides)])
    if spec.gpus is not None:
        options["gpus"] = spec.gpus
    _move_option_paths(options, moved)
    purpose = experiment_purpose(base.purpose, spec.name, index, exp.name, exp.description)
    sections = {
        "exp_purpose": purpose,
        "exp_codebase_dir": _whole(codebase),
        "exp_venv_exe": _whole(base.venv_exe),
        "exp_yaml_path": _whole(moved(base.yaml_path)),
        "exp_launch_command": f"```bash\n{command}\n```",
        "exp_result_dir": _whole(f"{spec.result_dir}/{index:02d}-{exp.name}"),
        "exp_max_time": f"{int(min(limits))}s",
    }
    lines = [f"# {spec.name}: experiment {index} ({exp.name})", ""]
    for key, value in sections.items():
        lines += [f"## [{key}]", value, ""]
    if options:
        lines += ["## [ajetd]", "```yaml", yamlpart.dump(options, sort_keys=False).strip(), "```"]
    return "\n".join(lines) + "\n"


def _move_option_paths(options: dict[str, Any], moved: Callable[[str], str]) -> None:
    """The `[ajetd]` paths of the codebase (`stages[].requires`, `stages[].outputs`, `pull`;
    one alone may be a string) as the experiment's; anything else is left for the options'
    validation to refuse as it stands."""

    def each(value: Any) -> Any:
        if isinstance(value, str):
            return moved(value)
        if isinstance(value, list):
            return [moved(v) if isinstance(v, str) else v for v in value]
        return value

    if "pull" in options:
        options["pull"] = each(options["pull"])
    stages = options.get("stages")
    for stage in stages if isinstance(stages, list) else []:
        for key in ("requires", "outputs"):
            if isinstance(stage, dict) and key in stage:
                stage[key] = each(stage[key])


def _whole(path: str) -> str:
    """A path as a blueprint part reads it whole, a space in it too (bare, only its first
    word would be read): in backticks, or in quotes where it holds a backtick."""
    return f'"{path}"' if "`" in path else f"`{path}`"
