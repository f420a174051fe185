"""Step 7, a run's output: one module per ``--output-format`` (``full``, ``concise``, ``json``,
``github``, ``sarif``, ``junit``, ``gitlab``), each with ``write(report, out)``, imported only when
its format is used (``writers``); ``baseline`` reads and writes ``--baseline`` files.

Takes a ``RunReport`` of findings and errors; may import ``devlint.findings``, ``devlint.rule``,
``devlint.registry`` and ``devlint.docs`` (the rules' help text in SARIF) and devlint's version;
never the engine or a run, which hands it the report.
"""

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
    # Of fixes_applied, those of later fix rounds (fixes the first ones revealed or held back),
    # and the most rounds any file took to apply its fixes.
    fixes_later: int = 0
    fix_rounds: int = 0
    files_checked: int = 0
    show_fixes: bool = True
    # The names of the files checked, for formats that list clean files too (junit).
    files: list[str] = field(default_factory=list)
    # --unsafe-fixes: an unsafe fix is applied too, so its finding counts as fixable.
    unsafe_fixes: bool = False


def where(finding: Finding) -> str:
    """``path:row:col``, or ``path:cell N:row:col`` inside a notebook."""
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    return f"{finding.filename}:{cell}{finding.location.row}:{finding.location.column}"


def fixable(finding: Finding, unsafe_fixes: bool) -> bool:
    """``devlint fix`` (with ``--unsafe-fixes`` where given) applies the finding's fix."""
    return finding.fix is not None and (finding.fix.applicability == "safe" or unsafe_fixes)


def concise_line(finding: Finding, unsafe_fixes: bool) -> str:
    """``path:row:col: CODE [*] message``: ruff's concise line, ``[*]`` where a fix applies."""
    mark = "[*] " if fixable(finding, unsafe_fixes) else ""
    return f"{where(finding)}: {finding.code} {mark}{finding.message}"


def summary(report: RunReport) -> str:
    total = len(report.findings)
    safe = sum(1 for f in report.findings if f.fix is not None and f.fix.applicability == "safe")
    unsafe = sum(1 for f in report.findings if f.fix is not None and f.fix.applicability == "unsafe")
    noun = "finding" if total == 1 else "findings"
    return f"Found {total} {noun} ({safe} fixable, {unsafe} with --unsafe-fixes)."


def fixed_line(report: RunReport) -> str | None:
    """``Fixed N findings.`` after a fix that changed something."""
    if not report.fixes_applied:
        return None
    return f"Fixed {fixed_count(report.fixes_applied, report.fixes_later, report.fix_rounds)}."


def fixed_count(count: int, later: int, rounds: int) -> str:
    """``N findings``, and how many of them later fix rounds fixed: `check` counts the fixes the
    first round offers, so ``15 findings (1 in a second round)`` is how its "14 fixable" and the
    fix of a finding the first fixes revealed add up."""
    text = f"{count} finding{'s' if count != 1 else ''}"
    if later:
        text += f" ({later} in {'a second round' if rounds <= 2 else 'later rounds'})"
    return text


def closing_lines(report: RunReport) -> list[tuple[str, str]]:
    """The lines the human-readable formats (`full`, `concise`) end with, as ruff ends them in
    every such mode, each with its style: what a fix changed, then what remains."""
    lines: list[tuple[str, str]] = []
    fixed = fixed_line(report)
    if fixed is not None:
        lines.append((fixed, "green"))
    if report.findings:
        lines.append((summary(report), "bold"))
    elif not report.errors:
        lines.append(("All checks passed!", "bold green"))
    return lines


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
