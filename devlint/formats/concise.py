"""``path:line:col: CODE [*] message``, one finding a line (``[*]``: a fix applies), then the summary ruff's concise mode
ends with too (``Found N findings ...``, ``Fixed N findings.``, ``All checks passed!``)."""

from __future__ import annotations

from typing import TextIO

from devlint.formats import RunReport, closing_lines, concise_line


def write(report: RunReport, out: TextIO) -> None:
    for finding in report.findings:
        out.write(concise_line(finding, report.unsafe_fixes) + "\n")
    for line, _style in closing_lines(report):
        out.write(line + "\n")
