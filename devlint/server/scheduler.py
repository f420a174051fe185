"""When documents are checked: after a pause in typing, newest version only, never published
over a newer one. While a document does not parse, the findings of its last check stay on the
lines the edits left alone (devlint.server.carry).

Each document has at most one check task. An edit cancels it, wherever it is (waiting out the
pause, or waiting for the worker; the worker's result for the old text is then dropped), and
starts a new one. A request that needs the findings of the current version (a code action, a
hover) waits for that version's check; it does not cut the pause short, or an editor that asks
for code actions at every cursor move would have every keystroke checked.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import BrokenExecutor
from dataclasses import replace

from devlint.server.jobs import analyze
from devlint.server.carry import carried
from devlint.server.model import Analysis, Problem
from devlint.server.snapshot import Checked, Snapshot
from devlint.server.workers import Workers

logger = logging.getLogger(__name__)

WORKER_DIED = "internal error: devlint's worker process died checking this document (please report this)"


class Superseded(Exception):
    """The document changed (or closed) before its check finished."""


class Scheduler:
    def __init__(
        self,
        workers: Workers,
        take: Callable[[str], Snapshot | None],
        version: Callable[[str], int | None],
        publish: Callable[[Checked], None],
    ) -> None:
        self._workers = workers
        self._take = take
        self._version = version
        self._publish = publish
        self._pending: dict[str, asyncio.Task[Checked | None]] = {}
        self._latest: dict[str, Checked] = {}

    def schedule(self, key: str, delay: float) -> asyncio.Task[Checked | None]:
        """Check document ``key`` after ``delay`` seconds, instead of any check under way."""
        self._cancel(key)
        task = self._pending[key] = asyncio.ensure_future(self._check(key, delay))
        return task

    def forget(self, key: str) -> None:
        self._cancel(key)
        self._latest.pop(key, None)

    def _cancel(self, key: str) -> None:
        task = self._pending.pop(key, None)
        if task is not None:
            task.cancel()

    async def _check(self, key: str, delay: float) -> Checked | None:
        if delay > 0:
            await asyncio.sleep(delay)
        snapshot = self._take(key)
        if snapshot is None:
            return None
        try:
            analysis = await self._workers.run(analyze, snapshot.source)
        except Exception as error:
            logger.exception("checking %s failed", key)
            message = WORKER_DIED if isinstance(error, BrokenExecutor) else f"internal error: {type(error).__name__}: {error}"
            first = next((i for i, text in enumerate(snapshot.source.texts) if text is not None), 0)
            analysis = Analysis(problem=Problem(message, first))
        if self._version(key) != snapshot.version:
            return None
        before = self._latest.get(key)
        if analysis.problem is not None and analysis.problem.syntax and before is not None:
            analysis = replace(analysis, items=carried(before, snapshot))
        checked = Checked(snapshot, analysis)
        self._latest[key] = checked
        if self._pending.get(key) is asyncio.current_task():
            del self._pending[key]
        self._publish(checked)
        return checked

    def latest(self, key: str) -> Checked | None:
        return self._latest.get(key)

    async def current(self, key: str) -> Checked:
        """The check of the document's current version; raises Superseded if it changes first."""
        version = self._version(key)
        if version is None:
            raise Superseded(key)
        checked = self._latest.get(key)
        if checked is not None and checked.snapshot.version == version:
            return checked
        task = self._pending.get(key) or self.schedule(key, 0)
        try:
            # Shielded: a request the client cancels must not cancel the check it waited for.
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.cancelled():
                raise Superseded(key) from None
            raise
        if result is None or result.snapshot.version != self._version(key):
            raise Superseded(key)
        return result
