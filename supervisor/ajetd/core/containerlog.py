"""A container runtime's log record as the text the program printed; pure.

People paste the file a container runtime keeps for a container's output, not what `docker
logs` or `kubectl logs` shows from it. Two formats, each one record a line:

- Docker's json-file log driver (`/var/lib/docker/containers/<id>/<id>-json.log`): a JSON
  object, `{"log":"<text>\\n","stream":"stderr","time":"2024-05-01T12:00:00.123456789Z"}`
  (an `attrs` object too where the driver logs labels or environment). Docker cuts a line
  printed longer than 16 KiB into records, each but the last without the `\\n` at the end of
  its `log` (docker/for-linux#1321, moby/moby#32923, moby/moby#36777: "entries ... contain that
  output ... and the container's output may be split over multiple entries (partial
  messages)").
- The CRI format of containerd and CRI-O (a node's `/var/log/pods/<pod>/<container>/0.log`):
  `<RFC 3339 time, nanoseconds> <stdout|stderr> <tag> <text>`, the tag `F` for a full line and
  `P` for a part of one that the next record goes on with (Kubernetes' CRI logging format,
  kubernetes/kubernetes#44976: `2016-10-06T00:17:09.669794202Z stdout P First line of log
  entry 2`; tags after the first are `:`-separated, Loki's `cri` stage reads the same).

`record` reads one line; a line that is no such record is the program's own (None). A part is
joined to the records after it as they come, whatever their stream, as `kubectl logs` and
`docker logs` print them.
"""

from __future__ import annotations

import json
import re

# Docker's encoder writes `{"log":` first; other keys in any order are read too (a
# collector's copy). Longer lines are no record Docker writes (16 KiB of text, escaped).
_JSON_RECORD = re.compile(rb'\{\s{0,8}"(?:log|stream|time|attrs)"\s{0,8}:')
MAX_RECORD_BYTES = 256 * 1024
_STREAMS = frozenset({"stdout", "stderr"})
# (each part bounded, none repeated but the tags, which a `:` separates: linear)
_CRI_RECORD = re.compile(
    rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d) "
    rb"(?:stdout|stderr) ([PF])(?::[A-Za-z0-9_]{1,32}){0,8}(?: |$)"
)


def record(line: bytes) -> tuple[bytes, bool] | None:
    """The text a runtime's record holds (a line without its newline), and whether it ends a
    printed line (False: the next record goes on with it); None when `line` is no record."""
    if line[:1] == b"{":
        return _json_record(line)
    if line[:1].isdigit():
        found = _CRI_RECORD.match(line)
        if found is not None:
            return line[found.end() :], found[1] == b"F"
    return None


def _json_record(line: bytes) -> tuple[bytes, bool] | None:
    if len(line) > MAX_RECORD_BYTES or _JSON_RECORD.match(line) is None:
        return None
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):  # not JSON (a line of a JSON logger cut), too deep
        return None
    if not isinstance(value, dict):
        return None
    text, stream, time = value.get("log"), value.get("stream"), value.get("time")
    if not (isinstance(text, str) and stream in _STREAMS and isinstance(time, str)):
        return None
    ended = text.endswith("\n")
    text = text[:-1] if ended else text
    # (Docker cuts lines at `\n`: one inside is no line of the program's, but keeps it one)
    return text.replace("\n", " ").encode("utf-8", errors="replace"), ended
