"""Preflight of an AgentJet config (`ajet:` YAML) before a GPU is spent; pure.

Checks what seed 001 and AgentJet's own behaviour require (DESIGN §5) and says, per finding,
whether it blocks the run or can be fixed mechanically in a copy of the config: `execute_test`
must be False (True ends a run early by design), validation results must go to a file with a
directory part (default: `val_results.md` in the result dir), `val_before_train` should be true,
and a logger that needs an API key must find one (else a local logger is used). The user's file
is never edited; patches go into a copy beside it, with the blueprint's `yaml_overrides`
(`override_patches`: a campaign's overrides for AgentJet's launcher, which takes no
key=value arguments) set first.
"""

from __future__ import annotations

import copy
import os
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ajetd.core import yamlpart
from ajetd.core.limits import CONFIG_MAX_DEPTH
from ajetd.core.shellwords import SHELL_WORD, program_word
from ajetd.core.shown import show
from ajetd.core.values import OptionError, path_problem

LOCAL_LOGGER = "tensorboard"
DEFAULT_LOGGER = "swanlab"  # ajet_default.yaml's trainer_common.logger
_KEYED_LOGGERS = {"swanlab": "SWANLAB_API_KEY", "wandb": "WANDB_API_KEY"}
_OFFLINE_MODES = {
    "swanlab": ("SWANLAB_MODE", ("local", "offline", "disabled")),
    "wandb": ("WANDB_MODE", ("offline", "disabled", "dryrun")),
}
# a config flag and its value (`--conf x.yaml`, `--conf=x.yaml`, quoted): AgentJet's `--conf`,
# NeMo-RL's `--config` (`config_flag`); not part of a longer word
_FLAGS = {
    flag: re.compile(rf"((?<![\w-]){flag}(?:=|(?:[ \t]|\\\n)+))({SHELL_WORD})")
    for flag in ("--conf", "--config")
}


_TOKEN = re.compile(r"""([^\s'"\\;|&<>()`]+)|'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)""")
_IN_DOUBLE = re.compile(r'\\([$`"\\\n])')  # what a backslash escapes inside "..."


def _unquoted(word: str) -> str:
    """A shell word's value, its quotes and escapes taken off as bash does (`"configs/my
    cfg.yaml"` -> `configs/my cfg.yaml`; a `$X` stays as written), token by token in C (not
    `shlex`, a character at a time in Python: 1 s for a 200 KB word)."""
    out = []
    for m in _TOKEN.finditer(word):
        bare, single, double, escaped = m.groups()
        if double is not None:
            out.append(_IN_DOUBLE.sub(r"\1", double))
        else:
            out.append(next(t for t in (bare, single, escaped) if t is not None))
    return "".join(out)


@dataclass(frozen=True)
class ConfigReview:
    """What the preflight found: blocking problems, warnings, and patches for a copy."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    patches: dict[tuple[str, ...], Any] = field(default_factory=dict)
    changes: list[str] = field(default_factory=list)  # one line per patch, for results.md

    @property
    def verdict(self) -> str:
        if self.problems:
            return "rejected"
        return "patched" if self.patches else "passes"


def _get(config: Mapping[str, Any], *keys: str) -> Any:
    node: Any = config
    for key in keys:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def runs_launcher(command: str) -> bool:
    """Whether `command` runs AgentJet's launcher, which parses its arguments with argparse:
    it takes no Hydra `key=value` words (one exits it with code 2, unrecognized arguments).
    Run as a module or as its file anywhere in the line, or as the `ajet` console script, the
    program of a simple command (not a folder named ajet that is `cd`'d into); words split as
    the shell would at spaces and operators (linear in the command)."""
    for simple in re.split(r"[;&|()\n]+", command):
        words = simple.split()
        program = program_word(words)
        if program.rsplit("/", 1)[-1] == "ajet" or any(
            (w == "ajet.launcher" and before == "-m") or w.endswith("ajet/launcher.py")
            for before, w in zip(["", *words], words, strict=False)
        ):
            return True
    return False


# AgentJet's launcher's options that take a value (`ajet/launcher.py`'s argparse): the word
# after one is its value, whatever it holds
_VALUED = frozenset(
    [
        *("--backbone", "--conf", "--exp-dir", "--debug", "--db", "--bp", "--breakpoint"),
        *("--kill", "--prefix", "--swarm-overwatch"),
    ]
)
_OVERRIDE = re.compile(r"(?:\+\+|\+|~)?[A-Za-z_][\w.@/-]*=")


def launcher_overrides(command: str) -> list[str]:
    """The Hydra-style `key=value` words (`ajet.rollout.temperature=0.7`, `++a.b=1`) given
    to AgentJet's launcher (`runs_launcher`), which parses its arguments with argparse and
    exits with code 2 on any word it does not know (`unrecognized arguments`): the run failed
    at once, and the diagnosis pointed at the YAML (walk 86). At most 5."""
    found: list[str] = []
    for simple in re.split(r"[;&|()\n]+", command):
        words = simple.split()
        at = next(
            (
                i + 1
                for i, w in enumerate(words)
                if (w == "ajet.launcher" and i and words[i - 1] == "-m")
                or w.endswith("ajet/launcher.py")
                or (w.rsplit("/", 1)[-1] == "ajet" and i == 0)
            ),
            None,
        )
        if at is None:
            continue
        valued = False
        for word in words[at:]:
            if not valued and _OVERRIDE.match(word.strip("\"'")):
                found.append(word)
            valued = word in _VALUED
    return found[:5]


def conf_argument(command: str, flag: str = "--conf") -> str | None:
    """The value of `--conf` (or `flag`: `config_flag`) in a launch command, if it has one."""
    match = _FLAGS[flag].search(command)
    return _unquoted(match.group(2)) if match else None


_TILDE = re.compile(r"~[A-Za-z0-9._-]*(?=/)")


def point_conf_at(command: str, path: str, flag: str = "--conf") -> str:
    """The command with its `--conf` (or `flag`) value replaced by `path` (quoted). A
    leading `~/` or `~user/` stays outside the quotes where the value it replaces was not
    quoted: the shell expanded it there, and must here (quoted, it is a folder named `~`)."""

    def word(m: re.Match[str]) -> str:
        quoted = any(c in m.group(2) for c in "'\"\\")
        tilde = None if quoted else _TILDE.match(path)
        if tilde is None:
            return m.group(1) + shlex.quote(path)
        return m.group(1) + tilde.group() + shlex.quote(path[tilde.end() :])

    return _FLAGS[flag].sub(word, command, count=1)


def review(
    config: Mapping[str, Any],
    *,
    command: str,
    result_dir: str,
    env: Mapping[str, str],
    exists: Callable[[str], bool],
    logged_in: frozenset[str] = frozenset(),
) -> ConfigReview:
    """Review an AgentJet config. A config without an `ajet:` section is not AgentJet's."""
    out = ConfigReview()
    overrides = launcher_overrides(command)
    if overrides:
        shown = " ".join(overrides)
        out.problems.append(
            f"exp_launch_command: AgentJet's launcher takes no key=value arguments (it exits "
            f"with 'unrecognized arguments: {shown[:80]}'): set them in the YAML or as "
            f"`[ajetd] yaml_overrides: [{', '.join(o.lstrip('+~') for o in overrides)[:80]}]`"
        )
    if "ajet" not in config:
        if "astuner" in config:
            out.problems.append(
                "exp_yaml_path: legacy `astuner:` config; AgentJet's launcher "
                "needs an `ajet:` section"
            )
        return out
    ajet = config["ajet"]
    if not isinstance(ajet, Mapping):
        out.problems.append("exp_yaml_path: `ajet:` must be a mapping")
        return out
    conf = conf_argument(command)
    if conf is not None and not os.path.dirname(conf):
        out.problems.append(
            f"exp_launch_command: --conf {conf} needs a directory part "
            f"(AgentJet requires it): write --conf ./{conf}"
        )
    if _get(ajet, "execute_test") is True:
        out.patches[("ajet", "execute_test")] = False
        out.changes.append("ajet.execute_test: True → False (True ends a run early by design)")
    _review_validation(config, ajet, result_dir, out, env)
    out.warnings.extend(validation_interval_warnings(ajet))
    model = _get(ajet, "model", "path")
    if isinstance(model, str) and model.startswith("/") and not exists(model):
        out.problems.append(f"exp_yaml_path: ajet.model.path {model} does not exist")
    _review_logger(ajet, env, logged_in, out)
    blocked = {_not_mapping(config, path) for path in out.patches}
    out.problems.extend(sorted(p for p in blocked if p))
    if out.patches and conf is None:
        out.warnings.append(
            "the launch command passes no --conf, so ajetd's fixes to the config are not "
            f"applied (it runs as it is): {'; '.join(out.changes)}"
        )
        if ("ajet", "execute_test") in out.patches:
            out.problems.append(
                "exp_yaml_path: ajet.execute_test is True and the command has "
                "no --conf to point at a fixed copy"
            )
    return out


def _not_mapping(config: Mapping[str, Any], path: tuple[str, ...]) -> str | None:
    """Why a fix at `path` cannot be written into the copy: a section on the way that is set
    but is not a mapping (`trainer_common: 5`); None when it can (a missing or empty section
    is made)."""
    for depth in range(1, len(path)):
        node = _get(config, *path[:depth])
        if node is not None and not isinstance(node, Mapping):
            shown = repr(node) if len(repr(node)) <= 40 else repr(node)[:39] + "…"
            return f"exp_yaml_path: {'.'.join(path[:depth])} must be a mapping, not {shown}"
    return None


def _logger_names(value: Any) -> list[Any]:
    """A `logger:` value as the list of names AgentJet reads: one name or a list of them."""
    if value is None:
        return [DEFAULT_LOGGER]
    return list(value) if isinstance(value, list) else [value]


_INTERPOLATION = re.compile(r"\$\{([^${}]{1,200})\}")
_KEY_PATH = re.compile(r"[A-Za-z_][\w-]{0,100}(?:\.[A-Za-z_][\w-]{0,100}){0,20}")
MAX_INTERPOLATIONS = 32  # `${...}` a value is resolved through, nested ones included


def resolve_interpolations(
    value: str, root: Mapping[str, Any], env: Mapping[str, str]
) -> str | None:
    """`value` with its OmegaConf interpolations resolved as Hydra resolves them when AgentJet
    reads its config: `${a.b.c}` (a key path from the config's root, to a text or a number,
    itself resolved), `${oc.env:NAME}` / `${oc.env:NAME,default}` (and the older
    `${env:NAME}`) from the program's environment. None where one cannot be (a relative
    `${..x}`, a resolver ajetd does not know, a key the config lacks, an unset variable
    without a default): a val file path watched with its `${...}` as written found nothing
    (walk86 F12)."""
    text = value
    for _ in range(MAX_INTERPOLATIONS):
        found = _INTERPOLATION.search(text)
        if found is None:
            return text
        inner = found.group(1).strip()
        got: str | None = None
        if inner.startswith(("oc.env:", "env:")):
            name, _, default = inner.split(":", 1)[1].partition(",")
            got = env.get(name.strip())
            if got is None and default.strip():
                got = default.strip().strip("'\"")
        elif _KEY_PATH.fullmatch(inner):
            node: Any = root
            for part in inner.split("."):
                node = node.get(part) if isinstance(node, Mapping) else None
            if isinstance(node, (str, int, float)) and not isinstance(node, bool):
                got = str(node)
        if got is None:
            return None
        text = text[: found.start()] + got + text[found.end() :]
    return None


def _review_validation(
    root: Mapping[str, Any],
    ajet: Mapping[str, Any],
    result_dir: str,
    out: ConfigReview,
    env: Mapping[str, str],
) -> None:
    """Validation results written to a file ajetd can read, and the initial model measured.
    A path with OmegaConf interpolations is resolved as Hydra would (the copy then names the
    file literally), or, where ajetd cannot resolve it, pointed at a file in the result dir:
    either way ajetd reads the file the program writes (walk86 F12)."""
    val_key = ("ajet", "trainer_common", "val_print_to_markdown_file_path")
    before_key = ("ajet", "trainer_common", "val_before_train")
    val = _get(ajet, "trainer_common", "val_print_to_markdown_file_path")
    if isinstance(val, str) and "${" in val:
        resolved = resolve_interpolations(val.strip(), root, env)
        why = "its interpolation resolved as Hydra resolves it: ajetd reads that file"
        if resolved is None or not os.path.dirname(resolved):
            resolved = os.path.join(result_dir, "val_results.md")
            why = (
                "it holds an interpolation ajetd cannot resolve, so ajetd could not tell which "
                "file the program writes: it writes this one, which ajetd reads"
            )
        out.patches[val_key] = resolved
        out.changes.append(f"{'.'.join(val_key)}: {val!r} → {resolved} ({why})")
        val = resolved
    if isinstance(val, str) and val.strip().startswith("~"):
        out.warnings.append(
            f"{'.'.join(val_key)} {val.strip()} begins with ~: AgentJet opens it as written "
            "(Python does not expand ~), so it writes a folder named ~ under the working "
            "directory, which ajetd reads; write an absolute path if you meant your home"
        )
    unusable = path_problem(".".join(val_key), val.strip()) if isinstance(val, str) else None
    if unusable:  # a NUL, a control character, too long: no file could be named so
        out.problems.append(f"exp_yaml_path: {unusable}")
    elif not isinstance(val, str) or not val.strip() or not os.path.dirname(val.strip()):
        target = os.path.join(result_dir, "val_results.md")
        out.patches[val_key] = target
        out.changes.append(
            f"ajet.trainer_common.val_print_to_markdown_file_path: {val!r} → "
            f"{target} (validation results need a file with a directory part)"
        )
    if _get(ajet, "trainer_common", "val_before_train") is not True:
        out.patches[before_key] = True
        out.changes.append(
            "ajet.trainer_common.val_before_train → true (measure the initial "
            "model, as seed 001 asks)"
        )


# a test_freq this large is no validation interval whatever the run's length (the shipped
# benchmark_math.yaml's 999999): a run of 100,000 steps is beyond any seen
ABSURD_TEST_FREQ = 100_000


def validation_interval_warnings(ajet: Mapping[str, Any]) -> list[str]:
    """A warning where `trainer_common.test_freq` is past the run's training steps
    (`total_training_steps`, where the config gives them; else where it is absurdly large):
    AgentJet validates the trained model every test_freq steps, so the run's results would
    hold only the initial model's validation (step 0: seed 001 calls test_freq out). Not a
    problem: a run may mean only to train."""
    freq = _get(ajet, "trainer_common", "test_freq")
    total = _get(ajet, "trainer_common", "total_training_steps")
    if not isinstance(freq, int) or isinstance(freq, bool) or freq <= 0:
        return []
    known = isinstance(total, int) and not isinstance(total, bool) and total > 0
    if known and freq > total:
        beyond = f"more than the run's total_training_steps {total}"
        hint = f"at most {total}, e.g. {max(1, total // 10)}"
    elif not known and freq >= ABSURD_TEST_FREQ:
        beyond = "more steps than any run trains"
        hint = "the steps between validations, e.g. 10 or 20 (ajet_default.yaml's 20)"
    else:
        return []
    return [
        f"ajet.trainer_common.test_freq is {show(freq)}, {beyond}: AgentJet validates the "
        "trained model every test_freq steps, so no validation of the trained model would "
        "happen during training (only the initial model's, step 0, where val_before_train "
        "is true; at most the last step's, if the run gets there), and results could not "
        f"show training helped; set ajet.trainer_common.test_freq to {hint}"
    ]


def _review_logger(
    ajet: Mapping[str, Any], env: Mapping[str, str], logged_in: frozenset[str], out: ConfigReview
) -> None:
    names = _logger_names(_get(ajet, "trainer_common", "logger"))
    missing = []
    for name in names:
        key = _KEYED_LOGGERS.get(str(name))
        if key is None or env.get(key) or str(name) in logged_in:
            continue
        mode_var, offline = _OFFLINE_MODES[str(name)]
        if env.get(mode_var, "").lower() in offline:
            continue
        missing.append((str(name), key))
    if not missing:
        return
    kept = [n for n in names if str(n) not in {m for m, _ in missing}] or [LOCAL_LOGGER]
    out.patches[("ajet", "trainer_common", "logger")] = kept[0] if len(kept) == 1 else kept
    now = ", ".join(map(str, kept))  # what the copy logs to: the loggers kept, else a local one
    for name, key in missing:
        out.changes.append(
            f"ajet.trainer_common.logger: {name} → {now} ({key} is not "
            f"set; {name} would exit or block without it)"
        )


def find_paths(config: Any, key: str, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every key path in `config` that ends in `key` (a leaf name such as `lr`)."""
    found: list[tuple[str, ...]] = []
    if isinstance(config, Mapping):
        for name, value in config.items():
            path = (*prefix, str(name))
            if name == key and not isinstance(value, Mapping):
                found.append(path)
            found.extend(find_paths(value, key, path))
    return found


def get_path(config: Any, path: tuple[str, ...]) -> Any:
    return _get(config, *path)


def local_logger_patch(config: Mapping[str, Any]) -> dict[tuple[str, ...], Any] | None:
    """Switch an AgentJet config's logger to a local one; None if it is local already."""
    if "ajet" not in config:
        return None
    names = _logger_names(_get(config, "ajet", "trainer_common", "logger"))
    if not any(str(n) in _KEYED_LOGGERS for n in names):
        return None
    return {("ajet", "trainer_common", "logger"): LOCAL_LOGGER}


def apply_patches(
    config: Mapping[str, Any], patches: Mapping[tuple[str, ...], Any]
) -> dict[str, Any]:
    """A deep copy of `config` with each key path set to its patched value, in order."""
    patched: dict[str, Any] = copy.deepcopy(dict(config))
    for path, value in patches.items():
        _set_path(patched, path, value)
    return patched


def _set_path(config: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    """Set one key path in `config` itself; a missing or empty (null) section is made."""
    node = config
    for key in path[:-1]:
        if node.get(key) is None:
            node[key] = {}
        node = node[key]
    node[path[-1]] = value


_KEY_PART = re.compile(r"[^\s.=]+")
# A key's parts are mappings in the copy, its value (yamlpart) at most MAX_DEPTH levels more:
# the copy must stay a config ajetd reads (CONFIG_MAX_DEPTH). A key of 20,000 parts raised
# RecursionError where the copy was made ('lint: the checks stopped', an internal error at
# admission); one of 150 made a copy that no later read took.
MAX_KEY_PARTS = CONFIG_MAX_DEPTH - yamlpart.MAX_DEPTH - 1


def parse_override(key: str, text: Any) -> tuple[tuple[str, ...], Any]:
    """One `yaml_overrides` entry (`key`: how a message names it): `K=V`, the dotted key path
    K set to V's YAML value in the copy of the config (`a.b=2e-6`, `a.c=[x, y]`; `a.d=` is
    the empty text). Hydra's `+K=V` and `++K=V` set K alike: a key AgentJet's `defaults:`
    give is not in the file, so adding and replacing are one thing here. `~K` (remove a key)
    cannot be carried out in a copy and is refused, as anything that is not K=V is
    (OptionError saying what is wrong)."""
    if not isinstance(text, str):
        raise OptionError(f"{key}: expected K=V (a string), got {show(text)}")
    name, equals, value = text.partition("=")
    if text.startswith("~"):
        raise OptionError(
            f"{key}: {show(text)} removes a key, which a copy of exp_yaml_path cannot do for "
            "a key its `defaults:` give; set it to a value instead (K=V)"
        )
    parts = name.lstrip("+").split(".")
    if not equals or not all(_KEY_PART.fullmatch(p) for p in parts):
        raise OptionError(
            f"{key}: {show(text)} is not K=V (a dotted key such as "
            "ajet.trainer_common.optim.lr, =, a YAML value)"
        )
    if len(parts) > MAX_KEY_PARTS:
        raise OptionError(
            f"{key}: {show(text)}: the key has {len(parts)} parts, at most {MAX_KEY_PARTS} "
            f"(the copy of exp_yaml_path is read back, {CONFIG_MAX_DEPTH} levels deep at most)"
        )
    if not value:
        return tuple(parts), ""
    try:
        return tuple(parts), yamlpart.load(value, config=True)
    except yamlpart.YamlError as exc:
        raise OptionError(f"{key}: {show(text)}: the value is {exc}") from None


def checked_override(key: str, text: Any) -> str:
    """`text` once it is a `yaml_overrides` entry (`parse_override`)."""
    parse_override(key, text)
    return str(text)


def override_patches(
    config: Mapping[str, Any], overrides: tuple[str, ...]
) -> tuple[ConfigReview, dict[str, Any]]:
    """A blueprint's `yaml_overrides` as patches for the copy of its config, with a line for
    each (the value before, in the file, and after), or the problems: a section on the way
    that is not a mapping (`trainer_common: 5`), a section replaced by a plain value. Also
    the config with them set (one copy, each override set in it as it is taken: a config of
    megabytes was copied once per override), which the preflight reviews and fixes."""
    out = ConfigReview()
    now: dict[str, Any] = copy.deepcopy(dict(config))
    for i, text in enumerate(overrides, 1):
        try:
            path, value = parse_override(f"yaml_overrides[{i}]", text)
        except OptionError as exc:
            out.problems.append(str(exc))
            continue
        blocked = _not_mapping(now, path)
        old = _get(now, *path)
        if blocked is None and isinstance(old, Mapping) and not isinstance(value, Mapping):
            blocked = f"exp_yaml_path: {'.'.join(path)} is a section; set one of its keys"
        if blocked is not None:
            out.problems.append(f"yaml_overrides[{i}] {show(text)}: {blocked}")
            continue
        out.patches[path] = value
        before = _as_yaml(old) if _has(now, path) else "(not in the file)"
        out.changes.append(f"{'.'.join(path)}: {before} → {_as_yaml(value)} (yaml_overrides)")
        _set_path(now, path, copy.deepcopy(value))  # a later override must not reach into it
    return out, now


def _as_yaml(value: Any) -> str:
    """A value as the copy writes it (`2e-6`, `[a, b]`, `''`), cut as `show` cuts: the
    program reads the YAML, so a Python repr ('2e-6') would say a string where it reads a
    number."""
    text = yamlpart.dump(
        value, config=True, default_flow_style=True, allow_unicode=True, width=10**6
    )
    text = text.removesuffix("\n").removesuffix("\n...")
    return text if len(text) <= 60 else text[:59] + "…"


def _has(config: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    parent = _get(config, *path[:-1])
    return isinstance(parent, Mapping) and path[-1] in parent
