"""What a run's program writes into its own result dir at the names ajetd writes there, and
the output ajetd quotes in its reports: nothing the program wrote is lost or mistaken for
ajetd's, and no output breaks the reports' Markdown. Real daemon, real tmux, real files."""

from __future__ import annotations

from markdown_it import MarkdownIt

from conftest import Env

FENCE_BREAKER = "printf 'before\\n```\\n# not a heading\\n````\\nafter\\n'"


def _fenced_text(markdown: str) -> list[str]:
    """Every line inside a fenced block, as a CommonMark parser reads the document."""
    tokens = MarkdownIt("commonmark").parse(markdown)
    return [line for t in tokens if t.type == "fence" for line in t.content.splitlines()]


def test_output_with_backtick_fences_stays_quoted(daemon_env: Env) -> None:
    """The blind walk: a plain ``` line in the output closed results.md's ```text block and
    the rest rendered as Markdown (a heading here). Now the fence is longer than any run of
    backticks in what it quotes, in results.md and trials.md alike."""
    env = daemon_env
    blueprint = env.blueprint("fence", command=f"{FENCE_BREAKER}; exit 1")
    run_id = env.submit(blueprint)
    assert env.wait_done(run_id)["status"] == "failed"
    result = env.tmp / "results" / "fence"
    for name in ("results.md", "trials.md"):
        quoted = _fenced_text((result / name).read_text())
        for line in ("before", "```", "# not a heading", "````", "after"):
            assert line in quoted, (name, line, quoted)
