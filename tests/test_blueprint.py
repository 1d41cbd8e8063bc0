"""Blueprint parsing: every writing style of DESIGN §3, and no other exception than ours."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ajetd.core.blueprint import REQUIRED, Blueprint, parse_blueprint
from ajetd.core.blueprintscan import _match_label
from ajetd.core.errors import BlueprintError

VALUES = {
    "exp_purpose": "Math top-k ablation: k=4 instead of k=8",
    "exp_codebase_dir": "/mnt/data/agentjet",
    "exp_venv_exe": "/mnt/data/agentjet/.venv/bin/python",
    "exp_yaml_path": "tests/bench/benchmark_math/benchmark_math.yaml",
    "exp_launch_command": (
        "python -m ajet.launcher --conf tests/bench/benchmark_math/benchmark_math.yaml --autokill"
    ),
    "exp_result_dir": "/mnt/data/results/exp01",
    "exp_max_time": "2h",
}
CHINESE = {
    "exp_purpose": "实验目的",
    "exp_codebase_dir": "主实验代码路径",
    "exp_venv_exe": "python虚拟环境路径",
    "exp_yaml_path": "实验配置文件路径",
    "exp_launch_command": "执行训练的命令",
    "exp_result_dir": "结果数据存储路径",
    "exp_max_time": "运行时间",
}


def _check(bp: Blueprint) -> None:
    assert bp.purpose == VALUES["exp_purpose"]
    assert bp.codebase_dir == VALUES["exp_codebase_dir"]
    assert bp.venv_exe == VALUES["exp_venv_exe"]
    assert bp.yaml_path == VALUES["exp_yaml_path"]
    assert bp.launch_command == VALUES["exp_launch_command"]
    assert bp.result_dir == VALUES["exp_result_dir"]
    assert bp.max_time_s == 7200


def _doc(render: object) -> str:
    assert callable(render)
    return "# Blueprint\n\nSome intro text.\n\n" + "\n".join(
        render(key, CHINESE[key], value) for key, value in VALUES.items()
    )


STYLES = {
    "bracket_heading_next_line": lambda k, zh, v: f"## [{k}]\n{v}\n",
    "plain_heading": lambda k, zh, v: f"## {k}\n\n{v}\n",
    "chinese_heading": lambda k, zh, v: f"## {zh}\n{v}\n",
    "bracket_and_chinese_heading": lambda k, zh, v: f"### [{k}] {zh}\n\n`{v}`\n",
    "numbered_heading": lambda k, zh, v: f"## 1. [{k}]\n{v}\n",
    "seed_bullet": lambda k, zh, v: f"- [{k}] {zh}（说明文字）： {v}",
    "bullet_ascii_colon": lambda k, zh, v: f"- [{k}] {zh}: {v}",
    "bullet_key_colon": lambda k, zh, v: f"* {k}: {v}",
    "bullet_chinese_only": lambda k, zh, v: f"- {zh}：{v}",
    "bold": lambda k, zh, v: f"**{k}**: {v}",
    "bold_colon_inside": lambda k, zh, v: f"**{k}:** {v}",
    "bold_chinese": lambda k, zh, v: f"**{zh}**：`{v}`",
    "plain_key_colon": lambda k, zh, v: f"{k}: {v}",
    "backticks_next_line": lambda k, zh, v: f"- [{k}]\n  `{v}`",
    "fenced": lambda k, zh, v: f"## [{k}]\n```\n{v}\n```\n",
    "fenced_lang": lambda k, zh, v: f"## {zh}\n~~~bash\n{v}\n~~~\n",
    # the Chinese label first, the key after it (walk97 F11: the key was read into the value,
    # or the part was 'missing')
    "chinese_then_bracket_heading": lambda k, zh, v: f"## {zh} [{k}]\n{v}\n",
    "chinese_then_bare_key_heading": lambda k, zh, v: f"## {zh} {k}\n\n{v}\n",
    "chinese_then_code_key_heading": lambda k, zh, v: f"## {zh} `{k}`\n{v}\n",
    "chinese_then_key_bullet": lambda k, zh, v: f"- {zh} {k}: {v}",
    "chinese_then_full_width_key_bullet": lambda k, zh, v: f"- {zh} 【{k}】： {v}",
    "chinese_then_key_bold": lambda k, zh, v: f"**{zh} {k}**: {v}",
}


@pytest.mark.parametrize("style", sorted(STYLES))
def test_every_writing_style(style: str) -> None:
    _check(parse_blueprint(_doc(STYLES[style])))


def test_seed_001_verbatim_layout() -> None:
    text = """实验蓝图：
- [exp_purpose] 实验目的（一段文本）： Math top-k ablation: k=4 instead of k=8
- [exp_codebase_dir] 主实验代码路径（绝对路径）： /mnt/data/agentjet
- [exp_venv_exe] python虚拟环境路径（python的绝对路径）: /mnt/data/agentjet/.venv/bin/python
- [exp_yaml_path] 实验配置文件路径（相对路径，相对于主实验代码路径）： tests/bench/benchmark_math/benchmark_math.yaml
- [exp_launch_command] 执行训练的命令（字符串）： python -m ajet.launcher --conf tests/bench/benchmark_math/benchmark_math.yaml --autokill
- [exp_result_dir] 结果数据存储路径（绝对路径）： /mnt/data/results/exp01
- [exp_max_time] 运行时间不超过 2 小时，每个实验强制在 2 小时 后终止
- 其他实验相关信息（可选）： 上一次实验 mean_reward 0.61
"""
    bp = parse_blueprint(text)
    _check(bp)
    assert bp.notes == "上一次实验 mean_reward 0.61"


def test_multiline_command_and_notes_and_ajetd_part() -> None:
    text = _doc(STYLES["bracket_heading_next_line"]).replace(
        VALUES["exp_launch_command"], "```bash\nsource x\npython train.py \\\n  --lr 1e-6\n```"
    )
    text += "\n## 其他实验相关信息\nline one\n\n- a bullet: with colon\n\n## [ajetd]\n"
    text += "```yaml\ngpus: [0, 1]\nenv: {NCCL_DEBUG: WARN, X: 1}\nkeep_session: 30m\n```\n"
    bp = parse_blueprint(text)
    assert bp.launch_command == "source x\npython train.py \\\n  --lr 1e-6"
    assert bp.notes.startswith("line one") and "a bullet: with colon" in bp.notes
    assert bp.options.gpus == "[0,1]"
    assert bp.options.env == {"NCCL_DEBUG": "WARN", "X": "1"}
    assert bp.options.keep_session_s == 1800


def test_plain_yaml_ajetd_part_and_an_unrelated_heading_ends_a_part() -> None:
    text = _doc(STYLES["plain_heading"]) + "\n## [ajetd]\ngpus: 0\nmax_trials: 2\n\n# Appendix\nx\n"
    bp = parse_blueprint(text)
    assert bp.options.gpus == "0"
    assert bp.options.max_trials == 2


def test_missing_parts_are_all_named() -> None:
    with pytest.raises(BlueprintError) as err:
        parse_blueprint("## [exp_purpose]\nonly a purpose\n")
    missing = " ".join(err.value.problems)
    for part in REQUIRED[1:]:
        assert f"{part}: missing" in missing
    assert "exp_purpose" not in missing


@pytest.mark.parametrize(
    ("ajetd", "needle"),
    [
        ("colour: red", "unknown key 'colour'"),
        ("gpus: lots", "gpus:"),
        ("max_trials: 0", "max_trials"),
        ("hang: {window: soon}", "hang.window"),
        ("hang: {action: explode}", "hang.action"),
        ("autokill: sometimes", "autokill"),
        ("env: {1BAD: x}", "env:"),
        ("env: {AJETD_RUN_ID: x}", "set by ajetd"),
        ("stages: [{name: a}, {name: b}]", "stages[2] (b): needs a command"),
        ("stages: [{name: a, command: x}]", "the first stage runs exp_launch_command"),
        ("stages: [{name: a, colour: red}]", "stages[1]: unknown key 'colour'"),
        (
            "stages: [{name: a}, {name: b, command: y}, {name: a, command: x}]",
            "two stages have the same name 'a' (stages[1], stages[3])",
        ),
        ("ssh: {host: -oProxyCommand=x}", "ssh.host"),
        ("ssh: {host: h, port: 0}", "ssh.port"),
        ("ssh: {host: h, options: {Bad Key: 1}}", "ssh.options"),
        ("ssh: {host: h, colour: red}", "ssh: unknown key 'colour'"),
        ("pull: [x]", "pull: only for runs on a remote host"),
        ("ssh: h\npull: 3", "pull: expected a list"),
        ("swarm: {port: 99999}", "swarm.port"),
        ("swarm: {port: 10086, health_timeout: soon}", "swarm.health_timeout"),
        ("swarm: {server_command: [ajet-swarm]}", "swarm.server_command"),
        ("swarm: {colour: red}", "swarm: unknown key 'colour'"),
        ("swarm: maybe", "swarm: expected"),
        ("[1, 2", "not valid YAML"),
        ("- a\n- b", "mapping"),
    ],
)
def test_ajetd_part_errors_name_the_key(ajetd: str, needle: str) -> None:
    text = _doc(STYLES["plain_heading"]) + f"\n## [ajetd]\n```yaml\n{ajetd}\n```\n"
    with pytest.raises(BlueprintError) as err:
        parse_blueprint(text)
    assert any(needle in p and p.startswith("[ajetd]") for p in err.value.problems), err.value


def test_swarm_options() -> None:
    from ajetd.core.hostspecs import SwarmSpec

    base = _doc(STYLES["plain_heading"]) + "\n## [ajetd]\n"
    assert parse_blueprint(base + "swarm: true\n").options.swarm == SwarmSpec()
    spec = parse_blueprint(base + "swarm: 10090\n").options.swarm
    assert spec is not None and spec.command == "ajet-swarm start --swarm-port=10090"
    given = "swarm: {port: 9000, server_command: 'ajet-swarm start --swarm-port=9000 --x',"
    spec = parse_blueprint(base + given + " health_timeout: 5m, keep: 0}\n").options.swarm
    assert spec == SwarmSpec(9000, "ajet-swarm start --swarm-port=9000 --x", 300.0, 0.0)
    assert parse_blueprint(base + "swarm: false\n").options.swarm is None


def test_ssh_options() -> None:
    from ajetd.core.hostspecs import SshSpec

    base = _doc(STYLES["plain_heading"]) + "\n## [ajetd]\n"
    opts = parse_blueprint(base + "ssh: gpu-node-3\npull: saved_experiments/\n").options
    assert opts.ssh == SshSpec("gpu-node-3") and opts.pull == ("saved_experiments/",)
    text = "ssh: {host: 10.0.0.3, user: me, port: 2222, identity_file: ~/.ssh/id, "
    text += "options: {StrictHostKeyChecking: accept-new}}\n"
    spec = parse_blueprint(base + text).options.ssh
    assert spec == SshSpec(
        "10.0.0.3", "me", 2222, "~/.ssh/id", (("StrictHostKeyChecking", "accept-new"),)
    )
    assert spec.target == "me@10.0.0.3"


def test_hook_options() -> None:
    base = _doc(STYLES["plain_heading"]) + "\n## [ajetd]\n"
    opts = parse_blueprint(base + "on_finish: notify-send done\non_attention: echo hi\n").options
    assert (opts.on_finish, opts.on_attention) == ("notify-send done", "echo hi")
    with pytest.raises(BlueprintError) as err:
        parse_blueprint(base + "on_finish: [1, 2]\n")
    assert any("on_finish: expected a shell command" in p for p in err.value.problems)


def test_allow_fixes_bounds() -> None:
    base = _doc(STYLES["plain_heading"]) + "\n## [ajetd]\n"
    allow = parse_blueprint(base + "allow_fixes: {lr: {min: 1e-7}, max_response_length: {}}\n")
    assert allow.options.allow_fixes == {"lr": (1e-7, None), "max_response_length": (None, None)}
    for bad in (
        "allow_fixes: {batch: {min: 1}}",
        "allow_fixes: {lr: {min: small}}",
        "allow_fixes: {lr: {low: 1}}",
        "allow_fixes: [lr]",
    ):
        with pytest.raises(BlueprintError) as err:
            parse_blueprint(base + bad + "\n")
        assert any(p.startswith("[ajetd]: allow_fixes") for p in err.value.problems), bad


def test_plateau_options() -> None:
    base = _doc(STYLES["plain_heading"]) + "\n## [ajetd]\n"
    rule = parse_blueprint(
        base + "plateau: {metric: task_pass_rate@1, patience: 2}\n"
    ).options.plateau
    assert rule is not None and rule.metric == "task_pass_rate@1" and rule.patience == 2
    assert rule.after == 0.5 and rule.maximise
    assert parse_blueprint(base + "plateau: true\n").options.plateau is not None
    for bad in (
        "plateau: {patience: 0}",
        "plateau: {after: 2}",
        "plateau: {mode: up}",
        "plateau: {speed: 1}",
    ):
        with pytest.raises(BlueprintError) as err:
            parse_blueprint(base + bad + "\n")
        assert any(p.startswith("[ajetd]: plateau") for p in err.value.problems), bad


def test_unparseable_max_time() -> None:
    text = _doc(STYLES["plain_heading"]).replace("\n2h\n", "\n${MaxTime}\n")
    with pytest.raises(BlueprintError) as err:
        parse_blueprint(text)
    assert any(p.startswith("exp_max_time: no duration") for p in err.value.problems)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_gives_blueprint_or_blueprint_error(text: str) -> None:
    with contextlib.suppress(BlueprintError):
        parse_blueprint(text)


LABEL_LINES = st.sampled_from(
    [f"## [{k}]" for k in VALUES]
    + [f"- [{k}] {CHINESE[k]}：" for k in VALUES]
    + ["```", "~~~", "## [ajetd]", "gpus: [0", "**exp_max_time**: 1h", "`", "- ", "# x"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(LABEL_LINES, st.text(max_size=30)), max_size=30))
def test_structured_noise_gives_blueprint_or_blueprint_error(lines: list[str]) -> None:
    with contextlib.suppress(BlueprintError):
        parse_blueprint("\n".join(lines))


def test_html_comments_are_not_values() -> None:
    text = _doc(STYLES["plain_heading"]).replace(
        "## exp_max_time\n\n2h", "## exp_max_time\n<!-- e.g. 90s or 30m,\n also 3 -->\n2h"
    )
    assert parse_blueprint(text).max_time_s == 7200


_KEY_FORMS = ("{k}", "[{k}]", "`{k}`", "【{k}】", "({k})", "（{k}）")
_LINE_FORMS = (
    "## {label} {value}",
    "- {label}: {value}",
    "**{label}**: {value}",
    "{label}：{value}",
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(sorted(CHINESE)),
    st.sampled_from(_KEY_FORMS),
    st.booleans(),
    st.sampled_from(_LINE_FORMS),
    # (no `_`: a value's `__` is Markdown's emphasis, taken off as everywhere else)
    st.text(st.sampled_from("ab /.:-=数据实验0189"), max_size=30),
)
def test_a_key_before_or_after_the_chinese_label_is_a_label_never_the_value(
    part: str, key_form: str, key_first: bool, line_form: str, rest: str
) -> None:
    """Wherever a label line carries its part's key (before or after the Chinese label, in
    brackets, a code span or bare), the line is that part's label and the value is what
    follows, without the key (walk97 F11)."""
    key = key_form.format(k=part)
    label = f"{key} {CHINESE[part]}" if key_first else f"{CHINESE[part]} {key}"
    if key_first and (key_form.startswith(("(", "（")) or line_form.startswith("{label}：")):
        label = f"{CHINESE[part]} {key}"  # `(k)` first is prose; `k 标签：v` a plain line
    value = ("v" + rest).strip()
    # a heading's words up to a colon are its label (`## exp_codebase_dir v: 0` reads 0, as
    # before this change): a value holding one is another heading's shape
    assume(not (line_form.startswith("##") and ":" in value))
    found = _match_label(line_form.format(label=label, value=value))
    assert found is not None and found.part == part
    assert found.inline == value
