"""Findings kept through a typo: while a document does not parse, the findings of its last check
stay on the lines the edits did not touch (moved with the lines above them that were added or
removed), beside the syntax error, as ruff and Pyright do; the next check that parses replaces
them all.

A kept finding has no fix and no `# noqa` action: their offsets were computed for the old text,
and no fix is offered for code that does not parse.
"""

from __future__ import annotations

import re
from dataclasses import replace

from devlint.findings import Finding, Location
from devlint.server.model import Item
from devlint.server.snapshot import Checked, Snapshot
from devlint.server.textdiff import common_prefix, common_suffix

_NEWLINE = re.compile(r"\r\n|\r|\n")


def _row_of(text: str, offset: int) -> int:
    """The 1-based row holding ``offset``."""
    return len(_NEWLINE.findall(text, 0, offset)) + 1


class _Shift:
    """The rows of the old text that changed, and how far the rows after them moved."""

    def __init__(self, old: str, new: str) -> None:
        head = common_prefix(old, new)
        tail = common_suffix(old[head:], new[head:])
        self.same = old == new
        self.first = _row_of(old, head)
        self.last = _row_of(old, len(old) - tail)
        self.moved = len(_NEWLINE.findall(new, head, len(new) - tail)) - len(_NEWLINE.findall(old, head, len(old) - tail))

    def finding(self, finding: Finding) -> Finding | None:
        """The finding in the new text; None when a row it spans was edited."""
        if self.same or finding.end_location.row < self.first:
            return finding
        if finding.location.row <= self.last:
            return None
        return replace(
            finding,
            location=Location(finding.location.row + self.moved, finding.location.column),
            end_location=Location(finding.end_location.row + self.moved, finding.end_location.column),
            noqa_row=finding.noqa_row + self.moved,
        )


def carried(before: Checked, after: Snapshot) -> tuple[Item, ...]:
    """The findings of ``before`` that still stand in the text of ``after``, placed in it."""
    old = before.snapshot
    index = {uri: number for number, uri in enumerate(old.uris)}
    kept: list[Item] = []
    for number, uri in enumerate(after.uris):
        was = index.get(uri)
        new_text = after.source.texts[number]
        if was is None or new_text is None or old.source.texts[was] is None:
            continue
        shift = _Shift(old.source.texts[was] or "", new_text)
        for item in before.analysis.items:
            if item.text != was:
                continue
            moved = shift.finding(item.finding)
            if moved is not None:
                kept.append(Item(replace(moved, fix=None), number, (), ()))
    return tuple(kept)
