"""A launch command recorded as one line (the ledger's `command`) or as Markdown (results.md's
`command run`, trials.md's `command`) is the command exactly: real bash reads the line back to
the same text and runs it to the same effect, a CommonMark parser reads the Markdown back to
the same text (walk92 F5: the lines were joined with spaces, another command)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from ajetd.core import campaignrules as cr
from ajetd.core.markdown import as_code_span
from ajetd.core.shellline import RUN_AS, ansi_c, markdown_item, one_line, pasteable
from conftest import Env, campaign_folder, campaign_ledger

SEED_002 = (
    "LOG_DIR=reports/auto_research/w92/nemorel\n"
    'mkdir -p "$LOG_DIR"\n'
    'printf "trained %s\\n" "$LOG_DIR" > "$LOG_DIR/run.log" 2>&1 grpo.max_num_steps=8'
)
# text bash can hold (no NUL) and Python can write (no lone surrogate)
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))


def _bash(script: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=20, check=False
    )


def _decoded(word: str) -> str:
    """What bash makes of one word of shell text (its quoting undone), byte for byte (no
    newline translation: a carriage return stays one)."""
    done = subprocess.run(
        ["bash", "-c", f"printf %s {word}"], capture_output=True, timeout=20, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


def test_seed_002_s_three_lines_recorded_run_as_the_trial_ran_them(tmp_path: Path) -> None:
    """The walk's command: pasted, the recorded line makes LOG_DIR and writes its log there,
    as the trial did; the old space-joined line did not."""
    line = pasteable(SEED_002)
    assert one_line(line) and line.startswith(RUN_AS), line
    assert "\\n" in line and "\n" not in line
    ran, pasted = tmp_path / "ran", tmp_path / "pasted"
    ran.mkdir()
    pasted.mkdir()
    assert (
        subprocess.run(["bash", "-o", "pipefail", "-c", SEED_002], cwd=ran, check=False).returncode
        == 0
    )
    assert _bash(line, pasted).returncode == 0
    log = Path("reports/auto_research/w92/nemorel/run.log")
    assert (pasted / log).read_text() == (ran / log).read_text() != ""
    joined = " ".join(SEED_002.split("\n"))  # what the ledger held
    old = tmp_path / "old"
    old.mkdir()
    _bash(joined, old)
    assert not (old / log).exists()


def test_a_one_line_command_is_kept_as_it_is() -> None:
    command = "python -m fakejet.launcher --conf configs/a.yaml --autokill"
    assert pasteable(command) == command
    assert markdown_item("command", command) == [f"- command: `{command}`"]


@pytest.mark.parametrize("odd", ["\u2028", "\u2029", "\x85", "\x9b31m", "\x1b[31m"])
def test_a_character_a_reader_takes_for_a_line_break_or_a_control_is_quoted(odd: str) -> None:
    """U+2028/2029 and U+0085 (line breaks to `str.splitlines`: one ledger row read as three)
    and C1 controls (a terminal's CSI) are written as their UTF-8 bytes, `\\xHH`, whatever the
    locale; bash reads the word back to the same bytes (review92 #6)."""
    command = f"echo a{odd}b"
    recorded = pasteable(command)
    assert not one_line(command) and len(recorded.splitlines()) == 1
    assert all(c.isprintable() for c in recorded), recorded
    out = subprocess.run(
        ["bash", "-c", f"printf %s {ansi_c(command)}"], capture_output=True, check=True
    )
    assert out.stdout == command.encode()


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(TEXT)
def test_the_recorded_line_is_one_tsv_cell_that_bash_reads_back_exactly(command: str) -> None:
    """Any text: the recorded form holds no tab or line break (one cell, the ledger's row
    keeps it whole) and bash reads its quoted word back to the command, every character."""
    line = pasteable(command)
    assert one_line(line)
    row = cr.ledger_row({"command": line})
    assert row.rstrip("\n").split("\t")[cr.LEDGER_COLUMNS.index("command")] == line
    if line == command:
        assert one_line(command)
    else:
        assert line.startswith(RUN_AS)
        assert _decoded(line.removeprefix(RUN_AS)) == command
    assert _decoded(ansi_c(command)) == command


_WORD = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12
)
_LINE = st.one_of(
    st.builds(lambda w: f"printf '<%s>' {shlex.quote(w)}", _WORD),
    st.builds(lambda w: f"V={shlex.quote(w)}", _WORD),
    st.just('printf "[%s]" "$V"'),
    st.builds(lambda w: f"# {w}".replace("\n", " ").replace("\r", " "), _WORD),
    st.builds(lambda w: f"printf '%s' {shlex.quote(w)} &&", _WORD),
    st.builds(lambda w: f"printf '{{%s}}' \\\n  {shlex.quote(w)}", _WORD),
    st.builds(
        lambda w: f"cat <<'EOF'\n{w}\nEOF".replace("\r", ""), _WORD.filter(lambda w: "EOF" not in w)
    ),
    st.just("if true; then\n  printf then\nfi"),
    st.just("printf piped |\n  tr a-z A-Z"),
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=6))
def test_a_script_of_several_lines_pasted_does_what_the_trial_did(lines: list[str]) -> None:
    """Scripts of the shapes a `; ` join breaks (comments, `&&`/`|` line ends, `\\` lines,
    here documents, `then`): bash parses the recorded line (`bash -n`), and running it gives
    what the trial's own `bash -o pipefail -c` gave."""
    script = "\n".join(lines) + "\nprintf end"
    line = pasteable(script)
    assert one_line(line)
    assert _bash(f"bash -n -c {shlex.quote(script)}").returncode == _bash_n(line)
    trial = subprocess.run(
        ["bash", "-o", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    pasted = _bash(line)
    assert (pasted.returncode, pasted.stdout) == (trial.returncode, trial.stdout)


def _bash_n(line: str) -> int:
    """bash's syntax check of the recorded line, and of the script it quotes."""
    outer = _bash(f"bash -n -c {shlex.quote(line)}").returncode
    if outer:
        return outer
    script = _decoded(line.removeprefix(RUN_AS)) if line.startswith(RUN_AS) else line
    return _bash(f"bash -n -c {shlex.quote(script)}").returncode


def _rendered(lines: list[str]) -> str:
    """The command a CommonMark viewer shows for a report's item: its code span or block."""
    tokens = MarkdownIt("commonmark").parse("\n".join(lines) + "\n")
    for token in tokens:
        if token.type == "fence":
            return token.content.removesuffix("\n")
        for child in token.children or []:
            if child.type == "code_inline":
                return child.content
    raise AssertionError(lines)


@settings(max_examples=150, deadline=None)
@given(TEXT.filter(lambda t: t.strip(" ") != "" and t[:1] != " " and t[-1:] != " "))
def test_the_markdown_item_renders_the_command_exactly(command: str) -> None:
    """Several lines in a fenced block, one in a code span, whatever backticks they hold;
    any other control character as the pasteable line: a viewer shows the command (or the
    line that runs it) exactly, never lines joined into one."""
    shown = _rendered(markdown_item("command run", command))
    if "\r" in command or any((c < " " and c not in "\t\n") or c == "\x7f" for c in command):
        assert shown == pasteable(command)
    else:
        assert shown == command


@given(TEXT.filter(lambda t: "\n" not in t and "\r" not in t))
def test_a_code_span_holds_any_backticks(text: str) -> None:
    tokens = MarkdownIt("commonmark").parseInline(f"x {as_code_span(text)} y")
    spans = [c.content for c in tokens[0].children or [] if c.type == "code_inline"]
    assert spans == [text] if text.strip(" ") else True


def test_a_campaign_s_ledger_and_reports_record_a_multi_line_command_as_it_ran(
    daemon_env: Env,
) -> None:
    """A real campaign whose base's launch command is seed 002's three lines: the ledger's
    `command` (one cell) is the trial's command exactly (bash reads it back), and pasted in
    the codebase it does what the trial did; the run's results.md and trials.md show the
    lines as a fenced block a viewer shows line by line."""
    env = daemon_env
    command = (
        "LOG_DIR=out/auto_research/multi\n"
        'mkdir -p "$LOG_DIR"\n'
        'printf "trained %s\\n" "$LOG_DIR" > "$LOG_DIR/run.log" 2>&1'
    )
    folder = campaign_folder(env, "multi", env.tmp / "campaigns" / "multi")
    base = (folder / "base.md").read_text()
    said = "`true`"
    assert base.count(said) == 1
    base = base.replace(said, "\n\n```bash\n" + command + "\n```\n")
    (folder / "base.md").write_text(base)
    done = env.cli("campaign", str(folder))
    assert done.returncode == 0, done.stderr
    wait = env.cli("campaign", "wait", done.stdout.strip(), "--timeout", "60")
    assert wait.returncode == 3, (wait.stdout, wait.stderr)  # completed, no best: no record
    [row] = campaign_ledger(env, "multi")
    run_id = row["job_id"]
    ran = env.record(run_id)["trials"][0]["command"]
    assert ran.startswith(command), ran  # as written, then whatever ajetd appended
    assert row["command"] == pasteable(ran) and row["command"].startswith(RUN_AS)
    assert _decoded(row["command"].removeprefix(RUN_AS)) == ran
    log = env.codebase / "out" / "auto_research" / "multi" / "run.log"
    trial_log = log.read_text()
    shutil.rmtree(env.codebase / "out")
    assert _bash(row["command"], env.codebase).returncode == 0
    assert log.read_text() == trial_log == "trained out/auto_research/multi\n"
    result = Path(env.record(run_id)["result_dir"])
    for name, label in (("results.md", "command run"), ("trials.md", "command")):
        text = (result / name).read_text()
        at = text.index(f"- {label}:\n")
        assert _rendered(text[at:].split("\n")[:6]) == ran, (name, text[at:])
