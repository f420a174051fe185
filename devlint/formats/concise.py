"""``path:line:col: CODE message``, one finding a line."""

from __future__ import annotations

from typing import TextIO

from devlint.formats import RunReport, where


def write(report: RunReport, out: TextIO) -> None:
    for finding in report.findings:
        out.write(f"{where(finding)}: {finding.code} {finding.message}\n")
