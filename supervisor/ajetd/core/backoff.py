"""The seed's deep-check schedule: 30 s, 1, 2, 4, 8, 16 min, capped, reset on news.

A tiny value object (as huey's poller): the daemon asks `due(now)` and calls `advance` or
`reset`; nothing here reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

SEED_SCHEDULE = (30.0, 60.0, 120.0, 240.0, 480.0, 960.0)


@dataclass(frozen=True)
class Backoff:
    """Next deep check at `next_at`; `step` indexes the (scaled) schedule, capped at its end."""

    next_at: float
    step: int = 0
    scale: float = 1.0
    schedule: tuple[float, ...] = SEED_SCHEDULE

    @classmethod
    def start(cls, now: float, scale: float = 1.0) -> Backoff:
        return cls(next_at=now + SEED_SCHEDULE[0] * scale, scale=scale)

    def interval(self) -> float:
        return self.schedule[min(self.step, len(self.schedule) - 1)] * self.scale

    def due(self, now: float) -> bool:
        return now >= self.next_at

    def advance(self, now: float) -> Backoff:
        """After a check that found nothing new: wait the next, longer interval."""
        step = min(self.step + 1, len(self.schedule) - 1)
        nxt = replace(self, step=step)
        return replace(nxt, next_at=now + nxt.interval())

    def reset(self, now: float) -> Backoff:
        """Something new happened: look again soon, as the seed's procedure does."""
        return replace(self, step=0, next_at=now + self.schedule[0] * self.scale)
