"""GitHub Actions workflow commands: one `::error` annotation per finding.

Escaping follows GitHub's toolkit: in the message `%`, CR and LF are percent-encoded; in the
properties `:` and `,` are too. GitHub drops columns on an annotation that spans several lines,
so those get no `col`/`endColumn`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

from devlint.findings import FileError, Finding
from devlint.formats import RunReport
from devlint.formats.baseline import relative_to


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(properties: list[tuple[str, object]], message: str) -> str:
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties)
    return f"::error {props}::{escape_data(message)}"


def _finding(finding: Finding, path: str) -> str:
    if finding.cell is not None:
        # Rows count within the cell; they would point at the wrong line of the .ipynb JSON.
        where = f"cell {finding.cell}, line {finding.location.row}: "
        return command([("file", path), ("title", finding.code)], where + finding.message)
    start, end = finding.location, finding.end_location
    properties: list[tuple[str, object]] = [("file", path), ("line", start.row)]
    if start.row == end.row:
        properties += [("col", start.column), ("endLine", end.row), ("endColumn", end.column)]
    else:
        properties += [("endLine", end.row)]
    return command(properties + [("title", finding.code)], finding.message)


def _error(error: FileError, path: str) -> str:
    properties: list[tuple[str, object]] = [("file", path)]
    if error.row is not None:
        properties.append(("line", error.row))
        if error.column is not None:
            properties.append(("col", error.column))
    return command(properties + [("title", "devlint")], error.message)


def write(report: RunReport, out: TextIO) -> None:
    path_of = relative_to(Path(os.getcwd()))
    for error in report.errors:
        out.write(_error(error, path_of(error.filename)) + "\n")
    for finding in report.findings:
        out.write(_finding(finding, path_of(finding.filename)) + "\n")
