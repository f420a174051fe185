"""The data a run produces: findings, the fixes they carry, and the text edits of a fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Applicability = Literal["safe", "unsafe"]


@dataclass(frozen=True, order=True)
class Location:
    """1-based row and 1-based column, as every output format reports them."""

    row: int
    column: int


@dataclass(frozen=True)
class Edit:
    """Replace the text between two offsets of the original source with ``content``.

    Offsets index the decoded source text; ``start``/``end`` are the same span as rows and
    columns so that JSON consumers can apply the edit without our offsets.
    """

    start_offset: int
    end_offset: int
    content: str
    start: Location
    end: Location
    # The span the rule replaced, before the characters written back unchanged were trimmed off
    # (devlint.fixes.LineIndex.edit): fixes conflict, and apply in order, by what they replace.
    held: tuple[int, int] | None = field(default=None, compare=False)
    # Of insertions at one offset by different fixes, the lower rank goes first.
    rank: int = field(default=0, compare=False)

    @property
    def span(self) -> tuple[int, int]:
        return (self.held[0], self.held[1]) if self.held is not None else (self.start_offset, self.end_offset)


@dataclass(frozen=True)
class ImportNames:
    """An import statement's names as spans of the text, so that any of them can be removed: the
    statement's whole lines (their line break included), each name's span (``a as b``, without
    its comma), and where the text after the last name ends (before a closing parenthesis)."""

    lines: tuple[int, int]
    names: tuple[tuple[int, int], ...]
    end: int
    # What the whole lines become when every name goes: nothing, or ``pass`` where the statement
    # is the only one of its block.
    emptied: str = ""


@dataclass(frozen=True)
class Release:
    """Uses of a name imports bind that a fix removes: the imports of the name go once every use
    of it is gone, by this fix alone or with the others applied in the same round."""

    name: str
    # Each import of the name: the statement and which of its names it is. One tuple, shared by
    # every release of the name in a file.
    bindings: tuple[tuple[ImportNames, int], ...]
    # The uses this fix removes, by their order among the name's uses in the file.
    uses: frozenset[int]
    # How many uses the name has in the file.
    count: int


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]
    # The uses of imported names this fix removes (devlint.engine.unused_imports).
    releases: tuple[Release, ...] = ()
    # Of ``edits``, those removing the imports this fix alone leaves unused: a consumer applying
    # this one fix gets them; ``devlint.fixes.apply_fixes`` decides them anew from ``releases``
    # for the fixes it applies together.
    unused_imports: tuple[Edit, ...] = ()


@dataclass
class Finding:
    code: str
    name: str
    message: str
    filename: str
    location: Location
    end_location: Location
    fix: Fix | None = None
    cell: int | None = None
    # The source line of the finding, for the rich output and for baseline fingerprints.
    source_line: str = ""
    noqa_row: int = field(default=0, compare=False)

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    def sort_key(self) -> tuple:
        return (self.filename, self.cell if self.cell is not None else -1, self.location, self.code)


@dataclass
class FileError:
    """A file that could not be checked: it is reported and the run goes on with exit status 2."""

    filename: str
    message: str
    row: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = self.filename
        if self.row is not None:
            where += f":{self.row}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.message}"
