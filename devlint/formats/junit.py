"""JUnit XML: one test suite; a failing test case per finding, a passing one per clean file, an
erroring one per file that could not be checked."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import TextIO

from devlint.formats import RunReport, where

# Characters XML 1.0 cannot carry at all, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def build(report: RunReport) -> ET.Element:
    flagged = {f.filename for f in report.findings} | {e.filename for e in report.errors}
    clean = [name for name in report.files if name not in flagged]
    tests = len(report.findings) + len(report.errors) + len(clean)
    counts = {
        "tests": str(tests),
        "failures": str(len(report.findings)),
        "errors": str(len(report.errors)),
        "skipped": "0",
    }
    root = ET.Element("testsuites", {"name": "devlint", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": "devlint", **counts})
    for error in report.errors:
        case = ET.SubElement(suite, "testcase", {"classname": _clean(error.filename), "name": _clean(str(error))})
        node = ET.SubElement(case, "error", {"message": _clean(error.message), "type": "devlint.error"})
        node.text = _clean(str(error))
    for finding in report.findings:
        location = where(finding)
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": _clean(finding.filename),
                "name": _clean(f"{finding.code} {location}"),
                "file": _clean(finding.filename),
                "line": str(finding.location.row),
            },
        )
        node = ET.SubElement(case, "failure", {"message": _clean(f"{finding.code} {finding.message}"), "type": finding.code})
        node.text = _clean(f"{location}: {finding.code} {finding.message}\n{finding.source_line}")
    for name in clean:
        ET.SubElement(suite, "testcase", {"classname": _clean(name), "name": _clean(name), "file": _clean(name)})
    return root


def write(report: RunReport, out: TextIO) -> None:
    root = build(report)
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")
