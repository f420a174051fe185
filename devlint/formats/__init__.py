"""Output formats. Each module exposes ``write(report, out)``; ``FORMATS`` maps names to them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
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


_MODULES = {
    "full": "full",
    "concise": "concise",
    "json": "json_format",
    "github": "github",
    "sarif": "sarif",
    "junit": "junit",
    "gitlab": "gitlab",
}


def writers() -> dict[str, Writer]:
    """Each format's writer. A format's module is imported when its writer runs: `full` and
    `sarif` import rich (and sarif the rules), which a run writing `concise` never needs."""
    return {name: _on_demand(module) for name, module in _MODULES.items()}


def _on_demand(module: str) -> Writer:
    def write(report: RunReport, out: TextIO) -> None:
        import_module(f"devlint.formats.{module}").write(report, out)

    return write
