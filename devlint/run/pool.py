"""Runs the per-file work of a run and returns results in the order the files were given.

Files whose result the cache holds are answered without parsing. The rest go to worker
processes in small chunks, largest files first, so that one huge file does not leave the other
workers idle at the end; a handful of files is checked in this process, where starting workers
would cost more than it saves. Workers send back findings only, never source text or trees.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from devlint.fixes import applicable
from devlint.registry import UnknownCodeError, info_by_code
from devlint.run.cache import Cache, Depends, content_digest, entry_key, run_key
from devlint.run.file_job import process_data, process_file
from devlint.run.job import FileResult, Job
from devlint.run.project_imports import Dependencies, digest_of, origin

if TYPE_CHECKING:
    import multiprocessing.pool

# Fewer files than this (or than two per worker) are checked in this process.
MIN_PARALLEL_FILES = 8
# A chunk sent to a worker holds up to this many bytes of source, or files.
CHUNK_BYTES = 64 * 1024
CHUNK_FILES = 32
# Objects allocated since the last collection after which a file's garbage is collected at once.
COLLECT_AFTER = 20_000


def default_jobs() -> int:
    """All the cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class _Task:
    index: int
    path: Path
    job: Job
    size: int


def execute(work: Sequence[tuple[Path, Job]], jobs: int | None = None, cache: Cache | None = None) -> list[FileResult]:
    with Executor(jobs, cache) as run:
        return run(work)


class Executor:
    """``run(work)`` as often as needed (progress bars call it per batch) with one set of worker
    processes, started on first need; leaving the ``with`` block stops them and saves the cache."""

    def __init__(self, jobs: int | None = None, cache: Cache | None = None) -> None:
        self.jobs = jobs if jobs is not None and jobs > 0 else default_jobs()
        self.cache = cache
        self._pool: multiprocessing.pool.Pool | None = None
        # path -> content digest (None: no such file), for checking cached results' dependencies
        self._digests: dict[str, str | None] = {}

    def __enter__(self) -> Executor:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close(interrupted=kind is not None)

    def close(self, interrupted: bool = False) -> None:
        if self._pool is not None:
            if interrupted:
                self._pool.terminate()
            else:
                self._pool.close()
            self._pool.join()
            self._pool = None
        if self.cache is not None and not interrupted:
            self.cache.save()

    def __call__(self, work: Sequence[tuple[Path, Job]]) -> list[FileResult]:
        results: list[FileResult | None] = [None] * len(work)
        tasks: list[_Task] = []
        self._digests.clear()
        for index, (path, job) in enumerate(work):
            hit, size = self._cached(path, job)
            if hit is not None:
                results[index] = hit
            else:
                tasks.append(_Task(index, path, job, size))
        digests = self.cache is not None
        for index, result, digest in self._run(tasks, digests):
            results[index] = result
            if digest is not None:
                self._remember(work[index][1], result, digest)
        done = [result for result in results if result is not None]
        assert len(done) == len(work), "a file got no result"
        return done

    # -- the cache ------------------------------------------------------------------------------

    def _cached(self, path: Path, job: Job) -> tuple[FileResult | None, int]:
        """The cached result of ``path`` if there is one, else None and the file's size."""
        if self.cache is None or not _cacheable(job):
            return None, _size(path)
        run = run_key(job.codes, job.settings)
        if self.cache.is_empty(run):
            return None, _size(path)
        try:
            data = path.read_bytes()
        except OSError:
            return None, 0
        filename = str(path)
        found = self.cache.get(
            run, entry_key(filename, content_digest(data)), filename, lambda read: self._unchanged(read, filename, job)
        )
        if found is None:
            return None, len(data)
        findings, error = found
        # Check results stand in for a fix run only where that would fix nothing.
        if (job.fix or job.diff) and any(applicable(finding, job.unsafe) for finding in findings):
            return None, len(data)
        return FileResult(filename, findings, error), len(data)

    def _unchanged(self, read: Depends, filename: str, job: Job) -> bool:
        """The other files a cached result read are as they were (digests kept for one batch:
        a fix run may rewrite them between batches)."""
        dependencies = Dependencies(read[0], read[1])
        return dependencies.unchanged(origin(filename, job.root), self._digest)

    def _digest(self, path: str) -> str | None:
        if path not in self._digests:
            self._digests[path] = digest_of(path)
        return self._digests[path]

    def _remember(self, job: Job, result: FileResult, digest: str) -> None:
        assert self.cache is not None
        if not _cacheable(job):
            return
        if (job.fix or job.diff) and (result.fixes_applied or result.diff or result.error is not None):
            # The file changed (or a write failed): this is no check result of these bytes.
            return
        read = result.dependencies
        depends = (read.origin, read.files) if read is not None else None
        self.cache.put(run_key(job.codes, job.settings), entry_key(result.filename, digest), result.findings, result.error, depends)

    # -- running --------------------------------------------------------------------------------

    def _run(self, tasks: list[_Task], digests: bool) -> Iterator[tuple[int, FileResult, str | None]]:
        pool = None
        if self.jobs > 1 and len(tasks) >= max(MIN_PARALLEL_FILES, 2 * self.jobs):
            pool = self._start_pool()
        # Largest first here too: the few objects that outlive a file (its findings) then sit in
        # memory a larger tree has already claimed, rather than pinning more for the next one.
        largest_first = sorted(tasks, key=lambda task: -task.size)
        if pool is None:
            with _gc_per_file():
                for task in largest_first:
                    yield (task.index, *_process(task.path, task.job, digests))
            return
        chunks = _chunks(largest_first)
        for done in pool.imap_unordered(_work, [(chunk, digests) for chunk in chunks]):
            yield from done

    def _start_pool(self) -> multiprocessing.pool.Pool | None:
        """The workers, started on first need; None where processes cannot be started."""
        if self._pool is None:
            # Forking is the cheapest start (the workers inherit the imported rules), but not
            # safe while other threads run (a progress bar): then workers start afresh.
            single = threading.active_count() == 1
            method = "fork" if sys.platform == "linux" and single else "spawn"
            # Imported here: a run of a few files (a pre-commit hook's) starts no worker, and
            # multiprocessing is a sixth of what the command imports.
            import multiprocessing

            try:
                self._pool = multiprocessing.get_context(method).Pool(self.jobs, initializer=_start_worker)
            except (OSError, ImportError):
                # No semaphores or no room for processes (some sandboxes): check in this process.
                self.jobs = 1
        return self._pool


@lru_cache(maxsize=256)
def _cacheable(job: Job) -> bool:
    """Only devlint's own rules: the cache key covers their code, not that of rules defined
    elsewhere (tests, plugins), which may change under the same code."""
    try:
        return all(info_by_code(code).module.startswith("devlint.rules.") for code in job.codes)
    except UnknownCodeError:
        return False


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _chunks(tasks: list[_Task]) -> list[list[tuple[int, Path, Job]]]:
    chunks: list[list[tuple[int, Path, Job]]] = []
    chunk: list[tuple[int, Path, Job]] = []
    size = 0
    for task in tasks:
        chunk.append((task.index, task.path, task.job))
        size += task.size
        if size >= CHUNK_BYTES or len(chunk) >= CHUNK_FILES:
            chunks.append(chunk)
            chunk, size = [], 0
    if chunk:
        chunks.append(chunk)
    return chunks


def _start_worker() -> None:
    # Ctrl-C reaches every process of the run: the main process alone handles it and stops
    # the workers (a write in progress finishes first, see devlint.run.writer).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # What the worker inherited lives as long as it does: keep it out of every collection.
    gc.freeze()


def _work(arguments: tuple[list[tuple[int, Path, Job]], bool]) -> list[tuple[int, FileResult, str | None]]:
    chunk, digests = arguments
    with _gc_per_file():
        return [(index, *_process(path, job, digests)) for index, path, job in chunk]


def _process(path: Path, job: Job, digests: bool) -> tuple[FileResult, str | None]:
    """One file; with the digest of the bytes it checked when the result is to be cached."""
    try:
        data = path.read_bytes()
    except OSError:
        # process_file reports it the usual way.
        return process_file(path, job), None
    try:
        return process_data(path, data, job), content_digest(data) if digests else None
    finally:
        if gc.get_count()[0] > COLLECT_AFTER:
            gc.collect(0)


@contextmanager
def _gc_per_file() -> Iterator[None]:
    """A file's tree holds millions of objects and no cycles: the collector, run as they are
    made, would walk the growing tree again and again (a third of a big file's parse time).
    It is paused while files are checked; each file's garbage is collected after the file."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
