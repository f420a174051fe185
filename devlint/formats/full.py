"""The default terminal output: location, code, message, the source line with a marker under
the span, a preview of the fix, and a summary line."""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.text import Text

from devlint.findings import Finding
from devlint.formats import RunReport, closing_lines, where


def _fixed_lines(finding: Finding) -> list[str] | None:
    """The finding's line after those edits of its fix that touch only that line (an inserted
    definition included), or None when the fix reaches beyond it."""
    if finding.fix is None:
        return None
    row = finding.location.row
    edits = [e for e in finding.fix.edits if e.start.row == row and e.end.row == row]
    if not edits:
        return None
    line = finding.source_line
    for edit in sorted(edits, key=lambda e: e.start.column, reverse=True):
        line = line[: edit.start.column - 1] + edit.content + line[edit.end.column - 1 :]
    return line.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _finding(console: Console, finding: Finding, show_fixes: bool) -> None:
    head = Text()
    head.append(where(finding), style="bold")
    head.append(": ")
    head.append(finding.code, style="bold red")
    if finding.fix is not None:
        head.append(" [*]" if finding.fix.applicability == "safe" else " [unsafe fix]", style="cyan")
    head.append(f" {finding.message}")
    console.print(head)
    row = str(finding.location.row)
    gutter = " " * len(row)
    line = finding.source_line.expandtabs(1)
    start = finding.location.column - 1
    end = finding.end_location.column - 1 if finding.end_location.row == finding.location.row else len(line)
    width = max(1, end - start)
    console.print(Text(f"{gutter} |", style="blue"))
    console.print(Text(f"{row} | ", style="blue") + Text(line))
    console.print(Text(f"{gutter} | ", style="blue") + Text(" " * start + "^" * width + f" {finding.code}", style="bold red"))
    if show_fixes and finding.fix is not None:
        console.print(Text(f"{gutter} = ", style="blue") + Text(f"fix: {finding.fix.message}", style="cyan"))
        fixed = _fixed_lines(finding)
        if fixed is not None:
            console.print(Text(f"{gutter} - ", style="red") + Text(finding.source_line, style="red"))
            for line in fixed:
                console.print(Text(f"{gutter} + ", style="green") + Text(line, style="green"))
    console.print()


def write(report: RunReport, out: TextIO) -> None:
    console = Console(file=out, highlight=False, soft_wrap=True)
    for finding in report.findings:
        _finding(console, finding, report.show_fixes)
    for line, style in closing_lines(report):
        console.print(Text(line, style=style))
