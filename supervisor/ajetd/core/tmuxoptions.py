"""The tmux options ajetd's sessions and servers need, and what a run lost through one says.

ajetd's sessions are detached by design. A user's tmux.conf can hold options that end
detached sessions or their server (walk98 F7): `set -g destroy-unattached on` destroyed each
run's session as it was made (every run lost, its program never run); `exit-unattached on`
ends the whole server once no client is attached. `adapters.tmux` sets these as it makes a
session; `lost_why` says in a lost run's reason which one did it, where that is known.
"""

from __future__ import annotations

from collections.abc import Sequence

# The session options a run's session needs, set on it as it is made: ajetd's sessions are
# detached by design, and a user's `set -g destroy-unattached on` (a session goes with its
# terminal) destroyed each at once: every run lost, its program never run (walk98 F7).
SESSION_OPTIONS = (("destroy-unattached", "off"),)
# The server options a server ajetd starts gets: `exit-unattached on` in a tmux.conf ended the
# server, every run on it, the moment ajetd's detached session was made. A server ajetd did
# not start (the user's own, running) keeps its options; a run launched there is warned.
SERVER_OPTIONS = (("exit-unattached", "off"),)
EXITS_UNATTACHED = (
    "the tmux server's exit-unattached is on (a tmux.conf's `set -g exit-unattached on`?): "
    "when its last client detaches the server ends, and this run with it; ajetd leaves a "
    "server it did not start as it is: `tmux set -s exit-unattached off` there, or an "
    "AJETD_TMUX_SOCKET of ajetd's own"
)
SERVER_ENDED = "is gone too: it ended"  # how `Tmux.gone_why` says its server is gone


def lost_why(said: str, gone_why: str, warnings: Sequence[str]) -> str:
    """A vanished session's reason `said`, with what its server told of why (`gone_why`):
    a server that ended while the run's warnings say its exit-unattached was on is said to
    have ended so."""
    if gone_why.endswith(SERVER_ENDED) and EXITS_UNATTACHED in warnings:
        gone_why += (
            " (its exit-unattached was on when the run was launched: it ends once its last "
            "client detaches)"
        )
    return f"{said}: {gone_why}" if gone_why else said
