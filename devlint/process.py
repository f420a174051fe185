"""One file through devlint: read, decode, lint or fix, diff, write. Runs in worker processes,
so everything it takes and returns is plain, picklable data.

LibCST and the rule classes (devlint.runner) are imported only for a file that may hold a
finding (devlint.screen decides): a run over files that cannot never pays their import."""

from __future__ import annotations

import difflib
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from devlint.catalog import RuleInfo
from devlint.findings import FileError, Finding
from devlint.nesting import call_with_deep_stack
from devlint.registry import info_by_code, load
from devlint.screen import screen
from devlint.settings import FixSettings
from devlint.source import SourceError, decode
from devlint.suppress import apply_noqa, skip_file
from devlint.syntax import ParseError
from devlint.writer import WriteError, write_atomic

if TYPE_CHECKING:
    from devlint.rule import Rule
    from devlint.runner import FixResult


@dataclass(frozen=True)
class Job:
    """What to do with each file; the same for every file of a run."""

    codes: tuple[str, ...]
    settings: FixSettings = FixSettings()
    fix: bool = False
    diff: bool = False
    unsafe: bool = False


@dataclass
class FileResult:
    filename: str
    findings: list[Finding] = field(default_factory=list)
    error: FileError | None = None
    fixes_applied: int = 0
    diff: str = ""


def unified_diff(filename: str, before: str, after: str) -> str:
    """A diff `git apply` / `patch -p1` accept for relative names; absolute names stay as they are."""
    old, new = (filename, filename) if filename.startswith("/") else (f"a/{filename}", f"b/{filename}")
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True), old, new)
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n" for line in lines)


def process_source(data: bytes, filename: str, job: Job) -> tuple[FileResult, bytes | None]:
    """Lint (or fix) one file's bytes; returns the result and the new bytes when a fix changed them.

    Runs on a deep stack (devlint.nesting). A bug that escapes for one file becomes that file's
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


@lru_cache(maxsize=64)
def _infos(codes: tuple[str, ...]) -> tuple[RuleInfo, ...]:
    return tuple(info_by_code(code) for code in codes)


@lru_cache(maxsize=64)
def _rules(codes: tuple[str, ...]) -> tuple[type[Rule], ...]:
    return tuple(load(code) for code in codes)


def lint(text: str, filename: str, job: Job, settings: FixSettings) -> list[Finding]:
    """The findings of the job's rules on ``text`` (``lint_text``, LibCST imported only when needed)."""
    screened = screen(text, _infos(job.codes))
    if screened == []:
        return []
    from devlint.runner import lint_text

    if screened is None:
        # CPython cannot read it: lint_text lets LibCST decide.
        return lint_text(text, filename, _rules(job.codes), settings)
    return lint_text(text, filename, _rules(tuple(info.code for info in screened)), settings, prefilter=False)


def fix(
    text: str, filename: str, job: Job, settings: FixSettings, keep: Callable[[str, list[Finding]], list[Finding]]
) -> FixResult | None:
    """``fix_text`` with the job's rules; None when no rule can report on ``text``: nothing to fix."""
    if screen(text, _infos(job.codes)) == []:
        return None
    from devlint.runner import fix_text

    return fix_text(text, filename, _rules(job.codes), settings, job.unsafe, keep=keep)


def _process_source(data: bytes, filename: str, job: Job) -> tuple[FileResult, bytes | None]:
    if filename.endswith(".ipynb"):
        # Imported here: devlint.notebook builds on this module.
        from devlint.notebook import process_notebook

        return process_notebook(data, filename, job)
    try:
        decoded = decode(data)
        if skip_file(decoded.text):
            return FileResult(filename), None
        if not (job.fix or job.diff):
            return FileResult(filename, apply_noqa(decoded.text, lint(decoded.text, filename, job, job.settings))), None
        result = fix(decoded.text, filename, job, job.settings, keep=apply_noqa)
        if result is None:
            return FileResult(filename), None
        new = None if result.text == decoded.text else decoded.encode(result.text)
    except SourceError as error:
        return FileResult(filename, error=FileError(filename, error.message, error.row)), None
    except ParseError as error:
        return FileResult(filename, error=FileError(filename, error.message, error.row, error.column)), None
    if new is None:
        return FileResult(filename, result.remaining), None
    diff = unified_diff(filename, decoded.text, result.text) if job.diff else ""
    return FileResult(filename, result.remaining, fixes_applied=result.applied, diff=diff), new


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
    """``process_file`` once the bytes are read (devlint.execute reads them to key its cache)."""
    filename = str(path)
    result, new = process_source(data, filename, job)
    if new is not None and job.fix and not job.diff:
        try:
            write_atomic(path, new, data)
        except WriteError as error:
            result.error = FileError(filename, str(error))
            result.fixes_applied = 0
    return result
