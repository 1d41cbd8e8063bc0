"""UTC timestamps as records and reports write them (ISO 8601, second precision)."""

from __future__ import annotations

from datetime import datetime, timezone


def iso(epoch: float | None) -> str | None:
    """`2026-11-29T14:29:17Z`, or None for None."""
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
