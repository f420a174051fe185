"""One notebook through devlint: its code cells joined into one program (devlint.run.notebook),
linted or fixed as one text, findings placed back in their cells, fixed sources written back."""

from __future__ import annotations

from dataclasses import replace

from devlint.findings import FileError
from devlint.gate.syntax import ParseError
from devlint.run.job import FileResult, Job, fix, lint, unified_diff
from devlint.run.notebook import CELL_BREAK, NotebookError, Program, cell_row, place, read_notebook
from devlint.run.suppressions import apply_noqa, skip_file


def cell_diff(filename: str, number: int, before: str, after: str) -> str:
    """A unified diff of one cell's source, labelled ``a/nb.ipynb:cell 3``."""
    # Cells rarely end with a newline; a diff line must.
    before, after = (s if not s or s.endswith(("\n", "\r")) else s + "\n" for s in (before, after))
    return unified_diff(f"{filename}:cell {number}", before, after)


def process_notebook(data: bytes, filename: str, job: Job) -> tuple[FileResult, bytes | None]:
    """Lint (or fix) one notebook's bytes; returns the result and the new bytes when fixes changed them."""
    settings = replace(job.settings, cell_break=CELL_BREAK)
    program: Program | None = None
    try:
        notebook = read_notebook(data)
        program = Program.build(notebook)
        if skip_file(program.text):
            return FileResult(filename), None
        if not (job.fix or job.diff):
            findings, dependencies = lint(program.text, filename, job, settings)
            return FileResult(filename, place(findings, program, program.text), dependencies=dependencies), None
        result, dependencies = fix(program.text, filename, job, settings, keep=job.keep(filename, apply_noqa))
        if result is None:
            return FileResult(filename), None
        remaining = place(result.remaining, program, result.text)
        if result.text == program.text:
            return FileResult(filename, remaining, dependencies=dependencies), None
        sources = program.split(result.text)
    except NotebookError as error:
        return FileResult(filename, error=FileError(filename, error.message, error.row, error.column)), None
    except ParseError as error:
        return FileResult(filename, error=_parse_error(filename, error, program)), None
    before = {cell.number: cell.source for cell in notebook.cells}
    changed = {number: source for number, source in sources.items() if source != before[number]}
    diff = "".join(cell_diff(filename, n, before[n], changed[n]) for n in sorted(changed)) if job.diff else ""
    counts = {"fixes_applied": result.applied, "fixes_later": result.later, "fix_rounds": result.rounds}
    return FileResult(filename, remaining, diff=diff, **counts), notebook.with_sources(changed)


def _parse_error(filename: str, error: ParseError, program: Program | None) -> FileError:
    if program is None or error.row is None or not program.cells:
        return FileError(filename, error.message)
    number, row = cell_row(program, error.row)
    column = f", column {error.column}" if error.column is not None else ""
    return FileError(filename, f"cell {number}, line {row}{column}: {error.message}")
