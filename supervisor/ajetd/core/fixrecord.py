"""What one fix between trials changed, as data: the status object's `fixes_applied`; pure.

`Run.fixes` keeps the fixes' names (the remedy's bookkeeping: each at most once) and a
trial's `next_step` the sentence trials.md shows; neither tells a program *what* ran
differently. A run that succeeded only after its batch size went 8 → 4 → 2 read plainly
`succeeded` in every JSON (walk88 F6): its metrics are not the blueprint's recipe. This record
keeps, per fix, the failure it answered and each change made: a config key's old and new
value, an environment variable, a command prefix, the command before and after.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SCIENCE_PREFIX = "science_"  # a fix that changes a hyperparameter (`allow_fixes`) is named so

ConfigChange = tuple[str, Any, Any]  # dotted key, value before, value after


@dataclass(frozen=True)
class AppliedFix:
    """One fix: made after trial `after_trial` failed with `kind`, for the next trial."""

    after_trial: int
    fix: str  # its name, as `Run.fixes` holds it: science_<key>, nccl_nvls_off, retry_<kind>
    kind: str  # the failure it answered (`cuda_oom`, `hang`), "" where not on record
    change: str  # the sentence trials.md and `status RUN` show
    config: tuple[ConfigChange, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    prefix: tuple[str, ...] = ()  # argv words put before the command
    command_before: str = ""
    command_after: str = ""  # "" where the command stayed as it was

    @property
    def science(self) -> bool:
        """True where the fix changed the experiment itself (a hyperparameter), so its
        metrics are not the recipe's: a campaign or an agent must not read them as such."""
        return self.fix.startswith(SCIENCE_PREFIX)

    def to_json(self) -> dict[str, Any]:
        """The contract's shape (README, "The status object"), also state.json's."""
        moved = self.command_after and self.command_after != self.command_before
        return {
            "after_trial": self.after_trial,
            "fix": self.fix,
            "kind": self.kind or None,
            "science": self.science,
            "change": self.change,
            "config": [{"key": k, "old": old, "new": new} for k, old, new in self.config],
            "env": dict(self.env),
            "prefix": list(self.prefix),
            "command": {"old": self.command_before, "new": self.command_after} if moved else None,
        }

    @classmethod
    def from_json(cls, data: Any) -> AppliedFix | None:
        """A stored record; None for what is not one (a damaged entry is left out)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("after_trial"), int):
            return None
        config = _as(data.get("config"), list, [])
        env = _as(data.get("env"), Mapping, {})
        prefix = _as(data.get("prefix"), list, [])
        command = _as(data.get("command"), Mapping, {})
        return cls(
            after_trial=data["after_trial"],
            fix=str(data.get("fix") or ""),
            kind=str(data.get("kind") or ""),
            change=str(data.get("change") or ""),
            config=tuple(
                (str(c.get("key")), c.get("old"), c.get("new"))
                for c in config
                if isinstance(c, Mapping)
            ),
            env=tuple((str(k), str(v)) for k, v in env.items()),
            prefix=tuple(str(p) for p in prefix),
            command_before=str(command.get("old") or ""),
            command_after=str(command.get("new") or ""),
        )

    def summary(self) -> str:
        """`ppo_micro_batch_size_per_gpu 8 → 4`, `NCCL_NVLS_ENABLE=0`, `relaunched`: what
        changed, in a few words, for a one-line view."""
        parts = [f"{k.rsplit('.', 1)[-1]} {old} → {new}" for k, old, new in self.config]
        parts += [f"{k}={v}" for k, v in self.env]
        if self.prefix:
            parts.append("under " + " ".join(self.prefix))
        return ", ".join(parts) or "relaunched"


def _as(value: Any, kind: type, default: Any) -> Any:
    """`value` where it is of `kind`, else `default` (a damaged stored entry)."""
    return value if isinstance(value, kind) else default


def applied_json(fixes: tuple[str, ...], applied: tuple[AppliedFix, ...]) -> list[dict[str, Any]]:
    """The status object's `fixes_applied`: one object per fix in `fixes` (the names), in
    order; a fix made by a version before this record (a name with no record) is one with
    only its name, nothing else known, so the list never says fewer fixes than were made."""
    older = len(fixes) - len(applied)
    unknown: list[dict[str, Any]] = [
        {
            "after_trial": None,
            "fix": name,
            "kind": None,
            "science": name.startswith(SCIENCE_PREFIX),
            "change": None,
            "config": [],
            "env": {},
            "prefix": [],
            "command": None,
        }
        for name in fixes[: max(older, 0)]
    ]
    return unknown + [a.to_json() for a in applied]
