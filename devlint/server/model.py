"""What the server sends to a worker and gets back: plain, picklable data.

A document is one or more texts: a Python file is one; a notebook is one per cell (``None`` for
a cell that is not Python code). Offsets, rows and columns count code points within one text.
"""

from __future__ import annotations

from dataclasses import dataclass

from devlint.findings import Finding
from devlint.run.config import FileSettings


@dataclass(frozen=True)
class Source:
    filename: str
    texts: tuple[str | None, ...]
    notebook: bool
    settings: FileSettings
    # The project root: the constants the document imports from its project's modules are read
    # from disk there (devlint.run.project_imports), the document itself from the buffer.
    root: str = ""


@dataclass(frozen=True)
class Change:
    """Replace ``[start, end)`` of text number ``text`` with ``content``."""

    text: int
    start: int
    end: int
    content: str


@dataclass(frozen=True)
class Item:
    """One finding as the editor shows it: in text ``text``, with the changes of its fix (empty:
    no fix) and of the `# noqa` comment that silences it (empty: already silenced)."""

    finding: Finding
    text: int
    fix: tuple[Change, ...]
    noqa: tuple[Change, ...]


@dataclass(frozen=True)
class Problem:
    """Why a document has no findings of its own: it does not parse (``syntax``), or devlint
    failed on it."""

    message: str
    text: int
    row: int | None = None
    column: int | None = None
    syntax: bool = False


@dataclass(frozen=True)
class Analysis:
    items: tuple[Item, ...] = ()
    problem: Problem | None = None
