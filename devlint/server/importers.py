"""Which files of its project a document reads: the constants it imports from other modules
(devlint.run.project_imports) come from disk, so a change of one of those files, saved in the
editor or reported by its file watcher, must have the document checked again. Runs in the
worker (a notebook's program is built by the engine's side)."""

from __future__ import annotations

from devlint.run.notebook import NotebookError
from devlint.run.project_imports import imported_constants
from devlint.server.cells import build_program
from devlint.server.model import Source


def reads(source: Source) -> frozenset[str]:
    """Every file reading the document's imported constants consulted (or looked for)."""
    if source.notebook:
        try:
            text = build_program(source.texts).text
        except NotebookError:
            return frozenset()
    else:
        text = source.texts[0] or ""
    _, dependencies = imported_constants(text, source.filename, source.root)
    return frozenset(path for path, _ in dependencies.files) if dependencies is not None else frozenset()
