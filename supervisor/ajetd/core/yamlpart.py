"""YAML written by people into a blueprint's `[ajetd]` part (and `campaign.yaml`), read with
bounds. Pure.

`yaml.safe_load` alone is not safe for input the daemon reads in its one loop: an 806-byte
alias bomb expanded to 3 GB, deep nesting raised RecursionError, `!!int ''` and a bad implicit
timestamp raised ValueError, a 5,000-digit integer raised ValueError (and could not be printed).
Here the events are checked first, in C (libyaml), before anything is built: no aliases or
anchors, no explicit tags, one document, at most `MAX_DEPTH` levels and `MAX_NODES` nodes;
then the document is built with dates read as text, integers of more than 30 characters
left as text (their option refuses them by name) and no key given twice. Any failure is a
`YamlError` with one short message and its line.

A number written otherwise than it prints (`1.0e+400` is inf, `1.0e-400` 0.0, `0x10` 16,
`1:30` 90, `010` 8) is built as a `WrittenInt` or `WrittenFloat` (`ajetd.core.shown`): the
number, which remembers its text. Messages quote that text, options that take text take
it (`slurm: {time: 1:30:00}` is 90 minutes, not 5400), and `dump` writes it back as written.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, ScalarNode

from ajetd.core.errors import AjetdError
from ajetd.core.shown import WrittenFloat, WrittenInt

MAX_CHARS = 64 * 1024
MAX_DEPTH = 16
MAX_NODES = 20000
MAX_INT_CHARS = 30
SAFE_LOADER: type[Any] = getattr(
    yaml, "CSafeLoader", yaml.SafeLoader
)  # libyaml where PyYAML has it


class YamlError(AjetdError):
    """YAML that is refused; the message says what and where (line numbers from 1)."""


class _Loader(SAFE_LOADER):  # type: ignore[misc]
    """SafeLoader (libyaml's where present) without timestamps, with bounded integers and
    duplicate keys refused."""

    yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, Any]]]] = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in SAFE_LOADER.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            if isinstance(key_node, ScalarNode):
                line = key_node.start_mark.line + 1
                if key_node.value in seen:
                    raise ConstructorError(
                        None,
                        None,
                        f"key {_short(key_node.value)} given twice (lines {seen[key_node.value]} "
                        f"and {line})",
                        key_node.start_mark,
                    )
                seen[key_node.value] = line
        return dict(SafeConstructor.construct_mapping(self, node, deep=deep))

    def construct_bounded_int(self, node: ScalarNode) -> int | str:
        """An integer of at most 30 characters; a longer one stays text, so the option's own
        check refuses it by its key (and never converts or prints a 5,000-digit number)."""
        text = str(self.construct_scalar(node))
        if len(text) > MAX_INT_CHARS:
            return text
        value = int(SafeConstructor.construct_yaml_int(self, node))
        return value if repr(value) == text else WrittenInt(value, text)

    def construct_written_float(self, node: ScalarNode) -> float:
        """A float; one written otherwise than it prints remembers its text (`WrittenFloat`)."""
        text = str(self.construct_scalar(node))
        value = float(SafeConstructor.construct_yaml_float(self, node))
        return value if repr(value) == text else WrittenFloat(value, text)


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_bounded_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _Loader.construct_written_float)
# A float as OmegaConf reads one (omegaconf._utils.get_yaml_loader), which Hydra (AgentJet)
# and NeMo-RL read their configs with: YAML 1.1 wants a dot (`1.0e-6`), so PyYAML alone
# reads `1e-6` and `3e-05`, the way learning rates are written, as text, and a fix of `lr`
# found no number to halve. One alternative per form, no nested quantifier.
_OMEGACONF_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+][0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.VERBOSE,
)
_FLOAT_TAG = "tag:yaml.org,2002:float"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


def _omegaconf_resolvers(
    resolvers: dict[str, list[tuple[str, Any]]],
) -> dict[str, list[tuple[str, Any]]]:
    """`resolvers` as OmegaConf has them: its float first, no timestamps (new lists: PyYAML's
    `add_implicit_resolver` appends to lists a subclass shares with its parent)."""
    return {
        first: [
            *([(_FLOAT_TAG, _OMEGACONF_FLOAT)] if first in "-+0123456789." else []),
            *((tag, regexp) for tag, regexp in found if tag not in (_FLOAT_TAG, _TIMESTAMP_TAG)),
        ]
        for first, found in {**{key: [] for key in "-+0123456789."}, **resolvers}.items()
    }


class ConfigLoader(_Loader):
    """A training config as its program reads it (OmegaConf's loader: no timestamps, no key
    given twice, `1e-6` a float), its numbers remembering how they were written, so that a
    copy with fixes writes the rest back as it was (`ConfigDumper`). No bounds of its own:
    the caller checks the text's size and shape first (`shape_problem`)."""

    yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, Any]]]] = _omegaconf_resolvers(
        _Loader.yaml_implicit_resolvers
    )

    def construct_written_int(self, node: ScalarNode) -> int:
        """An integer of any length its program takes (the checks of a count say which is too
        big, by its key); one written otherwise than it prints remembers its text."""
        text = str(self.construct_scalar(node))
        value = int(SafeConstructor.construct_yaml_int(self, node))
        return value if repr(value) == text else WrittenInt(value, text)


ConfigLoader.add_constructor("tag:yaml.org,2002:int", ConfigLoader.construct_written_int)


SAFE_DUMPER: type[Any] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's, as the loader


class Dumper(SAFE_DUMPER):  # type: ignore[misc]
    """The safe dumper (libyaml's where present) that writes a `WrittenInt` or `WrittenFloat`
    as the user wrote it: a plain safe dumper refuses them (a subclass of int), and the
    number alone would say `.inf` for `1.0e+400` and 5400 for `1:30:00`."""


def _represent_written(dumper: Any, data: WrittenInt | WrittenFloat) -> Any:
    tag = "tag:yaml.org,2002:int" if isinstance(data, int) else "tag:yaml.org,2002:float"
    return dumper.represent_scalar(tag, data.written)


Dumper.add_representer(WrittenInt, _represent_written)
Dumper.add_representer(WrittenFloat, _represent_written)


class ConfigDumper(Dumper):
    """`Dumper` for a copy of a training config, `ConfigLoader`'s reverse: a number OmegaConf
    reads as one (`1e-6`) is written plain, not tagged `!!float`, and text only a timestamp
    resolver would take for a date is not quoted (OmegaConf has none)."""

    yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, Any]]]] = _omegaconf_resolvers(
        Dumper.yaml_implicit_resolvers
    )


def dump(data: Any, *, config: bool = False, **options: Any) -> str:
    """`data` as YAML text (`yaml.dump`'s `options`), numbers as they were written; `config`:
    as a training config's copy writes it (`ConfigDumper`)."""
    return str(yaml.dump(data, Dumper=ConfigDumper if config else Dumper, **options))


def _short(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:30] + "…")


def _check_events(text: str) -> None:
    """Walk the events (no document built yet); refuse what could blow up building it."""
    loader = _Loader(text)
    depth = nodes = documents = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            line = event.start_mark.line + 1 if event.start_mark else 0
            if isinstance(event, yaml.AliasEvent):
                raise YamlError(f"aliases (*{_name(event.anchor)}) are not accepted (line {line})")
            if getattr(event, "anchor", None):
                raise YamlError(f"anchors (&{_name(event.anchor)}) are not accepted (line {line})")
            if getattr(event, "tag", None) and not isinstance(event, yaml.DocumentStartEvent):
                raise YamlError(
                    f"explicit tags ({_name(event.tag)}) are not accepted (line {line}); "
                    "write the value plainly or quote it"
                )
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise YamlError(f"one YAML document only (a second starts at line {line})")
            elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise YamlError(f"nested more than {MAX_DEPTH} levels deep (line {line})")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            if isinstance(
                event, (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)
            ):
                nodes += 1
                if nodes > MAX_NODES:
                    raise YamlError(f"more than {MAX_NODES} values (line {line})")
    finally:
        loader.dispose()


def shape_problem(text: str, max_depth: int, max_values: int) -> str | None:
    """What makes `text` too big to build, with its line (from 1), or None (also when it is
    no YAML: the load that follows says so): collections nested more than `max_depth` deep,
    or more than `max_values` values once aliases are counted as what they stand for. Read
    from the parser's events, which libyaml and PyYAML alike make without recursion, before
    anything is built: building recurses (in C for libyaml, unbounded in PyYAML 6.0.3's wheel:
    a segmentation fault), and a merge key (`<<: [*a, *a]`) copies what its aliases name, so
    8 anchors of 9 merges each (492 bytes) took 66 s and 723 MB to build."""
    parser = SAFE_LOADER(text)
    frames: list[tuple[int, str | None]] = []  # per open collection: values before it, anchor
    sizes: dict[str, int] = {}  # an anchor's values, its own included
    values = 0
    try:
        while (event := parser.get_event()) is not None:  # None at the stream's end
            kind = type(event)
            if kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                frames.append((values, event.anchor))
                values += 1
                if len(frames) > max_depth:
                    return f"nested more than {max_depth} levels deep (line {_line(event)})"
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                before, anchor = frames.pop()
                if anchor is not None:
                    sizes[anchor] = values - before
            elif kind is yaml.ScalarEvent:
                values += 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            elif kind is yaml.AliasEvent:
                values += sizes.get(event.anchor, 1)
            if values > max_values:
                aliased = "aliases counted as what they name"
                return f"more than {max_values} values, {aliased} (line {_line(event)})"
    except yaml.MarkedYAMLError as exc:  # libyaml >= 0.2.6 scans ahead, stops at 1000 itself
        mark = exc.problem_mark or exc.context_mark
        if "maximum nesting depth" in (exc.problem or "") and mark:
            return f"nested more than {max_depth} levels deep (line {int(mark.line) + 1})"
        return None
    except yaml.YAMLError:
        return None
    finally:
        parser.dispose()
    return None


def _line(event: Any) -> int:
    """An event's line (from 1), 0 where it has no mark."""
    return int(event.start_mark.line) + 1 if event.start_mark else 0


def _name(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= 30 else text[:25] + "…"


def _tab_hint(text: str, index: int) -> str:
    """`; a tab indents line N: ...` when line `index` (from 0) begins with a tab."""
    start = 0
    for _ in range(index):  # no split: the text may be long, the line is found in place
        start = text.find("\n", start) + 1
        if start == 0:
            return ""
    line = text[start : start + 64].lstrip(" ")
    if not line.startswith("\t"):
        return ""
    return f"; a tab indents line {index + 1}: YAML indents with spaces"


# a key followed by a full-width colon (a Chinese IME's `：`, U+FF1A), where YAML wants `:`
_WIDE_COLON = re.compile(r"^[ \t]*(?:-[ \t]+)?([A-Za-z_][\w.-]{0,60})[ \t]*：", re.MULTILINE)


def wide_colon(text: str) -> str | None:
    """`line N uses a full-width colon ...` for the first key written `key：value`: YAML reads
    no key there, and its own error names a later line, where it gave up (walk 86)."""
    found = _WIDE_COLON.search(text)
    if found is None:
        return None
    line = text.count("\n", 0, found.start()) + 1
    return (
        f"line {line} uses a full-width colon '：' after {found.group(1)}: YAML needs ':' "
        "(an ASCII colon, then a space)"
    )


def describe(exc: Exception, text: str, max_depth: int = MAX_DEPTH) -> str:
    """One line for a loader exception: its problem and line, never the whole context; a
    tab where YAML wants spaces is named (the loader only says it cannot start a token)."""
    wide = wide_colon(text)
    if wide is not None:  # the cause, where YAML names only the line it gave up at
        return f"not valid YAML: {wide}"
    if isinstance(exc, yaml.MarkedYAMLError):
        problem = (exc.problem or exc.context or "not valid YAML").splitlines()[0]
        mark = exc.problem_mark or exc.context_mark
        if "maximum nesting depth" in problem:  # libyaml >= 0.2.6 (PyYAML 6.0.4) scans ahead
            line = f" (line {mark.line + 1})" if mark else ""  # and stops at 1000 levels itself
            return f"nested more than {max_depth} levels deep{line}"
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        where = "" if "(line" in problem else where
        hint = _tab_hint(text, mark.line) if mark else ""
        return f"not valid YAML: {problem[:120]}{where}{hint}"
    first = (str(exc).splitlines() or [type(exc).__name__])[0]
    return f"not valid YAML: {first[:120]}"


def load(text: str, *, max_chars: int = MAX_CHARS, config: bool = False) -> Any:
    """The YAML value of `text` (None for an empty document); raise YamlError. `config`:
    read as a training config's value is (`ConfigLoader`: `1e-6` a float), for a value set
    in one (`yaml_overrides`)."""
    if len(text) > max_chars:
        raise YamlError(f"{len(text)} characters of YAML (at most {max_chars})")
    try:
        _check_events(text)
        return yaml.load(text, Loader=ConfigLoader if config else _Loader)  # noqa: S506 - SafeLoaders
    except YamlError:
        raise
    except Exception as exc:  # the promise: whatever the loader raises becomes one message
        raise YamlError(describe(exc, text)) from None


def plain_scalars_under(text: str, key: str) -> dict[str, str]:
    """The plain (unquoted) scalars of the mapping under top-level `key`, as written: YAML
    reads `0.10` as 0.1, `010` as 8, `yes` as true, but an environment variable is the text
    the user typed. Call after `load` accepted `text` (its bounds hold for this pass too)."""
    root = yaml.compose(text, Loader=_Loader)
    if not isinstance(root, MappingNode):
        return {}
    for key_node, value_node in root.value:
        if isinstance(key_node, ScalarNode) and key_node.value == key:
            if not isinstance(value_node, MappingNode):
                return {}
            return {
                str(name.value): str(value.value)
                for name, value in value_node.value
                if isinstance(name, ScalarNode)
                and isinstance(value, ScalarNode)
                and not value.style  # plain: None in PyYAML, "" in libyaml
                and value.tag != "tag:yaml.org,2002:null"
            }
    return {}
