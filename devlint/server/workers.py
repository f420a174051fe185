"""Where the engine runs: one worker process, so that a long check never holds up the event loop
(the GIL included) and a crash in the native parser costs a restart, not the server.

Jobs go to the worker one at a time, so the server always knows which job the worker is on. A
job whose caller gives up (an edit superseded the check) after it has run for a while is
stopped by ending the worker: the check of a large file would otherwise hold the worker for
seconds more, on text nobody will see, before the check of the new text could start.

Workers are spawned, not forked: the server has threads (pygls reads stdin in one). Where
processes cannot be started (no semaphores in some sandboxes) the work runs in a thread, which
cannot be stopped: a superseded check there runs to its end and its result is dropped.
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

# A superseded job that has run this long is stopped; a younger one is left to finish, since
# starting a worker (interpreter, LibCST, the rules) costs about this much.
STOP_AFTER_SECONDS = 1.0


def _exit_with(parent: multiprocessing.process.BaseProcess) -> None:
    parent.join()
    os._exit(0)


def _start_worker() -> None:
    # The editor's Ctrl-C (or a terminal's) is for the server, which stops the worker.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # An editor may kill the server outright: the worker must not live on without it.
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent,), name="devlint-parent", daemon=True).start()
    # Anything written to stdout would corrupt the protocol stream: send it to stderr.
    os.dup2(2, 1)
    from devlint.registry import all_rules

    all_rules()
    # What is loaded now lives as long as the worker: keep it out of every collection. A tree
    # holds millions of objects and no cycles: the cyclic collector, run while it is built,
    # would walk it again and again; the worker collects between jobs instead (IdleCollection).
    gc.freeze()
    gc.disable()


class IdleCollection:
    """The worker's garbage collection, off the path from an edit to its diagnostics: a job's
    garbage is collected once the worker has been idle for ``delay`` seconds after it (the
    result is on its way by then), or before the job after ``most`` jobs in a row that left no
    such pause (memory stays bounded while edits come back to back)."""

    def __init__(self, delay: float = 0.05, most: int = 4) -> None:
        self._delay = delay
        self._most = most
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._uncollected = 0

    def job_starts(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            due = self._uncollected >= self._most
        if due:
            self._collect()

    def job_ended(self) -> None:
        with self._lock:
            self._uncollected += 1
            self._timer = threading.Timer(self._delay, self._collect)
            self._timer.daemon = True
            self._timer.start()

    def _collect(self) -> None:
        gc.collect()
        with self._lock:
            self._uncollected = 0


# One per process: the worker's (for as long as it lives), or the server's where checks run in
# a thread.
_IDLE = IdleCollection()


def _then_collect(function: Callable[..., T], *args: object) -> T:
    _IDLE.job_starts()
    try:
        return function(*args)
    finally:
        _IDLE.job_ended()


class Workers:
    def __init__(self) -> None:
        self._executor: Executor | None = None
        self._turn = asyncio.Lock()

    def _pool(self) -> Executor:
        if self._executor is None:
            try:
                self._executor = ProcessPoolExecutor(
                    1, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker
                )
            except (OSError, ImportError, NotImplementedError):
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="devlint-check")
        return self._executor

    def _submit(self, function: Callable[..., T], *args: object) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        try:
            return loop.run_in_executor(self._pool(), _then_collect, function, *args)
        except OSError:
            # The process could not be started: check in a thread from now on.
            self._discard()
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="devlint-check")
            return loop.run_in_executor(self._executor, _then_collect, function, *args)

    async def run(self, function: Callable[..., T], *args: object) -> T:
        """``function(*args)`` in the worker, after the jobs before it. A worker that died is
        replaced and the job tried once more; if it dies again, BrokenExecutor."""
        async with self._turn:
            started = time.monotonic()
            try:
                try:
                    return await self._submit(function, *args)
                except BrokenExecutor:
                    self._discard()
                try:
                    return await self._submit(function, *args)
                except BrokenExecutor:
                    self._discard()
                    raise
            except asyncio.CancelledError:
                long = time.monotonic() - started >= STOP_AFTER_SECONDS
                if long and isinstance(self._executor, ProcessPoolExecutor):
                    self.close()
                raise

    def _discard(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def close(self) -> None:
        """End the worker process now, whatever it is doing; the next job starts a new one."""
        self._discard()
        for child in multiprocessing.active_children():
            child.terminate()
