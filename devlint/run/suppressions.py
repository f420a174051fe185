"""Suppressions: `# noqa` comments, `# devlint: skip-file`, and `--add-noqa`, which writes them.

Rules (documented in the README):
- `# devlint: skip-file` skips a file when it is a comment line of the file's leading block of
  comments and blank lines, before the first line of code (a module docstring is code).
- `# noqa` (all codes) or `# noqa: DEV101, DEV301` (those codes; commas and/or spaces) is a
  comment on the finding's line. Only real comments count, never text inside a string. For a
  finding on a line that continues into the next one (a backslash, or a string that spans lines),
  the comment goes at the end of the last line of that stretch, where a comment can be written.
"""

from __future__ import annotations

import ast
import io
from bisect import bisect_right
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from devlint.findings import Finding
from devlint.fixes import LineIndex
from devlint.run.source import decode
from devlint.run.writer import write_atomic

SKIP_FILE = re.compile(r"#\s*devlint\s*:\s*skip-file\b", re.IGNORECASE)
NOQA = re.compile(
    r"#\s*noqa(?![\w-])(?:\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:(?:\s*,\s*|\s+)[A-Z]+[0-9]+)*))?",
    re.IGNORECASE,
)
_HINT = re.compile("noqa", re.IGNORECASE)
_SEPARATOR = re.compile(r"[\s,]+")
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


def skip_file(text: str) -> bool:
    if "skip-file" not in text:
        return False
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("#"):
            return False
        if SKIP_FILE.match(stripped):
            return True
    return False


def noqa_codes(comment: str) -> frozenset[str] | None:
    """The codes a comment suppresses; an empty set means all of them; None: no noqa."""
    match = NOQA.search(comment)
    if match is None:
        return None
    codes = match.group("codes")
    return frozenset(code.upper() for code in _SEPARATOR.split(codes) if code) if codes else frozenset()


@dataclass
class Comments:
    """The comments of a file by row, and which row carries the comment for a row that continues."""

    lines: LineIndex
    by_row: dict[int, tuple[int, str]] = field(default_factory=dict)  # row -> (0-based column, text)
    continues: dict[int, int] = field(default_factory=dict)
    # Rows after a tokenizer error are read line by line (a string's text could pass for a comment).
    exact_until: int | None = None

    def target(self, row: int) -> int:
        while row in self.continues:  # always to a later row: this ends
            row = self.continues[row]
        return row

    def comment(self, row: int) -> tuple[int, str] | None:
        if row in self.by_row or self.exact_until is None or row <= self.exact_until:
            return self.by_row.get(row)
        line = self.lines.line(row)
        match = NOQA.search(line)
        return (match.start(), line[match.start():]) if match else None

    def suppresses(self, finding: Finding) -> bool:
        found = self.comment(self.target(finding.noqa_row or finding.location.row))
        codes = noqa_codes(found[1]) if found is not None else None
        return codes is not None and (not codes or finding.code in codes)


def scan(text: str) -> Comments:
    comments = Comments(LineIndex(text))
    fstrings: list[int] = []
    last_row = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            kind, start, end = token.type, token.start, token.end
            last_row = end[0]
            if kind == tokenize.COMMENT:
                comments.by_row[start[0]] = (start[1], token.string)
            elif kind == tokenize.STRING and end[0] > start[0]:
                _spans(comments, start[0], end[0])
            elif kind == _FSTRING_START:
                fstrings.append(start[0])
            elif kind == _FSTRING_END and fstrings:
                first = fstrings.pop()
                if end[0] > first:
                    _spans(comments, first, end[0])
    except (tokenize.TokenError, SyntaxError):
        comments.exact_until = last_row
    lines = comments.lines
    for row in range(1, len(lines.starts) + 1):
        if row not in comments.continues and row not in comments.by_row and lines.line(row).endswith("\\"):
            comments.continues[row] = row + 1
    return comments


def _spans(comments: Comments, first: int, last: int) -> None:
    for row in range(first, last):
        comments.continues.setdefault(row, last)


def apply_noqa(text: str, findings: list[Finding], starts: tuple[int, ...] = ()) -> list[Finding]:
    """The findings that no `# noqa` comment suppresses. Tokenizes only files that have both
    findings and the word noqa; ``starts``: where top-level statements begin in ``text``
    (``statement_starts``), for a caller that read CPython's tree of it: then only the stretches
    between them that hold a finding are tokenized."""
    if not findings or not _HINT.search(text):
        return findings
    comments = _scan_around(text, starts, {finding.noqa_row or finding.location.row for finding in findings})
    return [finding for finding in findings if not comments.suppresses(finding)]


def statement_starts(tree: ast.Module) -> tuple[int, ...]:
    """The rows at which CPython's ``tree`` has a top-level statement begin (at its first
    decorator) on a row no earlier statement reaches: there the tokenizer stands at the start of
    a line, outside any string or bracket, and column 0 closes every indented block."""
    rows: list[int] = []
    reached = 0
    for stmt in tree.body:
        decorators = getattr(stmt, "decorator_list", None)
        first = decorators[0].lineno if decorators else stmt.lineno
        if first > reached:
            rows.append(first)
        reached = max(reached, stmt.end_lineno or first)
    return tuple(rows)


def _scan_around(text: str, starts: tuple[int, ...], rows: set[int]) -> Comments:
    """What ``scan(text)`` gives for ``rows`` and the rows they continue to: only the stretches
    of ``text`` between ``starts`` that hold one of ``rows`` are tokenized, each on its own.

    A stretch starts where the tokenizer stands at the start of a line outside any string or
    bracket, and a line that goes on (a string, a backslash) never runs into the next top-level
    statement, so a stretch tokenizes alike alone or in the text. A stretch the tokenizer cannot
    read, or a text with a lone carriage return (the tokenizer and ``LineIndex`` count its rows
    differently), is scanned whole."""
    if not starts or ("\r" in text and "\r" in text.replace("\r\n", "")):
        return scan(text)
    merged = Comments(LineIndex(text))
    lines = merged.lines
    bounds = [1, *(row for row in starts if row > 1), len(lines.starts) + 1]
    holding = sorted({bisect_right(bounds, row) - 1 for row in rows if 1 <= row < bounds[-1]})
    for first, after in ((bounds[i], bounds[i + 1]) for i in holding):
        part = scan(text[lines.starts[first - 1] : lines.next_line(after - 1)])
        if part.exact_until is not None:
            return scan(text)
        shift = first - 1
        merged.by_row.update((shift + row, found) for row, found in part.by_row.items())
        merged.continues.update((shift + row, shift + to) for row, to in part.continues.items())
    return merged


def add_noqa(text: str, findings: list[Finding]) -> tuple[str, int]:
    """``text`` with `# noqa: CODE` on every line that has a finding, merged into a noqa comment
    already there; returns the new text and the number of lines changed."""
    comments = scan(text)
    wanted: dict[int, set[str]] = {}
    for finding in findings:
        wanted.setdefault(noqa_target(comments, finding), set()).add(finding.code)
    edits = [edit for row, codes in wanted.items() if (edit := noqa_edit(comments, row, codes)) is not None]
    for begin, end, content in sorted(edits, reverse=True):
        text = text[:begin] + content + text[end:]
    return text, len(edits)


def noqa_target(comments: Comments, finding: Finding) -> int:
    """The row whose comment suppresses ``finding``."""
    return comments.target(finding.noqa_row or finding.location.row)


def noqa_edit(comments: Comments, row: int, codes: set[str]) -> tuple[int, int, str] | None:
    """The edit (start and end offsets, new text) that makes the comment of ``row`` suppress
    ``codes``; None when it already does (or the row is past the end)."""
    lines = comments.lines
    if row > len(lines.starts):
        return None
    start = lines.starts[row - 1]
    line = lines.line(row)
    found = comments.comment(row)
    match = NOQA.search(found[1]) if found is not None else None
    if found is not None and match is not None:
        if match.group("codes") is None:
            return None  # a bare noqa already covers every code
        have = noqa_codes(found[1]) or frozenset()
        if codes <= have:
            return None
        at = start + found[0]
        return at + match.start("codes"), at + match.end("codes"), ", ".join(sorted(have | codes))
    body = line.rstrip(" \t")
    return start + len(body), start + len(line), f"  # noqa: {', '.join(sorted(codes))}"


def add_noqa_to_file(path: Path, findings: list[Finding]) -> int:
    """Writes the noqa comments into ``path`` atomically; raises SourceError or WriteError."""
    data = path.read_bytes()
    decoded = decode(data)
    text, count = add_noqa(decoded.text, findings)
    if count:
        write_atomic(path, decoded.encode(text), data)
    return count
