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
from ajetd.core.limits import size_text

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


# what a file that is not UTF-8 most likely is, by how its first undecodable line reads:
# GBK (GB18030 holds it) where that gives Chinese, else a Western Windows "ANSI" save
_GUESSES = (
    ("gb18030", 'GBK (Chinese Windows "ANSI")'),
    ("cp1252", 'Windows-1252/Latin-1 (Western "ANSI")'),
)
_CJK = range(0x3400, 0xA000)
_SHOWN_CHARS = 20


def undecodable(raw: bytes) -> str | None:
    """Where bytes read as their mark says (`codec_of`) hold one that does not decode, in
    words: the line and column of the first, the byte, what the line reads as in the
    encoding it most likely is (GBK, Windows-1252), and `save it as UTF-8`; None where they
    decode (a character cut at the very end is a cut, `cutshort` says it, not a wrong
    encoding). The way out comes first: a message capped at its end keeps it. A GBK or
    Latin-1 file was read with U+FFFD for its bytes and said nothing (walk97 F4: a run's
    purpose and session name were garbage)."""
    codec = codec_of(raw)
    if not codec.startswith("utf-8"):  # a mark's text: read as `decode_text` reads it
        return None
    body = raw[len(codecs.BOM_UTF8) :] if codec == "utf-8-sig" else raw
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.end >= len(body) and exc.reason == "unexpected end of data":
            return None
        return _where_not_utf8(body, exc.start)
    return None


def _where_not_utf8(body: bytes, at: int) -> str:
    """The words of `undecodable` for UTF-8 bytes whose first bad byte is at `at`; each
    encoding guessed that the line decodes in (GBK: and then holds Chinese), with the line
    as it reads there, so the writer sees which is theirs (`ÉÉ` is GBK's `缮` too)."""
    start = body.rfind(b"\n", 0, at) + 1
    end = body.find(b"\n", at)
    line_bytes = body[start : end if end >= 0 else len(body)][:400].rstrip(b"\r")
    line = body.count(b"\n", 0, at) + 1
    column = len(body[start:at].decode("utf-8", errors="replace")) + 1
    said = (
        f"not UTF-8 text ({SAVE_AS_UTF8}, or as UTF-16 with a byte-order mark): line {line}, "
        f"column {column} holds the byte 0x{body[at]:02X}, not UTF-8"
    )
    run = at  # shown from the start of the run of bytes past ASCII the bad one is in
    while run > start and body[run - 1] >= 0x80:
        run -= 1
    guesses = []
    for codec, name in _GUESSES:
        try:
            text = line_bytes.decode(codec)
            shown = text[len(line_bytes[: run - start].decode(codec)) :]
        except UnicodeDecodeError:
            continue
        if codec != "gb18030" or any(ord(c) in _CJK for c in text):
            guesses.append(f"{name}, where it reads {_readable(shown)!r}")
    return f"{said}; it looks like {' or '.join(guesses)}" if guesses else said


def _readable(text: str) -> str:
    """A line shown in a message: stripped, at most _SHOWN_CHARS characters, its control
    characters left out."""
    kept = "".join(c for c in text.strip() if c.isprintable())
    return kept if len(kept) <= _SHOWN_CHARS else kept[: _SHOWN_CHARS - 1] + "…"


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


# Files that are no log, by their first bytes (what `file` would call them)
_NOT_LOGS = {
    b"\x7fELF": "an ELF binary (a program, not its output)",
    b"\x89PNG\r\n\x1a\n": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"GIF8": "a GIF image",
    b"%PDF-": "a PDF document",
    b"SQLite format 3\x00": "an SQLite database",
    b"\x93NUMPY": "a NumPy array",
    b"\xca\xfe\xba\xbe": "a Mach-O or Java class binary",
    b"\xcf\xfa\xed\xfe": "a Mach-O binary",
    b"\x00asm": "a WebAssembly binary",
    b"PAR1": "a Parquet file",
}
SNIFF_BYTES = 64 * 1024  # of the text, what is looked at for bytes that are not text
NOT_TEXT_SHARE = 0.1  # more NUL bytes, control bytes or invalid UTF-8 than this: not text
# control bytes a terminal's output holds: tab, newline, vertical tab, form feed, carriage
# return, backspace (a progress bar's), escape (colours)
_TEXT_CONTROLS = frozenset(b"\t\n\x0b\x0c\r\x08\x1b")
_ODD_CONTROLS = bytes(c for c in range(32) if c not in _TEXT_CONTROLS) + b"\x7f"


class NotTextError(AjetdError):
    """Bytes given as a log that are not text (a binary, random bytes, NULs): nothing in them
    was read, so nothing may be said of them as of a log."""


class TextSniff:
    """Whether a stream of bytes given as text is text, in bounded work: every NUL byte is
    counted (C speed), the first SNIFF_BYTES are looked at for a known binary's first bytes,
    control bytes a terminal never prints and invalid UTF-8. `why_not` says what they are."""

    def __init__(self) -> None:
        self.total = 0
        self.nuls = 0
        self._head = b""

    def add(self, chunk: bytes) -> bytes:
        """Count `chunk` (the next bytes of the stream) and pass it on."""
        self.total += len(chunk)
        self.nuls += chunk.count(0)
        if len(self._head) < SNIFF_BYTES:
            self._head += chunk[: SNIFF_BYTES - len(self._head)]
        return chunk

    def binary(self) -> str | None:
        """What the stream is by its first bytes where it is a known binary ("an ELF binary
        (...)"): text in it (a library's messages) is no program's output."""
        return next(
            (what for magic, what in _NOT_LOGS.items() if self._head.startswith(magic)), None
        )

    def why_not(self) -> str | None:
        """Why the bytes are not text, in words ("an ELF binary (...)", "93% of its first 64.0
        KiB are not text (NUL or control bytes, invalid UTF-8)"), or None for text."""
        head = self._head
        known = self.binary()
        if known is not None:
            return known
        if self.total and self.nuls > self.total * NOT_TEXT_SHARE:
            return f"{self.nuls * 100 // self.total}% of its {self.total:,} bytes are NUL bytes"
        if not head:
            return None
        invalid = head.decode("utf-8", errors="replace").count("\ufffd")
        # (a UTF-8 sequence cut at the sniff's end counts once: a share of 10% is far off)
        odd = len(head) - len(head.translate(None, _ODD_CONTROLS)) + invalid
        if odd > len(head) * NOT_TEXT_SHARE:
            share = min(100, odd * 100 // len(head))
            return (
                f"{share}% of its first {size_text(len(head))} are not text (NUL or control bytes, "
                "invalid UTF-8)"
            )
        return None
