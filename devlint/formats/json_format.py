"""A JSON array of findings, with fixes as text edits (1-based rows and columns)."""

from __future__ import annotations

import json
from typing import Any, TextIO

from devlint.findings import Finding, Location
from devlint.formats import RunReport


def _location(location: Location) -> dict[str, int]:
    return {"row": location.row, "column": location.column}


def finding_to_dict(finding: Finding) -> dict[str, Any]:
    fix = None
    if finding.fix is not None:
        fix = {
            "applicability": finding.fix.applicability,
            "message": finding.fix.message,
            "edits": [
                {"content": e.content, "location": _location(e.start), "end_location": _location(e.end)}
                for e in finding.fix.edits
            ],
        }
    return {
        "code": finding.code,
        "name": finding.name,
        "message": finding.message,
        "filename": finding.filename,
        "location": _location(finding.location),
        "end_location": _location(finding.end_location),
        "fix": fix,
        "cell": finding.cell,
        "noqa_row": finding.noqa_row,
    }


def write(report: RunReport, out: TextIO) -> None:
    json.dump([finding_to_dict(f) for f in report.findings], out, indent=2, ensure_ascii=False)
    out.write("\n")
