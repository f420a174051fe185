"""Jupyter notebooks: every code cell linted as one module, fixes written back into the cells.

The code cells, with IPython syntax masked, are joined into one program (a device defined in
cell 2 is in scope in cell 5) with a marker statement between cells, so that the one parse and
the one walk see the notebook as the kernel runs it, and a fixed program splits back into cells.
A fix rewrites only the JSON text of the ``source`` values of the cells it changed; every other
byte of the file (outputs, metadata, markdown, key order, indentation, escaping) stays as it was.

Cells are numbered from 1 counting every cell, markdown and raw cells too: ``cell 3`` is
``cells[2]`` in the JSON and the third cell on screen.
"""

from __future__ import annotations

import bisect
import codecs
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import count
from json.decoder import scanstring
from typing import Any

from devlint import linediff
from devlint.findings import Finding, Location

CELL_BREAK = "__devlint_cell__"
# Cell magics whose body IPython runs as Python in the kernel; the body is linted and fixed.
# Every other cell magic (%%bash, %%writefile, %%html, %%sql, ...) makes its cell not Python.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})

_NEWLINE = re.compile(r"\r\n|\r|\n")
_FINAL_NEWLINE = re.compile(r"(?:\r\n|\r|\n)\Z")
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_CELL_MAGIC = re.compile(r"[ \t]*%%(\w*)")
# `x = !ls`, `a, b = %sx ls`: IPython assigns the output of a shell command or a magic.
_ASSIGNED_MAGIC = re.compile(r"([ \t]*[A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*[ \t]*=[ \t]*)([!%].*)")
# A \uXXXX escape of a character outside ASCII: the file was written with ensure_ascii.
_NON_ASCII_ESCAPE = re.compile(r"\\u(?:00[89a-fA-F][0-9a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]{2}|[1-9a-fA-F][0-9a-fA-F]{3})")
_DECODER = json.JSONDecoder()


class NotebookError(Exception):
    def __init__(self, message: str, row: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.row = row
        self.column = column


@dataclass
class Cell:
    """A code cell devlint lints, and where its ``source`` value lies in the JSON text."""

    number: int
    source: str
    start: int
    end: int
    # The strings of a list-valued source, with their spans; None when the source is one string.
    lines: list[str] | None = None
    spans: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Notebook:
    text: str
    bom: bool
    cells: list[Cell]

    def with_sources(self, sources: dict[int, str]) -> bytes:
        """The file's bytes with new sources for some cells (by number), the rest untouched."""
        ensure_ascii = self.text.isascii() and _NON_ASCII_ESCAPE.search(self.text) is not None
        pieces: list[str] = []
        cursor = 0
        for cell in self.cells:
            if cell.number not in sources:
                continue
            pieces += [self.text[cursor : cell.start], _source_json(self.text, cell, sources[cell.number], ensure_ascii)]
            cursor = cell.end
        pieces.append(self.text[cursor:])
        data = "".join(pieces).encode("utf-8")
        return codecs.BOM_UTF8 + data if self.bom else data


def read_notebook(data: bytes) -> Notebook:
    """Parse and validate a notebook; raises NotebookError with a one-line reason."""
    bom = data.startswith(codecs.BOM_UTF8)
    try:
        text = data[len(codecs.BOM_UTF8) :].decode("utf-8") if bom else data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NotebookError(f"not a valid notebook: not UTF-8 (byte {data[error.start]:#04x})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotebookError(f"not a valid notebook: bad JSON: {error.msg}", error.lineno, error.colno) from None
    except RecursionError:
        raise NotebookError("not a valid notebook: JSON nested too deeply") from None
    if not isinstance(document, dict):
        raise NotebookError("not a notebook: the JSON is not an object")
    cells = document.get("cells")
    if not isinstance(cells, list):
        raise NotebookError('not a notebook: no "cells" list (nbformat 4 is expected)')
    language = _kernel_language(document.get("metadata"))
    if language is not None and not language.lower().startswith(("python", "ipython")):
        raise NotebookError(f"kernel language is {language!r}, not Python; notebook skipped")
    spans = _cell_spans(text)
    code: list[Cell] = []
    for number, (cell, span) in enumerate(zip(cells, spans), start=1):
        if not isinstance(cell, dict):
            raise NotebookError(f"not a valid notebook: cell {number} is not a JSON object")
        if cell.get("cell_type") != "code" or "source" not in span or not _python_cell(cell):
            continue
        code.append(_code_cell(text, number, cell["source"], span))
    return Notebook(text, bom, code)


def _kernel_language(metadata: object) -> str | None:
    if not isinstance(metadata, dict):
        return None
    for key, name in (("kernelspec", "language"), ("language_info", "name")):
        section = metadata.get(key)
        if isinstance(section, dict) and isinstance(section.get(name), str):
            return section[name]
    return None


def _python_cell(cell: dict) -> bool:
    """VS Code records another language per cell (SQL, shell) under metadata.vscode.languageId."""
    metadata = cell.get("metadata")
    vscode = metadata.get("vscode") if isinstance(metadata, dict) else None
    language = vscode.get("languageId") if isinstance(vscode, dict) else None
    return not isinstance(language, str) or language == "python"


def _code_cell(text: str, number: int, source: object, members: dict[str, tuple[int, int]]) -> Cell:
    start, end = members["source"]
    if isinstance(source, str):
        return Cell(number, source, start, end)
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return Cell(number, "".join(source), start, end, list(source), _items(text, start))
    raise NotebookError(f'not a valid notebook: cell {number}: "source" is not a string or a list of strings')


# -- locating values in the JSON text --------------------------------------------------------


def _skip(text: str, pos: int) -> int:
    return _WHITESPACE.match(text, pos).end()  # type: ignore[union-attr]


def _value_end(text: str, pos: int) -> int:
    return _DECODER.raw_decode(text, pos)[1]


def _members(text: str, pos: int, cells: bool = False) -> tuple[dict[str, Any], int]:
    """The members of the JSON object at ``pos``, each as the span of its value, and where the
    object ends. With ``cells``, a ``cells`` array becomes the member spans of each cell instead,
    so that no value is decoded twice. A repeated key keeps its last value, as json.loads does;
    the text is valid JSON (json.loads accepted it)."""
    members: dict[str, Any] = {}
    pos = _skip(text, pos + 1)
    while text[pos] != "}":
        key, pos = scanstring(text, pos + 1)
        pos = _skip(text, _skip(text, pos) + 1)
        if cells and key == "cells" and text[pos] == "[":
            members[key], end = _cell_members(text, pos)
        else:
            end = _value_end(text, pos)
            members[key] = (pos, end)
        pos = _skip(text, end)
        if text[pos] == ",":
            pos = _skip(text, pos + 1)
    return members, pos + 1


def _cell_members(text: str, pos: int) -> tuple[list[dict[str, tuple[int, int]]], int]:
    cells: list[dict[str, tuple[int, int]]] = []
    pos = _skip(text, pos + 1)
    while text[pos] != "]":
        if text[pos] == "{":
            members, end = _members(text, pos)
        else:
            members, end = {}, _value_end(text, pos)
        cells.append(members)
        pos = _skip(text, end)
        if text[pos] == ",":
            pos = _skip(text, pos + 1)
    return cells, pos + 1


def _items(text: str, pos: int) -> list[tuple[int, int]]:
    """The span of each item of the JSON array at ``pos``."""
    items: list[tuple[int, int]] = []
    pos = _skip(text, pos + 1)
    while text[pos] != "]":
        end = _value_end(text, pos)
        items.append((pos, end))
        pos = _skip(text, end)
        if text[pos] == ",":
            pos = _skip(text, pos + 1)
    return items


def _cell_spans(text: str) -> list[dict[str, tuple[int, int]]]:
    return _members(text, _skip(text, 0), cells=True)[0]["cells"]


def _source_json(text: str, cell: Cell, source: str, ensure_ascii: bool) -> str:
    """The JSON text of a new ``source`` value in the layout of the old one. In a list, strings
    the fix did not change keep their original text and the separators around them."""
    if cell.lines is None:
        return json.dumps(source, ensure_ascii=ensure_ascii)
    old = text[cell.start : cell.end]
    spans = [(start - cell.start, end - cell.start) for start, end in cell.spans]
    if spans:
        opening, closing = old[1 : spans[0][0]], old[spans[-1][1] : -1]
        separators = [old[a[1] : b[0]] for a, b in zip(spans, spans[1:])]
        default = separators[0] if separators else "," + opening
    else:
        opening, closing, separators, default = "", "", [], ", "
    new_lines = source.splitlines(keepends=True)
    items: list[tuple[int | None, str]] = []
    # Lines matched as `--diff` matches them (devlint.linediff): difflib's matcher takes time that
    # grows with the square of a long cell fixed on many lines.
    for tag, i1, i2, j1, j2 in linediff.opcodes(cell.lines, new_lines):
        if tag == "equal":
            items += [(i, old[spans[i][0] : spans[i][1]]) for i in range(i1, i2)]
        else:
            items += [(None, json.dumps(line, ensure_ascii=ensure_ascii)) for line in new_lines[j1:j2]]
    pieces = ["[", opening]
    for position, (index, raw) in enumerate(items):
        if position:
            before = items[position - 1][0]
            kept = before is not None and index == before + 1
            pieces.append(separators[before] if kept else default)
        pieces.append(raw)
    pieces += [closing, "]"]
    return "".join(pieces)


# -- IPython syntax --------------------------------------------------------------------------


@dataclass
class _Scanner:
    """Just enough of Python's tokenizer to know whether a line starts a new statement: IPython
    only reads ``%``, ``!`` and ``?`` there, not inside brackets, strings or continued lines."""

    depth: int = 0
    quote: str | None = None
    continued: bool = False

    @property
    def at_statement_start(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.continued

    def feed(self, line: str) -> None:
        body = _FINAL_NEWLINE.sub("", line)
        self.continued = False
        i = 0
        while i < len(body):
            char = body[i]
            if self.quote is not None:
                if char == "\\":
                    i += 2
                elif body.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = None
                else:
                    i += 1
                continue
            if char == "#":
                break
            if char in "\"'":
                self.quote = char * 3 if body.startswith(char * 3, i) else char
                i += len(self.quote)
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            elif char == "\\" and i == len(body) - 1:
                self.continued = True
            i += 1
        if self.quote is not None and len(self.quote) == 1 and i != len(body) + 1:
            # A one-quote string ends with its line unless a backslash continues it.
            self.quote = None


@dataclass
class Masked:
    """A cell's source with IPython syntax replaced by placeholder names; ``pairs`` maps each
    placeholder text back to what it hides."""

    text: str
    pairs: list[tuple[str, str]]
    complete: bool


def _split_keeping_ends(text: str) -> list[str]:
    lines: list[str] = []
    start = 0
    for match in _NEWLINE.finditer(text):
        lines.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def cell_magic(source: str) -> str | None:
    """The name of the cell magic a cell starts with (``%%time`` -> ``time``), else None."""
    for line in _split_keeping_ends(source):
        if line.strip():
            match = _CELL_MAGIC.match(line)
            return match.group(1) if match else None
    return None


def mask(source: str, tokens: Iterator[int]) -> Masked:
    """Replace IPython-only lines (``%magic``, ``!shell``, ``x = !shell``, ``obj?``, a leading
    ``%%time``) by placeholder names, keeping each line's indentation so that the rest parses."""
    lines = _split_keeping_ends(source)
    pairs: list[tuple[str, str]] = []
    scanner = _Scanner()
    # Set while a masked line ends with a backslash: IPython reads the next line as part of it.
    continued: str | None = None
    for row, line in enumerate(lines):
        content = _FINAL_NEWLINE.sub("", line)
        indent = content[: len(content) - len(content.lstrip(" \t"))]
        assigned = _ASSIGNED_MAGIC.fullmatch(content) if scanner.at_statement_start else None
        if continued is not None or (scanner.at_statement_start and _is_magic(content)):
            indent = indent if continued is None else continued
            masked = indent + _token(tokens)
            pairs.append((masked, content))
            lines[row] = masked + line[len(content) :]
        elif assigned is not None:
            masked = _token(tokens)
            pairs.append((masked, assigned.group(2)))
            lines[row] = assigned.group(1) + masked + line[len(content) :]
        else:
            scanner.feed(line)
            continue
        continued = indent if content.endswith("\\") else None
    return Masked("".join(lines), pairs, scanner.at_statement_start and continued is None)


def _is_magic(content: str) -> bool:
    stripped = content.strip()
    if stripped.startswith(("%", "!", "?")):
        return True
    # `torch.cuda?`: IPython's help; a `?` never ends a line of Python outside a comment or string
    return stripped.endswith("?") and "#" not in stripped and "'" not in stripped and '"' not in stripped


def _token(tokens: Iterator[int]) -> str:
    return f"__devlint_magic_{next(tokens)}__"


# -- the program: code cells joined --------------------------------------------------------


@dataclass
class Program:
    """The code cells as one module, ``CELL_BREAK`` on a line of its own after each cell."""

    text: str
    cells: list[Cell]
    pairs: list[list[tuple[str, str]]]
    added_newline: list[bool]

    @classmethod
    def build(cls, notebook: Notebook) -> Program:
        tokens = count()
        parts: list[str] = []
        cells: list[Cell] = []
        pairs: list[list[tuple[str, str]]] = []
        added: list[bool] = []
        for cell in notebook.cells:
            magic = cell_magic(cell.source)
            if magic is not None and magic not in PYTHON_CELL_MAGICS:
                continue
            masked = mask(cell.source, tokens)
            if not masked.complete:
                raise NotebookError(
                    f"cell {cell.number}: the cell ends inside a bracket, a string or a continued line"
                )
            text = masked.text
            needs_newline = not _FINAL_NEWLINE.search(text)
            parts.append(text + ("\n" if needs_newline else "") + CELL_BREAK + "\n")
            cells.append(cell)
            pairs.append(masked.pairs)
            added.append(needs_newline)
        return cls("".join(parts), cells, pairs, added)

    def split(self, text: str) -> dict[int, str]:
        """The source of every cell of a (fixed) program text, by cell number, IPython restored."""
        starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
        breaks = _break_rows(text)
        if len(breaks) != len(self.cells):
            raise NotebookError("internal error: a fix moved a cell boundary; notebook left unchanged")
        sources: dict[int, str] = {}
        begin = 0
        for cell, pairs, added, row in zip(self.cells, self.pairs, self.added_newline, breaks):
            source = text[begin : starts[row - 1]]
            begin = starts[row] if row < len(starts) else len(text)
            if added:
                source = _FINAL_NEWLINE.sub("", source)
            for masked, original in pairs:
                if source.count(masked) != 1:
                    raise NotebookError(f"internal error: a fix changed IPython syntax in cell {cell.number}; notebook left unchanged")
                source = source.replace(masked, original)
            sources[cell.number] = source
        return sources

    def restore(self, line: str) -> str:
        for pairs in self.pairs:
            for masked, original in pairs:
                if masked in line:
                    line = line.replace(masked, original)
        return line


def _break_rows(text: str) -> list[int]:
    return [row for row, line in enumerate(_NEWLINE.split(text), start=1) if line == CELL_BREAK]


@dataclass
class _Layout:
    """Turns rows of a program text into (cell number, row in that cell)."""

    breaks: list[int]
    numbers: list[int]

    def locate(self, row: int) -> tuple[int, int]:
        index = min(bisect.bisect_left(self.breaks, row), len(self.numbers) - 1)
        first = self.breaks[index - 1] + 1 if index else 1
        number = self.numbers[index]
        return number, row - first + 1

    def location(self, location: Location) -> Location:
        return Location(self.locate(location.row)[1], location.column)


def cell_row(program: Program, row: int) -> tuple[int, int]:
    """Row ``row`` of the program's text as (cell number, row in that cell)."""
    return _Layout(_break_rows(program.text), [cell.number for cell in program.cells]).locate(row)


def place(findings: Sequence[Finding], program: Program, text: str) -> list[Finding]:
    """Findings on a program text, moved to their cells (rows and columns within the cell)."""
    layout = _Layout(_break_rows(text), [cell.number for cell in program.cells])
    placed: list[Finding] = []
    for finding in findings:
        number, row = layout.locate(finding.location.row)
        fix = finding.fix
        if fix is not None:
            edits = tuple(
                replace(e, start=layout.location(e.start), end=layout.location(e.end))
                for e in fix.edits
            )
            fix = replace(fix, edits=edits)
        placed.append(
            replace(
                finding,
                location=Location(row, finding.location.column),
                end_location=layout.location(finding.end_location),
                fix=fix,
                cell=number,
                source_line=program.restore(finding.source_line),
                noqa_row=row,
            )
        )
    return placed
