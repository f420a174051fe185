"""Output formats. Each module exposes ``write(report, out)``; ``FORMATS`` maps names to them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from devlint.findings import FileError, Finding


@dataclass
class RunReport:
    findings: list[Finding]
    errors: list[FileError] = field(default_factory=list)
    fixes_applied: int = 0
    files_checked: int = 0
    show_fixes: bool = True
    # The names of the files checked, for formats that list clean files too (junit).
    files: list[str] = field(default_factory=list)


def where(finding: Finding) -> str:
    """``path:row:col``, or ``path:cell N:row:col`` inside a notebook."""
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    return f"{finding.filename}:{cell}{finding.location.row}:{finding.location.column}"


Writer = Callable[[RunReport, TextIO], None]


def writers() -> dict[str, Writer]:
    from devlint.formats import concise, full, github, gitlab, json_format, junit, sarif

    return {
        "full": full.write,
        "concise": concise.write,
        "json": json_format.write,
        "github": github.write,
        "sarif": sarif.write,
        "junit": junit.write,
        "gitlab": gitlab.write,
    }
