"""pygls wiring: which LSP message calls which Session method, and serving over stdio."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Generator
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from devlint import __version__
from devlint.server.actions import FIX_ALL
from devlint.server.session import Session

NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage(language="python")])]
)
CODE_ACTIONS = types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=True
)


class Protocol(LanguageServerProtocol):
    """pygls keeps its own copy of each document, splitting lines where LSP does not (form
    feeds, U+2028) and failing on positions some clients send; devlint.server.documents keeps
    the text instead, so pygls's copy is not made at all."""

    def _forward(self, method: str, params: Any) -> Generator[Any, Any, None]:
        handler = self.fm.features.get(method)
        if handler is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams) -> Generator[Any, Any, None]:
        yield from self._forward(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Generator[Any, Any, None]:
        yield from self._forward(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams) -> Generator[Any, Any, None]:
        yield from self._forward(types.TEXT_DOCUMENT_DID_CLOSE, params)

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def lsp_notebook_document__did_open(self, params: types.DidOpenNotebookDocumentParams) -> Generator[Any, Any, None]:
        yield from self._forward(types.NOTEBOOK_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def lsp_notebook_document__did_change(
        self, params: types.DidChangeNotebookDocumentParams
    ) -> Generator[Any, Any, None]:
        yield from self._forward(types.NOTEBOOK_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def lsp_notebook_document__did_close(
        self, params: types.DidCloseNotebookDocumentParams
    ) -> Generator[Any, Any, None]:
        yield from self._forward(types.NOTEBOOK_DOCUMENT_DID_CLOSE, params)


def create_server() -> tuple[LanguageServer, Session]:
    server = LanguageServer("devlint", __version__, protocol_cls=Protocol, notebook_document_sync=NOTEBOOK_SYNC)
    session = Session(server)

    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        session.initialize(params)

    @server.feature(types.INITIALIZED)
    async def initialized(params: types.InitializedParams) -> None:
        await session.initialized()

    @server.feature(types.SHUTDOWN)
    def shutdown(params: None) -> None:
        session.shutdown()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        session.opened(params.text_document)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        session.changed(params)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        session.saved(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        session.closed(params.text_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(params: types.DidOpenNotebookDocumentParams) -> None:
        session.notebook_opened(params)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(params: types.DidChangeNotebookDocumentParams) -> None:
        session.notebook_changed(params)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(params: types.DidCloseNotebookDocumentParams) -> None:
        session.notebook_closed(params.notebook_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def configuration(params: types.DidChangeConfigurationParams) -> None:
        await session.configuration_changed(params)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(params: types.DidChangeWatchedFilesParams) -> None:
        session.files_changed()

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, CODE_ACTIONS)
    async def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
        return await session.code_actions(params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(params: types.CodeAction) -> types.CodeAction:
        return await session.resolve(params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(params: types.HoverParams) -> types.Hover | None:
        return await session.hover(params)

    return server, session


def _protocol_stdout() -> BinaryIO:
    """The real stdout, for LSP messages only; file descriptor 1 and sys.stdout then point at
    stderr, so that a stray print (ours, a library's, a worker's) cannot corrupt the stream."""
    stream = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return stream


def serve() -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="devlint server: %(levelname)s: %(message)s")
    server, session = create_server()
    try:
        server.start_io(sys.stdin.buffer, _protocol_stdout())
    finally:
        session.shutdown()
    return 0
