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

import bz2
import codecs
import lzma
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ajetd.core.errors import AjetdError

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


# compressed files by their first bytes: those read as they stream, and those only named
_INFLATE: dict[bytes, tuple[str, Callable[[], Any]]] = {
    b"\x1f\x8b": ("gzip", lambda: zlib.decompressobj(wbits=47)),
    b"BZh": ("bzip2", bz2.BZ2Decompressor),
    b"\xfd7zXZ\x00": ("xz", lzma.LZMADecompressor),
}
_NAMED_ONLY = {b"\x28\xb5\x2f\xfd": "zstd", b"PK\x03\x04": "zip", b"7z\xbc\xaf": "7z"}
OUT_BYTES = 1 << 20  # what one step of decompression gives at most: memory stays flat


class CompressedError(AjetdError):
    """A compressed file that cannot be read as text here (a kind not read, or damaged)."""


def compression_of(first: bytes) -> str | None:
    """The compression a file's first bytes show (`gzip`, `bzip2`, `xz`, `zstd`, `zip`, `7z`),
    or None for plain bytes."""
    for magic, (name, _) in _INFLATE.items():
        if first.startswith(magic):
            return name
    return next((name for magic, name in _NAMED_ONLY.items() if first.startswith(magic)), None)


def text_chunks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """A log's chunks as UTF-8 text (`utf8_chunks`), decompressed first where it is gzip,
    bzip2 or xz (a log kept compressed), each step's output bounded (a small file that
    inflates to gigabytes streams, never sits in memory). CompressedError for a kind not read
    here (zstd, zip, 7z) or a damaged stream: never read as if it were text."""
    it = iter(chunks)
    first = next(it, b"")
    kind = compression_of(first)
    if kind is None:
        yield from utf8_chunks(chained(first, it))
        return
    make = next((m for name, m in _INFLATE.values() if name == kind), None)
    if make is None:
        raise CompressedError(f"{kind}-compressed: decompress it first, then diagnose that")
    try:
        yield from utf8_chunks(_inflated(chained(first, it), make))
    except (zlib.error, lzma.LZMAError, OSError, EOFError) as exc:
        raise CompressedError(f"{kind}-compressed, but it cannot be read: {exc}") from exc


def chained(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    """`first`, then the rest: a stream whose first chunk was read to tell what it is."""
    yield first
    yield from rest


def _inflated(chunks: Iterable[bytes], make: Callable[[], Any]) -> Iterator[bytes]:
    """The decompressed bytes, OUT_BYTES at most per step; concatenated gzip members too."""
    engine = make()
    for chunk in chunks:
        data = chunk
        while data:
            if hasattr(engine, "unconsumed_tail"):  # zlib: what it left is handed back
                yield engine.decompress(data, OUT_BYTES)
                data = engine.unconsumed_tail
                if engine.eof and engine.unused_data:  # the next gzip member
                    data, engine = engine.unused_data + data, make()
                continue
            yield engine.decompress(data, OUT_BYTES)  # bz2, lzma: they keep what is left
            data = b""
            while not engine.needs_input and not engine.eof:
                yield engine.decompress(b"", OUT_BYTES)
    if not engine.eof:
        raise EOFError("it ends before its compressed stream does (cut short)")
