"""pygls wiring: which LSP message calls which Session method, and serving over stdio."""

from __future__ import annotations

import inspect
import logging
import os
import sys
from asyncio import Future
from collections.abc import Callable, Generator
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.exceptions import JsonRpcContentModified, JsonRpcRequestCancelled
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from devlint import __version__
from devlint.server.actions import FIX_ALL
from devlint.server.session import Session

logger = logging.getLogger(__name__)

NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage(language="python")])]
)
CODE_ACTIONS = types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=True
)


def _forward(method: str) -> Callable[..., Any]:
    """A builtin handler for ``method`` that only calls the server's own handler."""

    @lsp_method(method)
    def forward(self: LanguageServerProtocol, params: Any) -> Generator[Any, Any, None]:
        handler = self.fm.features.get(method)
        if handler is not None:
            yield handler, (params,), None

    return forward


class Protocol(LanguageServerProtocol):
    """pygls keeps its own copy of each document, splitting lines where LSP does not (form
    feeds, U+2028) and failing on positions some clients send; devlint.server.documents keeps
    the text instead, so pygls's copy is not made at all (same names: these replace pygls's)."""

    lsp_text_document__did_open = _forward(types.TEXT_DOCUMENT_DID_OPEN)
    lsp_text_document__did_change = _forward(types.TEXT_DOCUMENT_DID_CHANGE)
    lsp_text_document__did_close = _forward(types.TEXT_DOCUMENT_DID_CLOSE)
    lsp_notebook_document__did_open = _forward(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    lsp_notebook_document__did_change = _forward(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    lsp_notebook_document__did_close = _forward(types.NOTEBOOK_DOCUMENT_DID_CLOSE)

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        """A request refused because its document changed (or the client cancelled it) is an
        answer the protocol expects, not a failure: pygls would log it with a traceback, which
        editors show as an error. It is answered with its error code and logged in one line."""
        refused = None if future.cancelled() else future.exception()
        if not isinstance(refused, (JsonRpcContentModified, JsonRpcRequestCancelled)):
            super()._send_handler_result(future, msg_id=msg_id)
            return
        self._request_futures.pop(msg_id, None)
        logger.info("request %s answered with %s: %s", msg_id, refused.code, refused.message)
        self._send_response(msg_id, error=refused.to_response_error())


def _plain(method: Callable[..., Any]) -> Callable[..., Any]:
    """A function calling a bound method: pygls marks its handlers with attributes, which a
    bound method does not take."""
    if inspect.iscoroutinefunction(method):

        async def call_async(params: Any) -> Any:
            return await method(params)

        return call_async

    def call(params: Any) -> Any:
        return method(params)

    return call


def create_server() -> tuple[LanguageServer, Session]:
    server = LanguageServer("devlint", __version__, protocol_cls=Protocol, notebook_document_sync=NOTEBOOK_SYNC)
    session = Session(server)
    handlers: dict[str, Callable[..., Any]] = {
        types.INITIALIZE: session.initialize,
        types.INITIALIZED: session.initialized,
        types.SHUTDOWN: session.shutdown,
        types.TEXT_DOCUMENT_DID_OPEN: session.opened,
        types.TEXT_DOCUMENT_DID_CHANGE: session.changed,
        types.TEXT_DOCUMENT_DID_SAVE: session.saved,
        types.TEXT_DOCUMENT_DID_CLOSE: session.closed,
        types.NOTEBOOK_DOCUMENT_DID_OPEN: session.notebook_opened,
        types.NOTEBOOK_DOCUMENT_DID_CHANGE: session.notebook_changed,
        types.NOTEBOOK_DOCUMENT_DID_CLOSE: session.notebook_closed,
        types.WORKSPACE_DID_CHANGE_CONFIGURATION: session.configuration_changed,
        types.WORKSPACE_DID_CHANGE_WATCHED_FILES: session.files_changed,
        types.TEXT_DOCUMENT_CODE_ACTION: session.code_actions,
        types.CODE_ACTION_RESOLVE: session.resolve,
        types.TEXT_DOCUMENT_HOVER: session.hover,
    }
    for method, handler in handlers.items():
        server.feature(method, CODE_ACTIONS if method == types.TEXT_DOCUMENT_CODE_ACTION else None)(_plain(handler))
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
