"""The values each science key (`[ajetd] allow_fixes`) may hold; pure.

One place says what a batch size, a token budget, a length, a memory fraction or a learning
rate can be, and both sides of a science fix are held to it: the blueprint's bounds (an
`allow_fixes` min of 0 on a micro batch size let a fix write 0 and the run read as
`succeeded`, walk91 F1) and every value a remedy computes (a micro batch size of 1 halved is
0, a gpu_memory_utilization of 0.05 lowered by 0.05 is 0). A value outside its key's domain
is never written: the fix is refused instead.
"""

from __future__ import annotations

import math

# the keys whose values are not whole numbers; every other science key counts something
# (sequences in a micro batch, tokens, a length), a whole number of at least 1
REAL_KEYS = ("gpu_memory_utilization", "lr")
FRACTION_KEYS = ("gpu_memory_utilization",)  # a share of the GPU's memory: in (0, 1]


def domain(key: str) -> str:
    """The key's valid values in words, as an error names them."""
    if key in FRACTION_KEYS:
        return "a fraction above 0 and at most 1"
    if key in REAL_KEYS:
        return "a number above 0"
    return "a whole number of at least 1"


def valid(key: str, value: float) -> bool:
    """Whether `value` is one `key` may hold (what a fix may write)."""
    if isinstance(value, bool) or not math.isfinite(value):
        return False
    if key in FRACTION_KEYS:
        return 0 < value <= 1
    if key in REAL_KEYS:
        return value > 0
    return value >= 1 and float(value).is_integer()


def bound_problems(key: str, low: float | None, high: float | None) -> list[str]:
    """What is wrong with `allow_fixes.<key>`'s bounds: a bound outside the key's domain (a
    fix could write it), or a min above the max (no value is allowed); [] where none."""
    problems = [
        f"allow_fixes.{key}.{side}: {bound:g} is not a valid {key} ({domain(key)}): "
        + (
            "a bound is a value a fix may write"
            if bound < 1 or key in REAL_KEYS
            else f"{key} counts, so its bounds are whole numbers"
        )
        for side, bound in (("min", low), ("max", high))
        if bound is not None and not valid(key, bound)
    ]
    if not problems and low is not None and high is not None and low > high:
        problems.append(
            f"allow_fixes.{key}: min {low:g} is above max {high:g}, so no value is allowed"
        )
    return problems


def current_warnings(key: str, low: float | None, values: list[float]) -> list[str]:
    """A min at or above every value the config holds for `key`: no fix of it can ever lower
    it (a warning, not a problem: the run itself is sound, and a campaign's overrides may
    change the value; the fix is refused at run time saying so)."""
    if low is None or not values or any(v > low for v in values):
        return []
    held = ", ".join(f"{v:g}" for v in dict.fromkeys(values))
    return [
        f"allow_fixes.{key}.min {low:g} is not below the config's {key} ({held}), so no fix "
        f"can lower it: allow a min below {held} or leave {key} out of allow_fixes"
    ]
