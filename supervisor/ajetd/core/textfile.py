"""How a user's text file's bytes become text: the one rule for every file ajetd reads.

Editors on Windows save "Unicode" text as UTF-16 with a byte-order mark (PowerShell's `>`
does too), and a UTF-8 mark is common; read as UTF-8, such a file is NUL bytes between its
letters, and each reader failed its own way (a YAML parser's `unacceptable character #x0000`,
Python's `'utf-8' codec can't decode byte 0xff`). The files only ajetd reads (a blueprint,
campaign.yaml, a kinds file) are decoded as their mark says (`decode_text`); the files the
program or git also read (the run's config YAML, a campaign's `--patch`) are refused with
the reason in words (`utf8_problem`), since the program would fail on them later. A log
given to `ajetd diagnose` is read as its start says (`utf8_chunks`). Pure.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator

# Longest first: UTF-32 LE's mark begins with UTF-16 LE's.
_MARKS = {  # byte order mark -> codec
    codecs.BOM_UTF32_LE: "utf-32",
    codecs.BOM_UTF32_BE: "utf-32",
    codecs.BOM_UTF8: "utf-8-sig",
    codecs.BOM_UTF16_LE: "utf-16",
    codecs.BOM_UTF16_BE: "utf-16",
}
_SNIFF_BYTES = 4096
SAVE_AS_UTF8 = "save it as UTF-8"


def codec_of(raw: bytes) -> str:
    """The codec the bytes say they are in: their byte-order mark's, or UTF-16 where every
    other byte of their start is NUL (no mark), else UTF-8."""
    for mark, codec in _MARKS.items():
        if raw.startswith(mark):
            return codec
    head = raw[:_SNIFF_BYTES]
    half = len(head) // 2
    if half >= 8:
        even, odd = head[0::2].count(0), head[1::2].count(0)
        if odd >= half * 0.4 and even == 0:
            return "utf-16-le"
        if even >= half * 0.4 and odd == 0:
            return "utf-16-be"
    return "utf-8"


def decode_text(raw: bytes, errors: str = "replace") -> str:
    """The bytes as text in the codec they say (`codec_of`); `errors` as `bytes.decode`
    takes it for UTF-8 (a UTF-16 file cut at an odd byte loses that byte, never raises)."""
    codec = codec_of(raw)
    if codec.startswith("utf-16-"):
        return raw[: len(raw) // 2 * 2].decode(codec, errors="replace")
    return raw.decode(codec, errors=errors if codec == "utf-8" else "replace")


def utf8_problem(raw: bytes) -> str | None:
    """Why the bytes are not UTF-8 text, in words (`UTF-16 text (as Windows editors save
    it): save it as UTF-8`, `not UTF-8 text (invalid start byte at byte 3)`), or None where
    they are (a UTF-8 byte-order mark too)."""
    codec = codec_of(raw)
    if codec not in ("utf-8", "utf-8-sig"):
        kind = codec.split("-")[1]
        return f"UTF-{kind} text (as Windows editors save it): {SAVE_AS_UTF8}"
    try:
        raw.decode(codec)
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    return None


def utf8_chunks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """A file's chunks as UTF-8, decoded as its first chunk says (`codec_of`): a log saved as
    UTF-16 (PowerShell's `>`) is read as text, not as NUL bytes between letters that no kind
    matches. UTF-8 chunks pass as they are (the readers take care of a sequence cut between
    two chunks); bounded as the chunks are."""
    it = iter(chunks)
    first = next(it, b"")
    codec = codec_of(first)
    if codec in ("utf-8", "utf-8-sig"):
        yield first
        yield from it
        return
    decoder = codecs.getincrementaldecoder(codec)(errors="replace")
    yield decoder.decode(first).encode("utf-8")
    for chunk in it:
        yield decoder.decode(chunk).encode("utf-8")
    yield decoder.decode(b"", final=True).encode("utf-8")
