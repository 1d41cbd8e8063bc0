"""An experiment's blueprint (seed 002): the campaign's base blueprint with the experiment's
codebase (its worktree), its overrides on the launch command, its own result dir under the
campaign's, its time limit, and the campaign's `gpus`. Pure: text in, text out.

Each experiment is an ordinary blueprint written into the inbox, so it is validated, placed,
supervised, fixed and reported like any run.
"""

from __future__ import annotations

import shlex

import yaml

from ajetd.core import campaignspec as cs
from ajetd.core.blueprint import Blueprint, extract_parts, parse_blueprint
from ajetd.core.options import load_yaml_part
from ajetd.frameworks import agentjet


def override_problems(
    spec: cs.CampaignSpec, base: Blueprint, names: frozenset[str] = frozenset()
) -> list[str]:
    """Overrides that cannot reach what the base blueprint runs: appended to AgentJet's
    launcher, they end every such experiment at once (`names`: only these experiments)."""
    if not agentjet.runs_launcher(base.launch_command):
        return []
    return [
        f"experiments[{i}] ({exp.name}): override {exp.overrides[0]!r} would be appended to "
        "AgentJet's launcher in the base's command, which takes no key=value arguments (it "
        "exits 2: unrecognized arguments); change its YAML with a `patch` (or give the "
        "experiment its own `blueprint`)"
        for i, exp in enumerate(spec.experiments)
        if exp.overrides and not exp.blueprint and (not names or exp.name in names)
    ]


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
    command = " ".join([base.launch_command, *(shlex.quote(o) for o in exp.overrides)])
    options = load_yaml_part(parts.get("ajetd", ""))
    if spec.gpus is not None:
        options["gpus"] = spec.gpus
    purpose = f"{base.purpose} (campaign {spec.name}, experiment {index} {exp.name}"
    purpose += f": {exp.description})" if exp.description else ")"
    sections = {
        "exp_purpose": purpose,
        "exp_codebase_dir": codebase,
        "exp_venv_exe": base.venv_exe,
        "exp_yaml_path": base.yaml_path,
        "exp_launch_command": f"```bash\n{command}\n```",
        "exp_result_dir": f"{spec.result_dir}/{index:02d}-{exp.name}",
        "exp_max_time": f"{int(min(limits))}s",
    }
    lines = [f"# {spec.name}: experiment {index} ({exp.name})", ""]
    for key, value in sections.items():
        lines += [f"## [{key}]", value, ""]
    if options:
        lines += ["## [ajetd]", "```yaml", yaml.safe_dump(options, sort_keys=False).strip(), "```"]
    return "\n".join(lines) + "\n"
