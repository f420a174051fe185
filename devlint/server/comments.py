"""The comments of a document (for `# noqa` actions), tokenizing only the chunks an edit changed.

``scan`` (devlint.run.suppressions) tokenizes the whole text; after an edit most of it is text
tokenized before. The text is cut into chunks before every line that starts a top-level
``def``, ``class`` or decorator, each chunk is tokenized on its own and kept by its text, and
the rows of its comments are moved to where the chunk stands.

That gives what one tokenization gives because a chunk that ends where the tokenizer is at the
start of a line outside any bracket or string is tokenized alike alone or after the text before
it (a new line at column 0 also closes every indented block). A cut that falls inside a string
or brackets (``def`` written at column 0 in a docstring) leaves the chunk before it ending in an
unfinished string or statement, which the tokenizer reports: then, and for text it cannot read
at all, the whole text is scanned as before. So are texts with a lone carriage return, where
the tokenizer and ``LineIndex`` count rows differently.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass

from devlint.fixes import LineIndex
from devlint.run.suppressions import Comments, scan

# A chunk starts at a line that starts a top-level definition (or decorates one).
_CHUNK_START = re.compile(r"^(?:def\b|class\b|async\b|@)", re.MULTILINE)
# About a tenth of what the worker keeps of LibCST's trees.
KEPT_CHARS = 2_000_000


@dataclass(frozen=True)
class _Part:
    """One chunk's comments and continued rows, numbered from the chunk's first row (1)."""

    by_row: dict[int, tuple[int, str]]
    continues: dict[int, int]


class CommentCache:
    def __init__(self, kept_chars: int = KEPT_CHARS) -> None:
        self._parts: OrderedDict[str, _Part] = OrderedDict()
        self._chars = 0
        self._kept_chars = kept_chars

    def comments(self, text: str) -> Comments:
        """What ``scan(text)`` gives."""
        if "\r" in text and "\r" in text.replace("\r\n", ""):
            return scan(text)
        merged = Comments(LineIndex(text))
        row = 0
        for chunk in _chunks(text):
            part = self._part(chunk)
            if part is None:
                return scan(text)
            merged.by_row.update((row + r, found) for r, found in part.by_row.items())
            merged.continues.update((row + r, row + to) for r, to in part.continues.items())
            row += chunk.count("\n")
        return merged

    def _part(self, chunk: str) -> _Part | None:
        part = self._parts.get(chunk)
        if part is not None:
            self._parts.move_to_end(chunk)
            return part
        found = scan(chunk)
        if found.exact_until is not None:
            return None
        part = _Part(found.by_row, found.continues)
        self._parts[chunk] = part
        self._chars += len(chunk)
        while self._chars > self._kept_chars and len(self._parts) > 1:
            dropped, _ = self._parts.popitem(last=False)
            self._chars -= len(dropped)
        return part


def _chunks(text: str) -> list[str]:
    starts = [match.start() for match in _CHUNK_START.finditer(text) if match.start() > 0]
    return [text[begin:end] for begin, end in zip([0, *starts], [*starts, len(text)])]
