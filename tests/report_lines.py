"""The lines of devlint's human-readable output that are findings, without the summary that
`full` and `concise` end with (``Found N findings ...``, ``Fixed N findings.``, ``All checks passed!``)."""

from __future__ import annotations

SUMMARY_STARTS = ("Found ", "Fixed ", "All checks passed!")


def finding_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line and not line.startswith(SUMMARY_STARTS)]
