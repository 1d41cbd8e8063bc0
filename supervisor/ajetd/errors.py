"""ajetd's exceptions: one root, a few kinds with structured fields.

Callers catch `AjetdError` at the loop boundary: a failing run fails, the daemon goes on.
"""

from __future__ import annotations


class AjetdError(Exception):
    """Root of every error ajetd raises on purpose."""


class BlueprintError(AjetdError):
    """A blueprint that cannot be accepted; `problems` holds one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


class DurationError(AjetdError):
    """A text that holds no duration ajetd can read."""


class TmuxError(AjetdError):
    """A tmux call failed or timed out; `gone` is True when the server or session is absent."""

    def __init__(self, message: str, *, gone: bool = False) -> None:
        self.gone = gone
        super().__init__(message)


class StoreError(AjetdError):
    """The daemon's home cannot be used (permissions, lock held, corrupt state)."""


class UnknownRunError(AjetdError):
    """No run has that id."""
