"""Fixes as rules describe them (node replacements) and as they are applied (text edits).

A rule returns a ``FixPlan``: which nodes to replace with what. The context turns each plan into
text edits on the original source, so that a fix keeps every byte it does not touch: comments,
line endings, tabs, encoding. Edits that overlap are applied over several rounds, ruff-style.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from devlint.findings import Applicability, Edit, Fix, Finding, ImportNames, Location, Release

if TYPE_CHECKING:
    # Only named in annotations: applying edits and finding lines must not cost LibCST's import.
    import libcst as cst

_NEWLINE = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Replace:
    """Replace ``node`` (its source span) with a new node, literal text, or several statements.

    A tuple of strings replaces a statement with one statement per line, each indented like the
    original line.
    """

    node: cst.CSTNode
    new: cst.CSTNode | str | tuple[str, ...]
    # The replaced text runs on to the start of this later node: a guard that joins the guard
    # block right after its statement takes that block's header line in (devlint.rulekit.guards).
    until: cst.CSTNode | None = None
    # The replaced text runs on through this later node's last line, its line break included: a
    # statement's trailing comment goes with it (no node's span holds the comment of a block's
    # last line).
    through: cst.CSTNode | None = None
    # Fixes conflict over the node's whole lines and the line breaks on either side: of two
    # statements next to each other that get a guard, one is guarded in a round of `devlint fix`
    # and the other joins its block in the next, rather than both writing an identical block.
    whole_lines: bool = False
    # Fixes conflict over these nodes too (and all that lies between them and ``node``): a guard
    # waits for a fix of another rule that may turn the test of the `if` next to it into its own.
    holds: tuple[cst.CSTNode, ...] = ()


@dataclass(frozen=True)
class DeviceRef:
    """The expression a fix uses for the device, and whether it needs the module-level definition."""

    expr: str
    inserted: bool = False


@dataclass(frozen=True)
class HelperRef:
    """A module-level function a fix's new code calls (``name()``), and its definition (a ``def``
    at column 0 that says ``torch.``) where the file does not have it yet."""

    name: str
    definition: str | None = None

    @property
    def inserted(self) -> bool:
        return self.definition is not None


@dataclass
class FixPlan:
    message: str
    replacements: list[Replace]
    applicability: Applicability = "safe"
    device: DeviceRef | None = None
    # The new code calls a helper function of the module, defined once for the file.
    helper: HelperRef | None = None
    # The new code names `torch`: the file gets `import torch` if it lacks one.
    needs_torch: bool = False
    # The oldest torch (major, minor) that has every API the new code uses; a fix needing a newer
    # one than the project's `torch-version` is not offered.
    requires: tuple[int, int] = (0, 0)


class LineIndex:
    """Converts between (1-based row, 0-based column) positions and text offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
        # Each row's text, cut once: every finding on a row asks for it (its source line, the
        # indent of an edit), and N findings on one long line would copy it N times.
        self._lines: dict[int, str] = {}

    def offset(self, row: int, column: int) -> int:
        if row - 1 >= len(self.starts):
            return len(self.text)
        return self.starts[row - 1] + column

    def line(self, row: int) -> str:
        """The text of a 1-based row without its line ending."""
        line = self._lines.get(row)
        if line is None:
            if row - 1 >= len(self.starts):
                return ""
            start = self.starts[row - 1]
            end = self.starts[row] if row < len(self.starts) else len(self.text)
            line = self._lines[row] = self.text[start:end].rstrip("\r\n")
        return line

    def next_line(self, row: int) -> int:
        """The offset where the 1-based row after ``row`` starts (the text's end after the last)."""
        return self.starts[row] if row < len(self.starts) else len(self.text)

    def indent(self, row: int) -> str:
        line = self.line(row)
        return line[: len(line) - len(line.lstrip(" \t\f"))]

    def around(self, first: int, last: int) -> tuple[int, int]:
        """Rows ``first`` to ``last`` (1-based) with the line break before them and their own."""
        start = max(self.starts[first - 1] - 1, 0) if first - 1 < len(self.starts) else len(self.text)
        end = self.starts[last] if last < len(self.starts) else len(self.text)
        return start, end

    def location(self, offset: int) -> Location:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return Location(lo + 1, offset - self.starts[lo] + 1)

    def edit(self, start: int, end: int, content: str) -> Edit:
        """The edit replacing ``[start, end)`` with ``content``, less what it would write back
        unchanged at either end: every consumer (the CLI's JSON, the editor) gets edits that
        touch only the characters that change, so an editor's marks on the rest stay."""
        held = (start, end)
        start, end, content = trimmed(self.text, start, end, content)
        return Edit(start, end, content, self.location(start), self.location(end), None if held == (start, end) else held)


def common_prefix(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` share at their start."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def trimmed(text: str, start: int, end: int, content: str) -> tuple[int, int, str]:
    """``text[start:end] -> content`` without the characters both sides share at either end,
    never splitting a CRLF of ``text`` (an editor cannot place a position between the two)."""
    part = text[start:end]
    head = common_prefix(part, content)
    tail = common_prefix(part[head:][::-1], content[head:][::-1])
    while head and text[start + head - 1] == "\r" and start + head < len(text) and text[start + head] == "\n":
        head -= 1
    while tail and text[end - tail] == "\n" and end - tail > 0 and text[end - tail - 1] == "\r":
        tail -= 1
    return start + head, end - tail, content[head : len(content) - tail]


def applicable(finding: Finding, unsafe: bool) -> bool:
    return finding.fix is not None and (finding.fix.applicability == "safe" or unsafe)


def apply_fixes(text: str, fixes: list[Fix]) -> tuple[str, int]:
    """Apply every fix whose edits do not overlap an earlier accepted fix.

    Returns the new text and how many fixes were applied; the caller re-lints and calls again
    for the fixes that were held back. Identical edits shared by several fixes (the one device
    definition they all need) are applied once.
    """
    accepted: list[Edit] = []
    taken = _Spans()
    seen: set[tuple[int, int, str]] = set()
    applied = 0
    releasing: list[Fix] = []
    for fix in fixes:
        own = [e for e in fix.edits if e not in fix.unused_imports] if fix.unused_imports else fix.edits
        new_edits = [e for e in own if (e.start_offset, e.end_offset, e.content) not in seen]
        if any(taken.overlaps(e) for e in new_edits):
            continue
        for e in new_edits:
            seen.add((e.start_offset, e.end_offset, e.content))
            accepted.append(e)
            taken.add(e)
        applied += 1
        if fix.releases:
            releasing.append(fix)
    # The imports the applied fixes leave unused together, decided once they are all known:
    # two fixes that each remove one of a name's two uses remove its import between them.
    removals = unused_import_edits(text, [release for fix in releasing for release in fix.releases])
    if removals:
        # Against the text the accepted edits replace, not the spans they hold: a guard holds
        # the line break before its statement, the last character of an import line above it.
        written = _Spans()
        for edit in accepted:
            written.add(dataclasses.replace(edit, held=None))
        for edit in removals:
            if not written.overlaps(edit):
                accepted.append(edit)
                written.add(edit)
    # By the text each edit replaces first: the span it holds (``Edit.held``) may reach before an
    # earlier edit of the same fix. Insertions at one offset go by the span they held, then by
    # their rank (a module's imports, then its definitions, then its functions), then in the
    # order in which fixes asked for them.
    ordered = sorted(enumerate(accepted), key=lambda pair: (pair[1].start_offset, pair[1].end_offset, *pair[1].span, pair[1].rank, pair[0]))
    pieces: list[str] = []
    cursor = 0
    for _, edit in ordered:
        pieces.append(text[cursor : edit.start_offset])
        pieces.append(edit.content)
        cursor = edit.end_offset
    pieces.append(text[cursor:])
    return "".join(pieces), applied


def unused_import_edits(text: str, releases: list[Release], lines: LineIndex | None = None) -> list[Edit]:
    """The edits removing every imported name all of whose uses ``releases`` remove together;
    ``lines``: the text's line index, for a caller that asks for each of many fixes."""
    if not releases:
        return []
    # By the name and its first import: the same for every release of one name, and cheap to
    # compare however many imports the name has.
    removed: dict[tuple[str, tuple[ImportNames, int]], set[int]] = {}
    first: dict[tuple[str, tuple[ImportNames, int]], Release] = {}
    for release in releases:
        key = (release.name, release.bindings[0])
        removed.setdefault(key, set()).update(release.uses)
        first.setdefault(key, release)
    going: dict[ImportNames, set[int]] = {}
    for key, uses in removed.items():
        if len(uses) >= first[key].count:
            for statement, index in first[key].bindings:
                going.setdefault(statement, set()).add(index)
    if not going:
        return []
    lines = LineIndex(text) if lines is None else lines
    return [lines.edit(*without_names(text, statement, indexes)) for statement, indexes in going.items()]


def without_names(text: str, statement: ImportNames, going: set[int]) -> tuple[int, int, str]:
    """The span of ``statement`` and its text with the names at ``going`` removed: its whole
    lines when every name goes, else the names that stay, each followed by the separator that
    followed it (the last by what followed the last name: a trailing comma, a line break before
    the parenthesis; one a line, its own comment kept), so the layout stays and no comma is left
    dangling."""
    names = statement.names
    kept = [i for i in range(len(names)) if i not in going]
    if not kept:
        return statement.lines[0], statement.lines[1], statement.emptied
    tail = text[names[-1][1] : statement.end]
    pieces: list[str] = []
    for position, i in enumerate(kept):
        pieces.append(text[names[i][0] : names[i][1]])
        after = text[names[i][1] : names[i + 1][0]] if i + 1 < len(names) else tail
        if position == len(kept) - 1 and i + 1 < len(names):
            # The last name now: its own line's end (a comment on it), then the closing
            # parenthesis' indentation; on one line, what followed the last name.
            after = after[: after.rfind("\n") + 1] + tail[tail.rfind("\n") + 1 :] if "\n" in after and "\n" in tail else tail
        pieces.append(after)
    return names[0][0], statement.end, "".join(pieces)


class _Spans:
    """The spans of the edits accepted so far, sorted by start: an edit is checked against the
    few that start near it, not against every accepted edit (a file's fixes cost their number,
    not its square)."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._edits: list[Edit] = []
        self._longest = 0

    def add(self, edit: Edit) -> None:
        start, end = edit.span
        at = bisect.bisect_right(self._starts, start)
        self._starts.insert(at, start)
        self._edits.insert(at, edit)
        self._longest = max(self._longest, end - start)

    def overlaps(self, edit: Edit) -> bool:
        start, end = edit.span
        # Only a span starting at most ``_longest`` before this one can reach into it.
        low = bisect.bisect_left(self._starts, start - self._longest)
        high = bisect.bisect_right(self._starts, end)
        return any(_overlaps(edit, other) for other in self._edits[low:high])


def _overlaps(a: Edit, b: Edit) -> bool:
    (a_start, a_end), (b_start, b_end) = a.span, b.span
    if a_start == a_end or b_start == b_end:
        # Two insertions at one point, or an insertion strictly inside a replacement.
        return b_start < a_start < b_end or a_start < b_start < a_end
    return a_start < b_end and b_start < a_end
