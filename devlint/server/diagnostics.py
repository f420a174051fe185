"""An analysis as LSP diagnostics: one list per text (a file, or each cell of a notebook)."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types

from devlint.server.model import Analysis, Item, Problem
from devlint.server.severity import severity, tags
from devlint.server.textlines import Lines

SOURCE = "devlint"
# The code of a syntax error: no rule's, so that an editor can filter or count them apart.
SYNTAX_ERROR = "syntax-error"


def item_range(item: Item, lines: Lines, encoding: str) -> types.Range:
    start, end = item.finding.location, item.finding.end_location
    return types.Range(lines.at(start.row, start.column, encoding), lines.at(end.row, end.column, encoding))


def finding_diagnostic(item: Item, lines: Lines, encoding: str) -> types.Diagnostic:
    finding = item.finding
    return types.Diagnostic(
        range=item_range(item, lines, encoding),
        message=finding.message,
        severity=severity(finding.code),
        code=finding.code,
        source=SOURCE,
        tags=tags(finding.code),
    )


def _problem(problem: Problem, lines: Lines, encoding: str) -> types.Diagnostic:
    """A parse error marks the character it names (the line's end when that is where it is)."""
    row = problem.row or 1
    column = problem.column or 1
    line = lines.line(row - 1)
    first = min(max(column, 1), max(len(line), 1))
    start = lines.at(row, first, encoding)
    end = lines.at(row, first + 1, encoding) if line else start
    return types.Diagnostic(
        range=types.Range(start, end),
        message=problem.message,
        severity=types.DiagnosticSeverity.Error,
        code=SYNTAX_ERROR if problem.syntax else None,
        source=SOURCE,
    )


def diagnostics(
    analysis: Analysis, lines: Sequence[Lines | None], encoding: str, show_problem: bool
) -> list[list[types.Diagnostic]]:
    """The diagnostics of each text (``lines[i]`` None: a text that is not Python: none)."""
    found: list[list[types.Diagnostic]] = [[] for _ in lines]
    for item in analysis.items:
        text_lines = lines[item.text]
        if text_lines is not None:
            found[item.text].append(finding_diagnostic(item, text_lines, encoding))
    problem = analysis.problem
    if problem is not None and show_problem and problem.text < len(lines):
        text_lines = lines[problem.text]
        if text_lines is not None:
            found[problem.text].append(_problem(problem, text_lines, encoding))
    return found
