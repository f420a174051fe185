"""The smallest edits that turn one text into another, for workspace edits that touch only what
a fix changed (an editor keeps the cursor, folds and undo history of every untouched line)."""

from __future__ import annotations

import re

from devlint import linediff
from devlint.fixes import common_prefix, trimmed

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")

Replacement = tuple[int, int, str]  # start and end offsets in the old text, new content


def common_suffix(a: str, b: str) -> int:
    return common_prefix(a[::-1], b[::-1])


def minimal_edits(old: str, new: str) -> list[Replacement]:
    """Non-overlapping replacements, in order, that make ``new`` of ``old``."""
    if old == new:
        return []
    start, end, content = trimmed(old, 0, len(old), new)
    old_lines = _LINE.findall(old[start:end])
    new_lines = _LINE.findall(content)
    if len(old_lines) <= 1:
        return [(start, end, content)]
    offsets = [start]
    for line in old_lines:
        offsets.append(offsets[-1] + len(line))
    edits: list[Replacement] = []
    for tag, i1, i2, j1, j2 in linediff.opcodes(old_lines, new_lines):
        if tag != "equal":
            edits.append(trimmed(old, offsets[i1], offsets[i2], "".join(new_lines[j1:j2])))
    return edits
