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
    """The worker's garbage collection, off the path from an edit to its diagnostics.

    A check's garbage cycles are all young (the collector is off during a job, so everything a job
    allocates is in the youngest generation): the young generations are collected once the worker
    has been idle for ``delay`` seconds after a job (~20 ms on the 10,000-line bench file), or
    before the job after ``most`` jobs in a row that left no such pause. A full collection walks
    every tree the worker keeps (~120-300 ms there): it waits for a pause of ``full_delay``
    seconds, so that it does not hold up the next edit's check, or runs before the job after
    ``most_full`` jobs without one (memory stays bounded while edits never pause)."""

    def __init__(self, delay: float = 0.05, most: int = 4, full_delay: float = 1.0, most_full: int = 50) -> None:
        self._delay, self._most = delay, most
        self._full_delay, self._most_full = full_delay, most_full
        self._lock = threading.Lock()
        self._timers: list[threading.Timer] = []
        self._uncollected = 0
        self._since_full = 0

    def job_starts(self) -> None:
        with self._lock:
            for timer in self._timers:
                timer.cancel()
            self._timers = []
            full, young = self._since_full >= self._most_full, self._uncollected >= self._most
        if full:
            self._collect(full=True)
        elif young:
            self._collect(full=False)

    def job_ended(self) -> None:
        with self._lock:
            self._uncollected += 1
            self._since_full += 1
            self._timers = [
                threading.Timer(self._delay, self._collect, kwargs={"full": False}),
                threading.Timer(self._full_delay, self._collect, kwargs={"full": True}),
            ]
            for timer in self._timers:
                timer.daemon = True
                timer.start()

    def _collect(self, full: bool) -> None:
        if full:
            gc.collect()
        else:
            gc.collect(1)
        with self._lock:
            self._uncollected = 0
            if full:
                self._since_full = 0


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
