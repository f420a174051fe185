"""Bytes on disk to text and back, keeping the encoding, BOM and line endings of the file."""

from __future__ import annotations

import codecs
import tokenize
from collections.abc import Callable
from dataclasses import dataclass


class SourceError(Exception):
    """Input that cannot be read as Python source; carries the 1-based line where it applies."""

    def __init__(self, message: str, row: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.row = row


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str  # a Python codec name, without the -sig suffix
    bom: bool
    # Encoding ``text`` again gives back the bytes read: only then may a fix rewrite the file.
    exact: bool = True

    def encode(self, text: str) -> bytes:
        """``text`` as bytes in the file's encoding; a fix that needs a character the encoding
        lacks is refused rather than written with replacement characters."""
        if not self.exact:
            raise SourceError(f"its {self.encoding} bytes do not survive decoding and encoding again; not rewritten")
        try:
            data = text.encode(self.encoding)
        except UnicodeEncodeError as error:
            raise SourceError(f"the fix needs {error.object[error.start]!r}, which {self.encoding} cannot encode; not rewritten") from None
        return codecs.BOM_UTF8 + data if self.bom else data


def _row_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _first_lines(data: bytes) -> Callable[[], bytes]:
    """``readline`` for ``tokenize.detect_encoding`` that, like the interpreter, also ends a
    line at a lone CR (old Mac line endings); BytesIO.readline would not."""
    lines = iter(data.splitlines(keepends=True))
    return lambda: next(lines, b"")


def _cookie_row(data: bytes) -> int | None:
    """The line of the encoding declaration (PEP 263 allows only the first two)."""
    for row, line in enumerate(data.splitlines()[:2], start=1):
        if b"coding" in line:
            return row
    return None


def decode(data: bytes) -> Decoded:
    """Decode Python source as the interpreter would (BOM, PEP 263 cookie, else UTF-8)."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise SourceError("UTF-16 encoded: Python source must be UTF-8 or an ASCII-compatible encoding", 1)
    nul = data.find(b"\x00")
    if nul != -1:
        raise SourceError("contains a NUL byte: a binary file, not Python source", _row_of(data, nul))
    try:
        encoding, _ = tokenize.detect_encoding(_first_lines(data))
    except SyntaxError as error:
        cookie = _cookie_row(data)
        if cookie is not None:
            raise SourceError(f"bad encoding declaration: {error.msg}", cookie) from None
        # No declaration, and the first lines are not UTF-8: the decode below says where.
        encoding = "utf-8"
    bom = encoding == "utf-8-sig"
    codec = "utf-8" if bom else encoding
    body = data[len(codecs.BOM_UTF8):] if bom else data
    try:
        text = body.decode(codec)
    except UnicodeDecodeError as error:
        row = _row_of(body, error.start)
        hint = "" if codec != "utf-8" else "; declare the file's encoding with a coding cookie"
        raise SourceError(f"not valid {codec} (byte {body[error.start]:#04x}){hint}", row) from None
    except LookupError as error:
        # A codec that is no text encoding (`# coding: rot13`).
        raise SourceError(f"bad encoding declaration: {error}", _cookie_row(data)) from None
    try:
        exact = text.encode(codec) == body
    except UnicodeError:
        exact = False
    return Decoded(text, codec, bom, exact)
