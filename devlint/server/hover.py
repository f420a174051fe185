"""Hover: the documentation of the rule of a finding under the cursor, or of a code written in
a `# noqa: CODE` comment."""

from __future__ import annotations

import re
from collections.abc import Mapping

from lsprotocol import types

from devlint.server.diagnostics import item_range
from devlint.server.snapshot import Checked
from devlint.server.textlines import Lines, units

_CODE = re.compile(r"[A-Za-z]+[0-9]+")


def _contains(span: types.Range, position: types.Position) -> bool:
    start, end = (span.start.line, span.start.character), (span.end.line, span.end.character)
    return start <= (position.line, position.character) <= end


def _noqa_code(lines: Lines, position: types.Position, encoding: str) -> tuple[str, types.Range] | None:
    """The code of a `# noqa: ...` list the position is on, with its range."""
    from devlint.run.suppressions import NOQA

    line = lines.line(position.line)
    for match in NOQA.finditer(line):
        if match.group("codes") is None:
            continue
        for code in _CODE.finditer(line, match.start("codes"), match.end("codes")):
            span = types.Range(
                types.Position(position.line, units(line[: code.start()], encoding)),
                types.Position(position.line, units(line[: code.end()], encoding)),
            )
            if _contains(span, position):
                return code.group(), span
    return None


def hover(
    checked: Checked, text: int, position: types.Position, encoding: str, pages: Mapping[str, str]
) -> types.Hover | None:
    """``pages``: each rule's documentation by code."""
    lines = checked.snapshot.lines[text]
    if lines is None:
        return None
    written = _noqa_code(lines, position, encoding)
    if written is not None:
        documentation = pages.get(written[0].upper())
        if documentation is None:
            return None
        return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, documentation), written[1])
    codes: dict[str, types.Range] = {}
    for item in checked.analysis.items:
        span = item_range(item, lines, encoding)
        if item.text == text and _contains(span, position):
            codes.setdefault(item.finding.code, span)
    shown = [page for code in codes if (page := pages.get(code)) is not None]
    if not shown:
        return None
    return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, "\n---\n\n".join(shown)), next(iter(codes.values())))
