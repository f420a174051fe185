"""The verify report: a table with one row per program and one column per run, or the same as JSON.

Below the table, every FAIL and every cell whose printed output differs (a FAIL, an emulation that
differs from the GPU, a pass whose CPU output differs by design) is spelled out with its detail and
its first differing lines; the JSON carries the same lines in ``differing_lines``.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from devlint.verify.session import Probe
from devlint.verify.verdict import AGREEMENT, DIFFERS, FAIL, MODES, NA, PASS, SKIPPED, Row

_STYLES = {PASS: "green", FAIL: "bold red", SKIPPED: "yellow", NA: "dim", DIFFERS: "yellow"}
_STATUSES = (PASS, FAIL, SKIPPED, NA, DIFFERS)


@dataclass
class Report:
    rows: list[Row]
    probe: Probe
    errors: list[str]
    exit_code: int
    # Files left out as the expected output of a fixture pair (targets.discover).
    twins: list[str] = field(default_factory=list)

    def counts(self) -> Counter:
        return Counter(cell.status for row in self.rows for cell in row.cells.values())

    @property
    def columns(self) -> tuple[str, ...]:
        return MODES + ((AGREEMENT,) if self.probe.cuda else ())

    def not_compared(self) -> int:
        """Runs of the fixed program that passed with nothing to compare them with."""
        return sum(
            1
            for row in self.rows
            for mode in ("cpu", "cuda")
            if row.cells[mode].status == PASS and row.cells[mode].compared_with is None
        )


def write_json(report: Report, out: TextIO) -> None:
    data: dict[str, Any] = {
        "torch": report.probe.torch,
        "gpu": report.probe.gpu,
        "programs": [
            {
                "path": row.program.display,
                "protocol": row.program.protocol,
                "fixes_applied": row.program.fixes_applied,
                "unfixed": list(row.program.remaining),
                "runs": {
                    mode: {
                        "status": cell.status,
                        "reason": cell.reason or None,
                        "detail": cell.detail or None,
                        "emulated": cell.emulated,
                        "compared_with": cell.compared_with,
                        "differing_lines": list(cell.differing_lines) or None,
                        "cell": cell.text(),
                    }
                    for mode, cell in row.cells.items()
                },
            }
            for row in report.rows
        ],
        "errors": report.errors,
        "skipped_twins": report.twins,
        "summary": {
            "programs": len(report.rows),
            **{s: report.counts()[s] for s in _STATUSES},
            "not_compared": report.not_compared(),
        },
        "exit_code": report.exit_code,
    }
    out.write(json.dumps(data, indent=2) + "\n")


def write_full(report: Report, out: TextIO) -> None:
    # Not a terminal (a log, a pipe): no width to fit, so no cell is ever wrapped or cut.
    console = Console(file=out, width=None if out.isatty() else 10_000, highlight=False, soft_wrap=False)
    gpu = report.probe.gpu or "no GPU"
    console.print(Text(f"devlint verify: torch {report.probe.torch}, {gpu}", style="bold"))
    table = Table(show_lines=False)
    table.add_column("program", overflow="fold")
    table.add_column("fixes", justify="right")
    for mode in report.columns:
        table.add_column(mode, overflow="fold")
    for row in report.rows:
        fixes = str(row.program.fixes_applied)
        if row.program.remaining:
            fixes += f" (left: {', '.join(row.program.remaining)})"
        cells = [Text(row.cells[mode].text(), style=_STYLES[row.cells[mode].status]) for mode in report.columns]
        table.add_row(row.program.display, fixes, *cells)
    console.print(table)
    for row in report.rows:
        for mode in report.columns:
            cell = row.cells[mode]
            if cell.status in (FAIL, DIFFERS) or cell.differing_lines:
                style = _STYLES[cell.status]
                console.print(Text(f"{row.program.display} [{mode}] {cell.status}: {cell.reason}", style=style))
                for line in [*(cell.detail or "").splitlines(), *cell.differing_lines]:
                    console.print(Text(f"    {line}"))
    counts = report.counts()
    summary = (
        f"{len(report.rows)} program(s): {counts[PASS]} pass, {counts[FAIL]} FAIL, "
        f"{counts[SKIPPED]} skipped, {counts[NA]} n/a"
    )
    if counts[DIFFERS]:
        summary += f", {counts[DIFFERS]} where emulation differs from the GPU"
    if report.not_compared():
        summary += f"; {report.not_compared()} passing run(s) had nothing to compare with"
    if report.twins:
        summary += f"; left out {len(report.twins)} expected output(s) of fixture pairs (X.fixed.py, X.unsafe.py)"
    console.print(Text(summary, style="bold red" if counts[FAIL] else "bold"))
