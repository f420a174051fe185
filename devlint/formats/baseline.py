"""Baselines: record today's findings, later report only the new ones.

A finding's fingerprint is a hash of its file (relative path), its code, its source line with
whitespace normalised, and its place among the findings of that file with the same code and line
text (the first, the second, ...). Line numbers are left out, so code inserted above a finding does not make it new; editing the
line itself does. The GitLab Code Quality format uses the same fingerprints.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from devlint.findings import Finding

FORMAT_VERSION = 1


class BaselineError(Exception):
    """A baseline file that cannot be read or written; the message names the file."""


def relative_to(root: Path) -> Callable[[str], str]:
    """``filename`` as a POSIX path relative to ``root`` (absolute when on another drive)."""
    base = os.path.abspath(root)

    def convert(filename: str) -> str:
        absolute = os.path.abspath(filename)
        try:
            return Path(os.path.relpath(absolute, base)).as_posix()
        except ValueError:
            return Path(absolute).as_posix()

    return convert


def normalise(line: str) -> str:
    return " ".join(line.split())


def fingerprints(findings: list[Finding], path_of: Callable[[str], str]) -> list[str]:
    """One fingerprint per finding, in the order given."""
    seen: Counter[tuple[str, str, str]] = Counter()
    result = [""] * len(findings)
    for index in sorted(range(len(findings)), key=lambda i: findings[i].sort_key()):
        finding = findings[index]
        path = path_of(finding.filename)
        key = (path, finding.code, normalise(finding.source_line))
        occurrence = seen[key]
        seen[key] += 1
        digest = hashlib.sha256("\0".join((*key, str(occurrence))).encode("utf-8", "surrogateescape"))
        result[index] = digest.hexdigest()[:32]
    return result


@dataclass(frozen=True)
class Baseline:
    path: Path
    known: frozenset[str]

    def new(self, findings: list[Finding]) -> list[Finding]:
        prints = fingerprints(findings, relative_to(self.path.parent))
        return [finding for finding, fp in zip(findings, prints) if fp not in self.known]

    def stale(self, findings: list[Finding]) -> int:
        """How many recorded entries match none of ``findings``: fixed, or their line edited."""
        return len(self.known - set(fingerprints(findings, relative_to(self.path.parent))))


def load(path: Path) -> Baseline:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise BaselineError(f"{path}: cannot read baseline: {error.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise BaselineError(f"{path}: not a devlint baseline (invalid JSON: {error})") from None
    entries = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("devlint-baseline") != FORMAT_VERSION or not isinstance(entries, list):
        raise BaselineError(f"{path}: not a devlint baseline (write one with --write-baseline)")
    known = [entry.get("fingerprint") for entry in entries if isinstance(entry, dict)]
    if len(known) != len(entries) or not all(isinstance(value, str) for value in known):
        raise BaselineError(f"{path}: every baseline entry needs a string `fingerprint`")
    return Baseline(path, frozenset(known))


def write(path: Path, findings: list[Finding]) -> None:
    """Records ``findings``; paths in the file are relative to the folder that holds it."""
    path_of = relative_to(path.parent)
    entries = [
        {
            "fingerprint": fp,
            "code": finding.code,
            "path": path_of(finding.filename),
            "line": finding.location.row,
            "message": finding.message,
        }
        for finding, fp in zip(findings, fingerprints(findings, path_of))
    ]
    text = json.dumps({"devlint-baseline": FORMAT_VERSION, "findings": entries}, indent=2, ensure_ascii=False) + "\n"
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise BaselineError(f"{path}: cannot write baseline: {error.strerror}") from None
