"""GitLab Code Quality report (JSON): the `codequality` artifact a merge request widget reads.

Fingerprints are the baseline's (see devlint.formats.baseline): stable across runs and across edits that
only shift lines, so GitLab tells new findings from old ones.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, TextIO

from devlint.formats import RunReport
from devlint.formats.baseline import fingerprints, relative_to


def issues(report: RunReport) -> list[dict[str, Any]]:
    path_of = relative_to(Path(os.getcwd()))
    found: list[dict[str, Any]] = []
    for finding, fingerprint in zip(report.findings, fingerprints(report.findings, path_of)):
        cell = f" (cell {finding.cell})" if finding.cell is not None else ""
        found.append(
            {
                "type": "issue",
                "description": f"{finding.code} {finding.message}{cell}",
                "check_name": finding.code,
                "fingerprint": fingerprint,
                "severity": "major",
                "categories": ["Compatibility"],
                "location": {
                    "path": path_of(finding.filename),
                    "lines": {"begin": finding.location.row, "end": finding.end_location.row},
                },
            }
        )
    for error in report.errors:
        path = path_of(error.filename)
        found.append(
            {
                "type": "issue",
                "description": f"devlint could not check this file: {error.message}",
                "check_name": "devlint-error",
                "fingerprint": hashlib.sha256(f"{path}\0{error.message}".encode("utf-8", "surrogateescape")).hexdigest()[:32],
                "severity": "critical",
                "location": {"path": path, "lines": {"begin": error.row or 1}},
            }
        )
    return found


def write(report: RunReport, out: TextIO) -> None:
    json.dump(issues(report), out, indent=2, ensure_ascii=False)
    out.write("\n")
