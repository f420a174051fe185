"""A notebook the editor holds (a list of cell texts, no JSON) as the program devlint.run.notebook
lints: its code cells joined in order, as the CLI lints an .ipynb file."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from itertools import count

from devlint.engine.lint import ParseError, check_syntax
from devlint.run.notebook import CELL_BREAK, PYTHON_CELL_MAGICS, Cell, Notebook, NotebookError, Program, cell_magic, mask
from devlint.server.model import Problem

_NEWLINE = re.compile(r"\r\n|\r|\n")


def build_program(sources: Sequence[str | None]) -> Program:
    """The program of the cells whose source is given (None: a cell that is not Python code).
    A cell's number is its index in ``sources`` plus one."""
    cells = [Cell(number, source, 0, 0) for number, source in enumerate(sources, start=1) if source is not None]
    return Program.build(Notebook("", False, cells))


def locate(program: Program, error: ParseError) -> Problem:
    """A parse error of the program's text, moved to its cell."""
    if error.row is None or not program.cells:
        return Problem(error.message, program.cells[0].number - 1 if program.cells else 0, syntax=True)
    lines = _NEWLINE.split(program.text)
    breaks = [row for row, line in enumerate(lines, start=1) if line == CELL_BREAK]
    index = min(bisect.bisect_left(breaks, error.row), len(program.cells) - 1)
    first = breaks[index - 1] + 1 if index else 1
    return Problem(error.message, program.cells[index].number - 1, error.row - first + 1, error.column, syntax=True)


def unfinished(sources: Sequence[str | None], error: NotebookError) -> Problem:
    """Where the cell that ends inside a bracket, a string or a continued line goes wrong."""
    tokens = count()
    for index, source in enumerate(sources):
        if source is None:
            continue
        magic = cell_magic(source)
        if magic is not None and magic not in PYTHON_CELL_MAGICS:
            continue
        masked = mask(source, tokens)
        if masked.complete:
            continue
        try:
            check_syntax(masked.text)
        except ParseError as found:
            return Problem(found.message, index, found.row, found.column, syntax=True)
        return Problem(error.message, index, len(_NEWLINE.split(source)), syntax=True)
    return Problem(error.message, 0, syntax=True)
