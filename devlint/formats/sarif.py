"""SARIF 2.1.0 for GitHub code scanning: every rule with its documentation, one result per finding.

Locations are relative to the current folder (the repository root in CI) under the
`%SRCROOT%` base; columns count code points (`columnKind`), as devlint's do.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from devlint import __version__
from devlint.docs import rule_markdown
from devlint.findings import FileError, Finding
from devlint.formats import RunReport
from devlint.formats.baseline import fingerprints, relative_to
from devlint.registry import all_rules
from devlint.rule import Rule

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/devlint/"
SRCROOT = "%SRCROOT%"
LEVEL = "error"


def _first_sentence(text: str) -> str:
    sentence = text.strip().split(". ")[0].rstrip(".")
    return sentence + "."


def rule_descriptor(rule: type[Rule]) -> dict[str, Any]:
    markdown = rule_markdown(rule)
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": _first_sentence(rule.what)},
        "fullDescription": {"text": f"{rule.what} {rule.why}".strip()},
        "help": {"text": markdown, "markdown": markdown},
        "defaultConfiguration": {"level": LEVEL},
        "properties": {"tags": ["portability", "pytorch"], "fix": rule.fix_availability},
    }


def artifact_location(path: str) -> dict[str, str]:
    if path.startswith("../") or path.startswith("/"):
        return {"uri": Path(os.path.abspath(path)).as_uri()}
    return {"uri": quote(path), "uriBaseId": SRCROOT}


def _result(finding: Finding, index: int, path: str, fingerprint: str) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": artifact_location(path)}
    message = finding.message
    if finding.cell is None:
        physical["region"] = {
            "startLine": finding.location.row,
            "startColumn": finding.location.column,
            "endLine": finding.end_location.row,
            "endColumn": finding.end_location.column,
        }
    else:
        # Rows count within the notebook cell, not the .ipynb file: say so in words instead.
        message = f"{message} (cell {finding.cell}, line {finding.location.row})"
    return {
        "ruleId": finding.code,
        "ruleIndex": index,
        "level": LEVEL,
        "message": {"text": message},
        "locations": [{"physicalLocation": physical}],
        "partialFingerprints": {"devlint/v1": fingerprint},
    }


def _notification(error: FileError, path: str) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": artifact_location(path)}
    if error.row is not None:
        physical["region"] = {"startLine": error.row, **({"startColumn": error.column} if error.column else {})}
    return {"level": "error", "message": {"text": error.message}, "locations": [{"physicalLocation": physical}]}


def sarif_log(report: RunReport) -> dict[str, Any]:
    cwd = Path(os.getcwd())
    path_of = relative_to(cwd)
    rules = list(all_rules())
    index = {rule.code: i for i, rule in enumerate(rules)}
    prints = fingerprints(report.findings, path_of)
    results = [
        _result(finding, index[finding.code], path_of(finding.filename), fp)
        for finding, fp in zip(report.findings, prints)
    ]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "devlint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": [rule_descriptor(rule) for rule in rules],
                    }
                },
                "originalUriBaseIds": {SRCROOT: {"uri": cwd.as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "invocations": [
                    {
                        "executionSuccessful": not report.errors,
                        "toolExecutionNotifications": [
                            _notification(error, path_of(error.filename)) for error in report.errors
                        ],
                    }
                ],
                "results": results,
            }
        ],
    }


def write(report: RunReport, out: TextIO) -> None:
    json.dump(sarif_log(report), out, indent=2, ensure_ascii=False)
    out.write("\n")
