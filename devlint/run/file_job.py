"""One Python file through devlint: read, decode, lint or fix, diff, write (a notebook goes to
devlint.run.notebook_job). Runs in worker processes; a bug that escapes for one file becomes
that file's one-line error."""

from __future__ import annotations

import traceback
from pathlib import Path

from devlint.findings import FileError
from devlint.gate.nesting import call_with_deep_stack
from devlint.gate.syntax import ParseError
from devlint.run.job import FileResult, Job, fix, lint, unified_diff
from devlint.run.source import SourceError, decode
from devlint.run.suppressions import apply_noqa, skip_file
from devlint.run.writer import WriteError, write_atomic


def process_source(data: bytes, filename: str, job: Job) -> tuple[FileResult, bytes | None]:
    """Lint (or fix) one file's bytes; returns the result and the new bytes when a fix changed them.

    Runs on a deep stack (devlint.gate.nesting). A bug that escapes for one file becomes that file's
    one-line error, and the run goes on with the other files."""
    try:
        return call_with_deep_stack(_process_source, data, filename, job)
    except Exception as error:
        return FileResult(filename, error=FileError(filename, _internal_error(error))), None


def _internal_error(error: Exception) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    detail = " ".join(str(error).split())
    return f"internal error{where}: {type(error).__name__}: {detail}; file left unchanged (please report this)"


def _process_source(data: bytes, filename: str, job: Job) -> tuple[FileResult, bytes | None]:
    if filename.endswith(".ipynb"):
        # Imported here: most runs hold no notebook, and each worker would pay for the format.
        from devlint.run.notebook_job import process_notebook

        return process_notebook(data, filename, job)
    try:
        decoded = decode(data)
        if skip_file(decoded.text):
            return FileResult(filename), None
        if not (job.fix or job.diff):
            found, dependencies = lint(decoded.text, filename, job, job.settings)
            return FileResult(filename, found, dependencies=dependencies), None
        result, dependencies = fix(decoded.text, filename, job, job.settings, keep=job.keep(filename, apply_noqa))
        if result is None:
            return FileResult(filename), None
        new = None if result.text == decoded.text else decoded.encode(result.text)
    except SourceError as error:
        return FileResult(filename, error=FileError(filename, error.message, error.row)), None
    except ParseError as error:
        return FileResult(filename, error=FileError(filename, error.message, error.row, error.column)), None
    if new is None:
        return FileResult(filename, result.remaining, dependencies=dependencies), None
    diff = unified_diff(filename, decoded.text, result.text) if job.diff else ""
    counts = {"fixes_applied": result.applied, "fixes_later": result.later, "fix_rounds": result.rounds}
    return FileResult(filename, result.remaining, diff=diff, **counts), new


def process_file(path: Path, job: Job) -> FileResult:
    filename = str(path)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        return FileResult(filename, error=FileError(filename, "is a directory, not a file"))
    except OSError as error:
        return FileResult(filename, error=FileError(filename, f"cannot read: {error.strerror}"))
    return process_data(path, data, job)


def process_data(path: Path, data: bytes, job: Job) -> FileResult:
    """``process_file`` once the bytes are read (devlint.run.pool reads them to key its cache)."""
    filename = str(path)
    result, new = process_source(data, filename, job)
    if new is not None and job.fix and not job.diff:
        try:
            write_atomic(path, new, data)
        except WriteError as error:
            result.error = FileError(filename, str(error))
            result.fixes_applied = result.fixes_later = result.fix_rounds = 0
    return result
