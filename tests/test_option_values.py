"""Every `[ajetd]` option, in every form it takes and a few it refuses: one table (issue 16).

Each value is parsed once, by the parser of its kind (`ajetd.core.values`), into what the rest of
ajetd uses (seconds, minutes, MiB, counts, tuples); a refused value gets a message that starts
with its key. `test_the_table_covers_every_key` fails when an option is added without rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ajetd.core.errors import BlueprintError
from ajetd.core.hostspecs import SlurmSpec
from ajetd.core.options import KNOWN_KEYS, SUBKEYS, Options, parse_options


def _slurm(o: Options) -> SlurmSpec:
    assert o.slurm is not None
    return o.slurm


ACCESS: dict[str, Callable[[Options], Any]] = {
    "gpus": lambda o: o.gpus,
    "env": lambda o: o.env,
    "max_trials": lambda o: o.max_trials,
    "allow_fixes": lambda o: o.allow_fixes,
    "allow_fixes.min": lambda o: o.allow_fixes["lr"][0],
    "allow_fixes.max": lambda o: o.allow_fixes["lr"][1],
    "plateau": lambda o: o.plateau is not None,
    "plateau.metric": lambda o: o.plateau and o.plateau.metric,
    "plateau.patience": lambda o: o.plateau and o.plateau.patience,
    "plateau.min_delta": lambda o: o.plateau and o.plateau.min_delta,
    "plateau.after": lambda o: o.plateau and o.plateau.after,
    "plateau.mode": lambda o: o.plateau and o.plateau.mode,
    "hang": lambda o: (o.hang_window_s, o.hang_action),
    "hang.window": lambda o: o.hang_window_s,
    "hang.action": lambda o: o.hang_action,
    "autokill": lambda o: o.autokill,
    "keep_session": lambda o: o.keep_session_s,
    "swarm": lambda o: o.swarm and o.swarm.port,
    "swarm.port": lambda o: o.swarm and o.swarm.port,
    "swarm.server_command": lambda o: o.swarm and o.swarm.command,
    "swarm.health_timeout": lambda o: o.swarm and o.swarm.health_timeout_s,
    "swarm.keep": lambda o: o.swarm and o.swarm.keep_s,
    "ssh": lambda o: o.ssh and o.ssh.target,
    "ssh.host": lambda o: o.ssh and o.ssh.host,
    "ssh.user": lambda o: o.ssh and o.ssh.user,
    "ssh.port": lambda o: o.ssh and o.ssh.port,
    "ssh.identity_file": lambda o: o.ssh and o.ssh.identity_file,
    "ssh.options": lambda o: o.ssh and o.ssh.options,
    "pull": lambda o: o.pull,
    "stages": lambda o: len(o.stages),
    "stages.name": lambda o: o.stages[1].name,
    "stages.command": lambda o: o.stages[1].command,
    "stages.requires": lambda o: o.stages[1].requires,
    "stages.outputs": lambda o: o.stages[1].outputs,
    "kinds": lambda o: tuple(k.name for k in o.kinds),
    "yaml_overrides": lambda o: o.yaml_overrides,
    "on_finish": lambda o: o.on_finish,
    "on_attention": lambda o: o.on_attention,
    "slurm": lambda o: o.slurm is not None,
    "slurm.partition": lambda o: _slurm(o).partition,
    "slurm.nodes": lambda o: _slurm(o).nodes,
    "slurm.gpus_per_node": lambda o: _slurm(o).gpus_per_node,
    "slurm.cpus_per_task": lambda o: _slurm(o).cpus_per_task,
    "slurm.mem": lambda o: _slurm(o).mem_mib,
    "slurm.time": lambda o: "UNLIMITED" if _slurm(o).time_unlimited else _slurm(o).time_min,
    "slurm.account": lambda o: _slurm(o).account,
    "slurm.qos": lambda o: _slurm(o).qos,
    "slurm.constraint": lambda o: _slurm(o).constraint,
    "slurm.exclude": lambda o: _slurm(o).exclude,
    "slurm.extra": lambda o: _slurm(o).extra,
    "slurm.mode": lambda o: _slurm(o).mode,
}


def _yaml(key: str, value: str) -> str:
    """The `[ajetd]` YAML that gives `key` this value (with what the key needs beside it)."""
    top, _, sub = key.partition(".")
    if top == "stages":
        if not sub:
            return f"stages: {value}"
        fields = {"name": "b", "command": "x", sub: value}
        second = ", ".join(f"{k}: {v}" for k, v in fields.items())
        return f"stages: [{{name: a}}, {{{second}}}]"
    if top == "allow_fixes" and sub:
        return f"allow_fixes: {{lr: {{{sub}: {value}}}}}"
    if top == "pull":
        return f"ssh: h\npull: {value}"
    if top == "ssh" and sub and sub != "host":
        return f"ssh: {{host: h, {sub}: {value}}}"
    return f"{top}: {{{sub}: {value}}}" if sub else f"{top}: {value}"


H, M, D = 3600.0, 60.0, 86400.0
ACCEPTED: list[tuple[str, str, Any]] = [
    ("gpus", "all", "all"),
    ("gpus", "0", "0"),
    ("gpus", "4", "4"),
    ("gpus", "[0, 1]", "[0,1]"),
    ("env", "{NCCL_DEBUG: WARN, N: 1, B: true}", {"NCCL_DEBUG": "WARN", "N": "1", "B": "true"}),
    ("max_trials", "1", 1),
    ("max_trials", "'5'", 5),
    ("allow_fixes", "{lr: {min: 1e-7}, max_response_length: {}}", None),
    ("allow_fixes.min", "1e-7", 1e-7),
    ("allow_fixes.min", "0.5", 0.5),
    ("allow_fixes.max", "4", 4.0),
    ("plateau", "true", True),
    ("plateau.metric", "task_pass_rate@1", "task_pass_rate@1"),
    ("plateau.patience", "2", 2),
    ("plateau.min_delta", "0.01", 0.01),
    ("plateau.after", "0.25", 0.25),
    ("plateau.mode", "min", "min"),
    ("hang", "{window: 20m, action: stop}", (1200.0, "stop")),
    ("hang.window", "auto", None),
    ("hang.action", "relaunch", "relaunch"),
    ("autokill", "allow", "allow"),
    ("swarm", "10090", 10090),
    ("swarm.port", "9000", 9000),
    (
        "swarm.server_command",
        "'ajet-swarm start --swarm-port=9'",
        "ajet-swarm start --swarm-port=9",
    ),
    ("swarm.keep", "0", 0.0),
    ("ssh", "gpu-node-3", "gpu-node-3"),
    ("ssh.host", "10.0.0.3", "10.0.0.3"),
    ("ssh.user", "me", "me"),
    ("ssh.port", "2222", 2222),
    ("ssh.identity_file", "~/.ssh/id_ed25519", "~/.ssh/id_ed25519"),
    (
        "ssh.options",
        "{StrictHostKeyChecking: accept-new}",
        (("StrictHostKeyChecking", "accept-new"),),
    ),
    ("pull", "saved_experiments/", ("saved_experiments/",)),
    ("pull", "[a, b/c]", ("a", "b/c")),
    ("stages", "[]", 0),
    ("stages.name", "eval", "eval"),
    ("stages.command", "python eval.py", "python eval.py"),
    ("stages.requires", "[ckpt/last]", ("ckpt/last",)),
    ("stages.outputs", "eval.json", ("eval.json",)),
    (
        "kinds",
        "[{name: my_err, patterns: [boom], severity: fatal, explanation: x, fix: y}]",
        ("my_err",),
    ),
    ("yaml_overrides", "ajet.trainer_common.optim.lr=2e-6", ("ajet.trainer_common.optim.lr=2e-6",)),
    ("yaml_overrides", "['a.b=[x, y]', +c=1, ++d=]", ("a.b=[x, y]", "+c=1", "++d=")),
    ("on_finish", "notify-send done", "notify-send done"),
    ("on_attention", "'echo hi'", "echo hi"),
    ("slurm", "true", True),
    ("slurm.partition", "debug", "debug"),
    ("slurm.nodes", "2", 2),
    ("slurm.gpus_per_node", "8", 8),
    ("slurm.cpus_per_task", "32", 32),
    ("slurm.mem", "64G", 65536),
    ("slurm.mem", "500M", 500),
    ("slurm.mem", "1.5T", 1572864),
    ("slurm.mem", "64 GB", 65536),
    ("slurm.mem", "16GiB", 16384),
    ("slurm.mem", "2048", 2048),  # a bare number is megabytes, as in Slurm
    ("slurm.mem", "1024K", 1),
    ("slurm.mem", "0", 0),  # Slurm's "all of the node's memory"
    ("slurm.account", "proj-1", "proj-1"),
    ("slurm.qos", "high", "high"),
    ("slurm.constraint", "h100", "h100"),
    ("slurm.exclude", "'node[1-3]'", "node[1-3]"),
    ("slurm.extra", "[--exclusive, '--signal=B:INT@60']", ("--exclusive", "--signal=B:INT@60")),
    ("slurm.mode", "batch", "batch"),
]
# Every duration key takes every form of ajetd's grammar.
DURATION_FORMS: list[tuple[str, float]] = [
    ("90s", 90),
    ("10m", 10 * M),
    ("2h", 2 * H),
    ("1h30m", 1.5 * H),
    ("1.5 hours", 1.5 * H),
    ("'1 hour 30 minutes'", 1.5 * H),
    ("90 分钟", 90 * M),
    ("2 小时", 2 * H),
    ("1d", D),
    ("'01:30:00'", 1.5 * H),
    ("2", 2 * H),  # a bare number is hours
    ("0.5", 0.5 * H),
]
for _key in ("hang.window", "keep_session", "swarm.health_timeout", "swarm.keep"):
    ACCEPTED += [(_key, text, seconds) for text, seconds in DURATION_FORMS]
# slurm.time: ajetd's durations and Slurm's own forms, in whole minutes (rounded up).
ACCEPTED += [
    ("slurm.time", text, minutes)
    for text, minutes in [
        ("10m", 10),
        ("2h", 120),
        ("1h30m", 90),
        ("90 分钟", 90),
        ("90s", 2),  # rounded up to a whole minute
        ("61s", 2),
        ("60", 60),  # a bare number is minutes, as Slurm reads it
        ("'30:00'", 30),  # MM:SS
        ("'10:30'", 11),  # MM:SS, rounded up
        ("'01:00:00'", 60),  # HH:MM:SS
        ("'1-12'", 2160),  # D-HH
        ("'1-12:30'", 2190),  # D-HH:MM
        ("'2-00:00:00'", 2880),  # D-HH:MM:SS
        ("UNLIMITED", "UNLIMITED"),
        ("infinite", "UNLIMITED"),
    ]
]
REFUSED: list[tuple[str, str, str]] = [
    ("gpus", "lots", "gpus: expected a count"),
    ("gpus", "[0, 0]", "gpus: repeated index"),
    ("gpus", "-1", "gpus: expected a whole number from 0"),
    ("gpus", "[0, -1]", "gpus[2]: expected a whole number"),
    ("env", "{1BAD: x}", "env: '1BAD' is not a valid"),
    ("env", "[A]", "env: expected a mapping"),
    ("max_trials", "0", "max_trials: expected a whole number from 1 to 100"),
    ("max_trials", "1.5", "max_trials: expected a whole number"),
    ("max_trials", "true", "max_trials: expected a whole number"),
    ("max_trials", "99999999999999999999999", "max_trials: expected a whole number"),
    ("allow_fixes", "[lr]", "allow_fixes: expected"),
    ("allow_fixes.min", "small", "allow_fixes.lr.min: expected a number"),
    ("allow_fixes.max", ".inf", "allow_fixes.lr.max: expected a number"),
    ("allow_fixes.max", ".nan", "allow_fixes.lr.max: expected a number"),
    ("plateau", "maybe", "plateau: expected"),
    ("plateau.metric", "''", "plateau.metric: expected a validation key"),
    ("plateau.patience", "0", "plateau.patience: expected a whole number from 1"),
    ("plateau.min_delta", "-1", "plateau.min_delta: expected a number"),
    ("plateau.min_delta", ".nan", "plateau.min_delta: expected a number"),
    ("plateau.after", "2", "plateau.after: expected a fraction of exp_max_time"),
    ("plateau.mode", "up", "plateau.mode: expected auto, max or min"),
    ("hang", "soon", "hang: expected"),
    ("hang.action", "explode", "hang.action: expected attention, stop or relaunch"),
    ("autokill", "sometimes", "autokill: expected protect or allow"),
    ("swarm", "maybe", "swarm: expected"),
    ("swarm.port", "99999", "swarm.port: expected a TCP port number"),
    ("swarm.server_command", "[ajet-swarm]", "swarm.server_command: expected a shell command"),
    ("ssh", "[h]", "ssh: expected"),
    ("ssh.host", "-oProxyCommand=x", "ssh.host:"),
    ("ssh.user", "'a b'", "ssh.user:"),
    ("ssh.port", "0", "ssh.port: expected a TCP port number"),
    ("ssh.identity_file", '"a\\0b"', "ssh.identity_file: the path holds a control character"),
    ("ssh.options", "{Bad Key: 1}", "ssh.options: expected"),
    ("pull", "3", "pull: expected a list"),
    ("pull", '["a\\nb"]', "pull[1]: the path holds a control character (U+000A)"),
    ("stages", "3", "stages: expected a list"),
    ("stages.name", "[x]", "stages[2].name: expected a string"),
    ("stages.command", "[x]", "command: expected a shell command"),
    ("stages.requires", '["\\0"]', "stages[2].requires[1]: the path holds a control character"),
    ("stages.outputs", "{a: b}", "stages[2].outputs: expected a list"),
    ("kinds", "3", "kinds: expected a list of {name, patterns"),
    ("yaml_overrides", "[~a.b]", "yaml_overrides[1]: '~a.b' removes a key"),
    ("yaml_overrides", "[a, b=1]", "yaml_overrides[1]: 'a' is not K=V"),
    ("yaml_overrides", "['a..b=1']", "yaml_overrides[1]: 'a..b=1' is not K=V"),
    ("yaml_overrides", "['a=[1']", "yaml_overrides[1]: 'a=[1': the value is not valid YAML"),
    ("yaml_overrides", "[{a: 1}]", "yaml_overrides[1]: expected K=V (a string)"),
    ("on_finish", "[1, 2]", "on_finish: expected a shell command"),
    ("on_attention", '"a\\0b"', "on_attention: holds a control character (U+0000)"),
    ("slurm", "fast", "slurm: expected"),
    ("slurm.partition", "'a b'", "slurm.partition: 'a b' is not a Slurm value"),
    ("slurm.nodes", "0", "slurm.nodes: expected a whole number from 1"),
    ("slurm.gpus_per_node", "two", "slurm.gpus_per_node: expected a whole number"),
    ("slurm.cpus_per_task", "-4", "slurm.cpus_per_task: expected a whole number"),
    ("slurm.mem", "lots", "slurm.mem: expected a size such as 64G or 500M"),
    ("slurm.mem", "64X", "slurm.mem: expected a size"),
    ("slurm.mem", "-1G", "slurm.mem: expected a size"),
    ("slurm.mem", "99999999999T", "slurm.mem: '99999999999T' is more memory than any node has"),
    ("slurm.account", "'x;rm'", "slurm.account:"),
    ("slurm.qos", "'$(x)'", "slurm.qos:"),
    ("slurm.constraint", "'a b'", "slurm.constraint:"),
    ("slurm.exclude", "'a b'", "slurm.exclude:"),
    ("slurm.extra", "{a: b}", "slurm.extra: expected a list"),
    ("slurm.extra", "[exclusive]", "slurm.extra[1]: expected an option such as --exclusive"),
    ("slurm.mode", "later", "slurm.mode: expected interactive or batch"),
]
BAD_DURATIONS = [
    ("soon", "no duration found"),
    ("2 months", "no duration found"),
    ("'-5 min'", "cannot be negative"),
    ("-1", "cannot be negative"),
    ("'-1:00:00'", "cannot be negative"),
    ("1e3s", "exponent"),
    ("1e400 hours", "exponent"),
    (".inf", "without exponent, inf or NaN"),
    (".nan", "without exponent, inf or NaN"),
    ("'400 days'", "more than a year"),
    ("9999999999999999", "digits is not a duration"),
    ("'2h please'", "is not only a duration"),
    ("true", "expected a duration"),
    ("[1h]", "expected a duration"),
]
for _key in ("hang.window", "keep_session", "swarm.health_timeout", "swarm.keep"):
    REFUSED += [(_key, text, f"{_key}: …{needle}") for text, needle in BAD_DURATIONS]
REFUSED += [
    ("hang.window", "0", "hang.window: duration must be positive"),
    ("swarm.health_timeout", "0s", "swarm.health_timeout: duration must be positive"),
]
REFUSED += [
    ("slurm.time", text, f"slurm.time: …{needle}")
    for text, needle in [
        ("soon", "no duration found"),
        ("'10 parsecs'", "no duration found"),
        ("'-5'", "cannot be negative"),
        ("1e3s", "exponent"),
        ("0", "must be at least a minute"),
        ("'25:61'", "minutes and seconds to 59"),
        ("'1-25:00'", "hours go up to 23"),
        ("'400-00:00:00'", "more than a year"),
        ("[10]", "expected minutes (60), MM:SS"),
        ("true", "expected minutes (60), MM:SS"),
        ("'2 h and a bit'", "it takes minutes (60), MM:SS, HH:MM:SS, D-HH"),
    ]
]


def _says(problem: str, needle: str) -> bool:
    """`needle` in `problem`; `…` in the needle stands for any text (the value shown)."""
    first, *rest = needle.split("…")
    if first not in problem:
        return False
    pos = problem.index(first) + len(first)
    for piece in rest:
        found = problem.find(piece, pos)
        if found < 0:
            return False
        pos = found + len(piece)
    return True


@pytest.mark.parametrize(("key", "value", "expected"), ACCEPTED, ids=lambda v: str(v)[:30])
def test_accepted_forms(key: str, value: str, expected: Any) -> None:
    options = parse_options(_yaml(key, value))
    if expected is not None:
        assert ACCESS[key](options) == expected


@pytest.mark.parametrize(("key", "value", "needle"), REFUSED, ids=lambda v: str(v)[:30])
def test_refused_forms_name_the_key(key: str, value: str, needle: str) -> None:
    with pytest.raises(BlueprintError) as err:
        parse_options(_yaml(key, value))
    assert any(_says(p, needle) for p in err.value.problems), (needle, err.value.problems)
    assert all(len(p) < 400 for p in err.value.problems)


def test_the_table_covers_every_key() -> None:
    every = set(KNOWN_KEYS) | {f"{top}.{sub}" for top, subs in SUBKEYS.items() for sub in subs}
    assert every == set(ACCESS)
    assert every <= {row[0] for row in ACCEPTED}, every - {row[0] for row in ACCEPTED}
    assert every <= {row[0] for row in REFUSED}, every - {row[0] for row in REFUSED}


CAMPAIGN = "name: c\nbase: b.md\nresult_dir: /tmp/c\nexperiments: []\n"


@pytest.mark.parametrize(
    ("yaml", "expected"),
    [
        ("stop: {deadline: 10h}", ("deadline_s", 36000.0)),
        ("stop: {deadline: 90 分钟}", ("deadline_s", 5400.0)),
        ("stop: {deadline: 2}", ("deadline_s", 7200.0)),
        ("stop: {per_experiment_timeout: '1:30:00'}", ("per_experiment_s", 5400.0)),
        ("stop: {max_experiments: 5}", ("max_experiments", 5)),
        ("stop: {target_metric: 0.8}", ("target", 0.8)),
        ("parallel: 2", ("parallel", 2)),
        ("stop: {deadline: '-1h'}", "stop.deadline: a duration cannot be negative"),
        ("stop: {deadline: 1e3s}", "stop.deadline: exponent"),
        ("stop: {per_experiment_timeout: 400 days}", "stop.per_experiment_timeout: '400 days'"),
        ("stop: {max_experiments: 0}", "stop.max_experiments: expected a whole number from 1"),
        ("stop: {target_metric: .nan}", "stop.target_metric: expected a number"),
        ("parallel: " + "9" * 400, "parallel: expected a whole number from 1 to 1000"),
        ("x: &a 1\ny: *a", "campaign.yaml: anchors (&a) are not accepted"),
    ],
    ids=lambda v: str(v)[:30],
)
def test_campaign_values_use_the_same_parsers(yaml: str, expected: Any) -> None:
    """A campaign's times and counts go through the same parsers as a blueprint's."""
    from ajetd.core import campaignspec as cs

    if isinstance(expected, tuple):
        spec = cs.parse_campaign(CAMPAIGN + yaml + "\n", {"b.md"})
        assert getattr(spec, expected[0]) == expected[1]
        return
    with pytest.raises(cs.CampaignError) as err:
        cs.parse_campaign(CAMPAIGN + yaml + "\n", {"b.md"})
    assert any(expected in p for p in err.value.problems), err.value.problems


@given(
    name=st.sampled_from(KNOWN_KEYS),
    upper=st.lists(st.booleans(), min_size=16, max_size=16),
)
def test_a_name_differing_in_case_only_is_pointed_at(name: str, upper: list[bool]) -> None:
    """`GPUs`, `MAX_TRIALS`: the closest name of all was given no hint (walk 90, F9); the
    hint names the key as it is spelt."""
    from ajetd.core.values import closest, did_you_mean

    given_name = "".join(c.upper() if up else c for c, up in zip(name, upper, strict=False))
    assert closest(given_name, KNOWN_KEYS) == [name]
    assert did_you_mean(given_name, list(KNOWN_KEYS)) == f"; did you mean {name!r}?"


# YAML 1.1's readings of numbers written otherwise than they print (issue: `1e400` was quoted
# back as inf): the text as written, and what YAML reads it as
ODD_NUMBERS = [
    ("1.0e+400", "inf"),
    ("-1.0e+400", "-inf"),
    (".inf", "inf"),
    ("-.Inf", "-inf"),
    (".nan", "nan"),
    ("1e400", "inf"),  # text to YAML (no dot): the number parsers read it as a float
    ("-1e400", "-inf"),
    ("1.0e-400", "0.0"),
    ("1e-400", "0.0"),
    ("1_000", "1000"),
    ("0x10", "16"),
    ("010", "8"),
    ("1:30", "90"),
]


@pytest.mark.parametrize(("written", "read"), ODD_NUMBERS)
@pytest.mark.parametrize("key", sorted(ACCESS))
def test_a_message_quotes_a_number_as_written(key: str, written: str, read: str) -> None:
    """Every option given every odd number: a message that shows the value shows what the
    user wrote (`1.0e+400`, `0x10`), never only YAML's reading of it (`inf`, `16`)."""
    try:
        parse_options(_yaml(key, written))
    except BlueprintError as err:
        reading = re.compile(rf"(?<![\w.:+-]){re.escape(read)}(?![\w.:])")
        for problem in err.problems:
            assert written in problem or not reading.search(problem), problem


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("slurm.time", "1:30:00", 90),  # HH:MM:SS; YAML reads 5400 (5400 minutes)
        ("slurm.time", "1:30", 2),  # MM:SS as Slurm reads it, rounded up; YAML reads 90
        ("slurm.time", "010", 10),  # YAML reads 8
        ("slurm.mem", "010", 10),
        ("keep_session", "1:30", 5400.0),  # HH:MM; YAML reads 90 (hours)
        ("hang.window", "010", 36000.0),  # ten hours; YAML reads 8
        ("stages.name", "1.0e+400", "1.0e+400"),  # YAML reads inf
        ("slurm.partition", "0x10", "0x10"),  # YAML reads 16
        ("env", "{V: 1.0e+400, W: 0x10}", {"V": "1.0e+400", "W": "0x10"}),
        ("allow_fixes.min", "1.0e-7", 1e-7),  # decimal forms are numbers as before
        ("plateau.min_delta", "0.010", 0.01),
        ("max_trials", "+5", 5),
        ("keep_session", "+5", 5 * H),  # YAML's sign left off: five hours, as before
        ("slurm.time", "+60", 60),
    ],
)
def test_an_option_taking_text_takes_a_number_as_written(
    key: str, value: str, expected: Any
) -> None:
    """A text option (a duration, a Slurm time, a name) takes the number's text as written,
    not YAML's reading of it: `slurm: {time: 1:30:00}` was 5400 minutes."""
    assert ACCESS[key](parse_options(_yaml(key, value))) == expected


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        ("max_trials", "010", "got 010 (YAML reads it as 8"),
        ("gpus", "0x10", "got 0x10 (YAML reads it as 16"),
        ("plateau.patience", "1:30", "got 1:30 (YAML reads it as 90"),
        ("allow_fixes.max", "1_000", "got 1_000 (YAML reads it as 1000"),
        ("allow_fixes.min", "010", "got 010 (YAML reads it as 8"),
        ("plateau.min_delta", "1.0e-400", "got 1.0e-400 (too small to tell from 0"),
        ("plateau.min_delta", "1e-400", "got '1e-400' (too small to tell from 0"),
        ("allow_fixes.max", "1.0e+400", "allow_fixes.lr.max: expected a number, got 1.0e+400"),
    ],
)
def test_a_number_option_refuses_what_yaml_misreads(key: str, value: str, needle: str) -> None:
    """A number option takes decimal forms only: what YAML 1.1 reads otherwise than the user
    likely meant (octal `010`, `1:30`, `1_000`, a nonzero value read as 0.0) is refused with
    the text and its reading, where it was taken silently."""
    with pytest.raises(BlueprintError) as err:
        parse_options(_yaml(key, value))
    assert any(needle in p for p in err.value.problems), err.value.problems


@pytest.mark.parametrize("written", [w for w, _ in ODD_NUMBERS] + ["0.10", "+5", "1.5"])
def test_a_number_is_dumped_as_written(written: str) -> None:
    """What ajetd writes back from YAML it read (a campaign's experiment blueprint, a config
    copy with `yaml_overrides`, a campaign.yaml with added experiments) keeps each number's
    text: a plain dump wrote 5400 for `1:30:00` and `.inf` for `1.0e+400`."""
    from ajetd.core import yamlpart

    data = yamlpart.load(f"a: {written}\nb: [{written}]\n")
    text = yamlpart.dump(data)
    assert text == f"a: {written}\nb:\n- {written}\n"
    assert str(yamlpart.load(text)["a"]) == written


def test_a_campaign_experiment_keeps_the_base_options_as_written() -> None:
    """The experiment's blueprint carries the base's `[ajetd]` YAML: `slurm: {time: 1:30:00}`
    stays 90 minutes there (a plain dump made it 5400, read back as 5400 minutes)."""
    from ajetd.core import campaignspec as cs
    from ajetd.core.blueprint import parse_blueprint
    from ajetd.core.campaignblueprint import experiment_blueprint

    parts = (
        "## [exp_purpose]\nedge test\n\n## [exp_codebase_dir]\n/tmp\n\n## [exp_venv_exe]\n"
        "/usr/bin/python3\n\n## [exp_yaml_path]\ncfg.yaml\n\n## [exp_launch_command]\n"
        "```bash\npython train.py\n```\n\n## [exp_result_dir]\n/tmp/r\n\n## [exp_max_time]\n"
        "10m\n\n## [ajetd]\n```yaml\nslurm: {time: 1:30:00, partition: 0x10}\n```\n"
    )
    exp = cs.Experiment("next")
    spec = cs.CampaignSpec("c", "mean_reward", True, "base.md", "/tmp/c", (exp,))
    slurm = parse_blueprint(experiment_blueprint(spec, exp, 1, parts, "/tmp", 0.0)).options.slurm
    assert slurm is not None
    assert (slurm.time_min, slurm.partition) == (90, "0x10")


def test_an_override_is_set_and_shown_as_written() -> None:
    """`yaml_overrides: [a.lr=1.0e-4]`: the change line and the copy say 1.0e-4."""
    from ajetd.core import yamlpart
    from ajetd.frameworks.agentjet import override_patches

    review, config = override_patches({"a": {"lr": 0.001}}, ("a.lr=1.0e-4", "a.t=1:30:00"))
    assert review.changes == [
        "a.lr: 0.001 → 1.0e-4 (yaml_overrides)",
        "a.t: (not in the file) → 1:30:00 (yaml_overrides)",
    ]
    assert yamlpart.dump(config) == "a:\n  lr: 1.0e-4\n  t: 1:30:00\n"
