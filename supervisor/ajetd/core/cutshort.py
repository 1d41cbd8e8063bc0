"""Whether a file's bytes, read whole, cannot be the whole file: cut short. Pure.

A copy that ran out of room (`cp` on a full disk: "No space left on device", exit 1) or was
killed part way leaves a file that is closed and looks settled, and whose first part may
parse: walk92 F1's 9204-byte blueprint, cut to 4096 bytes in its notes, was admitted with
default options because its `[ajetd]` part was in the lost rest (all GPUs, three trials, no
hang rule). The signs read here are those such a cut leaves and a finished text file almost
never has:

- its last line has no newline, and its size is a multiple of 4096 bytes: the kernel writes
  a file a page at a time, so a write cut by a full disk (tmpfs, ext4, XFS, btrfs) ends on a
  page, and `cp` (128 KiB at a time) killed part way does too; a file of exactly 4096 or
  8192 bytes whose writer left no newline at its end is rare, and is told what to do;
- it ends inside a UTF-8 character (its last bytes begin a character they do not finish).

Each sign is said with what it is, so the person can tell a cut from a coincidence: a file
that is whole is made acceptable by ending it with a newline.
"""

from __future__ import annotations

PAGE_BYTES = 4096
COPY_AGAIN = "copy the whole file in again"
WHOLE_AGAIN = f"{COPY_AGAIN} (if it is whole as it is, end it with a newline)"


def _ends_mid_character(raw: bytes) -> bool:
    """The bytes end in the first bytes of a UTF-8 character, its rest missing (a UTF-16
    file, with its byte-order mark, is not looked at this way)."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    try:  # a GBK or cp1252 file's last byte may look like a lead byte (review92 #3): only
        raw.decode("utf-8")  # a file that is UTF-8 up to an unfinished last character is cut
    except UnicodeDecodeError as exc:
        if exc.reason != "unexpected end of data" or exc.end != len(raw):
            return False
    else:
        return False
    tail = raw[-4:]
    for back in range(1, len(tail) + 1):
        byte = tail[-back]
        if byte < 0x80:  # ASCII: no character is open
            return False
        if byte >= 0xC0:  # a lead byte: how many bytes its character needs
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return need > back
    return False


def _ends_in_newline(raw: bytes) -> bool:
    """The last line is ended (`\\n`, `\\r`; in UTF-16, either byte order)."""
    return raw.endswith((b"\n", b"\r", b"\n\x00", b"\r\x00", b"\x00\n", b"\x00\r"))


def cut_sign(raw: bytes) -> str | None:
    """Why these bytes, a whole file's, look cut short, in words that say what was seen; None
    where nothing says so (an empty file is said elsewhere: it lacks every part)."""
    if not raw or _ends_in_newline(raw):
        return None
    if len(raw) % PAGE_BYTES == 0:
        return (
            f"it looks cut short: its last line has no newline and it is {len(raw)} bytes, a "
            f"multiple of {PAGE_BYTES}, what a copy cut off by a full disk (or killed part "
            f"way) leaves; {WHOLE_AGAIN}"
        )
    if _ends_mid_character(raw):
        return (
            "it looks cut short: it ends in the middle of a character (its last bytes begin a "
            f"UTF-8 character they do not finish), what a copy cut off part way leaves; "
            f"{WHOLE_AGAIN}"
        )
    return None


def unended(raw: bytes) -> bool:
    """The last line has no newline: a file that may have been cut short (said beside the
    reasons a blueprint with missing parts is rejected for), though editors leave some so."""
    return bool(raw) and not _ends_in_newline(raw)
