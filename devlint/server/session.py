"""One editor session: the open documents, the settings, and the answer to each notification
and request. devlint.server.protocol connects these methods to pygls."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcContentModified, JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from devlint.run.config import CONFIG_NAMES
from devlint.server.actions import FIX_ALL, fix_all_action, has_safe_fixes, quick_fixes, wanted, workspace_edit
from devlint.server.configuration import ConfigTracker
from devlint.server.diagnostics import diagnostics
from devlint.server.documents import PYTHON_LANGUAGES, Documents, Notebook, TextDoc
from devlint.server.hover import hover
from devlint.server.jobs import documentation, fix_all, reads
from devlint.server.model import Source
from devlint.server.scheduler import Scheduler, Superseded
from devlint.server.settings import SECTION, ServerSettings, read_settings
from devlint.server.snapshot import Checked, Snapshot
from devlint.server.workers import Workers

logger = logging.getLogger(__name__)

PYTHON_SUFFIXES = (".py", ".pyi")
CONFIG_GLOBS = tuple(f"**/{name}" for name in CONFIG_NAMES)
# Modules an open document may import constants from (devlint.run.project_imports).
MODULE_GLOB = "**/*.py"


def _capability(root: object, *path: str) -> Any:
    for name in path:
        root = getattr(root, name, None)
        if root is None:
            return None
    return root


class Session:
    def __init__(self, server: LanguageServer) -> None:
        self.server = server
        self.documents = Documents()
        self.settings = ServerSettings()
        self.configs = ConfigTracker(Path(os.getcwd()))
        self.workers = Workers()
        self.scheduler = Scheduler(self.workers, self._snapshot, self._version, self._publish)
        self.versioned_edits = False
        self.lazy_fix_all = False
        self.root = Path(os.getcwd())
        self._pages: asyncio.Future[dict[str, str]] | None = None
        # The files of its project each open document read constants from, at a version.
        self._reads: dict[str, tuple[int, frozenset[str]]] = {}

    # -- lifecycle -----------------------------------------------------------------------

    def initialize(self, params: types.InitializeParams) -> None:
        self.documents.encoding = self.server.workspace.position_encoding or types.PositionEncodingKind.Utf16
        root = params.root_uri and to_fs_path(params.root_uri)
        if params.workspace_folders:
            root = to_fs_path(params.workspace_folders[0].uri) or root
        if root:
            self.root = Path(root)
            self.configs = ConfigTracker(self.root)
        self.settings = read_settings(params.initialization_options, self.settings)
        capabilities = params.capabilities
        self.versioned_edits = bool(_capability(capabilities, "workspace", "workspace_edit", "document_changes"))
        resolvable = _capability(capabilities, "text_document", "code_action", "resolve_support", "properties")
        self.lazy_fix_all = "edit" in (resolvable or ())

    async def initialized(self, params: types.InitializedParams) -> None:
        # The worker starts once `initialize` is answered, so that the answer does not wait for
        # it; its first job loads the rules and sends back what hover shows of them.
        self._documentation()
        capabilities = self.server.client_capabilities
        if _capability(capabilities, "workspace", "did_change_watched_files", "dynamic_registration"):
            watchers = [types.FileSystemWatcher(glob_pattern=glob) for glob in (*CONFIG_GLOBS, MODULE_GLOB)]
            registration = types.Registration(
                id="devlint-configuration-files",
                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
            )
            try:
                await self.server.client_register_capability_async(types.RegistrationParams([registration]))
            except JsonRpcException as error:
                # Configuration changes are then found by their timestamps alone.
                logger.warning("the editor does not watch the configuration files: %s", error)
        await self._pull_settings()

    async def _pull_settings(self) -> None:
        if not _capability(self.server.client_capabilities, "workspace", "configuration"):
            return
        try:
            found = await self.server.workspace_configuration_async(
                types.ConfigurationParams([types.ConfigurationItem(section=SECTION)])
            )
        except JsonRpcException as error:
            logger.warning("the editor did not send the devlint settings: %s", error)
            return
        if found:
            self._settings_changed(read_settings(found[0], self.settings))

    def _settings_changed(self, settings: ServerSettings) -> None:
        before, self.settings = self.settings, settings
        if before.show_syntax_errors != settings.show_syntax_errors:
            for key in self._keys():
                checked = self.scheduler.latest(key)
                if checked is not None:
                    self._publish(checked)

    async def configuration_changed(self, params: types.DidChangeConfigurationParams) -> None:
        if isinstance(params.settings, dict) and params.settings:
            self._settings_changed(read_settings(params.settings, self.settings))
        else:
            await self._pull_settings()

    async def files_changed(self, params: types.DidChangeWatchedFilesParams | None = None) -> None:
        """A configuration file changed on disk: check every open document again. A module of
        the project: check again the open documents that read constants from it."""
        paths = [path for change in params.changes if (path := to_fs_path(change.uri))] if params else []
        if params is None or any(Path(path).name in CONFIG_NAMES for path in paths):
            self.configs.invalidate()
            for key in self._keys():
                self.scheduler.schedule(key, 0)
            return
        await self._modules_changed([path for path in paths if path.endswith(PYTHON_SUFFIXES)])

    async def saved(self, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.rsplit("/", 1)[-1] in CONFIG_NAMES:
            await self.files_changed()
        elif uri.startswith("file:") and uri.endswith(PYTHON_SUFFIXES):
            # The other documents read it from disk, where it now is as the editor shows it.
            await self._modules_changed([str(self._path(uri))])

    async def _modules_changed(self, paths: list[str]) -> None:
        # As devlint.run.project_imports names a file: its folder resolved, or all of it.
        changed = {str(form) for path in paths for form in (Path(path).resolve(), Path(path).parent.resolve() / Path(path).name)}
        if not changed:
            return
        for key in self._keys():
            if await self._files_read(key) & changed:
                self._reads.pop(key, None)
                self.scheduler.schedule(key, 0)

    async def _files_read(self, key: str) -> frozenset[str]:
        """Kept by version: a save asks about every open document, most of them unchanged."""
        kept = self._reads.get(key)
        if kept is not None and kept[0] == self._version(key):
            return kept[1]
        snapshot = self._snapshot(key)
        if snapshot is None:
            return frozenset()
        try:
            found = await self.workers.run(reads, snapshot.source)
        except Exception:
            logger.exception("finding the modules %s reads failed", key)
            return frozenset()
        if self._version(key) == snapshot.version:
            self._reads[key] = (snapshot.version, found)
        return found

    def shutdown(self, params: None = None) -> None:
        self.workers.close()

    # -- documents -----------------------------------------------------------------------

    def _keys(self) -> list[str]:
        return [*self.documents.texts, *self.documents.notebooks]

    @staticmethod
    def _lintable(item: types.TextDocumentItem) -> bool:
        path = item.uri.split("?", 1)[0]
        return not path.endswith(".ipynb") and (item.language_id in PYTHON_LANGUAGES or path.endswith(PYTHON_SUFFIXES))

    def opened(self, params: types.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        if self._lintable(item):
            self.documents.open_text(item)
            self.scheduler.schedule(item.uri, 0)

    def changed(self, params: types.DidChangeTextDocumentParams) -> None:
        if self.documents.change_text(params) is not None:
            self.scheduler.schedule(params.text_document.uri, self._debounce())

    def closed(self, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        if self.documents.close_text(uri) is not None:
            self._reads.pop(uri, None)
            self.scheduler.forget(uri)
            self._clear([uri])

    def notebook_opened(self, params: types.DidOpenNotebookDocumentParams) -> None:
        notebook = self.documents.open_notebook(params)
        self.scheduler.schedule(notebook.uri, 0)

    def notebook_changed(self, params: types.DidChangeNotebookDocumentParams) -> None:
        notebook, closed = self.documents.change_notebook(params)
        if notebook is not None:
            self._clear(closed)
            self.scheduler.schedule(notebook.uri, self._debounce())

    def notebook_closed(self, params: types.DidCloseNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        notebook = self.documents.close_notebook(uri)
        if notebook is not None:
            self._reads.pop(uri, None)
            self.scheduler.forget(uri)
            self._clear([cell.doc.uri for cell in notebook.cells])

    def _debounce(self) -> float:
        return self.settings.debounce_ms / 1000

    def _clear(self, uris: list[str]) -> None:
        for uri in uris:
            self.server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    # -- checking ------------------------------------------------------------------------

    def _version(self, key: str) -> int | None:
        doc = self.documents.texts.get(key) or self.documents.notebooks.get(key)
        return None if doc is None else doc.version

    def _path(self, uri: str) -> Path:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        return Path(path) if path else self.root / uri.rsplit("/", 1)[-1].rsplit(":", 1)[-1]

    def _snapshot(self, key: str) -> Snapshot | None:
        doc: TextDoc | Notebook | None = self.documents.texts.get(key) or self.documents.notebooks.get(key)
        if doc is None:
            return None
        path = self._path(key)
        resolved = self.configs.settings_for(path)
        if resolved.error is not None:
            self.server.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Warning,
                    message=f"devlint: {resolved.error}; keeping the previous settings until it is fixed",
                )
            )
        if isinstance(doc, TextDoc):
            source = Source(str(path), (doc.text,), False, resolved.settings, self.configs.root_for(path))
            return Snapshot(key, doc.version, (doc.uri,), (doc.version,), (doc.lines,), source)
        cells = doc.cells
        source = Source(
            str(path), tuple(c.doc.text if c.python else None for c in cells), True, resolved.settings, self.configs.root_for(path)
        )
        return Snapshot(
            key,
            doc.version,
            tuple(c.doc.uri for c in cells),
            tuple(c.doc.version for c in cells),
            tuple(c.doc.lines if c.python else None for c in cells),
            source,
        )

    def _publish(self, checked: Checked) -> None:
        snapshot = checked.snapshot
        found = diagnostics(checked.analysis, snapshot.lines, self.documents.encoding, self.settings.show_syntax_errors)
        for uri, version, items in zip(snapshot.uris, snapshot.versions, found):
            self.server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=items, version=version)
            )

    def _owner(self, uri: str) -> str | None:
        """The document (a file, or the notebook of a cell) that holds text ``uri``."""
        if uri in self.documents.texts:
            return uri
        for notebook in self.documents.notebooks.values():
            if any(cell.doc.uri == uri for cell in notebook.cells):
                return notebook.uri
        return None

    async def _checked(self, key: str) -> Checked:
        try:
            return await self.scheduler.current(key)
        except Superseded:
            raise JsonRpcContentModified("the document changed; ask again") from None

    async def _current(self, uri: str) -> tuple[Checked, int] | None:
        key = self._owner(uri)
        if key is None:
            return None
        checked = await self._checked(key)
        text = checked.snapshot.text_of(uri)
        return None if text is None else (checked, text)

    # -- requests ------------------------------------------------------------------------

    async def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        found = await self._current(params.text_document.uri)
        if found is None:
            return []
        checked, text = found
        only = params.context.only
        actions: list[types.CodeAction] = []
        if wanted(types.CodeActionKind.QuickFix, only):
            actions += quick_fixes(
                checked,
                text,
                params.range,
                params.context.diagnostics,
                self.documents.encoding,
                self.versioned_edits,
                self.settings.unsafe_fixes,
            )
        if wanted(FIX_ALL, only) and has_safe_fixes(checked):
            data = {"uri": checked.snapshot.key, "version": checked.snapshot.version}
            asked = only is not None
            if self.lazy_fix_all and not asked:
                actions.append(fix_all_action(data))
            else:
                actions.append(fix_all_action(data, await self._fix_all_edit(checked)))
        return actions

    async def resolve(self, action: types.CodeAction) -> types.CodeAction:
        if action.kind != FIX_ALL or action.edit is not None or not isinstance(action.data, dict):
            return action
        key = action.data.get("uri")
        if not isinstance(key, str) or self._version(key) != action.data.get("version"):
            raise JsonRpcContentModified("the document changed since the action was offered")
        return fix_all_action(action.data, await self._fix_all_edit(await self._checked(key)))

    async def _fix_all_edit(self, checked: Checked) -> types.WorkspaceEdit:
        changes = await self.workers.run(fix_all, checked.snapshot.source)
        if self._version(checked.snapshot.key) != checked.snapshot.version:
            raise JsonRpcContentModified("the document changed while the fixes were computed")
        return workspace_edit(checked.snapshot, changes, self.documents.encoding, self.versioned_edits)

    def _documentation(self) -> asyncio.Future[dict[str, str]]:
        failed = self._pages is not None and self._pages.done() and (self._pages.cancelled() or self._pages.exception())
        if self._pages is None or failed:
            self._pages = asyncio.ensure_future(self.workers.run(documentation))
        return self._pages

    async def hover(self, params: types.HoverParams) -> types.Hover | None:
        found = await self._current(params.text_document.uri)
        if found is None:
            return None
        checked, text = found
        try:
            pages = await asyncio.shield(self._documentation())
        except Exception as error:
            logger.warning("the rules' documentation could not be loaded: %s", error)
            return None
        return hover(checked, text, params.position, self.documents.encoding, pages)
