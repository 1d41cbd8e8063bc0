"""Which way a failure's own message says to move a setting a science fix changes; pure.

One failure kind can hold failures that want opposite fixes. vLLM refuses to start in two
ways: other processes hold its GPU (`Free memory on device ... is less than desired GPU memory
utilization ... Decrease GPU memory utilization`: lower it), or the weights leave its budget
no room for the KV cache (`The model's max seq len (8192) is larger than the maximum number of
tokens that can be stored in KV cache (6048). Try increasing gpu_memory_utilization ...`: raise
it). A remedy that moves a key against what the message says burns every trial, so the
direction of a fix is read from the message first: the verb of its own advice nearest before
the key's name, else the shape of a failure that says which way without advice (a negative KV
cache), else the kind's usual way (lower: a smaller batch, budget or step).
"""

from __future__ import annotations

import re
from typing import Literal

Direction = Literal["raise", "lower"]
READ_CHARS = 4000  # of a finding's evidence, at most (user input: bounded)
_BEFORE = 60  # characters before a key's name where its advice verb is looked for
_VERB = re.compile(
    r"\b(?:(?P<raise>increas\w{0,3}|rais\w{0,3}|higher)|(?P<lower>lower\w{0,3}|decreas\w{0,3}"
    r"|reduc\w{0,3}|smaller))\b",
    re.IGNORECASE,
)
# the names a key goes by in the messages of what reads it: vLLM writes `gpu_memory_utilization`
# and `GPU memory utilization`; SGLang's equivalent is `--mem-fraction-static`
_ALIASES = {"gpu_memory_utilization": (r"mem[-_ ]fraction[-_ ]static",)}
# shapes that say the budget is too small without advising (vLLM's `Available KV cache memory:
# -0.87 GiB`, `No available memory for the cache blocks`, V1's `... GiB KV cache is needed, which
# is larger than the available KV cache memory`, SGLang's `is larger than the profiled
# value -561981`, `leave no GPU memory for the KV cache`): the weights took it all, so raise it
_NO_ROOM = re.compile(
    r"kv cache memory:?\s*-\d|no available memory for the cache blocks|profiled value -\d"
    r"|larger than the maximum number of tokens .{0,80}kv cache"
    r"|larger than the available kv cache memory"  # vLLM V1's words for the same
    r"|\bno (?:gpu |device )?memory (?:left |remaining )?for (?:the )?kv cache",
    re.IGNORECASE,
)


def _key_pattern(key: str) -> re.Pattern[str]:
    """`gpu_memory_utilization` as written in code, flags and prose (`GPU memory
    utilization`), and its aliases."""
    spelled = r"[-_ ]".join(re.escape(word) for word in key.split("_"))
    return re.compile("|".join((spelled, *_ALIASES.get(key, ()))), re.IGNORECASE)


def said(evidence: str, key: str) -> Direction | None:
    """The way `evidence` (a finding's line) says to move `key`, or None where it does not
    say: the verb nearest before the key's first mention within its sentence (`Try increasing
    X or decreasing Y` raises X and lowers Y), else a no-room shape for the memory budget."""
    text = evidence[:READ_CHARS]
    for mention in _key_pattern(key).finditer(text):
        before = text[max(0, mention.start() - _BEFORE) : mention.start()]
        before = re.split(r"[.;!?]\s", before)[-1]
        verbs = list(_VERB.finditer(before))
        if verbs:
            return "raise" if verbs[-1].group("raise") else "lower"
    if key == "gpu_memory_utilization" and _NO_ROOM.search(text):
        return "raise"
    return None
