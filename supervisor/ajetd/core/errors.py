"""ajetd's exceptions: one root, a few kinds with structured fields.

Callers catch `AjetdError` at the loop boundary: a failing run fails, the daemon goes on.
"""

from __future__ import annotations


class AjetdError(Exception):
    """Root of every error ajetd raises on purpose."""


MAX_PROBLEM_CHARS = 300
MAX_PROBLEMS = 20


class BlueprintError(AjetdError):
    """A blueprint that cannot be accepted; `problems` holds one line per problem.

    Each line is capped at 300 characters and the list at 20 lines (then a count of the rest),
    so a rejection reason stays readable whatever the input: values are elided where they are
    shown (`ajetd.core.shown.show`), and this is the backstop."""

    def __init__(self, problems: list[str]) -> None:
        self.all_problems = [_cap(p) for p in problems]  # every one, for an enclosing error
        self.problems = self.all_problems[:MAX_PROBLEMS]
        if len(problems) > MAX_PROBLEMS:
            self.problems.append(f"... and {len(problems) - MAX_PROBLEMS} more problem(s)")
        super().__init__("; ".join(self.problems))


def one_line(text: str, limit: int = MAX_PROBLEM_CHARS) -> str:
    """`text` on one line (its newlines spaces) of at most `limit` characters: cut at a word
    boundary, `…`, what it opened closed (`linecut.cut`)."""
    from ajetd.core.linecut import cut  # a leaf module; errors is imported by everything

    return cut(" ".join(text.split("\n")), limit)


_cap = one_line


class DurationError(AjetdError):
    """A text that holds no duration ajetd can read."""


class TmuxError(AjetdError):
    """A tmux call failed or timed out; `gone` is True when the server or session is absent,
    `silent` when the server did not answer in time (no refusal: whatever was asked may have
    been done, or may be done yet; a launch waits and asks again, `Launch._tmux_silent`)."""

    def __init__(self, message: str, *, gone: bool = False, silent: bool = False) -> None:
        self.gone = gone
        self.silent = silent
        super().__init__(message)


class StoreError(AjetdError):
    """The daemon's home cannot be used (permissions, lock held, corrupt state)."""


class FolderGoneError(StoreError):
    """A started run the running daemon supervises has no folder on disk (removed or moved by
    hand) and the daemon has not made it again yet: the run goes on, so a `wait` waits on."""


class UnknownRunError(AjetdError):
    """No run has that id."""
