"""The editor's view of each open file: text documents and notebooks, kept in step with the
client's open/change/close notifications, with the version the client gave each state."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from lsprotocol import types

from devlint.server.textlines import Lines, apply_change

PYTHON_LANGUAGES = frozenset({"python", "ipython"})


@dataclass
class TextDoc:
    uri: str
    text: str
    version: int
    language: str

    @cached_property
    def lines(self) -> Lines:
        return Lines.of(self.text)

    def change(self, version: int, changes: Sequence[types.TextDocumentContentChangeEvent], encoding: str) -> None:
        for change in changes:
            self.text = apply_change(self.text, change, encoding)
        self.version = version
        self.__dict__.pop("lines", None)


@dataclass
class NotebookCell:
    kind: types.NotebookCellKind
    doc: TextDoc

    @property
    def python(self) -> bool:
        return self.kind == types.NotebookCellKind.Code and self.doc.language in PYTHON_LANGUAGES


@dataclass
class Notebook:
    uri: str
    version: int
    cells: list[NotebookCell]
    # Cells taken out of the array but not closed: a move is a removal and a later insertion.
    detached: dict[str, NotebookCell] = field(default_factory=dict)


@dataclass
class Documents:
    """Every open text document and notebook, by URI; a cell's text lives in its notebook."""

    encoding: str = types.PositionEncodingKind.Utf16
    texts: dict[str, TextDoc] = field(default_factory=dict)
    notebooks: dict[str, Notebook] = field(default_factory=dict)

    # -- text documents --------------------------------------------------------------------

    def open_text(self, item: types.TextDocumentItem) -> TextDoc:
        doc = TextDoc(item.uri, item.text, item.version, item.language_id)
        self.texts[item.uri] = doc
        return doc

    def change_text(self, params: types.DidChangeTextDocumentParams) -> TextDoc | None:
        doc = self.texts.get(params.text_document.uri)
        if doc is not None:
            doc.change(params.text_document.version, params.content_changes, self.encoding)
        return doc

    def close_text(self, uri: str) -> TextDoc | None:
        return self.texts.pop(uri, None)

    # -- notebooks -------------------------------------------------------------------------

    def open_notebook(self, params: types.DidOpenNotebookDocumentParams) -> Notebook:
        items = {item.uri: item for item in params.cell_text_documents}
        cells = [_cell(cell.kind, items.get(cell.document), cell.document) for cell in params.notebook_document.cells]
        notebook = Notebook(params.notebook_document.uri, params.notebook_document.version, cells)
        self.notebooks[notebook.uri] = notebook
        return notebook

    def change_notebook(self, params: types.DidChangeNotebookDocumentParams) -> tuple[Notebook | None, list[str]]:
        """Applies the change; returns the notebook and the URIs of the cells it closed."""
        notebook = self.notebooks.get(params.notebook_document.uri)
        if notebook is None:
            return None, []
        notebook.version = params.notebook_document.version
        changes = params.change.cells
        closed: list[str] = []
        if changes is not None:
            if changes.structure is not None:
                closed = self._restructure(notebook, changes.structure)
            by_uri = {cell.doc.uri: cell for cell in notebook.cells}
            for data in changes.data or ():
                if data.document in by_uri:
                    by_uri[data.document].kind = data.kind
            for content in changes.text_content or ():
                cell = by_uri.get(content.document.uri)
                if cell is not None:
                    cell.doc.change(content.document.version, content.changes, self.encoding)
        return notebook, closed

    @staticmethod
    def _restructure(notebook: Notebook, structure: types.NotebookDocumentCellChangeStructure) -> list[str]:
        opened = {item.uri: item for item in structure.did_open or ()}
        known = {**notebook.detached, **{cell.doc.uri: cell for cell in notebook.cells}}
        array = structure.array
        inserted = [
            known[cell.document]
            if cell.document in known and cell.document not in opened
            else _cell(cell.kind, opened.get(cell.document), cell.document)
            for cell in array.cells or ()
        ]
        removed = notebook.cells[array.start : array.start + array.delete_count]
        notebook.cells[array.start : array.start + array.delete_count] = inserted
        remaining = {cell.doc.uri for cell in notebook.cells}
        notebook.detached.update((cell.doc.uri, cell) for cell in removed if cell.doc.uri not in remaining)
        closed = [doc.uri for doc in structure.did_close or () if doc.uri not in remaining]
        for uri in closed:
            notebook.detached.pop(uri, None)
        for uri in remaining:
            notebook.detached.pop(uri, None)
        return closed

    def close_notebook(self, uri: str) -> Notebook | None:
        return self.notebooks.pop(uri, None)


def _cell(kind: types.NotebookCellKind, item: types.TextDocumentItem | None, uri: str) -> NotebookCell:
    """A cell; one whose text the client did not send (it is not Python) is kept empty."""
    if item is None:
        return NotebookCell(kind, TextDoc(uri, "", 0, ""))
    return NotebookCell(kind, TextDoc(uri, item.text, item.version, item.language_id))
