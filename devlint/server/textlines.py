"""Positions as the editor counts them and offsets as devlint counts them.

LSP lines end at ``\\n``, ``\\r\\n`` or ``\\r`` only (``str.splitlines`` also breaks at form
feeds and U+2028, which would shift every later line), and a column counts code units of the
negotiated encoding: UTF-16 unless the client offered UTF-8 or UTF-32. devlint counts code
points. A position past the end of a line means the end of that line; one past the last line,
the end of the text.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from lsprotocol import types

_NEWLINE = re.compile(r"\r\n|\r|\n")
UTF8, UTF16, UTF32 = (types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf16, types.PositionEncodingKind.Utf32)


def units(text: str, encoding: str) -> int:
    """The length of ``text`` in code units of ``encoding``."""
    if encoding == UTF32 or text.isascii():
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _index(line: str, character: int, encoding: str) -> int:
    """The code point index in ``line`` of a column given in code units (clamped to the line).
    A column inside a character (half a surrogate pair) moves to the end of that character."""
    if encoding == UTF32 or line.isascii():
        return min(character, len(line))
    counted = 0
    for index, char in enumerate(line):
        if counted >= character:
            return index
        counted += units(char, encoding)
    return len(line)


@dataclass(frozen=True)
class Lines:
    """The line starts of one text, to convert positions both ways."""

    text: str
    starts: tuple[int, ...]

    @classmethod
    def of(cls, text: str) -> Lines:
        return cls(text, (0, *(m.end() for m in _NEWLINE.finditer(text))))

    def line(self, index: int) -> str:
        """Line ``index`` (0-based) without its line ending; "" past the end."""
        if index >= len(self.starts):
            return ""
        end = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.text)
        return self.text[self.starts[index] : end].rstrip("\r\n")

    def offset(self, position: types.Position, encoding: str) -> int:
        if position.line >= len(self.starts):
            return len(self.text)
        line = self.line(position.line)
        return self.starts[position.line] + _index(line, position.character, encoding)

    def position(self, offset: int, encoding: str) -> types.Position:
        offset = max(0, min(offset, len(self.text)))
        index = bisect.bisect_right(self.starts, offset) - 1
        line = self.line(index)
        column = min(offset - self.starts[index], len(line))
        return types.Position(index, units(line[:column], encoding))

    def at(self, row: int, column: int, encoding: str) -> types.Position:
        """The position of devlint's 1-based ``row`` and 1-based code point ``column``."""
        if row - 1 >= len(self.starts):
            return self.position(len(self.text), encoding)
        line = self.line(row - 1)
        return types.Position(row - 1, units(line[: max(column - 1, 0)], encoding))

    def range(self, start: int, end: int, encoding: str) -> types.Range:
        return types.Range(self.position(start, encoding), self.position(end, encoding))


def apply_change(text: str, change: types.TextDocumentContentChangeEvent, encoding: str) -> str:
    """``text`` after one content change (a whole new text, or a range replaced)."""
    span = getattr(change, "range", None)
    if span is None:
        return change.text
    lines = Lines.of(text)
    start, end = lines.offset(span.start, encoding), lines.offset(span.end, encoding)
    start, end = min(start, end), max(start, end)
    return text[:start] + change.text + text[end:]
