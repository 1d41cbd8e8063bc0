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

import yaml

from ajetd.core import campaignspec as cs
from ajetd.core.blueprint import Blueprint, extract_parts, parse_blueprint
from ajetd.core.naming import experiment_purpose
from ajetd.core.options import load_yaml_part
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


def override_problems(
    spec: cs.CampaignSpec, base: Blueprint, names: frozenset[str] = frozenset()
) -> list[str]:
    """Overrides that cannot be carried out for the base blueprint (`names`: only these
    experiments). AgentJet's launcher takes no `key=value` arguments, so an experiment's
    overrides for it are set in a copy of its YAML (`yaml_overrides`): each must be K=V
    (no `~K`), and the base's command must pass `--conf` for the copy to take its place."""
    if not in_yaml_copy(base.launch_command):
        return []
    problems = []
    for i, exp in enumerate(spec.experiments, 1):  # numbered as parse_campaign names them
        if not exp.overrides or exp.blueprint or (names and exp.name not in names):
            continue
        where = f"experiments[{i}] ({exp.name}): override"
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
) -> str:
    """The experiment's blueprint: the base's parts, its codebase (worktree), command with
    overrides, own result dir and time limit (the stricter of the base's and the campaign's
    per-experiment timeout, never past the deadline), and `gpus` from the campaign."""
    parts = extract_parts(base_text)
    base = parse_blueprint(base_text)
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
    purpose = experiment_purpose(base.purpose, spec.name, index, exp.name, exp.description)
    sections = {
        "exp_purpose": purpose,
        "exp_codebase_dir": _whole(codebase),
        "exp_venv_exe": _whole(base.venv_exe),
        "exp_yaml_path": _whole(base.yaml_path),
        "exp_launch_command": f"```bash\n{command}\n```",
        "exp_result_dir": _whole(f"{spec.result_dir}/{index:02d}-{exp.name}"),
        "exp_max_time": f"{int(min(limits))}s",
    }
    lines = [f"# {spec.name}: experiment {index} ({exp.name})", ""]
    for key, value in sections.items():
        lines += [f"## [{key}]", value, ""]
    if options:
        lines += ["## [ajetd]", "```yaml", yaml.safe_dump(options, sort_keys=False).strip(), "```"]
    return "\n".join(lines) + "\n"


def _whole(path: str) -> str:
    """A path as a blueprint part reads it whole, a space in it too (bare, only its first
    word would be read): in backticks, or in quotes where it holds a backtick."""
    return f'"{path}"' if "`" in path else f"`{path}`"
