"""Blueprints as people write them that were misread (walk 86), checked through `ajetd lint` as
a user runs it: every shape is read as meant, or refused with a problem that says what to
write; never a part silently dropped or half read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ajetd.core.blueprintscan import _match_label
from ajetd.core.markdown import fenced_openings
from conftest import PYTHON, Env


def _parts(env: Env, **given: str) -> dict[str, str]:
    """The seven parts as `## [exp_x]` headings, with what the test gives in place of any."""
    config = env.config("shape")
    parts = {
        "exp_purpose": "shapes",
        "exp_codebase_dir": str(env.codebase),
        "exp_venv_exe": PYTHON,
        "exp_yaml_path": config,
        "exp_launch_command": f"python -m fakejet.launcher --conf {config}",
        "exp_result_dir": str(env.tmp / "results" / "shape"),
        "exp_max_time": "2m",
        "ajetd": "gpus: 0",
    }
    parts.update(given)
    return parts


def lint(env: Env, text: str | None = None, **given: str) -> tuple[int, dict[str, Any], str]:
    """`ajetd lint --json` and plain `ajetd lint` of a blueprint: its exit code, the JSON, and
    the plain text (problems and warnings as a user reads them)."""
    if text is None:
        text = "".join(f"## [{k}]\n{v}\n\n" for k, v in _parts(env, **given).items())
    path = env.tmp / "shape.md"
    path.write_bytes(text.encode())
    out = env.cli("lint", "--json", str(path))
    plain = env.cli("lint", str(path))
    return out.returncode, json.loads(out.stdout), plain.stdout + plain.stderr


def test_two_code_blocks_under_the_command_or_ajetd_are_refused_naming_each(env: Env) -> None:
    two = "First:\n```bash\nsource /x/bin/activate\n```\nThen:\n```bash\npython train.py\n```"
    code, data, text = lint(env, exp_launch_command=two)
    assert code == 2 and "exp_launch_command: 2 code blocks" in text
    assert "'source /x/bin/activate'" in text and "'python train.py'" in text
    yaml_two = "```yaml\ngpus: 0\n```\nAnd stop early:\n```yaml\nplateau: {patience: 3}\n```"
    code, data, text = lint(env, ajetd=yaml_two)
    assert code == 2 and "[ajetd]: 2 code blocks" in text and "'plateau: {patience: 3}'" in text
    one = (
        "```bash\nsource /x/bin/activate\npython -m fakejet.launcher --conf configs/shape.yaml\n```"
    )
    code, data, _ = lint(env, exp_launch_command=one)
    assert data["problems"] == [] or all("code blocks" not in p for p in data["problems"])


def test_fenced_openings_counts_blocks_as_a_viewer_shows_them() -> None:
    assert fenced_openings("```\na\n```\ntext\n~~~sh\nb\nc\n~~~") == ["a", "b"]
    assert fenced_openings("````\n```\ninner\n```\n````\n```\nz\n```") == ["```", "z"]
    assert fenced_openings("```\nopen to the end") == ["open to the end"]
    assert fenced_openings("no fence") == []
    assert len(fenced_openings("```\nx\n```\n" * 100_000, most=4)) == 4  # bounded


def test_a_no_break_or_ideographic_space_in_the_command_is_named_with_its_column(
    env: Env,
) -> None:
    code, _, text = lint(env, exp_launch_command="python\u00a0-m fakejet.launcher --steps 2")
    assert code == 2 and "U+00A0 (no-break space) at line 1, column 7, after 'python'" in text
    code, _, text = lint(env, exp_launch_command="python -m fakejet.launcher\u3000--steps 2")
    assert code == 2 and "U+3000 (ideographic space) at line 1, column 27" in text
    code, data, _ = lint(
        env, exp_launch_command="python -m fakejet.launcher --tag '数学\u3000实验'"
    )
    assert not any("U+3000" in p for p in data["problems"])  # inside quotes: an argument's own


def test_a_time_range_and_an_empty_time_block_are_refused(env: Env) -> None:
    code, _, text = lint(env, exp_max_time="2-3 hours")
    assert code == 2 and "exp_max_time: '2-3 hours' is a range: write one duration" in text
    code, _, text = lint(env, exp_max_time="```\n\n```")
    assert code == 2 and "exp_max_time: empty" in text


def test_a_full_width_colon_in_ajetd_is_named_at_its_own_line(env: Env) -> None:
    code, _, text = lint(env, ajetd="gpus：0\nkeep_session: 0")
    assert (
        code == 2 and "line 1 of the [ajetd] part uses a full-width colon '：' after gpus" in text
    )
    code, _, text = lint(env, ajetd="gpus: 0\nmax_trials：3")
    assert code == 2 and "line 2 of the [ajetd] part uses a full-width colon" in text


def test_a_label_of_the_writers_own_before_a_value_is_dropped(env: Env) -> None:
    """`- [exp_codebase_dir] 说明：/path` is the path (the seed's own labels always were); in
    the command only a non-ASCII label is one (`echo a: b` is a command)."""
    config = env.config("label")
    text = (
        "- [exp_purpose] 说明：labels\n"
        f"- [exp_codebase_dir] 说明：{env.codebase}\n"
        f"- [exp_venv_exe] 路径: {PYTHON}\n"
        f"- [exp_yaml_path] 说明：{config}\n"
        f"- [exp_launch_command] 命令：python -m fakejet.launcher --conf {config}\n"
        f"- [exp_result_dir] result folder: {env.tmp / 'results' / 'label'}\n"
        "- [exp_max_time] 时长：30m\n"
    )
    code, data, _ = lint(env, text)
    got = data["blueprint"]
    assert code == 0, data["problems"]
    assert got["codebase_dir"] == str(env.codebase) and got["venv_exe"] == PYTHON
    assert got["launch_command"] == f"python -m fakejet.launcher --conf {config}"
    assert got["result_dir"] == str(env.tmp / "results" / "label") and got["max_time_s"] == 1800
    assert got["purpose"] == "说明：labels"  # prose keeps its words


def test_free_labels_leave_times_and_commands_alone() -> None:
    for line, value in (
        ("- [exp_max_time] 2:00", "2:00"),
        ("- [exp_launch_command] echo a: b", "echo a: b"),
        ("- [exp_launch_command] python t.py --url http://x", "python t.py --url http://x"),
        ("- [exp_codebase_dir] 路径: /x", "/x"),
    ):
        label = _match_label(line)
        assert label is not None and label.inline == value, line


def test_a_blueprint_written_as_a_table_is_read(env: Env) -> None:
    """walk 86: a two-column key/value table gave seven 'missing' problems and no hint."""
    rows = "".join(f"| {k} | {v} |\n" for k, v in _parts(env).items() if k != "ajetd").replace(
        "| exp_launch_command | ", "| **exp_launch_command** | `"
    )
    rows = rows.replace(
        "configs/shape.yaml |\n| exp_result_dir", "configs/shape.yaml` |\n| exp_result_dir", 1
    )
    text = f"# spec\n\n| key | value |\n|---|---|\n{rows}| 实验目的 | twice |\n"
    code, data, _ = lint(env, text)
    assert code == 2 and data["problems"] == [
        "exp_purpose: given twice (lines 5 and 12); keep one"
    ], data["problems"]
    code, data, _ = lint(env, text.replace("| 实验目的 | twice |\n", ""))
    got = data["blueprint"]
    assert code == 0 and got["codebase_dir"] == str(env.codebase), data["problems"]
    assert got["launch_command"] == "python -m fakejet.launcher --conf configs/shape.yaml"


def test_a_glob_in_a_stages_paths_is_taken_a_bad_bracket_set_refused(env: Env) -> None:
    """walk86 F32: a glob in a stage's paths (`saved/ckpt_*`) is matched (see
    test_daemon_e2e's pipeline test); lint takes it, and refuses a bracket set it would not
    read the way the shell does."""
    stages = (
        "gpus: 0\nstages:\n  - {name: train, outputs: ['saved/ckpt_*']}\n"
        "  - {name: eval, command: 'echo eval', requires: ['saved/ckpt_[0-9]'], outputs: [r.json]}"
    )
    code, _, text = lint(env, ajetd=stages)
    assert code == 0, text
    code, _, text = lint(env, ajetd=stages.replace("ckpt_[0-9]", "ckpt_[a b]"))
    assert code == 2 and "stages[2].requires: 'saved/ckpt_[a b]': a bracket set" in text, text


def test_full_width_brackets_around_a_key_are_read(env: Env) -> None:
    """walk 86: `- 【exp_purpose】：...` (a Chinese IME's brackets) left every part 'missing'."""
    text = "".join(f"- 【{k}】：{v}\n" for k, v in _parts(env).items() if k != "ajetd")
    code, data, _ = lint(env, text)
    assert code == 0 and data["blueprint"]["codebase_dir"] == str(env.codebase), data


def test_a_blueprint_in_a_block_quote_or_with_keys_in_code_spans_is_read(env: Env) -> None:
    """walk 86: `> **exp_purpose**: ...` (a spec copied from an e-mail or an issue) and
    `` - `exp_purpose`: ... `` (as agents write keys) left every part 'missing'."""
    parts = {k: v for k, v in _parts(env).items() if k != "ajetd"}
    command = parts.pop("exp_launch_command")
    quoted = "".join(f"> **{k}**: {v}\n" for k, v in parts.items())
    # a fenced command inside the quote, its lines quoted too
    quoted += f">\n> ## [exp_launch_command]\n> ```bash\n> {command} \\\n>   --steps 2\n> ```\n"
    code, data, _ = lint(env, f"# copied\n\n{quoted}")
    got = data.get("blueprint") or {}
    assert code == 0 and got["codebase_dir"] == str(env.codebase), data["problems"]
    assert got["launch_command"] == f"{command} \\\n  --steps 2"
    spans = "".join(f"- `{k}`: {v}\n" for k, v in _parts(env).items() if k != "ajetd")
    code, data, _ = lint(env, spans)
    assert code == 0 and data["blueprint"]["launch_command"] == command, data["problems"]
    nested = "".join(f"> > - [{k}]: {v}\n" for k, v in _parts(env).items() if k != "ajetd")
    code, data, _ = lint(env, nested)
    assert code == 0 and data["blueprint"]["purpose"] == "shapes", data["problems"]


def test_a_key_spelt_with_dashes_spaces_or_in_camel_case_is_read_where_it_is_a_label(
    env: Env,
) -> None:
    """`- **Exp Purpose**:`, `## exp-codebase-dir`, `- expMaxTime:` (how people and agents
    spell keys) left the part 'missing'; in brackets they were read already. On a plain
    line a key must be spelt as it is (`exp purpose is ...` there is prose)."""
    spellings = {
        "exp_purpose": "- **Exp Purpose**: {v}",
        "exp_codebase_dir": "## exp-codebase-dir\n{v}",
        "exp_venv_exe": "- `exp-venv-exe`: {v}",
        "exp_yaml_path": "* **EXP YAML PATH**: {v}",
        "exp_launch_command": "## Exp Launch Command\n{v}",
        "exp_result_dir": "- expResultDir: {v}",
        "exp_max_time": "- Exp-Max-Time: {v}",
    }
    parts = _parts(env)
    text = "\n".join(f.format(v=parts[k]) for k, f in spellings.items()) + "\n"
    code, data, _ = lint(env, text)
    got = data.get("blueprint") or {}
    assert code == 0 and got["purpose"] == "shapes", data["problems"]
    assert got["codebase_dir"] == str(env.codebase) and got["max_time_s"] == 120
    assert got["launch_command"] == parts["exp_launch_command"]
    plain = text.replace("- **Exp Purpose**: shapes", "Exp purpose: shapes")
    code, data, _ = lint(env, plain)
    assert code == 2 and data["problems"][0].startswith("exp_purpose: missing"), data


def test_setext_headings_definition_lists_and_a_json_object_are_read(env: Env) -> None:
    """`exp_launch_command` over a line of dashes ran `-----` as the command (setext
    headings); `**exp_x**` over `: value` (a definition list) kept the `:`; a blueprint
    written as a JSON object had every part 'missing'."""
    parts = {k: v for k, v in _parts(env).items() if k != "ajetd"}
    setext = "".join(
        f"{k}\n{'=-'[n % 2] * len(k)}\n{v}\n\n" for n, (k, v) in enumerate(parts.items())
    )
    code, data, _ = lint(env, setext)
    got = data.get("blueprint") or {}
    assert code == 0 and got["launch_command"] == parts["exp_launch_command"], data["problems"]
    listed = "".join(f"**{k}**\n: {v}\n\n" for k, v in parts.items())
    code, data, _ = lint(env, listed)
    got = data.get("blueprint") or {}
    assert code == 0 and got["codebase_dir"] == str(env.codebase), data["problems"]
    as_json = json.dumps({**parts, "exp_launch_command": 'echo "a, b"'}, indent=2)
    code, data, _ = lint(env, as_json)
    got = data.get("blueprint") or {}
    assert code == 0 and got["launch_command"] == 'echo "a, b"', data["problems"]
    assert got["max_time_s"] == 120


def test_a_quote_mark_in_an_unquoted_blueprint_is_the_texts_own(env: Env) -> None:
    """Where no label is quoted, a line that starts with `>` stays as written: in a fenced
    command (a here-document's `>` line), and in a command's continued line (a redirection)."""
    fenced = "```bash\ncat <<EOF\n> not a quote\nEOF\n```"
    code, data, _ = lint(env, exp_launch_command=fenced)
    assert code == 0 and data["blueprint"]["launch_command"] == "cat <<EOF\n> not a quote\nEOF"
    code, data, _ = lint(env, exp_launch_command="echo hi \\\n  > out.log 2>&1")
    assert code == 0 and data["blueprint"]["launch_command"] == "echo hi \\\n  > out.log 2>&1", data


def test_a_command_on_lines_of_its_own_continues_where_a_line_ends_in_a_backslash(
    env: Env,
) -> None:
    """A command written without a fence over several lines joined by `\\` was cut to its
    first line, which ended in the backslash (lint said ok; the arguments were lost)."""
    config = env.config("shape")
    command = f"python -m fakejet.launcher \\\n  --conf {config} \\\n  --steps 2"
    code, data, text = lint(env, exp_launch_command=command)
    assert code == 0 and data["blueprint"]["launch_command"] == command, text
    bullet = "".join(
        f"- [{k}]: {command if k == 'exp_launch_command' else v}\n"
        for k, v in _parts(env).items()
        if k != "ajetd"
    )
    code, data, text = lint(env, bullet)
    assert code == 0 and data["blueprint"]["launch_command"] == command, text


def test_a_second_command_on_the_next_line_is_refused_and_a_note_there_is_said(
    env: Env,
) -> None:
    """`source .venv/bin/activate` on one line, the training on the next, no fence: only the
    first line ran and the run 'succeeded' at once. A line that looks like more command is
    refused, naming it; other text there is a note, said in a warning, never run."""
    two = "source .venv/bin/activate\npython -m fakejet.launcher --conf configs/shape.yaml"
    code, _, text = lint(env, exp_launch_command=two)
    assert code == 2, text
    assert "the line `python -m fakejet.launcher --conf configs/shape.yaml` follows" in text
    assert "fenced block" in text
    noted = "python -m fakejet.launcher --conf configs/shape.yaml\n\nRun it from the root."
    code, data, text = lint(env, exp_launch_command=noted)
    assert code == 0, text
    said = " ".join(data["blueprint"]["warnings"])
    assert "`Run it from the root.` after the command is read as a note, not run" in said
    assert data["blueprint"]["launch_command"].endswith("shape.yaml")


def test_a_command_that_begins_with_the_templates_for_example_is_refused(env: Env) -> None:
    """walk 86: `例如 python -m ...` (the seed's own wording) ran `例如` and exited 127."""
    for command in ("例如 python -m fakejet.launcher", "例如：python -m fakejet.launcher"):
        code, _, text = lint(env, exp_launch_command=command)
        assert code == 2 and "begins with '例如'" in text, text
    text = "".join(
        f"- [{k}] 执行训练的命令（字符串）：例如 {v}\n"
        if k == "exp_launch_command"
        else f"- [{k}] {v}\n"
        for k, v in _parts(env).items()
        if k != "ajetd"
    )
    code, _, said = lint(env, text)
    assert code == 2 and "begins with '例如'" in said, said


def test_lint_json_shows_the_stages_it_read(env: Env) -> None:
    stages = "gpus: 0\nstages:\n  - {name: train, outputs: [saved/last]}\n  - {name: ev, command: 'echo'}"
    code, data, _ = lint(env, ajetd=stages)
    assert code == 0, data["problems"]
    assert [s["name"] for s in data["blueprint"]["options"]["stages"]] == ["train", "ev"]
    assert data["blueprint"]["options"]["stages"][0]["outputs"] == ["saved/last"]


def test_stage_globs_match_bounded_and_quote_for_a_shell(tmp_path: Path) -> None:
    """`pathglob`: a hidden name matches only a dotted pattern, `**` is `*`, a range works,
    a link a wildcard meets is no folder to go into, and the shell form quotes all but the
    wildcards (a name with a quote or `$` in it is literal there)."""
    from ajetd.core import pathglob
    from ajetd.hosts.fs import LOCAL

    (tmp_path / "saved" / "ckpt_12").mkdir(parents=True)
    (tmp_path / "saved" / ".ckpt_tmp").mkdir()
    (tmp_path / "away" / "ckpt_9").mkdir(parents=True)
    (tmp_path / "saved" / "out").symlink_to(tmp_path / "away")
    found = [
        LOCAL.matches(f"{tmp_path}/{p}")
        for p in (
            "saved/ckpt_*",
            "saved/ckpt_[0-9]2",
            "**/ckpt_12",
            "*/.ckpt_*",
            "saved/out/ckpt_*",
        )
    ]
    assert found == [True, True, True, True, True]  # a link named as written is followed
    assert not LOCAL.matches(f"{tmp_path}/saved/*tmp")  # hidden: not matched by `*`
    assert not LOCAL.matches(f"{tmp_path}/saved/*/ckpt_9")  # a wildcard never enters a link
    assert not LOCAL.matches(f"{tmp_path}/nothing/ckpt_*")
    shell = pathglob.shell_form("/a b/it's $x/ckpt_[0-9]*")
    assert shell == "'/a b/it'\"'\"'s $x/ckpt_'[0-9]*", shell


def test_an_admitted_copy_with_a_second_command_line_is_still_read() -> None:
    """The refusal of a line after the command is a rule this version added: an admitted
    run's stored copy is read again at a restart and for its reports (`admitted=True`), and
    must not become unreadable by it."""
    from ajetd.core.blueprint import parse_blueprint
    from ajetd.core.errors import BlueprintError

    parts = {
        "exp_purpose": "x",
        "exp_codebase_dir": "/tmp",
        "exp_venv_exe": "/usr/bin/python3",
        "exp_yaml_path": "/tmp/x.yaml",
        "exp_result_dir": "/tmp/r",
        "exp_max_time": "1h",
        "exp_launch_command": "source .venv/bin/activate\npython train.py",
    }
    text = "".join(f"## [{k}]\n{v}\n\n" for k, v in parts.items())
    try:
        parse_blueprint(text)
    except BlueprintError as exc:
        assert "follows the command" in " ".join(exc.problems)
    else:
        raise AssertionError("a second command line was not refused")
    assert parse_blueprint(text, admitted=True).launch_command == "source .venv/bin/activate"
