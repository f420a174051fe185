"""One version of an open document, frozen at the moment it is sent to be checked, and the
result of checking it. Everything shown to the editor is computed against a snapshot, so an
answer always matches the text it was computed from."""

from __future__ import annotations

from dataclasses import dataclass

from devlint.server.model import Analysis, Source
from devlint.server.textlines import Lines


@dataclass(frozen=True)
class Snapshot:
    key: str  # the document's URI (the notebook's, for a notebook)
    version: int
    uris: tuple[str, ...]  # per text: the file, or each cell
    versions: tuple[int, ...]
    lines: tuple[Lines | None, ...]  # None: a cell that is not Python
    source: Source

    def text_of(self, uri: str) -> int | None:
        """The index of the text with this URI (a cell of a notebook), if it is one."""
        try:
            return self.uris.index(uri)
        except ValueError:
            return None


@dataclass(frozen=True)
class Checked:
    snapshot: Snapshot
    analysis: Analysis
