"""The smallest edits that turn one text into another, for workspace edits that touch only what
a fix changed (an editor keeps the cursor, folds and undo history of every untouched line)."""

from __future__ import annotations

import difflib
import re

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")

Replacement = tuple[int, int, str]  # start and end offsets in the old text, new content


def common_prefix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix(a: str, b: str) -> int:
    return common_prefix(a[::-1], b[::-1])


def _trimmed(old: str, start: int, end: int, content: str) -> Replacement:
    """``old[start:end] -> content`` without the characters both sides share at either end,
    never splitting a CRLF of ``old`` (an editor cannot place a position between the two)."""
    part = old[start:end]
    head = common_prefix(part, content)
    tail = common_suffix(part[head:], content[head:])
    while head and old[start + head - 1] == "\r" and start + head < len(old) and old[start + head] == "\n":
        head -= 1
    while tail and old[end - tail] == "\n" and end - tail > 0 and old[end - tail - 1] == "\r":
        tail -= 1
    return start + head, end - tail, content[head : len(content) - tail]


def minimal_edits(old: str, new: str) -> list[Replacement]:
    """Non-overlapping replacements, in order, that make ``new`` of ``old``."""
    if old == new:
        return []
    start, end, content = _trimmed(old, 0, len(old), new)
    old_lines = _LINE.findall(old[start:end])
    new_lines = _LINE.findall(content)
    if len(old_lines) <= 1:
        return [(start, end, content)]
    offsets = [start]
    for line in old_lines:
        offsets.append(offsets[-1] + len(line))
    edits: list[Replacement] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old_lines, new_lines).get_opcodes():
        if tag != "equal":
            edits.append(_trimmed(old, offsets[i1], offsets[i2], "".join(new_lines[j1:j2])))
    return edits
