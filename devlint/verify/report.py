"""The verify report: a table with one row per program and one column per run, or the same as JSON."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from devlint.verify.session import Probe
from devlint.verify.verdict import FAIL, MODES, NA, PASS, SKIPPED, Row

_STYLES = {PASS: "green", FAIL: "bold red", SKIPPED: "yellow", NA: "dim"}


@dataclass
class Report:
    rows: list[Row]
    probe: Probe
    errors: list[str]
    exit_code: int

    def counts(self) -> Counter:
        return Counter(cell.status for row in self.rows for cell in row.cells.values())


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
                        "compared_with": cell.compared_with,
                        "cell": cell.text(),
                    }
                    for mode, cell in row.cells.items()
                },
            }
            for row in report.rows
        ],
        "errors": report.errors,
        "summary": {"programs": len(report.rows), **{s: report.counts()[s] for s in (PASS, FAIL, SKIPPED, NA)}},
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
    for mode in MODES:
        table.add_column(mode, overflow="fold")
    for row in report.rows:
        fixes = str(row.program.fixes_applied)
        if row.program.remaining:
            fixes += f" (left: {', '.join(row.program.remaining)})"
        cells = [Text(row.cells[mode].text(), style=_STYLES[row.cells[mode].status]) for mode in MODES]
        table.add_row(row.program.display, fixes, *cells)
    console.print(table)
    for row in report.rows:
        for mode in MODES:
            cell = row.cells[mode]
            if cell.status == FAIL:
                console.print(Text(f"{row.program.display} [{mode}] FAIL: {cell.reason}", style="bold red"))
                for line in (cell.detail or "").splitlines():
                    console.print(Text(f"    {line}"))
    counts = report.counts()
    unverified = sum(
        1
        for row in report.rows
        for mode in ("cpu", "cuda")
        if row.cells[mode].status == PASS and not row.cells[mode].compared_with
    )
    summary = (
        f"{len(report.rows)} program(s): {counts[PASS]} pass, {counts[FAIL]} FAIL, "
        f"{counts[SKIPPED]} skipped, {counts[NA]} n/a"
    )
    if unverified:
        summary += f"; {unverified} passing run(s) had nothing to compare with"
    console.print(Text(summary, style="bold red" if counts[FAIL] else "bold"))
