"""Bytes on disk to text and back, keeping the encoding, BOM and line endings of the file."""

from __future__ import annotations

import codecs
import io
import tokenize
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

    def encode(self, text: str) -> bytes:
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data


def _row_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def decode(data: bytes) -> Decoded:
    """Decode Python source as the interpreter would (BOM, PEP 263 cookie, else UTF-8)."""
    nul = data.find(b"\x00")
    if nul != -1:
        raise SourceError("contains a NUL byte: a binary file, not Python source", _row_of(data, nul))
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        raise SourceError(f"bad encoding declaration: {error.msg}", getattr(error, "lineno", None)) from None
    bom = encoding == "utf-8-sig"
    codec = "utf-8" if bom else encoding
    body = data[len(codecs.BOM_UTF8):] if bom else data
    try:
        text = body.decode(codec)
    except UnicodeDecodeError as error:
        row = _row_of(body, error.start)
        raise SourceError(f"not valid {codec} (byte {body[error.start]:#04x}); declare the encoding with a coding cookie", row) from None
    return Decoded(text, codec, bom)
