"""The seed's deep-check schedule: 30 s, 1, 2, 4, 8, 16 min, capped, reset on news.

A tiny value object (as huey's poller): the daemon asks `due(now)` and calls `advance` or
`reset`; nothing here reads a clock.

Checks are batched: when one run's check is due, a pass also serves every other run whose check
is due within a tenth of its own interval (`due(now, batch=True)`), so that 50 runs started a
few hundred milliseconds apart share a few passes instead of taking one each. A run alone is
checked at its exact moment; one that shares a pass is checked at most 3 s early at 30 s, 96 s
at 16 min, and its next interval counts from that pass (the runs stay together after).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

SEED_SCHEDULE = (30.0, 60.0, 120.0, 240.0, 480.0, 960.0)
BATCH_FRACTION = 0.1  # how early, as a part of its interval, a check may share another's pass


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

    def due(self, now: float, batch: bool = False) -> bool:
        """Whether the check is due at `now`; with `batch` (another run's check is due this
        pass), also when it is due within `BATCH_FRACTION` of its interval."""
        early = self.interval() * BATCH_FRACTION if batch else 0.0
        return now >= self.next_at - early

    def advance(self, now: float) -> Backoff:
        """After a check that found nothing new: wait the next, longer interval."""
        step = min(self.step + 1, len(self.schedule) - 1)
        nxt = replace(self, step=step)
        return replace(nxt, next_at=now + nxt.interval())

    def reset(self, now: float) -> Backoff:
        """Something new happened: look again soon, as the seed's procedure does."""
        return replace(self, step=0, next_at=now + self.schedule[0] * self.scale)
